package uapi

// Go mirrors of the kernel structures. Field order, widths and explicit
// padding reproduce the C layout on every 64-bit Linux target (the headers
// promise identical packing on 32- and 64-bit: no pointers, u64 members
// 8-aligned); layout_test.go checks sizes and offsets against the values the
// C compiler reports for the 6.1 headers.

// IoctlHdr is struct ib_uverbs_ioctl_hdr (rdma_user_ioctl_cmds.h), followed
// in memory by NumAttrs Attr records.
type IoctlHdr struct {
	Length    uint16
	ObjectID  uint16
	MethodID  uint16
	NumAttrs  uint16
	Reserved1 uint64
	DriverID  uint32
	Reserved2 uint32
}

// Attr is struct ib_uverbs_attr. AttrData holds enum_data.elem_id in its low
// byte for ENUM_IN attributes and must otherwise be zero. Data is either the
// value itself (inline inputs of at most 8 bytes, object handles, fds) or a
// user pointer.
type Attr struct {
	AttrID   uint16
	Len      uint16
	Flags    uint16
	AttrData uint16
	Data     uint64
}

// CmdHdr is struct ib_uverbs_cmd_hdr, the prefix of every write() command.
// InWords counts the whole write in 32-bit words, header included; OutWords
// counts the response buffer.
type CmdHdr struct {
	Command  uint32
	InWords  uint16
	OutWords uint16
}

// RespOnly is the request of commands that carry nothing but the response
// pointer (ib_uverbs_query_device, ib_uverbs_alloc_pd,
// ib_uverbs_create_comp_channel).
type RespOnly struct {
	Response uint64
}

// QueryDeviceResp is struct ib_uverbs_query_device_resp.
type QueryDeviceResp struct {
	FWVer                 uint64
	NodeGUID              uint64 // big-endian on the wire
	SysImageGUID          uint64 // big-endian on the wire
	MaxMRSize             uint64
	PageSizeCap           uint64
	VendorID              uint32
	VendorPartID          uint32
	HWVer                 uint32
	MaxQP                 uint32
	MaxQPWR               uint32
	DeviceCapFlags        uint32
	MaxSGE                uint32
	MaxSGERd              uint32
	MaxCQ                 uint32
	MaxCQE                uint32
	MaxMR                 uint32
	MaxPD                 uint32
	MaxQPRdAtom           uint32
	MaxEERdAtom           uint32
	MaxResRdAtom          uint32
	MaxQPInitRdAtom       uint32
	MaxEEInitRdAtom       uint32
	AtomicCap             uint32
	MaxEE                 uint32
	MaxRDD                uint32
	MaxMW                 uint32
	MaxRawIPv6QP          uint32
	MaxRawEthyQP          uint32
	MaxMcastGrp           uint32
	MaxMcastQPAttach      uint32
	MaxTotalMcastQPAttach uint32
	MaxAH                 uint32
	MaxFMR                uint32
	MaxMapPerFMR          uint32
	MaxSRQ                uint32
	MaxSRQWR              uint32
	MaxSRQSGE             uint32
	MaxPKeys              uint16
	LocalCAAckDelay       uint8
	PhysPortCnt           uint8
	Reserved              [4]uint8
}

// QueryPortRespEx is struct ib_uverbs_query_port_resp_ex: the legacy
// ib_uverbs_query_port_resp (40 bytes) plus port_cap_flags2.
type QueryPortRespEx struct {
	PortCapFlags  uint32
	MaxMsgSz      uint32
	BadPKeyCntr   uint32
	QKeyViolCntr  uint32
	GIDTblLen     uint32
	PKeyTblLen    uint16
	LID           uint16
	SMLID         uint16
	State         uint8
	MaxMTU        uint8
	ActiveMTU     uint8
	LMC           uint8
	MaxVLNum      uint8
	SMSL          uint8
	SubnetTimeout uint8
	InitTypeReply uint8
	ActiveWidth   uint8
	ActiveSpeed   uint8
	PhysState     uint8
	LinkLayer     uint8
	Flags         uint8
	Reserved      uint8
	PortCapFlags2 uint16
	Reserved2     [6]uint8
}

