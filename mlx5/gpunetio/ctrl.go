package gpunetio

import (
	"errors"
	"fmt"
	"time"

	"github.com/daqiri-go/daqiri/internal/iomem"
)

func ld32(b []byte, off int) uint32    { return iomem.Load32((*[4]byte)(b[off:])) }
func ld64(b []byte, off int) uint64    { return iomem.Load64((*[8]byte)(b[off:])) }
func st32(b []byte, off int, v uint32) { iomem.Store32((*[4]byte)(b[off:]), v) }

// KernelError is what a kernel reported in the control block when it stopped on an error.
type KernelError struct {
	Code     uint32 // Err*
	Syndrome uint8  // the error CQE's syndrome (mlx5dv.h MLX5_CQE_SYNDROME_*)
	Vendor   uint8  // vendor_err_synd
	WQE      uint16 // the error CQE's wqe_counter
	Opcode   uint8
}

// Error implements error.
func (e *KernelError) Error() string {
	switch e.Code {
	case ErrRxCQE, ErrTxCQE:
		dir := "receive"
		if e.Code == ErrTxCQE {
			dir = "send"
		}
		return fmt.Sprintf("gpunetio kernel: %s CQE with error syndrome %#x (%s), vendor syndrome %#x, opcode %#x, wqe_counter %d",
			dir, e.Syndrome, syndromeName(e.Syndrome), e.Vendor, e.Opcode, e.WQE)
	case ErrBadCQE:
		return fmt.Sprintf("gpunetio kernel: receive CQE with unexpected opcode %#x at wqe_counter %d", e.Opcode, e.WQE)
	case ErrTxRing:
		return "gpunetio kernel: the send queue stayed full (no send completions)"
	case ErrSemStuck:
		return "gpunetio kernel: the semaphore ring stayed full (the CPU took no batch)"
	}
	return fmt.Sprintf("gpunetio kernel: error code %d", e.Code)
}

// syndromeName names the CQE syndromes (rdma-core mlx5dv.h MLX5_CQE_SYNDROME_*).
func syndromeName(s uint8) string {
	switch s {
	case 0x01:
		return "local length error"
	case 0x02:
		return "local QP operation error"
	case 0x04:
		return "local protection error"
	case 0x05:
		return "WR flushed"
	case 0x06:
		return "memory window bind error"
	case 0x10:
		return "bad response"
	case 0x11:
		return "local access error"
	}
	return "unknown syndrome"
}

// KernelErr returns the error the kernel reported, or nil.
func (q *Queue) KernelErr() error {
	b := q.ctrl.Bytes()
	code := ld32(b, CtrlErr)
	if code == ErrNone {
		return nil
	}
	s := ld32(b, CtrlErrSynd)
	return &KernelError{Code: code, Syndrome: uint8(s), Vendor: uint8(s >> 8), WQE: uint16(ld32(b, CtrlErrWQE)), Opcode: uint8(ld32(b, CtrlErrOp))}
}

// Counters are the kernel's counts from the control block.
type Counters struct {
	Packets, Bytes, Batches uint64
	Heartbeat               uint32
	Running, Exited         bool
	RxCI, RQPI, TxPI, TxCI  uint32
}

// Counters reads the control block.
func (q *Queue) Counters() Counters {
	b := q.ctrl.Bytes()
	return Counters{Packets: ld64(b, CtrlPackets), Bytes: ld64(b, CtrlBytes), Batches: ld64(b, CtrlBatches),
		Heartbeat: ld32(b, CtrlHeartbeat), Running: ld32(b, CtrlRunning) != 0, Exited: ld32(b, CtrlExited) != 0,
		RxCI: ld32(b, CtrlRxCI), RQPI: ld32(b, CtrlRQPI), TxPI: ld32(b, CtrlTxPI), TxCI: ld32(b, CtrlTxCI)}
}

// ErrKernelRunning is Stop's error when the kernel did not leave its loop in time; the
// queue must then not be closed (the kernel still reaches its memory).
var ErrKernelRunning = errors.New("gpunetio: the kernel did not stop")

// Stop asks the kernel to finish (the stop word) and waits up to timeout for it to report
// that it left its loop. A kernel that never started counts as stopped.
func (q *Queue) Stop(timeout time.Duration) error {
	b := q.ctrl.Bytes()
	st32(b, CtrlStop, 1)
	deadline := time.Now().Add(timeout)
	for ld32(b, CtrlExited) == 0 {
		if ld32(b, CtrlRunning) == 0 && time.Now().After(deadline) {
			return nil
		}
		if time.Now().After(deadline) {
			c := q.Counters()
			return fmt.Errorf("%w within %v of the stop request (heartbeat %d, %d packets)", ErrKernelRunning, timeout, c.Heartbeat, c.Packets)
		}
		time.Sleep(100 * time.Microsecond)
	}
	return nil
}

