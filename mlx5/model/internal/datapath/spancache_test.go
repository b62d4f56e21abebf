package datapath

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/daqiri-go/daqiri/mlx5/model/internal/dma"
)

// spanKeys is a SpanTranslator over a DMA space with keys that name [start, start+size) of
// it as PA keys (I/O address = address); a key marked noSpan has no span (as a key over
// non-adjacent pages or a window), and read-only keys refuse writes. Spans counts the Span
// calls.
type spanKeys struct {
	s      *dma.Space
	keys   map[uint32][2]uint64 // lkey → start, size
	ro     map[uint32]bool
	noSpan map[uint32]bool
	gen    uint64
	spans  int
}

func (k *spanKeys) check(lkey uint32, addr uint64, n int, perm dma.Perm) error {
	r, ok := k.keys[lkey]
	if !ok {
		return errors.New("no such key")
	}
	if perm&dma.Write != 0 && k.ro[lkey] {
		return errors.New("key does not allow writes")
	}
	if n < 0 || addr < r[0] || addr-r[0] > r[1] || uint64(n) > r[1]-(addr-r[0]) {
		return errors.New("outside the key")
	}
	return nil
}

func (k *spanKeys) Translate(lkey uint32, addr uint64, n int, perm dma.Perm) ([]byte, error) {
	if err := k.check(lkey, addr, n, perm); err != nil {
		return nil, err
	}
	return k.s.Slice(addr, n, perm)
}

func (k *spanKeys) Direct(lkey uint32, addr uint64, n int, perm dma.Perm) ([]byte, error) {
	return k.Translate(lkey, addr, n, perm)
}

func (k *spanKeys) Store(lkey uint32, addr uint64, p []byte) error {
	b, err := k.Translate(lkey, addr, len(p), dma.Write)
	if err != nil {
		return err
	}
	copy(b, p)
	return nil
}

func (k *spanKeys) Gen() uint64 { return k.gen + k.s.Gen() }

func (k *spanKeys) Span(lkey uint32, perm dma.Perm) (uint64, []byte, bool) {
	k.spans++
	r, ok := k.keys[lkey]
	if !ok || k.noSpan[lkey] {
		return 0, nil, false
	}
	b, err := k.Direct(lkey, r[0], int(r[1]), perm)
	if err != nil {
		return 0, nil, false
	}
	return r[0], b, true
}

