package benchtest

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/daqiri-go/daqiri/internal/osthread"
)

// TestPin: the goroutine ends up on the last allowed core (or the one DAQIRI_BENCH_CORE
// names), and "off" leaves it alone.
func TestPin(t *testing.T) {
	done := make(chan int)
	go func() { done <- Pin(t) }() // a goroutine of its own: it exits locked, taking its thread
	if c := <-done; c != osthread.LastAllowed() {
		t.Fatalf("pinned to %d, want the last allowed core %d", c, osthread.LastAllowed())
	}
	t.Setenv("DAQIRI_BENCH_CORE", "off")
	go func() { done <- Pin(t) }()
	if c := <-done; c != -1 {
		t.Fatalf("DAQIRI_BENCH_CORE=off pinned to %d", c)
	}
	t.Setenv("DAQIRI_BENCH_CORE", "0")
	go func() { done <- Pin(t) }()
	if c := <-done; c != 0 {
		t.Fatalf("DAQIRI_BENCH_CORE=0 pinned to %d", c)
	}
}

// TestStopGC: the collector is off inside, back to its setting after the cleanup; GC counts
// a forced collection.
func TestStopGC(t *testing.T) {
	before := debug.SetGCPercent(77)
	defer debug.SetGCPercent(before)
	t.Run("off", func(t *testing.T) {
		StopGC(t)
		if p := debug.SetGCPercent(-1); p != -1 {
			t.Fatalf("GC percent %d inside StopGC", p)
		}
		g := NewGC()
		c0 := g.Cycles()
		runtime.GC()
		if g.Cycles() <= c0 {
			t.Fatalf("a forced collection not counted: %d then %d", c0, g.Cycles())
		}
	})
	if p := debug.SetGCPercent(77); p != 77 {
		t.Fatalf("GC percent %d after StopGC's cleanup, want 77", p)
	}
}

// TestReportControl: the control reports a positive, finite ratio as "ctl-ratio", and the
// larger of the two ends (a huge "before" wins).
func TestReportControl(t *testing.T) {
	for _, before := range []float64{0, 1e9} {
		r := testing.Benchmark(func(b *testing.B) {
			for range b.N {
			}
			b.StopTimer()
			ReportControl(b, before)
		})
		v, ok := r.Extra["ctl-ratio"]
		if !ok || !(v > 0) || math.IsInf(v, 0) || (before > 0 && v != before) {
			t.Fatalf("before %v: ctl-ratio = %v (reported %v), want a positive number, %v if larger", before, v, ok, before)
		}
	}
}
