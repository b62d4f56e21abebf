package config

// iface checks one interface; engine is its resolved engine ("" when unknown).
func (v *validator) iface(i int, engine string) {
	c := v.c
	ifc := &c.Interfaces[i]
	p := indexPath("interfaces", i)
	isSocket := c.StreamType == StreamSocket
	var proto Protocol
	switch {
	case c.StreamType == StreamSocket && ifc.Socket == nil:
		v.errf(p+".socket_config", "interfaces of stream_type socket need socket_config")
	case c.StreamType == StreamRaw && ifc.Socket != nil:
		v.errf(p+".socket_config", "socket_config is only for stream_type socket; this configuration is raw")
	case ifc.Socket != nil:
		proto = v.socket(p+".socket_config", ifc.Socket)
	}
	if ifc.RoCE != nil {
		switch ifc.RoCE.TransportMode {
		case "RC", "UC", "UD":
		case "":
			v.errf(p+".roce_config.transport_mode", "roce_config needs transport_mode (RC, UC or UD)")
		default:
			v.errf(p+".roce_config.transport_mode", "invalid transport_mode %q (valid: RC, UC, UD)", ifc.RoCE.TransportMode)
		}
		if proto != ProtoRoCE && proto != "" {
			v.errf(p+".roce_config", "roce_config is only for roce:// endpoints; this interface is %s", proto)
		} else if c.StreamType == StreamRaw {
			v.errf(p+".roce_config", "roce_config is only for stream_type socket with roce:// endpoints")
		}
	} else if proto == ProtoRoCE {
		v.errf(p+".roce_config", "roce:// endpoints need roce_config (transport_mode RC, UC or UD)")
	}
	if ifc.RX != nil {
		rx := ifc.RX
		if n := len(rx.Queues); n > MaxRxQueues {
			v.errf(p+".rx.queues", "at most %d RX queues are supported, got %d", MaxRxQueues, n)
		}
		v.queues(p+".rx.queues", rx.Queues, false, engine, proto)
		if isSocket {
			for _, k := range []struct {
				key string
				n   int
			}{{"flows", len(rx.Flows)}, {"flex_items", len(rx.FlexItems)}} {
				if k.n > 0 {
					v.errf(p+".rx."+k.key, "rx.%s need a raw stream; socket engines (socket, roce) cannot honour them", k.key)
				}
			}
			// Reorder reads sequence numbers from the received packets, which the UDP/TCP
			// socket engine delivers like any other (daqiri-go; upstream: raw only). A socket
			// queue has no flows, so a plan takes every packet of the interface's RX queue.
			if len(rx.Reorders) > 0 && proto == ProtoRoCE {
				v.errf(p+".rx.reorder_configs", "rx.reorder_configs are not supported on roce:// endpoints")
			} else if len(rx.Reorders) > 0 {
				v.reorders(p+".rx", rx)
			}
			if rx.FlowIsolation {
				v.errf(p+".rx.flow_isolation", "flow_isolation needs a raw stream; socket engines (socket, roce) cannot honour it")
			}
			if rx.DynamicFlowCapacity > 0 {
				v.errf(p+".rx.dynamic_flow_capacity", "dynamic flows need a raw stream; socket engines (socket, roce) cannot honour them")
			}
		} else {
			v.flexItems(p+".rx.flex_items", rx.FlexItems)
			v.flows(p+".rx", rx.Flows, rx.Queues, rx.FlexItems, false)
			v.reorders(p+".rx", rx)
		}
		if rx.DynamicFlowCapacity < 0 {
			v.errf(p+".rx.dynamic_flow_capacity", "must be ≥ 0, got %d", rx.DynamicFlowCapacity)
		}
	}
	if ifc.TX != nil {
		tx := ifc.TX
		if n := len(tx.Queues); n > MaxTxQueues {
			v.errf(p+".tx.queues", "at most %d TX queues are supported, got %d", MaxTxQueues, n)
		}
		v.queues(p+".tx.queues", tx.Queues, true, engine, proto)
		if isSocket {
			if len(tx.Flows) > 0 {
				v.errf(p+".tx.flows", "tx.flows (VLAN and tunnel transforms) need a raw stream; socket engines (socket, roce) cannot honour them")
			}
		} else {
			v.flows(p+".tx", tx.Flows, tx.Queues, nil, true)
		}
	}
}

