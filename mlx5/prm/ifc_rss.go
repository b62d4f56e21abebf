package prm

// RQ tables, TIRs (direct and RSS) and TISs. Offsets and widths in bits, as gcc lays out
// include/linux/mlx5/mlx5_ifc.h (Linux 6.1); TestLayout checks every one against the installed
// headers.

// RQNum is one RQ number in an RQT's list (mlx5_ifc.h struct mlx5_ifc_rq_num_bits).
var RQNum = struct {
	RQNum Field
}{
	RQNum: ifcField("rq_num", "rq_num", 0x8, 24),
}

// RQTC is the RQ table context (mlx5_ifc.h struct mlx5_ifc_rqtc_bits).
var RQTC = struct {
	ListQType      Field
	RQTMaxSize     Field
	RQVHCAIDFormat Field
	RQTActualSize  Field
	RQNum          Field
}{
	ListQType:      ifcField("rqtc", "list_q_type", 0xa5, 3),
	RQTMaxSize:     ifcField("rqtc", "rqt_max_size", 0xb0, 16),
	RQVHCAIDFormat: ifcField("rqtc", "rq_vhca_id_format", 0xc0, 1),
	RQTActualSize:  ifcField("rqtc", "rqt_actual_size", 0xd0, 16),
	RQNum:          ifcField("rqtc", "rq_num[0]", 0x780, 32),
}

// CreateRQTIn is CREATE_RQT input (mlx5_ifc.h struct mlx5_ifc_create_rqt_in_bits).
var CreateRQTIn = struct {
	Opcode     Field
	UID        Field
	OpMod      Field
	RQTContext Field
}{
	Opcode:     ifcField("create_rqt_in", "opcode", 0x0, 16),
	UID:        ifcField("create_rqt_in", "uid", 0x10, 16),
	OpMod:      ifcField("create_rqt_in", "op_mod", 0x30, 16),
	RQTContext: ifcField("create_rqt_in", "rqt_context", 0x100, 1920),
}

// CreateRQTOut is CREATE_RQT output (mlx5_ifc.h struct mlx5_ifc_create_rqt_out_bits).
var CreateRQTOut = struct {
	Status   Field
	Syndrome Field
	RQTN     Field
}{
	Status:   ifcField("create_rqt_out", "status", 0x0, 8),
	Syndrome: ifcField("create_rqt_out", "syndrome", 0x20, 32),
	RQTN:     ifcField("create_rqt_out", "rqtn", 0x48, 24),
}

// ModifyRQTIn is MODIFY_RQT input (mlx5_ifc.h struct mlx5_ifc_modify_rqt_in_bits).
var ModifyRQTIn = struct {
	Opcode  Field
	UID     Field
	OpMod   Field
	RQTN    Field
	Bitmask Field
	Ctx     Field
}{
	Opcode:  ifcField("modify_rqt_in", "opcode", 0x0, 16),
	UID:     ifcField("modify_rqt_in", "uid", 0x10, 16),
	OpMod:   ifcField("modify_rqt_in", "op_mod", 0x30, 16),
	RQTN:    ifcField("modify_rqt_in", "rqtn", 0x48, 24),
	Bitmask: ifcField("modify_rqt_in", "bitmask", 0x80, 64),
	Ctx:     ifcField("modify_rqt_in", "ctx", 0x100, 1920),
}

// DestroyRQTIn is DESTROY_RQT input (mlx5_ifc.h struct mlx5_ifc_destroy_rqt_in_bits).
var DestroyRQTIn = struct {
	Opcode Field
	UID    Field
	OpMod  Field
	RQTN   Field
}{
	Opcode: ifcField("destroy_rqt_in", "opcode", 0x0, 16),
	UID:    ifcField("destroy_rqt_in", "uid", 0x10, 16),
	OpMod:  ifcField("destroy_rqt_in", "op_mod", 0x30, 16),
	RQTN:   ifcField("destroy_rqt_in", "rqtn", 0x48, 24),
}

