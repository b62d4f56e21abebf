package vfio

import (
	"fmt"
	"os"
	"slices"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/daqiri-go/daqiri/internal/iomem"
)

// MMIO is a device region mapped into the process: register access with
// exact widths.
//
// Each access is one load or store of the stated width (internal/iomem), made
// in an assembly function, so the compiler can neither merge, split, reorder
// across calls nor drop repeated accesses (it would be free to with plain
// memory). Stores are plain stores, not atomic read-modify-write
// instructions, since a locked RMW would read the register too.
type MMIO struct {
	mu     sync.Mutex
	mem    []byte
	dev    *Device
	region int
}

// MapRegion mmaps region index of the device (a BAR) for register access.
// The region must be mappable and not sparse (MapRegion refuses regions whose
// mappable parts are restricted, such as a BAR holding an MSI-X table).
func (d *Device) MapRegion(index int) (*MMIO, error) {
	const op = "mmap region"
	d.mu.Lock()
	defer d.mu.Unlock()
	r, err := d.regionInfo(index)
	if err != nil {
		return nil, err
	}
	obj := fmt.Sprintf("%s region %d", d.name, index)
	switch {
	case r.Size == 0:
		return nil, opErr(op, obj, fmt.Errorf("%w: the region is not implemented", ErrNotFound))
	case !r.Mappable():
		return nil, opErr(op, obj, fmt.Errorf("%w: the region cannot be mmap'd (flags %#x); use ReadRegion/WriteRegion", ErrUnsupported, r.Flags))
	case r.Sparse != nil:
		return nil, opErr(op, obj, fmt.Errorf("%w: only parts of the region may be mmap'd: %v", ErrUnsupported, r.Sparse))
	case r.Size > 1<<40:
		return nil, opErr(op, obj, fmt.Errorf("%w: size %#x", ErrInvalid, r.Size))
	}
	size := int((r.Size + uint64(os.Getpagesize()) - 1) &^ uint64(os.Getpagesize()-1))
	prot := unix.PROT_READ
	if r.Writable() {
		prot |= unix.PROT_WRITE
	}
	mem, err := unix.Mmap(d.fd, int64(r.Offset), size, prot, unix.MAP_SHARED)
	if err != nil {
		return nil, opErr(op, obj, err)
	}
	m := &MMIO{mem: mem[:r.Size], dev: d, region: index}
	d.mmios = append(d.mmios, m)
	return m, nil
}

// Len is the region's size in bytes.
func (m *MMIO) Len() int { return len(m.mem) }

// at checks an access of width bytes at off: inside the region and naturally aligned. A
// bad offset is a programming error, reported as a panic like an out-of-range slice index.
func (m *MMIO) at(off, width int) []byte {
	if off < 0 || off > len(m.mem)-width || off%width != 0 {
		panic(fmt.Sprintf("vfio: MMIO access of %d bytes at %#x: outside the %#x-byte region %d or misaligned", width, off, len(m.mem), m.region))
	}
	return m.mem[off : off+width]
}

// Read32 loads the 32-bit register at off.
func (m *MMIO) Read32(off int) uint32 { return iomem.Load32((*[4]byte)(m.at(off, 4))) }

// Write32 stores v in the 32-bit register at off.
func (m *MMIO) Write32(off int, v uint32) { iomem.Store32((*[4]byte)(m.at(off, 4)), v) }

// Read64 loads the 64-bit register at off.
func (m *MMIO) Read64(off int) uint64 { return iomem.Load64((*[8]byte)(m.at(off, 8))) }

// Write64 stores v in the 64-bit register at off.
func (m *MMIO) Write64(off int, v uint64) { iomem.Store64((*[8]byte)(m.at(off, 8)), v) }

// Unmap releases the mapping; the MMIO must not be used afterwards.
func (m *MMIO) Unmap() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mem == nil {
		return nil
	}
	err := unix.Munmap(m.mem[:cap(m.mem)])
	m.mem = nil
	if m.dev != nil {
		d := m.dev
		d.mu.Lock()
		d.mmios = slices.DeleteFunc(d.mmios, func(x *MMIO) bool { return x == m })
		d.mu.Unlock()
	}
	return opErr("munmap region", fmt.Sprint(m.region), err)
}
