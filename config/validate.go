package config

import (
	"math/bits"
	"net/netip"
	"strings"
)

// Limits daqiri-go adds where upstream has none, to catch absurd values early.
const (
	MaxMetaBuffers = 1 << 20 // rx_meta_buffers / tx_meta_buffers
	MaxRegionBytes = 1 << 46 // num_bufs × buf_size of one memory region (64 TiB)
	MaxFlexOffset  = 28      // largest flex item offset (bytes after the UDP header)

	MaxSocketPayload = 1 << 30 // max_payload_size of TCP and RoCE endpoints

	// MaxBatchSize bounds a queue's batch_size. Upstream takes any positive int and sizes each
	// burst's packet arrays by it (so 2^31-1 asks for gigabytes per burst); its own examples
	// use at most 10240. A batch also never exceeds the buffers of its queue's regions.
	MaxBatchSize = 1 << 16
	// MaxTimeoutUs bounds timeout_us (one hour): larger values overflow a time.Duration long
	// before they mean anything for a partial burst.
	MaxTimeoutUs = 3_600_000_000
	// MaxConnections is the default cap on a TCP server endpoint's live connections
	// (socket_config.max_connections), upstream's listen backlog and RoCE connection limit.
	MaxConnections = 128
	// MaxConfigBytes is the largest configuration file LoadFile reads; upstream's examples
	// are a few KiB.
	MaxConfigBytes = 4 << 20
)

// Transform overhead on the wire, in bytes (upstream engine.cpp).
const (
	overheadVLAN  = 4
	overheadVXLAN = 50
	overheadGRE   = 38
	overheadNVGRE = 42
)

// Validate checks the whole configuration — every rule of the schema that can be decided
// without opening a device, including the engine-level rules upstream only applies in some
// engines (flows, poll modes, reorder plans) since the engine of every interface follows
// from the configuration (ResolveEngine). It works on configurations built in code as well as
// on parsed ones; for the latter errors carry file positions. Zero values of defaultable
// fields count as their defaults (see SetDefaults).
//
// All problems are reported: the error is an Errors list, sorted by position. Validate also
// recomputes Config.Warnings.
func (c *Config) Validate() error {
	if c == nil {
		return Errors{{Msg: "nil configuration"}}
	}
	if errs := c.check(); len(errs) > 0 {
		return sortErrors(errs)
	}
	return nil
}

// check runs every validation rule, sets c.Warnings and returns the errors unsorted.
func (c *Config) check(failed ...string) Errors {
	v := &validator{c: c, regions: map[string]*MemoryRegion{}, used: map[string]bool{}, failed: failed}
	v.run()
	c.Warnings = nil
	for _, w := range sortErrors(v.warns) {
		c.Warnings = append(c.Warnings, w.Error())
	}
	return v.errs
}

// validator accumulates errors and warnings over one configuration.
type validator struct {
	c       *Config
	errs    Errors
	warns   Errors
	regions map[string]*MemoryRegion
	used    map[string]bool // memory regions referenced by a queue or reorder plan
	proto   Protocol        // protocol of the first socket endpoint
	protoAt string
	failed  []string // key paths whose YAML could not be decoded (Parse only)
}

// broken reports whether decoding failed at or under path: references into such a part
// (a memory region name, a queue id, a flow id) cannot be checked meaningfully.
func (v *validator) broken(path string) bool {
	for _, f := range v.failed {
		if underPath(f, path) {
			return true
		}
	}
	return false
}

func (v *validator) errf(path, format string, args ...any) {
	v.errs = append(v.errs, v.c.Errorf(path, format, args...))
}

func (v *validator) add(e *Error) {
	if e != nil {
		v.errs = append(v.errs, e)
	}
}

func (v *validator) warnf(path, format string, args ...any) {
	v.warns = append(v.warns, v.c.Errorf(path, format, args...))
}

// given reports whether path was written in the YAML input (always false for code configs).
func (v *validator) given(path string) bool { return v.c.src.has(path) }

var logLevels = map[string]bool{"trace": true, "debug": true, "info": true, "warn": true, "error": true, "critical": true, "off": true}

