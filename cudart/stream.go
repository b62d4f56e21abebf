package cudart

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"github.com/daqiri-go/daqiri/internal/dynlib"
)

// Stream and event flags from cuda.h (CUDA 12.6): CUstream_flags lines 415-416, CUevent_flags
// lines 443-446, CUevent_wait_flags line 463.
const (
	streamNonBlocking   = 0x1 // CU_STREAM_NON_BLOCKING
	eventBlockingSync   = 0x1 // CU_EVENT_BLOCKING_SYNC
	eventDisableTiming  = 0x2 // CU_EVENT_DISABLE_TIMING
	streamWaitEventZero = 0x0 // cuStreamWaitEvent flags: CU_EVENT_WAIT_DEFAULT
)

// CopyHtoD copies src from host memory to device memory at dst and returns when the copy is
// done (cuMemcpyHtoD). src may be any memory, the Go heap included.
func (dev *Device) CopyHtoD(dst DevicePtr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	if err := dev.bind(); err != nil {
		return err
	}
	defer dev.unbind()
	return dev.d.check(dynlib.Call(dev.d.f.cuMemcpyHtoD, uintptr(dst), uintptr(unsafe.Pointer(unsafe.SliceData(src))), uintptr(len(src))), "cuMemcpyHtoD")
}

// CopyDtoH copies len(dst) bytes from device memory at src into dst and returns when the copy
// is done (cuMemcpyDtoH). dst may be any memory, the Go heap included.
func (dev *Device) CopyDtoH(dst []byte, src DevicePtr) error {
	if len(dst) == 0 {
		return nil
	}
	if err := dev.bind(); err != nil {
		return err
	}
	defer dev.unbind()
	return dev.d.check(dynlib.Call(dev.d.f.cuMemcpyDtoH, uintptr(unsafe.Pointer(unsafe.SliceData(dst))), uintptr(src), uintptr(len(dst))), "cuMemcpyDtoH")
}

// CopyDtoD copies n bytes between device addresses (cuMemcpyDtoD). Like every copy on the
// legacy default stream it is ordered after earlier work; it may return before the copy ends
// (call Synchronize before reading the result through another path).
func (dev *Device) CopyDtoD(dst, src DevicePtr, n int) error {
	if n < 0 {
		return fmt.Errorf("cudart: device-to-device copy of %d bytes", n)
	}
	if n == 0 {
		return nil
	}
	if err := dev.bind(); err != nil {
		return err
	}
	defer dev.unbind()
	return dev.d.check(dynlib.Call(dev.d.f.cuMemcpyDtoD, uintptr(dst), uintptr(src), uintptr(n)), "cuMemcpyDtoD")
}

// Memset sets n bytes of device memory at dst to v (cuMemsetD8).
func (dev *Device) Memset(dst DevicePtr, v byte, n int) error {
	if n < 0 {
		return fmt.Errorf("cudart: memset of %d bytes", n)
	}
	if n == 0 {
		return nil
	}
	if err := dev.bind(); err != nil {
		return err
	}
	defer dev.unbind()
	return dev.d.check(dynlib.Call(dev.d.f.cuMemsetD8, uintptr(dst), uintptr(v), uintptr(n)), "cuMemsetD8")
}

// Stream is a CUDA stream: work queued on it runs in order, and runs concurrently with other
// streams. A nil *Stream, wherever one is accepted, means the legacy default stream.
type Stream struct {
	dev *Device
	h   uintptr // CUstream; 0 after Close
}

// NewStream creates a stream in the device's primary context (cuStreamCreate). A
// non-blocking stream does not synchronise with the legacy default stream.
func (dev *Device) NewStream(nonBlocking bool) (*Stream, error) {
	if err := dev.bind(); err != nil {
		return nil, err
	}
	defer dev.unbind()
	flags := uintptr(0)
	if nonBlocking {
		flags = streamNonBlocking
	}
	s := &Stream{dev: dev}
	if err := dev.d.check(dynlib.Call(dev.d.f.cuStreamCreate, uintptr(unsafe.Pointer(&s.h)), flags), "cuStreamCreate"); err != nil {
		return nil, err
	}
	return s, nil
}

// live checks that s can be used on its own (not the nil default stream, not closed).
func (s *Stream) live() error {
	if s == nil {
		return fmt.Errorf("cudart: nil stream: use the Device's methods for the default stream")
	}
	if s.h == 0 {
		return ErrClosed
	}
	return nil
}

// Handle is the raw CUstream (0 for nil), for passing to other CUDA libraries.
func (s *Stream) Handle() uintptr {
	if s == nil {
		return 0
	}
	return s.h
}

// Device is the GPU the stream belongs to.
func (s *Stream) Device() *Device { return s.dev }

