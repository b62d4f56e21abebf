package channel

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestTimerScale: a scale built from a timer frequency converts ticks to Unix ns within a
// nanosecond per tick period, forwards and backwards from the reference, and Ticks inverts
// Nanos; a real-time stamp round-trips through DeviceTime.
func TestTimerScale(t *testing.T) {
	r := rand.New(rand.NewPCG(rand.Uint64(), 1))
	for range 200 {
		freq := 1000 + r.Uint64N(2_000_000) // 1 MHz to 2 GHz
		ref := r.Uint64()
		now := time.Now().UnixNano()
		s, err := ScaleFor(freq, ref, now)
		if err != nil {
			t.Fatal(err)
		}
		d := r.Uint64N(1 << 40)
		want := float64(d) * 1e6 / float64(freq)
		// The multiplier is truncated to 32 bits: allow its relative error plus a tick.
		tol := want/float64(s.Mult) + 1e6/float64(freq) + 1
		for _, sign := range []int64{1, -1} {
			got := s.Nanos(ref + uint64(sign)*d)
			if diff := float64(got-now)*float64(sign) - want; diff > tol || diff < -tol {
				t.Fatalf("freq %d kHz, %+d ticks: %d ns from the reference, want %.0f ± %.0f", freq, sign*int64(d), got-now, want, tol)
			}
			back := s.Ticks(got)
			if e := int64(back - (ref + uint64(sign)*d)); e > 2 || e < -2 {
				t.Fatalf("freq %d kHz: Ticks(Nanos(t)) is %d ticks off", freq, e)
			}
		}
	}
	if _, err := ScaleFor(0, 0, 0); err == nil {
		t.Fatal("a 0 kHz timer was scaled")
	}
	tb := Timebase{RealTimeOffset: r.Int64N(1e15)}
	ns := time.Now().UnixNano()
	if got := tb.RealTime(tb.DeviceTime(ns)); got != ns {
		t.Fatalf("real time round trip: %d, want %d", got, ns)
	}
}
