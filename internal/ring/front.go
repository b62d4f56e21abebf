package ring

import (
	"fmt"
	"sync/atomic"
)

// Front is a Pool with one cache in front of it that any thread may use, one at a time: a
// thread that takes the cache's try-lock moves indices between the cache and its caller with
// a copy, and reaches the pool only to refill or spill; a thread that finds the cache taken
// goes to the pool itself and never waits. It is for a pool whose gets and puts come from
// threads that own nothing in particular (a memory region's buffers, taken by whichever
// goroutine builds a TX burst and returned by whichever frees a burst), where a Cache, which
// needs one owner, does not fit: a bulk get from the pool walks one dependent load per index
// (the list's links), a bulk get from the cache is a copy.
//
// Nothing is lost to the cache and nothing fails because of it: when the pool alone cannot
// satisfy a get, the caller waits for the cache's holder (whose turn is a copy and at most
// two pool operations, never a wait of its own), empties the cache into the pool and asks
// the pool again, so a get fails only when pool and cache together hold too few, as with a
// bare Pool. Available counts the cache's indices; Seal empties the cache for good, after
// which the pool's own count is exact (a region's Close relies on that).
type Front struct {
	// word is n<<2 | sealed<<1 | held: the cache's count (as of its last release), whether
	// the cache is sealed, and its try-lock. Loaded and compare-and-swapped with sync/atomic,
	// released with StoreRelease64 (the stack's writes are the holder's only, ordered before
	// the release as for any lock).
	// It comes first for the 64-bit alignment sync/atomic needs on 32-bit platforms.
	word  uint64
	_     [gap - 8]byte // word has its block: the fields below are read by every holder
	p     *Pool
	stack []uint32
}

const (
	frontHeld   = 1
	frontSealed = 2
	// frontMin is the smallest bulk get or put that uses the cache: for fewer indices the
	// pool's walk is short, and its one compare-and-swap is cheaper than the cache's lock
	// and release (a burst of one packet was ~3 % slower through the cache).
	frontMin = 4
)

// NewFront returns a front cache of size indices (2..the pool's size) for p; size 0 gives a
// front without a cache (sealed from the start: every operation goes to the pool), so that
// a pool too small to share has the same front as the others. All of the pool's traffic
// that should use the cache goes through the Front; single Put and Get may still be called
// on the pool directly.
func (p *Pool) NewFront(size int) (*Front, error) {
	if size == 0 {
		return &Front{p: p, word: frontSealed}, nil
	}
	if size < 2 || size > p.n {
		return nil, fmt.Errorf("ring: front cache size %d out of range 2..%d (the pool's size), or 0", size, p.n)
	}
	return &Front{p: p, stack: make([]uint32, size)}, nil
}

// Pool is the pool behind the front.
func (f *Front) Pool() *Pool { return f.p }

// Cached is how many indices the cache holds (as of its last release).
func (f *Front) Cached() int { return int(atomic.LoadUint64(&f.word) >> 2) }

// tryLock takes the cache if nobody holds it and it is not sealed, and returns its count.
func (f *Front) tryLock() (n int, ok bool) {
	w := atomic.LoadUint64(&f.word)
	if w&(frontHeld|frontSealed) != 0 || !atomic.CompareAndSwapUint64(&f.word, w, w|frontHeld) {
		return 0, false
	}
	return int(w >> 2), true
}

// lock takes the cache, waiting for its holder; ok is false once the cache is sealed.
func (f *Front) lock() (n int, ok bool) {
	for spins := 0; ; spins = backoff(spins) {
		if n, ok := f.tryLock(); ok {
			return n, true
		}
		if atomic.LoadUint64(&f.word)&frontSealed != 0 {
			return 0, false
		}
	}
}

// unlock releases the cache holding n indices.
func (f *Front) unlock(n int) { StoreRelease64(&f.word, uint64(n)<<2) }

// refill tops the cache (holding n) up from the pool so that it holds at least need if the
// pool has them, taking half the cache at a time, and returns the new count.
func (f *Front) refill(n, need int) int {
	if n >= need {
		return n
	}
	want := min(len(f.stack)-n, max(need-n, len(f.stack)/2))
	return n + f.p.GetBurst(f.stack[n:n+want])
}

// GetBulk fills all of dst or takes nothing; it fails only when the pool and the cache
// together hold fewer than len(dst).
func (f *Front) GetBulk(dst []uint32) bool {
	if len(dst) < frontMin && f.p.GetBulk(dst) {
		return true
	}
	if n, ok := f.tryLock(); ok {
		if len(dst) <= len(f.stack) {
			if n = f.refill(n, len(dst)); n >= len(dst) {
				move(dst, f.stack[n-len(dst):n])
				f.unlock(n - len(dst))
				return true
			}
		}
		return f.drainGet(n, dst)
	}
	return f.getBulkPool(dst)
}

