package prm

// The command interface: the initialization segment, command-queue entries and mailboxes, the
// command header, events and the bring-up commands. Offsets and widths in bits, as gcc lays out
// include/linux/mlx5/mlx5_ifc.h (Linux 6.1); TestLayout checks every one against the installed
// headers.

// CmdIn is the header every command input starts with: opcode and op_mod (the uid is at the same
// place in every command that has one; see GeneralObjInCmdHdr.UID) (mlx5_ifc.h struct
// mlx5_ifc_cmd_in_bits).
var CmdIn = struct {
	Opcode  Field
	OpMod   Field
	Command Field
}{
	Opcode:  ifcField("cmd_in", "opcode", 0x0, 16),
	OpMod:   ifcField("cmd_in", "op_mod", 0x30, 16),
	Command: ifcField("cmd_in", "command[0]", 0x40, 32),
}

// CmdOut is the header every command output starts with: status and syndrome (mlx5_ifc.h struct
// mlx5_ifc_cmd_out_bits).
var CmdOut = struct {
	Status        Field
	Syndrome      Field
	CommandOutput Field
}{
	Status:        ifcField("cmd_out", "status", 0x0, 8),
	Syndrome:      ifcField("cmd_out", "syndrome", 0x20, 32),
	CommandOutput: ifcField("cmd_out", "command_output", 0x40, 32),
}

// GeneralObjInCmdHdr is the input header of the general-object commands (UMEM and other DevX
// objects) (mlx5_ifc.h struct mlx5_ifc_general_obj_in_cmd_hdr_bits).
var GeneralObjInCmdHdr = struct {
	Opcode       Field
	UID          Field
	VHCATunnelID Field
	ObjType      Field
	ObjID        Field
	LogObjRange  Field
}{
	Opcode:       ifcField("general_obj_in_cmd_hdr", "opcode", 0x0, 16),
	UID:          ifcField("general_obj_in_cmd_hdr", "uid", 0x10, 16),
	VHCATunnelID: ifcField("general_obj_in_cmd_hdr", "vhca_tunnel_id", 0x20, 16),
	ObjType:      ifcField("general_obj_in_cmd_hdr", "obj_type", 0x30, 16),
	ObjID:        ifcField("general_obj_in_cmd_hdr", "obj_id", 0x40, 32),
	LogObjRange:  ifcField("general_obj_in_cmd_hdr", "log_obj_range", 0x63, 5),
}

// GeneralObjOutCmdHdr is the output header of the general-object commands (mlx5_ifc.h struct
// mlx5_ifc_general_obj_out_cmd_hdr_bits).
var GeneralObjOutCmdHdr = struct {
	Status   Field
	Syndrome Field
	ObjID    Field
}{
	Status:   ifcField("general_obj_out_cmd_hdr", "status", 0x0, 8),
	Syndrome: ifcField("general_obj_out_cmd_hdr", "syndrome", 0x20, 32),
	ObjID:    ifcField("general_obj_out_cmd_hdr", "obj_id", 0x40, 32),
}

// InitialSeg is the initialization segment at the start of BAR0: firmware and command-interface
// revisions, the command queue's address and doorbell, the initializing bit, the health buffer and
// counter, the internal timer (mlx5_ifc.h struct mlx5_ifc_initial_seg_bits).
var InitialSeg = struct {
	FWRevMinor            Field
	FWRevMajor            Field
	CmdInterfaceRev       Field
	FWRevSubminor         Field
	CmdqPhyAddrHi         Field
	CmdqPhyAddrLo         Field
	NICInterface          Field
	LogCmdqSize           Field
	LogCmdqStride         Field
	CommandDoorbellVector Field
	Initializing          Field
	NICInterfaceSupported Field
	EmbeddedCpu           Field
	HealthBuffer          Field
	NoDramNICOffset       Field
	ClearInt              Field
	HealthSyndrome        Field
	HealthCounter         Field
}{
	FWRevMinor:            ifcField("initial_seg", "fw_rev_minor", 0x0, 16),
	FWRevMajor:            ifcField("initial_seg", "fw_rev_major", 0x10, 16),
	CmdInterfaceRev:       ifcField("initial_seg", "cmd_interface_rev", 0x20, 16),
	FWRevSubminor:         ifcField("initial_seg", "fw_rev_subminor", 0x30, 16),
	CmdqPhyAddrHi:         ifcField("initial_seg", "cmdq_phy_addr_63_32", 0x80, 32),
	CmdqPhyAddrLo:         ifcField("initial_seg", "cmdq_phy_addr_31_12", 0xa0, 20),
	NICInterface:          ifcField("initial_seg", "nic_interface", 0xb6, 2),
	LogCmdqSize:           ifcField("initial_seg", "log_cmdq_size", 0xb8, 4),
	LogCmdqStride:         ifcField("initial_seg", "log_cmdq_stride", 0xbc, 4),
	CommandDoorbellVector: ifcField("initial_seg", "command_doorbell_vector", 0xc0, 32),
	Initializing:          ifcField("initial_seg", "initializing", 0xfe0, 1),
	NICInterfaceSupported: ifcField("initial_seg", "nic_interface_supported", 0xfe5, 3),
	EmbeddedCpu:           ifcField("initial_seg", "embedded_cpu", 0xfe8, 1),
	HealthBuffer:          ifcField("initial_seg", "health_buffer", 0x1000, 512),
	NoDramNICOffset:       ifcField("initial_seg", "no_dram_nic_offset", 0x1200, 32),
	ClearInt:              ifcField("initial_seg", "clear_int", 0x807f, 1),
	HealthSyndrome:        ifcField("initial_seg", "health_syndrome", 0x8080, 8),
	HealthCounter:         ifcField("initial_seg", "health_counter", 0x8088, 24),
}

