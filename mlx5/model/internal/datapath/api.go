package datapath

import (
	"fmt"

	"github.com/daqiri-go/daqiri/mlx5/model/internal/dma"
)

// Command statuses the datapath returns in an Error, as the PRM defines them
// (include/linux/mlx5/device.h, enum MLX5_CMD_STAT_*). They are repeated here rather than
// imported so that the datapath does not depend on the command vocabulary's file layout;
// the values are the header's.
const (
	StatusInternal     = 0x1 // MLX5_CMD_STAT_INT_ERR
	StatusBadOp        = 0x2 // MLX5_CMD_STAT_BAD_OP_ERR
	StatusBadParam     = 0x3 // MLX5_CMD_STAT_BAD_PARAM_ERR
	StatusBadSysState  = 0x4 // MLX5_CMD_STAT_BAD_SYS_STATE_ERR
	StatusBadResource  = 0x5 // MLX5_CMD_STAT_BAD_RES_ERR
	StatusBusy         = 0x6 // MLX5_CMD_STAT_RES_BUSY
	StatusLimit        = 0x8 // MLX5_CMD_STAT_LIM_ERR
	StatusBadResState  = 0x9 // MLX5_CMD_STAT_BAD_RES_STATE_ERR
	StatusBadIndex     = 0xa // MLX5_CMD_STAT_IX_ERR
	StatusNoResources  = 0xf // MLX5_CMD_STAT_NO_RES_ERR
	StatusBadQPState   = 0x10
	StatusBadInputLen  = 0x50 // MLX5_CMD_STAT_BAD_INP_LEN_ERR
	StatusBadOutputLen = 0x51 // MLX5_CMD_STAT_BAD_OUTP_LEN_ERR
)

// Error is a command's failure as firmware reports it: a PRM status and a 32-bit syndrome in
// the command's output, with a message for people. Real firmware's syndromes are opaque
// hashes documented nowhere public; the model's are its own (see the Syndrome* constants), so
// a driver must branch on Status, never on Syndrome.
type Error struct {
	Status   uint8
	Syndrome uint32
	Msg      string
}

// Error implements error.
func (e *Error) Error() string {
	return fmt.Sprintf("mlx5 model: status %#x syndrome %#x: %s", e.Status, e.Syndrome, e.Msg)
}

// errf builds an *Error.
func errf(status uint8, syndrome uint32, format string, args ...any) *Error {
	return &Error{Status: status, Syndrome: syndrome, Msg: fmt.Sprintf(format, args...)}
}

// Model-chosen syndromes (inferred: firmware's values are not public). Each names one check.
const (
	SyndromeNotImplemented uint32 = 0xda7a0000 + iota
	SyndromeDuplicateID
	SyndromeUnknownID
	SyndromeBadSize
	SyndromeBadState
	SyndromeInUse
	SyndromeBadQueue
	SyndromeBadMemory
	SyndromeBadFormat
	SyndromeBadTable
	SyndromeBadIndex
	SyndromeBadDest
	SyndromeBadRSS
)

// Memory is a queue's buffer (or doorbell record) as the device reaches it: offsets from the
// start of the queue, resolved through whatever the context named (a PAS list of pages, a
// UMEM and offset). The control side builds it from the decoded context; Contig and Paged
// cover the two shapes the PRM has.
type Memory interface {
	// Slice returns n bytes at off, aliasing the memory, or an error wrapping dma.ErrFault.
	// A range may not cross a page boundary of a paged buffer; the datapath only asks for
	// naturally aligned pieces (a CQE, a WQE basic block, a doorbell record).
	Slice(off uint64, n int, perm dma.Perm) ([]byte, error)
}

// Contig is memory contiguous in the I/O address space from Base (a doorbell record at
// dbr_addr, a UMEM registered in one piece).
type Contig struct {
	Space *dma.Space
	Base  uint64
}

// Slice implements Memory.
func (c Contig) Slice(off uint64, n int, perm dma.Perm) ([]byte, error) {
	return c.Space.Slice(c.Base+off, n, perm)
}

// Paged is memory given as a list of pages of 1<<PageShift bytes each (the PAS array of a
// create command, or a UMEM's pages), starting Offset bytes into the first page (the
// context's page_offset).
type Paged struct {
	Space     *dma.Space
	PageShift uint
	Pages     []uint64
	Offset    uint64
}

