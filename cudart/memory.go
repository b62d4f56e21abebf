package cudart

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"github.com/daqiri-go/daqiri/internal/dynlib"
)

// Flag and enum values from cuda.h (CUDA 12.6): CU_MEMHOSTALLOC_* lines 3010-3025,
// CU_MEMHOSTREGISTER_* lines 3031-3064, CUpointer_attribute lines 867-886, CUmemorytype
// lines 1070-1073, CUmemRangeHandleType line 3937.
const (
	memHostAllocPortable     = 0x1 // CU_MEMHOSTALLOC_PORTABLE: pinned for every context
	memHostAllocDeviceMap    = 0x2 // CU_MEMHOSTALLOC_DEVICEMAP: mapped into the GPU's address space
	memHostRegisterPortable  = 0x1 // CU_MEMHOSTREGISTER_PORTABLE
	memHostRegisterDeviceMap = 0x2 // CU_MEMHOSTREGISTER_DEVICEMAP

	pointerAttrMemoryType    = 2 // CU_POINTER_ATTRIBUTE_MEMORY_TYPE
	pointerAttrSyncMemops    = 6 // CU_POINTER_ATTRIBUTE_SYNC_MEMOPS
	pointerAttrDeviceOrdinal = 9 // CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL

	memRangeHandleTypeDMABufFD = 1 // CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD
)

// DevicePtr is a GPU virtual address (CUdeviceptr).
type DevicePtr uint64

// String formats the address in hex.
func (p DevicePtr) String() string { return fmt.Sprintf("%#x", uint64(p)) }

// DeviceMem is device memory from AllocDevice: the CPU cannot address it, so Bytes is nil.
// It has the shape of a memory region's backing store (Bytes, Addr, Close).
type DeviceMem struct {
	dev     *Device
	ptr     DevicePtr
	size    int
	ownsDev bool // Close also closes dev (Driver.AllocDevice)
}

// AllocDevice allocates size bytes of device memory (cuMemAlloc) and sets
// CU_POINTER_ATTRIBUTE_SYNC_MEMOPS on it, which GPUDirect RDMA requires so that synchronous
// copies and the NIC's DMA into the buffer are ordered. The contents are undefined. For
// DMA-BUF export make size a multiple of the host page size.
func (dev *Device) AllocDevice(size int) (*DeviceMem, error) {
	if size <= 0 {
		return nil, fmt.Errorf("cudart: device allocation of %d bytes: size must be > 0", size)
	}
	if err := dev.bind(); err != nil {
		return nil, err
	}
	defer dev.unbind()
	var p DevicePtr
	if err := dev.d.checkf(dynlib.Call(dev.d.f.cuMemAlloc, uintptr(unsafe.Pointer(&p)), uintptr(size)),
		"cuMemAlloc(%d bytes, GPU %d)", size, dev.ordinal); err != nil {
		return nil, err
	}
	one := uint32(1)
	if err := dev.d.checkf(dynlib.Call(dev.d.f.cuPointerSetAttribute, uintptr(unsafe.Pointer(&one)), pointerAttrSyncMemops, uintptr(p)),
		"cuPointerSetAttribute(SYNC_MEMOPS, %v)", p); err != nil {
		dynlib.Call(dev.d.f.cuMemFree, uintptr(p))
		return nil, err
	}
	return &DeviceMem{dev: dev, ptr: p, size: size}, nil
}

// Ptr is the device address of the first byte.
func (m *DeviceMem) Ptr() DevicePtr { return m.ptr }

// Size is the allocation's length in bytes.
func (m *DeviceMem) Size() int { return m.size }

// Bytes is nil: device memory has no CPU view.
func (m *DeviceMem) Bytes() []byte { return nil }

// Addr is the device address as a uintptr (for code that handles host and device regions
// alike).
func (m *DeviceMem) Addr() uintptr { return uintptr(m.ptr) }

