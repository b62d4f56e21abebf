package ring

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

// hintSet is the three hint words as one writer leaves them after its compare-and-swap.
type hintSet struct{ head, next, depth uint64 }

func (p *Pool) hintsNow() hintSet { return hintSet{p.hintHead, p.hintNext, p.hintDepth} }

func (p *Pool) restoreHints(s hintSet) { p.hintHead, p.hintNext, p.hintDepth = s.head, s.next, s.depth }

// TestPoolModelLIFO runs random single, bulk and burst gets and puts against a model stack and
// checks every index handed out: the pool is LIFO (the index returned last is taken first, a
// bulk put's first index on top), so the indices, not just their count, are known. Between
// operations it rewrites the hints as late writers would leave them: a whole set from an
// earlier operation (consistent in itself, so only the head's compare-and-swap can reject it),
// or single words under older tags. The hints may make an operation faster, never change what
// it returns.
func TestPoolModelLIFO(t *testing.T) {
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 31))
	for _, n := range []int{1, 2, 3, 8, 64} {
		p, _ := NewPool(n)
		model := make([]uint32, 0, n) // free indices, top last
		for i := n - 1; i >= 0; i-- {
			model = append(model, uint32(i))
		}
		var held []uint32
		var past []hintSet
		for step := 0; step < 4000; step++ {
			fail := func(format string, args ...any) {
				t.Helper()
				t.Fatalf("seed %d, n %d, step %d: "+format, append([]any{seed, n, step}, args...)...)
			}
			k := 1 + rng.IntN(n)
			switch rng.IntN(6) {
			case 0, 1:
				v, ok := p.Get()
				if len(model) == 0 {
					if ok {
						fail("Get on an empty pool gave %d", v)
					}
					break
				}
				if want := model[len(model)-1]; !ok || v != want {
					fail("Get = %d, %v; want %d", v, ok, want)
				}
				model = model[:len(model)-1]
				held = append(held, v)
			case 2:
				dst := make([]uint32, k)
				ok := p.GetBulk(dst)
				if ok != (k <= len(model)) {
					fail("GetBulk(%d) = %v with %d free", k, ok, len(model))
				}
				if !ok {
					break
				}
				for i, v := range dst {
					if want := model[len(model)-1-i]; v != want {
						fail("GetBulk(%d)[%d] = %d, want %d", k, i, v, want)
					}
				}
				model = model[:len(model)-k]
				held = append(held, dst...)
			case 3:
				dst := make([]uint32, k)
				got := p.GetBurst(dst)
				if got != min(k, len(model)) {
					fail("GetBurst(%d) = %d with %d free", k, got, len(model))
				}
				for i, v := range dst[:got] {
					if want := model[len(model)-1-i]; v != want {
						fail("GetBurst(%d)[%d] = %d, want %d", k, i, v, want)
					}
				}
				model = model[:len(model)-got]
				held = append(held, dst[:got]...)
			case 4:
				if len(held) == 0 {
					break
				}
				i := rng.IntN(len(held))
				v := held[i]
				held = append(held[:i], held[i+1:]...)
				p.Put(v)
				model = append(model, v)
			default:
				if len(held) == 0 {
					break
				}
				k = min(k, len(held))
				rng.Shuffle(len(held), func(i, j int) { held[i], held[j] = held[j], held[i] })
				batch := append([]uint32(nil), held[:k]...)
				held = held[k:]
				p.PutBulk(batch)
				for i := len(batch) - 1; i >= 0; i-- {
					model = append(model, batch[i])
				}
			}
			checkChain(t, p, len(model))
			past = append(past, p.hintsNow())
			switch rng.IntN(4) {
			case 0: // a late writer's whole set, 1..8 operations old
				if back := 1 + rng.IntN(8); back < len(past) {
					p.restoreHints(past[len(past)-1-back])
				}
			case 1: // one word under an older tag
				old := (p.head.Load()>>32 - 1 - uint64(rng.IntN(3))) << 32
				garbage := old | uint64(rng.Uint32N(uint32(n)+1))
				switch rng.IntN(3) {
				case 0:
					p.hintHead = garbage
				case 1:
					p.hintNext = garbage
				default:
					p.hintDepth = garbage
				}
			}
		}
	}
}

// TestPoolStalledHintsABA replays, one step at a time, a thread that read the hints and
// stalled before its compare-and-swap while others took its top away and put it back (the
// top is the same index, the list under it is not). The stalled thread's head is the one
// its hints named; its compare-and-swap must fail on the tag and the operation must start
// over from the head.
func TestPoolStalledHintsABA(t *testing.T) {
	t.Run("get", func(t *testing.T) {
		p, _ := NewPool(4) // free: 0 (top), 1, 2, 3
		stale := p.hintsNow()
		a, _ := p.Get() // 0
		b, _ := p.Get() // 1
		p.Put(a)        // top 0 again, next 2
		p.restoreHints(stale)
		// The stale hints say "top 0, next 1": taking 0 on them would put 1, which is
		// held, back on top.
		if v, ok := p.Get(); !ok || v != a {
			t.Fatalf("Get = %d, %v; want %d", v, ok, a)
		}
		checkChain(t, p, 2)
		if v, _ := p.Get(); v == b {
			t.Fatalf("Get handed out %d, which is held", b)
		}
	})
	t.Run("put", func(t *testing.T) {
		p, _ := NewPool(4)
		stale := p.hintsNow() // top 0 at depth 4
		a, _ := p.Get()
		b, _ := p.Get()
		p.Put(a) // top 0 again, at depth 3
		p.restoreHints(stale)
		// Put with the stale hints would link b at depth 5 over a list of 3.
		p.Put(b)
		checkChain(t, p, 4)
	})
	t.Run("empty", func(t *testing.T) {
		p, _ := NewPool(2)
		x, _ := p.Get()
		y, _ := p.Get()
		emptyHints := p.hintsNow() // top none
		p.Put(y)
		p.restoreHints(emptyHints)
		// Stale hints saying "empty" must not make Get report an empty pool.
		if v, ok := p.Get(); !ok || v != y {
			t.Fatalf("Get = %d, %v with %d free; want %d", v, ok, 1, y)
		}
		p.restoreHints(emptyHints)
		p.Put(x)
		checkChain(t, p, 1)
	})
}

// TestPoolSinglesConcurrent: goroutines taking and returning one index at a time (the hint
// fast path), on a pool small enough that the same few indices go round and round (every
// top is re-pushed many times while others hold stale hints). Every index handed out is
// marked owned with a compare-and-swap, so handing one to two holders is seen at once.
func TestPoolSinglesConcurrent(t *testing.T) {
	for _, n := range []int{1, 3, 64} {
		p, _ := NewPool(n)
		owned := make([]atomic.Int32, n)
		var wg sync.WaitGroup
		for g := range 6 {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(rand.Uint64(), uint64(g)))
				var mine []uint32
				for range 20000 {
					if len(mine) < 4 && rng.IntN(2) == 0 {
						v, ok := p.Get()
						if !ok {
							continue
						}
						if !owned[v].CompareAndSwap(0, int32(g+1)) {
							t.Errorf("n %d: index %d handed to %d while held by %d", n, v, g+1, owned[v].Load())
							return
						}
						mine = append(mine, v)
					} else if len(mine) > 0 {
						i := rng.IntN(len(mine))
						v := mine[i]
						mine = append(mine[:i], mine[i+1:]...)
						owned[v].Store(0)
						p.Put(v)
					}
				}
				for _, v := range mine {
					owned[v].Store(0)
					p.Put(v)
				}
			})
		}
		wg.Wait()
		checkChain(t, p, n)
	}
}