// HealthBuffer is the health buffer inside the initialization segment (mlx5_ifc.h struct
// mlx5_ifc_health_buffer_bits).
var HealthBuffer = struct {
	AssertExistptr Field
	AssertCallra   Field
	Time           Field
	FWVersion      Field
	HWID           Field
	Rfr            Field
	Valid          Field
	Severity       Field
	IriscIndex     Field
	Synd           Field
	ExtSynd        Field
}{
	AssertExistptr: ifcField("health_buffer", "assert_existptr", 0x100, 32),
	AssertCallra:   ifcField("health_buffer", "assert_callra", 0x120, 32),
	Time:           ifcField("health_buffer", "time", 0x160, 32),
	FWVersion:      ifcField("health_buffer", "fw_version", 0x180, 32),
	HWID:           ifcField("health_buffer", "hw_id", 0x1a0, 32),
	Rfr:            ifcField("health_buffer", "rfr", 0x1c0, 1),
	Valid:          ifcField("health_buffer", "valid", 0x1c4, 1),
	Severity:       ifcField("health_buffer", "severity", 0x1c5, 3),
	IriscIndex:     ifcField("health_buffer", "irisc_index", 0x1e0, 8),
	Synd:           ifcField("health_buffer", "synd", 0x1e8, 8),
	ExtSynd:        ifcField("health_buffer", "ext_synd", 0x1f0, 16),
}

// CmdQueueEntry is one command-queue entry (64 bytes): inline input/output, mailbox pointers,
// lengths, token, status and ownership (mlx5_ifc.h struct mlx5_ifc_cmd_queue_entry_bits).
var CmdQueueEntry = struct {
	Type                    Field
	InputLength             Field
	InputMailboxPointerHi   Field
	InputMailboxPointerLo   Field
	CommandInputInlineData  Field
	CommandOutputInlineData Field
	OutputMailboxPointerHi  Field
	OutputMailboxPointerLo  Field
	OutputLength            Field
	Token                   Field
	Signature               Field
	Status                  Field
	Ownership               Field
}{
	Type:                    ifcField("cmd_queue_entry", "type", 0x0, 8),
	InputLength:             ifcField("cmd_queue_entry", "input_length", 0x20, 32),
	InputMailboxPointerHi:   ifcField("cmd_queue_entry", "input_mailbox_pointer_63_32", 0x40, 32),
	InputMailboxPointerLo:   ifcField("cmd_queue_entry", "input_mailbox_pointer_31_9", 0x60, 23),
	CommandInputInlineData:  ifcField("cmd_queue_entry", "command_input_inline_data[0]", 0x80, 8),
	CommandOutputInlineData: ifcField("cmd_queue_entry", "command_output_inline_data[0]", 0x100, 8),
	OutputMailboxPointerHi:  ifcField("cmd_queue_entry", "output_mailbox_pointer_63_32", 0x180, 32),
	OutputMailboxPointerLo:  ifcField("cmd_queue_entry", "output_mailbox_pointer_31_9", 0x1a0, 23),
	OutputLength:            ifcField("cmd_queue_entry", "output_length", 0x1c0, 32),
	Token:                   ifcField("cmd_queue_entry", "token", 0x1e0, 8),
	Signature:               ifcField("cmd_queue_entry", "signature", 0x1e8, 8),
	Status:                  ifcField("cmd_queue_entry", "status", 0x1f8, 7),
	Ownership:               ifcField("cmd_queue_entry", "ownership", 0x1ff, 1),
}