// GIDEntry is struct ib_uverbs_gid_entry (ib_user_ioctl_verbs.h).
type GIDEntry struct {
	GID           [16]byte
	GIDIndex      uint32
	PortNum       uint32
	GIDType       uint32
	NetdevIfindex uint32
}

// AllocPDResp is struct ib_uverbs_alloc_pd_resp.
type AllocPDResp struct {
	PDHandle uint32
}

// RegMR is struct ib_uverbs_reg_mr.
type RegMR struct {
	Response    uint64
	Start       uint64
	Length      uint64
	HCAVA       uint64
	PDHandle    uint32
	AccessFlags uint32
}

// RegMRResp is struct ib_uverbs_reg_mr_resp.
type RegMRResp struct {
	MRHandle uint32
	LKey     uint32
	RKey     uint32
}

// CreateCompChannelResp is struct ib_uverbs_create_comp_channel_resp.
type CreateCompChannelResp struct {
	FD uint32
}

// AHAttr is struct ib_uverbs_ah_attr, whose first 24 bytes are struct
// ib_uverbs_global_route.
type AHAttr struct {
	DGID         [16]byte
	FlowLabel    uint32
	SGIDIndex    uint8
	HopLimit     uint8
	TrafficClass uint8
	Reserved0    uint8
	DLID         uint16
	SL           uint8
	SrcPathBits  uint8
	StaticRate   uint8
	IsGlobal     uint8
	PortNum      uint8
	Reserved     uint8
}

// CreateAH is struct ib_uverbs_create_ah.
type CreateAH struct {
	Response   uint64
	UserHandle uint64
	PDHandle   uint32
	Reserved   uint32
	Attr       AHAttr
}

// CreateAHResp is struct ib_uverbs_create_ah_resp.
type CreateAHResp struct {
	AHHandle uint32
}

// QPDest is struct ib_uverbs_qp_dest, the address vector inside modify and
// query QP.
type QPDest struct {
	DGID         [16]byte
	FlowLabel    uint32
	DLID         uint16
	Reserved     uint16
	SGIDIndex    uint8
	HopLimit     uint8
	TrafficClass uint8
	SL           uint8
	SrcPathBits  uint8
	StaticRate   uint8
	IsGlobal     uint8
	PortNum      uint8
}

// ModifyQP is struct ib_uverbs_modify_qp (no response).
type ModifyQP struct {
	Dest             QPDest
	AltDest          QPDest
	QPHandle         uint32
	AttrMask         uint32
	QKey             uint32
	RQPSN            uint32
	SQPSN            uint32
	DestQPNum        uint32
	QPAccessFlags    uint32
	PKeyIndex        uint16
	AltPKeyIndex     uint16
	QPState          uint8
	CurQPState       uint8
	PathMTU          uint8
	PathMigState     uint8
	EnSQDAsyncNotify uint8
	MaxRdAtomic      uint8
	MaxDestRdAtomic  uint8
	MinRNRTimer      uint8
	PortNum          uint8
	Timeout          uint8
	RetryCnt         uint8
	RNRRetry         uint8
	AltPortNum       uint8
	AltTimeout       uint8
	Reserved         [2]uint8
}

// QueryQP is struct ib_uverbs_query_qp.
type QueryQP struct {
	Response uint64
	QPHandle uint32
	AttrMask uint32
}

// QueryQPResp is struct ib_uverbs_query_qp_resp.
type QueryQPResp struct {
	Dest            QPDest
	AltDest         QPDest
	MaxSendWR       uint32
	MaxRecvWR       uint32
	MaxSendSGE      uint32
	MaxRecvSGE      uint32
	MaxInlineData   uint32
	QKey            uint32
	RQPSN           uint32
	SQPSN           uint32
	DestQPNum       uint32
	QPAccessFlags   uint32
	PKeyIndex       uint16
	AltPKeyIndex    uint16
	QPState         uint8
	CurQPState      uint8
	PathMTU         uint8
	PathMigState    uint8
	SQDraining      uint8
	MaxRdAtomic     uint8
	MaxDestRdAtomic uint8
	MinRNRTimer     uint8
	PortNum         uint8
	Timeout         uint8
	RetryCnt        uint8
	RNRRetry        uint8
	AltPortNum      uint8
	AltTimeout      uint8
	SQSigAll        uint8
	Reserved        [5]uint8
}

