package prm

// UAR, PD, transport domain, memory key and UMEM objects. Offsets and widths in bits, as gcc lays
// out include/linux/mlx5/mlx5_ifc.h (Linux 6.1); TestLayout checks every one against the installed
// headers.

// QueryVportStateIn is QUERY_VPORT_STATE input (mlx5_ifc.h struct
// mlx5_ifc_query_vport_state_in_bits).
var QueryVportStateIn = struct {
	Opcode      Field
	OpMod       Field
	OtherVport  Field
	VportNumber Field
}{
	Opcode:      ifcField("query_vport_state_in", "opcode", 0x0, 16),
	OpMod:       ifcField("query_vport_state_in", "op_mod", 0x30, 16),
	OtherVport:  ifcField("query_vport_state_in", "other_vport", 0x40, 1),
	VportNumber: ifcField("query_vport_state_in", "vport_number", 0x50, 16),
}

// QueryVportStateOut is QUERY_VPORT_STATE output (mlx5_ifc.h struct
// mlx5_ifc_query_vport_state_out_bits).
var QueryVportStateOut = struct {
	Status     Field
	Syndrome   Field
	AdminState Field
	State      Field
}{
	Status:     ifcField("query_vport_state_out", "status", 0x0, 8),
	Syndrome:   ifcField("query_vport_state_out", "syndrome", 0x20, 32),
	AdminState: ifcField("query_vport_state_out", "admin_state", 0x78, 4),
	State:      ifcField("query_vport_state_out", "state", 0x7c, 4),
}

// QueryVportCounterIn is QUERY_VPORT_COUNTER input (mlx5_ifc.h struct
// mlx5_ifc_query_vport_counter_in_bits).
var QueryVportCounterIn = struct {
	Opcode      Field
	OpMod       Field
	OtherVport  Field
	PortNum     Field
	VportNumber Field
	Clear       Field
}{
	Opcode:      ifcField("query_vport_counter_in", "opcode", 0x0, 16),
	OpMod:       ifcField("query_vport_counter_in", "op_mod", 0x30, 16),
	OtherVport:  ifcField("query_vport_counter_in", "other_vport", 0x40, 1),
	PortNum:     ifcField("query_vport_counter_in", "port_num", 0x4c, 4),
	VportNumber: ifcField("query_vport_counter_in", "vport_number", 0x50, 16),
	Clear:       ifcField("query_vport_counter_in", "clear", 0xc0, 1),
}

// QueryVportCounterOut is QUERY_VPORT_COUNTER output (mlx5_ifc.h struct
// mlx5_ifc_query_vport_counter_out_bits).
var QueryVportCounterOut = struct {
	Status                  Field
	Syndrome                Field
	ReceivedErrors          Field
	TransmitErrors          Field
	ReceivedIBUnicast       Field
	TransmittedIBUnicast    Field
	ReceivedIBMulticast     Field
	TransmittedIBMulticast  Field
	ReceivedEthBroadcast    Field
	TransmittedEthBroadcast Field
	ReceivedEthUnicast      Field
	TransmittedEthUnicast   Field
	ReceivedEthMulticast    Field
	TransmittedEthMulticast Field
}{
	Status:                  ifcField("query_vport_counter_out", "status", 0x0, 8),
	Syndrome:                ifcField("query_vport_counter_out", "syndrome", 0x20, 32),
	ReceivedErrors:          ifcField("query_vport_counter_out", "received_errors", 0x80, 128),
	TransmitErrors:          ifcField("query_vport_counter_out", "transmit_errors", 0x100, 128),
	ReceivedIBUnicast:       ifcField("query_vport_counter_out", "received_ib_unicast", 0x180, 128),
	TransmittedIBUnicast:    ifcField("query_vport_counter_out", "transmitted_ib_unicast", 0x200, 128),
	ReceivedIBMulticast:     ifcField("query_vport_counter_out", "received_ib_multicast", 0x280, 128),
	TransmittedIBMulticast:  ifcField("query_vport_counter_out", "transmitted_ib_multicast", 0x300, 128),
	ReceivedEthBroadcast:    ifcField("query_vport_counter_out", "received_eth_broadcast", 0x380, 128),
	TransmittedEthBroadcast: ifcField("query_vport_counter_out", "transmitted_eth_broadcast", 0x400, 128),
	ReceivedEthUnicast:      ifcField("query_vport_counter_out", "received_eth_unicast", 0x480, 128),
	TransmittedEthUnicast:   ifcField("query_vport_counter_out", "transmitted_eth_unicast", 0x500, 128),
	ReceivedEthMulticast:    ifcField("query_vport_counter_out", "received_eth_multicast", 0x580, 128),
	TransmittedEthMulticast: ifcField("query_vport_counter_out", "transmitted_eth_multicast", 0x600, 128),
}

