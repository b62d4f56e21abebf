package config

import (
	"net/netip"
	"strings"
)

// flowClass is the match class of a flow; one interface uses one class for all its RX flows.
type flowClass int

const (
	classUDP flowClass = iota
	classFlex
	classECPRI
)

func (k flowClass) String() string {
	return [...]string{"standard (UDP/IPv4)", "flex-item", "eCPRI"}[k]
}

// hasIPFields reports whether any UDP/IPv4 field of the match is set.
func (m *Match) hasIPFields() bool {
	return !m.UDPSrc.Any() || !m.UDPDst.Any() || m.IPv4Len != 0 || m.IPv4Src.IsValid() || m.IPv4Dst.IsValid() ||
		m.IPv6Src.IsValid() || m.IPv6Dst.IsValid()
}

// flows checks the flows of one direction (base is "interfaces[i].rx" or ".tx").
func (v *validator) flows(base string, fs []Flow, qs []Queue, flex []FlexItem, isTX bool) {
	queueIDs := map[int]bool{}
	maxFrame := 0
	for k := range qs {
		queueIDs[qs[k].ID] = true
		maxFrame = max(maxFrame, v.frameSize(&qs[k]))
	}
	flexIDs := map[int]bool{}
	for _, f := range flex {
		flexIDs[f.ID] = true
	}
	var firstClass flowClass
	firstAt := ""
	for j := range fs {
		f := &fs[j]
		p := indexPath(base+".flows", j)
		if f.Name == "" {
			v.errf(p+".name", "a flow needs a name")
		}
		if f.ID < 0 || f.ID > MaxFlowID {
			v.errf(p+".id", "must be between 0 and %d, got %d", MaxFlowID, f.ID)
		}
		ap := p + ".actions"
		if !v.given(ap) && v.given(p+".action") {
			ap = p + ".action"
		}
		switch n := len(f.Actions); {
		case n == 0:
			v.errf(ap, "a flow needs at least one action")
		case n > MaxFlowActions:
			v.errf(ap, "a flow has at most %d actions, got %d", MaxFlowActions, n)
		}
		overhead, transforms, pushes, rss := 0, false, false, false
		pushedVLAN := "" // path of a vlan_push seen before this action (TX)
		for a := range f.Actions {
			act := &f.Actions[a]
			pa := ap
			if strings.HasSuffix(ap, ".actions") {
				pa = indexPath(ap, a)
			}
			last := a == len(f.Actions)-1
			switch act.Type {
			case ActionQueue:
				rss = rss || len(act.Queues) > 1
				v.queueAction(pa, act, queueIDs, v.broken(base+".queues"))
				if isTX {
					v.errf(pa, "a TX flow cannot have a queue action: TX flows transform packets on send")
				} else if !last {
					v.errf(pa, "the queue action must be the last action of an RX flow")
				}
			case ActionVLANPush, ActionTunnelEncap:
				pushes = true
				if !isTX {
					v.errf(pa+".type", "an RX flow cannot use %s (RX flows may only use vlan_pop and tunnel_decap)", act.Type)
				}
			case ActionVLANPop, ActionTunnelDecap:
				if isTX {
					v.errf(pa+".type", "a TX flow cannot use %s (TX flows may only use vlan_push and tunnel_encap)", act.Type)
				}
			case "":
				v.errf(pa+".type", "a flow action needs type (queue, vlan_push, vlan_pop, tunnel_encap or tunnel_decap)")
				continue
			default:
				v.errf(pa+".type", "unknown action type %q (valid: queue, vlan_push, vlan_pop, tunnel_encap, tunnel_decap)", act.Type)
				continue
			}
			switch act.Type {
			case ActionVLANPush, ActionVLANPop:
				transforms = true
				overhead += overheadVLAN
				if act.Type == ActionVLANPush {
					v.vlan(pa, &act.VLAN)
				}
			case ActionTunnelEncap, ActionTunnelDecap:
				transforms = true
				overhead += v.tunnel(pa, &act.Tunnel)
			}
			// GRE carries the L3 packet: encapsulation drops the inner Ethernet header and
			// takes what follows it as the IPv4 packet, so a tag pushed before would start
			// the GRE payload and the peer would see a malformed packet.
			if isTX && act.Type == ActionVLANPush && pushedVLAN == "" {
				pushedVLAN = pa
			}
			if isTX && act.Type == ActionTunnelEncap && act.Tunnel.Type == TunnelGRE && pushedVLAN != "" {
				v.errf(pa, "tunnel_encap gre after vlan_push (%s): GRE carries the IPv4 packet without its Ethernet header, so the pushed tag would be sent as the start of the GRE payload; put vlan_push after tunnel_encap to tag the outer frame, or use vxlan or nvgre, which carry the whole tagged frame", pushedVLAN)
			}
		}
		if len(f.Actions) > 0 && !isTX && f.Actions[len(f.Actions)-1].Type != ActionQueue {
			v.errf(ap, "an RX flow must end with a queue action")
		}
		if isTX && len(f.Actions) > 0 && !pushes {
			v.errf(ap, "a TX flow needs at least one vlan_push or tunnel_encap action")
		}
		// Match.
		mp := p + ".match"
		m := &f.Match
		class := classUDP
		for _, r := range []struct {
			key string
			r   PortRange
		}{{"udp_src", m.UDPSrc}, {"udp_dst", m.UDPDst}} {
			if r.r.Lo > r.r.Hi {
				v.errf(mp+"."+r.key, "port range %d-%d is empty (lo > hi)", r.r.Lo, r.r.Hi)
			}
		}
		for _, a := range []struct {
			key string
			ok  bool
		}{{"ipv4_src", !m.IPv4Src.IsValid() || m.IPv4Src.Is4()}, {"ipv4_dst", !m.IPv4Dst.IsValid() || m.IPv4Dst.Is4()}} {
			if !a.ok {
				v.errf(mp+"."+a.key, "must be an IPv4 address")
			}
		}
		for _, a := range []struct {
			key string
			a   netip.Addr
		}{{"ipv6_src", m.IPv6Src}, {"ipv6_dst", m.IPv6Dst}} {
			if a.a.IsValid() && (!a.a.Is6() || a.a.Is4In6()) {
				v.errf(mp+"."+a.key, "must be an IPv6 address")
			}
		}
		if (m.IPv6Src.IsValid() || m.IPv6Dst.IsValid()) && (m.IPv4Src.IsValid() || m.IPv4Dst.IsValid() || m.IPv4Len != 0) {
			k := "ipv6_src"
			if !m.IPv6Src.IsValid() {
				k = "ipv6_dst"
			}
			v.errf(mp+"."+k, "a match has IPv4 or IPv6 fields, not both")
		}
		if eth := m.Ethernet; eth != nil {
			if len(eth.Src) == 0 && len(eth.Dst) == 0 && !v.given(mp+".ethernet.src") && !v.given(mp+".ethernet.dst") {
				v.errf(mp+".ethernet", "an ethernet match needs src, dst or both")
			}
			for _, a := range []struct {
				key string
				mac []byte
			}{{"src", eth.Src}, {"dst", eth.Dst}} {
				if len(a.mac) != 0 && len(a.mac) != 6 {
					v.errf(mp+".ethernet."+a.key, "must be a 6-octet MAC address, got %d octets", len(a.mac))
				}
			}
		}
		if m.Flex != nil {
			class = classFlex
			if m.hasIPFields() {
				v.errf(mp+".flex_item_id", "a flex item match cannot be combined with UDP/IPv4 match fields")
			}
			if isTX {
				v.errf(mp+".flex_item_id", "TX flows cannot match on a flex item")
			} else if !flexIDs[m.Flex.ItemID] {
				v.errf(mp+".flex_item_id", "flex item %d is not defined in rx.flex_items", m.Flex.ItemID)
			}
			if transforms {
				v.errf(mp+".flex_item_id", "a flex item match cannot be combined with VLAN or tunnel actions")
			}
		}
		if m.ECPRI != nil {
			if class == classFlex || m.hasIPFields() {
				v.errf(mp+".ecpri", "an eCPRI match cannot be combined with UDP/IPv4 or flex item match fields")
			}
			class = classECPRI
			if m.ECPRI.PCID != nil && m.ECPRI.MsgType == nil {
				idp := mp + ".ecpri.pc_id"
				if v.given(mp + ".ecpri.rtc_id") {
					idp = mp + ".ecpri.rtc_id"
				}
				v.errf(idp, "matching pc_id/rtc_id needs msg_type")
			}
			if rss {
				v.errf(mp+".ecpri", "eCPRI flows cannot spread over several queues (no RSS): use one queue id")
			}
		}
		if !isTX {
			if firstAt == "" {
				firstClass, firstAt = class, p
			} else if class != firstClass {
				v.errf(p, "interface mixes %s and %s RX flows (%s); one flow class per interface", firstClass, class, firstAt)
			}
		}
		if overhead > 0 && maxFrame > 0 && maxFrame+overhead > MaxWireFrame {
			v.errf(ap, "wire frame of up to %d bytes (largest queue frame %d + transform overhead %d) exceeds %d", maxFrame+overhead, maxFrame, overhead, MaxWireFrame)
		}
	}
}

