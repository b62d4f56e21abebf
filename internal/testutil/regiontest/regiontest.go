// Package regiontest makes memory regions for tests: off-heap host or hugepage memory behind
// an engine.Region, closed at the test's cleanup, where a buffer not returned to the pool
// fails the test as a leak.
package regiontest

import (
	"testing"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/hugepage"
)

// Host is a region of n buffers of size bytes in off-heap host memory (kind host).
func Host(t testing.TB, name string, n, size int) *engine.Region {
	t.Helper()
	return New(t, &config.MemoryRegion{Name: name, Kind: config.KindHost, NumBufs: n, BufSize: size})
}

// New allocates rc's buffers in host memory (hugepages when rc.Kind is huge; other kinds get
// ordinary host memory under their own kind, for code that only reads the kind) and checks at
// cleanup that every buffer came back.
func New(t testing.TB, rc *config.MemoryRegion) *engine.Region {
	t.Helper()
	mem, err := hugepage.Map(rc.NumBufs*rc.BufSize, rc.Kind == config.KindHuge)
	if err != nil {
		t.Fatalf("region %s: %v", rc.Name, err)
	}
	return With(t, rc, mem)
}

// With is New over mem (GPU memory in GPU tests), which the region closes at cleanup.
func With(t testing.TB, rc *config.MemoryRegion, mem engine.Memory) *engine.Region {
	t.Helper()
	r, err := engine.NewRegion(rc, mem)
	if err != nil {
		mem.Close()
		t.Fatalf("region %s: %v", rc.Name, err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("leak: %v", err)
		}
	})
	return r
}