// socket checks socket_config (§2.4) and returns the interface's protocol.
func (v *validator) socket(p string, s *SocketConfig) Protocol {
	c := v.c
	switch s.Mode {
	case ModeClient, ModeServer:
	case "":
		v.errf(p+".mode", "socket_config needs mode (client or server)")
	default:
		v.errf(p+".mode", "invalid socket mode %q (valid: client, server)", s.Mode)
	}
	local, remote := p+".local_addr", p+".remote_addr"
	phLocal := c.isPlaceholder(local) || c.isPlaceholder(p+".local_ip")
	phRemote := c.isPlaceholder(remote) || c.isPlaceholder(p+".remote_ip")
	// The legacy keys are the same endpoints; point at whichever the file used.
	if !v.given(local) && v.given(p+".local_ip") {
		local = p + ".local_ip"
	}
	if !v.given(remote) && v.given(p+".remote_ip") {
		remote = p + ".remote_ip"
	}
	// Upstream infers one protocol for the whole configuration, so an interface without a URI
	// of its own (a RoCE client that forgot local_addr) takes the others'.
	proto := s.Proto()
	if proto == "" {
		proto = c.socketProtocol()
	}
	for _, ep := range []struct {
		e    Endpoint
		path string
	}{{s.Local, local}, {s.Remote, remote}} {
		if ep.e.IsZero() {
			continue
		}
		v.endpoint(ep.path, ep.e)
		switch {
		case v.proto == "":
			v.proto, v.protoAt = ep.e.Proto, ep.path
		case ep.e.Proto != v.proto:
			v.errf(ep.path, "scheme %s conflicts with the protocol %s inferred from %s: all endpoints of a configuration use one protocol", ep.e.Proto, v.proto, v.protoAt)
		}
	}
	if proto == "" {
		if !phLocal && !phRemote {
			v.errf(p, "missing socket protocol: set local_addr or remote_addr as scheme://ip:port (tcp, udp or roce)")
		}
		return ""
	}
	needPort := func(path string, e Endpoint, what string) {
		if !e.IsZero() && e.Port == 0 {
			v.errf(path, "%s needs a port (1..65535)", what)
		}
	}
	switch {
	case s.Mode == ModeServer:
		if s.Local.IsZero() && !phLocal {
			v.errf(local, "server mode needs local_addr (scheme://ip:port to listen on)")
		}
		needPort(local, s.Local, "a server's local_addr")
		switch {
		case proto == ProtoUDP:
			// Upstream's meaning: the one peer a UDP server accepts (port 0: any port of
			// that host); datagrams from others are dropped and counted (peer_filtered).
		case !s.Remote.IsZero() || phRemote:
			v.errf(remote, "a %s server has no remote_addr: it accepts peers (only a udp server takes one, the peer it accepts)", proto)
		}
	case s.Mode == ModeClient && proto == ProtoRoCE:
		if s.Local.IsZero() && !phLocal {
			v.errf(local, "a RoCE client needs local_addr (roce://ip)")
		}
		if !s.Remote.IsZero() || phRemote {
			v.errf(remote, "a RoCE client has no remote_addr: its peer is chosen by the application")
		}
	case s.Mode == ModeClient:
		if s.Remote.IsZero() && !phRemote {
			v.errf(remote, "a %s client needs remote_addr (%s://ip:port of the server)", proto, proto)
		}
		needPort(remote, s.Remote, "remote_addr")
		needPort(local, s.Local, "local_addr")
	}
	// Upstream stores max_payload_size in 16 bits (and silently turns larger values into 0);
	// a TCP or RoCE message may be larger than a UDP datagram, so only UDP is capped.
	switch {
	case s.MaxPayload < 0:
		v.errf(p+".max_payload_size", "must be ≥ 0, got %d", s.MaxPayload)
	case proto == ProtoUDP && s.MaxPayload > 65535:
		v.errf(p+".max_payload_size", "a UDP payload is at most 65535 bytes, got %d", s.MaxPayload)
	case s.MaxPayload > MaxSocketPayload:
		v.errf(p+".max_payload_size", "must be at most %d, got %d", MaxSocketPayload, s.MaxPayload)
	}
	if s.RetryConnectS < 0 {
		v.errf(p+".retry_connect_s", "must be ≥ 1, got %d", s.RetryConnectS)
	}
	for _, f := range []struct {
		key string
		n   int
	}{{"recv_buffer_size", s.RecvBufferBytes}, {"send_buffer_size", s.SendBufferBytes}, {"max_burst_interval_ms", s.MaxBurstIntervalMs}, {"min_ipg_ns", s.MinIPGNs}} {
		if f.n < 0 {
			v.errf(p+"."+f.key, "must be ≥ 0, got %d", f.n)
		}
	}
	switch {
	case s.MaxConnections < 0 || s.MaxConnections > 65536:
		v.errf(p+".max_connections", "must be between 1 and 65536, got %d", s.MaxConnections)
	case s.MaxConnections > 0 && (proto != ProtoTCP || s.Mode != ModeServer):
		v.warnf(p+".max_connections", "max_connections applies to TCP servers only; it is ignored here")
	}
	if s.MaxBurstIntervalMs > 0 {
		v.warnf(p+".max_burst_interval_ms", "max_burst_interval_ms is not used by any engine (upstream parses it but never uses it)")
	}
	if s.MinIPGNs > 0 {
		v.warnf(p+".min_ipg_ns", "min_ipg_ns is not used by any engine (upstream parses it but never uses it)")
	}
	return proto
}

