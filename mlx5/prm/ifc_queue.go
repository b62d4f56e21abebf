package prm

// Completion, receive and send queues and their work-queue layout. Offsets and widths in bits, as
// gcc lays out include/linux/mlx5/mlx5_ifc.h (Linux 6.1); TestLayout checks every one against the
// installed headers.

// CQC is the completion queue context (mlx5_ifc.h struct mlx5_ifc_cqc_bits).
var CQC = struct {
	Status       Field
	DbrUMEMValid Field
	// DbrUMEMID is the UMEM that holds the doorbell record when DbrUMEMValid is set (dbr_addr
	// is then an offset into it). DPDK drivers/common/mlx5/mlx5_prm.h struct mlx5_ifc_cqc_bits:
	// dbr_umem_id[0x20] at bit 0x20; reserved_at_20 in Linux 6.1.
	DbrUMEMID             Field
	ApuCQ                 Field
	CQESz                 Field
	CC                    Field
	ScqeBreakModerationEn Field
	Oi                    Field
	CQPeriodMode          Field
	CQECompEn             Field
	MiniCQEResFormat      Field
	St                    Field
	CQECompressionLayout  Field
	PageOffset            Field
	LogCQSize             Field
	UARPage               Field
	CQPeriod              Field
	CQMaxCount            Field
	CEQNOrApuElement      Field
	LogPageSize           Field
	LastNotifiedIndex     Field
	LastSolicitIndex      Field
	ConsumerCounter       Field
	ProducerCounter       Field
	DbrAddr               Field
}{
	Status:                ifcField("cqc", "status", 0x0, 4),
	DbrUMEMValid:          ifcField("cqc", "dbr_umem_valid", 0x6, 1),
	DbrUMEMID:             newerIfcField("cqc", "dbr_umem_id", 0x20, 32),
	ApuCQ:                 ifcField("cqc", "apu_cq", 0x7, 1),
	CQESz:                 ifcField("cqc", "cqe_sz", 0x8, 3),
	CC:                    ifcField("cqc", "cc", 0xb, 1),
	ScqeBreakModerationEn: ifcField("cqc", "scqe_break_moderation_en", 0xd, 1),
	Oi:                    ifcField("cqc", "oi", 0xe, 1),
	CQPeriodMode:          ifcField("cqc", "cq_period_mode", 0xf, 2),
	CQECompEn:             ifcField("cqc", "cqe_comp_en", 0x11, 1),
	MiniCQEResFormat:      ifcField("cqc", "mini_cqe_res_format", 0x12, 2),
	St:                    ifcField("cqc", "st", 0x14, 4),
	CQECompressionLayout:  ifcField("cqc", "cqe_compression_layout", 0x1e, 2),
	PageOffset:            ifcField("cqc", "page_offset", 0x54, 6),
	LogCQSize:             ifcField("cqc", "log_cq_size", 0x63, 5),
	UARPage:               ifcField("cqc", "uar_page", 0x68, 24),
	CQPeriod:              ifcField("cqc", "cq_period", 0x84, 12),
	CQMaxCount:            ifcField("cqc", "cq_max_count", 0x90, 16),
	CEQNOrApuElement:      ifcField("cqc", "c_eqn_or_apu_element", 0xa0, 32),
	LogPageSize:           ifcField("cqc", "log_page_size", 0xc3, 5),
	LastNotifiedIndex:     ifcField("cqc", "last_notified_index", 0x108, 24),
	LastSolicitIndex:      ifcField("cqc", "last_solicit_index", 0x128, 24),
	ConsumerCounter:       ifcField("cqc", "consumer_counter", 0x148, 24),
	ProducerCounter:       ifcField("cqc", "producer_counter", 0x168, 24),
	DbrAddr:               ifcField("cqc", "dbr_addr", 0x1c0, 64),
}

