package mlx5

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"time"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/internal/iomem"
	"github.com/daqiri-go/daqiri/mlx5/channel"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// TX geometry: the SQ ring in 64-byte basic blocks, packets per enhanced multi-packet WQE
// (upstream's 32), how often a completion is asked for (upstream signals every 16 WQEs), and
// the inline header of SEND WQEs (the 18 bytes DPDK's MLX5_ESEG_MIN_INLINE_SIZE and mlx5e
// put in the Ethernet segment).
const (
	minSQLog     = 13
	mpwMax       = 32
	signalEvery  = 16
	inlineHeader = 18
	maxFrame     = 9216
)

// Data segment byte offsets (mlx5dv.h struct mlx5_wqe_data_seg).
const (
	dsegByteCount = 0
	dsegLKey      = 4
	dsegAddr      = 8
)

// txq is one TX queue: an SQ, its CQ and the bursts waiting for completion.
type txq struct {
	pt *port
	q  *engine.TxQueue

	mu    sync.Mutex
	sqn   uint32
	sqObj channel.Object
	ring  []byte
	dbr   []byte // send counter word
	pc    uint32 // basic blocks posted
	cc    uint32 // basic blocks completed
	bf    uint32 // which BlueFlame half the next doorbell uses
	since int    // WQEs since the last one that asked for a completion

	cq    []byte
	cqLog uint8
	sqLog uint8 // the SQ holds 1<<sqLog basic blocks: at least one whole burst (sqLogFor)
	cqDBR []byte
	ci    uint32

	pend []pending // bursts in SQ order
	// failed counts error CQEs (a malformed WQE and the flushed ones after it); the SQ is
	// reset and made ready again once everything posted before the error has completed.
	failed   uint64
	inError  bool
	rateIdx  uint16
	lkeys    [config.MaxSegments]uint32
	lastWQEs int    // WQEs of the last burst (tests)
	plans    []plan // scratch for send
}

// pending is a burst whose packets the SQ still reads: its last WQE's index and the counter
// after it.
type pending struct {
	b     *engine.Burst
	last  uint16
	end   uint32
	n     int
	bytes int
}

func (pt *port) newTxq(idx int, q *engine.TxQueue) (*txq, error) {
	sqLog := sqLogFor(q.Config.BatchSize, len(q.Regions))
	t := &txq{pt: pt, q: q, cqLog: sqLog, sqLog: sqLog}
	for s, reg := range q.Regions {
		k, err := pt.regionKey(reg)
		if err != nil {
			return nil, err
		}
		t.lkeys[s] = k
	}
	ringBytes := prm.SendWQEBB << sqLog
	cqBytes := 64 << t.cqLog
	mem, err := pt.newQueueMem(ringBytes + cqBytes + 4096)
	if err != nil {
		return nil, err
	}
	var ringOff, cqOff, dbrOff uint64
	t.ring, ringOff = mem.alloc(ringBytes, 4096)
	t.cq, cqOff = mem.alloc(cqBytes, 4096)
	dbr, dbrOff := mem.alloc(64, 64)
	t.cqDBR, t.dbr = dbr[0:8], dbr[36:40]
	for i := 0; i < 1<<t.cqLog; i++ {
		t.cq[i*64+63] = prm.CQEOpInvalid<<4 | 1
	}
	o, _, err := pt.create(pt.cqIn(t.cqLog, mem.umem, cqOff, dbrOff), 16)
	if err != nil {
		return nil, fmt.Errorf("%s: CQ: %w", q.Path(), err)
	}
	cqn := o.ID()
	if q.Config.PacingMbps > 0 {
		if err := t.setPacing(idx+1, q.Config.PacingMbps); err != nil {
			return nil, err
		}
	}
	sb := prm.CreateSQIn.Ctx.Off
	wb := sb + prm.SQC.WQ.Off
	in := prm.NewCmdIn(prm.CmdOpCreateSQ, 0, int(prm.WQ.PAS.At(wb).ByteOff()))
	s, w := prm.SQC, prm.WQ
	s.CQN.At(sb).Set(in, uint64(cqn))
	s.TISNum0.At(sb).Set(in, uint64(pt.tis))
	s.TISLstSz.At(sb).Set(in, 1)
	s.AllowMultiPktSendWQE.At(sb).Set(in, 1)
	s.FlushInErrorEn.At(sb).Set(in, 1)
	s.TSFormat.At(sb).Set(in, tsFormatRealTime)
	if pt.freeRunning {
		s.TSFormat.At(sb).Set(in, tsFormatFreeRunning)
	}
	s.PacketPacingRateLimitIndex.At(sb).Set(in, uint64(t.rateIdx))
	w.WQType.At(wb).Set(in, prm.WQTypeCyclic)
	w.PD.At(wb).Set(in, uint64(pt.pd))
	w.UARPage.At(wb).Set(in, uint64(pt.uar.Index()))
	wqUMEM(in, wb, mem.umem, ringOff, dbrOff+32)
	w.LogWQStride.At(wb).Set(in, prm.SendWQEShift)
	w.LogWQSz.At(wb).Set(in, uint64(sqLog))
	if o, _, err = pt.create(in, 16); err != nil {
		return nil, fmt.Errorf("%s: SQ: %w", q.Path(), err)
	}
	t.sqn, t.sqObj = o.ID(), o
	if err := t.modify(prm.SQStateRST, prm.SQStateRDY); err != nil {
		return nil, err
	}
	return t, nil
}

