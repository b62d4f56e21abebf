package vfio

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"golang.org/x/sys/unix"
)

// vfio-pci's fixed region indexes (vfio.h: VFIO_PCI_*_REGION_INDEX).
const (
	RegionBAR0   = 0
	RegionBAR1   = 1
	RegionBAR2   = 2
	RegionBAR3   = 3
	RegionBAR4   = 4
	RegionBAR5   = 5
	RegionROM    = 6
	RegionConfig = 7
	RegionVGA    = 8
)

// vfio-pci's fixed interrupt indexes (vfio.h: VFIO_PCI_*_IRQ_INDEX).
const (
	IRQIndexINTx = 0
	IRQIndexMSI  = 1
	IRQIndexMSIX = 2
	IRQIndexErr  = 3
	IRQIndexReq  = 4
)

// Device flag bits (vfio.h: VFIO_DEVICE_FLAGS_*).
const (
	DeviceFlagReset = 1 << 0
	DeviceFlagPCI   = 1 << 1
	DeviceFlagCaps  = 1 << 7
)

// Region flag bits (vfio.h: VFIO_REGION_INFO_FLAG_*).
const (
	RegionFlagRead  = 1 << 0
	RegionFlagWrite = 1 << 1
	RegionFlagMmap  = 1 << 2
	RegionFlagCaps  = 1 << 3
)

// IRQ info flag bits (vfio.h: VFIO_IRQ_INFO_*).
const (
	IRQFlagEventFD    = 1 << 0
	IRQFlagMaskable   = 1 << 1
	IRQFlagAutomasked = 1 << 2
	IRQFlagNoResize   = 1 << 3
)

// Device is an open VFIO device.
type Device struct {
	mu    sync.Mutex
	fd    int
	name  string
	group *Group
	info  DeviceInfo
	mmios []*MMIO
	irqs  []*IRQ
}

// DeviceInfo is what VFIO_DEVICE_GET_INFO reports.
type DeviceInfo struct {
	Flags      uint32
	NumRegions int
	NumIRQs    int
}

// PCI reports a vfio-pci device.
func (i DeviceInfo) PCI() bool { return i.Flags&DeviceFlagPCI != 0 }

// CanReset reports whether VFIO_DEVICE_RESET is available.
func (i DeviceInfo) CanReset() bool { return i.Flags&DeviceFlagReset != 0 }

func decodeDeviceInfo(b []byte) DeviceInfo {
	return DeviceInfo{Flags: ne.Uint32(b[4:]), NumRegions: int(ne.Uint32(b[8:])), NumIRQs: int(ne.Uint32(b[12:]))}
}

func (d *Device) loadInfo() error {
	b := argsz(sizeDeviceInfo, 0)
	if _, err := ioctl(d.fd, ioctlDeviceGetInfo, b, 0); err != nil {
		return opErr("VFIO_DEVICE_GET_INFO", d.name, err)
	}
	d.info = decodeDeviceInfo(b)
	return nil
}

// Name is the device's name in its group (the PCI address).
func (d *Device) Name() string { return d.name }

// Info returns the device's information, read when it was opened.
func (d *Device) Info() DeviceInfo { return d.info }

// Group is the group the device was opened from.
func (d *Device) Group() *Group { return d.group }

func (d *Device) live(op string) error {
	if d.fd < 0 {
		return opErr(op, d.name, ErrClosed)
	}
	return nil
}

// RegionInfo describes one region of a device (VFIO_DEVICE_GET_REGION_INFO).
type RegionInfo struct {
	Index  int
	Flags  uint32
	Size   uint64 // 0: the region is not implemented (an unused BAR)
	Offset uint64 // where the region starts in the device file
	// Sparse lists the only parts that may be mmap'd, when the kernel
	// restricts mapping (a BAR holding an MSI-X table); nil otherwise.
	Sparse []Area
	// Type and Subtype identify device-specific regions (HasType).
	HasType       bool
	Type, Subtype uint32
}

