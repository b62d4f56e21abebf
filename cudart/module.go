package cudart

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/daqiri-go/daqiri/internal/dynlib"
)

// Module is loaded GPU code (PTX, compiled by the driver's JIT at load time, or a cubin).
type Module struct {
	dev *Device
	h   uintptr // CUmodule; 0 after Close
}

// LoadModule loads a PTX or cubin image into the device's primary context (cuModuleLoadData).
// PTX is compiled for this GPU now, so a PTX image newer than the driver fails with
// ResultUnsupportedPTXVersion. The image is copied; the caller may reuse it.
func (dev *Device) LoadModule(image []byte) (*Module, error) {
	if len(image) == 0 {
		return nil, fmt.Errorf("cudart: empty module image")
	}
	// PTX is text and the driver reads it up to a NUL; cubins are ELF and carry their own
	// length. A trailing NUL is harmless for both.
	img := make([]byte, len(image)+1)
	copy(img, image)
	if err := dev.bind(); err != nil {
		return nil, err
	}
	defer dev.unbind()
	m := &Module{dev: dev}
	if err := dev.d.checkf(dynlib.Call(dev.d.f.cuModuleLoadData, uintptr(unsafe.Pointer(&m.h)), uintptr(unsafe.Pointer(&img[0]))),
		"cuModuleLoadData(%d-byte image, GPU %d)", len(image), dev.ordinal); err != nil {
		return nil, err
	}
	return m, nil
}

// Function looks up a kernel by its symbol name (cuModuleGetFunction); declare kernels
// extern "C" so the name is not mangled. A missing name fails with ResultNotFound.
func (m *Module) Function(name string) (*Function, error) {
	if m.h == 0 {
		return nil, ErrClosed
	}
	cname, err := dynlib.CString(name)
	if err != nil {
		return nil, fmt.Errorf("cudart: kernel name: %w", err)
	}
	if err := m.dev.bind(); err != nil {
		return nil, err
	}
	defer m.dev.unbind()
	f := &Function{m: m, name: name}
	if err := m.dev.d.checkf(dynlib.Call(m.dev.d.f.cuModuleGetFunction, uintptr(unsafe.Pointer(&f.h)), m.h, uintptr(unsafe.Pointer(&cname[0]))),
		"cuModuleGetFunction(%q)", name); err != nil {
		return nil, err
	}
	return f, nil
}

// Close unloads the module (cuModuleUnload); its Functions become unusable. Idempotent.
func (m *Module) Close() error {
	if m.h == 0 {
		return nil
	}
	if err := m.dev.bind(); err != nil {
		return err
	}
	defer m.dev.unbind()
	h := m.h
	m.h = 0
	return m.dev.d.check(dynlib.Call(m.dev.d.f.cuModuleUnload, h), "cuModuleUnload")
}

// Function is a kernel in a loaded Module.
type Function struct {
	m    *Module
	h    uintptr // CUfunction
	name string
}

// Name is the kernel's symbol name.
func (f *Function) Name() string { return f.name }

// Arg is one kernel argument: a scalar or a device pointer, packed by one of the constructors
// below so that its width matches the kernel's parameter, or a by-value block of bytes
// (Bytes). Kernel parameters are read by the driver from memory, at the parameter's own
// width; a scalar Arg occupies an 8-byte slot with the value in its low-order bytes, which on
// little-endian machines is where a narrower parameter's bytes are.
type Arg struct {
	bits  uint64
	mem   []byte // Bytes: the parameter's bytes, read in place by the driver
	byval bool   // made by Bytes
}

// Bytes is a parameter passed by value that is wider than 8 bytes: a struct or an array in
// the kernel's parameter list (such as a table declared const __grid_constant__). b must
// hold at least the parameter's size, and the driver copies that many bytes from it during
// Launch, so b may be reused once Launch returns. Parameter lists past 4 KiB (up to 32 KiB)
// need CUDA 12.1 or newer and a Volta or newer GPU; elsewhere Launch fails.
func Bytes(b []byte) Arg { return Arg{mem: b, byval: true} }

// U8 is an unsigned char / uint8_t argument.
func U8(v uint8) Arg { return Arg{bits: uint64(v)} }

// I8 is a signed char / int8_t argument.
func I8(v int8) Arg { return Arg{bits: uint64(uint8(v))} }

// U16 is an unsigned short / uint16_t argument.
func U16(v uint16) Arg { return Arg{bits: uint64(v)} }

