package mlx5

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/cudart"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/internal/testutil/enginetest"
	"github.com/daqiri-go/daqiri/internal/testutil/gputest"
	"github.com/daqiri-go/daqiri/mlx5/channel"
	"github.com/daqiri-go/daqiri/mlx5/model/gpudma"
	"github.com/daqiri-go/daqiri/mlx5/model/modelch"
)

// GPU tests of the mlx5 engine on model ports (issue 27): the ConnectX device model stands in
// for the NIC and writes CUDA memory — device memory through the GPU's copy engine after
// resolving the region's DMA-BUF, host_pinned memory with the CPU — and every packet is read
// back from the GPU (cuMemcpyDtoH) and compared byte for byte with what was sent. No NIC
// writes GPU memory in these tests. They skip without a GPU (CI, the development VM); `make
// gpu-test` builds them for the GPU host.

// gpuDMABuf opens GPU 0 or skips, and skips when the GPU cannot export DMA-BUFs.
func gpuDMABuf(t testing.TB) *cudart.Device {
	t.Helper()
	dev := gputest.Device(t)
	in, err := dev.Info()
	if err != nil {
		t.Fatal(err)
	}
	if !in.DMABuf {
		t.Skipf("GPU %d (%s) cannot export device memory as a DMA-BUF (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED 0)", in.Ordinal, in.Name)
	}
	return dev
}

// gpuAlloc allocates device and host_pinned regions on dev (other kinds: host memory).
func gpuAlloc(t testing.TB, dev *cudart.Device) func(rc *config.MemoryRegion) engine.Memory {
	return func(rc *config.MemoryRegion) engine.Memory {
		size := (rc.NumBufs*rc.BufSize + 65535) &^ 65535
		switch rc.Kind {
		case config.KindDevice:
			m, err := dev.AllocDevice(size)
			if err != nil {
				t.Fatalf("region %s: %v", rc.Name, err)
			}
			// Poison: a packet that did not land reads back as 0xee, not as an old one.
			if err := dev.Memset(m.Ptr(), 0xee, size); err != nil {
				t.Fatal(err)
			}
			return m
		case config.KindHostPinned:
			h, err := dev.AllocHostPinned(size)
			if err != nil {
				t.Fatalf("region %s: %v", rc.Name, err)
			}
			return h
		}
		return nil
	}
}

// gpuRead reads segment s of packet i back from the GPU: device memory by a device-to-host
// copy; host_pinned memory through its device address (what a kernel reads), checked
// against the CPU's view; other memory from the CPU.
func gpuRead(t *testing.T, dev *cudart.Device) func(b *engine.Burst, s, i int) []byte {
	return func(b *engine.Burst, s, i int) []byte {
		r := b.SegmentRegion(s)
		n := b.SegmentLen(s, i)
		switch m := r.Memory().(type) {
		case *cudart.DeviceMem:
			p := make([]byte, n)
			if err := dev.CopyDtoH(p, cudart.DevicePtr(b.SegmentAddr(s, i))); err != nil {
				t.Fatalf("copy back from GPU: %v", err)
			}
			return p
		case *cudart.HostMem:
			p := make([]byte, n)
			at := m.DevicePtr() + cudart.DevicePtr(b.SegmentAddr(s, i)-m.Addr())
			if err := dev.CopyDtoH(p, at); err != nil {
				t.Fatalf("copy back from GPU (host_pinned): %v", err)
			}
			if string(p) != string(b.Segment(s, i)) {
				t.Fatalf("host_pinned packet %d: the GPU's view differs from the CPU's", i)
			}
			return p
		}
		return b.Segment(s, i)
	}
}

// TestGPUStridingDevice: a striding RQ whose region is device memory (zero copy into GPU
// memory): 6000 frames of 60–1460 bytes, each read back from the GPU.
func TestGPUStridingDevice(t *testing.T) {
	dev := gpuDMABuf(t)
	cfg := devConfig(1, 2048, 2048, false, config.KindDevice)
	e := deviceRoundTrip(t, cfg, options{striding: -1, compression: true}, gpuAlloc(t, dev), gpuRead(t, dev), 6000)
	if !e.ports[1].rxqs[0].striding {
		t.Fatal("the RX queue did not get a striding RQ")
	}
}

