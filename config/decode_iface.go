package config

import (
	"math"
	"strconv"
	"strings"
)

// memoryRegion decodes one memory_regions[] item.
func (d *decoder) memoryRegion(it entry, mr *MemoryRegion) {
	mr.Access = AccessLocal
	got := d.fields(it.v, it.path, "a memory region", map[string]handler{
		"name": func(e entry) { mr.Name, _ = d.str(e) },
		"kind": func(e entry) {
			if s, ok := d.str(e); ok {
				mr.Kind = MemoryKind(s)
			}
		},
		"affinity": intInto(d, &mr.Affinity, 0, math.MaxInt32),
		"access": func(e entry) {
			names, ok := d.strList(e, "access")
			if !ok {
				return
			}
			if len(names) == 0 {
				d.fail(e.path, "access must list at least one of local, rdma_read, rdma_write")
				return
			}
			mr.Access = 0
			for i, s := range names {
				switch s {
				case "local":
					mr.Access |= AccessLocal
				case "rdma_write":
					mr.Access |= AccessRDMAWrite
				case "rdma_read":
					mr.Access |= AccessRDMARead
				default:
					d.fail(indexPath(e.path, i), "unknown access %q (valid: local, rdma_read, rdma_write)", s)
				}
			}
		},
		"num_bufs": intInto(d, &mr.NumBufs, math.MinInt64, math.MaxInt32),
		"buf_size": intInto(d, &mr.BufSize, math.MinInt64, math.MaxInt32),
		"owned": func(e entry) {
			if b, ok := d.boolean(e); ok {
				mr.Unowned = !b
			}
		},
	}, nil)
	d.require(got, it.path, "a memory region", "name", "kind", "affinity", "num_bufs", "buf_size")
}

// iface decodes one interfaces[] item.
func (d *decoder) iface(it entry, ifc *Interface) {
	got := d.fields(it.v, it.path, "an interface", map[string]handler{
		"name": func(e entry) { ifc.Name, _ = d.str(e) },
		"address": func(e entry) {
			if !d.placeholder(e) {
				ifc.Address, _ = d.str(e)
			}
		},
		"socket_config": func(e entry) {
			ifc.Socket = &SocketConfig{}
			d.socketConfig(e, ifc.Socket)
		},
		"roce_config": func(e entry) {
			ifc.RoCE = &RoCEConfig{}
			g := d.fields(e.v, e.path, "roce_config", map[string]handler{
				"transport_mode": func(e entry) { ifc.RoCE.TransportMode, _ = d.str(e) },
			}, nil)
			d.require(g, e.path, "roce_config", "transport_mode")
		},
		"rx": func(e entry) {
			ifc.RX = &RxConfig{}
			d.rx(e, ifc.RX)
		},
		"tx": func(e entry) {
			ifc.TX = &TxConfig{}
			d.tx(e, ifc.TX)
		},
	}, map[string]string{
		"rdma_config": "the legacy key rdma_config was removed: use socket_config (mode, local_addr: roce://ip:port) and roce_config (transport_mode)",
	})
	d.require(got, it.path, "an interface", "name", "address")
}

