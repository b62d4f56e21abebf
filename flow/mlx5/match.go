package mlx5

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/flow"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// matchLen is the defined part of an fte_match_param: up to misc_parameters_5 (the rest of
// the 0x200-byte field is reserved in mlx5_ifc.h).
var matchLen = int(prm.FTEMatchParam.MiscParameters5.End() / 8)

// match_criteria_enable bits (mlx5_ifc.h MLX5_MATCH_OUTER_HEADERS, _MISC_PARAMETERS,
// _INNER_HEADERS).
const (
	enableOuter = 1 << 0
	enableMisc  = 1 << 1
	enableInner = 1 << 2
	enableMisc4 = 1 << 5 // MLX5_MATCH_MISC_PARAMETERS_4
)

// IANA numbers the matches name.
const (
	protoUDP  = 17
	protoGRE  = 47
	vxlanPort = 4789 // the port the device's parser knows VXLAN by (the model's only one)
)

// match is one flow-table entry's criteria (mask) and value, fte_match_param sized.
type match struct {
	enable uint8
	mask   []byte
	value  []byte
	// v6 sends the entry's frames to the rule's IPv6 RSS TIR (a TIR hashes one IP version:
	// the field selector names it); fallback entries sort after the specific ones they
	// overlap (the lowest index of a rule's block wins).
	v6       bool
	fallback bool
}

func newMatch() *match {
	return &match{mask: make([]byte, matchLen), value: make([]byte, matchLen)}
}

func (m *match) clone() *match {
	return &match{enable: m.enable, mask: bytes.Clone(m.mask), value: bytes.Clone(m.value), v6: m.v6, fallback: m.fallback}
}

// section is where a match set lies in fte_match_param and its enable bit.
type section struct {
	base   uint32
	enable uint8
}

var (
	outer = section{prm.FTEMatchParam.OuterHeaders.Off, enableOuter}
	misc  = section{prm.FTEMatchParam.MiscParameters.Off, enableMisc}
	inner = section{prm.FTEMatchParam.InnerHeaders.Off, enableInner}
)

// set matches field f of section s exactly against v.
func (m *match) set(s section, f prm.Field, v uint64) { m.setMasked(s, f, v, ^uint64(0)) }

// setMasked matches the bits of f that mask selects against v.
func (m *match) setMasked(s section, f prm.Field, v, mask uint64) {
	f = f.At(s.base)
	if f.Width < 64 {
		mask &= 1<<f.Width - 1
	}
	f.Set(m.mask, mask)
	f.Set(m.value, v&mask)
	m.enable |= s.enable
}

// setIPv4 matches an IPv4 address field (the last four bytes of the 16-byte src/dst field,
// where fte_match_set_lyr_2_4 keeps IPv4).
func (m *match) setIPv4(s section, f prm.Field, a [4]byte) {
	f = f.At(s.base)
	copy(f.Slice(m.mask)[12:], []byte{0xff, 0xff, 0xff, 0xff})
	copy(f.Slice(m.value)[12:], a[:])
	m.enable |= s.enable
}

// setMAC matches a 48-bit MAC address split over its _47_16 and _15_0 fields.
func (m *match) setMAC(s section, hi, lo prm.Field, mac []byte) {
	m.set(s, hi, uint64(binary.BigEndian.Uint32(mac[0:4])))
	m.set(s, lo, uint64(binary.BigEndian.Uint16(mac[4:6])))
}

// setIPv6 matches a whole 16-byte address field.
func (m *match) setIPv6(s section, f prm.Field, a [16]byte) {
	f = f.At(s.base)
	copy(f.Slice(m.mask), bytes.Repeat([]byte{0xff}, 16))
	copy(f.Slice(m.value), a[:])
	m.enable |= s.enable
}

// key orders entries by their mask, so entries that share one are adjacent (one group).
func (m *match) key() string { return string(append([]byte{m.enable}, m.mask...)) }

// prefix is one value/mask pair of a port range split into prefixes.
type prefix struct{ value, mask uint16 }

