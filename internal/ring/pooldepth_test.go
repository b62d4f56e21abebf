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
	// A hint carrying the head's tag must say what the top's link word says.
	h := p.head.Load()
	var top uint64
	if uint32(h) != none {
		top = p.link[uint32(h)-1]
	}
	if x := p.hintHead; x>>32 == h>>32 && x != h {
		t.Fatalf("head hint %#x for tag %d, head is %#x", x, h>>32, h)
	}
	if x := p.hintNext; x>>32 == h>>32 && uint32(x) != uint32(top) {
		t.Fatalf("next hint %d for tag %d, top's link says %d", uint32(x), h>>32, uint32(top))
	}
	if x := p.hintDepth; x>>32 == h>>32 && uint32(x) != uint32(top>>32) {
		t.Fatalf("depth hint %d for tag %d, top's link says %d", uint32(x), h>>32, top>>32)
	}
}

// TestPoolHintsFresh: every operation leaves hints for the head it installed (a pool whose
// hints were never current would still work, through the link words, but slower).
func TestPoolHintsFresh(t *testing.T) {
	p, _ := NewPool(8)
	fresh := func(what string) {
		t.Helper()
		h := p.head.Load()
		if p.hintHead != h || p.hintNext>>32 != h>>32 || p.hintDepth>>32 != h>>32 {
			t.Fatalf("after %s: hints %#x (head), tags %d/%d, head %#x", what, p.hintHead, p.hintNext>>32, p.hintDepth>>32, h)
		}
	}
	fresh("NewPool")
	a, _ := p.Get()
	fresh("Get")
	b := make([]uint32, 3)
	p.GetBulk(b)
	fresh("GetBulk")
	p.GetBurst(make([]uint32, 10)) // takes the remaining 4, leaves it empty
	fresh("GetBurst")
	if _, ok := p.Get(); ok {
		t.Fatal("Get on an empty pool succeeded")
	}
	p.Put(a)
	fresh("Put")
	p.PutBulk(b[:1])
	fresh("PutBulk of 1")
	p.PutBulk(b[1:])
	fresh("PutBulk")
	checkChain(t, p, 4)
}

// TestPoolStaleHints: hints written late by a thread whose tag has gone (as a thread stalled
// between its compare-and-swap and its hint stores would) must be ignored, whatever they say.
func TestPoolStaleHints(t *testing.T) {
	rng := rand.New(rand.NewPCG(rand.Uint64(), 5))
	const n = 16
	p, _ := NewPool(n)
	var held []uint32
	for step := 0; step < 3000; step++ {
		if rng.IntN(2) == 0 {
			if v, ok := p.Get(); ok {
				held = append(held, v)
			}
		} else if len(held) > 0 {
			p.Put(held[len(held)-1])
			held = held[:len(held)-1]
		}
		// Garbage under an older tag (1..3 operations back), as a late writer leaves it, in
		// any of the three hints (the others keep the head's tag, so a hint used without
		// comparing its tag with the head hint's would be caught).
		old := (p.head.Load()>>32 - 1 - uint64(rng.IntN(3))) << 32
		if rng.IntN(2) == 0 {
			p.hintHead = old | uint64(rng.Uint32N(n+1))
		}
		if rng.IntN(2) == 0 {
			p.hintNext = old | uint64(rng.Uint32N(n+1))
		}
		if rng.IntN(2) == 0 {
			p.hintDepth = old | uint64(rng.Uint32N(n+1))
		}
		checkChain(t, p, n-len(held))
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
