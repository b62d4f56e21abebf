package mlx5

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"
)

// TestPutDSegs checks putDSegs against the data segments written field by field (sendMPW's
// loop before it, still its loop for a WQE at the ring's end) on random packets, fresh each
// run (the seed is logged): the same 16 bytes per packet, the same byte sum, and on a length
// outside 14 to maxFrame the index of the first such packet with the segments before it
// written.
func TestPutDSegs(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 17))
	bad := 0
	for iter := range 20000 {
		k := 1 + r.IntN(mpwMax)
		offs := make([]uint64, k)
		lens := make([]uint32, k)
		for i := range offs {
			offs[i] = r.Uint64N(1 << 40)
			lens[i] = 14 + r.Uint32N(maxFrame-13)
			if r.IntN(64) == 0 {
				lens[i] = []uint32{0, 13, maxFrame + 1, 1 << 31, ^uint32(0)}[r.IntN(5)]
			}
		}
		base, lkey := r.Uint64N(1<<46), r.Uint32()
		want := make([]byte, mpwMax*16)
		wantBad, wantBytes := -1, 0
		for i := range offs {
			if lens[i] < 14 || lens[i] > maxFrame {
				wantBad = i
				break
			}
			wantBytes += int(lens[i])
			d := want[16*i:]
			binary.BigEndian.PutUint32(d[dsegByteCount:], lens[i])
			binary.BigEndian.PutUint32(d[dsegLKey:], lkey)
			binary.BigEndian.PutUint64(d[dsegAddr:], base+offs[i])
		}
		var got [mpwMax * 16]byte
		gotBytes, gotBad := putDSegs(&got, offs, lens, base, uint64(lkey>>24|lkey>>8&0xff00|lkey<<8&0xff0000|lkey<<24)<<32)
		n := k
		if wantBad >= 0 {
			n = wantBad
			bad++
		}
		if gotBad != wantBad || gotBytes != wantBytes || !bytes.Equal(got[:16*n], want[:16*n]) {
			t.Fatalf("iteration %d (%d packets, lengths %v): putDSegs %d bytes, bad %d, segments % x; field by field %d bytes, bad %d, % x",
				iter, k, lens, gotBytes, gotBad, got[:16*n], wantBytes, wantBad, want[:16*n])
		}
	}
	if bad < 100 {
		t.Fatalf("only %d bursts with a bad length", bad)
	}
}
