package cudart

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/daqiri-go/daqiri/hugepage"
	"github.com/daqiri-go/daqiri/internal/dynlib"
	"github.com/daqiri-go/daqiri/internal/testutil"
)

// The tests in this file need an NVIDIA GPU and driver. Elsewhere they skip; `make gpu-test`
// builds them into bin/gpu/cudart.test for a GPU machine.

// gpu opens GPU 0 or skips the test, naming what is missing.
func gpu(t testing.TB) *Device {
	t.Helper()
	d, err := Open()
	if errors.Is(err, ErrNoDriver) {
		t.Skip("no NVIDIA driver (libcuda.so.1)")
	}
	if errors.Is(err, ResultNoDevice) || errors.Is(err, ResultStubLibrary) {
		t.Skipf("no usable CUDA device: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	dev, err := d.Device(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := dev.Close(); err != nil {
			t.Errorf("Device.Close: %v", err)
		}
	})
	return dev
}

func TestGPUInfo(t *testing.T) {
	dev := gpu(t)
	d := dev.Driver()
	n, err := d.DeviceCount()
	if err != nil || n < 1 {
		t.Fatalf("DeviceCount = %d, %v", n, err)
	}
	in, err := dev.Info()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("driver CUDA %d.%d, %d device(s); GPU 0: %+v", d.Version()/1000, d.Version()%1000/10, n, in)
	if in.Name == "" || in.ComputeMajor < 1 || in.SMs < 1 || in.TotalMem == 0 {
		t.Fatalf("implausible device info: %+v", in)
	}
	var dom, bus, slot, fn int
	if _, err := fmt.Sscanf(in.PCIBusID, "%x:%x:%x.%x", &dom, &bus, &slot, &fn); err != nil {
		t.Fatalf("PCI bus id %q: %v", in.PCIBusID, err)
	}
	busAttr, err := dev.Attribute(AttrPCIBusID)
	if err != nil || busAttr != bus {
		t.Fatalf("PCI bus attribute %d (%v) disagrees with bus id %q", busAttr, err, in.PCIBusID)
	}
	if strings.Contains(in.Name, "H100") {
		// A discrete Hopper board: not integrated, compute capability 9.0, DMA-BUF export and
		// GPUDirect RDMA supported.
		if in.Integrated || !in.DMABuf || in.ComputeMajor != 9 || in.ComputeMinor != 0 || !in.GPUDirectRDMA {
			t.Fatalf("H100 attributes unexpected: %+v", in)
		}
	}
	free, total, err := dev.MemInfo()
	if err != nil || free == 0 || free > total || total != in.TotalMem {
		t.Fatalf("MemInfo = %d free of %d (%v); TotalMem %d", free, total, err, in.TotalMem)
	}
	for _, bad := range []int{-1, n} {
		if _, err := d.Device(bad); err == nil || !strings.Contains(err.Error(), "out of range") {
			t.Fatalf("Device(%d): %v", bad, err)
		}
	}
	if _, err := dev.Attribute(Attribute(1 << 20)); !errors.Is(err, ResultInvalidValue) {
		t.Fatalf("unknown attribute: %v", err)
	}
}

