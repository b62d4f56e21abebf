package prm

// Send and receive work queue entries: the segments a WQE is built of, the striding-RQ WQE,
// the enhanced multi-packet send WQE and the WAIT-on-time WQE. Byte offsets as gcc lays out
// rdma-core's mlx5dv.h; the WAIT segment appears in no installed header and comes from
// DPDK's drivers/common/mlx5/mlx5_prm.h (struct mlx5_wqe_wseg).

// SendWQEBB is the send WQE basic block: SQ WQEs are counted and indexed in 64-byte blocks.
const SendWQEBB = 64 // C: MLX5_SEND_WQE_BB

// SendWQEShift is log2 of SendWQEBB.
const SendWQEShift = 6 // C: MLX5_SEND_WQE_SHIFT

// SendWQEDS is the 16-byte unit the control segment's ds count counts.
const SendWQEDS = 16 // C: MLX5_SEND_WQE_DS

// SendWQEMaxDS is the most 16-byte units one WQE may have: the ds field is 6 bits (kernel
// qp.h MLX5_WQE_CTRL_DS_MASK 0x3f), i.e. at most 63 units (just under 16 basic blocks,
// qp.h MLX5_SEND_WQE_MAX_WQEBBS).
const SendWQEMaxDS = 0x3f

// WQECtrl is the control segment every send WQE starts with.
var WQECtrl = struct {
	// OpModIdxOpcode: opcode modifier in bits 31:24, WQE index (producer counter of the
	// first basic block) in 23:8, opcode in 7:0.
	OpModIdxOpcode Field
	// QPNDS: SQ number in bits 31:8, WQE size in 16-byte units in 5:0.
	QPNDS     Field
	Signature Field
	// FmCeSe: fence (7:5), completion mode (3:2; WQECtrlCQUpdate asks for a CQE),
	// solicited event (1).
	FmCeSe Field
	// Imm: immediate data; for the Ethernet SQ unused.
	Imm Field
}{
	OpModIdxOpcode: dvField("mlx5_wqe_ctrl_seg", "opmod_idx_opcode", 0, 4),
	QPNDS:          dvField("mlx5_wqe_ctrl_seg", "qpn_ds", 4, 4),
	Signature:      dvField("mlx5_wqe_ctrl_seg", "signature", 8, 1),
	FmCeSe:         dvField("mlx5_wqe_ctrl_seg", "fm_ce_se", 11, 1),
	Imm:            dvField("mlx5_wqe_ctrl_seg", "imm", 12, 4),
}

// Completion modes of FmCeSe bits 3:2 (DPDK mlx5_prm.h MLX5_COMP_ONLY_ERR ..
// MLX5_COMP_CQE_AND_EQE at MLX5_COMP_MODE_OFFSET 2): only 2 and 3 write a CQE on success.
const (
	WQECtrlCQUpdate  = 2 << 2 // C: MLX5_WQE_CTRL_CQ_UPDATE
	WQECtrlSolicited = 1 << 1 // C: MLX5_WQE_CTRL_SOLICITED
	WQECtrlCEMask    = 3 << 2
)

// WQE opcodes (WQECtrl.OpModIdxOpcode bits 7:0).
const (
	WQEOpNOP          = 0x00 // C: MLX5_OPCODE_NOP
	WQEOpSend         = 0x0a // C: MLX5_OPCODE_SEND
	WQEOpTSO          = 0x0e // C: MLX5_OPCODE_TSO
	WQEOpEnhancedMPSW = 0x29 // C: linux:MLX5_OPCODE_ENHANCED_MPSW
	// WQEOpWait waits for a condition before the SQ goes on (DPDK mlx5_prm.h
	// MLX5_OPCODE_WAIT); with opmod WaitOpModTime the condition is on the device clock.
	WQEOpWait = 0x0f
)

// WAIT opcode modifiers and conditions (DPDK mlx5_prm.h MLX5_OPC_MOD_WAIT_*,
// MLX5_WAIT_COND_*; DPDK mlx5_tx.h mlx5_tx_wseg_init uses CYCLIC_SMALLER: go on once the
// wanted time is cyclically not after the clock).
const (
	WaitOpModCQPI         = 0
	WaitOpModData         = 1
	WaitOpModTime         = 2
	WaitCondInvert        = 0x10
	WaitCondAlwaysTrue    = 0
	WaitCondEqual         = 1
	WaitCondBigger        = 2
	WaitCondSmaller       = 3
	WaitCondCyclicBigger  = 4
	WaitCondCyclicSmaller = 5
)

// WQEEth is the Ethernet segment of an Ethernet send WQE (after the control segment).
var WQEEth = struct {
	// SWP holds the software-parser offsets (kernel qp.h swp_*; unused by the model).
	SWP Field
	// CSFlags asks for checksums: WQEEthL3Csum, WQEEthL4Csum (and the inner ones).
	CSFlags Field
	MSS     Field
	// InlineHdrSz is how many header bytes follow inline, starting at InlineHdrStart and
	// running on over the next 16-byte units. Kernel qp.h overlays the same 4 bytes with
	// insert.type (WQEEthInsertVLAN) and insert.vlan_tci when no headers are inline.
	InlineHdrSz    Field
	InlineHdrStart Field
	InlineHdr      Field
}{
	SWP:            dvField("mlx5_wqe_eth_seg", "rsvd0", 0, 4),
	CSFlags:        dvField("mlx5_wqe_eth_seg", "cs_flags", 4, 1),
	MSS:            dvField("mlx5_wqe_eth_seg", "mss", 6, 2),
	InlineHdrSz:    dvField("mlx5_wqe_eth_seg", "inline_hdr_sz", 12, 2),
	InlineHdrStart: dvField("mlx5_wqe_eth_seg", "inline_hdr_start", 14, 2),
	InlineHdr:      dvField("mlx5_wqe_eth_seg", "inline_hdr", 16, 16),
}

