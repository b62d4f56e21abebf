package mlx5

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"sync"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/flow"
	flowmlx5 "github.com/daqiri-go/daqiri/flow/mlx5"
	"github.com/daqiri-go/daqiri/internal/iomem"
	"github.com/daqiri-go/daqiri/mlx5/channel"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// Hardware reorder (reorder_engine: hw, upstream NVIDIA/daqiri #290): the plan's flow rule
// forwards to flow/mlx5's reorder table, whose entry k (the flex parser's sample of the
// sequence field = k) sends the frame to slot k's own RQ. Every slot RQ has a ring of two
// receive WQEs and exactly one posted at a time, pointing at slot k of the output buffer that
// holds the current batch: the NIC writes each frame in place and nothing on the host moves
// it. One CQ takes every slot's completion; each entry tags its frames with hwSlotTag+k, so
// a CQE names its slot. When every slot has completed, the buffer is delivered as one
// aggregate burst, like the software plans' (FlagReordered, ReorderInfo), and the slots are
// re-armed on the next free buffer of the output region.
//
// What the NIC drops is counted, never placed: a sequence number no slot takes by the
// table's last entry (a flow counter: the queue's drop reason out_of_range), a second frame
// for a slot by the slot RQ itself, which has no WQE left until the re-arm (the plan's own Q
// counter, out_of_buffer: drop reason duplicate — frames of the next batch that arrive before
// the re-arm are counted the same way).
//
// Slot k starts at k × buf_size/packets_per_batch of an output buffer; with a
// payload_byte_offset the WQE's first segment takes the frame's first bytes into a scratch
// area, so a slot holds the payload only. A frame longer than offset + slot completes in
// error: its slot stays missing (counted malformed) and the aggregate carries
// FlagReorderTimeout. A batch still missing slots when the queue's timeout_us has passed since
// its first packet is ended as upstream ends it (expire): the missing slots' RQs are reset,
// then it is delivered or dropped as missing_action says. A packet of that batch arriving
// later takes its slot in the next batch (the NIC cannot tell cycles apart: the sender's
// cycle must be slower than the timeout).

// hwSlotTag is the flow tag of slot 0's frames (0 is "no tag" to a ConnectX).
const hwSlotTag = 1

// hwPlan is one hardware reorder plan on a port.
type hwPlan struct {
	pt   *port
	h    *engine.HWReorder
	q    *engine.RxQueue
	out  *engine.Region
	outs []*engine.Region // the aggregate's one segment
	ppb  int
	slot int // bytes per slot: out.BufSize / ppb
	off  int // payload_byte_offset

	lkey    uint32 // the output region's key
	base    uint64 // its address in the device's view
	hdrKey  uint32 // the scratch area's key and address (off > 0)
	hdrAddr uint64
	wqeSize int

	cq    []byte
	cqLog uint8
	cqDBR []byte
	ci    uint32
	rings [][]byte // per slot: two WQEs
	dbrs  [][]byte // per slot: the receive counter word
	pcs   []uint32 // per slot: WQEs posted since the RQ was last reset
	rqs   []channel.Object

	steer   *flowmlx5.HWReorder
	qctr    uint32
	qctrObj channel.Object

	// The batch being filled.
	armed   bool
	idx     uint32 // its output buffer
	present []byte // bitmap of the slots completed
	got     int    // slots completed with a frame
	bad     int    // slots completed in error
	inLen   int    // payload bytes of the first frame
	ts      int64
	first   int64 // when the batch's first completion was read (now())
	failed  bool  // a slot RQ could not be reset: the plan delivers nothing more
	infos   map[uint32]*engine.ReorderInfo
	batches uint64 // batches delivered: the next one's BatchID

	mu             sync.Mutex // Sync: the NIC's counters as last read
	seenDup, seenR uint64
	closed         bool // the port is closing: the counters were read for the last time
}

// openHWReorders builds the port's hardware reorder plans (after its steering).
func (pt *port) openHWReorders() error {
	for _, h := range pt.e.env.HWReorders {
		if h.Port != pt.p {
			continue
		}
		hp, err := pt.newHWPlan(h)
		if err != nil {
			return err
		}
		pt.hw = append(pt.hw, hp)
	}
	return nil
}

