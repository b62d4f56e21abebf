package daqiri

import (
	"errors"
	"fmt"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/cudart"
	"github.com/daqiri-go/daqiri/engine"
)

// gpuAllocAlign is the granularity GPU regions are rounded up to. Upstream rounds every
// allocation to 64 KiB (upstream-daqiri.md §2.2); a multiple of the host page size is also what
// DMA-BUF export of device memory needs (see cudart.Device.ExportDMABuf).
const gpuAllocAlign = 64 << 10

// allocGPU allocates host_pinned and device regions through the CUDA driver on GPU ordinal
// rc.Affinity:
//
//   - host_pinned: page-locked host memory mapped into the GPU's address space
//     (cuMemHostAlloc). The CPU reads and writes it through Bytes; kernels reach the same bytes
//     through its device pointer (cudart.HostMem.DevicePtr), so any engine that receives with
//     the CPU or the kernel can fill it and a GPU reorder plan can read it.
//   - device: GPU memory (cuMemAlloc). Bytes is nil and Addr is the GPU address; only engines
//     whose NIC writes GPU memory (GPUDirect) can receive into it.
//
// Without libcuda.so.1 the error says so and names the region's kind, so a configuration that
// merely asks for GPU memory on a CPU-only machine fails clearly instead of mysteriously.
func allocGPU(rc *config.MemoryRegion, size int) (engine.Memory, error) {
	if size <= 0 {
		return nil, fmt.Errorf("memory kind %s: region size %d: %w", rc.Kind, size, ErrInvalidParameter)
	}
	d, err := cudart.Open()
	if err != nil {
		if errors.Is(err, cudart.ErrNoDriver) {
			return nil, fmt.Errorf("memory kind %s needs an NVIDIA GPU and driver (libcuda.so.1): %v", rc.Kind, err)
		}
		return nil, fmt.Errorf("memory kind %s needs a usable NVIDIA GPU: %w", rc.Kind, err)
	}
	n, err := d.DeviceCount()
	if err != nil {
		return nil, fmt.Errorf("memory kind %s: %w", rc.Kind, err)
	}
	if rc.Affinity < 0 || rc.Affinity >= n {
		return nil, fmt.Errorf("memory kind %s: affinity %d names GPU %d, but %d GPU(s) are visible (CUDA ordinals 0..%d): %w",
			rc.Kind, rc.Affinity, rc.Affinity, n, n-1, ErrInvalidParameter)
	}
	alloc := (size + gpuAllocAlign - 1) / gpuAllocAlign * gpuAllocAlign
	// Return untyped nil on failure: a nil *HostMem inside a non-nil engine.Memory would look
	// like memory to a caller that checked the interface.
	switch rc.Kind {
	case config.KindHostPinned:
		h, err := d.AllocHostPinned(rc.Affinity, alloc)
		if err != nil {
			return nil, err
		}
		return h, nil
	case config.KindDevice:
		m, err := d.AllocDevice(rc.Affinity, alloc)
		if err != nil {
			return nil, err
		}
		return m, nil
	}
	return nil, fmt.Errorf("memory kind %q is not a GPU kind: %w", rc.Kind, ErrInvalidParameter)
}
