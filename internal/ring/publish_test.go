package ring

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/internal/testutil"
)

// item is what the publication test moves: a pointer, so a consumer that read a slot before
// its producer had written it would see nil (or the previous lap's value, which the sequence
// check catches).
type item struct{ prod, seq int }

// yieldSometimes counts one more failed attempt of a spinning test goroutine and lets another
// goroutine run after every 16 in a row, so that most retries still come back to back. With
// more spinning goroutines than Ps (the race detector on a loaded 2-core machine; -cpu 1 shows
// it at once) one that only spins keeps its P until it is preempted, about every 10 ms: the
// 60-s deadlines ran out with 3328 of 80,000 values moved (TestMPMCBulkPublication, -race
// -cpu 1, mpsc-4p1c, capacity 8).
func yieldSometimes(idle int) int {
	if idle++; idle%16 == 0 {
		runtime.Gosched()
	}
	return idle
}

// TestMPMCBulkPublication moves values through MPMC, MPSC and SPMC rings with random bulk and
// burst sizes on every side, so bulks of different producers and consumers interleave and
// wrap: every value arrives exactly once, never as a slot not yet written (nil), and each
// consumer sees each producer's values in order. publish stores all but a bulk's first
// sequence with plain stores; this is the test that would see a consumer get ahead of them.
func TestMPMCBulkPublication(t *testing.T) {
	for _, tc := range []struct {
		name       string
		mode       Mode
		prod, cons int
	}{
		{"mpmc-3p3c", MPMC, 3, 3},
		{"mpsc-4p1c", MPSC, 4, 1},
		{"spmc-1p4c", SPMC, 1, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, capacity := range []int{8, 33, 256} {
				r, _ := New[*item](capacity, tc.mode)
				perProducer := testutil.Rounds(20000, 1000) // spinning producers on an emulator's shared cores
				deadline := time.Now().Add(60 * time.Second)
				var received atomic.Int64
				total := int64(tc.prod * perProducer)
				seen := make([]atomic.Int32, tc.prod*perProducer)
				var failed atomic.Value
				fail := func(msg string) { failed.CompareAndSwap(nil, msg) }
				var wg sync.WaitGroup
				for p := range tc.prod {
					wg.Go(func() {
						rng := rand.New(rand.NewPCG(rand.Uint64(), uint64(p)))
						buf := make([]*item, 40)
						idle := 0
						for next := 0; next < perProducer && time.Now().Before(deadline); {
							n := min(1+rng.IntN(len(buf)), perProducer-next)
							for i := range n {
								buf[i] = &item{prod: p, seq: next + i}
							}
							was := next
							switch rng.IntN(3) {
							case 0:
								if r.EnqueueBulk(buf[:n]) {
									next += n
								}
							case 1:
								next += r.EnqueueBurst(buf[:n])
							default:
								if r.Enqueue(buf[0]) {
									next++
								}
							}
							if next == was {
								idle = yieldSometimes(idle)
							} else {
								idle = 0
							}
						}
					})
				}
				for c := range tc.cons {
					wg.Go(func() {
						rng := rand.New(rand.NewPCG(rand.Uint64(), uint64(100+c)))
						last := make([]int, tc.prod)
						for i := range last {
							last[i] = -1
						}
						dst := make([]*item, 40)
						idle := 0
						for received.Load() < total && time.Now().Before(deadline) {
							n := 1 + rng.IntN(len(dst))
							var k int
							switch rng.IntN(3) {
							case 0:
								if r.DequeueBulk(dst[:n]) {
									k = n
								}
							case 1:
								k = r.DequeueBurst(dst[:n])
							default:
								if v, ok := r.Dequeue(); ok {
									dst[0], k = v, 1
								}
							}
							if k == 0 {
								idle = yieldSometimes(idle)
								continue
							}
							idle = 0
							for _, v := range dst[:k] {
								if v == nil {
									fail("a consumer read a slot before its value was written")
									return
								}
								if v.seq <= last[v.prod] {
									fail("a consumer saw a producer's values out of order")
									return
								}
								last[v.prod] = v.seq
								seen[v.prod*perProducer+v.seq].Add(1)
							}
							received.Add(int64(k))
						}
					})
				}
				wg.Wait()
				if msg := failed.Load(); msg != nil {
					t.Fatalf("cap %d: %s", capacity, msg)
				}
				if got := received.Load(); got != total {
					t.Fatalf("cap %d: received %d of %d values before the deadline", capacity, got, total)
				}
				for i := range seen {
					if c := seen[i].Load(); c != 1 {
						t.Fatalf("cap %d: value %d of producer %d delivered %d times", capacity, i%perProducer, i/perProducer, c)
					}
				}
				for i := range r.slots {
					if r.slots[i].v != nil {
						t.Fatalf("cap %d: slot %d still holds a pointer after the ring emptied", capacity, i)
					}
				}
			}
		})
	}
}