// CreateCQIn is CREATE_CQ input (mlx5_ifc.h struct mlx5_ifc_create_cq_in_bits).
var CreateCQIn = struct {
	Opcode      Field
	UID         Field
	OpMod       Field
	CQContext   Field
	CQUMEMValid Field
	// CQUMEMOffset and CQUMEMID place the CQE buffer in a UMEM instead of the PAS list
	// (with CQUMEMValid). DPDK drivers/common/mlx5/mlx5_prm.h struct
	// mlx5_ifc_create_cq_in_bits: cq_umem_offset[0x40] right after cq_context, then
	// cq_umem_id[0x20]; reserved_at_280 in Linux 6.1.
	CQUMEMOffset Field
	CQUMEMID     Field
	PAS          Field
}{
	Opcode:       ifcField("create_cq_in", "opcode", 0x0, 16),
	UID:          ifcField("create_cq_in", "uid", 0x10, 16),
	OpMod:        ifcField("create_cq_in", "op_mod", 0x30, 16),
	CQContext:    ifcField("create_cq_in", "cq_context", 0x80, 512),
	CQUMEMValid:  ifcField("create_cq_in", "cq_umem_valid", 0x2e0, 1),
	CQUMEMOffset: newerIfcField("create_cq_in", "cq_umem_offset", 0x280, 64),
	CQUMEMID:     newerIfcField("create_cq_in", "cq_umem_id", 0x2c0, 32),
	PAS:          ifcField("create_cq_in", "pas[0]", 0x880, 64),
}

// CreateCQOut is CREATE_CQ output (mlx5_ifc.h struct mlx5_ifc_create_cq_out_bits).
var CreateCQOut = struct {
	Status   Field
	Syndrome Field
	CQN      Field
}{
	Status:   ifcField("create_cq_out", "status", 0x0, 8),
	Syndrome: ifcField("create_cq_out", "syndrome", 0x20, 32),
	CQN:      ifcField("create_cq_out", "cqn", 0x48, 24),
}

// DestroyCQIn is DESTROY_CQ input (mlx5_ifc.h struct mlx5_ifc_destroy_cq_in_bits).
var DestroyCQIn = struct {
	Opcode Field
	UID    Field
	OpMod  Field
	CQN    Field
}{
	Opcode: ifcField("destroy_cq_in", "opcode", 0x0, 16),
	UID:    ifcField("destroy_cq_in", "uid", 0x10, 16),
	OpMod:  ifcField("destroy_cq_in", "op_mod", 0x30, 16),
	CQN:    ifcField("destroy_cq_in", "cqn", 0x48, 24),
}

// QueryCQIn is QUERY_CQ input (mlx5_ifc.h struct mlx5_ifc_query_cq_in_bits).
var QueryCQIn = struct {
	Opcode Field
	OpMod  Field
	CQN    Field
}{
	Opcode: ifcField("query_cq_in", "opcode", 0x0, 16),
	OpMod:  ifcField("query_cq_in", "op_mod", 0x30, 16),
	CQN:    ifcField("query_cq_in", "cqn", 0x48, 24),
}

// QueryCQOut is QUERY_CQ output (mlx5_ifc.h struct mlx5_ifc_query_cq_out_bits).
var QueryCQOut = struct {
	Status    Field
	Syndrome  Field
	CQContext Field
	PAS       Field
}{
	Status:    ifcField("query_cq_out", "status", 0x0, 8),
	Syndrome:  ifcField("query_cq_out", "syndrome", 0x20, 32),
	CQContext: ifcField("query_cq_out", "cq_context", 0x80, 512),
	PAS:       ifcField("query_cq_out", "pas[0]", 0x880, 64),
}

// ModifyCQIn is MODIFY_CQ input (mlx5_ifc.h struct mlx5_ifc_modify_cq_in_bits).
var ModifyCQIn = struct {
	Opcode                             Field
	UID                                Field
	OpMod                              Field
	CQN                                Field
	ModifyFieldSelectResizeFieldSelect Field
	CQContext                          Field
	CQUMEMValid                        Field
	PAS                                Field
}{
	Opcode:                             ifcField("modify_cq_in", "opcode", 0x0, 16),
	UID:                                ifcField("modify_cq_in", "uid", 0x10, 16),
	OpMod:                              ifcField("modify_cq_in", "op_mod", 0x30, 16),
	CQN:                                ifcField("modify_cq_in", "cqn", 0x48, 24),
	ModifyFieldSelectResizeFieldSelect: ifcField("modify_cq_in", "modify_field_select_resize_field_select", 0x60, 32),
	CQContext:                          ifcField("modify_cq_in", "cq_context", 0x80, 512),
	CQUMEMValid:                        ifcField("modify_cq_in", "cq_umem_valid", 0x2e0, 1),
	PAS:                                ifcField("modify_cq_in", "pas[0]", 0x880, 64),
}

