package dma

import (
	"errors"
	"testing"
)

func TestSpace(t *testing.T) {
	var s Space
	a := make([]byte, 4096)
	b := make([]byte, 8192)
	if err := s.Map(0x10000, a, Read|Write); err != nil {
		t.Fatal(err)
	}
	if err := s.Map(0x20000, b, Read); err != nil {
		t.Fatal(err)
	}
	if err := s.Map(0x10800, make([]byte, 16), Read); err == nil {
		t.Fatal("overlapping map accepted")
	}
	if err := s.Map(0x1f000, make([]byte, 0x1001), Read); err == nil {
		t.Fatal("map overlapping the next one accepted")
	}
	if err := s.Write(0x10ffc, []byte{1, 2, 3, 4}); err != nil || a[4095] != 4 {
		t.Fatalf("write at the end of a mapping: %v", err)
	}
	for _, c := range []struct {
		iova uint64
		n    int
		perm Perm
	}{
		{0x10ffd, 4, Read},    // crosses the end
		{0x0, 1, Read},        // below every mapping
		{0x11000, 1, Read},    // in the gap
		{0x20000, 1, Write},   // read-only mapping
		{0x21fff, 2, Read},    // past the last
		{^uint64(0), 1, Read}, // top of the space
	} {
		if _, err := s.Slice(c.iova, c.n, c.perm); !errors.Is(err, ErrFault) {
			t.Errorf("Slice(%#x, %d, %v) = %v, want a fault", c.iova, c.n, c.perm, err)
		}
	}
	if err := s.Unmap(0x10000); err != nil || s.Len() != 1 {
		t.Fatalf("unmap: %v, %d left", err, s.Len())
	}
	if err := s.Unmap(0x10000); err == nil {
		t.Fatal("second unmap accepted")
	}
}