// streamFor is the CUstream handle for an enqueue on dev: 0 for the nil stream; an error for a
// closed stream or one that belongs to another GPU.
func (dev *Device) streamFor(s *Stream) (uintptr, error) {
	if s == nil {
		return 0, nil
	}
	if s.h == 0 {
		return 0, ErrClosed
	}
	if s.dev != dev {
		return 0, fmt.Errorf("cudart: stream of GPU %d used for work on GPU %d", s.dev.ordinal, dev.ordinal)
	}
	return s.h, nil
}

// CopyHtoDAsync queues on s (nil: the legacy default stream) a copy of src into device memory
// at dst (cuMemcpyHtoDAsync). src should be page-locked (HostMem.Bytes) for the copy to
// overlap with other work, and must stay valid and unchanged until the stream has passed the
// copy: do not pass Go heap memory unless you synchronise before the slice can be reused.
func (dev *Device) CopyHtoDAsync(dst DevicePtr, src []byte, s *Stream) error {
	if len(src) == 0 {
		return nil
	}
	h, err := dev.streamFor(s)
	if err != nil {
		return err
	}
	if err := dev.bind(); err != nil {
		return err
	}
	defer dev.unbind()
	return dev.d.check(dynlib.Call(dev.d.f.cuMemcpyHtoDAsync, uintptr(dst), uintptr(unsafe.Pointer(unsafe.SliceData(src))), uintptr(len(src)), h), "cuMemcpyHtoDAsync")
}

// CopyDtoHAsync queues on s a copy of len(dst) bytes from device memory at src into dst
// (cuMemcpyDtoHAsync). dst should be page-locked; its contents are defined only once the
// stream has passed the copy (Stream.Synchronize, or an event recorded after it).
func (dev *Device) CopyDtoHAsync(dst []byte, src DevicePtr, s *Stream) error {
	if len(dst) == 0 {
		return nil
	}
	h, err := dev.streamFor(s)
	if err != nil {
		return err
	}
	if err := dev.bind(); err != nil {
		return err
	}
	defer dev.unbind()
	return dev.d.check(dynlib.Call(dev.d.f.cuMemcpyDtoHAsync, uintptr(unsafe.Pointer(unsafe.SliceData(dst))), uintptr(src), uintptr(len(dst)), h), "cuMemcpyDtoHAsync")
}

// CopyDtoDAsync queues on s a copy of n bytes between device addresses (cuMemcpyDtoDAsync).
func (dev *Device) CopyDtoDAsync(dst, src DevicePtr, n int, s *Stream) error {
	if n < 0 {
		return fmt.Errorf("cudart: device-to-device copy of %d bytes", n)
	}
	if n == 0 {
		return nil
	}
	h, err := dev.streamFor(s)
	if err != nil {
		return err
	}
	if err := dev.bind(); err != nil {
		return err
	}
	defer dev.unbind()
	return dev.d.check(dynlib.Call(dev.d.f.cuMemcpyDtoDAsync, uintptr(dst), uintptr(src), uintptr(n), h), "cuMemcpyDtoDAsync")
}

// MemsetAsync queues on s setting n bytes of device memory at dst to v (cuMemsetD8Async).
func (dev *Device) MemsetAsync(dst DevicePtr, v byte, n int, s *Stream) error {
	if n < 0 {
		return fmt.Errorf("cudart: memset of %d bytes", n)
	}
	if n == 0 {
		return nil
	}
	h, err := dev.streamFor(s)
	if err != nil {
		return err
	}
	if err := dev.bind(); err != nil {
		return err
	}
	defer dev.unbind()
	return dev.d.check(dynlib.Call(dev.d.f.cuMemsetD8Async, uintptr(dst), uintptr(v), uintptr(n), h), "cuMemsetD8Async")
}

// Synchronize waits until all work queued on the stream has finished (cuStreamSynchronize).
func (s *Stream) Synchronize() error {
	if err := s.live(); err != nil {
		return err
	}
	if err := s.dev.bind(); err != nil {
		return err
	}
	defer s.dev.unbind()
	return s.dev.d.check(dynlib.Call(s.dev.d.f.cuStreamSynchronize, s.h), "cuStreamSynchronize")
}

// Query reports whether all work queued on the stream has finished, without waiting
// (cuStreamQuery).
func (s *Stream) Query() (bool, error) {
	if err := s.live(); err != nil {
		return false, err
	}
	if err := s.dev.bind(); err != nil {
		return false, err
	}
	defer s.dev.unbind()
	err := s.dev.d.check(dynlib.Call(s.dev.d.f.cuStreamQuery, s.h), "cuStreamQuery")
	if errors.Is(err, ResultNotReady) {
		return false, nil
	}
	return err == nil, err
}

