package model

import (
	"time"

	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// The port registers, QUERY_ADAPTER and the VXLAN port list: what Linux's mlx5_core and mlx5e
// read and write during probe and interface bring-up besides the bring-up commands
// (drivers/net/ethernet/mellanox/mlx5/core/port.c, en/port.c, en_stats.c, main.c, lib/vxlan.c).

// portState is the port's register state (one port, local_port 1).
type portState struct {
	adminUp    bool   // PAOS admin_status (reset: up; mlx5e sets it down until the netdev opens)
	adminMTU   uint16 // PMTU admin_mtu, what oper_mtu reports
	ethAdmin   uint32 // PTYS eth_proto_admin
	pause      [2]bool
	pfc        [2]uint8
	vxlanPorts map[uint16]bool
	nodeDesc   [prm.NodeDescBytes]byte
}

// Port facts the registers report. Inferred values, chosen to be plausible for a ConnectX-5
// port: one 100GBASE-CR4 link (port.h MLX5E_100GBASE_CR4, the legacy PTYS layout, as the model
// reports no PCAM and so no extended speeds), the largest hardware MTU the vport context
// accepts, and global pause on as ConnectX ports come up.
const (
	portEthProto  = 1 << prm.EthLinkMode100GBaseCR4
	portMaxMTU    = 9978
	localPort     = 1
	vxlanIANAPort = 4789 // IANA's VXLAN port, which the hardware parses from reset (lib/vxlan.c)
)

func newPortState(cfg Config) portState {
	p := portState{
		adminUp: true, adminMTU: uint16(cfg.MTU), ethAdmin: portEthProto,
		pause: [2]bool{true, true}, vxlanPorts: map[uint16]bool{vxlanIANAPort: true},
	}
	copy(p.nodeDesc[:], "daqiri mlx5 model") // inferred: firmware's default is the host's name
	return p
}

// wired reports whether the port has a wire (a cable, a bridge or a wire function).
func (d *Device) wired() bool {
	d.wireMu.Lock()
	defer d.wireMu.Unlock()
	return d.peer != nil || d.wire != nil
}

// operUp is the port's operational state: administratively up and wired (inferred: the model
// has no PHY, so "link" means "connected to something").
func (d *Device) operUp() bool { return d.port.adminUp && d.wired() }

// accessReg is ACCESS_REG (access_register_in: op_mod 0 write, 1 read; register_id;
// register_data). The model implements the host endianness register that both drivers write
// during bring-up and the port registers mlx5e uses (PTYS, PAOS, PMTU, PFCC, PMLP, PPCNT).
// Other registers are not modelled: BAD_PARAM with SyndromeNotModelled, which mlx5_core
// tolerates for the optional ones (it reads PCAM/MCAM/QCAM only when the general caps
// pcam_reg/mcam_reg/qcam_reg say they exist, and the model reports them absent).
func (d *Device) accessReg(c *cmd) error {
	in := prm.AccessRegisterIn
	if err := c.need(ins(in.RegisterID)); err != nil {
		return err
	}
	id := c.get(in.RegisterID)
	var write bool
	switch c.opMod {
	case prm.AccessRegWrite:
		write = true
	case prm.AccessRegRead:
	default:
		return badOpMod(c, "neither write (0) nor read (1)")
	}
	r := &regAccess{c: c, write: write, base: in.RegisterData.Off}
	switch id {
	case prm.RegHostEndianness:
		return d.regHostEndianness(r)
	case prm.RegPTYS:
		return d.regPTYS(r)
	case prm.RegPAOS:
		return d.regPAOS(r)
	case prm.RegPMTU:
		return d.regPMTU(r)
	case prm.RegPFCC:
		return d.regPFCC(r)
	case prm.RegPMLP:
		return d.regPMLP(r)
	case prm.RegPPCNT:
		return d.regPPCNT(r)
	case prm.RegNodeDesc:
		return d.regNodeDesc(r)
	case prm.RegMCAM:
		return d.regMCAM(r)
	case prm.RegMTUTC:
		return d.regMTUTC(r)
	}
	return fail(prm.StatusBadParamErr, SyndromeNotModelled, "ACCESS_REG: register %#x is not modelled", id)
}

// regAccess is one register access: fields are read from the input's register_data and
// written to the output's (the same bit offset in both layouts).
type regAccess struct {
	c     *cmd
	write bool
	base  uint32 // register_data's bit offset
}

func (r *regAccess) get(f prm.Field) uint64    { return r.c.get(f.At(r.base)) }
func (r *regAccess) set(f prm.Field, v uint64) { r.c.set(f.At(r.base), v) }

// need checks that the input (for a write) and the output hold the register up to last.
func (r *regAccess) need(last prm.Field) error {
	f := last.At(r.base)
	if r.write {
		return r.c.need(ins(f), f)
	}
	return r.c.need(nil, f)
}

// port checks local_port (mlx5_core addresses its one port as 1) and echoes it.
func (r *regAccess) port(f prm.Field, name string) error {
	if p := r.get(f); p != localPort {
		return badParam("ACCESS_REG %s: local_port %d; the model has port 1", name, p)
	}
	r.set(f, localPort)
	return nil
}

// regHostEndianness is driver.h MLX5_REG_HOST_ENDIANNESS: byte 0 of the data is 0 for
// little-endian hosts, 0x80 for big-endian ones.
func (d *Device) regHostEndianness(r *regAccess) error {
	c := r.c
	data := prm.AccessRegisterOut.RegisterData
	if r.write {
		if err := c.need(ins(prm.AccessRegisterIn.RegisterData)); err != nil {
			return err
		}
		d.hostEnd = c.in[prm.AccessRegisterIn.RegisterData.ByteOff()]
		if data.In(c.out) {
			c.out[data.ByteOff()] = d.hostEnd
		}
		return nil
	}
	if err := c.need(nil, data); err != nil {
		return err
	}
	c.out[data.ByteOff()] = d.hostEnd
	return nil
}

// regPTYS is the port type and speed (ptys_reg): Ethernet only (proto_mask MLX5_PTYS_EN, as
// port.c mlx5_query_port_ptys asks), legacy speed bits; a write sets eth_proto_admin, which
// must be a subset of the capability.
func (d *Device) regPTYS(r *regAccess) error {
	p := prm.PTYS
	if err := r.need(p.ConnectorType); err != nil {
		return err
	}
	if err := r.port(p.LocalPort, "PTYS"); err != nil {
		return err
	}
	if m := r.get(p.ProtoMask); m != prm.PTYSProtoEth {
		return fail(prm.StatusBadParamErr, SyndromeNotModelled, "ACCESS_REG PTYS: proto_mask %#x; the model's port is Ethernet (%#x)", m, prm.PTYSProtoEth)
	}
	if r.write {
		admin := uint32(r.get(p.EthProtoAdmin))
		if admin == 0 || admin&^portEthProto != 0 || r.get(p.ExtEthProtoAdmin) != 0 {
			return badParam("ACCESS_REG PTYS: eth_proto_admin %#x is not within the capability %#x", admin, portEthProto)
		}
		d.port.ethAdmin = admin
	}
	r.set(p.ProtoMask, prm.PTYSProtoEth)
	r.set(p.EthProtoCapability, portEthProto)
	r.set(p.EthProtoAdmin, uint64(d.port.ethAdmin))
	if d.operUp() {
		r.set(p.EthProtoOper, uint64(d.port.ethAdmin))
	}
	return nil
}

// regPAOS is the port's administrative and operational status (paos_reg, driver.h
// MLX5_PORT_UP/DOWN): mlx5e writes admin down at probe and up when the netdev opens (port.c
// mlx5_set_port_admin_status, with ase set). Operational status follows admin and the wire;
// QUERY_VPORT_STATE reports the same. Inferred: the datapath keeps moving frames while the
// port is administratively down (the model's wire has no link to drop).
func (d *Device) regPAOS(r *regAccess) error {
	p := prm.PAOS
	if err := r.need(p.ASE); err != nil {
		return err
	}
	if err := r.port(p.LocalPort, "PAOS"); err != nil {
		return err
	}
	if r.write && r.get(p.ASE) != 0 {
		was := d.operUp()
		switch s := r.get(p.AdminStatus); s {
		case prm.PortUp:
			d.port.adminUp = true
		case prm.PortDown:
			d.port.adminUp = false
		default:
			return badParam("ACCESS_REG PAOS: admin_status %d is neither up (1) nor down (2)", s)
		}
		d.portChange(was, d.operUp())
	}
	admin, oper := uint64(prm.PortDown), uint64(prm.PortDown)
	if d.port.adminUp {
		admin = prm.PortUp
	}
	if d.operUp() {
		oper = prm.PortUp
	}
	r.set(p.AdminStatus, admin)
	r.set(p.OperStatus, oper)
	r.set(p.ASE, 0)
	return nil
}

// regPMTU is the port MTU (pmtu_reg): max_mtu is the largest hardware MTU, admin_mtu what the
// driver set (port.c mlx5_set_port_mtu), oper_mtu follows it.
func (d *Device) regPMTU(r *regAccess) error {
	p := prm.PMTU
	if err := r.need(p.OperMTU); err != nil {
		return err
	}
	if err := r.port(p.LocalPort, "PMTU"); err != nil {
		return err
	}
	if r.write {
		mtu := r.get(p.AdminMTU)
		if mtu < 68 || mtu > portMaxMTU {
			return badParam("ACCESS_REG PMTU: admin_mtu %d outside 68..%d", mtu, portMaxMTU)
		}
		d.port.adminMTU = uint16(mtu)
	}
	r.set(p.MaxMTU, portMaxMTU)
	r.set(p.AdminMTU, uint64(d.port.adminMTU))
	r.set(p.OperMTU, uint64(d.port.adminMTU))
	return nil
}

// regPFCC is the port's flow control (pfcc_reg): global pause and per-priority PFC as the
// driver set them (port.c mlx5_set_port_pause, mlx5_set_port_pfc). Inferred: the model's wire
// has no pause frames, so the setting is kept and reported, not acted on.
func (d *Device) regPFCC(r *regAccess) error {
	p := prm.PFCC
	if err := r.need(p.PFCRX); err != nil {
		return err
	}
	if err := r.port(p.LocalPort, "PFCC"); err != nil {
		return err
	}
	if r.write {
		d.port.pause = [2]bool{r.get(p.PPTX) != 0, r.get(p.PPRX) != 0}
		d.port.pfc = [2]uint8{uint8(r.get(p.PFCTX)), uint8(r.get(p.PFCRX))}
	}
	r.set(p.PPTX, b2u(d.port.pause[0]))
	r.set(p.PPRX, b2u(d.port.pause[1]))
	r.set(p.PFCTX, uint64(d.port.pfc[0]))
	r.set(p.PFCRX, uint64(d.port.pfc[1]))
	return nil
}

// regPMLP is the module-to-lane mapping (pmlp_reg), read-only: one lane on module 0, which is
// what port.c mlx5_query_module_num reads.
func (d *Device) regPMLP(r *regAccess) error {
	p := prm.PMLP
	if err := r.need(p.Lane0ModuleMapping); err != nil {
		return err
	}
	if err := r.port(p.LocalPort, "PMLP"); err != nil {
		return err
	}
	if r.write {
		return fail(prm.StatusBadParamErr, SyndromeNotModelled, "ACCESS_REG PMLP: the module mapping is fixed in the model")
	}
	r.set(p.Width, 1)
	r.set(p.Lane0ModuleMapping, 0)
	return nil
}

// regPPCNT is the port counters (ppcnt_reg), read-only: the IEEE 802.3 group carries the
// frames and octets the datapath counted (en_stats.c reads a_frames_*_ok and a_octets_*_ok
// from it); every other group reads as zeros, as a port on a wire without errors, pause or
// priorities counts nothing there (inferred). Clearing is not modelled.
func (d *Device) regPPCNT(r *regAccess) error {
	p := prm.PPCNT
	if err := r.need(p.CounterSet); err != nil {
		return err
	}
	if err := r.port(p.LocalPort, "PPCNT"); err != nil {
		return err
	}
	if r.write || r.get(p.Clr) != 0 {
		return fail(prm.StatusBadParamErr, SyndromeNotModelled, "ACCESS_REG PPCNT: clearing port counters is not modelled")
	}
	grp := r.get(p.Grp)
	r.set(p.Grp, grp)
	r.set(p.PrioTC, r.get(p.PrioTC))
	n := d.dp().Counters(false)
	set64 := func(hi prm.Field, v uint64) {
		r.set(hi, v>>32)
		r.set(hi.At(32), v&0xffffffff)
	}
	if grp == prm.PPCNTRFC2863Group {
		// if_in_discards: what the port's full input refused, and frames steered to an RQ
		// that was not ready (inferred: a ConnectX drops those without a CQE).
		set64(p.IfInDiscardsHigh, n.RXInputDrops+n.RXNotReady)
		return nil
	}
	if grp != prm.PPCNTIEEE8023Group {
		return nil
	}
	set64(p.AFramesTransmittedOKHigh, n.TXPackets)
	set64(p.AFramesReceivedOKHigh, n.RXPackets)
	set64(p.AOctetsTransmittedOKHigh, n.TXBytes)
	set64(p.AOctetsReceivedOKHigh, n.RXBytes)
	return nil
}

// queryAdapter is QUERY_ADAPTER (query_adapter_out): main.c mlx5_query_board_id copies
// vsd_contd_psid into the board id it logs; a failure aborts mlx5_core's probe. The model
// reports Mellanox's IEEE vendor id (0x02c9, the OUI its devices carry) and a PSID of its
// own (inferred: real PSIDs name a board, "MT_0000000080").
func (d *Device) queryAdapter(c *cmd) error {
	o := prm.QueryAdapterOut
	if err := c.need(nil, o.VSDContdPSID); err != nil {
		return err
	}
	c.set(o.IEEEVendorID, 0x0002c9)
	copy(o.VSDContdPSID.Slice(c.out), "DAQIRI_MODEL0001")
	return nil
}

// addVXLANPort is ADD_VXLAN_UDP_DPORT (lib/vxlan.c: mlx5_core adds 4789 at init, and mlx5e
// adds the ports of VXLAN devices when tunnel_stateless_vxlan is set). The model's datapath
// parses VXLAN on 4789 only, so other ports are refused as not modelled.
func (d *Device) addVXLANPort(c *cmd) error {
	f := prm.AddVXLANUDPDportIn.VXLANUDPPort
	if err := c.need(ins(f)); err != nil {
		return err
	}
	port := uint16(c.get(f))
	if port != vxlanIANAPort {
		return fail(prm.StatusBadParamErr, SyndromeNotModelled, "ADD_VXLAN_UDP_DPORT: port %d; the model parses VXLAN on %d only", port, vxlanIANAPort)
	}
	d.port.vxlanPorts[port] = true
	return nil
}

// deleteVXLANPort is DELETE_VXLAN_UDP_DPORT: the port must have been added (4789 is there
// from reset, as lib/vxlan.c says the hardware has it by default). Inferred: the datapath
// keeps parsing 4789 after its deletion, as it has no other VXLAN port to fall back to.
func (d *Device) deleteVXLANPort(c *cmd) error {
	f := prm.DeleteVXLANUDPDportIn.VXLANUDPPort
	if err := c.need(ins(f)); err != nil {
		return err
	}
	port := uint16(c.get(f))
	if !d.port.vxlanPorts[port] {
		return badParam("DELETE_VXLAN_UDP_DPORT: port %d was not added", port)
	}
	delete(d.port.vxlanPorts, port)
	return nil
}

// regNodeDesc is the node description (driver.h MLX5_REG_NODE_DESC): 64 bytes of text that
// mlx5_ib reads at probe (main.c mlx5_query_node_desc; its failure fails the probe) and
// writes when the description is set (mlx5_ib_modify_device).
func (d *Device) regNodeDesc(r *regAccess) error {
	c := r.c
	in, out := prm.AccessRegisterIn.RegisterData, prm.AccessRegisterOut.RegisterData
	if r.write {
		if len(c.in) < in.ByteOff()+prm.NodeDescBytes {
			return fail(prm.StatusBadInpLenErr, SyndromeBadLength, "ACCESS_REG NODE_DESC: input of %d bytes ends before the %d-byte description", len(c.in), prm.NodeDescBytes)
		}
		copy(d.port.nodeDesc[:], c.in[in.ByteOff():])
	}
	if len(c.out) < out.ByteOff()+prm.NodeDescBytes {
		return fail(prm.StatusBadOutpLenErr, SyndromeBadLength, "ACCESS_REG NODE_DESC: output of %d bytes ends before the %d-byte description", len(c.out), prm.NodeDescBytes)
	}
	copy(c.out[out.ByteOff():], d.port.nodeDesc[:])
	return nil
}

// portChange reports a change of the port's operational state with a PORT_CHANGE EQE
// (sub-type ACTIVE or DOWN, port 1 in port_state) to the EQ that asked for it: what mlx5e
// updates its carrier on (en_main.c async_event). Inferred: firmware reports the link coming
// up as soon as the port is administratively up on a wire, as the model has no link training.
func (d *Device) portChange(was, now bool) {
	if was == now {
		return
	}
	sub := uint8(prm.PortChangeDown)
	if now {
		sub = prm.PortChangeActive
	}
	d.evMu.Lock()
	defer d.evMu.Unlock()
	if e := d.subscriber(prm.EventTypePortChange); e != nil {
		d.post(e, prm.EventTypePortChange, sub, func(b []byte) { prm.EQEPortState.Port.Set(b, localPort<<4) })
	}
}

// regMCAM is the management capabilities register, read only: in group 0 the model has MTUTC
// and lets the driver modify its real-time clock (ptpcyc2realtime_modify), which is what
// mlx5_core needs to set that clock from CLOCK_REALTIME at init (lib/clock.c
// mlx5_set_mtutc, mlx5_modify_mtutc_allowed); every other register and feature bit is 0.
func (d *Device) regMCAM(r *regAccess) error {
	m := prm.MCAM
	if err := r.need(m.PTPCyc2RealtimeModify); err != nil {
		return err
	}
	if r.write {
		return badParam("ACCESS_REG MCAM: a read-only register")
	}
	fg, ag := r.get(m.FeatureGroup), r.get(m.AccessRegGroup)
	r.set(m.FeatureGroup, fg)
	r.set(m.AccessRegGroup, ag)
	if ag == 0 {
		r.set(m.MTUTC, 1)
	}
	if fg == 0 {
		r.set(m.PTPCyc2RealtimeModify, 1)
	}
	return nil
}

// regMTUTC sets (SET_TIME_IMMEDIATE) or steps (ADJUST_TIME, ns) the real-time clock; a
// frequency adjustment is accepted and not modelled (the model's clocks follow the host's).
// The free-running timer is never touched, as on a ConnectX.
func (d *Device) regMTUTC(r *regAccess) error {
	m := prm.MTUTC
	if err := r.need(m.TimeAdjustment); err != nil {
		return err
	}
	if !r.write {
		return badParam("ACCESS_REG MTUTC: a write-only register")
	}
	switch op := r.get(m.Operation); op {
	case prm.MTUTCSetTimeImmediate:
		ns := r.get(m.UTCNsec)
		if ns >= 1e9 {
			return badParam("ACCESS_REG MTUTC: utc_nsec %d is not below 1e9", ns)
		}
		d.clock.setRealTime(int64(r.get(m.UTCSec))*1e9 + int64(ns))
	case prm.MTUTCAdjustTime:
		d.clock.stepRealTime(time.Duration(int32(r.get(m.TimeAdjustment))))
	case prm.MTUTCAdjustFreqUTC:
	default:
		return badParam("ACCESS_REG MTUTC: operation %d", op)
	}
	return nil
}
