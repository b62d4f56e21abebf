package prm

import "fmt"

// Opcodes, statuses, event types and the enumerations that go in command fields. Each constant with
// a "C:" comment is the value the named enumerator or macro has in the installed headers; TestLayout
// checks every one.

// CmdOp is a command opcode: the first 16 bits of every command input (mlx5_ifc.h MLX5_CMD_OP_*).
type CmdOp uint16

// CmdOp values.
const (
	CmdOpQueryHCACap                  CmdOp = 0x100 // C: MLX5_CMD_OP_QUERY_HCA_CAP
	CmdOpQueryAdapter                 CmdOp = 0x101 // C: MLX5_CMD_OP_QUERY_ADAPTER
	CmdOpInitHCA                      CmdOp = 0x102 // C: MLX5_CMD_OP_INIT_HCA
	CmdOpTeardownHCA                  CmdOp = 0x103 // C: MLX5_CMD_OP_TEARDOWN_HCA
	CmdOpEnableHCA                    CmdOp = 0x104 // C: MLX5_CMD_OP_ENABLE_HCA
	CmdOpDisableHCA                   CmdOp = 0x105 // C: MLX5_CMD_OP_DISABLE_HCA
	CmdOpQueryPages                   CmdOp = 0x107 // C: MLX5_CMD_OP_QUERY_PAGES
	CmdOpManagePages                  CmdOp = 0x108 // C: MLX5_CMD_OP_MANAGE_PAGES
	CmdOpSetHCACap                    CmdOp = 0x109 // C: MLX5_CMD_OP_SET_HCA_CAP
	CmdOpQueryISSI                    CmdOp = 0x10a // C: MLX5_CMD_OP_QUERY_ISSI
	CmdOpSetISSI                      CmdOp = 0x10b // C: MLX5_CMD_OP_SET_ISSI
	CmdOpSetDriverVersion             CmdOp = 0x10d // C: MLX5_CMD_OP_SET_DRIVER_VERSION
	CmdOpCreateMKey                   CmdOp = 0x200 // C: MLX5_CMD_OP_CREATE_MKEY
	CmdOpQueryMKey                    CmdOp = 0x201 // C: MLX5_CMD_OP_QUERY_MKEY
	CmdOpDestroyMKey                  CmdOp = 0x202 // C: MLX5_CMD_OP_DESTROY_MKEY
	CmdOpQuerySpecialContexts         CmdOp = 0x203 // C: MLX5_CMD_OP_QUERY_SPECIAL_CONTEXTS
	CmdOpCreateEQ                     CmdOp = 0x301 // C: MLX5_CMD_OP_CREATE_EQ
	CmdOpDestroyEQ                    CmdOp = 0x302 // C: MLX5_CMD_OP_DESTROY_EQ
	CmdOpQueryEQ                      CmdOp = 0x303 // C: MLX5_CMD_OP_QUERY_EQ
	CmdOpGenEQE                       CmdOp = 0x304 // C: MLX5_CMD_OP_GEN_EQE
	CmdOpCreateCQ                     CmdOp = 0x400 // C: MLX5_CMD_OP_CREATE_CQ
	CmdOpDestroyCQ                    CmdOp = 0x401 // C: MLX5_CMD_OP_DESTROY_CQ
	CmdOpQueryCQ                      CmdOp = 0x402 // C: MLX5_CMD_OP_QUERY_CQ
	CmdOpModifyCQ                     CmdOp = 0x403 // C: MLX5_CMD_OP_MODIFY_CQ
	CmdOpQueryVportState              CmdOp = 0x750 // C: MLX5_CMD_OP_QUERY_VPORT_STATE
	CmdOpModifyVportState             CmdOp = 0x751 // C: MLX5_CMD_OP_MODIFY_VPORT_STATE
	CmdOpQueryNICVportContext         CmdOp = 0x754 // C: MLX5_CMD_OP_QUERY_NIC_VPORT_CONTEXT
	CmdOpModifyNICVportContext        CmdOp = 0x755 // C: MLX5_CMD_OP_MODIFY_NIC_VPORT_CONTEXT
	CmdOpQueryVportCounter            CmdOp = 0x770 // C: MLX5_CMD_OP_QUERY_VPORT_COUNTER
	CmdOpAllocQCounter                CmdOp = 0x771 // C: MLX5_CMD_OP_ALLOC_Q_COUNTER
	CmdOpDeallocQCounter              CmdOp = 0x772 // C: MLX5_CMD_OP_DEALLOC_Q_COUNTER
	CmdOpQueryQCounter                CmdOp = 0x773 // C: MLX5_CMD_OP_QUERY_Q_COUNTER
	CmdOpAllocPD                      CmdOp = 0x800 // C: MLX5_CMD_OP_ALLOC_PD
	CmdOpDeallocPD                    CmdOp = 0x801 // C: MLX5_CMD_OP_DEALLOC_PD
	CmdOpAllocUAR                     CmdOp = 0x802 // C: MLX5_CMD_OP_ALLOC_UAR
	CmdOpDeallocUAR                   CmdOp = 0x803 // C: MLX5_CMD_OP_DEALLOC_UAR
	CmdOpAccessReg                    CmdOp = 0x805 // C: MLX5_CMD_OP_ACCESS_REG
	CmdOpAllocTransportDomain         CmdOp = 0x816 // C: MLX5_CMD_OP_ALLOC_TRANSPORT_DOMAIN
	CmdOpDeallocTransportDomain       CmdOp = 0x817 // C: MLX5_CMD_OP_DEALLOC_TRANSPORT_DOMAIN
	CmdOpNop                          CmdOp = 0x80d // C: MLX5_CMD_OP_NOP
	CmdOpCreateTIR                    CmdOp = 0x900 // C: MLX5_CMD_OP_CREATE_TIR
	CmdOpModifyTIR                    CmdOp = 0x901 // C: MLX5_CMD_OP_MODIFY_TIR
	CmdOpDestroyTIR                   CmdOp = 0x902 // C: MLX5_CMD_OP_DESTROY_TIR
	CmdOpQueryTIR                     CmdOp = 0x903 // C: MLX5_CMD_OP_QUERY_TIR
	CmdOpCreateSQ                     CmdOp = 0x904 // C: MLX5_CMD_OP_CREATE_SQ
	CmdOpModifySQ                     CmdOp = 0x905 // C: MLX5_CMD_OP_MODIFY_SQ
	CmdOpDestroySQ                    CmdOp = 0x906 // C: MLX5_CMD_OP_DESTROY_SQ
	CmdOpQuerySQ                      CmdOp = 0x907 // C: MLX5_CMD_OP_QUERY_SQ
	CmdOpCreateRQ                     CmdOp = 0x908 // C: MLX5_CMD_OP_CREATE_RQ
	CmdOpModifyRQ                     CmdOp = 0x909 // C: MLX5_CMD_OP_MODIFY_RQ
	CmdOpDestroyRQ                    CmdOp = 0x90a // C: MLX5_CMD_OP_DESTROY_RQ
	CmdOpQueryRQ                      CmdOp = 0x90b // C: MLX5_CMD_OP_QUERY_RQ
	CmdOpCreateRQT                    CmdOp = 0x916 // C: MLX5_CMD_OP_CREATE_RQT
	CmdOpModifyRQT                    CmdOp = 0x917 // C: MLX5_CMD_OP_MODIFY_RQT
	CmdOpDestroyRQT                   CmdOp = 0x918 // C: MLX5_CMD_OP_DESTROY_RQT
	CmdOpQueryRQT                     CmdOp = 0x919 // C: MLX5_CMD_OP_QUERY_RQT
	CmdOpCreateTIS                    CmdOp = 0x912 // C: MLX5_CMD_OP_CREATE_TIS
	CmdOpModifyTIS                    CmdOp = 0x913 // C: MLX5_CMD_OP_MODIFY_TIS
	CmdOpDestroyTIS                   CmdOp = 0x914 // C: MLX5_CMD_OP_DESTROY_TIS
	CmdOpQueryTIS                     CmdOp = 0x915 // C: MLX5_CMD_OP_QUERY_TIS
	CmdOpSetFlowTableRoot             CmdOp = 0x92f // C: MLX5_CMD_OP_SET_FLOW_TABLE_ROOT
	CmdOpCreateFlowTable              CmdOp = 0x930 // C: MLX5_CMD_OP_CREATE_FLOW_TABLE
	CmdOpDestroyFlowTable             CmdOp = 0x931 // C: MLX5_CMD_OP_DESTROY_FLOW_TABLE
	CmdOpQueryFlowTable               CmdOp = 0x932 // C: MLX5_CMD_OP_QUERY_FLOW_TABLE
	CmdOpModifyFlowTable              CmdOp = 0x93c // C: MLX5_CMD_OP_MODIFY_FLOW_TABLE
	CmdOpCreateFlowGroup              CmdOp = 0x933 // C: MLX5_CMD_OP_CREATE_FLOW_GROUP
	CmdOpDestroyFlowGroup             CmdOp = 0x934 // C: MLX5_CMD_OP_DESTROY_FLOW_GROUP
	CmdOpQueryFlowGroup               CmdOp = 0x935 // C: MLX5_CMD_OP_QUERY_FLOW_GROUP
	CmdOpSetFlowTableEntry            CmdOp = 0x936 // C: MLX5_CMD_OP_SET_FLOW_TABLE_ENTRY
	CmdOpQueryFlowTableEntry          CmdOp = 0x937 // C: MLX5_CMD_OP_QUERY_FLOW_TABLE_ENTRY
	CmdOpDeleteFlowTableEntry         CmdOp = 0x938 // C: MLX5_CMD_OP_DELETE_FLOW_TABLE_ENTRY
	CmdOpAllocFlowCounter             CmdOp = 0x939 // C: MLX5_CMD_OP_ALLOC_FLOW_COUNTER
	CmdOpDeallocFlowCounter           CmdOp = 0x93a // C: MLX5_CMD_OP_DEALLOC_FLOW_COUNTER
	CmdOpQueryFlowCounter             CmdOp = 0x93b // C: MLX5_CMD_OP_QUERY_FLOW_COUNTER
	CmdOpAllocPacketReformatContext   CmdOp = 0x93d // C: MLX5_CMD_OP_ALLOC_PACKET_REFORMAT_CONTEXT
	CmdOpDeallocPacketReformatContext CmdOp = 0x93e // C: MLX5_CMD_OP_DEALLOC_PACKET_REFORMAT_CONTEXT
	CmdOpSetPPRateLimit               CmdOp = 0x780 // C: MLX5_CMD_OP_SET_PP_RATE_LIMIT
	CmdOpQueryRateLimit               CmdOp = 0x781 // C: MLX5_CMD_OP_QUERY_RATE_LIMIT
	CmdOpCreateGeneralObject          CmdOp = 0xa00 // C: MLX5_CMD_OP_CREATE_GENERAL_OBJECT
	CmdOpModifyGeneralObject          CmdOp = 0xa01 // C: MLX5_CMD_OP_MODIFY_GENERAL_OBJECT
	CmdOpQueryGeneralObject           CmdOp = 0xa02 // C: MLX5_CMD_OP_QUERY_GENERAL_OBJECT
	CmdOpDestroyGeneralObject         CmdOp = 0xa03 // C: MLX5_CMD_OP_DESTROY_GENERAL_OBJECT
	CmdOpCreateUctx                   CmdOp = 0xa04 // C: MLX5_CMD_OP_CREATE_UCTX
	CmdOpDestroyUctx                  CmdOp = 0xa06 // C: MLX5_CMD_OP_DESTROY_UCTX
	CmdOpCreateUMEM                   CmdOp = 0xa08 // C: MLX5_CMD_OP_CREATE_UMEM
	CmdOpDestroyUMEM                  CmdOp = 0xa0a // C: MLX5_CMD_OP_DESTROY_UMEM
	CmdOpAddVXLANUDPDport             CmdOp = 0x827 // C: MLX5_CMD_OP_ADD_VXLAN_UDP_DPORT
	// QP, SRQ, RMP, XRC and P_Key commands mlx5_ib sends at probe (the model keeps their
	// objects as numbers).
	CmdOpCreateQP                   CmdOp = 0x500 // C: MLX5_CMD_OP_CREATE_QP
	CmdOpDestroyQP                  CmdOp = 0x501 // C: MLX5_CMD_OP_DESTROY_QP
	CmdOpRST2INITQP                 CmdOp = 0x502 // C: MLX5_CMD_OP_RST2INIT_QP
	CmdOpINIT2RTRQP                 CmdOp = 0x503 // C: MLX5_CMD_OP_INIT2RTR_QP
	CmdOpRTR2RTSQP                  CmdOp = 0x504 // C: MLX5_CMD_OP_RTR2RTS_QP
	CmdOpRTS2RTSQP                  CmdOp = 0x505 // C: MLX5_CMD_OP_RTS2RTS_QP
	CmdOpSQERR2RTSQP                CmdOp = 0x506 // C: MLX5_CMD_OP_SQERR2RTS_QP
	CmdOp2ERRQP                     CmdOp = 0x507 // C: MLX5_CMD_OP_2ERR_QP
	CmdOp2RSTQP                     CmdOp = 0x50a // C: MLX5_CMD_OP_2RST_QP
	CmdOpINIT2INITQP                CmdOp = 0x50e // C: MLX5_CMD_OP_INIT2INIT_QP
	CmdOpQueryHCAVportPkey          CmdOp = 0x765 // C: MLX5_CMD_OP_QUERY_HCA_VPORT_PKEY
	CmdOpCreateXRCSRQ               CmdOp = 0x705 // C: MLX5_CMD_OP_CREATE_XRC_SRQ
	CmdOpDestroyXRCSRQ              CmdOp = 0x706 // C: MLX5_CMD_OP_DESTROY_XRC_SRQ
	CmdOpAllocXRCD                  CmdOp = 0x80e // C: MLX5_CMD_OP_ALLOC_XRCD
	CmdOpDeallocXRCD                CmdOp = 0x80f // C: MLX5_CMD_OP_DEALLOC_XRCD
	CmdOpCreateRMP                  CmdOp = 0x90c // C: MLX5_CMD_OP_CREATE_RMP
	CmdOpDestroyRMP                 CmdOp = 0x90e // C: MLX5_CMD_OP_DESTROY_RMP
	CmdOpDeleteVXLANUDPDport        CmdOp = 0x828 // C: MLX5_CMD_OP_DELETE_VXLAN_UDP_DPORT
	CmdOpQueryVnicEnv               CmdOp = 0x76f // C: MLX5_CMD_OP_QUERY_VNIC_ENV
	CmdOpQueryHCAVportContext       CmdOp = 0x762 // C: MLX5_CMD_OP_QUERY_HCA_VPORT_CONTEXT
	CmdOpAllocModifyHeaderContext   CmdOp = 0x940 // C: MLX5_CMD_OP_ALLOC_MODIFY_HEADER_CONTEXT
	CmdOpDeallocModifyHeaderContext CmdOp = 0x941 // C: MLX5_CMD_OP_DEALLOC_MODIFY_HEADER_CONTEXT
	CmdOpCreateSchedulingElement    CmdOp = 0x782 // C: MLX5_CMD_OP_CREATE_SCHEDULING_ELEMENT
	CmdOpSetL2TableEntry            CmdOp = 0x829 // C: MLX5_CMD_OP_SET_L2_TABLE_ENTRY
	CmdOpSetMonitorCounter          CmdOp = 0x774 // C: MLX5_CMD_OP_SET_MONITOR_COUNTER
	CmdOpQueryWolRol                CmdOp = 0x831 // C: MLX5_CMD_OP_QUERY_WOL_ROL
)

