package ring

import (
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// TestSPSCOrderConcurrent moves a counting sequence through an SPSC ring with random bulk
// and burst sizes on both sides and checks that the consumer sees it in order, exactly once.
func TestSPSCOrderConcurrent(t *testing.T) {
	for _, capacity := range []int{2, 7, 64, 1000} {
		r, _ := New[uint64](capacity, SPSC)
		const total = 50000
		deadline := time.Now().Add(60 * time.Second)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(rand.Uint64(), 1))
			buf := make([]uint64, 64)
			next := uint64(0)
			for next < total && time.Now().Before(deadline) {
				n := 1 + rng.IntN(len(buf))
				n = int(min(uint64(n), total-next))
				for i := range n {
					buf[i] = next + uint64(i)
				}
				var k int
				if rng.IntN(2) == 0 {
					if r.EnqueueBulk(buf[:n]) {
						k = n
					}
				} else {
					k = r.EnqueueBurst(buf[:n])
				}
				next += uint64(k)
			}
		}()
		rng := rand.New(rand.NewPCG(rand.Uint64(), 2))
		dst := make([]uint64, 64)
		want := uint64(0)
		for want < total && time.Now().Before(deadline) {
			n := 1 + rng.IntN(len(dst))
			var k int
			if rng.IntN(2) == 0 {
				if r.DequeueBulk(dst[:n]) {
					k = n
				}
			} else {
				k = r.DequeueBurst(dst[:n])
			}
			for _, v := range dst[:k] {
				if v != want {
					t.Fatalf("cap %d: got %d, want %d", capacity, v, want)
				}
				want++
			}
		}
		wg.Wait()
		if want != total {
			t.Fatalf("cap %d: %d of %d values arrived before the deadline", capacity, want, total)
		}
		if r.Len() != 0 {
			t.Fatalf("cap %d: %d values left", capacity, r.Len())
		}
	}
}

// TestSPSCClearsSlots: a dequeued pointer must not stay reachable from the ring.
func TestSPSCClearsSlots(t *testing.T) {
	r, _ := New[*int](4, SPSC)
	for round := range 5 {
		vs := []*int{new(int), new(int), new(int)}
		if !r.EnqueueBulk(vs) {
			t.Fatalf("round %d: enqueue failed", round)
		}
		dst := make([]*int, 3)
		if !r.DequeueBulk(dst) {
			t.Fatalf("round %d: dequeue failed", round)
		}
		for i, v := range r.vals {
			if v != nil {
				t.Fatalf("round %d: slot %d still holds a pointer", round, i)
			}
		}
	}
}

// TestCursorPadding: the producer's and the consumer's cursors, each side's cached copy of
// the other's cursor and the read-mostly fields sit in five different 128-byte blocks (pairs of
// lines the Xeon's spatial prefetcher moves together) wherever the ring starts, so no
// thread writes a line another thread reads on every call (a cursor line is read by the other
// side only when its cached copy says full or empty), and a waiting side that rewrites its
// cached copy does not touch the line the other side polls.
func TestCursorPadding(t *testing.T) {
	var r Ring[uint64]
	line := func(off uintptr) uintptr { return off / gap }
	offs := map[string]uintptr{
		"enq":     unsafe.Offsetof(r.enq),
		"deq":     unsafe.Offsetof(r.deq),
		"deqSeen": unsafe.Offsetof(r.deqSeen),
		"enqSeen": unsafe.Offsetof(r.enqSeen),
		"mask":    unsafe.Offsetof(r.mask),
	}
	for a, oa := range offs {
		if oa < gap {
			t.Fatalf("%s at %d shares a line with whatever precedes the ring", a, oa)
		}
		for b, ob := range offs {
			// Offsets at least a line apart stay on different lines wherever the ring starts.
			if a != b && line(oa) == line(ob) || a != b && max(oa, ob)-min(oa, ob) < gap {
				t.Fatalf("%s@%d and %s@%d share a cache line", a, oa, b, ob)
			}
		}
	}
	if end := unsafe.Sizeof(r); end-unsafe.Offsetof(r.vals) < gap {
		t.Fatalf("no padding after the read-mostly fields (size %d)", end)
	}
}

func TestHasPointers(t *testing.T) {
	type plain struct {
		a uint64
		b [4]int32
	}
	type withPtr struct {
		a uint64
		p *int
	}
	for _, c := range []struct {
		got, want bool
	}{
		{hasPointers(reflect.TypeFor[uint64]()), false},
		{hasPointers(reflect.TypeFor[plain]()), false},
		{hasPointers(reflect.TypeFor[*int]()), true},
		{hasPointers(reflect.TypeFor[withPtr]()), true},
		{hasPointers(reflect.TypeFor[[]byte]()), true},
		{hasPointers(reflect.TypeFor[string]()), true},
		{hasPointers(reflect.TypeFor[[2]*int]()), true},
	} {
		if c.got != c.want {
			t.Errorf("hasPointers = %v, want %v", c.got, c.want)
		}
	}
}
