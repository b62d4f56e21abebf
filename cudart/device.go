package cudart

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/daqiri-go/daqiri/internal/dynlib"
)

// Attribute is a CUdevice_attribute. The values below are from cuda.h (CUDA 12.6, enum
// CUdevice_attribute_enum, lines 702-841); any other value from that enum may be passed to
// Device.Attribute as Attribute(n).
type Attribute int32

// Device attributes packet I/O cares about.
const (
	AttrMaxThreadsPerBlock                Attribute = 1   // CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK
	AttrMaxBlockDimX                      Attribute = 2   // CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X
	AttrMaxGridDimX                       Attribute = 5   // CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X
	AttrWarpSize                          Attribute = 10  // CU_DEVICE_ATTRIBUTE_WARP_SIZE
	AttrMultiprocessorCount               Attribute = 16  // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
	AttrIntegrated                        Attribute = 18  // CU_DEVICE_ATTRIBUTE_INTEGRATED: shares physical memory with the host
	AttrCanMapHostMemory                  Attribute = 19  // CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY
	AttrPCIBusID                          Attribute = 33  // CU_DEVICE_ATTRIBUTE_PCI_BUS_ID
	AttrPCIDeviceID                       Attribute = 34  // CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID
	AttrUnifiedAddressing                 Attribute = 41  // CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING
	AttrPCIDomainID                       Attribute = 50  // CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID
	AttrComputeCapabilityMajor            Attribute = 75  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
	AttrComputeCapabilityMinor            Attribute = 76  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
	AttrPageableMemoryAccess              Attribute = 88  // CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS
	AttrCanUseHostPointerForRegisteredMem Attribute = 91  // CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM
	AttrHostRegisterSupported             Attribute = 99  // CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED
	AttrGPUDirectRDMASupported            Attribute = 116 // CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED
	AttrGPUDirectRDMAFlushWritesOptions   Attribute = 117 // CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS
	AttrGPUDirectRDMAWritesOrdering       Attribute = 118 // CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING
	AttrDMABufSupported                   Attribute = 124 // CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED
	AttrNUMAID                            Attribute = 131 // CU_DEVICE_ATTRIBUTE_NUMA_ID (CUDA 12.2+)
	AttrHostNUMAID                        Attribute = 134 // CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID (CUDA 12.2+): -1 without NUMA
)

// Device is one GPU with its primary context retained. Get one with Driver.Device and Close it
// when done; Close releases the context reference, and when the last reference goes the
// driver frees everything still allocated in it.
type Device struct {
	d       *Driver
	ordinal int
	dev     int32   // CUdevice
	ctx     uintptr // CUcontext of the primary context; 0 after Close
}

// Device retains GPU ordinal's primary context (cuDeviceGet, cuDevicePrimaryCtxRetain). Each
// call takes a reference of its own, released by that Device's Close.
func (d *Driver) Device(ordinal int) (*Device, error) {
	n, err := d.DeviceCount()
	if err != nil {
		return nil, err
	}
	if ordinal < 0 || ordinal >= n {
		return nil, fmt.Errorf("cudart: GPU ordinal %d out of range: %d CUDA device(s) visible", ordinal, n)
	}
	dev := &Device{d: d, ordinal: ordinal}
	if err := d.checkf(dynlib.Call(d.f.cuDeviceGet, uintptr(unsafe.Pointer(&dev.dev)), uintptr(ordinal)), "cuDeviceGet(%d)", ordinal); err != nil {
		return nil, err
	}
	if err := d.checkf(dynlib.Call(d.f.cuDevicePrimaryCtxRetain, uintptr(unsafe.Pointer(&dev.ctx)), uintptr(dev.dev)), "cuDevicePrimaryCtxRetain(GPU %d)", ordinal); err != nil {
		return nil, err
	}
	return dev, nil
}

// Ordinal is the GPU's index among the visible CUDA devices (the `affinity` of a memory
// region).
func (dev *Device) Ordinal() int { return dev.ordinal }

// Driver is the driver this device came from.
func (dev *Device) Driver() *Driver { return dev.d }

// Close releases this Device's reference to the primary context. Free memory, streams,
// events and modules first: when the last reference is released the driver destroys the
// context and everything in it. Close is idempotent.
func (dev *Device) Close() error {
	if dev.ctx == 0 {
		return nil
	}
	dev.ctx = 0
	return dev.d.checkf(dynlib.Call(dev.d.f.cuDevicePrimaryCtxRelease, uintptr(dev.dev)), "cuDevicePrimaryCtxRelease(GPU %d)", dev.ordinal)
}

// bind locks the goroutine to its OS thread and makes the primary context current there.
// Every successful bind must be paired with unbind.
func (dev *Device) bind() error {
	if dev.ctx == 0 {
		return ErrClosed
	}
	runtime.LockOSThread()
	if err := dev.d.check(dynlib.Call(dev.d.f.cuCtxSetCurrent, dev.ctx), "cuCtxSetCurrent(primary context)"); err != nil {
		runtime.UnlockOSThread()
		return err
	}
	return nil
}

func (dev *Device) unbind() { runtime.UnlockOSThread() }

// Do runs fn on one OS thread with this device's primary context current, for calling other
// libraries that act on the current context (cuFile, for one). fn must not start goroutines
// that expect the context.
func (dev *Device) Do(fn func() error) error {
	if err := dev.bind(); err != nil {
		return err
	}
	defer dev.unbind()
	return fn()
}