// WQ is the work queue part of RQ and SQ contexts (cyclic and striding) (mlx5_ifc.h struct
// mlx5_ifc_wq_bits).
var WQ = struct {
	WQType          Field
	WQSignature     Field
	EndPaddingMode  Field
	CdSlave         Field
	HdsSkipFirstSge Field
	Log2HdsBufSize  Field
	PageOffset      Field
	Lwm             Field
	PD              Field
	UARPage         Field
	DbrAddr         Field
	HWCounter       Field
	SWCounter       Field
	LogWQStride     Field
	LogWQPgSz       Field
	LogWQSz         Field
	DbrUMEMValid    Field
	WQUMEMValid     Field
	// DbrUMEMID, WQUMEMID and WQUMEMOffset place the doorbell record and the WQE buffer in
	// UMEMs (with DbrUMEMValid, WQUMEMValid; dbr_addr is then an offset into the doorbell's
	// UMEM). DPDK drivers/common/mlx5/mlx5_prm.h struct mlx5_ifc_wq_bits: dbr_umem_id[0x20],
	// wq_umem_id[0x20], wq_umem_offset[0x40] from bit 0x140; reserved_at_140 in Linux 6.1.
	DbrUMEMID                        Field
	WQUMEMID                         Field
	WQUMEMOffset                     Field
	LogHairpinNumPackets             Field
	LogHairpinDataSz                 Field
	LogWQENumOfStrides               Field
	TwoByteShiftEn                   Field
	LogWQEStrideSize                 Field
	HeadersMKey                      Field
	ShampoEnable                     Field
	LogReservationSize               Field
	LogMaxNumOfPacketsPerReservation Field
	LogHeadersEntrySize              Field
	LogHeadersBufferEntryNum         Field
	PAS                              Field
}{
	WQType:                           ifcField("wq", "wq_type", 0x0, 4),
	WQSignature:                      ifcField("wq", "wq_signature", 0x4, 1),
	EndPaddingMode:                   ifcField("wq", "end_padding_mode", 0x5, 2),
	CdSlave:                          ifcField("wq", "cd_slave", 0x7, 1),
	HdsSkipFirstSge:                  ifcField("wq", "hds_skip_first_sge", 0x20, 1),
	Log2HdsBufSize:                   ifcField("wq", "log2_hds_buf_size", 0x21, 3),
	PageOffset:                       ifcField("wq", "page_offset", 0x2b, 5),
	Lwm:                              ifcField("wq", "lwm", 0x30, 16),
	PD:                               ifcField("wq", "pd", 0x48, 24),
	UARPage:                          ifcField("wq", "uar_page", 0x68, 24),
	DbrAddr:                          ifcField("wq", "dbr_addr", 0x80, 64),
	HWCounter:                        ifcField("wq", "hw_counter", 0xc0, 32),
	SWCounter:                        ifcField("wq", "sw_counter", 0xe0, 32),
	LogWQStride:                      ifcField("wq", "log_wq_stride", 0x10c, 4),
	LogWQPgSz:                        ifcField("wq", "log_wq_pg_sz", 0x113, 5),
	LogWQSz:                          ifcField("wq", "log_wq_sz", 0x11b, 5),
	DbrUMEMValid:                     ifcField("wq", "dbr_umem_valid", 0x120, 1),
	WQUMEMValid:                      ifcField("wq", "wq_umem_valid", 0x121, 1),
	DbrUMEMID:                        newerIfcField("wq", "dbr_umem_id", 0x140, 32),
	WQUMEMID:                         newerIfcField("wq", "wq_umem_id", 0x160, 32),
	WQUMEMOffset:                     newerIfcField("wq", "wq_umem_offset", 0x180, 64),
	LogHairpinNumPackets:             ifcField("wq", "log_hairpin_num_packets", 0x123, 5),
	LogHairpinDataSz:                 ifcField("wq", "log_hairpin_data_sz", 0x12b, 5),
	LogWQENumOfStrides:               ifcField("wq", "log_wqe_num_of_strides", 0x134, 4),
	TwoByteShiftEn:                   ifcField("wq", "two_byte_shift_en", 0x138, 1),
	LogWQEStrideSize:                 ifcField("wq", "log_wqe_stride_size", 0x13d, 3),
	HeadersMKey:                      ifcField("wq", "headers_mkey", 0x1c0, 32),
	ShampoEnable:                     ifcField("wq", "shampo_enable", 0x1e0, 1),
	LogReservationSize:               ifcField("wq", "log_reservation_size", 0x1e5, 3),
	LogMaxNumOfPacketsPerReservation: ifcField("wq", "log_max_num_of_packets_per_reservation", 0x1ed, 3),
	LogHeadersEntrySize:              ifcField("wq", "log_headers_entry_size", 0x1f6, 2),
	LogHeadersBufferEntryNum:         ifcField("wq", "log_headers_buffer_entry_num", 0x1fc, 4),
	PAS:                              ifcField("wq", "pas[0]", 0x600, 64),
}

