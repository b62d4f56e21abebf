package mlx5

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"strings"
	"sync/atomic"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/internal/iomem"
	"github.com/daqiri-go/daqiri/mlx5/channel"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// Striding RQ geometry: upstream's 512 strides per WQE, each stride one buffer of the region
// (log_wqe_num_of_strides counts from 9, log_wqe_stride_size from 6: mlx5_ifc.h wq, as
// DPDK's mlx5_devx.c and the kernel's en/params.c subtract those bases).
const (
	stridesPerWQE    = 512 // the default; DAQIRI_MLX5_STRIDES sets a power of two up to 65536
	maxStridesPerWQE = 1 << 16
	strideNumBase    = 9
	strideSizeBase   = 6
	minStride        = 64
	maxStride        = 8192
	maxCyclicWQEs    = 4096
	directMaxPackets = 1024
)

// rxq is one RX queue: a CQ and an RQ, and the burst being filled.
type rxq struct {
	pt     *port
	q      *engine.RxQueue
	direct bool
	busy   atomic.Bool // a direct queue's poller

	cq    []byte // CQE ring
	cqLog uint8
	cqDBR []byte // set_ci word, arm word
	ci    uint32

	rqn     uint32
	rqObj   channel.Object
	ring    []byte // RQ WQEs
	ringLog uint8
	dbr     []byte // receive counter word
	pc      uint32 // WQEs posted
	dirty   bool   // pc moved since the last doorbell record write

	striding bool
	spw      int   // strides per WQE (a power of two)
	spwLog   uint8 // log2 of spw
	// miniCheck is miniCheck(spw), for strideMinis.
	miniCheck uint64
	lkeys     [config.MaxSegments]uint32
	bases     [config.MaxSegments]uint64
	nseg      int

	// Striding state, per WQE group (spw consecutive buffers of the region). The application
	// returns a group's buffers to gr (counts per group, not through the region's pool); a
	// group whose strides the NIC has used is reposted once gr has back every buffer
	// delivered from it.
	groups    int
	gr        *engine.Groups
	slotGrp   []int32 // ring slot → group
	consumed  []int32 // strides the NIC has used
	delivered []int32 // buffers delivered to the application since the group was posted
	waiting   []bool  // the group is in wait
	wait      []int32 // used groups waiting for their buffers (reclaim reposts them)

	// Cyclic state: the buffers of each ring slot, one per segment.
	slotBufs [][config.MaxSegments]uint32
	cc       uint32 // WQEs completed

	cur   *engine.Burst
	first int64 // when cur got its first packet
	// curBytes is the bytes of cur's packets, summed as they are added, so that delivery
	// hands the queue's byte counter the sum (DeliverCounted) instead of a second pass over
	// the lengths. Every path that adds a packet to cur adds its length here.
	curBytes int
	batch    int // packets per burst: batch_size, or directMaxPackets for a direct queue
	cqObj    channel.Object
	// packets counts the packet completions read (delivered or dropped), to find packets the
	// NIC received but could not complete (a CQ overrun).
	packets uint64 // read by Close once the workers stopped
	overran bool   // the CQ overran (found by QUERY_CQ), reported once
}

func (pt *port) newRxq(idx int, q *engine.RxQueue) (*rxq, error) {
	r := &rxq{pt: pt, q: q, direct: q.Config.PollMode == config.PollDirect, nseg: len(q.Regions), batch: q.BatchSize(), spw: pt.e.opts.strides}
	r.spwLog = uint8(bits.TrailingZeros(uint(r.spw)))
	r.miniCheck = miniCheck(uint32(r.spw))
	if r.direct {
		r.batch = directMaxPackets
	}
	if r.nseg == 0 || r.nseg > config.MaxSegments {
		return nil, fmt.Errorf("%s: %d memory regions (1 to %d)", q.Path(), r.nseg, config.MaxSegments)
	}
	for s, reg := range q.Regions {
		k, err := pt.regionKey(reg)
		if err != nil {
			return nil, err
		}
		r.lkeys[s] = k
		r.bases[s] = memBase(reg.Memory())
	}
	reg := q.Regions[0]
	bs := reg.BufSize
	users := pt.regionUsers(reg)
	canStride := r.nseg == 1 && bs >= minStride && bs <= maxStride && bs&(bs-1) == 0 && reg.NumBufs >= r.spw && len(users) <= 1
	switch pt.e.opts.striding {
	case 1:
		if len(users) > 1 {
			return nil, fmt.Errorf("%s: DAQIRI_IBV_STRIDING=1 but memory region %s is shared (named by %s): a striding RQ owns all of its region's buffers, so shared regions get a cyclic RQ", q.Path(), reg.Name, strings.Join(users, ", "))
		}
		if !canStride {
			return nil, fmt.Errorf("%s: DAQIRI_IBV_STRIDING=1 but the queue cannot use a striding RQ (one region with a power-of-two buf_size of %d to %d bytes and at least %d buffers)", q.Path(), minStride, maxStride, r.spw)
		}
		r.striding = true
	case -1:
		r.striding = canStride
	}
	var wqes, wqeSize, cqes int
	if r.striding {
		r.groups = reg.NumBufs / r.spw
		wqes = 1 << bits.Len(uint(r.groups-1))
		wqeSize = 32 // mlx5dv.h struct mlx5_mprq_wqe: next segment + one data segment
		cqes = r.groups*r.spw + r.groups
	} else {
		n := reg.NumBufs
		for _, g := range q.Regions {
			n = min(n, sharedRing(g.NumBufs, rxSharers(pt.regionUsers(g))))
		}
		wqes = max(1, min(maxCyclicWQEs, 1<<(bits.Len(uint(n))-1)/2))
		wqeSize = 16 << bits.Len(uint(r.nseg-1)) // one data segment per region, rounded up
		if r.nseg == 3 {
			wqeSize = 64
		}
		cqes = wqes
	}
	r.cqLog = uint8(bits.Len(uint(cqes - 1)))
	if l := pt.e.opts.rxCQLog; l != 0 {
		r.cqLog = l
	}
	r.ringLog = uint8(bits.Len(uint(wqes - 1)))
	cqBytes := 64 << r.cqLog
	ringBytes := max(wqeSize<<r.ringLog, 4096)
	mem, err := pt.newQueueMem(cqBytes + ringBytes + 4096)
	if err != nil {
		return nil, err
	}
	var cqOff, ringOff, dbrOff uint64
	r.cq, cqOff = mem.alloc(cqBytes, 4096)
	r.ring, ringOff = mem.alloc(ringBytes, 4096)
	dbr, dbrOff := mem.alloc(64, 64)
	r.cqDBR, r.dbr = dbr[0:8], dbr[32:36]
	for i := 0; i < 1<<r.cqLog; i++ {
		r.cq[i*64+63] = prm.CQEOpInvalid<<4 | 1 // hardware-owned at first (rdma-core cq.c)
	}
	cqn, err := r.createCQ(mem.umem, cqOff, dbrOff)
	if err != nil {
		return nil, err
	}
	if err := r.createRQ(cqn, mem.umem, ringOff, dbrOff+32, wqeSize); err != nil {
		return nil, err
	}
	if r.striding {
		if err := r.takeRegion(); err != nil {
			return nil, err
		}
	} else {
		r.slotBufs = make([][config.MaxSegments]uint32, 1<<r.ringLog)
		r.refill()
	}
	r.doorbell()
	if err := r.ready(); err != nil {
		return nil, err
	}
	if r.direct {
		q.Poll = r.pollDirect
	}
	return r, nil
}