// TestGPUHDSDevice: header-data split, the headers (first 64 bytes) in host memory and the
// payload in device memory.
func TestGPUHDSDevice(t *testing.T) {
	dev := gpuDMABuf(t)
	cfg := devConfig(2, 1024, 2048, true, config.KindDevice)
	deviceRoundTrip(t, cfg, options{striding: -1, compression: true}, gpuAlloc(t, dev), gpuRead(t, dev), 4000)
}

// TestGPUHostPinned: regions of kind host_pinned (as on DGX Spark): the model writes them
// with the CPU; each packet is read through its GPU address and must equal the CPU's view
// and what was sent. Striding and header-data split.
func TestGPUHostPinned(t *testing.T) {
	dev := gputest.Device(t)
	for _, hds := range []bool{false, true} {
		cfg := devConfig(1, 1024, 2048, hds, config.KindHostPinned)
		deviceRoundTrip(t, cfg, options{striding: -1, compression: true}, gpuAlloc(t, dev), gpuRead(t, dev), 3000)
	}
}

// openFds counts the process's open file descriptors.
func openFds(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestGPUDMABufRegistration: a DMA-BUF from cudart.ExportDMABuf resolves in the model to its
// allocation (and writes through it land there); an fd that is not a DMA-BUF, a range
// outside the buffer and an allocation freed before the registration are refused as
// CREATE_UMEM with BAD_PARAM, naming the cause; GPU memory and fds are the same after as
// before.
func TestGPUDMABufRegistration(t *testing.T) {
	dev := gpuDMABuf(t)
	const size = 2 << 20
	open := func() (channel.Channel, func()) {
		f := &modelch.Fabric{}
		cs, stop, err := f.Open(context.Background(), []channel.FabricPort{{Name: "p", Path: "interfaces[0]", Address: "model:0"}}, channel.FabricOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cs[0], func() {
			if err := cs[0].Close(); err != nil {
				t.Errorf("channel Close: %v", err)
			}
			stop()
		}
	}
	round := func(check bool) {
		ch, done := open()
		defer done()
		reg := ch.(channel.DMABufRegistrar)
		m, err := dev.AllocDevice(size)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		fd, err := dev.ExportDMABuf(m.Ptr(), size)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		isBuf, name, n, err := gpudma.Describe(fd)
		if err != nil || !isBuf || n != size || name != cudart.DMABufName(dev.Ordinal(), m.Ptr()) {
			t.Fatalf("exported fd: DMA-BUF %v, name %q, %d bytes, %v; want name %q, %d bytes", isBuf, name, n, err, cudart.DMABufName(dev.Ordinal(), m.Ptr()), size)
		}
		um, err := reg.RegisterDMABuf(fd, 0, size, channel.AccessLocalWrite)
		if err != nil {
			t.Fatalf("registering a good DMA-BUF: %v", err)
		}
		if err := um.Release(); err != nil {
			t.Fatal(err)
		}
		if !check {
			return
		}
		refused := func(what string, err error, want string) {
			t.Helper()
			var ce *channel.CommandError
			if !errors.As(err, &ce) || ce.Status != 0x3 || ce.Name != "CREATE_UMEM" || !strings.Contains(err.Error(), want) {
				t.Fatalf("%s: %v, want CREATE_UMEM BAD_PARAM with %q", what, err, want)
			}
			t.Logf("%s: %v", what, err)
		}
		mfd, err := unix.MemfdCreate("not-a-dmabuf", unix.MFD_CLOEXEC)
		if err != nil {
			t.Fatal(err)
		}
		_, err = reg.RegisterDMABuf(mfd, 0, 4096, channel.AccessLocalWrite)
		unix.Close(mfd)
		refused("memfd", err, "is not a DMA-BUF")
		_, err = reg.RegisterDMABuf(fd, size/2, size, channel.AccessLocalWrite)
		refused("range outside", err, "lie outside DMA-BUF")
		m2, err := dev.AllocDevice(size)
		if err != nil {
			t.Fatal(err)
		}
		fd2, err := dev.ExportDMABuf(m2.Ptr(), size)
		if err != nil {
			t.Fatal(err)
		}
		if err := m2.Close(); err != nil {
			t.Fatal(err)
		}
		_, err = reg.RegisterDMABuf(fd2, 0, size, channel.AccessLocalWrite)
		unix.Close(fd2)
		refused("freed first", err, "freed before the registration")
	}
	round(false) // the driver's own first-use allocations happen here
	fds := openFds(t)
	free0, _, err := dev.MemInfo()
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		round(true)
	}
	free1, _, err := dev.MemInfo()
	if err != nil {
		t.Fatal(err)
	}
	if got := openFds(t); got != fds {
		t.Errorf("%d fds open after, %d before", got, fds)
	}
	if free1 != free0 {
		t.Errorf("GPU free memory %d bytes after, %d before", free1, free0)
	}
	t.Logf("fds %d before and after; GPU free memory %d before, %d after", fds, free0, free1)
}

// TestGPUSecondGPU (item 4): the RX region on GPU 1 (affinity 1); every packet lands there
// and no byte of GPU 0's poisoned buffer of the same size changes. Skips with one GPU.
func TestGPUSecondGPU(t *testing.T) {
	dev0 := gpuDMABuf(t)
	n, err := dev0.Driver().DeviceCount()
	if err != nil {
		t.Fatal(err)
	}
	if n < 2 {
		t.Skipf("%d GPU visible; this test needs two", n)
	}
	dev1, err := dev0.Driver().Device(1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev1.Close() })
	// A GPU 0 buffer allocated and poisoned first: if the model wrote anything to GPU 0 it
	// would have to be here or in memory the test never allocated.
	guard, err := dev0.AllocDevice(4 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer guard.Close()
	if err := dev0.Memset(guard.Ptr(), 0x5a, 4<<20); err != nil {
		t.Fatal(err)
	}
	free0, _, _ := dev0.MemInfo()
	cfg := devConfig(1, 2048, 2048, false, config.KindDevice)
	for i := range cfg.MemoryRegions {
		if cfg.MemoryRegions[i].Kind == config.KindDevice {
			cfg.MemoryRegions[i].Affinity = 1
		}
	}
	deviceRoundTrip(t, cfg, options{striding: -1, compression: true}, gpuAlloc(t, dev1), func(b *engine.Burst, s, i int) []byte {
		m := b.SegmentRegion(s).Memory().(*cudart.DeviceMem)
		if m.Device().Ordinal() != 1 {
			t.Fatalf("region on GPU %d", m.Device().Ordinal())
		}
		return gpuRead(t, dev1)(b, s, i)
	}, 3000)
	g := make([]byte, 4<<20)
	if err := dev0.CopyDtoH(g, guard.Ptr()); err != nil {
		t.Fatal(err)
	}
	for i, v := range g {
		if v != 0x5a {
			t.Fatalf("GPU 0 guard byte %d changed to %#x", i, v)
		}
	}
	free1, _, _ := dev0.MemInfo()
	t.Logf("GPU 0 free memory %d before the run, %d after (the model's copy stream lives on GPU 1 only)", free0, free1)
}

// BenchmarkGPURX (issue 27 item 3) is BenchmarkRX with the packets in GPU memory: the engine's
// receive path per packet (poll → burst → free → repost) on a striding RQ over a device or
// host_pinned region, 1 KiB and 8 KiB frames, the model's writes (through the GPU's copy
// engine for device memory) done before the timer runs, as bench-mlx5 excludes the model's
// cost. ns/pkt and Mpps are the engine's rate into GPU memory on one core.
func BenchmarkGPURX(b *testing.B) {
	dev := gpuDMABuf(b)
	for _, kind := range []config.MemoryKind{config.KindDevice, config.KindHostPinned} {
		for _, size := range []int{1024, 8192} {
			b.Run(fmt.Sprintf("kind=%s/size=%d", kind, size), func(b *testing.B) {
				buf := 2048
				if size > 2048 {
					buf = 8192
				}
				cfg := benchRxConfigKind(1, kind, buf)
				benchRXOn(b, cfg, enginetest.PortsMem(b, cfg, gpuAlloc(b, dev)), size, 1, true)
			})
		}
	}
}
