package ring

import (
	"fmt"
	"sync/atomic"

	"github.com/daqiri-go/daqiri/internal/release"
)

// Pool hands out indices 0..n-1 of equally sized buffers. It is a lock-free LIFO stack
// (Treiber) over an index-linked list: the head word packs a 32-bit modification tag with
// index+1, so one compare-and-swap pops or pushes, and a thread preempted mid-operation never
// blocks the others (unlike a ring, whose producers publish in order). LIFO also hands out
// the most recently used, cache-warm buffers first. Get and Put never block or allocate.
type Pool struct {
	head atomic.Uint64 // tag<<32 | (index+1); index+1 == 0 means empty
	// next links each free index to the one below it (index+1). It is loaded with sync/atomic
	// and stored with release.StoreUint32: the head's compare-and-swap that follows every
	// store is a full barrier already, so an exchange per link would only add its cost.
	next  []uint32
	count atomic.Int64
	n     int
}

const none = 0

// NewPool returns a pool holding every index in [0, n).
func NewPool(n int) (*Pool, error) {
	if n <= 0 || n >= 1<<32-1 {
		return nil, fmt.Errorf("ring: pool size %d out of range 1..%d", n, uint32(1<<32-2))
	}
	p := &Pool{next: make([]uint32, n), n: n}
	for i := 0; i < n; i++ {
		p.next[i] = uint32(i + 2) // link i → i+1 (stored as index+1)
	}
	p.next[n-1] = none
	p.head.Store(1) // tag 0, index 0
	p.count.Store(int64(n))
	return p, nil
}

// Size is the number of indices the pool owns.
func (p *Pool) Size() int { return p.n }

// Available is the number of indices currently in the pool (a snapshot).
func (p *Pool) Available() int { return int(p.count.Load()) }

// Get takes one index; ok is false when the pool is empty.
func (p *Pool) Get() (idx uint32, ok bool) {
	for {
		h := p.head.Load()
		top := uint32(h)
		if top == none {
			return 0, false
		}
		nxt := atomic.LoadUint32(&p.next[top-1])
		if p.head.CompareAndSwap(h, (h>>32+1)<<32|uint64(nxt)) {
			p.count.Add(-1)
			return top - 1, true
		}
	}
}

// GetBulk fills all of dst or takes nothing.
func (p *Pool) GetBulk(dst []uint32) bool {
	if len(dst) == 0 {
		return true
	}
	for {
		h := p.head.Load()
		cur := uint32(h)
		// Walk len(dst) nodes. A concurrent change can make this walk read a stale chain,
		// but then the head's tag has moved and the CAS below fails: nothing is taken.
		k := 0
		for ; k < len(dst) && cur != none && int(cur) <= p.n; k++ {
			dst[k] = cur - 1
			cur = atomic.LoadUint32(&p.next[cur-1])
		}
		if k < len(dst) {
			if p.head.Load() == h {
				return false // genuinely too few
			}
			continue
		}
		if int(cur) > p.n {
			continue
		}
		if p.head.CompareAndSwap(h, (h>>32+1)<<32|uint64(cur)) {
			p.count.Add(-int64(len(dst)))
			return true
		}
	}
}

// GetBurst takes up to len(dst) indices and returns how many.
func (p *Pool) GetBurst(dst []uint32) int {
	for {
		if len(dst) == 0 {
			return 0
		}
		h := p.head.Load()
		cur := uint32(h)
		k := 0
		for ; k < len(dst) && cur != none && int(cur) <= p.n; k++ {
			dst[k] = cur - 1
			cur = atomic.LoadUint32(&p.next[cur-1])
		}
		if int(cur) > p.n {
			continue
		}
		if k == 0 {
			return 0
		}
		if p.head.CompareAndSwap(h, (h>>32+1)<<32|uint64(cur)) {
			p.count.Add(-int64(k))
			return k
		}
	}
}

// Put returns one index. Returning an index that is already in the pool corrupts it; callers
// track ownership (bursts do, per packet and segment).
func (p *Pool) Put(idx uint32) {
	for {
		h := p.head.Load()
		release.StoreUint32(&p.next[idx], uint32(h))
		if p.head.CompareAndSwap(h, (h>>32+1)<<32|uint64(idx+1)) {
			p.count.Add(1)
			return
		}
	}
}

// PutBulk returns several indices with one compare-and-swap.
func (p *Pool) PutBulk(idx []uint32) {
	if len(idx) == 0 {
		return
	}
	// Link the batch privately, then splice it on top.
	for i := 0; i+1 < len(idx); i++ {
		release.StoreUint32(&p.next[idx[i]], idx[i+1]+1)
	}
	last := idx[len(idx)-1]
	for {
		h := p.head.Load()
		release.StoreUint32(&p.next[last], uint32(h))
		if p.head.CompareAndSwap(h, (h>>32+1)<<32|uint64(idx[0]+1)) {
			p.count.Add(int64(len(idx)))
			return
		}
	}
}