// String is the header's name without its prefix.
func (v CmdOp) String() string {
	switch v {
	case CmdOpAddVXLANUDPDport:
		return "ADD_VXLAN_UDP_DPORT"
	case CmdOpDeleteVXLANUDPDport:
		return "DELETE_VXLAN_UDP_DPORT"
	case CmdOpQueryVnicEnv:
		return "QUERY_VNIC_ENV"
	case CmdOpQueryHCAVportContext:
		return "QUERY_HCA_VPORT_CONTEXT"
	case CmdOpAllocModifyHeaderContext:
		return "ALLOC_MODIFY_HEADER_CONTEXT"
	case CmdOpDeallocModifyHeaderContext:
		return "DEALLOC_MODIFY_HEADER_CONTEXT"
	case CmdOpCreateSchedulingElement:
		return "CREATE_SCHEDULING_ELEMENT"
	case CmdOpSetL2TableEntry:
		return "SET_L2_TABLE_ENTRY"
	case CmdOpSetMonitorCounter:
		return "SET_MONITOR_COUNTER"
	case CmdOpQueryWolRol:
		return "QUERY_WOL_ROL"
	case CmdOpQueryHCACap:
		return "QUERY_HCA_CAP"
	case CmdOpQueryAdapter:
		return "QUERY_ADAPTER"
	case CmdOpInitHCA:
		return "INIT_HCA"
	case CmdOpTeardownHCA:
		return "TEARDOWN_HCA"
	case CmdOpEnableHCA:
		return "ENABLE_HCA"
	case CmdOpDisableHCA:
		return "DISABLE_HCA"
	case CmdOpQueryPages:
		return "QUERY_PAGES"
	case CmdOpManagePages:
		return "MANAGE_PAGES"
	case CmdOpSetHCACap:
		return "SET_HCA_CAP"
	case CmdOpQueryISSI:
		return "QUERY_ISSI"
	case CmdOpSetISSI:
		return "SET_ISSI"
	case CmdOpSetDriverVersion:
		return "SET_DRIVER_VERSION"
	case CmdOpCreateMKey:
		return "CREATE_MKEY"
	case CmdOpQueryMKey:
		return "QUERY_MKEY"
	case CmdOpDestroyMKey:
		return "DESTROY_MKEY"
	case CmdOpQuerySpecialContexts:
		return "QUERY_SPECIAL_CONTEXTS"
	case CmdOpCreateEQ:
		return "CREATE_EQ"
	case CmdOpDestroyEQ:
		return "DESTROY_EQ"
	case CmdOpQueryEQ:
		return "QUERY_EQ"
	case CmdOpGenEQE:
		return "GEN_EQE"
	case CmdOpCreateCQ:
		return "CREATE_CQ"
	case CmdOpDestroyCQ:
		return "DESTROY_CQ"
	case CmdOpQueryCQ:
		return "QUERY_CQ"
	case CmdOpModifyCQ:
		return "MODIFY_CQ"
	case CmdOpQueryVportState:
		return "QUERY_VPORT_STATE"
	case CmdOpModifyVportState:
		return "MODIFY_VPORT_STATE"
	case CmdOpQueryNICVportContext:
		return "QUERY_NIC_VPORT_CONTEXT"
	case CmdOpModifyNICVportContext:
		return "MODIFY_NIC_VPORT_CONTEXT"
	case CmdOpQueryVportCounter:
		return "QUERY_VPORT_COUNTER"
	case CmdOpAllocQCounter:
		return "ALLOC_Q_COUNTER"
	case CmdOpDeallocQCounter:
		return "DEALLOC_Q_COUNTER"
	case CmdOpQueryQCounter:
		return "QUERY_Q_COUNTER"
	case CmdOpAllocPD:
		return "ALLOC_PD"
	case CmdOpDeallocPD:
		return "DEALLOC_PD"
	case CmdOpAllocUAR:
		return "ALLOC_UAR"
	case CmdOpDeallocUAR:
		return "DEALLOC_UAR"
	case CmdOpAccessReg:
		return "ACCESS_REG"
	case CmdOpAllocTransportDomain:
		return "ALLOC_TRANSPORT_DOMAIN"
	case CmdOpDeallocTransportDomain:
		return "DEALLOC_TRANSPORT_DOMAIN"
	case CmdOpNop:
		return "NOP"
	case CmdOpCreateTIR:
		return "CREATE_TIR"
	case CmdOpModifyTIR:
		return "MODIFY_TIR"
	case CmdOpDestroyTIR:
		return "DESTROY_TIR"
	case CmdOpQueryTIR:
		return "QUERY_TIR"
	case CmdOpCreateSQ:
		return "CREATE_SQ"
	case CmdOpModifySQ:
		return "MODIFY_SQ"
	case CmdOpDestroySQ:
		return "DESTROY_SQ"
	case CmdOpQuerySQ:
		return "QUERY_SQ"
	case CmdOpCreateRQ:
		return "CREATE_RQ"
	case CmdOpModifyRQ:
		return "MODIFY_RQ"
	case CmdOpDestroyRQ:
		return "DESTROY_RQ"
	case CmdOpQueryRQ:
		return "QUERY_RQ"
	case CmdOpCreateRQT:
		return "CREATE_RQT"
	case CmdOpModifyRQT:
		return "MODIFY_RQT"
	case CmdOpDestroyRQT:
		return "DESTROY_RQT"
	case CmdOpQueryRQT:
		return "QUERY_RQT"
	case CmdOpCreateTIS:
		return "CREATE_TIS"
	case CmdOpModifyTIS:
		return "MODIFY_TIS"
	case CmdOpDestroyTIS:
		return "DESTROY_TIS"
	case CmdOpQueryTIS:
		return "QUERY_TIS"
	case CmdOpSetFlowTableRoot:
		return "SET_FLOW_TABLE_ROOT"
	case CmdOpCreateFlowTable:
		return "CREATE_FLOW_TABLE"
	case CmdOpDestroyFlowTable:
		return "DESTROY_FLOW_TABLE"
	case CmdOpQueryFlowTable:
		return "QUERY_FLOW_TABLE"
	case CmdOpModifyFlowTable:
		return "MODIFY_FLOW_TABLE"
	case CmdOpCreateFlowGroup:
		return "CREATE_FLOW_GROUP"
	case CmdOpDestroyFlowGroup:
		return "DESTROY_FLOW_GROUP"
	case CmdOpQueryFlowGroup:
		return "QUERY_FLOW_GROUP"
	case CmdOpSetFlowTableEntry:
		return "SET_FLOW_TABLE_ENTRY"
	case CmdOpQueryFlowTableEntry:
		return "QUERY_FLOW_TABLE_ENTRY"
	case CmdOpDeleteFlowTableEntry:
		return "DELETE_FLOW_TABLE_ENTRY"
	case CmdOpAllocFlowCounter:
		return "ALLOC_FLOW_COUNTER"
	case CmdOpDeallocFlowCounter:
		return "DEALLOC_FLOW_COUNTER"
	case CmdOpQueryFlowCounter:
		return "QUERY_FLOW_COUNTER"
	case CmdOpAllocPacketReformatContext:
		return "ALLOC_PACKET_REFORMAT_CONTEXT"
	case CmdOpDeallocPacketReformatContext:
		return "DEALLOC_PACKET_REFORMAT_CONTEXT"
	case CmdOpSetPPRateLimit:
		return "SET_PP_RATE_LIMIT"
	case CmdOpQueryRateLimit:
		return "QUERY_RATE_LIMIT"
	case CmdOpCreateGeneralObject:
		return "CREATE_GENERAL_OBJECT"
	case CmdOpModifyGeneralObject:
		return "MODIFY_GENERAL_OBJECT"
	case CmdOpQueryGeneralObject:
		return "QUERY_GENERAL_OBJECT"
	case CmdOpDestroyGeneralObject:
		return "DESTROY_GENERAL_OBJECT"
	case CmdOpCreateQP:
		return "CREATE_QP"
	case CmdOpDestroyQP:
		return "DESTROY_QP"
	case CmdOpRST2INITQP:
		return "RST2INIT_QP"
	case CmdOpINIT2RTRQP:
		return "INIT2RTR_QP"
	case CmdOpRTR2RTSQP:
		return "RTR2RTS_QP"
	case CmdOpRTS2RTSQP:
		return "RTS2RTS_QP"
	case CmdOpSQERR2RTSQP:
		return "SQERR2RTS_QP"
	case CmdOp2ERRQP:
		return "2ERR_QP"
	case CmdOp2RSTQP:
		return "2RST_QP"
	case CmdOpINIT2INITQP:
		return "INIT2INIT_QP"
	case CmdOpQueryHCAVportPkey:
		return "QUERY_HCA_VPORT_PKEY"
	case CmdOpCreateXRCSRQ:
		return "CREATE_XRC_SRQ"
	case CmdOpDestroyXRCSRQ:
		return "DESTROY_XRC_SRQ"
	case CmdOpAllocXRCD:
		return "ALLOC_XRCD"
	case CmdOpDeallocXRCD:
		return "DEALLOC_XRCD"
	case CmdOpCreateRMP:
		return "CREATE_RMP"
	case CmdOpDestroyRMP:
		return "DESTROY_RMP"
	case CmdOpCreateUctx:
		return "CREATE_UCTX"
	case CmdOpDestroyUctx:
		return "DESTROY_UCTX"
	case CmdOpCreateUMEM:
		return "CREATE_UMEM"
	case CmdOpDestroyUMEM:
		return "DESTROY_UMEM"
	}
	return fmt.Sprintf("CmdOp(%#x)", uint16(v))
}