// Area is a part of a region.
type Area struct{ Offset, Size uint64 }

// Readable reports that the region can be read.
func (r RegionInfo) Readable() bool { return r.Flags&RegionFlagRead != 0 }

// Writable reports that the region can be written.
func (r RegionInfo) Writable() bool { return r.Flags&RegionFlagWrite != 0 }

// Mappable reports that the region (or its Sparse areas) can be mmap'd.
func (r RegionInfo) Mappable() bool { return r.Flags&RegionFlagMmap != 0 }

// RegionInfo queries region index, with its capabilities.
func (d *Device) RegionInfo(index int) (RegionInfo, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.regionInfo(index)
}

func (d *Device) regionInfo(index int) (RegionInfo, error) {
	const op = "VFIO_DEVICE_GET_REGION_INFO"
	if err := d.live(op); err != nil {
		return RegionInfo{}, err
	}
	if index < 0 || index >= d.info.NumRegions {
		return RegionInfo{}, invalid(op, d.name, "region %d: the device has regions 0 to %d", index, d.info.NumRegions-1)
	}
	b := encodeRegionInfo(sizeRegionInfo, index)
	for range 2 { // a second call when the capabilities did not fit
		if _, err := ioctl(d.fd, ioctlDeviceGetRegionInfo, b, 0); err != nil {
			return RegionInfo{}, opErr(op, fmt.Sprintf("%s region %d", d.name, index), err)
		}
		if need := ne.Uint32(b[0:]); int(need) > len(b) && need < 1<<20 {
			b = encodeRegionInfo(int(need), index)
			continue
		}
		break
	}
	return decodeRegionInfo(b), nil
}

// encodeRegionInfo builds struct vfio_region_info: argsz, flags,
// index @8, cap_offset @12, size @16, offset @24.
func encodeRegionInfo(n, index int) []byte {
	b := argsz(n, 0)
	ne.PutUint32(b[8:], uint32(index))
	return b
}

func decodeRegionInfo(b []byte) RegionInfo {
	r := RegionInfo{
		Index:  int(ne.Uint32(b[8:])),
		Flags:  ne.Uint32(b[4:]),
		Size:   ne.Uint64(b[16:]),
		Offset: ne.Uint64(b[24:]),
	}
	if r.Flags&RegionFlagCaps == 0 || len(b) <= sizeRegionInfo {
		return r
	}
	capChain(b, ne.Uint32(b[12:]), func(id, _ uint16, body []byte) {
		switch id {
		case regionCapSparseMmap:
			// header, u32 nr_areas @8, u32 reserved, areas {u64 offset, u64 size} @16
			if len(body) < 16 {
				return
			}
			n := int(ne.Uint32(body[8:]))
			r.Sparse = []Area{}
			for i := 0; i < n && 16+16*i+16 <= len(body); i++ {
				r.Sparse = append(r.Sparse, Area{ne.Uint64(body[16+16*i:]), ne.Uint64(body[24+16*i:])})
			}
		case regionCapType:
			// header, u32 type @8, u32 subtype @12
			if len(body) >= 16 {
				r.HasType, r.Type, r.Subtype = true, ne.Uint32(body[8:]), ne.Uint32(body[12:])
			}
		}
	})
	return r
}

// ReadRegion reads len(p) bytes at off within region index (pread on the
// device file). Config space (RegionConfig) is read this way.
func (d *Device) ReadRegion(index int, off uint64, p []byte) error {
	return d.rw("read", index, off, p, unix.Pread)
}

// WriteRegion writes p at off within region index (pwrite).
func (d *Device) WriteRegion(index int, off uint64, p []byte) error {
	return d.rw("write", index, off, p, unix.Pwrite)
}

