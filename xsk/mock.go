package xsk

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Mock is the kernel's side of a Socket made by NewMock: its four rings live in ordinary memory
// and the Mock produces RX descriptors from fill-ring buffers, consumes TX descriptors into
// completions and sets the need_wakeup flags, as the kernel's copy mode would. Tests and
// benchmarks of the code above the rings use it where AF_XDP (or root) is not available, and
// to count the syscalls that code would make. A Mock and its Socket may run in different
// goroutines (each ring still has one producer and one consumer).
type Mock struct {
	s        *Socket
	mem      []byte
	headroom uint64
	// Counters the kernel would keep (struct xdp_statistics).
	dropped, fillEmpty, ringFull atomic.Uint64
}

// mockRingHdr is where a mock ring's descriptors start: producer, consumer and flags words on
// cache lines of their own, as the kernel lays them out.
const mockRingHdr = 192

// NewMock makes a Socket over o.Mem whose rings are ordinary memory, and its Mock. Nothing is
// bound and no syscall is made: Kick and WakeupRx only count. o.Ifindex and o.Queue are not
// used; ring sizes and chunk size are checked as Open checks them.
func NewMock(o Options) (*Socket, *Mock, error) {
	if len(o.Mem) == 0 {
		return nil, nil, errors.New("xsk: no UMEM memory")
	}
	if o.ChunkSize < MinChunkSize || (!o.Unaligned && o.ChunkSize&(o.ChunkSize-1) != 0) {
		return nil, nil, fmt.Errorf("xsk: bad chunk size %d", o.ChunkSize)
	}
	for _, n := range []int{o.FillSize, o.CompSize, o.RxSize, o.TxSize} {
		if n < 0 || n&(n-1) != 0 {
			return nil, nil, fmt.Errorf("xsk: ring size %d is not a power of two", n)
		}
	}
	if o.FillSize == 0 || o.CompSize == 0 || (o.RxSize == 0 && o.TxSize == 0) {
		return nil, nil, errors.New("xsk: a socket needs fill and completion rings and an RX or a TX ring")
	}
	s := &Socket{fd: -1, mock: true, unalign: o.Unaligned, chunk: o.ChunkSize}
	mk := func(r *ring, n, descSize int) {
		if n == 0 {
			return
		}
		// uint64 words keep the descriptors 8-byte aligned.
		b := make([]uint64, (mockRingHdr+n*descSize)/8)
		base := unsafe.Pointer(unsafe.SliceData(b))
		s.held = append(s.held, b)
		r.prod = (*uint32)(base)
		r.cons = (*uint32)(unsafe.Add(base, 64))
		r.flags = (*uint32)(unsafe.Add(base, 128))
		r.descs = unsafe.Add(base, mockRingHdr)
		r.size, r.mask = uint32(n), uint32(n-1)
	}
	mk(&s.fill, o.FillSize, 8)
	mk(&s.comp, o.CompSize, 8)
	mk(&s.rx, o.RxSize, int(unsafe.Sizeof(Desc{})))
	mk(&s.tx, o.TxSize, int(unsafe.Sizeof(Desc{})))
	s.fill.cached = s.fill.size
	if s.tx.ok() {
		s.tx.cached = s.tx.size
	}
	m := &Mock{s: s, mem: o.Mem, headroom: PacketHeadroom}
	s.mockk = m
	return s, m, nil
}

// Receive plays the kernel receiving one frame per entry of frames: it takes a buffer off the
// fill ring, writes meta and the frame after the XDP headroom (meta ending where the frame
// starts, as bpf_xdp_adjust_meta leaves it) and posts an RX descriptor. All descriptors are
// published together. It returns how many frames were received; the others are counted as
// the kernel counts them (fill ring empty, RX ring full).
func (m *Mock) Receive(meta []byte, frames ...[]byte) int {
	s := m.s
	f, rx := &s.fill, &s.rx
	fcons, fprod := atomic.LoadUint32(f.cons), atomic.LoadUint32(f.prod)
	rprod, rcons := atomic.LoadUint32(rx.prod), atomic.LoadUint32(rx.cons)
	got := 0
	for _, fr := range frames {
		if rprod-rcons >= rx.size {
			m.ringFull.Add(1)
			continue
		}
		if fcons == fprod {
			m.fillEmpty.Add(1)
			m.dropped.Add(1)
			continue
		}
		a := *f.addr(fcons)
		fcons++
		base := a
		if s.unalign {
			base = FrameAddr(a)
		}
		off := base + m.headroom
		copy(m.mem[off-uint64(len(meta)):off], meta)
		copy(m.mem[off:], fr)
		d := rx.desc(rprod)
		if s.unalign {
			*d = Desc{Addr: a + m.headroom<<unalignedOffsetShift, Len: uint32(len(fr))}
		} else {
			*d = Desc{Addr: off, Len: uint32(len(fr))}
		}
		rprod++
		got++
	}
	atomic.StoreUint32(f.cons, fcons)
	atomic.StoreUint32(rx.prod, rprod)
	return got
}

// CountDrops adds to the kernel counters the mock reports through Socket.Stats: rx_dropped,
// rx_fill_ring_empty_descs and rx_ring_full (to replay what a real kernel's counters do).
func (m *Mock) CountDrops(dropped, fillEmpty, ringFull uint64) {
	m.dropped.Add(dropped)
	m.fillEmpty.Add(fillEmpty)
	m.ringFull.Add(ringFull)
}

// SetZeroCopy makes the Socket report a zero-copy bind (ZeroCopy), so code that treats the
// modes differently (TX kicks only on need_wakeup) can be tested in both.
func (m *Mock) SetZeroCopy(zc bool) { m.s.zc = zc }

// FillLen is the number of buffers on the fill ring that the kernel has not taken.
func (m *Mock) FillLen() int {
	return int(atomic.LoadUint32(m.s.fill.prod) - atomic.LoadUint32(m.s.fill.cons))
}

// RxLen is the number of RX descriptors user space has not taken.
func (m *Mock) RxLen() int {
	return int(atomic.LoadUint32(m.s.rx.prod) - atomic.LoadUint32(m.s.rx.cons))
}

// SetNeedWakeup sets or clears XDP_RING_NEED_WAKEUP on the fill and TX rings.
func (m *Mock) SetNeedWakeup(fill, tx bool) {
	set := func(r *ring, on bool) {
		if !r.ok() {
			return
		}
		v := uint32(0)
		if on {
			v = unix.XDP_RING_NEED_WAKEUP
		}
		atomic.StoreUint32(r.flags, v)
	}
	set(&m.s.fill, fill)
	set(&m.s.tx, tx)
}

// Transmit plays the kernel sending: it takes up to max descriptors off the TX ring (all when
// max ≤ 0), appends them to sent (when not nil) and posts their addresses as completions, as
// far as the completion ring has room. It returns the descriptors taken.
func (m *Mock) Transmit(max int, sent *[]Desc) int {
	s := m.s
	t, c := &s.tx, &s.comp
	if !t.ok() {
		return 0
	}
	tcons, tprod := atomic.LoadUint32(t.cons), atomic.LoadUint32(t.prod)
	cprod, ccons := atomic.LoadUint32(c.prod), atomic.LoadUint32(c.cons)
	n := 0
	for tcons != tprod && cprod-ccons < c.size && (max <= 0 || n < max) {
		d := *t.desc(tcons)
		tcons++
		if sent != nil {
			*sent = append(*sent, d)
		}
		*c.addr(cprod) = d.Addr
		cprod++
		n++
	}
	atomic.StoreUint32(t.cons, tcons)
	atomic.StoreUint32(c.prod, cprod)
	return n
}