// CmdIfBox is one command mailbox block: 512 data bytes, the next pointer, block number and token
// (mlx5_ifc.h struct mlx5_ifc_cmd_if_box_bits).
var CmdIfBox = struct {
	MailboxData   Field
	NextPointerHi Field
	NextPointerLo Field
	BlockNumber   Field
	Token         Field
	CtrlSignature Field
	Signature     Field
}{
	MailboxData:   ifcField("cmd_if_box", "mailbox_data[0]", 0x0, 8),
	NextPointerHi: ifcField("cmd_if_box", "next_pointer_63_32", 0x1180, 32),
	NextPointerLo: ifcField("cmd_if_box", "next_pointer_31_10", 0x11a0, 22),
	BlockNumber:   ifcField("cmd_if_box", "block_number", 0x11c0, 32),
	Token:         ifcField("cmd_if_box", "token", 0x11e8, 8),
	CtrlSignature: ifcField("cmd_if_box", "ctrl_signature", 0x11f0, 8),
	Signature:     ifcField("cmd_if_box", "signature", 0x11f8, 8),
}

// CmdPAS is one 64-bit physical address in a MANAGE_PAGES list (mlx5_ifc.h struct
// mlx5_ifc_cmd_pas_bits).
var CmdPAS = struct {
	PaH Field
	PaL Field
}{
	PaH: ifcField("cmd_pas", "pa_h", 0x0, 32),
	PaL: ifcField("cmd_pas", "pa_l", 0x20, 20),
}

// EQE is an event queue entry (mlx5_ifc.h struct mlx5_ifc_eqe_bits).
var EQE = struct {
	EventType    Field
	EventSubType Field
	EventData    Field
	Signature    Field
	Owner        Field
}{
	EventType:    ifcField("eqe", "event_type", 0x8, 8),
	EventSubType: ifcField("eqe", "event_sub_type", 0x18, 8),
	EventData:    ifcField("eqe", "event_data", 0x100, 224),
	Signature:    ifcField("eqe", "signature", 0x1f0, 8),
	Owner:        ifcField("eqe", "owner", 0x1ff, 1),
}

// CompEvent is the event data of a completion EQE (mlx5_ifc.h struct mlx5_ifc_comp_event_bits).
var CompEvent = struct {
	CQNumber Field
}{
	CQNumber: ifcField("comp_event", "cq_number", 0xc8, 24),
}

// CmdInterCompEvent is the event data of a command-completion EQE (mlx5_ifc.h struct
// mlx5_ifc_cmd_inter_comp_event_bits).
var CmdInterCompEvent = struct {
	CommandCompletionVector Field
}{
	CommandCompletionVector: ifcField("cmd_inter_comp_event", "command_completion_vector", 0x0, 32),
}

// CQError is the event data of a CQ error EQE (mlx5_ifc.h struct mlx5_ifc_cq_error_bits).
var CQError = struct {
	CQN      Field
	Syndrome Field
}{
	CQN:      ifcField("cq_error", "cqn", 0x8, 24),
	Syndrome: ifcField("cq_error", "syndrome", 0x58, 8),
}

// QPEvents is the event data of a work-queue event EQE (RQ/SQ number and type) (mlx5_ifc.h struct
// mlx5_ifc_qp_events_bits).
var QPEvents = struct {
	Type      Field
	QPNRQNSQN Field
}{
	Type:      ifcField("qp_events", "type", 0xa0, 8),
	QPNRQNSQN: ifcField("qp_events", "qpn_rqn_sqn", 0xc8, 24),
}

// EQC is the event queue context (mlx5_ifc.h struct mlx5_ifc_eqc_bits).
var EQC = struct {
	Status          Field
	Ec              Field
	Oi              Field
	St              Field
	PageOffset      Field
	LogEQSize       Field
	UARPage         Field
	Intr            Field
	LogPageSize     Field
	ConsumerCounter Field
	ProducerCounter Field
}{
	Status:          ifcField("eqc", "status", 0x0, 4),
	Ec:              ifcField("eqc", "ec", 0xd, 1),
	Oi:              ifcField("eqc", "oi", 0xe, 1),
	St:              ifcField("eqc", "st", 0x14, 4),
	PageOffset:      ifcField("eqc", "page_offset", 0x54, 6),
	LogEQSize:       ifcField("eqc", "log_eq_size", 0x63, 5),
	UARPage:         ifcField("eqc", "uar_page", 0x68, 24),
	Intr:            ifcField("eqc", "intr", 0xb4, 12),
	LogPageSize:     ifcField("eqc", "log_page_size", 0xc3, 5),
	ConsumerCounter: ifcField("eqc", "consumer_counter", 0x148, 24),
	ProducerCounter: ifcField("eqc", "producer_counter", 0x168, 24),
}

