package prm

// Layouts and values of what Linux's mlx5_core and mlx5e send during probe beyond the
// bring-up commands: QUERY_ADAPTER (main.c mlx5_query_board_id), the VXLAN port commands
// (lib/vxlan.c), MODIFY_TIR's bitmask (en_common.c mlx5e_refresh_tirs, en/tir.c) and the
// port registers ACCESS_REG carries (port.c, en/port.c, en_stats.c). Register layouts are
// relative to access_register_in/out's register_data (bit 0x80 of the command).

// QueryAdapterOut is QUERY_ADAPTER output (mlx5_ifc.h struct mlx5_ifc_query_adapter_out_bits):
// the kernel copies vsd_contd_psid into the board id it prints and devlink reports.
var QueryAdapterOut = struct {
	IEEEVendorID Field
	VSDVendorID  Field
	VSD          Field
	VSDContdPSID Field
}{
	IEEEVendorID: ifcField("query_adapter_out", "query_adapter_struct.ieee_vendor_id", 0x148, 24),
	VSDVendorID:  ifcField("query_adapter_out", "query_adapter_struct.vsd_vendor_id", 0x170, 16),
	VSD:          ifcField("query_adapter_out", "query_adapter_struct.vsd", 0x180, 1664),
	VSDContdPSID: ifcField("query_adapter_out", "query_adapter_struct.vsd_contd_psid", 0x800, 128),
}

// AddVXLANUDPDportIn and DeleteVXLANUDPDportIn carry the UDP port of ADD/DELETE_VXLAN_UDP_DPORT
// (mlx5_ifc.h add_vxlan_udp_dport_in / delete_vxlan_udp_dport_in).
var (
	AddVXLANUDPDportIn = struct{ VXLANUDPPort Field }{
		VXLANUDPPort: ifcField("add_vxlan_udp_dport_in", "vxlan_udp_port", 0x70, 16),
	}
	DeleteVXLANUDPDportIn = struct{ VXLANUDPPort Field }{
		VXLANUDPPort: ifcField("delete_vxlan_udp_dport_in", "vxlan_udp_port", 0x70, 16),
	}
)

// ModifyTIRBitmask are the bits of modify_tir_in's bitmask (mlx5_ifc.h
// modify_tir_bitmask): each selects the context fields MODIFY_TIR changes; the kernel
// sends a context with only the selected fields filled (en_common.c sets self_lb_en alone).
var ModifyTIRBitmask = struct {
	SelfLBEn    Field
	Hash        Field
	PacketMerge Field
}{
	SelfLBEn:    ifcField("modify_tir_in", "bitmask.self_lb_en", 0xbb, 1),
	Hash:        ifcField("modify_tir_in", "bitmask.hash", 0xbd, 1),
	PacketMerge: ifcField("modify_tir_in", "bitmask.packet_merge", 0xbf, 1),
}

// TIRCPacketMergeMask is tirc's packet_merge_mask (LRO when non-zero).
var TIRCPacketMergeMask = ifcField("tirc", "packet_merge_mask", 0x94, 4)

// Register ids of ACCESS_REG (driver.h enum MLX5_REG_*): those mlx5_core and mlx5e read or
// write during probe and interface bring-up.
const (
	RegQCAM      = 0x4019 // C: MLX5_REG_QCAM
	RegDCBXParam = 0x4020 // C: MLX5_REG_DCBX_PARAM
	RegPMLP      = 0x5002 // C: MLX5_REG_PMLP
	RegPMTU      = 0x5003 // C: MLX5_REG_PMTU
	RegPTYS      = 0x5004 // C: MLX5_REG_PTYS
	RegPAOS      = 0x5006 // C: MLX5_REG_PAOS
	RegPFCC      = 0x5007 // C: MLX5_REG_PFCC
	RegPPCNT     = 0x5008 // C: MLX5_REG_PPCNT
	RegPVLC      = 0x500f // C: MLX5_REG_PVLC
	RegPCMR      = 0x5041 // C: MLX5_REG_PCMR
	RegPDDR      = 0x5031 // C: MLX5_REG_PDDR
	RegPPLM      = 0x5023 // C: MLX5_REG_PPLM
	RegPCAM      = 0x507f // C: MLX5_REG_PCAM
	RegNodeDesc  = 0x6001 // C: MLX5_REG_NODE_DESC
	RegMCIA      = 0x9014 // C: MLX5_REG_MCIA
	RegMTPPS     = 0x9053 // C: MLX5_REG_MTPPS
	RegMTUTC     = 0x9055 // C: MLX5_REG_MTUTC
	RegMCAM      = 0x907f // C: MLX5_REG_MCAM
	RegDTOR      = 0xc00e // C: MLX5_REG_DTOR
)

