package prm

// The capability pages QUERY_HCA_CAP returns and SET_HCA_CAP writes. Offsets and widths in bits,
// as gcc lays out include/linux/mlx5/mlx5_ifc.h (Linux 6.1); TestLayout checks every one against
// the installed headers.

// CmdHCACap is the general device capabilities (mlx5_ifc.h struct mlx5_ifc_cmd_hca_cap_bits).
var CmdHCACap = struct {
	SharedObjectToUserObjectAllowed        Field
	VHCAResourceManager                    Field
	HCACap2                                Field
	CreateLAGWhenNotMasterUp               Field
	Dtor                                   Field
	EventOnVHCAStateTeardownRequest        Field
	EventOnVHCAStateInUse                  Field
	EventOnVHCAStateActive                 Field
	EventOnVHCAStateAllocated              Field
	EventOnVHCAStateInvalid                Field
	VHCAID                                 Field
	LogMaxSRQSz                            Field
	LogMaxQPSz                             Field
	EventCap                               Field
	IsolateVlTCNew                         Field
	PrioTagRequired                        Field
	LogMaxQP                               Field
	ECESupport                             Field
	RegCPreserve                           Field
	LogMaxSRQ                              Field
	UplinkFollow                           Field
	TSCQEToDestCQN                         Field
	Shampo                                 Field
	MaxSglForOptimizedPerformance          Field
	LogMaxCQSz                             Field
	RelaxedOrderingWriteUmr                Field
	RelaxedOrderingReadUmr                 Field
	VirtioNetDeviceEmualtionManager        Field
	VirtioBlkDeviceEmualtionManager        Field
	LogMaxCQ                               Field
	LogMaxEQSz                             Field
	RelaxedOrderingWrite                   Field
	RelaxedOrderingRead                    Field
	LogMaxMKey                             Field
	DumpFillMKey                           Field
	FastTeardown                           Field
	LogMaxEQ                               Field
	MaxIndirection                         Field
	FixedBufferSize                        Field
	LogMaxMrwSz                            Field
	ForceTeardown                          Field
	LogMaxBsfListSize                      Field
	UmrExtendedTranslationOffset           Field
	NullMKey                               Field
	LogMaxKlmListSize                      Field
	LogMaxRaReqDC                          Field
	EthWQETooSmall                         Field
	VnicEnvCQOverrun                       Field
	LogMaxRaResDC                          Field
	ReleaseAllPages                        Field
	MustNotUse                             Field
	RoCEAccl                               Field
	LogMaxRaReqQP                          Field
	LogMaxRaResQP                          Field
	EndPad                                 Field
	CCQueryAllowed                         Field
	CCModifyAllowed                        Field
	StartPad                               Field
	CacheLine128byte                       Field
	Rts2rtsQPCountersSetID                 Field
	VnicEnvIntRQOob                        Field
	SbcamReg                               Field
	QcamReg                                Field
	GIDTableSize                           Field
	OutOfSeqCnt                            Field
	VportCounters                          Field
	RetransmissionQCounters                Field
	Debug                                  Field
	ModifyRQCounterSetID                   Field
	RQDelayDrop                            Field
	MaxQPCnt                               Field
	PkeyTableSize                          Field
	VportGroupManager                      Field
	VHCAGroupManager                       Field
	IBVirt                                 Field
	EthVirt                                Field
	VnicEnvQueueCounters                   Field
	ETS                                    Field
	NICFlowTable                           Field
	EswitchManager                         Field
	DeviceMemory                           Field
	McamReg                                Field
	PcamReg                                Field
	LocalCaAckDelay                        Field
	PortModuleEvent                        Field
	EnhancedErrorQCounters                 Field
	PortsCheck                             Field
	DisableLinkUp                          Field
	BeaconLed                              Field
	PortType                               Field
	NumPorts                               Field
	Pps                                    Field
	PpsModify                              Field
	LogMaxMsg                              Field
	MaxTC                                  Field
	TempWarnEvent                          Field
	Dcbx                                   Field
	GeneralNotificationEvent               Field
	Fpga                                   Field
	RolS                                   Field
	RolG                                   Field
	WolS                                   Field
	WolG                                   Field
	WolA                                   Field
	WolB                                   Field
	WolM                                   Field
	WolU                                   Field
	WolP                                   Field
	StatRateSupport                        Field
	PCISyncForFWUpdateEvent                Field
	Init2LAGTXPortAffinity                 Field
	CQEVersion                             Field
	CompactAddressVector                   Field
	StridingRQ                             Field
	IpoibEnhancedOffloads                  Field
	IpoibBasicOffloads                     Field
	RepeatedBlockDisabled                  Field
	UmrModifyEntitySizeDisabled            Field
	UmrModifyAtomicDisabled                Field
	UmrIndirectMKeyDisabled                Field
	UmrFence                               Field
	DCReqScatDataCQE                       Field
	DrainSigerr                            Field
	CmdifChecksum                          Field
	SigerrCQE                              Field
	WQSignature                            Field
	SctrDataCQE                            Field
	Sho                                    Field
	Tph                                    Field
	Rf                                     Field
	DCT                                    Field
	QoS                                    Field
	EthNetOffloads                         Field
	RoCE                                   Field
	Atomic                                 Field
	CQOi                                   Field
	CQResize                               Field
	CQModeration                           Field
	CQEQRemap                              Field
	Pg                                     Field
	BlockLBMC                              Field
	ScqeBreakModeration                    Field
	CQPeriodStartFromCQE                   Field
	Cd                                     Field
	Apm                                    Field
	VectorCalc                             Field
	UmrPtrRlky                             Field
	Imaicl                                 Field
	QPPacketBased                          Field
	Qkv                                    Field
	Pkv                                    Field
	SetDethSqpn                            Field
	XRC                                    Field
	Ud                                     Field
	UC                                     Field
	Rc                                     Field
	UAR4k                                  Field
	FlRcQPWhenRoCEDisabled                 Field
	RegexpParams                           Field
	UARSz                                  Field
	PortSelectionCap                       Field
	UMEMUID0                               Field
	LogPgSz                                Field
	Bf                                     Field
	DriverVersion                          Field
	PadTXEthPacket                         Field
	MKeyByName                             Field
	LogBfRegSize                           Field
	LAGDCT                                 Field
	LAGTXPortAffinity                      Field
	LAGNativeFdbSelection                  Field
	LAGMaster                              Field
	NumLAGPorts                            Field
	MaxWQESzSQ                             Field
	MaxWQESzRQ                             Field
	MaxFlowCounterLo                       Field
	MaxWQESzSQDC                           Field
	MaxQPMcg                               Field
	FlowCounterBulkAlloc                   Field
	LogMaxMcg                              Field
	LogMaxTransportDomain                  Field
	LogMaxPD                               Field
	LogMaxXRCD                             Field
	NICReceiveSteeringDiscard              Field
	ReceiveDiscardVportDown                Field
	TransmitDiscardVportDown               Field
	EQOverrunCount                         Field
	InvalidCommandCount                    Field
	QuotaExceededCount                     Field
	LogMaxFlowCounterBulk                  Field
	MaxFlowCounter150                      Field
	LogMaxRQ                               Field
	LogMaxSQ                               Field
	LogMaxTIR                              Field
	LogMaxTIS                              Field
	BasicCyclicRcvWQE                      Field
	LogMaxRMP                              Field
	LogMaxRQT                              Field
	LogMaxRQTSize                          Field
	LogMaxTISPerSQ                         Field
	ExtStrideNumRange                      Field
	RoCERwSupported                        Field
	LogMaxCurrentUCListWrSupported         Field
	LogMaxStrideSzRQ                       Field
	LogMinStrideSzRQ                       Field
	LogMaxStrideSzSQ                       Field
	LogMinStrideSzSQ                       Field
	Hairpin                                Field
	LogMaxHairpinQueues                    Field
	LogMaxHairpinWQDataSz                  Field
	LogMaxHairpinNumPackets                Field
	LogMaxWQSz                             Field
	NICVportChangeEvent                    Field
	DisableLocalLBUC                       Field
	DisableLocalLBMC                       Field
	LogMinHairpinWQDataSz                  Field
	VHCAState                              Field
	LogMaxVLANList                         Field
	LogMaxCurrentMCList                    Field
	LogMaxCurrentUCList                    Field
	GeneralObjTypes                        Field
	SQTSFormat                             Field
	RQTSFormat                             Field
	SteeringFormatVersion                  Field
	CreateQPStartHint                      Field
	ATS                                    Field
	LogMaxUctx                             Field
	IPsecOffload                           Field
	LogMaxUMEM                             Field
	MaxNumEqs                              Field
	TLSTX                                  Field
	TLSRX                                  Field
	LogMaxL2Table                          Field
	LogUARPageSz                           Field
	DeviceFrequencyMhz                     Field
	DeviceFrequencyKhz                     Field
	NumOfUarsPerPage                       Field
	FlexParserProtocols                    Field
	MaxGENEVETlvOptions                    Field
	MaxGENEVETlvOptionDataLen              Field
	AdvVirtualization                      Field
	LogMaxDciStreamChannels                Field
	LogMaxDciErroredStreams                Field
	EnhancedCQECompression                 Field
	LogMaxDek                              Field
	MiniCQERespStrideIndex                 Field
	CQE128Always                           Field
	CQECompression128                      Field
	CQECompression                         Field
	CQECompressionTimeout                  Field
	CQECompressionMaxNum                   Field
	FlexParserIDGTPUDW0                    Field
	TagMatching                            Field
	RndvOffloadRc                          Field
	RndvOffloadDC                          Field
	LogTagMatchingListSz                   Field
	LogMaxXrq                              Field
	AffiliateNICVportCriteria              Field
	NativePortNum                          Field
	NumVHCAPorts                           Field
	FlexParserIDGTPUTeid                   Field
	SWOwnerID                              Field
	MaxNumOfMonitorCounters                Field
	NumPpcntMonitorCounters                Field
	MaxNumSF                               Field
	NumQMonitorCounters                    Field
	SF                                     Field
	SFSetPartition                         Field
	LogMaxSF                               Field
	Apu                                    Field
	Migration                              Field
	LogMinSFSize                           Field
	MaxNumSFPartitions                     Field
	UctxCap                                Field
	FlexParserIDGENEVETlvOption0           Field
	FlexParserIDICMPDw1                    Field
	FlexParserIDICMPDw0                    Field
	FlexParserIDICMPv6Dw1                  Field
	FlexParserIDICMPv6Dw0                  Field
	FlexParserIDOuterFirstMPLSOverGRE      Field
	FlexParserIDOuterFirstMPLSOverUDPLabel Field
	MaxNumMatchDefiner                     Field
	SFBaseID                               Field
	FlexParserIDGTPUDW2                    Field
	FlexParserIDGTPUFirstExtDW0            Field
	NumTotalDynamicVFMSIX                  Field
	DynamicMSIXTableSize                   Field
	MinDynamicVFMSIXTableSize              Field
	MaxDynamicVFMSIXTableSize              Field
	VHCATunnelCommands                     Field
	MatchDefinerFormatSupported            Field
}{
	SharedObjectToUserObjectAllowed:        ifcField("cmd_hca_cap", "shared_object_to_user_object_allowed", 0x10, 1),
	VHCAResourceManager:                    ifcField("cmd_hca_cap", "vhca_resource_manager", 0x1f, 1),
	HCACap2:                                ifcField("cmd_hca_cap", "hca_cap_2", 0x20, 1),
	CreateLAGWhenNotMasterUp:               ifcField("cmd_hca_cap", "create_lag_when_not_master_up", 0x21, 1),
	Dtor:                                   ifcField("cmd_hca_cap", "dtor", 0x22, 1),
	EventOnVHCAStateTeardownRequest:        ifcField("cmd_hca_cap", "event_on_vhca_state_teardown_request", 0x23, 1),
	EventOnVHCAStateInUse:                  ifcField("cmd_hca_cap", "event_on_vhca_state_in_use", 0x24, 1),
	EventOnVHCAStateActive:                 ifcField("cmd_hca_cap", "event_on_vhca_state_active", 0x25, 1),
	EventOnVHCAStateAllocated:              ifcField("cmd_hca_cap", "event_on_vhca_state_allocated", 0x26, 1),
	EventOnVHCAStateInvalid:                ifcField("cmd_hca_cap", "event_on_vhca_state_invalid", 0x27, 1),
	VHCAID:                                 ifcField("cmd_hca_cap", "vhca_id", 0x30, 16),
	LogMaxSRQSz:                            ifcField("cmd_hca_cap", "log_max_srq_sz", 0x80, 8),
	LogMaxQPSz:                             ifcField("cmd_hca_cap", "log_max_qp_sz", 0x88, 8),
	EventCap:                               ifcField("cmd_hca_cap", "event_cap", 0x90, 1),
	IsolateVlTCNew:                         ifcField("cmd_hca_cap", "isolate_vl_tc_new", 0x93, 1),
	PrioTagRequired:                        ifcField("cmd_hca_cap", "prio_tag_required", 0x98, 1),
	LogMaxQP:                               ifcField("cmd_hca_cap", "log_max_qp", 0x9b, 5),
	ECESupport:                             ifcField("cmd_hca_cap", "ece_support", 0xa3, 1),
	RegCPreserve:                           ifcField("cmd_hca_cap", "reg_c_preserve", 0xa9, 1),
	LogMaxSRQ:                              ifcField("cmd_hca_cap", "log_max_srq", 0xab, 5),
	UplinkFollow:                           ifcField("cmd_hca_cap", "uplink_follow", 0xb1, 1),
	TSCQEToDestCQN:                         ifcField("cmd_hca_cap", "ts_cqe_to_dest_cqn", 0xb2, 1),
	Shampo:                                 ifcField("cmd_hca_cap", "shampo", 0xba, 1),
	MaxSglForOptimizedPerformance:          ifcField("cmd_hca_cap", "max_sgl_for_optimized_performance", 0xc0, 8),
	LogMaxCQSz:                             ifcField("cmd_hca_cap", "log_max_cq_sz", 0xc8, 8),
	RelaxedOrderingWriteUmr:                ifcField("cmd_hca_cap", "relaxed_ordering_write_umr", 0xd0, 1),
	RelaxedOrderingReadUmr:                 ifcField("cmd_hca_cap", "relaxed_ordering_read_umr", 0xd1, 1),
	VirtioNetDeviceEmualtionManager:        ifcField("cmd_hca_cap", "virtio_net_device_emualtion_manager", 0xd9, 1),
	VirtioBlkDeviceEmualtionManager:        ifcField("cmd_hca_cap", "virtio_blk_device_emualtion_manager", 0xda, 1),
	LogMaxCQ:                               ifcField("cmd_hca_cap", "log_max_cq", 0xdb, 5),
	LogMaxEQSz:                             ifcField("cmd_hca_cap", "log_max_eq_sz", 0xe0, 8),
	RelaxedOrderingWrite:                   ifcField("cmd_hca_cap", "relaxed_ordering_write", 0xe8, 1),
	RelaxedOrderingRead:                    ifcField("cmd_hca_cap", "relaxed_ordering_read", 0xe9, 1),
	LogMaxMKey:                             ifcField("cmd_hca_cap", "log_max_mkey", 0xea, 6),
	DumpFillMKey:                           ifcField("cmd_hca_cap", "dump_fill_mkey", 0xf8, 1),
	FastTeardown:                           ifcField("cmd_hca_cap", "fast_teardown", 0xfb, 1),
	LogMaxEQ:                               ifcField("cmd_hca_cap", "log_max_eq", 0xfc, 4),
	MaxIndirection:                         ifcField("cmd_hca_cap", "max_indirection", 0x100, 8),
	FixedBufferSize:                        ifcField("cmd_hca_cap", "fixed_buffer_size", 0x108, 1),
	LogMaxMrwSz:                            ifcField("cmd_hca_cap", "log_max_mrw_sz", 0x109, 7),
	ForceTeardown:                          ifcField("cmd_hca_cap", "force_teardown", 0x110, 1),
	LogMaxBsfListSize:                      ifcField("cmd_hca_cap", "log_max_bsf_list_size", 0x112, 6),
	UmrExtendedTranslationOffset:           ifcField("cmd_hca_cap", "umr_extended_translation_offset", 0x118, 1),
	NullMKey:                               ifcField("cmd_hca_cap", "null_mkey", 0x119, 1),
	LogMaxKlmListSize:                      ifcField("cmd_hca_cap", "log_max_klm_list_size", 0x11a, 6),
	LogMaxRaReqDC:                          ifcField("cmd_hca_cap", "log_max_ra_req_dc", 0x12a, 6),
	EthWQETooSmall:                         ifcField("cmd_hca_cap", "eth_wqe_too_small", 0x132, 1),
	VnicEnvCQOverrun:                       ifcField("cmd_hca_cap", "vnic_env_cq_overrun", 0x139, 1),
	LogMaxRaResDC:                          ifcField("cmd_hca_cap", "log_max_ra_res_dc", 0x13a, 6),
	ReleaseAllPages:                        ifcField("cmd_hca_cap", "release_all_pages", 0x145, 1),
	MustNotUse:                             ifcField("cmd_hca_cap", "must_not_use", 0x146, 1),
	RoCEAccl:                               ifcField("cmd_hca_cap", "roce_accl", 0x149, 1),
	LogMaxRaReqQP:                          ifcField("cmd_hca_cap", "log_max_ra_req_qp", 0x14a, 6),
	LogMaxRaResQP:                          ifcField("cmd_hca_cap", "log_max_ra_res_qp", 0x15a, 6),
	EndPad:                                 ifcField("cmd_hca_cap", "end_pad", 0x160, 1),
	CCQueryAllowed:                         ifcField("cmd_hca_cap", "cc_query_allowed", 0x161, 1),
	CCModifyAllowed:                        ifcField("cmd_hca_cap", "cc_modify_allowed", 0x162, 1),
	StartPad:                               ifcField("cmd_hca_cap", "start_pad", 0x163, 1),
	CacheLine128byte:                       ifcField("cmd_hca_cap", "cache_line_128byte", 0x164, 1),
	Rts2rtsQPCountersSetID:                 ifcField("cmd_hca_cap", "rts2rts_qp_counters_set_id", 0x169, 1),
	VnicEnvIntRQOob:                        ifcField("cmd_hca_cap", "vnic_env_int_rq_oob", 0x16c, 1),
	SbcamReg:                               ifcField("cmd_hca_cap", "sbcam_reg", 0x16d, 1),
	QcamReg:                                ifcField("cmd_hca_cap", "qcam_reg", 0x16f, 1),
	GIDTableSize:                           ifcField("cmd_hca_cap", "gid_table_size", 0x170, 16),
	OutOfSeqCnt:                            ifcField("cmd_hca_cap", "out_of_seq_cnt", 0x180, 1),
	VportCounters:                          ifcField("cmd_hca_cap", "vport_counters", 0x181, 1),
	RetransmissionQCounters:                ifcField("cmd_hca_cap", "retransmission_q_counters", 0x182, 1),
	Debug:                                  ifcField("cmd_hca_cap", "debug", 0x183, 1),
	ModifyRQCounterSetID:                   ifcField("cmd_hca_cap", "modify_rq_counter_set_id", 0x184, 1),
	RQDelayDrop:                            ifcField("cmd_hca_cap", "rq_delay_drop", 0x185, 1),
	MaxQPCnt:                               ifcField("cmd_hca_cap", "max_qp_cnt", 0x186, 10),
	PkeyTableSize:                          ifcField("cmd_hca_cap", "pkey_table_size", 0x190, 16),
	VportGroupManager:                      ifcField("cmd_hca_cap", "vport_group_manager", 0x1a0, 1),
	VHCAGroupManager:                       ifcField("cmd_hca_cap", "vhca_group_manager", 0x1a1, 1),
	IBVirt:                                 ifcField("cmd_hca_cap", "ib_virt", 0x1a2, 1),
	EthVirt:                                ifcField("cmd_hca_cap", "eth_virt", 0x1a3, 1),
	VnicEnvQueueCounters:                   ifcField("cmd_hca_cap", "vnic_env_queue_counters", 0x1a4, 1),
	ETS:                                    ifcField("cmd_hca_cap", "ets", 0x1a5, 1),
	NICFlowTable:                           ifcField("cmd_hca_cap", "nic_flow_table", 0x1a6, 1),
	EswitchManager:                         ifcField("cmd_hca_cap", "eswitch_manager", 0x1a7, 1),
	DeviceMemory:                           ifcField("cmd_hca_cap", "device_memory", 0x1a8, 1),
	McamReg:                                ifcField("cmd_hca_cap", "mcam_reg", 0x1a9, 1),
	PcamReg:                                ifcField("cmd_hca_cap", "pcam_reg", 0x1aa, 1),
	LocalCaAckDelay:                        ifcField("cmd_hca_cap", "local_ca_ack_delay", 0x1ab, 5),
	PortModuleEvent:                        ifcField("cmd_hca_cap", "port_module_event", 0x1b0, 1),
	EnhancedErrorQCounters:                 ifcField("cmd_hca_cap", "enhanced_error_q_counters", 0x1b1, 1),
	PortsCheck:                             ifcField("cmd_hca_cap", "ports_check", 0x1b2, 1),
	DisableLinkUp:                          ifcField("cmd_hca_cap", "disable_link_up", 0x1b4, 1),
	BeaconLed:                              ifcField("cmd_hca_cap", "beacon_led", 0x1b5, 1),
	PortType:                               ifcField("cmd_hca_cap", "port_type", 0x1b6, 2),
	NumPorts:                               ifcField("cmd_hca_cap", "num_ports", 0x1b8, 8),
	Pps:                                    ifcField("cmd_hca_cap", "pps", 0x1c1, 1),
	PpsModify:                              ifcField("cmd_hca_cap", "pps_modify", 0x1c2, 1),
	LogMaxMsg:                              ifcField("cmd_hca_cap", "log_max_msg", 0x1c3, 5),
	MaxTC:                                  ifcField("cmd_hca_cap", "max_tc", 0x1cc, 4),
	TempWarnEvent:                          ifcField("cmd_hca_cap", "temp_warn_event", 0x1d0, 1),
	Dcbx:                                   ifcField("cmd_hca_cap", "dcbx", 0x1d1, 1),
	GeneralNotificationEvent:               ifcField("cmd_hca_cap", "general_notification_event", 0x1d2, 1),
	Fpga:                                   ifcField("cmd_hca_cap", "fpga", 0x1d5, 1),
	RolS:                                   ifcField("cmd_hca_cap", "rol_s", 0x1d6, 1),
	RolG:                                   ifcField("cmd_hca_cap", "rol_g", 0x1d7, 1),
	WolS:                                   ifcField("cmd_hca_cap", "wol_s", 0x1d9, 1),
	WolG:                                   ifcField("cmd_hca_cap", "wol_g", 0x1da, 1),
	WolA:                                   ifcField("cmd_hca_cap", "wol_a", 0x1db, 1),
	WolB:                                   ifcField("cmd_hca_cap", "wol_b", 0x1dc, 1),
	WolM:                                   ifcField("cmd_hca_cap", "wol_m", 0x1dd, 1),
	WolU:                                   ifcField("cmd_hca_cap", "wol_u", 0x1de, 1),
	WolP:                                   ifcField("cmd_hca_cap", "wol_p", 0x1df, 1),
	StatRateSupport:                        ifcField("cmd_hca_cap", "stat_rate_support", 0x1e0, 16),
	PCISyncForFWUpdateEvent:                ifcField("cmd_hca_cap", "pci_sync_for_fw_update_event", 0x1f1, 1),
	Init2LAGTXPortAffinity:                 ifcField("cmd_hca_cap", "init2_lag_tx_port_affinity", 0x1f8, 1),
	CQEVersion:                             ifcField("cmd_hca_cap", "cqe_version", 0x1fc, 4),
	CompactAddressVector:                   ifcField("cmd_hca_cap", "compact_address_vector", 0x200, 1),
	StridingRQ:                             ifcField("cmd_hca_cap", "striding_rq", 0x201, 1),
	IpoibEnhancedOffloads:                  ifcField("cmd_hca_cap", "ipoib_enhanced_offloads", 0x203, 1),
	IpoibBasicOffloads:                     ifcField("cmd_hca_cap", "ipoib_basic_offloads", 0x204, 1),
	RepeatedBlockDisabled:                  ifcField("cmd_hca_cap", "repeated_block_disabled", 0x206, 1),
	UmrModifyEntitySizeDisabled:            ifcField("cmd_hca_cap", "umr_modify_entity_size_disabled", 0x207, 1),
	UmrModifyAtomicDisabled:                ifcField("cmd_hca_cap", "umr_modify_atomic_disabled", 0x208, 1),
	UmrIndirectMKeyDisabled:                ifcField("cmd_hca_cap", "umr_indirect_mkey_disabled", 0x209, 1),
	UmrFence:                               ifcField("cmd_hca_cap", "umr_fence", 0x20a, 2),
	DCReqScatDataCQE:                       ifcField("cmd_hca_cap", "dc_req_scat_data_cqe", 0x20c, 1),
	DrainSigerr:                            ifcField("cmd_hca_cap", "drain_sigerr", 0x20f, 1),
	CmdifChecksum:                          ifcField("cmd_hca_cap", "cmdif_checksum", 0x210, 2),
	SigerrCQE:                              ifcField("cmd_hca_cap", "sigerr_cqe", 0x212, 1),
	WQSignature:                            ifcField("cmd_hca_cap", "wq_signature", 0x214, 1),
	SctrDataCQE:                            ifcField("cmd_hca_cap", "sctr_data_cqe", 0x215, 1),
	Sho:                                    ifcField("cmd_hca_cap", "sho", 0x217, 1),
	Tph:                                    ifcField("cmd_hca_cap", "tph", 0x218, 1),
	Rf:                                     ifcField("cmd_hca_cap", "rf", 0x219, 1),
	DCT:                                    ifcField("cmd_hca_cap", "dct", 0x21a, 1),
	QoS:                                    ifcField("cmd_hca_cap", "qos", 0x21b, 1),
	EthNetOffloads:                         ifcField("cmd_hca_cap", "eth_net_offloads", 0x21c, 1),
	RoCE:                                   ifcField("cmd_hca_cap", "roce", 0x21d, 1),
	Atomic:                                 ifcField("cmd_hca_cap", "atomic", 0x21e, 1),
	CQOi:                                   ifcField("cmd_hca_cap", "cq_oi", 0x220, 1),
	CQResize:                               ifcField("cmd_hca_cap", "cq_resize", 0x221, 1),
	CQModeration:                           ifcField("cmd_hca_cap", "cq_moderation", 0x222, 1),
	CQEQRemap:                              ifcField("cmd_hca_cap", "cq_eq_remap", 0x226, 1),
	Pg:                                     ifcField("cmd_hca_cap", "pg", 0x227, 1),
	BlockLBMC:                              ifcField("cmd_hca_cap", "block_lb_mc", 0x228, 1),
	ScqeBreakModeration:                    ifcField("cmd_hca_cap", "scqe_break_moderation", 0x22a, 1),
	CQPeriodStartFromCQE:                   ifcField("cmd_hca_cap", "cq_period_start_from_cqe", 0x22b, 1),
	Cd:                                     ifcField("cmd_hca_cap", "cd", 0x22c, 1),
	Apm:                                    ifcField("cmd_hca_cap", "apm", 0x22e, 1),
	VectorCalc:                             ifcField("cmd_hca_cap", "vector_calc", 0x22f, 1),
	UmrPtrRlky:                             ifcField("cmd_hca_cap", "umr_ptr_rlky", 0x230, 1),
	Imaicl:                                 ifcField("cmd_hca_cap", "imaicl", 0x231, 1),
	QPPacketBased:                          ifcField("cmd_hca_cap", "qp_packet_based", 0x232, 1),
	Qkv:                                    ifcField("cmd_hca_cap", "qkv", 0x236, 1),
	Pkv:                                    ifcField("cmd_hca_cap", "pkv", 0x237, 1),
	SetDethSqpn:                            ifcField("cmd_hca_cap", "set_deth_sqpn", 0x238, 1),
	XRC:                                    ifcField("cmd_hca_cap", "xrc", 0x23c, 1),
	Ud:                                     ifcField("cmd_hca_cap", "ud", 0x23d, 1),
	UC:                                     ifcField("cmd_hca_cap", "uc", 0x23e, 1),
	Rc:                                     ifcField("cmd_hca_cap", "rc", 0x23f, 1),
	UAR4k:                                  ifcField("cmd_hca_cap", "uar_4k", 0x240, 1),
	FlRcQPWhenRoCEDisabled:                 ifcField("cmd_hca_cap", "fl_rc_qp_when_roce_disabled", 0x248, 1),
	RegexpParams:                           ifcField("cmd_hca_cap", "regexp_params", 0x249, 1),
	UARSz:                                  ifcField("cmd_hca_cap", "uar_sz", 0x24a, 6),
	PortSelectionCap:                       ifcField("cmd_hca_cap", "port_selection_cap", 0x250, 1),
	UMEMUID0:                               ifcField("cmd_hca_cap", "umem_uid_0", 0x252, 1),
	LogPgSz:                                ifcField("cmd_hca_cap", "log_pg_sz", 0x258, 8),
	Bf:                                     ifcField("cmd_hca_cap", "bf", 0x260, 1),
	DriverVersion:                          ifcField("cmd_hca_cap", "driver_version", 0x261, 1),
	PadTXEthPacket:                         ifcField("cmd_hca_cap", "pad_tx_eth_packet", 0x262, 1),
	MKeyByName:                             ifcField("cmd_hca_cap", "mkey_by_name", 0x266, 1),
	LogBfRegSize:                           ifcField("cmd_hca_cap", "log_bf_reg_size", 0x26b, 5),
	LAGDCT:                                 ifcField("cmd_hca_cap", "lag_dct", 0x276, 2),
	LAGTXPortAffinity:                      ifcField("cmd_hca_cap", "lag_tx_port_affinity", 0x278, 1),
	LAGNativeFdbSelection:                  ifcField("cmd_hca_cap", "lag_native_fdb_selection", 0x279, 1),
	LAGMaster:                              ifcField("cmd_hca_cap", "lag_master", 0x27b, 1),
	NumLAGPorts:                            ifcField("cmd_hca_cap", "num_lag_ports", 0x27c, 4),
	MaxWQESzSQ:                             ifcField("cmd_hca_cap", "max_wqe_sz_sq", 0x290, 16),
	MaxWQESzRQ:                             ifcField("cmd_hca_cap", "max_wqe_sz_rq", 0x2b0, 16),
	MaxFlowCounterLo:                       ifcField("cmd_hca_cap", "max_flow_counter_31_16", 0x2c0, 16),
	MaxWQESzSQDC:                           ifcField("cmd_hca_cap", "max_wqe_sz_sq_dc", 0x2d0, 16),
	MaxQPMcg:                               ifcField("cmd_hca_cap", "max_qp_mcg", 0x2e7, 25),
	FlowCounterBulkAlloc:                   ifcField("cmd_hca_cap", "flow_counter_bulk_alloc", 0x310, 8),
	LogMaxMcg:                              ifcField("cmd_hca_cap", "log_max_mcg", 0x318, 8),
	LogMaxTransportDomain:                  ifcField("cmd_hca_cap", "log_max_transport_domain", 0x323, 5),
	LogMaxPD:                               ifcField("cmd_hca_cap", "log_max_pd", 0x32b, 5),
	LogMaxXRCD:                             ifcField("cmd_hca_cap", "log_max_xrcd", 0x33b, 5),
	NICReceiveSteeringDiscard:              ifcField("cmd_hca_cap", "nic_receive_steering_discard", 0x340, 1),
	ReceiveDiscardVportDown:                ifcField("cmd_hca_cap", "receive_discard_vport_down", 0x341, 1),
	TransmitDiscardVportDown:               ifcField("cmd_hca_cap", "transmit_discard_vport_down", 0x342, 1),
	EQOverrunCount:                         ifcField("cmd_hca_cap", "eq_overrun_count", 0x343, 1),
	InvalidCommandCount:                    ifcField("cmd_hca_cap", "invalid_command_count", 0x345, 1),
	QuotaExceededCount:                     ifcField("cmd_hca_cap", "quota_exceeded_count", 0x346, 1),
	LogMaxFlowCounterBulk:                  ifcField("cmd_hca_cap", "log_max_flow_counter_bulk", 0x348, 8),
	MaxFlowCounter150:                      ifcField("cmd_hca_cap", "max_flow_counter_15_0", 0x350, 16),
	LogMaxRQ:                               ifcField("cmd_hca_cap", "log_max_rq", 0x363, 5),
	LogMaxSQ:                               ifcField("cmd_hca_cap", "log_max_sq", 0x36b, 5),
	LogMaxTIR:                              ifcField("cmd_hca_cap", "log_max_tir", 0x373, 5),
	LogMaxTIS:                              ifcField("cmd_hca_cap", "log_max_tis", 0x37b, 5),
	BasicCyclicRcvWQE:                      ifcField("cmd_hca_cap", "basic_cyclic_rcv_wqe", 0x380, 1),
	LogMaxRMP:                              ifcField("cmd_hca_cap", "log_max_rmp", 0x383, 5),
	LogMaxRQT:                              ifcField("cmd_hca_cap", "log_max_rqt", 0x38b, 5),
	LogMaxRQTSize:                          ifcField("cmd_hca_cap", "log_max_rqt_size", 0x393, 5),
	LogMaxTISPerSQ:                         ifcField("cmd_hca_cap", "log_max_tis_per_sq", 0x39b, 5),
	ExtStrideNumRange:                      ifcField("cmd_hca_cap", "ext_stride_num_range", 0x3a0, 1),
	RoCERwSupported:                        ifcField("cmd_hca_cap", "roce_rw_supported", 0x3a1, 1),
	LogMaxCurrentUCListWrSupported:         ifcField("cmd_hca_cap", "log_max_current_uc_list_wr_supported", 0x3a2, 1),
	LogMaxStrideSzRQ:                       ifcField("cmd_hca_cap", "log_max_stride_sz_rq", 0x3a3, 5),
	LogMinStrideSzRQ:                       ifcField("cmd_hca_cap", "log_min_stride_sz_rq", 0x3ab, 5),
	LogMaxStrideSzSQ:                       ifcField("cmd_hca_cap", "log_max_stride_sz_sq", 0x3b3, 5),
	LogMinStrideSzSQ:                       ifcField("cmd_hca_cap", "log_min_stride_sz_sq", 0x3bb, 5),
	Hairpin:                                ifcField("cmd_hca_cap", "hairpin", 0x3c0, 1),
	LogMaxHairpinQueues:                    ifcField("cmd_hca_cap", "log_max_hairpin_queues", 0x3c3, 5),
	LogMaxHairpinWQDataSz:                  ifcField("cmd_hca_cap", "log_max_hairpin_wq_data_sz", 0x3cb, 5),
	LogMaxHairpinNumPackets:                ifcField("cmd_hca_cap", "log_max_hairpin_num_packets", 0x3d3, 5),
	LogMaxWQSz:                             ifcField("cmd_hca_cap", "log_max_wq_sz", 0x3db, 5),
	NICVportChangeEvent:                    ifcField("cmd_hca_cap", "nic_vport_change_event", 0x3e0, 1),
	DisableLocalLBUC:                       ifcField("cmd_hca_cap", "disable_local_lb_uc", 0x3e1, 1),
	DisableLocalLBMC:                       ifcField("cmd_hca_cap", "disable_local_lb_mc", 0x3e2, 1),
	LogMinHairpinWQDataSz:                  ifcField("cmd_hca_cap", "log_min_hairpin_wq_data_sz", 0x3e3, 5),
	VHCAState:                              ifcField("cmd_hca_cap", "vhca_state", 0x3ea, 1),
	LogMaxVLANList:                         ifcField("cmd_hca_cap", "log_max_vlan_list", 0x3eb, 5),
	LogMaxCurrentMCList:                    ifcField("cmd_hca_cap", "log_max_current_mc_list", 0x3f3, 5),
	LogMaxCurrentUCList:                    ifcField("cmd_hca_cap", "log_max_current_uc_list", 0x3fb, 5),
	GeneralObjTypes:                        ifcField("cmd_hca_cap", "general_obj_types", 0x400, 64),
	SQTSFormat:                             ifcField("cmd_hca_cap", "sq_ts_format", 0x440, 2),
	RQTSFormat:                             ifcField("cmd_hca_cap", "rq_ts_format", 0x442, 2),
	SteeringFormatVersion:                  ifcField("cmd_hca_cap", "steering_format_version", 0x444, 4),
	CreateQPStartHint:                      ifcField("cmd_hca_cap", "create_qp_start_hint", 0x448, 24),
	ATS:                                    ifcField("cmd_hca_cap", "ats", 0x461, 1),
	LogMaxUctx:                             ifcField("cmd_hca_cap", "log_max_uctx", 0x463, 5),
	IPsecOffload:                           ifcField("cmd_hca_cap", "ipsec_offload", 0x46a, 1),
	LogMaxUMEM:                             ifcField("cmd_hca_cap", "log_max_umem", 0x46b, 5),
	MaxNumEqs:                              ifcField("cmd_hca_cap", "max_num_eqs", 0x470, 16),
	TLSTX:                                  ifcField("cmd_hca_cap", "tls_tx", 0x481, 1),
	TLSRX:                                  ifcField("cmd_hca_cap", "tls_rx", 0x482, 1),
	LogMaxL2Table:                          ifcField("cmd_hca_cap", "log_max_l2_table", 0x483, 5),
	LogUARPageSz:                           ifcField("cmd_hca_cap", "log_uar_page_sz", 0x490, 16),
	DeviceFrequencyMhz:                     ifcField("cmd_hca_cap", "device_frequency_mhz", 0x4c0, 32),
	DeviceFrequencyKhz:                     ifcField("cmd_hca_cap", "device_frequency_khz", 0x4e0, 32),
	NumOfUarsPerPage:                       ifcField("cmd_hca_cap", "num_of_uars_per_page", 0x520, 32),
	FlexParserProtocols:                    ifcField("cmd_hca_cap", "flex_parser_protocols", 0x540, 32),
	MaxGENEVETlvOptions:                    ifcField("cmd_hca_cap", "max_geneve_tlv_options", 0x560, 8),
	MaxGENEVETlvOptionDataLen:              ifcField("cmd_hca_cap", "max_geneve_tlv_option_data_len", 0x56b, 5),
	AdvVirtualization:                      ifcField("cmd_hca_cap", "adv_virtualization", 0x579, 1),
	LogMaxDciStreamChannels:                ifcField("cmd_hca_cap", "log_max_dci_stream_channels", 0x58b, 5),
	LogMaxDciErroredStreams:                ifcField("cmd_hca_cap", "log_max_dci_errored_streams", 0x593, 5),
	EnhancedCQECompression:                 ifcField("cmd_hca_cap", "enhanced_cqe_compression", 0x5b0, 1),
	LogMaxDek:                              ifcField("cmd_hca_cap", "log_max_dek", 0x5b3, 5),
	MiniCQERespStrideIndex:                 ifcField("cmd_hca_cap", "mini_cqe_resp_stride_index", 0x5bc, 1),
	CQE128Always:                           ifcField("cmd_hca_cap", "cqe_128_always", 0x5bd, 1),
	CQECompression128:                      ifcField("cmd_hca_cap", "cqe_compression_128", 0x5be, 1),
	CQECompression:                         ifcField("cmd_hca_cap", "cqe_compression", 0x5bf, 1),
	CQECompressionTimeout:                  ifcField("cmd_hca_cap", "cqe_compression_timeout", 0x5c0, 16),
	CQECompressionMaxNum:                   ifcField("cmd_hca_cap", "cqe_compression_max_num", 0x5d0, 16),
	FlexParserIDGTPUDW0:                    ifcField("cmd_hca_cap", "flex_parser_id_gtpu_dw_0", 0x5e8, 4),
	TagMatching:                            ifcField("cmd_hca_cap", "tag_matching", 0x5f0, 1),
	RndvOffloadRc:                          ifcField("cmd_hca_cap", "rndv_offload_rc", 0x5f1, 1),
	RndvOffloadDC:                          ifcField("cmd_hca_cap", "rndv_offload_dc", 0x5f2, 1),
	LogTagMatchingListSz:                   ifcField("cmd_hca_cap", "log_tag_matching_list_sz", 0x5f3, 5),
	LogMaxXrq:                              ifcField("cmd_hca_cap", "log_max_xrq", 0x5fb, 5),
	AffiliateNICVportCriteria:              ifcField("cmd_hca_cap", "affiliate_nic_vport_criteria", 0x600, 8),
	NativePortNum:                          ifcField("cmd_hca_cap", "native_port_num", 0x608, 8),
	NumVHCAPorts:                           ifcField("cmd_hca_cap", "num_vhca_ports", 0x610, 8),
	FlexParserIDGTPUTeid:                   ifcField("cmd_hca_cap", "flex_parser_id_gtpu_teid", 0x618, 4),
	SWOwnerID:                              ifcField("cmd_hca_cap", "sw_owner_id", 0x61e, 1),
	MaxNumOfMonitorCounters:                ifcField("cmd_hca_cap", "max_num_of_monitor_counters", 0x620, 16),
	NumPpcntMonitorCounters:                ifcField("cmd_hca_cap", "num_ppcnt_monitor_counters", 0x630, 16),
	MaxNumSF:                               ifcField("cmd_hca_cap", "max_num_sf", 0x640, 16),
	NumQMonitorCounters:                    ifcField("cmd_hca_cap", "num_q_monitor_counters", 0x650, 16),
	SF:                                     ifcField("cmd_hca_cap", "sf", 0x680, 1),
	SFSetPartition:                         ifcField("cmd_hca_cap", "sf_set_partition", 0x681, 1),
	LogMaxSF:                               ifcField("cmd_hca_cap", "log_max_sf", 0x683, 5),
	Apu:                                    ifcField("cmd_hca_cap", "apu", 0x688, 1),
	Migration:                              ifcField("cmd_hca_cap", "migration", 0x68d, 1),
	LogMinSFSize:                           ifcField("cmd_hca_cap", "log_min_sf_size", 0x690, 8),
	MaxNumSFPartitions:                     ifcField("cmd_hca_cap", "max_num_sf_partitions", 0x698, 8),
	UctxCap:                                ifcField("cmd_hca_cap", "uctx_cap", 0x6a0, 32),
	FlexParserIDGENEVETlvOption0:           ifcField("cmd_hca_cap", "flex_parser_id_geneve_tlv_option_0", 0x6c4, 4),
	FlexParserIDICMPDw1:                    ifcField("cmd_hca_cap", "flex_parser_id_icmp_dw1", 0x6c8, 4),
	FlexParserIDICMPDw0:                    ifcField("cmd_hca_cap", "flex_parser_id_icmp_dw0", 0x6cc, 4),
	FlexParserIDICMPv6Dw1:                  ifcField("cmd_hca_cap", "flex_parser_id_icmpv6_dw1", 0x6d0, 4),
	FlexParserIDICMPv6Dw0:                  ifcField("cmd_hca_cap", "flex_parser_id_icmpv6_dw0", 0x6d4, 4),
	FlexParserIDOuterFirstMPLSOverGRE:      ifcField("cmd_hca_cap", "flex_parser_id_outer_first_mpls_over_gre", 0x6d8, 4),
	FlexParserIDOuterFirstMPLSOverUDPLabel: ifcField("cmd_hca_cap", "flex_parser_id_outer_first_mpls_over_udp_label", 0x6dc, 4),
	MaxNumMatchDefiner:                     ifcField("cmd_hca_cap", "max_num_match_definer", 0x6e0, 16),
	SFBaseID:                               ifcField("cmd_hca_cap", "sf_base_id", 0x6f0, 16),
	FlexParserIDGTPUDW2:                    ifcField("cmd_hca_cap", "flex_parser_id_gtpu_dw_2", 0x700, 4),
	FlexParserIDGTPUFirstExtDW0:            ifcField("cmd_hca_cap", "flex_parser_id_gtpu_first_ext_dw_0", 0x704, 4),
	NumTotalDynamicVFMSIX:                  ifcField("cmd_hca_cap", "num_total_dynamic_vf_msix", 0x708, 24),
	DynamicMSIXTableSize:                   ifcField("cmd_hca_cap", "dynamic_msix_table_size", 0x734, 12),
	MinDynamicVFMSIXTableSize:              ifcField("cmd_hca_cap", "min_dynamic_vf_msix_table_size", 0x74c, 4),
	MaxDynamicVFMSIXTableSize:              ifcField("cmd_hca_cap", "max_dynamic_vf_msix_table_size", 0x754, 12),
	VHCATunnelCommands:                     ifcField("cmd_hca_cap", "vhca_tunnel_commands", 0x780, 64),
	MatchDefinerFormatSupported:            ifcField("cmd_hca_cap", "match_definer_format_supported", 0x7c0, 64),
}

