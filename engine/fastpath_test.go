package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/daqiri-go/daqiri/config"
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
			for _, bad := range []int{room + 1, -1, math.MinInt, math.MaxInt, size + 1<<32} {
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
		// The same metadata as a two-segment burst: one length is refused (the one-segment
		// fast path must not carry over from the earlier Reset), two are checked each
		// against its own buffer.
		b, err = meta.Get(0, 0, []*Region{reg, reg}, true, 4)
		if err != nil {
			t.Fatal(err)
		}
		b.AppendSegments([]uint64{uint64(idx) * uint64(size), uint64(idx)*uint64(size) + uint64(size-2)}, []uint32{0, 0}, 0, 0)
		if err := b.SetPacketLengths(0, 1); !errors.Is(err, ErrInvalidParameter) {
			t.Fatalf("one length for two segments: %v", err)
		}
		if err := b.SetPacketLengths(0, size, 3); !errors.Is(err, ErrInvalidParameter) {
			t.Fatalf("second segment's length beyond its buffer: %v", err)
		}
		if err := b.SetPacketLengths(0, size, 2); err != nil || b.PacketLen(0) != size+2 {
			t.Fatalf("two segments at their rooms: %v, length %d", err, b.PacketLen(0))
		}
		b.FreeMeta()
		reg.Put(idx)
	}
}

// refHeaders writes packet headers the way the header helpers are specified, byte by byte
// with the checksum read back from the written header: the reference the helpers' word
// stores and computed checksum are held to.
func refHeaders(dst, src net.HardwareAddr, payloadLen int, proto uint8, s4, d4 netip.Addr, sp, dp uint16, udpLen int) []byte {
	h := make([]byte, UDPPayloadOffset)
	copy(h[0:6], dst)
	copy(h[6:12], src) // nil: stays zero
	h[12], h[13] = 0x08, 0x00
	ip := h[EthHeaderLen : EthHeaderLen+IPv4HeaderLen]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(IPv4HeaderLen+payloadLen))
	ip[6] = 0x40
	ip[8], ip[9] = 64, proto
	a, b := s4.As4(), d4.As4()
	copy(ip[12:], a[:])
	copy(ip[16:], b[:])
	binary.BigEndian.PutUint16(ip[10:], IPv4Checksum(ip))
	u := h[EthHeaderLen+IPv4HeaderLen:]
	binary.BigEndian.PutUint16(u[0:], sp)
	binary.BigEndian.PutUint16(u[2:], dp)
	binary.BigEndian.PutUint16(u[4:], uint16(UDPHeaderLen+udpLen))
	return h
}

// garbageBurst is a one-packet burst of q whose buffer holds random bytes.
func garbageBurst(t *testing.T, q *TxQueue, r *rand.Rand) *Burst {
	t.Helper()
	b, err := q.NewBurst(1)
	if err != nil {
		t.Fatal(err)
	}
	buf := b.SegmentBuffer(0, 0)
	for k := range buf {
		buf[k] = byte(r.Uint32())
	}
	return b
}

// randMAC is a random MAC address.
func randMAC(r *rand.Rand) net.HardwareAddr {
	m := make(net.HardwareAddr, 6)
	for k := range m {
		m[k] = byte(r.Uint32())
	}
	return m
}

