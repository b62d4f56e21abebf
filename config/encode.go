package config

import (
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// placeholderText is written for values recorded in Config.Placeholders, so that an encoded
// template parses back into the same template.
const placeholderText = "<placeholder>"

// MarshalYAML encodes the configuration as a bare schema-v1 config map (yaml.Marshal(cfg)
// works). Optional keys whose value is zero are left out; Parse of the output yields an
// equal Config. Application sections are not part of it.
func (c *Config) MarshalYAML() (any, error) {
	e := &encoder{c: c}
	m := e.m()
	e.int(m, "version", c.Version)
	e.str(m, "stream_type", string(c.StreamType))
	e.int(m, "master_core", c.MasterCore)
	e.optStr(m, "engine", c.Engine)
	e.optStr(m, "loopback", c.Loopback)
	if c.Debug {
		e.kv(m, "debug", e.bool(true))
	}
	e.optStr(m, "log_level", c.LogLevel)
	e.optInt(m, "tx_meta_buffers", c.TxMetaBuffers)
	e.optInt(m, "rx_meta_buffers", c.RxMetaBuffers)
	if len(c.MemoryRegions) > 0 {
		l := e.block()
		for i := range c.MemoryRegions {
			l.Content = append(l.Content, e.region(&c.MemoryRegions[i]))
		}
		e.kv(m, "memory_regions", l)
	}
	l := e.block()
	for i := range c.Interfaces {
		l.Content = append(l.Content, e.iface(indexPath("interfaces", i), &c.Interfaces[i]))
	}
	e.kv(m, "interfaces", l)
	return m, nil
}

// encoder builds yaml.Node trees.
type encoder struct{ c *Config }

func (e *encoder) m() *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode} }
func (e *encoder) l() *yaml.Node { return &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle} }
func (e *encoder) block() *yaml.Node {
	return &yaml.Node{Kind: yaml.SequenceNode}
}