func TestGPUDeviceMemory(t *testing.T) {
	dev := gpu(t)
	for range 5 {
		n := 1 + mrand.IntN(8<<20)
		a, err := dev.AllocDevice(n)
		if err != nil {
			t.Fatal(err)
		}
		b, err := dev.AllocDevice(n)
		if err != nil {
			t.Fatal(err)
		}
		if a.Bytes() != nil || a.Size() != n || a.Addr() != uintptr(a.Ptr()) {
			t.Fatalf("DeviceMem accessors: bytes %v size %d", a.Bytes() != nil, a.Size())
		}
		pi, err := dev.Driver().PointerInfo(a.Addr())
		if err != nil || pi.Type != MemoryDevice || pi.Ordinal != dev.Ordinal() {
			t.Fatalf("PointerInfo(device) = %+v, %v", pi, err)
		}
		src := testutil.RandBytes(n)
		if err := dev.CopyHtoD(a.Ptr(), src); err != nil {
			t.Fatal(err)
		}
		if err := dev.CopyDtoD(b.Ptr(), a.Ptr(), n); err != nil {
			t.Fatal(err)
		}
		// Overwrite a random sub-range of b with a random byte.
		off, v := mrand.IntN(n), byte(mrand.Uint32())
		cnt := mrand.IntN(n - off + 1)
		if err := dev.Memset(b.Ptr()+DevicePtr(off), v, cnt); err != nil {
			t.Fatal(err)
		}
		want := bytes.Clone(src)
		for i := off; i < off+cnt; i++ {
			want[i] = v
		}
		got := make([]byte, n)
		if err := dev.CopyDtoH(got, b.Ptr()); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("HtoD, DtoD, memset [%d,+%d) and DtoH of %d random bytes did not round-trip", off, cnt, n)
		}
		testutil.CloseOK(t, a)
		testutil.CloseOK(t, b)
		testutil.CloseOK(t, a) // idempotent
	}
	// Asking for far more than any GPU has fails with the driver's own name for it.
	_, err := dev.AllocDevice(1 << 50)
	if !errors.Is(err, ResultOutOfMemory) || !strings.Contains(err.Error(), "CUDA_ERROR_OUT_OF_MEMORY") {
		t.Fatalf("huge AllocDevice: %v", err)
	}
	t.Logf("out-of-memory error reads: %v", err)
}

func TestGPUHostPinned(t *testing.T) {
	dev := gpu(t)
	n := 1 + mrand.IntN(4<<20)
	h, err := dev.AllocHostPinned(n)
	if err != nil {
		t.Fatal(err)
	}
	defer testutil.CloseOK(t, h)
	if len(h.Bytes()) != n || h.Size() != n || h.DevicePtr() == 0 || h.Registered() {
		t.Fatalf("HostMem: len %d dptr %v registered %v", len(h.Bytes()), h.DevicePtr(), h.Registered())
	}
	pi, err := dev.Driver().PointerInfo(h.Addr())
	if err != nil || pi.Type != MemoryHost {
		t.Fatalf("PointerInfo(host pinned) = %+v, %v", pi, err)
	}
	// The CPU writes through Bytes, the GPU copies through DevicePtr.
	src := testutil.RandBytes(n)
	copy(h.Bytes(), src)
	d, err := dev.AllocDevice(n)
	if err != nil {
		t.Fatal(err)
	}
	defer testutil.CloseOK(t, d)
	if err := dev.CopyDtoD(d.Ptr(), h.DevicePtr(), n); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, n)
	if err := dev.CopyDtoH(got, d.Ptr()); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, src) {
		t.Fatal("bytes written by the CPU into pinned memory differ when read by the GPU through its device pointer")
	}
	// And back: the GPU writes the pinned memory, the CPU reads it.
	if err := dev.Memset(h.DevicePtr(), 0x5a, n); err != nil {
		t.Fatal(err)
	}
	if err := dev.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(h.Bytes(), bytes.Repeat([]byte{0x5a}, n)) {
		t.Fatal("GPU memset through the device pointer not visible in Bytes")
	}
	// Plain Go memory is unknown to CUDA.
	goMem := make([]byte, 64)
	pi, err = dev.Driver().PointerInfo(uintptr(unsafe.Pointer(&goMem[0])))
	if err != nil || pi.Type != MemoryUnregistered || pi.Ordinal != -1 {
		t.Fatalf("PointerInfo(Go heap) = %+v, %v", pi, err)
	}
	runtime.KeepAlive(goMem)
}

