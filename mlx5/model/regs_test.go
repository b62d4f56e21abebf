package model_test

import (
	"net"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/mlx5/model"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// regIO is one ACCESS_REG through Exec: the register at register_data, in and out size bytes.
func regIO(r *ready, id int, write bool, size int, kv ...any) ([]byte, error) {
	opMod := uint16(prm.AccessRegRead)
	if write {
		opMod = prm.AccessRegWrite
	}
	base := prm.AccessRegisterIn.RegisterData.Off
	f := []any{prm.AccessRegisterIn.RegisterID, id}
	for i := 0; i+1 < len(kv); i += 2 {
		f = append(f, kv[i].(prm.Field).At(base), kv[i+1])
	}
	out, err := r.cmd(in(prm.CmdOpAccessReg, opMod, 16+size, f...), 16+size)
	if err != nil {
		return nil, err
	}
	return out[16:], nil
}

func mustReg(t *testing.T, r *ready, id int, write bool, size int, kv ...any) []byte {
	t.Helper()
	out, err := regIO(r, id, write, size, kv...)
	if err != nil {
		t.Fatalf("ACCESS_REG %#x: %v", id, err)
	}
	return out
}

func wantRegStatus(t *testing.T, r *ready, st prm.Status, id int, write bool, size int, kv ...any) {
	t.Helper()
	_, err := regIO(r, id, write, size, kv...)
	if se, ok := err.(*statusErr); !ok || se.status != st {
		t.Fatalf("ACCESS_REG %#x: %v, want %v", id, err, st)
	}
}

// TestPortRegisters: the port registers mlx5e reads and writes (driver.h MLX5_REG_*,
// mlx5_ifc.h *_reg layouts), their state, how PAOS drives the operational state that PTYS and
// QUERY_VPORT_STATE report, and the errors for a wrong port, protocol, value or direction.
func TestPortRegisters(t *testing.T) {
	pt := newPort(t)
	r := pt.ready
	vportUp := func() bool {
		out := r.mustCmd(in(prm.CmdOpQueryVportState, 0, 16), 16)
		return get(out, prm.QueryVportStateOut.State) == prm.VportStateUp
	}
	p := prm.PTYS
	ptys := func() []byte {
		return mustReg(t, r, prm.RegPTYS, false, 64, p.LocalPort, 1, p.ProtoMask, prm.PTYSProtoEth)
	}
	// No wire yet: capability and admin 100GBASE-CR4, nothing operational, vport down.
	got := ptys()
	if get(got, p.EthProtoCapability) != 1<<prm.EthLinkMode100GBaseCR4 || get(got, p.EthProtoAdmin) != 1<<prm.EthLinkMode100GBaseCR4 ||
		get(got, p.EthProtoOper) != 0 || get(got, p.ProtoMask) != prm.PTYSProtoEth || vportUp() {
		t.Fatalf("PTYS unwired: % x", got)
	}
	r.d.Cable(r.d)
	if get(ptys(), p.EthProtoOper) != 1<<prm.EthLinkMode100GBaseCR4 || !vportUp() {
		t.Fatal("wired port not operational")
	}
	// PAOS: admin down takes the port and the vport down; up brings them back.
	a := prm.PAOS
	mustReg(t, r, prm.RegPAOS, true, 16, a.LocalPort, 1, a.AdminStatus, prm.PortDown, a.ASE, 1)
	st := mustReg(t, r, prm.RegPAOS, false, 16, a.LocalPort, 1)
	if get(st, a.AdminStatus) != prm.PortDown || get(st, a.OperStatus) != prm.PortDown || vportUp() || get(ptys(), p.EthProtoOper) != 0 {
		t.Fatalf("PAOS down: % x", st)
	}
	// Without ase the admin status is not changed (port.c sets ase with every change).
	mustReg(t, r, prm.RegPAOS, true, 16, a.LocalPort, 1, a.AdminStatus, prm.PortUp)
	if get(mustReg(t, r, prm.RegPAOS, false, 16, a.LocalPort, 1), a.AdminStatus) != prm.PortDown {
		t.Fatal("PAOS write without ase changed the admin status")
	}
	mustReg(t, r, prm.RegPAOS, true, 16, a.LocalPort, 1, a.AdminStatus, prm.PortUp, a.ASE, 1)
	if st := mustReg(t, r, prm.RegPAOS, false, 16, a.LocalPort, 1); get(st, a.OperStatus) != prm.PortUp || !vportUp() {
		t.Fatal("PAOS up")
	}
	wantRegStatus(t, r, prm.StatusBadParamErr, prm.RegPAOS, true, 16, a.LocalPort, 1, a.AdminStatus, 5, a.ASE, 1)
	// PMTU: max, admin, oper.
	m := prm.PMTU
	mt := mustReg(t, r, prm.RegPMTU, false, 16, m.LocalPort, 1)
	if get(mt, m.MaxMTU) != 9978 || get(mt, m.AdminMTU) != 1522 || get(mt, m.OperMTU) != 1522 {
		t.Fatalf("PMTU % x", mt)
	}
	mustReg(t, r, prm.RegPMTU, true, 16, m.LocalPort, 1, m.AdminMTU, 9000)
	if get(mustReg(t, r, prm.RegPMTU, false, 16, m.LocalPort, 1), m.OperMTU) != 9000 {
		t.Fatal("PMTU admin_mtu not taken")
	}
	wantRegStatus(t, r, prm.StatusBadParamErr, prm.RegPMTU, true, 16, m.LocalPort, 1, m.AdminMTU, 9979)
	wantRegStatus(t, r, prm.StatusBadParamErr, prm.RegPMTU, true, 16, m.LocalPort, 1, m.AdminMTU, 40)
	// PTYS writes: a subset of the capability only; Ethernet only; port 1 only.
	mustReg(t, r, prm.RegPTYS, true, 64, p.LocalPort, 1, p.ProtoMask, prm.PTYSProtoEth, p.EthProtoAdmin, 1<<prm.EthLinkMode100GBaseCR4)
	wantRegStatus(t, r, prm.StatusBadParamErr, prm.RegPTYS, true, 64, p.LocalPort, 1, p.ProtoMask, prm.PTYSProtoEth, p.EthProtoAdmin, 1<<3)
	wantRegStatus(t, r, prm.StatusBadParamErr, prm.RegPTYS, false, 64, p.LocalPort, 1, p.ProtoMask, 1)
	wantRegStatus(t, r, prm.StatusBadParamErr, prm.RegPTYS, false, 64, p.LocalPort, 2, p.ProtoMask, prm.PTYSProtoEth)
	// A register shorter than its layout: BAD_INP_LEN / BAD_OUTP_LEN.
	wantRegStatus(t, r, prm.StatusBadOutpLenErr, prm.RegPTYS, false, 16, p.LocalPort, 1)
	// PFCC: global pause on from reset, then as written.
	f := prm.PFCC
	pf := mustReg(t, r, prm.RegPFCC, false, 32, f.LocalPort, 1)
	if get(pf, f.PPTX) != 1 || get(pf, f.PPRX) != 1 {
		t.Fatalf("PFCC % x", pf)
	}
	mustReg(t, r, prm.RegPFCC, true, 32, f.LocalPort, 1, f.PPTX, 0, f.PPRX, 1)
	if pf := mustReg(t, r, prm.RegPFCC, false, 32, f.LocalPort, 1); get(pf, f.PPTX) != 0 || get(pf, f.PPRX) != 1 {
		t.Fatalf("PFCC after write % x", pf)
	}
	// PMLP: one lane on module 0; read-only.
	if pm := mustReg(t, r, prm.RegPMLP, false, 64, prm.PMLP.LocalPort, 1); get(pm, prm.PMLP.Width) != 1 || get(pm, prm.PMLP.Lane0ModuleMapping) != 0 {
		t.Fatalf("PMLP % x", pm)
	}
	wantRegStatus(t, r, prm.StatusBadParamErr, prm.RegPMLP, true, 64, prm.PMLP.LocalPort, 1)
	// PPCNT: the 802.3 group has the port's counters; other groups read zeros; clearing is
	// not modelled.
	bcast := net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	frame := udp4(bcast, net.HardwareAddr{2, 0, 0, 0, 0, 9}, [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1, 2, make([]byte, 50))
	pt.newTX().send(frame, 0) // the port is cabled to itself: sent and received
	r.d.Step(100)
	c := r.d.Counters()
	if c.TXPackets == 0 || c.TXBytes == 0 {
		t.Fatalf("counters %+v: the received frame was not counted", c)
	}
	pc := prm.PPCNT
	cnt := mustReg(t, r, prm.RegPPCNT, false, 256, pc.LocalPort, 1, pc.Grp, prm.PPCNTIEEE8023Group)
	pair := func(hi prm.Field) uint64 { return get(cnt, hi)<<32 | get(cnt, hi.At(32)) }
	if pair(pc.AFramesReceivedOKHigh) != c.RXPackets || pair(pc.AOctetsReceivedOKHigh) != c.RXBytes ||
		pair(pc.AFramesTransmittedOKHigh) != c.TXPackets || pair(pc.AOctetsTransmittedOKHigh) != c.TXBytes {
		t.Fatalf("PPCNT 802.3 % x, counters %+v", cnt[:0x40], c)
	}
	other := mustReg(t, r, prm.RegPPCNT, false, 256, pc.LocalPort, 1, pc.Grp, 0x12)
	for _, b := range pc.CounterSet.Slice(other) {
		if b != 0 {
			t.Fatal("PPCNT physical-layer group not zero")
		}
	}
	wantRegStatus(t, r, prm.StatusBadParamErr, prm.RegPPCNT, false, 256, pc.LocalPort, 1, pc.Clr, 1)
}

// TestAdapterAndVXLANPorts: QUERY_ADAPTER's PSID (main.c mlx5_query_board_id) and the VXLAN
// port list (lib/vxlan.c): 4789 is there from reset and may be added and deleted; another
// port is refused as not modelled; deleting a port not added is a bad parameter.
func TestAdapterAndVXLANPorts(t *testing.T) {
	r := newReady(t, model.Config{})
	out := r.mustCmd(in(prm.CmdOpQueryAdapter, 0, 16), 272)
	if psid := string(prm.QueryAdapterOut.VSDContdPSID.Slice(out)); psid != "DAQIRI_MODEL0001" || get(out, prm.QueryAdapterOut.IEEEVendorID) != 0x2c9 {
		t.Fatalf("QUERY_ADAPTER psid %q vendor %#x", psid, get(out, prm.QueryAdapterOut.IEEEVendorID))
	}
	r.wantStatus(in(prm.CmdOpQueryAdapter, 0, 16), 16, prm.StatusBadOutpLenErr)
	add := func(port int) []byte {
		return in(prm.CmdOpAddVXLANUDPDport, 0, 16, prm.AddVXLANUDPDportIn.VXLANUDPPort, port)
	}
	del := func(port int) []byte {
		return in(prm.CmdOpDeleteVXLANUDPDport, 0, 16, prm.DeleteVXLANUDPDportIn.VXLANUDPPort, port)
	}
	r.mustCmd(add(4789), 16)
	if s := r.wantStatus(add(8472), 16, prm.StatusBadParamErr); s != model.SyndromeNotModelled {
		t.Fatalf("ADD 8472 syndrome %#x", s)
	}
	r.wantStatus(del(8472), 16, prm.StatusBadParamErr)
	r.mustCmd(del(4789), 16)
	r.wantStatus(del(4789), 16, prm.StatusBadParamErr)
	r.mustCmd(add(4789), 16)
}

// TestNodeDescRegister: the node description mlx5_ib reads at probe and writes when told.
func TestNodeDescRegister(t *testing.T) {
	r := newReady(t, model.Config{})
	got := mustReg(t, r, prm.RegNodeDesc, false, prm.NodeDescBytes)
	if string(got[:17]) != "daqiri mlx5 model" {
		t.Fatalf("node description %q", got)
	}
	b := in(prm.CmdOpAccessReg, prm.AccessRegWrite, 16+prm.NodeDescBytes, prm.AccessRegisterIn.RegisterID, prm.RegNodeDesc)
	copy(b[16:], "guest node 7")
	r.mustCmd(b, 16+prm.NodeDescBytes)
	if got := mustReg(t, r, prm.RegNodeDesc, false, prm.NodeDescBytes); string(got[:12]) != "guest node 7" || got[12] != 0 {
		t.Fatalf("node description after the write %q", got)
	}
	wantRegStatus(t, r, prm.StatusBadOutpLenErr, prm.RegNodeDesc, false, 16)
}

// TestVportLists: MODIFY_NIC_VPORT_CONTEXT's address lists (field_select addresses_list, as
// vport.c mlx5_modify_nic_vport_mac_list sends them) are kept per type and reported by
// QUERY_NIC_VPORT_CONTEXT as far as its output holds; a list longer than the caps allow, or
// of an unknown type, is a bad parameter.
func TestVportLists(t *testing.T) {
	r := newReady(t, model.Config{})
	sel := prm.ModifyNICVportContextIn.FieldSelect.Off
	vb := prm.ModifyNICVportContextIn.NICVportContext.Off
	v := prm.NICVportContext
	entry := v.CurrentUCMACAddress.At(vb)
	set := func(typ int, entries ...uint64) []byte {
		b := in(prm.CmdOpModifyNICVportContext, 0, max(int(entry.Off/8)+8*len(entries), 512), prm.ModifyNICVportFieldSelect.AddressesList.At(sel), 1,
			v.AllowedListType.At(vb), typ, v.AllowedListSize.At(vb), len(entries))
		for i, e := range entries {
			entry.At(uint32(i)*64).Set(b, e)
		}
		return b
	}
	macs := []uint64{0x02da51000007, 0x0200000000aa}
	r.mustCmd(set(prm.NICVportListUC, macs...), 16)
	r.mustCmd(set(prm.NICVportListVLAN, 5, 100), 16)
	qb := prm.QueryNICVportContextOut.NICVportContext.Off
	qe := v.CurrentUCMACAddress.At(qb)
	out := r.mustCmd(in(prm.CmdOpQueryNICVportContext, 0, 16), int(qe.End()/8)+64)
	if get(out, v.AllowedListSize.At(qb)) != 2 || get(out, qe) != macs[0] || get(out, qe.At(64)) != macs[1] {
		t.Fatalf("UC list: size %d, % x", get(out, v.AllowedListSize.At(qb)), out[qe.ByteOff():qe.ByteOff()+16])
	}
	// The plain 272-byte query has no room for entries and still succeeds.
	out = r.mustCmd(in(prm.CmdOpQueryNICVportContext, 0, 16), 272)
	if get(out, v.AllowedListSize.At(qb)) != 2 {
		t.Fatal("plain query: list size")
	}
	out = r.mustCmd(in(prm.CmdOpQueryNICVportContext, 0, 16, prm.QueryNICVportContextIn.AllowedListType, prm.NICVportListVLAN), int(qe.End()/8)+64)
	if get(out, v.AllowedListType.At(qb)) != prm.NICVportListVLAN || get(out, v.AllowedListSize.At(qb)) != 2 || get(out, qe.At(64)) != 100 {
		t.Fatal("VLAN list")
	}
	if n := get(r.mustCmd(in(prm.CmdOpQueryNICVportContext, 0, 16, prm.QueryNICVportContextIn.AllowedListType, prm.NICVportListMC), 272), v.AllowedListSize.At(qb)); n != 0 {
		t.Fatalf("MC list has %d entries", n)
	}
	// Limits: log_max_current_uc_list 4 → 16 entries; type 3 does not exist.
	many := make([]uint64, 17)
	r.wantStatus(set(prm.NICVportListUC, many...), 16, prm.StatusBadParamErr)
	r.wantStatus(set(3, 1), 16, prm.StatusBadParamErr)
	r.wantStatus(in(prm.CmdOpQueryNICVportContext, 0, 16, prm.QueryNICVportContextIn.AllowedListType, 3), 272, prm.StatusBadParamErr)
	// A short input for the entries it announces.
	short := set(prm.NICVportListUC, macs...)
	r.wantStatus(short[:len(short)-8], 16, prm.StatusBadInpLenErr)
}

// TestPortChangeEvents: the port's operational state changes — a wire connected or removed,
// PAOS admin status on a wired port — are reported with PORT_CHANGE EQEs (sub-type ACTIVE or
// DOWN, port 1), what mlx5e updates its carrier on; a change that leaves the state as it was
// reports nothing.
func TestPortChangeEvents(t *testing.T) {
	r := newReady(t, model.Config{})
	eq := r.createEQ(r.uar, 6, prm.EventTypePortChange)
	want := func(sub int) {
		t.Helper()
		e := eq.next()
		if e == nil || prm.EQE.EventType.Get(e) != uint64(prm.EventTypePortChange) || prm.EQE.EventSubType.Get(e) != uint64(sub) ||
			prm.EQEPortState.Port.Get(prm.EQE.EventData.Slice(e))>>4 != 1 {
			t.Fatalf("want PORT_CHANGE sub-type %d, got % x", sub, e)
		}
		if eq.next() != nil {
			t.Fatal("more than one EQE")
		}
	}
	r.d.SetWire(func([]byte) {})
	want(prm.PortChangeActive)
	r.d.SetWire(func([]byte) {}) // still wired: nothing
	if eq.next() != nil {
		t.Fatal("an event for an unchanged state")
	}
	mustReg(t, r, prm.RegPAOS, true, 16, prm.PAOS.LocalPort, 1, prm.PAOS.AdminStatus, prm.PortDown, prm.PAOS.ASE, 1)
	want(prm.PortChangeDown)
	r.d.SetWire(nil) // down already: nothing
	if eq.next() != nil {
		t.Fatal("an event for an unchanged state")
	}
	mustReg(t, r, prm.RegPAOS, true, 16, prm.PAOS.LocalPort, 1, prm.PAOS.AdminStatus, prm.PortUp, prm.PAOS.ASE, 1)
	if eq.next() != nil {
		t.Fatal("admin up without a wire reported the link up")
	}
	r.d.Cable(r.d)
	want(prm.PortChangeActive)
}

// TestRealTimeClockRegisters: MCAM says MTUTC exists and the real-time clock may be modified
// (what mlx5_core checks before setting it at init); MTUTC SET_TIME_IMMEDIATE sets the
// real-time clock the init segment reports, ADJUST_TIME steps it, the free-running timer is
// not touched; a bad operation, nanoseconds ≥ 1e9 and a read are refused.
func TestRealTimeClockRegisters(t *testing.T) {
	r := newReady(t, model.Config{Realtime: true})
	m, u := prm.MCAM, prm.MTUTC
	caps := mustReg(t, r, prm.RegMCAM, false, 72)
	if get(caps, m.MTUTC) != 1 || get(caps, m.PTPCyc2RealtimeModify) != 1 {
		t.Fatalf("MCAM group 0: mtutc %d, ptpcyc2realtime_modify %d", get(caps, m.MTUTC), get(caps, m.PTPCyc2RealtimeModify))
	}
	if other := mustReg(t, r, prm.RegMCAM, false, 72, m.AccessRegGroup, 1, m.FeatureGroup, 1); get(other, m.MTUTC) != 0 || get(other, m.PTPCyc2RealtimeModify) != 0 {
		t.Fatal("MCAM group 1 claims group 0's bits")
	}
	read := func(h, l prm.Field) int64 {
		var b [8]byte
		r.d.BAR0().ReadAt(b[:4], int64(h.ByteOff()))
		r.d.BAR0().ReadAt(b[4:], int64(l.ByteOff()))
		v := uint64(b[0])<<56 | uint64(b[1])<<48 | uint64(b[2])<<40 | uint64(b[3])<<32 | uint64(b[4])<<24 | uint64(b[5])<<16 | uint64(b[6])<<8 | uint64(b[7])
		if h == prm.InitSeg.RealTimeH {
			return int64(v>>32)*1e9 + int64(v&0xffffffff)
		}
		return int64(v)
	}
	timer0 := read(prm.InitSeg.InternalTimerH, prm.InitSeg.InternalTimerL)
	want := time.Now().UnixNano()
	mustReg(t, r, prm.RegMTUTC, true, 28, u.Operation, prm.MTUTCSetTimeImmediate, u.UTCSec, uint64(want/1e9), u.UTCNsec, uint64(want%1e9))
	if got := read(prm.InitSeg.RealTimeH, prm.InitSeg.RealTimeL); got < want || got > want+int64(time.Second) {
		t.Fatalf("real time after SET_TIME_IMMEDIATE to %d: %d", want, got)
	}
	before := read(prm.InitSeg.RealTimeH, prm.InitSeg.RealTimeL)
	step := int32(-20000)
	adj := uint64(uint32(step))
	mustReg(t, r, prm.RegMTUTC, true, 28, u.Operation, prm.MTUTCAdjustTime, u.TimeAdjustment, adj)
	if after := read(prm.InitSeg.RealTimeH, prm.InitSeg.RealTimeL); after > before+int64(time.Second)-20000 || after < before-20000-int64(time.Second) {
		t.Fatalf("ADJUST_TIME -20 µs: %d → %d", before, after)
	}
	if timer := read(prm.InitSeg.InternalTimerH, prm.InitSeg.InternalTimerL); timer < timer0 || timer > timer0+int64(10*time.Second) {
		t.Fatalf("the free-running timer moved from %d to %d with the real-time clock", timer0, timer)
	}
	wantRegStatus(t, r, prm.StatusBadParamErr, prm.RegMTUTC, true, 28, u.Operation, 7)
	wantRegStatus(t, r, prm.StatusBadParamErr, prm.RegMTUTC, true, 28, u.Operation, prm.MTUTCSetTimeImmediate, u.UTCNsec, 1_000_000_000)
	wantRegStatus(t, r, prm.StatusBadParamErr, prm.RegMTUTC, false, 28)
}