// RQC is the receive queue context (mlx5_ifc.h struct mlx5_ifc_rqc_bits).
var RQC = struct {
	Rlky                              Field
	DelayDropEn                       Field
	ScatterFcs                        Field
	Vsd                               Field
	MemRQType                         Field
	State                             Field
	FlushInErrorEn                    Field
	Hairpin                           Field
	TSFormat                          Field
	UserIndex                         Field
	CQN                               Field
	CounterSetID                      Field
	Rmpn                              Field
	HairpinPeerSQ                     Field
	HairpinPeerVHCA                   Field
	ShampoNoMatchAlignmentGranularity Field
	ShampoMatchCriteriaType           Field
	ReservationTimeout                Field
	WQ                                Field
}{
	Rlky:                              ifcField("rqc", "rlky", 0x0, 1),
	DelayDropEn:                       ifcField("rqc", "delay_drop_en", 0x1, 1),
	ScatterFcs:                        ifcField("rqc", "scatter_fcs", 0x2, 1),
	Vsd:                               ifcField("rqc", "vsd", 0x3, 1),
	MemRQType:                         ifcField("rqc", "mem_rq_type", 0x4, 4),
	State:                             ifcField("rqc", "state", 0x8, 4),
	FlushInErrorEn:                    ifcField("rqc", "flush_in_error_en", 0xd, 1),
	Hairpin:                           ifcField("rqc", "hairpin", 0xe, 1),
	TSFormat:                          ifcField("rqc", "ts_format", 0x1a, 2),
	UserIndex:                         ifcField("rqc", "user_index", 0x28, 24),
	CQN:                               ifcField("rqc", "cqn", 0x48, 24),
	CounterSetID:                      ifcField("rqc", "counter_set_id", 0x60, 8),
	Rmpn:                              ifcField("rqc", "rmpn", 0x88, 24),
	HairpinPeerSQ:                     ifcField("rqc", "hairpin_peer_sq", 0xa8, 24),
	HairpinPeerVHCA:                   ifcField("rqc", "hairpin_peer_vhca", 0xd0, 16),
	ShampoNoMatchAlignmentGranularity: ifcField("rqc", "shampo_no_match_alignment_granularity", 0x126, 2),
	ShampoMatchCriteriaType:           ifcField("rqc", "shampo_match_criteria_type", 0x12e, 2),
	ReservationTimeout:                ifcField("rqc", "reservation_timeout", 0x130, 16),
	WQ:                                ifcField("rqc", "wq", 0x180, 1536),
}

// CreateRQIn is CREATE_RQ input (mlx5_ifc.h struct mlx5_ifc_create_rq_in_bits).
var CreateRQIn = struct {
	Opcode Field
	UID    Field
	OpMod  Field
	Ctx    Field
}{
	Opcode: ifcField("create_rq_in", "opcode", 0x0, 16),
	UID:    ifcField("create_rq_in", "uid", 0x10, 16),
	OpMod:  ifcField("create_rq_in", "op_mod", 0x30, 16),
	Ctx:    ifcField("create_rq_in", "ctx", 0x100, 1920),
}

// CreateRQOut is CREATE_RQ output (mlx5_ifc.h struct mlx5_ifc_create_rq_out_bits).
var CreateRQOut = struct {
	Status   Field
	Syndrome Field
	RQN      Field
}{
	Status:   ifcField("create_rq_out", "status", 0x0, 8),
	Syndrome: ifcField("create_rq_out", "syndrome", 0x20, 32),
	RQN:      ifcField("create_rq_out", "rqn", 0x48, 24),
}