// CreateEQIn is CREATE_EQ input (mlx5_ifc.h struct mlx5_ifc_create_eq_in_bits).
var CreateEQIn = struct {
	Opcode         Field
	UID            Field
	OpMod          Field
	EQContextEntry Field
	EventBitmask   Field
	PAS            Field
}{
	Opcode:         ifcField("create_eq_in", "opcode", 0x0, 16),
	UID:            ifcField("create_eq_in", "uid", 0x10, 16),
	OpMod:          ifcField("create_eq_in", "op_mod", 0x30, 16),
	EQContextEntry: ifcField("create_eq_in", "eq_context_entry", 0x80, 512),
	EventBitmask:   ifcField("create_eq_in", "event_bitmask[0]", 0x2c0, 64),
	PAS:            ifcField("create_eq_in", "pas[0]", 0x880, 64),
}

// CreateEQOut is CREATE_EQ output (mlx5_ifc.h struct mlx5_ifc_create_eq_out_bits).
var CreateEQOut = struct {
	Status   Field
	Syndrome Field
	EQNumber Field
}{
	Status:   ifcField("create_eq_out", "status", 0x0, 8),
	Syndrome: ifcField("create_eq_out", "syndrome", 0x20, 32),
	EQNumber: ifcField("create_eq_out", "eq_number", 0x58, 8),
}

// DestroyEQIn is DESTROY_EQ input (mlx5_ifc.h struct mlx5_ifc_destroy_eq_in_bits).
var DestroyEQIn = struct {
	Opcode   Field
	OpMod    Field
	EQNumber Field
}{
	Opcode:   ifcField("destroy_eq_in", "opcode", 0x0, 16),
	OpMod:    ifcField("destroy_eq_in", "op_mod", 0x30, 16),
	EQNumber: ifcField("destroy_eq_in", "eq_number", 0x58, 8),
}

// QueryEQIn is QUERY_EQ input (mlx5_ifc.h struct mlx5_ifc_query_eq_in_bits).
var QueryEQIn = struct {
	Opcode   Field
	OpMod    Field
	EQNumber Field
}{
	Opcode:   ifcField("query_eq_in", "opcode", 0x0, 16),
	OpMod:    ifcField("query_eq_in", "op_mod", 0x30, 16),
	EQNumber: ifcField("query_eq_in", "eq_number", 0x58, 8),
}

// QueryEQOut is QUERY_EQ output (mlx5_ifc.h struct mlx5_ifc_query_eq_out_bits).
var QueryEQOut = struct {
	Status         Field
	Syndrome       Field
	EQContextEntry Field
	EventBitmask   Field
	PAS            Field
}{
	Status:         ifcField("query_eq_out", "status", 0x0, 8),
	Syndrome:       ifcField("query_eq_out", "syndrome", 0x20, 32),
	EQContextEntry: ifcField("query_eq_out", "eq_context_entry", 0x80, 512),
	EventBitmask:   ifcField("query_eq_out", "event_bitmask", 0x2c0, 64),
	PAS:            ifcField("query_eq_out", "pas[0]", 0x880, 64),
}

// EnableHCAIn is ENABLE_HCA input (mlx5_ifc.h struct mlx5_ifc_enable_hca_in_bits).
var EnableHCAIn = struct {
	Opcode              Field
	OpMod               Field
	EmbeddedCpuFunction Field
	FunctionID          Field
}{
	Opcode:              ifcField("enable_hca_in", "opcode", 0x0, 16),
	OpMod:               ifcField("enable_hca_in", "op_mod", 0x30, 16),
	EmbeddedCpuFunction: ifcField("enable_hca_in", "embedded_cpu_function", 0x40, 1),
	FunctionID:          ifcField("enable_hca_in", "function_id", 0x50, 16),
}

// DisableHCAIn is DISABLE_HCA input (mlx5_ifc.h struct mlx5_ifc_disable_hca_in_bits).
var DisableHCAIn = struct {
	Opcode              Field
	OpMod               Field
	EmbeddedCpuFunction Field
	FunctionID          Field
}{
	Opcode:              ifcField("disable_hca_in", "opcode", 0x0, 16),
	OpMod:               ifcField("disable_hca_in", "op_mod", 0x30, 16),
	EmbeddedCpuFunction: ifcField("disable_hca_in", "embedded_cpu_function", 0x40, 1),
	FunctionID:          ifcField("disable_hca_in", "function_id", 0x50, 16),
}

