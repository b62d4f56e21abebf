package vfio

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ContainerPath is the VFIO container device.
const ContainerPath = "/dev/vfio/vfio"

// Container is a VFIO container (/dev/vfio/vfio): one IOMMU address space
// shared by the groups attached to it. The first attached group selects the
// Type1v2 IOMMU model; DMA mappings can be made from then on.
type Container struct {
	mu     sync.Mutex
	fd     int
	groups []*Group
	iommu  bool
	maps   []Mapping // sorted by IOVA
}

// Mapping is one DMA mapping: Size bytes of process memory at Vaddr seen by
// devices at IOVA.
type Mapping struct {
	IOVA  uint64
	Vaddr uintptr
	Size  uint64
	Perm  Perm
}

// Perm is what devices may do with mapped memory.
type Perm uint32

// Device access to mapped memory.
const (
	DeviceRead      Perm = dmaMapFlagRead  // the device may read (host → device)
	DeviceWrite     Perm = dmaMapFlagWrite // the device may write (device → host)
	DeviceReadWrite      = DeviceRead | DeviceWrite
)

// OpenContainer opens /dev/vfio/vfio and checks that it speaks VFIO API
// version 0 with the Type1v2 IOMMU model.
func OpenContainer() (*Container, error) {
	fd, err := unix.Open(ContainerPath, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, opErr("open container", ContainerPath, err)
	}
	c := &Container{fd: fd}
	v, err := ioctl(fd, ioctlGetAPIVersion, nil, 0)
	if err != nil {
		c.Close()
		return nil, opErr("VFIO_GET_API_VERSION", ContainerPath, err)
	}
	if v != vfioAPIVersion {
		c.Close()
		return nil, opErr("VFIO_GET_API_VERSION", ContainerPath, fmt.Errorf("%w: API version %d, this package speaks %d", ErrUnsupported, v, vfioAPIVersion))
	}
	if ok, err := c.CheckExtension(Type1v2IOMMU); err != nil || !ok {
		c.Close()
		if err == nil {
			err = opErr("VFIO_CHECK_EXTENSION", ContainerPath, fmt.Errorf("%w: no Type1v2 IOMMU (is vfio_iommu_type1 loaded, the IOMMU on?)", ErrUnsupported))
		}
		return nil, err
	}
	return c, nil
}

// CheckExtension asks whether the container supports an IOMMU model or
// feature. Some answers depend on the attached groups.
func (c *Container) CheckExtension(ext Extension) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd < 0 {
		return false, opErr("VFIO_CHECK_EXTENSION", ContainerPath, ErrClosed)
	}
	r, err := ioctl(c.fd, ioctlCheckExtension, nil, uintptr(ext))
	if err != nil {
		return false, opErr("VFIO_CHECK_EXTENSION", ContainerPath, err)
	}
	return r > 0, nil
}

// AddGroup attaches a group to the container (VFIO_GROUP_SET_CONTAINER);
// the first group also sets the IOMMU model to Type1v2. The group must be
// viable.
func (c *Container) AddGroup(g *Group) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd < 0 {
		return opErr("add group", ContainerPath, ErrClosed)
	}
	st, err := g.Status()
	if err != nil {
		return err
	}
	if !st.Viable {
		return opErr("add group", g.path, fmt.Errorf("%w: bind every device of IOMMU group %d to vfio-pci (or to no driver)", ErrNotViable, g.num))
	}
	if st.ContainerSet {
		return opErr("add group", g.path, fmt.Errorf("%w: the group is already in a container", ErrInUse))
	}
	fd := int32(c.fd)
	// The argument is a pointer to the container's fd (vfio.h: __s32).
	b := newBuf(4)
	ne.PutUint32(b, uint32(fd))
	if _, err := g.ioctl(ioctlGroupSetContainer, b, 0); err != nil {
		return opErr("VFIO_GROUP_SET_CONTAINER", g.path, err)
	}
	if !c.iommu {
		if _, err := ioctl(c.fd, ioctlSetIOMMU, nil, uintptr(Type1v2IOMMU)); err != nil {
			g.ioctl(ioctlGroupUnsetContainer, nil, 0)
			return opErr("VFIO_SET_IOMMU(TYPE1v2)", ContainerPath, err)
		}
		c.iommu = true
	}
	g.mu.Lock()
	g.container = c
	g.mu.Unlock()
	c.groups = append(c.groups, g)
	return nil
}

