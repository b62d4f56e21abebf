package flow_test

import (
	"math/rand/v2"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/flow"
	"github.com/daqiri-go/daqiri/flow/internal/frametest"
)

// TestToeplitzVectors checks the Go Toeplitz hash against the IPv4 table of Microsoft's "Verifying
// the RSS Hash Calculation" (Windows driver documentation): the "IPv4 with TCP" column hashes
// the 4-tuple (the ports are the same fields for UDP), the "IPv4 only" column the addresses.
func TestToeplitzVectors(t *testing.T) {
	for _, v := range []struct {
		dst, src       string
		dport, sport   uint16
		ipOnly, withL4 uint32
	}{
		{"161.142.100.80", "66.9.149.187", 1766, 2794, 0x323e8fc2, 0x51ccc178},
		{"65.69.140.83", "199.92.111.2", 4739, 14230, 0xd718262a, 0xc626b0ea},
		{"12.22.207.184", "24.19.198.95", 38024, 12898, 0xd2d0a5de, 0x5c2b394a},
		{"209.142.163.6", "38.27.205.30", 2217, 48228, 0x82989176, 0xafc7327f},
		{"202.188.127.2", "153.39.163.191", 1303, 44251, 0x5d1809c5, 0x10e828a2},
	} {
		tu := flow.Tuple{Src: netip.MustParseAddr(v.src), Dst: netip.MustParseAddr(v.dst), SrcPort: v.sport, DstPort: v.dport}
		if h := tu.Hash(flow.DefaultRSSKey[:]); h != v.withL4 {
			t.Errorf("%s:%d → %s:%d: hash %#x, want %#x", v.src, v.sport, v.dst, v.dport, h, v.withL4)
		}
		b := tu.Bytes()
		if h := flow.Toeplitz(flow.DefaultRSSKey[:], b[:8]); h != v.ipOnly {
			t.Errorf("%s → %s addresses only: hash %#x, want %#x", v.src, v.dst, h, v.ipOnly)
		}
	}
}

// TestToeplitzTableLinear checks the per-byte table the XDP program uses against the bitwise
// hash on random tuples (Toeplitz is linear over GF(2)).
func TestToeplitzTableLinear(t *testing.T) {
	r := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	var key [40]byte
	for i := range key {
		key[i] = byte(r.Uint32())
	}
	tbl := flow.ToeplitzTable(key[:])
	for n := 0; n < 1000; n++ {
		var in [12]byte
		for i := range in {
			in[i] = byte(r.Uint32())
		}
		var h uint32
		for p, v := range in {
			h ^= tbl[p*256+int(v)]
		}
		if want := flow.Toeplitz(key[:], in[:]); h != want {
			t.Fatalf("input %x: table %#x, bitwise %#x", in, h, want)
		}
	}
}

func TestRSSIndexSpread(t *testing.T) {
	seen := map[int]int{}
	for h := uint32(0); h < 1024; h++ {
		i := flow.RSSIndex(h*2654435761, 3)
		if i < 0 || i >= 3 {
			t.Fatalf("index %d out of range", i)
		}
		seen[i]++
	}
	if len(seen) != 3 || flow.RSSIndex(12345, 1) != 0 {
		t.Fatalf("spread %v", seen)
	}
}

