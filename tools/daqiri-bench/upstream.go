package main

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
)

// Upstream's bench applications read their parameters from sections of the configuration
// file: `bench_tx` / `bench_rx` (raw benches; a map, or a list of maps for several queues)
// and `socket_bench_server` / `socket_bench_client` (socket bench). daqiri-bench honours
// them so that upstream's example files run as written.

// benchTx is one bench_tx entry. Every key upstream's examples use is listed, so that a
// misspelt one is still an error (sections decode strictly).
type benchTx struct {
	InterfaceName string `yaml:"interface_name"`
	QueueID       *int   `yaml:"queue_id"`
	CPUCore       *int   `yaml:"cpu_core"`
	BatchSize     int    `yaml:"batch_size"`
	PayloadSize   int    `yaml:"payload_size"`
	HeaderSize    *int   `yaml:"header_size"`
	EthDst        string `yaml:"eth_dst_addr"`
	EthSrc        string `yaml:"eth_src_addr"`
	IPSrc         string `yaml:"ip_src_addr"`
	IPDst         string `yaml:"ip_dst_addr"`
	UDPSrc        int    `yaml:"udp_src_port"`
	UDPDst        int    `yaml:"udp_dst_port"`
	SeqOffset     int    `yaml:"sequence_number_offset"`
	SeqStart      uint32 `yaml:"sequence_number_start"`
	// Parsed for compatibility: daqiri-go places segments by the queue's memory regions.
	GPUDirect     bool `yaml:"gpu_direct"`
	SplitBoundary bool `yaml:"split_boundary"`
	MaxPacketSize int  `yaml:"max_packet_size"`
}

// benchRx is one bench_rx entry.
type benchRx struct {
	InterfaceName string `yaml:"interface_name"`
	QueueID       *int   `yaml:"queue_id"`
	CPUCore       *int   `yaml:"cpu_core"`
	BatchSize     int    `yaml:"batch_size"`
	HeaderSize    int    `yaml:"header_size"`
	GPUDirect     bool   `yaml:"gpu_direct"`
	SplitBoundary bool   `yaml:"split_boundary"`
	MaxPacketSize int    `yaml:"max_packet_size"`
}

// socketBench is a socket_bench_server / socket_bench_client section.
type socketBench struct {
	Server        bool   `yaml:"server"`
	Send          bool   `yaml:"send"`
	Receive       bool   `yaml:"receive"`
	CPUCore       *int   `yaml:"cpu_core"`
	Iterations    int    `yaml:"iterations"`
	MessageSize   int    `yaml:"message_size"`
	ServerAddress string `yaml:"server_address"`
	ClientAddress string `yaml:"client_address"`
	ServerPort    int    `yaml:"server_port"`
}

// upstreamSections is what a configuration's upstream bench sections ask for.
type upstreamSections struct {
	tx       []benchTx
	rx       []benchRx
	sockets  map[string]*socketBench // by section name
	notes    []string                // what daqiri-bench does differently, printed once
	hasTx    bool
	hasRx    bool
	hasSocks bool
}

// appList decodes a section that is a map or a list of maps.
func appList[T any](cfg *config.Config, name string) ([]T, error) {
	var list []T
	if err := cfg.App(name, &list); err == nil {
		return list, nil
	}
	var one T
	if err := cfg.App(name, &one); err != nil {
		return nil, err
	}
	return []T{one}, nil
}

