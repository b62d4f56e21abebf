package ring

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

// TestCacheNeverHandsOutTwice runs several goroutines, each with its own cache over one
// shared pool, taking and returning random counts (single and bulk), and checks with an
// owner table that no index is ever held by two goroutines, then that every index is back.
func TestCacheNeverHandsOutTwice(t *testing.T) {
	const n = 512
	p, _ := NewPool(n)
	owner := make([]atomic.Int32, n)
	var wg sync.WaitGroup
	var bad atomic.Int64
	for g := range 6 {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			c, err := p.NewCache(2 + rand.IntN(64))
			if err != nil {
				t.Error(err)
				return
			}
			rng := rand.New(rand.NewPCG(rand.Uint64(), uint64(g)))
			var held []uint32
			take := func(i uint32) {
				if !owner[i].CompareAndSwap(0, int32(g+1)) {
					bad.Add(1)
				}
				held = append(held, i)
			}
			for range 20000 {
				switch rng.IntN(4) {
				case 0:
					if i, ok := c.Get(); ok {
						take(i)
					}
				case 1:
					dst := make([]uint32, 1+rng.IntN(40))
					if c.GetBulk(dst) {
						for _, i := range dst {
							take(i)
						}
					}
				case 2:
					if len(held) > 0 {
						i := held[len(held)-1]
						held = held[:len(held)-1]
						owner[i].Store(0)
						c.Put(i)
					}
				case 3:
					k := min(len(held), rng.IntN(40))
					back := append([]uint32(nil), held[len(held)-k:]...)
					held = held[:len(held)-k]
					for _, i := range back {
						owner[i].Store(0)
					}
					c.PutBulk(back)
				}
			}
			for _, i := range held {
				owner[i].Store(0)
			}
			c.PutBulk(held)
			c.Flush()
			if c.Len() != 0 {
				t.Errorf("cache holds %d after Flush", c.Len())
			}
		}(g)
	}
	wg.Wait()
	if bad.Load() != 0 {
		t.Fatalf("%d indices were handed to two holders at once", bad.Load())
	}
	if p.Available() != n {
		t.Fatalf("pool has %d of %d after every cache flushed", p.Available(), n)
	}
	// Every index exactly once.
	dst := make([]uint32, n)
	if !p.GetBulk(dst) {
		t.Fatal("could not take the whole pool back")
	}
	seen := make([]bool, n)
	for _, i := range dst {
		if seen[i] {
			t.Fatalf("index %d twice in the pool", i)
		}
		seen[i] = true
	}
}

func TestCacheBounds(t *testing.T) {
	p, _ := NewPool(8)
	if _, err := p.NewCache(1); err == nil {
		t.Fatal("cache of 1 accepted")
	}
	if _, err := p.NewCache(9); err == nil {
		t.Fatal("cache larger than the pool accepted")
	}
	c, _ := p.NewCache(4)
	dst := make([]uint32, 8)
	if !c.GetBulk(dst) {
		t.Fatal("bulk of the whole pool through a small cache failed")
	}
	if _, ok := c.Get(); ok {
		t.Fatal("Get from an empty pool succeeded")
	}
	if c.GetBulk(dst[:1]) {
		t.Fatal("GetBulk from an empty pool succeeded")
	}
	c.PutBulk(dst)
	c.Flush()
	if p.Available() != 8 {
		t.Fatalf("available %d after flush", p.Available())
	}
}