// cqIn is a CREATE_CQ whose CQE ring and doorbell record are in a UMEM (cq_umem_* and
// dbr_umem_*: DPDK mlx5_prm.h; what DevX requires).
func (pt *port) cqIn(logSize uint8, umem uint32, ringOff, dbrOff uint64) []byte {
	base := prm.CreateCQIn.CQContext.Off
	in := prm.NewCmdIn(prm.CmdOpCreateCQ, 0, prm.CreateCQIn.PAS.ByteOff())
	c := prm.CQC
	c.LogCQSize.At(base).Set(in, uint64(logSize))
	c.UARPage.At(base).Set(in, uint64(pt.uar.Index()))
	c.CEQNOrApuElement.At(base).Set(in, uint64(pt.eqn))
	c.DbrUMEMValid.At(base).Set(in, 1)
	c.DbrUMEMID.At(base).Set(in, uint64(umem))
	c.DbrAddr.At(base).Set(in, dbrOff)
	prm.CreateCQIn.CQUMEMValid.Set(in, 1)
	prm.CreateCQIn.CQUMEMID.Set(in, uint64(umem))
	prm.CreateCQIn.CQUMEMOffset.Set(in, ringOff)
	return in
}

func (r *rxq) createCQ(umem uint32, ringOff, dbrOff uint64) (uint32, error) {
	base := prm.CreateCQIn.CQContext.Off
	in := r.pt.cqIn(r.cqLog, umem, ringOff, dbrOff)
	c := prm.CQC
	if r.pt.e.opts.compression {
		c.CQECompEn.At(base).Set(in, 1)
		format := uint64(prm.MiniCQEFormatHash)
		if r.striding {
			format = prm.MiniCQEFormatCsumStrIdx
		}
		c.MiniCQEResFormat.At(base).Set(in, format)
	}
	o, _, err := r.pt.create(in, 16)
	if err != nil {
		return 0, fmt.Errorf("%s: CQ: %w", r.q.Path(), err)
	}
	r.cqObj = o
	return o.ID(), nil
}

func (r *rxq) createRQ(cqn, umem uint32, ringOff, dbrOff uint64, wqeSize int) error {
	base := prm.CreateRQIn.Ctx.Off
	wb := base + prm.RQC.WQ.Off
	in := prm.NewCmdIn(prm.CmdOpCreateRQ, 0, int(prm.WQ.PAS.At(wb).ByteOff()))
	rc, w := prm.RQC, prm.WQ
	rc.CQN.At(base).Set(in, uint64(cqn))
	rc.Vsd.At(base).Set(in, 1) // frames as they came: no VLAN stripping
	rc.TSFormat.At(base).Set(in, tsFormatRealTime)
	if r.pt.freeRunning {
		rc.TSFormat.At(base).Set(in, tsFormatFreeRunning)
	}
	rc.CounterSetID.At(base).Set(in, uint64(r.pt.qctr))
	rc.FlushInErrorEn.At(base).Set(in, 1)
	w.PD.At(wb).Set(in, uint64(r.pt.pd))
	wqUMEM(in, wb, umem, ringOff, dbrOff)
	w.LogWQStride.At(wb).Set(in, uint64(bits.Len(uint(wqeSize))-1))
	w.LogWQSz.At(wb).Set(in, uint64(r.ringLog))
	if r.striding {
		w.WQType.At(wb).Set(in, prm.WQTypeCyclicStriding)
		w.LogWQENumOfStrides.At(wb).Set(in, uint64(bits.Len(uint(r.spw))-1-strideNumBase))
		w.LogWQEStrideSize.At(wb).Set(in, uint64(bits.Len(uint(r.q.Regions[0].BufSize))-1-strideSizeBase))
	} else {
		w.WQType.At(wb).Set(in, prm.WQTypeCyclic)
	}
	o, _, err := r.pt.create(in, 16)
	if err != nil {
		return fmt.Errorf("%s: RQ: %w", r.q.Path(), err)
	}
	r.rqn, r.rqObj = o.ID(), o
	return nil
}

