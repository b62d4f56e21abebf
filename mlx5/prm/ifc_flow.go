package prm

// Flow tables, groups and entries, match parameters, packet reformat and packet pacing. Offsets
// and widths in bits, as gcc lays out include/linux/mlx5/mlx5_ifc.h (Linux 6.1); TestLayout checks
// every one against the installed headers.

// FlowTableContext is the flow table context (mlx5_ifc.h struct mlx5_ifc_flow_table_context_bits).
var FlowTableContext = struct {
	ReformatEn           Field
	DecapEn              Field
	SWOwner              Field
	TerminationTable     Field
	TableMissAction      Field
	Level                Field
	LogSize              Field
	TableMissID          Field
	LAGMasterNextTableID Field
	SWOwnerICMRoot1      Field
	SWOwnerICMRoot0      Field
}{
	ReformatEn:           ifcField("flow_table_context", "reformat_en", 0x0, 1),
	DecapEn:              ifcField("flow_table_context", "decap_en", 0x1, 1),
	SWOwner:              ifcField("flow_table_context", "sw_owner", 0x2, 1),
	TerminationTable:     ifcField("flow_table_context", "termination_table", 0x3, 1),
	TableMissAction:      ifcField("flow_table_context", "table_miss_action", 0x4, 4),
	Level:                ifcField("flow_table_context", "level", 0x8, 8),
	LogSize:              ifcField("flow_table_context", "log_size", 0x18, 8),
	TableMissID:          ifcField("flow_table_context", "table_miss_id", 0x28, 24),
	LAGMasterNextTableID: ifcField("flow_table_context", "lag_master_next_table_id", 0x48, 24),
	SWOwnerICMRoot1:      ifcField("flow_table_context", "sw_owner_icm_root_1", 0xc0, 64),
	SWOwnerICMRoot0:      ifcField("flow_table_context", "sw_owner_icm_root_0", 0x100, 64),
}

// CreateFlowTableIn is CREATE_FLOW_TABLE input (mlx5_ifc.h struct
// mlx5_ifc_create_flow_table_in_bits).
var CreateFlowTableIn = struct {
	Opcode           Field
	UID              Field
	OpMod            Field
	OtherVport       Field
	VportNumber      Field
	TableType        Field
	FlowTableContext Field
}{
	Opcode:           ifcField("create_flow_table_in", "opcode", 0x0, 16),
	UID:              ifcField("create_flow_table_in", "uid", 0x10, 16),
	OpMod:            ifcField("create_flow_table_in", "op_mod", 0x30, 16),
	OtherVport:       ifcField("create_flow_table_in", "other_vport", 0x40, 1),
	VportNumber:      ifcField("create_flow_table_in", "vport_number", 0x50, 16),
	TableType:        ifcField("create_flow_table_in", "table_type", 0x80, 8),
	FlowTableContext: ifcField("create_flow_table_in", "flow_table_context", 0xc0, 320),
}

// CreateFlowTableOut is CREATE_FLOW_TABLE output (mlx5_ifc.h struct
// mlx5_ifc_create_flow_table_out_bits).
var CreateFlowTableOut = struct {
	Status         Field
	ICMAddress6340 Field
	Syndrome       Field
	ICMAddressHi   Field
	TableID        Field
	ICMAddressLo   Field
}{
	Status:         ifcField("create_flow_table_out", "status", 0x0, 8),
	ICMAddress6340: ifcField("create_flow_table_out", "icm_address_63_40", 0x8, 24),
	Syndrome:       ifcField("create_flow_table_out", "syndrome", 0x20, 32),
	ICMAddressHi:   ifcField("create_flow_table_out", "icm_address_39_32", 0x40, 8),
	TableID:        ifcField("create_flow_table_out", "table_id", 0x48, 24),
	ICMAddressLo:   ifcField("create_flow_table_out", "icm_address_31_0", 0x60, 32),
}

// DestroyFlowTableIn is DESTROY_FLOW_TABLE input (mlx5_ifc.h struct
// mlx5_ifc_destroy_flow_table_in_bits).
var DestroyFlowTableIn = struct {
	Opcode      Field
	OpMod       Field
	OtherVport  Field
	VportNumber Field
	TableType   Field
	TableID     Field
}{
	Opcode:      ifcField("destroy_flow_table_in", "opcode", 0x0, 16),
	OpMod:       ifcField("destroy_flow_table_in", "op_mod", 0x30, 16),
	OtherVport:  ifcField("destroy_flow_table_in", "other_vport", 0x40, 1),
	VportNumber: ifcField("destroy_flow_table_in", "vport_number", 0x50, 16),
	TableType:   ifcField("destroy_flow_table_in", "table_type", 0x80, 8),
	TableID:     ifcField("destroy_flow_table_in", "table_id", 0xa8, 24),
}

