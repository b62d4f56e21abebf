package engine

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/daqiri-go/daqiri/config"
)

// groupsRig is a region of n buffers of size bytes taken in groups of 1<<log, and an RX queue
// whose bursts carry its buffers, for the Groups tests.
type groupsRig struct {
	r  *Region
	g  *Groups
	q  *RxQueue
	sz uint64
}

func newGroupsRig(t *testing.T, n, size int, log uint) *groupsRig {
	t.Helper()
	r := testRegion(t, "groups", n, size)
	g, err := r.TakeGroups(log)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := NewMetaPool("rx", 64, 16, false)
	if err != nil {
		t.Fatal(err)
	}
	q, err := NewRxQueue(&Port{Name: "p"}, 0, &config.Queue{ID: 0, BatchSize: 16}, []*Region{r}, meta, 1)
	if err != nil {
		t.Fatal(err)
	}
	return &groupsRig{r: r, g: g, q: q, sz: uint64(size)}
}

// burst is a burst of the buffers idx, each packet at a random offset inside its buffer.
func (x *groupsRig) burst(t *testing.T, rnd *rand.Rand, idx []uint32) *Burst {
	t.Helper()
	b, err := x.q.NewBurst()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range idx {
		b.Append(uint64(i)*x.sz+uint64(rnd.IntN(int(x.sz))), 1, 0, 1)
	}
	return b
}

