// Package provider is the seam between the verbs core and the user-space
// half of an RDMA driver. The core issues every kernel command (create,
// modify, destroy); a provider supplies the driver-specific request and
// response bytes those commands carry and owns the queues the kernel maps
// into user space: it writes work requests, rings doorbells and polls
// completions. rxe (Soft-RoCE, verbs/rxe) implements it for tests; mlx5 will
// for hardware.
//
// Work requests and completions are defined here so that both sides share
// one vocabulary; the verbs package re-exports them.
package provider

import (
	"errors"
	"fmt"
)

// Kernel is what the core lends a provider context: the command fd's
// mappings and the few commands a datapath needs.
type Kernel interface {
	// Mmap maps length bytes of the device fd at offset (shared, read/write).
	Mmap(offset int64, length int) ([]byte, error)
	// Munmap releases a mapping made by Mmap.
	Munmap(b []byte) error
	// PostSendDoorbell issues a POST_SEND command with no work requests for
	// the QP with this kernel handle: the rxe doorbell.
	PostSendDoorbell(qpHandle uint32) error
}

// Provider is a user-space driver, chosen by the kernel driver's name.
type Provider interface {
	// Name is the kernel driver it serves, e.g. "rxe" or "mlx5".
	Name() string
	// DriverID is that driver's enum rdma_driver_id
	// (include/uapi/rdma/ib_user_ioctl_verbs.h): every ioctl names it.
	DriverID() uint32
	// NewContext starts the provider's state for one opened device.
	NewContext(k Kernel) (Context, error)
}

// Request carries the driver-specific bytes of one create command: DriverIn
// is sent as UHW_IN (omitted when empty); the kernel's reply, DriverOutLen
// bytes, comes back through Attach.
type Request interface {
	DriverIn() []byte
	DriverOutLen() int
}

// Context is a provider's per-device state.
type Context interface {
	Request
	// Attach receives the driver part of GET_CONTEXT's response.
	Attach(driverOut []byte) error
	// NewCQ prepares a CQ of at least cqe entries (before the kernel creates it).
	NewCQ(cqe int) (CQ, error)
	// NewQP prepares a QP (before the kernel creates it).
	NewQP(req QPRequest) (QP, error)
	// NewAH prepares an address handle (before the kernel creates it).
	NewAH() (AHState, error)
	// Close releases what the context holds.
	Close() error
}

// CQ is a provider's view of one completion queue.
type CQ interface {
	Request
	// Attach completes setup after the kernel created the CQ: handle is the
	// kernel handle, cqe the depth it granted, driverOut its driver reply.
	Attach(handle uint32, cqe int, driverOut []byte) error
	// Poll moves up to len(wc) completions into wc and returns how many.
	Poll(wc []WorkCompletion) (int, error)
	// Release unmaps the queue; called after the kernel destroyed the CQ or
	// when creation failed.
	Release() error
}

// QPRequest describes a QP about to be created.
type QPRequest struct {
	Type QPType
	Cap  QPCap
}

// QPInfo is what the kernel returned for a created QP.
type QPInfo struct {
	Handle uint32
	QPN    uint32
	Type   QPType
	Cap    QPCap // as granted (at least what was asked)
}

// QP is a provider's view of one queue pair's work queues.
type QP interface {
	Request
	// Attach completes setup after the kernel created the QP.
	Attach(info QPInfo, driverOut []byte) error
	// PostSend queues wrs in order and rings the doorbell. It returns how
	// many were queued; on error the first unqueued one is wrs[n].
	PostSend(wrs []SendWR) (int, error)
	// PostRecv queues receive buffers in order; same contract as PostSend.
	PostRecv(wrs []RecvWR) (int, error)
	// Release unmaps the queues; called after destroy or failed creation.
	Release() error
}

// AHState is a provider's view of one address handle.
type AHState interface {
	Request
	// Attach completes setup after the kernel created the AH.
	Attach(handle uint32, driverOut []byte) error
}

// AH is an address handle as work requests name it: the kernel handle and
// the provider's state for it.
type AH interface {
	Handle() uint32
	State() AHState
}

// QPType is enum ib_uverbs_qp_type.
type QPType uint8

// QP types.
const (
	QPTypeRC        QPType = 2
	QPTypeUC        QPType = 3
	QPTypeUD        QPType = 4
	QPTypeRawPacket QPType = 8
)