// WQEEthSize is the Ethernet segment's size up to inline_hdr_start (two 16-byte units
// hold the segment with its first 2 inline bytes; more inline bytes continue into the
// following units, kernel en_tx.c / DPDK MLX5_ESEG_MIN_INLINE_SIZE 18).
const WQEEthSize = 16

// Checksum offload flags (WQEEth.CSFlags).
const (
	WQEEthL3InnerCsum = 1 << 4 // C: MLX5_ETH_WQE_L3_INNER_CSUM
	WQEEthL4InnerCsum = 1 << 5 // C: MLX5_ETH_WQE_L4_INNER_CSUM
	WQEEthL3Csum      = 1 << 6 // C: MLX5_ETH_WQE_L3_CSUM
	WQEEthL4Csum      = 1 << 7 // C: MLX5_ETH_WQE_L4_CSUM
)

// WQEEthInsertVLAN is the flag in the Ethernet segment's insert.type (bytes 12–13, the
// InlineHdrSz position) that makes the device insert insert.vlan_tci as an 802.1Q tag
// (kernel qp.h MLX5_ETH_WQE_INSERT_VLAN; DPDK MLX5_ETH_WQE_VLAN_INSERT is the same bit of
// the whole word). qp.h does not compile in user space; the layout test reads the
// enumerator from its text.
const WQEEthInsertVLAN = 1 << 15 // C: MLX5_ETH_WQE_INSERT_VLAN

// WQEData is a pointer data segment.
var WQEData = struct {
	ByteCount Field
	LKey      Field
	Addr      Field
}{
	ByteCount: dvField("mlx5_wqe_data_seg", "byte_count", 0, 4),
	LKey:      dvField("mlx5_wqe_data_seg", "lkey", 4, 4),
	Addr:      dvField("mlx5_wqe_data_seg", "addr", 8, 8),
}

// WQEDataSize is a pointer data segment's size.
const WQEDataSize = 16

// WQEInline is an inline data segment: a byte count with WQEInlineSeg set, then the data,
// padded to 16 bytes.
var WQEInline = struct {
	ByteCount Field
}{
	ByteCount: dvField("mlx5_wqe_inl_data_seg", "byte_count", 0, 4),
}

// WQEInlineSeg marks a data segment's byte count as inline data.
const WQEInlineSeg = 0x80000000 // C: MLX5_INLINE_SEG

// InvalidLKey ends a receive WQE's scatter list early (rdma-core MLX5_INVALID_LKEY).
const InvalidLKey = 0x100 // C: MLX5_INVALID_LKEY

// HWStartPadding is bit 31 of a receive scatter entry's byte count, which the kernel's mlx5e
// sets on its cyclic RQs' entries (include/linux/mlx5/device.h MLX5_HW_START_PADDING, equal
// to MLX5_INLINE_SEG); the count is the bits below it.
const HWStartPadding = 0x80000000 // C: MLX5_HW_START_PADDING

// WQESrqNext is the next segment that starts a striding-RQ WQE (struct mlx5_mprq_wqe).
var WQESrqNext = struct {
	NextWQEIndex Field
	Signature    Field
}{
	NextWQEIndex: dvField("mlx5_wqe_srq_next_seg", "next_wqe_index", 2, 2),
	Signature:    dvField("mlx5_wqe_srq_next_seg", "signature", 4, 1),
}

// MPRQWQE is the striding-RQ WQE: a next segment, then one data segment for the buffer the
// strides divide.
var MPRQWQE = struct {
	NSeg Field
	DSeg Field
}{
	NSeg: dvField("mlx5_mprq_wqe", "nseg", 0, 16),
	DSeg: dvField("mlx5_mprq_wqe", "dseg", 16, 16),
}

// WAIT segment byte offsets (DPDK mlx5_prm.h struct mlx5_wqe_wseg: operation, lkey,
// va_high, va_low as big-endian 32-bit words, then value and mask as big-endian 64-bit
// words). No installed header has the segment, so these are plain offsets the layout test
// cannot check; the segment follows the control segment.
const (
	WaitOperationOff = 0
	WaitLKeyOff      = 4
	WaitVAHighOff    = 8
	WaitVALowOff     = 12
	WaitValueOff     = 16
	WaitMaskOff      = 24
)

// WQEWaitSize is the WAIT segment's size.
const WQEWaitSize = 32

// CtrlOpcode, CtrlIndex and CtrlOpMod split WQECtrl.OpModIdxOpcode; CtrlSQN and CtrlDS split
// WQECtrl.QPNDS (kernel qp.h MLX5_WQE_CTRL_* masks and shifts).
func CtrlOpcode(v uint32) uint8 { return uint8(v) }

// CtrlIndex is the WQE index bits of opmod_idx_opcode.
func CtrlIndex(v uint32) uint16 { return uint16(v >> 8) }

// CtrlOpMod is the opcode modifier bits of opmod_idx_opcode.
func CtrlOpMod(v uint32) uint8 { return uint8(v >> 24) }

// CtrlSQN is the queue number bits of qpn_ds.
func CtrlSQN(v uint32) uint32 { return v >> 8 }

// CtrlDS is the size bits of qpn_ds.
func CtrlDS(v uint32) uint8 { return uint8(v & SendWQEMaxDS) }
