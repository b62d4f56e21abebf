// Package frametest builds Ethernet frames byte by byte and random frames and flow rules for
// the tests of package flow and its backends (flow/xdp), which compare a backend with the Go
// reference classifier on the same inputs. The integration tests use scapy as an independent
// generator instead.
package frametest

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/flow"
)

// IP protocol numbers (IANA).
const (
	ProtoUDP = 17
	ProtoGRE = 47
	protoUDP = ProtoUDP
	protoGRE = ProtoGRE
)

var (
	macA = []byte{0x02, 0, 0, 0, 0, 1}
	macB = []byte{0x02, 0, 0, 0, 0, 2}
	// MACPool is the addresses random frames and rules draw from; the last differs from
	// the first only in its final octet, the first from the second only in its first.
	MACPool = [][]byte{macA, macB, {0x12, 0, 0, 0, 0, 2}, {0x02, 0, 0, 0, 0, 0x81}}
)

// Eth is an Ethernet frame from macA to macB with EtherType et.
func Eth(et uint16, payload []byte) []byte {
	b := append(append(append([]byte{}, macB...), macA...), byte(et>>8), byte(et))
	return append(b, payload...)
}

// IPv4 builds an IPv4 header with optLen bytes of options (multiple of 4) and the payload.
func IPv4(src, dst netip.Addr, proto uint8, optLen int, frag uint16, payload []byte) []byte {
	ihl := 20 + optLen
	h := make([]byte, ihl)
	h[0] = 0x40 | byte(ihl/4)
	binary.BigEndian.PutUint16(h[2:], uint16(ihl+len(payload)))
	binary.BigEndian.PutUint16(h[6:], frag)
	h[8], h[9] = 64, proto
	s, d := src.As4(), dst.As4()
	copy(h[12:], s[:])
	copy(h[16:], d[:])
	for i := 20; i < ihl; i++ {
		h[i] = 1 // NOP options
	}
	return append(h, payload...)
}

// UDP is a UDP header and payload.
func UDP(sport, dport uint16, payload []byte) []byte {
	h := make([]byte, 8)
	binary.BigEndian.PutUint16(h[0:], sport)
	binary.BigEndian.PutUint16(h[2:], dport)
	binary.BigEndian.PutUint16(h[4:], uint16(8+len(payload)))
	return append(h, payload...)
}

// VXLAN is a VXLAN header (valid-VNI flag set) and the inner frame.
func VXLAN(vni uint32, inner []byte) []byte {
	h := make([]byte, 8)
	h[0] = 0x08
	binary.BigEndian.PutUint32(h[4:], vni<<8)
	return append(h, inner...)
}

// GRE is a GRE header with the optional checksum, key and sequence words and the payload.
func GRE(proto uint16, key *uint32, csum, seq bool, inner []byte) []byte {
	var fl uint16
	h := []byte{0, 0, byte(proto >> 8), byte(proto)}
	if csum {
		fl |= 0x8000
		h = append(h, 0, 0, 0, 0)
	}
	if key != nil {
		fl |= 0x2000
		h = binary.BigEndian.AppendUint32(h, *key)
	}
	if seq {
		fl |= 0x1000
		h = append(h, 0, 0, 0, 9)
	}
	binary.BigEndian.PutUint16(h, fl)
	return append(h, inner...)
}

// Flex are flex items (UDP destination port, payload offset) for rules that match payload
// words.
var Flex = []config.FlexItem{{Name: "f1", ID: 1, UDPDstPort: 4096, Offset: 0}, {Name: "f2", ID: 2, UDPDstPort: 5000, Offset: 12}, {Name: "f3", ID: 3, UDPDstPort: 4097, Offset: 28}}

// pools keep random frames and random rules likely to meet.
var (
	ipPool   = []string{"10.0.0.1", "10.0.0.2", "192.168.1.7", "172.16.5.9"}
	portPool = []uint16{4096, 4097, 4098, 5000, 53, 4789, 9999}
	ip6Pool  = []string{"fd00::1", "fd00::2", "2001:db8::7", "fe80::1:2"}
)

