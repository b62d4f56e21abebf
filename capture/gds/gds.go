// Package gds writes device-memory segments to files through NVIDIA's cuFile library
// (GPUDirect Storage, libcufile.so.0), loaded at run time through purego: no cgo. A *Driver
// is a capture.DeviceIO, so raw and pcap writers given one write device segments with
// cuFileWrite (raw files) or copy them to host memory (pcap records, S3 staging).
//
// Where the nvidia-fs kernel module is loaded, files are written through a second
// descriptor opened with O_DIRECT, as GPUDirect Storage needs; elsewhere cuFile runs in its
// compatibility mode, staging the data through host memory and writing with POSIX calls,
// which is the documented fallback when nvidia-fs is absent and properties.allow_compat_mode
// is true (its default) — see the cuFile API reference, "cuFile Compatibility Mode". Where
// libcufile cannot be loaded, Open fails with an error wrapping engine.ErrNotSupported
// (upstream's NOT_SUPPORTED when built without GDS).
//
// Facts used here are from NVIDIA's "GDS cuFile API Reference"
// (docs.nvidia.com/gpudirect-storage/api-reference-guide): CUfileError_t is {int err; int
// cu_err} and is returned by value; CUfileDescr_t is {int type; union {int fd; void
// *handle}; const CUfileFSOps_t *fs_ops} with type CU_FILE_HANDLE_TYPE_OPAQUE_FD = 1;
// cuFileRead/cuFileWrite(handle, buffer base, size, file offset, buffer offset) return the
// bytes moved, -1 with errno set, or a negative CUfileOpError; cuFileDriverClose is a macro
// for cuFileDriverClose_v2 in current headers.
package gds

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/daqiri-go/daqiri/capture"
	"github.com/daqiri-go/daqiri/cudart"
	"github.com/daqiri-go/daqiri/cudart/dynlib"
	"github.com/daqiri-go/daqiri/engine"
)

// LibraryEnv names an environment variable that, when set, is the only libcufile path tried.
const LibraryEnv = "DAQIRI_CUFILE_LIB"

// ErrNoLibrary is wrapped (together with engine.ErrNotSupported) by Open's error when
// libcufile cannot be loaded.
var ErrNoLibrary = errors.New("cuFile library (libcufile.so.0) not found")

// handleTypeOpaqueFD is CU_FILE_HANDLE_TYPE_OPAQUE_FD.
const handleTypeOpaqueFD = 1

