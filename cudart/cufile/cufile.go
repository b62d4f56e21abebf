// Package cufile is the binding to NVIDIA's cuFile library (GPUDirect Storage,
// libcufile.so.0), loaded at run time through internal/dynlib like the CUDA driver binding
// beside it: no cgo. It holds everything that touches C memory layouts and raw pointers, so
// that its user (capture/gds) is plain Go over typed calls.
//
// Facts used here are from NVIDIA's "GDS cuFile API Reference"
// (docs.nvidia.com/gpudirect-storage/api-reference-guide): CUfileError_t is {int err; int
// cu_err} and is returned by value; CUfileDescr_t is {int type; union {int fd; void
// *handle}; const CUfileFSOps_t *fs_ops} with type CU_FILE_HANDLE_TYPE_OPAQUE_FD = 1;
// cuFileRead/cuFileWrite(handle, buffer base, size, file offset, buffer offset) return the
// bytes moved, -1 with errno set, or a negative CUfileOpError; cuFileDriverClose is a macro
// for cuFileDriverClose_v2 in current headers.
//
// Calls that need a CUDA context (all but loading) must run with one current, on the OS
// thread that reads errno afterwards: callers wrap them in cudart.Device.Do.
package cufile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"unsafe"

	"github.com/daqiri-go/daqiri/internal/dynlib"
)

// LibraryEnv names an environment variable that, when set, is the only libcufile path tried.
const LibraryEnv = "DAQIRI_CUFILE_LIB"

// ErrNoLibrary is wrapped by Open's error when libcufile cannot be loaded.
var ErrNoLibrary = errors.New("cuFile library (libcufile.so.0) not found")

// handleTypeOpaqueFD is CU_FILE_HANDLE_TYPE_OPAQUE_FD.
const handleTypeOpaqueFD = 1

// cuFile operation errors (CUfileOpError) callers may want to name; the full table is in
// the API reference. Codes above 5000 are cuFile's own, below are POSIX errnos.
const (
	opBaseErr = 5000
	// OpDriverNotInitialized is CU_FILE_DRIVER_NOT_INITIALIZED: nvidia-fs not loaded.
	OpDriverNotInitialized = 5001
	// OpCUDADriverError is CU_FILE_CUDA_DRIVER_ERROR: Error.CUDA holds the CUresult.
	OpCUDADriverError = 5011
	// OpHandleNotRegistered is CU_FILE_HANDLE_NOT_REGISTERED.
	OpHandleNotRegistered = 5027
)

var opErrorNames = map[int]string{
	5001: "nvidia-fs driver not loaded", 5002: "invalid property", 5003: "property range error",
	5004: "nvidia-fs driver version mismatch", 5005: "nvidia-fs driver version read error",
	5006: "driver shutdown in progress", 5007: "GDS not supported on this platform",
	5008: "GDS not supported on this file", 5009: "GDS not supported on this GPU",
	5010: "nvidia-fs ioctl error", 5011: "CUDA driver error", 5012: "invalid device pointer",
	5013: "invalid pointer memory type", 5014: "pointer range exceeds the allocation",
	5015: "CUDA context mismatch", 5016: "beyond the maximum pinned memory size",
	5017: "beyond the mapped size", 5018: "unsupported file type", 5019: "unsupported file open flags",
	5020: "file descriptor not opened with O_DIRECT", 5022: "invalid API arguments",
	5023: "device pointer already registered", 5024: "device pointer lookup failure",
	5025: "driver or file access error", 5026: "driver already open", 5027: "file descriptor not registered (cufile.log says why; on a block device without udev properties cuFile refuses every file: where no udev runs, as in some VMs, the lines E:ID_FS_USAGE=filesystem and E:ID_FS_TYPE=<fstype> in /run/udev/data/b<major>:<minor> of the file system's device let it through)",
	5028: "file descriptor already registered", 5029: "GPU device not found", 5030: "internal error",
	5031: "failed to obtain a new file descriptor", 5033: "nvidia-fs initialization error",
	5034: "GDS disabled by configuration for this file", 5043: "out of memory", 5044: "I/O error",
	5047: "invalid context", 5048: "nvidia-fs internal error", 5049: "compatibility mode is off",
}

// Error is a failed cuFile call.
type Error struct {
	Op    string
	Code  int           // CUfileOpError (> 5000), 0 when Errno says what failed
	CUDA  int           // CUresult when Code is CU_FILE_CUDA_DRIVER_ERROR
	Errno syscall.Errno // POSIX error of a failed read or write
}

