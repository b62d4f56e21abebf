// Package xsk is the AF_XDP socket substrate: a socket bound to one (netdev, queue), its UMEM
// registered over caller-provided memory, and the four shared-memory rings (fill, completion,
// RX, TX) as small typed APIs. Every unsafe pointer and raw socket option of the AF_XDP ABI
// lives here; engines see addresses, descriptors and counts.
//
// The ABI follows the Linux UAPI header include/uapi/linux/if_xdp.h (struct xdp_umem_reg,
// struct xdp_mmap_offsets, struct xdp_desc, struct sockaddr_xdp, the XDP_* socket options and
// the XDP_PGOFF_* mmap offsets), as exposed by golang.org/x/sys/unix, and the ring protocol
// of Documentation/networking/af_xdp.rst: single producer and single consumer per ring, a
// producer and a consumer index that run freely modulo 2^32, and a flags word whose
// XDP_RING_NEED_WAKEUP bit asks user space for a syscall.
//
// A Socket is not safe for concurrent use: each ring has exactly one user-space side, so the
// engine gives each socket to one thread (or serialises access itself).
package xsk

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Mode selects how the kernel moves frames between the NIC and the UMEM.
type Mode int

// Bind modes.
const (
	// ModeAuto tries zero-copy first and falls back to copy mode when the driver lacks it.
	ModeAuto Mode = iota
	ModeCopy
	ModeZeroCopy
)

// Desc is one RX or TX descriptor (struct xdp_desc): a UMEM address, a length and options.
type Desc struct {
	Addr    uint64
	Len     uint32
	Options uint32
}

// Unaligned-chunk addresses carry the offset of the data inside the chunk in the top 16 bits
// (XSK_UNALIGNED_BUF_OFFSET_SHIFT = 48 and XSK_UNALIGNED_BUF_ADDR_MASK in if_xdp.h).
const (
	unalignedOffsetShift = 48
	unalignedAddrMask    = 1<<unalignedOffsetShift - 1
)

// FrameAddr turns an RX descriptor address into a plain byte offset into the UMEM. In aligned
// mode the address already is one; in unaligned mode the kernel stores base | offset<<48.
func FrameAddr(a uint64) uint64 { return a&unalignedAddrMask + a>>unalignedOffsetShift }

// PacketHeadroom is the headroom the kernel leaves in front of each received frame in copy
// mode and in zero-copy drivers (XDP_PACKET_HEADROOM); XDP metadata lives at its end.
const PacketHeadroom = unix.XDP_PACKET_HEADROOM

// PktContd in a descriptor's Options says the frame continues in the next descriptor
// (XDP_PKT_CONTD in include/uapi/linux/if_xdp.h, multi-buffer sockets).
const PktContd = unix.XDP_PKT_CONTD

// MinChunkSize is the smallest UMEM chunk the kernel accepts (XDP_UMEM_MIN_CHUNK_SIZE in
// net/xdp/xdp_umem.c).
const MinChunkSize = 2048

// Options configure a socket.
type Options struct {
	Ifindex int // netdev to bind to
	Queue   int // its queue index

	// Mem is the UMEM: page-aligned memory outside the Go heap that stays mapped until Close.
	Mem []byte
	// ChunkSize is the UMEM chunk (buffer) size, at least 2048. In aligned mode it must be a
	// power of two; with Unaligned any size is tried. The kernel decides the upper bound: the
	// page size (4096) on most kernels, more only where hugepage-backed UMEMs are supported.
	ChunkSize int
	Unaligned bool

	// Ring sizes (powers of two). Fill and Comp are always needed (the kernel binds no UMEM
	// without both); Rx and/or Tx say what the socket does.
	FillSize, CompSize, RxSize, TxSize int

	Mode       Mode
	NeedWakeup bool // ask the kernel to say when a syscall is needed (XDP_USE_NEED_WAKEUP)
	// MultiBuffer binds with XDP_USE_SG: a frame larger than a chunk arrives (and may be
	// sent) as several descriptors, every one but the last flagged PktContd (Linux 6.6+).
	MultiBuffer bool
	// TxBudget, when > 0, raises the number of frames one sendto transmits in copy mode
	// (XDP_MAX_TX_SKB_BUDGET, Linux 6.16+); ignored where the kernel lacks the option.
	TxBudget int
}

