// Package config is the DAQIRI YAML schema v1 and its Go form.
//
// A configuration can be loaded from YAML (LoadFile, Parse) — either a document whose root is
// `daqiri: cfg: {...}` with application sections beside `daqiri`, or a bare config map — or
// built in code as a Config value and checked with Validate. Loading is stricter than
// upstream DAQIRI: unknown keys, wrong types, out-of-range values and inconsistent references
// are errors that name the key path and, for YAML input, the line.
package config

import (
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// Limits shared with upstream DAQIRI (include/daqiri/types.h, common.h).
const (
	MaxRxQueues        = 32   // MAX_NUM_RX_QUEUES
	MaxTxQueues        = 32   // MAX_NUM_TX_QUEUES
	MaxInterfaces      = 4    // MAX_INTERFACES
	MaxSegments        = 4    // MAX_NUM_SEGS
	MaxFlowActions     = 7    // actions per flow
	MaxWireFrame       = 9100 // largest frame incl. transform overhead
	DefaultMetaBuffers = 256  // DEFAULT_RX_META_BUFFERS / DEFAULT_TX_META_BUFFERS
	MaxFlowID          = 0xFFFFFF
)

// StreamType selects the family of engines: raw Ethernet or transport sockets.
type StreamType string

// Stream types.
const (
	StreamRaw    StreamType = "raw"
	StreamSocket StreamType = "socket"
)

// MemoryKind is where a memory region's buffers live.
type MemoryKind string

// Memory kinds.
const (
	KindHost       MemoryKind = "host"        // pageable host memory (mmap, outside the Go heap)
	KindHostPinned MemoryKind = "host_pinned" // CUDA page-locked host memory, GPU-addressable
	KindHuge       MemoryKind = "huge"        // hugepage-backed host memory (MAP_HUGETLB)
	KindDevice     MemoryKind = "device"      // GPU device memory (not CPU-addressable)
)

// CPUAddressable reports whether the CPU can read and write buffers of this kind.
func (k MemoryKind) CPUAddressable() bool { return k != KindDevice }

// Access is the memory region access mask (RDMA registration flags).
type Access uint8

// Access flags, as upstream's MemoryAccess bits.
const (
	AccessLocal     Access = 1
	AccessRDMAWrite Access = 2
	AccessRDMARead  Access = 4
)

// Config is one DAQIRI configuration (schema version 1).
type Config struct {
	Version       int        // `version`: must be 1
	MasterCore    int        // `master_core`: core for the control thread(s)
	StreamType    StreamType // `stream_type`
	Engine        string     // `engine`: "" or "default" chooses from stream_type and addresses
	Loopback      string     // `loopback`: "" or "sw"
	Debug         bool       // `debug`
	LogLevel      string     // `log_level`: trace|debug|info|warn|error|critical|off (default warn)
	TxMetaBuffers int        // `tx_meta_buffers`: TX burst metadata blocks (default 256)
	RxMetaBuffers int        // `rx_meta_buffers`: RX burst metadata blocks (default 256)

	MemoryRegions []MemoryRegion // `memory_regions`
	Interfaces    []Interface    // `interfaces`

	// Placeholders lists the key paths whose values are upstream-style `<placeholder>`
	// templates (for example `address: <0000:00:00.0>`). Such a configuration parses, so
	// templates can be validated, but cannot be opened until the values are filled in.
	Placeholders []string

	// Warnings lists accepted but questionable settings (a key upstream ignores, a memory
	// region no queue uses, ...), each prefixed with its position like an Error. Validate
	// recomputes it on every call.
	Warnings []string

	src *source // positions of keys for YAML input; nil for configs built in code
}

// MemoryRegion is a pool of equally sized buffers: `num_bufs` × `buf_size` bytes of one kind.
type MemoryRegion struct {
	Name     string     // `name`, unique
	Kind     MemoryKind // `kind`
	Affinity int        // `affinity`: GPU ordinal (device, host_pinned) or NUMA node (host, huge)
	Access   Access     // `access`: default AccessLocal
	NumBufs  int        // `num_bufs`
	BufSize  int        // `buf_size`: bytes per buffer (one segment of one packet)
	// Unowned is YAML `owned: false`: the application provides the memory, bound at Open
	// with daqiri.WithRegionMemory and never freed by the library.
	Unowned bool
}

// Interface is one port: a NIC, a software loopback or a socket endpoint.
type Interface struct {
	Name    string        // `name`: lookup key for Session.Port
	Address string        // `address`: netdev name, PCI address, "loopback" or an IP
	Socket  *SocketConfig // `socket_config`: required iff stream_type is socket
	RoCE    *RoCEConfig   // `roce_config`: required iff the endpoint scheme is roce
	RX      *RxConfig     // `rx`
	TX      *TxConfig     // `tx`
}

// SocketMode is a socket endpoint's role.
type SocketMode string

// Socket modes.
const (
	ModeClient SocketMode = "client"
	ModeServer SocketMode = "server"
)

// Protocol is a socket endpoint's transport, from the URI scheme.
type Protocol string

// Protocols.
const (
	ProtoTCP  Protocol = "tcp"
	ProtoUDP  Protocol = "udp"
	ProtoRoCE Protocol = "roce" // `rdma://` is accepted as an alias
)

// Endpoint is a parsed socket URI: scheme://ipv4[:port][?engine=ibverbs].
type Endpoint struct {
	Proto Protocol
	Host  string // IPv4 address or host name, never empty when the endpoint is set
	Port  int    // 0 when absent (allowed only for a RoCE client's local address)
	Query string // the raw query ("engine=ibverbs" is the only accepted one, roce only)
}

// IsZero reports whether the endpoint was not configured.
func (e Endpoint) IsZero() bool { return e.Proto == "" }

// HostPort is "host:port" for net.Dial and friends.
func (e Endpoint) HostPort() string { return net.JoinHostPort(e.Host, strconv.Itoa(e.Port)) }

// String is the endpoint as a URI.
func (e Endpoint) String() string {
	if e.IsZero() {
		return ""
	}
	h := e.Host
	if strings.Contains(h, ":") {
		h = "[" + h + "]" // IPv6
	}
	s := string(e.Proto) + "://" + h
	if e.Port != 0 {
		s += ":" + strconv.Itoa(e.Port)
	}
	if e.Query != "" {
		s += "?" + e.Query
	}
	return s
}

// SocketConfig configures a socket (UDP, TCP or RoCE) endpoint.
type SocketConfig struct {
	Mode          SocketMode // `mode`
	Local         Endpoint   // `local_addr` (or legacy local_ip/local_port)
	Remote        Endpoint   // `remote_addr` (or legacy remote_ip/remote_port)
	MaxPayload    int        // `max_payload_size`: 0 = largest buf_size of the queue's region
	RetryConnectS int        // `retry_connect_s`: TCP client reconnect period, ≥1 (default 1)

	// Parsed for compatibility; upstream documents but never uses them.
	MaxBurstIntervalMs int // `max_burst_interval_ms`
	MinIPGNs           int // `min_ipg_ns`

	// Extensions (not in upstream): kernel socket buffer sizes in bytes; 0 = engine default.
	RecvBufferBytes int // `recv_buffer_size`
	SendBufferBytes int // `send_buffer_size`
	// MaxConnections caps a TCP server's live connections (`max_connections`); 0 = the
	// default, MaxConnections. Connections beyond it are accepted and closed at once, and
	// counted.
	MaxConnections int
}

// ConnLimit is the TCP server's connection cap in effect.
func (s *SocketConfig) ConnLimit() int {
	if s.MaxConnections > 0 {
		return s.MaxConnections
	}
	return MaxConnections
}

// Proto is the endpoint's protocol (from whichever URI is set).
func (s *SocketConfig) Proto() Protocol {
	if !s.Local.IsZero() {
		return s.Local.Proto
	}
	return s.Remote.Proto
}

// RoCEConfig configures a RoCE endpoint.
type RoCEConfig struct {
	TransportMode string // `transport_mode`: RC, UC or UD
}

// RxConfig is an interface's receive side.
type RxConfig struct {
	FlowIsolation       bool       // `flow_isolation`: unmatched traffic goes to the kernel
	DynamicFlowCapacity int        // `dynamic_flow_capacity`
	HardwareTimestamps  bool       // `hardware_timestamps` (upstream documents it but never reads it)
	Queues              []Queue    // `queues`
	Flows               []Flow     // `flows`
	FlexItems           []FlexItem // `flex_items`
	Reorders            []Reorder  // `reorder_configs`
}

// TxConfig is an interface's transmit side.
type TxConfig struct {
	AccurateSend bool    // `accurate_send`
	Queues       []Queue // `queues`
	Flows        []Flow  // `flows`: transforms applied on send (VLAN push, tunnel encap)
}

// PollMode says who polls a queue.
type PollMode string

// Poll modes.
const (
	PollIndirect PollMode = "indirect" // a worker thread polls and hands bursts over a ring
	PollDirect   PollMode = "direct"   // the caller of RxBurst/Send polls the queue itself
)

// Queue is one RX or TX queue.
type Queue struct {
	Name          string   // `name`
	ID            int      // `id`
	PollMode      PollMode // `poll_mode`: default indirect
	CPUCore       string   // `cpu_core`: core of the worker thread ("" when unset)
	BatchSize     int      // `batch_size`: packets per burst
	TimeoutUs     int      // `timeout_us` (RX): flush a partial burst this long after its first packet
	MemoryRegions []string // `memory_regions`: one per segment, in segment order
	Offloads      []string // `offloads` (TX): only "tx_eth_src" is known
	PacingMbps    int      // `pacing_mbps` (TX): average L2 rate cap, 0 = line rate
}

// Core returns the queue's worker core as a number, and false when none is set.
func (q *Queue) Core() (int, bool) {
	if q.CPUCore == "" {
		return 0, false
	}
	n, err := strconv.Atoi(q.CPUCore)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// ActionType is a flow action.
type ActionType string

// Flow action types.
const (
	ActionQueue       ActionType = "queue"
	ActionVLANPush    ActionType = "vlan_push"
	ActionVLANPop     ActionType = "vlan_pop"
	ActionTunnelEncap ActionType = "tunnel_encap"
	ActionTunnelDecap ActionType = "tunnel_decap"
)

// TunnelType is an encapsulation.
type TunnelType string

// Tunnel types.
const (
	TunnelVXLAN TunnelType = "vxlan"
	TunnelGRE   TunnelType = "gre"
	TunnelNVGRE TunnelType = "nvgre"
)

// Flow is a match/action rule: RX flows steer to queues, TX flows transform on send.
type Flow struct {
	Name    string   // `name`
	ID      int      // `id`: delivered as the packet's flow id
	Actions []Action // `actions` (or the legacy single `action`)
	Match   Match    // `match`
}

// Action is one step of a flow.
type Action struct {
	Type ActionType
	// Queues is the queue action's target: `id` (one entry) or `ids` (several entries =
	// flow-affine Toeplitz RSS over the IPv4/UDP 4-tuple).
	Queues []int
	VLAN   VLAN   // vlan_push
	Tunnel Tunnel // tunnel_encap / tunnel_decap
}

// VLAN is a vlan_push action's tag.
type VLAN struct {
	ID        uint16 // `vlan_id` ≤ 4095
	PCP       uint8  // `pcp` 0..7
	DEI       uint8  // `dei` 0..1
	EtherType uint16 // `ethertype`, default 0x8100
}

// Tunnel is an encap/decap action's outer headers.
type Tunnel struct {
	Type         TunnelType
	OuterEthSrc  net.HardwareAddr
	OuterEthDst  net.HardwareAddr
	OuterIPv4Src netip.Addr
	OuterIPv4Dst netip.Addr
	OuterTTL     uint8  // `outer_ipv4_ttl`, default 64
	OuterTOS     uint8  // `outer_ipv4_tos`
	VNI          uint32 // VXLAN `vni` ≤ 0xFFFFFF
	OuterUDPSrc  uint16 // VXLAN `outer_udp_src` (0 = derive from the inner flow)
	OuterUDPDst  uint16 // VXLAN `outer_udp_dst`, default 4789
	GREProtocol  uint16 // GRE `gre_protocol`, default 0x0800
	TNI          uint32 // NVGRE `tni` ≤ 0xFFFFFF
	FlowID       uint8  // NVGRE `flow_id`
}

// PortRange is an inclusive UDP port range; the zero value matches any port.
type PortRange struct{ Lo, Hi uint16 }

// Any reports whether the range is a wildcard.
func (r PortRange) Any() bool { return r.Lo == 0 && r.Hi == 0 }

// Contains reports whether port p is in the range.
func (r PortRange) Contains(p uint16) bool { return r.Any() || (p >= r.Lo && p <= r.Hi) }

// Match selects packets. Zero fields are wildcards. Exactly one flow class is used per flow:
// IPv4/UDP fields, a flex item, or eCPRI.
type Match struct {
	UDPSrc  PortRange  // `udp_src`: port or "lo-hi"
	UDPDst  PortRange  // `udp_dst`
	IPv4Len uint16     // `ipv4_len`: IPv4 total length
	IPv4Src netip.Addr // `ipv4_src`
	IPv4Dst netip.Addr // `ipv4_dst`
	IPv6Src netip.Addr // `ipv6_src`
	IPv6Dst netip.Addr // `ipv6_dst`

	// Ethernet qualifies any class of match by the frame's outer MAC addresses (upstream's
	// `match.ethernet: {src, dst}`); nil matches every address.
	Ethernet *EthernetMatch // `ethernet`

	Flex  *FlexMatch  // `flex_item_id` + `val` + `mask`
	ECPRI *ECPRIMatch // `ecpri`
}

// EthernetMatch matches the outer Ethernet header's addresses; a nil address is a wildcard.
type EthernetMatch struct {
	Src net.HardwareAddr // `src`: 6-octet MAC
	Dst net.HardwareAddr // `dst`
}

// FlexMatch matches a 32-bit word at a flex item's offset after the UDP header.
type FlexMatch struct {
	ItemID int    // `flex_item_id`
	Value  uint32 // `val`
	Mask   uint32 // `mask`
}

// ECPRIMatch matches eCPRI frames (EtherType 0xAEFE); nil fields are wildcards.
type ECPRIMatch struct {
	MsgType *uint8  // `msg_type`
	PCID    *uint16 // `pc_id` / `rtc_id` (requires msg_type)
}

// FlexItem names a 32-bit field at Offset bytes after the UDP header of packets to UDPDstPort.
type FlexItem struct {
	Name       string // `name`
	ID         int    // `id`, unique per interface
	UDPDstPort uint16 // `udp_dst_port`
	Offset     int    // `offset`: multiple of 4, ≤ 28
}

// ReorderType says where a reorder plan runs.
type ReorderType string

// Reorder types.
const (
	ReorderGPU ReorderType = "gpu"
	ReorderCPU ReorderType = "cpu"
)

// BitField is a big-endian bit field counted from the first bit of the Ethernet frame.
type BitField struct {
	Offset int // `bit_offset`
	Width  int // `bit_width`: 1..32
}

// Overlaps reports whether f and o share a bit.
func (f BitField) Overlaps(o BitField) bool {
	return f.Offset < o.Offset+o.Width && o.Offset < f.Offset+f.Width
}

// ReorderMethodKind says how packets are grouped into batches.
type ReorderMethodKind string

// Reorder methods.
const (
	MethodSeqBatchNumber     ReorderMethodKind = "seq_batch_number"
	MethodSeqPacketsPerBatch ReorderMethodKind = "seq_packets_per_batch"
)

// ReorderMethod is a plan's batching rule.
type ReorderMethod struct {
	Kind            ReorderMethodKind
	Seq             BitField // `sequence_number`
	Batch           BitField // `batch_number` (seq_batch_number only)
	PacketsPerBatch int      // given (seq_packets_per_batch) or 2^seq_bits / 2^batch_bits
}

// DataType is a sample type for reorder conversion.
type DataType string

// Data types.
const (
	TypeInt4  DataType = "int4"
	TypeInt8  DataType = "int8"
	TypeInt16 DataType = "int16"
	TypeInt32 DataType = "int32"
	TypeFP16  DataType = "fp16"
	TypeBF16  DataType = "bf16"
	TypeFP32  DataType = "fp32"
	TypeFP64  DataType = "fp64"
)

// Bits is the width of one sample.
func (t DataType) Bits() int {
	switch t {
	case TypeInt4:
		return 4
	case TypeInt8:
		return 8
	case TypeInt16, TypeFP16, TypeBF16:
		return 16
	case TypeInt32, TypeFP32:
		return 32
	case TypeFP64:
		return 64
	}
	return 0
}

// Endianness is the byte order of input samples.
type Endianness string

// Endiannesses.
const (
	EndianHost    Endianness = "host"
	EndianNetwork Endianness = "network"
)

// DataTypes is a reorder plan's sample conversion.
type DataTypes struct {
	Input      DataType   // `input_type`: int4, int8, int16, int32
	Output     DataType   // `output_type`: fp16, bf16, fp32, fp64, int32
	Endianness Endianness // `endianness`: host (default) or network
}

// Reorder is one RX reorder/aggregation plan.
type Reorder struct {
	Name              string        // `name`, unique per interface
	Type              ReorderType   // `reorder_type`
	MemoryRegion      string        // `memory_region`: output region
	PayloadByteOffset int           // `payload_byte_offset`: bytes skipped at the frame start
	FlowIDs           []int         // `flow_ids`
	Method            ReorderMethod // `method`
	DataTypes         *DataTypes    // `data_types`, nil = raw byte copy
	// MissingAction is what happens to a batch still incomplete when it is flushed (by
	// timeout or to make room): delivered with its presence bitmap (passthrough, the
	// default) or dropped whole and counted (drop).
	MissingAction MissingAction // `missing_action`
	// Cyclic, when set, names the epoch field that tells one cycle of the (wrapping)
	// sequence from the next, so that a late packet of the previous cycle is never taken for
	// one of the new cycle.
	Cyclic *CyclicSequence // `cyclic_sequence` (map form)
	// CyclicSequence is `cyclic_sequence: true` (upstream's form, #290): the sender cycles
	// its sequence number over [0, packets_per_batch), which hardware reorder requires.
	CyclicSequence bool
	// Engine is `reorder_engine`: sw (the default: the reorder package's cpu or gpu plan)
	// or hw (the NIC places each packet at its slot; engine mlx5 only).
	Engine ReorderEngine
}

// ReorderEngine says what reorders a plan's packets (`reorder_engine`, upstream #290).
type ReorderEngine string

// Reorder engines.
const (
	ReorderEngineSW ReorderEngine = "sw" // the default (also when the key is absent)
	ReorderEngineHW ReorderEngine = "hw"
)

// MaxHWReorderSlots is the most slots (packets per batch) a hardware reorder plan may have:
// one steering rule per slot, and 2,048 is what upstream ran on an IGX ConnectX-7 (#291).
const MaxHWReorderSlots = 2048

// MissingAction is a reorder plan's policy for incomplete batches.
type MissingAction string

// Missing actions.
const (
	MissingPassthrough MissingAction = "passthrough"
	MissingDrop        MissingAction = "drop"
)

// CyclicSequence describes a sequence number that wraps, with an epoch counter that the
// sender increments at each wrap.
type CyclicSequence struct {
	Epoch BitField // `epoch`: {bit_offset, bit_width}, big-endian bits from the frame start
}
