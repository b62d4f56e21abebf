// Package cudart is a small binding of the CUDA driver API (libcuda.so.1), without cgo: the
// library is opened through purego the first time Open is called. It provides what packet I/O
// needs: devices and their capabilities, device and host-pinned memory, registration of
// existing (hugepage) memory, DMA-BUF export of device memory for NICs, streams, events,
// copies, and PTX modules with typed kernel launches.
//
// # Without a GPU
//
// Importing the package costs nothing. Where libcuda.so.1 is absent, Open returns an error
// wrapping ErrNoDriver and nothing else can be reached, so CPU-only code keeps working.
//
// # Contexts and OS threads
//
// The driver API keeps a "current context" per OS thread, while goroutines move between OS
// threads. This package therefore manages it itself: every Device has its GPU's primary
// context (the one the CUDA runtime uses too), and every method that needs a context — on
// Device, DeviceMem, HostMem, Stream, Event, Module and Function — locks the calling goroutine
// to its OS thread, makes that context current, makes the call and unlocks the thread again
// (locks nest, so a worker that already holds runtime.LockOSThread keeps its lock). Like
// cudaSetDevice, it leaves the primary context current on that thread afterwards. Callers
// never need to lock threads for this package; to call other libraries that need a current
// context (cuFile), use Device.Do. Methods on Driver need no context.
//
// All methods are safe for concurrent use, except that Close must not race with any other use
// of the object it closes.
//
// # Binaries
//
// Builds with CGO_ENABLED=0, but a binary that imports this package is dynamically linked
// against libc.so.6 and libdl.so.2 (see package dynlib).
package cudart

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/daqiri-go/daqiri/internal/dynlib"
)

// ErrNoDriver is wrapped by the error Open returns when the NVIDIA driver library
// (libcuda.so.1) cannot be loaded.
var ErrNoDriver = errors.New("no NVIDIA driver (libcuda.so.1)")

// ErrClosed is returned when a Device, memory, stream, event or module is used after Close.
var ErrClosed = errors.New("cudart: use after Close")

// libcuda is the driver library. The versioned soname is what the driver package installs;
// the unversioned name exists only with development packages (or the toolkit's stub, which
// cuInit rejects with CUDA_ERROR_STUB_LIBRARY).
var libcuda = dynlib.New("libcuda.so.1", "libcuda.so")

// loadFuncs resolves the symbol table once; with the library handle inside libcuda it is the
// package's only state.
var loadFuncs = sync.OnceValues(func() (*funcs, error) {
	f := new(funcs)
	if err := libcuda.Resolve(f.table()); err != nil {
		if errors.Is(err, dynlib.ErrNotFound) {
			return nil, fmt.Errorf("%w: %v", ErrNoDriver, err)
		}
		return nil, fmt.Errorf("cudart: %w", err)
	}
	if f.cuEventElapsedTime == 0 {
		f.cuEventElapsedTime = f.cuEventElapsedTimeV1
	}
	if f.cuEventElapsedTime == 0 {
		return nil, fmt.Errorf("cudart: %s lacks both cuEventElapsedTime_v2 and cuEventElapsedTime", libcuda.Name())
	}
	return f, nil
})

// funcs holds the addresses of the driver functions this package calls. Names carry the
// version suffix that cuda.h's #defines map the plain names to (CUDA 12.6 cuda.h, lines
// 89-153, e.g. "#define cuMemAlloc cuMemAlloc_v2"), because the unsuffixed exports are the
// old 32-bit-size ABI kept for old binaries. The default-stream variants are used, not the
// _ptds/_ptsz per-thread-stream ones.
type funcs struct {
	cuInit, cuDriverGetVersion, cuGetErrorName, cuGetErrorString                   uintptr
	cuDeviceGetCount, cuDeviceGet, cuDeviceGetName, cuDeviceGetAttribute           uintptr
	cuDeviceTotalMem, cuDeviceGetPCIBusId                                          uintptr
	cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRelease                            uintptr
	cuCtxSetCurrent, cuCtxGetCurrent, cuCtxSynchronize                             uintptr
	cuMemGetInfo, cuMemAlloc, cuMemFree, cuMemHostAlloc, cuMemFreeHost             uintptr
	cuMemHostRegister, cuMemHostUnregister, cuMemHostGetDevicePointer              uintptr
	cuPointerSetAttribute, cuPointerGetAttribute, cuMemGetHandleForAddressRange    uintptr
	cuMemGetAddressRange                                                           uintptr
	cuMemcpyHtoD, cuMemcpyDtoH, cuMemcpyDtoD                                       uintptr
	cuMemcpyHtoDAsync, cuMemcpyDtoHAsync, cuMemcpyDtoDAsync                        uintptr
	cuMemsetD8, cuMemsetD8Async                                                    uintptr
	cuStreamCreate, cuStreamDestroy, cuStreamSynchronize, cuStreamQuery            uintptr
	cuStreamWaitEvent                                                              uintptr
	cuEventCreate, cuEventDestroy, cuEventRecord, cuEventSynchronize, cuEventQuery uintptr
	cuEventElapsedTime, cuEventElapsedTimeV1                                       uintptr
	cuModuleLoadData, cuModuleUnload, cuModuleGetFunction, cuLaunchKernel          uintptr
	cuCtxSetLimit, cuCtxGetLimit, cuStreamSetAttribute                             uintptr
}

