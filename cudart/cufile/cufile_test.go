package cufile

import (
	"errors"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// TestDescrLayout checks the Go mirror of CUfileDescr_t against the C layout on LP64:
// int type at 0, the 8-byte union at 8, the fs_ops pointer at 16, 24 bytes in all.
func TestDescrLayout(t *testing.T) {
	var d descr
	if unsafe.Sizeof(d) != 24 || unsafe.Offsetof(d.fd) != 8 || unsafe.Offsetof(d.fsOps) != 16 {
		t.Fatalf("descr: size %d, fd at %d, fs_ops at %d; want 24, 8, 16", unsafe.Sizeof(d), unsafe.Offsetof(d.fd), unsafe.Offsetof(d.fsOps))
	}
}

func TestErrorDecoding(t *testing.T) {
	if err := fileError(0, "x"); err != nil {
		t.Fatal(err)
	}
	// CUfileError_t comes back in one register: err in the low 32 bits, cu_err in the high.
	cu := 1 + rand.IntN(900)
	err := fileError(uintptr(uint64(OpCUDADriverError)|uint64(cu)<<32), "cuFileHandleRegister(f)")
	var e *Error
	if !errors.As(err, &e) || e.Code != OpCUDADriverError || e.CUDA != cu {
		t.Fatalf("%#v", err)
	}
	if !strings.Contains(err.Error(), "CUresult") {
		t.Fatal(err)
	}
	err = fileError(5001, "cuFileDriverOpen")
	if !strings.Contains(err.Error(), "nvidia-fs driver not loaded (5001)") {
		t.Fatal(err)
	}
	if err := fileError(5999, "op"); !strings.Contains(err.Error(), "cuFile error (5999)") {
		t.Fatal(err)
	}

	l := &Library{}
	if err := l.ioError(int64(rand.IntN(1<<20)), "w"); err != nil {
		t.Fatal(err)
	}
	if err := l.ioError(-5044, "w"); !errors.As(err, &e) || e.Code != 5044 || !strings.Contains(err.Error(), "I/O error") {
		t.Fatal(err)
	}
	if err := l.ioError(-int64(syscall.ENOSPC), "w"); !errors.Is(err, syscall.ENOSPC) {
		t.Fatal(err)
	}
	// -1 means "see errno"; without a way to read it the error is still an I/O error.
	if err := l.ioError(-1, "w"); !errors.Is(err, syscall.EIO) {
		t.Fatal(err)
	}
}

// TestOpenMissing: a library that is not there is ErrNoLibrary naming what was tried and
// how to point at it; one that loads but is not libcufile is refused by its missing symbols.
func TestOpenMissing(t *testing.T) {
	_, err := Open([]string{"/nonexistent/dir/libcufile.so.0"})
	if !errors.Is(err, ErrNoLibrary) {
		t.Fatalf("error %v does not wrap ErrNoLibrary", err)
	}
	for _, want := range []string{"/nonexistent/dir/libcufile.so.0", LibraryEnv} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if _, err := Open([]string{"libc.so.6"}); err == nil || errors.Is(err, ErrNoLibrary) || !strings.Contains(err.Error(), "cuFileDriverOpen") {
		t.Fatalf("libc as libcufile: %v", err)
	}
	t.Setenv(LibraryEnv, "/opt/x/libcufile.so.0")
	if c := Candidates(); len(c) != 1 || c[0] != "/opt/x/libcufile.so.0" {
		t.Fatalf("with %s set: %v", LibraryEnv, c)
	}
}
