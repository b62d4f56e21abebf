package engine

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// TestLazyMetaMatchesStored pins the lazy flow ids and times (Burst.lazy: NewBurst and
// TakePackets store neither array) and the unread freed flags of a burst that is not partial
// to the stored form they replace, by a model kept by the test: random sequences of every
// writer (SetRxTimestamp, SetFlowID, Append, AppendSegments, Grow and Commit, AppendPackets,
// TakePackets into a fresh burst) and of every partial free (FreeSegment, FreePacket,
// Truncate, FreePackets) on TX bursts of random sizes and on the bursts that take their
// packets. After every step the arrays a lazy burst does not read, and the freed flags of a
// burst that is not partial, are overwritten with garbage: FlowID, RxTimestamp and
// AnyTimestamp must still answer what the model says, and at the end of every round all of
// the region's buffers must be back exactly once (taken out again as distinct indexes).
func TestLazyMetaMatchesStored(t *testing.T) {
	const nbufs, size = 512, 128
	r := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	reg := testRegion(t, "lazy", nbufs, size)
	q := testTxQueue(t, true, reg)
	rm, err := NewMetaPool("lazy-rx", 4, 8, false)
	if err != nil {
		t.Fatal(err)
	}
	type pkt struct {
		flow  uint32
		ts    int64
		freed bool
	}
	tm := func() int64 {
		if r.IntN(3) == 0 {
			return 0
		}
		return r.Int64N(1<<50) + 1
	}
	take := func() uint64 { // a buffer of the region, owned by whichever burst gets it
		var idx [1]uint32
		if !reg.GetBulk(idx[:]) {
			t.Fatal("region exhausted")
		}
		return uint64(idx[0]) * size
	}
	poison := func(b *Burst) {
		if b.lazy {
			for i := range b.n {
				b.flow[i], b.ts[i] = r.Uint32(), int64(r.Uint64())
			}
		}
		if !b.partial {
			for i := range b.n {
				b.freed[i] = uint8(r.Uint32())
			}
		}
	}
	check := func(b *Burst, want []pkt, round, step, op int) {
		t.Helper()
		if b.Len() != len(want) {
			t.Fatalf("round %d step %d (op %d): %d packets, want %d", round, step, op, b.Len(), len(want))
		}
		anyTS := false
		for i, p := range want {
			if got := b.FlowID(i); got != p.flow {
				t.Fatalf("round %d step %d (op %d): packet %d flow %d, want %d (lazy %v)", round, step, op, i, got, p.flow, b.lazy)
			}
			ts, err := b.RxTimestamp(i)
			if p.ts == 0 && !errors.Is(err, ErrNotSupported) || p.ts != 0 && (err != nil || ts != p.ts) {
				t.Fatalf("round %d step %d (op %d): packet %d time %d (%v), want %d (lazy %v)", round, step, op, i, ts, err, p.ts, b.lazy)
			}
			anyTS = anyTS || p.ts != 0
		}
		if got := b.AnyTimestamp(); got != anyTS {
			t.Fatalf("round %d step %d (op %d): AnyTimestamp %v, want %v (lazy %v)", round, step, op, got, anyTS, b.lazy)
		}
	}
	for round := 0; round < 1500; round++ {
		n := r.IntN(20)
		b, err := q.NewBurst(n)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]pkt, b.Len()) // n 0: the batch size
		poison(b)
		check(b, want, round, -1, -1)
		for step := 0; step < 10; step++ {
			op := r.IntN(12)
			i := -1
			if b.Len() > 0 {
				i = r.IntN(b.Len())
			}
			switch op {
			case 0:
				if i >= 0 {
					v := tm()
					b.SetRxTimestamp(i, v)
					want[i].ts = v
				}
			case 1:
				if i >= 0 {
					v := r.Uint32()
					b.SetFlowID(i, v)
					want[i].flow = v
				}
			case 2:
				f, v := r.Uint32(), tm()
				b.Append(take(), 64, f, v)
				want = append(want, pkt{flow: f, ts: v})
			case 3:
				f, v := r.Uint32(), tm()
				b.AppendSegments([]uint64{take()}, []uint32{64}, f, v)
				want = append(want, pkt{flow: f, ts: v})
			case 4:
				k := 1 + r.IntN(4)
				offs, lens, flows, ts := b.Grow(k)
				m := r.IntN(k + 1)
				for j := range m {
					offs[j], lens[j], flows[j], ts[j] = take(), 64, r.Uint32(), tm()
					want = append(want, pkt{flow: flows[j], ts: ts[j]})
				}
				b.Commit(m)
			case 5: // another burst's packets appended (copied; the other lets go of them)
				o, err := q.NewBurst(r.IntN(6))
				if err != nil {
					t.Fatal(err)
				}
				v := tm()
				b.AppendPackets(o, v)
				for range o.Len() {
					want = append(want, pkt{ts: v})
				}
				o.n = 0
				o.FreeMeta()
			case 6: // b's packets go to a fresh burst, which carries on as b
				anyFreed := false
				for _, p := range want {
					anyFreed = anyFreed || p.freed
				}
				if anyFreed {
					break // TakePackets hands on packets none of whose segments went back
				}
				o, err := rm.Get(0, 0, q.Regions, true, 8)
				if err != nil {
					t.Fatal(err)
				}
				v := tm()
				o.TakePackets(b, v)
				if b.Len() != 0 {
					t.Fatalf("round %d: TakePackets left %d packets in the source", round, b.Len())
				}
				for j := range want {
					want[j] = pkt{ts: v, freed: false}
				}
				b.FreeMeta()
				b = o
			case 7:
				if i >= 0 {
					b.FreeSegment(0, i)
					want[i].freed = true
				}
			case 8:
				if i >= 0 {
					b.FreePacket(i)
					want[i].freed = true
				}
			case 9:
				if i >= 0 {
					b.Truncate(i)
					want = want[:i]
				}
			case 10:
				if r.IntN(4) == 0 {
					b.FreePackets()
					for j := range want {
						want[j].freed = true
					}
				}
			case 11:
				if r.IntN(4) == 0 {
					b.settle() // the stored form by hand: same answers
				}
			}
			poison(b)
			check(b, want, round, step, op)
		}
		b.Free()
		// Every buffer back exactly once: all of them can be taken, as distinct indexes.
		all := make([]uint32, nbufs)
		if !reg.GetBulk(all) {
			t.Fatalf("round %d: only %d of %d buffers back", round, reg.Available(), nbufs)
		}
		seen := make([]bool, nbufs)
		for _, x := range all {
			if seen[x] {
				t.Fatalf("round %d: buffer %d back twice", round, x)
			}
			seen[x] = true
		}
		reg.putBulk(all)
	}
}
