package engine

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

// TestCountersConcurrent: Counters.Add from several goroutines at once (so that some find
// the lock held and add to the shared halves) with readers loading all along: every reading
// of each counter is at least the reader's previous one, and once the writers stop Packets,
// Bytes and Bursts are exactly the sums of what was added (random amounts), as are
// Counter.Add's direct additions and Snapshot's copies.
func TestCountersConcurrent(t *testing.T) {
	var c Counters
	// Both paths by hand first: the lock free (owned halves), then held (shared halves).
	c.Add(2, 50)
	atomic.StoreUint32(&c.lock, 1)
	c.Add(3, 100)
	if c.Packets.owned != 2 || c.Packets.shared.Load() != 3 || c.Bytes.Load() != 150 || c.Bursts.Load() != 2 {
		t.Fatalf("owned %d shared %d bytes %d bursts %d", c.Packets.owned, c.Packets.shared.Load(), c.Bytes.Load(), c.Bursts.Load())
	}
	atomic.StoreUint32(&c.lock, 0)
	c = Counters{}
	const writers, adds = 4, 20000
	var wantP, wantB, wantN atomic.Uint64
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			var p, b, n uint64
			for i := 0; i < adds; i++ {
				k, l := r.IntN(300), r.IntN(1<<20)
				if i%97 == 0 {
					c.Packets.Add(uint64(k)) // an engine's direct addition
					p += uint64(k)
					continue
				}
				c.Add(k, l)
				p, b, n = p+uint64(k), b+uint64(l), n+1
			}
			wantP.Add(p)
			wantB.Add(b)
			wantN.Add(n)
		}()
	}
	stop := make(chan struct{})
	var bad atomic.Value
	var readers sync.WaitGroup
	for g := 0; g < 2; g++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			var lp, lb, ln uint64
			for i := 0; i < 10_000_000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				s := c.Snapshot()
				if s.Packets < lp || s.Bytes < lb || s.Bursts < ln {
					bad.Store("a reading went backwards")
					return
				}
				lp, lb, ln = s.Packets, s.Bytes, s.Bursts
			}
		}()
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	if v := bad.Load(); v != nil {
		t.Fatal(v)
	}
	s := c.Snapshot()
	if s.Packets != wantP.Load() || s.Bytes != wantB.Load() || s.Bursts != wantN.Load() {
		t.Fatalf("counted %d packets %d bytes %d bursts, want %d %d %d", s.Packets, s.Bytes, s.Bursts, wantP.Load(), wantB.Load(), wantN.Load())
	}
	if c.Packets.Load() != s.Packets || c.Bytes.Load() != s.Bytes || c.Bursts.Load() != s.Bursts {
		t.Fatal("Load and Snapshot differ at rest")
	}
	if atomic.LoadUint32(&c.lock) != 0 {
		t.Fatal("lock left held")
	}
}