// QueryFlowTableIn is QUERY_FLOW_TABLE input (mlx5_ifc.h struct
// mlx5_ifc_query_flow_table_in_bits).
var QueryFlowTableIn = struct {
	Opcode    Field
	OpMod     Field
	TableType Field
	TableID   Field
}{
	Opcode:    ifcField("query_flow_table_in", "opcode", 0x0, 16),
	OpMod:     ifcField("query_flow_table_in", "op_mod", 0x30, 16),
	TableType: ifcField("query_flow_table_in", "table_type", 0x80, 8),
	TableID:   ifcField("query_flow_table_in", "table_id", 0xa8, 24),
}

// QueryFlowTableOut is QUERY_FLOW_TABLE output (mlx5_ifc.h struct
// mlx5_ifc_query_flow_table_out_bits).
var QueryFlowTableOut = struct {
	Status           Field
	Syndrome         Field
	FlowTableContext Field
}{
	Status:           ifcField("query_flow_table_out", "status", 0x0, 8),
	Syndrome:         ifcField("query_flow_table_out", "syndrome", 0x20, 32),
	FlowTableContext: ifcField("query_flow_table_out", "flow_table_context", 0xc0, 320),
}

// ModifyFlowTableIn is MODIFY_FLOW_TABLE input (mlx5_ifc.h struct
// mlx5_ifc_modify_flow_table_in_bits).
var ModifyFlowTableIn = struct {
	Opcode            Field
	OpMod             Field
	OtherVport        Field
	VportNumber       Field
	ModifyFieldSelect Field
	TableType         Field
	TableID           Field
	FlowTableContext  Field
}{
	Opcode:            ifcField("modify_flow_table_in", "opcode", 0x0, 16),
	OpMod:             ifcField("modify_flow_table_in", "op_mod", 0x30, 16),
	OtherVport:        ifcField("modify_flow_table_in", "other_vport", 0x40, 1),
	VportNumber:       ifcField("modify_flow_table_in", "vport_number", 0x50, 16),
	ModifyFieldSelect: ifcField("modify_flow_table_in", "modify_field_select", 0x70, 16),
	TableType:         ifcField("modify_flow_table_in", "table_type", 0x80, 8),
	TableID:           ifcField("modify_flow_table_in", "table_id", 0xa8, 24),
	FlowTableContext:  ifcField("modify_flow_table_in", "flow_table_context", 0xc0, 320),
}

// SetFlowTableRootIn is SET_FLOW_TABLE_ROOT input (mlx5_ifc.h struct
// mlx5_ifc_set_flow_table_root_in_bits).
var SetFlowTableRootIn = struct {
	Opcode                       Field
	OpMod                        Field
	OtherVport                   Field
	VportNumber                  Field
	TableType                    Field
	TableOfOtherVport            Field
	TableVportNumber             Field
	TableID                      Field
	UnderlayQPN                  Field
	TableEswitchOwnerVHCAIDValid Field
	TableEswitchOwnerVHCAID      Field
}{
	Opcode:                       ifcField("set_flow_table_root_in", "opcode", 0x0, 16),
	OpMod:                        ifcField("set_flow_table_root_in", "op_mod", 0x30, 16),
	OtherVport:                   ifcField("set_flow_table_root_in", "other_vport", 0x40, 1),
	VportNumber:                  ifcField("set_flow_table_root_in", "vport_number", 0x50, 16),
	TableType:                    ifcField("set_flow_table_root_in", "table_type", 0x80, 8),
	TableOfOtherVport:            ifcField("set_flow_table_root_in", "table_of_other_vport", 0x8f, 1),
	TableVportNumber:             ifcField("set_flow_table_root_in", "table_vport_number", 0x90, 16),
	TableID:                      ifcField("set_flow_table_root_in", "table_id", 0xa8, 24),
	UnderlayQPN:                  ifcField("set_flow_table_root_in", "underlay_qpn", 0xc8, 24),
	TableEswitchOwnerVHCAIDValid: ifcField("set_flow_table_root_in", "table_eswitch_owner_vhca_id_valid", 0xe0, 1),
	TableEswitchOwnerVHCAID:      ifcField("set_flow_table_root_in", "table_eswitch_owner_vhca_id", 0xf0, 16),
}

