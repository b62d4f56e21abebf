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

// TestStrideMinis checks strideMinis and strideMinis8 against refMinis on random arrays of
// mini-CQEs (fresh inputs each run; the seed is logged): the same count taken, the same
// byte sum and the same offsets, lengths, flow tags and times for what was taken; and
// strideMinis8 succeeds exactly when the reference takes all eight.
func TestStrideMinis(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 31))
	whole, partial := 0, 0
	for iter := range 50000 {
		spw := uint32(1) << (3 + r.IntN(14))
		bsLog := uint(6 + r.IntN(8))
		var arr [64]byte
		for i := range 8 {
			randomMini(r, arr[i*prm.MiniCQESize:], spw, bsLog)
		}
		base := uint64(r.IntN(1<<20)) << bsLog
		tag, ts := r.Uint32()&0xffffff, r.Int64()
		f := minisFill{base: base, bs: 1 << bsLog, check: miniCheck(spw), tag: tag, ts: ts}
		q := r.IntN(8)
		n := 1 + r.IntN(8-q)
		if iter%2 == 0 {
			q, n = 0, 8
		}
		var ro, go8 [8]uint64
		var rl, rf, gl, gf, gl8, gf8 [8]uint32
		var rt, gt, gt8 [8]int64
		var gotO [8]uint64
		took, bytes := refMinis(&arr, q, n, ro[:], rl[:], rf[:], rt[:], base, bsLog, spw, tag, ts)
		gTook, gBytes := strideMinis(&arr, q, n, gotO[:], gl[:], gf[:], gt[:], &f)
		if gTook != took || gBytes != bytes || !slices.Equal(gotO[:took], ro[:took]) ||
			!slices.Equal(gl[:took], rl[:took]) || !slices.Equal(gf[:took], rf[:took]) || !slices.Equal(gt[:took], rt[:took]) {
			t.Fatalf("iteration %d (spw %d, buffers of 2^%d, q %d, n %d, minis % x): strideMinis took %d (%d bytes) %v %v, reference %d (%d bytes) %v %v",
				iter, spw, bsLog, q, n, arr, gTook, gBytes, gotO[:gTook], gl[:gTook], took, bytes, ro[:took], rl[:took])
		}
		if q != 0 || n != 8 {
			continue
		}
		b8, ok := strideMinis8(&arr, &go8, &gl8, &gf8, &gt8, &f)
		if ok != (took == 8) {
			t.Fatalf("iteration %d (spw %d, minis % x): strideMinis8 ok %v, the reference took %d of 8", iter, spw, arr, ok, took)
		}
		if !ok {
			partial++
			continue
		}
		whole++
		if b8 != bytes || go8 != ro || gl8 != rl || gf8 != rf || gt8 != rt {
			t.Fatalf("iteration %d (spw %d, minis % x): strideMinis8 %d bytes %v %v %v %v, reference %d bytes %v %v %v %v",
				iter, spw, arr, b8, go8, gl8, gf8, gt8, bytes, ro, rl, rf, rt)
		}
	}
	if whole < 1000 || partial < 1000 {
		t.Fatalf("too few cases of each kind: %d whole arrays, %d with another kind of mini-CQE", whole, partial)
	}
}