// QueryISSIIn is QUERY_ISSI input (mlx5_ifc.h struct mlx5_ifc_query_issi_in_bits).
var QueryISSIIn = struct {
	Opcode Field
	OpMod  Field
}{
	Opcode: ifcField("query_issi_in", "opcode", 0x0, 16),
	OpMod:  ifcField("query_issi_in", "op_mod", 0x30, 16),
}

// QueryISSIOut is QUERY_ISSI output (mlx5_ifc.h struct mlx5_ifc_query_issi_out_bits).
var QueryISSIOut = struct {
	Status           Field
	Syndrome         Field
	CurrentISSI      Field
	SupportedISSIDw0 Field
}{
	Status:           ifcField("query_issi_out", "status", 0x0, 8),
	Syndrome:         ifcField("query_issi_out", "syndrome", 0x20, 32),
	CurrentISSI:      ifcField("query_issi_out", "current_issi", 0x50, 16),
	SupportedISSIDw0: ifcField("query_issi_out", "supported_issi_dw0", 0x360, 32),
}

// SetISSIIn is SET_ISSI input (mlx5_ifc.h struct mlx5_ifc_set_issi_in_bits).
var SetISSIIn = struct {
	Opcode      Field
	OpMod       Field
	CurrentISSI Field
}{
	Opcode:      ifcField("set_issi_in", "opcode", 0x0, 16),
	OpMod:       ifcField("set_issi_in", "op_mod", 0x30, 16),
	CurrentISSI: ifcField("set_issi_in", "current_issi", 0x50, 16),
}

// QueryPagesIn is QUERY_PAGES input (mlx5_ifc.h struct mlx5_ifc_query_pages_in_bits).
var QueryPagesIn = struct {
	Opcode              Field
	OpMod               Field
	EmbeddedCpuFunction Field
	FunctionID          Field
}{
	Opcode:              ifcField("query_pages_in", "opcode", 0x0, 16),
	OpMod:               ifcField("query_pages_in", "op_mod", 0x30, 16),
	EmbeddedCpuFunction: ifcField("query_pages_in", "embedded_cpu_function", 0x40, 1),
	FunctionID:          ifcField("query_pages_in", "function_id", 0x50, 16),
}

// QueryPagesOut is QUERY_PAGES output (mlx5_ifc.h struct mlx5_ifc_query_pages_out_bits).
var QueryPagesOut = struct {
	Status              Field
	Syndrome            Field
	EmbeddedCpuFunction Field
	FunctionID          Field
	NumPages            Field
}{
	Status:              ifcField("query_pages_out", "status", 0x0, 8),
	Syndrome:            ifcField("query_pages_out", "syndrome", 0x20, 32),
	EmbeddedCpuFunction: ifcField("query_pages_out", "embedded_cpu_function", 0x40, 1),
	FunctionID:          ifcField("query_pages_out", "function_id", 0x50, 16),
	NumPages:            ifcField("query_pages_out", "num_pages", 0x60, 32),
}

// ManagePagesIn is MANAGE_PAGES input (mlx5_ifc.h struct mlx5_ifc_manage_pages_in_bits).
var ManagePagesIn = struct {
	Opcode              Field
	OpMod               Field
	EmbeddedCpuFunction Field
	FunctionID          Field
	InputNumEntries     Field
	PAS                 Field
}{
	Opcode:              ifcField("manage_pages_in", "opcode", 0x0, 16),
	OpMod:               ifcField("manage_pages_in", "op_mod", 0x30, 16),
	EmbeddedCpuFunction: ifcField("manage_pages_in", "embedded_cpu_function", 0x40, 1),
	FunctionID:          ifcField("manage_pages_in", "function_id", 0x50, 16),
	InputNumEntries:     ifcField("manage_pages_in", "input_num_entries", 0x60, 32),
	PAS:                 ifcField("manage_pages_in", "pas[0]", 0x80, 64),
}

// ManagePagesOut is MANAGE_PAGES output (mlx5_ifc.h struct mlx5_ifc_manage_pages_out_bits).
var ManagePagesOut = struct {
	Status           Field
	Syndrome         Field
	OutputNumEntries Field
	PAS              Field
}{
	Status:           ifcField("manage_pages_out", "status", 0x0, 8),
	Syndrome:         ifcField("manage_pages_out", "syndrome", 0x20, 32),
	OutputNumEntries: ifcField("manage_pages_out", "output_num_entries", 0x40, 32),
	PAS:              ifcField("manage_pages_out", "pas[0]", 0x80, 64),
}

