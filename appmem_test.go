package daqiri_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/hugepage"
	"github.com/daqiri-go/daqiri/internal/testutil"
	"github.com/daqiri-go/daqiri/internal/testutil/gputest"
)

// appLoopback is a loopback configuration whose RX region "app" (kind) is owned by the
// application.
func appLoopback(kind config.MemoryKind) *config.Config {
	return &config.Config{Version: 1, StreamType: config.StreamRaw, Loopback: "sw", LogLevel: "error", RxMetaBuffers: 8, TxMetaBuffers: 8,
		MemoryRegions: []config.MemoryRegion{
			{Name: "tx", Kind: kind, Access: config.AccessLocal, NumBufs: 64, BufSize: 2048, Unowned: true},
			{Name: "rx", Kind: config.KindHost, Access: config.AccessLocal, NumBufs: 64, BufSize: 2048}},
		Interfaces: []config.Interface{{Name: "lb", Address: "loopback",
			RX: &config.RxConfig{Queues: []config.Queue{{Name: "r", ID: 0, CPUCore: "0", BatchSize: 16, MemoryRegions: []string{"rx"}}}},
			TX: &config.TxConfig{Queues: []config.Queue{{Name: "t", ID: 0, CPUCore: "0", BatchSize: 16, MemoryRegions: []string{"tx"}}}}}}}
}

// fakeMem is application memory described by hand (a slice of a larger mapping).
type fakeMem struct {
	b    []byte
	addr uintptr
	size int
}

func (m fakeMem) Bytes() []byte { return m.b }
func (m fakeMem) Addr() uintptr { return m.addr }
func (m fakeMem) Close() error  { panic("the library closed application memory") }
func (m fakeMem) Size() int     { return m.size }

// TestAppOwnedRegion binds a region marked owned: false to host memory the test mapped:
// packets are built and looped back in it, Close leaves it mapped, and the application
// frees it afterwards.
func TestAppOwnedRegion(t *testing.T) {
	mem, err := hugepage.Map(64*2048, false)
	if err != nil {
		t.Fatal(err)
	}
	s, err := daqiri.Open(context.Background(), appLoopback(config.KindHost), daqiri.WithRegionMemory("tx", mem))
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.TxBurst(0, 0, 4)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := mem.Addr(), mem.Addr()+uintptr(len(mem.Bytes()))
	for i := 0; i < 4; i++ {
		if a := b.SegmentAddr(0, i); a < lo || a >= hi {
			t.Fatalf("packet %d at %#x, outside the application's memory [%#x, %#x)", i, a, lo, hi)
		}
		b.SetPacketLengths(i, 64)
		b.Packet(i)[0] = byte(0xa0 + i)
	}
	if err := s.Send(b); err != nil {
		t.Fatal(err)
	}
	rb := waitBurst(t, s, 0, 10e9)
	for i := 0; i < rb.Len(); i++ {
		if rb.Packet(i)[0] != byte(0xa0+i) || rb.SegmentAddr(0, i) < lo || rb.SegmentAddr(0, i) >= hi {
			t.Fatalf("looped packet %d: %x at %#x", i, rb.Packet(i)[0], rb.SegmentAddr(0, i))
		}
	}
	rb.Free()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if mem.Bytes() == nil {
		t.Fatal("the session unmapped the application's memory")
	}
	mem.Bytes()[0] = 1 // still mapped and writable
	if err := mem.Close(); err != nil {
		t.Fatalf("the application's own Close: %v", err)
	}
}

