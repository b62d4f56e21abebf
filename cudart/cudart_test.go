package cudart

import (
	"errors"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/daqiri-go/daqiri/engine"
)

// Device and host-pinned memory back memory regions directly.
var (
	_ engine.Memory = (*DeviceMem)(nil)
	_ engine.Memory = (*HostMem)(nil)
)

// These tests need no GPU and run everywhere.

func TestOpenWithoutDriver(t *testing.T) {
	if libcuda.Open() == nil {
		t.Skip("libcuda.so.1 is present here: the no-driver path cannot be exercised (the GPU tests cover Open)")
	}
	for range 2 { // the failure is remembered and reported the same way every time
		d, err := Open()
		if d != nil || !errors.Is(err, ErrNoDriver) {
			t.Fatalf("Open without libcuda = %v, %v; want ErrNoDriver", d, err)
		}
		if !strings.Contains(err.Error(), "libcuda.so.1") {
			t.Fatalf("error does not name the library: %v", err)
		}
	}
}

func TestErrorIs(t *testing.T) {
	e := &Error{Op: "cuMemAlloc(1024 bytes, GPU 0)", Code: ResultOutOfMemory, Name: "CUDA_ERROR_OUT_OF_MEMORY", Text: "out of memory"}
	wrapped := fmt.Errorf("region rx: %w", e)
	if !errors.Is(wrapped, ResultOutOfMemory) || errors.Is(wrapped, ResultNotReady) {
		t.Fatalf("errors.Is on the Result does not follow the code: %v", wrapped)
	}
	var got *Error
	if !errors.As(wrapped, &got) || got.Code != ResultOutOfMemory {
		t.Fatal("errors.As does not find the *Error")
	}
	for _, want := range []string{"cuMemAlloc(1024 bytes, GPU 0)", "CUDA_ERROR_OUT_OF_MEMORY", "(2)", "out of memory"} {
		if !strings.Contains(e.Error(), want) {
			t.Fatalf("%q lacks %q", e.Error(), want)
		}
	}
	// A code the driver had no name for still says what it is.
	unk := (&Error{Op: "cuX", Code: Result(12345)}).Error()
	if !strings.Contains(unk, "12345") || !strings.Contains(unk, "unknown") {
		t.Fatalf("unnamed code: %q", unk)
	}
	if !strings.Contains(ResultNotReady.Error(), "600") {
		t.Fatalf("Result.Error: %q", ResultNotReady.Error())
	}
}

// The driver reads each kernel parameter from kernelParams[i] at the parameter's own width;
// check that reading back at that width gives the value for fresh random inputs.
func TestArgPacking(t *testing.T) {
	for range 200 {
		u8, i8 := uint8(mrand.Uint32()), int8(mrand.Uint32())
		u16, i16 := uint16(mrand.Uint32()), int16(mrand.Uint32())
		u32, i32 := mrand.Uint32(), int32(mrand.Uint32())
		u64, i64 := mrand.Uint64(), int64(mrand.Uint64())
		f32 := math.Float32frombits(mrand.Uint32())
		f64 := math.Float64frombits(mrand.Uint64())
		dp := DevicePtr(mrand.Uint64())
		args := []Arg{U8(u8), I8(i8), U16(u16), I16(i16), U32(u32), I32(i32), U64(u64), I64(i64), F32(f32), F64(f64), Ptr(dp)}
		p := new(params)
		if err := p.pack(args); err != nil {
			t.Fatal(err)
		}
		ok := *(*uint8)(p.ptrs[0]) == u8 && *(*int8)(p.ptrs[1]) == i8 &&
			*(*uint16)(p.ptrs[2]) == u16 && *(*int16)(p.ptrs[3]) == i16 &&
			*(*uint32)(p.ptrs[4]) == u32 && *(*int32)(p.ptrs[5]) == i32 &&
			*(*uint64)(p.ptrs[6]) == u64 && *(*int64)(p.ptrs[7]) == i64 &&
			math.Float32bits(*(*float32)(p.ptrs[8])) == math.Float32bits(f32) &&
			math.Float64bits(*(*float64)(p.ptrs[9])) == math.Float64bits(f64) &&
			*(*DevicePtr)(p.ptrs[10]) == dp
		if !ok {
			t.Fatalf("packed arguments read back differently: %v", args)
		}
		for i := range args {
			if uintptr(p.ptrs[i])%8 != 0 {
				t.Fatalf("argument %d slot not 8-byte aligned", i)
			}
		}
	}
	if err := new(params).pack(make([]Arg, MaxArgs+1)); err == nil {
		t.Fatalf("%d arguments accepted", MaxArgs+1)
	}
	if err := new(params).pack(make([]Arg, MaxArgs)); err != nil {
		t.Fatalf("%d arguments refused: %v", MaxArgs, err)
	}
}

