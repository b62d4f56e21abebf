// Package mlx5abi is the mlx5 driver's part of the RDMA ioctl ABI, for package mlx5dv: the
// generic framing (headers, attributes, the core ids) is verbs/internal/uapi's.
package mlx5abi

// The mlx5 driver's part of the ioctl ABI: DevX (PRM commands and objects from user space),
// UMEM registration, dynamic UARs, the kernel flow matcher and CREATE_FLOW, packet reformat
// actions, packet pacing indexes and PD query. Facts from linux-libc-dev's
// rdma/mlx5_user_ioctl_cmds.h, rdma/mlx5_user_ioctl_verbs.h and rdma/mlx5-abi.h; how the
// kernel reads each attribute (PTR_IN of a fixed size, CONST_IN, FLAGS_IN, IDR, RAW_FD) from
// Linux drivers/infiniband/hw/mlx5/devx.c, fs.c, qos.c and main.c. Every constant marked
// `// C: NAME` is compared with the header's value by mlx5_probe_test.go (gcc at test time),
// and so is every struct marked `C: struct NAME` with its fields.

// ProbeHeaders are the linux-libc-dev headers (under /usr/include) this file's facts come
// from: tests compile them in C probes.
func ProbeHeaders() []string {
	return []string{
		"rdma/ib_user_ioctl_verbs.h", "rdma/ib_user_ioctl_cmds.h", "rdma/mlx5_user_ioctl_cmds.h",
		"rdma/mlx5_user_ioctl_verbs.h", "rdma/mlx5-abi.h",
	}
}

// Driver ids (enum rdma_driver_id, ib_user_ioctl_verbs.h): every ioctl header names the
// device's driver, and the kernel refuses a call that names another with EINVAL.
const (
	DriverMLX5 = 1  // C: RDMA_DRIVER_MLX5
	DriverRXE  = 14 // C: RDMA_DRIVER_RXE
)

// Core objects and methods the mlx5 driver extends (ib_user_ioctl_cmds.h).
const (
	MethodFlowActionDestroy     = 1 // C: UVERBS_METHOD_FLOW_ACTION_DESTROY
	AttrDestroyFlowActionHandle = 0 // C: UVERBS_ATTR_DESTROY_FLOW_ACTION_HANDLE
	MethodFlowDestroy           = 0 // C: UVERBS_METHOD_FLOW_DESTROY
	AttrDestroyFlowHandle       = 0 // C: UVERBS_ATTR_DESTROY_FLOW_HANDLE
)

// mlx5 objects (enum mlx5_ib_objects): driver-namespace ids, 1 << UVERBS_ID_NS_SHIFT on.
const (
	MLX5ObjectDevX        = 0x1000 // C: MLX5_IB_OBJECT_DEVX
	MLX5ObjectDevXObj     = 0x1001 // C: MLX5_IB_OBJECT_DEVX_OBJ
	MLX5ObjectDevXUMEM    = 0x1002 // C: MLX5_IB_OBJECT_DEVX_UMEM
	MLX5ObjectFlowMatcher = 0x1003 // C: MLX5_IB_OBJECT_FLOW_MATCHER
	MLX5ObjectPP          = 0x1007 // C: MLX5_IB_OBJECT_PP
	MLX5ObjectUAR         = 0x1008 // C: MLX5_IB_OBJECT_UAR
)

// Methods of MLX5ObjectDevX (enum mlx5_ib_devx_methods) and their attributes.
const (
	MLX5MethodDevXOther    = 0x1000 // C: MLX5_IB_METHOD_DEVX_OTHER
	MLX5MethodDevXQueryUAR = 0x1001 // C: MLX5_IB_METHOD_DEVX_QUERY_UAR
	MLX5MethodDevXQueryEQN = 0x1002 // C: MLX5_IB_METHOD_DEVX_QUERY_EQN

	MLX5AttrDevXOtherCmdIn  = 0x1000 // C: MLX5_IB_ATTR_DEVX_OTHER_CMD_IN
	MLX5AttrDevXOtherCmdOut = 0x1001 // C: MLX5_IB_ATTR_DEVX_OTHER_CMD_OUT

	MLX5AttrDevXQueryUARUserIdx = 0x1000 // C: MLX5_IB_ATTR_DEVX_QUERY_UAR_USER_IDX
	MLX5AttrDevXQueryUARDevIdx  = 0x1001 // C: MLX5_IB_ATTR_DEVX_QUERY_UAR_DEV_IDX

	MLX5AttrDevXQueryEQNUserVec = 0x1000 // C: MLX5_IB_ATTR_DEVX_QUERY_EQN_USER_VEC
	MLX5AttrDevXQueryEQNDevEQN  = 0x1001 // C: MLX5_IB_ATTR_DEVX_QUERY_EQN_DEV_EQN
)