// AllocQCounterIn is ALLOC_Q_COUNTER input (mlx5_ifc.h struct mlx5_ifc_alloc_q_counter_in_bits).
var AllocQCounterIn = struct {
	Opcode Field
	UID    Field
	OpMod  Field
}{
	Opcode: ifcField("alloc_q_counter_in", "opcode", 0x0, 16),
	UID:    ifcField("alloc_q_counter_in", "uid", 0x10, 16),
	OpMod:  ifcField("alloc_q_counter_in", "op_mod", 0x30, 16),
}

// AllocQCounterOut is ALLOC_Q_COUNTER output (mlx5_ifc.h struct
// mlx5_ifc_alloc_q_counter_out_bits).
var AllocQCounterOut = struct {
	Status       Field
	Syndrome     Field
	CounterSetID Field
}{
	Status:       ifcField("alloc_q_counter_out", "status", 0x0, 8),
	Syndrome:     ifcField("alloc_q_counter_out", "syndrome", 0x20, 32),
	CounterSetID: ifcField("alloc_q_counter_out", "counter_set_id", 0x58, 8),
}

// DeallocQCounterIn is DEALLOC_Q_COUNTER input (mlx5_ifc.h struct
// mlx5_ifc_dealloc_q_counter_in_bits).
var DeallocQCounterIn = struct {
	Opcode       Field
	OpMod        Field
	CounterSetID Field
}{
	Opcode:       ifcField("dealloc_q_counter_in", "opcode", 0x0, 16),
	OpMod:        ifcField("dealloc_q_counter_in", "op_mod", 0x30, 16),
	CounterSetID: ifcField("dealloc_q_counter_in", "counter_set_id", 0x58, 8),
}

// QueryQCounterIn is QUERY_Q_COUNTER input (mlx5_ifc.h struct mlx5_ifc_query_q_counter_in_bits).
var QueryQCounterIn = struct {
	Opcode       Field
	OpMod        Field
	Clear        Field
	CounterSetID Field
}{
	Opcode:       ifcField("query_q_counter_in", "opcode", 0x0, 16),
	OpMod:        ifcField("query_q_counter_in", "op_mod", 0x30, 16),
	Clear:        ifcField("query_q_counter_in", "clear", 0xc0, 1),
	CounterSetID: ifcField("query_q_counter_in", "counter_set_id", 0xf8, 8),
}