// EthernetOffloadCaps is the Ethernet offload capabilities (mlx5_ifc.h struct
// mlx5_ifc_per_protocol_networking_offload_caps_bits).
var EthernetOffloadCaps = struct {
	CsumCap                      Field
	VLANCap                      Field
	LROCap                       Field
	LROPshFlag                   Field
	LROTimeStamp                 Field
	WQEVLANInsert                Field
	SelfLBEnModifiable           Field
	MaxLSOCap                    Field
	MultiPktSendWQE              Field
	WQEInlineMode                Field
	RSSIndTblCap                 Field
	RegUmrSQ                     Field
	ScatterFcs                   Field
	EnhancedMultiPktSendWQE      Field
	TunnelLSOConstOutIPID        Field
	TunnelLROGRE                 Field
	TunnelLROVXLAN               Field
	TunnelStatelessGRE           Field
	TunnelStatelessVXLAN         Field
	Swp                          Field
	SwpCsum                      Field
	SwpLSO                       Field
	CQEChecksumFull              Field
	TunnelStatelessGENEVETX      Field
	TunnelStatelessMPLSOverUDP   Field
	TunnelStatelessMPLSOverGRE   Field
	TunnelStatelessVXLANGPE      Field
	TunnelStatelessIPv4OverVXLAN Field
	TunnelStatelessIPOverIP      Field
	InsertTrailer                Field
	TunnelStatelessIPOverIPRX    Field
	TunnelStatelessIPOverIPTX    Field
	MaxVXLANUDPPorts             Field
	MaxGENEVEOptLen              Field
	TunnelStatelessGENEVERX      Field
	LROMinMssSize                Field
	LROTimerSupportedPeriods     Field
}{
	CsumCap:                      ifcField("per_protocol_networking_offload_caps", "csum_cap", 0x0, 1),
	VLANCap:                      ifcField("per_protocol_networking_offload_caps", "vlan_cap", 0x1, 1),
	LROCap:                       ifcField("per_protocol_networking_offload_caps", "lro_cap", 0x2, 1),
	LROPshFlag:                   ifcField("per_protocol_networking_offload_caps", "lro_psh_flag", 0x3, 1),
	LROTimeStamp:                 ifcField("per_protocol_networking_offload_caps", "lro_time_stamp", 0x4, 1),
	WQEVLANInsert:                ifcField("per_protocol_networking_offload_caps", "wqe_vlan_insert", 0x7, 1),
	SelfLBEnModifiable:           ifcField("per_protocol_networking_offload_caps", "self_lb_en_modifiable", 0x8, 1),
	MaxLSOCap:                    ifcField("per_protocol_networking_offload_caps", "max_lso_cap", 0xb, 5),
	MultiPktSendWQE:              ifcField("per_protocol_networking_offload_caps", "multi_pkt_send_wqe", 0x10, 2),
	WQEInlineMode:                ifcField("per_protocol_networking_offload_caps", "wqe_inline_mode", 0x12, 2),
	RSSIndTblCap:                 ifcField("per_protocol_networking_offload_caps", "rss_ind_tbl_cap", 0x14, 4),
	RegUmrSQ:                     ifcField("per_protocol_networking_offload_caps", "reg_umr_sq", 0x18, 1),
	ScatterFcs:                   ifcField("per_protocol_networking_offload_caps", "scatter_fcs", 0x19, 1),
	EnhancedMultiPktSendWQE:      ifcField("per_protocol_networking_offload_caps", "enhanced_multi_pkt_send_wqe", 0x1a, 1),
	TunnelLSOConstOutIPID:        ifcField("per_protocol_networking_offload_caps", "tunnel_lso_const_out_ip_id", 0x1b, 1),
	TunnelLROGRE:                 ifcField("per_protocol_networking_offload_caps", "tunnel_lro_gre", 0x1c, 1),
	TunnelLROVXLAN:               ifcField("per_protocol_networking_offload_caps", "tunnel_lro_vxlan", 0x1d, 1),
	TunnelStatelessGRE:           ifcField("per_protocol_networking_offload_caps", "tunnel_stateless_gre", 0x1e, 1),
	TunnelStatelessVXLAN:         ifcField("per_protocol_networking_offload_caps", "tunnel_stateless_vxlan", 0x1f, 1),
	Swp:                          ifcField("per_protocol_networking_offload_caps", "swp", 0x20, 1),
	SwpCsum:                      ifcField("per_protocol_networking_offload_caps", "swp_csum", 0x21, 1),
	SwpLSO:                       ifcField("per_protocol_networking_offload_caps", "swp_lso", 0x22, 1),
	CQEChecksumFull:              ifcField("per_protocol_networking_offload_caps", "cqe_checksum_full", 0x23, 1),
	TunnelStatelessGENEVETX:      ifcField("per_protocol_networking_offload_caps", "tunnel_stateless_geneve_tx", 0x24, 1),
	TunnelStatelessMPLSOverUDP:   ifcField("per_protocol_networking_offload_caps", "tunnel_stateless_mpls_over_udp", 0x25, 1),
	TunnelStatelessMPLSOverGRE:   ifcField("per_protocol_networking_offload_caps", "tunnel_stateless_mpls_over_gre", 0x26, 1),
	TunnelStatelessVXLANGPE:      ifcField("per_protocol_networking_offload_caps", "tunnel_stateless_vxlan_gpe", 0x27, 1),
	TunnelStatelessIPv4OverVXLAN: ifcField("per_protocol_networking_offload_caps", "tunnel_stateless_ipv4_over_vxlan", 0x28, 1),
	TunnelStatelessIPOverIP:      ifcField("per_protocol_networking_offload_caps", "tunnel_stateless_ip_over_ip", 0x29, 1),
	InsertTrailer:                ifcField("per_protocol_networking_offload_caps", "insert_trailer", 0x2a, 1),
	TunnelStatelessIPOverIPRX:    ifcField("per_protocol_networking_offload_caps", "tunnel_stateless_ip_over_ip_rx", 0x2c, 1),
	TunnelStatelessIPOverIPTX:    ifcField("per_protocol_networking_offload_caps", "tunnel_stateless_ip_over_ip_tx", 0x2d, 1),
	MaxVXLANUDPPorts:             ifcField("per_protocol_networking_offload_caps", "max_vxlan_udp_ports", 0x30, 8),
	MaxGENEVEOptLen:              ifcField("per_protocol_networking_offload_caps", "max_geneve_opt_len", 0x3e, 1),
	TunnelStatelessGENEVERX:      ifcField("per_protocol_networking_offload_caps", "tunnel_stateless_geneve_rx", 0x3f, 1),
	LROMinMssSize:                ifcField("per_protocol_networking_offload_caps", "lro_min_mss_size", 0x50, 16),
	LROTimerSupportedPeriods:     ifcField("per_protocol_networking_offload_caps", "lro_timer_supported_periods[0]", 0x180, 32),
}

