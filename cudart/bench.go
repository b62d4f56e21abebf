package cudart

import (
	"errors"
	"fmt"
	"time"
)

// MaxTimedIters bounds the repetitions Time and MeasureCopy accept.
const MaxTimedIters = 1 << 20

// Time measures on the GPU how long iters rounds of work take: it records an event on s,
// calls enqueue(i) for i in [0, iters) — which must queue its work on s — records a second
// event, waits for it and returns the GPU time between the two. Host-side launch overhead
// shows only where it keeps the GPU idle. s must not be nil.
func (s *Stream) Time(iters int, enqueue func(i int) error) (time.Duration, error) {
	if err := s.live(); err != nil {
		return 0, err
	}
	if iters <= 0 || iters > MaxTimedIters {
		return 0, fmt.Errorf("cudart: %d timing iterations, want 1..%d", iters, MaxTimedIters)
	}
	start, err := s.dev.NewEvent(true, true)
	if err != nil {
		return 0, err
	}
	defer start.Close()
	end, err := s.dev.NewEvent(true, true)
	if err != nil {
		return 0, err
	}
	defer end.Close()
	if err := start.Record(s); err != nil {
		return 0, err
	}
	for i := range iters {
		if err := enqueue(i); err != nil {
			// Let what was queued drain before the caller frees anything it uses.
			return 0, errors.Join(err, s.Synchronize())
		}
	}
	if err := end.Record(s); err != nil {
		return 0, err
	}
	if err := end.Synchronize(); err != nil {
		return 0, err
	}
	return end.Elapsed(start)
}

// CopyKind is the direction of a measured copy.
type CopyKind int

// Copy directions for MeasureCopy.
const (
	HostToDevice   CopyKind = iota + 1 // host-pinned to device
	DeviceToHost                       // device to host-pinned
	DeviceToDevice                     // device to device, same GPU
)

// String names the direction.
func (k CopyKind) String() string {
	switch k {
	case HostToDevice:
		return "HtoD"
	case DeviceToHost:
		return "DtoH"
	case DeviceToDevice:
		return "DtoD"
	}
	return fmt.Sprintf("CopyKind(%d)", int(k))
}

// CopyResult is one bandwidth measurement.
type CopyResult struct {
	Kind    CopyKind
	Size    int           // bytes per copy
	Iters   int           // copies timed
	Elapsed time.Duration // GPU time for all of them
}

// GBps is the measured rate in 10^9 bytes per second (bytes moved per copy × copies / time;
// a device-to-device copy reads and writes each byte, so memory traffic is twice this).
func (r CopyResult) GBps() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Size) * float64(r.Iters) / r.Elapsed.Seconds() / 1e9
}

// String summarises the measurement, e.g. "DtoD 1048576 B x 1000: 20ms, 52.43 GB/s".
func (r CopyResult) String() string {
	return fmt.Sprintf("%s %d B x %d: %v, %.2f GB/s", r.Kind, r.Size, r.Iters, r.Elapsed, r.GBps())
}

// MeasureCopy allocates buffers of size bytes (host-pinned and/or device), does one untimed
// warm-up copy, then times iters back-to-back copies of the given kind on a fresh stream with
// CUDA events. It is the reference a kernel's throughput is compared against (a reorder
// kernel against DeviceToDevice of the same bytes).
func (dev *Device) MeasureCopy(kind CopyKind, size, iters int) (CopyResult, error) {
	res := CopyResult{Kind: kind, Size: size, Iters: iters}
	if size <= 0 {
		return res, fmt.Errorf("cudart: copy measurement of %d bytes", size)
	}
	if iters <= 0 || iters > MaxTimedIters {
		return res, fmt.Errorf("cudart: %d copy iterations, want 1..%d", iters, MaxTimedIters)
	}
	s, err := dev.NewStream(true)
	if err != nil {
		return res, err
	}
	defer s.Close()
	dst, err := dev.AllocDevice(size)
	if err != nil {
		return res, err
	}
	defer dst.Close()
	var copyOnce func(int) error
	switch kind {
	case HostToDevice, DeviceToHost:
		host, err := dev.AllocHostPinned(size)
		if err != nil {
			return res, err
		}
		defer host.Close()
		if kind == HostToDevice {
			copyOnce = func(int) error { return dev.CopyHtoDAsync(dst.Ptr(), host.Bytes(), s) }
		} else {
			copyOnce = func(int) error { return dev.CopyDtoHAsync(host.Bytes(), dst.Ptr(), s) }
		}
	case DeviceToDevice:
		src, err := dev.AllocDevice(size)
		if err != nil {
			return res, err
		}
		defer src.Close()
		copyOnce = func(int) error { return dev.CopyDtoDAsync(dst.Ptr(), src.Ptr(), size, s) }
	default:
		return res, fmt.Errorf("cudart: unknown copy kind %d", int(kind))
	}
	if err := copyOnce(0); err != nil {
		return res, err
	}
	if err := s.Synchronize(); err != nil {
		return res, err
	}
	res.Elapsed, err = s.Time(iters, copyOnce)
	return res, err
}