// QueryQCounterOut is QUERY_Q_COUNTER output (mlx5_ifc.h struct
// mlx5_ifc_query_q_counter_out_bits).
var QueryQCounterOut = struct {
	Status                      Field
	Syndrome                    Field
	RXWriteRequests             Field
	RXReadRequests              Field
	RXAtomicRequests            Field
	RXDCTConnect                Field
	OutOfBuffer                 Field
	OutOfSequence               Field
	DuplicateRequest            Field
	RnrNakRetryErr              Field
	PacketSeqErr                Field
	ImpliedNakSeqErr            Field
	LocalAckTimeoutErr          Field
	RespLocalLengthError        Field
	ReqLocalLengthError         Field
	RespLocalQPError            Field
	LocalOperationError         Field
	RespLocalProtection         Field
	ReqLocalProtection          Field
	RespCQEError                Field
	ReqCQEError                 Field
	ReqMwBinding                Field
	ReqBadResponse              Field
	ReqRemoteInvalidRequest     Field
	RespRemoteInvalidRequest    Field
	ReqRemoteAccessErrors       Field
	RespRemoteAccessErrors      Field
	ReqRemoteOperationErrors    Field
	ReqTransportRetriesExceeded Field
	CQOverflow                  Field
	RespCQEFlushError           Field
	ReqCQEFlushError            Field
	RoCEAdpRetrans              Field
	RoCEAdpRetransTo            Field
	RoCESlowRestart             Field
	RoCESlowRestartCnps         Field
	RoCESlowRestartTrans        Field
}{
	Status:                      ifcField("query_q_counter_out", "status", 0x0, 8),
	Syndrome:                    ifcField("query_q_counter_out", "syndrome", 0x20, 32),
	RXWriteRequests:             ifcField("query_q_counter_out", "rx_write_requests", 0x80, 32),
	RXReadRequests:              ifcField("query_q_counter_out", "rx_read_requests", 0xc0, 32),
	RXAtomicRequests:            ifcField("query_q_counter_out", "rx_atomic_requests", 0x100, 32),
	RXDCTConnect:                ifcField("query_q_counter_out", "rx_dct_connect", 0x140, 32),
	OutOfBuffer:                 ifcField("query_q_counter_out", "out_of_buffer", 0x180, 32),
	OutOfSequence:               ifcField("query_q_counter_out", "out_of_sequence", 0x1c0, 32),
	DuplicateRequest:            ifcField("query_q_counter_out", "duplicate_request", 0x200, 32),
	RnrNakRetryErr:              ifcField("query_q_counter_out", "rnr_nak_retry_err", 0x240, 32),
	PacketSeqErr:                ifcField("query_q_counter_out", "packet_seq_err", 0x280, 32),
	ImpliedNakSeqErr:            ifcField("query_q_counter_out", "implied_nak_seq_err", 0x2c0, 32),
	LocalAckTimeoutErr:          ifcField("query_q_counter_out", "local_ack_timeout_err", 0x300, 32),
	RespLocalLengthError:        ifcField("query_q_counter_out", "resp_local_length_error", 0x3c0, 32),
	ReqLocalLengthError:         ifcField("query_q_counter_out", "req_local_length_error", 0x3e0, 32),
	RespLocalQPError:            ifcField("query_q_counter_out", "resp_local_qp_error", 0x400, 32),
	LocalOperationError:         ifcField("query_q_counter_out", "local_operation_error", 0x420, 32),
	RespLocalProtection:         ifcField("query_q_counter_out", "resp_local_protection", 0x440, 32),
	ReqLocalProtection:          ifcField("query_q_counter_out", "req_local_protection", 0x460, 32),
	RespCQEError:                ifcField("query_q_counter_out", "resp_cqe_error", 0x480, 32),
	ReqCQEError:                 ifcField("query_q_counter_out", "req_cqe_error", 0x4a0, 32),
	ReqMwBinding:                ifcField("query_q_counter_out", "req_mw_binding", 0x4c0, 32),
	ReqBadResponse:              ifcField("query_q_counter_out", "req_bad_response", 0x4e0, 32),
	ReqRemoteInvalidRequest:     ifcField("query_q_counter_out", "req_remote_invalid_request", 0x500, 32),
	RespRemoteInvalidRequest:    ifcField("query_q_counter_out", "resp_remote_invalid_request", 0x520, 32),
	ReqRemoteAccessErrors:       ifcField("query_q_counter_out", "req_remote_access_errors", 0x540, 32),
	RespRemoteAccessErrors:      ifcField("query_q_counter_out", "resp_remote_access_errors", 0x560, 32),
	ReqRemoteOperationErrors:    ifcField("query_q_counter_out", "req_remote_operation_errors", 0x580, 32),
	ReqTransportRetriesExceeded: ifcField("query_q_counter_out", "req_transport_retries_exceeded", 0x5a0, 32),
	CQOverflow:                  ifcField("query_q_counter_out", "cq_overflow", 0x5c0, 32),
	RespCQEFlushError:           ifcField("query_q_counter_out", "resp_cqe_flush_error", 0x5e0, 32),
	ReqCQEFlushError:            ifcField("query_q_counter_out", "req_cqe_flush_error", 0x600, 32),
	RoCEAdpRetrans:              ifcField("query_q_counter_out", "roce_adp_retrans", 0x640, 32),
	RoCEAdpRetransTo:            ifcField("query_q_counter_out", "roce_adp_retrans_to", 0x660, 32),
	RoCESlowRestart:             ifcField("query_q_counter_out", "roce_slow_restart", 0x680, 32),
	RoCESlowRestartCnps:         ifcField("query_q_counter_out", "roce_slow_restart_cnps", 0x6a0, 32),
	RoCESlowRestartTrans:        ifcField("query_q_counter_out", "roce_slow_restart_trans", 0x6c0, 32),
}

