package mlx5

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// refMinis is strideMinis as it was before strideMinis8 (2026-11-28, i31rx): the byte count
// and stride index read as two fields, the common case tested field by field, the offset a
// shift. TestStrideMinis pins both fast forms to it.
func refMinis(arr *[64]byte, q, n int, offs []uint64, lens, flows []uint32, tss []int64, base uint64, bsLog uint, spw, tag uint32, ts int64) (took int, bytes uint32) {
	for i := 0; i < n; i++ {
		m := arr[(q+i)*prm.MiniCQESize:]
		bc := binary.BigEndian.Uint32(m[miniByteCnt:])
		st := uint32(binary.BigEndian.Uint16(m[miniStrideIdx:]))
		if bc&(prm.MPRQByteCntFiller|prm.MPRQByteCntStridesMask) != 1<<prm.MPRQByteCntStrideShift || st >= spw {
			return i, bytes
		}
		offs[i] = base + uint64(st)<<bsLog
		lens[i] = bc & prm.MPRQByteCntLenMask
		flows[i] = tag
		tss[i] = ts
		bytes += lens[i]
	}
	return n, bytes
}

// randomMini writes a mini-CQE of the striding format at m: mostly the common case (one
// stride, an index inside the WQE), else one of the others (a filler, several or no strides,
// an index past the WQE's, stray high bits); the checksum field is random throughout.
func randomMini(r *rand.Rand, m []byte, spw uint32, bsLog uint) {
	st := uint32(r.IntN(int(spw)))
	l := uint32(r.IntN(1<<bsLog + 1))
	bc := 1<<prm.MPRQByteCntStrideShift | l
	switch r.IntN(24) {
	case 0:
		bc |= prm.MPRQByteCntFiller
	case 1:
		bc = uint32(2+r.IntN(100))<<prm.MPRQByteCntStrideShift | l
	case 2:
		bc = l // no stride
	case 3:
		if spw < 1<<16 {
			st = spw + uint32(r.IntN(int(1<<16-spw)))
		}
	case 4:
		bc |= 1 << 30 // the bit between the strides field and the filler flag
	case 5:
		bc = r.Uint32()
		st = uint32(r.IntN(1 << 16))
	}
	binary.BigEndian.PutUint16(m[0:], uint16(r.Uint32()))
	binary.BigEndian.PutUint16(m[miniStrideIdx:], uint16(st))
	binary.BigEndian.PutUint32(m[miniByteCnt:], bc)
}

// TestStrideMinis checks strideMinis and strideRun against refMinis on random arrays of
// mini-CQEs (fresh inputs each run; the seed is logged): the same count taken, the same byte
// sum and the same offsets, lengths, flow tags and times for what was taken. strideRun runs
// over one to six arrays placed as a session places them in a CQ that wraps (the first in
// slot first, the others every eighth slot from from) and takes exactly the arrays before
// the first one the reference does not take whole.
func TestStrideMinis(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 31))
	whole, partial := 0, 0
	const slots = 64
	cq := make([]byte, slots*64)
	for iter := range 30000 {
		spw := uint32(1) << (3 + r.IntN(14))
		bsLog := uint(6 + r.IntN(8))
		base := uint64(r.IntN(1<<20)) << bsLog
		tag, ts := r.Uint32()&0xffffff, r.Int64()
		f := minisFill{base: base, bs: 1 << bsLog, check: miniCheck(spw), tag: tag, ts: ts}
		// strideMinis on one array, from a random index.
		var arr [64]byte
		for i := range 8 {
			randomMini(r, arr[i*prm.MiniCQESize:], spw, bsLog)
		}
		q := r.IntN(8)
		n := 1 + r.IntN(8-q)
		var ro, gotO [8]uint64
		var rl, rf, gl, gf [8]uint32
		var rt, gt [8]int64
		took, bytes := refMinis(&arr, q, n, ro[:], rl[:], rf[:], rt[:], base, bsLog, spw, tag, ts)
		gTook, gBytes := strideMinis(&arr, q, n, gotO[:], gl[:], gf[:], gt[:], &f)
		if gTook != took || gBytes != bytes || !slices.Equal(gotO[:took], ro[:took]) ||
			!slices.Equal(gl[:took], rl[:took]) || !slices.Equal(gf[:took], rf[:took]) || !slices.Equal(gt[:took], rt[:took]) {
			t.Fatalf("iteration %d (spw %d, buffers of 2^%d, q %d, n %d, minis % x): strideMinis took %d (%d bytes) %v %v, reference %d (%d bytes) %v %v",
				iter, spw, bsLog, q, n, arr, gTook, gBytes, gotO[:gTook], gl[:gTook], took, bytes, ro[:took], rl[:took])
		}
		// strideRun over m arrays; mostly common ones, so that runs of several are taken.
		m := 1 + r.IntN(6)
		from := r.Uint32()
		first := from + uint32(r.IntN(2))
		var wantO []uint64
		var wantL, wantF []uint32
		var wantT []int64
		wantBytes, stop := 0, false
		for i := range m {
			at := from + 8*uint32(i)
			if i == 0 {
				at = first
			}
			a := (*[64]byte)(cq[(at%slots)*64:])
			for k := range 8 {
				randomMini(r, a[k*prm.MiniCQESize:], spw, bsLog)
				if r.IntN(4) != 0 { // make it the common case again
					binary.BigEndian.PutUint32(a[k*prm.MiniCQESize+miniByteCnt:], 1<<prm.MPRQByteCntStrideShift|uint32(r.IntN(1<<bsLog+1)))
					binary.BigEndian.PutUint16(a[k*prm.MiniCQESize+miniStrideIdx:], uint16(r.IntN(int(spw))))
				}
			}
			if stop {
				continue
			}
			var o [8]uint64
			var l, fl [8]uint32
			var tt [8]int64
			took, by := refMinis(a, 0, 8, o[:], l[:], fl[:], tt[:], base, bsLog, spw, tag, ts)
			if took < 8 {
				stop = true
				continue
			}
			wantO, wantL, wantF, wantT = append(wantO, o[:]...), append(wantL, l[:]...), append(wantF, fl[:]...), append(wantT, tt[:]...)
			wantBytes += int(by)
		}
		offs, lens, flows, tss := make([]uint64, 8*m), make([]uint32, 8*m), make([]uint32, 8*m), make([]int64, 8*m)
		got, gotBytes := strideRun(cq, first, from, slots-1, offs, lens, flows, tss, &f)
		if got != len(wantO) || gotBytes != wantBytes || !slices.Equal(offs[:got], wantO) || !slices.Equal(lens[:got], wantL) ||
			!slices.Equal(flows[:got], wantF) || !slices.Equal(tss[:got], wantT) {
			t.Fatalf("iteration %d (spw %d, %d arrays from slot %d, the first at %d): strideRun took %d (%d bytes), the reference %d (%d bytes)",
				iter, spw, m, from%slots, first%slots, got, gotBytes, len(wantO), wantBytes)
		}
		if got == 8*m {
			whole++
		} else {
			partial++
		}
	}
	if whole < 1000 || partial < 1000 {
		t.Fatalf("too few runs of each kind: %d taken whole, %d stopped at an array", whole, partial)
	}
}