// Synchronize waits until all work queued in the device's primary context has finished
// (cuCtxSynchronize), on every stream.
func (dev *Device) Synchronize() error {
	if err := dev.bind(); err != nil {
		return err
	}
	defer dev.unbind()
	return dev.d.check(dynlib.Call(dev.d.f.cuCtxSynchronize), "cuCtxSynchronize")
}

// Attribute returns one device attribute (cuDeviceGetAttribute; needs no context).
func (dev *Device) Attribute(a Attribute) (int, error) {
	var v int32
	if err := dev.d.checkf(dynlib.Call(dev.d.f.cuDeviceGetAttribute, uintptr(unsafe.Pointer(&v)), uintptr(a), uintptr(dev.dev)),
		"cuDeviceGetAttribute(attribute %d, GPU %d)", int32(a), dev.ordinal); err != nil {
		return 0, err
	}
	return int(v), nil
}

// Name is the product name, e.g. "NVIDIA H100 80GB HBM3" (cuDeviceGetName; needs no context).
func (dev *Device) Name() (string, error) {
	buf := make([]byte, 256)
	if err := dev.d.checkf(dynlib.Call(dev.d.f.cuDeviceGetName, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), uintptr(dev.dev)),
		"cuDeviceGetName(GPU %d)", dev.ordinal); err != nil {
		return "", err
	}
	return dynlib.TrimNUL(buf), nil
}

// PCIBusID is the GPU's PCI address in domain:bus:device.function form, e.g.
// "0000:17:00.0" (cuDeviceGetPCIBusId; needs no context).
func (dev *Device) PCIBusID() (string, error) {
	// The driver documents 13 bytes as enough ("0000:00:00.0" plus NUL); more is harmless.
	buf := make([]byte, 64)
	if err := dev.d.checkf(dynlib.Call(dev.d.f.cuDeviceGetPCIBusId, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), uintptr(dev.dev)),
		"cuDeviceGetPCIBusId(GPU %d)", dev.ordinal); err != nil {
		return "", err
	}
	return dynlib.TrimNUL(buf), nil
}

// TotalMem is the device's memory size in bytes (cuDeviceTotalMem; needs no context).
func (dev *Device) TotalMem() (uint64, error) {
	var n uintptr
	if err := dev.d.checkf(dynlib.Call(dev.d.f.cuDeviceTotalMem, uintptr(unsafe.Pointer(&n)), uintptr(dev.dev)), "cuDeviceTotalMem(GPU %d)", dev.ordinal); err != nil {
		return 0, err
	}
	return uint64(n), nil
}

// MemInfo is the free and total device memory in bytes as seen from the primary context
// (cuMemGetInfo).
func (dev *Device) MemInfo() (free, total uint64, err error) {
	if err := dev.bind(); err != nil {
		return 0, 0, err
	}
	defer dev.unbind()
	var f, t uintptr
	if err := dev.d.check(dynlib.Call(dev.d.f.cuMemGetInfo, uintptr(unsafe.Pointer(&f)), uintptr(unsafe.Pointer(&t))), "cuMemGetInfo"); err != nil {
		return 0, 0, err
	}
	return uint64(f), uint64(t), nil
}

// Info is a device's identity and the capabilities that decide how packet memory can be
// placed on it.
type Info struct {
	Ordinal      int
	Name         string
	PCIBusID     string // domain:bus:device.function
	ComputeMajor int
	ComputeMinor int
	SMs          int    // multiprocessors
	TotalMem     uint64 // bytes

	Integrated        bool // shares physical memory with the host (Tegra/Jetson)
	CanMapHostMemory  bool // host-pinned memory can be mapped for the GPU (DEVICEMAP)
	UnifiedAddressing bool // one virtual address space for host and device
	HostRegister      bool // cuMemHostRegister works (registering hugepage memory)
	HostPointerForReg bool // registered host memory has the same address on the device
	GPUDirectRDMA     bool // NICs can DMA into device memory (nvidia-peermem / DMA-BUF)
	DMABuf            bool // device memory can be exported as a DMA-BUF fd
}

// Info queries the device's identity and capabilities (no context needed).
func (dev *Device) Info() (Info, error) {
	in := Info{Ordinal: dev.ordinal}
	var err error
	if in.Name, err = dev.Name(); err != nil {
		return in, err
	}
	if in.PCIBusID, err = dev.PCIBusID(); err != nil {
		return in, err
	}
	if in.TotalMem, err = dev.TotalMem(); err != nil {
		return in, err
	}
	ints := []struct {
		a Attribute
		p *int
	}{
		{AttrComputeCapabilityMajor, &in.ComputeMajor},
		{AttrComputeCapabilityMinor, &in.ComputeMinor},
		{AttrMultiprocessorCount, &in.SMs},
	}
	for _, x := range ints {
		if *x.p, err = dev.Attribute(x.a); err != nil {
			return in, err
		}
	}
	flags := []struct {
		a Attribute
		p *bool
	}{
		{AttrIntegrated, &in.Integrated},
		{AttrCanMapHostMemory, &in.CanMapHostMemory},
		{AttrUnifiedAddressing, &in.UnifiedAddressing},
		{AttrHostRegisterSupported, &in.HostRegister},
		{AttrCanUseHostPointerForRegisteredMem, &in.HostPointerForReg},
		{AttrGPUDirectRDMASupported, &in.GPUDirectRDMA},
		{AttrDMABufSupported, &in.DMABuf},
	}
	for _, x := range flags {
		v, err := dev.Attribute(x.a)
		if err != nil {
			return in, err
		}
		*x.p = v != 0
	}
	return in, nil
}
