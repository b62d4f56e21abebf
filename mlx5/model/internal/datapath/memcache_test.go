package datapath

import (
	"math/rand/v2"
	"testing"

	"github.com/daqiri-go/daqiri/mlx5/model/internal/dma"
)

// TestMemCacheMatchesSlice holds the cache to the memory's own Slice: rings of random entry
// sizes (16 to 128 bytes) and counts, contiguous or paged (4 KiB and 8 KiB pages, a page
// offset or none), over mappings with holes, read-only parts and ends inside the ring; random
// entries, read and written, give the very bytes Slice gives and fail where it fails; after
// a mapping is added or removed (the space's Gen moves) they follow the new mappings.
func TestMemCacheMatchesSlice(t *testing.T) {
	r := rand.New(rand.NewPCG(85, 86))
	hits := 0
	for round := range 60 {
		space := &dma.Space{}
		size := []int{16, 32, 64, 128}[r.IntN(4)]
		n := 1 << (4 + r.IntN(9))
		ringBytes := n * size
		base := uint64(0x100000) * uint64(1+round)
		var m Memory
		var iovas []uint64 // the pieces mapped, to unmap later
		mapPiece := func(iova uint64, k int) {
			perm := dma.Read | dma.Write
			if r.IntN(8) == 0 {
				perm = dma.Read
			}
			if r.IntN(10) == 0 {
				return // a hole
			}
			if err := space.Map(iova, make([]byte, k), perm); err != nil {
				t.Fatal(err)
			}
			iovas = append(iovas, iova)
		}
		if r.IntN(2) == 0 {
			// Contiguous: one mapping, or pieces of random lengths (4 KiB multiples).
			at := 0
			for at < ringBytes {
				k := ringBytes - at
				if r.IntN(2) == 0 {
					k = min(k, 4096*(1+r.IntN(4)))
				}
				mapPiece(base+uint64(at), k)
				at += k
			}
			m = Contig{Space: space, Base: base}
		} else {
			shift := uint(12 + r.IntN(2))
			off := uint64(0)
			if r.IntN(3) == 0 {
				off = uint64(size * r.IntN(8))
			}
			pages := (int(off) + ringBytes + 1<<shift - 1) >> shift
			p := Paged{Space: space, PageShift: shift, Offset: off}
			order := r.Perm(pages)
			for pg := range pages {
				iova := base + uint64(order[pg])<<(shift+1) // pages apart, in no order
				p.Pages = append(p.Pages, iova)
				mapPiece(iova, 1<<shift)
			}
			m = p
		}
		for _, perm := range []dma.Perm{dma.Read, dma.Write} {
			c := newMemCache(m, n, size, perm)
			for step := range 3000 {
				if step == 1500 && len(iovas) > 0 {
					// A mapping removed, and maybe mapped again over new memory.
					j := r.IntN(len(iovas))
					if err := space.Unmap(iovas[j]); err != nil {
						t.Fatal(err)
					}
					iovas = append(iovas[:j], iovas[j+1:]...)
				}
				i := uint32(r.IntN(n))
				got, gerr := c.get(i)
				want, werr := m.Slice(uint64(i)*uint64(size), size, perm)
				if (gerr == nil) != (werr == nil) {
					t.Fatalf("round %d (%T), entry %d of %d x %d bytes, %v: cache error %v, Slice error %v", round, m, i, n, size, perm, gerr, werr)
				}
				if werr != nil {
					continue
				}
				if len(got) != size || cap(got) != size || &got[0] != &want[0] {
					t.Fatalf("round %d (%T), entry %d: the cache gives other bytes than Slice", round, m, i)
				}
				hits++
			}
		}
	}
	if hits < 100000 {
		t.Fatalf("only %d entries translated: the test misses its rings", hits)
	}
}
