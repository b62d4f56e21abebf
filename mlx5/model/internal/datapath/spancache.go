package datapath

import "github.com/daqiri-go/daqiri/mlx5/model/internal/dma"

// spanWays is how many (key, permission) spans a NIC keeps: a port's queues name a few
// memory regions each, and a miss costs only the Translate it would have cost anyway.
const spanWays = 16

// spanEnt is one key's span as Span gave it at generation gen (ok false: the key has no
// span, so its ranges go through Translate until Gen moves).
type spanEnt struct {
	lkey  uint32
	perm  dma.Perm
	valid bool
	ok    bool
	gen   uint64
	start uint64
	mem   []byte
}

// spanCache keeps the spans of the keys a NIC's WQEs name, so that a TX gather or a cyclic
// RQ scatter is a bounds check and a slice instead of a key lookup and a mapping search per
// segment (two read locks that the TX and RX threads shared). It is used under the NIC's
// lock only. An entry is trusted while the translator's Gen stays; every range outside a
// span, and every key without one, still goes through Translate or Store, so every fault
// comes out where it did.
type spanCache struct {
	ents [spanWays]spanEnt
	next int // the entry the next new key replaces (round robin)
}

// get returns the n bytes at addr of lkey's span, or ok false when they are not all inside
// it (or the key has none): the caller then translates them the slow way, which gives the
// error.
func (c *spanCache) get(t SpanTranslator, lkey uint32, addr uint64, n int, perm dma.Perm) ([]byte, bool) {
	g := t.Gen()
	var e *spanEnt
	for i := range c.ents {
		if x := &c.ents[i]; x.valid && x.lkey == lkey && x.perm == perm {
			e = x
			break
		}
	}
	if e == nil || e.gen != g {
		if e == nil {
			e = &c.ents[c.next]
			c.next = (c.next + 1) % len(c.ents)
		}
		start, mem, ok := t.Span(lkey, perm)
		*e = spanEnt{lkey: lkey, perm: perm, valid: true, ok: ok, gen: g, start: start, mem: mem}
	}
	if !e.ok || n < 0 || addr < e.start {
		return nil, false
	}
	off := addr - e.start
	if off > uint64(len(e.mem)) || uint64(n) > uint64(len(e.mem))-off {
		return nil, false
	}
	end := off + uint64(n)
	return e.mem[off:end:end], true
}

// translate is Keys.Translate, from a cached span where the key has one.
func (n *NIC) translate(lkey uint32, addr uint64, size int, perm dma.Perm) ([]byte, error) {
	if t, ok := n.cfg.Keys.(SpanTranslator); ok {
		if b, ok := n.spans.get(t, lkey, addr, size, perm); ok {
			return b, nil
		}
	}
	return n.cfg.Keys.Translate(lkey, addr, size, perm)
}