// randUDPv4Header is a template of random addresses and ports, its source MAC nil half the
// time (the port's own address then).
func randUDPv4Header(t *testing.T, r *rand.Rand) *UDPv4Header {
	t.Helper()
	var a4, b4 [4]byte
	binary.BigEndian.PutUint32(a4[:], r.Uint32())
	binary.BigEndian.PutUint32(b4[:], r.Uint32())
	src := randMAC(r)
	if r.IntN(2) == 0 {
		src = nil
	}
	h, err := NewUDPv4Header(randMAC(r), src, netip.AddrFrom4(a4), netip.AddrFrom4(b4), uint16(r.Uint32()), uint16(r.Uint32()))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestHeaderHelpersRandom writes Ethernet, IPv4 and UDP headers with random fields (lengths
// up to the limits, every protocol number, nil and given source MACs) over buffers full of
// garbage and compares every byte with the reference, the checksum verifying; it also checks
// the order of the helpers' errors: a socket stream, a bad index, a buffer too small.
func TestHeaderHelpersRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(rand.Uint64(), 19))
	// Power-of-two buffers take the helpers' inlined path, others SegmentBuffer.
	qs := []*TxQueue{testTxQueue(t, true, testRegion(t, "d", 8, 64)), testTxQueue(t, true, testRegion(t, "d100", 8, 100))}
	for round := 0; round < 2000; round++ {
		b := garbageBurst(t, qs[round%2], r)
		dst, src := randMAC(r), randMAC(r)
		if r.IntN(2) == 0 {
			src = nil
		}
		ipLen := r.IntN(65535 - IPv4HeaderLen + 1)
		if r.IntN(4) == 0 {
			ipLen = []int{0, 65535 - IPv4HeaderLen}[r.IntN(2)]
		}
		udpLen := r.IntN(65535 - UDPHeaderLen + 1)
		proto := uint8(r.Uint32())
		var a4, b4 [4]byte
		binary.BigEndian.PutUint32(a4[:], r.Uint32())
		binary.BigEndian.PutUint32(b4[:], r.Uint32())
		s4, d4 := netip.AddrFrom4(a4), netip.AddrFrom4(b4)
		sp, dp := uint16(r.Uint32()), uint16(r.Uint32())
		if err := b.SetEthHeader(0, dst, src); err != nil {
			t.Fatal(err)
		}
		if err := b.SetIPv4Header(0, ipLen, proto, s4, d4); err != nil {
			t.Fatal(err)
		}
		if err := b.SetUDPHeader(0, udpLen, sp, dp); err != nil {
			t.Fatal(err)
		}
		want := refHeaders(dst, src, ipLen, proto, s4, d4, sp, dp, udpLen)
		if got := b.Packet(0); !bytes.Equal(got, want) {
			t.Fatalf("round %d: headers\n got %x\nwant %x", round, got, want)
		}
		if IPv4Checksum(b.Packet(0)[EthHeaderLen:EthHeaderLen+IPv4HeaderLen]) != 0 {
			t.Fatalf("round %d: checksum does not verify", round)
		}
		b.Free()
	}

	// Errors, in the order the helpers check them.
	small := testRegion(t, "small", 2, 30) // room for Ethernet, not for IPv4
	b, err := testTxQueue(t, true, small).NewBurst(1)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	s4, d4 := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	mac := net.HardwareAddr{2, 0, 0, 0, 0, 1}
	if err := b.SetEthHeader(0, mac, nil); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"ipv4 beyond buffer": b.SetIPv4Header(0, 8, 17, s4, d4),
		"udp beyond buffer":  b.SetUDPHeader(0, 0, 1, 2),
		"eth bad index":      b.SetEthHeader(1, mac, nil),
		"ipv4 bad index":     b.SetIPv4Header(-1, 8, 17, s4, d4),
		"udp bad index":      b.SetUDPHeader(5, 0, 1, 2),
		"short mac":          b.SetEthHeader(0, mac[:5], nil),
		"short src mac":      b.SetEthHeader(0, mac, mac[:4]),
		"negative udp":       b.SetUDPHeader(0, -1, 1, 2),
	} {
		if !errors.Is(err, ErrInvalidParameter) {
			t.Errorf("%s: %v, want ErrInvalidParameter", name, err)
		}
	}
	sock := testRegion(t, "sock", 2, 2048)
	sb, err := testTxQueue(t, false, sock).NewBurst(1)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Free()
	for name, err := range map[string]error{
		"eth":                  sb.SetEthHeader(0, mac, nil),
		"ipv4":                 sb.SetIPv4Header(0, 8, 17, s4, d4),
		"udp":                  sb.SetUDPHeader(0, 0, 1, 2),
		"udp, bad index first": sb.SetUDPHeader(9, 0, 1, 2),
	} {
		if !errors.Is(err, ErrNotSupported) {
			t.Errorf("socket stream %s: %v, want ErrNotSupported", name, err)
		}
	}
}

