package engine

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// TestAppendPackets moves a two-segment TX burst with random lengths onto an RX burst that
// already holds packets: the earlier packets stay as they were, the moved ones keep their
// offsets and lengths, get flow id 0, the given time and no freed segments, and the byte
// count returned is their sum. AnyTimestamp sees a single send time anywhere in a burst.
func TestAppendPackets(t *testing.T) {
	r := rand.New(rand.NewPCG(rand.Uint64(), 18))
	hdr := testRegion(t, "hdr", 64, 128)
	data := testRegion(t, "data", 64, 1000) // not a power of two
	q := testTxQueue(t, true, hdr, data)
	meta, err := NewMetaPool("rx", 2, 4, false)
	if err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 20; round++ {
		n := 1 + r.IntN(20)
		b, err := q.NewBurst(n)
		if err != nil {
			t.Fatal(err)
		}
		if b.AnyTimestamp() {
			t.Fatal("a new TX burst has a send time")
		}
		want := 0
		for i := 0; i < n; i++ {
			h, d := r.IntN(129), r.IntN(1001)
			if err := b.SetPacketLengths(i, h, d); err != nil {
				t.Fatal(err)
			}
			want += h + d
		}
		if n > 1 {
			k := r.IntN(n)
			b.SetRxTimestamp(k, 5)
			if !b.AnyTimestamp() {
				t.Fatalf("send time on packet %d of %d not seen", k, n)
			}
			b.SetRxTimestamp(k, 0)
		}
		rb, err := meta.Get(0, 1, []*Region{hdr, data}, true, 4) // smaller than n: it grows
		if err != nil {
			t.Fatal(err)
		}
		// One packet already there, in buffers of its own.
		hi, _ := hdr.Get()
		di, _ := data.Get()
		rb.AppendSegments([]uint64{uint64(hi) * 128, uint64(di) * 1000}, []uint32{3, 4}, 9, 77)
		if got := rb.AppendPackets(b, 1234); got != want {
			t.Fatalf("AppendPackets returned %d bytes, want %d", got, want)
		}
		if rb.Len() != n+1 || rb.FlowID(0) != 9 || rb.PacketLen(0) != 7 {
			t.Fatalf("first packet changed: len %d flow %d bytes %d", rb.Len(), rb.FlowID(0), rb.PacketLen(0))
		}
		if ts, _ := rb.RxTimestamp(0); ts != 77 {
			t.Fatalf("first packet's time %d", ts)
		}
		for i := 0; i < n; i++ {
			for s := 0; s < 2; s++ {
				if rb.SegmentOffset(s, i+1) != b.SegmentOffset(s, i) || rb.SegmentLen(s, i+1) != b.SegmentLen(s, i) {
					t.Fatalf("packet %d segment %d: offset %d len %d, sent %d %d", i, s, rb.SegmentOffset(s, i+1), rb.SegmentLen(s, i+1), b.SegmentOffset(s, i), b.SegmentLen(s, i))
				}
			}
			if ts, err := rb.RxTimestamp(i + 1); err != nil || ts != 1234 || rb.FlowID(i+1) != 0 {
				t.Fatalf("packet %d: time %d (%v) flow %d", i, ts, err, rb.FlowID(i+1))
			}
		}
		if rb.TotalBytes() != want+7 {
			t.Fatalf("total %d, want %d", rb.TotalBytes(), want+7)
		}
		b.FreeMeta() // the buffers now belong to rb
		rb.Free()
		if hdr.Available() != 64 || data.Available() != 64 {
			t.Fatalf("after Free: hdr %d data %d of 64", hdr.Available(), data.Available())
		}
	}
}

// TestSetPacketLengthsRoom: a length is accepted up to the end of the packet's buffer and
// refused one byte beyond, for power-of-two and other buffer sizes, for packets that start at
// their buffer's start (TX) and inside it (a shared receive buffer); negative lengths, bad
// indices and a wrong number of lengths are refused and change nothing.
func TestSetPacketLengthsRoom(t *testing.T) {
	for _, size := range []int{128, 1000} {
		reg := testRegion(t, "r", 8, size)
		meta, err := NewMetaPool("rx", 1, 4, false)
		if err != nil {
			t.Fatal(err)
		}
		b, err := meta.Get(0, 0, []*Region{reg}, true, 4)
		if err != nil {
			t.Fatal(err)
		}
		idx, _ := reg.Get()
		at := []int{0, 1, size / 2, size - 1}
		for _, o := range at {
			b.Append(uint64(idx)*uint64(size)+uint64(o), 1, 0, 0)
		}
		for i, o := range at {
			room := size - o
			if err := b.SetPacketLengths(i, room); err != nil || b.SegmentLen(0, i) != room {
				t.Fatalf("size %d, packet at %d: length %d (the room) refused: %v", size, o, room, err)
			}
			for _, bad := range []int{room + 1, -1} {
				if err := b.SetPacketLengths(i, bad); !errors.Is(err, ErrInvalidParameter) || b.SegmentLen(0, i) != room {
					t.Fatalf("size %d, packet at %d: length %d: %v, length now %d", size, o, bad, err, b.SegmentLen(0, i))
				}
			}
		}
		for _, i := range []int{-1, len(at), 1 << 40} {
			if err := b.SetPacketLengths(i, 1); !errors.Is(err, ErrInvalidParameter) {
				t.Fatalf("index %d: %v", i, err)
			}
		}
		if err := b.SetPacketLengths(0, 1, 1); !errors.Is(err, ErrInvalidParameter) {
			t.Fatalf("two lengths for one segment: %v", err)
		}
		b.FreeMeta()
		reg.Put(idx)
	}
}