// Methods of MLX5ObjectDevXObj (enum mlx5_ib_devx_obj_methods) and their attributes.
const (
	MLX5MethodDevXObjCreate  = 0x1000 // C: MLX5_IB_METHOD_DEVX_OBJ_CREATE
	MLX5MethodDevXObjDestroy = 0x1001 // C: MLX5_IB_METHOD_DEVX_OBJ_DESTROY
	MLX5MethodDevXObjModify  = 0x1002 // C: MLX5_IB_METHOD_DEVX_OBJ_MODIFY
	MLX5MethodDevXObjQuery   = 0x1003 // C: MLX5_IB_METHOD_DEVX_OBJ_QUERY

	MLX5AttrDevXObjCreateHandle = 0x1000 // C: MLX5_IB_ATTR_DEVX_OBJ_CREATE_HANDLE
	MLX5AttrDevXObjCreateCmdIn  = 0x1001 // C: MLX5_IB_ATTR_DEVX_OBJ_CREATE_CMD_IN
	MLX5AttrDevXObjCreateCmdOut = 0x1002 // C: MLX5_IB_ATTR_DEVX_OBJ_CREATE_CMD_OUT

	MLX5AttrDevXObjDestroyHandle = 0x1000 // C: MLX5_IB_ATTR_DEVX_OBJ_DESTROY_HANDLE

	MLX5AttrDevXObjModifyHandle = 0x1000 // C: MLX5_IB_ATTR_DEVX_OBJ_MODIFY_HANDLE
	MLX5AttrDevXObjModifyCmdIn  = 0x1001 // C: MLX5_IB_ATTR_DEVX_OBJ_MODIFY_CMD_IN
	MLX5AttrDevXObjModifyCmdOut = 0x1002 // C: MLX5_IB_ATTR_DEVX_OBJ_MODIFY_CMD_OUT

	MLX5AttrDevXObjQueryHandle = 0x1000 // C: MLX5_IB_ATTR_DEVX_OBJ_QUERY_HANDLE
	MLX5AttrDevXObjQueryCmdIn  = 0x1001 // C: MLX5_IB_ATTR_DEVX_OBJ_QUERY_CMD_IN
	MLX5AttrDevXObjQueryCmdOut = 0x1002 // C: MLX5_IB_ATTR_DEVX_OBJ_QUERY_CMD_OUT
)

// Methods of MLX5ObjectDevXUMEM and their attributes.
const (
	MLX5MethodDevXUMEMReg   = 0x1000 // C: MLX5_IB_METHOD_DEVX_UMEM_REG
	MLX5MethodDevXUMEMDereg = 0x1001 // C: MLX5_IB_METHOD_DEVX_UMEM_DEREG

	MLX5AttrDevXUMEMRegHandle     = 0x1000 // C: MLX5_IB_ATTR_DEVX_UMEM_REG_HANDLE
	MLX5AttrDevXUMEMRegAddr       = 0x1001 // C: MLX5_IB_ATTR_DEVX_UMEM_REG_ADDR
	MLX5AttrDevXUMEMRegLen        = 0x1002 // C: MLX5_IB_ATTR_DEVX_UMEM_REG_LEN
	MLX5AttrDevXUMEMRegAccess     = 0x1003 // C: MLX5_IB_ATTR_DEVX_UMEM_REG_ACCESS
	MLX5AttrDevXUMEMRegOutID      = 0x1004 // C: MLX5_IB_ATTR_DEVX_UMEM_REG_OUT_ID
	MLX5AttrDevXUMEMRegPgszBitmap = 0x1005 // C: MLX5_IB_ATTR_DEVX_UMEM_REG_PGSZ_BITMAP
	MLX5AttrDevXUMEMRegDMABufFD   = 0x1006 // C: MLX5_IB_ATTR_DEVX_UMEM_REG_DMABUF_FD

	MLX5AttrDevXUMEMDeregHandle = 0x1000 // C: MLX5_IB_ATTR_DEVX_UMEM_DEREG_HANDLE
)