func (pt *port) newHWPlan(h *engine.HWReorder) (*hwPlan, error) {
	rc := h.Config
	fs, ok := pt.steer.(*flowSteer)
	if !ok {
		return nil, fmt.Errorf("%s.reorder_engine: hardware reorder needs flow/mlx5's steering: %w", h.Path, engine.ErrNotSupported)
	}
	ppb := rc.Method.PacketsPerBatch
	hp := &hwPlan{pt: pt, h: h, q: h.Queue, out: h.Out, outs: []*engine.Region{h.Out}, ppb: ppb, off: rc.PayloadByteOffset,
		present: make([]byte, (ppb+7)/8), infos: map[uint32]*engine.ReorderInfo{}}
	if ppb < 1 || ppb > flowmlx5.MaxHWReorderSlots {
		return nil, fmt.Errorf("%s.method.seq_packets_per_batch.packets_per_batch: %d slots (1 to %d): %w", h.Path, ppb, flowmlx5.MaxHWReorderSlots, engine.ErrInvalidParameter)
	}
	hp.slot = h.Out.BufSize / ppb
	if hp.slot < 1 {
		return nil, fmt.Errorf("%s.memory_region: buffers of %d bytes cannot hold %d slots: %w", h.Path, h.Out.BufSize, ppb, engine.ErrInvalidParameter)
	}
	if h.Out.NumBufs < 2 {
		// One buffer would leave no batch armed while the application holds the last one.
		pt.e.env.Log.Warn("mlx5: hardware reorder output region has one buffer: frames arriving while the application holds it are dropped", "plan", h.Path)
	}
	var err error
	if hp.lkey, err = pt.regionKey(h.Out); err != nil {
		return nil, err
	}
	hp.base = memBase(h.Out.Memory())

	nseg := 1
	if hp.off > 0 {
		nseg = 2
	}
	hp.wqeSize = 16 * nseg
	hp.cqLog = uint8(bits.Len(uint(2*ppb - 1)))
	cqBytes := 64 << hp.cqLog
	mem, err := pt.newQueueMem(cqBytes + ppb*128 + 64 + (hp.off+63)&^63 + 4096)
	if err != nil {
		return nil, err
	}
	var cqOff, dbrOff uint64
	hp.cq, cqOff = mem.alloc(cqBytes, 4096)
	for i := 0; i < 1<<hp.cqLog; i++ {
		hp.cq[i*64+63] = prm.CQEOpInvalid<<4 | 1 // hardware-owned at first (rdma-core cq.c)
	}
	hp.cqDBR, dbrOff = mem.alloc(64, 64)
	hp.cqDBR = hp.cqDBR[:8]
	cq, _, err := pt.create(pt.cqIn(hp.cqLog, mem.umem, cqOff, dbrOff), 16)
	if err != nil {
		return nil, fmt.Errorf("%s: the slots' CQ: %w", h.Path, err)
	}
	if hp.off > 0 {
		var hdrOff uint64
		_, hdrOff = mem.alloc(hp.off, 64)
		hp.hdrAddr = mem.addr + hdrOff
	}
	o, _, err := pt.create(prm.NewCmdIn(prm.CmdOpAllocQCounter, 0, 16), 16)
	if err != nil {
		return nil, fmt.Errorf("%s: the slots' Q counter: %w", h.Path, err)
	}
	hp.qctr, hp.qctrObj = o.ID(), o
	rqns := make([]uint32, ppb)
	hp.pcs = make([]uint32, ppb)
	hp.rqs = make([]channel.Object, ppb)
	hp.rings = make([][]byte, ppb)
	hp.dbrs = make([][]byte, ppb)
	for k := range ppb {
		ring, ringOff := mem.alloc(2*hp.wqeSize, 64)
		dbr, dOff := mem.alloc(64, 64)
		hp.rings[k], hp.dbrs[k] = ring, dbr[:4]
		if hp.rqs[k], err = hp.createRQ(cq.ID(), mem.umem, ringOff, dOff); err != nil {
			return nil, err
		}
		rqns[k] = hp.rqs[k].ID()
	}
	if hp.off > 0 {
		if hp.hdrKey, err = pt.umemKey(mem.umem, mem.addr, uint64(len(mem.b))); err != nil {
			return nil, err
		}
	}

	// The flow's rule slot now forwards to the plan's table instead of its queue.
	rx := pt.p.Config.RX
	rule, err := flow.Compile(pt.e.env.Config, fmt.Sprintf("%s.rx.flows[%d]", pt.p.Path(), h.Flow), &rx.Flows[h.Flow], pt.rxQueueIDs(), rx.FlexItems)
	if err != nil {
		return nil, err
	}
	seq := rc.Method.Seq
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if err := fs.Clear(h.Flow); err != nil {
		return nil, fmt.Errorf("%s: %w", h.Path, err)
	}
	hp.steer, err = fs.AddHWReorder(h.Flow, flowmlx5.HWReorderParams{Name: h.Path, Rule: rule, SeqBitOffset: seq.Offset,
		SeqBitWidth: seq.Width, SlotRQNs: rqns, SlotTagBase: hwSlotTag})
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", h.Path, err, engine.ErrInvalidParameter)
	}
	h.Sync = hp.sync
	return hp, nil
}

