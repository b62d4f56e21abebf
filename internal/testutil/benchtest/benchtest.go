// Package benchtest holds what the engine benchmarks share to measure the engine, not the
// scheduler: the benchmark goroutine pinned to one core for its timed loop, as the engines pin
// their workers in real runs (cpu_core in the configuration), and a count of the garbage
// collections that ran during the loop, which must be 0 for a path that allocates nothing
// (StopGC keeps the collections the engines' other goroutines would trigger out of it).
package benchtest

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/internal/osthread"
)

// Pin locks the calling benchmark goroutine to its OS thread and pins the thread to the last
// core the process may use (core 0 is where the benchmarks' engine workers are pinned and
// where interrupts land first), so that the timed loop is not moved between cores or
// interleaved with other goroutines on its thread. It returns the core, or -1 when the thread
// could not be pinned (then it is only locked, and the benchmark logs why).
//
// DAQIRI_BENCH_CORE=n pins to core n instead; DAQIRI_BENCH_CORE=off leaves the goroutine
// unlocked and unpinned, as before 2026-11-28 (to compare). DAQIRI_BENCH_CORE=last-k pins to
// the k-th allowed core below the last one, counting round the allowed cores but the first
// (the workers'), so that rounds of a benchmark run k = 0, 1, 2, ... spread over cores: the GPU
// host's cores have independent spells of a busy sibling hardware thread lasting seconds
// (BENCHMARKS.md, issue 31 fourth and fifth rounds).
//
// DAQIRI_BENCH_WAIT=fast makes Pin then wait, up to FastWait, until Control on the pinned core
// shows the host's fast speed: the GPU host's 16 cores turn slow and fast together, about half
// of the time each, in spells of seconds (issue 31 sixth round: a map of Control over every
// core, 91 sweeps in 20 s), the signature of another tenant's load on the sibling hardware
// threads of the whole VM, which a machine dedicated to the engine does not have. The run's
// ctl-ratio still says which speed it met at its ends.
//
// The lock is never undone: the testing package runs each call of a benchmark function in a
// goroutine of its own, and a goroutine that exits locked takes its thread with it, so no
// thread pinned to one core goes back to the scheduler (osthread.Unlock says why that matters).
func Pin(b testing.TB) int {
	b.Helper()
	core := osthread.LastAllowed()
	switch v := os.Getenv("DAQIRI_BENCH_CORE"); v {
	case "":
	case "off":
		return -1
	default:
		if k, ok := strings.CutPrefix(v, "last-"); ok {
			c, err := lastMinus(k, osthread.AllowedCores())
			if err != nil {
				b.Fatalf("DAQIRI_BENCH_CORE=%q: %v", v, err)
			}
			core = c
			break
		}
		c, err := strconv.Atoi(v)
		if err != nil || !osthread.Allowed(c) {
			b.Fatalf("DAQIRI_BENCH_CORE=%q: not a core this process may use (a number, or off)", v)
		}
		core = c
	}
	pinned, err := osthread.LockAndPin(core)
	if err != nil || !pinned {
		b.Logf("benchmark goroutine locked to its thread but not pinned to core %d: %v", core, err)
		return -1
	}
	switch w := os.Getenv("DAQIRI_BENCH_WAIT"); w {
	case "":
	case "fast":
		if r, ok := WaitFast(); !ok {
			b.Logf("the host's fast speed not seen within %v (control ratio %.2f): running at the speed it has", FastWait, r)
		}
	default:
		b.Fatalf("DAQIRI_BENCH_WAIT=%q: want fast or nothing", w)
	}
	return core
}

// FastRatio is the Control ratio below which the core runs at the host's fast speed (≈ 0.7
// there, 1.0–1.3 in the slow one); FastWait is how long Pin waits for it.
const (
	FastRatio = 0.85
	FastWait  = 10 * time.Second
)

// WaitFast waits, up to FastWait, until Control on the calling thread's core shows the GPU
// host's fast speed, and returns the last ratio and whether it was fast. The host's cores
// change speed together, so any core tells (Pin says more).
func WaitFast() (float64, bool) { return waitFast(FastWait, Control, time.Sleep, time.Now) }

// waitFast probes until a probe is below FastRatio or limit has passed, pausing 20 ms
// between probes; it returns the last ratio and whether it was fast.
func waitFast(limit time.Duration, probe func() float64, sleep func(time.Duration), now func() time.Time) (float64, bool) {
	end := now().Add(limit)
	for {
		r := probe()
		if r < FastRatio {
			return r, true
		}
		if !now().Before(end) {
			return r, false
		}
		sleep(20 * time.Millisecond)
	}
}