// ModifyRQIn is MODIFY_RQ input (mlx5_ifc.h struct mlx5_ifc_modify_rq_in_bits).
var ModifyRQIn = struct {
	Opcode        Field
	UID           Field
	OpMod         Field
	RQState       Field
	RQN           Field
	ModifyBitmask Field
	Ctx           Field
}{
	Opcode:        ifcField("modify_rq_in", "opcode", 0x0, 16),
	UID:           ifcField("modify_rq_in", "uid", 0x10, 16),
	OpMod:         ifcField("modify_rq_in", "op_mod", 0x30, 16),
	RQState:       ifcField("modify_rq_in", "rq_state", 0x40, 4),
	RQN:           ifcField("modify_rq_in", "rqn", 0x48, 24),
	ModifyBitmask: ifcField("modify_rq_in", "modify_bitmask", 0x80, 64),
	Ctx:           ifcField("modify_rq_in", "ctx", 0x100, 1920),
}

// DestroyRQIn is DESTROY_RQ input (mlx5_ifc.h struct mlx5_ifc_destroy_rq_in_bits).
var DestroyRQIn = struct {
	Opcode Field
	UID    Field
	OpMod  Field
	RQN    Field
}{
	Opcode: ifcField("destroy_rq_in", "opcode", 0x0, 16),
	UID:    ifcField("destroy_rq_in", "uid", 0x10, 16),
	OpMod:  ifcField("destroy_rq_in", "op_mod", 0x30, 16),
	RQN:    ifcField("destroy_rq_in", "rqn", 0x48, 24),
}

// QueryRQIn is QUERY_RQ input (mlx5_ifc.h struct mlx5_ifc_query_rq_in_bits).
var QueryRQIn = struct {
	Opcode Field
	OpMod  Field
	RQN    Field
}{
	Opcode: ifcField("query_rq_in", "opcode", 0x0, 16),
	OpMod:  ifcField("query_rq_in", "op_mod", 0x30, 16),
	RQN:    ifcField("query_rq_in", "rqn", 0x48, 24),
}

// QueryRQOut is QUERY_RQ output (mlx5_ifc.h struct mlx5_ifc_query_rq_out_bits).
var QueryRQOut = struct {
	Status    Field
	Syndrome  Field
	RQContext Field
}{
	Status:    ifcField("query_rq_out", "status", 0x0, 8),
	Syndrome:  ifcField("query_rq_out", "syndrome", 0x20, 32),
	RQContext: ifcField("query_rq_out", "rq_context", 0x100, 1920),
}

// SQC is the send queue context (mlx5_ifc.h struct mlx5_ifc_sqc_bits).
var SQC = struct {
	Rlky                       Field
	CdMaster                   Field
	Fre                        Field
	FlushInErrorEn             Field
	AllowMultiPktSendWQE       Field
	MinWQEInlineMode           Field
	State                      Field
	RegUmr                     Field
	AllowSwp                   Field
	Hairpin                    Field
	TSFormat                   Field
	UserIndex                  Field
	CQN                        Field
	HairpinPeerRQ              Field
	HairpinPeerVHCA            Field
	TSCQEToDestCQN             Field
	PacketPacingRateLimitIndex Field
	TISLstSz                   Field
	QoSQueueGroupID            Field
	TISNum0                    Field
	WQ                         Field
}{
	Rlky:                       ifcField("sqc", "rlky", 0x0, 1),
	CdMaster:                   ifcField("sqc", "cd_master", 0x1, 1),
	Fre:                        ifcField("sqc", "fre", 0x2, 1),
	FlushInErrorEn:             ifcField("sqc", "flush_in_error_en", 0x3, 1),
	AllowMultiPktSendWQE:       ifcField("sqc", "allow_multi_pkt_send_wqe", 0x4, 1),
	MinWQEInlineMode:           ifcField("sqc", "min_wqe_inline_mode", 0x5, 3),
	State:                      ifcField("sqc", "state", 0x8, 4),
	RegUmr:                     ifcField("sqc", "reg_umr", 0xc, 1),
	AllowSwp:                   ifcField("sqc", "allow_swp", 0xd, 1),
	Hairpin:                    ifcField("sqc", "hairpin", 0xe, 1),
	TSFormat:                   ifcField("sqc", "ts_format", 0x1a, 2),
	UserIndex:                  ifcField("sqc", "user_index", 0x28, 24),
	CQN:                        ifcField("sqc", "cqn", 0x48, 24),
	HairpinPeerRQ:              ifcField("sqc", "hairpin_peer_rq", 0x68, 24),
	HairpinPeerVHCA:            ifcField("sqc", "hairpin_peer_vhca", 0x90, 16),
	TSCQEToDestCQN:             ifcField("sqc", "ts_cqe_to_dest_cqn", 0xc8, 24),
	PacketPacingRateLimitIndex: ifcField("sqc", "packet_pacing_rate_limit_index", 0xf0, 16),
	TISLstSz:                   ifcField("sqc", "tis_lst_sz", 0x100, 16),
	QoSQueueGroupID:            ifcField("sqc", "qos_queue_group_id", 0x110, 16),
	TISNum0:                    ifcField("sqc", "tis_num_0", 0x168, 24),
	WQ:                         ifcField("sqc", "wq", 0x180, 1536),
}

