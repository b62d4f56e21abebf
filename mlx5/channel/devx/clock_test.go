package devx

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/verbs/mlx5dv"
)

// TestTimebase: DevX converts CQE stamps as rdma-core's mlx5dv_ts_to_ns does from the
// kernel's clock information page, and takes real-time stamps as Unix time (the kernel keeps
// the device's real-time clock on CLOCK_REALTIME). The old engine added the host's wall
// clock to real-time stamps on DevX, putting them near twice today's epoch.
func TestTimebase(t *testing.T) {
	r := rand.New(rand.NewPCG(rand.Uint64(), 7))
	now := uint64(time.Now().UnixNano())
	// A 1 GHz-ish timer as mlx5_core's clocks_calc_mult_shift would scale it (shift 23,
	// mult 2^23: 1 ns per tick), reference at now.
	ci := mlx5dv.ClockInfo{Nsec: now, Cycles: r.Uint64() & (1<<41 - 1), Mask: 1<<41 - 1, Mult: 1 << 23, Shift: 23}
	c := newChannel(&fakeKernel{clock: ci})
	defer c.Close()
	tb, err := c.Timebase()
	if err != nil {
		t.Fatal(err)
	}
	if tb.RealTimeOffset != 0 {
		t.Fatalf("real-time offset %d, want 0", tb.RealTimeOffset)
	}
	for range 100 {
		d := r.Uint64N(1 << 39)
		if got := tb.Timer.Nanos((ci.Cycles + d) & ci.Mask); got != int64(now+d) {
			t.Fatalf("tick +%d: %d, want %d", d, got, now+d)
		}
		if got := tb.Timer.Nanos((ci.Cycles - d) & ci.Mask); got != int64(now-d) {
			t.Fatalf("tick -%d: %d, want %d", d, got, now-d)
		}
	}
	rt := uint64(now/1e9)<<32 | now%1e9
	if got := tb.RealTime(rt); got != int64(now) {
		t.Fatalf("real-time stamp of now: %d, want %d (off by %v)", got, now, time.Duration(got-int64(now)))
	}
	c.Close()
	if _, err := c.Timebase(); err == nil {
		t.Fatal("Timebase on a closed channel succeeded")
	}
}