func (t QPType) String() string {
	switch t {
	case QPTypeRC:
		return "RC"
	case QPTypeUC:
		return "UC"
	case QPTypeUD:
		return "UD"
	case QPTypeRawPacket:
		return "RAW_PACKET"
	}
	return fmt.Sprintf("QPType(%d)", uint8(t))
}

// QPCap sizes a QP's work queues (struct ib_uverbs_qp_cap).
type QPCap struct {
	MaxSendWR     uint32
	MaxRecvWR     uint32
	MaxSendSGE    uint32
	MaxRecvSGE    uint32
	MaxInlineData uint32
}

// SGE is one scatter/gather element: registered memory by address, length
// and the local key of its MR (struct ib_uverbs_sge / rxe_sge layout).
type SGE struct {
	Addr   uint64
	Length uint32
	LKey   uint32
}

// WROpcode is enum ib_uverbs_wr_opcode.
type WROpcode uint32

// Work request opcodes.
const (
	WRRDMAWrite        WROpcode = 0
	WRRDMAWriteWithImm WROpcode = 1
	WRSend             WROpcode = 2
	WRSendWithImm      WROpcode = 3
	WRRDMARead         WROpcode = 4
	WRAtomicCmpAndSwp  WROpcode = 5
	WRAtomicFetchAdd   WROpcode = 6
)

func (o WROpcode) String() string {
	switch o {
	case WRRDMAWrite:
		return "RDMA_WRITE"
	case WRRDMAWriteWithImm:
		return "RDMA_WRITE_WITH_IMM"
	case WRSend:
		return "SEND"
	case WRSendWithImm:
		return "SEND_WITH_IMM"
	case WRRDMARead:
		return "RDMA_READ"
	case WRAtomicCmpAndSwp:
		return "ATOMIC_CMP_AND_SWP"
	case WRAtomicFetchAdd:
		return "ATOMIC_FETCH_AND_ADD"
	}
	return fmt.Sprintf("WROpcode(%d)", uint32(o))
}

// SendFlags is enum ib_send_flags.
type SendFlags uint32

// Send flags.
const (
	SendFence     SendFlags = 1 << 0
	SendSignaled  SendFlags = 1 << 1
	SendSolicited SendFlags = 1 << 2
	SendInline    SendFlags = 1 << 3 // set by the provider when Inline is used
)

// SendWR is one send-queue work request.
type SendWR struct {
	ID     uint64
	Opcode WROpcode
	Flags  SendFlags
	// SGL names the registered memory to send (or to read into for
	// RDMA_READ).
	SGL []SGE
	// Inline, when non-nil, is copied into the work request itself instead
	// of SGL (no MR needed); at most the QP's MaxInlineData bytes.
	Inline []byte
	// Imm is the immediate value for *_WITH_IMM opcodes, in host order.
	Imm uint32
	// RemoteAddr and RKey name the peer's memory for RDMA and atomic opcodes.
	RemoteAddr uint64
	RKey       uint32
	// CompareAdd and Swap are the atomic operands.
	CompareAdd, Swap uint64
	// AH, RemoteQPN and RemoteQKey address a UD send.
	AH         AH
	RemoteQPN  uint32
	RemoteQKey uint32
}

// RecvWR is one receive-queue work request.
type RecvWR struct {
	ID  uint64
	SGL []SGE
}

// WCStatus is enum ib_wc_status.
type WCStatus uint32

// Completion statuses.
const (
	WCSuccess        WCStatus = 0
	WCLocLenErr      WCStatus = 1
	WCLocQPOpErr     WCStatus = 2
	WCLocEECOpErr    WCStatus = 3
	WCLocProtErr     WCStatus = 4
	WCWRFlushErr     WCStatus = 5
	WCMWBindErr      WCStatus = 6
	WCBadRespErr     WCStatus = 7
	WCLocAccessErr   WCStatus = 8
	WCRemInvReqErr   WCStatus = 9
	WCRemAccessErr   WCStatus = 10
	WCRemOpErr       WCStatus = 11
	WCRetryExcErr    WCStatus = 12
	WCRNRRetryExcErr WCStatus = 13
	WCLocRDDViolErr  WCStatus = 14
	WCRemInvRdReqErr WCStatus = 15
	WCRemAbortErr    WCStatus = 16
	WCInvEECNErr     WCStatus = 17
	WCInvEECStateErr WCStatus = 18
	WCFatalErr       WCStatus = 19
	WCRespTimeoutErr WCStatus = 20
	WCGeneralErr     WCStatus = 21
)