// WaitEvent makes work queued on the stream after this call wait until e has completed
// (cuStreamWaitEvent); the host does not wait. e may belong to another stream of the same
// GPU.
func (s *Stream) WaitEvent(e *Event) error {
	if err := s.live(); err != nil {
		return err
	}
	if e == nil || e.h == 0 {
		return fmt.Errorf("cudart: WaitEvent on a nil or closed event")
	}
	if err := s.dev.bind(); err != nil {
		return err
	}
	defer s.dev.unbind()
	return s.dev.d.check(dynlib.Call(s.dev.d.f.cuStreamWaitEvent, s.h, e.h, streamWaitEventZero), "cuStreamWaitEvent")
}

// Close destroys the stream (cuStreamDestroy); queued work still completes. Idempotent.
func (s *Stream) Close() error {
	if s == nil || s.h == 0 {
		return nil
	}
	if err := s.dev.bind(); err != nil {
		return err
	}
	defer s.dev.unbind()
	h := s.h
	s.h = 0
	return s.dev.d.check(dynlib.Call(s.dev.d.f.cuStreamDestroy, h), "cuStreamDestroy")
}

// Event marks a point in a stream's work: for ordering streams, waiting on the host, and
// timing.
type Event struct {
	dev    *Device
	h      uintptr // CUevent; 0 after Close
	timing bool
}

// NewEvent creates an event (cuEventCreate). With timing, Elapsed can measure between two
// events; without, recording is cheaper. With blockingSync, Synchronize sleeps instead of
// spinning.
func (dev *Device) NewEvent(timing, blockingSync bool) (*Event, error) {
	if err := dev.bind(); err != nil {
		return nil, err
	}
	defer dev.unbind()
	flags := uintptr(0)
	if !timing {
		flags |= eventDisableTiming
	}
	if blockingSync {
		flags |= eventBlockingSync
	}
	e := &Event{dev: dev, timing: timing}
	if err := dev.d.check(dynlib.Call(dev.d.f.cuEventCreate, uintptr(unsafe.Pointer(&e.h)), flags), "cuEventCreate"); err != nil {
		return nil, err
	}
	return e, nil
}

// Record captures the work queued on s so far (nil: the legacy default stream); the event
// completes when that work has (cuEventRecord).
func (e *Event) Record(s *Stream) error {
	if e.h == 0 {
		return ErrClosed
	}
	h, err := e.dev.streamFor(s)
	if err != nil {
		return err
	}
	if err := e.dev.bind(); err != nil {
		return err
	}
	defer e.dev.unbind()
	return e.dev.d.check(dynlib.Call(e.dev.d.f.cuEventRecord, e.h, h), "cuEventRecord")
}

// Synchronize waits until the event has completed (cuEventSynchronize).
func (e *Event) Synchronize() error {
	if e.h == 0 {
		return ErrClosed
	}
	if err := e.dev.bind(); err != nil {
		return err
	}
	defer e.dev.unbind()
	return e.dev.d.check(dynlib.Call(e.dev.d.f.cuEventSynchronize, e.h), "cuEventSynchronize")
}

// Query reports whether the event has completed, without waiting (cuEventQuery). An event
// never recorded counts as completed.
func (e *Event) Query() (bool, error) {
	if e.h == 0 {
		return false, ErrClosed
	}
	if err := e.dev.bind(); err != nil {
		return false, err
	}
	defer e.dev.unbind()
	err := e.dev.d.check(dynlib.Call(e.dev.d.f.cuEventQuery, e.h), "cuEventQuery")
	if errors.Is(err, ResultNotReady) {
		return false, nil
	}
	return err == nil, err
}

// Elapsed is the GPU time from start to e (cuEventElapsedTime, resolution about half a
// microsecond). Both events must have been created with timing and have completed.
func (e *Event) Elapsed(start *Event) (time.Duration, error) {
	if e.h == 0 || start == nil || start.h == 0 {
		return 0, ErrClosed
	}
	if !e.timing || !start.timing {
		return 0, fmt.Errorf("cudart: Elapsed needs two events created with timing")
	}
	if err := e.dev.bind(); err != nil {
		return 0, err
	}
	defer e.dev.unbind()
	var ms float32
	if err := e.dev.d.check(dynlib.Call(e.dev.d.f.cuEventElapsedTime, uintptr(unsafe.Pointer(&ms)), start.h, e.h), "cuEventElapsedTime"); err != nil {
		return 0, err
	}
	return time.Duration(float64(ms) * float64(time.Millisecond)), nil
}

// Close destroys the event (cuEventDestroy). Idempotent.
func (e *Event) Close() error {
	if e == nil || e.h == 0 {
		return nil
	}
	if err := e.dev.bind(); err != nil {
		return err
	}
	defer e.dev.unbind()
	h := e.h
	e.h = 0
	return e.dev.d.check(dynlib.Call(e.dev.d.f.cuEventDestroy, h), "cuEventDestroy")
}