// Methods of MLX5ObjectUAR (dynamic UAR pages) and their attributes.
const (
	MLX5MethodUARObjAlloc   = 0x1000 // C: MLX5_IB_METHOD_UAR_OBJ_ALLOC
	MLX5MethodUARObjDestroy = 0x1001 // C: MLX5_IB_METHOD_UAR_OBJ_DESTROY

	MLX5AttrUARObjAllocHandle     = 0x1000 // C: MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE
	MLX5AttrUARObjAllocType       = 0x1001 // C: MLX5_IB_ATTR_UAR_OBJ_ALLOC_TYPE
	MLX5AttrUARObjAllocMmapOffset = 0x1002 // C: MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_OFFSET
	MLX5AttrUARObjAllocMmapLength = 0x1003 // C: MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_LENGTH
	MLX5AttrUARObjAllocPageID     = 0x1004 // C: MLX5_IB_ATTR_UAR_OBJ_ALLOC_PAGE_ID

	MLX5AttrUARObjDestroyHandle = 0x1000 // C: MLX5_IB_ATTR_UAR_OBJ_DESTROY_HANDLE
)

// UAR allocation types (enum mlx5_ib_uapi_uar_alloc_type).
const (
	MLX5UARAllocTypeBF = 0 // C: MLX5_IB_UAPI_UAR_ALLOC_TYPE_BF
	MLX5UARAllocTypeNC = 1 // C: MLX5_IB_UAPI_UAR_ALLOC_TYPE_NC
)

// Methods of MLX5ObjectPP (packet pacing indexes) and their attributes.
const (
	MLX5MethodPPObjAlloc   = 0x1000 // C: MLX5_IB_METHOD_PP_OBJ_ALLOC
	MLX5MethodPPObjDestroy = 0x1001 // C: MLX5_IB_METHOD_PP_OBJ_DESTROY

	MLX5AttrPPObjAllocHandle = 0x1000 // C: MLX5_IB_ATTR_PP_OBJ_ALLOC_HANDLE
	MLX5AttrPPObjAllocCtx    = 0x1001 // C: MLX5_IB_ATTR_PP_OBJ_ALLOC_CTX
	MLX5AttrPPObjAllocFlags  = 0x1002 // C: MLX5_IB_ATTR_PP_OBJ_ALLOC_FLAGS
	MLX5AttrPPObjAllocIndex  = 0x1003 // C: MLX5_IB_ATTR_PP_OBJ_ALLOC_INDEX

	MLX5AttrPPObjDestroyHandle = 0x1000 // C: MLX5_IB_ATTR_PP_OBJ_DESTROY_HANDLE

	MLX5PPAllocFlagsDedicatedIndex = 1 << 0 // C: MLX5_IB_UAPI_PP_ALLOC_FLAGS_DEDICATED_INDEX
)

// Methods of MLX5ObjectFlowMatcher and their attributes.
const (
	MLX5MethodFlowMatcherCreate  = 0x1000 // C: MLX5_IB_METHOD_FLOW_MATCHER_CREATE
	MLX5MethodFlowMatcherDestroy = 0x1001 // C: MLX5_IB_METHOD_FLOW_MATCHER_DESTROY

	MLX5AttrFlowMatcherCreateHandle  = 0x1000 // C: MLX5_IB_ATTR_FLOW_MATCHER_CREATE_HANDLE
	MLX5AttrFlowMatcherMatchMask     = 0x1001 // C: MLX5_IB_ATTR_FLOW_MATCHER_MATCH_MASK
	MLX5AttrFlowMatcherFlowType      = 0x1002 // C: MLX5_IB_ATTR_FLOW_MATCHER_FLOW_TYPE
	MLX5AttrFlowMatcherMatchCriteria = 0x1003 // C: MLX5_IB_ATTR_FLOW_MATCHER_MATCH_CRITERIA
	MLX5AttrFlowMatcherFlowFlags     = 0x1004 // C: MLX5_IB_ATTR_FLOW_MATCHER_FLOW_FLAGS
	MLX5AttrFlowMatcherFTType        = 0x1005 // C: MLX5_IB_ATTR_FLOW_MATCHER_FT_TYPE

	MLX5AttrFlowMatcherDestroyHandle = 0x1000 // C: MLX5_IB_ATTR_FLOW_MATCHER_DESTROY_HANDLE

	// MLX5FlowTypeNormal is the ENUM_IN element of FLOW_TYPE for a normal matcher; its data
	// is the u16 priority (fs.c mlx5_ib_flow_type).
	MLX5FlowTypeNormal = 0 // C: MLX5_IB_FLOW_TYPE_NORMAL

	// MLX5MatchParamsSize is sizeof(struct mlx5_ib_match_params): the size of a match mask
	// and of a match value (MLX5_IB_DW_MATCH_PARAM dwords).
	MLX5MatchParamsSize = 0x280 // C: sizeof(struct mlx5_ib_match_params)
)

