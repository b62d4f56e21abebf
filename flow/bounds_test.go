package flow_test

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/flow"
	"github.com/daqiri-go/daqiri/flow/internal/frametest"
)

// tunnelFlow is an RX flow decapsulating t (VXLAN VNI 5, GRE protocol IPv4) to queue 1.
func tunnelFlow(id int, tt config.TunnelType) config.Flow {
	tn := config.Tunnel{Type: tt, VNI: 5, OuterUDPDst: flow.DefaultVXLANPort, GREProtocol: flow.EtherTypeIPv4}
	return config.Flow{Name: "tun", ID: id, Actions: []config.Action{{Type: config.ActionTunnelDecap, Tunnel: tn}, {Type: config.ActionQueue, Queues: []int{1}}}}
}

// TestReferenceRespectsIPv4Bounds (issue 19 item 9): the reference parser read the UDP header
// past the IPv4 packet's tot_len (Ethernet padding, or bytes a sender appended), and accepted
// an IHL longer than tot_len. Those bytes are not the packet: no rule may match on them.
func TestReferenceRespectsIPv4Bounds(t *testing.T) {
	src, dst := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	flows := []config.Flow{
		{Name: "udp-dst", ID: 11, Match: config.Match{UDPDst: config.PortRange{Lo: 2000, Hi: 2000}}, Actions: []config.Action{{Type: config.ActionQueue, Queues: []int{1}}}},
		{Name: "src", ID: 12, Match: config.Match{IPv4Src: src}, Actions: []config.Action{{Type: config.ActionQueue, Queues: []int{2}}}},
	}
	tb := &flow.Table{Slots: frametest.Compile(t, flows, 4), Isolation: true}
	good := frametest.Eth(flow.EtherTypeIPv4, frametest.IPv4(src, dst, frametest.ProtoUDP, 0, 0, frametest.UDP(1000, 2000, []byte("payload"))))
	if v := tb.Classify(good); v.FlowID != 11 {
		t.Fatalf("well-formed: %+v", v)
	}
	// tot_len 20: an IPv4 header with nothing after it; the 8 bytes that follow in the frame
	// look like a UDP header to port 2000 but are padding.
	padded := append([]byte{}, good...)
	binary.BigEndian.PutUint16(padded[14+2:], 20)
	if v := tb.Classify(padded); v.FlowID != 12 {
		t.Fatalf("UDP header past tot_len: %+v, want only the IPv4 source rule (flow 12)", v)
	}
	// tot_len cuts the UDP header in half.
	binary.BigEndian.PutUint16(padded[14+2:], 24)
	if v := tb.Classify(padded); v.FlowID != 12 {
		t.Fatalf("UDP header cut by tot_len: %+v", v)
	}
	// IHL 24 bytes, tot_len 20: not a valid IPv4 packet at all.
	opts := frametest.Eth(flow.EtherTypeIPv4, frametest.IPv4(src, dst, frametest.ProtoUDP, 4, 0, frametest.UDP(1000, 2000, nil)))
	binary.BigEndian.PutUint16(opts[14+2:], 20)
	if v := tb.Classify(opts); v.Action != flow.ActionPass {
		t.Fatalf("IHL beyond tot_len: %+v, want unmatched", v)
	}
	// IPv4 options (IHL 60) within tot_len still work.
	long := frametest.Eth(flow.EtherTypeIPv4, frametest.IPv4(src, dst, frametest.ProtoUDP, 40, 0, frametest.UDP(1000, 2000, nil)))
	if v := tb.Classify(long); v.FlowID != 11 {
		t.Fatalf("IHL 60 within tot_len: %+v", v)
	}
	// A VXLAN payload that the outer tot_len cuts off is not decapsulated as a whole frame.
	tb = &flow.Table{Slots: frametest.Compile(t, []config.Flow{tunnelFlow(21, config.TunnelVXLAN)}, 4), Isolation: true}
	inner := frametest.Eth(flow.EtherTypeIPv4, frametest.IPv4(src, dst, frametest.ProtoUDP, 0, 0, frametest.UDP(1, 2, nil)))
	vx := frametest.Eth(flow.EtherTypeIPv4, frametest.IPv4(src, dst, frametest.ProtoUDP, 0, 0, frametest.UDP(49152, flow.DefaultVXLANPort, frametest.VXLAN(5, inner))))
	if v := tb.Classify(vx); v.FlowID != 21 || v.Decap != flow.DecapVXLAN {
		t.Fatalf("VXLAN: %+v", v)
	}
	cut := append([]byte{}, vx...)
	binary.BigEndian.PutUint16(cut[14+2:], 20+8+8+10) // outer packet ends inside the inner Ethernet header
	if v := tb.Classify(cut); v.Action != flow.ActionPass {
		t.Fatalf("VXLAN cut by the outer tot_len: %+v, want unmatched", v)
	}
}