func TestGPURegisterHost(t *testing.T) {
	dev := gpu(t)
	in, err := dev.Info()
	if err != nil {
		t.Fatal(err)
	}
	if !in.HostRegister {
		t.Skip("device reports no host-register support (CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED = 0)")
	}
	for _, huge := range []bool{false, true} {
		t.Run(fmt.Sprintf("huge=%v", huge), func(t *testing.T) {
			size := 4<<20 + mrand.IntN(4<<20)
			m, err := hugepage.Map(size, huge)
			if huge && errors.Is(err, hugepage.ErrNotEnough) {
				t.Skipf("no hugepages reserved: %v", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer testutil.CloseOK(t, m)
			h, err := dev.RegisterHost(m.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			if !h.Registered() || h.Addr() != m.Addr() || h.DevicePtr() == 0 {
				t.Fatalf("registered HostMem: addr %#x vs %#x, dptr %v", h.Addr(), m.Addr(), h.DevicePtr())
			}
			t.Logf("registered %d bytes (page %d): host %#x device %v", len(m.Bytes()), m.PageSize(), m.Addr(), h.DevicePtr())
			if _, err := dev.RegisterHost(m.Bytes()); !errors.Is(err, ResultHostMemoryAlreadyRegistered) {
				t.Fatalf("second registration: %v", err)
			}
			pi, err := dev.Driver().PointerInfo(m.Addr())
			if err != nil || pi.Type != MemoryHost {
				t.Fatalf("PointerInfo(registered) = %+v, %v", pi, err)
			}
			src := testutil.RandBytes(len(m.Bytes()))
			copy(m.Bytes(), src)
			d, err := dev.AllocDevice(len(src))
			if err != nil {
				t.Fatal(err)
			}
			defer testutil.CloseOK(t, d)
			// Pinned memory lets the async copies really run asynchronously.
			s, err := dev.NewStream(true)
			if err != nil {
				t.Fatal(err)
			}
			defer testutil.CloseOK(t, s)
			if err := dev.CopyHtoDAsync(d.Ptr(), h.Bytes(), s); err != nil {
				t.Fatal(err)
			}
			if err := dev.MemsetAsync(h.DevicePtr(), 0, len(src), s); err != nil {
				t.Fatal(err)
			}
			if err := dev.CopyDtoHAsync(h.Bytes(), d.Ptr(), s); err != nil {
				t.Fatal(err)
			}
			if err := s.Synchronize(); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(m.Bytes(), src) {
				t.Fatal("async HtoD, memset, DtoH through registered memory did not round-trip")
			}
			if err := h.Close(); err != nil {
				t.Fatal(err)
			}
			pi, err = dev.Driver().PointerInfo(m.Addr())
			if err != nil || pi.Type != MemoryUnregistered {
				t.Fatalf("PointerInfo after unregister = %+v, %v", pi, err)
			}
		})
	}
}

// The Driver-level allocators are what the session layer uses for regions: memory that
// carries its own context reference.
func TestGPUDriverAlloc(t *testing.T) {
	dev := gpu(t) // keeps the primary context alive across the test; the allocations add their own references
	d := dev.Driver()
	n := 1 + mrand.IntN(1<<20)
	dm, err := d.AllocDevice(dev.Ordinal(), n)
	if err != nil {
		t.Fatal(err)
	}
	hm, err := d.AllocHostPinned(dev.Ordinal(), n)
	if err != nil {
		t.Fatal(err)
	}
	src := testutil.RandBytes(n)
	copy(hm.Bytes(), src)
	got := make([]byte, n)
	if err := errors.Join(dm.Device().CopyDtoD(dm.Ptr(), hm.DevicePtr(), n), dev.CopyDtoH(got, dm.Ptr())); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, src) {
		t.Fatal("host_pinned -> device -> Go copy through driver-level allocations did not round-trip")
	}
	m, err := hugepage.Map(n, false)
	if err != nil {
		t.Fatal(err)
	}
	defer testutil.CloseOK(t, m)
	rm, err := d.RegisterHost(dev.Ordinal(), m.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []interface{ Close() error }{dm, hm, rm, dm, hm, rm} { // second round: idempotent
		testutil.CloseOK(t, c)
	}
	if dm.Device().ctx != 0 || hm.Device().ctx != 0 || rm.Device().ctx != 0 {
		t.Fatal("Close did not release the allocation's own Device")
	}
	// The test's own Device still works: its reference was never released.
	if err := dev.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.AllocDevice(1<<20, 64); err == nil {
		t.Fatal("allocation on a GPU ordinal that does not exist accepted")
	}
}

func TestGPUExportDMABuf(t *testing.T) {
	dev := gpu(t)
	in, err := dev.Info()
	if err != nil {
		t.Fatal(err)
	}
	if !in.DMABuf {
		t.Skip("device reports no DMA-BUF support (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = 0)")
	}
	page := os.Getpagesize()
	size := (1 + mrand.IntN(1024)) * 64 << 10 // whole 64 KiB units, like region allocations
	m, err := dev.AllocDevice(size)
	if err != nil {
		t.Fatal(err)
	}
	defer testutil.CloseOK(t, m)
	fd, err := dev.ExportDMABuf(m.Ptr(), size)
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		t.Fatalf("fstat of DMA-BUF fd %d: %v", fd, err)
	}
	link, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
	t.Logf("DMA-BUF fd %d for %d bytes: %s, st_size %d", fd, size, link, st.Size)
	if !strings.Contains(link, "dmabuf") {
		t.Errorf("fd %d links to %q, not a dmabuf", fd, link)
	}
	if st.Size != 0 && st.Size != int64(size) {
		t.Errorf("DMA-BUF size %d, exported %d", st.Size, size)
	}
	if err := unix.Close(fd); err != nil {
		t.Fatalf("close DMA-BUF fd: %v", err)
	}
	// Whether the driver exports a page-aligned sub-range of an allocation is not documented
	// either way; record what it does. A ragged range is refused before the driver.
	if size > page {
		fd2, err := dev.ExportDMABuf(m.Ptr()+DevicePtr(page), size-page)
		if err != nil {
			t.Logf("page-aligned sub-range export refused: %v", err)
		} else {
			t.Logf("page-aligned sub-range export gave fd %d", fd2)
			unix.Close(fd2)
		}
	}
	if _, err := dev.ExportDMABuf(m.Ptr(), size-1); err == nil {
		t.Fatal("unaligned size accepted")
	}
}

func loadKernels(t *testing.T, dev *Device) *Module {
	t.Helper()
	ptx, err := os.ReadFile("testdata/kernels.ptx")
	if err != nil {
		t.Fatalf("read the committed PTX (run the test binary from cudart/, regenerate with make ptx): %v", err)
	}
	m, err := dev.LoadModule(ptx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testutil.CloseOK(t, m) })
	return m
}

func fn(t *testing.T, m *Module, name string) *Function {
	t.Helper()
	f, err := m.Function(name)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestGPUKernels(t *testing.T) {
	dev := gpu(t)
	m := loadKernels(t, dev)
	affine, fma, noop := fn(t, m, "affine_u32"), fn(t, m, "fma_f64"), fn(t, m, "noop")

	s, err := dev.NewStream(true)
	if err != nil {
		t.Fatal(err)
	}
	defer testutil.CloseOK(t, s)

	t.Run("affine_u32", func(t *testing.T) {
		for range 5 {
			n := 1 + mrand.IntN(1<<20)
			a, b, shift := mrand.Uint32(), mrand.Uint32(), uint8(mrand.Uint32())
			x := testutil.RandBytes(4 * n)
			dx, err := dev.AllocDevice(4 * n)
			if err != nil {
				t.Fatal(err)
			}
			defer testutil.CloseOK(t, dx)
			// The output is host-pinned memory written by the kernel through its device
			// pointer: zero-copy, read by the CPU straight after the stream is done.
			y, err := dev.AllocHostPinned(4 * n)
			if err != nil {
				t.Fatal(err)
			}
			defer testutil.CloseOK(t, y)
			if err := dev.CopyHtoDAsync(dx.Ptr(), x, s); err != nil {
				t.Fatal(err)
			}
			// Fewer threads than elements exercises the grid-stride loop.
			cfg := LaunchConfig{Grid: Dim3{X: uint32(1 + mrand.IntN(64))}, Block: Dim3{X: 256}, Stream: s}
			if err := affine.Launch(cfg, Ptr(dx.Ptr()), Ptr(y.DevicePtr()), U32(a), U32(b), U8(shift), U64(uint64(n))); err != nil {
				t.Fatal(err)
			}
			if err := s.Synchronize(); err != nil {
				t.Fatal(err)
			}
			for i := range n {
				xi := binary.LittleEndian.Uint32(x[4*i:])
				want := (a*xi + b) >> (shift & 31)
				if got := binary.LittleEndian.Uint32(y.Bytes()[4*i:]); got != want {
					t.Fatalf("n=%d a=%d b=%d shift=%d: y[%d] = %d, want %d", n, a, b, shift, i, got, want)
				}
			}
		}
	})

	t.Run("fma_f64", func(t *testing.T) {
		n := 1 + mrand.IntN(100000)
		a, b, c := mrand.NormFloat64()*1e3, float32(mrand.NormFloat64()), int16(mrand.Uint32())
		x := make([]byte, 8*n)
		for i := range n {
			binary.LittleEndian.PutUint64(x[8*i:], math.Float64bits(mrand.NormFloat64()*1e6))
		}
		dx, err := dev.AllocDevice(8 * n)
		if err != nil {
			t.Fatal(err)
		}
		defer testutil.CloseOK(t, dx)
		dy, err := dev.AllocDevice(8 * n)
		if err != nil {
			t.Fatal(err)
		}
		defer testutil.CloseOK(t, dy)
		if err := dev.CopyHtoD(dx.Ptr(), x); err != nil {
			t.Fatal(err)
		}
		cfg := LaunchConfig{Grid: Dim3{X: uint32((n + 127) / 128)}, Block: Dim3{X: 128}, Stream: s}
		if err := fma.Launch(cfg, Ptr(dx.Ptr()), Ptr(dy.Ptr()), F64(a), F32(b), I16(c), U64(uint64(n))); err != nil {
			t.Fatal(err)
		}
		y := make([]byte, 8*n)
		if err := dev.CopyDtoHAsync(y, dy.Ptr(), s); err != nil {
			t.Fatal(err)
		}
		if err := s.Synchronize(); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			xi := math.Float64frombits(binary.LittleEndian.Uint64(x[8*i:]))
			want := math.FMA(xi, a, float64(b)) + float64(c)
			if got := math.Float64frombits(binary.LittleEndian.Uint64(y[8*i:])); math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("a=%v b=%v c=%d: y[%d] = %v, want %v", a, b, c, i, got, want)
			}
		}
	})

	t.Run("noop and bad launches", func(t *testing.T) {
		if err := noop.Launch(LaunchConfig{Stream: s}); err != nil {
			t.Fatal(err)
		}
		if err := noop.Launch(LaunchConfig{}); err != nil { // default stream
			t.Fatal(err)
		}
		if err := dev.Synchronize(); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Function("no_such_kernel"); !errors.Is(err, ResultNotFound) {
			t.Fatalf("missing kernel: %v", err)
		}
		if err := noop.Launch(LaunchConfig{Block: Dim3{X: 1 << 16}}); err == nil {
			t.Fatal("block of 65536 threads launched")
		} else {
			t.Logf("oversized block refused: %v", err)
		}
		if _, err := dev.LoadModule([]byte("this is not PTX")); err == nil {
			t.Fatal("garbage module loaded")
		} else {
			t.Logf("garbage module refused: %v", err)
		}
		// The context is still healthy after refused launches.
		if err := noop.Launch(LaunchConfig{Stream: s}); err != nil {
			t.Fatal(err)
		}
		if err := s.Synchronize(); err != nil {
			t.Fatal(err)
		}
	})
}

