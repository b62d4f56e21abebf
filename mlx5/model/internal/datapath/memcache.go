package datapath

import "github.com/daqiri-go/daqiri/mlx5/model/internal/dma"

// memCache keeps the slices a queue's memory gave for the pieces the datapath reads and
// writes again and again — a ring's entries (CQE slots, WQEs, send basic blocks) and the
// doorbell record — while the DMA space's mappings stay as they were. A lookup in the space
// takes its lock and a search; the slice it returns is the same until a mapping is added or
// removed (dma.Space.Gen), when the cache starts over, so every access still faults exactly
// where a lookup would.
//
// The ring is translated in chunks of chunkBytes (entries never straddle one): a chunk that
// translates whole serves every entry in it with the bytes the entry's own lookup would give
// (a range inside a translated range translates to the same bytes: one mapping of a
// contiguous ring, one page of a paged one); a chunk that does not (it crosses a page or a
// mapping's end, or part of it is not mapped) leaves its entries to lookups of their own,
// cached per entry. A chunk's slice header is read per entry instead of a per-entry table
// of them, which a large ring's accesses missed in the cache (issue 31).
type memCache struct {
	mem   Memory
	space *dma.Space // the space mem resolves in; nil: mem is not cached
	size  int        // bytes per entry
	perm  dma.Perm
	n     int // entries
	gen   uint64
	// chunked: entries divide a chunk (size a divisor of chunkBytes), so none straddles one.
	chunked bool
	// chunks holds each chunk's bytes once translated (nil: not yet; empty: it did not
	// translate whole); ents the entries of chunks that did not. Both made at the first get.
	chunks [][]byte
	ents   [][]byte
}

// chunkBytes is the span of ring memory a chunk covers: the smallest page a paged queue
// has (4 KiB), so a ring whose pages are at least that large translates chunk by chunk.
const chunkBytes = 4096

// newMemCache caches n entries of size bytes of m, accessed with perm.
func newMemCache(m Memory, n, size int, perm dma.Perm) memCache {
	c := memCache{mem: m, size: size, perm: perm, chunked: size > 0 && size <= chunkBytes && chunkBytes%size == 0}
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
	if g := c.space.Gen(); g != c.gen || c.chunks == nil {
		if c.chunks == nil {
			c.chunks = make([][]byte, (c.n*c.size+chunkBytes-1)/chunkBytes)
		}
		clear(c.chunks)
		clear(c.ents)
		c.gen = g
	}
	off := int(i) * c.size
	if c.chunked {
		k := off / chunkBytes
		ch := c.chunks[k]
		if ch == nil {
			ch = []byte{} // did not translate whole
			if b, err := c.mem.Slice(uint64(k*chunkBytes), min(chunkBytes, c.n*c.size-k*chunkBytes), c.perm); err == nil {
				ch = b
			}
			c.chunks[k] = ch
		}
		if len(ch) > 0 {
			in := off - k*chunkBytes
			return ch[in : in+c.size : in+c.size], nil
		}
	}
	if c.ents == nil {
		c.ents = make([][]byte, c.n)
	}
	if b := c.ents[i]; b != nil {
		return b, nil
	}
	b, err := c.mem.Slice(uint64(off), c.size, c.perm)
	if err != nil {
		return nil, err
	}
	c.ents[i] = b
	return b, nil
}