// Flow table types (enum mlx5_ib_uapi_flow_table_type).
const (
	MLX5FlowTableTypeNICRX = 0 // C: MLX5_IB_UAPI_FLOW_TABLE_TYPE_NIC_RX
	MLX5FlowTableTypeNICTX = 1 // C: MLX5_IB_UAPI_FLOW_TABLE_TYPE_NIC_TX
)

// Driver methods of the core flow object and their attributes.
const (
	MLX5MethodCreateFlow  = 0x1000 // C: MLX5_IB_METHOD_CREATE_FLOW
	MLX5MethodDestroyFlow = 0x1001 // C: MLX5_IB_METHOD_DESTROY_FLOW

	MLX5AttrCreateFlowHandle         = 0x1000 // C: MLX5_IB_ATTR_CREATE_FLOW_HANDLE
	MLX5AttrCreateFlowMatchValue     = 0x1001 // C: MLX5_IB_ATTR_CREATE_FLOW_MATCH_VALUE
	MLX5AttrCreateFlowDestQP         = 0x1002 // C: MLX5_IB_ATTR_CREATE_FLOW_DEST_QP
	MLX5AttrCreateFlowDestDevX       = 0x1003 // C: MLX5_IB_ATTR_CREATE_FLOW_DEST_DEVX
	MLX5AttrCreateFlowMatcher        = 0x1004 // C: MLX5_IB_ATTR_CREATE_FLOW_MATCHER
	MLX5AttrCreateFlowArrFlowActions = 0x1005 // C: MLX5_IB_ATTR_CREATE_FLOW_ARR_FLOW_ACTIONS
	MLX5AttrCreateFlowTag            = 0x1006 // C: MLX5_IB_ATTR_CREATE_FLOW_TAG
	MLX5AttrCreateFlowArrCounters    = 0x1007 // C: MLX5_IB_ATTR_CREATE_FLOW_ARR_COUNTERS_DEVX
	MLX5AttrCreateFlowFlags          = 0x1009 // C: MLX5_IB_ATTR_CREATE_FLOW_FLAGS

	MLX5AttrDestroyFlowHandle = 0x1000 // C: MLX5_IB_ATTR_DESTROY_FLOW_HANDLE

	MLX5CreateFlowFlagsDefaultMiss = 1 << 0 // C: MLX5_IB_ATTR_CREATE_FLOW_FLAGS_DEFAULT_MISS
	MLX5CreateFlowFlagsDrop        = 1 << 1 // C: MLX5_IB_ATTR_CREATE_FLOW_FLAGS_DROP
)

// Driver methods of the core flow action object (packet reformat) and their attributes.
const (
	MLX5MethodFlowActionCreatePacketReformat = 0x1001 // C: MLX5_IB_METHOD_FLOW_ACTION_CREATE_PACKET_REFORMAT

	MLX5AttrCreatePacketReformatHandle  = 0x1000 // C: MLX5_IB_ATTR_CREATE_PACKET_REFORMAT_HANDLE
	MLX5AttrCreatePacketReformatType    = 0x1001 // C: MLX5_IB_ATTR_CREATE_PACKET_REFORMAT_TYPE
	MLX5AttrCreatePacketReformatFTType  = 0x1002 // C: MLX5_IB_ATTR_CREATE_PACKET_REFORMAT_FT_TYPE
	MLX5AttrCreatePacketReformatDataBuf = 0x1003 // C: MLX5_IB_ATTR_CREATE_PACKET_REFORMAT_DATA_BUF
)

// Packet reformat types (enum mlx5_ib_uapi_flow_action_packet_reformat_type).
const (
	MLX5PacketReformatL2TunnelToL2 = 0 // C: MLX5_IB_UAPI_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TUNNEL_TO_L2
	MLX5PacketReformatL2ToL2Tunnel = 1 // C: MLX5_IB_UAPI_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TO_L2_TUNNEL
	MLX5PacketReformatL3TunnelToL2 = 2 // C: MLX5_IB_UAPI_FLOW_ACTION_PACKET_REFORMAT_TYPE_L3_TUNNEL_TO_L2
	MLX5PacketReformatL2ToL3Tunnel = 3 // C: MLX5_IB_UAPI_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TO_L3_TUNNEL
)