// TestMPMCSequencesAfterBulks: after bulk calls of every size the slots carry exactly the
// sequence numbers per-slot publication would have given them (free for the next lap at
// position+size), so the plain stores of publish leave nothing behind.
func TestMPMCSequencesAfterBulks(t *testing.T) {
	r, _ := New[uint64](16, MPMC)
	buf := make([]uint64, 16)
	pos := uint32(0)
	for n := 1; n <= 16; n++ {
		for i := range n {
			buf[i] = uint64(int(pos) + i)
		}
		if !r.EnqueueBulk(buf[:n]) {
			t.Fatalf("enqueue of %d failed", n)
		}
		for i := range uint32(n) {
			if got := r.slots[(pos+i)&r.mask].seq; got != pos+i+1 {
				t.Fatalf("bulk %d: slot %d seq %d after enqueue, want %d", n, (pos+i)&r.mask, got, pos+i+1)
			}
		}
		if !r.DequeueBulk(buf[:n]) {
			t.Fatalf("dequeue of %d failed", n)
		}
		for i := range uint32(n) {
			if buf[i] != uint64(pos+i) {
				t.Fatalf("bulk %d: value %d, want %d", n, buf[i], pos+i)
			}
			if got := r.slots[(pos+i)&r.mask].seq; got != pos+i+r.size {
				t.Fatalf("bulk %d: slot %d seq %d after dequeue, want %d", n, (pos+i)&r.mask, got, pos+i+r.size)
			}
		}
		pos += uint32(n)
	}
}

// TestUnpublishedFirstSlotStopsTheOtherSide pins down what publish relies on: while a bulk's
// first slot is not yet published, the other side does not reach the rest of the bulk, even
// though their sequences already say ready (the state between publish's plain stores and its
// atomic one).
func TestUnpublishedFirstSlotStopsTheOtherSide(t *testing.T) {
	r, _ := New[uint64](16, MPMC)
	if !r.EnqueueBulk([]uint64{1, 2, 3}) {
		t.Fatal("enqueue failed")
	}
	// A producer claims four slots, writes them and has stored all sequences but the first.
	pos, n := r.claim(&r.enq, 4, true, false, 0)
	if n != 4 {
		t.Fatalf("claimed %d slots, want 4", n)
	}
	for i := range n {
		r.slots[(pos+i)&r.mask].v = uint64(10 + i)
		if i > 0 {
			r.slots[(pos+i)&r.mask].seq = pos + i + 1
		}
	}
	dst := make([]uint64, 16)
	if k := r.DequeueBurst(dst); k != 3 || dst[0] != 1 || dst[2] != 3 {
		t.Fatalf("burst took %d values %v, want the 3 published ones", k, dst[:k])
	}
	if k := r.DequeueBurst(dst); k != 0 {
		t.Fatalf("burst took %d values past an unpublished first slot", k)
	}
	atomic.StoreUint32(&r.slots[pos&r.mask].seq, pos+1)
	if k := r.DequeueBurst(dst); k != 4 || dst[0] != 10 || dst[3] != 13 {
		t.Fatalf("after publication the burst took %d values %v, want 10..13", k, dst[:k])
	}

	// The mirror image: a consumer has emptied four slots and freed all but the first, and
	// the ring has gone round so that producers need exactly those slots.
	r, _ = New[uint64](4, MPMC)
	if !r.EnqueueBulk([]uint64{1, 2, 3, 4}) {
		t.Fatal("enqueue failed")
	}
	pos, n = r.claim(&r.deq, 4, true, false, 1)
	for i := uint32(1); i < n; i++ {
		r.slots[(pos+i)&r.mask].seq = pos + i + r.size
	}
	if k := r.EnqueueBurst([]uint64{5, 6, 7, 8}); k != 0 {
		t.Fatalf("producer put %d values past an unfreed first slot", k)
	}
	atomic.StoreUint32(&r.slots[pos&r.mask].seq, pos+r.size)
	if k := r.EnqueueBurst([]uint64{5, 6, 7, 8}); k != 4 {
		t.Fatalf("after the slot was freed the producer put %d values, want 4", k)
	}
}
