// Package nvgpu reads GPU facts from NVIDIA's NVML (libnvidia-ml.so.1) and CUDA driver
// (libcuda.so.1) libraries without cgo, through github.com/ebitengine/purego. It is the only
// place in tune/ that calls into C; callers get plain Go values.
//
// Function signatures, struct layouts and enum values: NVML's nvml.h (as vendored in
// github.com/NVIDIA/go-nvml pkg/nvml/nvml.h) and the CUDA driver API's cuda.h.
package nvgpu

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
)

// ErrNoLibrary says the shared library is not installed (no NVIDIA driver on this machine).
var ErrNoLibrary = errors.New("library not found")

// Library names: the versioned sonames the driver installs (the unversioned .so links come
// only with development packages).
const (
	nvmlLib = "libnvidia-ml.so.1"
	cudaLib = "libcuda.so.1"
)

// dlopen is serialised: purego registration writes package state, and the libraries are
// loaded once per process.
var (
	loadMu sync.Mutex
	libs   = map[string]uintptr{}
)

// cString returns the NUL-terminated prefix of b.
func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// NVML (nvml.h).
const (
	nvmlSuccess      = 0
	nvmlClockSM      = 1  // NVML_CLOCK_SM
	nvmlClockMem     = 2  // NVML_CLOCK_MEM
	nvmlNameBufSize  = 96 // NVML_DEVICE_NAME_V2_BUFFER_SIZE
	nvmlMaxDevices   = 64 // far above any machine; bounds the enumeration loop
	nvmlBusIDBufSize = 32 // NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE
)

// nvmlPciInfo is nvmlPciInfo_t: busIdLegacy[16], domain, bus, device, pciDeviceId,
// pciSubSystemId (unsigned int each), busId[32]. Go lays it out as C does (no padding: all
// fields are 4-byte aligned after the 16-byte array).
type nvmlPciInfo struct {
	BusIDLegacy    [16]byte
	Domain         uint32
	Bus            uint32
	Device         uint32
	PCIDeviceID    uint32
	PCISubSystemID uint32
	BusID          [nvmlBusIDBufSize]byte
}

// nvmlBAR1Memory is nvmlBAR1Memory_t: three unsigned long long byte counts.
type nvmlBAR1Memory struct {
	Total, Free, Used uint64
}

// NVMLDevice is what NVML reports about one GPU. Values NVML could not give are -1.
type NVMLDevice struct {
	Index       int
	Name        string
	BusID       string // as NVML prints it, e.g. 00000000:17:00.0
	SMClock     int    // MHz
	SMClockMax  int    // MHz
	MemClock    int    // MHz
	MemClockMax int    // MHz
	BAR1Bytes   int64  // -1 when NVML has no BAR1 (integrated GPUs answer NOT_SUPPORTED)
}

type nvmlAPI struct {
	init       func() int32
	shutdown   func() int32
	errString  func(r int32) string
	count      func(n *uint32) int32
	byIndex    func(i uint32, dev *uintptr) int32
	name       func(dev uintptr, buf []byte, n uint32) int32
	pciInfo    func(dev uintptr, p *nvmlPciInfo) int32
	clock      func(dev uintptr, typ uint32, mhz *uint32) int32
	maxClock   func(dev uintptr, typ uint32, mhz *uint32) int32
	bar1       func(dev uintptr, m *nvmlBAR1Memory) int32
	driverVers func(buf []byte, n uint32) int32
}

// NVMLDevices enumerates GPUs through NVML. errors.Is(err, ErrNoLibrary) when NVML is not
// installed.
func NVMLDevices() ([]NVMLDevice, string, error) {
	h, err := open(nvmlLib)
	if err != nil {
		return nil, "", err
	}
	var a nvmlAPI
	if err := bind(h, nvmlLib, map[string]any{
		"nvmlInit_v2":                   &a.init,
		"nvmlShutdown":                  &a.shutdown,
		"nvmlErrorString":               &a.errString,
		"nvmlDeviceGetCount_v2":         &a.count,
		"nvmlDeviceGetHandleByIndex_v2": &a.byIndex,
		"nvmlDeviceGetName":             &a.name,
		"nvmlDeviceGetPciInfo_v3":       &a.pciInfo,
		"nvmlDeviceGetClockInfo":        &a.clock,
		"nvmlDeviceGetMaxClockInfo":     &a.maxClock,
		"nvmlDeviceGetBAR1MemoryInfo":   &a.bar1,
		"nvmlSystemGetDriverVersion":    &a.driverVers,
	}); err != nil {
		return nil, "", err
	}
	if r := a.init(); r != nvmlSuccess {
		return nil, "", fmt.Errorf("nvmlInit_v2: %s (%d)", a.errString(r), r)
	}
	defer a.shutdown()
	var driver string
	vb := make([]byte, 80) // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE
	if a.driverVers(vb, uint32(len(vb))) == nvmlSuccess {
		driver = cString(vb)
	}
	var n uint32
	if r := a.count(&n); r != nvmlSuccess {
		return nil, driver, fmt.Errorf("nvmlDeviceGetCount_v2: %s (%d)", a.errString(r), r)
	}
	var out []NVMLDevice
	for i := uint32(0); i < n && i < nvmlMaxDevices; i++ {
		var dev uintptr
		if r := a.byIndex(i, &dev); r != nvmlSuccess {
			return out, driver, fmt.Errorf("nvmlDeviceGetHandleByIndex_v2(%d): %s (%d)", i, a.errString(r), r)
		}
		d := NVMLDevice{Index: int(i), SMClock: -1, SMClockMax: -1, MemClock: -1, MemClockMax: -1, BAR1Bytes: -1}
		nb := make([]byte, nvmlNameBufSize)
		if a.name(dev, nb, uint32(len(nb))) == nvmlSuccess {
			d.Name = cString(nb)
		}
		var pci nvmlPciInfo
		if a.pciInfo(dev, &pci) == nvmlSuccess {
			d.BusID = cString(pci.BusID[:])
		}
		get := func(f func(uintptr, uint32, *uint32) int32, typ uint32) int {
			var v uint32
			if f(dev, typ, &v) != nvmlSuccess {
				return -1
			}
			return int(v)
		}
		d.SMClock = get(a.clock, nvmlClockSM)
		d.SMClockMax = get(a.maxClock, nvmlClockSM)
		d.MemClock = get(a.clock, nvmlClockMem)
		d.MemClockMax = get(a.maxClock, nvmlClockMem)
		var bar nvmlBAR1Memory
		if a.bar1(dev, &bar) == nvmlSuccess {
			d.BAR1Bytes = int64(bar.Total)
		}
		out = append(out, d)
	}
	return out, driver, nil
}