// Port administrative and operational status in PAOS (driver.h enum mlx5_port_status).
const (
	PortUp   = 1 // C: MLX5_PORT_UP
	PortDown = 2 // C: MLX5_PORT_DOWN
)

// PTYS proto_mask value for Ethernet (driver.h enum mlx5_ptys_proto: MLX5_PTYS_EN).
const PTYSProtoEth = 1 << 2 // C: MLX5_PTYS_EN

// EthLinkMode100GBaseCR4 is the legacy PTYS eth_proto bit of 100GBASE-CR4 (port.h enum
// mlx5e_link_mode), the link the model reports.
const EthLinkMode100GBaseCR4 = 20 // C: MLX5E_100GBASE_CR4

// PPCNT counter groups (port.h enum mlx5e_... MLX5_*_COUNTERS_GROUP): the IEEE 802.3 group
// is the one the model fills.
const (
	PPCNTIEEE8023Group = 0x0 // C: MLX5_IEEE_802_3_COUNTERS_GROUP
	PPCNTRFC2863Group  = 0x1 // C: MLX5_RFC_2863_COUNTERS_GROUP
)

// PTYS is the port type and speed register (mlx5_ifc.h ptys_reg).
var PTYS = struct {
	AnDisableAdmin        Field
	AnDisableCap          Field
	LocalPort             Field
	ProtoMask             Field
	AnStatus              Field
	DataRateOper          Field
	ExtEthProtoCapability Field
	EthProtoCapability    Field
	ExtEthProtoAdmin      Field
	EthProtoAdmin         Field
	ExtEthProtoOper       Field
	EthProtoOper          Field
	ConnectorType         Field
}{
	AnDisableAdmin:        ifcField("ptys_reg", "an_disable_admin", 0x1, 1),
	AnDisableCap:          ifcField("ptys_reg", "an_disable_cap", 0x2, 1),
	LocalPort:             ifcField("ptys_reg", "local_port", 0x8, 8),
	ProtoMask:             ifcField("ptys_reg", "proto_mask", 0x1d, 3),
	AnStatus:              ifcField("ptys_reg", "an_status", 0x20, 4),
	DataRateOper:          ifcField("ptys_reg", "data_rate_oper", 0x30, 16),
	ExtEthProtoCapability: ifcField("ptys_reg", "ext_eth_proto_capability", 0x40, 32),
	EthProtoCapability:    ifcField("ptys_reg", "eth_proto_capability", 0x60, 32),
	ExtEthProtoAdmin:      ifcField("ptys_reg", "ext_eth_proto_admin", 0xa0, 32),
	EthProtoAdmin:         ifcField("ptys_reg", "eth_proto_admin", 0xc0, 32),
	ExtEthProtoOper:       ifcField("ptys_reg", "ext_eth_proto_oper", 0x100, 32),
	EthProtoOper:          ifcField("ptys_reg", "eth_proto_oper", 0x120, 32),
	ConnectorType:         ifcField("ptys_reg", "connector_type", 0x17c, 4),
}