// CreateFlowGroupIn is CREATE_FLOW_GROUP input (mlx5_ifc.h struct
// mlx5_ifc_create_flow_group_in_bits).
var CreateFlowGroupIn = struct {
	Opcode                        Field
	OpMod                         Field
	OtherVport                    Field
	VportNumber                   Field
	TableType                     Field
	GroupType                     Field
	TableID                       Field
	SourceEswitchOwnerVHCAIDValid Field
	StartFlowIndex                Field
	EndFlowIndex                  Field
	MatchDefinerID                Field
	MatchCriteriaEnable           Field
	MatchCriteria                 Field
}{
	Opcode:                        ifcField("create_flow_group_in", "opcode", 0x0, 16),
	OpMod:                         ifcField("create_flow_group_in", "op_mod", 0x30, 16),
	OtherVport:                    ifcField("create_flow_group_in", "other_vport", 0x40, 1),
	VportNumber:                   ifcField("create_flow_group_in", "vport_number", 0x50, 16),
	TableType:                     ifcField("create_flow_group_in", "table_type", 0x80, 8),
	GroupType:                     ifcField("create_flow_group_in", "group_type", 0x8c, 4),
	TableID:                       ifcField("create_flow_group_in", "table_id", 0xa8, 24),
	SourceEswitchOwnerVHCAIDValid: ifcField("create_flow_group_in", "source_eswitch_owner_vhca_id_valid", 0xc0, 1),
	StartFlowIndex:                ifcField("create_flow_group_in", "start_flow_index", 0xe0, 32),
	EndFlowIndex:                  ifcField("create_flow_group_in", "end_flow_index", 0x120, 32),
	MatchDefinerID:                ifcField("create_flow_group_in", "match_definer_id", 0x150, 16),
	MatchCriteriaEnable:           ifcField("create_flow_group_in", "match_criteria_enable", 0x1f8, 8),
	MatchCriteria:                 ifcField("create_flow_group_in", "match_criteria", 0x200, 4096),
}

// CreateFlowGroupOut is CREATE_FLOW_GROUP output (mlx5_ifc.h struct
// mlx5_ifc_create_flow_group_out_bits).
var CreateFlowGroupOut = struct {
	Status   Field
	Syndrome Field
	GroupID  Field
}{
	Status:   ifcField("create_flow_group_out", "status", 0x0, 8),
	Syndrome: ifcField("create_flow_group_out", "syndrome", 0x20, 32),
	GroupID:  ifcField("create_flow_group_out", "group_id", 0x48, 24),
}

// DestroyFlowGroupIn is DESTROY_FLOW_GROUP input (mlx5_ifc.h struct
// mlx5_ifc_destroy_flow_group_in_bits).
var DestroyFlowGroupIn = struct {
	Opcode      Field
	OpMod       Field
	OtherVport  Field
	VportNumber Field
	TableType   Field
	TableID     Field
	GroupID     Field
}{
	Opcode:      ifcField("destroy_flow_group_in", "opcode", 0x0, 16),
	OpMod:       ifcField("destroy_flow_group_in", "op_mod", 0x30, 16),
	OtherVport:  ifcField("destroy_flow_group_in", "other_vport", 0x40, 1),
	VportNumber: ifcField("destroy_flow_group_in", "vport_number", 0x50, 16),
	TableType:   ifcField("destroy_flow_group_in", "table_type", 0x80, 8),
	TableID:     ifcField("destroy_flow_group_in", "table_id", 0xa8, 24),
	GroupID:     ifcField("destroy_flow_group_in", "group_id", 0xc0, 32),
}

// FTEMatchParam is the match value/criteria of a flow group or entry (mlx5_ifc.h struct
// mlx5_ifc_fte_match_param_bits).
var FTEMatchParam = struct {
	OuterHeaders    Field
	MiscParameters  Field
	InnerHeaders    Field
	MiscParameters2 Field
	MiscParameters3 Field
	MiscParameters4 Field
	MiscParameters5 Field
}{
	OuterHeaders:    ifcField("fte_match_param", "outer_headers", 0x0, 512),
	MiscParameters:  ifcField("fte_match_param", "misc_parameters", 0x200, 512),
	InnerHeaders:    ifcField("fte_match_param", "inner_headers", 0x400, 512),
	MiscParameters2: ifcField("fte_match_param", "misc_parameters_2", 0x600, 512),
	MiscParameters3: ifcField("fte_match_param", "misc_parameters_3", 0x800, 512),
	MiscParameters4: ifcField("fte_match_param", "misc_parameters_4", 0xa00, 512),
	MiscParameters5: ifcField("fte_match_param", "misc_parameters_5", 0xc00, 512),
}

