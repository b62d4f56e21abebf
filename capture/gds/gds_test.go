package gds

import (
	"errors"
	"strings"
	"testing"

	"github.com/daqiri-go/daqiri/engine"
)

// TestLibraryMissing is upstream's NOT_SUPPORTED when GDS is not available: a clear error,
// wrapping engine.ErrNotSupported, naming what was tried and how to point at the library.
func TestLibraryMissing(t *testing.T) {
	_, err := openLibrary([]string{"/nonexistent/dir/libcufile.so.0"})
	if !errors.Is(err, engine.ErrNotSupported) || !errors.Is(err, ErrNoLibrary) {
		t.Fatalf("error %v does not wrap ErrNotSupported and ErrNoLibrary", err)
	}
	for _, want := range []string{"/nonexistent/dir/libcufile.so.0", LibraryEnv} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	// A library that loads but is not libcufile is refused by its missing symbols.
	_, err = openLibrary([]string{"libc.so.6"})
	if err == nil || !errors.Is(err, engine.ErrNotSupported) || !strings.Contains(err.Error(), "cuFileDriverOpen") {
		t.Fatalf("libc as libcufile: %v", err)
	}
	t.Setenv(LibraryEnv, "/opt/x/libcufile.so.0")
	if c := candidates(); len(c) != 1 || c[0] != "/opt/x/libcufile.so.0" {
		t.Fatalf("with %s set: %v", LibraryEnv, c)
	}
	if _, err := Open(nil); !errors.Is(err, engine.ErrNullPtr) {
		t.Fatal(err)
	}
}
