package datapath

import (
	"encoding/binary"
	"math/rand/v2"
	"net"
	"net/netip"
	"testing"

	"github.com/daqiri-go/daqiri/flow"
	"github.com/daqiri-go/daqiri/mlx5/prm"
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// msVectors are Microsoft's published RSS verification vectors ("Verifying the RSS Hash
// Calculation", Windows driver documentation) for the key flow.DefaultRSSKey: the hash of
// the addresses alone and of addresses plus TCP ports.
var msVectors = []struct {
	dst, src       string
	dport, sport   uint16
	ipOnly, withL4 uint32
}{
	{"161.142.100.80", "66.9.149.187", 1766, 2794, 0x323e8fc2, 0x51ccc178},
	{"65.69.140.83", "199.92.111.2", 4739, 14230, 0xd718262a, 0xc626b0ea},
	{"12.22.207.184", "24.19.198.95", 38024, 12898, 0xd2d0a5de, 0x5c2b394a},
	{"209.142.163.6", "38.27.205.30", 2217, 48228, 0x82989176, 0xafc7327f},
	{"202.188.127.2", "153.39.163.191", 1303, 44251, 0x5d1809c5, 0x10e828a2},
	{"3ffe:2501:200:3::1", "3ffe:2501:200:1fff::7", 1766, 2794, 0x2cc18cd5, 0x40207d3d},
	{"ff02::1", "3ffe:501:8::260:97ff:fe40:efab", 4739, 14230, 0x0f0c461c, 0xdde51bbf},
	{"fe80::200:f8ff:fe21:67cf", "3ffe:1900:4545:3:200:f8ff:fe21:67cf", 38024, 44251, 0x4b61e985, 0x02d1feef},
}

func vectorInput(src, dst netip.Addr, sport, dport uint16, ports bool) []byte {
	s, d := src.AsSlice(), dst.AsSlice()
	in := append(append([]byte(nil), s...), d...)
	if ports {
		in = binary.BigEndian.AppendUint16(in, sport)
		in = binary.BigEndian.AppendUint16(in, dport)
	}
	return in
}

// TestToeplitzMicrosoftVectors checks the TIR's Toeplitz hash against Microsoft's vectors,
// IPv4 and IPv6, with and without ports.
func TestToeplitzMicrosoftVectors(t *testing.T) {
	key := flow.DefaultRSSKey[:]
	for _, v := range msVectors {
		src, dst := netip.MustParseAddr(v.src), netip.MustParseAddr(v.dst)
		if h := Toeplitz(key, vectorInput(src, dst, v.sport, v.dport, false)); h != v.ipOnly {
			t.Errorf("%s → %s: hash %#x, want %#x", v.src, v.dst, h, v.ipOnly)
		}
		if h := Toeplitz(key, vectorInput(src, dst, v.sport, v.dport, true)); h != v.withL4 {
			t.Errorf("%s:%d → %s:%d: hash %#x, want %#x", v.src, v.sport, v.dst, v.dport, h, v.withL4)
		}
	}
}

// TestToeplitzEqualsFlow checks the model's hash against package flow's on random keys and
// inputs of every length up to an IPv6 4-tuple.
func TestToeplitzEqualsFlow(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		var key [40]byte
		for j := range key {
			key[j] = byte(r.Uint32())
		}
		in := make([]byte, r.IntN(37))
		for j := range in {
			in[j] = byte(r.Uint32())
		}
		if a, b := Toeplitz(key[:], in), flow.Toeplitz(key[:], in); a != b {
			t.Fatalf("key %x input %x: model %#x, flow %#x", key, in, a, b)
		}
	}
}