// FTEMatchSetLyr24 is the outer/inner L2-L4 header match set (mlx5_ifc.h struct
// mlx5_ifc_fte_match_set_lyr_2_4_bits).
var FTEMatchSetLyr24 = struct {
	SMAC4716       Field
	SMAC150        Field
	Ethertype      Field
	DMAC4716       Field
	DMAC150        Field
	FirstPrio      Field
	FirstCFI       Field
	FirstVid       Field
	IPProtocol     Field
	IPDSCP         Field
	IPECN          Field
	CVLANTag       Field
	SVLANTag       Field
	Frag           Field
	IPVersion      Field
	TCPFlags       Field
	TCPSport       Field
	TCPDport       Field
	IPv4Ihl        Field
	TTLHoplimit    Field
	UDPSport       Field
	UDPDport       Field
	SrcIPv4SrcIPv6 Field
	DstIPv4DstIPv6 Field
}{
	SMAC4716:       ifcField("fte_match_set_lyr_2_4", "smac_47_16", 0x0, 32),
	SMAC150:        ifcField("fte_match_set_lyr_2_4", "smac_15_0", 0x20, 16),
	Ethertype:      ifcField("fte_match_set_lyr_2_4", "ethertype", 0x30, 16),
	DMAC4716:       ifcField("fte_match_set_lyr_2_4", "dmac_47_16", 0x40, 32),
	DMAC150:        ifcField("fte_match_set_lyr_2_4", "dmac_15_0", 0x60, 16),
	FirstPrio:      ifcField("fte_match_set_lyr_2_4", "first_prio", 0x70, 3),
	FirstCFI:       ifcField("fte_match_set_lyr_2_4", "first_cfi", 0x73, 1),
	FirstVid:       ifcField("fte_match_set_lyr_2_4", "first_vid", 0x74, 12),
	IPProtocol:     ifcField("fte_match_set_lyr_2_4", "ip_protocol", 0x80, 8),
	IPDSCP:         ifcField("fte_match_set_lyr_2_4", "ip_dscp", 0x88, 6),
	IPECN:          ifcField("fte_match_set_lyr_2_4", "ip_ecn", 0x8e, 2),
	CVLANTag:       ifcField("fte_match_set_lyr_2_4", "cvlan_tag", 0x90, 1),
	SVLANTag:       ifcField("fte_match_set_lyr_2_4", "svlan_tag", 0x91, 1),
	Frag:           ifcField("fte_match_set_lyr_2_4", "frag", 0x92, 1),
	IPVersion:      ifcField("fte_match_set_lyr_2_4", "ip_version", 0x93, 4),
	TCPFlags:       ifcField("fte_match_set_lyr_2_4", "tcp_flags", 0x97, 9),
	TCPSport:       ifcField("fte_match_set_lyr_2_4", "tcp_sport", 0xa0, 16),
	TCPDport:       ifcField("fte_match_set_lyr_2_4", "tcp_dport", 0xb0, 16),
	IPv4Ihl:        ifcField("fte_match_set_lyr_2_4", "ipv4_ihl", 0xd0, 4),
	TTLHoplimit:    ifcField("fte_match_set_lyr_2_4", "ttl_hoplimit", 0xd8, 8),
	UDPSport:       ifcField("fte_match_set_lyr_2_4", "udp_sport", 0xe0, 16),
	UDPDport:       ifcField("fte_match_set_lyr_2_4", "udp_dport", 0xf0, 16),
	SrcIPv4SrcIPv6: ifcField("fte_match_set_lyr_2_4", "src_ipv4_src_ipv6", 0x100, 128),
	DstIPv4DstIPv6: ifcField("fte_match_set_lyr_2_4", "dst_ipv4_dst_ipv6", 0x180, 128),
}