// TestAppOwnedRegionBadInput: memory too small, misaligned, of the wrong kind, missing, for
// an owned or unknown region — each refused at Open with the region's key path and
// ErrInvalidParameter, and nothing freed.
func TestAppOwnedRegionBadInput(t *testing.T) {
	big, err := hugepage.Map(2*64*2048, false)
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	b := big.Bytes()
	addr := big.Addr()
	for _, c := range []struct {
		name string
		kind config.MemoryKind
		opts []daqiri.Option
		want string
	}{
		{"too small", config.KindHost, []daqiri.Option{daqiri.WithRegionMemory("tx", fakeMem{b[:64*2048-1], addr, 0})},
			"memory_regions[0].owned: application memory for region tx (host, 64 × 2048 bytes): 131071 bytes given, 131072 needed"},
		{"misaligned", config.KindHost, []daqiri.Option{daqiri.WithRegionMemory("tx", fakeMem{b[64 : 64+64*2048], addr + 64, 0})},
			"is not aligned to 4096 bytes"},
		{"device kind, host memory", config.KindDevice, []daqiri.Option{daqiri.WithRegionMemory("tx", fakeMem{b, addr, len(b)})},
			"kind device needs GPU device memory"},
		{"host kind, device memory", config.KindHost, []daqiri.Option{daqiri.WithRegionMemory("tx", fakeMem{nil, 0x7f0000000000, 1 << 20})},
			"kind host needs memory the CPU can address"},
		{"device memory too small", config.KindDevice, []daqiri.Option{daqiri.WithRegionMemory("tx", fakeMem{nil, 0x7f0000000000, 4096})},
			"4096 bytes given, 131072 needed"},
		{"device memory misaligned", config.KindDevice, []daqiri.Option{daqiri.WithRegionMemory("tx", fakeMem{nil, 0x7f0000001000, 1 << 20})},
			"is not aligned to 65536 bytes"},
		{"no memory", config.KindHost, nil, `owned: false, but Open was given no memory for it (daqiri.WithRegionMemory("tx", mem))`},
		{"owned region", config.KindHost, []daqiri.Option{daqiri.WithRegionMemory("tx", fakeMem{b, addr, 0}), daqiri.WithRegionMemory("rx", fakeMem{b, addr, 0})},
			`memory region "rx" is owned by the library`},
		{"unknown region", config.KindHost, []daqiri.Option{daqiri.WithRegionMemory("tx", fakeMem{b, addr, 0}), daqiri.WithRegionMemory("nope", fakeMem{b, addr, 0})},
			`no memory region "nope"`},
	} {
		_, err := daqiri.Open(context.Background(), appLoopback(c.kind), c.opts...)
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, daqiri.ErrInvalidParameter) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// TestAppOwnedHugepageRegion lends hugepage memory to a huge region (root: hugepages).
func TestAppOwnedHugepageRegion(t *testing.T) {
	testutil.ReserveHugepages(t, 2)
	mem, err := hugepage.Map(64*2048, true)
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	s, err := daqiri.Open(context.Background(), appLoopback(config.KindHuge), daqiri.WithRegionMemory("tx", mem))
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.TxBurst(0, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	if a := b.SegmentAddr(0, 0); a < mem.Addr() || a >= mem.Addr()+uintptr(len(mem.Bytes())) {
		t.Fatalf("buffer at %#x outside the hugepage mapping at %#x", a, mem.Addr())
	}
	b.Free()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if mem.Bytes() == nil {
		t.Fatal("the session unmapped the application's hugepages")
	}
	// Hugepage memory that is not hugepage-aligned is refused.
	_, err = daqiri.Open(context.Background(), appLoopback(config.KindHuge), daqiri.WithRegionMemory("tx", fakeMem{mem.Bytes()[4096:], mem.Addr() + 4096, 0}))
	if err == nil || !strings.Contains(err.Error(), "is not aligned to") {
		t.Fatalf("misaligned hugepage memory: %v", err)
	}
}

// TestAppOwnedDeviceRegion lends a CUDA device allocation to a device region (GPU only).
func TestAppOwnedDeviceRegion(t *testing.T) {
	dev := gputest.Device(t)
	mem, err := dev.AllocDevice(64 * 2048)
	if err != nil {
		t.Fatal(err)
	}
	cfg := appLoopback(config.KindDevice)
	s, err := daqiri.Open(context.Background(), cfg, daqiri.WithRegionMemory("tx", mem))
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.TxBurst(0, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if a := b.SegmentAddr(0, 0); a < mem.Addr() || a >= mem.Addr()+uintptr(mem.Size()) {
		t.Fatalf("buffer at %#x outside the device allocation at %#x", a, mem.Addr())
	}
	b.Free()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := mem.Close(); err != nil {
		t.Fatalf("freeing the application's allocation after Close (did the session free it?): %v", err)
	}
}

var _ engine.Memory = fakeMem{}