// setPacing gives the queue a rate-limit index with its pacing_mbps (SET_PP_RATE_LIMIT,
// mlx5_ifc.h set_pp_rate_limit_context rate_limit in kb/s).
func (t *txq) setPacing(idx, mbps int) error {
	in := prm.NewCmdIn(prm.CmdOpSetPPRateLimit, 0, int(prm.SetPPRateLimitIn.Ctx.End()/8))
	prm.SetPPRateLimitIn.RateLimitIndex.Set(in, uint64(idx))
	prm.SetPPRateLimitContext.RateLimit.At(prm.SetPPRateLimitIn.Ctx.Off).Set(in, uint64(mbps)*1000)
	prm.SetPPRateLimitContext.BurstUpperBound.At(prm.SetPPRateLimitIn.Ctx.Off).Set(in, 64*1024)
	// DevX hands out the index itself (the kernel runs SET_PP_RATE_LIMIT): a Pacer channel.
	if pc, ok := t.pt.ch.(channel.Pacer); ok {
		ctx := prm.SetPPRateLimitIn.Ctx.Slice(in)
		p, err := pc.AllocPacing(ctx, true)
		switch {
		case err == nil:
			t.rateIdx = p.Index()
			t.pt.pacings = append(t.pt.pacings, p)
			return nil
		case !errors.Is(err, channel.ErrUnsupported):
			return fmt.Errorf("%s: pacing_mbps %d: %w", t.q.Path(), mbps, err)
		}
	}
	if _, err := t.pt.exec(in, 16); err != nil {
		return fmt.Errorf("%s: pacing_mbps %d: %w", t.q.Path(), mbps, err)
	}
	t.rateIdx = uint16(idx)
	return nil
}

func (t *txq) modify(cur, next uint64) error {
	in := prm.NewCmdIn(prm.CmdOpModifySQ, 0, int(prm.ModifySQIn.Ctx.End()/8))
	prm.ModifySQIn.SQN.Set(in, uint64(t.sqn))
	prm.ModifySQIn.SQState.Set(in, cur)
	prm.SQC.State.At(prm.ModifySQIn.Ctx.Off).Set(in, next)
	if err := t.sqObj.Modify(in, make([]byte, 16)); err != nil {
		return fmt.Errorf("%s: SQ state %d → %d: %w", t.q.Path(), cur, next, err)
	}
	return nil
}

// room reports whether a burst of n packets fits in the SQ now (at worst one SEND WQE of 2
// basic blocks and one WAIT each).
func (t *txq) room(n int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.free() >= uint32(3*n)
}

func (t *txq) free() uint32 { return 1<<t.sqLog - (t.pc - t.cc) }

