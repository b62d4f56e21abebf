package flow

import (
	"encoding/binary"
	"fmt"

	"github.com/daqiri-go/daqiri/config"
)

// Software transforms. RX transforms shrink a received frame in place (its bytes move, the
// buffer stays), TX transforms grow a frame in the room after it in its buffer. Header
// layouts: IEEE 802.1Q tags, VXLAN (RFC 7348), GRE (RFC 2784/2890), NVGRE (RFC 7637).

// l3Offset skips Ethernet and up to two VLAN tags; ok is false when the frame is too short.
func l3Offset(f []byte) (off int, et uint16, ok bool) {
	if len(f) < 14 {
		return 0, 0, false
	}
	off, et = 14, be16(f, 12)
	for tag := 0; tag < 2 && (et == EtherTypeVLAN || et == EtherTypeQinQ); tag++ {
		if len(f) < off+4 {
			return 0, 0, false
		}
		et = be16(f, off+2)
		off += 4
	}
	return off, et, true
}

// PopVLAN removes the outermost VLAN tag by moving the MAC addresses over it. The frame
// then starts shift (4) bytes later in the same buffer.
func PopVLAN(f []byte) (shift int, ok bool) {
	if len(f) < 18 {
		return 0, false
	}
	if et := be16(f, 12); et != EtherTypeVLAN && et != EtherTypeQinQ {
		return 0, false
	}
	copy(f[4:16], f[0:12])
	return 4, true
}

// Decapsulate finds the inner Ethernet frame of a tunnelled frame. VXLAN and NVGRE carry a
// whole Ethernet frame; a GRE payload is an L3 packet, so an Ethernet header (the outer
// MAC addresses, EtherType = the GRE protocol) is written just in front of it. The inner frame
// is f[start : start+length]. Only the outer IPv4 packet's tot_len bytes count: what follows
// them in the frame (Ethernet padding) is not part of the inner frame.
func Decapsulate(f []byte, kind Decap) (start, length int, ok bool) {
	l3, et, ok := l3Offset(f)
	if !ok || et != EtherTypeIPv4 || len(f) < l3+20 {
		return 0, 0, false
	}
	ihl := int(f[l3]&0x0f) * 4
	l4 := l3 + ihl
	tot := int(be16(f, l3+2))
	if ihl < 20 || len(f) < l4 || tot < ihl {
		return 0, 0, false
	}
	f = f[:min(len(f), l3+tot)]
	switch kind {
	case DecapVXLAN:
		in := l4 + 8 + 8
		if len(f) < in+14 {
			return 0, 0, false
		}
		return in, len(f) - in, true
	case DecapGRE, DecapNVGRE:
		if len(f) < l4+4 {
			return 0, 0, false
		}
		fl, proto := be16(f, l4), be16(f, l4+2)
		hl := 4 + 4*int(fl>>15&1+fl>>13&1+fl>>12&1)
		in := l4 + hl
		if len(f) < in {
			return 0, 0, false
		}
		if kind == DecapNVGRE {
			if len(f) < in+14 {
				return 0, 0, false
			}
			return in, len(f) - in, true
		}
		// in ≥ 14+20+4, so the new header never overlaps the MAC addresses it copies.
		h := f[in-14 : in]
		copy(h[0:12], f[0:12])
		binary.BigEndian.PutUint16(h[12:], proto)
		return in - 14, len(f) - in + 14, true
	}
	return 0, 0, false
}

// Overhead is how many bytes an encap action adds to a frame (GRE replaces the inner
// Ethernet header, so it adds 38-14).
func Overhead(a *config.Action) int {
	switch a.Type {
	case config.ActionVLANPush:
		return 4
	case config.ActionTunnelEncap:
		switch a.Tunnel.Type {
		case config.TunnelVXLAN:
			return 50
		case config.TunnelGRE:
			return 24
		case config.TunnelNVGRE:
			return 42
		}
	}
	return 0
}

// PushVLAN inserts a VLAN tag after the MAC addresses of the frame in buf[:n] and returns the
// new length; buf must have 4 bytes of room after the frame.
func PushVLAN(buf []byte, n int, v *config.VLAN) (int, error) {
	if n < 14 || len(buf) < n+4 {
		return n, fmt.Errorf("vlan_push: frame of %d bytes in a %d-byte buffer", n, len(buf))
	}
	copy(buf[16:n+4], buf[12:n])
	tpid := v.EtherType
	if tpid == 0 {
		tpid = EtherTypeVLAN
	}
	binary.BigEndian.PutUint16(buf[12:], tpid)
	binary.BigEndian.PutUint16(buf[14:], uint16(v.PCP&7)<<13|uint16(v.DEI&1)<<12|v.ID&0x0fff)
	return n + 4, nil
}