// Slice implements Memory.
func (p Paged) Slice(off uint64, n int, perm dma.Perm) ([]byte, error) {
	off += p.Offset
	page := off >> p.PageShift
	in := off & (1<<p.PageShift - 1)
	if page >= uint64(len(p.Pages)) || in+uint64(n) > 1<<p.PageShift {
		return nil, fmt.Errorf("%w: %d bytes at queue offset %#x beyond %d pages of %d bytes",
			dma.ErrFault, n, off, len(p.Pages), 1<<p.PageShift)
	}
	return p.Space.Slice(p.Pages[page]+in, n, perm)
}

// Translator resolves a WQE data segment's memory key and virtual address to host bytes, as
// the device does through its MKEY table: the control side owns MKEYs and PDs. An error
// (unknown key, range outside the key, access not allowed, key of another PD) makes the
// datapath complete the WQE with a local protection error, as hardware does.
type Translator interface {
	Translate(lkey uint32, addr uint64, n int, perm dma.Perm) ([]byte, error)
	// Store writes p at lkey + addr with Translate's checks for a write: the RX scatter,
	// which reaches GPU memory (a window with no host bytes) as well as host memory.
	Store(lkey uint32, addr uint64, p []byte) error
}

// DirectTranslator is a Translator that says when its translations may change and gives
// host bytes only. Gen changes whenever a translation may have (a key created or destroyed,
// a mapping added or removed); Direct is Translate without the copy that a read of a window
// or over several mappings gets — those fail. With one, the datapath keeps a striding RQ
// WQE's whole buffer translated while Gen stays, and scatters frames into it by copy (rqBuf):
// any range inside a buffer that translates directly as a whole translates to the same bytes
// and passes the same checks.
type DirectTranslator interface {
	Translator
	Gen() uint64
	Direct(lkey uint32, addr uint64, n int, perm dma.Perm) ([]byte, error)
}

// SpanTranslator is a DirectTranslator that can hand out a key's whole range at once when
// that range is one contiguous view of host memory. The datapath keeps such spans while Gen
// stays (spanCache) and serves TX gathers and cyclic RQ scatters from them by slicing
// instead of a Translate or Store per segment: a range inside a span that translates as a
// whole passes the same checks (key, variant, bounds, permission, mapping) as its own
// Translate and gives the same bytes.
type SpanTranslator interface {
	DirectTranslator
	// Span returns the address lkey's range starts at and its bytes, or ok false when the
	// key does not exist or does not allow perm, or its range is not one contiguous view of
	// host memory (then every range goes through Translate as before).
	Span(lkey uint32, perm dma.Perm) (start uint64, mem []byte, ok bool)
}

// Events is what the datapath raises towards the event queues, which the control side owns:
// it writes the EQEs (types and layouts from mlx5_ifc.h) and signals MSI-X.
type Events interface {
	// Completion is raised once when an armed CQ receives a CQE: a completion EQE with
	// cqn goes to EQ eqn (MLX5_EVENT_TYPE_COMP).
	Completion(eqn, cqn uint32)
	// CQError is raised when a CQ overruns (a CQE arrives with the CQ full and overrun
	// ignore off) or its memory faults: MLX5_EVENT_TYPE_CQ_ERROR, with the PRM syndrome
	// (1 = overrun, 2 = access violation; kernel cq.c/eq.c).
	CQError(eqn, cqn uint32, syndrome uint8)
	// EQDoorbell forwards a write to an EQ doorbell in a UAR page (offset 0x40 arms, 0x48
	// only updates; kernel eq.c): the new consumer index and whether the EQ is armed.
	EQDoorbell(uar, eqn, ci uint32, arm bool)
}

// Clock is the device's time, read when it stamps CQEs: the free-running counter (ticks of
// device_frequency_khz, the init segment's internal timer) and the real-time clock in the
// PRM's real-time format (seconds in the upper 32 bits, nanoseconds in the lower 32;
// rdma-core mlx5 and DPDK mlx5_txpp.c read it so). The control side shares one Clock with
// the init segment.
type Clock interface {
	FreeRunning() uint64
	RealTime() uint64
}

// Wire is where a port's transmitted frames go: another port (a cable), the same port
// (internal loopback) or a netdev (an AF_PACKET bridge). Transmit must not keep frame.
type Wire interface {
	Transmit(frame []byte)
}

// QueueState is an RQ's or SQ's state (rqc/sqc state field, MLX5_RQC_STATE_* /
// MLX5_SQC_STATE_*: 0 reset, 1 ready, 3 error).
type QueueState uint8

