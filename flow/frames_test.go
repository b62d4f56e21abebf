package flow

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"

	"github.com/daqiri-go/daqiri/config"
)

// Test frames are assembled byte by byte here (the integration tests use scapy as the
// independent generator).

var (
	macA = []byte{0x02, 0, 0, 0, 0, 1}
	macB = []byte{0x02, 0, 0, 0, 0, 2}
)

func eth(et uint16, payload []byte) []byte {
	b := append(append(append([]byte{}, macB...), macA...), byte(et>>8), byte(et))
	return append(b, payload...)
}

func vlanTag(et uint16, id uint16, inner uint16, payload []byte) []byte {
	b := []byte{byte(id >> 8), byte(id), byte(inner >> 8), byte(inner)}
	_ = et
	return append(b, payload...)
}

// ipv4Hdr builds an IPv4 header with optLen bytes of options (multiple of 4) and the payload.
func ipv4Pkt(src, dst netip.Addr, proto uint8, optLen int, frag uint16, payload []byte) []byte {
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

func udpPkt(sport, dport uint16, payload []byte) []byte {
	h := make([]byte, 8)
	binary.BigEndian.PutUint16(h[0:], sport)
	binary.BigEndian.PutUint16(h[2:], dport)
	binary.BigEndian.PutUint16(h[4:], uint16(8+len(payload)))
	return append(h, payload...)
}

func vxlan(vni uint32, inner []byte) []byte {
	h := make([]byte, 8)
	h[0] = 0x08
	binary.BigEndian.PutUint32(h[4:], vni<<8)
	return append(h, inner...)
}

func gre(proto uint16, key *uint32, csum, seq bool, inner []byte) []byte {
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

// pools keep random frames and random rules likely to meet.
var (
	ipPool   = []string{"10.0.0.1", "10.0.0.2", "192.168.1.7", "172.16.5.9"}
	portPool = []uint16{4096, 4097, 4098, 5000, 53, 4789, 9999}
)

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

func randIP(r *rand.Rand) netip.Addr { return netip.MustParseAddr(pick(r, ipPool)) }

func randPayload(r *rand.Rand) []byte {
	p := make([]byte, r.IntN(48))
	for i := range p {
		p[i] = byte(r.IntN(4)) // few values: flex matches happen
	}
	return p
}

func randUDPIPv4(r *rand.Rand) []byte {
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
	return ipv4Pkt(randIP(r), randIP(r), proto, opt, frag, udpPkt(pick(r, portPool), pick(r, portPool), randPayload(r)))
}

// randFrame makes a random frame of one of many shapes, sometimes damaged.
func randFrame(r *rand.Rand) []byte {
	var f []byte
	switch r.IntN(10) {
	case 0, 1, 2:
		f = eth(EtherTypeIPv4, randUDPIPv4(r))
	case 3:
		tag := []byte{0, byte(r.IntN(4)), 0x08, 0x00}
		f = eth(pick(r, []uint16{EtherTypeVLAN, EtherTypeQinQ}), append(tag, randUDPIPv4(r)...))
	case 4:
		inner := append([]byte{0, 7, 0x08, 0x00}, randUDPIPv4(r)...)
		f = eth(EtherTypeQinQ, append([]byte{0, 3, 0x81, 0x00}, inner...))
	case 5:
		in := eth(EtherTypeIPv4, randUDPIPv4(r))
		f = eth(EtherTypeIPv4, ipv4Pkt(randIP(r), randIP(r), protoUDP, 0, 0, udpPkt(49152, pick(r, []uint16{4789, 4789, 8472}), vxlan(uint32(r.IntN(3)), in))))
	case 6:
		var key *uint32
		if r.IntN(2) == 0 {
			k := uint32(r.IntN(3))
			key = &k
		}
		f = eth(EtherTypeIPv4, ipv4Pkt(randIP(r), randIP(r), protoGRE, 0, 0, gre(pick(r, []uint16{0x0800, 0x0800, 0x86dd}), key, r.IntN(2) == 0, r.IntN(2) == 0, randUDPIPv4(r))))
	case 7:
		k := uint32(r.IntN(3))<<8 | uint32(r.IntN(256))
		in := eth(EtherTypeIPv4, randUDPIPv4(r))
		f = eth(EtherTypeIPv4, ipv4Pkt(randIP(r), randIP(r), protoGRE, 0, 0, gre(EtherTypeTEB, &k, r.IntN(2) == 0, false, in)))
	case 8:
		p := []byte{0x10, byte(r.IntN(3)), 0, 8, 0, byte(r.IntN(3)), 0, 1}
		f = eth(EtherTypeECPRI, append(p, randPayload(r)...))
	default:
		f = eth(pick(r, []uint16{0x0806, 0x86dd, 0x88cc}), randPayload(r))
	}
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
	}
	return f
}

func u8p(v uint8) *uint8    { return &v }
func u16p(v uint16) *uint16 { return &v }

// randRule makes a random RX flow over queues 0..nq-1 (queue ids = positions).
func randRule(r *rand.Rand, id, nq int, flex []config.FlexItem) config.Flow {
	f := config.Flow{Name: "r", ID: id}
	var m config.Match
	switch r.IntN(4) {
	case 0: // flex
		m.Flex = &config.FlexMatch{ItemID: flex[r.IntN(len(flex))].ID, Value: uint32(r.IntN(4)), Mask: pick(r, []uint32{0xff, 0xffff, 0x3})}
	case 1: // eCPRI
		e := &config.ECPRIMatch{}
		if r.IntN(2) == 0 {
			e.MsgType = u8p(uint8(r.IntN(3)))
			if r.IntN(2) == 0 {
				e.PCID = u16p(uint16(r.IntN(3)))
			}
		}
		m.ECPRI = e
	default:
		if r.IntN(2) == 0 {
			m.IPv4Src = randIP(r)
		}
		if r.IntN(2) == 0 {
			m.IPv4Dst = randIP(r)
		}
		if r.IntN(2) == 0 {
			p := pick(r, portPool)
			m.UDPSrc = config.PortRange{Lo: p, Hi: p + uint16(r.IntN(3))}
		}
		if r.IntN(2) == 0 {
			p := pick(r, portPool)
			m.UDPDst = config.PortRange{Lo: p, Hi: p}
		}
		if r.IntN(6) == 0 {
			m.IPv4Len = uint16(28 + r.IntN(80))
		}
		switch r.IntN(6) {
		case 0:
			f.Actions = append(f.Actions, config.Action{Type: config.ActionVLANPop})
		case 1:
			f.Actions = append(f.Actions, config.Action{Type: config.ActionTunnelDecap, Tunnel: config.Tunnel{Type: config.TunnelVXLAN, VNI: uint32(r.IntN(3)), OuterUDPDst: 4789}})
		case 2:
			t := config.Tunnel{Type: config.TunnelGRE, GREProtocol: 0x0800}
			if r.IntN(2) == 0 {
				t.OuterIPv4Src = randIP(r)
			}
			f.Actions = append(f.Actions, config.Action{Type: config.ActionTunnelDecap, Tunnel: t})
		case 3:
			f.Actions = append(f.Actions, config.Action{Type: config.ActionTunnelDecap, Tunnel: config.Tunnel{Type: config.TunnelNVGRE, TNI: uint32(r.IntN(3))}})
		}
	}
	f.Match = m
	qs := []int{r.IntN(nq)}
	if m.ECPRI == nil && r.IntN(3) == 0 {
		qs = r.Perm(nq)[:1+r.IntN(nq)]
	}
	f.Actions = append(f.Actions, config.Action{Type: config.ActionQueue, Queues: qs})
	return f
}