// TestSpanCacheMatchesTranslate holds the NIC's cached translation (TX gathers) and scatter
// (cyclic RQ) to the translator's own Translate and Store: on random ranges in, across and
// outside 20 keys (more than the cache keeps), for reads and writes, with keys that have no
// span and read-only keys, the cache gives the very bytes Translate gives and fails where it
// fails; a scatter writes the same bytes Store writes and fails where Store fails. A key
// destroyed (Gen moves) stops translating at once, and Span is asked again only when Gen
// moves or a key comes back into the cache.
func TestSpanCacheMatchesTranslate(t *testing.T) {
	e := newEnv(t)
	k := &spanKeys{s: e.space, keys: map[uint32][2]uint64{}, ro: map[uint32]bool{}, noSpan: map[uint32]bool{}}
	e.nic.cfg.Keys = k
	rng := rand.New(rand.NewPCG(31, 55))
	var lkeys []uint32
	for i := range 20 {
		base, _ := e.alloc(0x4000)
		lkey := uint32(0x100+i)<<8 | uint32(i)
		k.keys[lkey] = [2]uint64{base + uint64(rng.IntN(0x100)), uint64(0x1000 + rng.IntN(0x2000))}
		k.ro[lkey] = i%5 == 1
		k.noSpan[lkey] = i%7 == 3
		lkeys = append(lkeys, lkey)
	}
	ok, hits := 0, 0
	p := make([]byte, 0x1800)
	for i := range 20000 {
		lkey := lkeys[rng.IntN(len(lkeys))]
		r := k.keys[lkey]
		if rng.IntN(50) == 0 {
			lkey ^= 0x80 // no such key (the wrong variant)
		}
		addr := r[0] - 0x200 + uint64(rng.IntN(0x2800))
		n := rng.IntN(0x1800)
		perm := []dma.Perm{dma.Read, dma.Write}[rng.IntN(2)]
		if i%2 == 0 {
			tb, terr := k.Translate(lkey, addr, n, perm)
			cb, cerr := e.nic.translate(lkey, addr, n, perm)
			if (terr == nil) != (cerr == nil) {
				t.Fatalf("key %#x, %d bytes at %#x (%v): Translate error %v, cached error %v", lkey, n, addr, perm, terr, cerr)
			}
			if terr != nil {
				continue
			}
			ok++
			if len(tb) != len(cb) || (n > 0 && &tb[0] != &cb[0]) {
				t.Fatalf("key %#x, %d bytes at %#x: the cache gives other bytes than Translate", lkey, n, addr)
			}
			if !k.noSpan[lkey] {
				hits++
			}
			continue
		}
		q := p[:n]
		for j := range q {
			q[j] = byte(rng.Uint32())
		}
		serr := k.Store(lkey, addr, q) // the reference write, then the scatter over other bytes
		if serr != nil {
			if _, err := e.nic.scatter(lkey, addr, q); err == nil {
				t.Fatalf("key %#x, %d bytes at %#x: Store fails (%v), the scatter does not", lkey, n, addr, serr)
			}
			continue
		}
		want := append([]byte(nil), q...)
		b, _ := k.Translate(lkey, addr, n, dma.Read)
		clear(b)
		sum, err := e.nic.scatter(lkey, addr, q)
		if err != nil {
			t.Fatalf("key %#x, %d bytes at %#x: Store succeeds, the scatter fails: %v", lkey, n, addr, err)
		}
		// Through a span the write sums the bytes; through Store it does not.
		if wantSum := csum16(0, want) | wholeSum; (k.noSpan[lkey] && sum != 0) || (!k.noSpan[lkey] && sum != wantSum) {
			t.Fatalf("key %#x, %d bytes at %#x (no span %v): the scatter's sum %#x, want %#x", lkey, n, addr, k.noSpan[lkey], sum, wantSum)
		}
		for j := range want {
			if b[j] != want[j] {
				t.Fatalf("key %#x, %d bytes at %#x: the scatter wrote byte %d as %#x, not %#x", lkey, n, addr, j, b[j], want[j])
			}
		}
		ok++
	}
	if ok < 4000 || hits < 1000 {
		t.Fatalf("only %d ranges translated (%d through spans): the test misses its keys", ok, hits)
	}

	// Gen holds: a cached key is not asked for again.
	lkey := lkeys[0]
	r := k.keys[lkey]
	if _, err := e.nic.translate(lkey, r[0], 64, dma.Read); err != nil {
		t.Fatal(err)
	}
	before := k.spans
	for range 100 {
		if _, err := e.nic.translate(lkey, r[0]+64, 64, dma.Read); err != nil {
			t.Fatal(err)
		}
	}
	if k.spans != before {
		t.Fatalf("Span asked %d times with Gen unchanged", k.spans-before)
	}
	// The key destroyed: Gen moves, and the cache stops translating it at once.
	delete(k.keys, lkey)
	k.gen++
	if _, err := e.nic.translate(lkey, r[0], 64, dma.Read); err == nil {
		t.Fatal("a destroyed key still translates through the cache")
	}
	if _, err := e.nic.scatter(lkey, r[0], make([]byte, 64)); err == nil {
		t.Fatal("a destroyed key still takes a scatter through the cache")
	}
	// A mapping removed (the space's Gen moves): the key's span goes with it.
	lkey = lkeys[2]
	r = k.keys[lkey]
	if _, err := e.nic.translate(lkey, r[0], 64, dma.Read); err != nil {
		t.Fatal(err)
	}
	if err := e.space.Unmap(r[0] &^ 0xfff); err != nil {
		t.Fatal(err)
	}
	if _, err := e.nic.translate(lkey, r[0], 64, dma.Read); err == nil {
		t.Fatal("an unmapped key still translates through the cache")
	}
}
