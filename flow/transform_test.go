package flow_test

import (
	"bytes"
	"math/rand/v2"
	"net"
	"net/netip"
	"testing"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/flow"
	"github.com/daqiri-go/daqiri/flow/internal/frametest"
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

func randInner(r *rand.Rand) ([]byte, netip.Addr, netip.Addr, uint16, uint16) {
	s := netip.AddrFrom4([4]byte{10, 1, byte(r.IntN(256)), byte(1 + r.IntN(250))})
	d := netip.AddrFrom4([4]byte{10, 2, byte(r.IntN(256)), byte(1 + r.IntN(250))})
	sp, dp := uint16(30000+r.IntN(10000)), uint16(30000+r.IntN(10000)) // no port gopacket decodes specially
	pl := make([]byte, r.IntN(200))
	for i := range pl {
		pl[i] = byte(r.Uint32())
	}
	return frametest.Eth(flow.EtherTypeIPv4, frametest.IPv4(s, d, 17, 0, 0, frametest.UDP(sp, dp, pl))), s, d, sp, dp
}

// TestEncapParsesInGopacket encapsulates random frames with each tunnel and VLAN push and
// decodes the output with gopacket: outer headers as configured, inner frame intact; then
// decapsulates and gets the inner frame back.
func TestEncapParsesInGopacket(t *testing.T) {
	r := rand.New(rand.NewPCG(rand.Uint64(), 3))
	omacS, omacD := net.HardwareAddr{2, 9, 9, 9, 9, 1}, net.HardwareAddr{2, 9, 9, 9, 9, 2}
	oS, oD := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	for n := 0; n < 50; n++ {
		inner, s, d, sp, dp := randInner(r)
		for _, kind := range []config.TunnelType{config.TunnelVXLAN, config.TunnelGRE, config.TunnelNVGRE} {
			tun := config.Tunnel{Type: kind, OuterEthSrc: omacS, OuterEthDst: omacD, OuterIPv4Src: oS, OuterIPv4Dst: oD,
				VNI: uint32(r.IntN(1 << 24)), TNI: uint32(r.IntN(1 << 24)), FlowID: uint8(r.IntN(256)), OuterUDPDst: 4789, GREProtocol: 0x0800}
			buf := make([]byte, 4096)
			copy(buf, inner)
			m, err := flow.Encapsulate(buf, len(inner), &tun)
			if err != nil {
				t.Fatal(err)
			}
			if want := len(inner) + flow.Overhead(&config.Action{Type: config.ActionTunnelEncap, Tunnel: tun}); m != want {
				t.Fatalf("%s: %d bytes, want %d", kind, m, want)
			}
			pkt := gopacket.NewPacket(buf[:m], layers.LayerTypeEthernet, gopacket.Default)
			if el := pkt.ErrorLayer(); el != nil {
				t.Fatalf("%s: gopacket: %v", kind, el.Error())
			}
			e := pkt.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
			if !bytes.Equal(e.SrcMAC, omacS) || !bytes.Equal(e.DstMAC, omacD) {
				t.Fatalf("%s: outer MACs %v→%v", kind, e.SrcMAC, e.DstMAC)
			}
			ips := pkt.Layers()
			var outer *layers.IPv4
			for _, l := range ips {
				if ip, ok := l.(*layers.IPv4); ok {
					outer = ip
					break
				}
			}
			if outer == nil || !outer.SrcIP.Equal(oS.AsSlice()) || !outer.DstIP.Equal(oD.AsSlice()) || outer.TTL != 64 {
				t.Fatalf("%s: outer IPv4 %+v", kind, outer)
			}
			// gopacket verifies nothing by default; recompute the checksum it should carry.
			hdr := append([]byte{}, buf[14:34]...)
			hdr[10], hdr[11] = 0, 0
			if got := uint16(buf[24])<<8 | uint16(buf[25]); got != flow.IPChecksum(hdr) {
				t.Fatalf("%s: outer IPv4 checksum %#x, want %#x", kind, got, flow.IPChecksum(hdr))
			}
			switch kind {
			case config.TunnelVXLAN:
				vx, ok := pkt.Layer(layers.LayerTypeVXLAN).(*layers.VXLAN)
				if !ok || vx.VNI != tun.VNI || !vx.ValidIDFlag {
					t.Fatalf("vxlan layer %+v", vx)
				}
			case config.TunnelGRE, config.TunnelNVGRE:
				g, ok := pkt.Layer(layers.LayerTypeGRE).(*layers.GRE)
				if !ok {
					t.Fatalf("%s: no GRE layer", kind)
				}
				if kind == config.TunnelNVGRE && (!g.KeyPresent || g.Key != tun.TNI<<8|uint32(tun.FlowID) || g.Protocol != layers.EthernetTypeTransparentEthernetBridging) {
					t.Fatalf("nvgre: %+v", g)
				}
				if kind == config.TunnelGRE && g.Protocol != layers.EthernetTypeIPv4 {
					t.Fatalf("gre protocol %v", g.Protocol)
				}
			}
			// The innermost IPv4/UDP is the original flow.
			var in *layers.IPv4
			var u *layers.UDP
			for _, l := range pkt.Layers() {
				switch x := l.(type) {
				case *layers.IPv4:
					in = x
				case *layers.UDP:
					u = x
				}
			}
			if in == nil || u == nil || !in.SrcIP.Equal(s.AsSlice()) || !in.DstIP.Equal(d.AsSlice()) || uint16(u.SrcPort) != sp || uint16(u.DstPort) != dp {
				t.Fatalf("%s: inner flow lost: %v %v", kind, in, u)
			}
			start, l, ok := flow.Decapsulate(buf[:m], flow.DecapOf(kind))
			if !ok {
				t.Fatalf("%s: decapsulate failed", kind)
			}
			got := buf[start : start+l]
			if kind == config.TunnelGRE {
				// The MACs of a decapsulated GRE frame are the outer ones.
				if !bytes.Equal(got[14:], inner[14:]) || !bytes.Equal(got[0:6], omacD) {
					t.Fatalf("gre decap: %x", got)
				}
			} else if !bytes.Equal(got, inner) {
				t.Fatalf("%s decap: got %x want %x", kind, got, inner)
			}
		}
		// VLAN push then pop.
		buf := make([]byte, 4096)
		copy(buf, inner)
		v := config.VLAN{ID: uint16(r.IntN(4096)), PCP: uint8(r.IntN(8)), DEI: uint8(r.IntN(2))}
		m, err := flow.PushVLAN(buf, len(inner), &v)
		if err != nil {
			t.Fatal(err)
		}
		pkt := gopacket.NewPacket(buf[:m], layers.LayerTypeEthernet, gopacket.Default)
		q, ok := pkt.Layer(layers.LayerTypeDot1Q).(*layers.Dot1Q)
		if !ok || q.VLANIdentifier != v.ID || q.Priority != v.PCP || q.DropEligible != (v.DEI == 1) {
			t.Fatalf("dot1q %+v want %+v", q, v)
		}
		shift, ok := flow.PopVLAN(buf[:m])
		if !ok || !bytes.Equal(buf[shift:m], inner) {
			t.Fatalf("pop: %x", buf[shift:m])
		}
	}
}

func TestTransformBadInput(t *testing.T) {
	if _, ok := flow.PopVLAN(make([]byte, 17)); ok {
		t.Fatal("pop of a short frame")
	}
	if _, ok := flow.PopVLAN(frametest.Eth(flow.EtherTypeIPv4, make([]byte, 30))); ok {
		t.Fatal("pop of an untagged frame")
	}
	for _, k := range []flow.Decap{flow.DecapVXLAN, flow.DecapGRE, flow.DecapNVGRE} {
		if _, _, ok := flow.Decapsulate(frametest.Eth(flow.EtherTypeIPv4, make([]byte, 10)), k); ok {
			t.Fatalf("decap %d of a short frame", k)
		}
	}
	buf := make([]byte, 60)
	if _, err := flow.Encapsulate(buf, 40, &config.Tunnel{Type: config.TunnelVXLAN}); err == nil {
		t.Fatal("encap without room")
	}
	if _, err := flow.PushVLAN(buf, 58, &config.VLAN{}); err == nil {
		t.Fatal("push without room")
	}
}