// Status is a command completion status: the first byte of every command output (device.h
// MLX5_CMD_STAT_*).
type Status uint8

// Status values.
const (
	StatusOK                 Status = 0x0  // C: MLX5_CMD_STAT_OK
	StatusIntErr             Status = 0x1  // C: MLX5_CMD_STAT_INT_ERR
	StatusBadOpErr           Status = 0x2  // C: MLX5_CMD_STAT_BAD_OP_ERR
	StatusBadParamErr        Status = 0x3  // C: MLX5_CMD_STAT_BAD_PARAM_ERR
	StatusBadSysStateErr     Status = 0x4  // C: MLX5_CMD_STAT_BAD_SYS_STATE_ERR
	StatusBadResErr          Status = 0x5  // C: MLX5_CMD_STAT_BAD_RES_ERR
	StatusResBusy            Status = 0x6  // C: MLX5_CMD_STAT_RES_BUSY
	StatusLimErr             Status = 0x8  // C: MLX5_CMD_STAT_LIM_ERR
	StatusBadResStateErr     Status = 0x9  // C: MLX5_CMD_STAT_BAD_RES_STATE_ERR
	StatusIxErr              Status = 0xa  // C: MLX5_CMD_STAT_IX_ERR
	StatusNoResErr           Status = 0xf  // C: MLX5_CMD_STAT_NO_RES_ERR
	StatusBadInpLenErr       Status = 0x50 // C: MLX5_CMD_STAT_BAD_INP_LEN_ERR
	StatusBadOutpLenErr      Status = 0x51 // C: MLX5_CMD_STAT_BAD_OUTP_LEN_ERR
	StatusBadQPStateErr      Status = 0x10 // C: MLX5_CMD_STAT_BAD_QP_STATE_ERR
	StatusBadPktErr          Status = 0x30 // C: MLX5_CMD_STAT_BAD_PKT_ERR
	StatusBadSizeOutsCqesErr Status = 0x40 // C: MLX5_CMD_STAT_BAD_SIZE_OUTS_CQES_ERR
)

