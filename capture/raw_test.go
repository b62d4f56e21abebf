package capture

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/internal/testutil"
	"github.com/daqiri-go/daqiri/internal/testutil/regiontest"
)

// TestRawConsecutiveBurstsDistinctFiles writes 3 bursts of N packets with the same prefix and
// checks that 3×N distinct files hold exactly each packet's bytes: upstream names files by
// packet index only, so its second burst overwrites the first.
func TestRawConsecutiveBurstsDistinctFiles(t *testing.T) {
	testutil.NoGoroutineLeak(t)
	dir := t.TempDir()
	n := 5 + rand.IntN(20)
	r := regiontest.Host(t, "rx", 3*n, 2048)
	meta := metaPool(t, 4, n)
	w, err := NewRawWriter(RawOptions{Dir: dir, Prefix: "cap"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	want := map[string][]byte{}
	for burst := 0; burst < 3; burst++ {
		b, pkts := makeBurst(t, nil, meta, []*engine.Region{r}, randLens(n, 1, 2048), nil)
		seq := w.NextBurst()
		st, err := w.Write(b)
		if err != nil {
			t.Fatal(err)
		}
		var bytesWant int64
		for i, p := range pkts {
			want[w.FileName(seq, i)] = p
			bytesWant += int64(len(p))
		}
		if st.Completed != n || st.Failed != 0 || st.Bytes != bytesWant {
			t.Fatalf("burst %d: status %+v, want %d completed, %d bytes", burst, st, n, bytesWant)
		}
		b.Free()
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3*n || len(want) != 3*n {
		t.Fatalf("%d files (%d distinct names expected), want %d", len(entries), len(want), 3*n)
	}
	for name, p := range want {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, p) {
			t.Fatalf("%s: %d bytes differ from the packet's %d", name, len(got), len(p))
		}
	}

	// A new writer on the same directory continues after the highest burst number instead of
	// starting at 0 again.
	w2, err := NewRawWriter(RawOptions{Dir: dir, Prefix: "cap"})
	if err != nil {
		t.Fatal(err)
	}
	if got := w2.NextBurst(); got != 3 {
		t.Fatalf("second writer starts at burst %d, want 3", got)
	}
	b, _ := makeBurst(t, nil, meta, []*engine.Region{r}, randLens(2, 1, 64), nil)
	if _, err := w2.Write(b); err != nil {
		t.Fatal(err)
	}
	b.Free()
	w2.Close()
	if entries, _ := os.ReadDir(dir); len(entries) != 3*n+2 {
		t.Fatalf("%d files after the second writer, want %d", len(entries), 3*n+2)
	}
	for name, p := range want {
		if got, _ := os.ReadFile(filepath.Join(dir, name)); !bytes.Equal(got, p) {
			t.Fatalf("%s changed after the second writer", name)
		}
	}
}

// TestRawDataOffsetAcrossSegments writes header-data split bursts (host header segment,
// payload segment in host or device memory) with offsets before, at, inside and past the
// segment boundary, and checks each file holds the logical packet minus the offset.
func TestRawDataOffsetAcrossSegments(t *testing.T) {
	testutil.NoGoroutineLeak(t)
	dev := &fakeDevice{}
	for _, tc := range []struct {
		name    string
		nsegs   int
		devSegs map[int]bool
	}{
		{"host-2seg", 2, nil},
		{"host-3seg", 3, nil},
		{"device-payload", 2, map[int]bool{1: true}},
		{"device-middle", 3, map[int]bool{1: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			regions := make([]*engine.Region, tc.nsegs)
			for s := range regions {
				if tc.devSegs[s] {
					regions[s] = dev.region(t, "dev", 64, 4096)
				} else {
					regions[s] = regiontest.Host(t, "host", 64, 4096)
				}
			}
			meta := metaPool(t, 2, 8)
			n := 1 + rand.IntN(8)
			lens := make([][]int, n)
			for i := range lens {
				lens[i] = make([]int, tc.nsegs)
				for s := range lens[i] {
					lens[i][s] = rand.IntN(300) // zero-length segments too
				}
			}
			b, pkts := makeBurst(t, dev, meta, regions, lens, nil)
			defer b.Free()
			seg0 := lens[0][0]
			for _, off := range []int{0, 1, seg0 / 2, seg0, seg0 + 1, seg0 + lens[0][1]/2 + 1, 1 << 20} {
				w, err := NewRawWriter(RawOptions{Dir: dir, Prefix: "o", Offset: off, Device: dev})
				if err != nil {
					t.Fatal(err)
				}
				seq := w.NextBurst()
				st, err := w.Write(b)
				if err != nil {
					t.Fatalf("offset %d: %v", off, err)
				}
				var total int64
				for i, p := range pkts {
					exp := p[min(off, len(p)):]
					total += int64(len(exp))
					got, err := os.ReadFile(filepath.Join(dir, w.FileName(seq, i)))
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got, exp) {
						t.Fatalf("offset %d packet %d (segments %v): got %d bytes, want %d", off, i, lens[i], len(got), len(exp))
					}
				}
				if st.Completed != n || st.Bytes != total {
					t.Fatalf("offset %d: status %+v, want %d packets %d bytes", off, st, n, total)
				}
				w.Close()
			}
		})
	}
	if dev.opened != dev.closed {
		t.Errorf("device files opened %d, closed %d", dev.opened, dev.closed)
	}
}

func TestRawBadInput(t *testing.T) {
	testutil.NoGoroutineLeak(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "plain")
	os.WriteFile(file, []byte("x"), 0o644)
	for _, o := range []RawOptions{
		{Dir: dir, Prefix: ""},
		{Dir: dir, Prefix: "a/b"},
		{Dir: dir, Prefix: `a\b`},
		{Dir: dir, Prefix: ".."},
		{Dir: "relative/dir", Prefix: "p"},
		{Dir: filepath.Join(dir, "missing"), Prefix: "p"},
		{Dir: file, Prefix: "p"},
		{Dir: dir, Prefix: "p", Offset: -1},
	} {
		if _, err := NewRawWriter(o); !errors.Is(err, engine.ErrInvalidParameter) {
			t.Errorf("%+v: error %v, want ErrInvalidParameter", o, err)
		}
	}

	w, err := NewRawWriter(RawOptions{Dir: dir, Prefix: "p"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Write(nil); !errors.Is(err, engine.ErrNullPtr) {
		t.Errorf("nil burst: %v", err)
	}
	// A device segment with no DeviceIO is refused before anything is written.
	dev := &fakeDevice{}
	meta := metaPool(t, 2, 4)
	b, _ := makeBurst(t, dev, meta, []*engine.Region{regiontest.Host(t, "h", 4, 256), dev.region(t, "d", 4, 256)}, [][]int{{10, 20}}, nil)
	defer b.Free()
	if _, err := w.Write(b); !errors.Is(err, engine.ErrNotSupported) {
		t.Errorf("device segment without DeviceIO: %v, want ErrNotSupported", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d entries after refused writes, want only the plain file", len(entries))
	}

	// A file already holding a name this writer is about to use is never replaced: that
	// packet fails, the others are written.
	r := regiontest.Host(t, "rx", 8, 256)
	b2, pkts := makeBurst(t, nil, meta, []*engine.Region{r}, randLens(3, 1, 100), nil)
	defer b2.Free()
	squat := filepath.Join(dir, w.FileName(w.NextBurst(), 1))
	os.WriteFile(squat, []byte("keep me"), 0o644)
	st, err := w.Write(b2)
	if !errors.Is(err, engine.ErrGenericFailure) || st.Completed != 2 || st.Failed != 1 {
		t.Fatalf("status %+v err %v; want 2 completed, 1 failed, ErrGenericFailure", st, err)
	}
	mustContain(t, err, "already exists", "packet 1")
	if got, _ := os.ReadFile(squat); string(got) != "keep me" {
		t.Fatalf("existing file replaced: %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, w.FileName(w.NextBurst()-1, 2))); !bytes.Equal(got, pkts[2]) {
		t.Fatal("packet 2 not written")
	}

	// A failing device write leaves no partial file.
	dev.failAll = true
	w2, err := NewRawWriter(RawOptions{Dir: dir, Prefix: "dev", Device: dev})
	if err != nil {
		t.Fatal(err)
	}
	st, err = w2.Write(b)
	w2.Close()
	if st.Failed != 1 || err == nil {
		t.Fatalf("failing device write: %+v %v", st, err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "dev_*")); len(m) != 0 {
		t.Fatalf("partial files left: %v", m)
	}
	if _, err := w2.Write(b2); !errors.Is(err, ErrClosed) {
		t.Fatalf("write after Close: %v", err)
	}
}

// TestRawAsync submits several bursts without waiting, checks Poll/Wait/Close and that files
// come out in submission order with the right contents.
func TestRawAsync(t *testing.T) {
	testutil.NoGoroutineLeak(t)
	dir := t.TempDir()
	r := regiontest.Host(t, "rx", 256, 4096)
	meta := metaPool(t, 16, 16)
	w, err := NewRawWriter(RawOptions{Dir: dir, Prefix: "a"})
	if err != nil {
		t.Fatal(err)
	}
	type sub struct {
		h    *Handle
		b    *engine.Burst
		pkts [][]byte
		seq  uint64
	}
	var subs []sub
	for k := 0; k < 10; k++ {
		b, pkts := makeBurst(t, nil, meta, []*engine.Region{r}, randLens(1+rand.IntN(16), 1, 4096), nil)
		seq := w.NextBurst()
		h, err := w.WriteAsync(b)
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, sub{h, b, pkts, seq})
	}
	for k, s := range subs {
		var st Status
		var err error
		switch k % 3 {
		case 0:
			st, err = s.h.Wait(context.Background())
		case 1:
			err = s.h.Close()
			st, _ = s.h.Poll()
		default:
			for i := 0; ; i++ {
				if st, err = s.h.Poll(); !errors.Is(err, engine.ErrNotReady) {
					break
				}
				if i > 1e7 {
					t.Fatal("poll never completed")
				}
				<-s.h.Done()
			}
		}
		if err != nil || st.Completed != len(s.pkts) {
			t.Fatalf("burst %d: %+v %v", k, st, err)
		}
		// The caller owned the burst until now; freeing it after completion is the contract.
		s.b.Free()
		for i, p := range s.pkts {
			got, _ := os.ReadFile(filepath.Join(dir, w.FileName(s.seq, i)))
			if !bytes.Equal(got, p) {
				t.Fatalf("burst %d packet %d differs", k, i)
			}
		}
	}
	// A Wait whose context ends first returns the context's error and leaves the write alone.
	b, _ := makeBurst(t, nil, meta, []*engine.Region{r}, randLens(4, 1, 10), nil)
	h, err := w.WriteAsync(b)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.Wait(ctx); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with a cancelled context: %v", err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	b.Free()
	w.Close()
	names, _ := filepath.Glob(filepath.Join(dir, "a_*"))
	sort.Strings(names)
	if len(names) == 0 {
		t.Fatal("no files")
	}
}