// prefixes splits [lo, hi] into the fewest aligned power-of-two blocks, each a value and a
// mask (the way a TCAM expresses a range).
func prefixes(r config.PortRange) []prefix {
	var out []prefix
	lo, hi := uint32(r.Lo), uint32(r.Hi)
	for lo <= hi {
		size := uint32(1)
		for size < 1<<16 && lo&(size*2-1) == 0 && lo+size*2-1 <= hi {
			size *= 2
		}
		out = append(out, prefix{uint16(lo), uint16(^(size - 1))})
		lo += size
	}
	return out
}

// Check reports whether r can be installed (nil) or why not (an error wrapping
// ErrNotExpressible), without touching the device.
func Check(r *flow.Rule) error {
	_, err := ruleMatches(r, checkSampler{})
	return err
}

func notExpressible(r *flow.Rule, format string, args ...any) error {
	return fmt.Errorf("flow %q (id %d): %s: %w", r.Name, r.FlowID, fmt.Sprintf(format, args...), ErrNotExpressible)
}

// ruleMatches compiles a rule's match fields into the entries that together match what
// flow.Rule matches (see flow's package comment for the semantics).
// Flex parser samples (flex.go) come from fx, which creates the parse-graph nodes they need.
func ruleMatches(r *flow.Rule, fx sampler) ([]*match, error) {
	if r == nil || len(r.Queues) == 0 {
		return nil, fmt.Errorf("flow/mlx5: a rule needs at least one queue")
	}
	if r.IPv4Len != 0 && r.Decap != flow.DecapNone {
		return nil, notExpressible(r, "ipv4_len of a tunnel's inner header: the flex parser samples the outer IPv4 header")
	}
	m := newMatch()
	l := prm.FTEMatchSetLyr24
	x := prm.FTEMatchSetMisc
	// MAC addresses are the outer Ethernet header's, tunnel or not (flow's reference).
	if r.EthDst != nil {
		m.setMAC(outer, l.DMAC4716, l.DMAC150, r.EthDst)
	}
	if r.EthSrc != nil {
		m.setMAC(outer, l.SMAC4716, l.SMAC150, r.EthSrc)
	}
	if e := r.ECPRI; e != nil {
		m.set(outer, l.Ethertype, flow.EtherTypeECPRI)
		// The message type is the common header's second byte; PC_ID/RTC_ID the body's
		// first two bytes (as upstream's build_ecpri_match_locked masks them).
		n := 0
		if e.MsgType != nil {
			id, err := fx.sampleID(ecpriCommon)
			if err != nil {
				return nil, err
			}
			m.setSample(n, id, uint32(*e.MsgType)<<16, 0x00ff0000)
			n++
		}
		if e.PCID != nil {
			id, err := fx.sampleID(ecpriBody)
			if err != nil {
				return nil, err
			}
			m.setSample(n, id, uint32(*e.PCID)<<16, 0xffff0000)
		}
		return []*match{m}, nil
	}
	if f := r.Flex; f != nil {
		// flow's flex item: the word at Offset after the UDP header of an IPv4 packet to
		// the item's port; a node entered from UDP on that port samples it.
		id, err := fx.sampleID(flexWord{prm.GraphArcNodeUDP, f.UDPPort, f.Offset})
		if err != nil {
			return nil, err
		}
		m.set(outer, l.IPVersion, 4)
		m.set(outer, l.IPProtocol, protoUDP)
		m.set(outer, l.UDPDport, uint64(f.UDPPort))
		m.setSample(0, id, f.Value, f.Mask)
		return []*match{m}, nil
	}
	// The headers the IPv4/UDP fields are matched in: the outer ones, or a tunnel's inner.
	fields := outer
	switch r.Decap {
	case flow.DecapNone:
	case flow.DecapVXLAN:
		if r.VXLANPort != vxlanPort {
			return nil, notExpressible(r, "VXLAN on UDP port %d: the device parses VXLAN on port %d only", r.VXLANPort, vxlanPort)
		}
		m.set(outer, l.IPVersion, 4)
		m.set(outer, l.Frag, 0)
		m.set(outer, l.IPProtocol, protoUDP)
		m.set(outer, l.UDPDport, vxlanPort)
		m.set(misc, x.VXLANVNI, uint64(r.TunnelKey))
		fields = inner
	case flow.DecapNVGRE:
		m.set(outer, l.IPVersion, 4)
		m.set(outer, l.Frag, 0)
		m.set(outer, l.IPProtocol, protoGRE)
		m.set(misc, x.GREProtocol, flow.EtherTypeTEB)
		m.set(misc, x.GREKPresent, 1)
		m.setMasked(misc, x.GREKey, uint64(r.TunnelKey)<<8, 0xffffff00) // TNI: the key's high 24 bits (RFC 7637)
		fields = inner
	case flow.DecapGRE:
		if r.TunnelKey == flow.EtherTypeTEB {
			return nil, notExpressible(r, "GRE protocol %#x is NVGRE: use an nvgre tunnel", r.TunnelKey)
		}
		m.set(outer, l.IPVersion, 4)
		m.set(outer, l.Frag, 0)
		m.set(outer, l.IPProtocol, protoGRE)
		m.set(misc, x.GREProtocol, uint64(r.TunnelKey))
		fields = inner
	default:
		return nil, fmt.Errorf("flow/mlx5: flow %q: unknown decap kind %d", r.Name, r.Decap)
	}
	ipv6 := r.IPv6Src.IsValid() || r.IPv6Dst.IsValid()
	if ipv6 && fields != outer {
		return nil, notExpressible(r, "IPv6 addresses inside a tunnel: flow parses a tunnel's inner IPv4 only")
	}
	if ipv6 && (r.IPv4Src.IsValid() || r.IPv4Dst.IsValid()) {
		return nil, notExpressible(r, "IPv4 and IPv6 addresses in one flow match no packet")
	}
	if r.OuterSrc.IsValid() {
		m.setIPv4(outer, l.SrcIPv4SrcIPv6, r.OuterSrc.As4())
	}
	if r.OuterDst.IsValid() {
		m.setIPv4(outer, l.DstIPv4DstIPv6, r.OuterDst.As4())
	}
	ports := !r.UDPSrc.Any() || !r.UDPDst.Any()
	ipFields := r.IPv4Src.IsValid() || r.IPv4Dst.IsValid() || r.IPv4Len != 0 || (ports && fields == inner)
	if ipv6 {
		m.set(outer, l.IPVersion, 6)
		m.v6 = true
		if r.IPv6Src.IsValid() {
			m.setIPv6(outer, l.SrcIPv4SrcIPv6, r.IPv6Src.As16())
		}
		if r.IPv6Dst.IsValid() {
			m.setIPv6(outer, l.DstIPv4DstIPv6, r.IPv6Dst.As16())
		}
	}
	if ipFields {
		m.set(fields, l.IPVersion, 4)
		if fields == inner {
			// flow parses a tunnel's inner IPv4 only right after an untagged inner
			// Ethernet header (or the GRE header): a tagged inner frame has no inner tuple.
			m.set(inner, l.CVLANTag, 0)
			m.set(inner, l.SVLANTag, 0)
		}
	}
	if r.IPv4Src.IsValid() {
		m.setIPv4(fields, l.SrcIPv4SrcIPv6, r.IPv4Src.As4())
	}
	if r.IPv4Dst.IsValid() {
		m.setIPv4(fields, l.DstIPv4DstIPv6, r.IPv4Dst.As4())
	}
	if r.IPv4Len != 0 {
		// The total length is the low 16 bits of the IPv4 header's first word, sampled by a
		// node entered from MAC on EtherType 0x0800 (upstream's ibverbs engine, mask
		// 0x0000ffff); the EtherType pins the node's arc.
		id, err := fx.sampleID(ipv4Word0)
		if err != nil {
			return nil, err
		}
		m.set(outer, l.Ethertype, flow.EtherTypeIPv4)
		m.setSample(0, id, uint32(r.IPv4Len), 0x0000ffff)
	}
	ms := []*match{m}
	switch {
	case !ipFields && !ipv6 && ports:
		// UDP ports alone match IPv4 and IPv6 packets: one entry per IP version.
		m4, m6 := m.clone(), m.clone()
		m4.set(outer, l.IPVersion, 4)
		m6.set(outer, l.IPVersion, 6)
		m6.v6 = true
		ms = []*match{m4, m6}
	case !ipFields && !ipv6 && fields == outer && len(r.Queues) > 1:
		// RSS over any frame: IPv4 and IPv6 packets each to the TIR that hashes their
		// version, everything else (hashed as nothing, to the first RQT entry) after them.
		m4, m6 := m.clone(), m.clone()
		m4.set(outer, l.IPVersion, 4)
		m6.set(outer, l.IPVersion, 6)
		m6.v6 = true
		m.fallback = true
		ms = []*match{m4, m6, m}
	}
	if ports {
		for _, e := range ms {
			e.set(fields, l.IPProtocol, protoUDP)
		}
		ms = expandPorts(ms, fields, l.UDPSport, r.UDPSrc)
		ms = expandPorts(ms, fields, l.UDPDport, r.UDPDst)
	}
	if r.VLANPop {
		// A frame with a first tag of either kind (802.1Q or 802.1ad): one entry each.
		var both []*match
		for _, tag := range []prm.Field{l.CVLANTag, l.SVLANTag} {
			for _, e := range ms {
				c := e.clone()
				c.set(outer, tag, 1)
				both = append(both, c)
			}
		}
		ms = both
	}
	if len(ms) > EntriesPerRule {
		return nil, notExpressible(r, "its port ranges need %d flow-table entries, at most %d per flow", len(ms), EntriesPerRule)
	}
	return ms, nil
}