func TestCompileErrors(t *testing.T) {
	ids := []int{0, 5}
	q := func(ids ...int) config.Action { return config.Action{Type: config.ActionQueue, Queues: ids} }
	for _, c := range []struct {
		f    config.Flow
		want string
	}{
		{config.Flow{Name: "a"}, "at least one action"},
		{config.Flow{Name: "a", Actions: []config.Action{q(1)}}, "queue id 1 is not an RX queue"},
		{config.Flow{Name: "a", Actions: []config.Action{q(0, 0)}}, "listed twice"},
		{config.Flow{Name: "a", Actions: []config.Action{q(0), {Type: config.ActionVLANPop}}}, "must be the last"},
		{config.Flow{Name: "a", Actions: []config.Action{{Type: config.ActionVLANPush}, q(0)}}, "cannot use vlan_push"},
		{config.Flow{Name: "a", Actions: []config.Action{{Type: config.ActionVLANPop}}}, "must end with a queue action"},
		{config.Flow{Name: "a", Actions: []config.Action{q(0)}, Match: config.Match{Flex: &config.FlexMatch{ItemID: 9}}}, "flex item 9 is not defined"},
		{config.Flow{Name: "a", Actions: []config.Action{q(0, 5)}, Match: config.Match{ECPRI: &config.ECPRIMatch{}}}, "no RSS"},
		{config.Flow{Name: "a", Actions: []config.Action{q(0)}, Match: config.Match{ECPRI: &config.ECPRIMatch{PCID: frametest.U16(1)}}}, "needs msg_type"},
		{config.Flow{Name: "a", ID: config.MaxFlowID + 1, Actions: []config.Action{q(0)}}, "flow id must be"},
		{config.Flow{Name: "a", Actions: []config.Action{q(0)}, Match: config.Match{UDPSrc: config.PortRange{Lo: 9, Hi: 3}}}, "is empty"},
		{config.Flow{Name: "a", Actions: []config.Action{q(0)}, Match: config.Match{IPv6Src: netip.MustParseAddr("10.0.0.1")}}, "must be an IPv6 address"},
		{config.Flow{Name: "a", Actions: []config.Action{q(0)}, Match: config.Match{IPv6Src: netip.MustParseAddr("fd00::1"), IPv4Dst: netip.MustParseAddr("10.0.0.1")}}, "IPv4 or IPv6 fields, not both"},
		{config.Flow{Name: "a", Actions: []config.Action{{Type: config.ActionTunnelDecap, Tunnel: config.Tunnel{Type: config.TunnelVXLAN, VNI: 1}}, q(0)}, Match: config.Match{IPv6Dst: netip.MustParseAddr("fd00::1")}}, "decapsulated from IPv4 only"},
	} {
		_, err := flow.Compile(nil, "rule", &c.f, ids, frametest.Flex)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.f, err, c.want)
		}
	}
}

