package ring

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

func newFront(t *testing.T, n, size int) *Front {
	t.Helper()
	p, err := NewPool(n)
	if err != nil {
		t.Fatal(err)
	}
	f, err := p.NewFront(size)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestFrontSizeRange(t *testing.T) {
	p, _ := NewPool(8)
	for _, size := range []int{-1, 1, 9} {
		if _, err := p.NewFront(size); err == nil {
			t.Errorf("NewFront(%d) on a pool of 8: no error", size)
		}
	}
}

// TestFrontModel runs random operations from one thread against a model of which indices are
// free: every get hands out only free indices, fails exactly when too few are free in pool
// and cache together, and Available is exact between operations; size 0 is a front without
// a cache.
func TestFrontModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct{ n, size int }{{8, 2}, {64, 16}, {100, 64}, {1024, 512}, {5, 5}, {1, 0}, {3, 0}} {
		f := newFront(t, tc.n, tc.size)
		var held []uint32
		owned := make([]bool, tc.n)
		take := func(idx []uint32) {
			for _, i := range idx {
				if owned[i] {
					t.Fatalf("n=%d size=%d: index %d handed out twice", tc.n, tc.size, i)
				}
				owned[i] = true
			}
			held = append(held, idx...)
		}
		give := func(k int) []uint32 {
			rng.Shuffle(len(held), func(a, b int) { held[a], held[b] = held[b], held[a] })
			out := append([]uint32(nil), held[len(held)-k:]...)
			held = held[:len(held)-k]
			for _, i := range out {
				owned[i] = false
			}
			return out
		}
		for step := 0; step < 5000; step++ {
			free := tc.n - len(held)
			k := rng.IntN(max(tc.size, tc.n)*2 + 2)
			switch op := rng.IntN(6); op {
			case 0:
				dst := make([]uint32, k)
				ok := f.GetBulk(dst)
				if ok != (k <= free) {
					t.Fatalf("n=%d size=%d step %d: GetBulk(%d) with %d free = %v", tc.n, tc.size, step, k, free, ok)
				}
				if ok {
					take(dst)
				}
			case 1:
				dst := make([]uint32, k)
				got := f.GetBurst(dst)
				if got != min(k, free) {
					t.Fatalf("n=%d size=%d step %d: GetBurst(%d) with %d free = %d", tc.n, tc.size, step, k, free, got)
				}
				take(dst[:got])
			case 2:
				idx, ok := f.Get()
				if ok != (free > 0) {
					t.Fatalf("n=%d size=%d step %d: Get with %d free = %v", tc.n, tc.size, step, free, ok)
				}
				if ok {
					take([]uint32{idx})
				}
			case 3, 4:
				f.PutBulk(give(min(k, len(held))))
			case 5:
				if len(held) > 0 {
					f.Pool().Put(give(1)[0])
				}
			}
			if got, want := f.Available(), tc.n-len(held); got != want {
				t.Fatalf("n=%d size=%d step %d: Available %d, want %d (cache %d)", tc.n, tc.size, step, got, want, f.Cached())
			}
		}
		f.PutBulk(give(len(held)))
		f.Seal()
		if f.Cached() != 0 || f.Pool().Available() != tc.n {
			t.Fatalf("n=%d size=%d: after Seal cache %d, pool %d of %d", tc.n, tc.size, f.Cached(), f.Pool().Available(), tc.n)
		}
		// Sealed: everything goes to the pool, whose count stays exact.
		dst := make([]uint32, tc.n)
		if !f.GetBulk(dst) || f.Pool().Available() != 0 {
			t.Fatalf("n=%d size=%d: sealed GetBulk of every index failed", tc.n, tc.size)
		}
		f.PutBulk(dst)
		if f.Cached() != 0 || f.Pool().Available() != tc.n {
			t.Fatalf("n=%d size=%d: sealed PutBulk went to the cache (cache %d, pool %d)", tc.n, tc.size, f.Cached(), f.Pool().Available())
		}
	}
}

