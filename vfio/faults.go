package vfio

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// ErrIOMMUFault: the IOMMU blocked a DMA of the device (the kernel logged a
// translation fault for it).
var ErrIOMMUFault = errors.New("vfio: IOMMU fault")

// FaultWatcher reports the IOMMU faults the kernel logs for one device.
//
// Type1 VFIO gives user space no fault channel: a DMA to an unmapped IOVA is
// dropped by the IOMMU (reads return nothing useful, writes vanish) and the
// kernel's IOMMU driver logs it. FaultWatcher follows the kernel log
// (/dev/kmsg, root only) from the moment it is created and picks out the
// fault records that name the device: Intel VT-d "DMAR: [DMA Read …] Request
// device [bb:dd.f] fault addr …" (linux drivers/iommu/intel/dmar.c,
// dmar_fault_do_one) and AMD-Vi "IO_PAGE_FAULT device=…" events. The kernel
// rate-limits these messages, so a burst of faults may be reported as fewer.
type FaultWatcher struct {
	mu  sync.Mutex
	fd  int
	bdf string // 0000:00:01.0
	bus string // 00:01.0, the form the Intel driver prints
}

// WatchFaults starts following the kernel log for IOMMU faults of the PCI
// device bdf; records logged before the call are skipped.
func WatchFaults(bdf string) (*FaultWatcher, error) {
	if err := checkDeviceName(bdf); err != nil {
		return nil, err
	}
	short := bdf
	if i := strings.IndexByte(bdf, ':'); i >= 0 && strings.Count(bdf, ":") == 2 {
		short = bdf[i+1:]
	}
	fd, err := unix.Open("/dev/kmsg", unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, opErr("open kernel log", "/dev/kmsg", err)
	}
	// SEEK_END on /dev/kmsg moves past every record already logged.
	if _, err := unix.Seek(fd, 0, unix.SEEK_END); err != nil {
		unix.Close(fd)
		return nil, opErr("seek kernel log", "/dev/kmsg", err)
	}
	return &FaultWatcher{fd: fd, bdf: strings.ToLower(bdf), bus: strings.ToLower(short)}, nil
}

// Faults returns the fault messages for the device logged since the last
// call (or since WatchFaults), without waiting.
func (w *FaultWatcher) Faults() ([]string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd < 0 {
		return nil, opErr("read kernel log", "/dev/kmsg", ErrClosed)
	}
	var out []string
	buf := make([]byte, 8192) // /dev/kmsg returns one record per read
	for range 4096 {          // bounded: a flood of records is read in later calls
		n, err := unix.Read(w.fd, buf)
		switch {
		case errors.Is(err, unix.EAGAIN):
			return out, nil
		case errors.Is(err, unix.EPIPE), errors.Is(err, unix.EINTR):
			continue // records were overwritten before we read them; go on with the next
		case err != nil:
			return out, opErr("read kernel log", "/dev/kmsg", err)
		}
		if msg, ok := w.match(string(buf[:n])); ok {
			out = append(out, msg)
		}
	}
	return out, nil
}

// match extracts the message of a /dev/kmsg record ("prio,seq,usec,flags;
// text\n continuation lines") and reports whether it is a fault of the
// device.
func (w *FaultWatcher) match(rec string) (string, bool) {
	_, msg, ok := strings.Cut(rec, ";")
	if !ok {
		return "", false
	}
	msg, _, _ = strings.Cut(msg, "\n")
	l := strings.ToLower(msg)
	switch {
	case strings.Contains(l, "dmar:") && strings.Contains(l, "fault") &&
		(strings.Contains(l, "["+w.bus+"]") || strings.Contains(l, "["+w.bdf+"]")):
		return msg, true
	case strings.Contains(l, "io_page_fault") &&
		(strings.Contains(l, "device="+w.bdf) || strings.Contains(l, "device="+w.bus)):
		return msg, true
	}
	return "", false
}

// Check returns an error wrapping ErrIOMMUFault, quoting the faults, when
// any were logged since the last call.
func (w *FaultWatcher) Check() error {
	f, err := w.Faults()
	if err != nil {
		return err
	}
	if len(f) > 0 {
		return opErr("DMA", w.bdf, fmt.Errorf("%w: %s", ErrIOMMUFault, strings.Join(f, "; ")))
	}
	return nil
}

// Close stops watching.
func (w *FaultWatcher) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd < 0 {
		return nil
	}
	err := unix.Close(w.fd)
	w.fd = -1
	return opErr("close", "/dev/kmsg", err)
}
