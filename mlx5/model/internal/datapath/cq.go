package datapath

import (
	"cmp"
	"encoding/binary"
	"slices"

	"github.com/daqiri-go/daqiri/internal/iomem"
	"github.com/daqiri-go/daqiri/mlx5/model/internal/dma"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// cq is a completion queue: a ring of 1<<LogSize 64-byte CQEs in host memory that the
// device produces into and the driver consumes from, with the consumer counter in the
// doorbell record.
type cq struct {
	p       CQParams
	pi      uint32 // CQE slots produced (the PRM's 24-bit counter, kept wider)
	armed   bool
	solOnly bool
	inError bool
	status  uint8 // cqc status once in error
	refs    int
	batch   []pendingCQE
	// title is the last uncompressed CQE written, which an enhanced-layout session
	// continues (DPDK mlx5_rx.c keeps a copy as rxq->title_cqe).
	title     [prm.CQESize]byte
	haveTitle bool
	// slots and dbr cache the ring's CQE slots and the doorbell record.
	slots, dbr memCache
	// shared is sharedBytes of the CQ's mini-CQE format.
	shared [prm.CQESize]byte
}

// pendingCQE is a CQE waiting for the end of a Step, when runs of them may be compressed.
type pendingCQE struct {
	b [prm.CQESize]byte
	// compressible: an RX completion without error or filler flag.
	compressible bool
	solicited    bool
}

// maxSession bounds a basic-layout compressed session (the PRM's cqe_compression_max_num
// cap bounds it on hardware; the model picks 64, inferred).
const maxSession = 64

// CQ status values of cqc status (mlx5_ifc.h: 0 OK, 9 overflow, 0xa write failure).
const (
	cqStatusOverflow = 0x9
	cqStatusWriteErr = 0xa
)

// CreateCQ makes a CQ. The control side allocates the number and checks sizes against caps.
func (n *NIC) CreateCQ(p CQParams) error {
	n.lock()
	defer n.unlock()
	if n.cqs[p.CQN] != nil {
		return errf(StatusBadParam, SyndromeDuplicateID, "CREATE_CQ: cq %#x exists", p.CQN)
	}
	if p.LogSize > 24 {
		return errf(StatusBadParam, SyndromeBadSize, "CREATE_CQ: log_cq_size %d above 24", p.LogSize)
	}
	if p.Buf == nil || p.DBR == nil {
		return errf(StatusBadParam, SyndromeBadMemory, "CREATE_CQ: cq %#x without buffer or doorbell record", p.CQN)
	}
	if p.Compress && p.MiniFormat > MiniCsumStride {
		return errf(StatusBadParam, SyndromeBadFormat, "CREATE_CQ: mini_cqe_res_format %d not supported", p.MiniFormat)
	}
	if p.Compress && p.Layout > LayoutEnhanced {
		return errf(StatusBadParam, SyndromeBadFormat, "CREATE_CQ: cqe_compression_layout %d unknown", p.Layout)
	}
	n.cqs[p.CQN] = &cq{p: p,
		slots: newMemCache(p.Buf, 1<<p.LogSize, prm.CQESize, dma.Write),
		dbr:   newMemCache(p.DBR, 1, 8, dma.Read), shared: sharedBytes(p.MiniFormat)}
	return nil
}

// ModifyCQ changes a CQ's moderation (accepted, the model does not moderate).
func (n *NIC) ModifyCQ(cqn uint32, period, maxCount uint16) error {
	n.lock()
	defer n.unlock()
	if n.cqs[cqn] == nil {
		return errf(StatusBadParam, SyndromeUnknownID, "MODIFY_CQ: no cq %#x", cqn)
	}
	return nil
}

// QueryCQ reports a CQ.
func (n *NIC) QueryCQ(cqn uint32) (CQState, error) {
	n.lock()
	defer n.unlock()
	c := n.cqs[cqn]
	if c == nil {
		return CQState{}, errf(StatusBadParam, SyndromeUnknownID, "QUERY_CQ: no cq %#x", cqn)
	}
	return CQState{Params: c.p, PI: c.pi & 0xffffff, Armed: c.armed, Overrun: c.status == cqStatusOverflow,
		Status: c.status, RefCount: c.refs}, nil
}

// DestroyCQ removes a CQ; a CQ still bound to a queue is busy.
func (n *NIC) DestroyCQ(cqn uint32) error {
	n.lock()
	defer n.unlock()
	c := n.cqs[cqn]
	if c == nil {
		return errf(StatusBadParam, SyndromeUnknownID, "DESTROY_CQ: no cq %#x", cqn)
	}
	if c.refs > 0 {
		return errf(StatusBadResState, SyndromeInUse, "DESTROY_CQ: cq %#x used by %d queues", cqn, c.refs)
	}
	delete(n.cqs, cqn)
	return nil
}

// consumer reads the CQ's consumer counter from its doorbell record (24 bits, kernel cq.h
// mlx5_cq_set_ci).
func (c *cq) consumer() (uint32, error) {
	b, err := c.dbr.get(0)
	if err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint32(b[4*prm.CQDBRSetCI:]) & 0xffffff, nil
}

// free is how many CQE slots the driver has released.
func (c *cq) free() uint32 {
	ci, err := c.consumer()
	if err != nil {
		return 0
	}
	size := uint32(1) << c.p.LogSize
	used := (c.pi - ci) & 0xffffff
	if used > size {
		return 0
	}
	return size - used
}

// armCQ handles a CQ arm doorbell: the next CQE raises one completion event, at once if
// CQEs beyond the armed consumer index are already there (kernel cq.h mlx5_cq_arm; PRM
// "request notification").
func (n *NIC) armCQ(c *cq, ci uint32, solOnly bool) {
	c.armed, c.solOnly = true, solOnly
	if (c.pi-ci)&0xffffff != 0 && !solOnly {
		n.fireCQ(c)
	}
}

func (n *NIC) fireCQ(c *cq) {
	c.armed = false
	eqn, cqn, ev := c.p.EQN, c.p.CQN, n.cfg.Events
	n.raise(func() { ev.Completion(eqn, cqn) })
}

// pushCQE queues a CQE; flushCQs writes the queue at the end of the Step.
func (n *NIC) pushCQE(c *cq, e *[prm.CQESize]byte, compressible, solicited bool) {
	k := len(c.batch)
	if k == 0 {
		n.dirty = append(n.dirty, c)
	}
	c.batch = slices.Grow(c.batch, 1)[:k+1]
	p := &c.batch[k]
	p.b = *e
	p.compressible, p.solicited = compressible && c.p.Compress, solicited
}

// flushCQs writes every CQ's pending CQEs in CQ number order, compressing runs where the
// CQ asks for it. The batches keep their memory for the next Step.
func (n *NIC) flushCQs() {
	slices.SortFunc(n.dirty, func(a, b *cq) int { return cmp.Compare(a.p.CQN, b.p.CQN) })
	for i, c := range n.dirty {
		n.dirty[i] = nil
		b := c.batch
		c.batch = b[:0]
		if n.cqs[c.p.CQN] == c { // not destroyed since (a CQ with queues cannot be)
			n.writeBatch(c, b)
		}
	}
	n.dirty = n.dirty[:0]
}

func (n *NIC) writeBatch(c *cq, b []pendingCQE) {
	size := uint32(1) << c.p.LogSize
	for i := 0; i < len(b); {
		run := 1
		// A session ends at the ring's last slot: it never wraps to the ring's start
		// (inferred: DPDK 22.11's mlx5 receive path, run against the model in the
		// conformance test, read sessions that wrapped as garbage packets, which it sent on
		// as WQEs the model refused; sessions became common once the model wrote runs of
		// CQEs within one microsecond of its free-running timer).
		room := int(size - c.pi&(size-1))
		if b[i].compressible {
			for i+run < len(b) && run < maxSession && run < room && b[i+run].compressible &&
				compatible(c.p, &c.shared, &b[i+run-1].b, &b[i+run].b) {
				run++
			}
		}
		switch {
		case run >= 2 && c.p.Layout == LayoutBasic:
			n.writeBasicSession(c, b[i:i+run])
		case run >= 2 && c.p.Layout == LayoutEnhanced:
			// The first CQE of the run goes out whole unless the last CQE written is its
			// title already; then blocks of up to seven mini-CQEs follow.
			first := 0
			if !c.haveTitle || !compatible(c.p, &c.shared, &c.title, &b[i].b) || !sameShared(&c.shared, &c.title, &b[i].b) {
				n.writeOne(c, &b[i])
				first = 1
			}
			n.writeEnhanced(c, b[i+first:i+run])
		default:
			for k := 0; k < run; k++ {
				n.writeOne(c, &b[i+k])
			}
		}
		i += run
	}
}

// commonMask zeroes in a copy of a CQE the bytes a mini-CQE of format f carries (and those
// that differ per slot anyway), leaving what all CQEs of a session must share.
func commonMask(f MiniFormat, e *[prm.CQESize]byte) [prm.CQESize]byte {
	m := *e
	zero := func(fl prm.Field) {
		for i := fl.ByteOff(); i < fl.ByteOff()+fl.Bytes(); i++ {
			m[i] = 0
		}
	}
	zero(prm.CQE64.ByteCnt)
	zero(prm.CQE64.Signature)
	zero(prm.CQE64.OpOwn)
	zero(prm.CQE64.WQECounter) // checked as a sequence by compatible
	switch f {
	case MiniHash:
		zero(prm.CQE64.RSSHashResult)
	case MiniCsum, MiniCsumStride:
		zero(prm.CQE64.Checksum)
	case MiniFlowTag:
		m[57], m[58], m[59] = 0, 0, 0 // flow tag, low 24 bits of sop_drop_qpn
	}
	return m
}

// sharedBytes is commonMask of a CQE of all ones: 0xff in the bytes all CQEs of a session
// of format f share, 0 in the others.
func sharedBytes(f MiniFormat) [prm.CQESize]byte {
	var ones [prm.CQESize]byte
	for i := range ones {
		ones[i] = 0xff
	}
	return commonMask(f, &ones)
}

// sameShared reports whether a and b agree in the bytes of m (a sharedBytes mask): what
// comparing their commonMask copies finds, eight bytes at a time.
func sameShared(m, a, b *[prm.CQESize]byte) bool {
	for i := 0; i < prm.CQESize; i += 8 {
		x := binary.LittleEndian.Uint64(a[i:]) ^ binary.LittleEndian.Uint64(b[i:])
		if x&binary.LittleEndian.Uint64(m[i:]) != 0 {
			return false
		}
	}
	return true
}

// striding reports whether a CQE is a striding-RQ completion (its byte count word has a
// stride count), which a mini-CQE's stride index or the title's consumed strides continue.
func cqeStrides(e *[prm.CQESize]byte) uint32 {
	bc := uint32(get32(e[:], cqeByteCnt))
	return (bc & prm.MPRQByteCntStridesMask) >> prm.MPRQByteCntStrideShift
}

// compatible reports whether b may follow a in one compressed session of the CQ's format:
// the shared fields are equal and, where the mini-CQE has no stride index, b's WQE counter
// is the one the decompressor derives from a — in the basic layout +1 on a cyclic RQ and +
// consumed strides on a striding RQ (kernel en_rx.c mlx5e_decompress_cqe), in the enhanced
// layout +1 from the compressed CQE's wqe_counter (DPDK mlx5_rx.c: widx = wqe_idx + ai).
// m is the CQ's sharedBytes mask.
func compatible(p CQParams, m, a, b *[prm.CQESize]byte) bool {
	f := p.MiniFormat
	if !sameShared(m, a, b) {
		return false
	}
	bc := uint32(get32(b[:], cqeByteCnt))
	if f == MiniFlowTag && bc>>16 != 0 && cqeStrides(b) == 0 {
		return false // the flow-tag mini-CQE has 24 bits of byte count
	}
	if f == MiniCsumStride || f == MiniFlowTag {
		return true
	}
	wa, wb := uint16(get16(a[:], cqeWQECounter)), uint16(get16(b[:], cqeWQECounter))
	if s := cqeStrides(a); s != 0 && p.Layout == LayoutBasic {
		return wb == wa+uint16(s)
	}
	return wb == wa+1
}

// mini encodes a CQE as a mini-CQE of format f (device.h struct mlx5_mini_cqe8; the
// flow-tag layout from DPDK mlx5_rx.c rxq_cq_to_mbuf).
func mini(f MiniFormat, e *[prm.CQESize]byte) [prm.MiniCQESize]byte {
	var m [prm.MiniCQESize]byte
	bc := get32(e[:], cqeByteCnt)
	switch f {
	case MiniHash:
		put32(m[:], miniRxHash, get32(e[:], cqeRSSHash))
		put32(m[:], miniByteCnt, bc)
	case MiniCsumStride:
		put16(m[:], miniChecksum, get16(e[:], cqeChecksum))
		put16(m[:], miniStrideIdx, get16(e[:], cqeWQECounter))
		put32(m[:], miniByteCnt, bc)
	case MiniFlowTag:
		tag := get32(e[:], cqeSopDropQPN) & 0xffffff
		put16(m[:], miniChecksum, tag&0xffff)
		put16(m[:], miniStrideIdx, get16(e[:], cqeWQECounter))
		put32(m[:], miniByteCnt, tag>>16<<24|bc&prm.MPRQByteCntLenMask)
	default: // MiniCsum on a cyclic RQ: checksum, no stride index
		put16(m[:], miniChecksum, get16(e[:], cqeChecksum))
		put32(m[:], miniByteCnt, bc)
	}
	return m
}

// reserve checks that need slots are free; if not, the CQ overruns (unless overrun ignore
// is set): it goes to error and raises a CQ error event with syndrome 1 (kernel eq.c
// MLX5_EVENT_TYPE_CQ_ERROR; cq.h "CQ overrun" syndrome).
func (n *NIC) reserve(c *cq, need uint32) bool {
	if c.inError {
		return false
	}
	if c.p.OverrunIgnore || c.free() >= need {
		return true
	}
	n.cqError(c, 1)
	return false
}

func (n *NIC) cqError(c *cq, synd uint8) {
	c.inError = true
	c.status = cqStatusOverflow
	if synd != 1 {
		c.status = cqStatusWriteErr
	}
	eqn, cqn, ev := c.p.EQN, c.p.CQN, n.cfg.Events
	n.raise(func() { ev.CQError(eqn, cqn, synd) })
}

// slot returns CQE slot i's bytes, or faults the CQ (syndrome 2, access violation).
func (n *NIC) slot(c *cq, i uint32) []byte {
	mask := uint32(1)<<c.p.LogSize - 1
	s, err := c.slots.get(i & mask)
	if err != nil {
		n.cqError(c, 2)
		return nil
	}
	return s
}

// ownerByte is op_own with the owner bit of slot i: the wrap parity of the producer
// counter (rdma-core cq.c: software owns a CQE whose owner bit equals its counter's lap).
func (c *cq) ownerByte(opOwn byte, i uint32) byte {
	return opOwn&^prm.CQEOwnerMask | byte(i>>c.p.LogSize)&prm.CQEOwnerMask
}

// store writes a whole CQE into slot i, op_own last, as hardware makes the owner byte the
// last one visible.
func (n *NIC) store(c *cq, i uint32, e *[prm.CQESize]byte) bool {
	s := n.slot(c, i)
	if s == nil {
		return false
	}
	copy(s[:prm.CQESize-1], e[:prm.CQESize-1])
	if c.p.Compress && c.p.Layout == LayoutEnhanced {
		s[62] = byte(i >> c.p.LogSize)
	}
	// The model is the device, whose posted writes PCIe delivers in order; on a weakly ordered
	// CPU the model orders its own stores so the driver never sees the owner byte first. The
	// frames streamed into RX buffers since the last CQE need a fence of their own on amd64
	// too (dmaWriter): every CQE's owner byte is stored here, after it.
	n.dmaw.publish()
	iomem.ToDevice()
	s[63] = c.ownerByte(e[63], i)
	return true
}

func (n *NIC) afterWrite(c *cq, solicited bool) {
	if c.armed && (!c.solOnly || solicited) {
		n.fireCQ(c)
	}
}

func (n *NIC) writeOne(c *cq, p *pendingCQE) {
	if !n.reserve(c, 1) {
		return
	}
	if n.store(c, c.pi, &p.b) {
		c.pi++
		c.title, c.haveTitle = p.b, true
		n.afterWrite(c, p.solicited)
	}
}

// writeBasicSession writes a run as a basic-layout session: the title slot (format 3, byte
// count = number of CQEs, the first CQE's other fields), then mini-CQE arrays of eight in
// the next slot and every eighth slot after it; the session takes as many slots as it has
// CQEs and the slots in between are left to software (kernel en_rx.c
// mlx5e_decompress_cqes_start/cont; DPDK mlx5_rx.c mlx5_rx_poll_len: "the second [array]
// is located 7 CQEs after the initial CQE instead of 8").
func (n *NIC) writeBasicSession(c *cq, run []pendingCQE) {
	cnt := uint32(len(run))
	if !n.reserve(c, cnt) {
		return
	}
	start := c.pi
	for j := 0; j*prm.MiniCQEArraySize < len(run); j++ {
		at := start + 1
		if j > 0 {
			at = start + uint32(8*j)
		}
		s := n.slot(c, at)
		if s == nil {
			return
		}
		// The array is built apart and written whole: a full one is a whole cache line of
		// the CQ ring, streamed as the frames are (dmaWriter.line); the title's owner byte
		// (store) comes after the fence.
		var arr [prm.CQESize]byte
		k := min(prm.MiniCQEArraySize, len(run)-j*prm.MiniCQEArraySize)
		for i := range k {
			m := mini(c.p.MiniFormat, &run[j*prm.MiniCQEArraySize+i].b)
			copy(arr[i*prm.MiniCQESize:], m[:])
		}
		n.dmaw.line(s, &arr, k*prm.MiniCQESize)
	}
	t := run[0].b
	put32(t[:], cqeByteCnt, uint64(cnt))
	t[63] = t[63]&0xf0 | prm.CQEFormatCompressed<<2
	if !n.store(c, start, &t) {
		return
	}
	c.pi = start + cnt
	sol := false
	for i := range run { // by index: a pendingCQE is 66 bytes
		sol = sol || run[i].solicited
	}
	n.afterWrite(c, sol)
}

// writeEnhanced writes a run that continues the CQ's title as enhanced-layout compressed
// CQEs: each holds up to seven mini-CQEs, its opcode bits count them less one, wqe_counter
// is the first one's, and the CQ counter advances by the number of CQEs it stands for
// (DPDK mlx5_rx.c: MLX5_CQE_NUM_MINIS(op_own) + 1, zip->cq_ci = cq_ci + cqe_cnt).
func (n *NIC) writeEnhanced(c *cq, run []pendingCQE) {
	for len(run) > 0 {
		k := min(len(run), prm.MiniCQEsPerEnhancedSlot)
		if !n.reserve(c, uint32(k)) {
			return
		}
		var e [prm.CQESize]byte
		for j := 0; j < k; j++ {
			m := mini(c.p.MiniFormat, &run[j].b)
			copy(e[j*prm.MiniCQESize:], m[:])
		}
		put16(e[:], cqeWQECounter, get16(run[0].b[:], cqeWQECounter))
		e[63] = byte(k-1)<<4 | prm.CQEFormatCompressed<<2
		if !n.store(c, c.pi, &e) {
			return
		}
		c.pi += uint32(k)
		sol := false
		for i := range run[:k] {
			sol = sol || run[i].solicited
		}
		n.afterWrite(c, sol)
		run = run[k:]
	}
}