// wqUMEM places a work queue's ring and doorbell record (the wq at bit offset wb of in) in a
// UMEM (wq_umem_* and dbr_umem_*: DPDK mlx5_prm.h).
func wqUMEM(in []byte, wb uint32, umem uint32, ringOff, dbrOff uint64) {
	w := prm.WQ
	w.WQUMEMValid.At(wb).Set(in, 1)
	w.WQUMEMID.At(wb).Set(in, uint64(umem))
	w.WQUMEMOffset.At(wb).Set(in, ringOff)
	w.DbrUMEMValid.At(wb).Set(in, 1)
	w.DbrUMEMID.At(wb).Set(in, uint64(umem))
	w.DbrAddr.At(wb).Set(in, dbrOff)
}

// rqc/sqc ts_format values (mlx5_ifc.h MLX5_RQC_TIMESTAMP_FORMAT_FREE_RUNNING, _REAL_TIME).
const (
	tsFormatFreeRunning = 0
	tsFormatRealTime    = 2
)

// ready moves the RQ from reset to ready.
func (r *rxq) ready() error {
	in := prm.NewCmdIn(prm.CmdOpModifyRQ, 0, int(prm.ModifyRQIn.Ctx.End()/8))
	prm.ModifyRQIn.RQN.Set(in, uint64(r.rqn))
	prm.ModifyRQIn.RQState.Set(in, prm.RQStateRST)
	prm.RQC.State.At(prm.ModifyRQIn.Ctx.Off).Set(in, prm.RQStateRDY)
	if err := r.rqObj.Modify(in, make([]byte, 16)); err != nil {
		return fmt.Errorf("%s: RQ to ready: %w", r.q.Path(), err)
	}
	return nil
}

// takeRegion takes every buffer of the region (the striding RQ owns it) and posts one WQE per
// group of spw consecutive buffers.
func (r *rxq) takeRegion() error {
	reg := r.q.Regions[0]
	gr, err := reg.TakeGroups(uint(r.spwLog))
	if errors.Is(err, engine.ErrRegionInUse) {
		return fmt.Errorf("%s: memory region %s is in use elsewhere: a striding RQ needs all of its buffers (name the region in one RX queue only)", r.q.Path(), reg.Name)
	}
	if err != nil {
		return fmt.Errorf("%s: striding RQ: %w", r.q.Path(), err)
	}
	r.gr = gr
	r.slotGrp = make([]int32, 1<<r.ringLog)
	r.consumed = make([]int32, r.groups)
	r.delivered = make([]int32, r.groups)
	r.waiting = make([]bool, r.groups)
	r.wait = make([]int32, 0, r.groups)
	for g := range r.groups {
		r.postGroup(g)
	}
	return nil
}

// postGroup writes group g as the next striding WQE (mlx5dv.h struct mlx5_mprq_wqe).
func (r *rxq) postGroup(g int) {
	slot := r.pc & (1<<r.ringLog - 1)
	w := r.ring[slot*32 : slot*32+32]
	clear(w[:16])
	bs := uint64(r.q.Regions[0].BufSize)
	d := w[16:]
	prm.WQEData.ByteCount.Set(d, uint64(r.spw)*bs)
	prm.WQEData.LKey.Set(d, uint64(r.lkeys[0]))
	prm.WQEData.Addr.Set(d, r.bases[0]+uint64(g)*uint64(r.spw)*bs)
	r.slotGrp[slot] = int32(g)
	r.consumed[g] = 0
	if d := r.delivered[g]; d != 0 {
		r.gr.Retake(g, d)
		r.delivered[g] = 0
	}
	r.pc++
	r.dirty = true
}

// refill posts cyclic WQEs while the ring has room and the regions have buffers.
func (r *rxq) refill() {
	size := uint32(1) << r.ringLog
	stride := len(r.ring) >> r.ringLog
	for r.pc-r.cc < size {
		slot := r.pc & (size - 1)
		var idx [config.MaxSegments]uint32
		for s := 0; s < r.nseg; s++ {
			i, ok := r.q.Regions[s].Get()
			if !ok {
				for t := 0; t < s; t++ {
					r.q.Regions[t].Put(idx[t])
				}
				return
			}
			idx[s] = i
		}
		w := r.ring[int(slot)*stride : int(slot+1)*stride]
		for s := 0; s < r.nseg; s++ {
			reg := r.q.Regions[s]
			d := w[s*16:]
			prm.WQEData.ByteCount.Set(d, uint64(reg.BufSize))
			prm.WQEData.LKey.Set(d, uint64(r.lkeys[s]))
			prm.WQEData.Addr.Set(d, r.bases[s]+uint64(idx[s])*uint64(reg.BufSize))
		}
		if r.nseg*16 < stride {
			// The scatter list ends early: a zero byte count with the invalid key
			// (rdma-core MLX5_INVALID_LKEY).
			d := w[r.nseg*16:]
			clear(d[:16])
			prm.WQEData.LKey.Set(d, prm.InvalidLKey)
		}
		r.slotBufs[slot] = idx
		r.pc++
		r.dirty = true
	}
}

