package model_test

import (
	"encoding/binary"
	"math/bits"
	"net"
	"testing"

	"github.com/daqiri-go/daqiri/mlx5/model"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// kdrv is the driver side of TestKernelProbeSequence: what Linux 6.1.192's mlx5_core and
// mlx5e (Debian 6.1.0-56) send to the device, in their order and with their values, read
// from drivers/net/ethernet/mellanox/mlx5/core (each step names its function). Commands go
// through the command queue; once the command EQ exists each one must be reported by exactly
// one command-completion EQE, which the driver consumes and re-arms as eq.c does.
type kdrv struct {
	*host
	cmdEQ *eqRing
	uar   uint32
	n     int // commands sent
}

// exec sends one command that must succeed.
func (k *kdrv) exec(what string, b []byte, outLen int) []byte {
	k.t.Helper()
	out, err := k.cmd(b, outLen)
	if err != nil {
		k.t.Fatalf("%s: %v", what, err)
	}
	k.n++
	if k.cmdEQ != nil {
		// cmd.c cmd_comp_notifier: the EQE's command_completion_vector names the entries
		// done; the test host uses entry 0.
		e := k.cmdEQ.next()
		if e == nil {
			k.t.Fatalf("%s: no command-completion EQE", what)
		}
		if typ := prm.EQE.EventType.Get(e); typ != uint64(prm.EventTypeCmd) {
			k.t.Fatalf("%s: EQE type %#x on the command EQ", what, typ)
		}
		if v := prm.CmdInterCompEvent.CommandCompletionVector.Get(prm.EQE.EventData.Slice(e)); v != 1 {
			k.t.Fatalf("%s: completion vector %#x, want entry 0", what, v)
		}
		if k.cmdEQ.next() != nil {
			k.t.Fatalf("%s: more than one EQE for one command", what)
		}
		k.cmdEQ.arm() // mlx5_eq_async_int → eq_update_ci(eq, 1)
	}
	return out
}

// capPage reads one capability page (mlx5_core_get_caps_mode: op_mod type<<1 | mode).
func (k *kdrv) capPage(t prm.CapType, mode uint16) []byte {
	k.t.Helper()
	out := k.exec("QUERY_HCA_CAP "+t.String(), in(prm.CmdOpQueryHCACap, uint16(t)<<1|mode, 16), 4112)
	return prm.QueryHCACapOut.Capability.Slice(out)
}

// createEQ is eq.c create_map_eq: nent + MLX5_NUM_SPARE_EQE (0x80) rounded up to a power of
// two, the ring in 4 KiB fragments with every owner bit 1 (init_eq_buf), log_page_size 0,
// the event bitmask's first word, then armed (eq_update_ci(eq, 1)).
func (k *kdrv) createEQ(what string, nent, vec int, mask uint64, uid uint16) *eqRing {
	k.t.Helper()
	logSize := bits.Len(uint(nent + 0x80 - 1))
	size := 64 << logSize
	npages := max(size/4096, 1)
	ring := k.alloc(npages*4096, 4096)
	for i := 0; i < 1<<logSize; i++ {
		prm.EQE.Owner.Set(k.at(ring+uint64(i)*64, 64), 1)
	}
	base := prm.CreateEQIn.EQContextEntry.Off
	b := in(prm.CmdOpCreateEQ, 0, prm.CreateEQIn.PAS.ByteOff()+8*npages, prm.CreateEQIn.UID, int(uid),
		prm.EQC.LogEQSize.At(base), logSize, prm.EQC.UARPage.At(base), k.uar, prm.EQC.Intr.At(base), vec,
		prm.EQC.LogPageSize.At(base), 0, prm.CreateEQIn.EventBitmask, mask)
	for i := range npages {
		prm.CreateEQIn.PAS.At(uint32(i)*64).Set(b, ring+uint64(i)*4096)
	}
	out := k.exec(what, b, 16)
	r := &eqRing{h: k.host, n: uint32(get(out, prm.CreateEQOut.EQNumber)), uar: k.uar, ring: ring, logSize: uint(logSize)}
	r.arm()
	return r
}

// reg is one ACCESS_REG (port.c mlx5_core_access_reg: register_data right after the 16-byte
// header, in and out the register's size).
func (k *kdrv) reg(what string, id int, write bool, size int, kv ...any) []byte {
	k.t.Helper()
	opMod := uint16(prm.AccessRegRead)
	if write {
		opMod = prm.AccessRegWrite
	}
	base := prm.AccessRegisterIn.RegisterData.Off
	fields := kv[:0:0]
	for i := 0; i+1 < len(kv); i += 2 {
		fields = append(fields, kv[i].(prm.Field).At(base), kv[i+1])
	}
	b := in(prm.CmdOpAccessReg, opMod, 16+size, append([]any{prm.AccessRegisterIn.RegisterID, id}, fields...)...)
	out := k.exec(what, b, 16+size)
	return out[16:]
}

// TestKernelProbeSequence replays mlx5_core's probe (main.c mlx5_init_one: function setup,
// init_once, load), mlx5e's probe up to register_netdev (en_main.c mlx5e_probe: nic init,
// mdev resources, init_tx, init_rx, enable) and the opening of one channel, and checks that
// every command succeeds, that the fields the kernel reads are there, and that nothing it
// sent is on the model's list of unimplemented commands. The values are the kernel's for a
// 2-CPU guest with a 1500-byte MTU.
func TestKernelProbeSequence(t *testing.T) {
	var records []model.CommandRecord
	mac := net.HardwareAddr{0x02, 0xda, 0x51, 0x00, 0x00, 0x07}
	d := model.New(model.Config{MAC: mac, CommandLog: func(r model.CommandRecord) { records = append(records, r) }})
	d.Cable(d) // a wire, so that the port is operationally up
	k := &kdrv{host: newHost(t, d, 64<<20)}

	// --- mlx5_function_enable (main.c) ---
	// cmd.c mlx5_cmd_enable: cmdif revision 5, queue geometry within 32 entries and one page.
	if rev := k.r32(4) >> 16; rev != prm.CmdIfRev {
		t.Fatalf("cmdif_rev %d", rev)
	}
	l := k.r32(0x14) & 0xff
	if logSz, logStride := l>>4&0xf, l&0xf; 1<<logSz > 32 || logSz+logStride > 12 {
		t.Fatalf("cmdq geometry log_sz %d log_stride %d", logSz, logStride)
	}
	k.setupCmdq() // cmdq_addr_h/l, wait_fw_init (initializing bit)
	// lib/tout.c: cmd_q_init_to 0 says the firmware has no DTOR register (not modelled), so
	// the kernel keeps its default timeouts and never reads it.
	if v := k.r32(int64(prm.InitSeg.CmdQInitTo.ByteOff())); v != 0 {
		t.Fatalf("cmd_q_init_to %#x: the kernel would read the DTOR register", v)
	}
	k.exec("ENABLE_HCA", in(prm.CmdOpEnableHCA, 0, 16), 12) // enable_hca_out is 12 bytes
	issi := k.exec("QUERY_ISSI", in(prm.CmdOpQueryISSI, 0, 16), 112)
	if get(issi, prm.QueryISSIOut.SupportedISSIDw0)&2 == 0 {
		t.Fatal("QUERY_ISSI: ISSI 1 not supported")
	}
	k.exec("SET_ISSI", in(prm.CmdOpSetISSI, 0, 16, prm.SetISSIIn.CurrentISSI, 1), 16)
	// pagealloc.c mlx5_satisfy_startup_pages(boot) → give_pages.
	give := func(opMod uint16) int {
		q := k.exec("QUERY_PAGES", in(prm.CmdOpQueryPages, opMod, 16), 16)
		n := int(int32(get(q, prm.QueryPagesOut.NumPages)))
		if n <= 0 {
			return n
		}
		pas := prm.ManagePagesIn.PAS
		b := in(prm.CmdOpManagePages, prm.ManagePagesGive, pas.ByteOff()+8*n, prm.ManagePagesIn.InputNumEntries, n)
		for i := range n {
			pas.At(uint32(i)*64).Set(b, k.alloc(4096, 4096))
		}
		k.exec("MANAGE_PAGES give", b, 16)
		return n
	}
	if give(prm.QueryPagesBoot) <= 0 {
		t.Fatal("no boot pages asked for")
	}

	// --- mlx5_function_open ---
	k.reg("ACCESS_REG HOST_ENDIANNESS", prm.RegHostEndianness, true, 16) // set_hca_ctrl
	// handle_hca_cap: current then max, then SET_HCA_CAP with the current page changed.
	cur := k.capPage(prm.CapTypeGeneral, prm.CapOpModCur)
	maxCaps := k.capPage(prm.CapTypeGeneral, prm.CapOpModMax)
	g := prm.CmdHCACap
	set := in(prm.CmdOpSetHCACap, uint16(prm.CapTypeGeneral)<<1, 4112)
	sc := prm.SetHCACapIn.Capability.Slice(set)
	copy(sc, cur)
	g.PkeyTableSize.Set(sc, 0) // to_fw_pkey_sz(128)
	g.LogMaxQP.Set(sc, min(18, get(maxCaps, g.LogMaxQP)))
	g.CmdifChecksum.Set(sc, 0)
	g.LogUARPageSz.Set(sc, 0) // PAGE_SHIFT - 12
	if get(maxCaps, g.ReleaseAllPages) != 0 {
		g.ReleaseAllPages.Set(sc, 1)
	}
	k.exec("SET_HCA_CAP general", set, 16)
	// handle_hca_cap_atomic/odp/roce/2/port_selection are gated on caps the model reports
	// off; is_roce_fw_disabled holds with roce and roce_rw_supported both 0.
	for _, f := range []prm.Field{g.Atomic, g.Pg, g.RoCE, g.HCACap2, g.PortSelectionCap} {
		if get(cur, f) != 0 || get(maxCaps, f) != 0 {
			t.Fatalf("%s is on: the kernel would query or set capabilities the model does not have", f.Name)
		}
	}
	if give(prm.QueryPagesInit) < 0 {
		t.Fatal("QUERY_PAGES init negative")
	}
	k.exec("INIT_HCA", in(prm.CmdOpInitHCA, 0, 32), 16) // sw_owner_id only with the cap
	// mlx5_set_driver_version only with the driver_version cap.
	// fw.c mlx5_query_hca_caps: general, then each page its cap bit enables.
	gen := k.capPage(prm.CapTypeGeneral, prm.CapOpModCur)
	k.capPage(prm.CapTypeGeneral, prm.CapOpModMax)
	if get(gen, g.PortType) != prm.PortTypeEth || get(gen, g.EthNetOffloads) == 0 || get(gen, g.NICFlowTable) == 0 {
		t.Fatal("not an Ethernet function with offloads and NIC flow tables")
	}
	for _, f := range []prm.Field{g.IpoibEnhancedOffloads, g.Pg, g.Atomic, g.RoCE, g.VportGroupManager, g.EswitchManager,
		g.VectorCalc, g.Debug, g.PcamReg, g.QcamReg, g.DeviceMemory, g.EventCap, g.IPsecOffload, g.Shampo,
		g.AdvVirtualization, g.DriverVersion, g.SWOwnerID, g.Dcbx, g.Fpga, g.Pps,
		g.PortModuleEvent, g.GeneralNotificationEvent, g.TempWarnEvent, g.MaxNumOfMonitorCounters,
		g.VnicEnvQueueCounters, g.NICReceiveSteeringDiscard, g.UmrPtrRlky, g.DCT} {
		if get(gen, f) != 0 {
			t.Errorf("%s is on: a feature the model does not implement", f.Name)
		}
	}
	// general_obj_types: only the flex parser (bit 0x22, which mlx5_core does not look at;
	// it gates on the VIRTIO, MACSEC, IPsec, sampler and ASO bits).
	if v := get(gen, g.GeneralObjTypes); v != 1<<prm.GeneralObjTypeFlexParseGraph {
		t.Errorf("general_obj_types %#x: want only FLEX_PARSE_GRAPH (1<<%#x)", v, prm.GeneralObjTypeFlexParseGraph)
	}
	// fw.c mlx5_query_hca_caps: with mcam_reg, MCAM for the access-register groups 0, 1
	// and 2 (feature group 0); the model has MTUTC, so that lib/clock.c sets its real-time
	// clock.
	if get(gen, g.McamReg) == 0 {
		t.Fatal("mcam_reg is off: mlx5_core would not set the real-time clock")
	}
	rd := prm.AccessRegisterIn.RegisterData.Off
	for grp := 0; grp < 3; grp++ {
		out := k.exec("ACCESS_REG MCAM", in(prm.CmdOpAccessReg, prm.AccessRegRead, 16+72, prm.AccessRegisterIn.RegisterID, prm.RegMCAM, prm.MCAM.AccessRegGroup.At(rd), grp), 16+72)
		if grp == 0 && get(out, prm.MCAM.MTUTC.At(prm.AccessRegisterOut.RegisterData.Off)) != 1 {
			t.Fatal("MCAM group 0 has no MTUTC")
		}
	}
	eth := k.capPage(prm.CapTypeEthernetOffloads, prm.CapOpModCur)
	k.capPage(prm.CapTypeEthernetOffloads, prm.CapOpModMax)
	// dev.c mlx5_eth_supported: no netdev without csum_cap, max_lso_cap, vlan_cap,
	// rss_ind_tbl_cap and max_ft_level >= 3 (the first conformance run stopped there for
	// max_lso_cap 0).
	e := prm.EthernetOffloadCaps
	for _, f := range []prm.Field{e.CsumCap, e.MaxLSOCap, e.VLANCap, e.RSSIndTblCap, e.SelfLBEnModifiable} {
		if get(eth, f) == 0 {
			t.Fatalf("%s is 0: mlx5_eth_supported refuses the netdev", f.Name)
		}
	}
	if get(eth, e.LROCap) != 0 || get(eth, e.WQEInlineMode) != 2 {
		t.Fatal("Ethernet caps: LRO on or inline mode not NOT_REQUIRED")
	}
	flow := k.capPage(prm.CapTypeFlowTable, prm.CapOpModCur)
	k.capPage(prm.CapTypeFlowTable, prm.CapOpModMax)
	rxProps := prm.FlowTableNICCap.FlowTablePropertiesNICReceive.Off
	p := prm.FlowTablePropLayout
	if get(flow, p.FTSupport.At(rxProps)) == 0 || get(flow, p.MaxFTLevel.At(rxProps)) < 54 {
		t.Fatalf("NIC RX flow tables: ft_support %d max_ft_level %d; fs_core needs level 54 for its anchor",
			get(flow, p.FTSupport.At(rxProps)), get(flow, p.MaxFTLevel.At(rxProps)))
	}
	if get(gen, g.QoS) != 0 {
		k.capPage(prm.CapTypeQoS, prm.CapOpModCur)
		k.capPage(prm.CapTypeQoS, prm.CapOpModMax)
	}

	// --- mlx5_init_once ---
	board := k.exec("QUERY_ADAPTER", in(prm.CmdOpQueryAdapter, 0, 16), 272) // mlx5_query_board_id
	if psid := prm.QueryAdapterOut.VSDContdPSID.Slice(board); psid[0] == 0 {
		t.Fatal("QUERY_ADAPTER: empty PSID")
	}
	// lib/vxlan.c mlx5_vxlan_create: the IANA port, with tunnel_stateless_vxlan.
	if get(eth, prm.EthernetOffloadCaps.TunnelStatelessVXLAN) != 0 {
		k.exec("ADD_VXLAN_UDP_DPORT", in(prm.CmdOpAddVXLANUDPDport, 0, 16, prm.AddVXLANUDPDportIn.VXLANUDPPort, 4789), 16)
	}

	// --- mlx5_load ---
	k.uar = uint32(get(k.exec("ALLOC_UAR", in(prm.CmdOpAllocUAR, 0, 16), 16), prm.AllocUAROut.UAR)) // mlx5_get_uars_page
	// eq.c create_async_eqs: the command EQ, events mode, the async EQ, the page EQ.
	k.cmdEQ = k.createEQ("CREATE_EQ cmd", 32, 0, 1<<prm.EventTypeCmd, 0)
	async := uint64(0)
	for _, e := range []prm.EventType{prm.EventTypePathMig, prm.EventTypeCommEst, prm.EventTypeSQDrained,
		prm.EventTypeCQError, prm.EventTypeWQCatasError, prm.EventTypePathMigFailed, prm.EventTypeWQInvalReqError,
		prm.EventTypeWQAccessError, prm.EventTypePortChange, prm.EventTypeSRQCatasError, prm.EventTypeSRQLastWQE,
		prm.EventTypeSRQRQLimit} { // MLX5_ASYNC_EVENT_MASK
		async |= 1 << e
	}
	asyncEQ := k.createEQ("CREATE_EQ async", 0x1000, 0, async, 0)
	pagesEQ := k.createEQ("CREATE_EQ pages", 1, 0, 1<<prm.EventTypePageRequest, 0)
	// create_comp_eqs: one per CPU, mask 0, created with the shared uid (log_max_uctx set).
	var comp []*eqRing
	for i := range 2 {
		comp = append(comp, k.createEQ("CREATE_EQ comp", 1024, 1+i, 0, prm.SharedResourceUID))
	}
	// fs_core.c mlx5_fs_core_init → init_root_ns → create_anchor_flow_table: with
	// flow_table_modify off the chaining priorities are skipped, so the kernel namespace's
	// TC (3 levels) and NIC (7 levels) priorities come first and the anchor is at level 10;
	// the first table of NIC RX becomes the root.
	ftb := prm.CreateFlowTableIn.FlowTableContext.Off
	ft := prm.FlowTableContext
	createFT := func(what string, level, logSize int, miss uint32) uint32 {
		kv := []any{prm.CreateFlowTableIn.TableType, prm.FlowTableNICRX, ft.Level.At(ftb), level, ft.LogSize.At(ftb), logSize}
		if miss != 0 {
			kv = append(kv, ft.TableMissAction.At(ftb), prm.FlowTableMissFwd, ft.TableMissID.At(ftb), miss)
		}
		return uint32(get(k.exec(what, in(prm.CmdOpCreateFlowTable, 0, 64, kv...), 16), prm.CreateFlowTableOut.TableID))
	}
	setRoot := func(id uint32) {
		k.exec("SET_FLOW_TABLE_ROOT", in(prm.CmdOpSetFlowTableRoot, 0, 64, prm.SetFlowTableRootIn.TableType, prm.FlowTableNICRX,
			prm.SetFlowTableRootIn.TableID, id), 16)
	}
	anchor := createFT("CREATE_FLOW_TABLE anchor", 10, 0, 0)
	setRoot(anchor)
	// mlx5_core_set_hca_defaults: no command without disable_local_lb_uc/mc.

	// --- mlx5e_probe: mlx5e_build_nic_netdev → mlx5_query_nic_vport_mac_address ---
	vctx := prm.QueryNICVportContextOut.NICVportContext.Off
	vq := k.exec("QUERY_NIC_VPORT_CONTEXT", in(prm.CmdOpQueryNICVportContext, 0, 16), 272)
	pa := prm.NICVportContext.PermanentAddress.Off + vctx
	if hi, lo := get(vq, prm.MACAddressLayout.MACAddrHi.At(pa)), get(vq, prm.MACAddressLayout.MACAddrLo.At(pa)); hi != 0x02da || lo != 0x51000007 {
		t.Fatalf("permanent address %04x%08x", hi, lo)
	}
	// mlx5e_nic_init → mlx5e_build_nic_params → slow_pci_heuristic → mlx5_port_max_linkspeed.
	ptys := k.reg("ACCESS_REG PTYS", prm.RegPTYS, false, 64, prm.PTYS.LocalPort, 1, prm.PTYS.ProtoMask, prm.PTYSProtoEth)
	if get(ptys, prm.PTYS.EthProtoCapability) == 0 {
		t.Fatal("PTYS: no Ethernet speed in eth_proto_capability")
	}
	// mlx5e_resume → en_common.c mlx5e_create_mdev_resources.
	pd := uint32(get(k.exec("ALLOC_PD", in(prm.CmdOpAllocPD, 0, 16), 16), prm.AllocPDOut.PD))
	td := uint32(get(k.exec("ALLOC_TRANSPORT_DOMAIN", in(prm.CmdOpAllocTransportDomain, 0, 16), 16), prm.AllocTransportDomainOut.TransportDomain))
	mk := prm.CreateMKeyIn.MemoryKeyMKeyEntry.Off
	k.exec("CREATE_MKEY", in(prm.CmdOpCreateMKey, 0, 272, prm.MKC.AccessMode10.At(mk), prm.MKeyAccessPA, prm.MKC.Lw.At(mk), 1,
		prm.MKC.Lr.At(mk), 1, prm.MKC.Length64.At(mk), 1, prm.MKC.PD.At(mk), pd, prm.MKC.QPN.At(mk), 0xffffff), 16)
	bfreg := uint32(get(k.exec("ALLOC_UAR bfreg", in(prm.CmdOpAllocUAR, 0, 16), 16), prm.AllocUAROut.UAR))
	// mlx5e_attach_netdev → init_tx: mlx5e_create_tises, one per TC (8) on the one LAG port.
	var tis []uint32
	tb := prm.CreateTISIn.Ctx.Off
	for tc := range 8 {
		tis = append(tis, uint32(get(k.exec("CREATE_TIS", in(prm.CmdOpCreateTIS, 0, 192, prm.TISC.Prio.At(tb), tc<<1,
			prm.TISC.TransportDomain.At(tb), td), 16), prm.CreateTISOut.TISN)))
	}
	// init_rx: mlx5e_create_q_counters (two), mlx5e_open_drop_rq.
	qc := uint32(get(k.exec("ALLOC_Q_COUNTER", in(prm.CmdOpAllocQCounter, 0, 16), 16), prm.AllocQCounterOut.CounterSetID))
	dropQC := uint32(get(k.exec("ALLOC_Q_COUNTER drop", in(prm.CmdOpAllocQCounter, 0, 16), 16), prm.AllocQCounterOut.CounterSetID))
	// mlx5e_create_cq: cq_period_mode, c_eqn of vector 0, the core's UAR, log_page_size 0.
	createCQ := func(what string, logSize int, eqn uint32, extra ...any) uint32 {
		base := prm.CreateCQIn.CQContext.Off
		npages := max((64<<logSize)/4096, 1)
		buf := k.alloc(npages*4096, 4096)
		for i := range 1 << logSize {
			k.at(buf+uint64(i)*64, 64)[63] = 0xf1 // mlx5e_init_cqe: op_own invalid, owner 1
		}
		q := prm.CQC
		kv := append(withCtx(base, kv{q.LogCQSize, logSize, q.CEQNOrApuElement, eqn, q.UARPage, k.uar,
			q.DbrAddr, k.alloc(64, 64), q.CQPeriodMode, 1}), extra...)
		b := in(prm.CmdOpCreateCQ, 0, prm.CreateCQIn.PAS.ByteOff()+8*npages, kv...)
		for i := range npages {
			prm.CreateCQIn.PAS.At(uint32(i)*64).Set(b, buf+uint64(i)*4096)
		}
		return uint32(get(k.exec(what, b, 16), prm.CreateCQOut.CQN))
	}
	// mlx5e_create_rq: cyclic WQ of 16-byte WQEs (one data segment), RST, the Q counter,
	// real-time timestamps (the model reports both formats), end padding aligned.
	createRQ := func(what string, cqn uint32, logSize int, counter, pd uint32) uint32 {
		base := prm.CreateRQIn.Ctx.Off
		wqb := base + prm.RQC.WQ.Off
		npages := max((16<<logSize)/4096, 1)
		buf := k.alloc(npages*4096, 4096)
		w := prm.WQ
		kv := append(withCtx(base, kv{prm.RQC.CQN, cqn, prm.RQC.CounterSetID, counter, prm.RQC.TSFormat, 2}),
			withCtx(wqb, kv{w.WQType, prm.WQTypeCyclic, w.EndPaddingMode, 1, w.LogWQStride, 4, w.LogWQSz, logSize,
				w.PD, pd, w.DbrAddr, k.alloc(64, 64)})...)
		b := in(prm.CmdOpCreateRQ, 0, w.PAS.At(wqb).ByteOff()+8*npages, kv...)
		for i := range npages {
			w.PAS.At(wqb+uint32(i)*64).Set(b, buf+uint64(i)*4096)
		}
		return uint32(get(k.exec(what, b, 16), prm.CreateRQOut.RQN))
	}
	modifyRQ := func(rqn uint32) {
		k.exec("MODIFY_RQ RST→RDY", in(prm.CmdOpModifyRQ, 0, 272, prm.ModifyRQIn.RQN, rqn, prm.ModifyRQIn.RQState, 0,
			prm.RQC.State.At(prm.ModifyRQIn.Ctx.Off), 1), 16)
	}
	dropCQ := createCQ("CREATE_CQ drop", 0, comp[0].n)
	dropRQ := createRQ("CREATE_RQ drop", dropCQ, 0, dropQC, 0) // en/params.c mlx5e_build_drop_rq_param: no pd
	modifyRQ(dropRQ)
	// mlx5e_rx_res_init: the RSS RQT (max 256 entries, the drop RQ), one indirect TIR per
	// traffic type with Toeplitz and its hash fields; per channel a direct RQT and TIR and an
	// XSK RQT and TIR (indirect dispatch, one entry, inverted XOR8: en/tir.c
	// mlx5e_tir_builder_build_direct); the PTP RQT and TIR.
	createRQT := func(what string, maxSize int, rqn uint32) uint32 {
		base := prm.CreateRQTIn.RQTContext.Off
		b := in(prm.CmdOpCreateRQT, 0, 272+4, prm.RQTC.RQTMaxSize.At(base), maxSize, prm.RQTC.RQTActualSize.At(base), 1,
			prm.RQNum.RQNum.At(base+prm.RQTC.RQNum.Off), rqn)
		return uint32(get(k.exec(what, b, 16), prm.CreateRQTOut.RQTN))
	}
	tirb := prm.CreateTIRIn.Ctx.Off
	tc := prm.TIRC
	createTIR := func(what string, rqt uint32, hashFn int, l3, l4, fields int) uint32 {
		kv := withCtx(tirb, kv{tc.TransportDomain, td, tc.DispType, prm.TIRDispIndirect, tc.IndirectTable, rqt, tc.RXHashFn, hashFn})
		if hashFn == prm.RXHashFnToeplitz {
			s := prm.RXHashFieldSelect
			o := tirb + tc.RXHashFieldSelectorOuter.Off
			kv = append(kv, s.L3ProtType.At(o), l3, s.L4ProtType.At(o), l4, s.SelectedFields.At(o), fields)
		}
		b := in(prm.CmdOpCreateTIR, 0, 272, kv...)
		if hashFn == prm.RXHashFnToeplitz {
			for i := range 40 {
				b[(tirb+tc.RXHashToeplitzKey.Off)/8+uint32(i)] = byte(i*37 + 11) // netdev_rss_key_fill
			}
		}
		return uint32(get(k.exec(what, b, 16), prm.CreateTIROut.TIRN))
	}
	rssRQT := createRQT("CREATE_RQT rss", 256, dropRQ)
	ipPorts := prm.HashFieldSrcIP | prm.HashFieldDstIP | prm.HashFieldL4SPort | prm.HashFieldL4DPort
	ipSPI := prm.HashFieldSrcIP | prm.HashFieldDstIP | prm.HashFieldIPsecSPI
	ipOnly := prm.HashFieldSrcIP | prm.HashFieldDstIP
	var rssTIRs []uint32
	for _, tt := range []struct{ l3, l4, fields int }{ // fs_ttc.c ttc_rss_tt_ctx order
		{prm.L3ProtIPv4, prm.L4ProtTCP, ipPorts}, {prm.L3ProtIPv6, prm.L4ProtTCP, ipPorts},
		{prm.L3ProtIPv4, prm.L4ProtUDP, ipPorts}, {prm.L3ProtIPv6, prm.L4ProtUDP, ipPorts},
		{prm.L3ProtIPv4, 0, ipSPI}, {prm.L3ProtIPv6, 0, ipSPI}, {prm.L3ProtIPv4, 0, ipSPI}, {prm.L3ProtIPv6, 0, ipSPI},
		{prm.L3ProtIPv4, 0, ipOnly}, {prm.L3ProtIPv6, 0, ipOnly},
	} {
		rssTIRs = append(rssTIRs, createTIR("CREATE_TIR rss", rssRQT, prm.RXHashFnToeplitz, tt.l3, tt.l4, tt.fields))
	}
	type chRes struct{ rqt, tir, xskRQT, xskTIR uint32 }
	var chans []chRes
	for range 2 {
		var c chRes
		c.rqt = createRQT("CREATE_RQT direct", 1, dropRQ)
		c.tir = createTIR("CREATE_TIR direct", c.rqt, prm.RXHashFnInvertedXor8, 0, 0, 0)
		c.xskRQT = createRQT("CREATE_RQT xsk", 1, dropRQ)
		c.xskTIR = createTIR("CREATE_TIR xsk", c.xskRQT, prm.RXHashFnInvertedXor8, 0, 0, 0)
		chans = append(chans, c)
	}
	ptpRQT := createRQT("CREATE_RQT ptp", 1, dropRQ)
	createTIR("CREATE_TIR ptp", ptpRQT, prm.RXHashFnInvertedXor8, 0, 0, 0)
	// mlx5e_create_flow_steering: the TTC table (level 6: NIC priority start 3 +
	// MLX5E_TTC_FT_LEVEL), its groups and rules, then the L2 (5) and VLAN (4) tables, each the
	// new root with its miss going to the table after it (fs_core connect_prev_fts).
	fgb := prm.CreateFlowGroupIn.MatchCriteria.Off
	lyr := prm.FTEMatchSetLyr24
	createFG := func(what string, table uint32, start, end int, kv ...any) uint32 {
		b := in(prm.CmdOpCreateFlowGroup, 0, 1024, append(kv0(prm.CreateFlowGroupIn.TableType, prm.FlowTableNICRX,
			prm.CreateFlowGroupIn.TableID, table, prm.CreateFlowGroupIn.StartFlowIndex, start,
			prm.CreateFlowGroupIn.EndFlowIndex, end), kv...)...)
		return uint32(get(k.exec(what, b, 16), prm.CreateFlowGroupOut.GroupID))
	}
	fcb := prm.SetFTEIn.FlowContext.Off
	fc := prm.FlowContext
	setFTE := func(what string, table, group uint32, index int, destType int, dest uint32, match ...any) {
		db := fcb + fc.Destination.Off
		kv := append(kv0(prm.SetFTEIn.TableType, prm.FlowTableNICRX, prm.SetFTEIn.TableID, table, prm.SetFTEIn.FlowIndex, index,
			fc.GroupID.At(fcb), group, fc.Action.At(fcb), prm.FlowActionFwdDest, fc.DestinationListSize.At(fcb), 1,
			prm.DestFormatStruct.DestinationType.At(db), destType, prm.DestFormatStruct.DestinationID.At(db), dest), match...)
		k.exec(what, in(prm.CmdOpSetFlowTableEntry, 0, 832+8, kv...), 16) // fs_cmd.c: set_fte_in + 8 bytes per destination
	}
	ttc := createFT("CREATE_FLOW_TABLE ttc", 6, 5, anchor)
	setRoot(ttc)
	mv := fcb + fc.MatchValue.Off // + outer headers at 0
	g1 := createFG("CREATE_FLOW_GROUP ttc l4", ttc, 0, 11, prm.CreateFlowGroupIn.MatchCriteriaEnable, 1,
		lyr.Ethertype.At(fgb), 0xffff, lyr.IPProtocol.At(fgb), 0xff)
	g2 := createFG("CREATE_FLOW_GROUP ttc l3", ttc, 12, 13, prm.CreateFlowGroupIn.MatchCriteriaEnable, 1, lyr.Ethertype.At(fgb), 0xffff)
	g3 := createFG("CREATE_FLOW_GROUP ttc any", ttc, 14, 14)
	for i, r := range []struct{ etype, proto int }{{0x0800, 6}, {0x86dd, 6}, {0x0800, 17}, {0x86dd, 17}, {0x0800, 51}, {0x86dd, 51},
		{0x0800, 50}, {0x86dd, 50}} {
		setFTE("SET_FLOW_TABLE_ENTRY ttc", ttc, g1, i, prm.FlowDestTIR, rssTIRs[i], lyr.Ethertype.At(mv), r.etype, lyr.IPProtocol.At(mv), r.proto)
	}
	setFTE("SET_FLOW_TABLE_ENTRY ttc ipv4", ttc, g2, 12, prm.FlowDestTIR, rssTIRs[8], lyr.Ethertype.At(mv), 0x0800)
	setFTE("SET_FLOW_TABLE_ENTRY ttc ipv6", ttc, g2, 13, prm.FlowDestTIR, rssTIRs[9], lyr.Ethertype.At(mv), 0x86dd)
	setFTE("SET_FLOW_TABLE_ENTRY ttc any", ttc, g3, 14, prm.FlowDestTIR, chans[0].tir)
	l2 := createFT("CREATE_FLOW_TABLE l2", 5, 14, ttc)
	setRoot(l2)
	l2full := createFG("CREATE_FLOW_GROUP l2 full", l2, 0, 8191, prm.CreateFlowGroupIn.MatchCriteriaEnable, 1,
		lyr.DMAC4716.At(fgb), 0xffffffff, lyr.DMAC150.At(fgb), 0xffff)
	createFG("CREATE_FLOW_GROUP l2 mc", l2, 8192, 8192, prm.CreateFlowGroupIn.MatchCriteriaEnable, 1, lyr.DMAC4716.At(fgb), 0x01000000)
	vlan := createFT("CREATE_FLOW_TABLE vlan", 4, 13, l2)
	setRoot(vlan)
	vuntag := createFG("CREATE_FLOW_GROUP vlan untagged", vlan, 0, 0, prm.CreateFlowGroupIn.MatchCriteriaEnable, 1, lyr.CVLANTag.At(fgb), 1)
	createFG("CREATE_FLOW_GROUP vlan vid", vlan, 1, 4096, prm.CreateFlowGroupIn.MatchCriteriaEnable, 1, lyr.CVLANTag.At(fgb), 1,
		lyr.FirstVid.At(fgb), 0xfff)
	setFTE("SET_FLOW_TABLE_ENTRY vlan untagged", vlan, vuntag, 0, prm.FlowDestFlowTable, l2)

	// --- profile->enable: mlx5e_nic_enable ---
	vctxIn := prm.ModifyNICVportContextIn.NICVportContext.Off
	sel := prm.ModifyNICVportContextIn.FieldSelect.Off
	k.reg("ACCESS_REG PAOS down", prm.RegPAOS, true, 16, prm.PAOS.LocalPort, 1, prm.PAOS.AdminStatus, prm.PortDown, prm.PAOS.ASE, 1)
	// The wired port goes down: a PORT_CHANGE EQE on the async EQ (mlx5e async_event).
	portEvent := func(sub int) {
		t.Helper()
		e := asyncEQ.next()
		if e == nil || prm.EQE.EventType.Get(e) != uint64(prm.EventTypePortChange) || prm.EQE.EventSubType.Get(e) != uint64(sub) ||
			prm.EQEPortState.Port.Get(prm.EQE.EventData.Slice(e))>>4 != 1 {
			t.Fatalf("want a PORT_CHANGE sub-type %d EQE for port 1, got % x", sub, e)
		}
		asyncEQ.arm()
	}
	portEvent(prm.PortChangeDown)
	pmtu := k.reg("ACCESS_REG PMTU", prm.RegPMTU, false, 16, prm.PMTU.LocalPort, 1) // mlx5_query_port_max_mtu
	if get(pmtu, prm.PMTU.MaxMTU) < 1522 {
		t.Fatalf("PMTU max_mtu %d", get(pmtu, prm.PMTU.MaxMTU))
	}
	// mlx5e_set_mtu: hw MTU = 1500 + ETH_HLEN + VLAN_HLEN + ETH_FCS_LEN.
	k.reg("ACCESS_REG PMTU set", prm.RegPMTU, true, 16, prm.PMTU.LocalPort, 1, prm.PMTU.AdminMTU, 1522)
	k.exec("MODIFY_NIC_VPORT_CONTEXT mtu", in(prm.CmdOpModifyNICVportContext, 0, 512,
		prm.ModifyNICVportFieldSelect.MTU.At(sel), 1, prm.NICVportContext.MTU.At(vctxIn), 1522), 16)
	vq = k.exec("QUERY_NIC_VPORT_CONTEXT mtu", in(prm.CmdOpQueryNICVportContext, 0, 16), 272)
	if get(vq, prm.NICVportContext.MTU.At(vctx)) != 1522 {
		t.Fatal("vport MTU not taken")
	}
	pmtu = k.reg("ACCESS_REG PMTU oper", prm.RegPMTU, false, 16, prm.PMTU.LocalPort, 1) // mlx5_query_port_oper_mtu
	if get(pmtu, prm.PMTU.OperMTU) != 1522 {
		t.Fatalf("PMTU oper_mtu %d", get(pmtu, prm.PMTU.OperMTU))
	}
	// register_netdev → set_rx_mode work: the L2 rules for the netdev's and the broadcast
	// address, and the vport's UC list (en_fs.c mlx5e_vport_context_update).
	for i, a := range []net.HardwareAddr{mac, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff}} {
		setFTE("SET_FLOW_TABLE_ENTRY l2", l2, l2full, i, prm.FlowDestFlowTable, ttc,
			lyr.DMAC4716.At(mv), int(a[0])<<24|int(a[1])<<16|int(a[2])<<8|int(a[3]), lyr.DMAC150.At(mv), int(a[4])<<8|int(a[5]))
	}
	uc := in(prm.CmdOpModifyNICVportContext, 0, 512+8, prm.ModifyNICVportFieldSelect.AddressesList.At(sel), 1,
		prm.NICVportContext.AllowedListType.At(vctxIn), 0, prm.NICVportContext.AllowedListSize.At(vctxIn), 1)
	copy(uc[(vctxIn+prm.NICVportContext.CurrentUCMACAddress.Off)/8+2:], mac)
	k.exec("MODIFY_NIC_VPORT_CONTEXT uc list", uc, 16)

	// --- ip link set up: mlx5e_open_locked → mlx5e_open_channels, activate ---
	k.reg("ACCESS_REG PAOS up", prm.RegPAOS, true, 16, prm.PAOS.LocalPort, 1, prm.PAOS.AdminStatus, prm.PortUp, prm.PAOS.ASE, 1)
	portEvent(prm.PortChangeActive)
	// mlx5e_open_queues for channel 0: ICOSQ and async ICOSQ CQs, TX CQ, XDP-redirect CQ,
	// RX CQ (with moderation), the ICOSQ (no TIS), the TX SQ, the XDP SQ, the RQ.
	createSQ := func(what string, cqn uint32, tisLst int, tisn uint32) uint32 {
		base := prm.CreateSQIn.Ctx.Off
		wqb := base + prm.SQC.WQ.Off
		buf := k.alloc(4096*4, 4096)
		w := prm.WQ
		kv := append(withCtx(base, kv{prm.SQC.CQN, cqn, prm.SQC.TISLstSz, tisLst, prm.SQC.TISNum0, tisn, prm.SQC.TSFormat, 2,
			prm.SQC.FlushInErrorEn, 1}),
			withCtx(wqb, kv{w.WQType, prm.WQTypeCyclic, w.LogWQStride, 6, w.LogWQSz, 8, w.PD, pd, w.UARPage, bfreg,
				w.DbrAddr, k.alloc(64, 64)})...)
		b := in(prm.CmdOpCreateSQ, 0, w.PAS.At(wqb).ByteOff()+8*4, kv...)
		for i := range 4 {
			w.PAS.At(wqb+uint32(i)*64).Set(b, buf+uint64(i)*4096)
		}
		sqn := uint32(get(k.exec(what, b, 16), prm.CreateSQOut.SQN))
		k.exec("MODIFY_SQ RST→RDY", in(prm.CmdOpModifySQ, 0, 272, prm.ModifySQIn.SQN, sqn, prm.ModifySQIn.SQState, 0,
			prm.SQC.State.At(prm.ModifySQIn.Ctx.Off), 1), 16)
		return sqn
	}
	moderate := func(cqn uint32) { // mlx5_core_modify_cq_moderation
		mb := prm.ModifyCQIn.CQContext.Off
		k.exec("MODIFY_CQ moderation", in(prm.CmdOpModifyCQ, 0, 272, prm.ModifyCQIn.CQN, cqn,
			prm.ModifyCQIn.ModifyFieldSelectResizeFieldSelect, prm.CQModifyPeriod|prm.CQModifyCount, prm.CQC.CQPeriod.At(mb), 8, prm.CQC.CQMaxCount.At(mb), 64), 16)
	}
	icoCQ := createCQ("CREATE_CQ icosq", 7, comp[0].n)
	asyncCQ := createCQ("CREATE_CQ async icosq", 6, comp[0].n)
	txCQ := createCQ("CREATE_CQ tx", 10, comp[0].n)
	moderate(txCQ)
	xdpCQ := createCQ("CREATE_CQ xdpsq", 10, comp[0].n)
	rxCQ := createCQ("CREATE_CQ rx", 10, comp[0].n, prm.CQC.CQECompEn.At(prm.CreateCQIn.CQContext.Off), 1,
		prm.CQC.MiniCQEResFormat.At(prm.CreateCQIn.CQContext.Off), 1) // MLX5_CQE_FORMAT_CSUM
	moderate(rxCQ)
	createSQ("CREATE_SQ icosq", icoCQ, 0, 0)
	createSQ("CREATE_SQ async icosq", asyncCQ, 0, 0)
	createSQ("CREATE_SQ txq", txCQ, 1, tis[0])
	createSQ("CREATE_SQ xdpsq", xdpCQ, 1, tis[0])
	rq := createRQ("CREATE_RQ", rxCQ, 10, qc, pd)
	modifyRQ(rq)
	// mlx5e_activate_priv_channels → mlx5e_rx_res_channels_activate: the direct RQT and the
	// RSS RQT redirected to the channel's RQ (en/rqt.c mlx5e_rqt_redirect: no rqt_max_size).
	redirect := func(rqt uint32, n int) {
		base := prm.ModifyRQTIn.Ctx.Off
		b := in(prm.CmdOpModifyRQT, 0, 272+4*n, prm.ModifyRQTIn.RQTN, rqt, prm.ModifyRQTIn.Bitmask, 1,
			prm.RQTC.RQTActualSize.At(base), n)
		for i := range n {
			prm.RQNum.RQNum.At(base+prm.RQTC.RQNum.Off+uint32(i)*32).Set(b, uint64(rq))
		}
		k.exec("MODIFY_RQT", b, 16)
	}
	redirect(chans[0].rqt, 1)
	redirect(rssRQT, 256)
	// mlx5e_update_nic_rx → mlx5e_refresh_tirs(false, false): self_lb_en with an empty context.
	for _, tir := range append(append([]uint32{}, rssTIRs...), chans[0].tir, chans[1].tir) {
		k.exec("MODIFY_TIR self_lb", in(prm.CmdOpModifyTIR, 0, 272, prm.ModifyTIRIn.TIRN, tir,
			prm.ModifyTIRBitmask.SelfLBEn, 1), 16)
	}
	// mlx5e_update_carrier → mlx5_query_vport_state.
	vs := k.exec("QUERY_VPORT_STATE", in(prm.CmdOpQueryVportState, 0, 16), 16)
	if get(vs, prm.QueryVportStateOut.State) != prm.VportStateUp {
		t.Fatal("vport down after PAOS up on a wired port")
	}
	// Statistics work: vport counters, Q counter, PPCNT IEEE 802.3 group.
	k.exec("QUERY_VPORT_COUNTER", in(prm.CmdOpQueryVportCounter, 0, 32), 528)
	k.exec("QUERY_Q_COUNTER", in(prm.CmdOpQueryQCounter, 0, 32, prm.QueryQCounterIn.CounterSetID, qc), 256)
	k.reg("ACCESS_REG PPCNT", prm.RegPPCNT, false, 256, prm.PPCNT.LocalPort, 1, prm.PPCNT.Grp, prm.PPCNTIEEE8023Group)

	// Shutdown (main.c shutdown → mlx5_try_fast_unload → fw.c mlx5_cmd_fast_teardown_hca):
	// TEARDOWN_HCA prepare-fast in events mode, so its completion EQE must still come; then
	// the NIC interface set to disabled and polled until it reads so.
	tdo := k.exec("TEARDOWN_HCA prepare fast", in(prm.CmdOpTeardownHCA, 0, 16, prm.TeardownHCAIn.Profile, prm.TeardownPrepareFast), 16)
	if get(tdo, prm.TeardownHCAOut.State) != 0 {
		t.Fatal("fast teardown state: failed")
	}
	l = k.r32(0x14)
	k.w32(0x14, l&0xfffff000|1<<8)
	if k.r32(0x14)>>8&7 != 1 {
		t.Fatal("NIC interface not disabled")
	}
	k.cmdEQ = nil
	k.wantStatus(in(prm.CmdOpAllocPD, 0, 16), 16, prm.StatusBadSysStateErr) // torn down
	records = records[:len(records)-1]

	// Nothing the kernel sent was unimplemented, and every answer was OK.
	if u := d.Unimplemented(); len(u) != 0 {
		t.Fatalf("unimplemented: %v", u)
	}
	if len(records) != k.n {
		t.Fatalf("command log has %d records for %d commands", len(records), k.n)
	}
	for _, r := range records {
		if r.Status != prm.StatusOK {
			t.Fatalf("logged failure: %v", r)
		}
	}
	// The other EQs saw no events, and the page EQ no requests.
	if asyncEQ.next() != nil || pagesEQ.next() != nil {
		t.Fatal("unexpected EQE on the async or page EQ")
	}
	t.Logf("%d commands replayed", k.n)
}

