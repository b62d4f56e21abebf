package engine

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"testing"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/hugepage"
)

// TestHeaderFastPaths pins SetEthHeader, SetIPv4Header, SetUDPHeader and SetUDPv4Header (a
// common case written out in front of the full form) to their full forms setEthHeader,
// setIPv4Header, setUDPHeader and setUDPv4Header, the helpers' earlier bodies unchanged: from the same random
// state (garbage bytes, random EtherTypes, random segment lengths) each call of either form
// must leave the same bytes in the region, the same lengths and the same error, over random
// arguments — addresses (IPv4, IPv6, 4-in-6, zero), MACs of every length, payload lengths
// around the limits, indexes out of range — and every kind of burst: power-of-two buffers
// with room for the headers or not, packets starting inside their buffers (a byte short of
// a header's room, or just enough), other buffer sizes, two segments, a socket stream,
// device memory. SetIPv4Header's arguments repeat a burst's last ones, whole or with one
// changed, so that the header the burst keeps (ipv4Cache) is used, refreshed for a new
// length and replaced; the test counts the calls that use it.
func TestHeaderFastPaths(t *testing.T) {
	r := rand.New(rand.NewPCG(rand.Uint64(), 31))
	dev, err := NewRegion(&config.MemoryRegion{Name: "gpu", Kind: config.KindDevice, NumBufs: 8, BufSize: 64}, devMem{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	type kind struct {
		q    *TxQueue
		host []*Region // regions whose bytes are compared
	}
	var kinds []kind
	for _, size := range []int{64, 128, 32, 16, 40, 100, 2048} {
		reg := testRegion(t, "h", 8, size)
		kinds = append(kinds, kind{testTxQueue(t, true, reg), []*Region{reg}})
	}
	h2, d2 := testRegion(t, "h2", 8, 64), testRegion(t, "d2", 8, 256)
	kinds = append(kinds, kind{testTxQueue(t, true, h2, d2), []*Region{h2, d2}})
	sock := testRegion(t, "s", 8, 64)
	kinds = append(kinds, kind{testTxQueue(t, false, sock), []*Region{sock}})
	kinds = append(kinds, kind{testTxQueue(t, true, dev), nil})

	mac := func() net.HardwareAddr {
		switch r.IntN(8) {
		case 0:
			return nil
		case 1:
			return make(net.HardwareAddr, []int{0, 5, 7}[r.IntN(3)])
		}
		return randMAC(r)
	}
	addr := func() netip.Addr {
		var a [16]byte
		for k := range a {
			a[k] = byte(r.Uint32())
		}
		switch r.IntN(10) {
		case 0:
			return netip.Addr{}
		case 1:
			return netip.AddrFrom16(a)
		case 2:
			return netip.AddrFrom16(netip.AddrFrom4([4]byte(a[:4])).As16()) // 4-in-6
		}
		return netip.AddrFrom4([4]byte(a[:4]))
	}
	payload := func(limit int) int {
		switch r.IntN(6) {
		case 0:
			return []int{-1, 0, limit, limit + 1, -1 << 40, 1 << 40}[r.IntN(6)]
		case 1:
			return r.IntN(2*limit+2) - limit
		}
		return r.IntN(limit + 1)
	}
	errStr := func(err error) string {
		if err == nil {
			return "<nil>"
		}
		return err.Error()
	}
	type ipv4Args struct {
		pl       int
		proto    uint8
		src, dst netip.Addr
	}
	last := map[*Burst]*ipv4Args{}
	// SetIPv4Header calls that find their header kept, or kept for another payload length.
	hits, newLen := 0, 0
	for round := 0; round < 8000; round++ {
		k := kinds[r.IntN(len(kinds))]
		b, err := k.q.NewBurst(1 + r.IntN(4))
		if err != nil {
			t.Fatal(err)
		}
		for _, reg := range k.host {
			for j := range reg.buf {
				reg.buf[j] = byte(r.Uint32())
			}
		}
		// A third of the bursts start their packets inside their buffers, often just
		// short of or at the room a header needs (the helpers' room tests); the offsets
		// go back before Free.
		offs := slices.Clone(b.segs[0].off[:b.n])
		if reg := b.segs[0].region; r.IntN(3) == 0 && reg.BufSize > 0 {
			for j := range b.n {
				in := uint64(r.IntN(reg.BufSize))
				if r.IntN(2) == 0 {
					in = uint64(max(0, reg.BufSize-[]int{13, 14, 15, 33, 34, 35, 41, 42, 43}[r.IntN(9)]))
				}
				b.segs[0].off[j] += in
			}
		}
		for j := 0; j < b.n; j++ {
			if buf := b.SegmentBuffer(0, j); len(buf) >= EthHeaderLen {
				// IPv6's EtherType (SetUDPHeader then writes after 40 bytes), IPv4's, one
				// byte of IPv6's, or garbage.
				switch r.IntN(4) {
				case 0:
					buf[12], buf[13] = 0x86, 0xDD
				case 1:
					buf[12], buf[13] = 0x08, 0x00
				case 2:
					buf[12+r.IntN(2)] = []byte{0x86, 0xDD}[r.IntN(2)]
				}
			}
			for s := 0; s < b.nsegs; s++ {
				b.segs[s].len[j] = uint32(r.IntN(80))
			}
		}
		i := r.IntN(b.n) // mostly in range, two either side at times
		if r.IntN(4) == 0 {
			i = r.IntN(b.n+4) - 2
		}
		var call func(full bool) error
		switch r.IntN(4) {
		case 0:
			dst, src := mac(), mac()
			call = func(full bool) error {
				if full {
					return b.setEthHeader(i, dst, src)
				}
				return b.SetEthHeader(i, dst, src)
			}
		case 1:
			// SetIPv4Header keeps its last header in the burst: the arguments repeat the
			// burst's last ones, whole or with one of them new, more often than not.
			a := last[b]
			if a == nil {
				a = &ipv4Args{}
				last[b] = a
			}
			switch r.IntN(8) {
			case 0, 1, 2:
			case 3:
				a.pl = payload(65535 - IPv4HeaderLen)
			case 4:
				a.proto = uint8(r.Uint32())
			case 5:
				a.src = addr()
			case 6:
				a.dst = addr()
			default:
				*a = ipv4Args{payload(65535 - IPv4HeaderLen), uint8(r.Uint32()), addr(), addr()}
			}
			pl, proto, src, dst := a.pl, a.proto, a.src, a.dst
			if c := &b.ip4; uint(i) < uint(b.n) && b.raw && b.view0 != nil && uint(pl) <= 65535-IPv4HeaderLen &&
				c.key != 0 && c.src == src && c.dst == dst && uint8(c.key) == proto {
				if c.key == ipv4Key(pl, proto) {
					hits++
				} else {
					newLen++
				}
			}
			call = func(full bool) error {
				if full {
					return b.setIPv4Header(i, pl, proto, src, dst)
				}
				return b.SetIPv4Header(i, pl, proto, src, dst)
			}
		case 3:
			h := randUDPv4Header(t, r)
			pl := payload(65535 - IPv4HeaderLen - UDPHeaderLen)
			call = func(full bool) error {
				if full {
					return b.setUDPv4Header(i, h, pl)
				}
				return b.SetUDPv4Header(i, h, pl)
			}
		default:
			pl, sp, dp := payload(65535-UDPHeaderLen), uint16(r.Uint32()), uint16(r.Uint32())
			call = func(full bool) error {
				if full {
					return b.setUDPHeader(i, pl, sp, dp)
				}
				return b.SetUDPHeader(i, pl, sp, dp)
			}
		}
		// Snapshot, the fast form, its outcome; back to the snapshot, the full form.
		var before [][]byte
		for _, reg := range k.host {
			before = append(before, bytes.Clone(reg.buf))
		}
		var lensBefore [][]uint32
		for s := 0; s < b.nsegs; s++ {
			lensBefore = append(lensBefore, append([]uint32(nil), b.segs[s].len[:b.n]...))
		}
		errFast := call(false)
		var after [][]byte
		for _, reg := range k.host {
			after = append(after, bytes.Clone(reg.buf))
		}
		var lensFast [][]uint32
		for s := 0; s < b.nsegs; s++ {
			lensFast = append(lensFast, append([]uint32(nil), b.segs[s].len[:b.n]...))
		}
		for j, reg := range k.host {
			copy(reg.buf, before[j])
		}
		for s := 0; s < b.nsegs; s++ {
			copy(b.segs[s].len, lensBefore[s])
		}
		errFull := call(true)
		if errStr(errFast) != errStr(errFull) || errors.Is(errFast, ErrInvalidParameter) != errors.Is(errFull, ErrInvalidParameter) ||
			errors.Is(errFast, ErrNotSupported) != errors.Is(errFull, ErrNotSupported) {
			t.Fatalf("round %d: error %v, full form %v", round, errFast, errFull)
		}
		for j, reg := range k.host {
			if !bytes.Equal(after[j], reg.buf) {
				t.Fatalf("round %d: region %s bytes differ from the full form's (error %v)", round, reg.Name, errFull)
			}
		}
		for s := 0; s < b.nsegs; s++ {
			if !slices.Equal(lensFast[s], b.segs[s].len[:b.n]) {
				t.Fatalf("round %d: segment %d lengths %v, full form %v", round, s, lensFast[s], b.segs[s].len[:b.n])
			}
		}
		copy(b.segs[0].off, offs)
		b.Free()
	}
	t.Logf("%d calls found their IPv4 header kept, %d kept for another length", hits, newLen)
	if hits < 25 || newLen < 8 {
		t.Fatalf("%d SetIPv4Header calls found their header kept (want ≥ 25), %d kept for another length (want ≥ 8): the test misses a path", hits, newLen)
	}
}

// TestIPv4HeaderKeptZero: a burst that has not written an IPv4 header yet keeps none, so the
// zero arguments (payload 0, protocol 0, zero addresses), which match the zero cache's
// fields, still get the full form's error and write nothing.
func TestIPv4HeaderKeptZero(t *testing.T) {
	reg := testRegion(t, "h", 8, 64)
	q := testTxQueue(t, true, reg)
	b, err := q.NewBurst(2)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	for _, a := range [][2]netip.Addr{{}, {netip.Addr{}, netip.MustParseAddr("10.0.0.2")}, {netip.MustParseAddr("10.0.0.1"), netip.Addr{}}} {
		before := bytes.Clone(reg.buf)
		err := b.SetIPv4Header(0, 0, 0, a[0], a[1])
		want := b.setIPv4Header(0, 0, 0, a[0], a[1])
		if err == nil || want == nil || err.Error() != want.Error() || !errors.Is(err, ErrInvalidParameter) {
			t.Fatalf("SetIPv4Header(0, 0, 0, %v, %v) = %v, full form %v", a[0], a[1], err, want)
		}
		if !bytes.Equal(before, reg.buf) || b.PacketLen(0) != 0 {
			t.Fatalf("SetIPv4Header(0, 0, 0, %v, %v) wrote into the packet", a[0], a[1])
		}
	}
}

// BenchmarkHeaderHelpers writes Ethernet, IPv4 and UDP headers into every packet of a
// 64-packet burst of 2048-byte buffers, through the helpers ("fast") or their full forms
// ("full", the helpers' earlier bodies): the helpers' own cost per packet, without the
// engine around them.
func BenchmarkHeaderHelpers(b *testing.B) {
	m, err := hugepage.Map(64*2048, false)
	if err != nil {
		b.Fatal(err)
	}
	reg, err := NewRegion(&config.MemoryRegion{Name: "h", Kind: config.KindHost, NumBufs: 64, BufSize: 2048}, m)
	if err != nil {
		b.Fatal(err)
	}
	defer reg.Close()
	meta, err := NewMetaPool("tx", 2, 64, true)
	if err != nil {
		b.Fatal(err)
	}
	p := &Port{ID: 0, Name: "p0", Raw: true}
	q := NewTxQueue(p, 0, &config.Queue{Name: "q", ID: 0, BatchSize: 64, MemoryRegions: []string{"h"}}, []*Region{reg}, meta)
	t, err := q.NewBurst(64)
	if err != nil {
		b.Fatal(err)
	}
	defer t.Free()
	dst := net.HardwareAddr{2, 0, 0, 0, 0, 2}
	s4, d4 := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	for _, form := range []string{"fast", "full"} {
		b.Run(form, func(b *testing.B) {
			for range b.N {
				for i := range t.Len() {
					if form == "fast" {
						t.SetEthHeader(i, dst, nil)
						t.SetIPv4Header(i, 8+22, 17, s4, d4)
						t.SetUDPHeader(i, 22, 4096, 4097)
					} else {
						t.setEthHeader(i, dst, nil)
						t.setIPv4Header(i, 8+22, 17, s4, d4)
						t.setUDPHeader(i, 22, 4096, 4097)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*t.Len()), "ns/pkt")
		})
	}
}