// doorbell publishes posted WQEs: the receive counter in the doorbell record, after the
// WQEs.
func (r *rxq) doorbell() {
	if !r.dirty {
		return
	}
	r.dirty = false
	iomem.ToDevice() // rdma-core qp.c mlx5_post_wq_recv: udma_to_device_barrier
	binary.BigEndian.PutUint32(r.dbr, r.pc&0xffff)
}

// reclaim reposts the used groups whose buffers the application has all returned.
func (r *rxq) reclaim() {
	if len(r.wait) == 0 {
		return
	}
	k := 0
	for _, g := range r.wait {
		if r.gr.Returned(int(g)) == r.delivered[g] {
			r.waiting[g] = false
			r.postGroup(int(g))
			continue
		}
		r.wait[k] = g
		k++
	}
	r.wait = r.wait[:k]
}

// maybeRepost runs once the NIC has used every stride of group g: the group is reposted now
// if none of its buffers is out with the application, else once they are back (reclaim).
func (r *rxq) maybeRepost(g int) {
	if r.waiting[g] {
		return
	}
	if r.gr.Returned(g) == r.delivered[g] {
		r.postGroup(g)
		return
	}
	r.waiting[g] = true
	r.wait = append(r.wait, int32(g))
}

// poll reads up to budget completions, fills and delivers bursts, reposts, and returns the
// number of CQEs read.
func (r *rxq) poll(t int64, budget int) int {
	n := r.readCQ(budget)
	if r.striding {
		r.reclaim()
	} else {
		r.refill()
	}
	r.doorbell()
	if r.cur != nil && r.cur.Len() > 0 {
		if to := int64(r.q.Timeout()); n == 0 && (to == 0 || t-r.first >= to) || to > 0 && t-r.first >= to {
			r.deliver()
		}
	}
	return n
}

// readCQ consumes CQEs: plain ones and basic-layout compressed sessions (a title CQE with
// format 3 whose byte count is the session's CQE count, mini-CQE arrays of eight in the next
// slot and every eighth after it: kernel en_rx.c mlx5e_decompress_cqes_start, DPDK mlx5_rx.c
// mlx5_rx_poll_len).
//
// Every slot it has passed holds the invalid opcode: a session's title and mini-CQE arrays
// and every plain CQE are invalidated once read, and the slots between a session's arrays
// keep the invalid opcode they got when this loop last passed them (or at creation), since
// the device leaves them alone ("hardware leaves holes in the CQ ring for software use":
// DPDK mlx5_rx.c mlx5_rx_poll_len). So no slot can look software-owned (CQESoftwareOwned
// rejects the invalid opcode whatever its owner bit) until the device writes it again, and
// a session costs one store per slot the device wrote, not one per packet: DPDK and the
// kernel (en_rx.c mlx5e_cqes_update_owner) store into every slot of a session, the kernel
// because its ownership test reads the owner bit alone.
func (r *rxq) readCQ(budget int) int {
	mask := uint32(1)<<r.cqLog - 1
	n := 0
	for n < budget {
		e := r.cq[(r.ci&mask)*64 : (r.ci&mask)*64+64]
		op := e[63]
		if !prm.CQESoftwareOwned(op, r.ci, r.cqLog) {
			break
		}
		// The rest of the CQE (and a session's mini-CQE arrays) after its owner byte (rdma-core
		// cq.c mlx5_get_next_cqe: udma_from_device_barrier).
		iomem.FromDevice()
		if prm.CQEFormat(op) != prm.CQEFormatCompressed {
			if !r.striding || !r.strideCQE(e) {
				r.cqe(e, be32(e, cqeByteCnt), be16(e, cqeWQECounter), be32(e, cqeRSSHash), e[cqeRSSHashType] != 0)
			}
			e[63] = prm.CQEOpInvalid << 4
			r.ci++
			n++
			continue
		}
		cnt := be32(e, cqeByteCnt)
		if r.striding && prm.CQEOpcode(op) == prm.CQEOpRespSend && cnt <= uint32(len(r.cq)/64) {
			r.strideSession(e, cnt, mask)
			r.invalidateSession(cnt, mask)
			r.ci += cnt
			n += int(cnt)
			continue
		}
		title := *(*[64]byte)(e)
		wc := be16(e, cqeWQECounter)
		for k := uint32(0); k < cnt; k++ {
			at := r.ci + 1
			if k >= prm.MiniCQEArraySize {
				at = r.ci + 8*(k/prm.MiniCQEArraySize)
			}
			s := r.cq[(at&mask)*64:]
			m := s[(k%prm.MiniCQEArraySize)*prm.MiniCQESize:]
			bc := be32(m, miniByteCnt)
			if r.striding {
				// The mini-CQE carries the stride index, not the hash.
				r.cqe(title[:], bc, be16(m, miniStrideIdx), 0, false)
			} else {
				r.cqe(title[:], bc, wc+uint16(k), be32(m, miniHash), title[cqeRSSHashType] != 0)
			}
		}
		r.invalidateSession(cnt, mask)
		r.ci += cnt
		n += int(cnt)
	}
	if n > 0 {
		// The invalidated session slots before the consumer index that hands them back (DPDK
		// mlx5_rx.c mlx5_rx_burst: rte_io_wmb before the CQ doorbell record).
		iomem.ToDevice()
		binary.BigEndian.PutUint32(r.cqDBR, r.ci&0xffffff)
	}
	return n
}

