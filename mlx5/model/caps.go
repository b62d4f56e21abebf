package model

import (
	"github.com/daqiri-go/daqiri/mlx5/model/internal/datapath"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// capPages is one capability type's maximum and current pages (QUERY_HCA_CAP op_mod bit 0:
// 0 max, 1 current; device.h HCA_CAP_OPMOD_GET_MAX/CUR).
type capPages struct{ max, cur []byte }

// capPageBytes is the size of the capability union in query_hca_cap_out / set_hca_cap_in.
func capPageBytes() int { return prm.QueryHCACapOut.Capability.Bytes() }

// maxMSIX is the number of MSI-X vectors the model's function has (EQ intr must be below it).
// Inferred: real functions have tens to hundreds; the model needs only a few.
const maxMSIX = 64

// capVal is one capability value.
type capVal struct {
	f prm.Field
	v uint64
}

// maxFTLevel is the flow-table levels the model reports (flow_table_prop_layout max_ft_level).
// Linux's fs_core.c lays out the NIC RX root namespace with the anchor table's priority at
// level 54 (ANCHOR_MIN_LEVEL: the kernel NIC, ethtool and bypass priorities below it) and
// skips every priority whose min_ft_level is above max_ft_level; without the anchor,
// mlx5_fs_core_init fails and so does mlx5_core's probe. The model reported 16 until the
// kernel's layout showed that too few; 63 is the largest value the kernel's priorities need
// below the LAG priority, which it may skip (inferred: ConnectX-5 reports a value of this order).
const maxFTLevel = 63

// defaultCaps is what the model's firmware reports. Limits are chosen, not copied from a
// device (inferred); the features are those the model implements: Ethernet port, NIC flow
// tables with flow tags, checksum and VLAN offloads, striding RQ, CQE compression in both
// layouts with the stride-index mini-CQE, enhanced multi-packet send WQEs, packet pacing,
// free-running and real-time timestamps, 4 KiB UARs with 512-byte BlueFlame registers.
// Every capability not listed reads 0, which is how the model turns off what it does not
// implement and the kernel's mlx5_core gates on (docs/MLX5-CONFORMANCE.md lists them): RoCE,
// atomics, ODP (pg), IPsec, TLS, MACsec, SF, the eswitch and vport manager roles, LRO,
// DCBX/ETS, PCAM/MCAM/QCAM (so no PTP pins, FW tracer, resource dump, extended PTYS),
// the extended striding-RQ stride range, general objects other than the flex parser and the
// UMR and KLM paths.
func defaultCaps(cfg Config) map[prm.CapType]*capPages {
	// rq_ts_format/sq_ts_format: 2 is free-running and real time, 0 free-running only
	// (mlx5_ifc.h MLX5_TIMESTAMP_FORMAT_CAP_*).
	tsFormat := uint64(2)
	if cfg.TimerOnly {
		tsFormat = 0
	}
	g := prm.CmdHCACap
	gen := []capVal{
		{g.PortType, prm.PortTypeEth}, {g.NumPorts, 1},
		{g.LogMaxCQSz, 22}, {g.LogMaxCQ, 16}, {g.LogMaxEQSz, 22}, {g.LogMaxEQ, 6},
		{g.MaxNumEqs, 64}, {g.LogMaxMKey, 16}, {g.LogMaxPD, 16}, {g.LogMaxTransportDomain, 12},
		{g.LogMaxRQ, 16}, {g.LogMaxSQ, 16}, {g.LogMaxTIR, 12}, {g.LogMaxTIS, 12},
		{g.LogMaxRQT, 12}, {g.LogMaxRQTSize, 12}, {g.LogMaxTISPerSQ, 0}, {g.LogMaxWQSz, 16},
		{g.LogMaxMsg, 30}, {g.LogMaxCurrentUCList, 4}, {g.LogMaxCurrentMCList, 4},
		{g.LogMaxVLANList, 4}, {g.LogMaxUMEM, 12}, {g.LogMaxFlowCounterBulk, 8},
		{g.EthNetOffloads, 1}, {g.NICFlowTable, 1}, {g.QoS, 1}, {g.VportCounters, 1},
		{g.CQECompression, 1}, {g.EnhancedCQECompression, 1}, {g.MiniCQERespStrideIndex, 1},
		{g.CQECompressionMaxNum, 64}, {g.StridingRQ, 1}, {g.CQOi, 1}, {g.CQModeration, 1},
		{g.CQPeriodStartFromCQE, 1}, {g.UAR4k, 1}, {g.LogUARPageSz, 0}, {g.NumOfUarsPerPage, 1},
		{g.Bf, 1}, {g.LogBfRegSize, 9}, {g.LogPgSz, 12}, {g.CmdifChecksum, 0},
		{g.DeviceFrequencyKhz, uint64(cfg.FreqKHz)}, {g.RQTSFormat, tsFormat}, {g.SQTSFormat, tsFormat}, {g.McamReg, 1},
		{g.UMEMUID0, 1}, {g.LogMaxUctx, 8}, {g.ReleaseAllPages, 1}, {g.FastTeardown, 1},
		{g.ForceTeardown, 1}, {g.EndPad, 1}, {g.LogMaxStrideSzRQ, 13}, {g.LogMinStrideSzRQ, 6},
		{g.LogMaxStrideSzSQ, 13}, {g.LogMinStrideSzSQ, 6}, {g.MaxWQESzSQ, 1024},
		{g.MaxWQESzRQ, 1024}, {g.CQEVersion, 1}, {g.NICVportChangeEvent, 1},
		{g.PkeyTableSize, 0},
		// mlx5_ib (ib.go): XRC domains and SRQs at probe, the UMR QP; no UMR with PAS lists.
		{g.XRC, 1}, {g.LogMaxXRCD, 4}, {g.LogMaxSRQ, 8}, {g.LogMaxSRQSz, 10}, {g.LogMaxQP, 8},
		{g.LogMaxQPSz, 10}, {g.UmrModifyEntitySizeDisabled, 1},
		// The flex parser (flex.go): the one general object type the model has, as a
		// ConnectX-7 reports it in general_obj_types (DPDK mlx5_prm.h
		// MLX5_GENERAL_OBJ_TYPES_CAP_PARSE_GRAPH_FLEX_NODE), with its PARSE_GRAPH_NODE page.
		{g.GeneralObjTypes, 1 << prm.GeneralObjTypeFlexParseGraph},
	}
	e := prm.EthernetOffloadCaps
	eth := []capVal{
		{e.CsumCap, 1}, {e.VLANCap, 1}, {e.WQEVLANInsert, 1}, {e.MultiPktSendWQE, 1},
		{e.EnhancedMultiPktSendWQE, 1}, {e.WQEInlineMode, 2}, {e.RSSIndTblCap, 1},
		{e.ScatterFcs, 0}, {e.MaxLSOCap, datapath.MaxLSOLog}, {e.TunnelStatelessVXLAN, 1}, {e.SelfLBEnModifiable, 1},
	}
	f := prm.FlowTableNICCap
	rx, tx := f.FlowTablePropertiesNICReceive.Off, f.FlowTablePropertiesNICTransmit.Off
	p := prm.FlowTablePropLayout
	flow := []capVal{{f.LogMaxPacketReformatContext, 10}, {f.MaxEncapHeaderSize, 128}}
	for _, base := range []uint32{rx, tx} {
		flow = append(flow,
			capVal{p.FTSupport.At(base), 1}, capVal{p.FlowCounter.At(base), 1},
			capVal{p.FlowModifyEn.At(base), 1}, capVal{p.ModifyRoot.At(base), 1},
			capVal{p.IdentifiedMissTableMode.At(base), 1}, capVal{p.Reformat.At(base), 1},
			// MODIFY_FLOW_TABLE is implemented; with flow_modify_en, modify_root and
			// identified_miss_table_mode it is what mlx5_core's fs_core asks of a priority
			// that chains tables (fs_core.c FS_CHAINING_CAPS): without it the kernel leaves
			// out the bypass namespace, and mlx5_ib's raw flow rules (DevX CREATE_FLOW)
			// fail with EOPNOTSUPP.
			capVal{p.FlowTableModify.At(base), 1},
			capVal{p.PopVLAN.At(base), 1}, capVal{p.PushVLAN.At(base), 1},
			capVal{p.LogMaxFTSize.At(base), 16}, capVal{p.MaxFTLevel.At(base), maxFTLevel},
			capVal{p.LogMaxFTNum.At(base), 10}, capVal{p.LogMaxFlowCounter.At(base), 16},
			capVal{p.LogMaxDestination.At(base), 6}, capVal{p.LogMaxFlow.At(base), 16})
	}
	q := prm.QoSCap
	qos := []capVal{
		{q.PacketPacing, 1}, {q.PacketPacingBurstBound, 1}, {q.PacketPacingTypicalSize, 1},
		{q.PacketPacingMaxRate, 100_000_000}, {q.PacketPacingMinRate, 1_000},
		{q.PacketPacingRateTableSize, 128},
	}
	out := map[prm.CapType]*capPages{}
	// The atomic and device-memory pages are all zeros: no atomic operation, size or mode
	// (mlx5_ifc.h atomic_caps), no device memory (device_mem_cap), as the general page's
	// atomic and device_memory bits 0 say. They are answered rather than refused because a
	// device has the pages whatever it supports, and user space asks for them without
	// looking at those bits: the conformance guest saw both asked at every verbs context
	// DPDK's mlx5 driver opened, answered BAD_PARAM (issue 26).
	for t, vals := range map[prm.CapType][]capVal{
		prm.CapTypeGeneral: gen, prm.CapTypeEthernetOffloads: eth,
		prm.CapTypeFlowTable: flow, prm.CapTypeQoS: qos, prm.CapTypeGeneral2: nil,
		prm.CapTypeAtomic: nil, prm.CapTypeDevMem: nil, prm.CapTypeParseGraphNode: flexCaps(),
	} {
		cp := &capPages{max: make([]byte, capPageBytes()), cur: make([]byte, capPageBytes())}
		for _, v := range vals {
			v.f.Set(cp.max, v.v)
			v.f.Set(cp.cur, v.v)
		}
		out[t] = cp
	}
	return out
}

// capGet reads a current capability.
func (d *Device) capGet(t prm.CapType, f prm.Field) uint64 { return f.Get(d.caps[t].cur) }

// capLimit is 1 << a general log_max_* capability: how many objects of a kind may exist.
func (d *Device) capLimit(f prm.Field) int { return 1 << d.capGet(prm.CapTypeGeneral, f) }

// capsSettable are the general capabilities SET_HCA_CAP may change, each at most its max:
// what mlx5_core's handle_hca_cap and mlx5_vfio.c's set_hca_cap write (pkey table, QP
// limits, checksum, UAR page size, 128-byte cache lines, release_all_pages, ...). Other bits
// keep their current value (inferred: real firmware's rules are not public).
func capsSettable() []prm.Field {
	g := prm.CmdHCACap
	return []prm.Field{g.PkeyTableSize, g.LogMaxQP, g.CmdifChecksum, g.UAR4k, g.LogUARPageSz,
		g.CacheLine128byte, g.ReleaseAllPages, g.MKeyByName, g.NumVHCAPorts, g.DCT,
		g.RoCE, g.Atomic}
}