// cuFile operation errors (CUfileOpError) callers may want to name; the full table is in
// the API reference. Codes above 5000 are cuFile's own, below are POSIX errnos.
const (
	opBaseErr              = 5000
	opDriverNotInitialized = 5001 // CU_FILE_DRIVER_NOT_INITIALIZED: nvidia-fs not loaded
	opCUDADriverError      = 5011 // CU_FILE_CUDA_DRIVER_ERROR: cu_err holds the CUresult
	opHandleNotRegistered  = 5027 // CU_FILE_HANDLE_NOT_REGISTERED
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

// Error reads "gds: <op>: <what>".
func (e *Error) Error() string {
	switch {
	case e.Errno != 0:
		return fmt.Sprintf("gds: %s: %v", e.Op, e.Errno)
	case e.Code == opCUDADriverError:
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

// lib is the loaded library's symbol table.
type lib struct {
	name                                   string
	driverOpen, driverClose                uintptr
	handleRegister, handleDeregister       uintptr
	read, write, getVersion, errnoLocation uintptr
	refs                                   int
	version                                int
	driverOpenErr                          error
	mu                                     sync.Mutex
	libc                                   *dynlib.Library
	tried                                  []string
}

// candidates lists where libcufile may be: the loader's search path first, then the CUDA
// toolkit's usual directories and NVIDIA's Python wheels (nvidia-cufile).
func candidates() []string {
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

// openLibrary loads libcufile from names and resolves its symbols.
func openLibrary(names []string) (*lib, error) {
	dl := dynlib.New(names...)
	l := &lib{tried: names}
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
			return nil, fmt.Errorf("%w: %w (%v); GPUDirect Storage needs the cuFile library from the CUDA toolkit or the nvidia-cufile package, or set %s to its path", engine.ErrNotSupported, ErrNoLibrary, err, LibraryEnv)
		}
		return nil, fmt.Errorf("gds: %w (%w)", err, engine.ErrNotSupported)
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

// loaded is the process's libcufile, loaded on first Open.
var loaded = sync.OnceValues(func() (*lib, error) { return openLibrary(candidates()) })

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
func (l *lib) ioError(ret int64, op string) error {
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

// Mode is how cuFile moves data on this machine.
type Mode string

// Modes.
const (
	ModeGDS    Mode = "gds"    // nvidia-fs is loaded: direct DMA between GPU and storage where the file system allows
	ModeCompat Mode = "compat" // no nvidia-fs: cuFile stages through host memory and uses POSIX I/O
)

// nvidiaFSLoaded reports whether the nvidia-fs kernel module is present (it creates
// /proc/driver/nvidia-fs).
func nvidiaFSLoaded() bool {
	_, err := os.Stat("/proc/driver/nvidia-fs")
	return err == nil
}

// Driver is an open cuFile driver bound to one GPU. It implements capture.DeviceIO. Methods
// are safe for concurrent use.
type Driver struct {
	l      *lib
	dev    *cudart.Device
	mode   Mode
	mu     sync.Mutex
	closed bool
}

var _ capture.DeviceIO = (*Driver)(nil)

// Open loads libcufile (once per process) and opens the cuFile driver (reference-counted
// across Drivers) with dev's primary context current. Without libcufile the error wraps
// engine.ErrNotSupported and ErrNoLibrary.
func Open(dev *cudart.Device) (*Driver, error) {
	if dev == nil {
		return nil, fmt.Errorf("gds: nil device: %w", engine.ErrNullPtr)
	}
	l, err := loaded()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.refs == 0 {
		var ret uintptr
		if err := dev.Do(func() error { ret = dynlib.Call(l.driverOpen); return nil }); err != nil {
			return nil, fmt.Errorf("gds: %w", err)
		}
		if err := fileError(ret, "cuFileDriverOpen"); err != nil {
			var fe *Error
			if errors.As(err, &fe) && fe.Code == opDriverNotInitialized {
				return nil, fmt.Errorf("%w: nvidia-fs is not loaded and cuFile's compatibility mode is off (properties.allow_compat_mode in cufile.json) (%w)", err, engine.ErrNotSupported)
			}
			return nil, err
		}
	}
	l.refs++
	mode := ModeCompat
	if nvidiaFSLoaded() {
		mode = ModeGDS
	}
	return &Driver{l: l, dev: dev, mode: mode}, nil
}

// Library is the path of the loaded libcufile.
func (d *Driver) Library() string { return d.l.name }

// Version is cuFile's version number as cuFileGetVersion reports it (0 when the library
// has no such call).
func (d *Driver) Version() int { return d.l.version }

// Mode says whether data goes through GPUDirect Storage or compatibility mode.
func (d *Driver) Mode() Mode { return d.mode }

// Device is the GPU the driver works with.
func (d *Driver) Device() *cudart.Device { return d.dev }

// Close drops this Driver's reference to the cuFile driver; the last one closes it. Files
// must be closed first. Idempotent.
func (d *Driver) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	d.mu.Unlock()
	l := d.l
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refs--
	if l.refs > 0 || l.driverClose == 0 {
		return nil
	}
	var ret uintptr
	if err := d.dev.Do(func() error { ret = dynlib.Call(l.driverClose); return nil }); err != nil {
		return fmt.Errorf("gds: %w", err)
	}
	return fileError(ret, "cuFileDriverClose")
}

func (d *Driver) live() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("gds: driver closed: %w", capture.ErrClosed)
	}
	return nil
}

// CopyToHost copies device memory at src into dst (cuMemcpyDtoH), for writers that need the
// bytes in host memory.
func (d *Driver) CopyToHost(dst []byte, src uintptr) error {
	return d.dev.CopyDtoH(dst, cudart.DevicePtr(src))
}

// File is an open file registered with cuFile.
type File struct {
	d      *Driver
	f      *os.File // the caller's file, kept alive while registered
	direct *os.File // second descriptor with O_DIRECT (GDS mode), nil otherwise
	handle uintptr
	mu     sync.Mutex
}

// OpenFile registers f for device-memory I/O (capture.DeviceIO).
func (d *Driver) OpenFile(f *os.File) (capture.DeviceFile, error) { return d.Open(f) }

// Open registers f with cuFile (cuFileHandleRegister). GPUDirect Storage needs a descriptor
// opened with O_DIRECT, so in GDS mode a second descriptor of the same file is opened that
// way (the caller's buffered writes of host segments keep using the original). cuFile's
// acceptance of a descriptor depends on its configuration (allow_compat_mode, the file
// system), so when it refuses the preferred descriptor the other kind is tried; the error
// names both refusals. Close the File before f.
func (d *Driver) Open(f *os.File) (*File, error) {
	if err := d.live(); err != nil {
		return nil, err
	}
	if f == nil {
		return nil, fmt.Errorf("gds: nil file: %w", engine.ErrNullPtr)
	}
	file := &File{d: d, f: f}
	first, second := false, true // false: the caller's descriptor; true: an O_DIRECT one
	if d.mode == ModeGDS {
		first, second = true, false
	}
	var errs []error
	for _, direct := range []bool{first, second} {
		fd := int(f.Fd())
		what := "descriptor"
		if direct {
			df, err := os.OpenFile(f.Name(), os.O_RDWR|unix.O_DIRECT|unix.O_NOFOLLOW, 0)
			if err != nil {
				errs = append(errs, fmt.Errorf("opening %s with O_DIRECT: %w", f.Name(), err))
				continue
			}
			file.direct, fd, what = df, int(df.Fd()), "O_DIRECT descriptor"
		}
		ds := descr{typ: handleTypeOpaqueFD, fd: int64(uint32(fd))}
		var ret uintptr
		if err := d.dev.Do(func() error {
			ret = dynlib.Call(d.l.handleRegister, uintptr(unsafe.Pointer(&file.handle)), uintptr(unsafe.Pointer(&ds)))
			return nil
		}); err != nil {
			file.closeDirect()
			return nil, fmt.Errorf("gds: %w", err)
		}
		err := fileError(ret, "cuFileHandleRegister("+f.Name()+", "+what+")")
		if err == nil {
			return file, nil
		}
		file.handle = 0
		file.closeDirect()
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

func (f *File) closeDirect() {
	if f.direct != nil {
		f.direct.Close()
		f.direct = nil
	}
}

// WriteAt writes n bytes from device address src at byte off of the file (cuFileWrite),
// looping over short writes.
func (f *File) WriteAt(src uintptr, n int, off int64) error {
	return f.io(f.d.l.write, "cuFileWrite", src, n, off)
}

// ReadAt reads n bytes at byte off of the file into device address dst (cuFileRead). Reading
// past the end of the file is an error.
func (f *File) ReadAt(dst uintptr, n int, off int64) error {
	return f.io(f.d.l.read, "cuFileRead", dst, n, off)
}

func (f *File) io(fn uintptr, op string, buf uintptr, n int, off int64) error {
	if n < 0 || off < 0 {
		return fmt.Errorf("gds: %s of %d bytes at offset %d: %w", op, n, off, engine.ErrInvalidParameter)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.handle == 0 {
		return fmt.Errorf("gds: %s on a closed file: %w", op, capture.ErrClosed)
	}
	done := 0
	// Bounded: every round either moves at least one byte or returns.
	for done < n {
		var ret int64
		var ioErr error
		if err := f.d.dev.Do(func() error {
			// The buffer offset argument is for buffers registered with cuFileBufRegister;
			// these are not, so the base moves instead.
			ret = int64(dynlib.Call(fn, f.handle, buf+uintptr(done), uintptr(n-done), uintptr(off+int64(done)), 0))
			// errno must be read on this thread before anything else can change it.
			ioErr = f.d.l.ioError(ret, fmt.Sprintf("%s(%s, %d bytes at %d)", op, f.f.Name(), n-done, off+int64(done)))
			return nil
		}); err != nil {
			return fmt.Errorf("gds: %w", err)
		}
		if ioErr != nil {
			return ioErr
		}
		if ret == 0 {
			return fmt.Errorf("gds: %s(%s) moved 0 of %d bytes at offset %d (end of file?): %w", op, f.f.Name(), n-done, off+int64(done), engine.ErrGenericFailure)
		}
		done += int(ret)
	}
	runtime.KeepAlive(f.f)
	return nil
}

// Close deregisters the file (cuFileHandleDeregister); it does not close the *os.File.
// Idempotent.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.handle == 0 {
		return nil
	}
	h := f.handle
	f.handle = 0
	err := f.d.dev.Do(func() error { dynlib.Call(f.d.l.handleDeregister, h); return nil })
	f.closeDirect()
	runtime.KeepAlive(f.f)
	if err != nil {
		return fmt.Errorf("gds: %w", err)
	}
	return nil
}