// expandPorts multiplies entries by the prefixes of a port range (none for "any").
func expandPorts(ms []*match, s section, f prm.Field, r config.PortRange) []*match {
	if r.Any() {
		return ms
	}
	var out []*match
	for _, p := range prefixes(r) {
		for _, e := range ms {
			c := e.clone()
			c.setMasked(s, f, uint64(p.value), uint64(p.mask))
			out = append(out, c)
		}
	}
	return out
}

// sortByMask orders entries so that those sharing a mask are adjacent, stably, fallback
// entries after the specific ones.
func sortByMask(ms []*match) {
	sort.SliceStable(ms, func(i, j int) bool {
		if ms[i].fallback != ms[j].fallback {
			return !ms[i].fallback
		}
		return ms[i].key() < ms[j].key()
	})
}

// pushVLAN is a flow_context push_vlan value (mlx5_ifc.h struct mlx5_ifc_vlan_bits:
// ethtype, prio, cfi, vid).
func pushVLAN(v *config.VLAN) uint32 {
	et := v.EtherType
	if et == 0 {
		et = flow.EtherTypeVLAN
	}
	return uint32(et)<<16 | uint32(v.PCP&7)<<13 | uint32(v.DEI&1)<<12 | uint32(v.ID&0xfff)
}

// encapHeader is the outer header a tunnel_encap action prepends, as the reformat context's
// data: what flow.Encapsulate writes in front of a minimal inner frame. The lengths and
// checksums in it are placeholders the device fills per packet; a VXLAN source port of 0
// ("derive from the inner flow") cannot vary per packet in a fixed header, so the one
// derived from an empty inner flow is used (inferred: NICs that offer per-flow source
// ports do it outside the reformat data).
func encapHeader(t *config.Tunnel) (data []byte, reformatType uint8, err error) {
	inner := make([]byte, 14+20+8)
	binary.BigEndian.PutUint16(inner[12:], flow.EtherTypeIPv4)
	inner[14] = 0x45
	buf := make([]byte, 256+len(inner))
	copy(buf, inner)
	n, err := flow.Encapsulate(buf, len(inner), t)
	if err != nil {
		return nil, 0, err
	}
	switch t.Type {
	case config.TunnelVXLAN:
		reformatType = prm.ReformatL2ToVXLAN
	case config.TunnelNVGRE:
		reformatType = prm.ReformatL2ToNVGRE
	case config.TunnelGRE:
		// GRE carries the inner IP packet: the inner Ethernet header is replaced
		// (L2 to L3 tunnel), so the outer header is everything before the inner IP header.
		return bytes.Clone(buf[:n-(len(inner)-14)]), prm.ReformatL2ToL3Tunnel, nil
	default:
		return nil, 0, fmt.Errorf("flow/mlx5: unknown tunnel type %q", t.Type)
	}
	return bytes.Clone(buf[:n-len(inner)]), reformatType, nil
}
