package verbs

import "github.com/daqiri-go/daqiri/verbs/provider"

// Work requests and completions are shared with providers; see package
// provider for their fields.
type (
	// SGE is one scatter/gather element of registered memory.
	SGE = provider.SGE
	// SendWR is a send-queue work request.
	SendWR = provider.SendWR
	// RecvWR is a receive-queue work request.
	RecvWR = provider.RecvWR
	// WorkCompletion is one completion polled from a CQ.
	WorkCompletion = provider.WorkCompletion
	// CompletionError describes a work request that completed in error.
	CompletionError = provider.CompletionError
	// QPType is the transport of a QP.
	QPType = provider.QPType
	// QPCap sizes a QP's work queues.
	QPCap = provider.QPCap
	// WROpcode is a work request opcode.
	WROpcode = provider.WROpcode
	// SendFlags modify a send work request.
	SendFlags = provider.SendFlags
	// WCStatus is a completion status.
	WCStatus = provider.WCStatus
	// WCOpcode is a completion opcode.
	WCOpcode = provider.WCOpcode
	// WCFlags qualify a completion.
	WCFlags = provider.WCFlags
)

// Re-exported constants (see package provider).
const (
	QPTypeRC        = provider.QPTypeRC
	QPTypeUC        = provider.QPTypeUC
	QPTypeUD        = provider.QPTypeUD
	QPTypeRawPacket = provider.QPTypeRawPacket

	WRRDMAWrite        = provider.WRRDMAWrite
	WRRDMAWriteWithImm = provider.WRRDMAWriteWithImm
	WRSend             = provider.WRSend
	WRSendWithImm      = provider.WRSendWithImm
	WRRDMARead         = provider.WRRDMARead
	WRAtomicCmpAndSwp  = provider.WRAtomicCmpAndSwp
	WRAtomicFetchAdd   = provider.WRAtomicFetchAdd

	SendFence     = provider.SendFence
	SendSignaled  = provider.SendSignaled
	SendSolicited = provider.SendSolicited

	WCSuccess    = provider.WCSuccess
	WCWRFlushErr = provider.WCWRFlushErr

	WCSend            = provider.WCSend
	WCRDMAWrite       = provider.WCRDMAWrite
	WCRDMARead        = provider.WCRDMARead
	WCCompSwap        = provider.WCCompSwap
	WCFetchAdd        = provider.WCFetchAdd
	WCRecv            = provider.WCRecv
	WCRecvRDMAWithImm = provider.WCRecvRDMAWithImm

	WCFlagGRH     = provider.WCFlagGRH
	WCFlagWithImm = provider.WCFlagWithImm
)
