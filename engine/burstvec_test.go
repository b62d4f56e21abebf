package engine

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestBurstVectorLoops pins the per-packet loops to their plain forms on random values for
// every length from 0 to 133 and every shift: the dispatching functions (AVX2 blocks of 8
// where the CPU has it, the Go loop for the rest) and the Go loops alone (which the other
// architectures run for every packet), with the elements past the length left alone.
func TestBurstVectorLoops(t *testing.T) {
	if !hasVec {
		t.Log("no AVX2 here (or not amd64): the dispatchers run the Go loops only")
	}
	r := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	for n := 0; n <= 133; n++ {
		for sh := uint(0); sh < 64; sh++ {
			for _, form := range []string{"dispatch", "go"} {
				idx := make([]uint32, n+3)
				for j := range idx {
					idx[j] = r.Uint32()
				}
				want := make([]uint64, n+3)
				for j := range want {
					want[j] = r.Uint64()
				}
				got := slices.Clone(want)
				wantIdx := slices.Clone(idx)
				for j, i := range idx[:n] {
					want[j] = uint64(i) << sh
					wantIdx[j] = 0
				}
				if form == "go" {
					indexesToOffsetsClearGo(got[:n], idx[:n], sh)
				} else {
					indexesToOffsetsClear(got[:n], idx[:n], sh)
				}
				if !slices.Equal(got, want) || !slices.Equal(idx, wantIdx) {
					t.Fatalf("indexesToOffsetsClear (%s) n=%d shift=%d:\n got %x %x\nwant %x %x", form, n, sh, got, idx, want, wantIdx)
				}

				offs := make([]uint64, n)
				for j := range offs {
					offs[j] = r.Uint64()
				}
				wantI := make([]uint32, n+3)
				for j := range wantI {
					wantI[j] = r.Uint32()
				}
				gotI := slices.Clone(wantI)
				for j, o := range offs {
					wantI[j] = uint32(o >> sh)
				}
				if form == "go" {
					offsetsToIndexesGo(gotI[:n], offs, sh)
				} else {
					offsetsToIndexes(gotI[:n], offs, sh)
				}
				if !slices.Equal(gotI, wantI) {
					t.Fatalf("offsetsToIndexes (%s) n=%d shift=%d:\n got %x\nwant %x", form, n, sh, gotI, wantI)
				}
			}
		}
		// Lengths of every size (sums far past 2^32 when they are large).
		for _, lim := range []uint32{64, 1 << 16, 1<<32 - 1} {
			lens := make([]uint32, n)
			want := 0
			for j := range lens {
				lens[j] = r.Uint32N(lim) + uint32(r.IntN(2))*(lim-r.Uint32N(lim))
				want += int(lens[j])
			}
			if got := sumLens(lens); got != want {
				t.Fatalf("sumLens n=%d lim=%d: %d, want %d", n, lim, got, want)
			}
			if got := sumLensGo(lens); got != want {
				t.Fatalf("sumLensGo n=%d lim=%d: %d, want %d", n, lim, got, want)
			}
		}
	}
}

// TestFillLensVector pins SetAllPacketLengths' vector check-and-fill to the plain loop it
// shortens: offsets anywhere in random power-of-two buffers, the packet that does not fit at
// every position of a burst (in a block of 8, in the tail, none), every length around the
// room: the same error (which packet) and the same lengths stored before it, nothing after.
func TestFillLensVector(t *testing.T) {
	r := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	for _, size := range []int{64, 128, 2048} {
		reg := testRegion(t, "fill", 256, size)
		q := testTxQueue(t, true, reg)
		for round := 0; round < 400; round++ {
			n := 1 + r.IntN(80)
			b, err := q.NewBurst(n)
			if err != nil {
				t.Fatal(err)
			}
			// Offsets moved inside their buffers at random (as an engine's strides are), one
			// packet (or none) pushed near its buffer's end.
			offs := b.segs[0].off[:n]
			lens := b.segs[0].len[:n]
			orig := slices.Clone(offs)
			for j := range offs {
				if r.IntN(3) == 0 {
					offs[j] += uint64(r.IntN(size / 4))
				}
			}
			bad := r.IntN(n + 1)
			if bad < n {
				offs[bad] = orig[bad] + uint64(size-1-r.IntN(4))
			}
			l := size - size/4 - 2 + r.IntN(size/4+4)
			if r.IntN(8) == 0 {
				l = r.IntN(size + 2)
			}
			for j := range lens {
				lens[j] = 7777
			}
			// The plain loop: every packet in order, stopping at the first that does not fit.
			want := slices.Clone(lens)
			wantErr := -1
			for j, o := range offs {
				if uint64(l) > uint64(size)-o%uint64(size) {
					wantErr = j
					break
				}
				want[j] = uint32(l)
			}
			err = b.SetAllPacketLengths(l)
			if (err != nil) != (wantErr >= 0) {
				t.Fatalf("size %d n %d length %d: error %v, want one at packet %d", size, n, l, err, wantErr)
			}
			if err != nil {
				perr := b.SetPacketLengths(wantErr, l)
				if perr == nil || err.Error() != perr.Error() {
					t.Fatalf("size %d n %d length %d: error %q, want SetPacketLengths' %q", size, n, l, err, perr)
				}
			}
			if !slices.Equal(lens, want) {
				t.Fatalf("size %d n %d length %d (bad %d): lengths\n got %v\nwant %v", size, n, l, bad, lens, want)
			}
			copy(offs, orig)
			b.Free()
		}
		if got := reg.Available(); got != 256 {
			t.Fatalf("size %d: %d of 256 buffers back", size, got)
		}
	}
}
