package mlx5_test

import (
	"encoding/binary"
	"fmt"
	"sync"
	"testing"

	"github.com/daqiri-go/daqiri/flow"
	"github.com/daqiri-go/daqiri/mlx5/channel"
	"github.com/daqiri-go/daqiri/mlx5/model"
	"github.com/daqiri-go/daqiri/mlx5/model/modelch"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// testCh wraps the engine's model transport (modelch) to count the objects steering
// leaves alive and to make the device reject a chosen create (fail).
type testCh struct {
	channel.Channel
	mu   sync.Mutex
	live map[*testObj]bool
	// fail, when set, makes the next create of that opcode fail as the device would.
	fail prm.CmdOp
}

type testObj struct {
	channel.Object
	ch *testCh
}

func (c *testCh) Create(in, out []byte) (channel.Object, error) {
	op := prm.CmdOp(prm.CmdIn.Opcode.Get(in))
	c.mu.Lock()
	if c.fail != 0 && op == c.fail {
		c.fail = 0
		c.mu.Unlock()
		return nil, &channel.CommandError{Opcode: uint16(op), Status: uint8(prm.StatusBadParamErr), Name: op.String(), Detail: "rejected by the test"}
	}
	c.mu.Unlock()
	o, err := c.Channel.Create(in, out)
	if err != nil {
		return nil, err
	}
	t := &testObj{Object: o, ch: c}
	c.mu.Lock()
	c.live[t] = true
	c.mu.Unlock()
	return t, nil
}

func (o *testObj) Destroy() error {
	o.ch.mu.Lock()
	delete(o.ch.live, o)
	o.ch.mu.Unlock()
	return o.Object.Destroy()
}

func (c *testCh) alive() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.live)
}

// rig is a brought-up model device with nq RX queues (CQ + cyclic RQ of 2 KiB buffers
// each), a PA key over its memory, and the transport domain steering needs.
type rig struct {
	t    testing.TB
	d    *model.Device
	ch   *testCh
	mem  []byte
	next uint64
	uar  uint32
	eqn  uint32
	pd   uint32
	td   uint32
	lkey uint32
	rxs  []*rxq
	rqns []uint32
}

const iova = 0x1000_0000

func (r *rig) alloc(n, align int) uint64 {
	off := (r.next + uint64(align) - 1) &^ (uint64(align) - 1)
	if off+uint64(n) > uint64(len(r.mem)) {
		r.t.Fatalf("rig memory exhausted")
	}
	r.next = off + uint64(n)
	return iova + off
}

func (r *rig) at(a uint64, n int) []byte { return r.mem[a-iova : a-iova+uint64(n)] }

func (r *rig) cmd(in []byte, outLen int) []byte {
	r.t.Helper()
	out := make([]byte, outLen)
	if err := r.d.Exec(in, out); err != nil {
		r.t.Fatalf("%v: %v", prm.CmdOp(prm.CmdIn.Opcode.Get(in)), err)
	}
	return out
}

func cmdIn(op prm.CmdOp, opMod uint16, n int, kv ...any) []byte {
	b := make([]byte, n)
	prm.CmdIn.Opcode.Set(b, uint64(op))
	prm.CmdIn.OpMod.Set(b, uint64(opMod))
	for i := 0; i+1 < len(kv); i += 2 {
		var v uint64
		switch x := kv[i+1].(type) {
		case int:
			v = uint64(x)
		case uint32:
			v = uint64(x)
		case uint64:
			v = x
		}
		kv[i].(prm.Field).Set(b, v)
	}
	return b
}