var wcStatusNames = [...]string{
	"SUCCESS", "LOC_LEN_ERR", "LOC_QP_OP_ERR", "LOC_EEC_OP_ERR", "LOC_PROT_ERR",
	"WR_FLUSH_ERR", "MW_BIND_ERR", "BAD_RESP_ERR", "LOC_ACCESS_ERR", "REM_INV_REQ_ERR",
	"REM_ACCESS_ERR", "REM_OP_ERR", "RETRY_EXC_ERR", "RNR_RETRY_EXC_ERR", "LOC_RDD_VIOL_ERR",
	"REM_INV_RD_REQ_ERR", "REM_ABORT_ERR", "INV_EECN_ERR", "INV_EEC_STATE_ERR", "FATAL_ERR",
	"RESP_TIMEOUT_ERR", "GENERAL_ERR",
}

func (s WCStatus) String() string {
	if int(s) < len(wcStatusNames) {
		return wcStatusNames[s]
	}
	return fmt.Sprintf("WCStatus(%d)", uint32(s))
}

// WCOpcode is enum ib_wc_opcode (receive completions have bit 7 set).
type WCOpcode uint32

// Completion opcodes.
const (
	WCSend            WCOpcode = 0
	WCRDMAWrite       WCOpcode = 1
	WCRDMARead        WCOpcode = 2
	WCCompSwap        WCOpcode = 3
	WCFetchAdd        WCOpcode = 4
	WCBindMW          WCOpcode = 5
	WCLocalInv        WCOpcode = 6
	WCRecv            WCOpcode = 1 << 7
	WCRecvRDMAWithImm WCOpcode = WCRecv + 1
)

func (o WCOpcode) String() string {
	switch o {
	case WCSend:
		return "SEND"
	case WCRDMAWrite:
		return "RDMA_WRITE"
	case WCRDMARead:
		return "RDMA_READ"
	case WCCompSwap:
		return "COMP_SWAP"
	case WCFetchAdd:
		return "FETCH_ADD"
	case WCBindMW:
		return "BIND_MW"
	case WCLocalInv:
		return "LOCAL_INV"
	case WCRecv:
		return "RECV"
	case WCRecvRDMAWithImm:
		return "RECV_RDMA_WITH_IMM"
	}
	return fmt.Sprintf("WCOpcode(%d)", uint32(o))
}

// WCFlags is enum ib_wc_flags.
type WCFlags uint32

// Completion flags.
const (
	WCFlagGRH            WCFlags = 1 << 0
	WCFlagWithImm        WCFlags = 1 << 1
	WCFlagWithInvalidate WCFlags = 1 << 2
)

// WorkCompletion is one completion (struct ib_uverbs_wc, decoded).
type WorkCompletion struct {
	ID        uint64
	Status    WCStatus
	Opcode    WCOpcode
	VendorErr uint32
	ByteLen   uint32
	// Imm is the immediate value (host order) when Flags has WCFlagWithImm,
	// or the invalidated rkey with WCFlagWithInvalidate.
	Imm          uint32
	QPNum        uint32
	SrcQP        uint32
	Flags        WCFlags
	PKeyIndex    uint16
	SLID         uint16
	SL           uint8
	DLIDPathBits uint8
	Port         uint8
}

// Err is nil for a successful completion and a *CompletionError otherwise.
func (wc *WorkCompletion) Err() error {
	if wc.Status == WCSuccess {
		return nil
	}
	return &CompletionError{ID: wc.ID, Status: wc.Status, VendorErr: wc.VendorErr}
}

// CompletionError reports a work request that completed in error.
type CompletionError struct {
	ID        uint64
	Status    WCStatus
	VendorErr uint32
}

func (e *CompletionError) Error() string {
	return fmt.Sprintf("verbs: work request %#x completed with status %v (vendor error %#x)", e.ID, e.Status, e.VendorErr)
}

// Errors a provider datapath reports.
var (
	// ErrQueueFull: the work queue has no free slot; poll completions first.
	ErrQueueFull = errors.New("verbs: work queue full")
	// ErrInvalidWR: the work request does not fit the QP (too many SGEs,
	// inline data too long, opcode not valid for the QP type, missing AH).
	ErrInvalidWR = errors.New("verbs: invalid work request")
)
