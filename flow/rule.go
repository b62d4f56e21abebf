// Package flow is daqiri's one match/action model for receive steering and transmit
// transforms, shared by every raw engine: rules compiled from configuration flows, a Go
// reference classifier, the Toeplitz RSS hash, software VLAN and tunnel transforms, and —
// for the AF_XDP engine — an XDP program built instruction by instruction with cilium/ebpf's
// asm package (no C compiler at build or run time) whose rule table lives in BPF maps, so
// flows are added and deleted while traffic runs without reloading the program.
//
// Matching semantics (the same in Go and in XDP): rules are tried in slot order and the first
// that matches wins. A rule matches when every field it sets equals the packet's; setting an
// IPv4 field requires an IPv4 packet and an IPv6 field an IPv6 one (its fixed header, after
// up to two VLAN tags; a UDP header is found only as the next header, so a packet with
// extension headers has no ports), setting a UDP port requires a UDP header over either
// (fragments after the first have none); a rule that sets no field matches every frame of its
// kind. RSS hashes the IPv4 or IPv6 4-tuple. A
// vlan_pop rule needs a VLAN tag; a tunnel_decap rule needs that tunnel (VXLAN to its outer
// UDP port and VNI, GRE with its protocol, NVGRE with its TNI; outer IPv4 addresses when
// configured) and then matches and hashes the inner IPv4/UDP headers. Flex items match a
// masked 32-bit big-endian word at their offset after the UDP header of IPv4 packets to their
// UDP port; eCPRI rules match EtherType 0xAEFE frames, optionally their message type and
// PC_ID/RTC_ID. Ethernet source and destination addresses qualify any rule and are compared
// with the outer frame's header. Malformed or truncated headers never match a field that
// needs them.
package flow

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/daqiri-go/daqiri/config"
)

// Decap is the tunnel a rule removes (0 = none), as carried in XDP metadata.
type Decap uint8

// Tunnel kinds.
const (
	DecapNone Decap = iota
	DecapVXLAN
	DecapGRE
	DecapNVGRE
)

func decapOf(t config.TunnelType) Decap {
	switch t {
	case config.TunnelVXLAN:
		return DecapVXLAN
	case config.TunnelGRE:
		return DecapGRE
	case config.TunnelNVGRE:
		return DecapNVGRE
	}
	return DecapNone
}

// DefaultVXLANPort is the IANA VXLAN port, upstream's default outer_udp_dst.
const DefaultVXLANPort = 4789

// Rule is one compiled RX flow.
type Rule struct {
	Name   string
	FlowID uint32
	// Queues are positions in the port's RX queue list (not queue ids); more than one means
	// flow-affine Toeplitz RSS over them.
	Queues []int

	// Match fields; zero values are wildcards.
	UDPSrc, UDPDst   config.PortRange
	IPv4Len          uint16
	IPv4Src, IPv4Dst netip.Addr
	IPv6Src, IPv6Dst netip.Addr // outer IPv6 header (no tunnels over IPv6)
	Flex             *Flex
	ECPRI            *config.ECPRIMatch
	// EthSrc and EthDst match the outer Ethernet header's addresses (nil = any); they
	// qualify every class of rule, and a decap rule's outer frame.
	EthSrc, EthDst net.HardwareAddr

	// Transforms applied before delivery.
	VLANPop bool
	Decap   Decap
	// Tunnel identification for Decap: VXLAN VNI, NVGRE TNI or GRE protocol; the VXLAN
	// outer UDP port; outer IPv4 addresses (invalid = any).
	TunnelKey    uint32
	VXLANPort    uint16
	OuterSrc     netip.Addr
	OuterDst     netip.Addr
	hasTunnelKey bool
}

// Flex is a resolved flex-item match.
type Flex struct {
	UDPPort uint16
	Offset  int // bytes after the UDP header, multiple of 4, ≤ 28
	Value   uint32
	Mask    uint32
}