// invalidateSession invalidates the slots the device wrote for the compressed session of cnt
// CQEs at the consumer index: the title and the mini-CQE arrays (the next slot and every
// eighth after the title). See readCQ.
func (r *rxq) invalidateSession(cnt, mask uint32) {
	r.cq[(r.ci&mask)*64+63] = prm.CQEOpInvalid << 4
	r.cq[((r.ci+1)&mask)*64+63] = prm.CQEOpInvalid << 4
	for at := uint32(prm.MiniCQEArraySize); at < cnt; at += prm.MiniCQEArraySize {
		r.cq[((r.ci+at)&mask)*64+63] = prm.CQEOpInvalid << 4
	}
}

// Byte offsets of the CQE and mini-CQE fields the hot path reads (rdma-core mlx5dv.h struct
// mlx5_cqe64, kernel device.h struct mlx5_mini_cqe8): plain loads instead of prm's general
// bit-field access; TestHotOffsets checks each against prm's layout.
const (
	cqeWQEID       = 2
	cqeRSSHash     = 12
	cqeRSSHashType = 16
	cqeByteCnt     = 44
	cqeTimestamp   = 48
	cqeSopDropQPN  = 56
	cqeWQECounter  = 60
	miniHash       = 0
	miniStrideIdx  = 2
	miniByteCnt    = 4
)

func be32(b []byte, off int) uint32 { return binary.BigEndian.Uint32(b[off:]) }
func be16(b []byte, off int) uint16 { return binary.BigEndian.Uint16(b[off:]) }

// cqe handles one completion: e holds the shared fields (the CQE itself, or a compressed
// session's title), bc the byte count word, wc the WQE counter (cyclic) or first stride
// (striding), hash the RSS hash when hashed (the CQE's rss_hash_type says a TIR hashed it).
func (r *rxq) cqe(e []byte, bc uint32, wc uint16, hash uint32, hashed bool) {
	op := prm.CQEOpcode(e[63])
	if op == prm.CQEOpRespErr {
		r.packets++
		r.q.Stats.Drop(engine.DropMalformed, 1)
		if !r.striding {
			r.recycleSlot(wc)
		}
		return
	}
	if op != prm.CQEOpRespSend {
		r.packets++
		r.q.Stats.Drop(engine.DropOther, 1)
		return
	}
	if r.striding && bc&prm.MPRQByteCntFiller == 0 || !r.striding {
		r.packets++
	}
	tag := be32(e, cqeSopDropQPN) & 0xffffff
	ts := r.pt.rxTime(binary.BigEndian.Uint64(e[cqeTimestamp:]))
	if r.striding {
		r.stridePacket(be16(e, cqeWQEID), uint32(wc), bc, tag, ts, hash, hashed)
		return
	}
	r.cyclicPacket(wc, bc, tag, ts, hash, hashed)
}

// strideSession takes a compressed session of cnt packets on a striding RQ whose title e is
// a receive completion: the shared fields (the WQE, flow tag, timestamp) are read once, and
// the mini-CQEs' stride indexes and lengths go straight into the burst's arrays, as many as
// the burst has room for at a time. The stride accounting of the WQE is settled once at the
// end (the session's packets all come from the title's WQE). readCQ invalidates the slots.
func (r *rxq) strideSession(e []byte, cnt, mask uint32) {
	g := int(r.slotGrp[uint32(be16(e, cqeWQEID))&(1<<r.ringLog-1)])
	tag := be32(e, cqeSopDropQPN) & 0xffffff
	ts := r.pt.rxTime(binary.BigEndian.Uint64(e[cqeTimestamp:]))
	spw := uint32(r.spw)
	bs := uint64(r.q.Regions[0].BufSize) // a power of two on a striding RQ
	fill := minisFill{base: uint64(g*r.spw) * bs, bs: bs, check: r.miniCheck, tag: tag, ts: ts}
	consumed := int32(0)
	for k := uint32(0); k < cnt; {
		b := r.cur
		if b == nil {
			if nb, err := r.q.NewBurst(); err == nil {
				r.cur, r.first, r.curBytes, b = nb, now(), 0, nb
			}
		}
		if b == nil {
			// No burst: the rest of the session is dropped, each packet counted once.
			for ; k < cnt; k++ {
				m := r.mini(k, mask)
				bc := be32(m, miniByteCnt)
				used := int32(bc & prm.MPRQByteCntStridesMask >> prm.MPRQByteCntStrideShift)
				consumed += max(used, 1)
				if bc&prm.MPRQByteCntFiller != 0 {
					continue
				}
				r.packets++
				if used > 1 || uint32(be16(m, miniStrideIdx)) >= spw {
					r.q.Stats.Drop(engine.DropTruncated, 1)
				} else {
					r.q.Stats.Drop(engine.DropNoBurstBuffers, 1)
				}
			}
			break
		}
		take := min(cnt-k, uint32(max(r.batch-b.Len(), 1)))
		offs, lens, flows, tss := b.Grow(int(take))
		a := 0
		j := uint32(0)
		bytes := 0
		if k%prm.MiniCQEArraySize == 0 {
			// The common case: whole arrays of common mini-CQEs from an array's start, the
			// first in the slot after the title and the others every eighth slot from it
			// (strideRun), while they are.
			first := r.ci + k
			if k == 0 {
				first++
			}
			n := int(take) &^ (prm.MiniCQEArraySize - 1)
			d, by := strideRun(r.cq, first, r.ci+k, mask, offs[:n], lens[:n], flows[:n], tss[:n], &fill)
			a, j, bytes = d, uint32(d), by
		}
		for j < take {
			// The rest one array of eight mini-CQEs at a time: one slot computation and
			// bounds check per array, the common case in strideMinis.
			kk := k + j
			at := r.ci + 1
			if kk >= prm.MiniCQEArraySize {
				at = r.ci + 8*(kk/prm.MiniCQEArraySize)
			}
			arr := (*[64]byte)(r.cq[(at&mask)*64:])
			q := int(kk % prm.MiniCQEArraySize)
			n := min(prm.MiniCQEArraySize-q, int(take-j))
			d, by := strideMinis(arr, q, n, offs[a:], lens[a:], flows[a:], tss[a:], &fill)
			a += d
			bytes += int(by)
			j += uint32(d)
			if d == n {
				continue
			}
			// Mini-CQE q+d is not one stride of a packet: a filler, or a packet over
			// several strides (truncated: a stride is one buffer).
			bc := binary.BigEndian.Uint32(arr[(q+d)*prm.MiniCQESize+miniByteCnt:])
			used := int32(bc & prm.MPRQByteCntStridesMask >> prm.MPRQByteCntStrideShift)
			consumed += max(used, 1)
			j++
			if bc&prm.MPRQByteCntFiller != 0 {
				continue
			}
			r.packets++
			r.q.Stats.Drop(engine.DropTruncated, 1)
		}
		r.curBytes += bytes
		b.Commit(a)
		consumed += int32(a)
		r.packets += uint64(a)
		r.delivered[g] += int32(a)
		k += take
		if b.Len() >= r.batch {
			r.deliver()
		}
	}
	r.consumed[g] += consumed
	if r.consumed[g] >= int32(r.spw) {
		r.maybeRepost(g)
	}
}