func (d *Device) rw(what string, index int, off uint64, p []byte, fn func(int, []byte, int64) (int, error)) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, err := d.regionInfo(index)
	if err != nil {
		return err
	}
	obj := fmt.Sprintf("%s region %d [%#x, +%d)", d.name, index, off, len(p))
	if off > r.Size || uint64(len(p)) > r.Size-off {
		return invalid(what, obj, "beyond the region's %#x bytes", r.Size)
	}
	if (what == "read" && !r.Readable()) || (what == "write" && !r.Writable()) {
		return opErr(what, obj, fmt.Errorf("%w: the region is not %sable", ErrUnsupported, what))
	}
	for done := 0; done < len(p); {
		n, err := fn(d.fd, p[done:], int64(r.Offset+off)+int64(done))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return opErr(what, obj, err)
		}
		if n == 0 {
			return opErr(what, obj, fmt.Errorf("short %s: %d of %d bytes", what, done, len(p)))
		}
		done += n
	}
	return nil
}

// IRQInfo describes one interrupt index (VFIO_DEVICE_GET_IRQ_INFO).
type IRQInfo struct {
	Index int
	Flags uint32
	Count int // vectors; 0: the device does not have this kind
}

// EventFD reports that the index signals through eventfds.
func (i IRQInfo) EventFD() bool { return i.Flags&IRQFlagEventFD != 0 }

// Automasked reports that the kernel masks the line after each interrupt
// (level-triggered INTx): call IRQ.Unmask after handling it.
func (i IRQInfo) Automasked() bool { return i.Flags&IRQFlagAutomasked != 0 }

// IRQInfo queries interrupt index.
func (d *Device) IRQInfo(index int) (IRQInfo, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.irqInfo(index)
}

func (d *Device) irqInfo(index int) (IRQInfo, error) {
	const op = "VFIO_DEVICE_GET_IRQ_INFO"
	if err := d.live(op); err != nil {
		return IRQInfo{}, err
	}
	if index < 0 || index >= d.info.NumIRQs {
		return IRQInfo{}, invalid(op, d.name, "interrupt index %d: the device has indexes 0 to %d", index, d.info.NumIRQs-1)
	}
	// struct vfio_irq_info: argsz, flags, index @8, count @12.
	b := argsz(sizeIRQInfo, 0)
	ne.PutUint32(b[8:], uint32(index))
	if _, err := ioctl(d.fd, ioctlDeviceGetIRQInfo, b, 0); err != nil {
		return IRQInfo{}, opErr(op, fmt.Sprintf("%s index %d", d.name, index), err)
	}
	return IRQInfo{Index: int(ne.Uint32(b[8:])), Flags: ne.Uint32(b[4:]), Count: int(ne.Uint32(b[12:]))}, nil
}

// Reset resets the device (VFIO_DEVICE_RESET). ErrUnsupported when the
// device offers no reset method (Info().CanReset() is false).
func (d *Device) Reset() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.live("VFIO_DEVICE_RESET"); err != nil {
		return err
	}
	if !d.info.CanReset() {
		return opErr("VFIO_DEVICE_RESET", d.name, fmt.Errorf("%w: the device offers no reset method", ErrUnsupported))
	}
	if _, err := ioctl(d.fd, ioctlDeviceReset, nil, 0); err != nil {
		return opErr("VFIO_DEVICE_RESET", d.name, err)
	}
	return nil
}

// Close disables the device's interrupts, unmaps its regions and closes it.
func (d *Device) Close() error {
	d.mu.Lock()
	if d.fd < 0 {
		d.mu.Unlock()
		return nil
	}
	irqs, mmios := slices.Clone(d.irqs), slices.Clone(d.mmios)
	d.mu.Unlock()
	var errs []error
	for _, q := range irqs {
		if err := q.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, m := range mmios {
		if err := m.Unmap(); err != nil {
			errs = append(errs, err)
		}
	}
	d.mu.Lock()
	if err := unix.Close(d.fd); err != nil {
		errs = append(errs, opErr("close", d.name, err))
	}
	d.fd = -1
	d.mu.Unlock()
	d.group.removeDevice(d)
	return errors.Join(errs...)
}