// sqLogFor sizes an SQ to take a whole burst of batch packets of segs segments each in their
// largest form (SEND WQEs, each after a WAIT WQE): a burst the ring can never hold would be
// refused as "SQ full" forever (upstream's HDS example: 10,240 packets of two segments need
// 20,480 basic blocks). Never below 2^13; the device refuses a size above its log_max_wq_sz
// at CREATE_SQ, naming the field.
func sqLogFor(batch, segs int) uint8 {
	need := uint(max(batch, 1)) * uint(wqeBBs(plan{at: 1}, max(segs, 1)))
	return uint8(max(minSQLog, bits.Len(need-1)))
}

// plan is one WQE of a burst: packets [from, to) as one eMPW, or one packet as SEND (with a
// WAIT first for a send time).
type plan struct {
	from, to int
	mpw      bool
	at       int64 // send time (Unix ns), 0 = now
}

func wqeBBs(p plan, segs int) uint32 {
	if p.mpw {
		return uint32((32 + 16*(p.to-p.from) + 63) / 64)
	}
	n := uint32((16 + 32 + 16*segs + 63) / 64)
	if p.at != 0 {
		n++ // the WAIT WQE: control and wait segments, 48 bytes
	}
	return n
}

// send posts a burst. It checks every packet first, so that a bad burst sends nothing and
// stays the caller's; a full SQ is ErrNotReady, likewise.
func (t *txq) send(b *engine.Burst) error {
	n := b.Len()
	if n == 0 {
		b.Free()
		return nil
	}
	nseg := b.NumSegments()
	if nseg == 1 && len(t.q.Regions) == 1 && b.SegmentRegion(0) == t.q.Regions[0] && !b.AnyTimestamp() {
		return t.sendMPW(b, n)
	}
	if nseg != len(t.q.Regions) {
		return fmt.Errorf("%s: a burst of %d segments on a queue of %d regions: %w", t.q.Path(), nseg, len(t.q.Regions), engine.ErrInvalidParameter)
	}
	for s := 0; s < nseg; s++ {
		// The keys are the queue's regions': a burst from elsewhere cannot be sent here.
		if r := b.SegmentRegion(s); r != t.q.Regions[s] {
			return fmt.Errorf("%s: segment %d is not in the queue's memory region %s: %w", t.q.Path(), s, t.q.Regions[s].Name, engine.ErrInvalidParameter)
		}
	}
	for i := 0; i < n; i++ {
		l := b.PacketLen(i)
		if l < 14 || l > maxFrame {
			return fmt.Errorf("%s: packet %d is %d bytes (14 to %d): %w", t.q.Path(), i, l, maxFrame, engine.ErrInvalidParameter)
		}
		if nseg > 1 && b.SegmentLen(0, i) < inlineHeader {
			return fmt.Errorf("%s: packet %d has a %d-byte first segment; header-data split TX needs at least %d bytes of headers there: %w", t.q.Path(), i, b.SegmentLen(0, i), inlineHeader, engine.ErrInvalidParameter)
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	plans := t.plans[:0]
	need := uint32(0)
	for i := 0; i < n; {
		at, err := b.RxTimestamp(i)
		if err != nil {
			at = 0
		}
		if at != 0 || nseg > 1 {
			p := plan{from: i, to: i + 1, at: at}
			plans = append(plans, p)
			need += wqeBBs(p, nseg)
			i++
			continue
		}
		j := i + 1
		for j < n && j-i < mpwMax {
			if a, err := b.RxTimestamp(j); err == nil && a != 0 {
				break
			}
			j++
		}
		p := plan{from: i, to: j, mpw: true}
		plans = append(plans, p)
		need += wqeBBs(p, 1)
		i = j
	}
	t.plans = plans
	if len(t.pend) > 0 {
		t.pollCQ() // completions first, as in sendMPW
	}
	if t.free() < need {
		return fmt.Errorf("%s: SQ full (%d basic blocks needed, %d free): %w", t.q.Path(), need, t.free(), engine.ErrNotReady)
	}
	var last uint16
	var lastCtrl []byte
	for k, p := range plans {
		signal := t.since+1 >= signalEvery || k == len(plans)-1
		if p.at != 0 {
			t.postWait(p.at)
		}
		last = uint16(t.pc)
		if p.mpw {
			lastCtrl = t.postMPW(b, p, signal)
		} else {
			lastCtrl = t.postSend(b, p.from, signal)
		}
		if signal {
			t.since = 0
		} else {
			t.since++
		}
	}
	t.lastWQEs = len(plans)
	t.pend = append(t.pend, pending{b: b, last: last, end: t.pc, n: n, bytes: b.TotalBytes()})
	t.ring_(lastCtrl)
	return nil
}

// Control segment byte offsets (mlx5dv.h struct mlx5_wqe_ctrl_seg; TestHotOffsets checks
// them against prm).
const (
	ctrlOpModIdxOpcode = 0
	ctrlQPNDS          = 4
	ctrlFmCeSe         = 11
)

// sendMPW is send for the common burst — one segment, no send times — in one pass: the
// packets are checked while their data segments go straight into the SQ as eMPW WQEs of up
// to mpwMax packets; a bad packet takes the producer counter back (nothing written past the
// doorbell record is the device's), so the burst is still the caller's. One doorbell for the
// burst, its bytes counted on the way.
func (t *txq) sendMPW(b *engine.Burst, n int) error {
	offs, lens := b.SegmentArrays(0)
	lens = lens[:len(offs)]
	base := uint64(t.q.Regions[0].Addr(0))
	full, rest := n/mpwMax, n%mpwMax
	need := uint32(full) * wqeBBs(plan{to: mpwMax, mpw: true}, 1)
	wqes := full
	if rest > 0 {
		need += wqeBBs(plan{to: rest, mpw: true}, 1)
		wqes++
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	// Completions first, every send: the bursts they finish go back to their region now, so the
	// next TxBurst takes buffers just freed and still in cache instead of cycling through the
	// whole region (the two-port model run's gather and header writes missed on every packet
	// while completions waited for a full SQ or the worker). One CQE owner test when none came;
	// with no burst pending the whole SQ is free.
	if len(t.pend) > 0 {
		t.pollCQ()
	}
	if t.free() < need {
		return fmt.Errorf("%s: SQ full (%d basic blocks needed, %d free): %w", t.q.Path(), need, t.free(), engine.ErrNotReady)
	}
	pc0, since0 := t.pc, t.since
	lkey := t.lkeys[0]
	units := uint32(prm.SendWQEBB/16) << t.sqLog // 16-byte units in the ring
	var last uint16
	var ctrl *[16]byte
	bytes := 0
	ring := t.ring
	keyHi := uint64(bits.ReverseBytes32(lkey)) << 32
	for w, i := 0, 0; w < wqes; w++ {
		k := min(mpwMax, n-i)
		start := t.pc
		ds := 2 + k
		if u := (start * 4) & (units - 1); u+2+mpwMax <= units {
			// The WQE does not wrap (nor would one of mpwMax packets): its data segments
			// in one pass.
			by, bad := putDSegs((*[mpwMax * 16]byte)(ring[(u+2)*16:]), offs[i:i+k], lens[i:i+k], base, keyHi)
			if bad >= 0 {
				i += bad
				l := lens[i]
				t.pc, t.since = pc0, since0
				return fmt.Errorf("%s: packet %d is %d bytes (14 to %d): %w", t.q.Path(), i, l, maxFrame, engine.ErrInvalidParameter)
			}
			bytes += by
			i += k
		} else {
			for j := 0; j < k; j, i = j+1, i+1 {
				l := lens[i]
				if l < 14 || l > maxFrame {
					t.pc, t.since = pc0, since0
					return fmt.Errorf("%s: packet %d is %d bytes (14 to %d): %w", t.q.Path(), i, l, maxFrame, engine.ErrInvalidParameter)
				}
				bytes += int(l)
				// mlx5dv.h struct mlx5_wqe_data_seg: byte_count, lkey, addr, big-endian.
				u := (start*4 + uint32(2+j)) & (units - 1)
				d := (*[16]byte)(ring[u*16:])
				binary.BigEndian.PutUint32(d[dsegByteCount:], l)
				binary.BigEndian.PutUint32(d[dsegLKey:], lkey)
				binary.BigEndian.PutUint64(d[dsegAddr:], base+offs[i])
			}
		}
		// The Ethernet segment, no inline data; then the control segment (DPDK mlx5_tx.h
		// mlx5_tx_burst_empw_simple).
		clear((*[16]byte)(t.ring[((start*4+1)&(units-1))*16:])[:])
		ctrl = (*[16]byte)(t.ring[((start*4)&(units-1))*16:])
		signal := t.since+1 >= signalEvery || w == wqes-1
		binary.BigEndian.PutUint32(ctrl[ctrlOpModIdxOpcode:], (start&0xffff)<<8|prm.WQEOpEnhancedMPSW)
		binary.BigEndian.PutUint32(ctrl[ctrlQPNDS:], t.sqn<<8|uint32(ds))
		binary.BigEndian.PutUint64(ctrl[8:], 0)
		if signal {
			ctrl[ctrlFmCeSe] = prm.WQECtrlCQUpdate
			t.since = 0
		} else {
			t.since++
		}
		last = uint16(start)
		t.pc += uint32((ds*16 + 63) / 64)
	}
	t.lastWQEs = wqes
	t.pend = append(t.pend, pending{b: b, last: last, end: t.pc, n: n, bytes: bytes})
	t.ring_(ctrl[:])
	return nil
}

// putDSegs writes one pointer data segment per packet (at most mpwMax) into seg (mlx5dv.h
// struct mlx5_wqe_data_seg, byte_count, lkey, addr, big-endian; keyHi is the lkey byte-swapped
// into the high half of the first eight bytes read little-endian), the packets' lengths and
// their buffers' region offsets added to base. It returns the lengths' sum, and -1, or the
// index of the first packet whose length is not 14 to maxFrame bytes (the segments from it
// on are not written). sendMPW's loop for a WQE that does not wrap; TestPutDSegs pins it to
// the field-by-field form. Not inlined: inside sendMPW its loop ran out of registers and
// reloaded spilled values per packet.
//
//go:noinline
func putDSegs(seg *[mpwMax * 16]byte, offs []uint64, lens []uint32, base, keyHi uint64) (bytes, bad int) {
	offs = offs[:min(len(offs), mpwMax)]
	lens = lens[:len(offs)]
	for i, o := range offs {
		l := lens[i]
		if l-14 > maxFrame-14 {
			return bytes, i
		}
		bytes += int(l)
		d := (*[16]byte)(seg[16*i:])
		binary.LittleEndian.PutUint64(d[dsegByteCount:], uint64(bits.ReverseBytes32(l))|keyHi)
		binary.BigEndian.PutUint64(d[dsegAddr:], base+o)
	}
	return bytes, -1
}

// ring_ publishes the posted WQEs: doorbell record, then the control segment's first 8 bytes
// to the BlueFlame register, alternating halves (rdma-core qp.c post_send_db: each barrier
// below, then bf->offset ^= bf->buf_size).
func (t *txq) ring_(ctrl []byte) {
	iomem.ToDevice() // udma_to_device_barrier: the WQEs before the doorbell record
	binary.BigEndian.PutUint32(t.dbr, t.pc&0xffff)
	iomem.WCStart() // mmio_wc_start: the record before the write-combining UAR store
	t.pt.uar.Write64(prm.UARBlueFlame+t.bf, binary.BigEndian.Uint64(ctrl[:8]))
	iomem.FlushWrites() // mmio_flush_writes: out of the CPU's WC buffer, before the next ring
	t.bf ^= prm.UARBlueFlameSize
}

// wqe returns the bytes of n basic blocks from the producer counter, as one slice when they
// do not wrap (callers write segment by segment through seg).
func (t *txq) bb(i uint32) []byte {
	o := (i & (1<<t.sqLog - 1)) * prm.SendWQEBB
	return t.ring[o : o+prm.SendWQEBB]
}

// seg is 16-byte unit u of the WQE that starts at basic block start.
func (t *txq) seg(start uint32, u int) []byte {
	b := t.bb(start + uint32(u/4))
	return b[(u%4)*16 : (u%4)*16+16]
}

func (t *txq) ctrl(start uint32, opcode, opmod uint32, ds int, signal bool) []byte {
	c := t.seg(start, 0)
	clear(c)
	prm.WQECtrl.OpModIdxOpcode.Set(c, uint64(opmod<<24|(start&0xffff)<<8|opcode))
	prm.WQECtrl.QPNDS.Set(c, uint64(t.sqn<<8|uint32(ds)))
	if signal {
		prm.WQECtrl.FmCeSe.Set(c, prm.WQECtrlCQUpdate)
	}
	return c
}

// postMPW writes an enhanced multi-packet WQE: control, an Ethernet segment without inline
// data, one pointer data segment per packet (DPDK mlx5_tx.h mlx5_tx_burst_empw_simple).
func (t *txq) postMPW(b *engine.Burst, p plan, signal bool) []byte {
	start := t.pc
	k := p.to - p.from
	ds := 2 + k
	c := t.ctrl(start, prm.WQEOpEnhancedMPSW, 0, ds, signal)
	clear(t.seg(start, 1))
	lkey := t.lkeys[0]
	for j := 0; j < k; j++ {
		i := p.from + j
		// mlx5dv.h struct mlx5_wqe_data_seg: byte_count, lkey, addr, big-endian (offsets
		// checked against prm by TestHotOffsets).
		d := t.seg(start, 2+j)
		binary.BigEndian.PutUint32(d[dsegByteCount:], uint32(b.SegmentLen(0, i)))
		binary.BigEndian.PutUint32(d[dsegLKey:], lkey)
		binary.BigEndian.PutUint64(d[dsegAddr:], uint64(b.SegmentAddr(0, i)))
	}
	t.pc += uint32((ds*16 + 63) / 64)
	return c
}

// postSend writes a SEND WQE for packet i: its first 18 bytes inline in the Ethernet segment,
// the rest of each segment by pointer (no zero-length data segment: it takes an SQ into
// error).
func (t *txq) postSend(b *engine.Burst, i int, signal bool) []byte {
	start := t.pc
	nseg := b.NumSegments()
	eth0, eth1 := t.seg(start, 1), t.seg(start, 2)
	clear(eth0)
	clear(eth1)
	prm.WQEEth.InlineHdrSz.Set(eth0, inlineHeader)
	h := b.Segment(0, i)
	copy(eth0[14:16], h[:2])
	copy(eth1, h[2:inlineHeader])
	ds := 3
	for s := 0; s < nseg; s++ {
		l := b.SegmentLen(s, i)
		addr := uint64(b.SegmentAddr(s, i))
		if s == 0 {
			l -= inlineHeader
			addr += inlineHeader
		}
		if l <= 0 {
			continue
		}
		d := t.seg(start, ds)
		prm.WQEData.ByteCount.Set(d, uint64(l))
		prm.WQEData.LKey.Set(d, uint64(t.lkeys[s]))
		prm.WQEData.Addr.Set(d, addr)
		ds++
	}
	c := t.ctrl(start, prm.WQEOpSend, 0, ds, signal)
	t.pc += uint32((ds*16 + 63) / 64)
	return c
}

// postWait writes a WAIT-on-time WQE: the SQ holds until the device's real-time clock
// reaches at (DPDK mlx5_tx.h mlx5_tx_wseg_init: opcode WAIT, opmod time, condition
// cyclic-smaller, the time in the real-time format with a full mask).
func (t *txq) postWait(at int64) {
	start := t.pc
	t.ctrl(start, prm.WQEOpWait, prm.WaitOpModTime, 3, false)
	tb := t.pt.tb.Load()
	rt := tb.DeviceTime(at)
	if t.pt.freeRunning {
		// The SQ's clock is the free-running timer: the time in its ticks.
		rt = tb.Timer.Ticks(at)
	}
	seg1, seg2 := t.seg(start, 1), t.seg(start, 2)
	clear(seg1)
	clear(seg2)
	binary.BigEndian.PutUint32(seg1[prm.WaitOperationOff:], prm.WaitCondCyclicSmaller)
	binary.BigEndian.PutUint64(seg2[prm.WaitValueOff-16:], rt)
	binary.BigEndian.PutUint64(seg2[prm.WaitMaskOff-16:], ^uint64(0))
	t.pc++
}

// complete polls the TX CQ (for the workers); it returns the CQEs read.
func (t *txq) complete() int {
	if !t.mu.TryLock() {
		return 0
	}
	defer t.mu.Unlock()
	return t.pollCQ()
}

// pollCQ reads requester CQEs and frees the bursts whose WQEs completed. A CQE completes
// every WQE up to the one it names (the SQ executes in order).
func (t *txq) pollCQ() int {
	mask := uint32(1)<<t.cqLog - 1
	n, done := 0, 0
	for {
		e := t.cq[(t.ci&mask)*64 : (t.ci&mask)*64+64]
		if !prm.CQESoftwareOwned(e[63], t.ci, t.cqLog) {
			break
		}
		iomem.FromDevice() // rdma-core cq.c mlx5_get_next_cqe: udma_from_device_barrier
		t.ci++
		n++
		wc := be16(e, cqeWQECounter)
		ok := prm.CQEOpcode(e[63]) == prm.CQEOpReq
		if !ok {
			t.failed++
			t.inError = true
		}
		// Completed bursts leave the front of pend together at the end (compacted once, so
		// its array is reused and never grows).
		for done < len(t.pend) && int16(wc-t.pend[done].last) >= 0 {
			p := &t.pend[done]
			done++
			if ok {
				t.q.Stats.Add(p.n, p.bytes)
			} else {
				t.q.Stats.Drop(engine.DropSendFailure, p.n)
			}
			p.b.Free()
			p.b = nil
			t.cc = p.end
		}
	}
	if done > 0 {
		t.pend = t.pend[:copy(t.pend, t.pend[done:])]
	}
	if n > 0 {
		// rdma-core cq.c update_cons_index and DPDK's TX completion path have compiler order
		// only here; the store barrier kept from before costs one per polled batch.
		iomem.ToDevice()
		binary.BigEndian.PutUint32(t.cqDBR, t.ci&0xffffff)
	}
	if t.inError && len(t.pend) == 0 {
		t.recover()
	}
	return n
}

// recover brings an SQ in error back: once every WQE posted before has completed (in error
// or flushed), reset and ready it and start its counters again (kernel en/reporter_tx.c
// mlx5e_tx_reporter_err_cqe_recover: ERR → RST → RDY).
func (t *txq) recover() {
	if err := t.modify(prm.SQStateERR, prm.SQStateRST); err != nil {
		t.pt.e.env.Log.Error("mlx5: SQ recovery", "queue", t.q.Path(), "err", err)
		return
	}
	t.pc, t.cc, t.since = 0, 0, 0
	binary.BigEndian.PutUint32(t.dbr, 0)
	if err := t.modify(prm.SQStateRST, prm.SQStateRDY); err != nil {
		t.pt.e.env.Log.Error("mlx5: SQ recovery", "queue", t.q.Path(), "err", err)
		return
	}
	t.inError = false
}

// drain waits (at most a second) for posted bursts to complete, then frees the rest and
// counts them as closed.
func (t *txq) drain() {
	deadline := time.Now().Add(time.Second)
	for {
		t.mu.Lock()
		t.pollCQ()
		left := len(t.pend)
		if left == 0 || time.Now().After(deadline) {
			for _, p := range t.pend {
				t.q.Stats.Drop(engine.DropClosed, p.n)
				p.b.Free()
			}
			t.pend = nil
			t.mu.Unlock()
			return
		}
		t.mu.Unlock()
		time.Sleep(100 * time.Microsecond)
	}
}