// Pick is a random element of xs.
func Pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// RandIP is one of a few IPv4 addresses, so random frames and rules meet.
func RandIP(r *rand.Rand) netip.Addr { return netip.MustParseAddr(Pick(r, ipPool)) }

// RandIP6 picks an IPv6 address from a small pool.
func RandIP6(r *rand.Rand) netip.Addr { return netip.MustParseAddr(Pick(r, ip6Pool)) }

// IPv6 builds a fixed IPv6 header (payload length = len(payload)) and the payload.
func IPv6(src, dst netip.Addr, next uint8, payload []byte) []byte {
	h := make([]byte, 40)
	h[0] = 0x60
	binary.BigEndian.PutUint16(h[4:], uint16(len(payload)))
	h[6], h[7] = next, 64
	s, d := src.As16(), dst.As16()
	copy(h[8:], s[:])
	copy(h[24:], d[:])
	return append(h, payload...)
}

// RandUDPIPv6 is a random IPv6 packet: UDP mostly, sometimes another next header (an
// extension header, which hides the UDP header). Damage sometimes cuts its payload length.
func RandUDPIPv6(r *rand.Rand) []byte {
	next := uint8(protoUDP)
	switch r.IntN(8) {
	case 0:
		next = 0 // hop-by-hop options
	case 1:
		next = 6
	}
	return IPv6(RandIP6(r), RandIP6(r), next, UDP(Pick(r, portPool), Pick(r, portPool), RandPayload(r)))
}

// RandPayload is up to 47 bytes of few distinct values, so flex matches happen.
func RandPayload(r *rand.Rand) []byte {
	p := make([]byte, r.IntN(48))
	for i := range p {
		p[i] = byte(r.IntN(4)) // few values: flex matches happen
	}
	return p
}

// RandUDPIPv4 is an IPv4 packet, sometimes with options, a later fragment or TCP, around UDP.
func RandUDPIPv4(r *rand.Rand) []byte {
	opt := 0
	if r.IntN(4) == 0 {
		opt = 4 * r.IntN(11)
	}
	var frag uint16
	if r.IntN(8) == 0 {
		frag = uint16(r.IntN(3)) // non-zero offset: a later fragment
	}
	proto := uint8(protoUDP)
	if r.IntN(8) == 0 {
		proto = 6
	}
	return IPv4(RandIP(r), RandIP(r), proto, opt, frag, UDP(Pick(r, portPool), Pick(r, portPool), RandPayload(r)))
}

// RandFrame makes a random frame of one of many shapes, sometimes damaged.
func RandFrame(r *rand.Rand) []byte { return Damage(r, RandIntactFrame(r)) }

