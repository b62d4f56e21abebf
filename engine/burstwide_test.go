package engine

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
)

// twinBursts is two bursts of meta over the same packets: one-segment packets at the given
// offsets of reg, or two-segment ones (both segments in reg) when two.
func twinBursts(t *testing.T, meta *MetaPool, reg *Region, offs []uint64, two bool) (*Burst, *Burst) {
	t.Helper()
	regs := []*Region{reg}
	if two {
		regs = append(regs, reg)
	}
	var bs [2]*Burst
	for k := range bs {
		b, err := meta.Get(0, 0, regs, true, len(offs))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range offs {
			if two {
				b.AppendSegments([]uint64{o, o}, []uint32{0, 0}, 0, 0)
			} else {
				b.Append(o, 0, 0, 0)
			}
		}
		bs[k] = b
	}
	return bs[0], bs[1]
}

// TestSetPacketLenMatchesSetPacketLengths: the inlined setter accepts and refuses exactly
// what SetPacketLengths(i, l) does, and sets the same length, for random packet offsets
// inside power-of-two and other buffers, lengths around each packet's room, negative and
// huge lengths, indices out of range and bursts of two segments (where one length is always
// refused); its errors wrap ErrInvalidParameter and name the packet (and the length and the
// room when that was the fault).
func TestSetPacketLenMatchesSetPacketLengths(t *testing.T) {
	r := rand.New(rand.NewPCG(rand.Uint64(), 31))
	meta, err := NewMetaPool("rx", 2, 4, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{64, 128, 1000, 2048, 1500} {
		reg := testRegion(t, "r", 8, size)
		for round := 0; round < 200; round++ {
			n := 1 + r.IntN(12)
			offs := make([]uint64, n)
			for i := range offs {
				offs[i] = uint64(r.IntN(8)*size + r.IntN(size))
			}
			two := round%5 == 4
			a, b := twinBursts(t, meta, reg, offs, two)
			for k := 0; k < 4*n; k++ {
				i := r.IntN(n+2) - 1 // -1 and n out of range
				if r.IntN(20) == 0 {
					i = []int{math.MinInt, math.MaxInt, 1 << 40}[r.IntN(3)]
				}
				room := 0
				if i >= 0 && i < n {
					room = size - int(offs[i])%size
				}
				l := room + r.IntN(5) - 2
				if r.IntN(10) == 0 {
					l = []int{-1, math.MinInt, math.MaxInt, size + 1<<32, 0}[r.IntN(5)]
				}
				errA := a.SetPacketLen(i, l)
				errB := b.SetPacketLengths(i, l)
				if (errA == nil) != (errB == nil) {
					t.Fatalf("size %d, packet %d (room %d, two segments %v), length %d: SetPacketLen %v, SetPacketLengths %v", size, i, room, two, l, errA, errB)
				}
				if errA != nil {
					msg := errA.Error()
					if !errors.Is(errA, ErrInvalidParameter) || !strings.Contains(msg, "packet ") {
						t.Fatalf("packet %d length %d: error %q", i, l, msg)
					}
					if !two && i >= 0 && i < n && !strings.Contains(msg, "length ") {
						t.Fatalf("packet %d length %d (room %d): error %q does not name the length", i, l, room, msg)
					}
				}
				for p := 0; p < n; p++ {
					if a.PacketLen(p) != b.PacketLen(p) {
						t.Fatalf("packet %d: length %d after SetPacketLen, %d after SetPacketLengths", p, a.PacketLen(p), b.PacketLen(p))
					}
				}
			}
			a.FreeMeta()
			b.FreeMeta()
		}
	}
}

// TestSetAllPacketLengthsOnePass: the one-segment path sets every packet's length, and a
// packet whose room is too small (or a length too long or negative for all) stops it with SetPacketLengths' error naming that packet,
// the packets before it set, the ones after it untouched.
func TestSetAllPacketLengthsOnePass(t *testing.T) {
	r := rand.New(rand.NewPCG(rand.Uint64(), 32))
	meta, err := NewMetaPool("rx", 2, 4, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{256, 300} {
		reg := testRegion(t, "r", 8, size)
		for round := 0; round < 200; round++ {
			n := 1 + r.IntN(20)
			offs := make([]uint64, n)
			for i := range offs {
				offs[i] = uint64(r.IntN(8) * size) // buffer starts: room = size
			}
			bad := -1
			if round%2 == 1 {
				bad = r.IntN(n)
				offs[bad] += uint64(size - 10) // room 10
			}
			b, ref := twinBursts(t, meta, reg, offs, false)
			l := 11 + r.IntN(size-11)
			if round%4 == 2 { // too long or negative for every packet: stops at the first
				l, bad = []int{size + 1 + r.IntN(3), -1 - r.IntN(3), math.MinInt}[r.IntN(3)], 0
			}
			err := b.SetAllPacketLengths(l)
			for i := 0; i < n; i++ {
				want := 0
				if bad < 0 || i < bad {
					want = l
				}
				if b.PacketLen(i) != want {
					t.Fatalf("size %d, bad packet %d: packet %d has length %d, want %d", size, bad, i, b.PacketLen(i), want)
				}
			}
			if bad < 0 && err != nil {
				t.Fatal(err)
			}
			if bad >= 0 {
				wantErr := ref.SetPacketLengths(bad, l)
				if err == nil || wantErr == nil || err.Error() != wantErr.Error() {
					t.Fatalf("packet %d too small: %v, want %v", bad, err, wantErr)
				}
			}
			b.FreeMeta()
			ref.FreeMeta()
		}
	}
}

// TestSetAllUDPv4Headers: the burst-wide header write leaves every packet's buffer and length
// exactly as SetUDPv4Header packet by packet does (random headers, payload lengths and
// earlier lengths, over garbage; power-of-two and other buffer sizes); a packet too small
// stops it with SetUDPv4Header's error; a bad payload length and a socket stream are refused.
func TestSetAllUDPv4Headers(t *testing.T) {
	r := rand.New(rand.NewPCG(rand.Uint64(), 33))
	for _, size := range []int{64, 100} {
		qa := testTxQueue(t, true, testRegion(t, "a", 16, size))
		qb := testTxQueue(t, true, testRegion(t, "b", 16, size))
		for round := 0; round < 300; round++ {
			n := 1 + r.IntN(8)
			a, err := qa.NewBurst(n)
			if err != nil {
				t.Fatal(err)
			}
			b, err := qb.NewBurst(n)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < n; i++ {
				ba, bb := a.SegmentBuffer(0, i), b.SegmentBuffer(0, i)
				for k := range ba {
					ba[k] = byte(r.Uint32())
				}
				copy(bb, ba)
				l := r.IntN(size + 1)
				if err := a.SetPacketLengths(i, l); err != nil {
					t.Fatal(err)
				}
				if err := b.SetPacketLengths(i, l); err != nil {
					t.Fatal(err)
				}
			}
			h := randUDPv4Header(t, r)
			payload := r.IntN(65535 - IPv4HeaderLen - UDPHeaderLen + 1)
			if err := a.SetAllUDPv4Headers(h, payload); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < n; i++ {
				if err := b.SetUDPv4Header(i, h, payload); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(a.SegmentBuffer(0, i), b.SegmentBuffer(0, i)) || a.PacketLen(i) != b.PacketLen(i) {
					t.Fatalf("size %d, packet %d of %d: burst-wide\n%x (length %d)\nper packet\n%x (length %d)", size, i, n, a.SegmentBuffer(0, i), a.PacketLen(i), b.SegmentBuffer(0, i), b.PacketLen(i))
				}
			}
			a.Free()
			b.Free()
		}
		h, _ := NewUDPv4Header(randMAC(r), nil, netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"), 1, 2)
		b, err := qa.NewBurst(2)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []int{-1, 65535 - IPv4HeaderLen - UDPHeaderLen + 1, math.MaxInt} {
			if err := b.SetAllUDPv4Headers(h, bad); !errors.Is(err, ErrInvalidParameter) {
				t.Fatalf("payload %d: %v", bad, err)
			}
		}
		b.Free()
	}
	h, _ := NewUDPv4Header(randMAC(r), nil, netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"), 1, 2)
	for _, size := range []int{32, 40} { // power of two and not, both < 42 bytes
		b, err := testTxQueue(t, true, testRegion(t, "small", 4, size)).NewBurst(2)
		if err != nil {
			t.Fatal(err)
		}
		want := b.SetUDPv4Header(0, h, 0)
		if err := b.SetAllUDPv4Headers(h, 0); err == nil || want == nil || err.Error() != want.Error() || !errors.Is(err, ErrInvalidParameter) {
			t.Fatalf("%d-byte buffers: %v, want %v", size, err, want)
		}
		b.Free()
	}
	sb, err := testTxQueue(t, false, testRegion(t, "sock", 2, 2048)).NewBurst(1)
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.SetAllUDPv4Headers(h, 0); !errors.Is(err, ErrNotSupported) {
		t.Errorf("socket stream: %v, want ErrNotSupported", err)
	}
	sb.Free()
}

// TestTakePackets: an RX burst takes a TX burst's packets without a copy, over many rounds
// between two metadata pools (the arrays change hands each time): offsets and lengths as
// sent in every segment, flow id 0, the given time, no freed segments, the bytes returned;
// RX bursts kept while later TX bursts are built and handed over stay intact (no array is
// shared between a kept burst and a reused one); the TX burst is left empty; a non-empty
// target copies instead (AppendPackets); every buffer comes back exactly once, and a warmed
// up round allocates nothing.
func TestTakePackets(t *testing.T) {
	r := rand.New(rand.NewPCG(rand.Uint64(), 34))
	for _, two := range []bool{false, true} {
		hdr := testRegion(t, "hdr", 256, 128)
		regs := []*Region{hdr}
		if two {
			regs = append(regs, testRegion(t, "data", 256, 1000))
		}
		q := testTxQueue(t, true, regs...)
		rxMeta, err := NewMetaPool("rx", 6, 4, false)
		if err != nil {
			t.Fatal(err)
		}
		type kept struct {
			b           *Burst
			offs        [][]uint64
			lens        [][]uint32
			at          int64
			appendFirst bool
		}
		var held []kept
		check := func(k kept) {
			t.Helper()
			skip := 0
			if k.appendFirst {
				skip = 1
			}
			if k.b.Len() != len(k.offs)+skip {
				t.Fatalf("kept burst has %d packets, want %d", k.b.Len(), len(k.offs)+skip)
			}
			for i := range k.offs {
				for s := range k.offs[i] {
					if k.b.SegmentOffset(s, i+skip) != k.offs[i][s] || uint32(k.b.SegmentLen(s, i+skip)) != k.lens[i][s] {
						t.Fatalf("packet %d segment %d: offset %d length %d, sent %d %d", i, s, k.b.SegmentOffset(s, i+skip), k.b.SegmentLen(s, i+skip), k.offs[i][s], k.lens[i][s])
					}
				}
				if ts, err := k.b.RxTimestamp(i + skip); err != nil || ts != k.at || k.b.FlowID(i+skip) != 0 {
					t.Fatalf("packet %d: time %d (%v), flow %d; want %d, 0", i, ts, err, k.b.FlowID(i+skip), k.at)
				}
			}
		}
		for round := 0; round < 300; round++ {
			n := 1 + r.IntN(20)
			b, err := q.NewBurst(n)
			if err != nil {
				t.Fatal(err)
			}
			k := kept{at: 1 + r.Int64N(1<<62), appendFirst: round%7 == 3}
			want := 0
			for i := 0; i < n; i++ {
				lens := make([]int, len(regs))
				for s := range lens {
					lens[s] = r.IntN(regs[s].BufSize + 1)
					want += lens[s]
				}
				if err := b.SetPacketLengths(i, lens...); err != nil {
					t.Fatal(err)
				}
				var o []uint64
				var l []uint32
				for s := range lens {
					o = append(o, b.SegmentOffset(s, i))
					l = append(l, uint32(lens[s]))
				}
				k.offs, k.lens = append(k.offs, o), append(k.lens, l)
				b.SetFlowID(i, r.Uint32()) // whatever the TX side left there does not carry over
			}
			if len(held) == 5 || (len(held) > 0 && r.IntN(3) == 0) {
				j := r.IntN(len(held))
				check(held[j])
				held[j].b.Free()
				held = append(held[:j], held[j+1:]...)
			}
			rb, err := rxMeta.Get(0, 1, regs, true, n)
			if err != nil {
				t.Fatal(err)
			}
			if k.appendFirst { // a packet already there: TakePackets copies
				idx := make([]uint64, len(regs))
				lens := make([]uint32, len(regs))
				for s, reg := range regs {
					bi, _ := reg.Get()
					idx[s] = uint64(bi) * uint64(reg.BufSize)
				}
				rb.AppendSegments(idx, lens, 0, k.at)
			}
			if got := rb.TakePackets(b, k.at); got != want {
				t.Fatalf("round %d: %d bytes, want %d", round, got, want)
			}
			if b.Len() != 0 {
				t.Fatalf("TX burst keeps %d packets", b.Len())
			}
			b.FreeMeta()
			k.b = rb
			check(k)
			held = append(held, k)
			for _, h := range held {
				check(h)
			}
		}
		for _, h := range held {
			check(h)
			h.b.Free()
		}
		for _, reg := range regs {
			if reg.Available() != reg.NumBufs {
				t.Fatalf("region %s: %d of %d buffers back", reg.Name, reg.Available(), reg.NumBufs)
			}
		}
		allocs := testing.AllocsPerRun(100, func() {
			b, err := q.NewBurst(8)
			if err != nil {
				t.Fatal(err)
			}
			rb, err := rxMeta.Get(0, 1, regs, true, 8)
			if err != nil {
				t.Fatal(err)
			}
			rb.TakePackets(b, 5)
			b.FreeMeta()
			rb.Free()
		})
		if allocs != 0 {
			t.Fatalf("%v allocations a round", allocs)
		}
	}
}

// TestAnyTimestampEveryPosition: a single send time at any position of bursts of every
// length up to 20 is seen, and none is reported for a burst without one.
func TestAnyTimestampEveryPosition(t *testing.T) {
	q := testTxQueue(t, true, testRegion(t, "d", 32, 64))
	for n := 1; n <= 20; n++ {
		b, err := q.NewBurst(n)
		if err != nil {
			t.Fatal(err)
		}
		if b.AnyTimestamp() {
			t.Fatalf("burst of %d: time reported, none set", n)
		}
		for k := 0; k < n; k++ {
			b.SetRxTimestamp(k, -1<<63)
			if !b.AnyTimestamp() {
				t.Fatalf("burst of %d: time on packet %d not seen", n, k)
			}
			b.SetRxTimestamp(k, 0)
		}
		b.Free()
	}
}

// TestUDPv4HeaderRoom: for packets that start inside their buffer (a received packet sent
// on), SetUDPv4Header and SetAllUDPv4Headers write the 42 header bytes exactly when the room
// to the buffer's end holds them, for every room of 64- and 100-byte buffers, and refuse
// otherwise without writing past the buffer.
func TestUDPv4HeaderRoom(t *testing.T) {
	h, err := NewUDPv4Header(randMAC(rand.New(rand.NewPCG(1, 2))), nil, netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"), 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := NewMetaPool("rx", 1, 4, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{64, 100} {
		reg := testRegion(t, "r", 4, size)
		for room := 1; room <= size; room++ {
			for _, all := range []bool{false, true} {
				clear(reg.Bytes())
				b, err := meta.Get(0, 0, []*Region{reg}, true, 1)
				if err != nil {
					t.Fatal(err)
				}
				o := uint64(size + size - room) // in buffer 1
				b.Append(o, 0, 0, 0)
				if all {
					err = b.SetAllUDPv4Headers(h, 0)
				} else {
					err = b.SetUDPv4Header(0, h, 0)
				}
				fits := room >= UDPPayloadOffset
				if fits != (err == nil) || (!fits && !errors.Is(err, ErrInvalidParameter)) {
					t.Fatalf("size %d, room %d, burst-wide %v: %v", size, room, all, err)
				}
				for k, c := range reg.Bytes() {
					inside := uint64(k) >= o && uint64(k) < o+UDPPayloadOffset
					if c != 0 && (!fits || !inside) {
						t.Fatalf("size %d, room %d, burst-wide %v: byte %d written", size, room, all, k)
					}
				}
				if fits && b.PacketLen(0) != UDPPayloadOffset {
					t.Fatalf("size %d, room %d: length %d", size, room, b.PacketLen(0))
				}
				b.FreeMeta()
			}
		}
	}
}

// TestResetEvensCapacities: bursts whose arrays append grew (AppendSegments one packet at a
// time, AppendPackets many at once: each array rounded to its own size class, so an int64
// array can end up smaller than a uint32 one) come out of the pool with every array at least
// as large as their flow array, the capacity Grow and NewBurst slice by — for every growth up
// to 70 packets, one and two segments. (TakePackets moves such arrays into TX bursts, whose
// NewBurst then sliced past a capacity: TestTakePackets caught it.)
func TestResetEvensCapacities(t *testing.T) {
	reg := testRegion(t, "r", 4, 64)
	for _, nsegs := range []int{1, 2} {
		regs := []*Region{reg, reg}[:nsegs]
		for n := 1; n <= 70; n++ {
			meta, err := NewMetaPool("rx", 2, 1, false)
			if err != nil {
				t.Fatal(err)
			}
			b, err := meta.Get(0, 0, regs, true, 1)
			if err != nil {
				t.Fatal(err)
			}
			src, err := meta.Get(0, 0, regs, true, 1)
			if err != nil {
				t.Fatal(err)
			}
			b.AppendSegments([]uint64{0, 0}[:nsegs], []uint32{1, 1}[:nsegs], 0, 0)
			for i := 0; i < n; i++ {
				src.AppendSegments([]uint64{0, 0}[:nsegs], []uint32{1, 1}[:nsegs], 0, 0)
			}
			b.AppendPackets(src, 5)
			b.FreeMeta()
			src.FreeMeta()
			for _, capacity := range []int{1, n, n + 1, n + 2} {
				var got [2]*Burst
				for k := range got {
					if got[k], err = meta.Get(0, 0, regs, true, capacity); err != nil {
						t.Fatal(err)
					}
					b := got[k]
					c := cap(b.flow)
					if c < capacity || cap(b.ts) < c || cap(b.freed) < c {
						t.Fatalf("%d segments, grown by %d, reset for %d: flow %d ts %d freed %d", nsegs, n, capacity, c, cap(b.ts), cap(b.freed))
					}
					for s := 0; s < nsegs; s++ {
						if cap(b.segs[s].off) < c || cap(b.segs[s].len) < c {
							t.Fatalf("%d segments, grown by %d, reset for %d: segment %d offsets %d lengths %d, flow %d", nsegs, n, capacity, s, cap(b.segs[s].off), cap(b.segs[s].len), c)
						}
					}
				}
				got[0].FreeMeta()
				got[1].FreeMeta()
			}
		}
	}
}