// Compile turns one configured RX flow into a rule. rxQueueIDs are the port's RX queue ids
// in configuration order; flex are its flex items. path names the flow in errors (a config
// key path, or a description for dynamic flows); cfg formats them (nil: plain errors).
func Compile(cfg *config.Config, path string, f *config.Flow, rxQueueIDs []int, flex []config.FlexItem) (*Rule, error) {
	errf := func(sub, format string, args ...any) error {
		if cfg != nil {
			return cfg.Errorf(path+sub, format, args...)
		}
		return fmt.Errorf("%s%s: %s", path, sub, fmt.Sprintf(format, args...))
	}
	if f.ID < 0 || f.ID > config.MaxFlowID {
		return nil, errf(".id", "flow id must be between 0 and %d, got %d", config.MaxFlowID, f.ID)
	}
	r := &Rule{Name: f.Name, FlowID: uint32(f.ID)}
	n := len(f.Actions)
	switch {
	case n == 0:
		return nil, errf(".actions", "a flow needs at least one action")
	case n > config.MaxFlowActions:
		return nil, errf(".actions", "a flow has at most %d actions, got %d", config.MaxFlowActions, n)
	}
	for i, a := range f.Actions {
		ap := fmt.Sprintf(".actions[%d]", i)
		switch a.Type {
		case config.ActionQueue:
			if i != n-1 {
				return nil, errf(ap, "the queue action must be the last action of an RX flow")
			}
			if len(a.Queues) == 0 {
				return nil, errf(ap, "a queue action needs a queue id (id) or several (ids)")
			}
			seen := map[int]bool{}
			for _, id := range a.Queues {
				if seen[id] {
					return nil, errf(ap, "queue id %d is listed twice", id)
				}
				seen[id] = true
				idx := -1
				for k, q := range rxQueueIDs {
					if q == id {
						idx = k
					}
				}
				if idx < 0 {
					return nil, errf(ap, "queue id %d is not an RX queue of this interface (have %v)", id, rxQueueIDs)
				}
				r.Queues = append(r.Queues, idx)
			}
			if len(r.Queues) > config.MaxRxQueues {
				return nil, errf(ap, "at most %d queues per flow", config.MaxRxQueues)
			}
		case config.ActionVLANPop:
			if r.VLANPop {
				return nil, errf(ap, "vlan_pop is listed twice")
			}
			r.VLANPop = true
		case config.ActionTunnelDecap:
			if r.Decap != DecapNone {
				return nil, errf(ap, "only one tunnel_decap per flow")
			}
			t := &a.Tunnel
			r.Decap = decapOf(t.Type)
			switch r.Decap {
			case DecapVXLAN:
				r.TunnelKey, r.hasTunnelKey = t.VNI, true
				r.VXLANPort = t.OuterUDPDst
				if r.VXLANPort == 0 {
					r.VXLANPort = DefaultVXLANPort
				}
			case DecapGRE:
				r.TunnelKey, r.hasTunnelKey = uint32(t.GREProtocol), true
				if r.TunnelKey == 0 {
					r.TunnelKey = 0x0800
				}
			case DecapNVGRE:
				r.TunnelKey, r.hasTunnelKey = t.TNI, true
			default:
				return nil, errf(ap, "unknown tunnel type %q (valid: vxlan, gre, nvgre)", t.Type)
			}
			if t.OuterIPv4Src.IsValid() && !t.OuterIPv4Src.IsUnspecified() {
				r.OuterSrc = t.OuterIPv4Src
			}
			if t.OuterIPv4Dst.IsValid() && !t.OuterIPv4Dst.IsUnspecified() {
				r.OuterDst = t.OuterIPv4Dst
			}
		case config.ActionVLANPush, config.ActionTunnelEncap:
			return nil, errf(ap, "an RX flow cannot use %s (RX flows may only use vlan_pop and tunnel_decap)", a.Type)
		default:
			return nil, errf(ap, "unknown action type %q", a.Type)
		}
	}
	if len(r.Queues) == 0 {
		return nil, errf(".actions", "an RX flow must end with a queue action")
	}
	if err := compileMatch(r, &f.Match, flex, errf); err != nil {
		return nil, err
	}
	return r, nil
}