// RandIntactFrame makes a random frame of one of RandFrame's shapes, undamaged: every
// header is complete and every IPv4 tot_len is the packet's length.
func RandIntactFrame(r *rand.Rand) []byte {
	var f []byte
	switch r.IntN(11) {
	case 0, 1, 2:
		f = Eth(flow.EtherTypeIPv4, RandUDPIPv4(r))
	case 3:
		tag := []byte{0, byte(r.IntN(4)), 0x08, 0x00}
		f = Eth(Pick(r, []uint16{flow.EtherTypeVLAN, flow.EtherTypeQinQ}), append(tag, RandUDPIPv4(r)...))
	case 4:
		inner := append([]byte{0, 7, 0x08, 0x00}, RandUDPIPv4(r)...)
		f = Eth(flow.EtherTypeQinQ, append([]byte{0, 3, 0x81, 0x00}, inner...))
	case 5:
		in := Eth(flow.EtherTypeIPv4, RandUDPIPv4(r))
		f = Eth(flow.EtherTypeIPv4, IPv4(RandIP(r), RandIP(r), protoUDP, 0, 0, UDP(49152, Pick(r, []uint16{4789, 4789, 8472}), VXLAN(uint32(r.IntN(3)), in))))
	case 6:
		var key *uint32
		if r.IntN(2) == 0 {
			k := uint32(r.IntN(3))
			key = &k
		}
		f = Eth(flow.EtherTypeIPv4, IPv4(RandIP(r), RandIP(r), protoGRE, 0, 0, GRE(Pick(r, []uint16{0x0800, 0x0800, 0x86dd}), key, r.IntN(2) == 0, r.IntN(2) == 0, RandUDPIPv4(r))))
	case 7:
		k := uint32(r.IntN(3))<<8 | uint32(r.IntN(256))
		in := Eth(flow.EtherTypeIPv4, RandUDPIPv4(r))
		f = Eth(flow.EtherTypeIPv4, IPv4(RandIP(r), RandIP(r), protoGRE, 0, 0, GRE(flow.EtherTypeTEB, &k, r.IntN(2) == 0, false, in)))
	case 8:
		p := []byte{0x10, byte(r.IntN(3)), 0, 8, 0, byte(r.IntN(3)), 0, 1}
		f = Eth(flow.EtherTypeECPRI, append(p, RandPayload(r)...))
	case 9:
		if r.IntN(2) == 0 {
			f = Eth(flow.EtherTypeIPv6, RandUDPIPv6(r))
		} else {
			f = Eth(flow.EtherTypeVLAN, append([]byte{0, 4, 0x86, 0xdd}, RandUDPIPv6(r)...))
		}
	default:
		f = Eth(Pick(r, []uint16{0x0806, 0x86dd, 0x88cc}), RandPayload(r))
	}
	if r.IntN(2) == 0 { // other addresses than Eth's
		copy(f[0:6], Pick(r, MACPool))
		copy(f[6:12], Pick(r, MACPool))
	}
	return f
}

// Damage sometimes truncates f, corrupts its first IPv4 version/IHL byte, shortens that
// header's tot_len or an IPv6 header's payload length so that it cuts the UDP header
// (RandFrame's damage), and returns it.
func Damage(r *rand.Rand, f []byte) []byte {
	switch r.IntN(10) {
	case 0: // truncate anywhere from 14 bytes on (PROG_TEST_RUN needs an Ethernet header)
		f = f[:14+r.IntN(len(f)-13)]
	case 1: // corrupt the first IPv4 header's version/IHL byte
		for _, off := range []int{14, 18, 22} {
			if len(f) > off && f[off]>>4 == 4 {
				f[off] = byte(r.IntN(256))
				break
			}
		}
	case 2: // shorten the first IPv4 header's tot_len: the frame carries bytes past the packet
		for _, off := range []int{14, 18, 22} {
			if len(f) > off+4 && f[off]>>4 == 4 {
				l := binary.BigEndian.Uint16(f[off+2:])
				binary.BigEndian.PutUint16(f[off+2:], uint16(r.IntN(int(l)+1)))
				break
			}
		}
	case 3: // an IPv6 payload length that cuts the UDP header
		for _, off := range []int{14, 18} {
			if len(f) >= off+40 && binary.BigEndian.Uint16(f[off-2:]) == flow.EtherTypeIPv6 && f[off]>>4 == 6 {
				binary.BigEndian.PutUint16(f[off+4:], uint16(r.IntN(9)))
				break
			}
		}
	}
	return f
}

// U8 and U16 point at a copy of v (optional config fields).
func U8(v uint8) *uint8    { return &v }
func U16(v uint16) *uint16 { return &v }

