package datapath

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// TestBitsSetIsFieldSet checks the datapath's field writer against prm.Field.Set on random
// positions, widths (1 to 80 bits), values and buffers, including fields beyond the buffer.
func TestBitsSetIsFieldSet(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 20000 {
		n := 1 + r.IntN(24)
		a := make([]byte, n)
		for i := range a {
			a[i] = byte(r.Uint32())
		}
		b := append([]byte(nil), a...)
		width := 1 + r.Uint32N(80) // wider than 64 bits too: their last 64 bits are written
		off := r.Uint32N(uint32(n)*8 + 16)
		v := r.Uint64()
		prm.Field{Off: off, Width: width}.Set(a, v)
		fieldPos{off, width}.set(b, v)
		if !bytes.Equal(a, b) {
			t.Fatalf("field at bit %d, %d bits, value %#x in %d bytes: fieldPos.set gives %x, prm.Field.Set %x", off, width, v, n, b, a)
		}
	}
}

// frameSum is the sum rxChecksWith takes for f: its csum16 from the first byte, marked.
func frameSum(f []byte) uint32 { return csum16(0, f) | wholeSum }

// csum16Ref is RFC 1071's sum word by word, the definition csum16 computes faster.
func csum16Ref(sum uint32, b []byte) uint32 {
	for len(b) >= 2 {
		sum += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		sum += uint32(b[0]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return sum
}

// TestCsum16 checks the checksum against the word-by-word definition on random data of
// every length up to a jumbo frame's, with random starting sums, all-zero and all-0xff
// data (the sums at the edges of the ones' complement range), in both of its forms: the Go
// add-with-carry bulk and, where the CPU has AVX2, the vector bulk (csum16 itself is one of
// them); and on random lengths up to 200,000 bytes, past the vector form's 64 KiB blocks.
func TestCsum16(t *testing.T) {
	forms := []bool{false}
	if hasVecSum {
		forms = append(forms, true)
	} else {
		t.Log("no AVX2 form on this CPU or build: the Go form only")
	}
	for _, vec := range forms {
		r := rand.New(rand.NewPCG(7, 8))
		for n := 0; n < 2100; n++ {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			for _, start := range []uint32{0, r.Uint32N(1 << 17), 0xffff} {
				if got, want := csum16With(start, b, vec), csum16Ref(start, b); got != want {
					t.Fatalf("vector %v: %d bytes from sum %#x: %#x, want %#x", vec, n, start, got, want)
				}
			}
			if got, want := csum16With(0, make([]byte, n), vec), uint32(0); got != want {
				t.Fatalf("vector %v: %d zero bytes: %#x, want 0", vec, n, got)
			}
			ff := bytes.Repeat([]byte{0xff}, n)
			if got, want := csum16With(0, ff, vec), csum16Ref(0, ff); got != want {
				t.Fatalf("vector %v: %d bytes of 0xff: %#x, want %#x", vec, n, got, want)
			}
			if n <= 200 { // csumShort, the RX checks' form for headers (csum16 past 64 bytes)
				for _, d := range [][]byte{b, ff, make([]byte, n)} {
					if got, want := csumShort(d), csum16Ref(0, d); got != want {
						t.Fatalf("csumShort of %d bytes: %#x, want %#x", n, got, want)
					}
				}
			}
		}
		for i := range 40 {
			b := make([]byte, 2100+r.IntN(200000))
			fill := byte(0xff) // the largest words first: the vector lanes' bound
			if i > 0 {
				fill = 0
			}
			for j := range b {
				b[j] = fill
				if i > 0 {
					b[j] = byte(r.Uint32())
				}
			}
			start := r.Uint32N(1 << 17)
			want := start
			for k := 0; k < len(b); k += 2000 { // even pieces: the reference's sum stays small
				want = csum16Ref(want, b[k:min(k+2000, len(b))])
			}
			if got := csum16With(start, b, vec); got != want {
				t.Fatalf("vector %v: %d bytes from sum %#x: %#x, want %#x", vec, len(b), start, got, want)
			}
		}
	}
	if got, want := csum16(0x1234, bytes.Repeat([]byte{0xab, 0xcd}, 600)), csum16With(0x1234, bytes.Repeat([]byte{0xab, 0xcd}, 600), hasVecSum); got != want {
		t.Fatalf("csum16 %#x, its form %#x", got, want)
	}
}

// BenchmarkCsum16 is csum16 over a two-port run's 1064-byte frame, in cache.
func BenchmarkCsum16(b *testing.B) {
	f := make([]byte, 1064)
	for i := range f {
		f[i] = byte(i * 7)
	}
	for _, vec := range []bool{false, true} {
		if vec && !hasVecSum {
			continue
		}
		b.Run(map[bool]string{false: "go", true: "avx2"}[vec], func(b *testing.B) {
			b.SetBytes(int64(len(f)))
			for i := 0; i < b.N; i++ {
				csum16With(0, f, vec)
			}
		})
	}
}

// TestRXChecks checks the one-pass RX checks against l3OK, l4OK and the sum from the IP
// header on, computed separately, on UDP, TCP and IPv6 frames with Ethernet padding of odd
// and even length, bad checksums, truncated datagrams and random corruptions; and the same
// checks given the frame's sum (rxChecksWith, frameSum: as the RX write computes it), also on frames
// whose datagram bytes sum to either of ones' complement's zeros (0xffff, or all zero), where
// the difference of sums is ambiguous, and with a sum from another frame marked unknown.
func TestRXChecks(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	base := [][]byte{
		udpFrame([4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1, 2, 1000, 3),
		udpFrame([4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1, 2, 7, 3),
		udpFrame([4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1, 2, 0, 3),
	}
	tcp := udpFrame([4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1, 2, 41, 3)
	tcp[14+9] = protoTCP
	tcp[14+20+12] = 5 << 4
	h := parseL2(tcp, 0)
	fillChecksums(tcp, &h, true, true)
	v6 := make([]byte, 14+40+8+33)
	binary.BigEndian.PutUint16(v6[12:], etherIPv6)
	v6[14] = 6 << 4
	binary.BigEndian.PutUint16(v6[14+4:], 8+33)
	v6[14+6], v6[14+7] = protoUDP, 64
	for i := 14 + 8; i < len(v6); i++ {
		v6[i] = byte(i * 7)
	}
	binary.BigEndian.PutUint16(v6[14+40+4:], 8+33)
	h = parseL2(v6, 0)
	fillChecksums(v6, &h, false, true)
	base = append(base, tcp, v6)
	var ambiguous, zero int
	for range 40000 {
		f := append([]byte(nil), base[r.IntN(len(base))]...)
		switch r.IntN(6) {
		case 0: // Ethernet padding
			for k := r.IntN(9); k > 0; k-- {
				f = append(f, byte(r.Uint32()))
			}
		case 1: // corrupt a byte
			f[14+r.IntN(len(f)-14)] ^= byte(1 + r.IntN(255))
		case 2: // cut the frame short
			f = f[:14+r.IntN(len(f)-14)]
		case 3, 4: // the datagram's bytes sum to 0xffff, or are all zero
			if h := parseL2(f, 0); h.l4 >= 0 && h.proto == protoUDP {
				end := ipPayloadEnd(f, &h)
				if end-h.l4 >= 10 && (end-h.l4)%2 == 0 {
					d := f[h.l4:end]
					if r.IntN(2) == 0 {
						clear(d)
						zero++
					} else {
						d[8], d[9] = 0, 0
						binary.BigEndian.PutUint16(d[8:], uint16(0xffff-csum16(0, d)))
						if csum16(0, d) != 0xffff {
							t.Fatalf("datagram %x: sum %#x, want 0xffff", d, csum16(0, d))
						}
						ambiguous++
					}
				}
			}
		}
		h := parseL2(f, 0)
		l3, l4, sum := rxChecks(f, &h)
		l3w, l4w, sumw := rxChecksWith(f, &h, frameSum(f))
		other := frameSum(base[r.IntN(len(base))]) &^ wholeSum
		l3u, l4u, sumu := rxChecksWith(f, &h, other)
		wantL3 := l3OK(f, &h)
		wantL4 := wantL3 && l4OK(f, &h)
		var wantSum uint32
		if h.l3 >= 0 {
			wantSum = csum16(0, f[h.l3:])
		}
		if l3 != wantL3 || l4 != wantL4 || sum != wantSum {
			t.Fatalf("frame %x: rxChecks %v %v %#x, want %v %v %#x", f, l3, l4, sum, wantL3, wantL4, wantSum)
		}
		if l3w != wantL3 || l4w != wantL4 || sumw != wantSum {
			t.Fatalf("frame %x: rxChecksWith its sum %v %v %#x, want %v %v %#x", f, l3w, l4w, sumw, wantL3, wantL4, wantSum)
		}
		if l3u != wantL3 || l4u != wantL4 || sumu != wantSum {
			t.Fatalf("frame %x: rxChecksWith an unmarked sum %v %v %#x, want %v %v %#x", f, l3u, l4u, sumu, wantL3, wantL4, wantSum)
		}
	}
	if ambiguous < 1000 || zero < 1000 {
		t.Fatalf("%d datagrams summing to 0xffff and %d all-zero ones: too few to test the ambiguous sums", ambiguous, zero)
	}
}

// TestL4Sum checks l4Sum with the frame's sum against csum16 over the range, on random bytes
// with random bounds of either parity, and on ranges summing to 0xffff or all zero.
func TestL4Sum(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for range 20000 {
		f := make([]byte, 1+r.IntN(1600))
		for i := range f {
			f[i] = byte(r.Uint32())
		}
		a := r.IntN(len(f) + 1)
		b := a + r.IntN(len(f)-a+1)
		switch r.IntN(4) {
		case 0:
			clear(f[a:b])
		case 1:
			if b-a >= 2 && a%2 == 0 && (b-a)%2 == 0 {
				f[a], f[a+1] = 0, 0
				binary.BigEndian.PutUint16(f[a:], uint16(0xffff-csum16(0, f[a:b])))
			}
		}
		want := csum16(0, f[a:b])
		if got := l4Sum(f, a, b, frameSum(f), csum16(0, f[:a])); got != want {
			t.Fatalf("%d bytes, range [%d,%d): l4Sum %#x, want %#x", len(f), a, b, got, want)
		}
		if got := l4Sum(f, a, b, 0, csum16(0, f[:a])); got != want {
			t.Fatalf("%d bytes, range [%d,%d), no frame sum: l4Sum %#x, want %#x", len(f), a, b, got, want)
		}
	}
}

// TestSameShared checks the masked CQE comparison against comparing commonMask copies, for
// every mini-CQE format, on random CQEs that differ in a random byte or not at all.
func TestSameShared(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, f := range []MiniFormat{MiniHash, MiniCsum, MiniFlowTag, MiniCsumStride} {
		m := sharedBytes(f)
		for range 5000 {
			var a [prm.CQESize]byte
			for i := range a {
				a[i] = byte(r.Uint32())
			}
			b := a
			if r.IntN(4) > 0 {
				b[r.IntN(len(b))] ^= byte(1 + r.IntN(255))
			}
			x, y := commonMask(f, &a), commonMask(f, &b)
			if got, want := sameShared(&m, &a, &b), x == y; got != want {
				t.Fatalf("format %d, %x vs %x: sameShared %v, commonMask copies equal %v", f, a, b, got, want)
			}
		}
	}
}

// setLyr24Ref is setLyr24's definition, field by field through the PRM layout.
func setLyr24Ref(b []byte, h *headers) {
	l := &prm.FTEMatchSetLyr24 // a pointer: the layout is a large struct of fields
	pos(l.SMAC4716).set(b, uint64(binary.BigEndian.Uint32(h.smac[:])))
	pos(l.SMAC150).set(b, uint64(binary.BigEndian.Uint16(h.smac[4:])))
	pos(l.DMAC4716).set(b, uint64(binary.BigEndian.Uint32(h.dmac[:])))
	pos(l.DMAC150).set(b, uint64(binary.BigEndian.Uint16(h.dmac[4:])))
	pos(l.Ethertype).set(b, uint64(h.ethertype))
	if len(h.vlans) > 0 {
		v := h.vlans[0]
		if v.tpid == etherSVLAN {
			pos(l.SVLANTag).set(b, 1)
		} else {
			pos(l.CVLANTag).set(b, 1)
		}
		pos(l.FirstPrio).set(b, uint64(v.tci>>13))
		pos(l.FirstCFI).set(b, uint64(v.tci>>12&1))
		pos(l.FirstVid).set(b, uint64(v.tci&0xfff))
	}
	if h.l3 < 0 {
		return
	}
	pos(l.IPVersion).set(b, uint64(h.ipVersion))
	pos(l.IPProtocol).set(b, uint64(h.proto))
	pos(l.IPDSCP).set(b, uint64(h.dscp))
	pos(l.IPECN).set(b, uint64(h.ecn))
	pos(l.TTLHoplimit).set(b, uint64(h.ttl))
	if h.frag {
		pos(l.Frag).set(b, 1)
	}
	if h.ipVersion == 4 {
		pos(l.IPv4Ihl).set(b, uint64(h.ihl))
	}
	copy(l.SrcIPv4SrcIPv6.Slice(b), h.src[:])
	copy(l.DstIPv4DstIPv6.Slice(b), h.dst[:])
	if h.l4 < 0 {
		return
	}
	switch h.proto {
	case protoTCP:
		pos(l.TCPSport).set(b, uint64(h.sport))
		pos(l.TCPDport).set(b, uint64(h.dport))
		pos(l.TCPFlags).set(b, uint64(h.tcpFlags))
	case protoUDP:
		pos(l.UDPSport).set(b, uint64(h.sport))
		pos(l.UDPDport).set(b, uint64(h.dport))
	}
}

// TestSetLyr24 holds setLyr24's direct byte writes to the field-by-field definition on
// random headers: with and without VLAN tags (either TPID), L3 and L4, TCP, UDP and other
// protocols, IPv4 and IPv6, and values wider than their fields (the fields keep their low
// bits).
func TestSetLyr24(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for i := 0; i < 20000; i++ {
		var h headers
		for j := range h.smac {
			h.smac[j], h.dmac[j] = byte(r.Uint32()), byte(r.Uint32())
		}
		h.ethertype = uint16(r.Uint32())
		for range r.IntN(3) {
			tpid := uint16(etherSVLAN)
			if r.IntN(2) == 0 {
				tpid = 0x8100
			}
			h.vlans = append(h.vlans, vlanTag{tpid: tpid, tci: uint16(r.Uint32())})
		}
		h.l3, h.l4 = -1, -1
		if r.IntN(4) > 0 {
			h.l3 = 14
			h.ipVersion = []uint8{4, 6, uint8(r.Uint32())}[r.IntN(3)]
			h.ihl, h.dscp, h.ecn, h.ttl = uint8(r.Uint32()), uint8(r.Uint32()), uint8(r.Uint32()), uint8(r.Uint32())
			h.proto = []uint8{protoTCP, protoUDP, uint8(r.Uint32())}[r.IntN(3)]
			h.frag = r.IntN(2) == 0
			for j := range h.src {
				h.src[j], h.dst[j] = byte(r.Uint32()), byte(r.Uint32())
			}
			if r.IntN(4) > 0 {
				h.l4 = 34
				h.sport, h.dport, h.tcpFlags = uint16(r.Uint32()), uint16(r.Uint32()), uint16(r.Uint32())
			}
		}
		got, want := make([]byte, 64), make([]byte, 64)
		setLyr24(got, &h)
		setLyr24Ref(want, &h)
		if !bytes.Equal(got, want) {
			t.Fatalf("headers %+v:\n got %x\nwant %x", h, got, want)
		}
	}
}

// TestFieldPosGetIsFieldGet holds fieldPos.get to prm.Field.Get on random fields (widths 1-80,
// any bit offset, fields running past the buffer) over random bytes.
func TestFieldPosGetIsFieldGet(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 3))
	for range 50000 {
		n := 1 + r.IntN(24)
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		width := 1 + r.Uint32N(80)
		off := r.Uint32N(uint32(n)*8 + 16)
		if r.IntN(4) == 0 {
			off &^= 7 // byte-aligned fields, the fast paths
			width = []uint32{8, 16, 32, 64}[r.IntN(4)]
		}
		want := prm.Field{Off: off, Width: width}.Get(b)
		if got := (fieldPos{off, width}).get(b); got != want {
			t.Fatalf("field at bit %d, %d bits in %x: fieldPos.get gives %#x, prm.Field.Get %#x", off, width, b, got, want)
		}
	}
}

// TestCQEFieldOffsets holds the CQE and mini-CQE field offsets the datapath stores and loads
// directly (cqefields.go) to the prm definitions: the same byte, a byte-aligned field, the
// width the store or load at that offset has; and a store through put8..put64 gives the bytes
// prm.Field.Set gives, for random values.
func TestCQEFieldOffsets(t *testing.T) {
	for _, c := range []struct {
		name  string
		off   int
		width uint32
		f     prm.Field
	}{
		{"wqe_id", cqeWQEID, 16, prm.CQE64.WQEID},
		{"rss_hash_result", cqeRSSHash, 32, prm.CQE64.RSSHashResult},
		{"rss_hash_type", cqeRSSHashType, 8, prm.CQE64.RSSHashType},
		{"check_sum", cqeChecksum, 16, prm.CQE64.Checksum},
		{"flags_rqpn", cqeFlagsRQPN, 32, prm.CQE64.FlagsRQPN},
		{"hds_ip_ext", cqeHdsIPExt, 8, prm.CQE64.HdsIPExt},
		{"byte_cnt", cqeByteCnt, 32, prm.CQE64.ByteCnt},
		{"timestamp", cqeTimestamp, 64, prm.CQE64.Timestamp},
		{"sop_drop_qpn", cqeSopDropQPN, 32, prm.CQE64.SopDropQPN},
		{"wqe_counter", cqeWQECounter, 16, prm.CQE64.WQECounter},
		{"mini rx_hash_result", miniRxHash, 32, prm.MiniCQE.RxHashResult},
		{"mini checksum", miniChecksum, 16, prm.MiniCQE.Checksum},
		{"mini stridx", miniStrideIdx, 16, prm.MiniCQE.StrideIdx},
		{"mini byte_cnt", miniByteCnt, 32, prm.MiniCQE.ByteCnt},
		{"data segment byte_count", dsegByteCount, 32, prm.WQEData.ByteCount},
		{"data segment lkey", dsegLKey, 32, prm.WQEData.LKey},
		{"data segment addr", dsegAddr, 64, prm.WQEData.Addr},
	} {
		if c.f.Off != uint32(c.off)*8 || c.f.Width != c.width {
			t.Fatalf("%s: bit %d, %d bits in prm; the datapath stores %d bits at byte %d", c.name, c.f.Off, c.f.Width, c.width, c.off)
		}
		put := map[uint32]func([]byte, int, uint64){8: put8, 16: put16, 32: put32, 64: put64}[c.width]
		r := rand.New(rand.NewPCG(uint64(c.off), uint64(c.f.Off)))
		for range 200 {
			var a, b [prm.CQESize]byte
			for i := range a {
				a[i] = byte(r.Uint32())
			}
			b = a
			v := r.Uint64()
			put(a[:], c.off, v)
			c.f.Set(b[:], v)
			if a != b {
				t.Fatalf("%s: storing %#x gives % x, prm.Field.Set % x", c.name, v, a, b)
			}
			if c.width >= 16 {
				get := map[uint32]func([]byte, int) uint64{16: get16, 32: get32, 64: get64}[c.width]
				if got, want := get(a[:], c.off), c.f.Get(a[:]); got != want {
					t.Fatalf("%s: load %#x, prm.Field.Get %#x", c.name, got, want)
				}
			}
		}
	}
}