// A by-value block (Bytes) is read by the driver in place: its slot points at the caller's
// bytes, among scalar slots that keep their values; an empty one is refused.
func TestArgPackingBytes(t *testing.T) {
	for range 50 {
		b := make([]byte, 1+mrand.IntN(32<<10))
		for i := range b {
			b[i] = byte(mrand.Uint32())
		}
		u32, dp := mrand.Uint32(), DevicePtr(mrand.Uint64())
		p := new(params)
		if err := p.pack([]Arg{Bytes(b), Ptr(dp), U32(u32)}); err != nil {
			t.Fatal(err)
		}
		if p.ptrs[0] != unsafe.Pointer(&b[0]) {
			t.Fatalf("by-value parameter of %d bytes: slot points at %p, not the bytes at %p", len(b), p.ptrs[0], &b[0])
		}
		if *(*DevicePtr)(p.ptrs[1]) != dp || *(*uint32)(p.ptrs[2]) != u32 {
			t.Fatalf("scalars beside a by-value parameter read back differently")
		}
	}
	if err := new(params).pack([]Arg{Bytes(nil)}); err == nil {
		t.Fatalf("empty by-value parameter accepted")
	}
	if err := new(params).pack([]Arg{Bytes([]byte{})}); err == nil {
		t.Fatalf("empty (non-nil) by-value parameter accepted")
	}
}

func TestDim3(t *testing.T) {
	if got := (Dim3{}).norm(); got != (Dim3{1, 1, 1}) {
		t.Fatalf("zero Dim3 = %v", got)
	}
	if got := (Dim3{X: 7, Z: 3}).norm(); got != (Dim3{7, 1, 3}) {
		t.Fatalf("Dim3{7,0,3} = %v", got)
	}
}

func TestCheckDMABufRange(t *testing.T) {
	const page = 4096
	for range 200 {
		base := DevicePtr(mrand.Uint64N(1<<40)) * page
		pages := 1 + mrand.IntN(1024)
		if base == 0 {
			base = page
		}
		if err := checkDMABufRange(base, pages*page, page); err != nil {
			t.Fatalf("aligned range %v+%d refused: %v", base, pages*page, err)
		}
		off := 1 + mrand.IntN(page-1)
		if checkDMABufRange(base+DevicePtr(off), pages*page, page) == nil {
			t.Fatalf("unaligned address %v accepted", base+DevicePtr(off))
		}
		if err := checkDMABufRange(base, pages*page+off, page); err == nil || !strings.Contains(err.Error(), "4096") {
			t.Fatalf("unaligned size accepted or unclear: %v", err)
		}
	}
	for _, c := range []struct {
		p    DevicePtr
		size int
	}{{0, page}, {page, 0}, {page, -page}} {
		if checkDMABufRange(c.p, c.size, page) == nil {
			t.Fatalf("range %v+%d accepted", c.p, c.size)
		}
	}
}

// Bad input and closed objects fail cleanly before reaching the driver, so a zero Device
// (no driver loaded at all) is enough to check them.
func TestClosedAndBadInput(t *testing.T) {
	dev := &Device{}
	if _, err := dev.AllocDevice(0); err == nil || !strings.Contains(err.Error(), "size") {
		t.Fatalf("AllocDevice(0): %v", err)
	}
	if _, err := dev.AllocHostPinned(-1); err == nil {
		t.Fatal("AllocHostPinned(-1) accepted")
	}
	if _, err := dev.RegisterHost(nil); err == nil {
		t.Fatal("RegisterHost(nil) accepted")
	}
	if _, err := dev.LoadModule(nil); err == nil {
		t.Fatal("LoadModule(nil) accepted")
	}
	if _, err := dev.ExportDMABuf(0, 4096); err == nil {
		t.Fatal("ExportDMABuf of nil pointer accepted")
	}
	for name, err := range map[string]error{
		"AllocDevice":     func() error { _, err := dev.AllocDevice(64); return err }(),
		"AllocHostPinned": func() error { _, err := dev.AllocHostPinned(64); return err }(),
		"NewStream":       func() error { _, err := dev.NewStream(true); return err }(),
		"NewEvent":        func() error { _, err := dev.NewEvent(true, false); return err }(),
		"CopyHtoD":        dev.CopyHtoD(1, []byte{1}),
		"Memset":          dev.Memset(1, 0, 1),
		"Synchronize":     dev.Synchronize(),
		"Do":              dev.Do(func() error { return nil }),
	} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s on a closed Device: %v, want ErrClosed", name, err)
		}
	}
	// Zero-length work is a no-op even on a closed device; negative lengths are refused.
	if err := dev.CopyHtoD(1, nil); err != nil {
		t.Fatalf("empty CopyHtoD: %v", err)
	}
	if dev.CopyDtoD(1, 2, -1) == nil || dev.Memset(1, 0, -5) == nil || dev.CopyDtoDAsync(1, 2, -1, nil) == nil {
		t.Fatal("negative length accepted")
	}
	if err := dev.Close(); err != nil {
		t.Fatalf("Close of a closed Device: %v", err)
	}

	var s *Stream
	if s.Synchronize() == nil || func() error { _, err := s.Query(); return err }() == nil || s.WaitEvent(nil) == nil {
		t.Fatal("nil stream accepted by a method that needs a real one")
	}
	if s.Handle() != 0 || s.Close() != nil {
		t.Fatal("nil stream: Handle or Close")
	}
	if _, err := s.Time(1, nil); err == nil {
		t.Fatal("Time on nil stream accepted")
	}
	closed := &Stream{dev: dev}
	if !errors.Is(closed.Synchronize(), ErrClosed) {
		t.Fatal("closed stream not reported")
	}
	other := &Stream{dev: &Device{ordinal: 1}, h: 1}
	if _, err := dev.streamFor(other); err == nil || !strings.Contains(err.Error(), "GPU 1") {
		t.Fatalf("stream of another GPU accepted: %v", err)
	}
	e := &Event{dev: dev}
	if !errors.Is(e.Record(nil), ErrClosed) || !errors.Is(e.Synchronize(), ErrClosed) || e.Close() != nil {
		t.Fatal("closed event")
	}
	if _, err := e.Elapsed(e); !errors.Is(err, ErrClosed) {
		t.Fatalf("Elapsed on closed events: %v", err)
	}
	m := &Module{dev: dev}
	if _, err := m.Function("k"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Function on closed module: %v", err)
	}
	f := &Function{m: m, name: "k"}
	if !errors.Is(f.Launch(LaunchConfig{}), ErrClosed) {
		t.Fatal("Launch on closed module")
	}
	if _, err := dev.MeasureCopy(HostToDevice, 0, 1); err == nil {
		t.Fatal("MeasureCopy of 0 bytes accepted")
	}
	if _, err := dev.MeasureCopy(DeviceToDevice, 64, MaxTimedIters+1); err == nil {
		t.Fatal("MeasureCopy iteration bound not enforced")
	}
}