// FTEMatchSetMisc is the misc match set (VLAN tags, tunnel ids, source port) (mlx5_ifc.h struct
// mlx5_ifc_fte_match_set_misc_bits).
var FTEMatchSetMisc = struct {
	GRECPresent              Field
	GREKPresent              Field
	GRESPresent              Field
	SourceVHCAPort           Field
	SourceSQN                Field
	SourceEswitchOwnerVHCAID Field
	SourcePort               Field
	OuterSecondPrio          Field
	OuterSecondCFI           Field
	OuterSecondVid           Field
	InnerSecondPrio          Field
	InnerSecondCFI           Field
	InnerSecondVid           Field
	OuterSecondCVLANTag      Field
	InnerSecondCVLANTag      Field
	OuterSecondSVLANTag      Field
	InnerSecondSVLANTag      Field
	GREProtocol              Field
	GREKey                   Field
	VXLANVNI                 Field
	BthOpcode                Field
	GENEVEVNI                Field
	GENEVETlvOption0Exist    Field
	GENEVEOam                Field
	OuterIPv6FlowLabel       Field
	InnerIPv6FlowLabel       Field
	GENEVEOptLen             Field
	GENEVEProtocolType       Field
	BthDstQP                 Field
	OuterESPSPI              Field
}{
	GRECPresent:              ifcField("fte_match_set_misc", "gre_c_present", 0x0, 1),
	GREKPresent:              ifcField("fte_match_set_misc", "gre_k_present", 0x2, 1),
	GRESPresent:              ifcField("fte_match_set_misc", "gre_s_present", 0x3, 1),
	SourceVHCAPort:           ifcField("fte_match_set_misc", "source_vhca_port", 0x4, 4),
	SourceSQN:                ifcField("fte_match_set_misc", "source_sqn", 0x8, 24),
	SourceEswitchOwnerVHCAID: ifcField("fte_match_set_misc", "source_eswitch_owner_vhca_id", 0x20, 16),
	SourcePort:               ifcField("fte_match_set_misc", "source_port", 0x30, 16),
	OuterSecondPrio:          ifcField("fte_match_set_misc", "outer_second_prio", 0x40, 3),
	OuterSecondCFI:           ifcField("fte_match_set_misc", "outer_second_cfi", 0x43, 1),
	OuterSecondVid:           ifcField("fte_match_set_misc", "outer_second_vid", 0x44, 12),
	InnerSecondPrio:          ifcField("fte_match_set_misc", "inner_second_prio", 0x50, 3),
	InnerSecondCFI:           ifcField("fte_match_set_misc", "inner_second_cfi", 0x53, 1),
	InnerSecondVid:           ifcField("fte_match_set_misc", "inner_second_vid", 0x54, 12),
	OuterSecondCVLANTag:      ifcField("fte_match_set_misc", "outer_second_cvlan_tag", 0x60, 1),
	InnerSecondCVLANTag:      ifcField("fte_match_set_misc", "inner_second_cvlan_tag", 0x61, 1),
	OuterSecondSVLANTag:      ifcField("fte_match_set_misc", "outer_second_svlan_tag", 0x62, 1),
	InnerSecondSVLANTag:      ifcField("fte_match_set_misc", "inner_second_svlan_tag", 0x63, 1),
	GREProtocol:              ifcField("fte_match_set_misc", "gre_protocol", 0x70, 16),
	GREKey:                   ifcField("fte_match_set_misc", "gre_key", 0x80, 32),
	VXLANVNI:                 ifcField("fte_match_set_misc", "vxlan_vni", 0xa0, 24),
	BthOpcode:                ifcField("fte_match_set_misc", "bth_opcode", 0xb8, 8),
	GENEVEVNI:                ifcField("fte_match_set_misc", "geneve_vni", 0xc0, 24),
	GENEVETlvOption0Exist:    ifcField("fte_match_set_misc", "geneve_tlv_option_0_exist", 0xde, 1),
	GENEVEOam:                ifcField("fte_match_set_misc", "geneve_oam", 0xdf, 1),
	OuterIPv6FlowLabel:       ifcField("fte_match_set_misc", "outer_ipv6_flow_label", 0xec, 20),
	InnerIPv6FlowLabel:       ifcField("fte_match_set_misc", "inner_ipv6_flow_label", 0x10c, 20),
	GENEVEOptLen:             ifcField("fte_match_set_misc", "geneve_opt_len", 0x12a, 6),
	GENEVEProtocolType:       ifcField("fte_match_set_misc", "geneve_protocol_type", 0x130, 16),
	BthDstQP:                 ifcField("fte_match_set_misc", "bth_dst_qp", 0x148, 24),
	OuterESPSPI:              ifcField("fte_match_set_misc", "outer_esp_spi", 0x180, 32),
}

// FlowContext is a flow table entry's context: action, flow tag, destinations, match value
// (mlx5_ifc.h struct mlx5_ifc_flow_context_bits).
var FlowContext = struct {
	PushVLAN            Field
	GroupID             Field
	FlowTag             Field
	Action              Field
	ExtendedDestination Field
	FlowSource          Field
	EncryptDecryptType  Field
	DestinationListSize Field
	FlowCounterListSize Field
	PacketReformatID    Field
	ModifyHeaderID      Field
	PushVLAN2           Field
	EncryptDecryptObjID Field
	MatchValue          Field
	ExecuteASO          Field
	Destination         Field
}{
	PushVLAN:            ifcField("flow_context", "push_vlan", 0x0, 32),
	GroupID:             ifcField("flow_context", "group_id", 0x20, 32),
	FlowTag:             ifcField("flow_context", "flow_tag", 0x48, 24),
	Action:              ifcField("flow_context", "action", 0x70, 16),
	ExtendedDestination: ifcField("flow_context", "extended_destination", 0x80, 1),
	FlowSource:          ifcField("flow_context", "flow_source", 0x82, 2),
	EncryptDecryptType:  ifcField("flow_context", "encrypt_decrypt_type", 0x84, 4),
	DestinationListSize: ifcField("flow_context", "destination_list_size", 0x88, 24),
	FlowCounterListSize: ifcField("flow_context", "flow_counter_list_size", 0xa8, 24),
	PacketReformatID:    ifcField("flow_context", "packet_reformat_id", 0xc0, 32),
	ModifyHeaderID:      ifcField("flow_context", "modify_header_id", 0xe0, 32),
	PushVLAN2:           ifcField("flow_context", "push_vlan_2", 0x100, 32),
	EncryptDecryptObjID: ifcField("flow_context", "encrypt_decrypt_obj_id", 0x120, 32),
	MatchValue:          ifcField("flow_context", "match_value", 0x200, 4096),
	ExecuteASO:          ifcField("flow_context", "execute_aso[0]", 0x1200, 64),
	Destination:         ifcField("flow_context", "destination[0]", 0x1800, 128),
}