// String is the header's name without its prefix.
func (v Status) String() string {
	switch v {
	case StatusOK:
		return "OK"
	case StatusIntErr:
		return "INT_ERR"
	case StatusBadOpErr:
		return "BAD_OP_ERR"
	case StatusBadParamErr:
		return "BAD_PARAM_ERR"
	case StatusBadSysStateErr:
		return "BAD_SYS_STATE_ERR"
	case StatusBadResErr:
		return "BAD_RES_ERR"
	case StatusResBusy:
		return "RES_BUSY"
	case StatusLimErr:
		return "LIM_ERR"
	case StatusBadResStateErr:
		return "BAD_RES_STATE_ERR"
	case StatusIxErr:
		return "IX_ERR"
	case StatusNoResErr:
		return "NO_RES_ERR"
	case StatusBadInpLenErr:
		return "BAD_INP_LEN_ERR"
	case StatusBadOutpLenErr:
		return "BAD_OUTP_LEN_ERR"
	case StatusBadQPStateErr:
		return "BAD_QP_STATE_ERR"
	case StatusBadPktErr:
		return "BAD_PKT_ERR"
	case StatusBadSizeOutsCqesErr:
		return "BAD_SIZE_OUTS_CQES_ERR"
	}
	return fmt.Sprintf("Status(%#x)", uint8(v))
}

