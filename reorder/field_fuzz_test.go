package reorder

import (
	"testing"

	"github.com/daqiri-go/daqiri/config"
)

// FuzzReadField: the reorder plans' bit-field extraction agrees with math/big on any packet
// bytes and any field, refuses (ok false) exactly the fields that do not fit, and the
// compiled reader gives the same value. Seeds: testdata/fuzz/FuzzReadField.
func FuzzReadField(f *testing.F) {
	f.Add([]byte{0x12, 0x34, 0x56, 0x78, 0x9a}, 4, 32)
	f.Add([]byte{0xff}, 0, 8)
	f.Add([]byte{}, 0, 1)
	f.Add(make([]byte, 80), 512, 32)
	f.Fuzz(func(t *testing.T, p []byte, off, width int) {
		fd := config.BitField{Offset: off, Width: width}
		v, ok := readField(p, fd)
		fits := off >= 0 && width >= 1 && width <= 32 && off <= len(p)*8-width
		if ok != fits {
			t.Fatalf("readField(%d bytes, %+v): ok %v, want %v", len(p), fd, ok, fits)
		}
		if !ok {
			return
		}
		if want := bigField(p, fd); uint64(v) != want {
			t.Fatalf("readField(%x, %+v) = %#x, math/big says %#x", p, fd, v, want)
		}
		r := newFieldReader(fd)
		if len(p) >= r.need {
			if got := r.read(p); got != v {
				t.Fatalf("fieldReader.read(%x, %+v) = %#x, readField %#x", p, fd, got, v)
			}
		}
	})
}