// TestGroupsReturnPaths: with a region taken in groups (the last one short), every way an
// application returns buffers — Free, FreePacket, FreeSegment, FreePackets, Truncate,
// Release, ReleaseBulk, Put — counts each buffer once against its own group (checked against
// a reference count after every return, over random bursts); Retake takes counts back; Close
// hands the groups with nothing out to the pool at once and the others when their last
// buffer comes back, the region's Close naming exactly the buffers still out, and the memory
// is released with the last of them.
func TestGroupsReturnPaths(t *testing.T) {
	const n, size, log = 100, 64, 3
	x := newGroupsRig(t, n, size, log)
	if x.g.Len() != (n+7)/8 || x.r.Available() != 0 {
		t.Fatalf("%d groups, %d buffers left in the pool; want %d and 0", x.g.Len(), x.r.Available(), (n+7)/8)
	}
	rnd := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	out := make([]bool, n)                // buffers with the application
	delivered := make([]int32, x.g.Len()) // per group, delivered and not taken back
	returned := make([]int32, x.g.Len())  // per group, the reference count
	check := func(round int, how string) {
		t.Helper()
		for grp := range returned {
			if got := x.g.Returned(grp); got != returned[grp] {
				t.Fatalf("round %d, %s: group %d counts %d returned, want %d", round, how, grp, got, returned[grp])
			}
		}
	}
	back := func(i uint32) {
		if !out[i] {
			t.Fatalf("buffer %d returned twice", i)
		}
		out[i] = false
		returned[i>>log]++
	}
	hows := []string{"Free", "FreePacket", "FreeSegment", "FreePackets", "Truncate", "Release", "ReleaseBulk", "Put"}
	for round := 0; round < 400; round++ {
		// A burst of free buffers in random order, runs of one group now and then.
		var idx []uint32
		for _, i := range rnd.Perm(n)[:1+rnd.IntN(16)] {
			if !out[i] {
				idx = append(idx, uint32(i))
			}
		}
		if rnd.IntN(3) == 0 {
			slices.Sort(idx)
		}
		if len(idx) == 0 {
			continue
		}
		for _, i := range idx {
			out[i] = true
			delivered[i>>log]++
		}
		b := x.burst(t, rnd, idx)
		how := hows[rnd.IntN(len(hows))]
		switch how {
		case "Free":
			for _, i := range idx {
				back(i)
			}
			b.Free()
		case "FreePacket", "FreeSegment":
			k := rnd.IntN(len(idx))
			if how == "FreePacket" {
				b.FreePacket(k)
				b.FreePacket(k) // harmless
			} else {
				b.FreeSegment(0, k)
			}
			back(idx[k])
			check(round, how)
			for j, i := range idx {
				if j != k {
					back(i)
				}
			}
			b.Free()
		case "FreePackets":
			b.FreePackets()
			b.FreePackets()
			for _, i := range idx {
				back(i)
			}
			check(round, how)
			b.Free()
		case "Truncate":
			k := rnd.IntN(len(idx))
			b.Truncate(k)
			for _, i := range idx[k:] {
				back(i)
			}
			check(round, how)
			for _, i := range idx[:k] {
				back(i)
			}
			b.Free()
		case "Release", "ReleaseBulk", "Put":
			offs := make([]uint64, b.Len())
			for j := range offs {
				offs[j] = b.SegmentOffset(0, j)
			}
			b.FreeMeta()
			check(round, how+" (metadata only)")
			switch how {
			case "Release":
				for _, o := range offs {
					x.r.Release(o)
				}
			case "ReleaseBulk":
				x.r.ReleaseBulk(offs, nil)
			case "Put":
				for _, i := range idx {
					x.r.Put(i)
				}
			}
			for _, i := range idx {
				back(i)
			}
		}
		check(round, how)
		// The owner takes back some groups whose buffers are all back, as an RQ reposts.
		for grp := range delivered {
			if returned[grp] == delivered[grp] && rnd.IntN(2) == 0 {
				x.g.Retake(grp, delivered[grp])
				returned[grp], delivered[grp] = 0, 0
			}
		}
		check(round, "Retake")
		if x.g.Pending() != sum(returned) {
			t.Fatalf("round %d: %d pending, want %d", round, x.g.Pending(), sum(returned))
		}
	}
	// Close with a few buffers out, in groups that also have buffers back.
	var held []*Burst
	heldN := 0
	for k := 0; k < 3; k++ {
		var idx []uint32
		for i := range out {
			if !out[i] && rnd.IntN(8) == 0 {
				idx = append(idx, uint32(i))
			}
		}
		for _, i := range idx {
			out[i] = true
			delivered[i>>log]++
		}
		heldN += len(idx)
		held = append(held, x.burst(t, rnd, idx))
	}
	inPool := 0 // the buffers of the groups with nothing out
	for grp := range delivered {
		if delivered[grp] == returned[grp] {
			inPool += min(8, n-8*grp)
		}
	}
	x.g.Close(delivered)
	x.g.Close(delivered) // only the first counts
	err := x.r.Close()
	if want := "buffers not returned"; heldN > 0 && (!errors.Is(err, ErrBuffersOutstanding) || !strings.Contains(err.Error(), strconv.Itoa(heldN)+" of 100 "+want)) {
		t.Fatalf("Close with %d buffers out: %v", heldN, err)
	}
	if got := x.r.Available(); got != inPool {
		t.Fatalf("%d buffers in the pool after Close, want %d (the groups with nothing out)", got, inPool)
	}
	for k, b := range held {
		if x.r.Unmapped() {
			t.Fatalf("memory released with %d bursts still held", len(held)-k)
		}
		b.Free()
	}
	if !x.r.Unmapped() || x.r.Available() != n || x.r.Outstanding() != nil {
		t.Fatalf("after the last buffer: unmapped %v, %d of %d in the pool, %v", x.r.Unmapped(), x.r.Available(), n, x.r.Outstanding())
	}
}

// TestGroupsConcurrentClose: an application goroutine frees bursts in random order while
// the owner reposts groups as their counts say they are back and then closes with bursts
// still out (under -race: the counts, Close's handover and the last free after it); every
// buffer reaches the pool exactly once and the region's memory is released.
func TestGroupsConcurrentClose(t *testing.T) {
	const n, size, log = 256, 128, 4
	for round := 0; round < 20; round++ {
		x := newGroupsRig(t, n, size, log)
		rnd := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
		ch := make(chan *Burst, 64)
		var wg sync.WaitGroup
		wg.Add(1)
		app := rand.New(rand.NewPCG(rnd.Uint64(), rnd.Uint64()))
		go func() {
			defer wg.Done()
			var held []*Burst
			for b := range ch {
				held = append(held, b)
				for len(held) > 0 && app.IntN(3) != 0 {
					k := app.IntN(len(held))
					held[k].Free()
					held = append(held[:k], held[k+1:]...)
				}
			}
			for _, b := range held {
				b.Free()
			}
		}()
		// The owner: groups go out whole, in order, as an RQ's WQEs do; a group is reused
		// once every buffer of it is back.
		delivered := make([]int32, x.g.Len())
		next := 0
		for step := 0; step < 200; step++ {
			grp := next % x.g.Len()
			if delivered[grp] != 0 {
				if x.g.Returned(grp) != delivered[grp] {
					continue // not back yet: try again
				}
				x.g.Retake(grp, delivered[grp])
				delivered[grp] = 0
			}
			next++
			idx := make([]uint32, 1<<log)
			for i := range idx {
				idx[i] = uint32(grp<<log + i)
			}
			for len(idx) > 0 {
				k := min(len(idx), 1+rnd.IntN(16))
				delivered[grp] += int32(k)
				ch <- x.burst(t, rnd, idx[:k])
				idx = idx[k:]
			}
		}
		x.g.Close(delivered)
		close(ch)
		wg.Wait()
		if err := x.r.Close(); err != nil || !x.r.Unmapped() || x.r.Available() != n {
			t.Fatalf("round %d: Close %v, unmapped %v, %d of %d buffers in the pool", round, err, x.r.Unmapped(), x.r.Available(), n)
		}
	}
}