// getBulkPool is GetBulk from the pool, with the cache as the fallback.
func (f *Front) getBulkPool(dst []uint32) bool {
	if f.p.GetBulk(dst) {
		return true
	}
	// Too few in the pool; the cache may hold the rest (it may be held by another thread).
	n, ok := f.lock()
	if !ok {
		return f.p.GetBulk(dst) // sealed: everything is in the pool
	}
	return f.drainGet(n, dst)
}

// drainGet, holding the cache with n indices, empties it into the pool, takes dst from the
// pool (whose answer then covers every free index) and releases the cache.
func (f *Front) drainGet(n int, dst []uint32) bool {
	f.p.PutBulk(f.stack[:n])
	ok := f.p.GetBulk(dst)
	f.unlock(0)
	return ok
}

// GetBurst takes up to len(dst) indices and returns how many: fewer only when the pool and
// the cache together hold fewer.
func (f *Front) GetBurst(dst []uint32) int {
	k := 0
	n, ok := f.tryLock()
	if !ok {
		if k = f.p.GetBurst(dst); k == len(dst) {
			return k
		}
		if n, ok = f.lock(); !ok {
			return k + f.p.GetBurst(dst[k:])
		}
	}
	n = f.refill(n, min(len(dst)-k, len(f.stack)))
	t := min(n, len(dst)-k)
	move(dst[k:k+t], f.stack[n-t:n])
	n -= t
	k += t
	if k < len(dst) {
		k += f.p.GetBurst(dst[k:]) // beyond the cache's size
	}
	f.unlock(n)
	return k
}

// Get takes one index: the one last put into the cache when the cache is free and holds
// any — the most recently freed buffer, whose lines are the likeliest to be in the CPU's
// caches (a TCP receive copies each message into the buffer Get gives it) — else one from the
// pool, else, when the pool is empty and another thread holds the cache, one from the cache
// after waiting for it.
func (f *Front) Get() (uint32, bool) {
	if n, ok := f.tryLock(); ok {
		if n > 0 {
			idx := f.stack[n-1]
			f.unlock(n - 1)
			return idx, true
		}
		f.unlock(0)
	}
	if idx, ok := f.p.Get(); ok {
		return idx, true
	}
	n, ok := f.lock()
	if !ok {
		return f.p.Get()
	}
	if n == 0 {
		idx, ok := f.p.Get() // a put may have come in meanwhile
		f.unlock(0)
		return idx, ok
	}
	idx := f.stack[n-1]
	f.unlock(n - 1)
	return idx, true
}

// PutBulk returns several indices: into the cache when it is free (spilling its upper half
// to the pool when they do not fit), else, and for fewer than frontMin, straight to the pool.
func (f *Front) PutBulk(idx []uint32) {
	if len(idx) < frontMin {
		f.p.PutBulk(idx)
		return
	}
	n, ok := f.tryLock()
	if !ok {
		f.p.PutBulk(idx)
		return
	}
	if n+len(idx) > len(f.stack) {
		if half := len(f.stack) / 2; n > half {
			f.p.PutBulk(f.stack[half:n])
			n = half
		}
		if n+len(idx) > len(f.stack) {
			f.p.PutBulk(idx)
			f.unlock(n)
			return
		}
	}
	move(f.stack[n:], idx)
	f.unlock(n + len(idx))
}

// move copies src to dst: a few indices with a loop, more with copy, whose call to memmove
// costs more than the loop for a burst of one packet.
func move(dst, src []uint32) {
	if len(src) <= 8 {
		dst = dst[:len(src)]
		for i, x := range src {
			dst[i] = x
		}
		return
	}
	copy(dst, src)
}

// Available is the number of free indices, pool and cache (a snapshot; while another thread
// moves indices between them it may be off by what it moves, and it never exceeds the pool's
// size).
func (f *Front) Available() int {
	return min(f.p.Available()+f.Cached(), f.p.n)
}

// Seal empties the cache into the pool for good, waiting for its holder: afterwards every
// get and put goes to the pool, whose Available is then exact. Sealing twice is harmless.
func (f *Front) Seal() {
	n, ok := f.lock()
	if !ok {
		return
	}
	f.p.PutBulk(f.stack[:n])
	StoreRelease64(&f.word, frontSealed)
}