// Device is the GPU the memory lives on.
func (m *DeviceMem) Device() *Device { return m.dev }

// Close frees the memory (cuMemFree), and for memory from Driver.AllocDevice releases its
// Device. It is idempotent.
func (m *DeviceMem) Close() error {
	if m.ptr == 0 {
		return nil
	}
	p := m.ptr
	m.ptr = 0
	err := m.dev.Do(func() error {
		return m.dev.d.checkf(dynlib.Call(m.dev.d.f.cuMemFree, uintptr(p)), "cuMemFree(%v)", p)
	})
	if m.ownsDev {
		err = errors.Join(err, m.dev.Close())
	}
	return err
}

// HostMem is page-locked host memory visible to the GPU: either allocated by AllocHostPinned
// or existing memory registered by RegisterHost. The CPU uses Bytes; kernels and copies use
// DevicePtr.
type HostMem struct {
	dev        *Device
	b          []byte
	dptr       DevicePtr
	registered bool // Close unregisters (RegisterHost) rather than frees (AllocHostPinned)
	ownsDev    bool // Close also closes dev (Driver.AllocHostPinned, Driver.RegisterHost)
}

// AllocHostPinned allocates size bytes of page-locked host memory, portable to every context
// and mapped into the GPU's address space (cuMemHostAlloc with PORTABLE|DEVICEMAP), then looks
// up its device address (cuMemHostGetDevicePointer). The contents are undefined.
func (dev *Device) AllocHostPinned(size int) (*HostMem, error) {
	if size <= 0 {
		return nil, fmt.Errorf("cudart: host-pinned allocation of %d bytes: size must be > 0", size)
	}
	if err := dev.bind(); err != nil {
		return nil, err
	}
	defer dev.unbind()
	// The driver stores a pointer to C-allocated memory in p; the Go collector ignores
	// pointers outside its heap, so holding it in an unsafe.Pointer is safe.
	var p unsafe.Pointer
	if err := dev.d.checkf(dynlib.Call(dev.d.f.cuMemHostAlloc, uintptr(unsafe.Pointer(&p)), uintptr(size), memHostAllocPortable|memHostAllocDeviceMap),
		"cuMemHostAlloc(%d bytes, PORTABLE|DEVICEMAP, GPU %d)", size, dev.ordinal); err != nil {
		return nil, err
	}
	h := &HostMem{dev: dev, b: unsafe.Slice((*byte)(p), size)}
	if err := h.lookupDevicePtr(); err != nil {
		dynlib.Call(dev.d.f.cuMemFreeHost, uintptr(p))
		return nil, err
	}
	return h, nil
}

// RegisterHost page-locks existing host memory and maps it for the GPU
// (cuMemHostRegister with PORTABLE|DEVICEMAP), e.g. a hugepage mapping from package hugepage.
// b must be memory the Go collector does not manage (mmap'd), and must stay mapped until the
// returned HostMem is closed; Close unregisters it but does not unmap it.
func (dev *Device) RegisterHost(b []byte) (*HostMem, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("cudart: cannot register an empty host buffer")
	}
	if err := dev.bind(); err != nil {
		return nil, err
	}
	defer dev.unbind()
	p := unsafe.Pointer(unsafe.SliceData(b))
	if err := dev.d.checkf(dynlib.Call(dev.d.f.cuMemHostRegister, uintptr(p), uintptr(len(b)), memHostRegisterPortable|memHostRegisterDeviceMap),
		"cuMemHostRegister(%p, %d bytes, PORTABLE|DEVICEMAP, GPU %d)", p, len(b), dev.ordinal); err != nil {
		return nil, err
	}
	h := &HostMem{dev: dev, b: b, registered: true}
	if err := h.lookupDevicePtr(); err != nil {
		dynlib.Call(dev.d.f.cuMemHostUnregister, uintptr(p))
		return nil, err
	}
	return h, nil
}

