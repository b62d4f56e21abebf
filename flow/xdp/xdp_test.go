package xdp

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/flow"
	"github.com/daqiri-go/daqiri/flow/internal/frametest"
	"github.com/daqiri-go/daqiri/internal/testutil"
)

// loadProgram loads the XDP program. It needs root; as root a refusal (EPERM included) is a
// failure, not a reason to skip.
func loadProgram(t *testing.T) *Program {
	t.Helper()
	testutil.RequireBPF(t, "CAP_BPF and CAP_NET_ADMIN to load XDP programs")
	p, err := NewProgram(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// run runs the program on a frame and returns the verdict it produced.
func run(t *testing.T, p *Program, frame []byte) (ret uint32, meta Meta, hasMeta bool) {
	t.Helper()
	ro := &ebpf.RunOptions{Data: frame, DataOut: make([]byte, len(frame)+256)}
	ret, err := p.Program().Run(ro)
	if err != nil {
		t.Fatalf("PROG_TEST_RUN on %d-byte frame %x: %v", len(frame), frame, err)
	}
	// The kernel returns the frame from data_meta on: metadata first when present.
	out := ro.DataOut
	if len(out) == len(frame)+MetaLen {
		meta, hasMeta = ParseMeta(out[:MetaLen])
	}
	return ret, meta, hasMeta
}

// install writes a table into the program.
func install(t *testing.T, p *Program, tb *flow.Table) {
	t.Helper()
	for i := 0; i < MaxRules; i++ {
		if i < len(tb.Slots) && tb.Slots[i] != nil {
			if err := p.SetRule(i, tb.Slots[i]); err != nil {
				t.Fatal(err)
			}
		} else if err := p.ClearRule(i); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.SetConf(Conf{NRules: len(tb.Slots), Isolation: tb.Isolation, DefaultQueue: tb.DefaultQueue, DropAll: tb.DropAll, VXLANPort: tb.VXLANPort()}); err != nil {
		t.Fatal(err)
	}
}

// check runs one frame through program and reference and compares.
func check(t *testing.T, p *Program, tb *flow.Table, frame []byte) flow.Verdict {
	t.Helper()
	want := tb.Classify(frame)
	ret, meta, hasMeta := run(t, p, frame)
	switch want.Action {
	case flow.ActionPass:
		if ret != xdpPass || hasMeta {
			t.Fatalf("frame %x: XDP returned %d (meta %v), reference says pass", frame, ret, hasMeta)
		}
	case flow.ActionDrop:
		if ret != xdpDrop || hasMeta {
			t.Fatalf("frame %x: XDP returned %d (meta %v), reference says drop", frame, ret, hasMeta)
		}
	case flow.ActionSteer:
		// No AF_XDP socket in a test run: the redirect fails and the program drops, after
		// writing the metadata that tells where the frame was going.
		if ret != xdpDrop || !hasMeta {
			t.Fatalf("frame %x: XDP returned %d (meta %v), reference steers to queue %d", frame, ret, hasMeta, want.Queue)
		}
		got := Meta{FlowID: meta.FlowID, Queue: meta.Queue, VLANPop: meta.VLANPop, Decap: meta.Decap}
		exp := Meta{FlowID: want.FlowID, Queue: want.Queue, VLANPop: want.VLANPop, Decap: want.Decap}
		if got != exp {
			t.Fatalf("frame %x: XDP steered %+v, reference %+v (rule %d)", frame, got, exp, want.Rule)
		}
	}
	return want
}

// TestXDPMatchesReference runs the XDP program with BPF_PROG_TEST_RUN on thousands of random
// frames (all header shapes, truncated and with damaged IPv4 headers) under random rule
// tables, and requires the exact verdict of the Go reference for each.
func TestXDPMatchesReference(t *testing.T) {
	p := loadProgram(t)
	seed := rand.Uint64()
	r := rand.New(rand.NewPCG(seed, 7))
	t.Logf("seed %d", seed)
	counts := map[flow.Action]int{}
	matchedRules := 0
	for round := 0; round < 12; round++ {
		nq := 1 + r.IntN(8)
		var flows []config.Flow
		for i := 0; i < 1+r.IntN(12); i++ {
			flows = append(flows, frametest.RandRule(r, 1+r.IntN(1000), nq, frametest.Flex))
		}
		tb := &flow.Table{Slots: frametest.Compile(t, flows, nq), Isolation: r.IntN(2) == 0, DefaultQueue: r.IntN(nq), DropAll: r.IntN(6) == 0}
		// A hole, as a deleted dynamic flow leaves.
		if len(tb.Slots) > 2 && r.IntN(2) == 0 {
			tb.Slots[1] = nil
		}
		install(t, p, tb)
		for n := 0; n < 400; n++ {
			v := check(t, p, tb, frametest.RandFrame(r))
			counts[v.Action]++
			if v.Rule >= 0 {
				matchedRules++
			}
		}
	}
	t.Logf("verdicts %v, %d matched a rule", counts, matchedRules)
	if counts[flow.ActionSteer] == 0 || counts[flow.ActionPass] == 0 || matchedRules == 0 {
		t.Fatalf("random tables and frames did not exercise every outcome: %v", counts)
	}
}

// TestXDPMalformed feeds frames whose headers are cut or inconsistent and checks that none of
// them steers by a field it does not have: they end unmatched (kernel under isolation).
func TestXDPMalformed(t *testing.T) {
	p := loadProgram(t)
	src, dst := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	flows := []config.Flow{
		{Name: "any-udp-dst", ID: 11, Match: config.Match{UDPDst: config.PortRange{Lo: 1, Hi: 65535}}, Actions: []config.Action{{Type: config.ActionQueue, Queues: []int{1}}}},
		{Name: "src", ID: 12, Match: config.Match{IPv4Src: src}, Actions: []config.Action{{Type: config.ActionQueue, Queues: []int{2}}}},
		{Name: "vlan", ID: 13, Actions: []config.Action{{Type: config.ActionVLANPop}, {Type: config.ActionQueue, Queues: []int{3}}}},
		{Name: "ecpri", ID: 14, Match: config.Match{ECPRI: &config.ECPRIMatch{MsgType: frametest.U8(2), PCID: frametest.U16(7)}}, Actions: []config.Action{{Type: config.ActionQueue, Queues: []int{0}}}},
	}
	tb := &flow.Table{Slots: frametest.Compile(t, flows[:2], 4), Isolation: true}
	install(t, p, tb)
	good := frametest.Eth(flow.EtherTypeIPv4, frametest.IPv4(src, dst, protoUDP, 0, 0, frametest.UDP(1000, 2000, []byte("payload"))))
	if v := check(t, p, tb, good); v.FlowID != 11 {
		t.Fatalf("well-formed UDP frame: %+v", v)
	}
	withOpts := frametest.Eth(flow.EtherTypeIPv4, frametest.IPv4(src, dst, protoUDP, 40, 0, frametest.UDP(1000, 2000, nil)))
	if v := check(t, p, tb, withOpts); v.FlowID != 11 {
		t.Fatalf("IPv4 with 40 bytes of options: %+v", v)
	}
	unmatched := func(name string, f []byte) {
		t.Helper()
		if v := check(t, p, tb, f); v.Action != flow.ActionPass {
			t.Fatalf("%s (%x): %+v, want unmatched", name, f, v)
		}
	}
	// Cut inside the UDP header: the IPv4 header alone still matches the address rule.
	if v := check(t, p, tb, good[:14+20+4]); v.FlowID != 12 {
		t.Fatalf("UDP header cut: %+v, want the IPv4 source rule", v)
	}
	unmatched("short Ethernet+IPv4", good[:14+19])
	unmatched("Ethernet only", good[:14])
	for _, ihl := range []byte{0, 1, 4} {
		f := append([]byte{}, good...)
		f[14] = 0x40 | ihl
		unmatched("IHL "+string('0'+ihl), f)
	}
	f := append([]byte{}, good...)
	f[14] = 0x4f // IHL 15 = 60 bytes, longer than the frame
	unmatched("IHL beyond the frame", f[:14+40])
	f = append([]byte{}, good...)
	f[14] = 0x65 // version 6 in an IPv4 EtherType
	unmatched("bad version", f)
	unmatched("not IPv4", frametest.Eth(0x86dd, good[14:]))
	unmatched("ARP", frametest.Eth(0x0806, make([]byte, 28)))
	frag := frametest.Eth(flow.EtherTypeIPv4, frametest.IPv4(netip.MustParseAddr("10.9.9.9"), dst, protoUDP, 0, 100, frametest.UDP(1000, 2000, nil)))
	unmatched("later fragment (no UDP header)", frag)
	tagged := frametest.Eth(flow.EtherTypeVLAN, append([]byte{0, 5, 0x08, 0x00}, good[14:]...))
	unmatched("VLAN tag cut", tagged[:16])
	if v := check(t, p, tb, tagged); v.FlowID != 11 {
		t.Fatalf("VLAN-tagged UDP: %+v", v)
	}

	tb = &flow.Table{Slots: frametest.Compile(t, flows[2:], 4), Isolation: true}
	install(t, p, tb)
	unmatched("untagged for vlan_pop", good)
	if v := check(t, p, tb, tagged); v.FlowID != 13 || !v.VLANPop {
		t.Fatalf("tagged frame for vlan_pop: %+v", v)
	}
	ec := frametest.Eth(flow.EtherTypeECPRI, []byte{0x10, 2, 0, 4, 0, 7, 0, 0})
	if v := check(t, p, tb, ec); v.FlowID != 14 {
		t.Fatalf("eCPRI: %+v", v)
	}
	unmatched("eCPRI cut before PC_ID", ec[:14+5])
	unmatched("eCPRI other PC_ID", frametest.Eth(flow.EtherTypeECPRI, []byte{0x10, 2, 0, 4, 0, 8}))
}

// TestXDPRSSMatchesReference sends many 4-tuples through an RSS rule and checks each lands on
// the queue the Go Toeplitz reference picks, and that they spread.
func TestXDPRSSMatchesReference(t *testing.T) {
	p := loadProgram(t)
	flows := []config.Flow{{Name: "rss", ID: 77, Match: config.Match{UDPDst: config.PortRange{Lo: 7000, Hi: 7999}}, Actions: []config.Action{{Type: config.ActionQueue, Queues: []int{0, 1, 2, 3}}}}}
	tb := &flow.Table{Slots: frametest.Compile(t, flows, 4)}
	install(t, p, tb)
	r := rand.New(rand.NewPCG(rand.Uint64(), 1))
	per := map[int]int{}
	for n := 0; n < 256; n++ {
		s := netip.AddrFrom4([4]byte{10, byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256))})
		d := netip.AddrFrom4([4]byte{10, byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256))})
		sp, dp := uint16(1024+r.IntN(60000)), uint16(7000+r.IntN(1000))
		f := frametest.Eth(flow.EtherTypeIPv4, frametest.IPv4(s, d, protoUDP, 0, 0, frametest.UDP(sp, dp, nil)))
		v := check(t, p, tb, f)
		want := flow.RSSIndex(flow.Tuple{Src: s, Dst: d, SrcPort: sp, DstPort: dp}.Hash(flow.DefaultRSSKey[:]), 4)
		if v.Queue != want {
			t.Fatalf("tuple %v:%d→%v:%d on queue %d, Toeplitz says %d", s, sp, d, dp, v.Queue, want)
		}
		per[v.Queue]++
	}
	if len(per) != 4 {
		t.Fatalf("256 tuples reached only queues %v", per)
	}
}

