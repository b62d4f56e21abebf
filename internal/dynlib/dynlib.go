// Package dynlib opens a shared library on first use and calls its C functions without cgo,
// through github.com/ebitengine/purego. It is the loader behind cudart (libcuda.so.1) and is
// meant to be reused the same way for other vendor libraries (libcufile.so.0): declare one
// package-level *Library, resolve a table of symbols once, and call them with Call.
//
// Building with CGO_ENABLED=0 still works: purego supplies its own minimal C runtime
// glue. The price is that any binary importing this package is dynamically linked against
// libc.so.6 and libdl.so.2 (the dynamic loader is needed to dlopen anything at all).
//
// Creating a Library costs nothing: nothing is opened or resolved until Open, Sym or Resolve
// is first called.
package dynlib

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unsafe"
)

// ErrNotFound is wrapped by the error Open returns when none of a library's file names could
// be loaded (the library is not installed, or not on the loader's search path).
var ErrNotFound = errors.New("shared library not found")

// Library is a shared library that is loaded at most once, on first use. Its methods are safe
// for concurrent use. The library is never unloaded: symbols handed out stay valid for the
// life of the process.
type Library struct {
	names []string

	once   sync.Once
	handle uintptr
	name   string // the file name that loaded
	err    error
}

// New describes a library by the file names to try, in order (for example a versioned soname
// first, then a development symlink). Nothing is loaded yet.
func New(names ...string) *Library {
	return &Library{names: append([]string(nil), names...)}
}

// Open loads the library if it is not loaded yet and reports whether that succeeded. The
// outcome is remembered: a library that failed to load is not tried again.
func (l *Library) Open() error {
	l.once.Do(l.load)
	return l.err
}

func (l *Library) load() {
	if len(l.names) == 0 {
		l.err = fmt.Errorf("%w: no file names given", ErrNotFound)
		return
	}
	var why []string
	for _, n := range l.names {
		// RTLD_NOW: resolve everything at load time so a broken install fails here, with the
		// loader's message, rather than in the middle of a call. RTLD_LOCAL keeps the
		// library's symbols out of the global namespace.
		h, err := dlopen(n)
		if err == nil {
			l.handle, l.name = h, n
			return
		}
		why = append(why, err.Error())
	}
	l.err = fmt.Errorf("%w: %s (%s)", ErrNotFound, strings.Join(l.names, ", "), strings.Join(why, "; "))
}

// Name is the file name that loaded, or "" before a successful Open.
func (l *Library) Name() string {
	if l.Open() != nil {
		return ""
	}
	return l.name
}

// Sym loads the library if needed and returns the address of the named symbol.
func (l *Library) Sym(name string) (uintptr, error) {
	if err := l.Open(); err != nil {
		return 0, err
	}
	p, err := dlsym(l.handle, name)
	if err != nil || p == 0 {
		return 0, fmt.Errorf("%s has no symbol %s", l.name, name)
	}
	return p, nil
}

// Symbol is one entry of a symbol table for Resolve.
type Symbol struct {
	Name     string   // exact exported name, including any version suffix (cuMemAlloc_v2)
	Addr     *uintptr // where to store the address
	Optional bool     // a missing optional symbol leaves *Addr at 0 instead of failing
}

// Resolve loads the library if needed and fills every entry of syms. It fails, naming every
// missing required symbol, if any required one is absent; optional ones are then left at 0.
func (l *Library) Resolve(syms []Symbol) error {
	if err := l.Open(); err != nil {
		return err
	}
	var missing []string
	for _, s := range syms {
		p, err := dlsym(l.handle, s.Name)
		if err != nil {
			p = 0
		}
		*s.Addr = p
		if p == 0 && !s.Optional {
			missing = append(missing, s.Name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s lacks %s (library too old?)", l.name, strings.Join(missing, ", "))
	}
	return nil
}

// Call calls the C function at fn with integer and pointer arguments (at most 15) and returns
// its integer result register. Pass pointers as uintptr(unsafe.Pointer(p)) written directly
// in the argument list: the go:uintptrescapes directive below then keeps what they point to
// alive, and on the heap, until the call returns. The C side must not keep such a pointer
// after returning. Floating-point arguments are not supported (none of the CUDA driver
// functions bound here take one).
//
//go:uintptrescapes
func Call(fn uintptr, args ...uintptr) uintptr {
	if fn == 0 {
		// A nil function pointer would crash the process; callers check optional symbols,
		// so reaching this is a programming error worth a clear message.
		panic("dynlib: call through a nil function pointer")
	}
	return callC(fn, args...)
}

// CString returns s as a NUL-terminated byte slice for passing to C. It fails if s itself
// holds a NUL, which C would silently truncate at.
func CString(s string) ([]byte, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return nil, fmt.Errorf("string %q holds a NUL byte", s)
	}
	b := make([]byte, len(s)+1)
	copy(b, s)
	return b, nil
}

// GoString copies a NUL-terminated C string that C returned, reading at most max bytes (a
// bound in case the string is not terminated). A nil p gives "".
func GoString(p *byte, max int) string {
	if p == nil {
		return ""
	}
	n := 0
	for n < max && *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

// TrimNUL returns the bytes of buf before its first NUL, as a string (for C functions that
// fill a caller-provided char buffer).
func TrimNUL(buf []byte) string {
	if i := bytes.IndexByte(buf, 0); i >= 0 {
		return string(buf[:i])
	}
	return string(buf)
}