// lookupDevicePtr fills h.dptr; the caller holds the context.
func (h *HostMem) lookupDevicePtr() error {
	p := unsafe.Pointer(unsafe.SliceData(h.b))
	// Flags must be 0 (cuda.h, cuMemHostGetDevicePointer).
	return h.dev.d.checkf(dynlib.Call(h.dev.d.f.cuMemHostGetDevicePointer, uintptr(unsafe.Pointer(&h.dptr)), uintptr(p), 0),
		"cuMemHostGetDevicePointer(%p)", p)
}

// Bytes is the CPU view of the memory; it must not be used after Close.
func (h *HostMem) Bytes() []byte { return h.b }

// Addr is the host virtual address of the first byte.
func (h *HostMem) Addr() uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(h.b))) }

// DevicePtr is the address at which GPU kernels and copies reach the same bytes. It may differ
// from Addr for registered memory (see Info.HostPointerForReg).
func (h *HostMem) DevicePtr() DevicePtr { return h.dptr }

// Size is the length in bytes.
func (h *HostMem) Size() int { return len(h.b) }

// Registered reports whether the memory came from RegisterHost (Close unregisters) rather
// than AllocHostPinned (Close frees).
func (h *HostMem) Registered() bool { return h.registered }

// Device is the GPU whose context pinned the memory.
func (h *HostMem) Device() *Device { return h.dev }

// Close frees pinned memory (cuMemFreeHost) or unregisters registered memory
// (cuMemHostUnregister), and for memory from the Driver methods releases its Device. It is
// idempotent.
func (h *HostMem) Close() error {
	if h.b == nil {
		return nil
	}
	p := unsafe.Pointer(unsafe.SliceData(h.b))
	h.b, h.dptr = nil, 0
	err := h.dev.Do(func() error {
		if h.registered {
			return h.dev.d.checkf(dynlib.Call(h.dev.d.f.cuMemHostUnregister, uintptr(p)), "cuMemHostUnregister(%p)", p)
		}
		return h.dev.d.checkf(dynlib.Call(h.dev.d.f.cuMemFreeHost, uintptr(p)), "cuMemFreeHost(%p)", p)
	})
	if h.ownsDev {
		err = errors.Join(err, h.dev.Close())
	}
	return err
}

// The Driver-level allocators below serve code that sizes memory regions: each allocation
// retains GPU ordinal's primary context for itself and releases it in Close, so the caller
// keeps no Device around.

// AllocDevice allocates size bytes of device memory on GPU ordinal (a region of kind
// "device" with that affinity); see Device.AllocDevice.
func (d *Driver) AllocDevice(ordinal, size int) (*DeviceMem, error) {
	dev, err := d.Device(ordinal)
	if err != nil {
		return nil, err
	}
	m, err := dev.AllocDevice(size)
	if err != nil {
		return nil, errors.Join(err, dev.Close())
	}
	m.ownsDev = true
	return m, nil
}

// AllocHostPinned allocates size bytes of host-pinned memory mapped for GPU ordinal (a region
// of kind "host_pinned" with that affinity); see Device.AllocHostPinned.
func (d *Driver) AllocHostPinned(ordinal, size int) (*HostMem, error) {
	dev, err := d.Device(ordinal)
	if err != nil {
		return nil, err
	}
	h, err := dev.AllocHostPinned(size)
	if err != nil {
		return nil, errors.Join(err, dev.Close())
	}
	h.ownsDev = true
	return h, nil
}

// RegisterHost registers existing (hugepage) memory for GPU ordinal; see Device.RegisterHost.
func (d *Driver) RegisterHost(ordinal int, b []byte) (*HostMem, error) {
	dev, err := d.Device(ordinal)
	if err != nil {
		return nil, err
	}
	h, err := dev.RegisterHost(b)
	if err != nil {
		return nil, errors.Join(err, dev.Close())
	}
	h.ownsDev = true
	return h, nil
}

