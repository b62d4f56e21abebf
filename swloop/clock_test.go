package swloop

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestClockAgainstTimeNow: every reading lies between two time.Now readings taken around it,
// give or take the clock's own measured uncertainty (half the gap of the monotonic readings
// around its wall clock reading) and 1 µs for the two clocks' reads inside time.Now; the
// readings never go backwards while the wall clock is not stepped. The interval is zero for
// half the readings (every reading measures afresh) and an hour for the others (one offset).
func TestClockAgainstTimeNow(t *testing.T) {
	for _, every := range []time.Duration{0, time.Hour} {
		c := newClock(every, time.Now)
		var last int64
		for k := 0; k < 20000; k++ {
			before := time.Now().UnixNano()
			got := c.Now()
			after := time.Now().UnixNano()
			slack := c.uncertainty.Load() + 1000
			if got < before-slack || got > after+slack {
				t.Fatalf("every %v, reading %d: %d not within [%d, %d] ± %d ns", every, k, got, before, after, slack)
			}
			if every > 0 && got < last {
				t.Fatalf("reading %d went back %d ns", k, last-got)
			}
			last = got
		}
	}
}

// TestClockFollowsSteps: a step of the wall clock shows in the readings once the offset is
// measured again — at the next reading for a zero interval, not before the interval for a
// long one — and the offset is measured again after the interval.
func TestClockFollowsSteps(t *testing.T) {
	var step atomic.Int64
	wall := func() time.Time { return time.Now().Add(time.Duration(step.Load())) }
	eager := newClock(0, wall)
	lazy := newClock(time.Hour, wall)
	step.Store(int64(3 * time.Hour))
	now := time.Now().UnixNano()
	if got := eager.Now(); got-now < int64(3*time.Hour)-int64(time.Second) {
		t.Fatalf("zero interval: step of 3 h not followed: %d ns ahead of time.Now", got-now)
	}
	if got := lazy.Now(); got-now > int64(time.Second) {
		t.Fatalf("1 h interval: offset measured again before its time: %d ns ahead", got-now)
	}
	lazy.synced.Store(lazy.synced.Load() - int64(time.Hour)) // as if an hour had passed
	if got := lazy.Now(); got-now < int64(3*time.Hour)-int64(time.Second) {
		t.Fatalf("1 h interval: step not followed after the interval: %d ns ahead", got-now)
	}
}