// PAOS is the port administrative and operational status register (mlx5_ifc.h paos_reg).
var PAOS = struct {
	LocalPort   Field
	AdminStatus Field
	OperStatus  Field
	ASE         Field
}{
	LocalPort:   ifcField("paos_reg", "local_port", 0x8, 8),
	AdminStatus: ifcField("paos_reg", "admin_status", 0x14, 4),
	OperStatus:  ifcField("paos_reg", "oper_status", 0x1c, 4),
	ASE:         ifcField("paos_reg", "ase", 0x20, 1),
}

// PMTU is the port MTU register (mlx5_ifc.h pmtu_reg).
var PMTU = struct {
	LocalPort Field
	MaxMTU    Field
	AdminMTU  Field
	OperMTU   Field
}{
	LocalPort: ifcField("pmtu_reg", "local_port", 0x8, 8),
	MaxMTU:    ifcField("pmtu_reg", "max_mtu", 0x20, 16),
	AdminMTU:  ifcField("pmtu_reg", "admin_mtu", 0x40, 16),
	OperMTU:   ifcField("pmtu_reg", "oper_mtu", 0x60, 16),
}

// PMLP is the port module-to-lane mapping register (mlx5_ifc.h pmlp_reg).
var PMLP = struct {
	LocalPort          Field
	Width              Field
	Lane0ModuleMapping Field
}{
	LocalPort:          ifcField("pmlp_reg", "local_port", 0x8, 8),
	Width:              ifcField("pmlp_reg", "width", 0x18, 8),
	Lane0ModuleMapping: ifcField("pmlp_reg", "lane0_module_mapping", 0x20, 32),
}

// PFCC is the port flow-control (pause) register (mlx5_ifc.h pfcc_reg).
var PFCC = struct {
	LocalPort Field
	PPTX      Field
	APTX      Field
	PFCTX     Field
	PPRX      Field
	APRX      Field
	PFCRX     Field
}{
	LocalPort: ifcField("pfcc_reg", "local_port", 0x8, 8),
	PPTX:      ifcField("pfcc_reg", "pptx", 0x40, 1),
	APTX:      ifcField("pfcc_reg", "aptx", 0x41, 1),
	PFCTX:     ifcField("pfcc_reg", "pfctx", 0x48, 8),
	PPRX:      ifcField("pfcc_reg", "pprx", 0x60, 1),
	APRX:      ifcField("pfcc_reg", "aprx", 0x61, 1),
	PFCRX:     ifcField("pfcc_reg", "pfcrx", 0x68, 8),
}

// PPCNT is the port counters register (mlx5_ifc.h ppcnt_reg); the 802.3 group's 64-bit
// counters are high/low dword pairs, of which the fields below are the high words.
var PPCNT = struct {
	LocalPort                Field
	PNAT                     Field
	Grp                      Field
	Clr                      Field
	PrioTC                   Field
	CounterSet               Field
	AFramesTransmittedOKHigh Field
	AFramesReceivedOKHigh    Field
	AOctetsTransmittedOKHigh Field
	AOctetsReceivedOKHigh    Field
	// IfInDiscardsHigh is the RFC 2863 group's if_in_discards: frames the port dropped
	// before any steering, its receive buffer full (ethtool rx_discards_phy, en_stats.c).
	IfInDiscardsHigh Field
}{
	LocalPort:                ifcField("ppcnt_reg", "local_port", 0x8, 8),
	PNAT:                     ifcField("ppcnt_reg", "pnat", 0x10, 2),
	Grp:                      ifcField("ppcnt_reg", "grp", 0x1a, 6),
	Clr:                      ifcField("ppcnt_reg", "clr", 0x20, 1),
	PrioTC:                   ifcField("ppcnt_reg", "prio_tc", 0x3d, 3),
	CounterSet:               ifcField("ppcnt_reg", "counter_set", 0x40, 1984),
	AFramesTransmittedOKHigh: ifcField("ppcnt_reg", "counter_set.eth_802_3_cntrs_grp_data_layout.a_frames_transmitted_ok_high", 0x40, 32),
	AFramesReceivedOKHigh:    ifcField("ppcnt_reg", "counter_set.eth_802_3_cntrs_grp_data_layout.a_frames_received_ok_high", 0x80, 32),
	AOctetsTransmittedOKHigh: ifcField("ppcnt_reg", "counter_set.eth_802_3_cntrs_grp_data_layout.a_octets_transmitted_ok_high", 0x140, 32),
	AOctetsReceivedOKHigh:    ifcField("ppcnt_reg", "counter_set.eth_802_3_cntrs_grp_data_layout.a_octets_received_ok_high", 0x180, 32),
	IfInDiscardsHigh:         ifcField("ppcnt_reg", "counter_set.eth_2863_cntrs_grp_data_layout.if_in_discards_high", 0xc0, 32),
}