// endpoint checks an endpoint built in code the way ParseEndpoint checks a URI.
func (v *validator) endpoint(path string, e Endpoint) {
	switch e.Proto {
	case ProtoTCP, ProtoUDP, ProtoRoCE:
	default:
		v.errf(path, "unknown protocol %q (valid: tcp, udp, roce)", e.Proto)
		return
	}
	if err := checkHost(e.Host); err != nil {
		v.errf(path, "%v", err)
	}
	if e.Port < 0 || e.Port > 65535 {
		v.errf(path, "port %d is out of range 1..65535", e.Port)
	}
	if err := checkQuery(e.Proto, e.Query); err != nil {
		v.errf(path, "%v", err)
	}
}

// queues checks the queues of one direction.
func (v *validator) queues(base string, qs []Queue, isTX bool, engine string, proto Protocol) {
	ids := map[int]bool{}
	names := map[string]bool{}
	for k := range qs {
		v.queue(indexPath(base, k), &qs[k], isTX, engine, proto, ids, names)
	}
}

// queue checks one queue at key path p; ids and names are those its direction has taken so
// far (it adds its own). Open (through Validate) and Session.AddRxQueue/AddTxQueue (through
// CheckQueue, with v.runtime set) both check a queue here.
func (v *validator) queue(p string, q *Queue, isTX bool, engine string, proto Protocol, ids map[int]bool, names map[string]bool) {
	c := v.c
	switch {
	case q.Name == "":
		v.errf(p+".name", "a queue needs a name")
	case names[q.Name]:
		v.errf(p+".name", "duplicate queue name %q", q.Name)
	default:
		names[q.Name] = true
	}
	switch {
	case q.ID < 0 || q.ID > 65535:
		v.errf(p+".id", "must be between 0 and 65535, got %d", q.ID)
	case ids[q.ID] && v.runtime:
		v.errf(p+".id", "duplicate queue id %d: a live queue of this direction has it", q.ID)
	case ids[q.ID]:
		v.errf(p+".id", "duplicate queue id %d", q.ID)
	default:
		ids[q.ID] = true
	}
	corePH := c.isPlaceholder(p + ".cpu_core")
	switch q.PollMode {
	case PollIndirect, "":
		_, coreOK := q.Core()
		switch {
		case q.CPUCore == "" && v.runtime:
			// A run-time queue's worker need not be pinned.
		case q.CPUCore == "" && !corePH:
			v.errf(p+".cpu_core", "a queue with poll_mode indirect needs cpu_core (the core of its worker thread)")
		case !coreOK && !corePH:
			v.errf(p+".cpu_core", "must be a CPU core number, got %q", q.CPUCore)
		}
		switch {
		case q.BatchSize == 0 && !v.given(p+".batch_size"):
			v.errf(p+".batch_size", "a queue with poll_mode indirect needs batch_size")
		case q.BatchSize <= 0:
			v.errf(p+".batch_size", "must be > 0, got %d", q.BatchSize)
		case q.BatchSize > MaxBatchSize:
			v.errf(p+".batch_size", "must be ≤ %d, got %d", MaxBatchSize, q.BatchSize)
		default:
			for _, name := range q.MemoryRegions {
				if mr := v.regions[name]; mr != nil && mr.NumBufs > 0 && q.BatchSize > mr.NumBufs {
					v.warnf(p+".batch_size", "batch_size %d exceeds the %d buffers of memory region %s: a burst never holds more than %d packets", q.BatchSize, mr.NumBufs, name, mr.NumBufs)
					break
				}
			}
		}
	case PollDirect:
		if v.runtime {
			v.errf(p+".poll_mode", "run-time queues are indirect (poll_mode direct is set up at Open)")
		}
		if q.CPUCore != "" || corePH {
			v.errf(p+".cpu_core", "a queue with poll_mode direct has no cpu_core: the caller polls it")
		}
		if q.BatchSize != 0 || v.given(p+".batch_size") {
			v.errf(p+".batch_size", "a queue with poll_mode direct has no batch_size")
		}
		if q.TimeoutUs != 0 || v.given(p+".timeout_us") {
			v.errf(p+".timeout_us", "a queue with poll_mode direct has no timeout_us")
		}
		if engine != "" && !engineCanDirect(engine) {
			v.errf(p+".poll_mode", "poll_mode direct needs engine xdp or mlx5; this interface resolves to engine %s", engine)
		}
	default:
		v.errf(p+".poll_mode", "invalid poll_mode %q (valid: indirect, direct)", q.PollMode)
	}
	if q.TimeoutUs < 0 || q.TimeoutUs > MaxTimeoutUs {
		v.errf(p+".timeout_us", "must be between 0 and %d (one hour), got %d", MaxTimeoutUs, q.TimeoutUs)
	} else if isTX && q.TimeoutUs > 0 && q.PollMode != PollDirect {
		v.warnf(p+".timeout_us", "timeout_us applies to RX queues only; it is ignored on a TX queue")
	}
	if !isTX && len(q.Offloads) > 0 {
		v.errf(p+".offloads", "offloads apply to TX queues only")
	}
	for j, o := range q.Offloads {
		if o != "tx_eth_src" {
			v.errf(indexPath(p+".offloads", j), "unknown offload %q (the only one is tx_eth_src)", o)
		}
	}
	switch {
	case q.PacingMbps < 0:
		v.errf(p+".pacing_mbps", "must be ≥ 0, got %d", q.PacingMbps)
	case !isTX && q.PacingMbps > 0:
		v.errf(p+".pacing_mbps", "pacing_mbps applies to TX queues only")
	}
	v.queueRegions(p, q, proto)
}