// Watchdog notices a kernel that stopped polling: its heartbeat no longer moves although it
// has not exited.
type Watchdog struct {
	q     *Queue
	Stall time.Duration
	last  uint32
	since time.Time
}

// NewWatchdog watches q's kernel; stall is how long an unchanged heartbeat is tolerated.
func (q *Queue) NewWatchdog(stall time.Duration) *Watchdog {
	return &Watchdog{q: q, Stall: stall, last: ld32(q.ctrl.Bytes(), CtrlHeartbeat), since: time.Now()}
}

// ErrStalled is wrapped by the watchdog's report.
var ErrStalled = errors.New("gpunetio: the kernel stopped polling")

// Check returns the kernel's own error if it reported one, or ErrStalled (with what the
// device shows: the RX CQ's status and producer count against the kernel's consumer index)
// when the heartbeat has not moved for Stall; nil otherwise.
func (w *Watchdog) Check() error {
	if err := w.q.KernelErr(); err != nil {
		return err
	}
	c := w.q.Counters()
	if c.Exited || !c.Running {
		w.since = time.Now()
		return nil
	}
	if c.Heartbeat != w.last {
		w.last, w.since = c.Heartbeat, time.Now()
		return nil
	}
	d := time.Since(w.since)
	if d < w.Stall {
		return nil
	}
	msg := fmt.Sprintf("%v: heartbeat %d unchanged for %v, %d packets taken", ErrStalled, c.Heartbeat, d.Round(time.Millisecond), c.Packets)
	if !w.q.cfg.NoRx {
		st, pi, err := w.q.CQState(w.q.rxCQN)
		if err != nil {
			return fmt.Errorf("%s; %w", msg, err)
		}
		msg += fmt.Sprintf("; RX CQ %#x: producer %d, kernel consumer %d", w.q.rxCQN, pi, c.RxCI)
		if st == CQStatusOverflow {
			msg += ", CQ overrun (cqc status CQ_OVERFLOW)"
		}
	}
	return &StallError{Msg: msg}
}

// StallError is the watchdog's report.
type StallError struct{ Msg string }

// Error implements error.
func (e *StallError) Error() string { return e.Msg }

// Unwrap makes errors.Is(err, ErrStalled) hold.
func (e *StallError) Unwrap() error { return ErrStalled }

// SemRing is the CPU's side of a semaphore ring: entries the kernel marks ready with a
// batch, taken in order and handed back free.
type SemRing struct {
	m    Mem
	n    int
	next int
}

// NewSemRing allocates a ring of n entries in CPU_GPU memory (CPU for MemCPU).
func NewSemRing(a Allocator, t MemType, n int) (*SemRing, error) {
	if n <= 0 || n&(n-1) != 0 || n > 1<<16 {
		return nil, fmt.Errorf("gpunetio: semaphore ring of %d entries (a power of two up to 65536)", n)
	}
	m, err := a.Alloc(CtrlMem(t), max(n*SemSize, 4096))
	if err != nil {
		return nil, fmt.Errorf("gpunetio: semaphore ring: %w", err)
	}
	return &SemRing{m: m, n: n}, nil
}

// Addr is the ring's GPU address (struct dqg_sem *).
func (s *SemRing) Addr() uint64 { return s.m.DevAddr() }

// Len is the number of entries.
func (s *SemRing) Len() int { return s.n }

// Batch is one entry the kernel filled.
type Batch struct {
	Index   int // the entry, which names the batch's output area
	Count   int
	Bytes   uint64
	Seq     uint64
	FirstTS uint64
}

// Poll returns the next entry if the kernel marked it ready. The fields are read after the
// status (the kernel's store-release orders them before it; x86 and the load order of
// iomem keep them after).
func (s *SemRing) Poll() (Batch, bool) {
	b := s.m.Bytes()
	e := s.next * SemSize
	if ld32(b, e+SemStatus) != SemReady {
		return Batch{}, false
	}
	iomem.FromDevice()
	return Batch{Index: s.next, Count: int(ld32(b, e+SemCount)), Bytes: ld64(b, e+SemBytes), Seq: ld64(b, e+SemSeq), FirstTS: ld64(b, e+SemTS)}, true
}

// Release hands the entry Poll returned back to the kernel.
func (s *SemRing) Release() {
	iomem.ToDevice()
	st32(s.m.Bytes(), s.next*SemSize+SemStatus, SemFree)
	s.next = (s.next + 1) % s.n
}

// Close frees the ring.
func (s *SemRing) Close() error { return s.m.Close() }