// FlowTableNICCap is the NIC flow-table capabilities (mlx5_ifc.h struct
// mlx5_ifc_flow_table_nic_cap_bits).
var FlowTableNICCap = struct {
	NICRXMultiPathTirs                    Field
	NICRXMultiPathTirsFts                 Field
	AllowSnifferAndNICRXSharedTIR         Field
	SWOwnerReformatSupported              Field
	EncapGeneralHeader                    Field
	LogMaxPacketReformatContext           Field
	MaxEncapHeaderSize                    Field
	FlowTablePropertiesNICReceive         Field
	FlowTablePropertiesNICReceiveRdma     Field
	FlowTablePropertiesNICReceiveSniffer  Field
	FlowTablePropertiesNICTransmit        Field
	FlowTablePropertiesNICTransmitRdma    Field
	FlowTablePropertiesNICTransmitSniffer Field
	FTFieldSupport2NICReceiveRdma         Field
	FTFieldSupport2NICTransmitRdma        Field
	SWSteeringNICRXActionDropICMAddress   Field
	SWSteeringNICTXActionDropICMAddress   Field
	SWSteeringNICTXActionAllowICMAddress  Field
}{
	NICRXMultiPathTirs:                    ifcField("flow_table_nic_cap", "nic_rx_multi_path_tirs", 0x0, 1),
	NICRXMultiPathTirsFts:                 ifcField("flow_table_nic_cap", "nic_rx_multi_path_tirs_fts", 0x1, 1),
	AllowSnifferAndNICRXSharedTIR:         ifcField("flow_table_nic_cap", "allow_sniffer_and_nic_rx_shared_tir", 0x2, 1),
	SWOwnerReformatSupported:              ifcField("flow_table_nic_cap", "sw_owner_reformat_supported", 0x7, 1),
	EncapGeneralHeader:                    ifcField("flow_table_nic_cap", "encap_general_header", 0x20, 1),
	LogMaxPacketReformatContext:           ifcField("flow_table_nic_cap", "log_max_packet_reformat_context", 0x2b, 5),
	MaxEncapHeaderSize:                    ifcField("flow_table_nic_cap", "max_encap_header_size", 0x36, 10),
	FlowTablePropertiesNICReceive:         ifcField("flow_table_nic_cap", "flow_table_properties_nic_receive", 0x200, 512),
	FlowTablePropertiesNICReceiveRdma:     ifcField("flow_table_nic_cap", "flow_table_properties_nic_receive_rdma", 0x400, 512),
	FlowTablePropertiesNICReceiveSniffer:  ifcField("flow_table_nic_cap", "flow_table_properties_nic_receive_sniffer", 0x600, 512),
	FlowTablePropertiesNICTransmit:        ifcField("flow_table_nic_cap", "flow_table_properties_nic_transmit", 0x800, 512),
	FlowTablePropertiesNICTransmitRdma:    ifcField("flow_table_nic_cap", "flow_table_properties_nic_transmit_rdma", 0xa00, 512),
	FlowTablePropertiesNICTransmitSniffer: ifcField("flow_table_nic_cap", "flow_table_properties_nic_transmit_sniffer", 0xc00, 512),
	FTFieldSupport2NICReceiveRdma:         ifcField("flow_table_nic_cap", "ft_field_support_2_nic_receive_rdma", 0x1500, 128),
	FTFieldSupport2NICTransmitRdma:        ifcField("flow_table_nic_cap", "ft_field_support_2_nic_transmit_rdma", 0x1800, 128),
	SWSteeringNICRXActionDropICMAddress:   ifcField("flow_table_nic_cap", "sw_steering_nic_rx_action_drop_icm_address", 0x2000, 64),
	SWSteeringNICTXActionDropICMAddress:   ifcField("flow_table_nic_cap", "sw_steering_nic_tx_action_drop_icm_address", 0x2040, 64),
	SWSteeringNICTXActionAllowICMAddress:  ifcField("flow_table_nic_cap", "sw_steering_nic_tx_action_allow_icm_address", 0x2080, 64),
}