// lastMinus is the core DAQIRI_BENCH_CORE=last-k names among the allowed cores (ascending).
func lastMinus(k string, allowed []int) (int, error) {
	n, err := strconv.Atoi(k)
	if err != nil || n < 0 {
		return -1, fmt.Errorf("last-%s: want last-k with k a number >= 0", k)
	}
	if len(allowed) == 0 {
		return -1, fmt.Errorf("the process's allowed cores cannot be read")
	}
	if len(allowed) > 1 {
		allowed = allowed[1:]
	}
	return allowed[len(allowed)-1-n%len(allowed)], nil
}

// StopGC runs a collection now, before the timed loop, and turns the collector off until the
// benchmark ends (b.Cleanup restores the setting): the paths benchmarked allocate nothing, but
// the engine's other goroutines (a worker reading the device's counters, the model) allocate
// now and then, and a collection they trigger inside the timed loop stops the world and runs
// mark workers beside it. The heap grows by what they allocate during one benchmark only.
func StopGC(b testing.TB) {
	b.Helper()
	runtime.GC()
	old := debug.SetGCPercent(-1)
	b.Cleanup(func() { debug.SetGCPercent(old) })
}

// GC counts the garbage collections the runtime has completed, from runtime/metrics (no
// stop of the world, unlike runtime.ReadMemStats). Read it before and after the timed loop
// (it allocates its sample once, in New) and report the difference with Report.
type GC struct{ s []metrics.Sample }

// NewGC returns a collection counter.
func NewGC() *GC { return &GC{s: []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}} }

// Cycles is the number of collections completed so far.
func (g *GC) Cycles() uint64 {
	metrics.Read(g.s)
	return g.s[0].Value.Uint64()
}

// Report records the collections since start as the benchmark's "gcs" metric: anything but 0
// means a collection may have run inside the timed loop, and its ns/pkt is suspect.
func (g *GC) Report(b *testing.B, start uint64) {
	b.ReportMetric(float64(g.Cycles()-start), "gcs")
}

// ReportControl records as the benchmark's "ctl-ratio" metric the larger of before
// (Control, taken just before the timed loop) and Control taken now (call it after the
// loop, b.StopTimer). The GPU host has two speeds for the same binary that come and go
// within seconds, per core, in a running process (BENCHMARKS.md, issue 31 fourth round):
// code bound by the core's throughput — the burst path, a loop of independent adds — runs
// ~1.6–1.8× slower in the slow one, while a chain of dependent multiplies does not slow
// down, the signature of another hardware thread busy on the same physical core. Control is
// the ratio of the two loops' times, so it does not depend on the clock: there ≈ 0.7 while
// the core runs alone and 1.0–1.3 in the slow speed (6,000 rounds on two instances). A slow
// spell inside a run and gone at both ends goes unseen.
func ReportControl(b *testing.B, before float64) {
	b.ReportMetric(max(before, Control()), "ctl-ratio")
}

// Control is the time per step of eight independent chains of adds and xors (bound by the
// core's execution ports, which a sibling hardware thread shares) divided by the time per
// step of one chain of dependent multiply-adds (bound by latency, which a sibling barely
// changes), each the fastest of three rounds of 200,000 steps (~0.2 ms).
func Control() float64 {
	var lat, thr float64
	for round := 0; round < 3; round++ {
		l, t := controlLoops(200_000)
		if round == 0 || l < lat {
			lat = l
		}
		if round == 0 || t < thr {
			thr = t
		}
	}
	return thr / lat
}

// controlLoops times steps of the dependent chain and of the eight independent chains, ns
// per step each.
func controlLoops(steps int) (lat, thr float64) {
	x := uint64(1)
	t0 := time.Now()
	for i := 0; i < steps; i++ {
		x = x*3 + uint64(i)
	}
	lat = float64(time.Since(t0).Nanoseconds()) / float64(steps)
	var a, b, c, d, e, f, g, h uint64 = 1, 2, 3, 4, 5, 6, 7, 8
	t0 = time.Now()
	for i := uint64(0); i < uint64(steps); i++ {
		a, b, c, d = a+i, b^i, c+i, d^i
		e, f, g, h = e+i, f^i, g+i, h^i
	}
	thr = float64(time.Since(t0).Nanoseconds()) / float64(steps)
	runtime.KeepAlive(x + a + b + c + d + e + f + g + h)
	return lat, thr
}
