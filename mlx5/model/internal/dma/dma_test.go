package dma

import (
	"errors"
	"math/rand/v2"
	"sync"
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

// TestGather: a read over mappings that follow each other in I/O address space is copied
// piece by piece; a hole, or a piece without the permission, is a fault.
func TestGather(t *testing.T) {
	var s Space
	a, b, c := []byte{1, 2, 3, 4}, []byte{5, 6, 7, 8}, []byte{9, 10}
	for i, m := range []struct {
		iova uint64
		mem  []byte
		perm Perm
	}{{0x1000, a, Read}, {0x1004, b, Read | Write}, {0x1010, c, Write}} {
		if err := s.Map(m.iova, m.mem, m.perm); err != nil {
			t.Fatal(i, err)
		}
	}
	got, err := s.Gather(0x1002, 5, Read)
	if err != nil || string(got) != string([]byte{3, 4, 5, 6, 7}) {
		t.Fatalf("Gather: % x, %v", got, err)
	}
	if _, err := s.Slice(0x1002, 5, Read); err == nil {
		t.Fatal("Slice across two mappings succeeded")
	}
	if err := s.Check(0x1002, 6, Read); err != nil {
		t.Fatalf("Check across two mappings: %v", err)
	}
	for _, bad := range []struct {
		iova uint64
		n    int
		perm Perm
	}{{0x1006, 4, Read}, {0x1000, 6, Write}, {0x0fff, 2, Read}, {0x1010, 1, Read}, {^uint64(0) - 1, 4, Read}} {
		if _, err := s.Gather(bad.iova, bad.n, bad.perm); !errors.Is(err, ErrFault) {
			t.Fatalf("Gather %#x+%d %v: %v", bad.iova, bad.n, bad.perm, err)
		}
		if err := s.Check(bad.iova, uint64(bad.n), bad.perm); !errors.Is(err, ErrFault) {
			t.Fatalf("Check %#x+%d %v: %v", bad.iova, bad.n, bad.perm, err)
		}
	}
}

// sliceWindow is a window over a byte slice, reached only by copy.
type sliceWindow struct{ b []byte }

func (w *sliceWindow) ReadAt(p []byte, off uint64) error  { copy(p, w.b[off:]); return nil }
func (w *sliceWindow) WriteAt(p []byte, off uint64) error { copy(w.b[off:], p); return nil }

// TestWindow: a window (device memory) is mapped like host memory and overlaps are refused,
// but its bytes are reached only by copy: Slice refuses them with ErrWindow, Read, Write and
// Gather copy through the window (Gather across a host mapping and a window too), and the
// permissions hold.
func TestWindow(t *testing.T) {
	var s Space
	host := make([]byte, 4096)
	w := &sliceWindow{b: make([]byte, 8192)}
	if err := s.Map(0x10000, host, Read|Write); err != nil {
		t.Fatal(err)
	}
	if err := s.MapWindow(0x11000, 8192, w, Read|Write); err != nil {
		t.Fatal(err)
	}
	if err := s.MapWindow(0x12000, 4096, w, Read); err == nil {
		t.Fatal("overlapping window accepted")
	}
	if err := s.MapWindow(0x20000, 0, w, Read); err == nil {
		t.Fatal("empty window accepted")
	}
	if !s.Window(0x11800) || s.Window(0x10800) || s.Window(0x13000) {
		t.Fatal("Window() does not tell the window from host memory")
	}
	if _, err := s.Slice(0x11000, 16, Read); !errors.Is(err, ErrWindow) || !errors.Is(err, ErrFault) {
		t.Fatalf("Slice of a window: %v", err)
	}
	if err := s.Write(0x11ffe, []byte{1, 2, 3, 4}); err != nil || w.b[0xffe] != 1 || w.b[0x1001] != 4 {
		t.Fatalf("Write through the window: %v", err)
	}
	p := make([]byte, 4)
	if err := s.Read(0x11ffe, p); err != nil || string(p) != string([]byte{1, 2, 3, 4}) {
		t.Fatalf("Read through the window: % x, %v", p, err)
	}
	host[4095] = 9
	w.b[0] = 8
	g, err := s.Gather(0x10fff, 2, Read)
	if err != nil || g[0] != 9 || g[1] != 8 {
		t.Fatalf("Gather across host memory and a window: % x, %v", g, err)
	}
	if err := s.Check(0x10000, 4096+8192, Read); err != nil {
		t.Fatalf("Check across host memory and a window: %v", err)
	}
	if err := s.Write(0x12ffe, []byte{1, 2, 3, 4}); !errors.Is(err, ErrFault) {
		t.Fatalf("Write past the window's end: %v", err)
	}
	if err := s.Unmap(0x11000); err != nil || s.Len() != 1 {
		t.Fatalf("Unmap of the window: %v, %d left", err, s.Len())
	}
	var ro Space
	if err := ro.MapWindow(0x1000, 4096, w, Read); err != nil {
		t.Fatal(err)
	}
	if err := ro.Write(0x1000, []byte{1}); !errors.Is(err, ErrFault) {
		t.Fatalf("Write into a read-only window: %v", err)
	}
}

// TestFindHint holds find (the last index tried first) to the binary search it shortcuts,
// over random mappings and unmappings with lookups in between: inside mappings, in the gaps,
// below the first and past the last, repeated (the hint's hits) and scattered (its misses).
// Readers run concurrently under the read lock, as the datapath's do, for the race detector.
func TestFindHint(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var s Space
	var mapped []uint64
	for round := 0; round < 300; round++ {
		if len(mapped) == 0 || r.IntN(3) > 0 {
			iova := uint64(r.IntN(1<<12)) << 12
			if err := s.Map(iova, make([]byte, 1+r.IntN(3<<12)), Read|Write); err == nil {
				mapped = append(mapped, iova)
			}
		} else {
			k := r.IntN(len(mapped))
			if err := s.Unmap(mapped[k]); err != nil {
				t.Fatal(err)
			}
			mapped = append(mapped[:k], mapped[k+1:]...)
		}
		var wg sync.WaitGroup
		for w := 0; w < 2; w++ {
			seed := r.Uint64()
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(seed, 5))
				s.mu.RLock()
				defer s.mu.RUnlock()
				var iova uint64
				for i := 0; i < 200; i++ {
					if i%4 != 0 { // every fourth lookup repeats the last address
						iova = uint64(r.IntN(1 << 25))
					}
					if got, want := s.find(iova), s.search(iova); got != want {
						t.Errorf("find(%#x) = %d, the search gives %d (%d mappings)", iova, got, want, len(s.maps))
						return
					}
				}
			}()
		}
		wg.Wait()
		if t.Failed() {
			return
		}
	}
}