// AccessRegisterIn is ACCESS_REG input (mlx5_ifc.h struct mlx5_ifc_access_register_in_bits).
var AccessRegisterIn = struct {
	Opcode       Field
	OpMod        Field
	RegisterID   Field
	Argument     Field
	RegisterData Field
}{
	Opcode:       ifcField("access_register_in", "opcode", 0x0, 16),
	OpMod:        ifcField("access_register_in", "op_mod", 0x30, 16),
	RegisterID:   ifcField("access_register_in", "register_id", 0x50, 16),
	Argument:     ifcField("access_register_in", "argument", 0x60, 32),
	RegisterData: ifcField("access_register_in", "register_data[0]", 0x80, 32),
}

// AccessRegisterOut is ACCESS_REG output (mlx5_ifc.h struct mlx5_ifc_access_register_out_bits).
var AccessRegisterOut = struct {
	Status       Field
	Syndrome     Field
	RegisterData Field
}{
	Status:       ifcField("access_register_out", "status", 0x0, 8),
	Syndrome:     ifcField("access_register_out", "syndrome", 0x20, 32),
	RegisterData: ifcField("access_register_out", "register_data[0]", 0x80, 32),
}

// QueryHCACapIn is QUERY_HCA_CAP input (mlx5_ifc.h struct mlx5_ifc_query_hca_cap_in_bits).
var QueryHCACapIn = struct {
	Opcode        Field
	OpMod         Field
	OtherFunction Field
	FunctionID    Field
}{
	Opcode:        ifcField("query_hca_cap_in", "opcode", 0x0, 16),
	OpMod:         ifcField("query_hca_cap_in", "op_mod", 0x30, 16),
	OtherFunction: ifcField("query_hca_cap_in", "other_function", 0x40, 1),
	FunctionID:    ifcField("query_hca_cap_in", "function_id", 0x50, 16),
}

// QueryHCACapOut is QUERY_HCA_CAP output (mlx5_ifc.h struct mlx5_ifc_query_hca_cap_out_bits).
var QueryHCACapOut = struct {
	Status     Field
	Syndrome   Field
	Capability Field
}{
	Status:     ifcField("query_hca_cap_out", "status", 0x0, 8),
	Syndrome:   ifcField("query_hca_cap_out", "syndrome", 0x20, 32),
	Capability: ifcField("query_hca_cap_out", "capability", 0x80, 32768),
}

// SetHCACapIn is SET_HCA_CAP input (mlx5_ifc.h struct mlx5_ifc_set_hca_cap_in_bits).
var SetHCACapIn = struct {
	Opcode        Field
	OpMod         Field
	OtherFunction Field
	FunctionID    Field
	Capability    Field
}{
	Opcode:        ifcField("set_hca_cap_in", "opcode", 0x0, 16),
	OpMod:         ifcField("set_hca_cap_in", "op_mod", 0x30, 16),
	OtherFunction: ifcField("set_hca_cap_in", "other_function", 0x40, 1),
	FunctionID:    ifcField("set_hca_cap_in", "function_id", 0x50, 16),
	Capability:    ifcField("set_hca_cap_in", "capability", 0x80, 32768),
}

// InitHCAIn is INIT_HCA input (mlx5_ifc.h struct mlx5_ifc_init_hca_in_bits).
var InitHCAIn = struct {
	Opcode    Field
	OpMod     Field
	SWVHCAID  Field
	SWOwnerID Field
}{
	Opcode:    ifcField("init_hca_in", "opcode", 0x0, 16),
	OpMod:     ifcField("init_hca_in", "op_mod", 0x30, 16),
	SWVHCAID:  ifcField("init_hca_in", "sw_vhca_id", 0x62, 14),
	SWOwnerID: ifcField("init_hca_in", "sw_owner_id[0]", 0x80, 32),
}

// TeardownHCAIn is TEARDOWN_HCA input (mlx5_ifc.h struct mlx5_ifc_teardown_hca_in_bits).
var TeardownHCAIn = struct {
	Opcode  Field
	OpMod   Field
	Profile Field
}{
	Opcode:  ifcField("teardown_hca_in", "opcode", 0x0, 16),
	OpMod:   ifcField("teardown_hca_in", "op_mod", 0x30, 16),
	Profile: ifcField("teardown_hca_in", "profile", 0x50, 16),
}

