package datapath

import "github.com/daqiri-go/daqiri/mlx5/model/internal/dma"

// memCache keeps the slices a queue's memory gave for the pieces the datapath reads and
// writes again and again — a ring's entries (CQE slots, WQEs, send basic blocks) and the
// doorbell record — while the DMA space's mappings stay as they were. A lookup in the space
// takes its lock and a search; the slice it returns is the same until a mapping is added or
// removed (dma.Space.Gen), when the cache starts over, so every access still faults exactly
// where a lookup would.
type memCache struct {
	mem   Memory
	space *dma.Space // the space mem resolves in; nil: mem is not cached
	size  int        // bytes per entry
	perm  dma.Perm
	n     int // entries
	gen   uint64
	ents  [][]byte // made at the first get
}

// newMemCache caches n entries of size bytes of m, accessed with perm.
func newMemCache(m Memory, n, size int, perm dma.Perm) memCache {
	c := memCache{mem: m, size: size, perm: perm}
	switch m := m.(type) {
	case Contig:
		c.space = m.Space
	case Paged:
		c.space = m.Space
	}
	if n > maxCached {
		c.space = nil
	}
	c.n = n
	return c
}

// maxCached bounds the entries a cache keeps (a CQ may have 1<<24 slots; the model caches
// rings of up to 64 Ki entries, larger than any the engine makes).
const maxCached = 1 << 16

// get returns entry i (i < the entries the cache was made for): Slice(i*size, size, perm).
func (c *memCache) get(i uint32) ([]byte, error) {
	if c.space == nil || int(i) >= c.n {
		return c.mem.Slice(uint64(i)*uint64(c.size), c.size, c.perm)
	}
	if g := c.space.Gen(); g != c.gen || c.ents == nil {
		if c.ents == nil {
			c.ents = make([][]byte, c.n)
		}
		clear(c.ents)
		c.gen = g
	}
	if b := c.ents[i]; b != nil {
		return b, nil
	}
	b, err := c.mem.Slice(uint64(i)*uint64(c.size), c.size, c.perm)
	if err != nil {
		return nil, err
	}
	c.ents[i] = b
	return b, nil
}