func TestStrings(t *testing.T) {
	for k, want := range map[fmt.Stringer]string{
		HostToDevice: "HtoD", DeviceToHost: "DtoH", DeviceToDevice: "DtoD", CopyKind(9): "CopyKind(9)",
		MemoryUnregistered: "unregistered", MemoryHost: "host", MemoryDevice: "device", MemoryArray: "array",
		MemoryUnified: "unified", MemoryType(7): "MemoryType(7)", DevicePtr(0x1000): "0x1000",
	} {
		if k.String() != want {
			t.Errorf("%#v.String() = %q, want %q", k, k.String(), want)
		}
	}
	r := CopyResult{Kind: DeviceToDevice, Size: 1 << 20, Iters: 1000, Elapsed: 20 * time.Millisecond}
	if g := r.GBps(); math.Abs(g-52.4288) > 1e-9 {
		t.Fatalf("GBps = %v", g)
	}
	if (CopyResult{}).GBps() != 0 {
		t.Fatal("GBps of an empty result")
	}
	if !strings.Contains(r.String(), "52.43 GB/s") {
		t.Fatalf("CopyResult.String = %q", r.String())
	}
}

// TestAccessPolicyWindowLayout: the window and the attribute union the driver reads through
// cuStreamSetAttribute have cuda.h's sizes and offsets (CUaccessPolicyWindow: base_ptr 0,
// num_bytes 8, hitRatio 16, hitProp 20, missProp 24, 32 bytes; CUlaunchAttributeValue 64).
func TestAccessPolicyWindowLayout(t *testing.T) {
	var w accessPolicyWindow
	got := []uintptr{unsafe.Offsetof(w.base), unsafe.Offsetof(w.bytes), unsafe.Offsetof(w.hitRatio), unsafe.Offsetof(w.hitProp),
		unsafe.Offsetof(w.missProp), unsafe.Sizeof(w), unsafe.Sizeof(streamAttrValue{})}
	want := []uintptr{0, 8, 16, 20, 24, 32, 64}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("layout %v, want %v", got, want)
		}
	}
}

// TestDMABufName: the name ExportDMABuf gives a DMA-BUF parses back, fits the kernel's
// 32-byte limit, and other names do not parse.
func TestDMABufName(t *testing.T) {
	for _, c := range []struct {
		ord int
		ptr DevicePtr
	}{{0, 0x7f0000000000}, {7, 0xffffffffffffffff}, {1, 0x1000}} {
		n := DMABufName(c.ord, c.ptr)
		if len(n) >= 32 {
			t.Errorf("%q is %d bytes; DMA_BUF_NAME_LEN is 32 with the NUL", n, len(n))
		}
		ord, ptr, ok := ParseDMABufName(n)
		if !ok || ord != c.ord || ptr != c.ptr {
			t.Errorf("ParseDMABufName(%q) = %d, %v, %v", n, ord, ptr, ok)
		}
	}
	for _, bad := range []string{"", "cuda:0", "cuda:-1:0x1000", "cuda:0:0x0", "cuda:0:4096", "cuda:0:0x1000x", "nv:0:0x1000", "cuda:0:0x01000"} {
		if _, _, ok := ParseDMABufName(bad); ok {
			t.Errorf("ParseDMABufName(%q) accepted", bad)
		}
	}
}