// TestParseMeta checks the metadata codec against a hand-made block.
func TestParseMeta(t *testing.T) {
	b := make([]byte, 8)
	binary.NativeEndian.PutUint32(b, 0xabcdef)
	b[4], b[5] = 3, 1|byte(flow.DecapNVGRE)<<1
	binary.NativeEndian.PutUint16(b[6:], MetaMagic)
	m, ok := ParseMeta(b)
	if !ok || m != (Meta{FlowID: 0xabcdef, Queue: 3, VLANPop: true, Decap: flow.DecapNVGRE}) {
		t.Fatalf("%+v %v", m, ok)
	}
	b[7] ^= 1
	if _, ok := ParseMeta(b); ok {
		t.Fatal("bad magic accepted")
	}
}

// TestXDPEthernetMatch checks MAC matching in the program frame by frame against the
// reference: each address octet differing alone, MACs qualifying UDP and eCPRI rules, and
// the outer header of a VXLAN frame.
func TestXDPEthernetMatch(t *testing.T) {
	p := loadProgram(t)
	pool := frametest.MACPool
	flows := []config.Flow{
		{Name: "dst", ID: 1, Match: config.Match{Ethernet: &config.EthernetMatch{Dst: pool[3]}}, Actions: []config.Action{{Type: config.ActionQueue, Queues: []int{0}}}},
		{Name: "src+udp", ID: 2, Match: config.Match{Ethernet: &config.EthernetMatch{Src: pool[2]}, UDPDst: config.PortRange{Lo: 9, Hi: 9}}, Actions: []config.Action{{Type: config.ActionQueue, Queues: []int{1}}}},
		{Name: "both+ecpri", ID: 3, Match: config.Match{Ethernet: &config.EthernetMatch{Src: pool[0], Dst: pool[1]}, ECPRI: &config.ECPRIMatch{}}, Actions: []config.Action{{Type: config.ActionQueue, Queues: []int{2}}}},
	}
	tb := &flow.Table{Slots: frametest.Compile(t, flows, 4), Isolation: true}
	install(t, p, tb)
	src, dst := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	base := frametest.Eth(flow.EtherTypeIPv4, frametest.IPv4(src, dst, protoUDP, 0, 0, frametest.UDP(1, 9, nil)))
	ec := frametest.Eth(flow.EtherTypeECPRI, []byte{0x10, 0, 0, 4})
	seen := map[uint32]int{}
	for _, f0 := range [][]byte{base, ec} {
		for _, d := range pool {
			for _, s := range pool {
				f := append([]byte(nil), f0...)
				copy(f[0:6], d)
				copy(f[6:12], s)
				seen[check(t, p, tb, f).FlowID]++
				// Each octet of each address changed alone.
				for k := 0; k < 12; k++ {
					g := append([]byte(nil), f...)
					g[k] ^= 0x40
					seen[check(t, p, tb, g).FlowID]++
				}
			}
		}
	}
	for id := uint32(0); id <= 3; id++ {
		if seen[id] == 0 {
			t.Fatalf("flow %d never matched: %v", id, seen)
		}
	}
	t.Logf("flows matched: %v", seen)
}