// TeardownHCAOut is TEARDOWN_HCA output (mlx5_ifc.h struct mlx5_ifc_teardown_hca_out_bits).
var TeardownHCAOut = struct {
	Status   Field
	Syndrome Field
	State    Field
}{
	Status:   ifcField("teardown_hca_out", "status", 0x0, 8),
	Syndrome: ifcField("teardown_hca_out", "syndrome", 0x20, 32),
	State:    ifcField("teardown_hca_out", "state", 0x7f, 1),
}

// NICVportContext is the NIC vport context (MAC list, MTU, promiscuous modes) (mlx5_ifc.h struct
// mlx5_ifc_nic_vport_context_bits).
var NICVportContext = struct {
	MinWQEInlineMode       Field
	DisableMCLocalLB       Field
	DisableUCLocalLB       Field
	RoCEEn                 Field
	ArmChangeEvent         Field
	EventOnMTU             Field
	EventOnPromiscChange   Field
	EventOnVLANChange      Field
	EventOnMCAddressChange Field
	EventOnUCAddressChange Field
	VHCAIDType             Field
	AffiliationCriteria    Field
	AffiliatedVHCAID       Field
	MTU                    Field
	SystemImageGuid        Field
	PortGuid               Field
	NodeGuid               Field
	QkeyViolationCounter   Field
	PromiscUC              Field
	PromiscMC              Field
	PromiscAll             Field
	AllowedListType        Field
	AllowedListSize        Field
	PermanentAddress       Field
	CurrentUCMACAddress    Field
}{
	MinWQEInlineMode:       ifcField("nic_vport_context", "min_wqe_inline_mode", 0x5, 3),
	DisableMCLocalLB:       ifcField("nic_vport_context", "disable_mc_local_lb", 0x1d, 1),
	DisableUCLocalLB:       ifcField("nic_vport_context", "disable_uc_local_lb", 0x1e, 1),
	RoCEEn:                 ifcField("nic_vport_context", "roce_en", 0x1f, 1),
	ArmChangeEvent:         ifcField("nic_vport_context", "arm_change_event", 0x20, 1),
	EventOnMTU:             ifcField("nic_vport_context", "event_on_mtu", 0x3b, 1),
	EventOnPromiscChange:   ifcField("nic_vport_context", "event_on_promisc_change", 0x3c, 1),
	EventOnVLANChange:      ifcField("nic_vport_context", "event_on_vlan_change", 0x3d, 1),
	EventOnMCAddressChange: ifcField("nic_vport_context", "event_on_mc_address_change", 0x3e, 1),
	EventOnUCAddressChange: ifcField("nic_vport_context", "event_on_uc_address_change", 0x3f, 1),
	VHCAIDType:             ifcField("nic_vport_context", "vhca_id_type", 0x40, 1),
	AffiliationCriteria:    ifcField("nic_vport_context", "affiliation_criteria", 0x4c, 4),
	AffiliatedVHCAID:       ifcField("nic_vport_context", "affiliated_vhca_id", 0x50, 16),
	MTU:                    ifcField("nic_vport_context", "mtu", 0x130, 16),
	SystemImageGuid:        ifcField("nic_vport_context", "system_image_guid", 0x140, 64),
	PortGuid:               ifcField("nic_vport_context", "port_guid", 0x180, 64),
	NodeGuid:               ifcField("nic_vport_context", "node_guid", 0x1c0, 64),
	QkeyViolationCounter:   ifcField("nic_vport_context", "qkey_violation_counter", 0x340, 16),
	PromiscUC:              ifcField("nic_vport_context", "promisc_uc", 0x780, 1),
	PromiscMC:              ifcField("nic_vport_context", "promisc_mc", 0x781, 1),
	PromiscAll:             ifcField("nic_vport_context", "promisc_all", 0x782, 1),
	AllowedListType:        ifcField("nic_vport_context", "allowed_list_type", 0x785, 3),
	AllowedListSize:        ifcField("nic_vport_context", "allowed_list_size", 0x794, 12),
	PermanentAddress:       ifcField("nic_vport_context", "permanent_address", 0x7a0, 64),
	CurrentUCMACAddress:    ifcField("nic_vport_context", "current_uc_mac_address[0]", 0x800, 64),
}

