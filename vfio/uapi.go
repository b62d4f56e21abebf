package vfio

import (
	"encoding/binary"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The VFIO user ABI. Numbers and layouts: linux include/uapi/linux/vfio.h.
// Every VFIO ioctl is _IO(VFIO_TYPE, VFIO_BASE + n) with VFIO_TYPE ';' and
// VFIO_BASE 100: no size or direction is encoded, each structure starts with
// its own argsz instead.
const (
	vfioType = ';'
	vfioBase = 100

	vfioAPIVersion = 0 // VFIO_API_VERSION
)

func vfioIO(n uintptr) uintptr { return vfioType<<8 | (vfioBase + n) }

// ioctl request numbers (vfio.h: VFIO_* = _IO(VFIO_TYPE, VFIO_BASE + n)).
var (
	ioctlGetAPIVersion       = vfioIO(0)
	ioctlCheckExtension      = vfioIO(1)
	ioctlSetIOMMU            = vfioIO(2)
	ioctlGroupGetStatus      = vfioIO(3)
	ioctlGroupSetContainer   = vfioIO(4)
	ioctlGroupUnsetContainer = vfioIO(5)
	ioctlGroupGetDeviceFD    = vfioIO(6)
	ioctlDeviceGetInfo       = vfioIO(7)
	ioctlDeviceGetRegionInfo = vfioIO(8)
	ioctlDeviceGetIRQInfo    = vfioIO(9)
	ioctlDeviceSetIRQs       = vfioIO(10)
	ioctlDeviceReset         = vfioIO(11)
	ioctlIOMMUGetInfo        = vfioIO(12) // on a container; 12 is GET_PCI_HOT_RESET_INFO on a device
	ioctlIOMMUMapDMA         = vfioIO(13)
	ioctlIOMMUUnmapDMA       = vfioIO(14)
)

// Extension is an IOMMU model or feature that VFIO_CHECK_EXTENSION asks for.
type Extension uint32

// Extensions (vfio.h).
const (
	Type1IOMMU   Extension = 1  // VFIO_TYPE1_IOMMU
	Type1v2IOMMU Extension = 3  // VFIO_TYPE1v2_IOMMU: the model this package uses
	DMACCIOMMU   Extension = 4  // VFIO_DMA_CC_IOMMU: the IOMMU enforces cache coherence
	NoIOMMU      Extension = 8  // VFIO_NOIOMMU_IOMMU
	UnmapAll     Extension = 9  // VFIO_UNMAP_ALL
	UpdateVaddr  Extension = 10 // VFIO_UPDATE_VADDR
)

// Flag bits (vfio.h).
const (
	groupFlagsViable       = 1 << 0 // VFIO_GROUP_FLAGS_VIABLE
	groupFlagsContainerSet = 1 << 1 // VFIO_GROUP_FLAGS_CONTAINER_SET

	iommuInfoPgsizes = 1 << 0 // VFIO_IOMMU_INFO_PGSIZES
	iommuInfoCaps    = 1 << 1 // VFIO_IOMMU_INFO_CAPS

	iommuCapIOVARange = 1 // VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE
	iommuCapDMAAvail  = 3 // VFIO_IOMMU_TYPE1_INFO_DMA_AVAIL

	dmaMapFlagRead  = 1 << 0 // VFIO_DMA_MAP_FLAG_READ: the device may read
	dmaMapFlagWrite = 1 << 1 // VFIO_DMA_MAP_FLAG_WRITE: the device may write

	regionCapSparseMmap = 1 // VFIO_REGION_INFO_CAP_SPARSE_MMAP
	regionCapType       = 2 // VFIO_REGION_INFO_CAP_TYPE

	irqSetDataNone      = 1 << 0 // VFIO_IRQ_SET_DATA_NONE
	irqSetDataBool      = 1 << 1 // VFIO_IRQ_SET_DATA_BOOL
	irqSetDataEventFD   = 1 << 2 // VFIO_IRQ_SET_DATA_EVENTFD
	irqSetActionMask    = 1 << 3 // VFIO_IRQ_SET_ACTION_MASK
	irqSetActionUnmask  = 1 << 4 // VFIO_IRQ_SET_ACTION_UNMASK
	irqSetActionTrigger = 1 << 5 // VFIO_IRQ_SET_ACTION_TRIGGER
)

// Structure sizes (vfio.h; __aligned_u64 fields make them multiples of 8
// where they hold one).
const (
	sizeGroupStatus = 8  // struct vfio_group_status
	sizeDeviceInfo  = 24 // struct vfio_device_info (with cap_offset, pad)
	sizeRegionInfo  = 32 // struct vfio_region_info
	sizeIRQInfo     = 16 // struct vfio_irq_info
	sizeIRQSet      = 20 // struct vfio_irq_set, without data[]
	sizeIOMMUInfo   = 24 // struct vfio_iommu_type1_info
	sizeDMAMap      = 32 // struct vfio_iommu_type1_dma_map
	sizeDMAUnmap    = 24 // struct vfio_iommu_type1_dma_unmap, without data[]
	sizeCapHeader   = 8  // struct vfio_info_cap_header
)

var ne = binary.NativeEndian

// buf is an 8-byte aligned scratch buffer for one ioctl argument: the
// kernel's structures hold __aligned_u64 fields.
func newBuf(n int) []byte {
	w := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w))), len(w)*8)[:n]
}

