package engine

import (
	"strings"
	"testing"

	"github.com/daqiri-go/daqiri/config"
)

// devMem stands in for device memory: no CPU view.
type devMem struct{}

func (devMem) Bytes() []byte { return nil }
func (devMem) Addr() uintptr { return 0x7f0000000000 }
func (devMem) Close() error  { return nil }

type hostMem struct{ b []byte }

func (h hostMem) Bytes() []byte { return h.b }
func (h hostMem) Addr() uintptr { return 0x1000 }
func (h hostMem) Close() error  { return nil }

func TestCheckCPUAddressable(t *testing.T) {
	cfg := &config.Config{}
	dev, err := NewRegion(&config.MemoryRegion{Name: "gpu_rx", Kind: config.KindDevice, NumBufs: 4, BufSize: 64}, devMem{})
	if err != nil {
		t.Fatal(err)
	}
	err = CheckCPUAddressable(cfg, "interfaces[0].rx.queues[0].memory_regions", dev)
	if err == nil {
		t.Fatal("device memory accepted")
	}
	for _, want := range []string{"interfaces[0].rx.queues[0].memory_regions", "gpu_rx", "device", "host_pinned"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	for _, kind := range []config.MemoryKind{config.KindHost, config.KindHuge, config.KindHostPinned} {
		r, err := NewRegion(&config.MemoryRegion{Name: "m", Kind: kind, NumBufs: 4, BufSize: 64}, hostMem{make([]byte, 256)})
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckCPUAddressable(cfg, "p", r); err != nil {
			t.Errorf("%s: %v", kind, err)
		}
	}
	if err := CheckCPUAddressable(cfg, "p", nil); err == nil {
		t.Error("nil region accepted")
	}
}