// TestToeplitzTable checks the TIR's per-byte table (what the datapath hashes with) against
// the bit-by-bit definition, on Microsoft's vectors and on random keys and inputs of every
// length up to an IPv6 4-tuple.
func TestToeplitzTable(t *testing.T) {
	tt := newToeplitzTable(flow.DefaultRSSKey[:])
	for _, v := range msVectors {
		src, dst := netip.MustParseAddr(v.src), netip.MustParseAddr(v.dst)
		if h := tt.sum(vectorInput(src, dst, v.sport, v.dport, true)); h != v.withL4 {
			t.Errorf("%s:%d → %s:%d: table hash %#x, want %#x", v.src, v.sport, v.dst, v.dport, h, v.withL4)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 200; i++ {
		var key [40]byte
		for j := range key {
			key[j] = byte(r.Uint32())
		}
		tt := newToeplitzTable(key[:])
		for l := 0; l <= maxHashInput; l++ {
			in := make([]byte, l)
			for j := range in {
				in[j] = byte(r.Uint32())
			}
			if a, b := tt.sum(in), Toeplitz(key[:], in); a != b {
				t.Fatalf("key %x input %x: table %#x, bit by bit %#x", key, in, a, b)
			}
		}
	}
}

// TestRSSThroughTIR sends Microsoft's IPv4 UDP vectors through an indirect TIR with the
// vectors' key and a four-RQ table: each CQE carries the published hash and its hash type,
// and the frame lands in the RQ the hash's low bits select.
func TestRSSThroughTIR(t *testing.T) {
	e := newEnv(t)
	var rqs []*testRQ
	var rqns []uint32
	for i := 0; i < 4; i++ {
		c := e.newCQ(4, nil)
		r := e.newRQ(c, 4, 2048, 0, 0)
		r.post(16)
		rqs = append(rqs, r)
		rqns = append(rqns, r.rqn)
	}
	rqtn := e.id()
	must(t, e.nic.CreateRQT(RQTParams{RQTN: rqtn, RQNs: rqns}))
	tirn := e.id()
	tp := TIRParams{TIRN: tirn, Indirect: true, RQT: rqtn, HashFn: 2, Key: flow.DefaultRSSKey,
		Outer: HashFields{UDP: true, Selected: HashSrcIP | HashDstIP | HashL4SPort | HashL4DPort}}
	must(t, e.nic.CreateTIR(tp))
	e.catchAll(Dest{Type: DestTIR, ID: tirn}, 0)
	for _, v := range msVectors[:5] {
		src, dst := netip.MustParseAddr(v.src).As4(), netip.MustParseAddr(v.dst).As4()
		e.nic.Receive(udpFrame(src, dst, v.sport, v.dport, 10, 0))
		e.nic.Step(10)
		want := rqs[v.withL4&3]
		got := 0
		for _, r := range rqs {
			for _, c := range r.cq.poll() {
				got++
				if r != want {
					t.Errorf("%s:%d: landed in rq %#x, want %#x", v.src, v.sport, r.rqn, want.rqn)
				}
				if h := uint32(prm.CQE64.RSSHashResult.Get(c[:])); h != v.withL4 {
					t.Errorf("%s:%d: CQE hash %#x, want %#x", v.src, v.sport, h, v.withL4)
				}
				if ht := prm.CQE64.RSSHashType.Get(c[:]); ht != 1<<2|2<<6 {
					t.Errorf("hash type %#x, want IPv4|UDP %#x", ht, 1<<2|2<<6)
				}
			}
		}
		if got != 1 {
			t.Fatalf("%d CQEs for one frame", got)
		}
	}
}

// TestRSSThroughTIRIPv6 sends Microsoft's IPv6 TCP vectors (built by gopacket) through an
// indirect TIR hashing IPv6 addresses and TCP ports: the CQE carries the published hash
// and the IPv6|TCP hash type.
func TestRSSThroughTIRIPv6(t *testing.T) {
	e := newEnv(t)
	c := e.newCQ(4, nil)
	r := e.newRQ(c, 4, 2048, 0, 0)
	r.post(16)
	rqtn, tirn := e.id(), e.id()
	must(t, e.nic.CreateRQT(RQTParams{RQTN: rqtn, RQNs: []uint32{r.rqn}}))
	must(t, e.nic.CreateTIR(TIRParams{TIRN: tirn, Indirect: true, RQT: rqtn, HashFn: 2, Key: flow.DefaultRSSKey,
		Outer: HashFields{IPv6: true, Selected: HashSrcIP | HashDstIP | HashL4SPort | HashL4DPort}}))
	e.catchAll(Dest{Type: DestTIR, ID: tirn}, 0)
	for _, v := range msVectors[5:] {
		eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv6}
		ip := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolTCP, SrcIP: net.ParseIP(v.src), DstIP: net.ParseIP(v.dst)}
		tcp := &layers.TCP{SrcPort: layers.TCPPort(v.sport), DstPort: layers.TCPPort(v.dport), SYN: true, Window: 1000}
		must(t, tcp.SetNetworkLayerForChecksum(ip))
		buf := gopacket.NewSerializeBuffer()
		must(t, gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, tcp))
		e.nic.Receive(buf.Bytes())
		e.nic.Step(1)
		got := c.poll()
		if len(got) != 1 {
			t.Fatalf("%d CQEs", len(got))
		}
		if h := uint32(prm.CQE64.RSSHashResult.Get(got[0][:])); h != v.withL4 {
			t.Errorf("[%s]:%d → [%s]:%d: CQE hash %#x, want %#x", v.src, v.sport, v.dst, v.dport, h, v.withL4)
		}
		if ht := prm.CQE64.RSSHashType.Get(got[0][:]); ht != 2<<2|1<<6 {
			t.Errorf("hash type %#x, want IPv6|TCP %#x", ht, 2<<2|1<<6)
		}
		if ok := prm.CQE64.HdsIPExt.Get(got[0][:]); ok != prm.CQEL2OK|prm.CQEL3OK|prm.CQEL4OK {
			t.Errorf("checksum bits %#x", ok)
		}
	}
}