// TestFrontConcurrent has several goroutines take and return indices through the front (and
// the pool directly) at once: no index is ever held by two of them, Available never exceeds
// the pool's size, and once they are done and the front is sealed every index is in the pool.
func TestFrontConcurrent(t *testing.T) {
	const n, size, workers, rounds = 256, 64, 4, 4000
	f := newFront(t, n, size)
	owner := make([]atomic.Int32, n) // 0 free, else worker+1
	var wg sync.WaitGroup
	var bad atomic.Int64
	stop := make(chan struct{})
	var watch sync.WaitGroup
	watch.Add(1)
	go func() {
		defer watch.Done()
		for i := 0; i < 1_000_000; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if a := f.Available(); a < 0 || a > n {
				bad.Add(1)
			}
		}
	}()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			var held []uint32
			claim := func(idx []uint32) {
				for _, i := range idx {
					if !owner[i].CompareAndSwap(0, int32(w+1)) {
						bad.Add(1)
					}
				}
				held = append(held, idx...)
			}
			release := func(k int) []uint32 {
				out := held[len(held)-k:]
				held = held[:len(held)-k]
				for _, i := range out {
					if !owner[i].CompareAndSwap(int32(w+1), 0) {
						bad.Add(1)
					}
				}
				return out
			}
			dst := make([]uint32, 2*size)
			for r := 0; r < rounds; r++ {
				k := 1 + rng.IntN(len(dst)-1)
				switch rng.IntN(5) {
				case 0:
					if f.GetBulk(dst[:k]) {
						claim(dst[:k])
					}
				case 1:
					claim(dst[:f.GetBurst(dst[:k])])
				case 2:
					if idx, ok := f.Get(); ok {
						claim([]uint32{idx})
					}
				case 3:
					out := release(min(k, len(held)))
					f.PutBulk(append([]uint32(nil), out...))
				case 4:
					if len(held) > 0 {
						f.Pool().Put(release(1)[0])
					}
				}
			}
			f.PutBulk(append([]uint32(nil), release(len(held))...))
		}(w)
	}
	wg.Wait()
	close(stop)
	watch.Wait()
	if bad.Load() != 0 {
		t.Fatalf("%d violations: an index held twice, returned by a non-owner, or Available out of range", bad.Load())
	}
	if got := f.Available(); got != n {
		t.Fatalf("Available %d after every index came back, want %d", got, n)
	}
	f.Seal()
	if f.Pool().Available() != n {
		t.Fatalf("pool holds %d of %d after Seal", f.Pool().Available(), n)
	}
}

// TestFrontSealConcurrent seals the front while other goroutines return indices through it:
// nothing is left in the cache, and the pool ends up with every index.
func TestFrontSealConcurrent(t *testing.T) {
	const n, size, workers = 512, 128, 4
	for round := 0; round < 50; round++ {
		f := newFront(t, n, size)
		all := make([]uint32, n)
		if !f.GetBulk(all) {
			t.Fatal("GetBulk of every index failed")
		}
		var wg sync.WaitGroup
		per := n / workers
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(mine []uint32) {
				defer wg.Done()
				for len(mine) > 0 {
					k := min(len(mine), 16)
					f.PutBulk(mine[:k])
					mine = mine[k:]
				}
			}(all[w*per : (w+1)*per])
		}
		f.Seal()
		wg.Wait()
		if f.Cached() != 0 || f.Pool().Available() != n {
			t.Fatalf("round %d: after Seal and every put: cache %d, pool %d of %d", round, f.Cached(), f.Pool().Available(), n)
		}
	}
}

// TestFrontNoAllocs: the cache's get and put paths do not touch the heap.
func TestFrontNoAllocs(t *testing.T) {
	f := newFront(t, 1024, 256)
	dst := make([]uint32, 64)
	if a := testing.AllocsPerRun(100, func() {
		if !f.GetBulk(dst) {
			t.Fatal("GetBulk failed")
		}
		f.PutBulk(dst)
	}); a != 0 {
		t.Fatalf("%v allocations per get/put pair", a)
	}
}

// TestFrontGetMostRecent: a single Get returns the buffer freed last (the top of the cache),
// not an older one from the pool: the buffer the caller then writes is the one most likely
// still in the CPU's caches.
func TestFrontGetMostRecent(t *testing.T) {
	p, _ := NewPool(64)
	f, err := p.NewFront(16)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]uint32, 8)
	if !f.GetBulk(got) {
		t.Fatal("GetBulk of 8 from 64 failed")
	}
	f.PutBulk(got)
	for i := len(got) - 1; i >= 0; i-- {
		idx, ok := f.Get()
		if !ok || idx != got[i] {
			t.Fatalf("Get = %d, %v; want %d, the last freed", idx, ok, got[i])
		}
	}
	if f.Available() != 64-len(got) {
		t.Fatalf("Available %d, want %d", f.Available(), 64-len(got))
	}
}
