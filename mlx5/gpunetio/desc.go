package gpunetio

import "encoding/binary"

// The layouts the kernels share with the CPU, little-endian as both sides store them.
// kernels/daqiri_gpunetio.cuh defines the same offsets (DQG_* macros, checked there with
// static_assert against its structs, and here by TestHeaderLayout against the header's
// text).

// Descriptor (struct dqg_queue): where a queue's rings are, in GPU addresses.
const (
	DescMagic      = 0 // u32 'DQGN'
	DescVersion    = 4
	DescRxCQ       = 8 // u64: RX CQE ring
	DescRxCQDBR    = 16
	DescRQ         = 24 // u64: striding RQ ring (one 16-byte data segment after a 16-byte next segment per WQE)
	DescRQDBR      = 32
	DescRxBuf      = 40 // u64: the strides, WQE slot i owns strides [i*spw, (i+1)*spw)
	DescRxCQLog    = 48 // u32
	DescRQLog      = 52
	DescStrideLog  = 56
	DescStridesLog = 60
	DescRxLKey     = 64
	DescFlags      = 68
	DescTxCQ       = 72
	DescTxCQDBR    = 80
	DescSQ         = 88
	DescSQDBR      = 96
	DescUAR        = 104 // u64: where the 8-byte doorbell goes (shadow UAR word, or a peer-mapped UAR)
	DescTxBuf      = 112
	DescTxCQLog    = 120 // u32
	DescSQLog      = 124 // log2 of the SQ's 64-byte basic blocks
	DescSQN        = 128
	DescTxLKey     = 132
	DescCtrl       = 136 // u64: the control block
	DescTxBufSize  = 144 // u32
	DescRxBufSize  = 148 // u32 (of the strides, in bytes; 0 past 4 GiB)
	DescSize       = 192

	descMagicValue = 0x4e475144 // "DQGN"
	descVersion    = 1
)

// Descriptor flags.
const (
	FlagCompressed = 1 << 0 // the RX CQ compresses CQEs (basic layout, stride-index minis)
	FlagRx         = 1 << 1
	FlagTx         = 1 << 2
)

// Control block (struct dqg_ctrl), always CPU_GPU memory.
const (
	CtrlStop      = 0  // u32: the CPU asks the kernel to finish
	CtrlHeartbeat = 4  // u32: the kernel counts its polling rounds
	CtrlExited    = 8  // u32: the kernel has left its loop (set last)
	CtrlErr       = 12 // u32: Err* code the kernel stopped on
	CtrlErrSynd   = 16 // u32: vendor_err_synd << 8 | syndrome of an error CQE
	CtrlErrWQE    = 20 // u32: its wqe_counter
	CtrlErrOp     = 24 // u32: its opcode
	CtrlRunning   = 28 // u32: the kernel has started
	CtrlPackets   = 32 // u64
	CtrlBytes     = 40 // u64
	CtrlRxCI      = 48 // u32: the RX CQ consumer index as the kernel left it
	CtrlRQPI      = 52
	CtrlTxPI      = 56
	CtrlTxCI      = 60
	CtrlUAR       = 64 // u64: the shadow UAR word (the 8-byte doorbell, big-endian bytes)
	CtrlBatches   = 72 // u64
	CtrlSize      = 128
)

// Error codes in CtrlErr.
const (
	ErrNone     = 0
	ErrRxCQE    = 1 // an RX CQE with an error syndrome
	ErrTxCQE    = 2 // a TX CQE with an error syndrome
	ErrBadCQE   = 3 // an opcode the receive path does not know
	ErrTxRing   = 4 // the transmitter waited too long for ring space (no completions)
	ErrSemStuck = 5 // the semaphore ring stayed full (the CPU took no batch)
)

// Semaphore ring entry (struct dqg_sem), in CPU_GPU memory.
const (
	SemStatus = 0  // u32: SemFree or SemReady
	SemCount  = 4  // u32: packets in the batch
	SemBytes  = 8  // u64: payload bytes
	SemSeq    = 16 // u64: batch number
	SemTS     = 24 // u64: the first packet's CQE timestamp
	SemSize   = 32

	SemFree  = 0
	SemReady = 1
)

// Batch slot header (struct dqg_slot): each packet of a batch in its slot of SlotBytes.
const (
	SlotLen    = 0 // u32
	SlotTag    = 4 // u32: flow tag
	SlotTS     = 8 // u64
	SlotHeader = 16
)

var le = binary.LittleEndian