func (e *encoder) scalar(tag, v string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: v}
	if tag == "!!str" && needsQuotes(v) {
		// yaml.v3 would write a multi-line string as a literal block, and for one that
		// starts with a space it gets the block's indentation indicator wrong inside a
		// sequence (the fuzzer found a flow name " 0\nb_decap" that way): its output did
		// not parse. A double-quoted scalar escapes every such character.
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

// needsQuotes reports whether a string holds a line break or another control character, or
// starts or ends with white space.
func needsQuotes(v string) bool {
	if v != strings.TrimSpace(v) {
		return true
	}
	for _, r := range v {
		if r < 0x20 || r == 0x7f || r == 0x85 || r == 0x2028 || r == 0x2029 {
			return true
		}
	}
	return false
}
func (e *encoder) bool(b bool) *yaml.Node { return e.scalar("!!bool", strconv.FormatBool(b)) }

func (e *encoder) kv(m *yaml.Node, k string, v *yaml.Node) {
	m.Content = append(m.Content, e.scalar("!!str", k), v)
}
func (e *encoder) str(m *yaml.Node, k, v string) { e.kv(m, k, e.scalar("!!str", v)) }
func (e *encoder) int(m *yaml.Node, k string, v int) {
	e.kv(m, k, e.scalar("!!int", strconv.Itoa(v)))
}
func (e *encoder) optStr(m *yaml.Node, k, v string) {
	if v != "" {
		e.str(m, k, v)
	}
}
func (e *encoder) optInt(m *yaml.Node, k string, v int) {
	if v != 0 {
		e.int(m, k, v)
	}
}
func (e *encoder) optBool(m *yaml.Node, k string, v bool) {
	if v {
		e.kv(m, k, e.bool(true))
	}
}
func (e *encoder) strs(m *yaml.Node, k string, vs []string) {
	if len(vs) == 0 {
		return
	}
	l := e.l()
	for _, v := range vs {
		l.Content = append(l.Content, e.scalar("!!str", v))
	}
	e.kv(m, k, l)
}

// ph writes the placeholder text for a placeholder path, or v.
func (e *encoder) ph(m *yaml.Node, path, k, v string) {
	if e.c.isPlaceholder(joinPath(path, k)) {
		e.str(m, k, placeholderText)
		return
	}
	e.optStr(m, k, v)
}

func (e *encoder) region(r *MemoryRegion) *yaml.Node {
	m := e.m()
	e.str(m, "name", r.Name)
	e.str(m, "kind", string(r.Kind))
	e.int(m, "affinity", r.Affinity)
	if r.Access != 0 && r.Access != AccessLocal {
		var names []string
		for _, a := range []struct {
			bit  Access
			name string
		}{{AccessLocal, "local"}, {AccessRDMAWrite, "rdma_write"}, {AccessRDMARead, "rdma_read"}} {
			if r.Access&a.bit != 0 {
				names = append(names, a.name)
			}
		}
		e.strs(m, "access", names)
	}
	e.int(m, "num_bufs", r.NumBufs)
	e.int(m, "buf_size", r.BufSize)
	if r.Unowned {
		e.kv(m, "owned", e.bool(false))
	}
	return m
}

func (e *encoder) iface(p string, ifc *Interface) *yaml.Node {
	m := e.m()
	e.str(m, "name", ifc.Name)
	e.ph(m, p, "address", ifc.Address)
	if s := ifc.Socket; s != nil {
		sp := p + ".socket_config"
		sm := e.m()
		e.str(sm, "mode", string(s.Mode))
		e.endpoint(sm, sp, "local", s.Local)
		e.endpoint(sm, sp, "remote", s.Remote)
		e.optInt(sm, "max_payload_size", s.MaxPayload)
		e.optInt(sm, "retry_connect_s", s.RetryConnectS)
		e.optInt(sm, "max_burst_interval_ms", s.MaxBurstIntervalMs)
		e.optInt(sm, "min_ipg_ns", s.MinIPGNs)
		e.optInt(sm, "recv_buffer_size", s.RecvBufferBytes)
		e.optInt(sm, "send_buffer_size", s.SendBufferBytes)
		e.optInt(sm, "max_connections", s.MaxConnections)
		e.kv(m, "socket_config", sm)
	}
	if ifc.RoCE != nil {
		rm := e.m()
		e.str(rm, "transport_mode", ifc.RoCE.TransportMode)
		e.kv(m, "roce_config", rm)
	}
	if rx := ifc.RX; rx != nil {
		rm := e.m()
		e.optBool(rm, "flow_isolation", rx.FlowIsolation)
		e.optInt(rm, "dynamic_flow_capacity", rx.DynamicFlowCapacity)
		e.optBool(rm, "hardware_timestamps", rx.HardwareTimestamps)
		e.queues(rm, p+".rx.queues", rx.Queues)
		e.flows(rm, p+".rx.flows", rx.Flows)
		if len(rx.FlexItems) > 0 {
			l := e.block()
			for _, f := range rx.FlexItems {
				fm := e.m()
				e.str(fm, "name", f.Name)
				e.int(fm, "id", f.ID)
				e.int(fm, "udp_dst_port", int(f.UDPDstPort))
				e.int(fm, "offset", f.Offset)
				l.Content = append(l.Content, fm)
			}
			e.kv(rm, "flex_items", l)
		}
		if len(rx.Reorders) > 0 {
			l := e.block()
			for i := range rx.Reorders {
				l.Content = append(l.Content, e.reorder(&rx.Reorders[i]))
			}
			e.kv(rm, "reorder_configs", l)
		}
		e.kv(m, "rx", rm)
	}
	if tx := ifc.TX; tx != nil {
		tm := e.m()
		e.optBool(tm, "accurate_send", tx.AccurateSend)
		e.queues(tm, p+".tx.queues", tx.Queues)
		e.flows(tm, p+".tx.flows", tx.Flows)
		e.kv(m, "tx", tm)
	}
	return m
}

func (e *encoder) endpoint(m *yaml.Node, p, side string, ep Endpoint) {
	key := side + "_addr"
	switch {
	case e.c.isPlaceholder(joinPath(p, key)) || e.c.isPlaceholder(joinPath(p, side+"_ip")):
		e.str(m, key, placeholderText)
	case !ep.IsZero():
		e.str(m, key, ep.String())
	}
}

func (e *encoder) queues(m *yaml.Node, p string, qs []Queue) {
	if len(qs) == 0 {
		return
	}
	l := e.block()
	for i := range qs {
		q := &qs[i]
		qp := indexPath(p, i)
		qm := e.m()
		e.str(qm, "name", q.Name)
		e.int(qm, "id", q.ID)
		e.optStr(qm, "poll_mode", string(q.PollMode))
		if e.c.isPlaceholder(qp + ".cpu_core") {
			e.str(qm, "cpu_core", placeholderText)
		} else if n, ok := q.Core(); ok {
			e.int(qm, "cpu_core", n)
		} else {
			e.optStr(qm, "cpu_core", q.CPUCore)
		}
		e.optInt(qm, "batch_size", q.BatchSize)
		e.optInt(qm, "timeout_us", q.TimeoutUs)
		e.strs(qm, "memory_regions", q.MemoryRegions)
		e.strs(qm, "offloads", q.Offloads)
		e.optInt(qm, "pacing_mbps", q.PacingMbps)
		l.Content = append(l.Content, qm)
	}
	e.kv(m, "queues", l)
}

func (e *encoder) flows(m *yaml.Node, p string, fs []Flow) {
	if len(fs) == 0 {
		return
	}
	l := e.block()
	for i := range fs {
		f := &fs[i]
		fp := indexPath(p, i)
		fm := e.m()
		e.str(fm, "name", f.Name)
		e.int(fm, "id", f.ID)
		al := e.block()
		for k := range f.Actions {
			al.Content = append(al.Content, e.action(indexPath(fp+".actions", k), fp+".action", &f.Actions[k]))
		}
		e.kv(fm, "actions", al)
		if mm := e.match(fp+".match", &f.Match); len(mm.Content) > 0 {
			e.kv(fm, "match", mm)
		}
		l.Content = append(l.Content, fm)
	}
	e.kv(m, "flows", l)
}

// action encodes one action; placeholders may sit under the `actions[k]` path or, for a
// legacy single `action:`, under legacyPath.
func (e *encoder) action(p, legacyPath string, a *Action) *yaml.Node {
	m := e.m()
	e.str(m, "type", string(a.Type))
	switch a.Type {
	case ActionQueue:
		if len(a.Queues) == 1 {
			e.int(m, "id", a.Queues[0])
		} else {
			l := e.l()
			for _, q := range a.Queues {
				l.Content = append(l.Content, e.scalar("!!int", strconv.Itoa(q)))
			}
			e.kv(m, "ids", l)
		}
	case ActionVLANPush:
		e.int(m, "vlan_id", int(a.VLAN.ID))
		e.optInt(m, "pcp", int(a.VLAN.PCP))
		e.optInt(m, "dei", int(a.VLAN.DEI))
		if a.VLAN.EtherType != 0 {
			e.kv(m, "ethertype", e.scalar("!!int", "0x"+strconv.FormatUint(uint64(a.VLAN.EtherType), 16)))
		}
	case ActionTunnelEncap, ActionTunnelDecap:
		t := &a.Tunnel
		tm := e.m()
		e.str(tm, "type", string(t.Type))
		ph := func(key, v string) {
			if e.c.isPlaceholder(p+".tunnel."+key) || e.c.isPlaceholder(p+"."+key) ||
				e.c.isPlaceholder(legacyPath+".tunnel."+key) || e.c.isPlaceholder(legacyPath+"."+key) {
				e.str(tm, key, placeholderText)
				return
			}
			e.optStr(tm, key, v)
		}
		mac := func(b []byte) string {
			if len(b) == 0 {
				return ""
			}
			return macString(b)
		}
		ip := func(ok bool, s string) string {
			if !ok {
				return ""
			}
			return s
		}
		ph("outer_eth_src", mac(t.OuterEthSrc))
		ph("outer_eth_dst", mac(t.OuterEthDst))
		ph("outer_ipv4_src", ip(t.OuterIPv4Src.IsValid(), t.OuterIPv4Src.String()))
		ph("outer_ipv4_dst", ip(t.OuterIPv4Dst.IsValid(), t.OuterIPv4Dst.String()))
		e.optInt(tm, "outer_ipv4_ttl", int(t.OuterTTL))
		e.optInt(tm, "outer_ipv4_tos", int(t.OuterTOS))
		e.optInt(tm, "vni", int(t.VNI))
		e.optInt(tm, "outer_udp_src", int(t.OuterUDPSrc))
		e.optInt(tm, "outer_udp_dst", int(t.OuterUDPDst))
		if t.GREProtocol != 0 {
			e.kv(tm, "gre_protocol", e.scalar("!!int", "0x"+strconv.FormatUint(uint64(t.GREProtocol), 16)))
		}
		e.optInt(tm, "tni", int(t.TNI))
		e.optInt(tm, "flow_id", int(t.FlowID))
		e.kv(m, "tunnel", tm)
	}
	return m
}

// macString formats a MAC address as aa:bb:cc:dd:ee:ff.
func macString(b []byte) string {
	const hex = "0123456789abcdef"
	out := make([]byte, 0, 3*len(b))
	for i, x := range b {
		if i > 0 {
			out = append(out, ':')
		}
		out = append(out, hex[x>>4], hex[x&15])
	}
	return string(out)
}

func (e *encoder) match(p string, mt *Match) *yaml.Node {
	m := e.m()
	port := func(k string, r PortRange) {
		switch {
		case r.Any():
		case r.Lo == r.Hi:
			e.int(m, k, int(r.Lo))
		default:
			e.str(m, k, strconv.Itoa(int(r.Lo))+"-"+strconv.Itoa(int(r.Hi)))
		}
	}
	port("udp_src", mt.UDPSrc)
	port("udp_dst", mt.UDPDst)
	e.optInt(m, "ipv4_len", int(mt.IPv4Len))
	for _, a := range []struct {
		k  string
		ok bool
		s  string
	}{{"ipv4_src", mt.IPv4Src.IsValid(), mt.IPv4Src.String()}, {"ipv4_dst", mt.IPv4Dst.IsValid(), mt.IPv4Dst.String()},
		{"ipv6_src", mt.IPv6Src.IsValid(), mt.IPv6Src.String()}, {"ipv6_dst", mt.IPv6Dst.IsValid(), mt.IPv6Dst.String()}} {
		switch {
		case e.c.isPlaceholder(p + "." + a.k):
			e.str(m, a.k, placeholderText)
		case a.ok:
			e.str(m, a.k, a.s)
		}
	}
	if f := mt.Flex; f != nil {
		e.int(m, "flex_item_id", f.ItemID)
		e.kv(m, "val", e.scalar("!!int", "0x"+strconv.FormatUint(uint64(f.Value), 16)))
		e.kv(m, "mask", e.scalar("!!int", "0x"+strconv.FormatUint(uint64(f.Mask), 16)))
	}
	if eth := mt.Ethernet; eth != nil {
		em := e.m()
		if len(eth.Src) > 0 {
			e.str(em, "src", eth.Src.String())
		}
		if len(eth.Dst) > 0 {
			e.str(em, "dst", eth.Dst.String())
		}
		em.Style = yaml.FlowStyle
		e.kv(m, "ethernet", em)
	}
	if ec := mt.ECPRI; ec != nil {
		em := e.m()
		if ec.MsgType != nil {
			e.int(em, "msg_type", int(*ec.MsgType))
		}
		if ec.PCID != nil {
			e.int(em, "pc_id", int(*ec.PCID))
		}
		em.Style = yaml.FlowStyle
		e.kv(m, "ecpri", em)
	}
	return m
}

func (e *encoder) reorder(r *Reorder) *yaml.Node {
	m := e.m()
	e.str(m, "name", r.Name)
	e.str(m, "reorder_type", string(r.Type))
	e.str(m, "memory_region", r.MemoryRegion)
	e.int(m, "payload_byte_offset", r.PayloadByteOffset)
	l := e.l()
	for _, id := range r.FlowIDs {
		l.Content = append(l.Content, e.scalar("!!int", strconv.Itoa(id)))
	}
	e.kv(m, "flow_ids", l)
	bits := func(f BitField) *yaml.Node {
		b := e.m()
		b.Style = yaml.FlowStyle
		e.int(b, "bit_offset", f.Offset)
		e.int(b, "bit_width", f.Width)
		return b
	}
	mm := e.m()
	km := e.m()
	e.kv(km, "sequence_number", bits(r.Method.Seq))
	switch r.Method.Kind {
	case MethodSeqBatchNumber:
		e.kv(km, "batch_number", bits(r.Method.Batch))
	default:
		e.int(km, "packets_per_batch", r.Method.PacketsPerBatch)
	}
	e.kv(mm, string(r.Method.Kind), km)
	e.kv(m, "method", mm)
	if dt := r.DataTypes; dt != nil {
		dm := e.m()
		e.optStr(dm, "input_type", string(dt.Input))
		e.optStr(dm, "output_type", string(dt.Output))
		e.optStr(dm, "endianness", string(dt.Endianness))
		e.kv(m, "data_types", dm)
	}
	e.optStr(m, "missing_action", string(r.MissingAction))
	e.optStr(m, "reorder_engine", string(r.Engine))
	if r.CyclicSequence {
		e.kv(m, "cyclic_sequence", e.bool(true))
	}
	if c := r.Cyclic; c != nil {
		cm := e.m()
		e.kv(cm, "epoch", bits(c.Epoch))
		e.kv(m, "cyclic_sequence", cm)
	}
	return m
}