// MCAM is the management capabilities register (mlx5_ifc.h mcam_reg): which management
// registers and features the device has, by group. The fields below are group 0's.
var MCAM = struct {
	FeatureGroup          Field
	AccessRegGroup        Field
	MTUTC                 Field // the MTUTC register exists (the driver may set the real-time clock)
	PTPCyc2RealtimeModify Field // the real-time clock may be modified (set, adjusted)
}{
	FeatureGroup:          ifcField("mcam_reg", "feature_group", 0x8, 8),
	AccessRegGroup:        ifcField("mcam_reg", "access_reg_group", 0x18, 8),
	MTUTC:                 ifcField("mcam_reg", "mng_access_reg_cap_mask.access_regs.mtutc", 0x6a, 1),
	PTPCyc2RealtimeModify: ifcField("mcam_reg", "mng_feature_cap_mask.enhanced_features.ptpcyc2realtime_modify", 0x1ab, 1),
}

// MTUTC is the management UTC register (mlx5_ifc.h mtutc_reg): the driver sets, steps or
// slews the device's real-time clock with it (lib/clock.c: at init from CLOCK_REALTIME, then
// as PTP adjusts the PHC).
var MTUTC = struct {
	Operation      Field
	FreqAdjustment Field
	UTCSec         Field
	UTCNsec        Field
	TimeAdjustment Field
}{
	Operation:      ifcField("mtutc_reg", "operation", 0x1c, 4),
	FreqAdjustment: ifcField("mtutc_reg", "freq_adjustment", 0x20, 32),
	UTCSec:         ifcField("mtutc_reg", "utc_sec", 0x80, 32),
	UTCNsec:        ifcField("mtutc_reg", "utc_nsec", 0xa2, 30),
	TimeAdjustment: ifcField("mtutc_reg", "time_adjustment", 0xc0, 32),
}

// MTUTC operations (mlx5_ifc.h enum).
const (
	MTUTCSetTimeImmediate = 0x1 // C: MLX5_MTUTC_OPERATION_SET_TIME_IMMEDIATE
	MTUTCAdjustTime       = 0x2 // C: MLX5_MTUTC_OPERATION_ADJUST_TIME
	MTUTCAdjustFreqUTC    = 0x3 // C: MLX5_MTUTC_OPERATION_ADJUST_FREQ_UTC
)

// NodeDescBytes is the size of the node description register: mlx5_ib's struct
// mlx5_reg_node_desc, IB_DEVICE_NODE_DESC_MAX (64) bytes of text (drivers/infiniband/hw/mlx5
// main.c; no mlx5_ifc.h layout, so not probed).
const NodeDescBytes = 64

// NIC vport context address list types (device.h enum mlx5_list_type), the allowed_list_type
// of MODIFY/QUERY_NIC_VPORT_CONTEXT; each entry is 64 bits (mac_address_layout: the MAC in
// its last 6 bytes; vlan_layout: the VLAN id in bits 0x14..0x1f).
const (
	NICVportListUC   = 0 // C: MLX5_NVPRT_LIST_TYPE_UC
	NICVportListMC   = 1 // C: MLX5_NVPRT_LIST_TYPE_MC
	NICVportListVLAN = 2 // C: MLX5_NVPRT_LIST_TYPE_VLAN
)
