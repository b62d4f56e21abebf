package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestBurstConversions pins the four-at-a-time conversions of NewBurst, Free and
// TakePackets to the plain loops they replaced, on random values, every length from 0 to
// 133 (the unrolled part, the tail, both) and every shift a region can have, with the
// elements past the length left alone.
func TestBurstConversions(t *testing.T) {
	r := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	for n := 0; n <= 133; n++ {
		for sh := uint(0); sh < 63; sh++ {
			idx := make([]uint32, n)
			for j := range idx {
				idx[j] = r.Uint32()
			}
			want := make([]uint64, n+3)
			got := make([]uint64, n+3)
			for j := range want {
				want[j] = r.Uint64()
			}
			copy(got, want)
			for j, i := range idx {
				want[j] = uint64(i) << sh
			}
			indexesToOffsetsClear(got, idx, sh)
			if !slices.Equal(got, want) {
				t.Fatalf("indexesToOffsets n=%d shift=%d:\n got %x\nwant %x", n, sh, got, want)
			}

			offs := make([]uint64, n)
			for j := range offs {
				offs[j] = r.Uint64()
			}
			wantIdx := make([]uint32, n+3)
			gotIdx := make([]uint32, n+3)
			for j := range wantIdx {
				wantIdx[j] = r.Uint32()
			}
			copy(gotIdx, wantIdx)
			for j, o := range offs {
				wantIdx[j] = uint32(o >> sh)
			}
			offsetsToIndexes(gotIdx, offs, sh)
			if !slices.Equal(gotIdx, wantIdx) {
				t.Fatalf("offsetsToIndexes n=%d shift=%d:\n got %x\nwant %x", n, sh, gotIdx, wantIdx)
			}
		}
		v := int64(r.Uint64())
		ts := make([]int64, n+3)
		for j := range ts {
			ts[j] = int64(r.Uint64())
		}
		want := slices.Clone(ts)
		for j := range want[:n] {
			want[j] = v
		}
		fillTimes(ts[:n], v)
		if !slices.Equal(ts, want) {
			t.Fatalf("fillTimes n=%d:\n got %x\nwant %x", n, ts, want)
		}
	}
}

// TestBurstOffsetsRoundTrip: a TX burst of random size from a region of power-of-two
// buffers holds distinct offsets at buffer starts, received timestamps are all the
// loopback's time, and Free gives every buffer back (the conversions in their places).
func TestBurstOffsetsRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	for _, size := range []int{64, 128, 2048} {
		reg := testRegion(t, "conv", 512, size)
		q := testTxQueue(t, true, reg)
		rm, err := NewMetaPool("conv-rx", 4, 512, false)
		if err != nil {
			t.Fatal(err)
		}
		for round := 0; round < 50; round++ {
			n := 1 + r.IntN(300)
			b, err := q.NewBurst(n)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[uint64]bool{}
			offs, lens := b.SegmentArrays(0)
			for j, o := range offs {
				if o%uint64(size) != 0 || o >= uint64(512*size) || seen[o] || lens[j] != 0 {
					t.Fatalf("size %d packet %d: offset %d (len %d): not a fresh buffer start", size, j, o, lens[j])
				}
				seen[o] = true
			}
			rb, err := rm.Get(0, 0, []*Region{reg}, true, n)
			if err != nil {
				t.Fatal(err)
			}
			ts := int64(r.Uint64() >> 1)
			rb.TakePackets(b, ts)
			b.FreeMeta()
			for j := 0; j < rb.Len(); j++ {
				if got, err := rb.RxTimestamp(j); err != nil || got != ts {
					t.Fatalf("packet %d of %d: timestamp %d, %v; want %d", j, n, got, err, ts)
				}
			}
			rb.Free()
			if got := reg.Available(); got != 512 {
				t.Fatalf("size %d round %d: %d of 512 buffers back after Free", size, round, got)
			}
		}
	}
}

// TestFreeReturnsTheBurstsBuffers pins Free's bulk return, which converts offsets to buffer
// indexes in the segment's length array instead of a stack array, to the buffers the burst
// held: after Free of a TX burst, or of an RX burst that took a TX burst's arrays, of random
// size (crossing the 64-packet chunks) and random lengths, with one or two segments, every
// region holds all its buffers again, each exactly once.
func TestFreeReturnsTheBurstsBuffers(t *testing.T) {
	r := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	const nbufs = 512
	for _, two := range []bool{false, true} {
		regs := []*Region{testRegion(t, "free0", nbufs, 128)}
		if two {
			regs = append(regs, testRegion(t, "free1", nbufs, 2048))
		}
		q := testTxQueue(t, !two, regs...)
		rm, err := NewMetaPool("free-rx", 4, 512, false)
		if err != nil {
			t.Fatal(err)
		}
		all := make([]uint32, nbufs)
		for round := 0; round < 60; round++ {
			n := 1 + r.IntN(300)
			b, err := q.NewBurst(n)
			if err != nil {
				t.Fatal(err)
			}
			for s := range regs {
				_, lens := b.SegmentArrays(s)
				for j := range lens {
					lens[j] = uint32(1 + r.IntN(64))
				}
			}
			if round%2 == 1 {
				rb, err := rm.Get(0, 0, regs, !two, n)
				if err != nil {
					t.Fatal(err)
				}
				rb.TakePackets(b, 1)
				b.FreeMeta()
				b = rb
			}
			b.Free()
			for _, reg := range regs {
				if !reg.GetBulk(all) {
					t.Fatalf("two=%v round %d n=%d: region %s: not all %d buffers back after Free (%d)", two, round, n, reg.Name, nbufs, reg.Available())
				}
				seen := make([]bool, nbufs)
				for _, i := range all {
					if i >= nbufs || seen[i] {
						t.Fatalf("two=%v round %d n=%d: region %s: buffer %d back twice or out of range", two, round, n, reg.Name, i)
					}
					seen[i] = true
				}
				reg.putBulk(all)
			}
		}
	}
}