// Work on one stream becomes visible to another only through an event; the spin kernel keeps
// the first stream busy so the second would otherwise race ahead.
func TestGPUStreamEventOrdering(t *testing.T) {
	dev := gpu(t)
	m := loadKernels(t, dev)
	spin := fn(t, m, "spin_then_set")
	s1, err := dev.NewStream(true)
	if err != nil {
		t.Fatal(err)
	}
	defer testutil.CloseOK(t, s1)
	s2, err := dev.NewStream(true)
	if err != nil {
		t.Fatal(err)
	}
	defer testutil.CloseOK(t, s2)
	flag, err := dev.AllocDevice(4)
	if err != nil {
		t.Fatal(err)
	}
	defer testutil.CloseOK(t, flag)
	host, err := dev.AllocHostPinned(4)
	if err != nil {
		t.Fatal(err)
	}
	defer testutil.CloseOK(t, host)
	start, err := dev.NewEvent(true, false)
	if err != nil {
		t.Fatal(err)
	}
	defer testutil.CloseOK(t, start)
	done, err := dev.NewEvent(true, true)
	if err != nil {
		t.Fatal(err)
	}
	defer testutil.CloseOK(t, done)

	for range 3 {
		v := mrand.Uint32() | 1
		if err := dev.Memset(flag.Ptr(), 0, 4); err != nil {
			t.Fatal(err)
		}
		if err := dev.Synchronize(); err != nil {
			t.Fatal(err)
		}
		if err := start.Record(s1); err != nil {
			t.Fatal(err)
		}
		// About 20 ms at H100 clocks.
		if err := spin.Launch(LaunchConfig{Stream: s1}, U64(40_000_000), Ptr(flag.Ptr()), U32(v)); err != nil {
			t.Fatal(err)
		}
		if err := done.Record(s1); err != nil {
			t.Fatal(err)
		}
		if err := s2.WaitEvent(done); err != nil {
			t.Fatal(err)
		}
		if err := dev.CopyDtoHAsync(host.Bytes(), flag.Ptr(), s2); err != nil {
			t.Fatal(err)
		}
		if err := s2.Synchronize(); err != nil {
			t.Fatal(err)
		}
		if got := binary.LittleEndian.Uint32(host.Bytes()); got != v {
			t.Fatalf("stream 2 read %#x, want %#x written by stream 1 before the event", got, v)
		}
		ok, err := done.Query()
		if err != nil || !ok {
			t.Fatalf("event after the dependent stream finished: done=%v, %v", ok, err)
		}
		if ok, err := s1.Query(); err != nil || !ok {
			t.Fatalf("stream 1 after its last event completed: idle=%v, %v", ok, err)
		}
		el, err := done.Elapsed(start)
		if err != nil || el <= 0 {
			t.Fatalf("Elapsed = %v, %v", el, err)
		}
		t.Logf("spin kernel took %v of GPU time", el)
	}
	noTiming, err := dev.NewEvent(false, false)
	if err != nil {
		t.Fatal(err)
	}
	defer testutil.CloseOK(t, noTiming)
	if _, err := noTiming.Elapsed(start); err == nil {
		t.Fatal("Elapsed accepted an event created without timing")
	}
}