// TestUDPv4HeaderTemplate: SetUDPv4Header writes the same bytes as the three helpers (the
// reference) for random addresses, ports and payload lengths up to the limit, over garbage,
// the checksum verifying; bad arguments and buffers too small or not addressable are refused.
func TestUDPv4HeaderTemplate(t *testing.T) {
	r := rand.New(rand.NewPCG(rand.Uint64(), 23))
	qs := []*TxQueue{testTxQueue(t, true, testRegion(t, "d", 8, 64)), testTxQueue(t, true, testRegion(t, "d100", 8, 100))}
	for round := 0; round < 2000; round++ {
		b := garbageBurst(t, qs[round%2], r)
		dst, src := randMAC(r), randMAC(r)
		if r.IntN(2) == 0 {
			src = nil
		}
		udpLen := r.IntN(65535 - IPv4HeaderLen - UDPHeaderLen + 1)
		if r.IntN(4) == 0 {
			udpLen = []int{0, 65535 - IPv4HeaderLen - UDPHeaderLen}[r.IntN(2)]
		}
		var a4, b4 [4]byte
		binary.BigEndian.PutUint32(a4[:], r.Uint32())
		binary.BigEndian.PutUint32(b4[:], r.Uint32())
		s4, d4 := netip.AddrFrom4(a4), netip.AddrFrom4(b4)
		sp, dp := uint16(r.Uint32()), uint16(r.Uint32())
		h, err := NewUDPv4Header(dst, src, s4, d4, sp, dp)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.SetUDPv4Header(0, h, udpLen); err != nil {
			t.Fatal(err)
		}
		want := refHeaders(dst, src, UDPHeaderLen+udpLen, 17, s4, d4, sp, dp, udpLen)
		if got := b.Packet(0); !bytes.Equal(got, want) {
			t.Fatalf("round %d: headers\n got %x\nwant %x", round, got, want)
		}
		if IPv4Checksum(b.Packet(0)[EthHeaderLen:EthHeaderLen+IPv4HeaderLen]) != 0 {
			t.Fatalf("round %d: checksum does not verify", round)
		}
		b.Free()
	}
	s4, d4 := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	mac := net.HardwareAddr{2, 0, 0, 0, 0, 1}
	for name, f := range map[string]func() (*UDPv4Header, error){
		"short mac":     func() (*UDPv4Header, error) { return NewUDPv4Header(mac[:5], nil, s4, d4, 1, 2) },
		"short src mac": func() (*UDPv4Header, error) { return NewUDPv4Header(mac, mac[:4], s4, d4, 1, 2) },
		"ipv6 source":   func() (*UDPv4Header, error) { return NewUDPv4Header(mac, nil, netip.MustParseAddr("::1"), d4, 1, 2) },
		"zero address":  func() (*UDPv4Header, error) { return NewUDPv4Header(mac, nil, s4, netip.Addr{}, 1, 2) },
	} {
		if h, err := f(); h != nil || !errors.Is(err, ErrInvalidParameter) {
			t.Errorf("%s: %v, want ErrInvalidParameter", name, err)
		}
	}
	h, err := NewUDPv4Header(mac, nil, s4, d4, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	b, err := testTxQueue(t, true, testRegion(t, "small", 2, 40)).NewBurst(1) // 40 < 42 bytes
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	ok, err := qs[0].NewBurst(1)
	if err != nil {
		t.Fatal(err)
	}
	defer ok.Free()
	for name, err := range map[string]error{
		"beyond buffer":    b.SetUDPv4Header(0, h, 0),
		"bad index":        ok.SetUDPv4Header(1, h, 0),
		"negative index":   ok.SetUDPv4Header(-1, h, 0),
		"negative payload": ok.SetUDPv4Header(0, h, -1),
		"payload too long": ok.SetUDPv4Header(0, h, 65535-IPv4HeaderLen-UDPHeaderLen+1),
	} {
		if !errors.Is(err, ErrInvalidParameter) {
			t.Errorf("%s: %v, want ErrInvalidParameter", name, err)
		}
	}
	sb, err := testTxQueue(t, false, testRegion(t, "sock", 2, 2048)).NewBurst(1)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Free()
	if err := sb.SetUDPv4Header(0, h, 0); !errors.Is(err, ErrNotSupported) {
		t.Errorf("socket stream: %v, want ErrNotSupported", err)
	}
}

// TestHeaderHelpersDeviceMemory: on a region without a CPU view the helpers refuse, for
// power-of-two buffers (the inlined path) and others alike, and nothing is written.
func TestHeaderHelpersDeviceMemory(t *testing.T) {
	for _, size := range []int{64, 100} {
		r, err := NewRegion(&config.MemoryRegion{Name: "gpu", Kind: config.KindDevice, NumBufs: 4, BufSize: size}, devMem{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := testTxQueue(t, true, r).NewBurst(2)
		if err != nil {
			t.Fatal(err)
		}
		s4 := netip.MustParseAddr("10.0.0.1")
		for name, err := range map[string]error{
			"eth":  b.SetEthHeader(1, net.HardwareAddr{1, 2, 3, 4, 5, 6}, nil),
			"ipv4": b.SetIPv4Header(1, 8, 17, s4, s4),
			"ipv6": b.SetIPv6Header(1, 8, 17, netip.IPv6Loopback(), netip.IPv6Loopback()),
			"udp":  b.SetUDPHeader(1, 0, 1, 2),
		} {
			if !errors.Is(err, ErrInvalidParameter) || !strings.Contains(err.Error(), "CPU-addressable") {
				t.Errorf("buffer size %d, %s on device memory: %v", size, name, err)
			}
		}
		if b.PacketLen(1) != 0 {
			t.Errorf("buffer size %d: packet grew to %d bytes", size, b.PacketLen(1))
		}
		b.Free()
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