func readUpstreamSections(cfg *config.Config) (*upstreamSections, error) {
	u := &upstreamSections{sockets: map[string]*socketBench{}}
	for _, name := range cfg.AppNames() {
		var err error
		switch name {
		case "bench_tx":
			u.tx, err = appList[benchTx](cfg, name)
			u.hasTx = true
		case "bench_rx":
			u.rx, err = appList[benchRx](cfg, name)
			u.hasRx = true
		case "socket_bench_server", "socket_bench_client":
			sb := &socketBench{}
			err = cfg.App(name, sb)
			u.sockets[name] = sb
			u.hasSocks = true
			if sb.Iterations > 0 {
				u.notes = append(u.notes, fmt.Sprintf("%s.iterations %d ignored: daqiri-bench sends for --duration", name, sb.Iterations))
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return u, nil
}

// txPlan is how one TX queue sends.
type txPlan struct {
	batch   int    // packets per burst (0: the queue's batch_size)
	payload int    // bytes after the header area
	header  []byte // raw streams: the header area written at the start of every frame
	seqAt   int    // where the big-endian sequence number goes; -1: 8-byte counter at 0
	seq32   bool
	seqFrom uint32
	core    *int
	// fields are the sequence and batch fields of the configuration's reorder plans that
	// the 32-bit counter at seqAt does not fill (upstream's seq_batch_number and 10-bit
	// seq_packets_per_batch examples read them from the IPv4 header area): each packet gets
	// them written from its counter.
	fields []seqField
}

// seqField is a big-endian bit field a sender fills from its packet counter n with
// (n / div) mod 2^width.
type seqField struct {
	bitOff, width int
	div           uint64
}

// put writes the field for counter n into frame p.
func (f seqField) put(p []byte, n uint64) {
	v := n / f.div
	for j := 0; j < f.width; j++ {
		bit := f.bitOff + j
		if bit/8 >= len(p) {
			return
		}
		mask := byte(0x80) >> (bit % 8)
		if v>>(f.width-1-j)&1 != 0 {
			p[bit/8] |= mask
		} else {
			p[bit/8] &^= mask
		}
	}
}

// reorderFields are the fields of cfg's reorder plans other than the 32-bit big-endian word
// at byte seqAt: a seq_batch_number plan's sequence field (n mod 2^width) and batch field
// (n / packets per batch), a seq_packets_per_batch plan's sequence field.
func reorderFields(cfg *config.Config, seqAt int) []seqField {
	var fs []seqField
	add := func(f seqField) {
		if f.width < 1 || f.width > 32 || f.bitOff < 0 || (f.bitOff == seqAt*8 && f.width == 32 && f.div == 1) || slices.Contains(fs, f) {
			return
		}
		fs = append(fs, f)
	}
	for _, ifc := range cfg.Interfaces {
		if ifc.RX == nil {
			continue
		}
		for _, r := range ifc.RX.Reorders {
			m := r.Method
			add(seqField{m.Seq.Offset, m.Seq.Width, 1})
			if m.Kind == config.MethodSeqBatchNumber && m.Batch.Width > 0 && m.Seq.Width >= m.Batch.Width {
				add(seqField{m.Batch.Offset, m.Batch.Width, 1 << (m.Seq.Width - m.Batch.Width)})
			}
		}
	}
	return fs
}

// ipv4Checksum rewrites the IPv4 header checksum of frame p (after fields were written into
// the header).
func ipv4Checksum(p []byte) {
	if len(p) < 34 {
		return
	}
	ip := p[14:34]
	ip[10], ip[11] = 0, 0
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(ip[10:], ^uint16(sum))
}

// frameLen is the length of every frame (raw) or message (socket).
func (p *txPlan) frameLen() int { return len(p.header) + p.payload }

// txPlanFor finds the bench_tx entry of a TX queue (by interface name and queue id; an
// entry without queue_id is the interface's first queue) and builds its frame template.
func (u *upstreamSections) txPlanFor(s *daqiri.Session, cfg *config.Config, port, queue int, payloadFlag int) (*txPlan, error) {
	p := &txPlan{seqAt: -1}
	name := s.PortName(port)
	first := s.TxQueueIDs(port)[0]
	var e *benchTx
	for i := range u.tx {
		t := &u.tx[i]
		if t.InterfaceName == name && ((t.QueueID == nil && queue == first) || (t.QueueID != nil && *t.QueueID == queue)) {
			e = t
			break
		}
	}
	// Socket streams: the socket bench section of this endpoint's role.
	if cfg.StreamType == config.StreamSocket {
		role := "socket_bench_client"
		if sc := cfg.Interfaces[port].Socket; sc != nil && sc.Mode == config.ModeServer {
			role = "socket_bench_server"
		}
		if sb := u.sockets[role]; sb != nil {
			p.payload, p.core = sb.MessageSize, sb.CPUCore
			if !sb.Send {
				return nil, nil // this side does not send
			}
		}
	}
	if e != nil {
		p.batch, p.payload, p.core = e.BatchSize, e.PayloadSize, e.CPUCore
		if cfg.StreamType == config.StreamRaw {
			hs := 64
			if e.HeaderSize != nil {
				hs = *e.HeaderSize
			}
			h, err := headerTemplate(e, hs, s, port)
			if err != nil {
				return nil, fmt.Errorf("bench_tx for %s queue %d: %w", name, queue, err)
			}
			p.header, p.seq32, p.seqFrom = h, true, e.SeqStart
			p.seqAt = hs + e.SeqOffset
			p.fields = reorderFields(cfg, p.seqAt)
		}
	}
	if payloadFlag > 0 {
		p.payload = payloadFlag
	}
	return p, nil
}

// headerTemplate is upstream's bench frame header area: Ethernet, IPv4 and UDP headers,
// zero-padded to size bytes. Lengths and the IPv4 checksum are for the whole frame and are
// filled in by finishHeader once the payload size is known.
func headerTemplate(e *benchTx, size int, s *daqiri.Session, port int) ([]byte, error) {
	const l2l4 = 14 + 20 + 8
	if size < l2l4 {
		return nil, fmt.Errorf("header_size %d is smaller than the %d bytes of Ethernet, IPv4 and UDP headers", size, l2l4)
	}
	h := make([]byte, size)
	dst := loosMAC(e.EthDst)
	if e.EthDst == "" {
		// As upstream's bench: without eth_dst_addr the next hop of ip_dst_addr is resolved
		// once (resolve_ipv4_mac) before sending, and kept for the run.
		da := loosIPv4(e.IPDst)
		if da == [4]byte{} {
			return nil, fmt.Errorf("eth_dst_addr is absent and ip_dst_addr %q is no IPv4 address to resolve it from", e.IPDst)
		}
		m, err := s.ResolveIPv4MAC(port, netip.AddrFrom4(da), resolveTimeout)
		if err != nil {
			return nil, fmt.Errorf("eth_dst_addr is absent: %w", err)
		}
		dst = m
	}
	src := loosMAC(e.EthSrc)
	if e.EthSrc == "" {
		if m, err := s.MACAddr(port); err == nil && len(m) == 6 {
			src = m
		}
	}
	copy(h[0:6], dst)
	copy(h[6:12], src)
	binary.BigEndian.PutUint16(h[12:], 0x0800)
	ip := h[14:34]
	ip[0], ip[8], ip[9] = 0x45, 64, 17
	sa, da := loosIPv4(e.IPSrc), loosIPv4(e.IPDst)
	copy(ip[12:16], sa[:])
	copy(ip[16:20], da[:])
	udp := h[34:42]
	binary.BigEndian.PutUint16(udp[0:], uint16(e.UDPSrc))
	binary.BigEndian.PutUint16(udp[2:], uint16(e.UDPDst))
	return h, nil
}

// resolveTimeout bounds the wait for a bench_tx entry's destination MAC: the kernel sends
// three ARP requests a second apart before it gives up (net.ipv4.neigh.*.mcast_solicit,
// retrans_time_ms).
const resolveTimeout = 3 * time.Second

// finishHeader writes the lengths of a frame of n bytes and the IPv4 checksum.
func finishHeader(h []byte, n int) {
	ip := h[14:34]
	binary.BigEndian.PutUint16(ip[2:], uint16(n-14))
	binary.BigEndian.PutUint16(h[34+4:], uint16(n-34))
	ipv4Checksum(h)
}

// loosMAC reads a MAC address as upstream's examples write them, placeholders (<...>)
// included; anything unreadable is all zeros, as upstream's template values are.
func loosMAC(s string) net.HardwareAddr {
	s = strings.Trim(strings.TrimSpace(s), "<>")
	if m, err := net.ParseMAC(s); err == nil && len(m) == 6 {
		return m
	}
	return make(net.HardwareAddr, 6)
}

// loosIPv4 reads a dotted IPv4 address leniently: placeholders (<1.2.3.4>) and zero-padded
// parts ("000.000.000.0", which upstream's examples use) are accepted; anything else is
// 0.0.0.0.
func loosIPv4(s string) [4]byte {
	var a [4]byte
	parts := strings.Split(strings.Trim(strings.TrimSpace(s), "<>"), ".")
	if len(parts) != 4 {
		return a
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 255 {
			return [4]byte{}
		}
		a[i] = byte(n)
	}
	return a
}

// rxCoreFor is the bench_rx (or socket bench) cpu_core for an RX queue, if any.
func (u *upstreamSections) rxCoreFor(s *daqiri.Session, cfg *config.Config, port, queue int) *int {
	name := s.PortName(port)
	first := s.RxQueueIDs(port)[0]
	for i := range u.rx {
		r := &u.rx[i]
		if r.InterfaceName == name && ((r.QueueID == nil && queue == first) || (r.QueueID != nil && *r.QueueID == queue)) {
			return r.CPUCore
		}
	}
	if cfg.StreamType == config.StreamSocket {
		role := "socket_bench_client"
		if sc := cfg.Interfaces[port].Socket; sc != nil && sc.Mode == config.ModeServer {
			role = "socket_bench_server"
		}
		if sb := u.sockets[role]; sb != nil {
			return sb.CPUCore
		}
	}
	return nil
}

// addRuntimeFlows is --runtime-flows: the RX flows upstream's dynamic_rx_flow example
// application adds after daqiri_init, for files that leave rx.flows empty under
// flow_isolation (without them an isolated interface receives nothing). Each such raw RX
// interface gets one flow, added while the session runs, that matches the bench_tx entries'
// UDP destination ports and spreads over all of its RX queues (RSS), as the example's last
// stage does with its [0, 1] rule.
func addRuntimeFlows(s *daqiri.Session, cfg *config.Config, u *upstreamSections) ([]string, error) {
	if cfg.StreamType != config.StreamRaw {
		return nil, fmt.Errorf("--runtime-flows: stream_type is %q; run-time flows are for raw streams", cfg.StreamType)
	}
	var ports []uint16
	for _, t := range u.tx {
		if t.UDPDst > 0 && t.UDPDst <= 65535 && !slices.Contains(ports, uint16(t.UDPDst)) {
			ports = append(ports, uint16(t.UDPDst))
		}
	}
	var notes []string
	for p, ifc := range cfg.Interfaces {
		if ifc.RX == nil || len(ifc.RX.Queues) == 0 || len(ifc.RX.Flows) > 0 || !ifc.RX.FlowIsolation {
			continue
		}
		if len(ports) == 0 {
			return nil, fmt.Errorf("--runtime-flows: interface %s needs run-time flows, but no bench_tx entry names a udp_dst_port to match", ifc.Name)
		}
		queues := s.RxQueueIDs(p)
		for _, port := range ports {
			rule := daqiri.FlowRule{Name: fmt.Sprintf("runtime_udp_%d", port), Match: config.Match{UDPDst: config.PortRange{Lo: port, Hi: port}},
				Actions: []config.Action{{Type: config.ActionQueue, Queues: queues}}}
			id, err := s.AddRxFlow(p, rule)
			if err != nil {
				return nil, fmt.Errorf("--runtime-flows: interface %s: flow %s: %w", ifc.Name, rule.Name, err)
			}
			notes = append(notes, fmt.Sprintf("interface %s: run-time flow %s (id %d): udp_dst %d → RX queues %v", ifc.Name, rule.Name, id, port, queues))
		}
	}
	if len(notes) == 0 {
		return nil, fmt.Errorf("--runtime-flows: no raw RX interface has flow_isolation with no rx.flows: nothing to add")
	}
	return notes, nil
}
