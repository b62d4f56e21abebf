package gpunetio

import (
	"errors"
	"fmt"
	"strings"

	"github.com/daqiri-go/daqiri/cudart"
	"github.com/daqiri-go/daqiri/hugepage"
)

// MemType is where memory lives, in DOCA GPUNetIO's names (enum doca_gpu_mem_type).
type MemType string

// Memory types.
const (
	// MemGPU is device memory: only the GPU (and a NIC, peer to peer) reaches it.
	MemGPU MemType = "GPU"
	// MemCPUGPU is host memory, pinned and mapped into the GPU's address space.
	MemCPUGPU MemType = "CPU_GPU"
	// MemGPUCPU is device memory the CPU also maps (GDRCopy, coherent platforms).
	MemGPUCPU MemType = "GPU_CPU"
	// MemCPU is host memory only (no GPU): the CPU stands in for the GPU, as the tests
	// that run without one do. It is this package's, not DOCA's.
	MemCPU MemType = "CPU"
)

// ParseMemType reads a memory type as a config value: GPU, CPU_GPU, GPU_CPU or CPU, case
// insensitive; "" is CPU_GPU.
func ParseMemType(s string) (MemType, error) {
	switch t := MemType(strings.ToUpper(s)); t {
	case "":
		return MemCPUGPU, nil
	case MemGPU, MemCPUGPU, MemGPUCPU, MemCPU:
		return t, nil
	}
	return "", fmt.Errorf("memory type %q: want GPU, CPU_GPU or GPU_CPU (DOCA GPUNetIO's doca_gpu_mem_type), or CPU", s)
}

// Mem is memory a queue uses: its GPU address and, when the CPU reaches it, its bytes.
type Mem interface {
	// Bytes is the CPU's view; nil for device memory.
	Bytes() []byte
	// DevAddr is the address kernels use (for MemCPU: the host address).
	DevAddr() uint64
	Size() int
	Close() error
}

// DeviceMem is device memory (no Bytes): the queue copies into it and registers it with the
// NIC as a DMA-BUF.
type DeviceMem interface {
	Mem
	// WriteAt copies p to off (cuMemcpyHtoD).
	WriteAt(p []byte, off int) error
	// ReadAt copies from off into p.
	ReadAt(p []byte, off int) error
	// DMABuf exports the memory: a new fd (the caller closes it) and Addr's offset in it.
	DMABuf() (fd int, off uint64, err error)
}

// Allocator allocates queue and packet memory of a type.
type Allocator interface {
	Alloc(t MemType, size int) (Mem, error)
}

// ErrGPUCPU is the refusal of GPU_CPU memory: device memory the CPU maps needs a BAR1
// mapping (GDRCopy's gdrdrv kernel module) or a coherent platform (Grace Hopper), which
// the CUDA driver API alone does not give on a discrete GPU.
var ErrGPUCPU = errors.New("GPU_CPU memory needs a CPU mapping of device memory (GDRCopy's gdrdrv, or a coherent platform such as Grace Hopper); use CPU_GPU or GPU")

// HostAllocator gives MemCPU memory (page-aligned host memory, device address = host
// address) and refuses the GPU types: for running queues without a GPU.
type HostAllocator struct{}

// Alloc implements Allocator.
func (HostAllocator) Alloc(t MemType, size int) (Mem, error) {
	if t != MemCPU && t != MemCPUGPU {
		return nil, fmt.Errorf("%s memory of %d bytes: the host allocator has no GPU", t, size)
	}
	m, err := hugepage.Map(size, false)
	if err != nil {
		return nil, err
	}
	return hostMem{m}, nil
}

type hostMem struct{ m *hugepage.Mem }

// Bytes, DevAddr, Size and Close implement Mem.
func (h hostMem) Bytes() []byte   { return h.m.Bytes() }
func (h hostMem) DevAddr() uint64 { return uint64(h.m.Addr()) }
func (h hostMem) Size() int       { return len(h.m.Bytes()) }
func (h hostMem) Close() error    { return h.m.Close() }

// CUDAAllocator allocates on one GPU: GPU as cuMemAlloc, CPU_GPU as cuMemHostAlloc with
// DEVICEMAP; GPU_CPU is refused with ErrGPUCPU.
type CUDAAllocator struct{ Dev *cudart.Device }

// Alloc implements Allocator. Device allocations are rounded up to 64 KiB, the granularity a
// DMA-BUF export of them takes (cudart.ExportDMABuf).
func (a CUDAAllocator) Alloc(t MemType, size int) (Mem, error) {
	switch t {
	case MemCPUGPU:
		h, err := a.Dev.AllocHostPinned(size)
		if err != nil {
			return nil, err
		}
		clear(h.Bytes())
		return pinned{h}, nil
	case MemGPU:
		n := (size + 65535) &^ 65535
		d, err := a.Dev.AllocDevice(n)
		if err != nil {
			return nil, err
		}
		if err := a.Dev.Memset(d.Ptr(), 0, n); err != nil {
			d.Close()
			return nil, err
		}
		return devMem{d}, nil
	case MemGPUCPU:
		return nil, ErrGPUCPU
	}
	return nil, fmt.Errorf("%s memory: the CUDA allocator gives GPU and CPU_GPU", t)
}

type pinned struct{ h *cudart.HostMem }

// Bytes, DevAddr, Size and Close implement Mem.
func (p pinned) Bytes() []byte   { return p.h.Bytes() }
func (p pinned) DevAddr() uint64 { return uint64(p.h.DevicePtr()) }
func (p pinned) Size() int       { return p.h.Size() }
func (p pinned) Close() error    { return p.h.Close() }

type devMem struct{ d *cudart.DeviceMem }

// Bytes (nil), DevAddr, Size and Close implement Mem; WriteAt, ReadAt and DMABuf DeviceMem.
func (m devMem) Bytes() []byte   { return nil }
func (m devMem) DevAddr() uint64 { return uint64(m.d.Ptr()) }
func (m devMem) Size() int       { return m.d.Size() }
func (m devMem) Close() error    { return m.d.Close() }
func (m devMem) WriteAt(p []byte, off int) error {
	return m.d.Device().CopyHtoD(m.d.Ptr()+cudart.DevicePtr(off), p)
}
func (m devMem) ReadAt(p []byte, off int) error {
	return m.d.Device().CopyDtoH(p, m.d.Ptr()+cudart.DevicePtr(off))
}
func (m devMem) DMABuf() (int, uint64, error) {
	fd, err := m.d.Device().ExportDMABuf(m.d.Ptr(), m.d.Size())
	return fd, 0, err
}