// DestEntryBits is the size of one entry of a flow context's destination list: a
// dest_format_struct or a flow_counter_list, 0x40 bits each (the end of the struct's last
// field, checked by TestLayout). The list is packed at that stride; the union flow_context
// declares its elements with is as large as extended_dest_format (0x80 bits), which only an
// entry with extended_destination set uses (kernel fs_cmd.c mlx5_cmd_set_fte: dst_cnt_size).
var DestEntryBits = DestFormatStruct.DestinationEswitchOwnerVHCAID.End()

// DestFormatStruct is one destination of a flow table entry (mlx5_ifc.h struct
// mlx5_ifc_dest_format_struct_bits).
var DestFormatStruct = struct {
	DestinationType                    Field
	DestinationID                      Field
	DestinationEswitchOwnerVHCAIDValid Field
	PacketReformat                     Field
	DestinationEswitchOwnerVHCAID      Field
}{
	DestinationType:                    ifcField("dest_format_struct", "destination_type", 0x0, 8),
	DestinationID:                      ifcField("dest_format_struct", "destination_id", 0x8, 24),
	DestinationEswitchOwnerVHCAIDValid: ifcField("dest_format_struct", "destination_eswitch_owner_vhca_id_valid", 0x20, 1),
	PacketReformat:                     ifcField("dest_format_struct", "packet_reformat", 0x21, 1),
	DestinationEswitchOwnerVHCAID:      ifcField("dest_format_struct", "destination_eswitch_owner_vhca_id", 0x30, 16),
}

// FlowCounterList is one flow counter in a flow table entry's destination list (mlx5_ifc.h struct
// mlx5_ifc_flow_counter_list_bits).
var FlowCounterList = struct {
	FlowCounterID Field
}{
	FlowCounterID: ifcField("flow_counter_list", "flow_counter_id", 0x0, 32),
}

// SetFTEIn is SET_FLOW_TABLE_ENTRY input (mlx5_ifc.h struct mlx5_ifc_set_fte_in_bits).
var SetFTEIn = struct {
	Opcode           Field
	OpMod            Field
	OtherVport       Field
	VportNumber      Field
	TableType        Field
	TableID          Field
	IgnoreFlowLevel  Field
	ModifyEnableMask Field
	FlowIndex        Field
	FlowContext      Field
}{
	Opcode:           ifcField("set_fte_in", "opcode", 0x0, 16),
	OpMod:            ifcField("set_fte_in", "op_mod", 0x30, 16),
	OtherVport:       ifcField("set_fte_in", "other_vport", 0x40, 1),
	VportNumber:      ifcField("set_fte_in", "vport_number", 0x50, 16),
	TableType:        ifcField("set_fte_in", "table_type", 0x80, 8),
	TableID:          ifcField("set_fte_in", "table_id", 0xa8, 24),
	IgnoreFlowLevel:  ifcField("set_fte_in", "ignore_flow_level", 0xc0, 1),
	ModifyEnableMask: ifcField("set_fte_in", "modify_enable_mask", 0xd8, 8),
	FlowIndex:        ifcField("set_fte_in", "flow_index", 0x100, 32),
	FlowContext:      ifcField("set_fte_in", "flow_context", 0x200, 6144),
}

// SetFTEOut is SET_FLOW_TABLE_ENTRY output (mlx5_ifc.h struct mlx5_ifc_set_fte_out_bits).
var SetFTEOut = struct {
	Status   Field
	Syndrome Field
}{
	Status:   ifcField("set_fte_out", "status", 0x0, 8),
	Syndrome: ifcField("set_fte_out", "syndrome", 0x20, 32),
}

// QueryFTEIn is QUERY_FLOW_TABLE_ENTRY input (mlx5_ifc.h struct mlx5_ifc_query_fte_in_bits).
var QueryFTEIn = struct {
	Opcode    Field
	OpMod     Field
	TableType Field
	TableID   Field
	FlowIndex Field
}{
	Opcode:    ifcField("query_fte_in", "opcode", 0x0, 16),
	OpMod:     ifcField("query_fte_in", "op_mod", 0x30, 16),
	TableType: ifcField("query_fte_in", "table_type", 0x80, 8),
	TableID:   ifcField("query_fte_in", "table_id", 0xa8, 24),
	FlowIndex: ifcField("query_fte_in", "flow_index", 0x100, 32),
}

// QueryFTEOut is QUERY_FLOW_TABLE_ENTRY output (mlx5_ifc.h struct mlx5_ifc_query_fte_out_bits).
var QueryFTEOut = struct {
	Status      Field
	Syndrome    Field
	FlowContext Field
}{
	Status:      ifcField("query_fte_out", "status", 0x0, 8),
	Syndrome:    ifcField("query_fte_out", "syndrome", 0x20, 32),
	FlowContext: ifcField("query_fte_out", "flow_context", 0x200, 6144),
}