// TestEthernetMatch checks MAC matching alone and qualifying IP/UDP and eCPRI rules, on the
// outer header of tunnelled frames, and its compile errors.
func TestEthernetMatch(t *testing.T) {
	a, b, c := net.HardwareAddr(frametest.MACPool[0]), net.HardwareAddr(frametest.MACPool[1]), net.HardwareAddr(frametest.MACPool[3])
	q := func(id int) config.Action { return config.Action{Type: config.ActionQueue, Queues: []int{id}} }
	flows := []config.Flow{
		{Name: "src-only", ID: 1, Match: config.Match{Ethernet: &config.EthernetMatch{Src: c}}, Actions: []config.Action{q(0)}},
		{Name: "dst+udp", ID: 2, Match: config.Match{Ethernet: &config.EthernetMatch{Dst: b}, UDPDst: config.PortRange{Lo: 9, Hi: 9}}, Actions: []config.Action{q(1)}},
		{Name: "both+ecpri", ID: 3, Match: config.Match{Ethernet: &config.EthernetMatch{Src: a, Dst: b}, ECPRI: &config.ECPRIMatch{}}, Actions: []config.Action{q(2)}},
		{Name: "vxlan outer dst", ID: 4, Match: config.Match{Ethernet: &config.EthernetMatch{Dst: c}}, Actions: []config.Action{{Type: config.ActionTunnelDecap, Tunnel: config.Tunnel{Type: config.TunnelVXLAN, VNI: 5}}, q(3)}},
	}
	var tb flow.Table
	tb.Isolation = true
	for i := range flows {
		r, err := flow.Compile(nil, "f", &flows[i], []int{0, 1, 2, 3}, nil)
		if err != nil {
			t.Fatal(err)
		}
		tb.Slots = append(tb.Slots, r)
	}
	s, d := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	udp := func(dport uint16) []byte {
		return frametest.Eth(flow.EtherTypeIPv4, frametest.IPv4(s, d, 17, 0, 0, frametest.UDP(1, dport, nil)))
	}
	withMACs := func(f []byte, dst, src []byte) []byte {
		f = append([]byte(nil), f...)
		copy(f[0:6], dst)
		copy(f[6:12], src)
		return f
	}
	inner := udp(9)
	vx := frametest.Eth(flow.EtherTypeIPv4, frametest.IPv4(s, d, 17, 0, 0, frametest.UDP(40000, 4789, frametest.VXLAN(5, withMACs(inner, a, a)))))
	for _, x := range []struct {
		name string
		f    []byte
		flow uint32
	}{
		{"dst b, udp 9", udp(9), 2}, // Eth builds frames from a to b
		{"dst b, udp 8", udp(8), 0},
		{"src c", withMACs(udp(8), a, c), 1},
		{"src c beats dst b (slot order)", withMACs(udp(9), b, c), 1},
		{"eCPRI a→b", frametest.Eth(flow.EtherTypeECPRI, []byte{0x10, 0, 0, 4}), 3},
		{"eCPRI c→b", withMACs(frametest.Eth(flow.EtherTypeECPRI, []byte{0x10, 0, 0, 4}), b, c), 1},
		{"eCPRI b→a", withMACs(frametest.Eth(flow.EtherTypeECPRI, []byte{0x10, 0, 0, 4}), a, b), 0},
		{"VXLAN outer dst c, inner dst a", withMACs(vx, c, a), 4},
		{"VXLAN outer dst a", withMACs(vx, a, a), 0},
		{"first octet differs", withMACs(udp(8), a, []byte{0x03, 0, 0, 0, 0, 0x81}), 0},
		{"last octet differs", withMACs(udp(8), a, []byte{0x02, 0, 0, 0, 0, 0x82}), 0},
		{"runt", withMACs(udp(9), b, c)[:13], 0},
	} {
		v := tb.Classify(x.f)
		if v.FlowID != x.flow || (x.flow == 0) != (v.Action == flow.ActionPass) {
			t.Errorf("%s: %+v, want flow %d", x.name, v, x.flow)
		}
	}
	for _, bad := range []struct {
		e    *config.EthernetMatch
		want string
	}{
		{&config.EthernetMatch{}, "f.match.ethernet: an ethernet match needs src, dst or both"},
		{&config.EthernetMatch{Src: net.HardwareAddr{1, 2, 3, 4, 5}}, "f.match.ethernet.src: must be a 6-octet MAC address, got 5 octets"},
		{&config.EthernetMatch{Dst: make(net.HardwareAddr, 8)}, "f.match.ethernet.dst: must be a 6-octet MAC address, got 8 octets"},
	} {
		f := config.Flow{Name: "x", Match: config.Match{Ethernet: bad.e}, Actions: []config.Action{q(0)}}
		if _, err := flow.Compile(nil, "f", &f, []int{0}, nil); err == nil || err.Error() != bad.want {
			t.Errorf("%+v: %v, want %q", bad.e, err, bad.want)
		}
	}
}

// TestToeplitzVectorsIPv6 checks IPv6 tuples against the IPv6 table of the same Microsoft
// page ("IPv6 with TCP" hashes the 36-byte address+port input, "IPv6 only" the 32 address
// bytes).
func TestToeplitzVectorsIPv6(t *testing.T) {
	for _, v := range []struct {
		dst, src       string
		dport, sport   uint16
		ipOnly, withL4 uint32
	}{
		{"3ffe:2501:200:3::1", "3ffe:2501:200:1fff::7", 1766, 2794, 0x2cc18cd5, 0x40207d3d},
		{"ff02::1", "3ffe:501:8::260:97ff:fe40:efab", 4739, 14230, 0x0f0c461c, 0xdde51bbf},
		{"fe80::200:f8ff:fe21:67cf", "3ffe:1900:4545:3:200:f8ff:fe21:67cf", 38024, 44251, 0x4b61e985, 0x02d1feef},
	} {
		tu := flow.Tuple{Src: netip.MustParseAddr(v.src), Dst: netip.MustParseAddr(v.dst), SrcPort: v.sport, DstPort: v.dport}
		if h := tu.Hash(flow.DefaultRSSKey[:]); h != v.withL4 {
			t.Errorf("[%s]:%d → [%s]:%d: hash %#x, want %#x", v.src, v.sport, v.dst, v.dport, h, v.withL4)
		}
		b := tu.Bytes6()
		if h := flow.Toeplitz(flow.DefaultRSSKey[:], b[:32]); h != v.ipOnly {
			t.Errorf("%s → %s addresses only: hash %#x, want %#x", v.src, v.dst, h, v.ipOnly)
		}
	}
}