func (v *validator) run() {
	c := v.c
	if c.Version != 1 {
		if c.Version == 0 && !v.given("version") {
			v.errf("version", "version is required (the schema version, 1)")
		} else {
			v.errf("version", "must be 1 (the only schema version), got %d", c.Version)
		}
	}
	v.add(c.streamTypeError())
	v.add(c.engineNameError())
	v.add(c.loopbackError())
	if c.LogLevel != "" && !logLevels[strings.ToLower(c.LogLevel)] {
		v.errf("log_level", "invalid log_level %q (valid: trace, debug, info, warn, error, critical, off)", c.LogLevel)
	}
	if c.MasterCore < 0 {
		v.errf("master_core", "must be ≥ 0, got %d", c.MasterCore)
	}
	for _, m := range []struct {
		key string
		n   int
	}{{"tx_meta_buffers", c.TxMetaBuffers}, {"rx_meta_buffers", c.RxMetaBuffers}} {
		if m.n < 0 || m.n > MaxMetaBuffers {
			v.errf(m.key, "must be between 1 and %d, got %d", MaxMetaBuffers, m.n)
		}
	}
	v.memoryRegions()
	v.interfaces()
	for i := range c.MemoryRegions {
		if mr := &c.MemoryRegions[i]; mr.Name != "" && !v.used[mr.Name] {
			v.warnf(indexPath("memory_regions", i), "memory region %s is not used by any queue or reorder plan", mr.Name)
		}
	}
}

func (v *validator) memoryRegions() {
	for i := range v.c.MemoryRegions {
		mr := &v.c.MemoryRegions[i]
		p := indexPath("memory_regions", i)
		switch {
		case mr.Name == "":
			v.errf(p+".name", "a memory region needs a name")
		case v.regions[mr.Name] != nil:
			v.errf(p+".name", "duplicate memory region name %q", mr.Name)
		default:
			v.regions[mr.Name] = mr
		}
		switch mr.Kind {
		case KindHost, KindHostPinned, KindHuge, KindDevice:
		case "":
			v.errf(p+".kind", "a memory region needs kind (host, host_pinned, huge or device)")
		default:
			v.errf(p+".kind", "unknown memory kind %q (valid: host, host_pinned, huge, device)", mr.Kind)
		}
		if mr.Affinity < 0 {
			v.errf(p+".affinity", "must be ≥ 0, got %d", mr.Affinity)
		}
		if mr.Access&^(AccessLocal|AccessRDMARead|AccessRDMAWrite) != 0 {
			v.errf(p+".access", "invalid access mask %#x (local=1, rdma_write=2, rdma_read=4)", uint8(mr.Access))
		}
		if mr.NumBufs <= 0 {
			v.errf(p+".num_bufs", "must be > 0, got %d", mr.NumBufs)
		}
		if mr.BufSize <= 0 {
			v.errf(p+".buf_size", "must be > 0, got %d", mr.BufSize)
		}
		if mr.NumBufs > 0 && mr.BufSize > 0 && (mr.NumBufs > MaxRegionBytes/mr.BufSize) {
			v.errf(p, "num_bufs × buf_size = %d × %d exceeds %d bytes", mr.NumBufs, mr.BufSize, int64(MaxRegionBytes))
		}
	}
}

func (v *validator) interfaces() {
	c := v.c
	switch n := len(c.Interfaces); {
	case n == 0:
		v.errf("interfaces", "at least one interface is required")
	case n > MaxInterfaces:
		v.errf("interfaces", "at most %d interfaces are supported, got %d", MaxInterfaces, n)
	}
	names := map[string]bool{}
	rxFlowIDs := map[int]string{}
	txFlowIDs := map[int]string{}
	for i := range c.Interfaces {
		ifc := &c.Interfaces[i]
		p := indexPath("interfaces", i)
		switch {
		case ifc.Name == "":
			v.errf(p+".name", "an interface needs a name")
		case names[ifc.Name]:
			v.errf(p+".name", "duplicate interface name %q", ifc.Name)
		default:
			names[ifc.Name] = true
		}
		if ifc.Address == "" && !c.isPlaceholder(p+".address") {
			v.errf(p+".address", "an interface needs an address")
		}
		engine, err := c.ResolveEngine(i)
		if err != nil {
			if e, ok := err.(*Error); ok {
				v.add(e)
			}
		}
		v.iface(i, engine)
		if ifc.RX != nil {
			v.uniqueFlowIDs(p+".rx.flows", ifc.RX.Flows, rxFlowIDs)
		}
		if ifc.TX != nil {
			v.uniqueFlowIDs(p+".tx.flows", ifc.TX.Flows, txFlowIDs)
		}
	}
}

