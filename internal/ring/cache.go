package ring

import "fmt"

// Cache is a private front for a Pool, owned by one goroutine (an engine worker, an
// application thread): Get and Put work on a local stack and reach the shared pool only to
// refill or spill half the cache with one bulk operation, so a thread that takes and returns
// buffers at a steady rate touches the shared head word once per size/2 operations instead of
// once per operation (the per-lcore cache in front of DPDK's mempool does the same).
//
// Indices held by a cache are out of the pool: Pool.Available does not count them. Flush
// returns them, and must be called before the pool's owner checks that every buffer came back.
// A Cache is not safe for concurrent use.
type Cache struct {
	p     *Pool
	stack []uint32
	n     int
}

// NewCache returns a cache in front of p holding up to size indices (at least 2).
func (p *Pool) NewCache(size int) (*Cache, error) {
	if size < 2 || size > p.n {
		return nil, fmt.Errorf("ring: cache size %d out of range 2..%d (the pool's size)", size, p.n)
	}
	return &Cache{p: p, stack: make([]uint32, size)}, nil
}

// Len is the number of indices the cache holds.
func (c *Cache) Len() int { return c.n }

// Get takes one index; ok is false when the cache is empty and the pool has none.
func (c *Cache) Get() (idx uint32, ok bool) {
	if c.n == 0 {
		c.n = c.p.GetBurst(c.stack[:len(c.stack)/2])
		if c.n == 0 {
			return 0, false
		}
	}
	c.n--
	return c.stack[c.n], true
}

// Put returns one index (most recently returned is handed out first: it is cache-warm).
func (c *Cache) Put(idx uint32) {
	if c.n == len(c.stack) {
		half := len(c.stack) / 2
		c.p.PutBulk(c.stack[half:c.n])
		c.n = half
	}
	c.stack[c.n] = idx
	c.n++
}

// GetBulk fills all of dst or takes nothing.
func (c *Cache) GetBulk(dst []uint32) bool {
	if len(dst) > c.n {
		// Top up from the pool; if even that is not enough, take nothing.
		need := len(dst) - c.n
		if c.n+need <= len(c.stack) {
			want := min(len(c.stack)-c.n, max(need, len(c.stack)/2))
			got := c.p.GetBurst(c.stack[c.n : c.n+want])
			c.n += got
		}
		if len(dst) > c.n {
			if c.n+len(dst) > len(c.stack) || len(dst) > len(c.stack) {
				// Larger than the cache: straight from the pool.
				return c.p.GetBulk(dst)
			}
			return false
		}
	}
	copy(dst, c.stack[c.n-len(dst):c.n])
	c.n -= len(dst)
	return true
}

// PutBulk returns several indices.
func (c *Cache) PutBulk(idx []uint32) {
	if c.n+len(idx) > len(c.stack) {
		half := len(c.stack) / 2
		if c.n > half {
			c.p.PutBulk(c.stack[half:c.n])
			c.n = half
		}
		if c.n+len(idx) > len(c.stack) {
			c.p.PutBulk(idx)
			return
		}
	}
	copy(c.stack[c.n:], idx)
	c.n += len(idx)
}

// Flush returns every index the cache holds to the pool.
func (c *Cache) Flush() {
	if c.n > 0 {
		c.p.PutBulk(c.stack[:c.n])
		c.n = 0
	}
}
