package benchtest

import (
	"math"
	"math/rand/v2"
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

// TestQuietest: the core with the lowest probe wins, the workers' core (the first allowed) is
// never probed, unprobeable cores are skipped, and with nothing probed the last core is kept;
// with DAQIRI_BENCH_CORE=quiet Pin lands on an allowed core.
func TestQuietest(t *testing.T) {
	for round := range 200 {
		n := 1 + rand.IntN(16)
		allowed := make([]int, n)
		for i := range allowed {
			allowed[i] = 2*i + rand.IntN(2)
		}
		ratio := map[int]float64{}
		want, best := allowed[n-1], math.Inf(1)
		cands := allowed
		if n > 1 {
			cands = allowed[1:]
		}
		for _, c := range cands {
			if rand.IntN(5) == 0 {
				continue // not probeable
			}
			ratio[c] = 0.5 + rand.Float64()
			if ratio[c] < best {
				want, best = c, ratio[c]
			}
		}
		probed := map[int]bool{}
		got := quietest(allowed, func(c int) (float64, bool) {
			probed[c] = true
			r, ok := ratio[c]
			return r, ok
		})
		if got != want {
			t.Fatalf("round %d: allowed %v ratios %v: quietest %d, want %d", round, allowed, ratio, got, want)
		}
		if n > 1 && probed[allowed[0]] {
			t.Fatalf("round %d: the workers' core %d was probed", round, allowed[0])
		}
		if len(probed) != len(cands) {
			t.Fatalf("round %d: probed %d cores of %d", round, len(probed), len(cands))
		}
	}
	t.Setenv("DAQIRI_BENCH_CORE", "quiet")
	done := make(chan int)
	go func() { done <- Pin(t) }()
	if c := <-done; c != -1 && !osthread.Allowed(c) {
		t.Fatalf("DAQIRI_BENCH_CORE=quiet pinned to %d, not an allowed core", c)
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