// FlowTablePropLayout is the properties of one flow table type (RX or TX) (mlx5_ifc.h struct
// mlx5_ifc_flow_table_prop_layout_bits).
var FlowTablePropLayout = struct {
	FTSupport                  Field
	FlowCounter                Field
	FlowModifyEn               Field
	ModifyRoot                 Field
	IdentifiedMissTableMode    Field
	FlowTableModify            Field
	Reformat                   Field
	Decap                      Field
	PopVLAN                    Field
	PushVLAN                   Field
	PopVLAN2                   Field
	PushVLAN2                  Field
	ReformatAndVLANAction      Field
	SWOwner                    Field
	ReformatL3TunnelToL2       Field
	ReformatL2ToL3Tunnel       Field
	ReformatAndModifyAction    Field
	IgnoreFlowLevel            Field
	TableMissActionDomain      Field
	TerminationTable           Field
	ReformatAndFwdToTable      Field
	IPsecEncrypt               Field
	IPsecDecrypt               Field
	SWOwnerV2                  Field
	TerminationTableRawTraffic Field
	LogMaxFTSize               Field
	LogMaxModifyHeaderContext  Field
	MaxModifyHeaderActions     Field
	MaxFTLevel                 Field
	ExecuteASO                 Field
	ReformatInsert             Field
	ReformatRemove             Field
	MacsecEncrypt              Field
	MacsecDecrypt              Field
	ReformatAddMacsec          Field
	ReformatRemoveMacsec       Field
	LogMaxFTNum                Field
	LogMaxFlowCounter          Field
	LogMaxDestination          Field
	LogMaxFlow                 Field
	FTFieldSupport             Field
	FTFieldBitmaskSupport      Field
}{
	FTSupport:                  ifcField("flow_table_prop_layout", "ft_support", 0x0, 1),
	FlowCounter:                ifcField("flow_table_prop_layout", "flow_counter", 0x2, 1),
	FlowModifyEn:               ifcField("flow_table_prop_layout", "flow_modify_en", 0x3, 1),
	ModifyRoot:                 ifcField("flow_table_prop_layout", "modify_root", 0x4, 1),
	IdentifiedMissTableMode:    ifcField("flow_table_prop_layout", "identified_miss_table_mode", 0x5, 1),
	FlowTableModify:            ifcField("flow_table_prop_layout", "flow_table_modify", 0x6, 1),
	Reformat:                   ifcField("flow_table_prop_layout", "reformat", 0x7, 1),
	Decap:                      ifcField("flow_table_prop_layout", "decap", 0x8, 1),
	PopVLAN:                    ifcField("flow_table_prop_layout", "pop_vlan", 0xa, 1),
	PushVLAN:                   ifcField("flow_table_prop_layout", "push_vlan", 0xb, 1),
	PopVLAN2:                   ifcField("flow_table_prop_layout", "pop_vlan_2", 0xd, 1),
	PushVLAN2:                  ifcField("flow_table_prop_layout", "push_vlan_2", 0xe, 1),
	ReformatAndVLANAction:      ifcField("flow_table_prop_layout", "reformat_and_vlan_action", 0xf, 1),
	SWOwner:                    ifcField("flow_table_prop_layout", "sw_owner", 0x11, 1),
	ReformatL3TunnelToL2:       ifcField("flow_table_prop_layout", "reformat_l3_tunnel_to_l2", 0x12, 1),
	ReformatL2ToL3Tunnel:       ifcField("flow_table_prop_layout", "reformat_l2_to_l3_tunnel", 0x13, 1),
	ReformatAndModifyAction:    ifcField("flow_table_prop_layout", "reformat_and_modify_action", 0x14, 1),
	IgnoreFlowLevel:            ifcField("flow_table_prop_layout", "ignore_flow_level", 0x15, 1),
	TableMissActionDomain:      ifcField("flow_table_prop_layout", "table_miss_action_domain", 0x17, 1),
	TerminationTable:           ifcField("flow_table_prop_layout", "termination_table", 0x18, 1),
	ReformatAndFwdToTable:      ifcField("flow_table_prop_layout", "reformat_and_fwd_to_table", 0x19, 1),
	IPsecEncrypt:               ifcField("flow_table_prop_layout", "ipsec_encrypt", 0x1c, 1),
	IPsecDecrypt:               ifcField("flow_table_prop_layout", "ipsec_decrypt", 0x1d, 1),
	SWOwnerV2:                  ifcField("flow_table_prop_layout", "sw_owner_v2", 0x1e, 1),
	TerminationTableRawTraffic: ifcField("flow_table_prop_layout", "termination_table_raw_traffic", 0x20, 1),
	LogMaxFTSize:               ifcField("flow_table_prop_layout", "log_max_ft_size", 0x22, 6),
	LogMaxModifyHeaderContext:  ifcField("flow_table_prop_layout", "log_max_modify_header_context", 0x28, 8),
	MaxModifyHeaderActions:     ifcField("flow_table_prop_layout", "max_modify_header_actions", 0x30, 8),
	MaxFTLevel:                 ifcField("flow_table_prop_layout", "max_ft_level", 0x38, 8),
	ExecuteASO:                 ifcField("flow_table_prop_layout", "execute_aso", 0x46, 1),
	ReformatInsert:             ifcField("flow_table_prop_layout", "reformat_insert", 0x62, 1),
	ReformatRemove:             ifcField("flow_table_prop_layout", "reformat_remove", 0x63, 1),
	MacsecEncrypt:              ifcField("flow_table_prop_layout", "macsec_encrypt", 0x64, 1),
	MacsecDecrypt:              ifcField("flow_table_prop_layout", "macsec_decrypt", 0x65, 1),
	ReformatAddMacsec:          ifcField("flow_table_prop_layout", "reformat_add_macsec", 0x68, 1),
	ReformatRemoveMacsec:       ifcField("flow_table_prop_layout", "reformat_remove_macsec", 0x69, 1),
	LogMaxFTNum:                ifcField("flow_table_prop_layout", "log_max_ft_num", 0x78, 8),
	LogMaxFlowCounter:          ifcField("flow_table_prop_layout", "log_max_flow_counter", 0x90, 8),
	LogMaxDestination:          ifcField("flow_table_prop_layout", "log_max_destination", 0x98, 8),
	LogMaxFlow:                 ifcField("flow_table_prop_layout", "log_max_flow", 0xb8, 8),
	FTFieldSupport:             ifcField("flow_table_prop_layout", "ft_field_support", 0x100, 128),
	FTFieldBitmaskSupport:      ifcField("flow_table_prop_layout", "ft_field_bitmask_support", 0x180, 128),
}