// checkDMABufRange rejects ranges cuMemGetHandleForAddressRange would refuse: both ends must
// be aligned to the host page size (cuda.h, its documentation).
func checkDMABufRange(ptr DevicePtr, size, page int) error {
	if ptr == 0 {
		return fmt.Errorf("cudart: DMA-BUF export of a nil device pointer")
	}
	if size <= 0 {
		return fmt.Errorf("cudart: DMA-BUF export of %d bytes: size must be > 0", size)
	}
	if uint64(ptr)%uint64(page) != 0 || size%page != 0 {
		return fmt.Errorf("cudart: DMA-BUF export of %d bytes at %v: address and size must be multiples of the %d-byte host page size", size, ptr, page)
	}
	return nil
}

// ExportDMABuf returns a DMA-BUF file descriptor for size bytes of device memory at ptr
// (cuMemGetHandleForAddressRange, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD), for registering GPU
// memory with a NIC (ibv_reg_dmabuf_mr). ptr and size must be host-page aligned and lie in
// one AllocDevice allocation. The caller owns the fd and closes it; the memory must outlive
// every registration made from it. Check Info.DMABuf first: unsupported platforms fail with
// ResultNotSupported.
func (dev *Device) ExportDMABuf(ptr DevicePtr, size int) (int, error) {
	if err := checkDMABufRange(ptr, size, os.Getpagesize()); err != nil {
		return -1, err
	}
	if dev.d.f.cuMemGetHandleForAddressRange == 0 {
		return -1, fmt.Errorf("cudart: DMA-BUF export needs cuMemGetHandleForAddressRange (CUDA 11.7+ driver); %s lacks it", libcuda.Name())
	}
	if err := dev.bind(); err != nil {
		return -1, err
	}
	defer dev.unbind()
	// The handle is a C int. Storage is 8 bytes, initialised to -1, so a driver writing
	// either width leaves a readable value in the low half.
	fd := [2]int32{-1, -1}
	if err := dev.d.checkf(dynlib.Call(dev.d.f.cuMemGetHandleForAddressRange, uintptr(unsafe.Pointer(&fd[0])), uintptr(ptr), uintptr(size), memRangeHandleTypeDMABufFD, 0),
		"cuMemGetHandleForAddressRange(%v, %d bytes, DMA_BUF_FD)", ptr, size); err != nil {
		return -1, err
	}
	if fd[0] < 0 {
		return -1, fmt.Errorf("cudart: cuMemGetHandleForAddressRange(%v, %d bytes) succeeded but returned fd %d", ptr, size, fd[0])
	}
	// The buffer is named after the range it exports, so that an importer in this process
	// (the ConnectX device model standing in for a NIC) can resolve the fd to the allocation
	// as a kernel importer resolves it to the exporter's object. Best effort: a kernel
	// without DMA_BUF_SET_NAME (before 5.7) leaves the buffer unnamed, which registers
	// with a NIC all the same.
	setDMABufName(int(fd[0]), DMABufName(dev.ordinal, ptr))
	return int(fd[0]), nil
}

// DMABufName is the name ExportDMABuf gives the DMA-BUF of the range at ptr on GPU ordinal
// (the kernel shows it in the fd's link, /dmabuf:NAME, and its fdinfo). It fits the kernel's
// 32-byte DMA_BUF_NAME_LEN.
func DMABufName(ordinal int, ptr DevicePtr) string {
	return fmt.Sprintf("cuda:%d:%#x", ordinal, uint64(ptr))
}

// ParseDMABufName parses a DMABufName.
func ParseDMABufName(name string) (ordinal int, ptr DevicePtr, ok bool) {
	var p uint64
	if n, err := fmt.Sscanf(name, "cuda:%d:%v", &ordinal, &p); err != nil || n != 2 || ordinal < 0 || p == 0 || name != DMABufName(ordinal, DevicePtr(p)) {
		return 0, 0, false
	}
	return ordinal, DevicePtr(p), true
}