// Queue states.
const (
	StateReset QueueState = 0
	StateReady QueueState = 1
	StateError QueueState = 3
)

// TSFormat is a queue's or CQ's timestamp format (MLX5_TIMESTAMP_FORMAT_*: 0 free running,
// 1 default, 2 real time). Default stamps free-running, as a device without real-time
// support does.
type TSFormat uint8

// Timestamp formats.
const (
	TSFreeRunning TSFormat = 0
	TSDefault     TSFormat = 1
	TSRealTime    TSFormat = 2
)

// MiniFormat is a CQ's mini-CQE format (cqc mini_cqe_res_format; mlx5dv.h
// enum mlx5dv_cqe_comp_res_format as rdma-core maps it; DPDK mlx5_prm.h).
type MiniFormat uint8

// Mini-CQE formats (values as the cqc field takes them; device.h MLX5_CQE_FORMAT_CSUM 1 and
// MLX5_CQE_FORMAT_CSUM_STRIDX 3, DPDK mlx5_prm.h MLX5_CQE_RESP_FORMAT_HASH 0 and
// MLX5_CQE_RESP_FORMAT_FTAG_STRIDX 2).
const (
	MiniHash       MiniFormat = 0 // RX hash result + byte count
	MiniCsum       MiniFormat = 1 // checksum + byte count
	MiniFlowTag    MiniFormat = 2 // flow tag + stride index + byte count
	MiniCsumStride MiniFormat = 3 // checksum + stride index + byte count
)

// CompLayout is a CQ's compression layout (cqc cqe_compression_layout).
type CompLayout uint8

// Compression layouts.
const (
	LayoutBasic    CompLayout = 0 // legacy: title CQE, then mini-CQE arrays in CQE slots
	LayoutEnhanced CompLayout = 1 // enhanced: validity iteration count instead of owner
)

// CQParams is a CQ as CREATE_CQ's cqc decodes (mlx5_ifc.h cqc).
type CQParams struct {
	CQN     uint32
	LogSize uint8 // log_cq_size: 1<<LogSize CQEs of 64 bytes
	EQN     uint32
	UAR     uint32 // uar_page
	Buf     Memory
	DBR     Memory // 8 bytes: update ci (dword 0), arm ci (dword 1)
	// OverrunIgnore (cqc oi) lets CQEs be written over unconsumed ones without an error.
	OverrunIgnore bool
	// Compression on (cqe_comp_en) with the mini-CQE format and layout.
	Compress   bool
	MiniFormat MiniFormat
	Layout     CompLayout
	TSFormat   TSFormat
}

// CQState is what QUERY_CQ reports from the datapath's side.
type CQState struct {
	Params  CQParams
	PI      uint32 // CQEs written (producer counter)
	Armed   bool
	Overrun bool // the CQ is in error after an overrun (cqc status 9)
	// Status is cqc status: 0 OK, 9 overflow, 0xa write failure (mlx5_ifc.h
	// MLX5_CQC_STATUS_*).
	Status   uint8
	RefCount int // queues bound to it
}

// WQType is a work queue's type (wq_type in mlx5_ifc.h wq, MLX5_WQ_TYPE_*).
type WQType uint8

// Work queue types.
const (
	WQLinkedList        WQType = 0
	WQCyclic            WQType = 1
	WQLinkedListStrided WQType = 2
	WQCyclicStriding    WQType = 3
)

// WQParams is the wq part of an RQ or SQ context, decoded (sizes in bytes and counts, not
// their PRM encodings).
type WQParams struct {
	Type       WQType
	LogStride  uint8 // log_wq_stride: bytes per WQE (RQ) or basic block (SQ, 64)
	LogSize    uint8 // log_wq_sz: number of WQEs
	PD         uint32
	UAR        uint32
	Buf        Memory
	DBR        Memory // RQ: receive counter at dword 0; SQ: send counter at dword 1
	StrideSize int    // striding RQ: bytes per stride (decoded log_wqe_stride_size)
	NumStrides int    // striding RQ: strides per WQE (decoded log_wqe_num_of_strides)
	// TwoByteShift: a striding RQ writes two zero bytes before each packet, so that IP
	// headers land 4-byte aligned (wq two_byte_shift_en; mlx5dv.h mlx5dv_create_wq).
	TwoByteShift bool
}

// RQParams is an RQ as CREATE_RQ's rqc decodes.
type RQParams struct {
	RQN        uint32
	CQN        uint32
	State      QueueState
	VLANStrip  bool // !vsd: strip the outer VLAN into the CQE
	ScatterFCS bool
	TSFormat   TSFormat
	Counter    uint32 // q counter set (out-of-buffer accounting), 0 for none
	WQ         WQParams
}

