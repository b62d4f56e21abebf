package mlx5_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/flow/internal/frametest"
	flowmlx5 "github.com/daqiri-go/daqiri/flow/mlx5"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// slotRQ is one reorder slot's RQ: a ring of two receive WQEs, WQE j pointing at the slot's
// place in batch buffer j, of which only the current batch's is posted.
type slotRQ struct {
	rqn    uint32
	dbr    uint64
	posted uint32
}

// batchMem is where the two batch buffers live: their addresses in the device's DMA space,
// the key the WQEs name, and how the test reads them back (host memory: directly; GPU
// memory: a device-to-host copy).
type batchMem struct {
	addr [2]uint64
	lkey uint32
	read func(addr uint64, n int) []byte
}

// hostBatch puts the batch buffers in the rig's host memory.
func hostBatch(r *rig, n int) batchMem {
	return batchMem{addr: [2]uint64{r.alloc(n, 4096), r.alloc(n, 4096)}, lkey: r.lkey,
		read: func(a uint64, n int) []byte { return append([]byte(nil), r.at(a, n)...) }}
}

// newSlotRQ makes slot k's RQ on the shared CQ over the two batch buffers.
func (r *rig) newSlotRQ(c *cq, k int, bm batchMem, slotSize int) *slotRQ {
	const logSz = 1
	w := prm.WQ
	base := prm.CreateRQIn.Ctx.Off
	wb := base + prm.RQC.WQ.Off
	ring := r.alloc(16<<logSz, 4096)
	q := &slotRQ{dbr: r.alloc(64, 64)}
	b := cmdIn(prm.CmdOpCreateRQ, 0, w.PAS.At(wb).ByteOff()+8, prm.RQC.CQN.At(base), c.n,
		w.WQType.At(wb), prm.WQTypeCyclic, w.LogWQStride.At(wb), 4, w.LogWQSz.At(wb), logSz, w.PD.At(wb), r.pd, w.DbrAddr.At(wb), q.dbr)
	w.PAS.At(wb).Set(b, ring)
	q.rqn = uint32(prm.CreateRQOut.RQN.Get(r.cmd(b, 16)))
	r.cmd(cmdIn(prm.CmdOpModifyRQ, 0, int(prm.ModifyRQIn.Ctx.End()/8), prm.ModifyRQIn.RQN, q.rqn, prm.ModifyRQIn.RQState, prm.RQStateRST,
		prm.RQC.State.At(prm.ModifyRQIn.Ctx.Off), prm.RQStateRDY), 16)
	for j, buf := range bm.addr {
		seg := r.at(ring+uint64(j)*16, 16)
		prm.WQEData.ByteCount.Set(seg, uint64(slotSize))
		prm.WQEData.LKey.Set(seg, uint64(bm.lkey))
		prm.WQEData.Addr.Set(seg, buf+uint64(k*slotSize))
	}
	return q
}

// arm posts the slot's next WQE (the next batch buffer's place).
func (q *slotRQ) arm(r *rig) {
	q.posted++
	binary.BigEndian.PutUint32(r.at(q.dbr+4*prm.RcvDBR, 4), q.posted)
}