// TestXDPPacketBounds (issue 19 items 9 and 16): the program reads nothing past the IPv4
// packet's tot_len, never decapsulates a fragment or GRE version 1, and bounds a tunnel's
// headers and a flex word by the outer packet; each crafted frame must get the reference's
// verdict and the one named here.
func TestXDPPacketBounds(t *testing.T) {
	p := loadProgram(t)
	src, dst := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	tunnel := func(id int, tt config.TunnelType) config.Flow {
		tn := config.Tunnel{Type: tt, VNI: 5, OuterUDPDst: flow.DefaultVXLANPort, GREProtocol: flow.EtherTypeIPv4}
		return config.Flow{Name: "tun", ID: id, Actions: []config.Action{{Type: config.ActionTunnelDecap, Tunnel: tn}, {Type: config.ActionQueue, Queues: []int{1}}}}
	}
	want := func(tb *flow.Table, name string, f []byte, flowID uint32, action flow.Action) {
		t.Helper()
		v := check(t, p, tb, f)
		if v.Action != action || (action == flow.ActionSteer && v.FlowID != flowID) {
			t.Fatalf("%s: %+v, want %v flow %d", name, v, action, flowID)
		}
	}
	// UDP header past tot_len, cut by it, IHL beyond tot_len, options within it.
	flows := []config.Flow{
		{Name: "udp-dst", ID: 11, Match: config.Match{UDPDst: config.PortRange{Lo: 2000, Hi: 2000}}, Actions: []config.Action{{Type: config.ActionQueue, Queues: []int{1}}}},
		{Name: "src", ID: 12, Match: config.Match{IPv4Src: src}, Actions: []config.Action{{Type: config.ActionQueue, Queues: []int{2}}}},
	}
	tb := &flow.Table{Slots: frametest.Compile(t, flows, 4), Isolation: true}
	install(t, p, tb)
	good := frametest.Eth(flow.EtherTypeIPv4, frametest.IPv4(src, dst, protoUDP, 0, 0, frametest.UDP(1000, 2000, []byte("payload"))))
	want(tb, "well-formed", good, 11, flow.ActionSteer)
	for _, totLen := range []uint16{20, 24, 27} {
		f := append([]byte{}, good...)
		binary.BigEndian.PutUint16(f[14+2:], totLen)
		want(tb, "UDP header past tot_len "+strconv.Itoa(int(totLen)), f, 12, flow.ActionSteer)
	}
	opts := frametest.Eth(flow.EtherTypeIPv4, frametest.IPv4(src, dst, protoUDP, 4, 0, frametest.UDP(1000, 2000, nil)))
	binary.BigEndian.PutUint16(opts[14+2:], 20)
	want(tb, "IHL beyond tot_len", opts, 0, flow.ActionPass)
	want(tb, "IHL 60 within tot_len", frametest.Eth(flow.EtherTypeIPv4, frametest.IPv4(src, dst, protoUDP, 40, 0, frametest.UDP(1000, 2000, nil))), 11, flow.ActionSteer)

	// Tunnels: fragments, GRE version 1, a tunnel cut by the outer tot_len.
	inner := frametest.Eth(flow.EtherTypeIPv4, frametest.IPv4(src, dst, protoUDP, 0, 0, frametest.UDP(1, 2, make([]byte, 64))))
	tb = &flow.Table{Slots: frametest.Compile(t, []config.Flow{tunnel(21, config.TunnelVXLAN)}, 4), Isolation: true}
	install(t, p, tb)
	vx := func(fo uint16) []byte {
		return frametest.Eth(flow.EtherTypeIPv4, frametest.IPv4(src, dst, protoUDP, 0, fo, frametest.UDP(49152, flow.DefaultVXLANPort, frametest.VXLAN(5, inner))))
	}
	want(tb, "VXLAN", vx(0), 21, flow.ActionSteer)
	want(tb, "VXLAN with DF", vx(0x4000), 21, flow.ActionSteer)
	want(tb, "VXLAN first fragment (MF)", vx(0x2000), 0, flow.ActionPass)
	want(tb, "VXLAN first fragment (MF+DF)", vx(0x6000), 0, flow.ActionPass)
	cut := vx(0)
	binary.BigEndian.PutUint16(cut[14+2:], 20+8+8+10) // ends inside the inner Ethernet header
	want(tb, "VXLAN cut by the outer tot_len", cut, 0, flow.ActionPass)
	cut = vx(0)
	binary.BigEndian.PutUint16(cut[14+2:], 20+8+8+14+10) // ends inside the inner IPv4 header
	want(tb, "VXLAN inner IPv4 cut by the outer tot_len", cut, 21, flow.ActionSteer)

	tb = &flow.Table{Slots: frametest.Compile(t, []config.Flow{tunnel(22, config.TunnelGRE)}, 4), Isolation: true}
	install(t, p, tb)
	g0 := frametest.Eth(flow.EtherTypeIPv4, frametest.IPv4(src, dst, protoGRE, 0, 0, frametest.GRE(flow.EtherTypeIPv4, nil, false, false, inner[14:])))
	want(tb, "GRE version 0", g0, 22, flow.ActionSteer)
	g1 := append([]byte{}, g0...)
	g1[14+20+1] |= 1
	want(tb, "GRE version 1", g1, 0, flow.ActionPass)
	gfrag := frametest.Eth(flow.EtherTypeIPv4, frametest.IPv4(src, dst, protoGRE, 0, 0x2000, frametest.GRE(flow.EtherTypeIPv4, nil, false, false, inner[14:])))
	want(tb, "GRE first fragment", gfrag, 0, flow.ActionPass)
	gcut := append([]byte{}, g0...)
	binary.BigEndian.PutUint16(gcut[14+2:], 20+2)
	want(tb, "GRE header cut by tot_len", gcut, 0, flow.ActionPass)

	// A flex word past the outer packet does not match.
	flex := config.Flow{Name: "flex", ID: 31, Match: config.Match{Flex: &config.FlexMatch{ItemID: 1, Value: 0x01020304, Mask: 0xffffffff}}, Actions: []config.Action{{Type: config.ActionQueue, Queues: []int{3}}}}
	tb = &flow.Table{Slots: frametest.Compile(t, []config.Flow{flex}, 4), Isolation: true}
	install(t, p, tb)
	fl := frametest.Eth(flow.EtherTypeIPv4, frametest.IPv4(src, dst, protoUDP, 0, 0, frametest.UDP(1000, 4096, []byte{1, 2, 3, 4, 9, 9})))
	want(tb, "flex word inside the packet", fl, 31, flow.ActionSteer)
	binary.BigEndian.PutUint16(fl[14+2:], 20+8+2)
	want(tb, "flex word past tot_len", fl, 0, flow.ActionPass)
}

