package datapath

import (
	"encoding/binary"
	"hash/crc32"
	"math/bits"

	"github.com/daqiri-go/daqiri/mlx5/model/internal/dma"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// rq is a receive queue: cyclic (each WQE a scatter list of data segments) or striding (each
// WQE one buffer cut into strides that several packets share).
type rq struct {
	p     RQParams
	state QueueState
	cq    *cq
	// wqes is the number of WQEs consumed (the RQ's WQE counter; 16 bits on the wire).
	wqes uint32
	// cur is the index of the WQE in use: wqes modulo the size on a cyclic RQ; on a linked
	// list RQ the WQE the previous one's next_wqe_index named (kernel wq.c mlx5_wq_ll: the
	// device follows the list, which the driver may relink out of order).
	cur uint32
	// strides used in the current striding WQE.
	strides int
	refs    int
	// ring and dbr cache the ring's WQEs and the doorbell record.
	ring, dbr memCache
	// bufs caches a striding RQ's WQE buffers, translated whole, by WQE index (rqBuf; made
	// at the first frame when the keys are a DirectTranslator and the ring has at most
	// maxCached WQEs).
	bufs []rqBuf
}

// rqBuf is a striding WQE's buffer as the keys translated it: valid while the keys' Gen is
// gen and the WQE's data segment still names lkey, addr and n bytes; mem nil: the buffer
// does not translate directly as a whole (the scatter goes through Store).
type rqBuf struct {
	gen   uint64
	lkey  uint32
	addr  uint64
	n     int
	valid bool
	mem   []byte
}

// stridingBuf returns WQE slot i's buffer (lkey, addr, n bytes, local write) translated
// directly, or nil when the scatter must go through Store: no DirectTranslator, a ring too
// large to cache, or a buffer that does not translate directly as a whole.
func (n *NIC) stridingBuf(r *rq, i uint32, lkey uint32, addr uint64, size int) []byte {
	t, ok := n.cfg.Keys.(DirectTranslator)
	if !ok {
		return nil
	}
	if r.bufs == nil {
		k := 1 << r.p.WQ.LogSize
		if k > maxCached {
			return nil
		}
		r.bufs = make([]rqBuf, k)
	}
	b := &r.bufs[i&uint32(len(r.bufs)-1)]
	g := t.Gen()
	if !b.valid || b.gen != g || b.lkey != lkey || b.addr != addr || b.n != size {
		m, err := t.Direct(lkey, addr, size, dma.Write)
		if err != nil {
			m = nil
		}
		*b = rqBuf{gen: g, lkey: lkey, addr: addr, n: size, valid: true, mem: m}
	}
	return b.mem
}

func (r *rq) linked() bool {
	return r.p.WQ.Type == WQLinkedList || r.p.WQ.Type == WQLinkedListStrided
}

// id is what the CQE names the WQE in use by: the index on a linked list RQ (the kernel
// looks the WQE up by wqe_id), the 16-bit counter on a cyclic one (DPDK compares it masked).
func (r *rq) id() uint32 {
	if r.linked() {
		return r.cur
	}
	return r.wqes & 0xffff
}

// advance moves past the WQE in use.
func (r *rq) advance() {
	r.wqes++
	mask := uint32(1)<<r.p.WQ.LogSize - 1
	if !r.linked() {
		r.cur = r.wqes & mask
		return
	}
	w, err := r.wqe(r.cur)
	if err != nil || len(w) < 16 {
		r.cur = (r.cur + 1) & mask
		return
	}
	r.cur = uint32(pos(prm.WQESrqNext.NextWQEIndex).get(w)) & mask
}

func (r *rq) striding() bool {
	return r.p.WQ.Type == WQLinkedListStrided || r.p.WQ.Type == WQCyclicStriding
}

// CreateRQ makes an RQ on an existing CQ.
func (n *NIC) CreateRQ(p RQParams) error {
	n.lock()
	defer n.unlock()
	if n.rqs[p.RQN] != nil {
		return errf(StatusBadParam, SyndromeDuplicateID, "CREATE_RQ: rq %#x exists", p.RQN)
	}
	c := n.cqs[p.CQN]
	if c == nil {
		return errf(StatusBadParam, SyndromeUnknownID, "CREATE_RQ: rq %#x names cq %#x, which does not exist", p.RQN, p.CQN)
	}
	if p.WQ.Buf == nil || p.WQ.DBR == nil {
		return errf(StatusBadParam, SyndromeBadMemory, "CREATE_RQ: rq %#x without buffer or doorbell record", p.RQN)
	}
	if p.State != StateReset {
		return errf(StatusBadParam, SyndromeBadState, "CREATE_RQ: rq %#x must be created in RST, not state %d", p.RQN, p.State)
	}
	if p.WQ.LogSize > 16 || p.WQ.LogStride < 4 || p.WQ.LogStride > 11 {
		return errf(StatusBadParam, SyndromeBadSize, "CREATE_RQ: rq %#x log_wq_sz %d / log_wq_stride %d out of range", p.RQN, p.WQ.LogSize, p.WQ.LogStride)
	}
	r := &rq{p: p, state: StateReset, cq: c,
		ring: newMemCache(p.WQ.Buf, 1<<p.WQ.LogSize, 1<<p.WQ.LogStride, dma.Read),
		dbr:  newMemCache(p.WQ.DBR, 1, 4, dma.Read)}
	switch p.WQ.Type {
	case WQCyclic, WQLinkedList:
	case WQLinkedListStrided, WQCyclicStriding:
		if p.WQ.StrideSize < 64 || p.WQ.StrideSize&(p.WQ.StrideSize-1) != 0 || p.WQ.NumStrides < 1 || p.WQ.NumStrides&(p.WQ.NumStrides-1) != 0 {
			return errf(StatusBadParam, SyndromeBadSize, "CREATE_RQ: rq %#x striding with %d strides of %d bytes (powers of two, strides >= 64 bytes)", p.RQN, p.WQ.NumStrides, p.WQ.StrideSize)
		}
	default:
		return errf(StatusBadParam, SyndromeBadFormat, "CREATE_RQ: rq %#x wq_type %d unknown", p.RQN, p.WQ.Type)
	}
	c.refs++
	n.rqs[p.RQN] = r
	return nil
}

// legal reports whether a queue may move from one state to another (PRM RQ/SQ state
// machine: RST→RDY, RDY→RDY, RDY→ERR, ERR→RST, and any state to RST; kernel en_main.c
// mlx5e_modify_rq_state / mlx5e_modify_sq follow these).
func legal(from, to QueueState) bool {
	switch {
	case to == StateReset:
		return true
	case from == StateReset && to == StateReady, from == StateReady && to == StateReady, from == StateReady && to == StateError:
		return true
	}
	return false
}

// ModifyRQ applies a state transition (RST→RDY, RDY→ERR, ERR→RST, RDY→RDY) and changes.
func (n *NIC) ModifyRQ(rqn uint32, m RQModify) error {
	n.lock()
	defer n.unlock()
	r := n.rqs[rqn]
	if r == nil {
		return errf(StatusBadParam, SyndromeUnknownID, "MODIFY_RQ: no rq %#x", rqn)
	}
	if m.CurrState != r.state {
		return errf(StatusBadResState, SyndromeBadState, "MODIFY_RQ: rq %#x is in state %d, not rq_state %d", rqn, r.state, m.CurrState)
	}
	if !legal(r.state, m.NextState) {
		return errf(StatusBadResState, SyndromeBadState, "MODIFY_RQ: rq %#x cannot go from state %d to %d", rqn, r.state, m.NextState)
	}
	if m.NextState == StateReset {
		r.wqes, r.strides, r.cur = 0, 0, 0
	}
	r.state = m.NextState
	r.p.State = m.NextState
	if m.SetVLANStrip {
		r.p.VLANStrip = m.VLANStrip
	}
	if m.SetCounter {
		r.p.Counter = m.Counter
	}
	return nil
}

// QueryRQ reports an RQ.
func (n *NIC) QueryRQ(rqn uint32) (RQStateInfo, error) {
	n.lock()
	defer n.unlock()
	r := n.rqs[rqn]
	if r == nil {
		return RQStateInfo{}, errf(StatusBadParam, SyndromeUnknownID, "QUERY_RQ: no rq %#x", rqn)
	}
	posted, _ := r.posted()
	return RQStateInfo{Params: r.p, Counter: r.wqes & 0xffff, Posted: posted}, nil
}

// DestroyRQ removes an RQ; one referenced by a TIR or RQT is busy.
func (n *NIC) DestroyRQ(rqn uint32) error {
	n.lock()
	defer n.unlock()
	r := n.rqs[rqn]
	if r == nil {
		return errf(StatusBadParam, SyndromeUnknownID, "DESTROY_RQ: no rq %#x", rqn)
	}
	if r.refs > 0 {
		return errf(StatusBadResState, SyndromeInUse, "DESTROY_RQ: rq %#x used by %d RQTs/TIRs", rqn, r.refs)
	}
	r.cq.refs--
	delete(n.rqs, rqn)
	return nil
}

// posted reads the receive counter from the doorbell record (word MLX5_RCV_DBR, 16 bits).
func (r *rq) posted() (uint32, error) {
	b, err := r.dbr.get(0)
	if err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint32(b[4*prm.RcvDBR:]) & 0xffff, nil
}

// available is how many posted WQEs the RQ has not consumed.
func (r *rq) available() uint32 {
	p, err := r.posted()
	if err != nil {
		return 0
	}
	return (p - r.wqes) & 0xffff
}

// wqe returns the bytes of WQE index i.
func (r *rq) wqe(i uint32) ([]byte, error) {
	mask := uint32(1)<<r.p.WQ.LogSize - 1
	return r.ring.get(i & mask)
}

// outOfBuffer counts a frame an RQ had no WQE for.
func (n *NIC) outOfBuffer(r *rq) {
	n.stats.RXOutOfBuffer++
	if r.p.Counter != 0 {
		n.qOOB[r.p.Counter]++
	}
}

// rxMeta is what steering and RSS decided for a frame, for its CQE.
type rxMeta struct {
	flowTag  uint32
	hash     uint32
	hashType uint8
}

// deliver puts a frame into an RQ and queues its CQE; a frame the RQ cannot take is dropped
// and counted (out of buffer when no WQE is posted, as the Q counter out_of_buffer counts).
// The CQE's fields are filled after the frame is written: the write sums the bytes it
// writes (dmaWriter.writeSum), and the checks take that sum (rxChecksWith) rather than
// reading the frame again.
func (n *NIC) deliver(r *rq, f []byte, pkt *packet, meta rxMeta) {
	if r.state != StateReady {
		n.stats.RXNotReady++
		return
	}
	var e [prm.CQESize]byte
	if r.p.VLANStrip && len(pkt.outer.vlans) > 0 {
		// Strip the outer tag into the CQE (rqc vsd clear; kernel en_rx.c reads
		// cqe_has_vlan from l4_l3_hdr_type bit 0 and vlan_info).
		tci := pkt.outer.vlans[0].tci
		g := make([]byte, 0, len(f)-4)
		g = append(g, f[:12]...)
		g = append(g, f[16:]...)
		f = g
		pkt = parse(f)
		pos(prm.CQE64.VLANInfo).set(e[:], uint64(tci))
		e[29] |= 1
	}
	if r.p.ScatterFCS {
		var fcs [4]byte
		binary.LittleEndian.PutUint32(fcs[:], crc32.ChecksumIEEE(f))
		f = append(append([]byte(nil), f...), fcs[:]...)
	}
	if r.striding() {
		n.deliverStriding(r, f, pkt, meta, &e)
		return
	}
	if r.available() == 0 {
		n.outOfBuffer(r)
		return
	}
	idx := r.id()
	w, err := r.wqe(r.cur)
	if err != nil {
		n.rxError(r, idx, prm.CQESyndLocalAccess)
		return
	}
	if r.linked() {
		w = w[min(len(w), 16):] // the next segment comes first
	}
	// Scatter over the WQE's data segments in order; a zero byte count or the invalid
	// lkey ends the list (rdma-core verbs.c/qp.c terminate short lists so). whole sums the
	// pieces' sums as they are written (wholeSum: known so far).
	left := f
	whole := uint32(wholeSum)
	for off := 0; off+prm.WQEDataSize <= len(w) && len(left) > 0; off += prm.WQEDataSize {
		seg := w[off : off+prm.WQEDataSize]
		// Bit 31 of a receive scatter entry's byte count is not part of the count: the
		// kernel's mlx5e sets it on every entry of its cyclic RQs (en_main.c
		// mlx5e_alloc_rq: frag_size | MLX5_HW_START_PADDING, which device.h defines as
		// MLX5_INLINE_SEG, 0x80000000).
		bc := uint32(get32(seg, dsegByteCount)) &^ prm.HWStartPadding
		lkey := uint32(get32(seg, dsegLKey))
		if bc == 0 || lkey == prm.InvalidLKey {
			break
		}
		k := min(int(bc), len(left))
		s, err := n.scatter(lkey, get64(seg, dsegAddr), left[:k])
		if err != nil {
			r.advance()
			n.rxError(r, idx, prm.CQESyndLocalProt)
			return
		}
		whole = addPiece(whole, len(f)-len(left), s)
		left = left[k:]
	}
	r.advance()
	if len(left) > 0 {
		// The frame did not fit the WQE's buffers: a local length error completion,
		// and the frame is lost (DPDK mlx5_rx_err_handle counts and skips it).
		n.rxError(r, idx, prm.CQESyndLocalLength)
		return
	}
	n.fillRXCQE(r, pkt, f, meta, whole, &e)
	put16(e[:], cqeWQECounter, uint64(idx&0xffff))
	put32(e[:], cqeByteCnt, uint64(len(f)))
	n.stats.RXPackets++
	n.stats.RXBytes += uint64(len(f))
	n.pushCQE(r.cq, &e, true, false)
}

// deliverStriding places a frame in the current striding WQE's next free strides. When the
// frame does not fit in the strides left, a filler CQE consumes them and the frame goes to
// the next WQE; the CQE carries the WQE index (wqe_id), the first stride (wqe_counter) and
// the strides consumed (DPDK mlx5_rx.c mlx5_rx_burst_mprq; kernel en_rx.c
// mlx5e_handle_rx_cqe_mpwrq, mpwrq_is_filler_cqe).
func (n *NIC) deliverStriding(r *rq, f []byte, pkt *packet, meta rxMeta, e *[prm.CQESize]byte) {
	ss, ns := r.p.WQ.StrideSize, r.p.WQ.NumStrides
	need := len(f)
	if r.p.WQ.TwoByteShift {
		need += 2
	}
	k := (need + ss - 1) / ss
	if k > ns {
		// Larger than a whole WQE: nothing can take it.
		n.outOfBuffer(r)
		return
	}
	if r.available() == 0 {
		n.outOfBuffer(r)
		return
	}
	if r.strides+k > ns {
		var fe [prm.CQESize]byte
		left := ns - r.strides
		put16(fe[:], cqeWQEID, uint64(r.id()))
		put16(fe[:], cqeWQECounter, uint64(r.strides))
		put32(fe[:], cqeByteCnt, uint64(prm.MPRQByteCntFiller|uint32(left)<<prm.MPRQByteCntStrideShift))
		put32(fe[:], cqeFlagsRQPN, uint64(r.p.RQN))
		fe[63] = prm.CQEOpRespSend << 4
		n.pushCQE(r.cq, &fe, false, false)
		r.advance()
		r.strides = 0
		if r.available() == 0 {
			n.outOfBuffer(r)
			return
		}
	}
	idx := r.id()
	w, err := r.wqe(r.cur)
	if err != nil || len(w) < 32 {
		n.rxError(r, idx, prm.CQESyndLocalAccess)
		return
	}
	d := w[prm.MPRQWQE.DSeg.ByteOff():][:prm.WQEDataSize] // len(w) ≥ 32
	lkey := uint32(get32(d, dsegLKey))
	bc := int(get32(d, dsegByteCount))
	first := r.strides
	off := first * ss
	if bc < ns*ss {
		n.rxError(r, idx, prm.CQESyndLocalLength)
		return
	}
	base := get64(d, dsegAddr)
	at := base + uint64(off)
	whole := uint32(0) // the frame's sum, marked, when the write summed it
	if buf := n.stridingBuf(r, r.cur, lkey, base, bc); buf != nil {
		// The whole buffer translated: the strides are in it (bc ≥ ns*ss ≥ off + need).
		o := off
		if r.p.WQ.TwoByteShift {
			buf[o], buf[o+1] = 0, 0
			o += 2
		}
		_, s := n.dmaw.writeSum(buf[o:o+len(f)], f)
		whole = s | wholeSum
	} else {
		if r.p.WQ.TwoByteShift {
			if _, err := n.scatter(lkey, at, []byte{0, 0}); err != nil {
				n.rxError(r, idx, prm.CQESyndLocalProt)
				return
			}
			at += 2
		}
		s, err := n.scatter(lkey, at, f)
		if err != nil {
			n.rxError(r, idx, prm.CQESyndLocalProt)
			return
		}
		whole = addPiece(wholeSum, 0, s)
	}
	n.fillRXCQE(r, pkt, f, meta, whole, e)
	r.strides += k
	put16(e[:], cqeWQEID, uint64(idx&0xffff))
	put16(e[:], cqeWQECounter, uint64(first))
	put32(e[:], cqeByteCnt, uint64(uint32(k)<<prm.MPRQByteCntStrideShift|uint32(len(f))&prm.MPRQByteCntLenMask))
	if r.strides == ns {
		// Every stride used: the WQE is done and the next packet takes the next one.
		r.advance()
		r.strides = 0
	}
	n.stats.RXPackets++
	n.stats.RXBytes += uint64(len(f))
	n.pushCQE(r.cq, e, true, false)
}

// rxError completes an RQ WQE in error (MLX5_CQE_RESP_ERR with a syndrome) and counts it.
func (n *NIC) rxError(r *rq, idx uint32, synd uint8) {
	var e [prm.CQESize]byte
	pos(prm.ErrCQE.Syndrome).set(e[:], uint64(synd))
	pos(prm.ErrCQE.WQECounter).set(e[:], uint64(idx&0xffff))
	pos(prm.ErrCQE.SRQN).set(e[:], uint64(r.p.RQN))
	e[63] = prm.CQEOpRespErr << 4
	n.stats.RXErrors++
	n.pushCQE(r.cq, &e, false, false)
}

// scatter writes an RX scatter through the MKEY table (host memory, or GPU memory through a
// window). It returns p's sum (csum16, marked wholeSum) when the write summed it, 0 when the
// bytes went through Keys.Store.
func (n *NIC) scatter(lkey uint32, addr uint64, p []byte) (uint32, error) {
	if n.cfg.Keys == nil {
		return 0, errf(StatusBadParam, SyndromeBadMemory, "no memory keys")
	}
	if t, ok := n.cfg.Keys.(SpanTranslator); ok {
		if b, ok := n.spans.get(t, lkey, addr, len(p), dma.Write); ok {
			_, s := n.dmaw.writeSum(b, p)
			return s | wholeSum, nil
		}
	}
	return 0, n.cfg.Keys.Store(lkey, addr, p)
}

// addPiece adds to a frame's sum so far (marked wholeSum: known; 0: not) the sum of its
// piece at byte offset at (marked, or 0 when not known): a piece that starts at an odd
// offset has its bytes in the other halves of the frame's 16-bit words, so its sum counts
// byte-swapped (RFC 1071 section 2(B)). Folding the sum of folded sums gives csum16 of the
// whole: both are congruent modulo 0xffff, and 0 only for all-zero bytes.
func addPiece(whole uint32, at int, piece uint32) uint32 {
	if whole&wholeSum == 0 || piece&wholeSum == 0 {
		return 0
	}
	s := piece &^ wholeSum
	if at&1 != 0 {
		s = uint32(bits.ReverseBytes16(uint16(s)))
	}
	return csum16(whole&0xffff+s, nil) | wholeSum
}

// fillRXCQE sets the fields every RX CQE carries: opcode, header types and checksum results,
// RSS hash, flow tag, queue number and timestamp (kernel en_rx.c mlx5e_build_rx_skb; DPDK
// mlx5_rx.c rxq_cq_to_mbuf).
func (n *NIC) fillRXCQE(r *rq, pkt *packet, f []byte, meta rxMeta, whole uint32, e *[prm.CQESize]byte) {
	h := &pkt.outer
	if pkt.tunneled {
		e[0] |= 1
	}
	put32(e[:], cqeRSSHash, uint64(meta.hash))
	put8(e[:], cqeRSSHashType, uint64(meta.hashType))
	var ok uint8
	if len(f) >= 14 {
		ok |= prm.CQEL2OK
	}
	l3ok, l4ok, sum := rxChecksWith(f, h, whole)
	if l3ok {
		ok |= prm.CQEL3OK
		if l4ok {
			ok |= prm.CQEL4OK
		}
	}
	put8(e[:], cqeHdsIPExt, uint64(ok))
	var l3, l4 uint8
	switch h.ipVersion {
	case 4:
		l3 = prm.CQEL3IPv4
	case 6:
		l3 = prm.CQEL3IPv6
	}
	if h.l4 >= 0 {
		switch h.proto {
		case protoUDP:
			l4 = prm.CQEL4UDP
		case protoTCP:
			l4 = prm.CQEL4TCPNoAck
			if h.tcpFlags&0x10 != 0 {
				l4 = prm.CQEL4TCPAckNoData
				if ipPayloadEnd(f, h) > h.l4+h.l4Len {
					l4 = prm.CQEL4TCPAckData
				}
			}
		}
	}
	e[29] = e[29]&1 | l4<<4 | l3<<2
	// The checksum the CQE reports for CHECKSUM_COMPLETE: the ones' complement sum of the
	// bytes after the L2 header (inferred from kernel en_rx.c mlx5e_handle_csum, which
	// adds it to skb->csum after pulling ETH_HLEN).
	if h.l3 >= 0 {
		put16(e[:], cqeChecksum, uint64(sum))
	}
	put32(e[:], cqeFlagsRQPN, uint64(r.p.RQN))
	put32(e[:], cqeSopDropQPN, uint64(meta.flowTag&0xffffff))
	put64(e[:], cqeTimestamp, n.rxStamp(r.p.TSFormat))
	e[63] = prm.CQEOpRespSend << 4
}
