package ring

import (
	"math/rand/v2"
	"sync"
	"testing"
)

// checkChain walks the free list from the head and checks that it holds want distinct
// indices whose depths count down to 1, which is what Available reports (the top's depth).
func checkChain(t *testing.T, p *Pool, want int) {
	t.Helper()
	if got := p.Available(); got != want {
		t.Fatalf("Available = %d, want %d", got, want)
	}
	seen := make([]bool, p.n)
	cur := uint32(p.head.Load())
	for d := want; d > 0; d-- {
		if cur == none || int(cur) > p.n {
			t.Fatalf("chain ends after %d of %d indices", want-d, want)
		}
		if seen[cur-1] {
			t.Fatalf("index %d twice in the free list", cur-1)
		}
		seen[cur-1] = true
		w := p.link[cur-1]
		if int(w>>32) != d {
			t.Fatalf("index %d at depth %d records depth %d", cur-1, d, w>>32)
		}
		cur = uint32(w)
	}
	if cur != none {
		t.Fatalf("chain longer than %d", want)
	}
}

// TestPoolDepthCounts runs random single and bulk gets and puts against a model and checks
// the free list's depths (the pool's count) after every one.
func TestPoolDepthCounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(rand.Uint64(), 3))
	for _, n := range []int{1, 2, 7, 64} {
		p, _ := NewPool(n)
		checkChain(t, p, n)
		var held []uint32
		for step := 0; step < 2000; step++ {
			k := 1 + rng.IntN(n)
			switch rng.IntN(5) {
			case 0:
				if v, ok := p.Get(); ok {
					held = append(held, v)
				} else if len(held) != n {
					t.Fatalf("n %d: Get failed with %d held", n, len(held))
				}
			case 1:
				dst := make([]uint32, k)
				if p.GetBulk(dst) {
					held = append(held, dst...)
				} else if n-len(held) >= k {
					t.Fatalf("n %d: GetBulk(%d) failed with %d free", n, k, n-len(held))
				}
			case 2:
				dst := make([]uint32, k)
				held = append(held, dst[:p.GetBurst(dst)]...)
			case 3:
				if len(held) > 0 {
					i := rng.IntN(len(held))
					p.Put(held[i])
					held = append(held[:i], held[i+1:]...)
				}
			default:
				k = min(k, len(held))
				rng.Shuffle(len(held), func(i, j int) { held[i], held[j] = held[j], held[i] })
				p.PutBulk(held[:k])
				held = held[k:]
			}
			checkChain(t, p, n-len(held))
		}
	}
}

// TestPoolDepthConcurrent: threads taking and returning at once leave a consistent list
// whose count is the pool's size once everything is back.
func TestPoolDepthConcurrent(t *testing.T) {
	const n = 256
	p, _ := NewPool(n)
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(rand.Uint64(), uint64(g)))
			buf := make([]uint32, 16)
			for range 20000 {
				k := 1 + rng.IntN(len(buf))
				if rng.IntN(2) == 0 {
					got := p.GetBurst(buf[:k])
					if a := p.Available(); a < 0 || a > n {
						t.Errorf("Available = %d outside 0..%d", a, n)
						return
					}
					p.PutBulk(buf[:got])
				} else if v, ok := p.Get(); ok {
					p.Put(v)
				}
			}
		})
	}
	wg.Wait()
	checkChain(t, p, n)
}