// QueryNICVportContextIn is QUERY_NIC_VPORT_CONTEXT input (mlx5_ifc.h struct
// mlx5_ifc_query_nic_vport_context_in_bits).
var QueryNICVportContextIn = struct {
	Opcode          Field
	OpMod           Field
	OtherVport      Field
	VportNumber     Field
	AllowedListType Field
}{
	Opcode:          ifcField("query_nic_vport_context_in", "opcode", 0x0, 16),
	OpMod:           ifcField("query_nic_vport_context_in", "op_mod", 0x30, 16),
	OtherVport:      ifcField("query_nic_vport_context_in", "other_vport", 0x40, 1),
	VportNumber:     ifcField("query_nic_vport_context_in", "vport_number", 0x50, 16),
	AllowedListType: ifcField("query_nic_vport_context_in", "allowed_list_type", 0x65, 3),
}

// QueryNICVportContextOut is QUERY_NIC_VPORT_CONTEXT output (mlx5_ifc.h struct
// mlx5_ifc_query_nic_vport_context_out_bits).
var QueryNICVportContextOut = struct {
	Status          Field
	Syndrome        Field
	NICVportContext Field
}{
	Status:          ifcField("query_nic_vport_context_out", "status", 0x0, 8),
	Syndrome:        ifcField("query_nic_vport_context_out", "syndrome", 0x20, 32),
	NICVportContext: ifcField("query_nic_vport_context_out", "nic_vport_context", 0x80, 2048),
}

// ModifyNICVportContextIn is MODIFY_NIC_VPORT_CONTEXT input (mlx5_ifc.h struct
// mlx5_ifc_modify_nic_vport_context_in_bits).
var ModifyNICVportContextIn = struct {
	Opcode          Field
	OpMod           Field
	OtherVport      Field
	VportNumber     Field
	FieldSelect     Field
	NICVportContext Field
}{
	Opcode:          ifcField("modify_nic_vport_context_in", "opcode", 0x0, 16),
	OpMod:           ifcField("modify_nic_vport_context_in", "op_mod", 0x30, 16),
	OtherVport:      ifcField("modify_nic_vport_context_in", "other_vport", 0x40, 1),
	VportNumber:     ifcField("modify_nic_vport_context_in", "vport_number", 0x50, 16),
	FieldSelect:     ifcField("modify_nic_vport_context_in", "field_select", 0x60, 32),
	NICVportContext: ifcField("modify_nic_vport_context_in", "nic_vport_context", 0x800, 2048),
}

// ModifyNICVportFieldSelect is the field-select bits of MODIFY_NIC_VPORT_CONTEXT (mlx5_ifc.h
// struct mlx5_ifc_modify_nic_vport_field_select_bits).
var ModifyNICVportFieldSelect = struct {
	Affiliation      Field
	DisableUCLocalLB Field
	DisableMCLocalLB Field
	NodeGuid         Field
	PortGuid         Field
	MinInline        Field
	MTU              Field
	ChangeEvent      Field
	Promisc          Field
	PermanentAddress Field
	AddressesList    Field
	RoCEEn           Field
}{
	Affiliation:      ifcField("modify_nic_vport_field_select", "affiliation", 0x12, 1),
	DisableUCLocalLB: ifcField("modify_nic_vport_field_select", "disable_uc_local_lb", 0x14, 1),
	DisableMCLocalLB: ifcField("modify_nic_vport_field_select", "disable_mc_local_lb", 0x15, 1),
	NodeGuid:         ifcField("modify_nic_vport_field_select", "node_guid", 0x16, 1),
	PortGuid:         ifcField("modify_nic_vport_field_select", "port_guid", 0x17, 1),
	MinInline:        ifcField("modify_nic_vport_field_select", "min_inline", 0x18, 1),
	MTU:              ifcField("modify_nic_vport_field_select", "mtu", 0x19, 1),
	ChangeEvent:      ifcField("modify_nic_vport_field_select", "change_event", 0x1a, 1),
	Promisc:          ifcField("modify_nic_vport_field_select", "promisc", 0x1b, 1),
	PermanentAddress: ifcField("modify_nic_vport_field_select", "permanent_address", 0x1c, 1),
	AddressesList:    ifcField("modify_nic_vport_field_select", "addresses_list", 0x1d, 1),
	RoCEEn:           ifcField("modify_nic_vport_field_select", "roce_en", 0x1e, 1),
}

// MACAddressLayout is one entry of the vport context's current_uc_mac_address list (mlx5_ifc.h
// struct mlx5_ifc_mac_address_layout_bits).
var MACAddressLayout = struct {
	MACAddrHi Field
	MACAddrLo Field
}{
	MACAddrHi: ifcField("mac_address_layout", "mac_addr_47_32", 0x10, 16),
	MACAddrLo: ifcField("mac_address_layout", "mac_addr_31_0", 0x20, 32),
}