// Socket is one bound AF_XDP socket with its own UMEM.
type Socket struct {
	fd       int
	zc       bool
	unalign  bool
	chunk    int
	fill     ring
	comp     ring
	rx       ring
	tx       ring
	maps     [][]byte
	wakeups  atomic.Uint64
	kickErrs atomic.Uint64

	mock  bool // NewMock: rings in ordinary memory, no file descriptor, no syscalls
	mockk *Mock
	held  [][]uint64 // a mock's ring memory
}

// ring is one mmap'd ring. The producer and consumer words are shared with the kernel and
// accessed atomically; cached copies spare most reads of the other side's word.
type ring struct {
	prod, cons, flags *uint32
	descs             unsafe.Pointer
	mask, size        uint32
	cached            uint32 // producer side: cached consumer + size; consumer side: cached producer
}

func (r *ring) ok() bool { return r.prod != nil }

// Open creates, configures and binds a socket.
func Open(o Options) (*Socket, error) {
	if len(o.Mem) == 0 {
		return nil, errors.New("xsk: no UMEM memory")
	}
	if uintptr(unsafe.Pointer(unsafe.SliceData(o.Mem)))%uintptr(unix.Getpagesize()) != 0 {
		return nil, errors.New("xsk: UMEM memory is not page-aligned")
	}
	if o.ChunkSize < MinChunkSize {
		return nil, fmt.Errorf("xsk: chunk size %d is below the kernel minimum %d", o.ChunkSize, MinChunkSize)
	}
	if !o.Unaligned && o.ChunkSize&(o.ChunkSize-1) != 0 {
		return nil, fmt.Errorf("xsk: aligned UMEM chunks must be a power of two between %d and %d, got %d", MinChunkSize, unix.Getpagesize(), o.ChunkSize)
	}
	for _, n := range []int{o.FillSize, o.CompSize, o.RxSize, o.TxSize} {
		if n < 0 || n&(n-1) != 0 {
			return nil, fmt.Errorf("xsk: ring size %d is not a power of two", n)
		}
	}
	if o.RxSize == 0 && o.TxSize == 0 {
		return nil, errors.New("xsk: a socket needs an RX or a TX ring")
	}
	if o.FillSize == 0 || o.CompSize == 0 {
		// The kernel refuses to bind a UMEM without both (xp_assign_dev).
		return nil, errors.New("xsk: a socket needs both a fill and a completion ring")
	}
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("xsk: socket(AF_XDP): %w", err)
	}
	s := &Socket{fd: fd, unalign: o.Unaligned, chunk: o.ChunkSize}
	if err := s.setup(o); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Socket) setup(o Options) error {
	reg := unix.XDPUmemReg{
		Addr: uint64(uintptr(unsafe.Pointer(unsafe.SliceData(o.Mem)))),
		Len:  uint64(len(o.Mem)),
		Size: uint32(o.ChunkSize),
	}
	if o.Unaligned {
		reg.Flags = unix.XDP_UMEM_UNALIGNED_CHUNK_FLAG
	}
	if err := setsockopt(s.fd, unix.XDP_UMEM_REG, unsafe.Pointer(&reg), unsafe.Sizeof(reg)); err != nil {
		hint := ""
		if err == unix.EINVAL && o.ChunkSize > unix.Getpagesize() {
			hint = fmt.Sprintf(" (this kernel accepts UMEM chunks of %d to %d bytes)", MinChunkSize, unix.Getpagesize())
		}
		return fmt.Errorf("xsk: register UMEM (%d bytes, chunk %d, unaligned %v): %w%s", len(o.Mem), o.ChunkSize, o.Unaligned, err, hint)
	}
	for _, r := range []struct {
		opt, n int
	}{{unix.XDP_UMEM_FILL_RING, o.FillSize}, {unix.XDP_UMEM_COMPLETION_RING, o.CompSize}, {unix.XDP_RX_RING, o.RxSize}, {unix.XDP_TX_RING, o.TxSize}} {
		if r.n == 0 {
			continue
		}
		if err := unix.SetsockoptInt(s.fd, unix.SOL_XDP, r.opt, r.n); err != nil {
			return fmt.Errorf("xsk: ring size option %d = %d: %w", r.opt, r.n, err)
		}
	}
	var off unix.XDPMmapOffsets
	l := uint32(unsafe.Sizeof(off))
	if _, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(s.fd), unix.SOL_XDP, unix.XDP_MMAP_OFFSETS, uintptr(unsafe.Pointer(&off)), uintptr(unsafe.Pointer(&l)), 0); e != 0 {
		return fmt.Errorf("xsk: XDP_MMAP_OFFSETS: %w", e)
	}
	var err error
	if o.FillSize > 0 {
		if err = s.mapRing(&s.fill, off.Fr, o.FillSize, 8, unix.XDP_UMEM_PGOFF_FILL_RING); err != nil {
			return err
		}
	}
	if o.CompSize > 0 {
		if err = s.mapRing(&s.comp, off.Cr, o.CompSize, 8, unix.XDP_UMEM_PGOFF_COMPLETION_RING); err != nil {
			return err
		}
	}
	if o.RxSize > 0 {
		if err = s.mapRing(&s.rx, off.Rx, o.RxSize, int(unsafe.Sizeof(Desc{})), unix.XDP_PGOFF_RX_RING); err != nil {
			return err
		}
	}
	if o.TxSize > 0 {
		if err = s.mapRing(&s.tx, off.Tx, o.TxSize, int(unsafe.Sizeof(Desc{})), unix.XDP_PGOFF_TX_RING); err != nil {
			return err
		}
		s.tx.cached = s.tx.size // producer side: all slots free
	}
	if o.FillSize > 0 {
		s.fill.cached = s.fill.size
	}
	if o.TxBudget > 0 {
		// Best effort: older kernels reject the option and keep their built-in budget.
		_ = unix.SetsockoptInt(s.fd, unix.SOL_XDP, unix.XDP_MAX_TX_SKB_BUDGET, o.TxBudget)
	}
	var flags uint16
	if o.NeedWakeup {
		flags |= unix.XDP_USE_NEED_WAKEUP
	}
	if o.MultiBuffer {
		flags |= unix.XDP_USE_SG
	}
	bind := func(f uint16) error {
		// A queue stays busy for a short while after the previous socket on it closed (the
		// kernel releases its buffer pool from a deferred work item): retry EBUSY briefly.
		var err error
		for try := 0; try < 200; try++ {
			err = unix.Bind(s.fd, &unix.SockaddrXDP{Flags: f, Ifindex: uint32(o.Ifindex), QueueID: uint32(o.Queue)})
			if err != unix.EBUSY {
				return err
			}
			time.Sleep(5 * time.Millisecond)
		}
		return err
	}
	switch o.Mode {
	case ModeCopy:
		err = bind(flags | unix.XDP_COPY)
	case ModeZeroCopy:
		err = bind(flags | unix.XDP_ZEROCOPY)
	default:
		if err = bind(flags | unix.XDP_ZEROCOPY); err != nil {
			err = bind(flags | unix.XDP_COPY)
		}
	}
	if err != nil {
		if o.MultiBuffer {
			err = multiBufferErr(err, kernelRelease())
		}
		return fmt.Errorf("xsk: bind to ifindex %d queue %d: %w", o.Ifindex, o.Queue, err)
	}
	// XDP_OPTIONS reports whether the bind ended up zero-copy (struct xdp_options).
	var opts struct{ Flags uint32 }
	l = uint32(unsafe.Sizeof(opts))
	if _, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(s.fd), unix.SOL_XDP, unix.XDP_OPTIONS, uintptr(unsafe.Pointer(&opts)), uintptr(unsafe.Pointer(&l)), 0); e == 0 {
		s.zc = opts.Flags&unix.XDP_OPTIONS_ZEROCOPY != 0
	}
	return nil
}