// RandRule makes a random RX flow over queues 0..nq-1 (queue ids = positions).
func RandRule(r *rand.Rand, id, nq int, flex []config.FlexItem) config.Flow {
	f := config.Flow{Name: "r", ID: id}
	var m config.Match
	switch r.IntN(4) {
	case 0: // flex
		m.Flex = &config.FlexMatch{ItemID: flex[r.IntN(len(flex))].ID, Value: uint32(r.IntN(4)), Mask: Pick(r, []uint32{0xff, 0xffff, 0x3})}
	case 1: // eCPRI
		e := &config.ECPRIMatch{}
		if r.IntN(2) == 0 {
			e.MsgType = U8(uint8(r.IntN(3)))
			if r.IntN(2) == 0 {
				e.PCID = U16(uint16(r.IntN(3)))
			}
		}
		m.ECPRI = e
	default:
		if r.IntN(2) == 0 {
			m.IPv4Src = RandIP(r)
		}
		if r.IntN(2) == 0 {
			m.IPv4Dst = RandIP(r)
		}
		if r.IntN(2) == 0 {
			p := Pick(r, portPool)
			m.UDPSrc = config.PortRange{Lo: p, Hi: p + uint16(r.IntN(3))}
		}
		if r.IntN(2) == 0 {
			p := Pick(r, portPool)
			m.UDPDst = config.PortRange{Lo: p, Hi: p}
		}
		if r.IntN(6) == 0 {
			m.IPv4Len = uint16(28 + r.IntN(80))
		}
		if r.IntN(4) == 0 {
			// An IPv6 rule instead: addresses of the outer IPv6 header, no tunnel.
			m.IPv4Src, m.IPv4Dst, m.IPv4Len = netip.Addr{}, netip.Addr{}, 0
			if r.IntN(2) == 0 {
				m.IPv6Src = RandIP6(r)
			}
			if r.IntN(2) == 0 {
				m.IPv6Dst = RandIP6(r)
			}
			if r.IntN(3) == 0 {
				f.Actions = append(f.Actions, config.Action{Type: config.ActionVLANPop})
			}
			break
		}
		switch r.IntN(6) {
		case 0:
			f.Actions = append(f.Actions, config.Action{Type: config.ActionVLANPop})
		case 1:
			f.Actions = append(f.Actions, config.Action{Type: config.ActionTunnelDecap, Tunnel: config.Tunnel{Type: config.TunnelVXLAN, VNI: uint32(r.IntN(3)), OuterUDPDst: 4789}})
		case 2:
			t := config.Tunnel{Type: config.TunnelGRE, GREProtocol: 0x0800}
			if r.IntN(2) == 0 {
				t.OuterIPv4Src = RandIP(r)
			}
			f.Actions = append(f.Actions, config.Action{Type: config.ActionTunnelDecap, Tunnel: t})
		case 3:
			f.Actions = append(f.Actions, config.Action{Type: config.ActionTunnelDecap, Tunnel: config.Tunnel{Type: config.TunnelNVGRE, TNI: uint32(r.IntN(3))}})
		}
	}
	if r.IntN(4) == 0 {
		e := &config.EthernetMatch{}
		switch r.IntN(3) {
		case 0:
			e.Src = Pick(r, MACPool)
		case 1:
			e.Dst = Pick(r, MACPool)
		default:
			e.Src, e.Dst = Pick(r, MACPool), Pick(r, MACPool)
		}
		m.Ethernet = e
	}
	f.Match = m
	qs := []int{r.IntN(nq)}
	if m.ECPRI == nil && r.IntN(3) == 0 {
		qs = r.Perm(nq)[:1+r.IntN(nq)]
	}
	f.Actions = append(f.Actions, config.Action{Type: config.ActionQueue, Queues: qs})
	return f
}

// Compile compiles RX flows over queues 0..nq-1 (queue ids = positions) with Flex's items,
// failing the test on an error.
func Compile(t testing.TB, flows []config.Flow, nq int) []*flow.Rule {
	t.Helper()
	ids := make([]int, nq)
	for i := range ids {
		ids[i] = i
	}
	var rs []*flow.Rule
	for i := range flows {
		r, err := flow.Compile(nil, "flow", &flows[i], ids, Flex)
		if err != nil {
			t.Fatalf("compile %+v: %v", flows[i], err)
		}
		rs = append(rs, r)
	}
	return rs
}
