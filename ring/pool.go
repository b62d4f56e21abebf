package ring

import "fmt"

// Pool hands out indices 0..n-1 of equally sized buffers. It is safe for concurrent use; Get
// and Put never block and never allocate.
type Pool struct {
	r *Ring[uint32]
	n int
}

// NewPool returns a pool holding every index in [0, n).
func NewPool(n int) (*Pool, error) {
	if n <= 0 {
		return nil, fmt.Errorf("ring: pool size %d must be > 0", n)
	}
	r, err := New[uint32](n, MPMC)
	if err != nil {
		return nil, err
	}
	idx := make([]uint32, n)
	for i := range idx {
		idx[i] = uint32(i)
	}
	r.EnqueueBulk(idx)
	return &Pool{r: r, n: n}, nil
}

// Size is the number of indices the pool owns.
func (p *Pool) Size() int { return p.n }

// Available is the number of indices currently in the pool (a snapshot).
func (p *Pool) Available() int { return p.r.Len() }

// Get takes one index; ok is false when the pool is empty.
func (p *Pool) Get() (idx uint32, ok bool) { return p.r.Dequeue() }

// GetBulk fills all of dst or takes nothing.
func (p *Pool) GetBulk(dst []uint32) bool { return p.r.DequeueBulk(dst) }

// GetBurst fills as much of dst as it can and returns how many.
func (p *Pool) GetBurst(dst []uint32) int { return p.r.DequeueBurst(dst) }

// Put returns one index. Returning an index that is already in the pool corrupts it; callers
// track ownership (bursts do, per packet and segment).
func (p *Pool) Put(idx uint32) {
	if !p.r.Enqueue(idx) {
		panic("ring: pool overflow: an index was returned twice")
	}
}

// PutBulk returns several indices.
func (p *Pool) PutBulk(idx []uint32) {
	if !p.r.EnqueueBulk(idx) {
		panic("ring: pool overflow: an index was returned twice")
	}
}