func (s *Socket) mapRing(r *ring, off unix.XDPRingOffset, n, descSize int, pgoff int64) error {
	size := int(off.Desc) + n*descSize
	b, err := unix.Mmap(s.fd, pgoff, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("xsk: mmap ring at page offset %#x: %w", pgoff, err)
	}
	s.maps = append(s.maps, b)
	base := unsafe.Pointer(unsafe.SliceData(b))
	r.prod = (*uint32)(unsafe.Add(base, off.Producer))
	r.cons = (*uint32)(unsafe.Add(base, off.Consumer))
	r.flags = (*uint32)(unsafe.Add(base, off.Flags))
	r.descs = unsafe.Add(base, off.Desc)
	r.size = uint32(n)
	r.mask = uint32(n - 1)
	return nil
}

func setsockopt(fd, opt int, p unsafe.Pointer, n uintptr) error {
	if _, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_XDP, uintptr(opt), uintptr(p), n, 0); e != 0 {
		return e
	}
	return nil
}

// FD is the socket's file descriptor (for an XSKMAP entry).
func (s *Socket) FD() int { return s.fd }

// ZeroCopy reports whether the kernel bound the socket in zero-copy mode.
func (s *Socket) ZeroCopy() bool { return s.zc }

// Close unmaps the rings and closes the socket. The UMEM memory belongs to the caller.
func (s *Socket) Close() error {
	for _, m := range s.maps {
		unix.Munmap(m)
	}
	s.maps = nil
	s.fill, s.comp, s.rx, s.tx = ring{}, ring{}, ring{}, ring{}
	s.held = nil
	if s.fd >= 0 {
		err := unix.Close(s.fd)
		s.fd = -1
		return err
	}
	return nil
}