// I16 is a short / int16_t argument.
func I16(v int16) Arg { return Arg{bits: uint64(uint16(v))} }

// U32 is an unsigned int / uint32_t argument.
func U32(v uint32) Arg { return Arg{bits: uint64(v)} }

// I32 is an int / int32_t argument.
func I32(v int32) Arg { return Arg{bits: uint64(uint32(v))} }

// U64 is an unsigned long long / uint64_t / size_t argument.
func U64(v uint64) Arg { return Arg{bits: v} }

// I64 is a long long / int64_t argument.
func I64(v int64) Arg { return Arg{bits: uint64(v)} }

// F32 is a float argument.
func F32(v float32) Arg { return Arg{bits: uint64(math.Float32bits(v))} }

// F64 is a double argument.
func F64(v float64) Arg { return Arg{bits: math.Float64bits(v)} }

// Ptr is a device pointer argument (T* in the kernel).
func Ptr(p DevicePtr) Arg { return Arg{bits: uint64(p)} }

// MaxArgs is the most arguments Launch packs.
const MaxArgs = 32

// Dim3 is a grid or block shape; zero components count as 1.
type Dim3 struct{ X, Y, Z uint32 }

func (d Dim3) norm() Dim3 {
	if d.X == 0 {
		d.X = 1
	}
	if d.Y == 0 {
		d.Y = 1
	}
	if d.Z == 0 {
		d.Z = 1
	}
	return d
}

// LaunchConfig is how a kernel is launched.
type LaunchConfig struct {
	Grid, Block Dim3
	SharedMem   int     // dynamic shared memory per block, bytes
	Stream      *Stream // nil: the legacy default stream
}

// params is the kernelParams block cuLaunchKernel reads: ptrs[i] points at vals[i]. The
// driver copies the values during the call, so the block only has to live until it returns.
type params struct {
	vals [MaxArgs]uint64
	ptrs [MaxArgs]unsafe.Pointer
}

func (p *params) pack(args []Arg) error {
	if len(args) > MaxArgs {
		return fmt.Errorf("cudart: %d kernel arguments, at most %d supported", len(args), MaxArgs)
	}
	for i, a := range args {
		if a.byval {
			if len(a.mem) == 0 {
				return fmt.Errorf("cudart: kernel argument %d: empty by-value parameter", i)
			}
			p.ptrs[i] = unsafe.Pointer(unsafe.SliceData(a.mem))
			continue
		}
		p.vals[i] = a.bits
		p.ptrs[i] = unsafe.Pointer(&p.vals[i])
	}
	return nil
}

// Launch queues the kernel with the given arguments, which must match the kernel's parameter
// list in number, order and width (cuLaunchKernel). It returns once the launch is queued;
// launch-time errors (a bad configuration) are returned here, faults while running surface at
// the next synchronisation.
func (f *Function) Launch(cfg LaunchConfig, args ...Arg) error {
	if f.m.h == 0 {
		return ErrClosed
	}
	if cfg.SharedMem < 0 || cfg.SharedMem > math.MaxUint32 {
		return fmt.Errorf("cudart: launch of %s: %d bytes of shared memory", f.name, cfg.SharedMem)
	}
	dev := f.m.dev
	h, err := dev.streamFor(cfg.Stream)
	if err != nil {
		return err
	}
	p := new(params)
	if err := p.pack(args); err != nil {
		return err
	}
	g, b := cfg.Grid.norm(), cfg.Block.norm()
	if err := dev.bind(); err != nil {
		return err
	}
	defer dev.unbind()
	// The kernelParams pointer is converted in the argument list itself so that Call's
	// uintptrescapes keeps p on the heap and alive until the driver has copied the values.
	// A kernel without parameters reads none of the array.
	r := dynlib.Call(dev.d.f.cuLaunchKernel, f.h,
		uintptr(g.X), uintptr(g.Y), uintptr(g.Z), uintptr(b.X), uintptr(b.Y), uintptr(b.Z),
		uintptr(cfg.SharedMem), h, uintptr(unsafe.Pointer(&p.ptrs[0])), 0)
	if uint32(r) != 0 {
		return dev.d.checkf(r, "cuLaunchKernel(%s, grid %dx%dx%d, block %dx%dx%d, %d args)", f.name, g.X, g.Y, g.Z, b.X, b.Y, b.Z, len(args))
	}
	return nil
}