// QoSCap is the QoS and packet-pacing capabilities (mlx5_ifc.h struct mlx5_ifc_qos_cap_bits).
var QoSCap = struct {
	PacketPacing              Field
	ESWScheduling             Field
	ESWBwShare                Field
	ESWRateLimit              Field
	PacketPacingBurstBound    Field
	PacketPacingTypicalSize   Field
	NICSQScheduling           Field
	NICBwShare                Field
	NICRateLimit              Field
	PacketPacingUID           Field
	LogESWMaxSchedDepth       Field
	LogMaxQoSNICQueueGroup    Field
	PacketPacingMaxRate       Field
	PacketPacingMinRate       Field
	PacketPacingRateTableSize Field
	ESWElementType            Field
	ESWTSARType               Field
	MaxQoSParaVport           Field
	MaxTSARBwShare            Field
	NICElementType            Field
	NICTSARType               Field
	LogMeterASOGranularity    Field
	LogMeterASOMaxAlloc       Field
	LogMaxNumMeterASO         Field
}{
	PacketPacing:              ifcField("qos_cap", "packet_pacing", 0x0, 1),
	ESWScheduling:             ifcField("qos_cap", "esw_scheduling", 0x1, 1),
	ESWBwShare:                ifcField("qos_cap", "esw_bw_share", 0x2, 1),
	ESWRateLimit:              ifcField("qos_cap", "esw_rate_limit", 0x3, 1),
	PacketPacingBurstBound:    ifcField("qos_cap", "packet_pacing_burst_bound", 0x5, 1),
	PacketPacingTypicalSize:   ifcField("qos_cap", "packet_pacing_typical_size", 0x6, 1),
	NICSQScheduling:           ifcField("qos_cap", "nic_sq_scheduling", 0x8, 1),
	NICBwShare:                ifcField("qos_cap", "nic_bw_share", 0x9, 1),
	NICRateLimit:              ifcField("qos_cap", "nic_rate_limit", 0xa, 1),
	PacketPacingUID:           ifcField("qos_cap", "packet_pacing_uid", 0xb, 1),
	LogESWMaxSchedDepth:       ifcField("qos_cap", "log_esw_max_sched_depth", 0xc, 4),
	LogMaxQoSNICQueueGroup:    ifcField("qos_cap", "log_max_qos_nic_queue_group", 0x2b, 5),
	PacketPacingMaxRate:       ifcField("qos_cap", "packet_pacing_max_rate", 0x40, 32),
	PacketPacingMinRate:       ifcField("qos_cap", "packet_pacing_min_rate", 0x60, 32),
	PacketPacingRateTableSize: ifcField("qos_cap", "packet_pacing_rate_table_size", 0x90, 16),
	ESWElementType:            ifcField("qos_cap", "esw_element_type", 0xa0, 16),
	ESWTSARType:               ifcField("qos_cap", "esw_tsar_type", 0xb0, 16),
	MaxQoSParaVport:           ifcField("qos_cap", "max_qos_para_vport", 0xd0, 16),
	MaxTSARBwShare:            ifcField("qos_cap", "max_tsar_bw_share", 0xe0, 32),
	NICElementType:            ifcField("qos_cap", "nic_element_type", 0x100, 16),
	NICTSARType:               ifcField("qos_cap", "nic_tsar_type", 0x110, 16),
	LogMeterASOGranularity:    ifcField("qos_cap", "log_meter_aso_granularity", 0x123, 5),
	LogMeterASOMaxAlloc:       ifcField("qos_cap", "log_meter_aso_max_alloc", 0x12b, 5),
	LogMaxNumMeterASO:         ifcField("qos_cap", "log_max_num_meter_aso", 0x133, 5),
}