// minisFill is what strideMinis and strideMinis8 need besides the mini-CQEs and the burst's
// arrays: the region offset of the session's WQE's first stride, the stride (buffer) size,
// the session's flow tag and receive time, and check (miniCheck).
type minisFill struct {
	base, bs uint64
	check    uint64
	tag      uint32
	ts       int64
}

// miniCheck is the mask of the bits of a mini-CQE, read as one big-endian 64-bit word
// (checksum 63:48, stride index 47:32, byte count 31:0), that differ from miniOne in the
// common case (one packet in one stride of a WQE of spw strides, spw a power of two): the
// filler flag and the strides-used field of the byte count, and the stride index's bits at
// and above spw's. A mini-CQE x is the common case when x&check == miniOne.
func miniCheck(spw uint32) uint64 {
	return uint64(^(spw-1)&0xffff)<<32 | prm.MPRQByteCntFiller | prm.MPRQByteCntStridesMask
}

// miniOne is the common case's bits under miniCheck: one stride used, not a filler, a stride
// index below the WQE's strides.
const miniOne = 1 << prm.MPRQByteCntStrideShift

// strideMinis fills offs, lens, flows and tss from the n mini-CQEs of array arr from index q
// on (q+n ≤ 8) while each is the common case, one packet in one stride of the session's WQE
// (miniCheck): the stride's buffer offset, the packet's length, the session's flow tag and
// time. It returns how many it took; the next one, if any, is something else (a filler, a
// packet over several strides, a stride index past the WQE's), and the sum of the lengths it
// took (a stride holds at most 64 KiB, eight of them fit a uint32). The arrays hold at least
// n. strideRun is the same for whole arrays.
func strideMinis(arr *[64]byte, q, n int, offs []uint64, lens, flows []uint32, tss []int64, f *minisFill) (took int, bytes uint32) {
	offs = offs[:n]
	lens = lens[:len(offs)]
	flows = flows[:len(offs)]
	tss = tss[:len(offs)]
	for i := range offs {
		x := binary.BigEndian.Uint64(arr[((q+i)&7)*prm.MiniCQESize:])
		if x&f.check != miniOne {
			return i, bytes
		}
		offs[i] = f.base + (x>>32)&0xffff*f.bs
		l := uint32(x) & prm.MPRQByteCntLenMask
		lens[i] = l
		bytes += l
		flows[i] = f.tag
		tss[i] = f.ts
	}
	return n, bytes
}

