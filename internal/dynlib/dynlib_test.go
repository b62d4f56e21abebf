package dynlib

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"strings"
	"testing"
	"unsafe"
)

// libc is present on every machine that can run these binaries at all (purego needs it), so
// the loader is exercised for real here, without a GPU.
func libc(t *testing.T) *Library {
	t.Helper()
	l := New("libc.so.6")
	if err := l.Open(); err != nil {
		t.Skipf("libc.so.6 cannot be dlopened here: %v", err)
	}
	return l
}

func TestCallGetpid(t *testing.T) {
	l := libc(t)
	var getpid uintptr
	if err := l.Resolve([]Symbol{{Name: "getpid", Addr: &getpid}}); err != nil {
		t.Fatal(err)
	}
	if got := int(Call(getpid)); got != os.Getpid() {
		t.Fatalf("getpid via dlsym = %d, os.Getpid = %d", got, os.Getpid())
	}
	if l.Name() != "libc.so.6" {
		t.Fatalf("Name = %q", l.Name())
	}
}

func TestCallPointers(t *testing.T) {
	l := libc(t)
	var memcpy, strlen uintptr
	if err := l.Resolve([]Symbol{{Name: "memcpy", Addr: &memcpy}, {Name: "strlen", Addr: &strlen}}); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		n := 1 + mrand.IntN(4096)
		src := make([]byte, n)
		rand.Read(src)
		dst := make([]byte, n)
		Call(memcpy, uintptr(unsafe.Pointer(&dst[0])), uintptr(unsafe.Pointer(&src[0])), uintptr(n))
		if !bytes.Equal(dst, src) {
			t.Fatalf("memcpy of %d random bytes through Call differs", n)
		}

		s := strings.Repeat("x", mrand.IntN(300))
		cs, err := CString(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := int(Call(strlen, uintptr(unsafe.Pointer(&cs[0])))); got != len(s) {
			t.Fatalf("strlen = %d, want %d", got, len(s))
		}
		if got := GoString(&cs[0], 1<<20); got != s {
			t.Fatalf("GoString round trip: %q", got)
		}
	}
}

func TestMissingLibrary(t *testing.T) {
	name := fmt.Sprintf("libdaqiri-absent-%d.so.1", mrand.Uint64())
	l := New(name, name+".2")
	err := l.Open()
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("Open of absent library: %v, want ErrNotFound", err)
	}
	if !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), name+".2") {
		t.Fatalf("error does not name the tried files: %v", err)
	}
	// The outcome is remembered, and every other entry point reports it.
	if err2 := l.Open(); err2 != err {
		t.Fatalf("second Open: %v, want the same error", err2)
	}
	if _, err := l.Sym("x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Sym: %v", err)
	}
	var p uintptr
	if err := l.Resolve([]Symbol{{Name: "x", Addr: &p}}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Resolve: %v", err)
	}
	if l.Name() != "" {
		t.Fatalf("Name of unloaded library = %q", l.Name())
	}
	if err := New().Open(); !errors.Is(err, ErrNotFound) {
		t.Fatalf("library with no names: %v", err)
	}
}

func TestMissingSymbols(t *testing.T) {
	l := libc(t)
	absent := fmt.Sprintf("daqiri_absent_%d", mrand.Uint64())
	if _, err := l.Sym(absent); err == nil || !strings.Contains(err.Error(), absent) {
		t.Fatalf("Sym(%s): %v", absent, err)
	}
	var a, b, c uintptr = 1, 1, 1
	err := l.Resolve([]Symbol{
		{Name: "getpid", Addr: &a},
		{Name: absent, Addr: &b, Optional: true},
		{Name: absent + "_req", Addr: &c},
	})
	if err == nil || !strings.Contains(err.Error(), absent+"_req") || strings.Contains(err.Error(), absent+",") {
		t.Fatalf("Resolve should name only the missing required symbol: %v", err)
	}
	if a == 0 || b != 0 || c != 0 {
		t.Fatalf("Resolve results: present=%#x optional=%#x required=%#x", a, b, c)
	}
}

func TestCallNil(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Call(0) did not panic")
		}
	}()
	Call(0)
}

func TestCStrings(t *testing.T) {
	if _, err := CString("a\x00b"); err == nil {
		t.Fatal("CString accepted an embedded NUL")
	}
	if GoString(nil, 10) != "" {
		t.Fatal("GoString(nil) not empty")
	}
	unterminated := []byte("abcdef")
	if got := GoString(&unterminated[0], 4); got != "abcd" {
		t.Fatalf("GoString bound: %q", got)
	}
	if got := TrimNUL([]byte("H100\x00junk")); got != "H100" {
		t.Fatalf("TrimNUL: %q", got)
	}
	if got := TrimNUL([]byte("full")); got != "full" {
		t.Fatalf("TrimNUL without NUL: %q", got)
	}
}