// RQModify is MODIFY_RQ's bitmask-selected changes plus the state transition.
type RQModify struct {
	CurrState, NextState QueueState
	SetVLANStrip         bool
	VLANStrip            bool
	SetCounter           bool
	Counter              uint32
}

// RQStateInfo is what QUERY_RQ reports from the datapath's side.
type RQStateInfo struct {
	Params  RQParams
	Counter uint32 // WQEs consumed (wqe counter)
	Posted  uint32 // receive counter read from the doorbell record
}

// SQParams is an SQ as CREATE_SQ's sqc decodes.
type SQParams struct {
	SQN      uint32
	CQN      uint32
	TISN     uint32 // 0: no TIS (tis_lst_sz 0): NOP and other WQEs that send nothing
	State    QueueState
	TSFormat TSFormat
	// MinInline is the number of header bytes every WQE must carry inline (sqc
	// min_wqe_inline_mode: 0 none, 1 L2, 2 IP, 3 TCP/UDP), as ConnectX-4 requires.
	MinInline uint8
	// AllowMPW is sqc allow_multi_pkt_send_wqe, kept for QUERY_SQ; it enables the older,
	// non-enhanced MPW, which the model does not implement. Enhanced MPW WQEs need no such
	// bit: Linux's mlx5e sends them without it.
	AllowMPW  bool
	RateIndex uint16 // packet_pacing_rate_limit_index, 0 for unpaced
	WQ        WQParams
}

// SQModify is MODIFY_SQ's changes.
type SQModify struct {
	CurrState, NextState QueueState
	SetRateIndex         bool
	RateIndex            uint16
}

// SQStateInfo is what QUERY_SQ reports from the datapath's side.
type SQStateInfo struct {
	Params  SQParams
	Counter uint32 // WQE basic blocks consumed
}

// RQTParams is an RQ table (rqtc): the list of RQs RSS spreads over.
type RQTParams struct {
	RQTN uint32
	RQNs []uint32
}

// HashFields selects what RSS hashes (rx_hash_field_select, MLX5_RX_HASH_FIELD_SELECT_*).
type HashFields struct {
	IPv6     bool   // l3_prot_type: 0 IPv4, 1 IPv6
	UDP      bool   // l4_prot_type: 0 TCP, 1 UDP
	Selected uint32 // bits: 0 src IP, 1 dst IP, 2 L4 sport, 3 L4 dport, 4 IPsec SPI
}

// Hash field selector bits (MLX5_RX_HASH_FIELD_SELECT_SELECTED_FIELDS_*, as bit numbers).
const (
	HashSrcIP    = 1 << 0
	HashDstIP    = 1 << 1
	HashL4SPort  = 1 << 2
	HashL4DPort  = 1 << 3
	HashIPsecSPI = 1 << 4
)

// TIRParams is a TIR (tirc), direct or indirect.
type TIRParams struct {
	TIRN     uint32
	Indirect bool   // disp_type
	InlineRQ uint32 // direct: the RQ
	RQT      uint32 // indirect: the RQ table
	HashFn   uint8  // rx_hash_fn: 0 none, 1 inverted XOR8, 2 Toeplitz
	// Symmetric (rx_hash_symmetric) is kept for QUERY_TIR; the model hashes as configured
	// without making the hash symmetric.
	Symmetric bool
	Key       [40]byte
	Outer     HashFields
	Inner     HashFields
	// Tunneled: hash a tunneled packet on its inner headers with the Inner selector
	// (tunneled_offload_en).
	Tunneled bool
	TD       uint32
	// SelfLB is self_lb_block (unicast, multicast), kept for QUERY_TIR. Inferred: frames
	// this function sends reach its own TIRs only through the port's internal loopback
	// (Device.Cable(d)), a test mode, which does not apply the block.
	SelfLB uint8
}

// TISParams is a TIS (tisc).
type TISParams struct {
	TISN uint32
	Prio uint8
	TD   uint32
}

// Flow table types (MLX5_FLOW_TABLE_TYPE_NIC_RX / NIC_TX in the kernel's fs_core).
const (
	TableNICRX uint8 = 0
	TableNICTX uint8 = 1
)

