package config

import (
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// flow decodes one rx.flows[] or tx.flows[] item.
func (d *decoder) flow(it entry, f *Flow) {
	got := d.fields(it.v, it.path, "a flow", map[string]handler{
		"name": func(e entry) { f.Name, _ = d.str(e) },
		"id":   intInto(d, &f.ID, 0, MaxFlowID),
		"action": func(e entry) {
			f.Actions = []Action{{}}
			d.action(e, &f.Actions[0])
		},
		"actions": func(e entry) {
			items, ok := d.seq(e, "actions")
			if !ok {
				return
			}
			if len(items) == 0 {
				d.fail(e.path, "actions must not be empty")
				return
			}
			if len(items) > MaxFlowActions {
				d.fail(e.path, "a flow has at most %d actions, got %d", MaxFlowActions, len(items))
				return
			}
			f.Actions = make([]Action, len(items))
			for i, a := range items {
				d.action(a, &f.Actions[i])
			}
		},
		"match": func(e entry) { d.match(e, &f.Match) },
	}, nil)
	if got == nil {
		return
	}
	d.require(got, it.path, "a flow", "name", "id")
	_, one := got["action"]
	_, many := got["actions"]
	switch {
	case one && many:
		d.fail(got["actions"].path, "a flow has either action or actions, not both")
	case !one && !many:
		d.fail(joinPath(it.path, "actions"), "a flow needs actions (or the legacy single action)")
	}
}

// Action keys, grouped by action type.
var (
	vlanKeys   = []string{"vlan_id", "pcp", "dei", "ethertype"}
	tunnelKeys = []string{"tunnel_type", "outer_eth_src", "outer_eth_dst", "outer_ipv4_src", "outer_ipv4_dst",
		"outer_ipv4_ttl", "outer_ipv4_tos", "vni", "outer_udp_src", "outer_udp_dst", "gre_protocol", "tni", "flow_id"}
	tunnelOnly = map[string]TunnelType{"vni": TunnelVXLAN, "outer_udp_src": TunnelVXLAN, "outer_udp_dst": TunnelVXLAN,
		"gre_protocol": TunnelGRE, "tni": TunnelNVGRE, "flow_id": TunnelNVGRE}
)

// action decodes one flow action. Its type decides which keys are allowed; the vlan and
// tunnel fields may be flat or nested under vlan:/tunnel:.
func (d *decoder) action(it entry, a *Action) {
	es, ok := d.mapping(it.v, it.path, "a flow action")
	if !ok {
		return
	}
	var typ *entry
	for i := range es {
		if es[i].key == "type" {
			typ = &es[i]
		}
	}
	if typ == nil {
		d.fail(joinPath(it.path, "type"), "a flow action needs type (queue, vlan_push, vlan_pop, tunnel_encap or tunnel_decap)")
		return
	}
	s, ok := d.str(*typ)
	if !ok {
		return
	}
	a.Type = ActionType(s)
	hs := map[string]handler{"type": func(entry) {}}
	switch a.Type {
	case ActionQueue:
		d.queueAction(es, it.path, a)
		return
	case ActionVLANPop:
	case ActionVLANPush:
		a.VLAN.EtherType = 0x8100
		d.vlanFields(hs, &a.VLAN)
		hs["vlan"] = func(e entry) {
			nested := map[string]handler{}
			d.vlanFields(nested, &a.VLAN)
			g := d.fields(e.v, e.path, "vlan", nested, nil)
			d.require(g, e.path, "vlan_push", "vlan_id")
		}
	case ActionTunnelEncap, ActionTunnelDecap:
		d.tunnelFields(hs, &a.Tunnel)
		hs["tunnel"] = func(e entry) {
			nested := map[string]handler{}
			d.tunnelFields(nested, &a.Tunnel)
			nested["type"] = nested["tunnel_type"]
			g := d.fields(e.v, e.path, "tunnel", nested, nil)
			d.tunnelChecks(g, e.path, &a.Tunnel)
		}
	default:
		d.fail(typ.path, "unknown action type %q (valid: queue, vlan_push, vlan_pop, tunnel_encap, tunnel_decap)", s)
		return
	}
	got := map[string]entry{}
	for _, e := range es {
		h, ok := hs[e.key]
		if !ok {
			d.fail(e.path, "unknown key %q in a %s action%s", e.key, a.Type, suggest(e.key, hs))
			continue
		}
		got[e.key] = e
		h(e)
	}
	switch a.Type {
	case ActionVLANPush:
		if _, nested := got["vlan"]; nested {
			d.exclusive(got, "vlan", vlanKeys)
		} else {
			d.require(got, it.path, "vlan_push", "vlan_id")
		}
	case ActionTunnelEncap, ActionTunnelDecap:
		if _, nested := got["tunnel"]; nested {
			d.exclusive(got, "tunnel", tunnelKeys)
		} else {
			d.tunnelChecks(got, it.path, &a.Tunnel)
		}
	}
}

// exclusive rejects flat fields next to their nested form.
func (d *decoder) exclusive(got map[string]entry, nested string, flat []string) {
	for _, k := range flat {
		if e, ok := got[k]; ok {
			d.fail(e.path, "%s is given both flat and under %s:; use one form", k, nested)
		}
	}
}

// queueActionKeys are the keys of a queue action, for "did you mean" hints.
var queueActionKeys = map[string]handler{"type": nil, "id": nil, "ids": nil}

// queueAction decodes a queue action's id or ids.
func (d *decoder) queueAction(es []entry, path string, a *Action) {
	got := map[string]entry{}
	for _, e := range es {
		switch e.key {
		case "type":
		case "id":
			if v, ok := d.uinteger(e, 0, math.MaxUint16); ok {
				a.Queues = []int{int(v)}
			}
		case "ids":
			items, ok := d.seq(e, "ids")
			if !ok {
				break
			}
			if len(items) == 0 {
				d.fail(e.path, "ids must list at least one queue id")
				break
			}
			a.Queues = make([]int, 0, len(items))
			seen := map[int64]bool{}
			for _, x := range items {
				v, ok := d.uinteger(x, 0, math.MaxUint16)
				if !ok {
					continue
				}
				if seen[v] {
					d.fail(x.path, "queue id %d is listed twice", v)
					continue
				}
				seen[v] = true
				a.Queues = append(a.Queues, int(v))
			}
		default:
			d.fail(e.path, "unknown key %q in a queue action%s", e.key, suggest(e.key, queueActionKeys))
			continue
		}
		got[e.key] = e
	}
	_, one := got["id"]
	_, many := got["ids"]
	switch {
	case one && many:
		d.fail(got["ids"].path, "a queue action has either id or ids, not both")
	case !one && !many:
		d.fail(joinPath(path, "id"), "a queue action needs id (or ids for RSS over several queues)")
	}
}

// vlanFields adds the vlan_push keys to hs.
func (d *decoder) vlanFields(hs map[string]handler, v *VLAN) {
	hs["vlan_id"] = func(e entry) {
		if x, ok := d.uinteger(e, 0, math.MaxUint16); ok {
			v.ID = uint16(x)
		}
	}
	hs["pcp"] = func(e entry) {
		if x, ok := d.uinteger(e, 0, math.MaxUint8); ok {
			v.PCP = uint8(x)
		}
	}
	hs["dei"] = func(e entry) {
		if x, ok := d.uinteger(e, 0, math.MaxUint8); ok {
			v.DEI = uint8(x)
		}
	}
	hs["ethertype"] = func(e entry) {
		if x, ok := d.uinteger(e, 1, math.MaxUint16); ok {
			v.EtherType = uint16(x)
		}
	}
}

// tunnelFields adds the tunnel keys to hs.
func (d *decoder) tunnelFields(hs map[string]handler, t *Tunnel) {
	u := func(lo, hi int64, set func(int64)) handler {
		return func(e entry) {
			if x, ok := d.uinteger(e, lo, hi); ok {
				set(x)
			}
		}
	}
	hs["tunnel_type"] = func(e entry) {
		if s, ok := d.str(e); ok {
			t.Type = TunnelType(s)
		}
	}
	hs["outer_eth_src"] = func(e entry) { t.OuterEthSrc, _ = d.mac(e) }
	hs["outer_eth_dst"] = func(e entry) { t.OuterEthDst, _ = d.mac(e) }
	hs["outer_ipv4_src"] = func(e entry) { t.OuterIPv4Src, _ = d.ipv4(e) }
	hs["outer_ipv4_dst"] = func(e entry) { t.OuterIPv4Dst, _ = d.ipv4(e) }
	hs["outer_ipv4_ttl"] = u(1, math.MaxUint8, func(x int64) { t.OuterTTL = uint8(x) })
	hs["outer_ipv4_tos"] = u(0, math.MaxUint8, func(x int64) { t.OuterTOS = uint8(x) })
	hs["vni"] = u(0, math.MaxUint32, func(x int64) { t.VNI = uint32(x) })
	hs["outer_udp_src"] = u(0, math.MaxUint16, func(x int64) { t.OuterUDPSrc = uint16(x) })
	hs["outer_udp_dst"] = u(1, math.MaxUint16, func(x int64) { t.OuterUDPDst = uint16(x) })
	hs["gre_protocol"] = u(1, math.MaxUint16, func(x int64) { t.GREProtocol = uint16(x) })
	hs["tni"] = u(0, math.MaxUint32, func(x int64) { t.TNI = uint32(x) })
	hs["flow_id"] = u(0, math.MaxUint8, func(x int64) { t.FlowID = uint8(x) })
}

// tunnelChecks requires a tunnel type and rejects fields of other tunnel types; got holds the
// keys of the map the tunnel fields were read from.
func (d *decoder) tunnelChecks(got map[string]entry, path string, t *Tunnel) {
	if got == nil {
		return
	}
	_, hasType := got["tunnel_type"]
	if _, ok := got["type"]; ok && strings.HasSuffix(path, ".tunnel") {
		if hasType {
			d.fail(got["tunnel_type"].path, "give the tunnel type as type or tunnel_type, not both")
		}
		hasType = true
	}
	if !hasType {
		key := "tunnel_type"
		if strings.HasSuffix(path, ".tunnel") {
			key = "type"
		}
		d.fail(joinPath(path, key), "a tunnel action needs the tunnel type (vxlan, gre or nvgre)")
		return
	}
	switch t.Type {
	case TunnelVXLAN, TunnelGRE, TunnelNVGRE:
	default:
		return // reported by validation
	}
	for k, only := range tunnelOnly {
		if e, ok := got[k]; ok && only != t.Type {
			d.fail(e.path, "%s is a %s field; this tunnel is %s", k, only, t.Type)
		}
	}
}

// match decodes a flow's match block.
func (d *decoder) match(me entry, m *Match) {
	port := func(dst *PortRange) handler {
		return func(e entry) {
			r, ok := d.portRange(e)
			if ok {
				*dst = r
			}
		}
	}
	var flex FlexMatch
	got := d.fields(me.v, me.path, "match", map[string]handler{
		"udp_src": port(&m.UDPSrc),
		"udp_dst": port(&m.UDPDst),
		"ipv4_len": func(e entry) {
			if v, ok := d.integer(e, 0, math.MaxUint16); ok {
				m.IPv4Len = uint16(v)
			}
		},
		"ipv4_src":     func(e entry) { m.IPv4Src, _ = d.ipv4(e) },
		"ipv4_dst":     func(e entry) { m.IPv4Dst, _ = d.ipv4(e) },
		"ipv6_src":     func(e entry) { m.IPv6Src, _ = d.ipv6(e) },
		"ipv6_dst":     func(e entry) { m.IPv6Dst, _ = d.ipv6(e) },
		"flex_item_id": uintInto(d, &flex.ItemID, 0, math.MaxUint16),
		"val":          uintInto(d, &flex.Value, 0, math.MaxUint32),
		"mask":         uintInto(d, &flex.Mask, 0, math.MaxUint32),
		"ecpri": func(e entry) {
			m.ECPRI = &ECPRIMatch{}
			d.ecpri(e, m.ECPRI)
		},
		"ethernet": func(e entry) {
			m.Ethernet = &EthernetMatch{}
			d.fields(e.v, e.path, "ethernet", map[string]handler{
				"src": func(e entry) { m.Ethernet.Src, _ = d.mac(e) },
				"dst": func(e entry) { m.Ethernet.Dst, _ = d.mac(e) },
			}, nil)
		},
	}, nil)
	if got == nil {
		return
	}
	_, hasFlex := got["flex_item_id"]
	_, hasVal := got["val"]
	_, hasMask := got["mask"]
	switch {
	case hasFlex:
		d.require(got, me.path, "a flex item match", "val", "mask")
		m.Flex = &flex
	case hasVal || hasMask:
		k := "val"
		if !hasVal {
			k = "mask"
		}
		d.fail(got[k].path, "%s belongs to a flex item match, which needs flex_item_id", k)
	}
}

// portRange decodes a UDP port (0 = any) or an inclusive range "lo-hi".
func (d *decoder) portRange(e entry) (PortRange, bool) {
	if e.v != nil && e.v.Kind == yaml.ScalarNode && e.v.Tag == "!!str" {
		s := strings.TrimSpace(e.v.Value)
		lo, hi, isRange := strings.Cut(s, "-")
		if !isRange {
			hi = lo
		}
		a, err1 := strconv.ParseUint(strings.TrimSpace(lo), 10, 16)
		b, err2 := strconv.ParseUint(strings.TrimSpace(hi), 10, 16)
		if err1 != nil || err2 != nil {
			d.fail(e.path, "must be a UDP port or a range \"lo-hi\" of ports 0..65535, got %s", kindName(e.v))
			return PortRange{}, false
		}
		if a > b {
			d.fail(e.path, "port range %q is empty: %d > %d", s, a, b)
			return PortRange{}, false
		}
		return PortRange{uint16(a), uint16(b)}, true
	}
	v, ok := d.integer(e, 0, math.MaxUint16)
	if !ok {
		return PortRange{}, false
	}
	return PortRange{uint16(v), uint16(v)}, true
}

// ecpri decodes match.ecpri.
func (d *decoder) ecpri(e entry, m *ECPRIMatch) {
	id := func(e entry) {
		if m.PCID != nil {
			d.fail(e.path, "pc_id and rtc_id name the same field; give one of them")
			return
		}
		if v, ok := d.uinteger(e, 0, math.MaxUint16); ok {
			x := uint16(v)
			m.PCID = &x
		}
	}
	d.fields(e.v, e.path, "ecpri", map[string]handler{
		"msg_type": func(e entry) {
			if v, ok := d.uinteger(e, 0, math.MaxUint8); ok {
				x := uint8(v)
				m.MsgType = &x
			}
		},
		"pc_id":  id,
		"rtc_id": id,
	}, nil)
}

// flexItem decodes one rx.flex_items[] item.
func (d *decoder) flexItem(it entry, f *FlexItem) {
	got := d.fields(it.v, it.path, "a flex item", map[string]handler{
		"name":         func(e entry) { f.Name, _ = d.str(e) },
		"id":           intInto(d, &f.ID, 0, math.MaxUint16),
		"udp_dst_port": intInto(d, &f.UDPDstPort, 0, math.MaxUint16),
		"offset":       intInto(d, &f.Offset, 0, math.MaxUint16),
	}, nil)
	d.require(got, it.path, "a flex item", "name", "id", "udp_dst_port", "offset")
}
