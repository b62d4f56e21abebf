package prm

// Completion queue entries: the 64-byte CQE, the error CQE, the 8-byte mini-CQE of
// compressed sessions, and the values that go in them. Byte offsets as gcc lays out
// rdma-core's mlx5dv.h (struct mlx5_cqe64, struct mlx5_err_cqe) and, for the members only
// the kernel names, include/linux/mlx5/device.h ("linux:" layouts: struct mlx5_cqe64 and
// struct mlx5_mini_cqe8 there). Both describe the same 64 bytes; the layout test checks
// each field against the header its layout names.

// CQESize is the size of the CQEs the datapath writes (cqc cqe_sz 0 = 64 bytes).
const CQESize = 64

// CQE64 is the 64-byte completion entry.
var CQE64 = struct {
	// Tunneled is byte 0 (bit 0: the packet was tunneled; kernel cqe_is_tunneled).
	Tunneled Field
	// WQEID is the striding RQ's WQE index (the RQ's WQE counter for the WQE whose strides
	// the packet used; kernel mlx5e_handle_rx_cqe_mpwrq reads it as wqe_id).
	WQEID Field
	// RSSHashResult and RSSHashType are the RSS hash and what it covered (CQE_RSS_HTYPE_*).
	RSSHashResult Field
	RSSHashType   Field
	// Checksum is the L4 checksum of the packet the CQE reports (kernel CHECKSUM_COMPLETE).
	Checksum Field
	// FlagsRQPN: the receive QP/RQ number in the low 24 bits.
	FlagsRQPN Field
	// HdsIPExt carries CQE_L2_OK/CQE_L3_OK/CQE_L4_OK; L4L3HdrType the header types (L4 in
	// bits 6:4, L3 in bits 3:2, bit 0 = VLAN stripped into VLANInfo).
	HdsIPExt    Field
	L4L3HdrType Field
	VLANInfo    Field
	// SRQNUidx: srqn or user index (low 24 bits); the high byte is LRO segments.
	SRQNUidx Field
	// ImmInvalPkey / flow table metadata (device.h union).
	ImmInvalPkey Field
	// ByteCnt is the packet length; on a striding RQ the low 16 bits are the length, bits
	// 29:16 the strides consumed and bit 31 the filler flag (MPRQByteCnt*).
	ByteCnt Field
	// Timestamp is 64 bits: free-running ticks or real time (seconds << 32 | ns).
	Timestamp   Field
	TimestampHi Field
	TimestampLo Field
	// SopDropQPN holds the flow tag in its low 24 bits on RX; on TX the SQ number.
	SopDropQPN Field
	// WQECounter: on TX the WQE index of the completed WQE; on a cyclic RQ the WQE index;
	// on a striding RQ the index of the first stride (kernel mpwrq_get_cqe_stride_index).
	WQECounter Field
	// Signature / ValidityIterationCount share byte 62: the enhanced compression layout
	// puts the CQ's lap count there (DPDK check_cqe_iteration).
	Signature              Field
	ValidityIterationCount Field
	// OpOwn is opcode (bits 7:4), format (3:2), solicited event (1) and owner (0); in an
	// enhanced compressed CQE the opcode bits hold the mini-CQE count minus one.
	OpOwn Field
}{
	Tunneled:               dvField("linux:mlx5_cqe64", "tls_outer_l3_tunneled", 0, 1),
	WQEID:                  dvField("mlx5_cqe64", "wqe_id", 2, 2),
	RSSHashResult:          dvField("linux:mlx5_cqe64", "rss_hash_result", 12, 4),
	RSSHashType:            dvField("linux:mlx5_cqe64", "rss_hash_type", 16, 1),
	Checksum:               dvField("linux:mlx5_cqe64", "check_sum", 20, 2),
	FlagsRQPN:              dvField("mlx5_cqe64", "flags_rqpn", 24, 4),
	HdsIPExt:               dvField("mlx5_cqe64", "hds_ip_ext", 28, 1),
	L4L3HdrType:            dvField("mlx5_cqe64", "l4_hdr_type_etc", 29, 1),
	VLANInfo:               dvField("mlx5_cqe64", "vlan_info", 30, 2),
	SRQNUidx:               dvField("mlx5_cqe64", "srqn_uidx", 32, 4),
	ImmInvalPkey:           dvField("mlx5_cqe64", "imm_inval_pkey", 36, 4),
	ByteCnt:                dvField("mlx5_cqe64", "byte_cnt", 44, 4),
	Timestamp:              dvField("mlx5_cqe64", "timestamp", 48, 8),
	TimestampHi:            dvField("linux:mlx5_cqe64", "timestamp_h", 48, 4),
	TimestampLo:            dvField("linux:mlx5_cqe64", "timestamp_l", 52, 4),
	SopDropQPN:             dvField("mlx5_cqe64", "sop_drop_qpn", 56, 4),
	WQECounter:             dvField("mlx5_cqe64", "wqe_counter", 60, 2),
	Signature:              dvField("mlx5_cqe64", "signature", 62, 1),
	ValidityIterationCount: dvField("linux:mlx5_cqe64", "validity_iteration_count", 62, 1),
	OpOwn:                  dvField("mlx5_cqe64", "op_own", 63, 1),
}

