package model

import (
	"github.com/daqiri-go/daqiri/mlx5/model/internal/dma"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// Bring-up commands, in the order mlx5_core (main.c mlx5_function_setup) and rdma-core's
// mlx5_vfio.c (mlx5_vfio_setup_function) send them: ENABLE_HCA, QUERY_ISSI, SET_ISSI,
// QUERY_PAGES(boot) + MANAGE_PAGES, ACCESS_REG(host endianness), QUERY_HCA_CAP and
// SET_HCA_CAP, QUERY_PAGES(init) + MANAGE_PAGES, INIT_HCA; TEARDOWN_HCA and page reclaim at
// the end.

// supportedISSI is the bitmask QUERY_ISSI reports: ISSI 0 and 1, the interface step both
// drivers select (they SET_ISSI 1 when bit 1 is set).
const supportedISSI = 0x3

// pageBook accounts the pages the driver gave firmware with MANAGE_PAGES.
type pageBook struct {
	given map[uint64]bool
	want  int32 // regular pages firmware still asks for (RequestPages)
}

func (d *Device) enableHCA(c *cmd) error {
	if err := c.need(ins(prm.EnableHCAIn.FunctionID)); err != nil {
		return err
	}
	if fn := c.get(prm.EnableHCAIn.FunctionID); fn != 0 {
		return badParam("ENABLE_HCA: function_id %d; the model is one physical function (0)", fn)
	}
	if d.state == hcaDisabled {
		d.state = hcaEnabled
	}
	return nil
}

// disableHCA returns the function to reset; firmware forgets its objects and pages (they
// stay the driver's memory, which the driver frees after DISABLE_HCA).
func (d *Device) disableHCA(c *cmd) error {
	d.destroyAll()
	d.state = hcaDisabled
	d.pages = pageBook{given: map[uint64]bool{}}
	d.issi = 0
	return nil
}

func (d *Device) queryISSI(c *cmd) error {
	o := prm.QueryISSIOut
	if err := c.need(nil, o.CurrentISSI, o.SupportedISSIDw0); err != nil {
		return err
	}
	c.set(o.CurrentISSI, uint64(d.issi))
	c.set(o.SupportedISSIDw0, supportedISSI)
	return nil
}

func (d *Device) setISSI(c *cmd) error {
	if err := c.need(ins(prm.SetISSIIn.CurrentISSI)); err != nil {
		return err
	}
	v := c.get(prm.SetISSIIn.CurrentISSI)
	if v > 15 || supportedISSI>>v&1 == 0 {
		return badParam("SET_ISSI: ISSI %d is not supported (bitmask %#x)", v, supportedISSI)
	}
	d.issi = uint16(v)
	return nil
}

// pagesNeeded is what QUERY_PAGES reports for an op_mod: the boot pages, the init pages (the
// boot ones counted in: the kernel gives boot pages, then asks for init pages, then gives
// those), or the regular pages requested since.
func (d *Device) pagesNeeded(opMod uint16) (int32, bool) {
	given := int32(len(d.pages.given))
	switch opMod {
	case prm.QueryPagesBoot:
		return max(d.cfg.BootPages-given, 0), true
	case prm.QueryPagesInit:
		return max(d.cfg.BootPages+d.cfg.InitPages-given, 0), true
	case prm.QueryPagesRegular:
		return d.pages.want, true
	}
	return 0, false
}

func (d *Device) queryPages(c *cmd) error {
	o := prm.QueryPagesOut
	if err := c.need(ins(prm.QueryPagesIn.FunctionID), o.NumPages); err != nil {
		return err
	}
	n, ok := d.pagesNeeded(c.opMod)
	if !ok {
		return badOpMod(c, "not boot (1), init (2) or regular (3)")
	}
	c.set(o.FunctionID, 0)
	c.set(o.NumPages, uint64(uint32(n)))
	return nil
}

// managePages gives pages to firmware (op_mod 1) or takes them back (op_mod 2): firmware
// returns up to input_num_entries pages, and all it holds when asked for more (mlx5_core's
// reclaim loop and release_all_pages), op_mod 0 answers a page request with "cannot give".
// Each given page must be 4 KiB aligned, mapped read/write in the DMA space and not given
// already.
func (d *Device) managePages(c *cmd) error {
	in, out := prm.ManagePagesIn, prm.ManagePagesOut
	if err := c.need(ins(in.InputNumEntries), out.OutputNumEntries); err != nil {
		return err
	}
	n := c.get(in.InputNumEntries)
	pageSize := uint64(1) << prm.AdapterPageShift
	switch c.opMod {
	case prm.ManagePagesCantGive:
		d.pages.want = 0
		return nil
	case prm.ManagePagesGive:
		if n == 0 || n > maxCmdLen/8 {
			return badParam("MANAGE_PAGES give: %d entries", n)
		}
		last := in.PAS.At(uint32(n-1) * 64)
		if err := c.need(ins(last)); err != nil {
			return err
		}
		pages := make([]uint64, n)
		seen := make(map[uint64]bool, n)
		for i := range pages {
			pa := c.get(in.PAS.At(uint32(i) * 64))
			if pa%pageSize != 0 {
				return badParam("MANAGE_PAGES give: page %d at %#x is not %d-byte aligned", i, pa, pageSize)
			}
			if _, err := d.space.Slice(pa, int(pageSize), dma.Read|dma.Write); err != nil {
				return fail(prm.StatusBadParamErr, SyndromeBadMemory, "MANAGE_PAGES give: page %d: %v", i, err)
			}
			if d.pages.given[pa] || seen[pa] {
				return badParam("MANAGE_PAGES give: page %#x given twice", pa)
			}
			seen[pa] = true
			pages[i] = pa
		}
		for _, pa := range pages {
			d.pages.given[pa] = true
		}
		if d.state == hcaInitialized {
			d.pages.want = max(d.pages.want-int32(n), 0)
		}
		return nil
	case prm.ManagePagesTake:
		// The output lists the pages returned; as many as the output has room for.
		room := uint64(0)
		if bits := uint64(len(c.out))*8 - uint64(out.PAS.Off); uint64(len(c.out))*8 > uint64(out.PAS.Off) {
			room = bits / 64
		}
		take := min(n, room, uint64(len(d.pages.given)))
		i := uint64(0)
		for pa := range d.pages.given {
			if i == take {
				break
			}
			c.set(out.PAS.At(uint32(i)*64), pa)
			delete(d.pages.given, pa)
			i++
		}
		c.set(out.OutputNumEntries, i)
		if d.pages.want < 0 {
			d.pages.want = min(d.pages.want+int32(i), 0)
		}
		return nil
	}
	return badOpMod(c, "not cannot-give (0), give (1) or take (2)")
}

// queryHCACap returns a capability page: op_mod bits 15:1 are the type, bit 0 max or current.
func (d *Device) queryHCACap(c *cmd) error {
	o := prm.QueryHCACapOut
	if err := c.need(ins(prm.QueryHCACapIn.FunctionID), o.Capability); err != nil {
		return err
	}
	if c.get(prm.QueryHCACapIn.OtherFunction) != 0 {
		return badParam("QUERY_HCA_CAP: other_function; the model has no other functions")
	}
	cp := d.caps[prm.CapType(c.opMod>>1)]
	if cp == nil {
		// A capability page the model does not have: the kernel asks only for those the
		// general caps enable, so this is a driver asking for a feature the model lacks.
		return fail(prm.StatusBadParamErr, SyndromeNotModelled, "QUERY_HCA_CAP: capability type %v (%#x) is not modelled", prm.CapType(c.opMod>>1), c.opMod>>1)
	}
	src := cp.max
	if c.opMod&1 == prm.CapOpModCur {
		src = cp.cur
	}
	copy(o.Capability.Slice(c.out), src)
	return nil
}

// setHCACap changes the settable general capabilities (see capsSettable), each bounded by
// its maximum; only before INIT_HCA, as firmware takes them at INIT_HCA.
func (d *Device) setHCACap(c *cmd) error {
	in := prm.SetHCACapIn
	if err := c.need(ins(in.Capability)); err != nil {
		return err
	}
	if d.state != hcaEnabled {
		return fail(prm.StatusBadSysStateErr, SyndromeBadState, "SET_HCA_CAP after INIT_HCA")
	}
	t := prm.CapType(c.opMod >> 1)
	cp := d.caps[t]
	if cp == nil {
		return fail(prm.StatusBadParamErr, SyndromeNotModelled, "SET_HCA_CAP: capability type %v (%#x) is not modelled", t, uint16(t))
	}
	if t != prm.CapTypeGeneral {
		return nil // nothing settable there in the model
	}
	page := in.Capability.Slice(c.in)
	for _, f := range capsSettable() {
		v := f.Get(page)
		if m := f.Get(cp.max); v > m && f.Width > 1 {
			return badParam("SET_HCA_CAP: %s = %d above its maximum %d", f.Name, v, m)
		}
		f.Set(cp.cur, v)
	}
	return nil
}

// initHCA needs the boot and init pages given.
func (d *Device) initHCA(c *cmd) error {
	if d.state == hcaInitialized {
		return fail(prm.StatusBadSysStateErr, SyndromeBadState, "INIT_HCA twice")
	}
	if need, _ := d.pagesNeeded(prm.QueryPagesInit); need > 0 {
		return fail(prm.StatusNoResErr, SyndromePages, "INIT_HCA: %d more pages needed (QUERY_PAGES boot+init)", need)
	}
	d.state = hcaInitialized
	return nil
}

// teardownHCA destroys every object and returns to the enabled state; pages stay given until
// reclaimed. The prepare-fast-teardown profile answers state 0 (not failed).
func (d *Device) teardownHCA(c *cmd) error {
	if err := c.need(ins(prm.TeardownHCAIn.Profile), prm.TeardownHCAOut.State); err != nil {
		return err
	}
	switch p := c.get(prm.TeardownHCAIn.Profile); p {
	case prm.TeardownGraceful, prm.TeardownForce, prm.TeardownPrepareFast:
	default:
		return badParam("TEARDOWN_HCA: profile %d", p)
	}
	if d.state != hcaInitialized {
		return fail(prm.StatusBadSysStateErr, SyndromeBadState, "TEARDOWN_HCA before INIT_HCA")
	}
	c.set(prm.TeardownHCAOut.State, 0)
	if c.get(prm.TeardownHCAIn.Profile) == prm.TeardownPrepareFast {
		// Only prepared: the teardown happens when the driver sets the NIC interface to
		// disabled (writeInitSeg). mlx5_core sends this command in events mode on its
		// shutdown path (main.c mlx5_try_fast_unload → fw.c mlx5_cmd_fast_teardown_hca) and
		// waits for its completion EQE; the model destroyed the EQs at once until then, so
		// the kernel timed out and fell back to a forced teardown and an unload that the
		// model refused.
		d.iseg.fastTeardown = true
		return nil
	}
	d.destroyAll()
	d.state = hcaEnabled
	return nil
}

// nicDisabled is the driver setting the NIC interface to disabled (init segment
// cmdq_addr_l_sz bits 10:8 = MLX5_NIC_IFC_DISABLED) after a prepared fast teardown: firmware
// forgets every object, as a teardown does.
func (d *Device) nicDisabled() {
	if !d.iseg.fastTeardown {
		return
	}
	d.iseg.fastTeardown = false
	if d.state == hcaInitialized {
		d.destroyAll()
		d.state = hcaEnabled
	}
}

// queryNICVport returns the vport context: permanent MAC, MTU, promiscuous modes.
func (d *Device) queryNICVport(c *cmd) error {
	in, o := prm.QueryNICVportContextIn, prm.QueryNICVportContextOut
	if err := c.need(ins(in.VportNumber), o.NICVportContext); err != nil {
		return err
	}
	if c.get(in.OtherVport) != 0 && c.get(in.VportNumber) != 0 {
		return badParam("QUERY_NIC_VPORT_CONTEXT: vport %d; the model has vport 0 only", c.get(in.VportNumber))
	}
	base := o.NICVportContext.Off
	v := prm.NICVportContext
	c.set(v.MTU.At(base), uint64(d.mtu))
	c.set(v.PromiscUC.At(base), b2u(d.promisc[0]))
	c.set(v.PromiscMC.At(base), b2u(d.promisc[1]))
	c.set(v.PromiscAll.At(base), b2u(d.promisc[2]))
	mac := v.PermanentAddress.Off + base
	copy(prm.MACAddressLayout.MACAddrHi.At(mac).Slice(c.out), d.mac[:2])
	copy(prm.MACAddressLayout.MACAddrLo.At(mac).Slice(c.out), d.mac[2:6])
	// The list the input's allowed_list_type names (0: unicast), as many entries as the
	// output has room for: the kernel reads the plain context with a 272-byte output that
	// holds none, and a list with an output sized for it (vport.c mlx5_query_nic_vport_mac_list).
	t := c.get(in.AllowedListType)
	if t > prm.NICVportListVLAN {
		return badParam("QUERY_NIC_VPORT_CONTEXT: allowed_list_type %d is not UC (0), MC (1) or VLAN (2)", t)
	}
	list := d.lists[t]
	c.set(v.AllowedListType.At(base), t)
	c.set(v.AllowedListSize.At(base), uint64(len(list)))
	entry := v.CurrentUCMACAddress.At(base)
	for i, e := range list {
		f := entry.At(uint32(i) * entry.Width)
		if !f.In(c.out) {
			break
		}
		c.set(f, e)
	}
	return nil
}

// modifyNICVport applies the fields the field_select bits name: permanent_address, mtu,
// promisc and the address lists; others are accepted and ignored (inferred: the model has no
// RoCE, local loopback control or change events to act on).
func (d *Device) modifyNICVport(c *cmd) error {
	in := prm.ModifyNICVportContextIn
	if err := c.need(ins(in.NICVportContext)); err != nil {
		return err
	}
	if c.get(in.OtherVport) != 0 && c.get(in.VportNumber) != 0 {
		return badParam("MODIFY_NIC_VPORT_CONTEXT: vport %d; the model has vport 0 only", c.get(in.VportNumber))
	}
	sel := in.FieldSelect.Off
	fs := prm.ModifyNICVportFieldSelect
	base := in.NICVportContext.Off
	v := prm.NICVportContext
	if c.get(fs.MTU.At(sel)) != 0 {
		mtu := c.get(v.MTU.At(base))
		if mtu < 68 || mtu > 9978 {
			return badParam("MODIFY_NIC_VPORT_CONTEXT: mtu %d outside 68..9978", mtu)
		}
		d.mtu = uint16(mtu)
	}
	if c.get(fs.PermanentAddress.At(sel)) != 0 {
		mac := v.PermanentAddress.Off + base
		hi := prm.MACAddressLayout.MACAddrHi.At(mac).Slice(c.in)
		lo := prm.MACAddressLayout.MACAddrLo.At(mac).Slice(c.in)
		d.mac = append(append([]byte(nil), hi...), lo...)
	}
	if c.get(fs.Promisc.At(sel)) != 0 {
		d.promisc = [3]bool{c.get(v.PromiscUC.At(base)) != 0, c.get(v.PromiscMC.At(base)) != 0, c.get(v.PromiscAll.At(base)) != 0}
	}
	if c.get(fs.AddressesList.At(sel)) != 0 {
		return d.setVportList(c, base)
	}
	return nil
}

// vportListLimit is how many entries a vport list may hold (cmd_hca_cap
// log_max_current_uc_list, log_max_current_mc_list, log_max_vlan_list).
func (d *Device) vportListLimit(t uint64) int {
	g := prm.CmdHCACap
	f := []prm.Field{g.LogMaxCurrentUCList, g.LogMaxCurrentMCList, g.LogMaxVLANList}[t]
	return d.capLimit(f)
}

// setVportList takes an address list of MODIFY_NIC_VPORT_CONTEXT (field_select
// addresses_list; vport.c mlx5_modify_nic_vport_mac_list and _vlans: allowed_list_type,
// allowed_list_size, then 64-bit entries from current_uc_mac_address[0]). Inferred: the lists
// are kept and reported, not used to filter frames — the model's vport has no eswitch in
// front of it, and mlx5e's L2 flow table filters by address anyway.
func (d *Device) setVportList(c *cmd, base uint32) error {
	v := prm.NICVportContext
	t := c.get(v.AllowedListType.At(base))
	if t > prm.NICVportListVLAN {
		return badParam("MODIFY_NIC_VPORT_CONTEXT: allowed_list_type %d is not UC (0), MC (1) or VLAN (2)", t)
	}
	n := int(c.get(v.AllowedListSize.At(base)))
	if lim := d.vportListLimit(t); n > lim {
		return badParam("MODIFY_NIC_VPORT_CONTEXT: %d list entries of type %d; the caps allow %d", n, t, lim)
	}
	entry := v.CurrentUCMACAddress.At(base)
	if n > 0 {
		if err := c.need(ins(entry.At(uint32(n-1) * entry.Width))); err != nil {
			return err
		}
	}
	list := make([]uint64, n)
	for i := range list {
		list[i] = c.get(entry.At(uint32(i) * entry.Width))
	}
	d.lists[t] = list
	return nil
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// queryVportState reports the vport's administrative state (up) and its operational state:
// up while the port has a wire (a cable, a bridge or a wire function) and PAOS has it
// administratively up, down otherwise (inferred: the model has no PHY, so "link" means
// "connected to something").
func (d *Device) queryVportState(c *cmd) error {
	in, o := prm.QueryVportStateIn, prm.QueryVportStateOut
	if err := c.need(ins(in.VportNumber), o.State); err != nil {
		return err
	}
	if c.get(in.OtherVport) != 0 && c.get(in.VportNumber) != 0 {
		return badParam("QUERY_VPORT_STATE: vport %d; the model has vport 0 only", c.get(in.VportNumber))
	}
	c.set(o.AdminState, prm.VportAdminUp)
	if d.operUp() {
		c.set(o.State, prm.VportStateUp)
	} else {
		c.set(o.State, prm.VportStateDown)
	}
	return nil
}

// queryVportCounter reports the port's traffic in the vport counter layout: the datapath
// counts frames without telling unicast from multicast and broadcast, so all of them are in
// the unicast pair (inferred simplification); errors in received_errors/transmit_errors.
func (d *Device) queryVportCounter(c *cmd) error {
	in, o := prm.QueryVportCounterIn, prm.QueryVportCounterOut
	if err := c.need(ins(in.Clear), o.TransmittedEthUnicast); err != nil {
		return err
	}
	if c.get(in.OtherVport) != 0 && c.get(in.VportNumber) != 0 {
		return badParam("QUERY_VPORT_COUNTER: vport %d; the model has vport 0 only", c.get(in.VportNumber))
	}
	n := d.dp().Counters(c.get(in.Clear) != 0)
	tc := prm.TrafficCounter
	c.set(tc.Packets.At(o.ReceivedEthUnicast.Off), n.RXPackets)
	c.set(tc.Octets.At(o.ReceivedEthUnicast.Off), n.RXBytes)
	c.set(tc.Packets.At(o.TransmittedEthUnicast.Off), n.TXPackets)
	c.set(tc.Octets.At(o.TransmittedEthUnicast.Off), n.TXBytes)
	c.set(tc.Packets.At(o.ReceivedErrors.Off), n.RXErrors)
	c.set(tc.Packets.At(o.TransmitErrors.Off), n.TXErrors)
	return nil
}