// AllocUARIn is ALLOC_UAR input (mlx5_ifc.h struct mlx5_ifc_alloc_uar_in_bits).
var AllocUARIn = struct {
	Opcode Field
	UID    Field
	OpMod  Field
}{
	Opcode: ifcField("alloc_uar_in", "opcode", 0x0, 16),
	UID:    ifcField("alloc_uar_in", "uid", 0x10, 16),
	OpMod:  ifcField("alloc_uar_in", "op_mod", 0x30, 16),
}

// AllocUAROut is ALLOC_UAR output (mlx5_ifc.h struct mlx5_ifc_alloc_uar_out_bits).
var AllocUAROut = struct {
	Status   Field
	Syndrome Field
	UAR      Field
}{
	Status:   ifcField("alloc_uar_out", "status", 0x0, 8),
	Syndrome: ifcField("alloc_uar_out", "syndrome", 0x20, 32),
	UAR:      ifcField("alloc_uar_out", "uar", 0x48, 24),
}

// DeallocUARIn is DEALLOC_UAR input (mlx5_ifc.h struct mlx5_ifc_dealloc_uar_in_bits).
var DeallocUARIn = struct {
	Opcode Field
	UID    Field
	OpMod  Field
	UAR    Field
}{
	Opcode: ifcField("dealloc_uar_in", "opcode", 0x0, 16),
	UID:    ifcField("dealloc_uar_in", "uid", 0x10, 16),
	OpMod:  ifcField("dealloc_uar_in", "op_mod", 0x30, 16),
	UAR:    ifcField("dealloc_uar_in", "uar", 0x48, 24),
}

// AllocPDIn is ALLOC_PD input (mlx5_ifc.h struct mlx5_ifc_alloc_pd_in_bits).
var AllocPDIn = struct {
	Opcode Field
	UID    Field
	OpMod  Field
}{
	Opcode: ifcField("alloc_pd_in", "opcode", 0x0, 16),
	UID:    ifcField("alloc_pd_in", "uid", 0x10, 16),
	OpMod:  ifcField("alloc_pd_in", "op_mod", 0x30, 16),
}

// AllocPDOut is ALLOC_PD output (mlx5_ifc.h struct mlx5_ifc_alloc_pd_out_bits).
var AllocPDOut = struct {
	Status   Field
	Syndrome Field
	PD       Field
}{
	Status:   ifcField("alloc_pd_out", "status", 0x0, 8),
	Syndrome: ifcField("alloc_pd_out", "syndrome", 0x20, 32),
	PD:       ifcField("alloc_pd_out", "pd", 0x48, 24),
}

// DeallocPDIn is DEALLOC_PD input (mlx5_ifc.h struct mlx5_ifc_dealloc_pd_in_bits).
var DeallocPDIn = struct {
	Opcode Field
	UID    Field
	OpMod  Field
	PD     Field
}{
	Opcode: ifcField("dealloc_pd_in", "opcode", 0x0, 16),
	UID:    ifcField("dealloc_pd_in", "uid", 0x10, 16),
	OpMod:  ifcField("dealloc_pd_in", "op_mod", 0x30, 16),
	PD:     ifcField("dealloc_pd_in", "pd", 0x48, 24),
}

// AllocTransportDomainIn is ALLOC_TRANSPORT_DOMAIN input (mlx5_ifc.h struct
// mlx5_ifc_alloc_transport_domain_in_bits).
var AllocTransportDomainIn = struct {
	Opcode Field
	UID    Field
	OpMod  Field
}{
	Opcode: ifcField("alloc_transport_domain_in", "opcode", 0x0, 16),
	UID:    ifcField("alloc_transport_domain_in", "uid", 0x10, 16),
	OpMod:  ifcField("alloc_transport_domain_in", "op_mod", 0x30, 16),
}