// resetPlain is Reset as it was before it skipped unchanged pointer stores (2026-11-29).
func resetPlain(b *Burst, port, queue int, regions []*Region, raw bool, capacity int) {
	b.port, b.queue, b.n, b.conn, b.flags, b.reorder, b.Engine = port, queue, 0, 0, 0, nil, nil
	b.txq = nil
	b.partial, b.lazy = false, false
	b.hash, b.hashed = b.hash[:0], b.hashed[:0]
	b.raw = raw
	b.nsegs = len(regions)
	b.ensure(capacity, b.nsegs)
	for s := range b.segs {
		b.segs[s].region = nil
		if s < b.nsegs {
			b.segs[s].region = regions[s]
		}
	}
	b.view0, b.mask0, b.room1 = nil, 0, 0
	b.lim1, b.mask1, b.size1, b.sizeF1 = 0, 0, 0, 0
	if r := b.segs[0].region; r != nil && r.shift >= 0 {
		if raw && r.buf != nil {
			b.view0, b.mask0 = r.buf, uint64(r.BufSize-1)
		}
		if b.nsegs == 1 {
			b.room1 = uint64(r.BufSize)
			b.lim1, b.mask1 = uint64(r.BufSize)+1, uint64(r.BufSize-1)
		}
	} else if r != nil && b.nsegs == 1 && r.BufSize > 0 {
		b.size1, b.sizeF1 = uint64(r.BufSize), float64(r.BufSize)
		b.lim1, b.mask1 = uint64(r.BufSize)+1, ^uint64(0)
	}
}

// TestResetMatchesPlainReset pins Reset, which stores a pointer field only when it changes,
// to the plain assignments: two bursts in the same random state (left by an earlier Reset to
// other regions, reorder info, an engine token, a queue, hashes), one Reset, one resetPlain,
// with random regions (power-of-two buffers and not, one to four segments, none), end with
// every field Reset sets equal, view0 the very same slice.
func TestResetMatchesPlainReset(t *testing.T) {
	r := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	regs := []*Region{testRegion(t, "r64", 8, 64), testRegion(t, "r1000", 8, 1000), testRegion(t, "r2048", 8, 2048)}
	q := testTxQueue(t, true, regs[0])
	pick := func() []*Region {
		k := r.IntN(5)
		out := make([]*Region, k)
		for i := range out {
			out[i] = regs[r.IntN(len(regs))]
		}
		return out
	}
	var a, b Burst
	for round := 0; round < 2000; round++ {
		// The same earlier state for both.
		prev, praw, pcap := pick(), r.IntN(2) == 0, 1+r.IntN(100)
		resetPlain(&a, 1, 2, prev, praw, pcap)
		resetPlain(&b, 1, 2, prev, praw, pcap)
		if r.IntN(2) == 0 {
			ri := &ReorderInfo{}
			a.reorder, b.reorder = ri, ri
		}
		if r.IntN(2) == 0 {
			a.Engine, b.Engine = round, round
		}
		if r.IntN(2) == 0 {
			a.txq, b.txq = q, q
		}
		if r.IntN(2) == 0 {
			a.hash, b.hash = append(a.hash, 1), append(b.hash, 1)
			a.hashed, b.hashed = append(a.hashed, true), append(b.hashed, true)
		}
		a.n, b.n, a.partial, b.partial, a.lazy, b.lazy, a.conn, b.conn, a.flags, b.flags = 3, 3, true, true, true, true, 7, 7, 9, 9
		regions, raw, capacity := pick(), r.IntN(2) == 0, 1+r.IntN(100)
		port, queue := r.IntN(4), r.IntN(8)
		a.Reset(port, queue, regions, raw, capacity)
		resetPlain(&b, port, queue, regions, raw, capacity)
		for s := range a.segs {
			if a.segs[s].region != b.segs[s].region {
				t.Fatalf("round %d: segment %d region %v, want %v", round, s, a.segs[s].region, b.segs[s].region)
			}
		}
		got := []any{a.port, a.queue, a.n, a.conn, a.flags, a.reorder, a.Engine, a.txq, a.partial, a.lazy, len(a.hash), len(a.hashed), a.raw, a.nsegs, a.view0 == nil, len(a.view0), cap(a.view0), a.mask0, a.room1, a.lim1, a.mask1, a.size1, a.sizeF1, cap(a.flow) >= capacity}
		want := []any{b.port, b.queue, b.n, b.conn, b.flags, b.reorder, b.Engine, b.txq, b.partial, b.lazy, len(b.hash), len(b.hashed), b.raw, b.nsegs, b.view0 == nil, len(b.view0), cap(b.view0), b.mask0, b.room1, b.lim1, b.mask1, b.size1, b.sizeF1, true}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("round %d (regions %d, raw %v): after Reset\n got %v\nwant %v", round, len(regions), raw, got, want)
		}
		if !sameBytes(a.view0, b.view0) {
			t.Fatalf("round %d: view0 is not the region's bytes", round)
		}
	}
}