// ErrCQE is the error CQE (same 64 bytes, opcode CQEOpReqErr or CQEOpRespErr).
var ErrCQE = struct {
	SRQN          Field
	VendorErrSynd Field
	Syndrome      Field
	// SWQEOpcodeQPN: the failed WQE's opcode in the high byte, the SQ/QP number below.
	SWQEOpcodeQPN Field
	WQECounter    Field
	OpOwn         Field
}{
	SRQN:          dvField("mlx5_err_cqe", "srqn", 32, 4),
	VendorErrSynd: dvField("mlx5_err_cqe", "vendor_err_synd", 54, 1),
	Syndrome:      dvField("mlx5_err_cqe", "syndrome", 55, 1),
	SWQEOpcodeQPN: dvField("mlx5_err_cqe", "s_wqe_opcode_qpn", 56, 4),
	WQECounter:    dvField("mlx5_err_cqe", "wqe_counter", 60, 2),
	OpOwn:         dvField("mlx5_err_cqe", "op_own", 63, 1),
}

// MiniCQESize is the size of one mini-CQE; a 64-byte slot of the basic layout holds
// MiniCQEArraySize (consts_cmd.go) of them.
const MiniCQESize = 8

// MiniCQEsPerEnhancedSlot is how many mini-CQEs an enhanced-layout compressed CQE holds: the
// last 8 bytes keep wqe_counter, the validity iteration count and op_own, whose opcode bits
// count the minis (DPDK MLX5_CQE_NUM_MINIS). Inferred from the layout: 7 minis of 8 bytes
// end where wqe_counter begins.
const MiniCQEsPerEnhancedSlot = 7

// MiniCQE is one 8-byte mini-CQE (device.h struct mlx5_mini_cqe8; DPDK mlx5_prm.h adds the
// flow-tag format's use of the same bytes).
var MiniCQE = struct {
	// RxHashResult is the hash format's first word.
	RxHashResult Field
	// Checksum and StrideIdx are the checksum formats' words (StrideIdx only in the
	// checksum+stride format; in the flow-tag format Checksum holds flow tag bits 15:0).
	Checksum  Field
	StrideIdx Field
	// ByteCnt is the packet length (flow-tag format: the low 24 bits; the high byte is flow
	// tag bits 23:16, DPDK rxq_cq_to_mbuf).
	ByteCnt Field
	// TX mini-CQE (requester): the WQE counter and opcode of the completed WQE.
	SWQECounter Field
	SWQEOpcode  Field
}{
	RxHashResult: dvField("linux:mlx5_mini_cqe8", "rx_hash_result", 0, 4),
	Checksum:     dvField("linux:mlx5_mini_cqe8", "checksum", 0, 2),
	StrideIdx:    dvField("linux:mlx5_mini_cqe8", "stridx", 2, 2),
	ByteCnt:      dvField("linux:mlx5_mini_cqe8", "byte_cnt", 4, 4),
	SWQECounter:  dvField("linux:mlx5_mini_cqe8", "s_wqe_info.wqe_counter", 0, 2),
	SWQEOpcode:   dvField("linux:mlx5_mini_cqe8", "s_wqe_info.s_wqe_opcode", 2, 1),
}

// CQE opcodes (op_own bits 7:4).
const (
	CQEOpReq      = 0  // C: MLX5_CQE_REQ
	CQEOpRespSend = 2  // C: MLX5_CQE_RESP_SEND
	CQEOpNoPacket = 6  // C: MLX5_CQE_NO_PACKET
	CQEOpReqErr   = 13 // C: MLX5_CQE_REQ_ERR
	CQEOpRespErr  = 14 // C: MLX5_CQE_RESP_ERR
	CQEOpInvalid  = 15 // C: MLX5_CQE_INVALID
)

// CQEOwnerMask is the owner bit of op_own.
const CQEOwnerMask = 1 // C: MLX5_CQE_OWNER_MASK

// CQE formats (op_own bits 3:2).
const (
	CQEFormatNoInline   = 0 // C: linux:MLX5_NO_INLINE_DATA
	CQEFormatCompressed = 3 // C: linux:MLX5_COMPRESSED
)

// Mini-CQE formats as cqc mini_cqe_res_format takes them, besides MiniCQEFormatCsum and
// MiniCQEFormatCsumStrIdx (consts_cmd.go): hash (0) and flow tag + stride index (2) are
// DPDK's (mlx5_prm.h MLX5_CQE_RESP_FORMAT_HASH, _FTAG_STRIDX); no installed header has them.
const (
	MiniCQEFormatHash       = 0
	MiniCQEFormatFTagStrIdx = 2
)

