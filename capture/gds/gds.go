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
// The binding itself (symbols, C layouts, error codes) is package cudart/cufile; this package
// is the writer side: reference-counted driver, descriptor choice, short-write loops.
package gds

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/daqiri-go/daqiri/capture"
	"github.com/daqiri-go/daqiri/cudart"
	"github.com/daqiri-go/daqiri/cudart/cufile"
	"github.com/daqiri-go/daqiri/engine"
)

// LibraryEnv names an environment variable that, when set, is the only libcufile path tried.
const LibraryEnv = cufile.LibraryEnv

// ErrNoLibrary is wrapped (together with engine.ErrNotSupported) by Open's error when
// libcufile cannot be loaded.
var ErrNoLibrary = cufile.ErrNoLibrary

// Error is a failed cuFile call.
type Error = cufile.Error

// lib is the loaded library and the reference count of its driver.
type lib struct {
	*cufile.Library
	refs int
	mu   sync.Mutex
}

// candidates lists where libcufile may be (cufile.Candidates).
func candidates() []string { return cufile.Candidates() }

// openLibrary loads libcufile from names; errors wrap engine.ErrNotSupported (upstream's
// NOT_SUPPORTED when GDS is not available).
func openLibrary(names []string) (*lib, error) {
	l, err := cufile.Open(names)
	if err != nil {
		if errors.Is(err, cufile.ErrNoLibrary) {
			return nil, fmt.Errorf("%w: %w", engine.ErrNotSupported, err)
		}
		return nil, fmt.Errorf("gds: %w (%w)", err, engine.ErrNotSupported)
	}
	return &lib{Library: l}, nil
}

// loaded is the process's libcufile, loaded on first Open.
var loaded = sync.OnceValues(func() (*lib, error) { return openLibrary(candidates()) })

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
		var openErr error
		if err := dev.Do(func() error { openErr = l.DriverOpen(); return nil }); err != nil {
			return nil, fmt.Errorf("gds: %w", err)
		}
		if err := openErr; err != nil {
			var fe *Error
			if errors.As(err, &fe) && fe.Code == cufile.OpDriverNotInitialized {
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
func (d *Driver) Library() string { return d.l.Name() }

// Version is cuFile's version number as cuFileGetVersion reports it (0 when the library
// has no such call).
func (d *Driver) Version() int { return d.l.Library.Version() }

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
	if l.refs > 0 || !l.CanCloseDriver() {
		return nil
	}
	var closeErr error
	if err := d.dev.Do(func() error { closeErr = l.DriverClose(); return nil }); err != nil {
		return fmt.Errorf("gds: %w", err)
	}
	return closeErr
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
	handle cufile.Handle
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
		var err error
		if derr := d.dev.Do(func() error {
			file.handle, err = d.l.Register(fd, "cuFileHandleRegister("+f.Name()+", "+what+")")
			return nil
		}); derr != nil {
			file.closeDirect()
			return nil, fmt.Errorf("gds: %w", derr)
		}
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
	return f.io(f.d.l.Write, "cuFileWrite", src, n, off)
}

// ReadAt reads n bytes at byte off of the file into device address dst (cuFileRead). Reading
// past the end of the file is an error.
func (f *File) ReadAt(dst uintptr, n int, off int64) error {
	return f.io(f.d.l.Read, "cuFileRead", dst, n, off)
}

func (f *File) io(fn func(cufile.Handle, uintptr, int, int64, string) (int64, error), op string, buf uintptr, n int, off int64) error {
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
			// errno must be read on this thread before anything else can change it: fn reads
			// it right after the call.
			ret, ioErr = fn(f.handle, buf+uintptr(done), n-done, off+int64(done), fmt.Sprintf("%s(%s, %d bytes at %d)", op, f.f.Name(), n-done, off+int64(done)))
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
	err := f.d.dev.Do(func() error { f.d.l.Deregister(h); return nil })
	f.closeDirect()
	runtime.KeepAlive(f.f)
	if err != nil {
		return fmt.Errorf("gds: %w", err)
	}
	return nil
}