// kv0 is a field/value list (a named start for append).
func kv0(pairs ...any) []any { return pairs }

// TestVFIOProviderSequence replays rdma-core's mlx5 VFIO provider (providers/mlx5/mlx5_vfio.c:
// mlx5_vfio_alloc_context → init_cmd_interface, setup_function, create_async_eqs; DevX
// commands; free_context → destroy_async_eqs, teardown_hca_fast): its 12-byte ENABLE_HCA
// output, the general caps it needs (umem_uid_0), roce_en set in the vport context for an
// Ethernet port, one EQ for command and page-request events created while polling, then
// commands completed by events, and the fast teardown that ends with the NIC interface
// disabled.
func TestVFIOProviderSequence(t *testing.T) {
	d := model.New(model.Config{})
	k := &kdrv{host: newHost(t, d, 16<<20)}
	k.setupCmdq()
	k.exec("ENABLE_HCA", in(prm.CmdOpEnableHCA, 0, 16), 12)
	if get(k.exec("QUERY_ISSI", in(prm.CmdOpQueryISSI, 0, 16), 112), prm.QueryISSIOut.SupportedISSIDw0)&2 == 0 {
		t.Fatal("ISSI 1")
	}
	k.exec("SET_ISSI", in(prm.CmdOpSetISSI, 0, 16, prm.SetISSIIn.CurrentISSI, 1), 16)
	give := func(opMod uint16) {
		n := int(int32(get(k.exec("QUERY_PAGES", in(prm.CmdOpQueryPages, opMod, 16), 16), prm.QueryPagesOut.NumPages)))
		if n <= 0 {
			return
		}
		pas := prm.ManagePagesIn.PAS
		b := in(prm.CmdOpManagePages, prm.ManagePagesGive, pas.ByteOff()+8*n, prm.ManagePagesIn.InputNumEntries, n)
		for i := range n {
			pas.At(uint32(i)*64).Set(b, k.alloc(4096, 4096))
		}
		k.exec("MANAGE_PAGES", b, 16)
	}
	give(prm.QueryPagesBoot)
	k.reg("ACCESS_REG HOST_ENDIANNESS", prm.RegHostEndianness, true, 16)
	cur := k.capPage(prm.CapTypeGeneral, prm.CapOpModCur)
	k.capPage(prm.CapTypeGeneral, prm.CapOpModMax)
	set := in(prm.CmdOpSetHCACap, uint16(prm.CapTypeGeneral)<<1, 4112)
	copy(prm.SetHCACapIn.Capability.Slice(set), cur)
	prm.CmdHCACap.CmdifChecksum.Set(prm.SetHCACapIn.Capability.Slice(set), 0)
	k.exec("SET_HCA_CAP", set, 16)
	if get(cur, prm.CmdHCACap.UMEMUID0) == 0 || get(cur, prm.CmdHCACap.RoCE) != 0 {
		t.Fatal("umem_uid_0 off (the provider refuses the device) or roce on (it would query RoCE caps)")
	}
	give(prm.QueryPagesInit)
	k.exec("INIT_HCA", in(prm.CmdOpInitHCA, 0, 32), 16)
	sel := prm.ModifyNICVportContextIn.FieldSelect.Off
	k.exec("MODIFY_NIC_VPORT_CONTEXT roce_en", in(prm.CmdOpModifyNICVportContext, 0, 512,
		prm.ModifyNICVportFieldSelect.RoCEEn.At(sel), 1, prm.NICVportContext.RoCEEn.At(prm.ModifyNICVportContextIn.NICVportContext.Off), 1), 16)
	k.uar = uint32(get(k.exec("ALLOC_UAR", in(prm.CmdOpAllocUAR, 0, 16), 16), prm.AllocUAROut.UAR))
	eq := k.createEQ("CREATE_EQ async", 32, 0, 1<<prm.EventTypeCmd|1<<prm.EventTypePageRequest, 0)
	k.cmdEQ = eq // from here commands complete by events
	pd := uint32(get(k.exec("ALLOC_PD", in(prm.CmdOpAllocPD, 0, 16), 16), prm.AllocPDOut.PD))
	k.exec("DEALLOC_PD", in(prm.CmdOpDeallocPD, 0, 16, prm.DeallocPDIn.PD, pd), 16)
	// A page request arrives on the same EQ (mlx5_vfio_handle_page_req_event).
	if !d.RequestPages(2) {
		t.Fatal("no EQ took the page request")
	}
	e := eq.next()
	if e == nil || prm.EQE.EventType.Get(e) != uint64(prm.EventTypePageRequest) ||
		prm.EQEPageReq.NumPages.Get(prm.EQE.EventData.Slice(e)) != 2 {
		t.Fatalf("page request EQE % x", e)
	}
	eq.arm()
	give(prm.QueryPagesRegular)
	// destroy_async_eqs: back to polling (have_eq cleared), then the EQ goes, which
	// therefore reports nothing.
	k.cmdEQ = nil
	k.exec("DESTROY_EQ", in(prm.CmdOpDestroyEQ, 0, 16, prm.DestroyEQIn.EQNumber, eq.n), 16)
	if eq.next() != nil {
		t.Fatal("DESTROY_EQ reported on the EQ it destroyed")
	}
	k.exec("DEALLOC_UAR", in(prm.CmdOpDeallocUAR, 0, 16, prm.DeallocUARIn.UAR, k.uar), 16)
	out := k.exec("TEARDOWN_HCA fast", in(prm.CmdOpTeardownHCA, 0, 16, prm.TeardownHCAIn.Profile, prm.TeardownPrepareFast), 16)
	if get(out, prm.TeardownHCAOut.State) != 0 {
		t.Fatal("prepare-fast teardown failed")
	}
	// mlx5_vfio_set_nic_state(DISABLED): address bits kept, state in bits 10:8.
	l := k.r32(0x14)
	k.w32(0x14, l&0xfffff000|1<<8)
	if got := k.r32(0x14) >> 8 & 7; got != 1 {
		t.Fatalf("nic_interface %d after the fast teardown, want disabled (1)", got)
	}
	if u := d.Unimplemented(); len(u) != 0 {
		t.Fatalf("unimplemented: %v", u)
	}
}