// TestReferenceTunnelEdgeCases (issue 19 item 16): a fragmented tunnel packet's first
// fragment was decapsulated although its inner frame is incomplete, and GRE version 1 (PPTP)
// was decapsulated as version 0. Neither matches a decap rule now: under flow isolation they
// go to the kernel (counted as kernel_passed), otherwise to the default queue unmarked.
func TestReferenceTunnelEdgeCases(t *testing.T) {
	src, dst := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	inner := frametest.Eth(flow.EtherTypeIPv4, frametest.IPv4(src, dst, frametest.ProtoUDP, 0, 0, frametest.UDP(1, 2, make([]byte, 64))))
	tb := &flow.Table{Slots: frametest.Compile(t, []config.Flow{tunnelFlow(21, config.TunnelVXLAN)}, 4), Isolation: true}
	for _, fo := range []uint16{0x2000, 0x2000 | 0x4000} { // MF, MF+DF (DF alone is no fragment)
		f := frametest.Eth(flow.EtherTypeIPv4, frametest.IPv4(src, dst, frametest.ProtoUDP, 0, fo, frametest.UDP(49152, flow.DefaultVXLANPort, frametest.VXLAN(5, inner))))
		if v := tb.Classify(f); v.Action != flow.ActionPass {
			t.Fatalf("VXLAN first fragment (flags %#x): %+v, want unmatched", fo, v)
		}
	}
	df := frametest.Eth(flow.EtherTypeIPv4, frametest.IPv4(src, dst, frametest.ProtoUDP, 0, 0x4000, frametest.UDP(49152, flow.DefaultVXLANPort, frametest.VXLAN(5, inner))))
	if v := tb.Classify(df); v.FlowID != 21 {
		t.Fatalf("VXLAN with DF: %+v, want decapsulated", v)
	}
	tb = &flow.Table{Slots: frametest.Compile(t, []config.Flow{tunnelFlow(22, config.TunnelGRE)}, 4), Isolation: true}
	g0 := frametest.Eth(flow.EtherTypeIPv4, frametest.IPv4(src, dst, frametest.ProtoGRE, 0, 0, frametest.GRE(flow.EtherTypeIPv4, nil, false, false, inner[14:])))
	if v := tb.Classify(g0); v.FlowID != 22 || v.Decap != flow.DecapGRE {
		t.Fatalf("GRE version 0: %+v", v)
	}
	g1 := append([]byte{}, g0...)
	g1[14+20+1] |= 1 // version 1
	if v := tb.Classify(g1); v.Action != flow.ActionPass {
		t.Fatalf("GRE version 1: %+v, want unmatched", v)
	}
	gfrag := frametest.Eth(flow.EtherTypeIPv4, frametest.IPv4(src, dst, frametest.ProtoGRE, 0, 0x2000, frametest.GRE(flow.EtherTypeIPv4, nil, false, false, inner[14:])))
	if v := tb.Classify(gfrag); v.Action != flow.ActionPass {
		t.Fatalf("GRE first fragment: %+v, want unmatched", v)
	}
}