// argsz starts a structure: argsz (its size) then flags.
func argsz(n int, flags uint32) []byte {
	b := newBuf(n)
	ne.PutUint32(b[0:], uint32(n))
	ne.PutUint32(b[4:], flags)
	return b
}

// encodeDMAMap builds struct vfio_iommu_type1_dma_map:
// argsz, flags, vaddr @8, iova @16, size @24.
func encodeDMAMap(vaddr, iova, size uint64, flags uint32) []byte {
	b := argsz(sizeDMAMap, flags)
	ne.PutUint64(b[8:], vaddr)
	ne.PutUint64(b[16:], iova)
	ne.PutUint64(b[24:], size)
	return b
}

// encodeDMAUnmap builds struct vfio_iommu_type1_dma_unmap:
// argsz, flags, iova @8, size @16 (the kernel writes back the size unmapped).
func encodeDMAUnmap(iova, size uint64) []byte {
	b := argsz(sizeDMAUnmap, 0)
	ne.PutUint64(b[8:], iova)
	ne.PutUint64(b[16:], size)
	return b
}

// encodeIRQSet builds struct vfio_irq_set: argsz, flags, index @8,
// start @12, count @16, data @20 (one s32 eventfd per vector with
// DATA_EVENTFD, one u8 per vector with DATA_BOOL, nothing with DATA_NONE).
func encodeIRQSet(flags, index, start, count uint32, data []byte) []byte {
	b := argsz(sizeIRQSet+len(data), flags)
	ne.PutUint32(b[8:], index)
	ne.PutUint32(b[12:], start)
	ne.PutUint32(b[16:], count)
	copy(b[sizeIRQSet:], data)
	return b
}

// eventfdData packs eventfds as the s32 array DATA_EVENTFD wants (-1
// de-assigns a vector).
func eventfdData(fds []int) []byte {
	b := make([]byte, 4*len(fds))
	for i, fd := range fds {
		ne.PutUint32(b[4*i:], uint32(int32(fd)))
	}
	return b
}

// capChain walks an INFO capability chain (vfio.h: struct
// vfio_info_cap_header {u16 id; u16 version; u32 next}, offsets from the
// start of the info buffer, 0 ends it). It stops at malformed links rather
// than trusting them, and after a bounded number of entries.
func capChain(b []byte, first uint32, fn func(id, version uint16, body []byte)) {
	off := first
	for i := 0; off != 0 && i < 64; i++ {
		if off < sizeCapHeader || int(off)+sizeCapHeader > len(b) {
			return
		}
		id := ne.Uint16(b[off:])
		ver := ne.Uint16(b[off+2:])
		next := ne.Uint32(b[off+4:])
		end := len(b)
		if next > off && int(next) <= len(b) {
			end = int(next)
		}
		fn(id, ver, b[off:end])
		if next <= off { // chains only go forward; anything else would loop
			return
		}
		off = next
	}
}

// ioctl runs one ioctl whose argument is a pointer to arg (nil: the
// argument is the integer val).
func ioctl(fd int, req uintptr, arg []byte, val uintptr) (uintptr, error) {
	p := val
	if arg != nil {
		p = uintptr(unsafe.Pointer(unsafe.SliceData(arg)))
	}
	defer runtime.KeepAlive(arg) // p alone does not keep the buffer alive
	var errno unix.Errno
	// EINTR: a signal arrived before the call did anything; VFIO ioctls are
	// restartable. Bounded all the same.
	for range 100 {
		var r uintptr
		r, _, errno = unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, p)
		if errno == 0 {
			return r, nil
		}
		if errno != unix.EINTR {
			break
		}
	}
	return 0, errno
}