// TestQueueInSplitMappings: an EQ in one 16 KiB page (log_page_size 2, one PAS entry, as
// mlx5_vfio.c create_map_eq makes it) whose four 4 KiB pieces are separate DMA mappings, as
// QEMU's vfio-user client maps IOMMU pages, works: the model addresses it page by page. A
// piece missing is a bad parameter.
func TestQueueInSplitMappings(t *testing.T) {
	r := newReady(t, model.Config{})
	const iova = 0x9000_0000
	var pieces [4][]byte
	for j := range pieces {
		pieces[j] = make([]byte, 4096)
		for i := 0; i < 4096; i += 64 {
			prm.EQE.Owner.Set(pieces[j][i:i+64], 1)
		}
		if j == 2 {
			continue // mapped below, after the refusal
		}
		if err := r.d.DMA().Map(iova+uint64(j)*4096, pieces[j], model.DMARead|model.DMAWrite); err != nil {
			t.Fatal(err)
		}
	}
	base := prm.CreateEQIn.EQContextEntry.Off
	eqIn := in(prm.CmdOpCreateEQ, 0, prm.CreateEQIn.PAS.ByteOff()+8, prm.EQC.LogEQSize.At(base), 8,
		prm.EQC.UARPage.At(base), r.uar, prm.EQC.LogPageSize.At(base), 2, prm.CreateEQIn.PAS, iova,
		prm.CreateEQIn.EventBitmask, uint64(1)<<prm.EventTypePageRequest)
	if s := r.wantStatus(eqIn, 16, prm.StatusBadParamErr); s != model.SyndromeBadMemory {
		t.Fatalf("EQ over an unmapped piece: syndrome %#x", s)
	}
	if err := r.d.DMA().Map(iova+2*4096, pieces[2], model.DMARead|model.DMAWrite); err != nil {
		t.Fatal(err)
	}
	r.mustCmd(eqIn, 16)
	// A UMEM of one 16 KiB page over the same pieces (mlx5_vfio.c registers UMEMs in pages as
	// large as the I/O address alignment allows).
	ub := prm.CreateUMEMIn.UMEM.Off
	um := in(prm.CmdOpCreateUMEM, 0, int(prm.UMEM.Mtt.At(ub).End()/8), prm.UMEM.NumOfMtt.At(ub), 1,
		prm.UMEM.LogPageSize.At(ub), 2, prm.UMEM.Mtt.At(ub), iova)
	r.mustCmd(um, 16)
	// 200 page requests: EQEs 0..199, the 64th onwards in the second piece, 128th in the third.
	for range 200 {
		if !r.d.RequestPages(1) {
			t.Fatal("no EQ took the page request")
		}
	}
	for _, i := range []int{0, 63, 64, 130, 199} {
		e := pieces[i/64][i%64*64:][:64]
		if prm.EQE.EventType.Get(e) != uint64(prm.EventTypePageRequest) || prm.EQE.Owner.Get(e) != 0 {
			t.Fatalf("EQE %d: % x", i, e[:8])
		}
	}
}