// PD query: a driver method of the core PD object.
const (
	MLX5MethodPDQuery      = 0x1000 // C: MLX5_IB_METHOD_PD_QUERY
	MLX5AttrQueryPDHandle  = 0x1000 // C: MLX5_IB_ATTR_QUERY_PD_HANDLE
	MLX5AttrQueryPDRespPDN = 0x1001 // C: MLX5_IB_ATTR_QUERY_PD_RESP_PDN
)

// alloc_ucontext request flags and library capabilities (mlx5-abi.h).
const (
	MLX5AllocUctxDevX           = 1 << 0 // C: MLX5_IB_ALLOC_UCTX_DEVX
	MLX5LibCap4KUAR             = 1 << 0 // C: MLX5_LIB_CAP_4K_UAR
	MLX5LibCapDynUAR            = 1 << 1 // C: MLX5_LIB_CAP_DYN_UAR
	MLX5RespMaskCoreClockOffset = 1 << 0 // C: MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_CORE_CLOCK_OFFSET
	MLX5RespMaskRealTimeTS      = 1 << 4 // C: MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_REAL_TIME_TS
)

// MLX5 mmap commands (enum mlx5_ib_mmap_cmd, mlx5-abi.h): the legacy offsets' command byte.
// The clock info page is at command CLOCK_INFO, index 0 (the kernel's mlx5_ib_mmap), one
// page, read-only.
const (
	MLX5MmapClockInfo = 7 // C: MLX5_IB_MMAP_CLOCK_INFO
	// MLX5MmapCmdShift is the kernel's MLX5_IB_MMAP_CMD_SHIFT (main.c, not in a uapi
	// header): the command sits at bit 8 of the page offset.
	MLX5MmapCmdShift = 8
)

// MLX5AllocUcontextReqV2 is the mlx5 driver data of GET_CONTEXT.
// C: struct mlx5_ib_alloc_ucontext_req_v2
type MLX5AllocUcontextReqV2 struct {
	TotalNumBfregs      uint32 // C: total_num_bfregs
	NumLowLatencyBfregs uint32 // C: num_low_latency_bfregs
	Flags               uint32 // C: flags
	CompMask            uint32 // C: comp_mask
	MaxCQEVersion       uint8  // C: max_cqe_version
	Reserved0           uint8  // C: reserved0
	Reserved1           uint16 // C: reserved1
	Reserved2           uint32 // C: reserved2
	LibCaps             uint64 // C: lib_caps
}

// MLX5AllocUcontextResp is the mlx5 driver part of GET_CONTEXT's response.
// C: struct mlx5_ib_alloc_ucontext_resp
type MLX5AllocUcontextResp struct {
	QPTabSize          uint32 // C: qp_tab_size
	BfRegSize          uint32 // C: bf_reg_size
	TotBfregs          uint32 // C: tot_bfregs
	CacheLineSize      uint32 // C: cache_line_size
	MaxSQDescSz        uint16 // C: max_sq_desc_sz
	MaxRQDescSz        uint16 // C: max_rq_desc_sz
	MaxSendWQEBB       uint32 // C: max_send_wqebb
	MaxRecvWR          uint32 // C: max_recv_wr
	MaxSRQRecvWR       uint32 // C: max_srq_recv_wr
	NumPorts           uint16 // C: num_ports
	FlowActionFlags    uint16 // C: flow_action_flags
	CompMask           uint32 // C: comp_mask
	ResponseLength     uint32 // C: response_length
	CQEVersion         uint8  // C: cqe_version
	CmdsSuppUHW        uint8  // C: cmds_supp_uhw
	EthMinInline       uint8  // C: eth_min_inline
	ClockInfoVersions  uint8  // C: clock_info_versions
	HCACoreClockOffset uint64 // C: hca_core_clock_offset
	LogUARSize         uint32 // C: log_uar_size
	NumUARsPerPage     uint32 // C: num_uars_per_page
	NumDynBfregs       uint32 // C: num_dyn_bfregs
	DumpFillMkey       uint32 // C: dump_fill_mkey
}

// MLX5ClockInfo is the page the kernel maps at MLX5_IB_MMAP_CLOCK_INFO: what converts the
// free-running counter to nanoseconds (a seqlock in Sign).
// C: struct mlx5_ib_clock_info
type MLX5ClockInfo struct {
	Sign           uint32 // C: sign
	Resv           uint32 // C: resv
	Nsec           uint64 // C: nsec
	Cycles         uint64 // C: cycles
	Frac           uint64 // C: frac
	Mult           uint32 // C: mult
	Shift          uint32 // C: shift
	Mask           uint64 // C: mask
	OverflowPeriod uint64 // C: overflow_period
}