// newRig opens a model device through the engine's model transport (modelch, which brings
// it up) and makes nq RX queues with plain commands.
func newRig(t testing.TB, nq int) *rig {
	d := model.New(model.Config{})
	r := &rig{t: t, d: d, mem: make([]byte, 24<<20)}
	if err := d.DMA().Map(iova, r.mem, model.DMARead|model.DMAWrite); err != nil {
		t.Fatal(err)
	}
	mc, err := modelch.Open(d, "model:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mc.Close() })
	r.ch = &testCh{Channel: mc, live: map[*testObj]bool{}}
	r.uar = uint32(prm.AllocUAROut.UAR.Get(r.cmd(cmdIn(prm.CmdOpAllocUAR, 0, 16), 16)))
	if r.eqn, err = mc.EQN(0); err != nil {
		t.Fatal(err)
	}
	r.pd = uint32(prm.AllocPDOut.PD.Get(r.cmd(cmdIn(prm.CmdOpAllocPD, 0, 16), 16)))
	r.td = uint32(prm.AllocTransportDomainOut.TransportDomain.Get(r.cmd(cmdIn(prm.CmdOpAllocTransportDomain, 0, 16), 16)))
	mb := prm.CreateMKeyIn.MemoryKeyMKeyEntry.Off
	k := prm.MKC
	key := cmdIn(prm.CmdOpCreateMKey, 0, prm.CreateMKeyIn.KlmPASMtt.ByteOff(), k.AccessMode10.At(mb), prm.MKeyAccessPA, k.Lr.At(mb), 1, k.Lw.At(mb), 1,
		k.PD.At(mb), r.pd, k.QPN.At(mb), 0xffffff, k.StartAddr.At(mb), uint64(iova), k.Len.At(mb), uint64(len(r.mem)), k.MKey70.At(mb), 0x5a)
	// The variant byte keeps key 1 from reading as MLX5_INVALID_LKEY (0x100).
	r.lkey = uint32(prm.CreateMKeyOut.MKeyIndex.Get(r.cmd(key, 16)))<<8 | 0x5a
	for range nq {
		q := r.newRX()
		r.rxs = append(r.rxs, q)
		r.rqns = append(r.rqns, q.rqn)
	}
	return r
}

// cq is a CQ of 64-byte CQEs, valid when the owner bit equals the consumer lap's parity.
type cq struct {
	r       *rig
	n       uint32
	buf     uint64
	dbr     uint64
	logSize uint
	ci      uint32
}

func (r *rig) newCQ(logSize uint) *cq {
	c := &cq{r: r, logSize: logSize, buf: r.alloc(64<<logSize, 4096), dbr: r.alloc(64, 64)}
	for i := 0; i < 1<<logSize; i++ {
		prm.CQE64.OpOwn.Set(r.at(c.buf+uint64(i)*64, 64), uint64(prm.CQEOpInvalid)<<4|1)
	}
	base := prm.CreateCQIn.CQContext.Off
	q := prm.CQC
	npages := (64<<logSize + 4095) / 4096
	b := cmdIn(prm.CmdOpCreateCQ, 0, prm.CreateCQIn.PAS.ByteOff()+8*npages, q.LogCQSize.At(base), int(logSize), q.UARPage.At(base), r.uar,
		q.CEQNOrApuElement.At(base), r.eqn, q.DbrAddr.At(base), c.dbr)
	for i := range npages {
		prm.CreateCQIn.PAS.At(uint32(i)*64).Set(b, c.buf+uint64(i)*4096)
	}
	c.n = uint32(prm.CreateCQOut.CQN.Get(r.cmd(b, 16)))
	return c
}

func (c *cq) poll() []byte {
	e := c.r.at(c.buf+uint64(c.ci&(1<<c.logSize-1))*64, 64)
	own := prm.CQE64.OpOwn.Get(e)
	if own>>4 == prm.CQEOpInvalid || own&1 != uint64(c.ci>>c.logSize&1) {
		return nil
	}
	c.ci++
	// The consumer index in the doorbell record frees the slot (kernel cq.h
	// mlx5_cq_set_ci: word 0 of the record, 24 bits).
	binary.BigEndian.PutUint32(c.r.at(c.dbr, 4), c.ci&0xffffff)
	return e
}

const (
	rqLog   = 7
	bufSize = 2048
)

// rxq is one RX queue: CQ + cyclic RQ of one-segment WQEs; every buffer is posted again
// after its frame is read, so the ring never runs dry in these tests.
type rxq struct {
	cq       *cq
	rqn      uint32
	ring     uint64
	dbr      uint64
	bufs     []uint64
	consumed uint32
}

func (r *rig) newRX() *rxq {
	q := &rxq{cq: r.newCQ(rqLog + 1)}
	w := prm.WQ
	base := prm.CreateRQIn.Ctx.Off
	wb := base + prm.RQC.WQ.Off
	q.ring = r.alloc(16<<rqLog, 4096)
	q.dbr = r.alloc(64, 64)
	npages := (16<<rqLog + 4095) / 4096
	b := cmdIn(prm.CmdOpCreateRQ, 0, w.PAS.At(wb).ByteOff()+8*npages, prm.RQC.CQN.At(base), q.cq.n,
		w.WQType.At(wb), prm.WQTypeCyclic, w.LogWQStride.At(wb), 4, w.LogWQSz.At(wb), rqLog, w.PD.At(wb), r.pd, w.DbrAddr.At(wb), q.dbr)
	for i := range npages {
		w.PAS.At(wb+uint32(i)*64).Set(b, q.ring+uint64(i)*4096)
	}
	q.rqn = uint32(prm.CreateRQOut.RQN.Get(r.cmd(b, 16)))
	r.cmd(cmdIn(prm.CmdOpModifyRQ, 0, int(prm.ModifyRQIn.Ctx.End()/8), prm.ModifyRQIn.RQN, q.rqn, prm.ModifyRQIn.RQState, prm.RQStateRST,
		prm.RQC.State.At(prm.ModifyRQIn.Ctx.Off), prm.RQStateRDY), 16)
	for i := 0; i < 1<<rqLog; i++ {
		a := r.alloc(bufSize, 64)
		q.bufs = append(q.bufs, a)
		seg := r.at(q.ring+uint64(i)*16, 16)
		prm.WQEData.ByteCount.Set(seg, bufSize)
		prm.WQEData.LKey.Set(seg, uint64(r.lkey))
		prm.WQEData.Addr.Set(seg, a)
	}
	binary.BigEndian.PutUint32(r.at(q.dbr+4*prm.RcvDBR, 4), 1<<rqLog)
	return q
}

// got is what the device did with one frame.
type got struct {
	queue   int // -1: not received
	tag     uint32
	hash    uint32
	frame   []byte
	dropped bool // by a rule
	missed  bool // no entry took it
}

// receive runs one frame through the device's receive path and reports where it went.
func (r *rig) receive(f []byte) got {
	r.t.Helper()
	before := r.d.Counters()
	r.d.Receive(f)
	for i := 0; r.d.Step(64) > 0; i++ {
		if i == 1000 {
			r.t.Fatal("device still busy after 1000 steps")
		}
	}
	g := got{queue: -1}
	for qi, q := range r.rxs {
		for e := q.cq.poll(); e != nil; e = q.cq.poll() {
			if g.queue >= 0 {
				r.t.Fatalf("one frame gave CQEs on queues %d and %d", g.queue, qi)
			}
			if op := prm.CQE64.OpOwn.Get(e) >> 4; op != prm.CQEOpRespSend {
				r.t.Fatalf("queue %d: CQE opcode %d syndrome %#x", qi, op, prm.ErrCQE.Syndrome.Get(e))
			}
			idx := uint32(prm.CQE64.WQECounter.Get(e)) & (1<<rqLog - 1)
			n := int(prm.CQE64.ByteCnt.Get(e))
			g.queue, g.tag, g.hash = qi, uint32(prm.CQE64.SopDropQPN.Get(e))&0xffffff, uint32(prm.CQE64.RSSHashResult.Get(e))
			g.frame = append([]byte(nil), r.at(q.bufs[idx], n)...)
			q.consumed++
			binary.BigEndian.PutUint32(r.at(q.dbr+4*prm.RcvDBR, 4), q.consumed+1<<rqLog)
		}
	}
	after := r.d.Counters()
	g.dropped = after.RXDropRule > before.RXDropRule
	g.missed = after.RXSteeringMiss > before.RXSteeringMiss
	if after.RXErrors != before.RXErrors || after.RXNotReady != before.RXNotReady {
		r.t.Fatalf("frame % x: receive errors %d, not ready %d", f, after.RXErrors-before.RXErrors, after.RXNotReady-before.RXNotReady)
	}
	if g.queue < 0 && !g.dropped && !g.missed {
		r.t.Fatalf("frame % x: neither received nor dropped: counters before %+v after %+v", f, before, after)
	}
	if oob := after.RXOutOfBuffer - before.RXOutOfBuffer; oob != 0 {
		r.t.Fatalf("%d frames out of buffer: the rig's reposting is broken", oob)
	}
	return g
}

func fmtRule(r *flow.Rule) string { return fmt.Sprintf("%+v", *r) }

// txq is a send queue (SQ over a TIS of the rig's transport domain, its own CQ) whose
// frames the test sends one at a time as SEND WQEs: control segment, Ethernet segment with
// the first 18 bytes inline (mlx5e and DPDK send so), one data segment for the rest
// (rdma-core mlx5dv.h layouts), then the doorbell record and a BlueFlame store.
type txq struct {
	r    *rig
	cq   *cq
	sqn  uint32
	ring uint64
	dbr  uint64
	pi   uint32
	data uint64
}

func (r *rig) newTX() *txq {
	q := &txq{r: r, cq: r.newCQ(6), ring: r.alloc(64<<6, 4096), dbr: r.alloc(64, 64), data: r.alloc(16384, 64)}
	tb := prm.CreateTISIn.Ctx.Off
	tis := uint32(prm.CreateTISOut.TISN.Get(r.cmd(cmdIn(prm.CmdOpCreateTIS, 0, int(prm.CreateTISIn.Ctx.End()/8), prm.TISC.TransportDomain.At(tb), r.td), 16)))
	w := prm.WQ
	base := prm.CreateSQIn.Ctx.Off
	wb := base + prm.SQC.WQ.Off
	b := cmdIn(prm.CmdOpCreateSQ, 0, w.PAS.At(wb).ByteOff()+8, prm.SQC.CQN.At(base), q.cq.n, prm.SQC.TISNum0.At(base), tis, prm.SQC.TISLstSz.At(base), 1,
		w.WQType.At(wb), prm.WQTypeCyclic, w.LogWQStride.At(wb), 6, w.LogWQSz.At(wb), 6, w.PD.At(wb), r.pd, w.UARPage.At(wb), r.uar, w.DbrAddr.At(wb), q.dbr,
		w.PAS.At(wb), q.ring)
	q.sqn = uint32(prm.CreateSQOut.SQN.Get(r.cmd(b, 16)))
	r.cmd(cmdIn(prm.CmdOpModifySQ, 0, int(prm.ModifySQIn.Ctx.End()/8), prm.ModifySQIn.SQN, q.sqn, prm.ModifySQIn.SQState, prm.SQStateRST,
		prm.SQC.State.At(prm.ModifySQIn.Ctx.Off), prm.SQStateRDY), 16)
	return q
}

// send transmits f and returns what the device put on the wire.
func (q *txq) send(f []byte) []byte {
	r := q.r
	var wire [][]byte
	r.d.SetWire(func(b []byte) { wire = append(wire, append([]byte(nil), b...)) })
	defer r.d.SetWire(nil)
	const inline = 18
	copy(r.at(q.data, len(f)-inline), f[inline:])
	w := r.at(q.ring+uint64(q.pi&63)*64, 64)
	clear(w)
	prm.WQECtrl.OpModIdxOpcode.Set(w, uint64(q.pi&0xffff)<<8|prm.WQEOpSend)
	prm.WQECtrl.QPNDS.Set(w, uint64(q.sqn)<<8|4)
	prm.WQECtrl.FmCeSe.Set(w, prm.WQECtrlCQUpdate)
	eth := w[16:]
	prm.WQEEth.InlineHdrSz.Set(eth, inline)
	copy(eth[14:], f[:inline])
	data := w[48:]
	prm.WQEData.ByteCount.Set(data, uint64(len(f)-inline))
	prm.WQEData.LKey.Set(data, uint64(r.lkey))
	prm.WQEData.Addr.Set(data, q.data)
	q.pi++
	binary.BigEndian.PutUint32(r.at(q.dbr+4*prm.SndDBR, 4), q.pi)
	if _, err := r.d.BAR0().WriteAt(r.at(q.ring+uint64((q.pi-1)&63)*64, 8), int64(r.uar)<<12+prm.UARBlueFlame); err != nil {
		r.t.Fatal(err)
	}
	for i := 0; r.d.Step(64) > 0; i++ {
		if i == 1000 {
			r.t.Fatal("device still busy after 1000 steps")
		}
	}
	for e := q.cq.poll(); e != nil; e = q.cq.poll() {
		if op := prm.CQE64.OpOwn.Get(e) >> 4; op != prm.CQEOpReq {
			r.t.Fatalf("TX CQE opcode %d", op)
		}
	}
	if len(wire) != 1 {
		r.t.Fatalf("%d frames on the wire for one send", len(wire))
	}
	return wire[0]
}
