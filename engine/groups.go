package engine

import (
	"fmt"
	"sync/atomic"
)

// groupClosed is what Groups.Close adds to a group's return count, less the buffers the
// owner delivered from it and has not taken back: the count then reaches exactly
// groupClosed when the last of those buffers comes back (whoever returns it, the owner
// itself when none is out), and only the call that makes it so hands the group to the pool.
// A group's count stays below 1<<16 + 1 before Close, far from it.
const groupClosed = 1 << 30

// maxGroupLog bounds a group at 65536 buffers (an mlx5 striding WQE's most strides), which
// keeps every count below groupClosed.
const maxGroupLog = 16

// Groups is the return path of a region that one receive queue owns whole and hands out in
// groups of consecutive buffers (an mlx5 striding RQ: the strides of one WQE). A buffer the
// application frees is counted against its group instead of going through the region's
// pool, where the queue would only take it out again: Free adds a run of buffers of one group
// with one atomic add, and the queue, which knows how many buffers it delivered from a group,
// reposts the group once its count says they all came back (Returned, Retake). Nothing goes
// through the pool until Close, which hands every group to it once the group's last buffer
// is back.
type Groups struct {
	r     *Region
	log   uint // buffers per group, log2
	shift uint // region offset → group: log2(BufSize) + log
	// ret counts per group the buffers returned since the owner last took the group back
	// (Retake); after Close, see groupClosed.
	ret    []atomic.Int32
	closed atomic.Bool
}

// TakeGroups takes every buffer of the region for one owner that hands them out in groups of
// 1<<log consecutive buffers (the last group may be short), and routes every later return of
// a buffer (Free, FreePacket, Put, Release, ReleaseBulk) to the returned Groups. The region's
// buffers must be a power of two bytes, without sharing (EnableSharing), and all free.
func (r *Region) TakeGroups(log uint) (*Groups, error) {
	switch {
	case r.shift < 0:
		return nil, fmt.Errorf("memory region %s: buffers of %d bytes: groups need a power of two: %w", r.Name, r.BufSize, ErrInvalidParameter)
	case r.refs != nil:
		return nil, fmt.Errorf("memory region %s shares buffers between packets: %w", r.Name, ErrInvalidParameter)
	case log > maxGroupLog:
		return nil, fmt.Errorf("memory region %s: groups of 2^%d buffers (at most 2^%d): %w", r.Name, log, maxGroupLog, ErrInvalidParameter)
	case r.groups != nil:
		return nil, fmt.Errorf("memory region %s is already owned in groups: %w", r.Name, ErrRegionInUse)
	}
	all := make([]uint32, r.NumBufs)
	if !r.GetBulk(all) {
		return nil, fmt.Errorf("memory region %s: %d of %d buffers free: %w", r.Name, r.Available(), r.NumBufs, ErrRegionInUse)
	}
	g := &Groups{r: r, log: log, shift: uint(r.shift) + log, ret: make([]atomic.Int32, (r.NumBufs+1<<log-1)>>log)}
	r.groups = g
	return g, nil
}

// Len is the number of groups (the last may be short).
func (g *Groups) Len() int { return len(g.ret) }

// Returned is how many buffers of group grp came back since the owner last took it back.
func (g *Groups) Returned(grp int) int32 { return g.ret[grp].Load() }

// Retake takes back n returned buffers of group grp (all the owner had delivered, when it
// reposts the group).
func (g *Groups) Retake(grp int, n int32) { g.ret[grp].Add(-n) }

// Pending is the number of buffers returned and not yet taken back, over every group (a
// snapshot, for tests and diagnostics).
func (g *Groups) Pending() int {
	n := 0
	for i := range g.ret {
		n += int(g.ret[i].Load())
	}
	return n
}

// Close ends the owner's use: out[grp] is how many buffers of group grp it delivered and has
// not taken back (missing entries: none). Each group whose buffers are all back goes to the
// region's pool now; any other goes there when its last outstanding buffer is returned, so
// the region's Outstanding counts exactly the buffers the application still holds. Only the
// first call counts.
func (g *Groups) Close(out []int32) {
	if g.closed.Load() {
		return
	}
	for grp := range g.ret {
		var d int32
		if grp < len(out) {
			d = out[grp]
		}
		if g.ret[grp].Add(groupClosed-d) == groupClosed {
			g.giveBack(grp)
		}
	}
	g.closed.Store(true)
	g.r.returned()
}

// outstanding is, after Close, the number of buffers still out with the application.
func (g *Groups) outstanding() (int, bool) {
	if !g.closed.Load() {
		return 0, false
	}
	n := 0
	for i := range g.ret {
		n += groupClosed - int(g.ret[i].Load())
	}
	return n, true
}

// add counts n buffers of group grp back.
func (g *Groups) add(grp uint64, n int32) {
	if g.ret[grp].Add(n) == groupClosed {
		g.lastBack(int(grp))
	}
}

// lastBack runs when the last outstanding buffer of group grp came back after Close.
func (g *Groups) lastBack(grp int) {
	g.giveBack(grp)
	g.r.returned()
}

// giveBack hands group grp's buffers to the region's pool (once its owner closed and every
// buffer is back).
func (g *Groups) giveBack(grp int) {
	lo := grp << g.log
	hi := min(lo+1<<g.log, g.r.NumBufs)
	idx := make([]uint32, hi-lo)
	for i := range idx {
		idx[i] = uint32(lo + i)
	}
	g.r.pool.PutBulk(idx)
}

// put1 returns buffer i.
func (g *Groups) put1(i uint32) { g.add(uint64(i>>g.log), 1) }

// putIndexes returns buffers by index, one atomic add per run of one group.
func (g *Groups) putIndexes(idx []uint32) {
	if len(idx) == 0 {
		return
	}
	sh := g.log
	cur, n := uint64(idx[0]>>sh), int32(0)
	for _, i := range idx {
		if k := uint64(i >> sh); k != cur {
			g.add(cur, n)
			cur, n = k, 0
		}
		n++
	}
	g.add(cur, n)
}

// putOffsets returns the buffers holding the region offsets offs: one atomic add per run of
// one group. Eight offsets of the current group, the common case (a burst's strides come from
// one WQE or two), cost one test: an offset is in group cur exactly when its bits from shift
// up equal ref's, so the eight XORs with ref OR-ed together have none of them set.
func (g *Groups) putOffsets(offs []uint64) {
	if len(offs) == 0 {
		return
	}
	sh := g.shift & 63
	cur, n := offs[0]>>sh, int32(0)
	ref := offs[0]
	for len(offs) >= 8 {
		o := (*[8]uint64)(offs)
		if ((o[0]^ref)|(o[1]^ref)|(o[2]^ref)|(o[3]^ref)|(o[4]^ref)|(o[5]^ref)|(o[6]^ref)|(o[7]^ref))>>sh == 0 {
			n += 8
			offs = offs[8:]
			continue
		}
		for _, v := range o {
			if k := v >> sh; k != cur {
				g.add(cur, n)
				cur, n, ref = k, 0, v
			}
			n++
		}
		offs = offs[8:]
	}
	for _, v := range offs {
		if k := v >> sh; k != cur {
			g.add(cur, n)
			cur, n = k, 0
		}
		n++
	}
	g.add(cur, n)
}