// AllocTransportDomainOut is ALLOC_TRANSPORT_DOMAIN output (mlx5_ifc.h struct
// mlx5_ifc_alloc_transport_domain_out_bits).
var AllocTransportDomainOut = struct {
	Status          Field
	Syndrome        Field
	TransportDomain Field
}{
	Status:          ifcField("alloc_transport_domain_out", "status", 0x0, 8),
	Syndrome:        ifcField("alloc_transport_domain_out", "syndrome", 0x20, 32),
	TransportDomain: ifcField("alloc_transport_domain_out", "transport_domain", 0x48, 24),
}

// DeallocTransportDomainIn is DEALLOC_TRANSPORT_DOMAIN input (mlx5_ifc.h struct
// mlx5_ifc_dealloc_transport_domain_in_bits).
var DeallocTransportDomainIn = struct {
	Opcode          Field
	UID             Field
	OpMod           Field
	TransportDomain Field
}{
	Opcode:          ifcField("dealloc_transport_domain_in", "opcode", 0x0, 16),
	UID:             ifcField("dealloc_transport_domain_in", "uid", 0x10, 16),
	OpMod:           ifcField("dealloc_transport_domain_in", "op_mod", 0x30, 16),
	TransportDomain: ifcField("dealloc_transport_domain_in", "transport_domain", 0x48, 24),
}

// MKC is the memory key context (mlx5_ifc.h struct mlx5_ifc_mkc_bits).
var MKC = struct {
	Free                         Field
	AccessMode42                 Field
	RelaxedOrderingWrite         Field
	SmallFenceOnRdmaReadResponse Field
	UmrEn                        Field
	A                            Field
	Rw                           Field
	Rr                           Field
	Lw                           Field
	Lr                           Field
	AccessMode10                 Field
	MaTranslationMode            Field
	QPN                          Field
	MKey70                       Field
	Length64                     Field
	BsfEn                        Field
	SyncUmr                      Field
	ExpectedSigerrCount          Field
	EnRinval                     Field
	PD                           Field
	StartAddr                    Field
	Len                          Field
	BsfOctwordSize               Field
	TranslationsOctwordSize      Field
	RelaxedOrderingRead          Field
	LogPageSize                  Field
}{
	Free:                         ifcField("mkc", "free", 0x1, 1),
	AccessMode42:                 ifcField("mkc", "access_mode_4_2", 0x3, 3),
	RelaxedOrderingWrite:         ifcField("mkc", "relaxed_ordering_write", 0xd, 1),
	SmallFenceOnRdmaReadResponse: ifcField("mkc", "small_fence_on_rdma_read_response", 0xf, 1),
	UmrEn:                        ifcField("mkc", "umr_en", 0x10, 1),
	A:                            ifcField("mkc", "a", 0x11, 1),
	Rw:                           ifcField("mkc", "rw", 0x12, 1),
	Rr:                           ifcField("mkc", "rr", 0x13, 1),
	Lw:                           ifcField("mkc", "lw", 0x14, 1),
	Lr:                           ifcField("mkc", "lr", 0x15, 1),
	AccessMode10:                 ifcField("mkc", "access_mode_1_0", 0x16, 2),
	MaTranslationMode:            ifcField("mkc", "ma_translation_mode", 0x1a, 2),
	QPN:                          ifcField("mkc", "qpn", 0x20, 24),
	MKey70:                       ifcField("mkc", "mkey_7_0", 0x38, 8),
	Length64:                     ifcField("mkc", "length64", 0x60, 1),
	BsfEn:                        ifcField("mkc", "bsf_en", 0x61, 1),
	SyncUmr:                      ifcField("mkc", "sync_umr", 0x62, 1),
	ExpectedSigerrCount:          ifcField("mkc", "expected_sigerr_count", 0x65, 1),
	EnRinval:                     ifcField("mkc", "en_rinval", 0x67, 1),
	PD:                           ifcField("mkc", "pd", 0x68, 24),
	StartAddr:                    ifcField("mkc", "start_addr", 0x80, 64),
	Len:                          ifcField("mkc", "len", 0xc0, 64),
	BsfOctwordSize:               ifcField("mkc", "bsf_octword_size", 0x100, 32),
	TranslationsOctwordSize:      ifcField("mkc", "translations_octword_size", 0x1a0, 32),
	RelaxedOrderingRead:          ifcField("mkc", "relaxed_ordering_read", 0x1d9, 1),
	LogPageSize:                  ifcField("mkc", "log_page_size", 0x1db, 5),
}

