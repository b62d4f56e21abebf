package benchtest

import (
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

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

// TestWaitFast: the wait ends at the first fast probe, or at the limit with the last probe's
// ratio, never probing past it by more than one pause; a bad DAQIRI_BENCH_WAIT is refused.
func TestWaitFast(t *testing.T) {
	for round := range 300 {
		probes := make([]float64, 1+rand.IntN(40))
		for i := range probes {
			probes[i] = 0.9 + rand.Float64()
		}
		fastAt := -1
		if rand.IntN(3) > 0 {
			fastAt = rand.IntN(len(probes))
			probes[fastAt] = 0.5 + 0.3*rand.Float64()
		}
		clock := time.Unix(0, 0)
		limit := time.Duration(rand.IntN(500)) * time.Millisecond
		n := 0
		r, ok := waitFast(limit, func() float64 {
			v := 1.0 // slow once the list is spent
			if n < len(probes) {
				v = probes[n]
			}
			n++
			return v
		}, func(d time.Duration) { clock = clock.Add(d) }, func() time.Time { return clock })
		// Probes happen at 0, 20, 40 ms ... up to and including the first at or past limit.
		allowed := int(limit/(20*time.Millisecond)) + 1
		if limit%(20*time.Millisecond) != 0 {
			allowed++
		}
		switch {
		case fastAt >= 0 && fastAt < allowed:
			if !ok || n != fastAt+1 || r != probes[fastAt] {
				t.Fatalf("round %d: fast probe %d of %d within the limit: got ratio %v ok %v after %d probes", round, fastAt, len(probes), r, ok, n)
			}
		default:
			if ok || n != allowed {
				t.Fatalf("round %d: no fast probe within %v: got ok %v after %d probes, want %d", round, limit, ok, n, allowed)
			}
		}
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

// TestLastMinus: last-k counts down from the last allowed core round the allowed cores but
// the first, and bad forms are refused.
func TestLastMinus(t *testing.T) {
	for _, c := range []struct {
		k       string
		allowed []int
		want    int
	}{
		{"0", []int{0, 1, 2, 3}, 3}, {"1", []int{0, 1, 2, 3}, 2}, {"2", []int{0, 1, 2, 3}, 1},
		{"3", []int{0, 1, 2, 3}, 3}, {"4", []int{0, 1, 2, 3}, 2},
		{"0", []int{0, 1}, 1}, {"1", []int{0, 1}, 1}, {"5", []int{7}, 7},
		{"1", []int{2, 5, 9}, 5}, {"2", []int{2, 5, 9}, 9},
	} {
		got, err := lastMinus(c.k, c.allowed)
		if err != nil || got != c.want {
			t.Errorf("last-%s of %v = %d, %v; want %d", c.k, c.allowed, got, err, c.want)
		}
	}
	for _, k := range []string{"", "-1", "x"} {
		if _, err := lastMinus(k, []int{0, 1}); err == nil {
			t.Errorf("last-%s accepted", k)
		}
	}
	if _, err := lastMinus("0", nil); err == nil {
		t.Error("no allowed cores accepted")
	}
	done := make(chan int)
	t.Setenv("DAQIRI_BENCH_CORE", "last-0")
	go func() { done <- Pin(t) }()
	if c := <-done; c != osthread.LastAllowed() {
		t.Fatalf("DAQIRI_BENCH_CORE=last-0 pinned to %d, want %d", c, osthread.LastAllowed())
	}
}
