package daqiri

import (
	"errors"
	"strings"
	"testing"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/cudart"
)

// TestGPUMemoryKinds allocates host_pinned and device regions on GPU 0. Without a driver it
// checks the error instead; the allocations themselves need an NVIDIA GPU (built by
// `make gpu-test-reorder` for the GPU machine).
func TestGPUMemoryKinds(t *testing.T) {
	pinned := &config.MemoryRegion{Name: "pinned", Kind: config.KindHostPinned, Affinity: 0, NumBufs: 16, BufSize: 2048}
	dev := &config.MemoryRegion{Name: "dev", Kind: config.KindDevice, Affinity: 0, NumBufs: 16, BufSize: 2048}
	d, err := cudart.Open()
	if errors.Is(err, cudart.ErrNoDriver) {
		for _, rc := range []*config.MemoryRegion{pinned, dev} {
			_, err := allocGPU(rc, rc.NumBufs*rc.BufSize)
			want := "memory kind " + string(rc.Kind) + " needs an NVIDIA GPU and driver (libcuda.so.1)"
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s without a driver: %v, want %q", rc.Kind, err, want)
			}
		}
		t.Skip("no NVIDIA driver (libcuda.so.1): allocations not exercised")
	}
	if err != nil {
		t.Skipf("no usable CUDA device: %v", err)
	}
	m, err := allocGPU(pinned, 16*2048)
	if err != nil {
		t.Fatal(err)
	}
	h, ok := m.(*cudart.HostMem)
	if !ok || len(m.Bytes()) < 16*2048 || h.DevicePtr() == 0 || len(m.Bytes())%gpuAllocAlign != 0 {
		t.Fatalf("host_pinned region: %T, %d bytes", m, len(m.Bytes()))
	}
	m.Bytes()[0] = 1 // the CPU can write it
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m, err = allocGPU(dev, 16*2048)
	if err != nil {
		t.Fatal(err)
	}
	if m.Bytes() != nil || m.Addr() == 0 {
		t.Fatalf("device region: CPU view %v, address %#x", m.Bytes() != nil, m.Addr())
	}
	info, err := d.PointerInfo(m.Addr())
	if err != nil || info.Type != cudart.MemoryDevice {
		t.Fatalf("device region pointer info %+v, %v", info, err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	n, _ := d.DeviceCount()
	bad := *dev
	bad.Affinity = n
	if _, err := allocGPU(&bad, 4096); err == nil || !strings.Contains(err.Error(), "affinity") {
		t.Fatalf("affinity %d of %d GPUs: %v", n, n, err)
	}
}