// Encapsulate wraps the frame in buf[:n] in the tunnel's outer headers and returns the new
// length; buf needs Overhead bytes of room after the frame. The outer IPv4 header gets its
// checksum; the outer UDP checksum of VXLAN is zero (allowed over IPv4, RFC 7348 §5). A
// VXLAN source port of 0 is derived from the inner flow (RFC 7348 recommends a hash of the
// inner headers): 49152 + Toeplitz(inner 4-tuple) mod 16384.
func Encapsulate(buf []byte, n int, t *config.Tunnel) (int, error) {
	if n < 14 {
		return n, fmt.Errorf("tunnel_encap: frame of %d bytes", n)
	}
	var hdr int // outer headers before the payload
	payload := buf[:n]
	var greProto uint16
	switch t.Type {
	case config.TunnelVXLAN:
		hdr = 14 + 20 + 8 + 8
	case config.TunnelGRE:
		hdr = 14 + 20 + 4
		payload = buf[14:n] // the L3 packet
		greProto = t.GREProtocol
		if greProto == 0 {
			greProto = EtherTypeIPv4
		}
	case config.TunnelNVGRE:
		hdr = 14 + 20 + 8
		greProto = EtherTypeTEB
	default:
		return n, fmt.Errorf("tunnel_encap: unknown tunnel type %q", t.Type)
	}
	total := hdr + len(payload)
	if len(buf) < total {
		return n, fmt.Errorf("tunnel_encap %s: %d-byte frame needs %d bytes, the buffer has %d", t.Type, n, total, len(buf))
	}
	var sport uint16
	if t.Type == config.TunnelVXLAN {
		sport = t.OuterUDPSrc
		if sport == 0 {
			p := parse(buf[:n], 0)
			sport = uint16(49152 + p.outer.rss().Hash(DefaultRSSKey[:])%16384)
		}
	}
	copy(buf[hdr:total], payload) // memmove: payload moves right
	o := buf[:hdr]
	clear(o)
	copy(o[0:6], t.OuterEthDst)
	copy(o[6:12], t.OuterEthSrc)
	binary.BigEndian.PutUint16(o[12:], EtherTypeIPv4)
	ip := o[14:34]
	ip[0] = 0x45
	ip[1] = t.OuterTOS
	binary.BigEndian.PutUint16(ip[2:], uint16(total-14))
	ttl := t.OuterTTL
	if ttl == 0 {
		ttl = 64
	}
	ip[8] = ttl
	s, d := t.OuterIPv4Src.As4(), t.OuterIPv4Dst.As4()
	copy(ip[12:16], s[:])
	copy(ip[16:20], d[:])
	switch t.Type {
	case config.TunnelVXLAN:
		ip[9] = protoUDP
		u := o[34:42]
		dport := t.OuterUDPDst
		if dport == 0 {
			dport = DefaultVXLANPort
		}
		binary.BigEndian.PutUint16(u[0:], sport)
		binary.BigEndian.PutUint16(u[2:], dport)
		binary.BigEndian.PutUint16(u[4:], uint16(total-34))
		vx := o[42:50]
		vx[0] = 0x08
		binary.BigEndian.PutUint32(vx[4:], t.VNI<<8)
	case config.TunnelGRE:
		ip[9] = protoGRE
		binary.BigEndian.PutUint16(o[36:], greProto)
	case config.TunnelNVGRE:
		ip[9] = protoGRE
		binary.BigEndian.PutUint16(o[34:], 0x2000) // K bit
		binary.BigEndian.PutUint16(o[36:], greProto)
		binary.BigEndian.PutUint32(o[38:], t.TNI<<8|uint32(t.FlowID))
	}
	binary.BigEndian.PutUint16(ip[10:], ipChecksum(ip))
	return total, nil
}

func ipChecksum(h []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(h); i += 2 {
		sum += uint32(h[i])<<8 | uint32(h[i+1])
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// ApplyTX applies a TX rule's transforms to the frame in buf[:n] and returns the new length.
func (t *TxRule) ApplyTX(buf []byte, n int) (int, error) {
	var err error
	for i := range t.Actions {
		a := &t.Actions[i]
		switch a.Type {
		case config.ActionVLANPush:
			n, err = PushVLAN(buf, n, &a.VLAN)
		case config.ActionTunnelEncap:
			n, err = Encapsulate(buf, n, &a.Tunnel)
		}
		if err != nil {
			return n, fmt.Errorf("TX flow %s: %w", t.Name, err)
		}
	}
	return n, nil
}

// MatchTX returns the first TX rule whose match fields the frame satisfies, or nil.
func MatchTX(rules []*TxRule, frame []byte) *TxRule {
	if len(rules) == 0 {
		return nil
	}
	p := parse(frame, 0)
	for _, r := range rules {
		if _, ok := r.Match.matches(p); ok {
			return r
		}
	}
	return nil
}