// queueRegions checks a queue's memory_regions.
func (v *validator) queueRegions(p string, q *Queue, proto Protocol) {
	mp := p + ".memory_regions"
	switch n := len(q.MemoryRegions); {
	case n == 0 && proto == ProtoRoCE:
		// Upstream's RoCE engine ignores queue regions (the application names regions per
		// burst); daqiri-go's registers and posts from them, so Open will refuse this.
		v.warnf(mp, "the roce engine receives into and sends from the queue's memory_regions; add them or opening fails")
	case n == 0:
		v.errf(mp, "a queue needs memory_regions (one per packet segment)")
	case n > MaxSegments:
		v.errf(mp, "a queue has at most %d memory regions (segments), got %d", MaxSegments, n)
	}
	for j, name := range q.MemoryRegions {
		jp := indexPath(mp, j)
		mr := v.regions[name]
		if mr == nil {
			if !v.broken("memory_regions") {
				v.errf(jp, "memory region %q is not defined in memory_regions", name)
			}
			continue
		}
		v.used[name] = true
		if mr.Kind == KindDevice && (proto == ProtoTCP || proto == ProtoUDP) {
			v.errf(jp, "memory region %s is device (GPU) memory, which %s sockets cannot use (GPU memory regions are not supported for protocol %s)", name, proto, proto)
		}
	}
}

// frameSize is the largest frame a queue can carry: the sum of its segments' buffer sizes
// (0 when a region is undefined).
func (v *validator) frameSize(q *Queue) int {
	n := 0
	for _, name := range q.MemoryRegions {
		mr := v.regions[name]
		if mr == nil {
			return 0
		}
		n += mr.BufSize
	}
	return n
}

// flexItems checks rx.flex_items.
func (v *validator) flexItems(base string, items []FlexItem) {
	ids := map[int]bool{}
	for k := range items {
		f := &items[k]
		p := indexPath(base, k)
		if f.Name == "" {
			v.errf(p+".name", "a flex item needs a name")
		}
		switch {
		case f.ID < 0 || f.ID > 65535:
			v.errf(p+".id", "must be between 0 and 65535, got %d", f.ID)
		case ids[f.ID]:
			v.errf(p+".id", "duplicate flex item id %d", f.ID)
		default:
			ids[f.ID] = true
		}
		if f.UDPDstPort == 0 {
			v.errf(p+".udp_dst_port", "must be a UDP port 1..65535, got 0")
		}
		if f.Offset < 0 || f.Offset > MaxFlexOffset || f.Offset%4 != 0 {
			v.errf(p+".offset", "must be a multiple of 4 between 0 and %d, got %d", MaxFlexOffset, f.Offset)
		}
	}
}