// producer side: how many slots are free (refreshing the cached consumer index when needed).
func (r *ring) free(want uint32) uint32 {
	prod := atomic.LoadUint32(r.prod)
	n := r.cached - prod
	if n >= want {
		return n
	}
	r.cached = atomic.LoadUint32(r.cons) + r.size
	return r.cached - prod
}

// consumer side: how many entries are ready.
func (r *ring) avail(want uint32) uint32 {
	cons := atomic.LoadUint32(r.cons)
	n := r.cached - cons
	if n >= want && n != 0 {
		return n
	}
	r.cached = atomic.LoadUint32(r.prod)
	return r.cached - cons
}

func (r *ring) addr(i uint32) *uint64 {
	return (*uint64)(unsafe.Add(r.descs, uintptr(i&r.mask)*8))
}

func (r *ring) desc(i uint32) *Desc {
	return (*Desc)(unsafe.Add(r.descs, uintptr(i&r.mask)*unsafe.Sizeof(Desc{})))
}

// FillFree is the number of free fill-ring slots.
func (s *Socket) FillFree() int {
	if !s.fill.ok() {
		return 0
	}
	return int(s.fill.free(s.fill.size))
}

// Fill gives the kernel buffers to receive into (UMEM offsets of chunk starts) and returns
// how many fit.
func (s *Socket) Fill(addrs []uint64) int {
	r := &s.fill
	if !r.ok() || len(addrs) == 0 {
		return 0
	}
	n := min(uint32(len(addrs)), r.free(uint32(len(addrs))))
	prod := atomic.LoadUint32(r.prod)
	for i := uint32(0); i < n; i++ {
		*r.addr(prod + i) = addrs[i]
	}
	atomic.StoreUint32(r.prod, prod+n) // publishes the entries (release)
	return int(n)
}

