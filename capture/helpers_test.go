package capture

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
)

// fakeDeviceMem stands in for GPU memory in unit tests (the GPU tests in capture/gds use the
// real thing): the CPU cannot address it through the region (Bytes is nil), only through
// fakeDevice, which plays the part of cudaMemcpy/cuFile.
type fakeDeviceMem struct {
	b    []byte
	base uintptr
}

func (m *fakeDeviceMem) Bytes() []byte { return nil }
func (m *fakeDeviceMem) Addr() uintptr { return m.base }
func (m *fakeDeviceMem) Close() error  { return nil }

type fakeDevice struct {
	mu      sync.Mutex
	mems    []*fakeDeviceMem
	opened  int
	closed  int
	writes  int
	failAll bool
}

func (d *fakeDevice) region(t testing.TB, name string, n, size int) *engine.Region {
	t.Helper()
	d.mu.Lock()
	m := &fakeDeviceMem{b: make([]byte, n*size), base: uintptr(0x7f00_0000_0000 + len(d.mems)<<32)}
	d.mems = append(d.mems, m)
	d.mu.Unlock()
	r, err := engine.NewRegion(&config.MemoryRegion{Name: name, Kind: config.KindDevice, NumBufs: n, BufSize: size}, m)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("leak: %v", err)
		}
	})
	return r
}

// bytesAt is the fake device memory at [addr, addr+n).
func (d *fakeDevice) bytesAt(addr uintptr, n int) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, m := range d.mems {
		if addr >= m.base && addr+uintptr(n) <= m.base+uintptr(len(m.b)) {
			o := int(addr - m.base)
			return m.b[o : o+n], nil
		}
	}
	return nil, fmt.Errorf("fake device: no allocation holds %#x+%d", addr, n)
}

func (d *fakeDevice) CopyToHost(dst []byte, src uintptr) error {
	b, err := d.bytesAt(src, len(dst))
	if err != nil {
		return err
	}
	copy(dst, b)
	return nil
}

func (d *fakeDevice) OpenFile(f *os.File) (DeviceFile, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.opened++
	return &fakeDeviceFile{d: d, f: f}, nil
}

type fakeDeviceFile struct {
	d *fakeDevice
	f *os.File
}

func (ff *fakeDeviceFile) WriteAt(src uintptr, n int, off int64) error {
	ff.d.mu.Lock()
	ff.d.writes++
	fail := ff.d.failAll
	ff.d.mu.Unlock()
	if fail {
		return fmt.Errorf("fake device: injected write failure")
	}
	b, err := ff.d.bytesAt(src, n)
	if err != nil {
		return err
	}
	_, err = ff.f.WriteAt(b, off)
	return err
}

func (ff *fakeDeviceFile) Close() error {
	ff.d.mu.Lock()
	ff.d.closed++
	ff.d.mu.Unlock()
	return nil
}

// segFill writes p into segment s of packet i, through the fake device for device regions.
func segFill(t testing.TB, d *fakeDevice, b *engine.Burst, s, i int, p []byte) {
	t.Helper()
	if seg := b.Segment(s, i); seg != nil {
		copy(seg, p)
		return
	}
	dst, err := d.bytesAt(b.SegmentAddr(s, i), len(p))
	if err != nil {
		t.Fatal(err)
	}
	copy(dst, p)
}

// makeBurst builds a received burst over regions (one per segment) whose packet k has
// segment lengths lens[k], filled with random bytes, with RX timestamp ts[k] (0 = none). It
// returns the burst and each packet's logical bytes (segments concatenated).
func makeBurst(t testing.TB, d *fakeDevice, meta *engine.MetaPool, regions []*engine.Region, lens [][]int, ts []int64) (*engine.Burst, [][]byte) {
	t.Helper()
	b, err := meta.Get(0, 0, regions, true, len(lens))
	if err != nil {
		t.Fatal(err)
	}
	want := make([][]byte, len(lens))
	for k, ls := range lens {
		offs := make([]uint64, len(regions))
		l32 := make([]uint32, len(regions))
		for s, r := range regions {
			idx, ok := r.Get()
			if !ok {
				t.Fatalf("region %s exhausted", r.Name)
			}
			offs[s] = uint64(idx) * uint64(r.BufSize)
			l32[s] = uint32(ls[s])
		}
		var tsk int64
		if ts != nil {
			tsk = ts[k]
		}
		i := b.AppendSegments(offs, l32, 0, tsk)
		for s := range regions {
			p := make([]byte, ls[s])
			for j := range p {
				p[j] = byte(rand.Uint32())
			}
			segFill(t, d, b, s, i, p)
			want[k] = append(want[k], p...)
		}
	}
	return b, want
}

func metaPool(t testing.TB, n, capacity int) *engine.MetaPool {
	t.Helper()
	m, err := engine.NewMetaPool("rx", n, capacity, false)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// randLens is n packets of one segment each, with lengths in [lo, hi].
func randLens(n, lo, hi int) [][]int {
	out := make([][]int, n)
	for i := range out {
		out[i] = []int{lo + rand.IntN(hi-lo+1)}
	}
	return out
}

// fileState is a file's bytes and modification time, to prove a refused append left it alone.
type fileState struct {
	data []byte
	mod  time.Time
}

func stateOf(t *testing.T, path string) fileState {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fileState{data, st.ModTime()}
}

func (s fileState) same(o fileState) bool { return bytes.Equal(s.data, o.data) && s.mod.Equal(o.mod) }

func mustContain(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one containing %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not contain %q", err, p)
		}
	}
}
