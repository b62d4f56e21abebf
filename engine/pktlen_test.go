package engine

import (
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/daqiri-go/daqiri/config"
)

// oldPacketLen is SetPacketLen's check before 2026-11-29 (integer remainder for buffers not a
// power of two): whether length l fits packet i at offset o, and the packet's room + 1 (0 for
// an index out of range or a burst of several segments).
func oldPacketLen(size, nsegs, n int, o uint64, i, l int) (bool, uint64) {
	if uint(i) >= uint(n) || nsegs != 1 {
		return false, 0
	}
	var lim uint64
	if size&(size-1) == 0 {
		lim = uint64(size) + 1 - o&uint64(size-1)
	} else {
		lim = uint64(size) + 1 - o%uint64(size)
	}
	return uint64(l) < lim, lim
}

// TestSetPacketLenFloatRoom pins SetPacketLen (float quotient for buffers not a power of two)
// to the integer check it replaced: random regions up to config.MaxRegionBytes of
// power-of-two buffers and not (small, odd, near 2^32 and beyond), bursts of one and two
// segments, offsets at buffer starts, after a headroom, anywhere, on the last bytes of a
// buffer and of the region, lengths around each packet's room, bad indexes and negative
// lengths: the same answer, the same error text, the same stored lengths.
func TestSetPacketLenFloatRoom(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, uint64(rand.Int64())))
	for round := range 4000 {
		var size int
		switch rng.IntN(5) {
		case 0:
			size = 1 << rng.IntN(21)
		case 1:
			size = 1 + rng.IntN(4096)
		case 2:
			size = 1 + rng.IntN(1<<24)
		case 3:
			size = (1 << 32) - 3 + rng.IntN(7)
		default:
			size = 1 + int(rng.Int64N(1<<40))
		}
		nbufs := int(config.MaxRegionBytes / uint64(size))
		if rng.IntN(3) == 0 {
			nbufs = 1 + rng.IntN(min(nbufs, 1<<12))
		}
		if bits.OnesCount(uint(size)) == 1 && rng.IntN(4) == 0 {
			nbufs = 1 + rng.IntN(nbufs)
		}
		shift := int8(-1)
		if size&(size-1) == 0 {
			shift = int8(bits.TrailingZeros(uint(size)))
		}
		r := &Region{Name: "pktlen", BufSize: size, NumBufs: nbufs, shift: shift}
		end := uint64(size) * uint64(nbufs)
		nsegs := 1
		if rng.IntN(10) == 0 {
			nsegs = 2
		}
		regs := make([]*Region, nsegs)
		for s := range regs {
			regs[s] = r
		}
		n := 1 + rng.IntN(64)
		var b Burst
		b.Reset(0, 0, regs, false, n)
		b.n = n
		head := uint64(rng.IntN(min(size, 256)))
		for s := range nsegs {
			b.segs[s].off = b.segs[s].off[:n]
			b.segs[s].len = b.segs[s].len[:n]
			for i := range n {
				buf := rng.Uint64N(uint64(nbufs))
				if rng.IntN(4) == 0 {
					buf = uint64(nbufs) - 1 - rng.Uint64N(min(uint64(nbufs), 4))
				}
				start := buf * uint64(size)
				var o uint64
				switch rng.IntN(5) {
				case 0:
					o = start
				case 1:
					o = start + min(head, uint64(size)-1)
				case 2:
					o = start + uint64(size) - 1 - rng.Uint64N(min(uint64(size), 3))
				case 3:
					o = rng.Uint64N(end)
				default:
					o = start + rng.Uint64N(uint64(size))
				}
				b.segs[s].off[i] = o
				b.segs[s].len[i] = uint32(rng.Uint32())
			}
		}
		for k := range 3 * n {
			i := rng.IntN(n)
			switch rng.IntN(16) {
			case 0:
				i = -1 - rng.IntN(3)
			case 1:
				i = n + rng.IntN(3)
			}
			var o uint64
			if uint(i) < uint(n) {
				o = b.segs[0].off[i]
			}
			room := int(uint64(size) - o%uint64(size))
			var l int
			switch rng.IntN(6) {
			case 0:
				l = room
			case 1:
				l = room + 1
			case 2:
				l = room - 1
			case 3:
				l = -1 - rng.IntN(5)
			case 4:
				l = rng.IntN(1 << 16)
			default:
				l = rng.IntN(room + 2)
			}
			before := append([]uint32(nil), b.segs[0].len[:n]...)
			ok, lim := oldPacketLen(size, nsegs, n, o, i, l)
			err := b.SetPacketLen(i, l)
			if ok != (err == nil) {
				t.Fatalf("round %d step %d: size %d nsegs %d packet %d of %d at offset %d length %d: SetPacketLen %v, old check ok=%v (room+1 %d)", round, k, size, nsegs, i, n, o, l, err, ok, lim)
			}
			want := before
			if ok {
				want[i] = uint32(l)
			} else {
				wantErr := (&packetLenError{i: i, n: n, l: l, lim: lim}).Error()
				if err.Error() != wantErr {
					t.Fatalf("round %d: size %d packet %d at offset %d length %d: error %q, want %q", round, size, i, o, l, err, wantErr)
				}
			}
			for j := range n {
				if b.segs[0].len[j] != want[j] {
					t.Fatalf("round %d: size %d packet %d length %d: length of packet %d is %d, want %d", round, size, i, l, j, b.segs[0].len[j], want[j])
				}
			}
		}
	}
}