// Complete takes addresses of transmitted frames off the completion ring.
func (s *Socket) Complete(addrs []uint64) int {
	r := &s.comp
	if !r.ok() || len(addrs) == 0 {
		return 0
	}
	n := min(uint32(len(addrs)), r.avail(uint32(len(addrs))))
	cons := atomic.LoadUint32(r.cons)
	for i := uint32(0); i < n; i++ {
		addrs[i] = *r.addr(cons + i)
	}
	atomic.StoreUint32(r.cons, cons+n)
	return int(n)
}

// Receive takes up to len(d) received descriptors off the RX ring. Addresses are as the
// kernel wrote them: pass them through FrameAddr in unaligned mode.
func (s *Socket) Receive(d []Desc) int {
	r := &s.rx
	if !r.ok() || len(d) == 0 {
		return 0
	}
	n := min(uint32(len(d)), r.avail(uint32(len(d))))
	cons := atomic.LoadUint32(r.cons)
	for i := uint32(0); i < n; i++ {
		d[i] = *r.desc(cons + i)
	}
	atomic.StoreUint32(r.cons, cons+n)
	return int(n)
}

// RxReady reports whether the RX ring has descriptors waiting.
func (s *Socket) RxReady() bool { return s.rx.ok() && s.rx.avail(1) > 0 }

// TxFree is the number of free TX-ring slots.
func (s *Socket) TxFree() int {
	if !s.tx.ok() {
		return 0
	}
	return int(s.tx.free(s.tx.size))
}

// Transmit queues descriptors on the TX ring and returns how many fit. The frames go out
// after Kick (copy mode always needs it; zero-copy when TxNeedsWakeup).
func (s *Socket) Transmit(d []Desc) int {
	r := &s.tx
	if !r.ok() || len(d) == 0 {
		return 0
	}
	n := min(uint32(len(d)), r.free(uint32(len(d))))
	prod := atomic.LoadUint32(r.prod)
	for i := uint32(0); i < n; i++ {
		*r.desc(prod + i) = d[i]
	}
	atomic.StoreUint32(r.prod, prod+n)
	return int(n)
}

// TxOutstanding is the number of TX descriptors the kernel has not consumed yet.
func (s *Socket) TxOutstanding() int {
	if !s.tx.ok() {
		return 0
	}
	return int(atomic.LoadUint32(s.tx.prod) - atomic.LoadUint32(s.tx.cons))
}

// FillNeedsWakeup reports whether the kernel asks for a syscall to pick up fill-ring buffers.
func (s *Socket) FillNeedsWakeup() bool {
	return s.fill.ok() && atomic.LoadUint32(s.fill.flags)&unix.XDP_RING_NEED_WAKEUP != 0
}

// TxNeedsWakeup reports whether the kernel asks for a syscall to start transmitting.
func (s *Socket) TxNeedsWakeup() bool {
	return s.tx.ok() && atomic.LoadUint32(s.tx.flags)&unix.XDP_RING_NEED_WAKEUP != 0
}

// Kick asks the kernel to transmit what is on the TX ring (sendto with MSG_DONTWAIT). In copy
// mode one call sends a bounded batch; callers loop while TxOutstanding stays > 0. Transient
// results (EAGAIN, EBUSY, ENOBUFS, ENETDOWN while the link settles) are not errors.
func (s *Socket) Kick() error {
	s.wakeups.Add(1)
	if s.mock {
		return nil
	}
	_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	switch e {
	case 0, unix.EAGAIN, unix.EBUSY, unix.ENOBUFS, unix.ENETDOWN:
		return nil
	}
	s.kickErrs.Add(1)
	return fmt.Errorf("xsk: sendto: %w", e)
}