// QueryRQTIn is QUERY_RQT input (mlx5_ifc.h struct mlx5_ifc_query_rqt_in_bits).
var QueryRQTIn = struct {
	Opcode Field
	OpMod  Field
	RQTN   Field
}{
	Opcode: ifcField("query_rqt_in", "opcode", 0x0, 16),
	OpMod:  ifcField("query_rqt_in", "op_mod", 0x30, 16),
	RQTN:   ifcField("query_rqt_in", "rqtn", 0x48, 24),
}

// QueryRQTOut is QUERY_RQT output (mlx5_ifc.h struct mlx5_ifc_query_rqt_out_bits).
var QueryRQTOut = struct {
	Status     Field
	Syndrome   Field
	RQTContext Field
}{
	Status:     ifcField("query_rqt_out", "status", 0x0, 8),
	Syndrome:   ifcField("query_rqt_out", "syndrome", 0x20, 32),
	RQTContext: ifcField("query_rqt_out", "rqt_context", 0x100, 1920),
}

// RXHashFieldSelect is the TIR's RSS field selector (mlx5_ifc.h struct
// mlx5_ifc_rx_hash_field_select_bits).
var RXHashFieldSelect = struct {
	L3ProtType     Field
	L4ProtType     Field
	SelectedFields Field
}{
	L3ProtType:     ifcField("rx_hash_field_select", "l3_prot_type", 0x0, 1),
	L4ProtType:     ifcField("rx_hash_field_select", "l4_prot_type", 0x1, 1),
	SelectedFields: ifcField("rx_hash_field_select", "selected_fields", 0x2, 30),
}

// TIRC is the transport interface receive context (direct or indirect, Toeplitz) (mlx5_ifc.h
// struct mlx5_ifc_tirc_bits).
var TIRC = struct {
	DispType                 Field
	TLSEn                    Field
	LROTimeoutPeriodUsecs    Field
	PacketMergeMask          Field
	LROMaxIPPayloadSize      Field
	InlineRQN                Field
	RXHashSymmetric          Field
	TunneledOffloadEn        Field
	IndirectTable            Field
	RXHashFn                 Field
	SelfLBBlock              Field
	TransportDomain          Field
	RXHashToeplitzKey        Field
	RXHashFieldSelectorOuter Field
	RXHashFieldSelectorInner Field
}{
	DispType:                 ifcField("tirc", "disp_type", 0x20, 4),
	TLSEn:                    ifcField("tirc", "tls_en", 0x24, 1),
	LROTimeoutPeriodUsecs:    ifcField("tirc", "lro_timeout_period_usecs", 0x84, 16),
	PacketMergeMask:          ifcField("tirc", "packet_merge_mask", 0x94, 4),
	LROMaxIPPayloadSize:      ifcField("tirc", "lro_max_ip_payload_size", 0x98, 8),
	InlineRQN:                ifcField("tirc", "inline_rqn", 0xe8, 24),
	RXHashSymmetric:          ifcField("tirc", "rx_hash_symmetric", 0x100, 1),
	TunneledOffloadEn:        ifcField("tirc", "tunneled_offload_en", 0x102, 1),
	IndirectTable:            ifcField("tirc", "indirect_table", 0x108, 24),
	RXHashFn:                 ifcField("tirc", "rx_hash_fn", 0x120, 4),
	SelfLBBlock:              ifcField("tirc", "self_lb_block", 0x126, 2),
	TransportDomain:          ifcField("tirc", "transport_domain", 0x128, 24),
	RXHashToeplitzKey:        ifcField("tirc", "rx_hash_toeplitz_key[0]", 0x140, 32),
	RXHashFieldSelectorOuter: ifcField("tirc", "rx_hash_field_selector_outer", 0x280, 32),
	RXHashFieldSelectorInner: ifcField("tirc", "rx_hash_field_selector_inner", 0x2a0, 32),
}