// CUDA driver API (cuda.h).
const (
	cudaSuccess           = 0
	cudaErrorNoDevice     = 100 // CUDA_ERROR_NO_DEVICE
	attrIntegrated        = 18  // CU_DEVICE_ATTRIBUTE_INTEGRATED
	attrGPUDirectRDMA     = 116 // CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED
	attrDMABufSupported   = 124 // CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED
	cudaMaxDevices        = 64
	cudaBusIDBufSize      = 32
	cudaDeviceNameBufSize = 256
)

// CUDADevice is what the CUDA driver reports about one device, in CUDA ordinal order (the
// order `affinity:` in a daqiri YAML refers to). Attributes the driver did not answer are -1.
type CUDADevice struct {
	Ordinal       int
	Name          string
	BusID         string // as cuDeviceGetPCIBusId prints it, e.g. 0000:17:00.0
	Integrated    int    // 1 when the GPU shares memory with the CPU (GB10, Orin)
	GPUDirectRDMA int    // 1 when nvidia_p2p_get_pages-style GPUDirect RDMA is supported
	DMABuf        int    // 1 when device memory can be exported as a dma-buf
}

type cudaAPI struct {
	init      func(flags uint32) int32
	count     func(n *int32) int32
	get       func(dev *int32, ordinal int32) int32
	attribute func(v *int32, attr int32, dev int32) int32
	name      func(buf []byte, n int32, dev int32) int32
	busID     func(buf []byte, n int32, dev int32) int32
}

// CUDADevices enumerates devices through the CUDA driver. errors.Is(err, ErrNoLibrary)
// when libcuda is not installed; no error and no devices when the driver finds none.
func CUDADevices() ([]CUDADevice, error) {
	h, err := open(cudaLib)
	if err != nil {
		return nil, err
	}
	var a cudaAPI
	if err := bind(h, cudaLib, map[string]any{
		"cuInit":               &a.init,
		"cuDeviceGetCount":     &a.count,
		"cuDeviceGet":          &a.get,
		"cuDeviceGetAttribute": &a.attribute,
		"cuDeviceGetName":      &a.name,
		"cuDeviceGetPCIBusId":  &a.busID,
	}); err != nil {
		return nil, err
	}
	switch r := a.init(0); r {
	case cudaSuccess:
	case cudaErrorNoDevice:
		return nil, nil
	default:
		return nil, fmt.Errorf("cuInit: CUDA error %d", r)
	}
	var n int32
	if r := a.count(&n); r != cudaSuccess {
		return nil, fmt.Errorf("cuDeviceGetCount: CUDA error %d", r)
	}
	var out []CUDADevice
	for i := int32(0); i < n && i < cudaMaxDevices; i++ {
		var dev int32
		if r := a.get(&dev, i); r != cudaSuccess {
			return out, fmt.Errorf("cuDeviceGet(%d): CUDA error %d", i, r)
		}
		d := CUDADevice{Ordinal: int(i), Integrated: -1, GPUDirectRDMA: -1, DMABuf: -1}
		nb := make([]byte, cudaDeviceNameBufSize)
		if a.name(nb, int32(len(nb)), dev) == cudaSuccess {
			d.Name = cString(nb)
		}
		bb := make([]byte, cudaBusIDBufSize)
		if a.busID(bb, int32(len(bb)), dev) == cudaSuccess {
			d.BusID = cString(bb)
		}
		attr := func(id int32) int {
			var v int32
			if a.attribute(&v, id, dev) != cudaSuccess {
				return -1
			}
			return int(v)
		}
		d.Integrated = attr(attrIntegrated)
		d.GPUDirectRDMA = attr(attrGPUDirectRDMA)
		d.DMABuf = attr(attrDMABufSupported)
		out = append(out, d)
	}
	return out, nil
}
