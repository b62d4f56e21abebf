package gpunetio

import (
	"encoding/binary"

	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// A Go port of the device functions of kernels/daqiri_gpunetio.cuh, line for line, over the
// CPU view of MemCPU queues: it runs the header's algorithm against the device model where
// there is no GPU (CI), and decodes with the header's byte offsets, which the tests here
// compare with mlx5/prm's fields. Addresses are host addresses (MemCPU's device address).

type refQueue struct {
	d    []byte // descriptor
	mem  func(addr uint64, n int) []byte
	desc func(off int) uint64
}

func newRef(q *Queue) *refQueue {
	r := &refQueue{d: q.DescriptorBytes()}
	type region struct {
		base uint64
		b    []byte
	}
	var regs []region
	for _, m := range []Mem{q.rings, q.ctrl, q.rxBuf, q.txBuf} {
		if m != nil && m.Bytes() != nil {
			regs = append(regs, region{m.DevAddr(), m.Bytes()})
		}
	}
	r.mem = func(a uint64, n int) []byte {
		for _, g := range regs {
			if a >= g.base && a+uint64(n) <= g.base+uint64(len(g.b)) {
				o := a - g.base
				return g.b[o : o+uint64(n)]
			}
		}
		panic("ref: address outside the queue's memory")
	}
	return r
}

func (r *refQueue) u32(off int) uint32 { return le.Uint32(r.d[off:]) }
func (r *refQueue) u64(off int) uint64 { return le.Uint64(r.d[off:]) }

type refPkt struct {
	addr     uint64
	len, tag uint32
	ts       uint64
}

type refRx struct {
	ci, pi, wqCI, used         uint32
	sessCnt, sessK, tTag, tWQE uint32
	tTS                        uint64
	errSynd, errWQE, errOp     uint32
	sessions                   int // compressed sessions read (tests)
}

func (r *refQueue) rxInit() *refRx { return &refRx{pi: 1 << r.u32(DescRQLog)} }

func (r *refQueue) rxStride(s *refRx, bc, wqeID, stride, tag uint32, ts uint64) (refPkt, bool) {
	n := (bc & prm.MPRQByteCntStridesMask) >> prm.MPRQByteCntStrideShift
	if n == 0 {
		n = 1
	}
	s.used += n
	spw := uint32(1) << r.u32(DescStridesLog)
	if s.used >= spw {
		s.wqCI++
		s.used -= spw
	}
	if bc&prm.MPRQByteCntFiller != 0 {
		return refPkt{}, false
	}
	idx := uint64(wqeID&(1<<r.u32(DescRQLog)-1))<<r.u32(DescStridesLog) + uint64(stride)
	return refPkt{addr: r.u64(DescRxBuf) + idx<<r.u32(DescStrideLog), len: bc & prm.MPRQByteCntLenMask, tag: tag, ts: ts}, true
}

// rxPoll is dqg_rx_poll.
func (r *refQueue) rxPoll(s *refRx, max int) ([]refPkt, int) {
	log := r.u32(DescRxCQLog)
	cq := r.u64(DescRxCQ)
	mask := uint32(1)<<log - 1
	var out []refPkt
	start := s.ci
	be := binary.BigEndian
	for guard := uint32(0); len(out) < max && guard <= mask; guard++ {
		if s.sessCnt != 0 {
			k := s.sessK
			at := s.ci + 1
			if k >= 8 {
				at = s.ci + 8*(k/8)
			}
			m := r.mem(cq+uint64(at&mask)<<6+uint64(k%8)*8, 8)
			stride := uint32(be.Uint16(m[2:]))
			bc := be.Uint32(m[4:])
			if p, ok := r.rxStride(s, bc, s.tWQE, stride, s.tTag, s.tTS); ok {
				out = append(out, p)
			}
			if s.sessK++; s.sessK == s.sessCnt {
				for j := uint32(0); j < s.sessCnt; j++ {
					r.mem(cq+uint64((s.ci+j)&mask)<<6, 64)[63] = 0xf0
				}
				s.ci += s.sessCnt
				s.sessCnt, s.sessK = 0, 0
			}
			continue
		}
		e := r.mem(cq+uint64(s.ci&mask)<<6, 64)
		op := e[63]
		if !(op>>4 != 15 && uint32(op&1) == (s.ci>>log)&1) {
			break
		}
		opcode := op >> 4
		if opcode == 13 || opcode == 14 {
			s.errSynd = uint32(e[55]) | uint32(e[54])<<8
			s.errWQE = uint32(be.Uint16(e[60:]))
			s.errOp = uint32(opcode)
			return out, -1
		}
		if opcode != 2 {
			s.errOp = uint32(opcode)
			return out, -2
		}
		bc := be.Uint32(e[44:])
		tag := be.Uint32(e[56:]) & 0xffffff
		ts := be.Uint64(e[48:])
		wqeID := uint32(be.Uint16(e[2:]))
		if (op>>2)&3 == 3 {
			s.sessCnt, s.sessK, s.tTag, s.tTS, s.tWQE = bc, 0, tag, ts, wqeID
			s.sessions++
			if bc == 0 {
				s.ci++
			}
			continue
		}
		if p, ok := r.rxStride(s, bc, wqeID, uint32(be.Uint16(e[60:])), tag, ts); ok {
			out = append(out, p)
		}
		e[63] = 0xf0
		s.ci++
	}
	if s.ci != start {
		be.PutUint32(r.mem(r.u64(DescRxCQDBR), 4), s.ci&0xffffff)
	}
	return out, len(out)
}

// rxRepost is dqg_rx_repost.
func (r *refQueue) rxRepost(s *refRx) {
	want := s.wqCI + 1<<r.u32(DescRQLog)
	if want == s.pi {
		return
	}
	s.pi = want
	binary.BigEndian.PutUint32(r.mem(r.u64(DescRQDBR), 4), s.pi&0xffff)
}

type refTx struct {
	pi, ci, cqCI   uint32
	sigEnd         []uint32
	lastCtrl       uint64
	errSynd, errOp uint32
}

func (r *refQueue) unit(start, u uint32) []byte {
	bb := (start + u/4) & (1<<r.u32(DescSQLog) - 1)
	return r.mem(r.u64(DescSQ)+uint64(bb)<<6+uint64(u%4)*16, 16)
}

// txSend is dqg_tx_send.
func (r *refQueue) txSend(t *refTx, addr uint64, n uint32, signal bool) int {
	if n <= 18 {
		return -2
	}
	if t.pi-t.ci+1 > 1<<r.u32(DescSQLog) {
		return -1
	}
	be := binary.BigEndian
	start := t.pi
	h := r.mem(addr, 18)
	eth := r.unit(start, 1)
	clear(eth)
	be.PutUint16(eth[12:], 18)
	copy(eth[14:], h[:2])
	copy(r.unit(start, 2), h[2:18])
	d := r.unit(start, 3)
	be.PutUint32(d[0:], n-18)
	be.PutUint32(d[4:], r.u32(DescTxLKey))
	be.PutUint64(d[8:], addr+18)
	c := r.unit(start, 0)
	clear(c)
	be.PutUint32(c[0:], (start&0xffff)<<8|prm.WQEOpSend)
	be.PutUint32(c[4:], r.u32(DescSQN)<<8|4)
	if signal {
		c[11] = prm.WQECtrlCQUpdate
	}
	t.lastCtrl = le.Uint64(c[:8])
	t.pi++
	if signal {
		t.sigEnd = append(t.sigEnd, t.pi)
	}
	return 0
}

// txRing is dqg_tx_ring: the record, then the shadow UAR word.
func (r *refQueue) txRing(t *refTx) {
	binary.BigEndian.PutUint32(r.mem(r.u64(DescSQDBR)+4, 4), t.pi&0xffff)
	le.PutUint64(r.mem(r.u64(DescUAR), 8), t.lastCtrl)
}

// txPoll is dqg_tx_poll.
func (r *refQueue) txPoll(t *refTx) int {
	log := r.u32(DescTxCQLog)
	mask := uint32(1)<<log - 1
	n := 0
	for guard := uint32(0); guard <= mask; guard++ {
		e := r.mem(r.u64(DescTxCQ)+uint64(t.cqCI&mask)<<6, 64)
		op := e[63]
		if !(op>>4 != 15 && uint32(op&1) == (t.cqCI>>log)&1) {
			break
		}
		if op>>4 == 13 || op>>4 == 14 {
			t.errSynd, t.errOp = uint32(e[55]), uint32(op>>4)
			return -1
		}
		if len(t.sigEnd) > 0 {
			t.ci, t.sigEnd = t.sigEnd[0], t.sigEnd[1:]
		}
		e[63] = 0xf0
		t.cqCI++
		n++
	}
	if n > 0 {
		binary.BigEndian.PutUint32(r.mem(r.u64(DescTxCQDBR), 4), t.cqCI&0xffffff)
	}
	return n
}