// CreateMKeyIn is CREATE_MKEY input (mlx5_ifc.h struct mlx5_ifc_create_mkey_in_bits).
var CreateMKeyIn = struct {
	Opcode                        Field
	UID                           Field
	OpMod                         Field
	PgAccess                      Field
	MKeyUMEMValid                 Field
	MemoryKeyMKeyEntry            Field
	TranslationsOctwordActualSize Field
	// MKeyUMEMID and MKeyUMEMOffset are the UMEM a key with MKeyUMEMValid translates
	// through, and where in it the key's start address falls. DPDK
	// drivers/common/mlx5/mlx5_prm.h struct mlx5_ifc_create_mkey_in_bits: mkey_umem_id[0x20]
	// and mkey_umem_offset[0x40] after translations_octword_actual_size; reserved_at_320 in
	// Linux 6.1.
	MKeyUMEMID     Field
	MKeyUMEMOffset Field
	KlmPASMtt      Field
}{
	Opcode:                        ifcField("create_mkey_in", "opcode", 0x0, 16),
	UID:                           ifcField("create_mkey_in", "uid", 0x10, 16),
	OpMod:                         ifcField("create_mkey_in", "op_mod", 0x30, 16),
	PgAccess:                      ifcField("create_mkey_in", "pg_access", 0x60, 1),
	MKeyUMEMValid:                 ifcField("create_mkey_in", "mkey_umem_valid", 0x61, 1),
	MemoryKeyMKeyEntry:            ifcField("create_mkey_in", "memory_key_mkey_entry", 0x80, 512),
	TranslationsOctwordActualSize: ifcField("create_mkey_in", "translations_octword_actual_size", 0x300, 32),
	MKeyUMEMID:                    newerIfcField("create_mkey_in", "mkey_umem_id", 0x320, 32),
	MKeyUMEMOffset:                newerIfcField("create_mkey_in", "mkey_umem_offset", 0x340, 64),
	KlmPASMtt:                     ifcField("create_mkey_in", "klm_pas_mtt[0]", 0x880, 32),
}

// CreateMKeyOut is CREATE_MKEY output (mlx5_ifc.h struct mlx5_ifc_create_mkey_out_bits).
var CreateMKeyOut = struct {
	Status    Field
	Syndrome  Field
	MKeyIndex Field
}{
	Status:    ifcField("create_mkey_out", "status", 0x0, 8),
	Syndrome:  ifcField("create_mkey_out", "syndrome", 0x20, 32),
	MKeyIndex: ifcField("create_mkey_out", "mkey_index", 0x48, 24),
}

// DestroyMKeyIn is DESTROY_MKEY input (mlx5_ifc.h struct mlx5_ifc_destroy_mkey_in_bits).
var DestroyMKeyIn = struct {
	Opcode    Field
	UID       Field
	OpMod     Field
	MKeyIndex Field
}{
	Opcode:    ifcField("destroy_mkey_in", "opcode", 0x0, 16),
	UID:       ifcField("destroy_mkey_in", "uid", 0x10, 16),
	OpMod:     ifcField("destroy_mkey_in", "op_mod", 0x30, 16),
	MKeyIndex: ifcField("destroy_mkey_in", "mkey_index", 0x48, 24),
}

// QueryMKeyIn is QUERY_MKEY input (mlx5_ifc.h struct mlx5_ifc_query_mkey_in_bits).
var QueryMKeyIn = struct {
	Opcode    Field
	OpMod     Field
	MKeyIndex Field
	PgAccess  Field
}{
	Opcode:    ifcField("query_mkey_in", "opcode", 0x0, 16),
	OpMod:     ifcField("query_mkey_in", "op_mod", 0x30, 16),
	MKeyIndex: ifcField("query_mkey_in", "mkey_index", 0x48, 24),
	PgAccess:  ifcField("query_mkey_in", "pg_access", 0x60, 1),
}

