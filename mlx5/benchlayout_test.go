package mlx5

import (
	"fmt"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/internal/osthread"
)

// benchLayout is the mlx5 benchmarks' layout probe (issue 31, fourth round: is the GPU host's
// slow mode made of address relations?). With DAQIRI_BENCH_LAYOUT set, a benchmark adds to
// its result line the low 16 bits of the address of each thing its timed loop touches (the
// CQ and work-queue rings, the doorbell record, the burst's arrays, the queue's structures:
// metric "name@", in decimal), and three canaries timed on the benchmark's core right after
// its timed loop: a dependent multiply-add chain (alu-ns), a loop of loads and stores within
// 4 KiB (l1-ns) and time.Now (now-ns), each ns per step. A slow run whose canaries are slow
// too is the machine's; one whose canaries are not points at what the loop touches.
type benchLayout struct {
	on    bool
	names []string
	addrs []uint64
}

func newBenchLayout() *benchLayout {
	return &benchLayout{on: os.Getenv("DAQIRI_BENCH_LAYOUT") != ""}
}

// add records the address of v: a slice's array, a pointer's target.
func (l *benchLayout) add(name string, v any) {
	if !l.on {
		return
	}
	l.names = append(l.names, name)
	l.addrs = append(l.addrs, uint64(reflect.ValueOf(v).Pointer()))
}

// field records the address of the unexported slice or pointer field name of the struct p
// points to.
func (l *benchLayout) field(name string, p any, field string) {
	if !l.on {
		return
	}
	l.names = append(l.names, name)
	l.addrs = append(l.addrs, uint64(reflect.ValueOf(p).Elem().FieldByName(field).Pointer()))
}

// report adds the addresses and the canaries to b's result.
func (l *benchLayout) report(b *testing.B) {
	if !l.on {
		return
	}
	for i, n := range l.names {
		b.ReportMetric(float64(l.addrs[i]&0xffff), n+"@")
	}
	alu, l1, now := canaries()
	b.ReportMetric(alu, "alu-ns")
	b.ReportMetric(l1, "l1-ns")
	b.ReportMetric(now, "now-ns")
}

// canaries times the three canary loops (see benchLayout).
func canaries() (alu, l1, now float64) {
	const n = 1 << 20
	x := uint64(1)
	t0 := time.Now()
	for range n {
		x = x*6364136223846793005 + 1442695040888963407
	}
	alu = float64(time.Since(t0).Nanoseconds()) / n
	a := make([]uint64, 512)
	t0 = time.Now()
	for i := range n {
		a[i&511] += a[(i+7)&511] + 1
	}
	l1 = float64(time.Since(t0).Nanoseconds()) / n
	t0 = time.Now()
	var last time.Time
	for range n / 64 {
		last = time.Now()
	}
	now = float64(last.Sub(t0).Nanoseconds()) / (n / 64)
	if x == 0 || a[3] == 0 { // keeps the loops' results live
		alu++
	}
	return alu, l1, now
}

// BenchmarkCanary runs benchLayout's canaries pinned to each core the process may use in turn
// (one sub-benchmark per core, one pass each whatever b.N): a core whose canaries are slower
// than the others' is slow for any code, the engine's included.
func BenchmarkCanary(b *testing.B) {
	for c := 0; c < 1024; c++ {
		if !osthread.Allowed(c) {
			continue
		}
		b.Run(fmt.Sprintf("core=%d", c), func(b *testing.B) {
			if pinned, err := osthread.LockAndPin(c); err != nil || !pinned {
				b.Skipf("core %d: not pinned: %v", c, err)
			}
			alu, l1, now := canaries()
			b.ReportMetric(alu, "alu-ns")
			b.ReportMetric(l1, "l1-ns")
			b.ReportMetric(now, "now-ns")
		})
	}
}