// EventType is the event_type of an EQE (device.h MLX5_EVENT_TYPE_*).
type EventType uint8

// EventType values.
const (
	EventTypeComp            EventType = 0x0  // C: MLX5_EVENT_TYPE_COMP
	EventTypePathMig         EventType = 0x1  // C: MLX5_EVENT_TYPE_PATH_MIG
	EventTypeCommEst         EventType = 0x2  // C: MLX5_EVENT_TYPE_COMM_EST
	EventTypeSQDrained       EventType = 0x3  // C: MLX5_EVENT_TYPE_SQ_DRAINED
	EventTypeSRQLastWQE      EventType = 0x13 // C: MLX5_EVENT_TYPE_SRQ_LAST_WQE
	EventTypeSRQRQLimit      EventType = 0x14 // C: MLX5_EVENT_TYPE_SRQ_RQ_LIMIT
	EventTypeCQError         EventType = 0x4  // C: MLX5_EVENT_TYPE_CQ_ERROR
	EventTypeWQCatasError    EventType = 0x5  // C: MLX5_EVENT_TYPE_WQ_CATAS_ERROR
	EventTypePathMigFailed   EventType = 0x7  // C: MLX5_EVENT_TYPE_PATH_MIG_FAILED
	EventTypeWQInvalReqError EventType = 0x10 // C: MLX5_EVENT_TYPE_WQ_INVAL_REQ_ERROR
	EventTypeWQAccessError   EventType = 0x11 // C: MLX5_EVENT_TYPE_WQ_ACCESS_ERROR
	EventTypeSRQCatasError   EventType = 0x12 // C: MLX5_EVENT_TYPE_SRQ_CATAS_ERROR
	EventTypeInternalError   EventType = 0x8  // C: MLX5_EVENT_TYPE_INTERNAL_ERROR
	EventTypePortChange      EventType = 0x9  // C: MLX5_EVENT_TYPE_PORT_CHANGE
	EventTypeGpioEvent       EventType = 0x15 // C: MLX5_EVENT_TYPE_GPIO_EVENT
	EventTypePortModuleEvent EventType = 0x16 // C: MLX5_EVENT_TYPE_PORT_MODULE_EVENT
	EventTypeTempWarnEvent   EventType = 0x17 // C: MLX5_EVENT_TYPE_TEMP_WARN_EVENT
	EventTypeRemoteConfig    EventType = 0x19 // C: MLX5_EVENT_TYPE_REMOTE_CONFIG
	EventTypeGeneralEvent    EventType = 0x22 // C: MLX5_EVENT_TYPE_GENERAL_EVENT
	EventTypeDbBfCongestion  EventType = 0x1a // C: MLX5_EVENT_TYPE_DB_BF_CONGESTION
	EventTypeStallEvent      EventType = 0x1b // C: MLX5_EVENT_TYPE_STALL_EVENT
	EventTypeCmd             EventType = 0xa  // C: MLX5_EVENT_TYPE_CMD
	EventTypePageRequest     EventType = 0xb  // C: MLX5_EVENT_TYPE_PAGE_REQUEST
	EventTypePageFault       EventType = 0xc  // C: MLX5_EVENT_TYPE_PAGE_FAULT
	EventTypeNICVportChange  EventType = 0xd  // C: MLX5_EVENT_TYPE_NIC_VPORT_CHANGE
)

// String is the header's name without its prefix.
func (v EventType) String() string {
	switch v {
	case EventTypeComp:
		return "COMP"
	case EventTypePathMig:
		return "PATH_MIG"
	case EventTypeCommEst:
		return "COMM_EST"
	case EventTypeSQDrained:
		return "SQ_DRAINED"
	case EventTypeSRQLastWQE:
		return "SRQ_LAST_WQE"
	case EventTypeSRQRQLimit:
		return "SRQ_RQ_LIMIT"
	case EventTypeCQError:
		return "CQ_ERROR"
	case EventTypeWQCatasError:
		return "WQ_CATAS_ERROR"
	case EventTypePathMigFailed:
		return "PATH_MIG_FAILED"
	case EventTypeWQInvalReqError:
		return "WQ_INVAL_REQ_ERROR"
	case EventTypeWQAccessError:
		return "WQ_ACCESS_ERROR"
	case EventTypeSRQCatasError:
		return "SRQ_CATAS_ERROR"
	case EventTypeInternalError:
		return "INTERNAL_ERROR"
	case EventTypePortChange:
		return "PORT_CHANGE"
	case EventTypeGpioEvent:
		return "GPIO_EVENT"
	case EventTypePortModuleEvent:
		return "PORT_MODULE_EVENT"
	case EventTypeTempWarnEvent:
		return "TEMP_WARN_EVENT"
	case EventTypeRemoteConfig:
		return "REMOTE_CONFIG"
	case EventTypeGeneralEvent:
		return "GENERAL_EVENT"
	case EventTypeDbBfCongestion:
		return "DB_BF_CONGESTION"
	case EventTypeStallEvent:
		return "STALL_EVENT"
	case EventTypeCmd:
		return "CMD"
	case EventTypePageRequest:
		return "PAGE_REQUEST"
	case EventTypePageFault:
		return "PAGE_FAULT"
	case EventTypeNICVportChange:
		return "NIC_VPORT_CHANGE"
	}
	return fmt.Sprintf("EventType(%#x)", uint8(v))
}