// TestTakeGroupsRefused: a region whose buffers are not a power of two, that shares buffers,
// whose groups would be too large, that has a buffer out, or that is taken already, is
// refused with an error naming it.
func TestTakeGroupsRefused(t *testing.T) {
	odd := testRegion(t, "odd", 16, 100)
	shared := testRegion(t, "shared", 16, 64)
	shared.EnableSharing()
	busy := testRegion(t, "busy", 16, 64)
	i, _ := busy.Get()
	defer busy.Put(i)
	twice := testRegion(t, "twice", 16, 64)
	g, err := twice.TakeGroups(2)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(nil)
	for _, tc := range []struct {
		r    *Region
		log  uint
		want string
		is   error
	}{
		{odd, 2, "power of two", ErrInvalidParameter},
		{shared, 2, "shares buffers", ErrInvalidParameter},
		{testRegion(t, "big", 16, 64), 17, "2^17", ErrInvalidParameter},
		{busy, 2, "15 of 16 buffers free", ErrRegionInUse},
		{twice, 2, "already owned", ErrRegionInUse},
	} {
		_, err := tc.r.TakeGroups(tc.log)
		if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.r.Name) {
			t.Errorf("region %s: %v, want %q (%v)", tc.r.Name, err, tc.want, tc.is)
		}
	}
	if busy.Available() != 15 {
		t.Fatalf("a refused TakeGroups kept %d buffers", 15-busy.Available())
	}
}

func sum(v []int32) int {
	s := 0
	for _, x := range v {
		s += int(x)
	}
	return s
}

// TestPutOffsets checks Groups.putOffsets, the Free path's count per group, against a count
// of each offset's group on random offset lists (fresh each run, the seed logged): runs of
// one group of every length around the eight it tests at once, single strays, offsets
// anywhere inside their buffers, in order or not.
func TestPutOffsets(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewPCG(seed, 5))
	const bufs, size, log = 4096, 256, 4
	x := newGroupsRig(t, bufs, size, log)
	groups := bufs >> log
	for iter := range 3000 {
		var offs []uint64
		for len(offs) < 1+rnd.IntN(300) {
			grp := rnd.IntN(groups)
			run := 1 + rnd.IntN(20)
			if rnd.IntN(4) == 0 {
				run = 8 * (1 + rnd.IntN(4))
			}
			for range run {
				buf := grp<<log + rnd.IntN(1<<log)
				offs = append(offs, uint64(buf)*size+uint64(rnd.IntN(size)))
			}
		}
		if rnd.IntN(3) == 0 {
			rnd.Shuffle(len(offs), func(i, j int) { offs[i], offs[j] = offs[j], offs[i] })
		}
		want := make([]int32, groups)
		for _, o := range offs {
			want[o/size>>log]++
		}
		before := make([]int32, groups)
		for i := range before {
			before[i] = x.g.Returned(i)
		}
		x.g.putOffsets(offs)
		for i := range want {
			if got := x.g.Returned(i) - before[i]; got != want[i] {
				t.Fatalf("iteration %d: group %d counted %d back, want %d (offsets %v)", iter, i, got, want[i], offs)
			}
		}
	}
	// Everything counted back was delivered, as far as Close knows: every group goes to the
	// pool and the region closes clean.
	out := make([]int32, groups)
	for i := range out {
		out[i] = x.g.Returned(i)
	}
	x.g.Close(out)
}