// DeleteFTEIn is DELETE_FLOW_TABLE_ENTRY input (mlx5_ifc.h struct mlx5_ifc_delete_fte_in_bits).
var DeleteFTEIn = struct {
	Opcode      Field
	OpMod       Field
	OtherVport  Field
	VportNumber Field
	TableType   Field
	TableID     Field
	FlowIndex   Field
}{
	Opcode:      ifcField("delete_fte_in", "opcode", 0x0, 16),
	OpMod:       ifcField("delete_fte_in", "op_mod", 0x30, 16),
	OtherVport:  ifcField("delete_fte_in", "other_vport", 0x40, 1),
	VportNumber: ifcField("delete_fte_in", "vport_number", 0x50, 16),
	TableType:   ifcField("delete_fte_in", "table_type", 0x80, 8),
	TableID:     ifcField("delete_fte_in", "table_id", 0xa8, 24),
	FlowIndex:   ifcField("delete_fte_in", "flow_index", 0x100, 32),
}

// AllocFlowCounterIn is ALLOC_FLOW_COUNTER input (mlx5_ifc.h struct
// mlx5_ifc_alloc_flow_counter_in_bits).
var AllocFlowCounterIn = struct {
	Opcode                 Field
	OpMod                  Field
	FlowCounterBulkLogSize Field
	FlowCounterBulk        Field
}{
	Opcode:                 ifcField("alloc_flow_counter_in", "opcode", 0x0, 16),
	OpMod:                  ifcField("alloc_flow_counter_in", "op_mod", 0x30, 16),
	FlowCounterBulkLogSize: ifcField("alloc_flow_counter_in", "flow_counter_bulk_log_size", 0x73, 5),
	FlowCounterBulk:        ifcField("alloc_flow_counter_in", "flow_counter_bulk", 0x78, 8),
}

// AllocFlowCounterOut is ALLOC_FLOW_COUNTER output (mlx5_ifc.h struct
// mlx5_ifc_alloc_flow_counter_out_bits).
var AllocFlowCounterOut = struct {
	Status        Field
	Syndrome      Field
	FlowCounterID Field
}{
	Status:        ifcField("alloc_flow_counter_out", "status", 0x0, 8),
	Syndrome:      ifcField("alloc_flow_counter_out", "syndrome", 0x20, 32),
	FlowCounterID: ifcField("alloc_flow_counter_out", "flow_counter_id", 0x40, 32),
}

// DeallocFlowCounterIn is DEALLOC_FLOW_COUNTER input (mlx5_ifc.h struct
// mlx5_ifc_dealloc_flow_counter_in_bits).
var DeallocFlowCounterIn = struct {
	Opcode        Field
	OpMod         Field
	FlowCounterID Field
}{
	Opcode:        ifcField("dealloc_flow_counter_in", "opcode", 0x0, 16),
	OpMod:         ifcField("dealloc_flow_counter_in", "op_mod", 0x30, 16),
	FlowCounterID: ifcField("dealloc_flow_counter_in", "flow_counter_id", 0x40, 32),
}

// QueryFlowCounterIn is QUERY_FLOW_COUNTER input (mlx5_ifc.h struct
// mlx5_ifc_query_flow_counter_in_bits).
var QueryFlowCounterIn = struct {
	Opcode        Field
	OpMod         Field
	Clear         Field
	NumOfCounters Field
	FlowCounterID Field
}{
	Opcode:        ifcField("query_flow_counter_in", "opcode", 0x0, 16),
	OpMod:         ifcField("query_flow_counter_in", "op_mod", 0x30, 16),
	Clear:         ifcField("query_flow_counter_in", "clear", 0xc0, 1),
	NumOfCounters: ifcField("query_flow_counter_in", "num_of_counters", 0xd0, 16),
	FlowCounterID: ifcField("query_flow_counter_in", "flow_counter_id", 0xe0, 32),
}

// QueryFlowCounterOut is QUERY_FLOW_COUNTER output (mlx5_ifc.h struct
// mlx5_ifc_query_flow_counter_out_bits).
var QueryFlowCounterOut = struct {
	Status         Field
	Syndrome       Field
	FlowStatistics Field
}{
	Status:         ifcField("query_flow_counter_out", "status", 0x0, 8),
	Syndrome:       ifcField("query_flow_counter_out", "syndrome", 0x20, 32),
	FlowStatistics: ifcField("query_flow_counter_out", "flow_statistics[0]", 0x80, 128),
}