// Error reads "gds: <op>: <what>" (GPUDirect Storage is what the user asked for).
func (e *Error) Error() string {
	switch {
	case e.Errno != 0:
		return fmt.Sprintf("gds: %s: %v", e.Op, e.Errno)
	case e.Code == OpCUDADriverError:
		return fmt.Sprintf("gds: %s: CUDA driver error (CUresult %d)", e.Op, e.CUDA)
	}
	name := opErrorNames[e.Code]
	if name == "" {
		name = "cuFile error"
	}
	return fmt.Sprintf("gds: %s: %s (%d)", e.Op, name, e.Code)
}

// Unwrap exposes the errno, so errors.Is(err, syscall.ENOSPC) works.
func (e *Error) Unwrap() error {
	if e.Errno != 0 {
		return e.Errno
	}
	return nil
}

// descr mirrors CUfileDescr_t on 64-bit Linux: the int type, padding to the 8-byte aligned
// union {int fd; void *handle}, then the fs_ops pointer (nil: let cuFile use the VFS).
type descr struct {
	typ   int32
	_     int32
	fd    int64 // the union; fd occupies its first 4 bytes (little-endian), the rest stay 0
	fsOps uintptr
}

// Library is a loaded libcufile's symbol table.
type Library struct {
	name                                   string
	driverOpen, driverClose                uintptr
	handleRegister, handleDeregister       uintptr
	read, write, getVersion, errnoLocation uintptr
	version                                int
	libc                                   *dynlib.Library
}

// Handle is a file registered with cuFile (CUfileHandle_t).
type Handle uintptr

// Candidates lists where libcufile may be: the loader's search path first, then the CUDA
// toolkit's usual directories and NVIDIA's Python wheels (nvidia-cufile); only the path in
// LibraryEnv when that is set.
func Candidates() []string {
	if p := os.Getenv(LibraryEnv); p != "" {
		return []string{p}
	}
	names := []string{"libcufile.so.0", "libcufile.so"}
	for _, pat := range []string{
		"/usr/local/cuda/lib64/libcufile.so.0",
		"/usr/local/cuda/targets/*/lib/libcufile.so.0",
		"/usr/local/cuda-*/lib64/libcufile.so.0",
		"/usr/local/cuda-*/targets/*/lib/libcufile.so.0",
		"/opt/*/.venv/lib/python3*/site-packages/nvidia/*/lib/libcufile.so.0",
		"/opt/*/lib/python3*/site-packages/nvidia/*/lib/libcufile.so.0",
		"/usr/local/lib/python3*/dist-packages/nvidia/*/lib/libcufile.so.0",
		"/usr/local/lib/python3*/site-packages/nvidia/*/lib/libcufile.so.0",
		"/usr/lib/python3/dist-packages/nvidia/*/lib/libcufile.so.0",
	} {
		m, _ := filepath.Glob(pat)
		names = append(names, m...)
	}
	return names
}

// Open loads libcufile from the first of names that loads and resolves its symbols. When
// none loads the error wraps ErrNoLibrary and names what was tried; a library without
// cuFile's symbols is refused naming the first one missing.
func Open(names []string) (*Library, error) {
	dl := dynlib.New(names...)
	l := &Library{}
	err := dl.Resolve([]dynlib.Symbol{
		{Name: "cuFileDriverOpen", Addr: &l.driverOpen},
		{Name: "cuFileDriverClose_v2", Addr: &l.driverClose, Optional: true},
		{Name: "cuFileHandleRegister", Addr: &l.handleRegister},
		{Name: "cuFileHandleDeregister", Addr: &l.handleDeregister},
		{Name: "cuFileRead", Addr: &l.read},
		{Name: "cuFileWrite", Addr: &l.write},
		{Name: "cuFileGetVersion", Addr: &l.getVersion, Optional: true},
	})
	if err != nil {
		if errors.Is(err, dynlib.ErrNotFound) {
			return nil, fmt.Errorf("%w (%v); GPUDirect Storage needs the cuFile library from the CUDA toolkit or the nvidia-cufile package, or set %s to its path", ErrNoLibrary, err, LibraryEnv)
		}
		return nil, err
	}
	l.name = dl.Name()
	if l.driverClose == 0 {
		if p, err := dl.Sym("cuFileDriverClose"); err == nil {
			l.driverClose = p
		}
	}
	// errno is per thread; cuFile's POSIX failures are read from it right after the call, on
	// the same locked OS thread.
	l.libc = dynlib.New("libc.so.6")
	if p, err := l.libc.Sym("__errno_location"); err == nil {
		l.errnoLocation = p
	}
	if l.getVersion != 0 {
		var v int32
		if r := dynlib.Call(l.getVersion, uintptr(unsafe.Pointer(&v))); int32(uint32(r)) == 0 {
			l.version = int(v)
		}
	}
	return l, nil
}

