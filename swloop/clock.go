package swloop

import (
	"sync/atomic"
	"time"
)

// clock reads CLOCK_REALTIME nanoseconds for receive timestamps at the cost of one monotonic
// clock read: time.Now reads both the wall clock and the monotonic clock (two vDSO calls, 90 ns
// together on the GPU host's VM, 1.4 ns per packet of a 64-packet burst), and a burst's
// timestamp needs only the first. The wall time is the monotonic time since start plus an
// offset measured from time.Now, measured again once the last measurement is older than
// every: both clocks run at the rate NTP or phc2sys steer CLOCK_REALTIME to (Linux applies
// the frequency correction to both), so they differ only by steps of the wall clock, which
// a reading follows within every.
type clock struct {
	start time.Time // the monotonic origin (time.Now at newClock, monotonic reading kept)
	every time.Duration
	now   func() time.Time // time.Now; tests step it
	// off is CLOCK_REALTIME minus the monotonic time since start, ns; synced is the
	// monotonic time since start of its measurement. Either may be stored by any sender
	// (Send runs concurrently on several queues): each store is a whole, correct offset.
	off, synced atomic.Int64
	// uncertainty is the last measurement's bound on its own error, ns (tests).
	uncertainty atomic.Int64
}

// newClock makes a clock that measures its offset again every interval.
func newClock(every time.Duration, now func() time.Time) *clock {
	c := &clock{start: now(), every: every, now: now}
	c.sync(int64(time.Since(c.start)))
	return c
}

// Now is CLOCK_REALTIME in nanoseconds since 1970.
func (c *clock) Now() int64 {
	m := int64(time.Since(c.start)) // the monotonic clock only
	if m-c.synced.Load() >= int64(c.every) {
		return c.sync(m)
	}
	return m + c.off.Load()
}

// sync measures the offset afresh and returns the wall time. The wall clock is read between
// two monotonic readings; the offset is taken against their midpoint, so its error is at most
// half the gap between them. A gap widened by preemption is measured again (up to three times;
// the narrowest is kept).
func (c *clock) sync(m int64) int64 {
	best, width := int64(0), int64(-1)
	for try := 0; try < 3; try++ {
		m0 := int64(time.Since(c.start))
		w := c.now().UnixNano()
		m1 := int64(time.Since(c.start))
		if width < 0 || m1-m0 < width {
			best, width = w-(m0+m1)/2, m1-m0
		}
		if width <= 2000 {
			break
		}
	}
	c.off.Store(best)
	c.uncertainty.Store((width + 1) / 2)
	c.synced.Store(m)
	return m + best
}