// CreateSQIn is CREATE_SQ input (mlx5_ifc.h struct mlx5_ifc_create_sq_in_bits).
var CreateSQIn = struct {
	Opcode Field
	UID    Field
	OpMod  Field
	Ctx    Field
}{
	Opcode: ifcField("create_sq_in", "opcode", 0x0, 16),
	UID:    ifcField("create_sq_in", "uid", 0x10, 16),
	OpMod:  ifcField("create_sq_in", "op_mod", 0x30, 16),
	Ctx:    ifcField("create_sq_in", "ctx", 0x100, 1920),
}

// CreateSQOut is CREATE_SQ output (mlx5_ifc.h struct mlx5_ifc_create_sq_out_bits).
var CreateSQOut = struct {
	Status   Field
	Syndrome Field
	SQN      Field
}{
	Status:   ifcField("create_sq_out", "status", 0x0, 8),
	Syndrome: ifcField("create_sq_out", "syndrome", 0x20, 32),
	SQN:      ifcField("create_sq_out", "sqn", 0x48, 24),
}

// ModifySQIn is MODIFY_SQ input (mlx5_ifc.h struct mlx5_ifc_modify_sq_in_bits).
var ModifySQIn = struct {
	Opcode        Field
	UID           Field
	OpMod         Field
	SQState       Field
	SQN           Field
	ModifyBitmask Field
	Ctx           Field
}{
	Opcode:        ifcField("modify_sq_in", "opcode", 0x0, 16),
	UID:           ifcField("modify_sq_in", "uid", 0x10, 16),
	OpMod:         ifcField("modify_sq_in", "op_mod", 0x30, 16),
	SQState:       ifcField("modify_sq_in", "sq_state", 0x40, 4),
	SQN:           ifcField("modify_sq_in", "sqn", 0x48, 24),
	ModifyBitmask: ifcField("modify_sq_in", "modify_bitmask", 0x80, 64),
	Ctx:           ifcField("modify_sq_in", "ctx", 0x100, 1920),
}

// DestroySQIn is DESTROY_SQ input (mlx5_ifc.h struct mlx5_ifc_destroy_sq_in_bits).
var DestroySQIn = struct {
	Opcode Field
	UID    Field
	OpMod  Field
	SQN    Field
}{
	Opcode: ifcField("destroy_sq_in", "opcode", 0x0, 16),
	UID:    ifcField("destroy_sq_in", "uid", 0x10, 16),
	OpMod:  ifcField("destroy_sq_in", "op_mod", 0x30, 16),
	SQN:    ifcField("destroy_sq_in", "sqn", 0x48, 24),
}

// QuerySQIn is QUERY_SQ input (mlx5_ifc.h struct mlx5_ifc_query_sq_in_bits).
var QuerySQIn = struct {
	Opcode Field
	OpMod  Field
	SQN    Field
}{
	Opcode: ifcField("query_sq_in", "opcode", 0x0, 16),
	OpMod:  ifcField("query_sq_in", "op_mod", 0x30, 16),
	SQN:    ifcField("query_sq_in", "sqn", 0x48, 24),
}

// QuerySQOut is QUERY_SQ output (mlx5_ifc.h struct mlx5_ifc_query_sq_out_bits).
var QuerySQOut = struct {
	Status    Field
	Syndrome  Field
	SQContext Field
}{
	Status:    ifcField("query_sq_out", "status", 0x0, 8),
	Syndrome:  ifcField("query_sq_out", "syndrome", 0x20, 32),
	SQContext: ifcField("query_sq_out", "sq_context", 0x100, 1920),
}