// strideRun is strideMinis for whole arrays of eight mini-CQEs in a row, the burst's hot
// loop: the first array in CQ slot first, the i-th after it in slot from+8i, as many as offs
// has room for (len(offs)/8; the other arrays as long) and while all eight of an array are
// the common case. It returns how many packets it took (a multiple of eight) and their
// lengths' sum. Of an array that is not all common it takes nothing (strideMinis then takes
// it), though it may have written its entries. One test for the eight, no per-packet branch,
// unrolled: as a loop the compiler reloaded spilled values and nil-checked every array per
// iteration, and one call per array cost as much again in slice arithmetic.
func strideRun(cq []byte, first, from, mask uint32, offs []uint64, lens, flows []uint32, tss []int64, f *minisFill) (took, bytes int) {
	base, bs, check, tag, ts := f.base, f.bs, f.check, f.tag, f.ts
	const lm = prm.MPRQByteCntLenMask
	lens = lens[:len(offs)]
	flows = flows[:len(offs)]
	tss = tss[:len(offs)]
	at := first
	for o := 0; o+8 <= len(offs); o += 8 {
		if o > 0 {
			at = from + uint32(o)
		}
		x0 := uint64(at&mask) * 64
		arr := (*[64]byte)(cq[x0 : x0+64])
		po := (*[8]uint64)(offs[o : o+8])
		pl := (*[8]uint32)(lens[o : o+8])
		x := binary.BigEndian.Uint64(arr[0:])
		bad := x&check ^ miniOne
		po[0], pl[0] = base+(x>>32)&0xffff*bs, uint32(x)&lm
		x = binary.BigEndian.Uint64(arr[8:])
		bad |= x&check ^ miniOne
		po[1], pl[1] = base+(x>>32)&0xffff*bs, uint32(x)&lm
		x = binary.BigEndian.Uint64(arr[16:])
		bad |= x&check ^ miniOne
		po[2], pl[2] = base+(x>>32)&0xffff*bs, uint32(x)&lm
		x = binary.BigEndian.Uint64(arr[24:])
		bad |= x&check ^ miniOne
		po[3], pl[3] = base+(x>>32)&0xffff*bs, uint32(x)&lm
		x = binary.BigEndian.Uint64(arr[32:])
		bad |= x&check ^ miniOne
		po[4], pl[4] = base+(x>>32)&0xffff*bs, uint32(x)&lm
		x = binary.BigEndian.Uint64(arr[40:])
		bad |= x&check ^ miniOne
		po[5], pl[5] = base+(x>>32)&0xffff*bs, uint32(x)&lm
		x = binary.BigEndian.Uint64(arr[48:])
		bad |= x&check ^ miniOne
		po[6], pl[6] = base+(x>>32)&0xffff*bs, uint32(x)&lm
		x = binary.BigEndian.Uint64(arr[56:])
		bad |= x&check ^ miniOne
		po[7], pl[7] = base+(x>>32)&0xffff*bs, uint32(x)&lm
		if bad != 0 {
			return o, bytes
		}
		pf := (*[8]uint32)(flows[o : o+8])
		pt := (*[8]int64)(tss[o : o+8])
		pf[0], pf[1], pf[2], pf[3], pf[4], pf[5], pf[6], pf[7] = tag, tag, tag, tag, tag, tag, tag, tag
		pt[0], pt[1], pt[2], pt[3], pt[4], pt[5], pt[6], pt[7] = ts, ts, ts, ts, ts, ts, ts, ts
		bytes += int(pl[0] + pl[1] + pl[2] + pl[3] + pl[4] + pl[5] + pl[6] + pl[7])
	}
	return len(offs) &^ 7, bytes
}

// strideCQE takes a plain striding-RQ receive completion of one stride into the burst being
// filled, straight into its arrays, and reports whether it did; anything else (an error or
// filler CQE, several strides, no burst begun) is left to cqe.
func (r *rxq) strideCQE(e []byte) bool {
	bc := be32(e, cqeByteCnt)
	st := uint32(be16(e, cqeWQECounter))
	b := r.cur
	if b == nil || prm.CQEOpcode(e[63]) != prm.CQEOpRespSend || st >= uint32(r.spw) ||
		bc&(prm.MPRQByteCntFiller|prm.MPRQByteCntStridesMask) != 1<<prm.MPRQByteCntStrideShift {
		return false
	}
	g := int(r.slotGrp[uint32(be16(e, cqeWQEID))&(1<<r.ringLog-1)])
	idx := g*r.spw + int(st)
	offs, lens, flows, tss := b.Grow(1)
	offs[0] = uint64(idx) * uint64(r.q.Regions[0].BufSize)
	lens[0] = bc & prm.MPRQByteCntLenMask
	r.curBytes += int(lens[0])
	flows[0] = be32(e, cqeSopDropQPN) & 0xffffff
	tss[0] = r.pt.rxTime(binary.BigEndian.Uint64(e[cqeTimestamp:]))
	b.Commit(1)
	if e[cqeRSSHashType] != 0 {
		b.SetRSSHash(b.Len()-1, be32(e, cqeRSSHash))
	}
	r.packets++
	r.delivered[g]++
	r.consumed[g]++
	if b.Len() >= r.batch {
		r.deliver()
	}
	if r.consumed[g] >= int32(r.spw) {
		r.maybeRepost(g)
	}
	return true
}

// mini is mini-CQE k of the compressed session at the consumer index: arrays of eight in the
// slot after the title and every eighth slot after it.
func (r *rxq) mini(k, mask uint32) []byte {
	at := r.ci + 1
	if k >= prm.MiniCQEArraySize {
		at = r.ci + 8*(k/prm.MiniCQEArraySize)
	}
	o := (at&mask)*64 + (k%prm.MiniCQEArraySize)*prm.MiniCQESize
	return r.cq[o : o+prm.MiniCQESize]
}

func (r *rxq) stridePacket(wqeID uint16, stride, bc, tag uint32, ts int64, hash uint32, hashed bool) {
	g := int(r.slotGrp[uint32(wqeID)&(1<<r.ringLog-1)])
	used := int32(bc & prm.MPRQByteCntStridesMask >> prm.MPRQByteCntStrideShift)
	if used == 0 {
		used = 1
	}
	r.consumed[g] += used
	switch {
	case bc&prm.MPRQByteCntFiller != 0:
	case used != 1 || stride >= uint32(r.spw):
		r.q.Stats.Drop(engine.DropTruncated, 1)
	default:
		if b := r.burst(); b != nil {
			idx := g*r.spw + int(stride)
			r.delivered[g]++
			i := b.Append(uint64(idx)*uint64(r.q.Regions[0].BufSize), bc&prm.MPRQByteCntLenMask, tag, ts)
			r.curBytes += int(bc & prm.MPRQByteCntLenMask)
			if hashed {
				b.SetRSSHash(i, hash)
			}
			if b.Len() >= r.batch {
				r.deliver()
			}
		}
	}
	if r.consumed[g] >= int32(r.spw) {
		r.maybeRepost(g)
	}
}