// removeGroup is called by Group.Close after VFIO_GROUP_UNSET_CONTAINER.
func (c *Container) removeGroup(g *Group) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.groups = slices.DeleteFunc(c.groups, func(x *Group) bool { return x == g })
	if len(c.groups) == 0 {
		// The kernel drops the IOMMU and every mapping with the last group.
		c.iommu = false
		c.maps = nil
	}
}

// IOMMUInfo describes the container's IOMMU.
type IOMMUInfo struct {
	PageSizes  uint64      // bitmap of supported IOMMU page sizes
	IOVARanges []IOVARange // usable IOVA ranges (nil if the kernel does not say)
	DMAAvail   int         // mappings that can still be made (-1 if unknown)
}

// IOVARange is an inclusive range of usable IOVAs.
type IOVARange struct{ Start, End uint64 }

// MinPageSize is the smallest IOMMU page size: mappings must be aligned to
// it.
func (i IOMMUInfo) MinPageSize() uint64 { return i.PageSizes & -i.PageSizes }

// IOMMUInfo queries VFIO_IOMMU_GET_INFO, with its capability chain.
func (c *Container) IOMMUInfo() (IOMMUInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.ready("VFIO_IOMMU_GET_INFO"); err != nil {
		return IOMMUInfo{}, err
	}
	b := argsz(sizeIOMMUInfo, 0)
	for range 2 { // a second call if the capabilities did not fit
		if _, err := ioctl(c.fd, ioctlIOMMUGetInfo, b, 0); err != nil {
			return IOMMUInfo{}, opErr("VFIO_IOMMU_GET_INFO", ContainerPath, err)
		}
		if need := ne.Uint32(b[0:]); int(need) > len(b) && need < 1<<20 {
			b = argsz(int(need), 0)
			continue
		}
		break
	}
	return decodeIOMMUInfo(b), nil
}

func decodeIOMMUInfo(b []byte) IOMMUInfo {
	info := IOMMUInfo{DMAAvail: -1}
	flags := ne.Uint32(b[4:])
	if flags&iommuInfoPgsizes != 0 {
		info.PageSizes = ne.Uint64(b[8:])
	}
	if flags&iommuInfoCaps == 0 {
		return info
	}
	capChain(b, ne.Uint32(b[16:]), func(id, _ uint16, body []byte) {
		switch id {
		case iommuCapIOVARange:
			// header, u32 nr_iovas @8, u32 reserved, ranges {u64 start, u64 end} @16
			if len(body) < 16 {
				return
			}
			n := int(ne.Uint32(body[8:]))
			for i := 0; i < n && 16+16*i+16 <= len(body); i++ {
				info.IOVARanges = append(info.IOVARanges, IOVARange{ne.Uint64(body[16+16*i:]), ne.Uint64(body[24+16*i:])})
			}
		case iommuCapDMAAvail:
			// header, u32 avail @8
			if len(body) >= 12 {
				info.DMAAvail = int(ne.Uint32(body[8:]))
			}
		}
	})
	return info
}

func (c *Container) ready(op string) error {
	if c.fd < 0 {
		return opErr(op, ContainerPath, ErrClosed)
	}
	if !c.iommu {
		return opErr(op, ContainerPath, fmt.Errorf("%w: no group attached yet, so no IOMMU is set", ErrInvalid))
	}
	return nil
}