// queueAction checks a queue action's targets.
func (v *validator) queueAction(pa string, a *Action, queueIDs map[int]bool, queuesBroken bool) {
	key := ".id"
	if len(a.Queues) > 1 || v.given(pa+".ids") {
		key = ".ids"
	}
	if len(a.Queues) == 0 {
		v.errf(pa+key, "a queue action needs a queue id (id) or several (ids)")
		return
	}
	seen := map[int]bool{}
	for k, id := range a.Queues {
		qp := pa + key
		if key == ".ids" {
			qp = indexPath(qp, k)
		}
		switch {
		case seen[id]:
			v.errf(qp, "queue id %d is listed twice", id)
		case !queueIDs[id] && !queuesBroken:
			v.errf(qp, "queue id %d is not a queue of this interface", id)
		}
		seen[id] = true
	}
}

// fieldPath is the path of an action field, flat or nested under group (vlan, tunnel).
func (v *validator) fieldPath(pa, group, key string) string {
	if v.given(pa+"."+group) && !v.given(pa+"."+key) {
		return pa + "." + group + "." + key
	}
	return pa + "." + key
}

// vlan checks a vlan_push tag.
func (v *validator) vlan(pa string, t *VLAN) {
	if t.ID > 4095 {
		v.errf(v.fieldPath(pa, "vlan", "vlan_id"), "must be between 0 and 4095, got %d", t.ID)
	}
	if t.PCP > 7 {
		v.errf(v.fieldPath(pa, "vlan", "pcp"), "must be between 0 and 7, got %d", t.PCP)
	}
	if t.DEI > 1 {
		v.errf(v.fieldPath(pa, "vlan", "dei"), "must be 0 or 1, got %d", t.DEI)
	}
}