// compileMatch fills r's match fields from m.
func compileMatch(r *Rule, m *config.Match, flex []config.FlexItem, errf func(sub, format string, args ...any) error) error {
	for _, p := range []struct {
		key string
		r   config.PortRange
	}{{"udp_src", m.UDPSrc}, {"udp_dst", m.UDPDst}} {
		if p.r.Lo > p.r.Hi {
			return errf(".match."+p.key, "port range %d-%d is empty", p.r.Lo, p.r.Hi)
		}
	}
	r.UDPSrc, r.UDPDst, r.IPv4Len = m.UDPSrc, m.UDPDst, m.IPv4Len
	for _, a := range []struct {
		key string
		a   netip.Addr
		dst *netip.Addr
	}{{"ipv4_src", m.IPv4Src, &r.IPv4Src}, {"ipv4_dst", m.IPv4Dst, &r.IPv4Dst}} {
		if !a.a.IsValid() {
			continue
		}
		if !a.a.Is4() {
			return errf(".match."+a.key, "must be an IPv4 address, got %v", a.a)
		}
		*a.dst = a.a
	}
	if eth := m.Ethernet; eth != nil {
		for _, a := range []struct {
			key string
			mac net.HardwareAddr
			dst *net.HardwareAddr
		}{{"src", eth.Src, &r.EthSrc}, {"dst", eth.Dst, &r.EthDst}} {
			switch len(a.mac) {
			case 0:
			case 6:
				*a.dst = append(net.HardwareAddr(nil), a.mac...)
			default:
				return errf(".match.ethernet."+a.key, "must be a 6-octet MAC address, got %d octets", len(a.mac))
			}
		}
		if r.EthSrc == nil && r.EthDst == nil {
			return errf(".match.ethernet", "an ethernet match needs src, dst or both")
		}
	}
	for _, a := range []struct {
		key string
		a   netip.Addr
		dst *netip.Addr
	}{{"ipv6_src", m.IPv6Src, &r.IPv6Src}, {"ipv6_dst", m.IPv6Dst, &r.IPv6Dst}} {
		if !a.a.IsValid() {
			continue
		}
		if !a.a.Is6() || a.a.Is4In6() {
			return errf(".match."+a.key, "must be an IPv6 address, got %v", a.a)
		}
		*a.dst = a.a.WithZone("")
	}
	if (r.IPv6Src.IsValid() || r.IPv6Dst.IsValid()) && (r.IPv4Src.IsValid() || r.IPv4Dst.IsValid() || m.IPv4Len != 0) {
		return errf(".match", "a match has IPv4 or IPv6 fields, not both")
	}
	if (r.IPv6Src.IsValid() || r.IPv6Dst.IsValid()) && r.Decap != DecapNone {
		return errf(".match", "IPv6 fields match the outer header; tunnels are decapsulated from IPv4 only")
	}
	ipFields := !m.UDPSrc.Any() || !m.UDPDst.Any() || m.IPv4Len != 0 || m.IPv4Src.IsValid() || m.IPv4Dst.IsValid() ||
		m.IPv6Src.IsValid() || m.IPv6Dst.IsValid()
	if m.Flex != nil {
		if ipFields {
			return errf(".match.flex_item_id", "a flex item match cannot be combined with UDP/IPv4 match fields")
		}
		if r.VLANPop || r.Decap != DecapNone {
			return errf(".match.flex_item_id", "a flex item match cannot be combined with VLAN or tunnel actions")
		}
		var item *config.FlexItem
		for k := range flex {
			if flex[k].ID == m.Flex.ItemID {
				item = &flex[k]
			}
		}
		if item == nil {
			return errf(".match.flex_item_id", "flex item %d is not defined in rx.flex_items", m.Flex.ItemID)
		}
		if item.Offset < 0 || item.Offset > config.MaxFlexOffset || item.Offset%4 != 0 {
			return errf(".match.flex_item_id", "flex item %d has offset %d; must be a multiple of 4 ≤ %d", item.ID, item.Offset, config.MaxFlexOffset)
		}
		r.Flex = &Flex{UDPPort: item.UDPDstPort, Offset: item.Offset, Value: m.Flex.Value & m.Flex.Mask, Mask: m.Flex.Mask}
	}
	if m.ECPRI != nil {
		if ipFields || m.Flex != nil {
			return errf(".match.ecpri", "an eCPRI match cannot be combined with UDP/IPv4 or flex item match fields")
		}
		if m.ECPRI.PCID != nil && m.ECPRI.MsgType == nil {
			return errf(".match.ecpri.pc_id", "matching pc_id/rtc_id needs msg_type")
		}
		if len(r.Queues) > 1 {
			return errf(".match.ecpri", "eCPRI flows cannot spread over several queues (no RSS): use one queue id")
		}
		e := *m.ECPRI
		r.ECPRI = &e
	}
	return nil
}

// Class is the flow class of the rule: standard (UDP/IPv4), flex or eCPRI.
func (r *Rule) Class() string {
	switch {
	case r.Flex != nil:
		return "flex-item"
	case r.ECPRI != nil:
		return "eCPRI"
	}
	return "standard (UDP/IPv4)"
}

// TxRule is one compiled TX flow: frames it matches get its transforms, in order.
type TxRule struct {
	Name    string
	Match   *Rule // match fields only
	Actions []config.Action
}

// CompileTX turns one configured TX flow into a TX rule.
func CompileTX(cfg *config.Config, path string, f *config.Flow) (*TxRule, error) {
	errf := func(sub, format string, args ...any) error {
		if cfg != nil {
			return cfg.Errorf(path+sub, format, args...)
		}
		return fmt.Errorf("%s%s: %s", path, sub, fmt.Sprintf(format, args...))
	}
	if len(f.Actions) == 0 || len(f.Actions) > config.MaxFlowActions {
		return nil, errf(".actions", "a TX flow needs 1 to %d actions, got %d", config.MaxFlowActions, len(f.Actions))
	}
	for i, a := range f.Actions {
		switch a.Type {
		case config.ActionVLANPush:
		case config.ActionTunnelEncap:
			if decapOf(a.Tunnel.Type) == DecapNone {
				return nil, errf(fmt.Sprintf(".actions[%d]", i), "unknown tunnel type %q (valid: vxlan, gre, nvgre)", a.Tunnel.Type)
			}
		default:
			return nil, errf(fmt.Sprintf(".actions[%d]", i), "a TX flow may only use vlan_push and tunnel_encap, not %s", a.Type)
		}
	}
	if f.Match.Flex != nil || f.Match.ECPRI != nil {
		return nil, errf(".match", "TX flows match on UDP/IPv4 fields only")
	}
	r := &Rule{Name: f.Name, FlowID: uint32(f.ID)}
	if err := compileMatch(r, &f.Match, nil, errf); err != nil {
		return nil, err
	}
	return &TxRule{Name: f.Name, Match: r, Actions: append([]config.Action(nil), f.Actions...)}, nil
}