// CapType is a capability page: QUERY_HCA_CAP and SET_HCA_CAP put it in op_mod bits 15:1 (device.h
// enum mlx5_cap_type).
type CapType uint16

// CapType values.
const (
	CapTypeGeneral          CapType = 0x0  // C: MLX5_CAP_GENERAL
	CapTypeEthernetOffloads CapType = 0x1  // C: MLX5_CAP_ETHERNET_OFFLOADS
	CapTypeAtomic           CapType = 0x3  // C: MLX5_CAP_ATOMIC
	CapTypeFlowTable        CapType = 0x7  // C: MLX5_CAP_FLOW_TABLE
	CapTypeQoS              CapType = 0xc  // C: MLX5_CAP_QOS
	CapTypeDevMem           CapType = 0xf  // C: MLX5_CAP_DEV_MEM
	CapTypeGeneral2         CapType = 0x20 // C: MLX5_CAP_GENERAL_2
)

// String is the header's name without its prefix.
func (v CapType) String() string {
	switch v {
	case CapTypeGeneral:
		return "GENERAL"
	case CapTypeEthernetOffloads:
		return "ETHERNET_OFFLOADS"
	case CapTypeAtomic:
		return "ATOMIC"
	case CapTypeFlowTable:
		return "FLOW_TABLE"
	case CapTypeQoS:
		return "QOS"
	case CapTypeDevMem:
		return "DEV_MEM"
	case CapTypeParseGraphNode:
		return "PARSE_GRAPH_NODE"
	case CapTypeGeneral2:
		return "GENERAL_2"
	}
	return fmt.Sprintf("CapType(%#x)", uint16(v))
}