func (f *funcs) table() []dynlib.Symbol {
	return []dynlib.Symbol{
		{Name: "cuInit", Addr: &f.cuInit},
		{Name: "cuDriverGetVersion", Addr: &f.cuDriverGetVersion},
		{Name: "cuGetErrorName", Addr: &f.cuGetErrorName},
		{Name: "cuGetErrorString", Addr: &f.cuGetErrorString},
		{Name: "cuDeviceGetCount", Addr: &f.cuDeviceGetCount},
		{Name: "cuDeviceGet", Addr: &f.cuDeviceGet},
		{Name: "cuDeviceGetName", Addr: &f.cuDeviceGetName},
		{Name: "cuDeviceGetAttribute", Addr: &f.cuDeviceGetAttribute},
		{Name: "cuDeviceTotalMem_v2", Addr: &f.cuDeviceTotalMem},
		{Name: "cuDeviceGetPCIBusId", Addr: &f.cuDeviceGetPCIBusId},
		{Name: "cuDevicePrimaryCtxRetain", Addr: &f.cuDevicePrimaryCtxRetain},
		{Name: "cuDevicePrimaryCtxRelease_v2", Addr: &f.cuDevicePrimaryCtxRelease},
		{Name: "cuCtxSetCurrent", Addr: &f.cuCtxSetCurrent},
		{Name: "cuCtxGetCurrent", Addr: &f.cuCtxGetCurrent},
		{Name: "cuCtxSynchronize", Addr: &f.cuCtxSynchronize},
		{Name: "cuMemGetInfo_v2", Addr: &f.cuMemGetInfo},
		{Name: "cuMemAlloc_v2", Addr: &f.cuMemAlloc},
		{Name: "cuMemFree_v2", Addr: &f.cuMemFree},
		{Name: "cuMemHostAlloc", Addr: &f.cuMemHostAlloc},
		{Name: "cuMemFreeHost", Addr: &f.cuMemFreeHost},
		{Name: "cuMemHostRegister_v2", Addr: &f.cuMemHostRegister},
		{Name: "cuMemHostUnregister", Addr: &f.cuMemHostUnregister},
		{Name: "cuMemHostGetDevicePointer_v2", Addr: &f.cuMemHostGetDevicePointer},
		{Name: "cuPointerSetAttribute", Addr: &f.cuPointerSetAttribute},
		{Name: "cuPointerGetAttribute", Addr: &f.cuPointerGetAttribute},
		// Added in CUDA 11.7: optional so that older drivers still work without DMA-BUF.
		{Name: "cuMemGetHandleForAddressRange", Addr: &f.cuMemGetHandleForAddressRange, Optional: true},
		{Name: "cuMemGetAddressRange_v2", Addr: &f.cuMemGetAddressRange},
		{Name: "cuMemcpyHtoD_v2", Addr: &f.cuMemcpyHtoD},
		{Name: "cuMemcpyDtoH_v2", Addr: &f.cuMemcpyDtoH},
		{Name: "cuMemcpyDtoD_v2", Addr: &f.cuMemcpyDtoD},
		{Name: "cuMemcpyHtoDAsync_v2", Addr: &f.cuMemcpyHtoDAsync},
		{Name: "cuMemcpyDtoHAsync_v2", Addr: &f.cuMemcpyDtoHAsync},
		{Name: "cuMemcpyDtoDAsync_v2", Addr: &f.cuMemcpyDtoDAsync},
		{Name: "cuMemsetD8_v2", Addr: &f.cuMemsetD8},
		{Name: "cuMemsetD8Async", Addr: &f.cuMemsetD8Async},
		{Name: "cuStreamCreate", Addr: &f.cuStreamCreate},
		{Name: "cuStreamDestroy_v2", Addr: &f.cuStreamDestroy},
		{Name: "cuStreamSynchronize", Addr: &f.cuStreamSynchronize},
		{Name: "cuStreamQuery", Addr: &f.cuStreamQuery},
		{Name: "cuStreamWaitEvent", Addr: &f.cuStreamWaitEvent},
		{Name: "cuEventCreate", Addr: &f.cuEventCreate},
		{Name: "cuEventDestroy_v2", Addr: &f.cuEventDestroy},
		{Name: "cuEventRecord", Addr: &f.cuEventRecord},
		{Name: "cuEventSynchronize", Addr: &f.cuEventSynchronize},
		{Name: "cuEventQuery", Addr: &f.cuEventQuery},
		// CUDA 13's cuda.h maps cuEventElapsedTime to cuEventElapsedTime_v2 (same signature)
		// and no longer declares the old one; older drivers have only the old one.
		{Name: "cuEventElapsedTime_v2", Addr: &f.cuEventElapsedTime, Optional: true},
		{Name: "cuEventElapsedTime", Addr: &f.cuEventElapsedTimeV1, Optional: true},
		{Name: "cuModuleLoadData", Addr: &f.cuModuleLoadData},
		{Name: "cuModuleUnload", Addr: &f.cuModuleUnload},
		{Name: "cuModuleGetFunction", Addr: &f.cuModuleGetFunction},
		{Name: "cuLaunchKernel", Addr: &f.cuLaunchKernel},
		// L2 persistence (CUDA 11.0+): optional, used only by SetPersistingL2 and
		// SetAccessPolicyWindow.
		{Name: "cuCtxSetLimit", Addr: &f.cuCtxSetLimit, Optional: true},
		{Name: "cuCtxGetLimit", Addr: &f.cuCtxGetLimit, Optional: true},
		{Name: "cuStreamSetAttribute", Addr: &f.cuStreamSetAttribute, Optional: true},
	}
}