// WakeupRx asks the driver to process the fill ring (recvfrom with MSG_DONTWAIT), for when
// FillNeedsWakeup is set.
func (s *Socket) WakeupRx() {
	s.wakeups.Add(1)
	if s.mock {
		return
	}
	unix.Syscall6(unix.SYS_RECVFROM, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
}

// Wait blocks until the RX ring has data or d passes (d ≤ 0: return at once). It reports
// whether data is ready.
func (s *Socket) Wait(d time.Duration) bool {
	if s.RxReady() {
		return true
	}
	if d <= 0 {
		return false
	}
	fds := []unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLIN}}
	ts := unix.NsecToTimespec(d.Nanoseconds())
	unix.Ppoll(fds, &ts, nil)
	return s.RxReady()
}

// WaitAny blocks until one of the sockets has RX data or d passes.
func WaitAny(socks []*Socket, d time.Duration) {
	if d <= 0 || len(socks) == 0 {
		return
	}
	fds := make([]unix.PollFd, 0, 8)
	for _, s := range socks {
		fds = append(fds, unix.PollFd{Fd: int32(s.fd), Events: unix.POLLIN})
	}
	ts := unix.NsecToTimespec(d.Nanoseconds())
	unix.Ppoll(fds, &ts, nil)
}

// Stats are the kernel's per-socket counters (struct xdp_statistics) plus syscall counts.
type Stats struct {
	RxDropped        uint64 // dropped for reasons other than the two below (e.g. frame too big)
	RxInvalidDescs   uint64
	TxInvalidDescs   uint64
	RxRingFull       uint64 // the RX ring was full
	RxFillRingEmpty  uint64 // the fill ring had no buffer
	TxRingEmptyDescs uint64
	Wakeups          uint64 // syscalls made for need_wakeup and TX kicks
	KickErrors       uint64
}

// Stats reads the kernel counters.
func (s *Socket) Stats() (Stats, error) {
	if s.mock {
		m := s.mockk
		return Stats{RxDropped: m.dropped.Load(), RxFillRingEmpty: m.fillEmpty.Load(), RxRingFull: m.ringFull.Load(),
			Wakeups: s.wakeups.Load(), KickErrors: s.kickErrs.Load()}, nil
	}
	var st unix.XDPStatistics
	l := uint32(unsafe.Sizeof(st))
	if _, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(s.fd), unix.SOL_XDP, unix.XDP_STATISTICS, uintptr(unsafe.Pointer(&st)), uintptr(unsafe.Pointer(&l)), 0); e != 0 {
		return Stats{}, fmt.Errorf("xsk: XDP_STATISTICS: %w", e)
	}
	return Stats{
		RxDropped: st.Rx_dropped, RxInvalidDescs: st.Rx_invalid_descs, TxInvalidDescs: st.Tx_invalid_descs,
		RxRingFull: st.Rx_ring_full, RxFillRingEmpty: st.Rx_fill_ring_empty_descs, TxRingEmptyDescs: st.Tx_ring_empty_descs,
		Wakeups: s.wakeups.Load(), KickErrors: s.kickErrs.Load(),
	}, nil
}

// ErrNoMultiBuffer: the kernel has no multi-buffer AF_XDP (XDP_USE_SG, Linux 6.6; IGX Orin's
// 5.15 for one), which frames larger than a UMEM chunk need.
var ErrNoMultiBuffer = errors.New("xsk: multi-buffer AF_XDP (XDP_USE_SG) needs Linux 6.6 or later")

// multiBufferErr names the missing feature when a multi-buffer bind fails with EINVAL on a
// kernel before 6.6 (which rejects the unknown XDP_USE_SG flag); other errors pass through.
func multiBufferErr(err error, release string) error {
	var major, minor int
	if !errors.Is(err, unix.EINVAL) {
		return err
	}
	if n, _ := fmt.Sscanf(release, "%d.%d", &major, &minor); n == 2 && (major > 6 || major == 6 && minor >= 6) {
		return err
	}
	return fmt.Errorf("%w (this kernel is %s; keep frames within one %d-byte chunk: buf_size 4096 or less and an MTU that fits, or use the socket engine): %w", ErrNoMultiBuffer, release, 4096, err)
}

// kernelRelease is uname -r ("" when uname fails).
func kernelRelease() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}
