package engine

import (
	"math/rand/v2"
	"testing"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/hugepage"
)

// TestReleaseBulk returns random subsets of a region's buffers in bulk, some of them shared
// by several packets, and checks that a buffer goes back to the pool exactly when its last
// owner is released, that nothing is lost or doubled, and that Close then finds every buffer.
func TestReleaseBulk(t *testing.T) {
	const n, size = 64, 256
	r := testRegion(t, "bulk", n, size)
	r.EnableSharing()
	rnd := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	scratch := make([]uint32, 0, 4*n)
	for round := 0; round < 50; round++ {
		idx := make([]uint32, 8+rnd.IntN(n-8))
		if !r.GetBulk(idx) {
			t.Fatalf("round %d: %d of %d buffers not available", round, len(idx), r.Available())
		}
		// Each buffer gets 1–3 owners, each owner an offset somewhere inside it.
		var offs []uint64
		for _, i := range idx {
			k := 1 + rnd.IntN(3)
			r.Share(i, int32(k))
			for range k {
				offs = append(offs, uint64(i)*size+uint64(rnd.IntN(size)))
			}
		}
		rnd.Shuffle(len(offs), func(a, b int) { offs[a], offs[b] = offs[b], offs[a] })
		// Release all but one owner of the first buffer: it must stay out of the pool.
		keep := -1
		for j, off := range offs {
			if uint32(off/size) == idx[0] {
				keep = j
				break
			}
		}
		last := offs[keep]
		offs = append(offs[:keep], offs[keep+1:]...)
		before := r.Available()
		scratch = r.ReleaseBulk(offs, scratch)
		if got, want := r.Available()-before, len(idx)-1; got != want {
			t.Fatalf("round %d: %d buffers back in the pool, want %d", round, got, want)
		}
		if len(scratch) != len(idx)-1 {
			t.Fatalf("round %d: scratch holds %d indices, want %d", round, len(scratch), len(idx)-1)
		}
		for _, i := range scratch {
			if i == idx[0] {
				t.Fatalf("round %d: buffer %d returned while it still has an owner", round, i)
			}
		}
		scratch = r.ReleaseBulk([]uint64{last}, scratch)
		if r.Available() != n {
			t.Fatalf("round %d: %d of %d buffers available after releasing everything", round, r.Available(), n)
		}
	}
	// Without sharing (the usual case) every offset is one buffer; an empty list is a no-op.
	plain := testRegion(t, "plain", 8, size)
	idx := make([]uint32, 8)
	if !plain.GetBulk(idx) {
		t.Fatal("GetBulk failed")
	}
	plain.ReleaseBulk(nil, nil)
	offs := make([]uint64, len(idx))
	for j, i := range idx {
		offs[j] = uint64(i)*size + 17
	}
	plain.ReleaseBulk(offs, nil)
	if plain.Available() != 8 {
		t.Fatalf("%d of 8 buffers back", plain.Available())
	}
	seen := map[uint32]bool{}
	for range 8 {
		i, ok := plain.Get()
		if !ok || seen[i] {
			t.Fatalf("pool after ReleaseBulk hands out %d (ok %v) twice or not at all", i, ok)
		}
		seen[i] = true
	}
	for i := range seen {
		plain.Put(i)
	}
}

// TestRegionFrontClose: buffers a burst frees sit in the region's front cache, yet Available
// counts them, Close finds every one of them back (and unmaps), and a region closed with
// buffers outstanding unmaps when the last comes back through the bulk path.
func TestRegionFrontClose(t *testing.T) {
	const n, size = 64, 128
	m, err := hugepage.Map(n*size, false)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRegion(&config.MemoryRegion{Name: "front", Kind: config.KindHost, NumBufs: n, BufSize: size}, m)
	if err != nil {
		t.Fatal(err)
	}
	idx := make([]uint32, 16)
	for round := 0; round < 10; round++ {
		if !r.GetBulk(idx) {
			t.Fatalf("round %d: GetBulk(16) failed with %d available", round, r.Available())
		}
		if r.Available() != n-16 {
			t.Fatalf("round %d: %d available with 16 out, want %d", round, r.Available(), n-16)
		}
		r.putBulk(idx)
	}
	if r.front.Cached() == 0 {
		t.Fatal("bulk puts did not go to the front cache")
	}
	if r.Available() != n {
		t.Fatalf("%d of %d available after every buffer came back", r.Available(), n)
	}
	// Every buffer, in one get: the cache's and the pool's together.
	all := make([]uint32, n)
	if !r.GetBulk(all) {
		t.Fatal("GetBulk of every buffer failed while the cache held some")
	}
	seen := map[uint32]bool{}
	for _, i := range all {
		if seen[i] {
			t.Fatalf("buffer %d handed out twice", i)
		}
		seen[i] = true
	}
	if _, ok := r.Get(); ok {
		t.Fatal("Get succeeded on an exhausted region")
	}
	r.putBulk(all[:n-1])
	// One buffer out: Close refuses to unmap, and the last buffer's return does it.
	if err := r.Close(); err == nil || r.Unmapped() {
		t.Fatalf("Close with one buffer out: err %v, unmapped %v", err, r.Unmapped())
	}
	if r.front.Cached() != 0 {
		t.Fatalf("Close left %d buffers in the front cache", r.front.Cached())
	}
	r.putBulk(all[n-1:])
	if !r.Unmapped() {
		t.Fatal("the last buffer's return did not unmap the closed region")
	}
}
