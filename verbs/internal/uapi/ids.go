// Package uapi is the byte-level kernel ABI of the uverbs character device:
// object, method and attribute ids for the RDMA_VERBS_IOCTL framing, the
// legacy write() command numbers, and Go mirrors of the structures both
// paths exchange. Nothing outside verbs/ sees it; the verbs package turns it
// into a typed API.
//
// Facts come from the Linux UAPI headers as shipped with Debian's 6.1 kernel
// (include/uapi/rdma/ib_user_ioctl_cmds.h, ib_user_verbs.h,
// ib_user_ioctl_verbs.h, rdma_user_ioctl_cmds.h), which rdma-core mirrors in
// kernel-headers/rdma/. The enums below are append-only upstream, so values
// valid for 6.1 stay valid on newer kernels.
package uapi

// RDMA_VERBS_IOCTL is _IOWR(0x1b, 1, struct ib_uverbs_ioctl_hdr) with the
// 24-byte header (rdma_user_ioctl_cmds.h).
const RDMAVerbsIoctl = 0xc0181b01

// Attribute flags (rdma_user_ioctl_cmds.h).
const (
	AttrFMandatory   = 1 << 0 // the kernel must understand the attribute or fail with EPROTONOSUPPORT
	AttrFValidOutput = 1 << 1 // set by the kernel on a PTR_OUT it wrote
)

// Objects (enum uverbs_default_objects, ib_user_ioctl_cmds.h).
const (
	ObjectDevice      = 0
	ObjectPD          = 1
	ObjectCompChannel = 2
	ObjectCQ          = 3
	ObjectQP          = 4
	ObjectSRQ         = 5
	ObjectAH          = 6
	ObjectMR          = 7
	ObjectMW          = 8
	ObjectFlow        = 9
	ObjectXRCD        = 10
	ObjectRWQIndTbl   = 11
	ObjectWQ          = 12
	ObjectFlowAction  = 13
	ObjectDM          = 14
	ObjectCounters    = 15
	ObjectAsyncEvent  = 16
)

// Driver namespace attributes carrying provider data (UVERBS_ATTR_UHW_IN/OUT:
// 1 << UVERBS_ID_NS_SHIFT, then the next id).
const (
	AttrUHWIn  = 0x1000
	AttrUHWOut = 0x1001
)

// Methods of ObjectDevice (enum uverbs_methods_device).
const (
	MethodInvokeWrite   = 0
	MethodInfoHandles   = 1
	MethodQueryPort     = 2
	MethodGetContext    = 3
	MethodQueryContext  = 4
	MethodQueryGIDTable = 5
	MethodQueryGIDEntry = 6
)

// Attributes of MethodGetContext.
const (
	AttrGetContextNumCompVectors = 0
	AttrGetContextCoreSupport    = 1
)

// Attributes of MethodQueryPort.
const (
	AttrQueryPortPortNum = 0
	AttrQueryPortResp    = 1
)

// Attributes of MethodQueryGIDTable.
const (
	AttrQueryGIDTableEntrySize      = 0
	AttrQueryGIDTableFlags          = 1
	AttrQueryGIDTableRespEntries    = 2
	AttrQueryGIDTableRespNumEntries = 3
)

// Attributes of MethodQueryGIDEntry.
const (
	AttrQueryGIDEntryPort      = 0
	AttrQueryGIDEntryGIDIndex  = 1
	AttrQueryGIDEntryFlags     = 2
	AttrQueryGIDEntryRespEntry = 3
)

// Methods and attributes of ObjectCQ.
const (
	MethodCQCreate  = 0
	MethodCQDestroy = 1

	AttrCreateCQHandle      = 0
	AttrCreateCQCQE         = 1
	AttrCreateCQUserHandle  = 2
	AttrCreateCQCompChannel = 3
	AttrCreateCQCompVector  = 4
	AttrCreateCQFlags       = 5
	AttrCreateCQRespCQE     = 6
	AttrCreateCQEventFD     = 7

	AttrDestroyCQHandle = 0
	AttrDestroyCQResp   = 1
)

// Methods and attributes of ObjectQP.
const (
	MethodQPCreate  = 0
	MethodQPDestroy = 1

	AttrCreateQPHandle       = 0
	AttrCreateQPXRCDHandle   = 1
	AttrCreateQPPDHandle     = 2
	AttrCreateQPSRQHandle    = 3
	AttrCreateQPSendCQHandle = 4
	AttrCreateQPRecvCQHandle = 5
	AttrCreateQPIndTable     = 6
	AttrCreateQPUserHandle   = 7
	AttrCreateQPCap          = 8
	AttrCreateQPType         = 9
	AttrCreateQPFlags        = 10
	AttrCreateQPSourceQPN    = 11
	AttrCreateQPEventFD      = 12
	AttrCreateQPRespCap      = 13
	AttrCreateQPRespQPNum    = 14

	AttrDestroyQPHandle = 0
	AttrDestroyQPResp   = 1
)

// QP creation flags (enum ib_uverbs_qp_create_flags).
const QPCreateSQSigAll = 1 << 12

// Methods and attributes of ObjectMR (enum uverbs_methods_mr).
const (
	MethodDMMRReg     = 0
	MethodMRDestroy   = 1
	MethodAdviseMR    = 2
	MethodQueryMR     = 3
	MethodRegDMABufMR = 4

	AttrDestroyMRHandle = 0

	AttrRegDMABufMRHandle      = 0
	AttrRegDMABufMRPDHandle    = 1
	AttrRegDMABufMROffset      = 2
	AttrRegDMABufMRLength      = 3
	AttrRegDMABufMRIOVA        = 4
	AttrRegDMABufMRFD          = 5
	AttrRegDMABufMRAccessFlags = 6
	AttrRegDMABufMRRespLKey    = 7
	AttrRegDMABufMRRespRKey    = 8
)

// Single-method destroy objects: method 0, handle attribute 0.
const (
	MethodPDDestroy = 0
	MethodAHDestroy = 0

	AttrDestroyPDHandle = 0
	AttrDestroyAHHandle = 0
)

// ObjectAsyncEvent.
const (
	MethodAsyncEventAlloc = 0
	AttrAsyncEventAllocFD = 0
)

// Legacy write() commands (enum ib_uverbs_write_cmds, ib_user_verbs.h). The
// kernel still serves these through write() on the same fd; several verbs
// (QUERY_DEVICE, ALLOC_PD, REG_MR, CREATE_AH, MODIFY/QUERY_QP, POST_SEND,
// REQ_NOTIFY_CQ, CREATE_COMP_CHANNEL) have no ioctl method in 6.1.
const (
	CmdGetContext        = 0
	CmdQueryDevice       = 1
	CmdQueryPort         = 2
	CmdAllocPD           = 3
	CmdDeallocPD         = 4
	CmdCreateAH          = 5
	CmdDestroyAH         = 8
	CmdRegMR             = 9
	CmdDeregMR           = 13
	CmdCreateCompChannel = 17
	CmdCreateCQ          = 18
	CmdDestroyCQ         = 20
	CmdReqNotifyCQ       = 23
	CmdCreateQP          = 24
	CmdQueryQP           = 25
	CmdModifyQP          = 26
	CmdDestroyQP         = 27
	CmdPostSend          = 28
	CmdPostRecv          = 29
)

// QP types (enum ib_uverbs_qp_type).
const (
	QPTypeRC        = 2
	QPTypeUC        = 3
	QPTypeUD        = 4
	QPTypeRawPacket = 8
)