// Goroutines that never lock their OS threads share one Device: each call binds the context
// itself, so they all work whatever threads the scheduler runs them on.
func TestGPUConcurrentUse(t *testing.T) {
	dev := gpu(t)
	const workers = 8
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				n := 1 + mrand.IntN(64<<10)
				m, err := dev.AllocDevice(n)
				if err != nil {
					errs <- err
					return
				}
				src := testutil.RandBytes(n)
				got := make([]byte, n)
				err = errors.Join(dev.CopyHtoD(m.Ptr(), src), dev.CopyDtoH(got, m.Ptr()), m.Close())
				if err == nil && !bytes.Equal(got, src) {
					err = fmt.Errorf("worker %d round %d: %d bytes did not round-trip", w, i, n)
				}
				if err != nil {
					errs <- err
					return
				}
				runtime.Gosched()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Device.Do makes the context current for other libraries, and PointerInfo works on a thread
// with no context at all.
func TestGPUContextBinding(t *testing.T) {
	dev := gpu(t)
	f := dev.Driver().f
	current := func() uintptr {
		var c uintptr
		if r := dynlib.Call(f.cuCtxGetCurrent, uintptr(unsafe.Pointer(&c))); r != 0 {
			t.Fatalf("cuCtxGetCurrent: %d", r)
		}
		return c
	}
	m, err := dev.AllocDevice(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer testutil.CloseOK(t, m)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if r := dynlib.Call(f.cuCtxSetCurrent, 0); r != 0 {
		t.Fatalf("cuCtxSetCurrent(NULL): %d", r)
	}
	pi, err := dev.Driver().PointerInfo(m.Addr())
	if err != nil || pi.Type != MemoryDevice {
		t.Fatalf("PointerInfo without a current context = %+v, %v", pi, err)
	}
	if c := current(); c != 0 {
		t.Fatalf("PointerInfo made a context current (%#x)", c)
	}
	var inside uintptr
	if err := dev.Do(func() error { inside = current(); return nil }); err != nil {
		t.Fatal(err)
	}
	if inside != dev.ctx || inside == 0 {
		t.Fatalf("inside Do the current context is %#x, want the primary context %#x", inside, dev.ctx)
	}
	want := errors.New("from fn")
	if err := dev.Do(func() error { return want }); err != want {
		t.Fatalf("Do did not return fn's error: %v", err)
	}
}

func TestGPUMeasureCopy(t *testing.T) {
	dev := gpu(t)
	for _, size := range []int{64 << 10, 1 << 20, 8 << 20, 64 << 20} {
		iters := min(max((1<<30)/size, 20), 2000)
		for _, k := range []CopyKind{HostToDevice, DeviceToHost, DeviceToDevice} {
			r, err := dev.MeasureCopy(k, size, iters)
			if err != nil {
				t.Fatal(err)
			}
			if r.Elapsed <= 0 || r.GBps() <= 0 {
				t.Fatalf("%v: no time measured", r)
			}
			t.Logf("%v", r)
		}
	}
	if _, err := dev.MeasureCopy(CopyKind(0), 1024, 1); err == nil {
		t.Fatal("unknown copy kind accepted")
	}
}

// BenchmarkCall measures the fixed host cost of crossing into libcuda through purego: a bare
// call needing no context, and binding the primary context (LockOSThread + cuCtxSetCurrent)
// around nothing.
func BenchmarkCall(b *testing.B) {
	dev := gpu(b)
	f := dev.Driver().f
	b.Run("raw", func(b *testing.B) {
		var v int32
		b.ReportAllocs()
		for b.Loop() {
			dynlib.Call(f.cuDriverGetVersion, uintptr(unsafe.Pointer(&v)))
		}
	})
	b.Run("bind", func(b *testing.B) {
		b.ReportAllocs()
		nop := func() error { return nil }
		for b.Loop() {
			if err := dev.Do(nop); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkLaunchNoop measures the host cost of one kernel launch through purego (context
// bind, argument block, cuLaunchKernel).
func BenchmarkLaunchNoop(b *testing.B) {
	dev := gpu(b)
	ptx, err := os.ReadFile("testdata/kernels.ptx")
	if err != nil {
		b.Fatal(err)
	}
	m, err := dev.LoadModule(ptx)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	noop, err := m.Function("noop")
	if err != nil {
		b.Fatal(err)
	}
	s, err := dev.NewStream(true)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ReportAllocs()
	for b.Loop() {
		if err := noop.Launch(LaunchConfig{Stream: s}, U64(1), U32(2)); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Synchronize(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkStreamQuery measures the fixed cost of a bound driver call (LockOSThread,
// cuCtxSetCurrent, cuStreamQuery through purego).
func BenchmarkStreamQuery(b *testing.B) {
	dev := gpu(b)
	s, err := dev.NewStream(true)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Query(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestGPUPersistingL2: the set-aside reads back as set (within the driver's rounding and the
// device's maximum), a stream takes a persisting window over an allocation and clears it, and
// bad arguments are refused before the driver.
func TestGPUPersistingL2(t *testing.T) {
	dev := gpu(t)
	maxPersist, err := dev.Attribute(AttrMaxPersistingL2CacheSize)
	if err != nil {
		t.Fatal(err)
	}
	if maxPersist == 0 {
		t.Skip("this GPU has no persisting L2 (AttrMaxPersistingL2CacheSize 0)")
	}
	want := min(maxPersist, 4<<20)
	if err := dev.SetPersistingL2(want); err != nil {
		t.Fatal(err)
	}
	defer dev.SetPersistingL2(0)
	got, err := dev.PersistingL2()
	if err != nil || got == 0 || got > maxPersist {
		t.Fatalf("PersistingL2 = %d, %v after setting %d (max %d)", got, err, want, maxPersist)
	}
	m, err := dev.AllocDevice(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s, err := dev.NewStream(true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.SetAccessPolicyWindow(m.Ptr(), 1<<20, 1, AccessPersisting, AccessStreaming); err != nil {
		t.Fatal(err)
	}
	if err := dev.MemsetAsync(m.Ptr(), 7, 1<<20, s); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if err := s.SetAccessPolicyWindow(0, 0, 0, AccessNormal, AccessNormal); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		n int
		r float32
	}{{-1, 1}, {1, -0.5}, {1, 1.5}, {1, float32(math.NaN())}} {
		if err := s.SetAccessPolicyWindow(m.Ptr(), bad.n, bad.r, AccessPersisting, AccessNormal); err == nil {
			t.Errorf("window of %d bytes, ratio %v accepted", bad.n, bad.r)
		}
	}
	if err := dev.SetPersistingL2(-1); err == nil {
		t.Error("negative set-aside accepted")
	}
}