// CreateTIRIn is CREATE_TIR input (mlx5_ifc.h struct mlx5_ifc_create_tir_in_bits).
var CreateTIRIn = struct {
	Opcode Field
	UID    Field
	OpMod  Field
	Ctx    Field
}{
	Opcode: ifcField("create_tir_in", "opcode", 0x0, 16),
	UID:    ifcField("create_tir_in", "uid", 0x10, 16),
	OpMod:  ifcField("create_tir_in", "op_mod", 0x30, 16),
	Ctx:    ifcField("create_tir_in", "ctx", 0x100, 1920),
}

// CreateTIROut is CREATE_TIR output (mlx5_ifc.h struct mlx5_ifc_create_tir_out_bits).
var CreateTIROut = struct {
	Status         Field
	ICMAddress6340 Field
	Syndrome       Field
	ICMAddressHi   Field
	TIRN           Field
	ICMAddressLo   Field
}{
	Status:         ifcField("create_tir_out", "status", 0x0, 8),
	ICMAddress6340: ifcField("create_tir_out", "icm_address_63_40", 0x8, 24),
	Syndrome:       ifcField("create_tir_out", "syndrome", 0x20, 32),
	ICMAddressHi:   ifcField("create_tir_out", "icm_address_39_32", 0x40, 8),
	TIRN:           ifcField("create_tir_out", "tirn", 0x48, 24),
	ICMAddressLo:   ifcField("create_tir_out", "icm_address_31_0", 0x60, 32),
}

// ModifyTIRIn is MODIFY_TIR input (mlx5_ifc.h struct mlx5_ifc_modify_tir_in_bits).
var ModifyTIRIn = struct {
	Opcode  Field
	UID     Field
	OpMod   Field
	TIRN    Field
	Bitmask Field
	Ctx     Field
}{
	Opcode:  ifcField("modify_tir_in", "opcode", 0x0, 16),
	UID:     ifcField("modify_tir_in", "uid", 0x10, 16),
	OpMod:   ifcField("modify_tir_in", "op_mod", 0x30, 16),
	TIRN:    ifcField("modify_tir_in", "tirn", 0x48, 24),
	Bitmask: ifcField("modify_tir_in", "bitmask", 0x80, 64),
	Ctx:     ifcField("modify_tir_in", "ctx", 0x100, 1920),
}

// DestroyTIRIn is DESTROY_TIR input (mlx5_ifc.h struct mlx5_ifc_destroy_tir_in_bits).
var DestroyTIRIn = struct {
	Opcode Field
	UID    Field
	OpMod  Field
	TIRN   Field
}{
	Opcode: ifcField("destroy_tir_in", "opcode", 0x0, 16),
	UID:    ifcField("destroy_tir_in", "uid", 0x10, 16),
	OpMod:  ifcField("destroy_tir_in", "op_mod", 0x30, 16),
	TIRN:   ifcField("destroy_tir_in", "tirn", 0x48, 24),
}

// QueryTIRIn is QUERY_TIR input (mlx5_ifc.h struct mlx5_ifc_query_tir_in_bits).
var QueryTIRIn = struct {
	Opcode Field
	OpMod  Field
	TIRN   Field
}{
	Opcode: ifcField("query_tir_in", "opcode", 0x0, 16),
	OpMod:  ifcField("query_tir_in", "op_mod", 0x30, 16),
	TIRN:   ifcField("query_tir_in", "tirn", 0x48, 24),
}

// QueryTIROut is QUERY_TIR output (mlx5_ifc.h struct mlx5_ifc_query_tir_out_bits).
var QueryTIROut = struct {
	Status     Field
	Syndrome   Field
	TIRContext Field
}{
	Status:     ifcField("query_tir_out", "status", 0x0, 8),
	Syndrome:   ifcField("query_tir_out", "syndrome", 0x20, 32),
	TIRContext: ifcField("query_tir_out", "tir_context", 0x100, 1920),
}