// uniqueFlowIDs rejects a static flow id used twice in one direction, on any interface: the
// id is the mark delivered with each packet.
func (v *validator) uniqueFlowIDs(base string, fs []Flow, seen map[int]string) {
	for j := range fs {
		p := indexPath(base, j)
		if prev, ok := seen[fs[j].ID]; ok {
			v.errf(p+".id", "duplicate flow id %d (also used by %s)", fs[j].ID, prev)
			continue
		}
		seen[fs[j].ID] = p
	}
}

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
	c := v.c
	ids := map[int]bool{}
	names := map[string]bool{}
	for k := range qs {
		q := &qs[k]
		p := indexPath(base, k)
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
		case ids[q.ID]:
			v.errf(p+".id", "duplicate queue id %d", q.ID)
		default:
			ids[q.ID] = true
		}
		corePH := c.isPlaceholder(p + ".cpu_core")
		switch q.PollMode {
		case PollIndirect, "":
			if q.CPUCore == "" && !corePH {
				v.errf(p+".cpu_core", "a queue with poll_mode indirect needs cpu_core (the core of its worker thread)")
			} else if _, ok := q.Core(); !ok && !corePH {
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

// reorders checks rx.reorder_configs (§4.1 and the engine constraints).
func (v *validator) reorders(base string, rx *RxConfig) {
	flows := map[int]*Flow{}
	for j := range rx.Flows {
		if _, dup := flows[rx.Flows[j].ID]; !dup {
			flows[rx.Flows[j].ID] = &rx.Flows[j]
		}
	}
	queues := map[int]*Queue{}
	for k := range rx.Queues {
		if _, dup := queues[rx.Queues[k].ID]; !dup {
			queues[rx.Queues[k].ID] = &rx.Queues[k]
		}
	}
	names := map[string]bool{}
	planOf := map[int]string{}
	for k := range rx.Reorders {
		r := &rx.Reorders[k]
		p := indexPath(base+".reorder_configs", k)
		switch {
		case r.Name == "":
			v.errf(p+".name", "a reorder config needs a name")
		case names[r.Name]:
			v.errf(p+".name", "duplicate reorder config name %q", r.Name)
		default:
			names[r.Name] = true
		}
		switch r.Type {
		case ReorderGPU, ReorderCPU:
		case "":
			v.errf(p+".reorder_type", "a reorder config needs reorder_type (gpu or cpu)")
		default:
			v.errf(p+".reorder_type", "invalid reorder_type %q (valid: gpu, cpu)", r.Type)
		}
		out := v.regions[r.MemoryRegion]
		switch {
		case r.MemoryRegion == "":
			v.errf(p+".memory_region", "a reorder config needs memory_region (the output region)")
		case out == nil:
			if !v.broken("memory_regions") {
				v.errf(p+".memory_region", "memory region %q is not defined in memory_regions", r.MemoryRegion)
			}
		default:
			v.used[r.MemoryRegion] = true
		}
		if r.PayloadByteOffset < 0 {
			v.errf(p+".payload_byte_offset", "must be ≥ 0, got %d", r.PayloadByteOffset)
		}
		ppb := v.method(p+".method", &r.Method)
		v.dataTypes(p+".data_types", r.DataTypes)
		switch r.MissingAction {
		case "", MissingPassthrough, MissingDrop:
		default:
			v.errf(p+".missing_action", "invalid missing_action %q (valid: drop, passthrough)", r.MissingAction)
		}
		if c := r.Cyclic; c != nil {
			ep := p + ".cyclic_sequence.epoch"
			switch {
			case c.Epoch.Width < 1 || c.Epoch.Width > 32:
				v.errf(ep+".bit_width", "must be between 1 and 32, got %d", c.Epoch.Width)
			case c.Epoch.Offset < 0:
				v.errf(ep+".bit_offset", "must be ≥ 0, got %d", c.Epoch.Offset)
			default:
				batchBits := -1
				switch {
				case r.Method.Kind == MethodSeqBatchNumber:
					batchBits = r.Method.Batch.Width
				case ppb > 0 && ppb&(ppb-1) == 0:
					batchBits = r.Method.Seq.Width - bits.TrailingZeros(uint(ppb))
				}
				if batchBits >= 0 && batchBits+c.Epoch.Width > 32 {
					v.errf(ep+".bit_width", "%d epoch bits and %d batch-number bits make a %d-bit batch key; at most 32", c.Epoch.Width, batchBits, batchBits+c.Epoch.Width)
				}
			}
		}

		// Flows: all known, each in one plan only, all steering to the same single queue.
		// Without flows (a socket stream) the plan reads the interface's only RX queue.
		var q *Queue
		qid := -1
		if len(rx.Flows) == 0 && len(r.FlowIDs) == 0 {
			switch len(rx.Queues) {
			case 1:
				q = &rx.Queues[0]
			default:
				v.errf(p+".flow_ids", "without flows a reorder plan reads the interface's only RX queue; this interface has %d", len(rx.Queues))
			}
		} else if len(r.FlowIDs) == 0 {
			v.errf(p+".flow_ids", "a reorder config needs at least one flow id")
		}
		for j, id := range r.FlowIDs {
			fp := indexPath(p+".flow_ids", j)
			f := flows[id]
			if f == nil {
				if !v.broken(base + ".flows") {
					v.errf(fp, "flow id %d is not an RX flow of this interface", id)
				}
				continue
			}
			if prev, ok := planOf[id]; ok {
				v.errf(fp, "flow id %d is already reordered by %s: a flow belongs to at most one plan", id, prev)
			} else {
				planOf[id] = p
			}
			target := -1
			for _, a := range f.Actions {
				if a.Type == ActionQueue {
					if len(a.Queues) > 1 {
						v.errf(fp, "flow %d spreads over several queues (RSS); reordering needs a single-queue flow", id)
					} else if len(a.Queues) == 1 {
						target = a.Queues[0]
					}
				}
			}
			if target < 0 {
				continue
			}
			switch {
			case qid < 0:
				qid, q = target, queues[target]
			case target != qid:
				v.errf(fp, "flow %d steers to queue %d but the plan's other flows steer to queue %d: one plan reads one queue", id, target, qid)
			}
		}
		if q == nil {
			continue
		}
		if q.PollMode == PollDirect {
			v.errf(p+".flow_ids", "the plan's flows steer to queue %s, which has poll_mode direct; reordering needs an indirect queue", q.Name)
		}
		if len(q.MemoryRegions) != 1 {
			v.errf(p+".flow_ids", "the plan's queue %s has %d memory regions; reordering needs a queue with exactly one (no header-data split)", q.Name, len(q.MemoryRegions))
			continue
		}
		src := v.regions[q.MemoryRegions[0]]
		if src == nil {
			continue
		}
		v.reorderRegions(p, r, src, out)
		if r.PayloadByteOffset >= src.BufSize {
			v.errf(p+".payload_byte_offset", "must be smaller than the source region's buf_size (%s: %d), got %d", src.Name, src.BufSize, r.PayloadByteOffset)
			continue
		}
		if ppb > 0 && q.BatchSize > 0 && ppb > q.BatchSize {
			v.errf(p+".method", "packets_per_batch %d exceeds the batch_size %d of queue %s", ppb, q.BatchSize, q.Name)
		}
		if ppb > 0 && out != nil && out.BufSize > 0 {
			slot := int64(src.BufSize - r.PayloadByteOffset)
			if dt := r.DataTypes; dt != nil && dt.Input.Bits() > 0 && dt.Output.Bits() > 0 {
				slot = slot * 8 / int64(dt.Input.Bits()) * int64(dt.Output.Bits()) / 8
			}
			if need := slot * int64(ppb); int64(out.BufSize) < need {
				v.errf(p+".memory_region", "output region %s has buf_size %d; one batch needs %d (%d packets × %d bytes)", out.Name, out.BufSize, need, ppb, slot)
			}
		}
	}
}

// reorderRegions checks the memory kinds of a plan's source and output regions.
func (v *validator) reorderRegions(p string, r *Reorder, src, out *MemoryRegion) {
	switch r.Type {
	case ReorderGPU:
		if src.Kind != KindDevice && src.Kind != KindHostPinned {
			v.errf(p+".flow_ids", "a gpu plan reads packets from %s memory (region %s); it needs device or host_pinned", src.Kind, src.Name)
		}
		if out != nil && out.Kind != KindDevice && out.Kind != KindHostPinned {
			v.errf(p+".memory_region", "a gpu plan writes to device or host_pinned memory; region %s is %s", out.Name, out.Kind)
		}
		if out != nil && src.Kind == KindDevice && out.Kind == KindDevice && src.Affinity != out.Affinity {
			v.errf(p+".memory_region", "source region %s is on GPU %d but output region %s is on GPU %d", src.Name, src.Affinity, out.Name, out.Affinity)
		}
	case ReorderCPU:
		if !src.Kind.CPUAddressable() {
			v.errf(p+".flow_ids", "a cpu plan reads packets with the CPU; the queue's region %s is device memory", src.Name)
		}
		if out != nil && !out.Kind.CPUAddressable() {
			v.errf(p+".memory_region", "a cpu plan writes with the CPU; region %s is device memory (use host, host_pinned or huge)", out.Name)
		}
	}
}

// method checks a reorder method and returns its packets per batch (0 when invalid).
func (v *validator) method(p string, m *ReorderMethod) int {
	width := func(fp string, f BitField) bool {
		ok := true
		if f.Width < 1 || f.Width > 32 {
			v.errf(fp+".bit_width", "must be between 1 and 32, got %d", f.Width)
			ok = false
		}
		if f.Offset < 0 {
			v.errf(fp+".bit_offset", "must be ≥ 0, got %d", f.Offset)
			ok = false
		}
		return ok
	}
	switch m.Kind {
	case MethodSeqBatchNumber:
		mp := p + ".seq_batch_number"
		a := width(mp+".sequence_number", m.Seq)
		b := width(mp+".batch_number", m.Batch)
		if !a || !b {
			return 0
		}
		if m.Batch.Width > m.Seq.Width {
			v.errf(mp+".batch_number.bit_width", "batch_number (%d bits) is wider than sequence_number (%d bits): packets_per_batch = 2^seq_bits / 2^batch_bits must be ≥ 1", m.Batch.Width, m.Seq.Width)
			return 0
		}
		ppb := m.derivedPacketsPerBatch()
		if m.PacketsPerBatch != 0 && m.PacketsPerBatch != ppb {
			v.errf(mp, "packets_per_batch %d disagrees with 2^%d / 2^%d = %d", m.PacketsPerBatch, m.Seq.Width, m.Batch.Width, ppb)
		}
		return ppb
	case MethodSeqPacketsPerBatch:
		mp := p + ".seq_packets_per_batch"
		if !width(mp+".sequence_number", m.Seq) {
			return 0
		}
		n := m.PacketsPerBatch
		if n <= 0 {
			v.errf(mp+".packets_per_batch", "must be > 0, got %d", n)
			return 0
		}
		if n&(n-1) != 0 || int64(n) > int64(1)<<m.Seq.Width {
			v.errf(mp+".packets_per_batch", "must divide 2^%d (the sequence number range), got %d", m.Seq.Width, n)
			return 0
		}
		return n
	case "":
		v.errf(p, "a reorder config needs method (seq_batch_number or seq_packets_per_batch)")
	default:
		v.errf(p, "unknown reorder method %q (valid: seq_batch_number, seq_packets_per_batch)", m.Kind)
	}
	return 0
}

// dataTypes checks a plan's sample conversion. Conversion on a cpu plan is allowed: daqiri-go
// converts on the CPU too (upstream rejects it).
func (v *validator) dataTypes(p string, dt *DataTypes) {
	if dt == nil {
		return
	}
	in, out, end := p+".input_type", p+".output_type", p+".endianness"
	if v.given(p + ".input") {
		in = p + ".input"
	}
	if v.given(p + ".output") {
		out = p + ".output"
	}
	if v.given(p + ".input_endianness") {
		end = p + ".input_endianness"
	}
	switch dt.Input {
	case TypeInt4, TypeInt8, TypeInt16, TypeInt32:
	case "":
		v.errf(in, "data_types needs input_type (int4, int8, int16 or int32)")
	default:
		v.errf(in, "invalid input_type %q (valid: int4, int8, int16, int32)", dt.Input)
	}
	switch dt.Output {
	case TypeFP16, TypeBF16, TypeFP32, TypeFP64, TypeInt32:
	case "":
		v.errf(out, "data_types needs output_type (fp16, bf16, fp32, fp64 or int32)")
	default:
		v.errf(out, "invalid output_type %q (valid: fp16, bf16, fp32, fp64, int32)", dt.Output)
	}
	switch dt.Endianness {
	case "", EndianHost, EndianNetwork:
	default:
		v.errf(end, "invalid endianness %q (valid: host, network)", dt.Endianness)
	}
}