// PostSend is struct ib_uverbs_post_send without its trailing work requests.
type PostSend struct {
	Response uint64
	QPHandle uint32
	WRCount  uint32
	SGECount uint32
	WQESize  uint32
}

// PostSendResp is struct ib_uverbs_post_send_resp.
type PostSendResp struct {
	BadWR uint32
}

// SizeofUverbsSendWR is sizeof(struct ib_uverbs_send_wr): the smallest
// wqe_size the kernel accepts in POST_SEND, even when wr_count is zero.
const SizeofUverbsSendWR = 56

// ReqNotifyCQ is struct ib_uverbs_req_notify_cq (no response).
type ReqNotifyCQ struct {
	CQHandle      uint32
	SolicitedOnly uint32
}

// QPCap is struct ib_uverbs_qp_cap (ib_user_ioctl_verbs.h).
type QPCap struct {
	MaxSendWR     uint32
	MaxRecvWR     uint32
	MaxSendSGE    uint32
	MaxRecvSGE    uint32
	MaxInlineData uint32
}

// DestroyCQResp is struct ib_uverbs_destroy_cq_resp.
type DestroyCQResp struct {
	CompEventsReported  uint32
	AsyncEventsReported uint32
}

// DestroyQPResp is struct ib_uverbs_destroy_qp_resp.
type DestroyQPResp struct {
	EventsReported uint32
}

// AsyncEventDesc is struct ib_uverbs_async_event_desc, one record read() from
// the async event fd. Element is the user handle of the CQ/QP/SRQ/WQ, or the
// port number for port events.
type AsyncEventDesc struct {
	Element   uint64
	EventType uint32
	Reserved  uint32
}

// CompEventDesc is struct ib_uverbs_comp_event_desc, one record read() from a
// completion channel: the user handle of the CQ that fired.
type CompEventDesc struct {
	CQHandle uint64
}

// WC is struct ib_uverbs_wc, the completion format rxe writes into user CQs.
type WC struct {
	WRID         uint64
	Status       uint32
	Opcode       uint32
	VendorErr    uint32
	ByteLen      uint32
	ImmData      uint32 // big-endian on the wire (ex.imm_data / ex.invalidate_rkey)
	QPNum        uint32
	SrcQP        uint32
	WCFlags      uint32
	PKeyIndex    uint16
	SLID         uint16
	SL           uint8
	DLIDPathBits uint8
	PortNum      uint8
	Reserved     uint8
}

// QPAttr is struct ib_uverbs_qp_attr (ib_user_verbs.h): a full QP attribute
// set with its mask, the form rdma_cm's INIT_QP_ATTR command returns.
type QPAttr struct {
	QPAttrMask       uint32
	QPState          uint32
	CurQPState       uint32
	PathMTU          uint32
	PathMigState     uint32
	QKey             uint32
	RQPSN            uint32
	SQPSN            uint32
	DestQPNum        uint32
	QPAccessFlags    uint32
	AHAttr           AHAttr
	AltAHAttr        AHAttr
	MaxSendWR        uint32
	MaxRecvWR        uint32
	MaxSendSGE       uint32
	MaxRecvSGE       uint32
	MaxInlineData    uint32
	PKeyIndex        uint16
	AltPKeyIndex     uint16
	EnSQDAsyncNotify uint8
	SQDraining       uint8
	MaxRdAtomic      uint8
	MaxDestRdAtomic  uint8
	MinRNRTimer      uint8
	PortNum          uint8
	Timeout          uint8
	RetryCnt         uint8
	RNRRetry         uint8
	AltPortNum       uint8
	AltTimeout       uint8
	Reserved         [5]uint8
}