// TISC is the transport interface send context (mlx5_ifc.h struct mlx5_ifc_tisc_bits).
var TISC = struct {
	StrictLAGTXPortAffinity Field
	TLSEn                   Field
	LAGTXPortAffinity       Field
	Prio                    Field
	TransportDomain         Field
	UnderlayQPN             Field
	PD                      Field
}{
	StrictLAGTXPortAffinity: ifcField("tisc", "strict_lag_tx_port_affinity", 0x0, 1),
	TLSEn:                   ifcField("tisc", "tls_en", 0x1, 1),
	LAGTXPortAffinity:       ifcField("tisc", "lag_tx_port_affinity", 0x4, 4),
	Prio:                    ifcField("tisc", "prio", 0xc, 4),
	TransportDomain:         ifcField("tisc", "transport_domain", 0x128, 24),
	UnderlayQPN:             ifcField("tisc", "underlay_qpn", 0x148, 24),
	PD:                      ifcField("tisc", "pd", 0x168, 24),
}

// CreateTISIn is CREATE_TIS input (mlx5_ifc.h struct mlx5_ifc_create_tis_in_bits).
var CreateTISIn = struct {
	Opcode Field
	UID    Field
	OpMod  Field
	Ctx    Field
}{
	Opcode: ifcField("create_tis_in", "opcode", 0x0, 16),
	UID:    ifcField("create_tis_in", "uid", 0x10, 16),
	OpMod:  ifcField("create_tis_in", "op_mod", 0x30, 16),
	Ctx:    ifcField("create_tis_in", "ctx", 0x100, 1280),
}

// CreateTISOut is CREATE_TIS output (mlx5_ifc.h struct mlx5_ifc_create_tis_out_bits).
var CreateTISOut = struct {
	Status   Field
	Syndrome Field
	TISN     Field
}{
	Status:   ifcField("create_tis_out", "status", 0x0, 8),
	Syndrome: ifcField("create_tis_out", "syndrome", 0x20, 32),
	TISN:     ifcField("create_tis_out", "tisn", 0x48, 24),
}

// ModifyTISIn is MODIFY_TIS input (mlx5_ifc.h struct mlx5_ifc_modify_tis_in_bits).
var ModifyTISIn = struct {
	Opcode  Field
	UID     Field
	OpMod   Field
	TISN    Field
	Bitmask Field
	Ctx     Field
}{
	Opcode:  ifcField("modify_tis_in", "opcode", 0x0, 16),
	UID:     ifcField("modify_tis_in", "uid", 0x10, 16),
	OpMod:   ifcField("modify_tis_in", "op_mod", 0x30, 16),
	TISN:    ifcField("modify_tis_in", "tisn", 0x48, 24),
	Bitmask: ifcField("modify_tis_in", "bitmask", 0x80, 64),
	Ctx:     ifcField("modify_tis_in", "ctx", 0x100, 1280),
}

// DestroyTISIn is DESTROY_TIS input (mlx5_ifc.h struct mlx5_ifc_destroy_tis_in_bits).
var DestroyTISIn = struct {
	Opcode Field
	UID    Field
	OpMod  Field
	TISN   Field
}{
	Opcode: ifcField("destroy_tis_in", "opcode", 0x0, 16),
	UID:    ifcField("destroy_tis_in", "uid", 0x10, 16),
	OpMod:  ifcField("destroy_tis_in", "op_mod", 0x30, 16),
	TISN:   ifcField("destroy_tis_in", "tisn", 0x48, 24),
}

// QueryTISIn is QUERY_TIS input (mlx5_ifc.h struct mlx5_ifc_query_tis_in_bits).
var QueryTISIn = struct {
	Opcode Field
	OpMod  Field
	TISN   Field
}{
	Opcode: ifcField("query_tis_in", "opcode", 0x0, 16),
	OpMod:  ifcField("query_tis_in", "op_mod", 0x30, 16),
	TISN:   ifcField("query_tis_in", "tisn", 0x48, 24),
}

// QueryTISOut is QUERY_TIS output (mlx5_ifc.h struct mlx5_ifc_query_tis_out_bits).
var QueryTISOut = struct {
	Status     Field
	Syndrome   Field
	TISContext Field
}{
	Status:     ifcField("query_tis_out", "status", 0x0, 8),
	Syndrome:   ifcField("query_tis_out", "syndrome", 0x20, 32),
	TISContext: ifcField("query_tis_out", "tis_context", 0x80, 1280),
}