// QueryMKeyOut is QUERY_MKEY output (mlx5_ifc.h struct mlx5_ifc_query_mkey_out_bits).
var QueryMKeyOut = struct {
	Status             Field
	Syndrome           Field
	MemoryKeyMKeyEntry Field
	Bsf0Klm0PASMtt01   Field
	Bsf1Klm1PASMtt23   Field
}{
	Status:             ifcField("query_mkey_out", "status", 0x0, 8),
	Syndrome:           ifcField("query_mkey_out", "syndrome", 0x20, 32),
	MemoryKeyMKeyEntry: ifcField("query_mkey_out", "memory_key_mkey_entry", 0x80, 512),
	Bsf0Klm0PASMtt01:   ifcField("query_mkey_out", "bsf0_klm0_pas_mtt0_1[0]", 0x880, 8),
	Bsf1Klm1PASMtt23:   ifcField("query_mkey_out", "bsf1_klm1_pas_mtt2_3[0]", 0x900, 8),
}

// UMEM is the UMEM object (a registered user memory region) of CREATE_GENERAL_OBJECT (mlx5_ifc.h
// struct mlx5_ifc_umem_bits).
var UMEM = struct {
	ATS         Field
	LogPageSize Field
	PageOffset  Field
	NumOfMtt    Field
	Mtt         Field
}{
	ATS:         ifcField("umem", "ats", 0x80, 1),
	LogPageSize: ifcField("umem", "log_page_size", 0x9b, 5),
	PageOffset:  ifcField("umem", "page_offset", 0xa0, 32),
	NumOfMtt:    ifcField("umem", "num_of_mtt", 0xc0, 64),
	Mtt:         ifcField("umem", "mtt[0]", 0x100, 64),
}

// CreateUMEMIn is CREATE_GENERAL_OBJECT(UMEM) input (mlx5_ifc.h struct
// mlx5_ifc_create_umem_in_bits).
var CreateUMEMIn = struct {
	Opcode Field
	UID    Field
	OpMod  Field
	UMEM   Field
}{
	Opcode: ifcField("create_umem_in", "opcode", 0x0, 16),
	UID:    ifcField("create_umem_in", "uid", 0x10, 16),
	OpMod:  ifcField("create_umem_in", "op_mod", 0x30, 16),
	UMEM:   ifcField("create_umem_in", "umem", 0x80, 256),
}

// CreateUMEMOut is CREATE_GENERAL_OBJECT(UMEM) output (mlx5_ifc.h struct
// mlx5_ifc_create_umem_out_bits).
var CreateUMEMOut = struct {
	Status   Field
	Syndrome Field
	UMEMID   Field
}{
	Status:   ifcField("create_umem_out", "status", 0x0, 8),
	Syndrome: ifcField("create_umem_out", "syndrome", 0x20, 32),
	UMEMID:   ifcField("create_umem_out", "umem_id", 0x48, 24),
}

// DestroyUMEMIn is DESTROY_UMEM input (mlx5_ifc.h struct mlx5_ifc_destroy_umem_in_bits).
var DestroyUMEMIn = struct {
	Opcode Field
	UID    Field
	OpMod  Field
	UMEMID Field
}{
	Opcode: ifcField("destroy_umem_in", "opcode", 0x0, 16),
	UID:    ifcField("destroy_umem_in", "uid", 0x10, 16),
	OpMod:  ifcField("destroy_umem_in", "op_mod", 0x30, 16),
	UMEMID: ifcField("destroy_umem_in", "umem_id", 0x48, 24),
}

// MTT is one memory translation table entry (a page address) (mlx5_ifc.h struct
// mlx5_ifc_mtt_bits).
var MTT = struct {
	PtagHi Field
	PtagLo Field
	WrEn   Field
	RdEn   Field
}{
	PtagHi: ifcField("mtt", "ptag_63_32", 0x0, 32),
	PtagLo: ifcField("mtt", "ptag_31_8", 0x20, 24),
	WrEn:   ifcField("mtt", "wr_en", 0x3e, 1),
	RdEn:   ifcField("mtt", "rd_en", 0x3f, 1),
}
