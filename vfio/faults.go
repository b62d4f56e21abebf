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
// dmar_fault_do_one), AMD-Vi "IO_PAGE_FAULT device=…" events, and Arm SMMUv3
// events (linux drivers/iommu/arm/arm-smmu-v3/arm-smmu-v3.c, arm_smmu_evtq_thread:
// "event 0xNN received:" and the event record's four 64-bit words, one record
// each; since 6.15 arm_smmu_dump_event adds "event: F_TRANSLATION client:
// 0000:00:01.0 sid: …"). The kernel rate-limits these messages, so a burst of
// faults may be reported as fewer.
//
// The raw SMMUv3 records name the device only by its StreamID (the event's
// first word, bits 63:32). FaultWatcher takes the PCI requester ID (bus << 8 |
// device << 3 | function) for it, which holds where the firmware maps requester
// IDs to StreamIDs one to one (QEMU's virt machine; most servers' IORT); where
// it does not, only the newer kernels' client line finds the device.
type FaultWatcher struct {
	mu   sync.Mutex
	fd   int
	bdf  string // 0000:00:01.0
	bus  string // 00:01.0, the form the Intel driver prints
	sid  uint32 // the requester ID, taken for the SMMUv3 StreamID
	smmu smmuEvent
}

// smmuEvent collects one SMMUv3 event record across its kernel log records.
type smmuEvent struct {
	dev      string   // the SMMU's device name ("arm-smmu-v3.0.auto"); "" when none is open
	id       uint8    // the event number of the "event 0xNN received:" line
	words    []uint64 // the record's words so far
	reported bool     // the last whole record was this device's and reported: skip its client line
}

// smmuEventNames are the SMMUv3 event numbers (Arm IHI 0070, "Event records"; the
// kernel's event_str table).
var smmuEventNames = map[uint8]string{
	0x01: "F_UUT", 0x02: "C_BAD_STREAMID", 0x03: "F_STE_FETCH", 0x04: "C_BAD_STE",
	0x05: "F_BAD_ATS_TREQ", 0x06: "F_STREAM_DISABLED", 0x07: "F_TRANSL_FORBIDDEN",
	0x08: "C_BAD_SUBSTREAMID", 0x09: "F_CD_FETCH", 0x0a: "C_BAD_CD", 0x0b: "F_WALK_EABT",
	0x10: "F_TRANSLATION", 0x11: "F_ADDR_SIZE", 0x12: "F_ACCESS", 0x13: "F_PERMISSION",
	0x20: "F_TLB_CONFLICT", 0x21: "F_CFG_CONFLICT", 0x24: "E_PAGE_REQUEST", 0x25: "F_VMS_FETCH",
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
	return &FaultWatcher{fd: fd, bdf: strings.ToLower(bdf), bus: strings.ToLower(short), sid: requesterID(short)}, nil
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
	case strings.HasPrefix(l, "arm-smmu-v3 "):
		return w.matchSMMU(msg)
	}
	return "", false
}

// matchSMMU follows an SMMUv3 event across its records: the "event 0xNN received:"
// line, its four words (reported once the last arrives, when the StreamID is the
// device's), and a newer kernel's "event: … client: …" line.
func (w *FaultWatcher) matchSMMU(msg string) (string, bool) {
	// "arm-smmu-v3 arm-smmu-v3.0.auto: text": the driver, the SMMU, the text.
	rest := strings.TrimPrefix(msg, "arm-smmu-v3 ")
	dev, text, ok := strings.Cut(rest, ": ")
	if !ok {
		return "", false
	}
	// The words are printed after a tab, which /dev/kmsg escapes as \x09.
	text = strings.TrimSpace(strings.TrimPrefix(text, `\x09`))
	e := &w.smmu
	var id uint8
	if n, _ := fmt.Sscanf(text, "event 0x%x received:", &id); n == 1 {
		*e = smmuEvent{dev: dev, id: id}
		return "", false
	}
	var word uint64
	if n, _ := fmt.Sscanf(text, "0x%x", &word); n == 1 && e.dev == dev && len(e.words) < 4 && strings.HasPrefix(text, "0x") {
		e.words = append(e.words, word)
		if len(e.words) < 4 {
			return "", false
		}
		sid := uint32(e.words[0] >> 32)
		ev := *e
		*e = smmuEvent{dev: dev}
		if sid != w.sid {
			return "", false
		}
		e.reported = true
		name := smmuEventNames[ev.id]
		if name == "" {
			name = "unknown event"
		}
		out := fmt.Sprintf("arm-smmu-v3 %s: event %#02x (%s) for StreamID %#x", dev, ev.id, name, sid)
		if ev.id >= 0x10 && ev.id <= 0x13 {
			out += fmt.Sprintf(" at input address %#x", ev.words[2]) // translation, address size, access, permission faults: word 2 is the address
		}
		return out + fmt.Sprintf(" (record 0x%016x 0x%016x 0x%016x 0x%016x)", ev.words[0], ev.words[1], ev.words[2], ev.words[3]), true
	}
	if strings.HasPrefix(text, "event: ") {
		_, client, _ := strings.Cut(text, " client: ")
		client, _, _ = strings.Cut(client, " ")
		already := e.reported
		e.reported = false
		if strings.ToLower(client) == w.bdf && !already {
			return msg, true
		}
	}
	return "", false
}

// requesterID is the PCI requester ID of "bb:dd.f" (bus << 8 | device << 3 |
// function); ^0 when bus cannot be read.
func requesterID(bus string) uint32 {
	var b, d, f uint32
	if n, _ := fmt.Sscanf(bus, "%x:%x.%x", &b, &d, &f); n != 3 || b > 0xff || d > 0x1f || f > 7 {
		return ^uint32(0)
	}
	return b<<8 | d<<3 | f
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