// Driver is the loaded and initialised CUDA driver. It is cheap to copy around; all state
// lives in the driver library itself.
type Driver struct {
	f       *funcs
	version int
}

// Open loads libcuda.so.1 (the first time) and initialises the driver (cuInit). Without the
// library the error wraps ErrNoDriver; on a machine with the library but no usable GPU it is
// an *Error whose Code is ResultNoDevice (or another driver result).
func Open() (*Driver, error) {
	f, err := loadFuncs()
	if err != nil {
		return nil, err
	}
	d := &Driver{f: f}
	// cuInit(0): flags must be 0. Calling it again after success is a cheap no-op.
	if err := d.check(dynlib.Call(f.cuInit, 0), "cuInit"); err != nil {
		return nil, err
	}
	var v int32
	if err := d.check(dynlib.Call(f.cuDriverGetVersion, uintptr(unsafe.Pointer(&v))), "cuDriverGetVersion"); err != nil {
		return nil, err
	}
	d.version = int(v)
	return d, nil
}

// Version is the CUDA version the driver supports, as 1000*major + 10*minor (13000 = 13.0).
func (d *Driver) Version() int { return d.version }

// DeviceCount is the number of CUDA devices visible to the process.
func (d *Driver) DeviceCount() (int, error) {
	var n int32
	if err := d.check(dynlib.Call(d.f.cuDeviceGetCount, uintptr(unsafe.Pointer(&n))), "cuDeviceGetCount"); err != nil {
		return 0, err
	}
	return int(n), nil
}

// check turns a CUresult (in the low 32 bits of the return register) into nil or an *Error
// naming op. It allocates nothing on success, so hot paths use it with a constant op.
func (d *Driver) check(ret uintptr, op string) error {
	r := Result(int32(uint32(ret)))
	if r == ResultSuccess {
		return nil
	}
	return d.newError(r, op)
}

// checkf is check with a formatted op, for calls off the data path (the arguments are boxed
// on every call, success or not).
func (d *Driver) checkf(ret uintptr, format string, args ...any) error {
	r := Result(int32(uint32(ret)))
	if r == ResultSuccess {
		return nil
	}
	return d.newError(r, fmt.Sprintf(format, args...))
}

// newError builds an *Error with the driver's name and description for r.
func (d *Driver) newError(r Result, op string) *Error {
	e := &Error{Op: op, Code: r}
	// Both lookups store a pointer to a static C string in p; an unknown code makes them fail
	// with CUDA_ERROR_INVALID_VALUE and leave p nil.
	var p *byte
	if dynlib.Call(d.f.cuGetErrorName, uintptr(r), uintptr(unsafe.Pointer(&p))) == 0 {
		e.Name = dynlib.GoString(p, 256)
	}
	p = nil
	if dynlib.Call(d.f.cuGetErrorString, uintptr(r), uintptr(unsafe.Pointer(&p))) == 0 {
		e.Text = dynlib.GoString(p, 1024)
	}
	return e
}
