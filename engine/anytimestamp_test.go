package engine

import (
	"math/rand/v2"
	"testing"
)

// plainAnyTimestamp is AnyTimestamp as a plain scan of the times, without the lazy shortcut:
// the stored array, or every packet's lazyTS for a lazy burst (TestLazyMetaMatchesStored pins
// the lazy form to the stored one).
func plainAnyTimestamp(b *Burst) bool {
	for i := range b.n {
		t := b.lazyTS
		if !b.lazy {
			t = b.ts[i]
		}
		if t != 0 {
			return true
		}
	}
	return false
}

// TestAnyTimestampShortcut pins AnyTimestamp (which skips the scan for a TX burst as
// NewBurst made it) to the plain scan over random sequences of what writes a burst's times:
// fresh TX bursts of random sizes, send times set and cleared on random packets, packets
// appended (one and several segments) or grown and committed with random times, packets
// taken or copied from another burst, bursts reused through the metadata pool.
func TestAnyTimestampShortcut(t *testing.T) {
	reg := testRegion(t, "r", 64, 256)
	q := testTxQueue(t, true, reg)
	r := rand.New(rand.NewPCG(11, 12))
	tm := func() int64 {
		if r.IntN(2) == 0 {
			return 0
		}
		return r.Int64N(1<<40) + 1
	}
	for round := 0; round < 3000; round++ {
		b, err := q.NewBurst(1 + r.IntN(8))
		if err != nil {
			t.Fatal(err)
		}
		// The buffers NewBurst took, given back by hand at the end (packets appended below
		// point at buffer 0 without owning it, and move between bursts).
		owned := append([]uint64(nil), b.segs[0].off[:b.n]...)
		if b.AnyTimestamp() || plainAnyTimestamp(b) {
			t.Fatalf("round %d: a fresh burst has a time", round)
		}
		var other *Burst
		for step := 0; step < 6; step++ {
			op := r.IntN(6)
			switch op {
			case 0:
				if b.Len() > 0 {
					b.SetRxTimestamp(r.IntN(b.Len()), tm())
				}
			case 1:
				if b.Len() < b.Cap() {
					b.Append(0, 0, 0, tm())
				}
			case 2:
				if b.Len() < b.Cap() {
					_, _, _, ts := b.Grow(1)
					ts[0] = tm()
					b.Commit(1)
				}
			case 3: // b's packets go to another burst, which is then checked too
				o, err := q.meta.Get(0, 0, q.Regions, true, 8)
				if err != nil {
					t.Fatal(err)
				}
				o.TakePackets(b, tm())
				if o.AnyTimestamp() != plainAnyTimestamp(o) {
					t.Fatalf("round %d: taker says %v", round, o.AnyTimestamp())
				}
				if other != nil {
					other.FreeMeta()
				}
				other = o
			case 4:
				if other != nil && b.Len()+other.Len() <= b.Cap() {
					b.AppendPackets(other, tm())
				}
			case 5:
				if b.Len() > 0 {
					b.SetRxTimestamp(r.IntN(b.Len()), 0)
				}
			}
			if got, want := b.AnyTimestamp(), plainAnyTimestamp(b); got != want {
				t.Fatalf("round %d step %d (op %d): AnyTimestamp %v, the scan %v", round, step, op, got, want)
			}
		}
		if other != nil {
			other.FreeMeta()
		}
		b.FreeMeta()
		for _, o := range owned {
			reg.Put(uint32(o / 256))
		}
	}
}