// createRQ makes one slot's cyclic RQ of two WQEs on the shared CQ, counted by the plan's Q
// counter, and moves it to ready.
func (hp *hwPlan) createRQ(cqn, umem uint32, ringOff, dbrOff uint64) (channel.Object, error) {
	pt := hp.pt
	base := prm.CreateRQIn.Ctx.Off
	wb := base + prm.RQC.WQ.Off
	in := prm.NewCmdIn(prm.CmdOpCreateRQ, 0, int(prm.WQ.PAS.At(wb).ByteOff()))
	rc, w := prm.RQC, prm.WQ
	rc.CQN.At(base).Set(in, uint64(cqn))
	rc.Vsd.At(base).Set(in, 1)
	rc.TSFormat.At(base).Set(in, tsFormatRealTime)
	if pt.freeRunning {
		rc.TSFormat.At(base).Set(in, tsFormatFreeRunning)
	}
	rc.CounterSetID.At(base).Set(in, uint64(hp.qctr))
	rc.FlushInErrorEn.At(base).Set(in, 1)
	w.PD.At(wb).Set(in, uint64(pt.pd))
	wqUMEM(in, wb, umem, ringOff, dbrOff)
	w.LogWQStride.At(wb).Set(in, uint64(bits.Len(uint(hp.wqeSize))-1))
	w.LogWQSz.At(wb).Set(in, 1)
	w.WQType.At(wb).Set(in, prm.WQTypeCyclic)
	o, _, err := pt.create(in, 16)
	if err != nil {
		return nil, fmt.Errorf("%s: slot RQ: %w", hp.h.Path, err)
	}
	if err := hp.modifyRQ(o, prm.RQStateRST, prm.RQStateRDY); err != nil {
		return nil, err
	}
	return o, nil
}

// modifyRQ moves a slot RQ from state from to state to.
func (hp *hwPlan) modifyRQ(o channel.Object, from, to uint64) error {
	m := prm.NewCmdIn(prm.CmdOpModifyRQ, 0, int(prm.ModifyRQIn.Ctx.End()/8))
	prm.ModifyRQIn.RQN.Set(m, uint64(o.ID()))
	prm.ModifyRQIn.RQState.Set(m, from)
	prm.RQC.State.At(prm.ModifyRQIn.Ctx.Off).Set(m, to)
	if err := o.Modify(m, make([]byte, 16)); err != nil {
		return fmt.Errorf("%s: slot RQ %d from state %d to %d: %w", hp.h.Path, o.ID(), from, to, err)
	}
	return nil
}

// startHWReorders arms the port's plans and starts a poller for each (unpinned: the plan's
// work is one CQE per packet and one delivery per batch).
func (pt *port) startHWReorders() {
	for _, hp := range pt.hw {
		hp.arm()
		pt.e.w.Go(fmt.Sprintf("mlx5 %s hw reorder %s", pt.p.Name, hp.h.Config.Name), "", hp.run)
	}
}

func (hp *hwPlan) run() {
	idle := 0
	for !hp.pt.e.w.Stopped() {
		if hp.poll() > 0 {
			idle = 0
			continue
		}
		idle++
		backoff(idle)
	}
}

// arm takes a free output buffer and posts every slot's next WQE at its place in it; false
// when the region has none free (the application holds them all), to be tried again.
func (hp *hwPlan) arm() bool {
	if hp.armed {
		return true
	}
	idx, ok := hp.out.Get()
	if !ok {
		hp.h.Stats.NoBuffers.Add(1)
		return false
	}
	hp.idx, hp.armed = idx, true
	clear(hp.present)
	hp.got, hp.bad, hp.inLen = 0, 0, 0
	at := hp.base + uint64(idx)*uint64(hp.out.BufSize)
	for k, ring := range hp.rings {
		w := int(hp.pcs[k]&1) * hp.wqeSize
		seg := ring[w : w+hp.wqeSize]
		if hp.off > 0 {
			prm.WQEData.ByteCount.Set(seg, uint64(hp.off))
			prm.WQEData.LKey.Set(seg, uint64(hp.hdrKey))
			prm.WQEData.Addr.Set(seg, hp.hdrAddr)
			seg = seg[16:]
		}
		prm.WQEData.ByteCount.Set(seg, uint64(hp.slot))
		prm.WQEData.LKey.Set(seg, uint64(hp.lkey))
		prm.WQEData.Addr.Set(seg, at+uint64(k*hp.slot))
	}
	iomem.ToDevice() // the WQEs before the doorbell records that hand them over
	for k, d := range hp.dbrs {
		hp.pcs[k]++
		binary.BigEndian.PutUint32(d, hp.pcs[k]&0xffff)
	}
	return true
}