// FlowTableParams is CREATE_FLOW_TABLE's flow_table_context.
type FlowTableParams struct {
	Type    uint8
	ID      uint32
	Level   uint8
	LogSize uint8
	// MissAction: 0 default (drop and count on RX, wire on TX), 1 go to MissTable.
	MissAction uint8
	MissTable  uint32
}

// FlowGroupParams is CREATE_FLOW_GROUP: an index range of a table and its match criteria.
type FlowGroupParams struct {
	Type           uint8
	Table          uint32
	ID             uint32
	Start, End     uint32 // inclusive index range
	CriteriaEnable uint8  // match_criteria_enable bits: 0 outer, 1 misc, 2 inner, ...
	// Criteria is the fte_match_param mask in PRM bytes (mlx5_ifc.h fte_match_param), as
	// long as the command gave it (up to 0x200 bytes).
	Criteria []byte
}

// Destination types (MLX5_FLOW_DESTINATION_TYPE_* in mlx5_ifc.h).
const (
	DestVport     uint8 = 0
	DestFlowTable uint8 = 1
	DestTIR       uint8 = 2
	DestQP        uint8 = 3
)

// Dest is one entry of a flow context's destination list.
type Dest struct {
	Type uint8
	ID   uint32
}

// Flow context actions (MLX5_FLOW_CONTEXT_ACTION_* in mlx5_ifc.h).
const (
	ActionAllow    uint32 = 0x1
	ActionDrop     uint32 = 0x2
	ActionFwdDest  uint32 = 0x4
	ActionCount    uint32 = 0x8
	ActionReformat uint32 = 0x10
	ActionDecap    uint32 = 0x20 // removed in later PRMs; kept for old drivers
	ActionVLANPop  uint32 = 0x80
	ActionVLANPush uint32 = 0x100
)

// FTEParams is SET_FLOW_TABLE_ENTRY's flow_context.
type FTEParams struct {
	Type     uint8
	Table    uint32
	Group    uint32
	Index    uint32
	Action   uint32
	FlowTag  uint32
	Reformat uint32
	// PushVLAN is flow_context push_vlan (ethtype, prio, cfi, vid), for ActionVLANPush.
	PushVLAN uint32
	Dests    []Dest
	Counters []uint32
	// Value is the fte_match_param to compare under the group's criteria, in PRM bytes.
	Value []byte
}

// ReformatParams is ALLOC_PACKET_REFORMAT_CONTEXT: the type and the header bytes to add.
type ReformatParams struct {
	ID   uint32
	Type uint8 // MLX5_REFORMAT_TYPE_*: 0 L2→VXLAN, 1 L2→NVGRE, 2 L2→L2 tunnel, 3 L3 tunnel→L2, 4 L2→L3 tunnel
	Data []byte
}

// PacingParams is SET_PP_RATE_LIMIT: a rate-limit index's rate.
type PacingParams struct {
	Index      uint16
	RateKbps   uint32 // 0 removes the limit
	BurstBytes uint32
}

// Counters are the port's vport counters (QUERY_VPORT_COUNTER) and Q counters
// (QUERY_Q_COUNTER out_of_buffer), as the datapath counts them.
type Counters struct {
	RXPackets, RXBytes uint64
	TXPackets, TXBytes uint64
	// RXOutOfBuffer: frames dropped because the RQ they were steered to had no WQE
	// (Q counter out_of_buffer; DPDK reports it as rx_out_of_buffer).
	RXOutOfBuffer uint64
	// RXInputDrops: the part of RXOutOfBuffer that the port's full input refused before
	// steering (a ConnectX's physical port discards, ethtool rx_discards_phy).
	RXInputDrops uint64
	// RXSteeringMiss: frames no rule took and the root's miss dropped (vport
	// rx_discards_phy on real hardware counts more; the model counts only this).
	RXSteeringMiss uint64
	// RXDropRule: frames a rule dropped.
	RXDropRule uint64
	// RXNotReady: frames steered to an RQ not in the ready state.
	RXNotReady uint64
	// RXErrors: receive WQEs completed in error (frame larger than the WQE, bad lkey).
	RXErrors uint64
	// TXErrors: WQEs completed in error.
	TXErrors uint64
	// TXDropRule: frames a NIC TX flow entry dropped.
	TXDropRule uint64
}

// FlowCounter is one flow counter's value (QUERY_FLOW_COUNTER).
type FlowCounter struct{ Packets, Octets uint64 }

// Config is what a NIC needs from the model around it.
type Config struct {
	Space  *dma.Space
	Keys   Translator
	Events Events
	Clock  Clock
}