// Name is the file name the library loaded from.
func (l *Library) Name() string { return l.name }

// Version is cuFile's version number as cuFileGetVersion reports it (0 when the library
// has no such call).
func (l *Library) Version() int { return l.version }

// fileError turns a returned CUfileError_t (two 32-bit fields in the return register) into an
// error.
func fileError(ret uintptr, op string) error {
	code := int(int32(uint32(ret)))
	if code == 0 {
		return nil
	}
	return &Error{Op: op, Code: code, CUDA: int(int32(uint32(uint64(ret) >> 32)))}
}

// ioError interprets cuFileRead/cuFileWrite's ssize_t result: bytes moved, or -1 and errno,
// or a negative CUfileOpError.
func (l *Library) ioError(ret int64, op string) error {
	switch {
	case ret >= 0:
		return nil
	case ret == -1:
		e := &Error{Op: op, Errno: syscall.EIO}
		if l.errnoLocation != 0 {
			if p := dynlib.Call(l.errnoLocation); p != 0 {
				// p is libc's thread-local errno, C memory the Go GC does not manage.
				e.Errno = syscall.Errno(*(*int32)(unsafe.Add(nil, p)))
			}
		}
		return e
	case -ret > opBaseErr:
		return &Error{Op: op, Code: int(-ret)}
	default:
		return &Error{Op: op, Errno: syscall.Errno(-ret)}
	}
}

// DriverOpen opens the cuFile driver (cuFileDriverOpen).
func (l *Library) DriverOpen() error {
	return fileError(dynlib.Call(l.driverOpen), "cuFileDriverOpen")
}

// CanCloseDriver reports whether the library has cuFileDriverClose(_v2); without it the
// driver stays open for the life of the process.
func (l *Library) CanCloseDriver() bool { return l.driverClose != 0 }

// DriverClose closes the cuFile driver (cuFileDriverClose_v2); nil when the library cannot.
func (l *Library) DriverClose() error {
	if l.driverClose == 0 {
		return nil
	}
	return fileError(dynlib.Call(l.driverClose), "cuFileDriverClose")
}

// Register registers an open file descriptor with cuFile (cuFileHandleRegister); op names
// the call in an error.
func (l *Library) Register(fd int, op string) (Handle, error) {
	var h uintptr
	ds := descr{typ: handleTypeOpaqueFD, fd: int64(uint32(fd))}
	ret := dynlib.Call(l.handleRegister, uintptr(unsafe.Pointer(&h)), uintptr(unsafe.Pointer(&ds)))
	if err := fileError(ret, op); err != nil {
		return 0, err
	}
	return Handle(h), nil
}

// Deregister ends a registration (cuFileHandleDeregister).
func (l *Library) Deregister(h Handle) { dynlib.Call(l.handleDeregister, uintptr(h)) }

// Write writes n bytes from device address buf at byte off of the file (one cuFileWrite)
// and returns the bytes written; errno is read on this thread, so call it where the error is
// wanted. op names the call in an error.
func (l *Library) Write(h Handle, buf uintptr, n int, off int64, op string) (int64, error) {
	return l.io(l.write, h, buf, n, off, op)
}

// Read reads n bytes at byte off of the file into device address buf (one cuFileRead) and
// returns the bytes read.
func (l *Library) Read(h Handle, buf uintptr, n int, off int64, op string) (int64, error) {
	return l.io(l.read, h, buf, n, off, op)
}

func (l *Library) io(fn uintptr, h Handle, buf uintptr, n int, off int64, op string) (int64, error) {
	// The buffer offset argument is for buffers registered with cuFileBufRegister; these are
	// not, so callers move the base instead.
	ret := int64(dynlib.Call(fn, uintptr(h), buf, uintptr(n), uintptr(off), 0))
	return ret, l.ioError(ret, op)
}