// tunnel checks a tunnel action and returns its wire overhead.
func (v *validator) tunnel(pa string, t *Tunnel) int {
	fp := func(key string) string { return v.fieldPath(pa, "tunnel", key) }
	ph := func(key string) bool {
		return v.c.isPlaceholder(pa+".tunnel."+key) || v.c.isPlaceholder(pa+"."+key)
	}
	overhead := 0
	switch t.Type {
	case TunnelVXLAN:
		overhead = overheadVXLAN
	case TunnelGRE:
		overhead = overheadGRE
	case TunnelNVGRE:
		overhead = overheadNVGRE
	case "":
		tp := pa + ".tunnel_type"
		if v.given(pa + ".tunnel") {
			tp = pa + ".tunnel.type"
		}
		v.errf(tp, "a tunnel action needs the tunnel type (vxlan, gre or nvgre)")
	default:
		tp := fp("tunnel_type")
		if v.given(pa + ".tunnel.type") {
			tp = pa + ".tunnel.type"
		}
		v.errf(tp, "unknown tunnel type %q (valid: vxlan, gre, nvgre)", t.Type)
	}
	for _, m := range []struct {
		key string
		mac []byte
	}{{"outer_eth_src", t.OuterEthSrc}, {"outer_eth_dst", t.OuterEthDst}} {
		if len(m.mac) != 6 && !ph(m.key) {
			v.errf(fp(m.key), "a tunnel action needs %s (a MAC address)", m.key)
		}
	}
	for _, a := range []struct {
		key  string
		ok   bool
		zero bool
	}{{"outer_ipv4_src", t.OuterIPv4Src.Is4(), !t.OuterIPv4Src.IsValid()}, {"outer_ipv4_dst", t.OuterIPv4Dst.Is4(), !t.OuterIPv4Dst.IsValid()}} {
		switch {
		case a.ok || ph(a.key):
		case a.zero:
			v.errf(fp(a.key), "a tunnel action needs %s (an IPv4 address)", a.key)
		default:
			v.errf(fp(a.key), "must be an IPv4 address (IPv6 outer headers are not supported)")
		}
	}
	if t.VNI > 0xFFFFFF {
		v.errf(fp("vni"), "must be ≤ 0xFFFFFF (24 bits), got %#x", t.VNI)
	}
	if t.TNI > 0xFFFFFF {
		v.errf(fp("tni"), "must be ≤ 0xFFFFFF (24 bits), got %#x", t.TNI)
	}
	other := func(cond bool, key string, want TunnelType) {
		if cond && t.Type != want && t.Type != "" && overhead > 0 {
			v.errf(fp(key), "%s is a %s field; this tunnel is %s", key, want, t.Type)
		}
	}
	other(t.VNI != 0, "vni", TunnelVXLAN)
	other(t.OuterUDPSrc != 0, "outer_udp_src", TunnelVXLAN)
	other(t.OuterUDPDst != 0, "outer_udp_dst", TunnelVXLAN)
	other(t.GREProtocol != 0, "gre_protocol", TunnelGRE)
	other(t.TNI != 0, "tni", TunnelNVGRE)
	other(t.FlowID != 0, "flow_id", TunnelNVGRE)
	return overhead
}