// TestXDPIPv6 steers IPv6/UDP frames by address and port, spreads them by RSS over the IPv6
// 4-tuple exactly as the Go Toeplitz reference, and leaves alone what has no UDP header to
// match (an extension header, a payload length that cuts it, a truncated header).
func TestXDPIPv6(t *testing.T) {
	p := loadProgram(t)
	a, b := netip.MustParseAddr("fd00::1"), netip.MustParseAddr("2001:db8::7")
	flows := []config.Flow{
		{Name: "v6src", ID: 61, Match: config.Match{IPv6Src: a, UDPDst: config.PortRange{Lo: 9000, Hi: 9000}}, Actions: []config.Action{{Type: config.ActionQueue, Queues: []int{1}}}},
		{Name: "rss6", ID: 62, Match: config.Match{UDPDst: config.PortRange{Lo: 7000, Hi: 7999}}, Actions: []config.Action{{Type: config.ActionQueue, Queues: []int{0, 1, 2, 3}}}},
	}
	tb := &flow.Table{Slots: frametest.Compile(t, flows, 4), Isolation: true}
	install(t, p, tb)
	six := func(src, dst netip.Addr, next uint8, sp, dp uint16) []byte {
		return frametest.Eth(flow.EtherTypeIPv6, frametest.IPv6(src, dst, next, frametest.UDP(sp, dp, []byte("six"))))
	}
	if v := check(t, p, tb, six(a, b, protoUDP, 1, 9000)); v.FlowID != 61 || v.Queue != 1 {
		t.Fatalf("IPv6 source rule: %+v", v)
	}
	if v := check(t, p, tb, six(b, a, protoUDP, 1, 9000)); v.Action != flow.ActionPass {
		t.Fatalf("other source: %+v", v)
	}
	if v := check(t, p, tb, six(a, b, 0, 1, 9000)); v.Action != flow.ActionPass {
		t.Fatalf("hop-by-hop header before UDP: %+v", v)
	}
	cut := six(a, b, protoUDP, 1, 9000)
	binary.BigEndian.PutUint16(cut[14+4:], 7) // payload length ends inside the UDP header
	if v := check(t, p, tb, cut); v.Action != flow.ActionPass {
		t.Fatalf("UDP header past the payload length: %+v", v)
	}
	if v := check(t, p, tb, six(a, b, protoUDP, 1, 9000)[:14+39]); v.Action != flow.ActionPass {
		t.Fatalf("truncated IPv6 header: %+v", v)
	}
	// An IPv4 rule never takes IPv6 frames.
	tb4 := &flow.Table{Slots: frametest.Compile(t, []config.Flow{{Name: "v4", ID: 1, Match: config.Match{IPv4Src: netip.MustParseAddr("10.0.0.1")}, Actions: []config.Action{{Type: config.ActionQueue, Queues: []int{0}}}}}, 4), Isolation: true}
	install(t, p, tb4)
	if v := check(t, p, tb4, six(a, b, protoUDP, 1, 9000)); v.Action != flow.ActionPass {
		t.Fatalf("IPv4 rule on an IPv6 frame: %+v", v)
	}
	install(t, p, tb)
	r := rand.New(rand.NewPCG(rand.Uint64(), 6))
	per := map[int]int{}
	for n := 0; n < 256; n++ {
		var s16, d16 [16]byte
		for i := range s16 {
			s16[i], d16[i] = byte(r.IntN(256)), byte(r.IntN(256))
		}
		s16[0], d16[0] = 0xfd, 0xfd
		s, d := netip.AddrFrom16(s16), netip.AddrFrom16(d16)
		sp, dp := uint16(1024+r.IntN(60000)), uint16(7000+r.IntN(1000))
		v := check(t, p, tb, six(s, d, protoUDP, sp, dp))
		want := flow.RSSIndex(flow.Tuple{Src: s, Dst: d, SrcPort: sp, DstPort: dp}.Hash(flow.DefaultRSSKey[:]), 4)
		if v.FlowID != 62 || v.Queue != want {
			t.Fatalf("[%v]:%d → [%v]:%d: flow %d queue %d, Toeplitz says queue %d", s, sp, d, dp, v.FlowID, v.Queue, want)
		}
		per[v.Queue]++
	}
	if len(per) != 4 {
		t.Fatalf("256 IPv6 tuples reached only queues %v", per)
	}
}