// Values of command fields and layout constants.
const (
	// CapOpModMax op_mod bit 0 of QUERY_HCA_CAP: the device maximum.
	CapOpModMax = 0x0 // C: HCA_CAP_OPMOD_GET_MAX
	// CapOpModCur op_mod bit 0 of QUERY_HCA_CAP: the current setting.
	CapOpModCur = 0x1 // C: HCA_CAP_OPMOD_GET_CUR
	// QueryPagesBoot QUERY_PAGES op_mod: pages needed before INIT_HCA.
	QueryPagesBoot = 0x1 // C: MLX5_QUERY_PAGES_IN_OP_MOD_BOOT_PAGES
	// QueryPagesInit QUERY_PAGES op_mod: pages INIT_HCA needs.
	QueryPagesInit = 0x2 // C: MLX5_QUERY_PAGES_IN_OP_MOD_INIT_PAGES
	// AccessRegWrite ACCESS_REG op_mod: write.
	AccessRegWrite = 0x0 // C: MLX5_ACCESS_REGISTER_IN_OP_MOD_WRITE
	// AccessRegRead ACCESS_REG op_mod: read.
	AccessRegRead = 0x1 // C: MLX5_ACCESS_REGISTER_IN_OP_MOD_READ
	// TeardownGraceful TEARDOWN_HCA profile: graceful.
	TeardownGraceful = 0x0 // C: MLX5_TEARDOWN_HCA_IN_PROFILE_GRACEFUL_CLOSE
	// TeardownForce TEARDOWN_HCA profile: force.
	TeardownForce = 0x1 // C: MLX5_TEARDOWN_HCA_IN_PROFILE_FORCE_CLOSE
	// TeardownPrepareFast TEARDOWN_HCA profile: prepare fast teardown.
	TeardownPrepareFast = 0x2 // C: MLX5_TEARDOWN_HCA_IN_PROFILE_PREPARE_FAST_TEARDOWN
	// CmdQueueEntryTypePCIe the type byte of a command-queue entry.
	CmdQueueEntryTypePCIe = 0x7 // C: MLX5_CMD_QUEUE_ENTRY_TYPE_PCIE_CMD_IF_TRANSPORT
	// CmdDataBlockSize data bytes in one command mailbox block.
	CmdDataBlockSize = 0x200 // C: MLX5_CMD_DATA_BLOCK_SIZE
	// MaxCommands the most command-queue entries a queue has.
	MaxCommands = 0x20 // C: MLX5_MAX_COMMANDS
	// AdapterPageShift log2 of the device page (MANAGE_PAGES, UAR pages).
	AdapterPageShift = 0xc // C: MLX5_ADAPTER_PAGE_SHIFT
	// BFRegsPerUAR blueFlame registers in one UAR page.
	BFRegsPerUAR = 0x4 // C: MLX5_BFREGS_PER_UAR
	// PortTypeEth cmd_hca_cap.port_type of an Ethernet port.
	PortTypeEth = 0x1 // C: MLX5_CAP_PORT_TYPE_ETH
	// WQTypeLinkedList wq.wq_type: linked list.
	WQTypeLinkedList = 0x0 // C: MLX5_WQ_TYPE_LINKED_LIST
	// WQTypeCyclic wq.wq_type: cyclic.
	WQTypeCyclic = 0x1 // C: MLX5_WQ_TYPE_CYCLIC
	// WQTypeLinkedListStriding wq.wq_type: linked-list striding RQ.
	WQTypeLinkedListStriding = 0x2 // C: MLX5_WQ_TYPE_LINKED_LIST_STRIDING_RQ
	// WQTypeCyclicStriding wq.wq_type: cyclic striding RQ (multi-packet WQE).
	WQTypeCyclicStriding = 0x3 // C: MLX5_WQ_TYPE_CYCLIC_STRIDING_RQ
	// WQEndPadNone wq.end_padding_mode: none.
	WQEndPadNone = 0x0 // C: MLX5_WQ_END_PAD_MODE_NONE
	// WQEndPadAlign wq.end_padding_mode: pad to the end of a 64-byte line.
	WQEndPadAlign = 0x1 // C: MLX5_WQ_END_PAD_MODE_ALIGN
	// RQStateRST rqc.state: reset.
	RQStateRST = 0x0 // C: MLX5_RQC_STATE_RST
	// RQStateRDY rqc.state: ready.
	RQStateRDY = 0x1 // C: MLX5_RQC_STATE_RDY
	// RQStateERR rqc.state: error.
	RQStateERR = 0x3 // C: MLX5_RQC_STATE_ERR
	// SQStateRST sqc.state: reset.
	SQStateRST = 0x0 // C: MLX5_SQC_STATE_RST
	// SQStateRDY sqc.state: ready.
	SQStateRDY = 0x1 // C: MLX5_SQC_STATE_RDY
	// SQStateERR sqc.state: error.
	SQStateERR = 0x3 // C: MLX5_SQC_STATE_ERR
	// RQMemInline rqc.mem_rq_type: the RQ has its own WQ.
	RQMemInline = 0x0 // C: MLX5_RQC_MEM_RQ_TYPE_MEMORY_RQ_INLINE
	// CQPeriodFromEQE cqc.cq_period_mode: moderation period starts at the EQE.
	CQPeriodFromEQE = 0x0 // C: MLX5_CQ_PERIOD_MODE_START_FROM_EQE
	// CQPeriodFromCQE cqc.cq_period_mode: moderation period starts at the CQE.
	CQPeriodFromCQE = 0x1 // C: MLX5_CQ_PERIOD_MODE_START_FROM_CQE
	// CQECompLayoutBasic cqc.cqe_compression_layout: the legacy layout.
	CQECompLayoutBasic = 0x0 // C: MLX5_CQE_COMPRESS_LAYOUT_BASIC
	// CQECompLayoutEnhanced cqc.cqe_compression_layout: the enhanced layout.
	CQECompLayoutEnhanced = 0x1 // C: MLX5_CQE_COMPRESS_LAYOUT_ENHANCED
	// MiniCQEFormatCsum cqc.mini_cqe_res_format: checksum.
	MiniCQEFormatCsum = 0x1 // C: MLX5_CQE_FORMAT_CSUM
	// MiniCQEFormatCsumStrIdx cqc.mini_cqe_res_format: checksum and stride index.
	MiniCQEFormatCsumStrIdx = 0x3 // C: MLX5_CQE_FORMAT_CSUM_STRIDX
	// MiniCQEArraySize mini-CQEs in one compressed-CQE array.
	MiniCQEArraySize = 0x8 // C: MLX5_MINI_CQE_ARRAY_SIZE
	// TIRDispDirect tirc.disp_type: one RQ.
	TIRDispDirect = 0x0 // C: MLX5_TIRC_DISP_TYPE_DIRECT
	// TIRDispIndirect tirc.disp_type: RSS over an RQT.
	TIRDispIndirect = 0x1 // C: MLX5_TIRC_DISP_TYPE_INDIRECT
	// RXHashFnNone tirc.rx_hash_fn: none.
	RXHashFnNone = 0x0 // C: MLX5_RX_HASH_FN_NONE
	// RXHashFnInvertedXor8 tirc.rx_hash_fn: inverted XOR8.
	RXHashFnInvertedXor8 = 0x1 // C: MLX5_RX_HASH_FN_INVERTED_XOR8
	// RXHashFnToeplitz tirc.rx_hash_fn: Toeplitz.
	RXHashFnToeplitz = 0x2 // C: MLX5_RX_HASH_FN_TOEPLITZ
	// TIRSelfLBUnicast tirc.self_lb_block: block unicast loopback.
	TIRSelfLBUnicast = 0x1 // C: MLX5_TIRC_SELF_LB_BLOCK_BLOCK_UNICAST
	// TIRSelfLBMulticast tirc.self_lb_block: block multicast loopback.
	TIRSelfLBMulticast = 0x2 // C: MLX5_TIRC_SELF_LB_BLOCK_BLOCK_MULTICAST
	// L3ProtIPv4 rx_hash_field_select.l3_prot_type: IPv4.
	L3ProtIPv4 = 0x0 // C: MLX5_L3_PROT_TYPE_IPV4
	// L3ProtIPv6 rx_hash_field_select.l3_prot_type: IPv6.
	L3ProtIPv6 = 0x1 // C: MLX5_L3_PROT_TYPE_IPV6
	// L4ProtTCP rx_hash_field_select.l4_prot_type: TCP.
	L4ProtTCP = 0x0 // C: MLX5_L4_PROT_TYPE_TCP
	// L4ProtUDP rx_hash_field_select.l4_prot_type: UDP.
	L4ProtUDP = 0x1 // C: MLX5_L4_PROT_TYPE_UDP
	// HashFieldSrcIP rx_hash_field_select.selected_fields: source IP.
	HashFieldSrcIP = 0x1 // C: MLX5_HASH_FIELD_SEL_SRC_IP
	// HashFieldDstIP rx_hash_field_select.selected_fields: destination IP.
	HashFieldDstIP = 0x2 // C: MLX5_HASH_FIELD_SEL_DST_IP
	// HashFieldL4SPort rx_hash_field_select.selected_fields: L4 source port.
	HashFieldL4SPort = 0x4 // C: MLX5_HASH_FIELD_SEL_L4_SPORT
	// HashFieldL4DPort rx_hash_field_select.selected_fields: L4 destination port.
	HashFieldL4DPort = 0x8 // C: MLX5_HASH_FIELD_SEL_L4_DPORT
	// HashFieldIPsecSPI rx_hash_field_select.selected_fields: IPsec SPI.
	HashFieldIPsecSPI = 0x10 // C: MLX5_HASH_FIELD_SEL_IPSEC_SPI
	// MKeyAccessPA mkc access mode: physical addresses.
	MKeyAccessPA = 0x0 // C: MLX5_MKC_ACCESS_MODE_PA
	// MKeyAccessMTT mkc access mode: a translation table.
	MKeyAccessMTT = 0x1 // C: MLX5_MKC_ACCESS_MODE_MTT
	// MKeyAccessKLMs mkc access mode: KLM list.
	MKeyAccessKLMs = 0x2 // C: MLX5_MKC_ACCESS_MODE_KLMS
	// MKeyAccessKSM mkc access mode: KSM list.
	MKeyAccessKSM = 0x3 // C: MLX5_MKC_ACCESS_MODE_KSM
	// FlowTableNICRX table_type: NIC receive.
	FlowTableNICRX = 0x0 // C: MLX5_FLOW_TABLE_TYPE_NIC_RX
	// FlowTableNICTX table_type: NIC transmit.
	FlowTableNICTX = 0x1 // C: MLX5_FLOW_TABLE_TYPE_NIC_TX
	// FlowTableMissDefault flow_table_context.table_miss_action: the default (drop on the root NIC RX table).
	FlowTableMissDefault = 0x0 // C: MLX5_FLOW_TABLE_MISS_ACTION_DEF
	// FlowTableMissFwd flow_table_context.table_miss_action: go to table_miss_id.
	FlowTableMissFwd = 0x1 // C: MLX5_FLOW_TABLE_MISS_ACTION_FWD
	// FlowActionAllow flow_context.action bit: allow.
	FlowActionAllow = 0x1 // C: MLX5_FLOW_CONTEXT_ACTION_ALLOW
	// FlowActionDrop flow_context.action bit: drop.
	FlowActionDrop = 0x2 // C: MLX5_FLOW_CONTEXT_ACTION_DROP
	// FlowActionFwdDest flow_context.action bit: forward to the destination list.
	FlowActionFwdDest = 0x4 // C: MLX5_FLOW_CONTEXT_ACTION_FWD_DEST
	// FlowActionCount flow_context.action bit: count.
	FlowActionCount = 0x8 // C: MLX5_FLOW_CONTEXT_ACTION_COUNT
	// FlowActionPacketReformat flow_context.action bit: packet reformat.
	FlowActionPacketReformat = 0x10 // C: MLX5_FLOW_CONTEXT_ACTION_PACKET_REFORMAT
	// FlowActionDecap flow_context.action bit: decapsulate.
	FlowActionDecap = 0x20 // C: MLX5_FLOW_CONTEXT_ACTION_DECAP
	// FlowActionModHdr flow_context.action bit: modify header.
	FlowActionModHdr = 0x40 // C: MLX5_FLOW_CONTEXT_ACTION_MOD_HDR
	// FlowActionVLANPop flow_context.action bit: pop a VLAN tag.
	FlowActionVLANPop = 0x80 // C: MLX5_FLOW_CONTEXT_ACTION_VLAN_POP
	// FlowActionVLANPush flow_context.action bit: push a VLAN tag.
	FlowActionVLANPush = 0x100 // C: MLX5_FLOW_CONTEXT_ACTION_VLAN_PUSH
	// FlowDestVport dest_format_struct.destination_type: a vport.
	FlowDestVport = 0x0 // C: MLX5_IFC_FLOW_DESTINATION_TYPE_VPORT
	// FlowDestFlowTable dest_format_struct.destination_type: another flow table.
	FlowDestFlowTable = 0x1 // C: MLX5_IFC_FLOW_DESTINATION_TYPE_FLOW_TABLE
	// FlowDestTIR dest_format_struct.destination_type: a TIR.
	FlowDestTIR = 0x2 // C: MLX5_IFC_FLOW_DESTINATION_TYPE_TIR
	// FlowDestUplink dest_format_struct.destination_type: the uplink.
	FlowDestUplink = 0x8 // C: MLX5_IFC_FLOW_DESTINATION_TYPE_UPLINK
	// MatchOuterHeaders match_criteria_enable bit: outer headers.
	MatchOuterHeaders = 0x1 // C: MLX5_MATCH_OUTER_HEADERS
	// MatchMiscParameters match_criteria_enable bit: misc parameters.
	MatchMiscParameters = 0x2 // C: MLX5_MATCH_MISC_PARAMETERS
	// MatchInnerHeaders match_criteria_enable bit: inner headers.
	MatchInnerHeaders = 0x4 // C: MLX5_MATCH_INNER_HEADERS
	// ReformatL2ToVXLAN packet reformat type: encapsulate in VXLAN.
	ReformatL2ToVXLAN = 0x0 // C: MLX5_REFORMAT_TYPE_L2_TO_VXLAN
	// ReformatL2ToNVGRE packet reformat type: encapsulate in NVGRE.
	ReformatL2ToNVGRE = 0x1 // C: MLX5_REFORMAT_TYPE_L2_TO_NVGRE
	// ReformatL2ToL2Tunnel packet reformat type: encapsulate in an L2 tunnel.
	ReformatL2ToL2Tunnel = 0x2 // C: MLX5_REFORMAT_TYPE_L2_TO_L2_TUNNEL
	// ReformatL3TunnelToL2 packet reformat type: decapsulate an L3 tunnel.
	ReformatL3TunnelToL2 = 0x3 // C: MLX5_REFORMAT_TYPE_L3_TUNNEL_TO_L2
	// ReformatL2ToL3Tunnel packet reformat type: encapsulate in an L3 tunnel.
	ReformatL2ToL3Tunnel = 0x4 // C: MLX5_REFORMAT_TYPE_L2_TO_L3_TUNNEL
	// InitialSegHealthFWInternalErr health syndrome: firmware internal error.
	InitialSegHealthFWInternalErr = 0x1 // C: MLX5_INITIAL_SEG_HEALTH_SYNDROME_FW_INTERNAL_ERR
	// InitialSegHealthHWFatalErr health syndrome: fatal hardware error.
	InitialSegHealthHWFatalErr = 0x8 // C: MLX5_INITIAL_SEG_HEALTH_SYNDROME_HW_FATAL_ERR
	// InitialSegHealthEQInErr health syndrome: EQ in error.
	InitialSegHealthEQInErr = 0xd // C: MLX5_INITIAL_SEG_HEALTH_SYNDROME_EQ_IN_ERR
	// VportAdminDown vport admin state: down.
	VportAdminDown = 0x0 // C: MLX5_VPORT_ADMIN_STATE_DOWN
	// VportAdminUp vport admin state: up.
	VportAdminUp = 0x1 // C: MLX5_VPORT_ADMIN_STATE_UP
	// InlineModeNone min_wqe_inline_mode: no inline headers required.
	InlineModeNone = 0x0 // C: MLX5_INLINE_MODE_NONE
	// InlineModeL2 min_wqe_inline_mode: the L2 header inline.
	InlineModeL2 = 0x1 // C: MLX5_INLINE_MODE_L2
	// InlineModeIP min_wqe_inline_mode: up to the IP header inline.
	InlineModeIP = 0x2 // C: MLX5_INLINE_MODE_IP
	// InlineModeTCPUDP min_wqe_inline_mode: up to the L4 header inline.
	InlineModeTCPUDP = 0x3 // C: MLX5_INLINE_MODE_TCP_UDP
	// PermLocalRead mkc access bit: local read.
	PermLocalRead = 0x4 // C: MLX5_PERM_LOCAL_READ
	// PermLocalWrite mkc access bit: local write.
	PermLocalWrite = 0x8 // C: MLX5_PERM_LOCAL_WRITE
)