// socketConfig decodes socket_config.
func (d *decoder) socketConfig(se entry, sc *SocketConfig) {
	var legacyIP, legacyPort [2]*entry // [0] local, [1] remote
	intField := func(dst *int, lo, hi int64) handler {
		return func(e entry) {
			if v, ok := d.integer(e, lo, hi); ok {
				*dst = int(v)
			}
		}
	}
	uri := func(dst *Endpoint) handler {
		return func(e entry) {
			if d.placeholder(e) {
				return
			}
			s, ok := d.str(e)
			if !ok {
				return
			}
			ep, err := ParseEndpoint(s)
			if err != nil {
				d.fail(e.path, "%v", err)
				return
			}
			*dst = ep
		}
	}
	legacy := func(slot **entry) handler {
		return func(e entry) { *slot = &e }
	}
	got := d.fields(se.v, se.path, "socket_config", map[string]handler{
		"mode": func(e entry) {
			if s, ok := d.str(e); ok {
				sc.Mode = SocketMode(s)
			}
		},
		"local_addr":            uri(&sc.Local),
		"remote_addr":           uri(&sc.Remote),
		"local_ip":              legacy(&legacyIP[0]),
		"remote_ip":             legacy(&legacyIP[1]),
		"local_port":            legacy(&legacyPort[0]),
		"remote_port":           legacy(&legacyPort[1]),
		"max_payload_size":      intField(&sc.MaxPayload, 0, math.MaxInt32),
		"retry_connect_s":       intField(&sc.RetryConnectS, 1, math.MaxInt32),
		"max_burst_interval_ms": intField(&sc.MaxBurstIntervalMs, 0, math.MaxInt32),
		"min_ipg_ns":            intField(&sc.MinIPGNs, 0, math.MaxInt32),
		"recv_buffer_size":      intField(&sc.RecvBufferBytes, 0, math.MaxInt32),
		"send_buffer_size":      intField(&sc.SendBufferBytes, 0, math.MaxInt32),
		"max_connections":       intField(&sc.MaxConnections, 1, 65536),
	}, map[string]string{
		"protocol": "socket_config.protocol was removed: give the protocol as the scheme of local_addr/remote_addr (tcp://, udp://, roce://)",
	})
	if got == nil {
		return
	}
	d.require(got, se.path, "socket_config", "mode")
	names := [2]string{"local", "remote"}
	eps := [2]*Endpoint{&sc.Local, &sc.Remote}
	for i := range 2 {
		if legacyIP[i] == nil && legacyPort[i] == nil {
			continue
		}
		before := len(d.errs)
		d.legacyEndpoint(got, names[i], legacyIP[i], legacyPort[i], eps[i])
		if len(d.errs) > before {
			// A broken legacy endpoint is this side's endpoint: keep validation quiet about it.
			d.failed = append(d.failed, joinPath(se.path, names[i]+"_addr"))
		}
	}
}

// legacyEndpoint decodes side_ip/side_port (side is local or remote) into ep.
func (d *decoder) legacyEndpoint(got map[string]entry, side string, ipE, portE *entry, ep *Endpoint) {
	if _, ok := got[side+"_addr"]; ok {
		at := ipE
		if at == nil {
			at = portE
		}
		d.fail(at.path, "%s_addr cannot be combined with %s_ip/%s_port", side, side, side)
		return
	}
	port := 0
	if portE != nil {
		if v, ok := d.integer(*portE, 0, math.MaxUint16); ok {
			port = int(v)
		}
	}
	if ipE == nil {
		d.fail(portE.path, "%s_port needs %s_ip (or use %s_addr: scheme://ip:port)", side, side, side)
		return
	}
	if d.placeholder(*ipE) {
		return
	}
	host, ok := d.str(*ipE)
	if !ok {
		return
	}
	if err := checkHost(host); err != nil {
		d.fail(ipE.path, "%v", err)
		return
	}
	*ep = Endpoint{Host: host, Port: port}
	d.legacy = append(d.legacy, legacyEndpoint{ep: ep, path: ipE.path})
}

// inferLegacyProtocols gives local_ip/remote_ip endpoints the protocol of the configuration's
// URIs, as upstream does; with no URI anywhere there is no protocol to infer.
func (d *decoder) inferLegacyProtocols() {
	if len(d.legacy) == 0 {
		return
	}
	var proto Protocol
	for i := range d.c.Interfaces {
		if s := d.c.Interfaces[i].Socket; s != nil {
			for _, ep := range []Endpoint{s.Local, s.Remote} {
				if ep.Proto != "" && proto == "" {
					proto = ep.Proto
				}
			}
		}
	}
	for _, l := range d.legacy {
		if proto == "" {
			d.fail(l.path, "missing socket protocol: local_ip/remote_ip carry none; use local_addr/remote_addr with a scheme (tcp://, udp://, roce://)")
			continue
		}
		l.ep.Proto = proto
	}
}