// AddressRange is the allocation that holds ptr (cuMemGetAddressRange): its first address and
// size. An address in no allocation (never allocated, or freed) is an error.
func (dev *Device) AddressRange(ptr DevicePtr) (base DevicePtr, size int, err error) {
	if err := dev.bind(); err != nil {
		return 0, 0, err
	}
	defer dev.unbind()
	var n uint64
	if err := dev.d.checkf(dynlib.Call(dev.d.f.cuMemGetAddressRange, uintptr(unsafe.Pointer(&base)), uintptr(unsafe.Pointer(&n)), uintptr(ptr)),
		"cuMemGetAddressRange(%v)", ptr); err != nil {
		return 0, 0, err
	}
	return base, int(n), nil
}

// MemoryType is a CUmemorytype: where the memory behind an address lives.
type MemoryType int

// Memory types (cuda.h, CUmemorytype). MemoryUnregistered is this package's own value for an
// address CUDA knows nothing about (ordinary pageable host memory).
const (
	MemoryUnregistered MemoryType = 0
	MemoryHost         MemoryType = 1 // CU_MEMORYTYPE_HOST: pinned or registered host memory
	MemoryDevice       MemoryType = 2 // CU_MEMORYTYPE_DEVICE
	MemoryArray        MemoryType = 3 // CU_MEMORYTYPE_ARRAY
	MemoryUnified      MemoryType = 4 // CU_MEMORYTYPE_UNIFIED (managed)
)

// String names the memory type.
func (t MemoryType) String() string {
	switch t {
	case MemoryUnregistered:
		return "unregistered"
	case MemoryHost:
		return "host"
	case MemoryDevice:
		return "device"
	case MemoryArray:
		return "array"
	case MemoryUnified:
		return "unified"
	}
	return fmt.Sprintf("MemoryType(%d)", int(t))
}

// PointerInfo is what the driver knows about an address.
type PointerInfo struct {
	Type    MemoryType
	Ordinal int // GPU the memory was allocated or registered on; -1 when Type is MemoryUnregistered
}

// PointerInfo tells device memory from host memory (cuPointerGetAttribute with MEMORY_TYPE
// and DEVICE_ORDINAL). An address the driver does not know (pageable host memory) gives
// MemoryUnregistered and no error. It relies on unified addressing (every 64-bit platform the
// driver supports) and needs no current context.
func (d *Driver) PointerInfo(addr uintptr) (PointerInfo, error) {
	if addr == 0 {
		return PointerInfo{}, fmt.Errorf("cudart: PointerInfo of a nil address")
	}
	// Both attributes are 4-byte values (an enum, an int); 8 bytes of zeroed storage keeps the
	// read correct whatever width the driver writes.
	var v uint64
	r := Result(int32(uint32(dynlib.Call(d.f.cuPointerGetAttribute, uintptr(unsafe.Pointer(&v)), pointerAttrMemoryType, addr))))
	if r == ResultInvalidValue {
		// The documented answer for a pointer CUDA did not allocate or register.
		return PointerInfo{Type: MemoryUnregistered, Ordinal: -1}, nil
	}
	if r != ResultSuccess {
		return PointerInfo{}, d.newError(r, fmt.Sprintf("cuPointerGetAttribute(MEMORY_TYPE, %#x)", addr))
	}
	info := PointerInfo{Type: MemoryType(uint32(v))}
	v = 0
	if err := d.checkf(dynlib.Call(d.f.cuPointerGetAttribute, uintptr(unsafe.Pointer(&v)), pointerAttrDeviceOrdinal, addr),
		"cuPointerGetAttribute(DEVICE_ORDINAL, %#x)", addr); err != nil {
		return PointerInfo{}, err
	}
	info.Ordinal = int(int32(uint32(v)))
	return info, nil
}