// CQEVICInit is the validity iteration count software initialises an enhanced-layout CQ
// with, so that no slot looks valid in lap 0 (DPDK mlx5_prm.h MLX5_CQE_VIC_INIT).
const CQEVICInit = 0xff

// Error CQE syndromes (ErrCQE.Syndrome).
const (
	CQESyndLocalLength = 0x01 // C: MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR
	CQESyndLocalQPOp   = 0x02 // C: MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR
	CQESyndLocalProt   = 0x04 // C: MLX5_CQE_SYNDROME_LOCAL_PROT_ERR
	CQESyndWRFlush     = 0x05 // C: MLX5_CQE_SYNDROME_WR_FLUSH_ERR
	CQESyndLocalAccess = 0x11 // C: MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR
)

// Header-validity bits of HdsIPExt.
const (
	CQEL2OK = 1 << 0 // C: MLX5_CQE_L2_OK
	CQEL3OK = 1 << 1 // C: MLX5_CQE_L3_OK
	CQEL4OK = 1 << 2 // C: MLX5_CQE_L4_OK
)

// L3 header types (L4L3HdrType bits 3:2).
const (
	CQEL3None = 0x0 // C: MLX5_CQE_L3_HDR_TYPE_NONE
	CQEL3IPv6 = 0x1 // C: MLX5_CQE_L3_HDR_TYPE_IPV6
	CQEL3IPv4 = 0x2 // C: MLX5_CQE_L3_HDR_TYPE_IPV4
)

// L4 header types (L4L3HdrType bits 6:4).
const (
	CQEL4None         = 0x0 // C: linux:CQE_L4_HDR_TYPE_NONE
	CQEL4TCPNoAck     = 0x1 // C: linux:CQE_L4_HDR_TYPE_TCP_NO_ACK
	CQEL4UDP          = 0x2 // C: linux:CQE_L4_HDR_TYPE_UDP
	CQEL4TCPAckNoData = 0x3 // C: linux:CQE_L4_HDR_TYPE_TCP_ACK_NO_DATA
	CQEL4TCPAckData   = 0x4 // C: linux:CQE_L4_HDR_TYPE_TCP_ACK_AND_DATA
)

// RSS hash type masks of RSSHashType: bits 3:2 the IP version hashed (1 IPv4, 2 IPv6),
// bits 7:6 the L4 protocol hashed (1 TCP, 2 UDP, 3 IPsec SPI), as device.h's comment gives.
const (
	CQERSSHTypeIP = 0x3 << 2 // C: linux:CQE_RSS_HTYPE_IP
	CQERSSHTypeL4 = 0x3 << 6 // C: linux:CQE_RSS_HTYPE_L4
)

// Striding-RQ byte count word (CQE64.ByteCnt): DPDK mlx5_prm.h MLX5_MPRQ_LEN_MASK,
// MLX5_MPRQ_STRIDE_NUM_MASK/SHIFT, MLX5_MPRQ_FILLER_MASK; the kernel's device.h reads the
// same bits through struct mpwrq_cqe_bc.
const (
	MPRQByteCntLenMask     = 0x0000ffff
	MPRQByteCntStridesMask = 0x3fff0000
	MPRQByteCntStrideShift = 16
	MPRQByteCntFiller      = 0x80000000
)

// CQEOpcode, CQEFormat and CQEOwner split an op_own byte.
func CQEOpcode(opOwn byte) uint8 { return opOwn >> 4 }

// CQEFormat is op_own's format bits.
func CQEFormat(opOwn byte) uint8 { return opOwn >> 2 & 3 }

// CQEOwner is op_own's owner bit.
func CQEOwner(opOwn byte) uint8 { return opOwn & CQEOwnerMask }

// CQESoftwareOwned reports whether the CQE at consumer counter ci of a CQ of 1<<logSize
// entries belongs to software: its owner bit equals the counter's wrap parity and its
// opcode is not CQEOpInvalid (rdma-core cq.c get_sw_cqe, DPDK check_cqe).
func CQESoftwareOwned(opOwn byte, ci uint32, logSize uint8) bool {
	return CQEOpcode(opOwn) != CQEOpInvalid && uint32(CQEOwner(opOwn)) == ci>>logSize&1
}

// CQEValidIteration is CQESoftwareOwned for the enhanced compression layout, which marks a
// valid CQE by the lap count in its validity iteration count byte (DPDK
// check_cqe_iteration: the counter shifted by the log size, truncated to 8 bits).
func CQEValidIteration(vic, opOwn byte, ci uint32, logSize uint8) bool {
	return CQEOpcode(opOwn) != CQEOpInvalid && vic == byte(ci>>logSize)
}