// rx decodes an interface's rx block.
func (d *decoder) rx(re entry, rx *RxConfig) {
	d.fields(re.v, re.path, "rx", map[string]handler{
		"flow_isolation":        func(e entry) { rx.FlowIsolation, _ = d.boolean(e) },
		"dynamic_flow_capacity": intInto(d, &rx.DynamicFlowCapacity, 0, math.MaxUint32),
		"hardware_timestamps":   func(e entry) { rx.HardwareTimestamps, _ = d.boolean(e) },
		"queues": func(e entry) {
			items, _ := d.seq(e, "queues")
			rx.Queues = make([]Queue, len(items))
			for i, it := range items {
				d.queue(it, &rx.Queues[i], false)
			}
		},
		"flows": func(e entry) {
			items, _ := d.seq(e, "rx.flows")
			rx.Flows = make([]Flow, len(items))
			for i, it := range items {
				d.flow(it, &rx.Flows[i])
			}
		},
		"flex_items": func(e entry) {
			items, _ := d.seq(e, "flex_items")
			rx.FlexItems = make([]FlexItem, len(items))
			for i, it := range items {
				d.flexItem(it, &rx.FlexItems[i])
			}
		},
		"reorder_configs": func(e entry) {
			items, _ := d.seq(e, "reorder_configs")
			rx.Reorders = make([]Reorder, len(items))
			for i, it := range items {
				d.reorder(it, &rx.Reorders[i])
			}
		},
	}, nil)
}

// tx decodes an interface's tx block.
func (d *decoder) tx(te entry, tx *TxConfig) {
	d.fields(te.v, te.path, "tx", map[string]handler{
		"accurate_send": func(e entry) { tx.AccurateSend, _ = d.boolean(e) },
		"queues": func(e entry) {
			items, _ := d.seq(e, "queues")
			tx.Queues = make([]Queue, len(items))
			for i, it := range items {
				d.queue(it, &tx.Queues[i], true)
			}
		},
		"flows": func(e entry) {
			items, _ := d.seq(e, "tx.flows")
			tx.Flows = make([]Flow, len(items))
			for i, it := range items {
				d.flow(it, &tx.Flows[i])
			}
		},
	}, nil)
}

// queue decodes one rx.queues[] or tx.queues[] item.
func (d *decoder) queue(it entry, q *Queue, isTX bool) {
	hs := map[string]handler{
		"name": func(e entry) { q.Name, _ = d.str(e) },
		"id":   intInto(d, &q.ID, 0, math.MaxUint16),
		"poll_mode": func(e entry) {
			if s, ok := d.str(e); ok {
				q.PollMode = PollMode(s)
			}
		},
		"cpu_core": func(e entry) {
			if d.placeholder(e) {
				return
			}
			s, ok := d.scalar(e, "a CPU core number")
			if !ok {
				return
			}
			if e.v.Tag == "!!int" {
				if _, ok := d.integer(e, 0, math.MaxInt32); !ok {
					return
				}
			} else if n, err := strconv.Atoi(strings.TrimSpace(s)); err != nil || n < 0 {
				d.fail(e.path, "must be a CPU core number, got %s", kindName(e.v))
				return
			} else {
				s = strconv.Itoa(n)
			}
			q.CPUCore = s
		},
		"batch_size":     intInto(d, &q.BatchSize, math.MinInt64, MaxBatchSize),
		"timeout_us":     intInto(d, &q.TimeoutUs, 0, MaxTimeoutUs),
		"memory_regions": func(e entry) { q.MemoryRegions, _ = d.strList(e, "memory_regions") },
	}
	if isTX {
		hs["offloads"] = func(e entry) { q.Offloads, _ = d.strList(e, "offloads") }
		hs["pacing_mbps"] = func(e entry) {
			if v, ok := d.integer(e, 0, math.MaxInt32); ok {
				q.PacingMbps = int(v)
			}
		}
	}
	got := d.fields(it.v, it.path, "a queue", hs, nil)
	d.require(got, it.path, "a queue", "name", "id")
}