// poll reads the slots' completions and delivers the batch when every slot has completed;
// it returns the CQEs read.
func (hp *hwPlan) poll() int {
	if hp.failed || !hp.armed && !hp.arm() {
		return 0
	}
	n := hp.readCQ()
	if hp.got+hp.bad >= hp.ppb {
		// The next batch's slots are posted before the application sees this one: a sender
		// that waits for the aggregate before sending the next batch finds them ready.
		b := hp.aggregate()
		hp.sync()
		hp.arm()
		hp.deliver(b)
	} else if to := int64(hp.q.Timeout()); to > 0 && hp.got+hp.bad > 0 && now()-hp.first >= to {
		hp.expire()
	}
	return n
}

// readCQ consumes the slots' completions into the batch and returns how many it read.
func (hp *hwPlan) readCQ() int {
	mask := uint32(1)<<hp.cqLog - 1
	n := 0
	for n < hp.ppb {
		e := hp.cq[(hp.ci&mask)*64 : (hp.ci&mask)*64+64]
		op := e[63]
		if !prm.CQESoftwareOwned(op, hp.ci, hp.cqLog) {
			break
		}
		iomem.FromDevice()
		hp.ci++
		n++
		if hp.got+hp.bad == 0 {
			hp.first = now()
		}
		if op>>4 != prm.CQEOpRespSend {
			hp.bad++
			hp.h.Stats.Malformed.Add(1)
			hp.q.Stats.Drop(engine.DropMalformed, 1)
			continue
		}
		k := int(be32(e, cqeSopDropQPN)&0xffffff) - hwSlotTag
		if k < 0 || k >= hp.ppb || hp.present[k/8]&(1<<(k%8)) != 0 {
			// Not a slot's tag, or a slot twice: one WQE per slot per batch makes both
			// impossible; counted rather than trusted.
			hp.bad++
			hp.h.Stats.Malformed.Add(1)
			hp.q.Stats.Drop(engine.DropMalformed, 1)
			continue
		}
		hp.present[k/8] |= 1 << (k % 8)
		if hp.got == 0 {
			hp.inLen = min(max(int(be32(e, cqeByteCnt))-hp.off, 0), hp.slot)
			hp.ts = hp.pt.rxTime(binary.BigEndian.Uint64(e[cqeTimestamp:]))
		}
		hp.got++
	}
	if n > 0 {
		// The CQEs' reads before the consumer index hands their slots back (the engine's
		// rxq.readCQ; rdma-core cq.c update_cons_index).
		iomem.ToDevice()
		binary.BigEndian.PutUint32(hp.cqDBR, hp.ci&0xffffff)
	}
	return n
}

// expire ends a batch still missing slots when the queue's timeout_us has passed since its
// first packet (a fixed deadline, as upstream's): the missing slots' RQs are reset — moved to
// RST, which withdraws their posted WQE so the NIC writes nothing more into the buffer, and
// back to RDY — then completions that raced with the reset are read, and the batch is
// delivered with FlagReorderTimeout (missing_action passthrough: missing slots zero-filled
// where the CPU can write the output) or dropped whole (missing_action drop).
func (hp *hwPlan) expire() {
	for k, o := range hp.rqs {
		if hp.present[k/8]&(1<<(k%8)) != 0 {
			continue
		}
		err := hp.modifyRQ(o, prm.RQStateRDY, prm.RQStateRST)
		if err == nil {
			hp.pcs[k] = 0
			binary.BigEndian.PutUint32(hp.dbrs[k], 0)
			err = hp.modifyRQ(o, prm.RQStateRST, prm.RQStateRDY)
		}
		if err != nil {
			hp.pt.e.env.Log.Error("mlx5: hardware reorder: cannot reset a slot RQ; the plan stops", "plan", hp.h.Path, "err", err)
			hp.failed = true
			return
		}
	}
	hp.readCQ()
	st := &hp.h.Stats
	if hp.h.Config.MissingAction == config.MissingDrop {
		got := hp.got
		hp.armed = false
		hp.batches++
		hp.out.Put(hp.idx)
		// The next batch's slots are posted before the drop is counted: a sender that
		// starts the next batch as soon as the drop shows must find them ready (the
		// passthrough branch arms before it delivers, for the same reason).
		hp.sync()
		hp.arm()
		st.Dropped.Add(1)
		hp.q.Stats.Drop(engine.DropIncomplete, got)
		return
	}
	if buf := hp.out.Buf(hp.idx); buf != nil {
		for k := range hp.ppb {
			if hp.present[k/8]&(1<<(k%8)) == 0 {
				clear(buf[k*hp.slot : (k+1)*hp.slot])
			}
		}
	}
	b := hp.aggregate()
	hp.sync()
	hp.arm()
	hp.deliver(b)
}