// TrafficCounter is one packets/octets counter pair (mlx5_ifc.h struct
// mlx5_ifc_traffic_counter_bits).
var TrafficCounter = struct {
	Packets Field
	Octets  Field
}{
	Packets: ifcField("traffic_counter", "packets", 0x0, 64),
	Octets:  ifcField("traffic_counter", "octets", 0x40, 64),
}

// PacketReformatContextIn is the packet reformat context (type, size, header bytes) (mlx5_ifc.h
// struct mlx5_ifc_packet_reformat_context_in_bits).
var PacketReformatContextIn = struct {
	ReformatType     Field
	ReformatParam0   Field
	ReformatDataSize Field
	ReformatParam1   Field
	ReformatData     Field
	MoreReformatData Field
}{
	ReformatType:     ifcField("packet_reformat_context_in", "reformat_type", 0x0, 8),
	ReformatParam0:   ifcField("packet_reformat_context_in", "reformat_param_0", 0xc, 4),
	ReformatDataSize: ifcField("packet_reformat_context_in", "reformat_data_size", 0x16, 10),
	ReformatParam1:   ifcField("packet_reformat_context_in", "reformat_param_1", 0x20, 8),
	ReformatData:     ifcField("packet_reformat_context_in", "reformat_data[0]", 0x30, 8),
	MoreReformatData: ifcField("packet_reformat_context_in", "more_reformat_data[0]", 0x40, 8),
}

// AllocPacketReformatContextIn is ALLOC_PACKET_REFORMAT_CONTEXT input (mlx5_ifc.h struct
// mlx5_ifc_alloc_packet_reformat_context_in_bits).
var AllocPacketReformatContextIn = struct {
	Opcode                Field
	OpMod                 Field
	PacketReformatContext Field
}{
	Opcode:                ifcField("alloc_packet_reformat_context_in", "opcode", 0x0, 16),
	OpMod:                 ifcField("alloc_packet_reformat_context_in", "op_mod", 0x30, 16),
	PacketReformatContext: ifcField("alloc_packet_reformat_context_in", "packet_reformat_context", 0xe0, 64),
}

// AllocPacketReformatContextOut is ALLOC_PACKET_REFORMAT_CONTEXT output (mlx5_ifc.h struct
// mlx5_ifc_alloc_packet_reformat_context_out_bits).
var AllocPacketReformatContextOut = struct {
	Status           Field
	Syndrome         Field
	PacketReformatID Field
}{
	Status:           ifcField("alloc_packet_reformat_context_out", "status", 0x0, 8),
	Syndrome:         ifcField("alloc_packet_reformat_context_out", "syndrome", 0x20, 32),
	PacketReformatID: ifcField("alloc_packet_reformat_context_out", "packet_reformat_id", 0x40, 32),
}

// DeallocPacketReformatContextIn is DEALLOC_PACKET_REFORMAT_CONTEXT input (mlx5_ifc.h struct
// mlx5_ifc_dealloc_packet_reformat_context_in_bits).
var DeallocPacketReformatContextIn = struct {
	Opcode           Field
	OpMod            Field
	PacketReformatID Field
}{
	Opcode:           ifcField("dealloc_packet_reformat_context_in", "opcode", 0x0, 16),
	OpMod:            ifcField("dealloc_packet_reformat_context_in", "op_mod", 0x30, 16),
	PacketReformatID: ifcField("dealloc_packet_reformat_context_in", "packet_reformat_id", 0x40, 32),
}

// SetPPRateLimitContext is the packet pacing context (rate limit, burst, typical packet size)
// (mlx5_ifc.h struct mlx5_ifc_set_pp_rate_limit_context_bits).
var SetPPRateLimitContext = struct {
	RateLimit         Field
	BurstUpperBound   Field
	TypicalPacketSize Field
}{
	RateLimit:         ifcField("set_pp_rate_limit_context", "rate_limit", 0x0, 32),
	BurstUpperBound:   ifcField("set_pp_rate_limit_context", "burst_upper_bound", 0x20, 32),
	TypicalPacketSize: ifcField("set_pp_rate_limit_context", "typical_packet_size", 0x50, 16),
}

// SetPPRateLimitIn is SET_RATE_LIMIT input (mlx5_ifc.h struct mlx5_ifc_set_pp_rate_limit_in_bits).
var SetPPRateLimitIn = struct {
	Opcode         Field
	UID            Field
	OpMod          Field
	RateLimitIndex Field
	Ctx            Field
}{
	Opcode:         ifcField("set_pp_rate_limit_in", "opcode", 0x0, 16),
	UID:            ifcField("set_pp_rate_limit_in", "uid", 0x10, 16),
	OpMod:          ifcField("set_pp_rate_limit_in", "op_mod", 0x30, 16),
	RateLimitIndex: ifcField("set_pp_rate_limit_in", "rate_limit_index", 0x50, 16),
	Ctx:            ifcField("set_pp_rate_limit_in", "ctx", 0x80, 384),
}