// MapDMA makes mem visible to the container's devices at iova. mem must be
// memory the Go runtime does not manage — an mmap'd region (anonymous,
// hugepage, device) — that stays mapped until UnmapDMA or Close; its start,
// length and iova must be multiples of the IOMMU page size (4 KiB). The
// kernel pins the pages.
func (c *Container) MapDMA(mem []byte, iova uint64, perm Perm) error {
	const op = "VFIO_IOMMU_MAP_DMA"
	if len(mem) == 0 {
		return invalid(op, ContainerPath, "empty memory")
	}
	if perm&^DeviceReadWrite != 0 || perm == 0 {
		return invalid(op, ContainerPath, "permission %#x: want DeviceRead, DeviceWrite or both", uint32(perm))
	}
	vaddr := uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
	size := uint64(len(mem))
	page := uint64(os.Getpagesize())
	if uint64(vaddr)%page != 0 || size%page != 0 || iova%page != 0 {
		return invalid(op, ContainerPath, "vaddr %#x, size %#x, iova %#x must all be multiples of the page size %#x", vaddr, size, iova, page)
	}
	if iova+size < iova {
		return invalid(op, ContainerPath, "iova %#x + size %#x overflows", iova, size)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.ready(op); err != nil {
		return err
	}
	for _, m := range c.maps {
		if iova < m.IOVA+m.Size && m.IOVA < iova+size {
			return opErr(op, ContainerPath, fmt.Errorf("%w: [%#x, %#x) overlaps the mapping at [%#x, %#x)", ErrExists, iova, iova+size, m.IOVA, m.IOVA+m.Size))
		}
	}
	if _, err := ioctl(c.fd, ioctlIOMMUMapDMA, encodeDMAMap(uint64(vaddr), iova, size, uint32(perm)), 0); err != nil {
		return opErr(op, fmt.Sprintf("iova %#x size %#x", iova, size), err)
	}
	c.maps = append(c.maps, Mapping{IOVA: iova, Vaddr: vaddr, Size: size, Perm: perm})
	slices.SortFunc(c.maps, func(a, b Mapping) int {
		if a.IOVA < b.IOVA {
			return -1
		}
		return 1
	})
	return nil
}

// UnmapDMA removes the mapping that starts at iova; size must be the size it
// was made with.
func (c *Container) UnmapDMA(iova, size uint64) error {
	const op = "VFIO_IOMMU_UNMAP_DMA"
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.ready(op); err != nil {
		return err
	}
	i := slices.IndexFunc(c.maps, func(m Mapping) bool { return m.IOVA == iova })
	if i < 0 {
		return opErr(op, ContainerPath, fmt.Errorf("%w: no mapping starts at iova %#x", ErrNotMapped, iova))
	}
	if c.maps[i].Size != size {
		return invalid(op, ContainerPath, "the mapping at iova %#x has size %#x, not %#x", iova, c.maps[i].Size, size)
	}
	if err := c.unmap(iova, size); err != nil {
		return err
	}
	c.maps = slices.Delete(c.maps, i, i+1)
	return nil
}

func (c *Container) unmap(iova, size uint64) error {
	b := encodeDMAUnmap(iova, size)
	if _, err := ioctl(c.fd, ioctlIOMMUUnmapDMA, b, 0); err != nil {
		return opErr("VFIO_IOMMU_UNMAP_DMA", fmt.Sprintf("iova %#x size %#x", iova, size), err)
	}
	if got := ne.Uint64(b[16:]); got != size {
		return opErr("VFIO_IOMMU_UNMAP_DMA", fmt.Sprintf("iova %#x", iova), fmt.Errorf("the kernel unmapped %#x bytes, not %#x", got, size))
	}
	return nil
}

// Mappings returns the current DMA mappings, sorted by IOVA.
func (c *Container) Mappings() []Mapping {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.maps)
}

// CheckMapped returns nil if [iova, iova+n) lies inside the container's
// mappings with at least perm, or an error wrapping ErrNotMapped saying which
// byte is not covered. Drivers call it before handing an IOVA to a device, so
// that a bad address is reported here rather than as an IOMMU fault.
func (c *Container) CheckMapped(iova, n uint64, perm Perm) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return checkMapped(c.maps, iova, n, perm)
}

func checkMapped(maps []Mapping, iova, n uint64, perm Perm) error {
	if n == 0 || iova+n < iova {
		return invalid("check mapping", "", "range [%#x, +%#x) is empty or overflows", iova, n)
	}
	at, end := iova, iova+n
	for _, m := range maps { // sorted by IOVA: adjacent mappings chain
		if at >= m.IOVA && at < m.IOVA+m.Size {
			if m.Perm&perm != perm {
				return opErr("check mapping", "", fmt.Errorf("%w: iova %#x is mapped without the needed permission (%#x of %#x)", ErrNotMapped, at, uint32(m.Perm), uint32(perm)))
			}
			at = m.IOVA + m.Size
			if at >= end {
				return nil
			}
		}
	}
	return opErr("check mapping", "", fmt.Errorf("%w: iova %#x (in [%#x, %#x))", ErrNotMapped, at, iova, end))
}

// Close unmaps the container's DMA, detaches and closes its groups and
// closes it. Devices must be closed first (a group with an open device
// cannot leave its container).
func (c *Container) Close() error {
	var errs []error
	c.mu.Lock()
	if c.fd < 0 {
		c.mu.Unlock()
		return nil
	}
	if c.iommu {
		for _, m := range c.maps {
			if err := c.unmap(m.IOVA, m.Size); err != nil {
				errs = append(errs, err)
			}
		}
	}
	c.maps = nil
	groups := slices.Clone(c.groups)
	c.mu.Unlock()

	for _, g := range groups {
		if err := g.Close(); err != nil {
			errs = append(errs, err)
		}
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if err := unix.Close(c.fd); err != nil {
		errs = append(errs, opErr("close", ContainerPath, err))
	}
	c.fd = -1
	return errors.Join(errs...)
}