// TestSendAcrossSplitMappings: a SEND whose data runs from one 4 KiB IOMMU page into the
// next, the two separate DMA mappings (vfio-user maps every IOMMU page by itself), through a
// PA key over both, leaves the port whole: the model gathers the read page by page.
func TestSendAcrossSplitMappings(t *testing.T) {
	p := newPort(t)
	p.d.Cable(p.d)
	rx := p.newRX()
	p.steerUDP(rx.rq, 4000, 0)
	q := p.newTX()
	const iova = 0xa000_0000
	lo, hi := make([]byte, 4096), make([]byte, 4096)
	for i, m := range [][]byte{lo, hi} {
		if err := p.d.DMA().Map(iova+uint64(i)*4096, m, model.DMARead); err != nil {
			t.Fatal(err)
		}
	}
	key := p.createMKeyPA(p.pd, iova, 8192)
	f := udp4(net.HardwareAddr{2, 0, 0, 0, 0, 1}, net.HardwareAddr{2, 0, 0, 0, 0, 2}, [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1, 4000, make([]byte, 300))
	// Headers inline, the rest at the end of the first page and the start of the second.
	rest := f[q.inlineHd:]
	start := 4096 - 100
	copy(lo[start:], rest)
	copy(hi, rest[100:])
	w := p.at(q.ring+uint64(q.pc%64)*64, 64)
	clear(w)
	prm.WQECtrl.OpModIdxOpcode.Set(w, uint64(q.pc&0xffff)<<8|prm.WQEOpSend)
	prm.WQECtrl.QPNDS.Set(w, uint64(q.sq)<<8|4)
	prm.WQECtrl.FmCeSe.Set(w, prm.WQECtrlCQUpdate)
	prm.WQEEth.InlineHdrSz.Set(w[16:], uint64(q.inlineHd))
	copy(w[16+14:], f[:q.inlineHd])
	prm.WQEData.ByteCount.Set(w[48:], uint64(len(rest)))
	prm.WQEData.LKey.Set(w[48:], uint64(key))
	prm.WQEData.Addr.Set(w[48:], iova+uint64(start))
	q.pc++
	binary.BigEndian.PutUint32(p.at(q.dbr+4*prm.SndDBR, 4), q.pc&0xffff)
	if _, err := p.d.BAR0().WriteAt(w[:8], int64(p.uar)<<12+prm.UARBlueFlame); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		p.d.Step(64)
	}
	if c := p.d.Counters(); c.TXPackets != 1 || c.TXErrors != 0 || c.RXPackets != 1 || c.RXBytes != uint64(len(f)) {
		t.Fatalf("counters %+v: the frame did not go through whole", c)
	}
}