// seqFrame is a 128-byte IPv4/UDP frame to port 9000 with seq as a big-endian word at byte 64
// (upstream's examples: a 32-bit sequence at bit 512) and random bytes elsewhere.
func seqFrame(r *rand.Rand, seq uint32) []byte {
	payload := make([]byte, 128-42)
	for i := range payload {
		payload[i] = byte(r.Uint32())
	}
	binary.BigEndian.PutUint32(payload[64-42:], seq)
	return frametest.Eth(0x0800, frametest.IPv4(netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"), 17, 0, 0, frametest.UDP(5000, 9000, payload)))
}

// TestHWReorder: batches of 1,024 frames sent in a random order arrive in order in the batch
// buffer — the device places each at its slot; nothing on the CPU moves them — checked byte
// for byte; in the second batch, out-of-range sequence numbers are counted by the plan and
// duplicates dropped out of buffer, and neither is placed (both buffers stay exact).
func TestHWReorder(t *testing.T) { runHWReorder(t, hostBatch) }

// runHWReorder is TestHWReorder with the batch buffers where mem puts them.
func runHWReorder(t *testing.T, mem func(r *rig, n int) batchMem) {
	const ppb, slotSize = 1024, 128
	rng := rand.New(rand.NewPCG(32, 290))
	rig := newRig(t, 1)
	st := mustNew(t, rig, flowmlx5.Params{RQNs: rig.rqns, TD: rig.td, Isolation: true})
	c := rig.newCQ(11)
	bm := mem(rig, ppb*slotSize)
	slots := make([]*slotRQ, ppb)
	rqns := make([]uint32, ppb)
	for k := range slots {
		slots[k] = rig.newSlotRQ(c, k, bm, slotSize)
		rqns[k] = slots[k].rqn
		slots[k].arm(rig)
	}
	sel := rule(t, config.Flow{Name: "seq", ID: 7, Match: config.Match{UDPDst: config.PortRange{Lo: 9000, Hi: 9000}}, Actions: toQueues(0)})
	plan, err := st.AddHWReorder(0, flowmlx5.HWReorderParams{Name: "interfaces[0].rx.reorder_configs[0]", Rule: sel,
		SeqBitOffset: 512, SeqBitWidth: 32, SlotRQNs: rqns})
	if err != nil {
		t.Fatal(err)
	}
	// run sends frames in the given order and returns the CQEs the slots completed.
	run := func(frames [][]byte) int {
		for _, f := range frames {
			rig.d.Receive(f)
			for i := 0; rig.d.Step(64) > 0; i++ {
				if i == 1000 {
					t.Fatal("device still busy after 1000 steps")
				}
			}
		}
		n := 0
		for e := c.poll(); e != nil && n <= 2*ppb; e = c.poll() {
			if op := prm.CQE64.OpOwn.Get(e) >> 4; op != prm.CQEOpRespSend {
				t.Fatalf("CQE opcode %d syndrome %#x", op, prm.ErrCQE.Syndrome.Get(e))
			}
			if got := prm.CQE64.ByteCnt.Get(e); got != slotSize {
				t.Fatalf("CQE byte count %d, want %d", got, slotSize)
			}
			if tag := uint32(prm.CQE64.SopDropQPN.Get(e)) & 0xffffff; tag != 7 {
				t.Fatalf("CQE flow tag %d, want the plan's flow 7", tag)
			}
			n++
		}
		return n
	}
	check := func(batch int, want [][]byte) {
		t.Helper()
		b := bm.read(bm.addr[batch], ppb*slotSize)
		for k := range ppb {
			if !bytes.Equal(b[k*slotSize:(k+1)*slotSize], want[k]) {
				t.Fatalf("batch buffer %d slot %d holds % x\nwant % x", batch, k, b[k*slotSize:k*slotSize+80], want[k][:80])
			}
		}
	}
	inOrder := func() [][]byte {
		fs := make([][]byte, ppb)
		for k := range fs {
			fs[k] = seqFrame(rng, uint32(k))
		}
		return fs
	}
	shuffled := func(fs [][]byte) [][]byte {
		out := append([][]byte(nil), fs...)
		rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
		return out
	}

	first := inOrder()
	if n := run(shuffled(first)); n != ppb {
		t.Fatalf("batch 0: %d slot completions, want %d", n, ppb)
	}
	check(0, first)

	// The batch is complete: re-arm every slot on buffer 1. The second batch carries 5
	// duplicates (after their originals, with other bytes) and 7 sequence numbers past the
	// last slot.
	for _, q := range slots {
		q.arm(rig)
	}
	second := inOrder()
	send := shuffled(second)
	for i := range 7 {
		send = append(send, seqFrame(rng, uint32(ppb+i*97)))
	}
	send = shuffled(send)
	for i := range 5 {
		send = append(send, seqFrame(rng, uint32(i*200)))
	}
	oob := rig.d.Counters().RXOutOfBuffer
	if n := run(send); n != ppb {
		t.Fatalf("batch 1: %d slot completions, want %d", n, ppb)
	}
	check(1, second)
	check(0, first)
	if n, err := plan.OutOfRange(); err != nil || n != 7 {
		t.Errorf("out of range: %d, %v; want 7", n, err)
	}
	if d := rig.d.Counters().RXOutOfBuffer - oob; d != 5 {
		t.Errorf("duplicates dropped out of buffer: %d, want 5", d)
	}
	t.Logf("2 batches of %d frames placed in order by %d slot rules; 7 out of range counted, 5 duplicates dropped", ppb, ppb)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if n := rig.ch.alive(); n != 0 {
		t.Fatalf("%d objects left after Close", n)
	}
}

// TestHWReorderLimits: plans the NIC cannot run are refused before the device is touched,
// each error naming the configuration key.
func TestHWReorderLimits(t *testing.T) {
	rig := newRig(t, 1)
	st := mustNew(t, rig, flowmlx5.Params{RQNs: rig.rqns, TD: rig.td, Isolation: true})
	sel := rule(t, config.Flow{Name: "seq", ID: 7, Match: config.Match{UDPDst: config.PortRange{Lo: 9000, Hi: 9000}}, Actions: toQueues(0)})
	base := rig.ch.alive()
	for _, c := range []struct {
		p   flowmlx5.HWReorderParams
		key string
	}{
		{flowmlx5.HWReorderParams{SeqBitOffset: 512, SeqBitWidth: 32, SlotRQNs: make([]uint32, flowmlx5.MaxHWReorderSlots+1)}, "packets_per_batch"},
		{flowmlx5.HWReorderParams{SeqBitOffset: 512, SeqBitWidth: 4, SlotRQNs: make([]uint32, 32)}, "packets_per_batch"},
		{flowmlx5.HWReorderParams{SeqBitOffset: 515, SeqBitWidth: 32, SlotRQNs: make([]uint32, 4)}, "sequence_number"},
		{flowmlx5.HWReorderParams{SeqBitOffset: 64, SeqBitWidth: 16, SlotRQNs: make([]uint32, 4)}, "sequence_number.bit_offset"},
		{flowmlx5.HWReorderParams{SeqBitOffset: 512, SeqBitWidth: 0, SlotRQNs: make([]uint32, 4)}, "bit_width"},
	} {
		c.p.Name, c.p.Rule = "reorder_configs[0]", sel
		_, err := st.AddHWReorder(0, c.p)
		if !errors.Is(err, flowmlx5.ErrNotExpressible) || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%+v: %v; want ErrNotExpressible naming %s", c.p.SeqBitOffset, err, c.key)
		}
	}
	if n := rig.ch.alive() - base; n != 0 {
		t.Errorf("refused plans left %d objects", n)
	}
}