func (r *rxq) cyclicPacket(wc uint16, bc, tag uint32, ts int64, hash uint32, hashed bool) {
	slot := uint32(wc) & (1<<r.ringLog - 1)
	idx := r.slotBufs[slot]
	r.cc++
	total := 0
	for s := 0; s < r.nseg; s++ {
		total += r.q.Regions[s].BufSize
	}
	if int(bc) > total {
		r.q.Stats.Drop(engine.DropTruncated, 1)
		r.putBufs(idx)
		return
	}
	b := r.burst()
	if b == nil {
		r.putBufs(idx)
		return
	}
	var offs [config.MaxSegments]uint64
	var lens [config.MaxSegments]uint32
	left := bc
	for s := 0; s < r.nseg; s++ {
		bs := uint32(r.q.Regions[s].BufSize)
		offs[s] = uint64(idx[s]) * uint64(bs)
		lens[s] = min(left, bs)
		left -= lens[s]
	}
	r.curBytes += int(bc - left)
	if i := b.AppendSegments(offs[:r.nseg], lens[:r.nseg], tag, ts); hashed {
		b.SetRSSHash(i, hash)
	}
	if b.Len() >= r.batch {
		r.deliver()
	}
}

// recycleSlot returns the buffers of a cyclic WQE that completed without a packet.
func (r *rxq) recycleSlot(wc uint16) {
	r.putBufs(r.slotBufs[uint32(wc)&(1<<r.ringLog-1)])
	r.cc++
}

func (r *rxq) putBufs(idx [config.MaxSegments]uint32) {
	for s := 0; s < r.nseg; s++ {
		r.q.Regions[s].Put(idx[s])
	}
}

// burst is the burst being filled, taken from the metadata pool when needed; nil (and the
// packet counted dropped) when the pool is empty.
func (r *rxq) burst() *engine.Burst {
	if r.cur != nil {
		return r.cur
	}
	b, err := r.q.NewBurst()
	if err != nil {
		r.q.Stats.Drop(engine.DropNoBurstBuffers, 1)
		return nil
	}
	r.cur, r.first, r.curBytes = b, now(), 0
	return b
}

func (r *rxq) deliver() {
	b, bytes := r.cur, r.curBytes
	r.cur, r.curBytes = nil, 0
	if r.direct {
		r.q.DeliverDirectCounted(b, bytes)
		return
	}
	r.q.DeliverCounted(b, bytes)
}

// pollDirect is a direct queue's RxBurst: the caller's thread polls the CQ.
func (r *rxq) pollDirect() (*engine.Burst, error) {
	if b, ok := r.q.Next(); ok {
		return b, nil
	}
	if !r.busy.CompareAndSwap(false, true) {
		return nil, fmt.Errorf("another thread is polling direct queue %d: %w", r.q.ID, engine.ErrNotReady)
	}
	defer r.busy.Store(false)
	if r.pt.e.closed.Load() {
		return nil, engine.ErrNotReady
	}
	r.readCQ(directMaxPackets)
	if r.striding {
		r.reclaim()
	} else {
		r.refill()
	}
	r.doorbell()
	if r.cur != nil && r.cur.Len() > 0 {
		r.deliver()
	}
	if b, ok := r.q.Next(); ok {
		return b, nil
	}
	return nil, engine.ErrNotReady
}

// close frees the partial burst and returns every buffer the engine holds to its region (the
// application's come back when it frees them).
func (r *rxq) close() {
	if r.cur != nil {
		r.q.Stats.Drop(engine.DropClosed, r.cur.Len())
		r.cur.Free()
		r.cur = nil
	}
	if r.striding {
		if r.gr != nil {
			// The groups with nothing out go to the region's pool now, the others when
			// their last buffer is freed (the region's Close counts those buffers).
			r.gr.Close(r.delivered)
		}
		return
	}
	size := uint32(1) << r.ringLog
	for ; r.cc != r.pc; r.cc++ {
		r.putBufs(r.slotBufs[r.cc&(size-1)])
	}
}

// overrun reports whether the queue's CQ overran (QUERY_CQ status; mlx5_ifc.h cqc status
// CQ_OVERFLOW 0x9): the device then completes nothing more on it.
func (r *rxq) overrun() bool {
	in := prm.NewCmdIn(prm.CmdOpQueryCQ, 0, 16)
	prm.QueryCQIn.CQN.Set(in, uint64(r.cqObj.ID()))
	out := make([]byte, prm.QueryCQOut.CQContext.End()/8)
	if err := r.cqObj.Query(in, out); err != nil {
		return false
	}
	return prm.CQC.Status.At(prm.QueryCQOut.CQContext.Off).Get(out) == cqStatusOverflow
}

// cqStatusOverflow is cqc status CQ_OVERFLOW (mlx5_ifc.h MLX5_CQC_STATUS_CQ_OVERFLOW).
const cqStatusOverflow = 0x9