// aggregate turns the batch's buffer into one aggregate for deliver (nil when no burst was
// free: the batch is counted dropped and its buffer given back).
func (hp *hwPlan) aggregate() *engine.Burst {
	idx := hp.idx
	hp.armed = false
	st := &hp.h.Stats
	info := hp.infos[idx]
	if info == nil {
		// An aggregate owns its buffer until the application frees it, so the info that
		// travels with it is never shared.
		info = &engine.ReorderInfo{Present: make([]byte, len(hp.present))}
		hp.infos[idx] = info
	}
	missing := hp.ppb - hp.got
	*info = engine.ReorderInfo{BatchID: hp.batches, SourcePackets: hp.got, PacketsPerBatch: hp.ppb, PayloadLen: hp.inLen,
		AggregateLen: hp.ppb * hp.slot, Flags: engine.FlagReordered, Present: info.Present, Missing: missing}
	copy(info.Present, hp.present)
	if missing > 0 {
		info.Flags |= engine.FlagReorderTimeout
		st.Incomplete.Add(1)
		st.Missing.Add(uint64(missing))
	} else {
		st.Complete.Add(1)
	}
	hp.batches++
	b, err := hp.q.NewBurst()
	if err != nil {
		st.NoMetadata.Add(1)
		hp.q.Stats.Drop(engine.DropNoBurstBuffers, hp.got)
		hp.out.Put(idx)
		return nil
	}
	b.Reset(hp.q.Port.ID, hp.q.ID, hp.outs, hp.q.Port.Raw, 1)
	b.Append(uint64(idx)*uint64(hp.out.BufSize), uint32(info.AggregateLen), hp.h.FlowID, hp.ts)
	b.SetReorderInfo(info)
	st.Packets.Add(uint64(hp.got))
	st.Aggregates.Add(1)
	return b
}

// deliver hands an aggregate to the application.
func (hp *hwPlan) deliver(b *engine.Burst) {
	if b != nil {
		hp.q.DeliverDirect(b)
	}
}

// sync brings the NIC's drop counts into the plan's and the queue's counters: the slots'
// Q counter (a frame for a slot whose WQE is used: a duplicate) and the table's last entry
// (a sequence number no slot takes).
func (hp *hwPlan) sync() {
	hp.mu.Lock()
	defer hp.mu.Unlock()
	if hp.closed {
		return
	}
	in := prm.NewCmdIn(prm.CmdOpQueryQCounter, 0, 0x20)
	prm.QueryQCounterIn.CounterSetID.Set(in, uint64(hp.qctr))
	out := make([]byte, prm.QueryQCounterOut.OutOfBuffer.End()/8)
	if err := hp.qctrObj.Query(in, out); err == nil {
		if n := prm.QueryQCounterOut.OutOfBuffer.Get(out); n > hp.seenDup {
			hp.h.Stats.Duplicates.Add(n - hp.seenDup)
			hp.q.Stats.Drop(engine.DropDuplicate, int(n-hp.seenDup))
			hp.seenDup = n
		}
	}
	if n, err := hp.steer.OutOfRange(); err == nil && n > hp.seenR {
		hp.h.Stats.OutOfRange.Add(n - hp.seenR)
		hp.q.Stats.Drop(engine.DropOutOfRange, int(n-hp.seenR))
		hp.seenR = n
	}
}

// closeHWReorders reads the last completions (the workers have stopped), counts what the NIC
// dropped, and gives back the buffer of a batch still being filled: its packets are counted
// closed.
func (pt *port) closeHWReorders() {
	for _, hp := range pt.hw {
		for range 4 {
			if hp.poll() == 0 {
				break
			}
		}
		hp.sync()
		hp.mu.Lock()
		hp.closed = true
		hp.mu.Unlock()
		if hp.armed {
			hp.armed = false
			hp.q.Stats.Drop(engine.DropClosed, hp.got)
			hp.out.Put(hp.idx)
		}
	}
}
