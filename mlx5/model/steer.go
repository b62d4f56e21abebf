package model

import (
	"github.com/daqiri-go/daqiri/mlx5/model/internal/datapath"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// RSS and steering commands: RQT, TIR, TIS, flow tables, groups and entries, packet
// reformat contexts, pacing indexes and flow counters.

func steeringHandler(op prm.CmdOp) handler {
	switch op {
	case prm.CmdOpCreateRQT:
		return (*Device).createRQT
	case prm.CmdOpModifyRQT:
		return (*Device).modifyRQT
	case prm.CmdOpQueryRQT:
		return (*Device).queryRQT
	case prm.CmdOpDestroyRQT:
		return (*Device).destroyRQT
	case prm.CmdOpCreateTIR:
		return (*Device).createTIR
	case prm.CmdOpModifyTIR:
		return (*Device).modifyTIR
	case prm.CmdOpQueryTIR:
		return (*Device).queryTIR
	case prm.CmdOpDestroyTIR:
		return (*Device).destroyTIR
	case prm.CmdOpCreateTIS:
		return (*Device).createTIS
	case prm.CmdOpQueryTIS:
		return (*Device).queryTIS
	case prm.CmdOpDestroyTIS:
		return (*Device).destroyTIS
	case prm.CmdOpCreateFlowTable:
		return (*Device).createFlowTable
	case prm.CmdOpQueryFlowTable:
		return (*Device).queryFlowTable
	case prm.CmdOpModifyFlowTable:
		return (*Device).modifyFlowTable
	case prm.CmdOpDestroyFlowTable:
		return (*Device).destroyFlowTable
	case prm.CmdOpSetFlowTableRoot:
		return (*Device).setFlowTableRoot
	case prm.CmdOpCreateFlowGroup:
		return (*Device).createFlowGroup
	case prm.CmdOpDestroyFlowGroup:
		return (*Device).destroyFlowGroup
	case prm.CmdOpSetFlowTableEntry:
		return (*Device).setFTE
	case prm.CmdOpQueryFlowTableEntry:
		return (*Device).queryFTE
	case prm.CmdOpDeleteFlowTableEntry:
		return (*Device).deleteFTE
	case prm.CmdOpAllocFlowCounter:
		return (*Device).allocFlowCounter
	case prm.CmdOpQueryFlowCounter:
		return (*Device).queryFlowCounter
	case prm.CmdOpDeallocFlowCounter:
		return (*Device).deallocFlowCounter
	case prm.CmdOpAllocPacketReformatContext:
		return (*Device).allocReformat
	case prm.CmdOpDeallocPacketReformatContext:
		return (*Device).deallocReformat
	case prm.CmdOpSetPPRateLimit:
		return (*Device).setPacing
	}
	return ibHandler(op)
}

// decodeRQT reads an rqtc at base: rqt_max_size (at most 1 << log_max_rqt_size),
// rqt_actual_size (at most the max) and the RQ numbers, each an existing RQ.
func (d *Device) decodeRQT(c *cmd, base uint32, what string, maxSz uint64) ([]uint32, error) {
	r := prm.RQTC
	if err := c.need(ins(r.RQTActualSize.At(base))); err != nil {
		return nil, err
	}
	n := c.get(r.RQTActualSize.At(base))
	if lim := uint64(d.capLimit(prm.CmdHCACap.LogMaxRQTSize)); maxSz == 0 || maxSz > lim {
		return nil, badParam("%s: rqt_max_size %d outside 1..%d (log_max_rqt_size)", what, maxSz, lim)
	}
	if n == 0 || n > maxSz {
		return nil, badParam("%s: rqt_actual_size %d outside 1..rqt_max_size %d", what, n, maxSz)
	}
	if err := c.need(ins(r.RQNum.At(base + uint32(n-1)*r.RQNum.Width))); err != nil {
		return nil, err
	}
	rqns := make([]uint32, n)
	for i := range rqns {
		rqns[i] = uint32(c.get(prm.RQNum.RQNum.At(base + r.RQNum.Off + uint32(i)*r.RQNum.Width)))
		if !d.objs.rqs.has(rqns[i], c.uid) {
			return nil, noObject("%s: entry %d: RQ %d does not exist", what, i, rqns[i])
		}
	}
	return rqns, nil
}

func (d *Device) createRQT(c *cmd) error {
	in := prm.CreateRQTIn
	if err := c.need(ins(in.RQTContext), prm.CreateRQTOut.RQTN); err != nil {
		return err
	}
	maxSz := c.get(prm.RQTC.RQTMaxSize.At(in.RQTContext.Off))
	rqns, err := d.decodeRQT(c, in.RQTContext.Off, "CREATE_RQT", maxSz)
	if err != nil {
		return err
	}
	n, err := d.objs.rqts.alloc(c.uid, d.capLimit(prm.CmdHCACap.LogMaxRQT))
	if err != nil {
		return err
	}
	if err := d.dp().CreateRQT(datapath.RQTParams{RQTN: n, RQNs: rqns}); err != nil {
		d.objs.rqts.free(n)
		return err
	}
	d.objs.rqtMax[n] = uint32(maxSz)
	c.set(prm.CreateRQTOut.RQTN, uint64(n))
	return nil
}

// modifyRQT replaces the RQ list (bitmask bit 0, rqn_list, is the only field it has).
func (d *Device) modifyRQT(c *cmd) error {
	in := prm.ModifyRQTIn
	if err := c.need(ins(in.Ctx)); err != nil {
		return err
	}
	n := uint32(c.get(in.RQTN))
	if !d.objs.rqts.owns(n, c.uid) {
		return noObject("MODIFY_RQT: RQT %d does not exist", n)
	}
	if c.get(in.Bitmask)&1 == 0 {
		return nil
	}
	// The size limit is the one the RQT was created with: the kernel's MODIFY_RQT sets only
	// rqt_actual_size and the list (en/rqt.c mlx5e_rqt_redirect), where the model asked for
	// rqt_max_size again until then. A different non-zero rqt_max_size is refused.
	maxSz := uint64(d.objs.rqtMax[n])
	if m := c.get(prm.RQTC.RQTMaxSize.At(in.Ctx.Off)); m != 0 && m != maxSz {
		return badParam("MODIFY_RQT: rqt_max_size %d; RQT %d was created with %d", m, n, maxSz)
	}
	rqns, err := d.decodeRQT(c, in.Ctx.Off, "MODIFY_RQT", maxSz)
	if err != nil {
		return err
	}
	return d.dp().ModifyRQT(n, rqns)
}

func (d *Device) queryRQT(c *cmd) error {
	out := prm.QueryRQTOut
	base := out.RQTContext.Off
	if err := c.need(ins(prm.QueryRQTIn.RQTN), out.RQTContext); err != nil {
		return err
	}
	n := uint32(c.get(prm.QueryRQTIn.RQTN))
	if !d.objs.rqts.has(n, c.uid) {
		return noObject("QUERY_RQT: RQT %d does not exist", n)
	}
	p, err := d.dp().QueryRQT(n)
	if err != nil {
		return err
	}
	r := prm.RQTC
	last := r.RQNum.At(base + uint32(max(len(p.RQNs), 1)-1)*r.RQNum.Width)
	if err := c.need(nil, last); err != nil {
		return err
	}
	c.set(r.RQTMaxSize.At(base), uint64(d.objs.rqtMax[n]))
	c.set(r.RQTActualSize.At(base), uint64(len(p.RQNs)))
	for i, rq := range p.RQNs {
		c.set(prm.RQNum.RQNum.At(base+r.RQNum.Off+uint32(i)*r.RQNum.Width), uint64(rq))
	}
	return nil
}

func (d *Device) destroyRQT(c *cmd) error {
	if err := c.need(ins(prm.DestroyRQTIn.RQTN)); err != nil {
		return err
	}
	n := uint32(c.get(prm.DestroyRQTIn.RQTN))
	if !d.objs.rqts.owns(n, c.uid) {
		return noObject("DESTROY_RQT: RQT %d does not exist", n)
	}
	if err := d.dp().DestroyRQT(n); err != nil {
		return err
	}
	delete(d.objs.rqtMax, n)
	d.objs.rqts.free(n)
	return nil
}

// decodeTIR reads a tirc at base: direct (inline_rqn) or indirect (indirect_table, hash
// function, Toeplitz key, outer and inner field selectors), and the transport domain.
func (d *Device) decodeTIR(c *cmd, base uint32, what string) (datapath.TIRParams, error) {
	t := prm.TIRC
	p := datapath.TIRParams{
		Indirect:  c.get(t.DispType.At(base)) == prm.TIRDispIndirect,
		InlineRQ:  uint32(c.get(t.InlineRQN.At(base))),
		RQT:       uint32(c.get(t.IndirectTable.At(base))),
		HashFn:    uint8(c.get(t.RXHashFn.At(base))),
		Symmetric: c.get(t.RXHashSymmetric.At(base)) != 0,
		Tunneled:  c.get(t.TunneledOffloadEn.At(base)) != 0,
		TD:        uint32(c.get(t.TransportDomain.At(base))),
		SelfLB:    uint8(c.get(t.SelfLBBlock.At(base))),
	}
	if m := c.get(prm.TIRCPacketMergeMask.At(base)); m != 0 {
		return p, fail(prm.StatusBadParamErr, SyndromeNotModelled, "%s: packet_merge_mask %#x: LRO is not modelled (the caps report lro_cap 0)", what, m)
	}
	if disp := c.get(t.DispType.At(base)); disp > prm.TIRDispIndirect {
		return p, badParam("%s: disp_type %d", what, disp)
	}
	// Transport domain 0 is none (ALLOC_TRANSPORT_DOMAIN never hands it out): the TIR
	// belongs to no domain, and self-loopback blocking, which works by domain, has none to
	// match. Inferred from DPDK 22.11's mlx5 driver, which creates its drop queue's TIR with
	// transport_domain 0 before it has allocated one (drivers/net/mlx5, at probe) and runs
	// on ConnectX firmware that takes it; the PRM defines no other meaning for 0.
	if p.TD != 0 && !d.objs.tds.has(p.TD, c.uid) {
		return p, noObject("%s: transport domain %d does not exist", what, p.TD)
	}
	if !p.Indirect {
		if !d.objs.rqs.has(p.InlineRQ, c.uid) {
			return p, noObject("%s: inline_rqn %d does not exist", what, p.InlineRQ)
		}
		return p, nil
	}
	if !d.objs.rqts.has(p.RQT, c.uid) {
		return p, noObject("%s: indirect_table %d does not exist", what, p.RQT)
	}
	if err := decodeHash(c, base, &p, what); err != nil {
		return p, err
	}
	return p, nil
}

// decodeHash reads an indirect TIR's hash: function, symmetry, Toeplitz key and the outer and
// inner field selectors (what MODIFY_TIR's hash bitmask bit selects).
func decodeHash(c *cmd, base uint32, p *datapath.TIRParams, what string) error {
	t := prm.TIRC
	p.HashFn = uint8(c.get(t.RXHashFn.At(base)))
	p.Symmetric = c.get(t.RXHashSymmetric.At(base)) != 0
	if p.HashFn > prm.RXHashFnToeplitz {
		return badParam("%s: rx_hash_fn %d", what, p.HashFn)
	}
	for i := range 10 {
		v := c.get(t.RXHashToeplitzKey.At(base + uint32(i)*32))
		p.Key[4*i], p.Key[4*i+1], p.Key[4*i+2], p.Key[4*i+3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
	}
	sel := func(f prm.Field) datapath.HashFields {
		b := base + f.Off
		s := prm.RXHashFieldSelect
		return datapath.HashFields{
			IPv6:     c.get(s.L3ProtType.At(b)) == prm.L3ProtIPv6,
			UDP:      c.get(s.L4ProtType.At(b)) == prm.L4ProtUDP,
			Selected: uint32(c.get(s.SelectedFields.At(b))),
		}
	}
	p.Outer = sel(t.RXHashFieldSelectorOuter)
	p.Inner = sel(t.RXHashFieldSelectorInner)
	return nil
}

func (d *Device) createTIR(c *cmd) error {
	in := prm.CreateTIRIn
	if err := c.need(ins(in.Ctx), prm.CreateTIROut.TIRN); err != nil {
		return err
	}
	p, err := d.decodeTIR(c, in.Ctx.Off, "CREATE_TIR")
	if err != nil {
		return err
	}
	n, err := d.objs.tirs.alloc(c.uid, d.capLimit(prm.CmdHCACap.LogMaxTIR))
	if err != nil {
		return err
	}
	p.TIRN = n
	if err := d.dp().CreateTIR(p); err != nil {
		d.objs.tirs.free(n)
		return err
	}
	if p.TD != 0 {
		d.objs.tdRefs[p.TD]++
	}
	d.objs.tirTD[n] = p.TD
	c.set(prm.CreateTIROut.TIRN, uint64(n))
	return nil
}

// modifyTIR changes the context fields the bitmask selects (mlx5_ifc.h modify_tir_bitmask):
// hash (function, symmetry, key and field selectors of an indirect TIR), self_lb_en
// (self_lb_block) and packet_merge (LRO, not modelled: only "off" is taken). The rest of the
// context in the command is ignored, as the kernel fills only the selected fields
// (en_common.c mlx5e_refresh_tirs sends self_lb_en with an otherwise empty context; en/tir.c
// mlx5e_tir_builder_build_rss the hash fields alone).
func (d *Device) modifyTIR(c *cmd) error {
	in := prm.ModifyTIRIn
	if err := c.need(ins(in.Ctx)); err != nil {
		return err
	}
	n := uint32(c.get(in.TIRN))
	if !d.objs.tirs.owns(n, c.uid) {
		return noObject("MODIFY_TIR: TIR %d does not exist", n)
	}
	b := prm.ModifyTIRBitmask
	var known uint64
	for _, f := range []prm.Field{b.SelfLBEn, b.Hash, b.PacketMerge} {
		known |= 1 << (in.Bitmask.End() - f.End())
	}
	mask := c.get(in.Bitmask)
	if mask&^known != 0 {
		return badParam("MODIFY_TIR: bitmask %#x selects fields beyond self_lb_en, hash and packet_merge (%#x)", mask, known)
	}
	if mask == 0 {
		return nil
	}
	p, err := d.dp().QueryTIR(n)
	if err != nil {
		return err
	}
	base := in.Ctx.Off
	if c.get(b.PacketMerge) != 0 {
		if m := c.get(prm.TIRCPacketMergeMask.At(base)); m != 0 {
			return fail(prm.StatusBadParamErr, SyndromeNotModelled, "MODIFY_TIR: packet_merge_mask %#x: LRO is not modelled (the caps report lro_cap 0)", m)
		}
	}
	if c.get(b.Hash) != 0 {
		if !p.Indirect {
			return badParam("MODIFY_TIR: hash selected for direct TIR %d", n)
		}
		if err := decodeHash(c, base, &p, "MODIFY_TIR"); err != nil {
			return err
		}
	}
	if c.get(b.SelfLBEn) != 0 {
		p.SelfLB = uint8(c.get(prm.TIRC.SelfLBBlock.At(base)))
	}
	return d.dp().ModifyTIR(p)
}

func (d *Device) queryTIR(c *cmd) error {
	out := prm.QueryTIROut
	base := out.TIRContext.Off
	if err := c.need(ins(prm.QueryTIRIn.TIRN), out.TIRContext); err != nil {
		return err
	}
	n := uint32(c.get(prm.QueryTIRIn.TIRN))
	if !d.objs.tirs.has(n, c.uid) {
		return noObject("QUERY_TIR: TIR %d does not exist", n)
	}
	p, err := d.dp().QueryTIR(n)
	if err != nil {
		return err
	}
	t := prm.TIRC
	c.set(t.DispType.At(base), b2u(p.Indirect))
	c.set(t.InlineRQN.At(base), uint64(p.InlineRQ))
	c.set(t.IndirectTable.At(base), uint64(p.RQT))
	c.set(t.RXHashFn.At(base), uint64(p.HashFn))
	c.set(t.RXHashSymmetric.At(base), b2u(p.Symmetric))
	c.set(t.TunneledOffloadEn.At(base), b2u(p.Tunneled))
	c.set(t.TransportDomain.At(base), uint64(p.TD))
	c.set(t.SelfLBBlock.At(base), uint64(p.SelfLB))
	for i := range 10 {
		k := p.Key[4*i:]
		c.set(t.RXHashToeplitzKey.At(base+uint32(i)*32), uint64(k[0])<<24|uint64(k[1])<<16|uint64(k[2])<<8|uint64(k[3]))
	}
	for _, s := range []struct {
		f prm.Field
		h datapath.HashFields
	}{{t.RXHashFieldSelectorOuter, p.Outer}, {t.RXHashFieldSelectorInner, p.Inner}} {
		b := base + s.f.Off
		c.set(prm.RXHashFieldSelect.L3ProtType.At(b), b2u(s.h.IPv6))
		c.set(prm.RXHashFieldSelect.L4ProtType.At(b), b2u(s.h.UDP))
		c.set(prm.RXHashFieldSelect.SelectedFields.At(b), uint64(s.h.Selected))
	}
	return nil
}

func (d *Device) destroyTIR(c *cmd) error {
	if err := c.need(ins(prm.DestroyTIRIn.TIRN)); err != nil {
		return err
	}
	n := uint32(c.get(prm.DestroyTIRIn.TIRN))
	if !d.objs.tirs.owns(n, c.uid) {
		return noObject("DESTROY_TIR: TIR %d does not exist", n)
	}
	if err := d.dp().DestroyTIR(n); err != nil {
		return err
	}
	if td := d.objs.tirTD[n]; td != 0 {
		d.objs.tdRefs[td]--
	}
	delete(d.objs.tirTD, n)
	d.objs.tirs.free(n)
	return nil
}

func (d *Device) createTIS(c *cmd) error {
	in := prm.CreateTISIn
	base := in.Ctx.Off
	if err := c.need(ins(in.Ctx), prm.CreateTISOut.TISN); err != nil {
		return err
	}
	p := datapath.TISParams{
		Prio: uint8(c.get(prm.TISC.Prio.At(base))),
		TD:   uint32(c.get(prm.TISC.TransportDomain.At(base))),
	}
	if !d.objs.tds.has(p.TD, c.uid) {
		return noObject("CREATE_TIS: transport domain %d does not exist", p.TD)
	}
	n, err := d.objs.tiss.alloc(c.uid, d.capLimit(prm.CmdHCACap.LogMaxTIS))
	if err != nil {
		return err
	}
	p.TISN = n
	if err := d.dp().CreateTIS(p); err != nil {
		d.objs.tiss.free(n)
		return err
	}
	d.objs.tdRefs[p.TD]++
	d.objs.tisTD[n] = p.TD
	c.set(prm.CreateTISOut.TISN, uint64(n))
	return nil
}

func (d *Device) queryTIS(c *cmd) error {
	out := prm.QueryTISOut
	base := out.TISContext.Off
	if err := c.need(ins(prm.QueryTISIn.TISN), out.TISContext); err != nil {
		return err
	}
	n := uint32(c.get(prm.QueryTISIn.TISN))
	if !d.objs.tiss.has(n, c.uid) {
		return noObject("QUERY_TIS: TIS %d does not exist", n)
	}
	p, err := d.dp().QueryTIS(n)
	if err != nil {
		return err
	}
	c.set(prm.TISC.Prio.At(base), uint64(p.Prio))
	c.set(prm.TISC.TransportDomain.At(base), uint64(p.TD))
	return nil
}

func (d *Device) destroyTIS(c *cmd) error {
	if err := c.need(ins(prm.DestroyTISIn.TISN)); err != nil {
		return err
	}
	n := uint32(c.get(prm.DestroyTISIn.TISN))
	if !d.objs.tiss.owns(n, c.uid) {
		return noObject("DESTROY_TIS: TIS %d does not exist", n)
	}
	if err := d.dp().DestroyTIS(n); err != nil {
		return err
	}
	d.objs.tdRefs[d.objs.tisTD[n]]--
	delete(d.objs.tisTD, n)
	d.objs.tiss.free(n)
	return nil
}

// matchParam copies the defined part of an fte_match_param (up to misc_parameters_5; the
// rest of the 0x200-byte field is reserved in mlx5_ifc.h).
func matchParam(b []byte) []byte {
	return append([]byte(nil), b[:min(len(b), int(prm.FTEMatchParam.MiscParameters5.End()/8))]...)
}

// tableType checks a table_type: NIC RX or NIC TX, the tables the model has.
func tableType(c *cmd, f prm.Field) (uint8, error) {
	t := c.get(f)
	if t != prm.FlowTableNICRX && t != prm.FlowTableNICTX {
		return 0, fail(prm.StatusBadParamErr, SyndromeNotModelled, "%v: table_type %d; the model has NIC RX (0) and NIC TX (1) tables", c.op, t)
	}
	return uint8(t), nil
}

// flowProp is a flow-table property of the table type's cap page.
func (d *Device) flowProp(typ uint8, f prm.Field) uint64 {
	base := prm.FlowTableNICCap.FlowTablePropertiesNICReceive.Off
	if typ == prm.FlowTableNICTX {
		base = prm.FlowTableNICCap.FlowTablePropertiesNICTransmit.Off
	}
	return d.capGet(prm.CapTypeFlowTable, f.At(base))
}

func (d *Device) createFlowTable(c *cmd) error {
	in := prm.CreateFlowTableIn
	base := in.FlowTableContext.Off
	ft := prm.FlowTableContext
	if err := c.need(ins(in.FlowTableContext), prm.CreateFlowTableOut.TableID); err != nil {
		return err
	}
	typ, err := tableType(c, in.TableType)
	if err != nil {
		return err
	}
	p := datapath.FlowTableParams{
		Type:       typ,
		Level:      uint8(c.get(ft.Level.At(base))),
		LogSize:    uint8(c.get(ft.LogSize.At(base))),
		MissAction: uint8(c.get(ft.TableMissAction.At(base))),
		MissTable:  uint32(c.get(ft.TableMissID.At(base))),
	}
	if m := d.flowProp(typ, prm.FlowTablePropLayout.LogMaxFTSize); uint64(p.LogSize) > m {
		return badParam("CREATE_FLOW_TABLE: log_size %d above log_max_ft_size %d", p.LogSize, m)
	}
	if m := d.flowProp(typ, prm.FlowTablePropLayout.MaxFTLevel); uint64(p.Level) > m {
		return badParam("CREATE_FLOW_TABLE: level %d above max_ft_level %d", p.Level, m)
	}
	switch p.MissAction {
	case prm.FlowTableMissDefault:
	case prm.FlowTableMissFwd:
		if !d.objs.tables.has(p.MissTable, c.uid) {
			return noObject("CREATE_FLOW_TABLE: table_miss_id %d does not exist", p.MissTable)
		}
	default:
		return badParam("CREATE_FLOW_TABLE: table_miss_action %d", p.MissAction)
	}
	n, err := d.objs.tables.alloc(c.uid, 1<<d.flowProp(typ, prm.FlowTablePropLayout.LogMaxFTNum))
	if err != nil {
		return err
	}
	p.ID = n
	if err := d.dp().CreateFlowTable(p); err != nil {
		d.objs.tables.free(n)
		return err
	}
	c.set(prm.CreateFlowTableOut.TableID, uint64(n))
	return nil
}

// modifyFlowTable changes a table's miss action and miss table (modify_field_select bit 0,
// mlx5_ifc.h MLX5_MODIFY_FLOW_TABLE_MISS_TABLE_ID); other selections are not modelled.
func (d *Device) modifyFlowTable(c *cmd) error {
	in := prm.ModifyFlowTableIn
	base := in.FlowTableContext.Off
	ft := prm.FlowTableContext
	if err := c.need(ins(in.FlowTableContext)); err != nil {
		return err
	}
	typ, err := tableType(c, in.TableType)
	if err != nil {
		return err
	}
	n := uint32(c.get(in.TableID))
	if !d.objs.tables.owns(n, c.uid) {
		return noObject("MODIFY_FLOW_TABLE: table %d does not exist", n)
	}
	if sel := c.get(in.ModifyFieldSelect); sel != prm.ModifyFlowTableMissTableID {
		return fail(prm.StatusBadParamErr, SyndromeNotModelled, "MODIFY_FLOW_TABLE: modify_field_select %#x (only the miss table is modelled)", sel)
	}
	p, err := d.dp().QueryFlowTable(typ, n)
	if err != nil {
		return err
	}
	p.MissAction = uint8(c.get(ft.TableMissAction.At(base)))
	p.MissTable = uint32(c.get(ft.TableMissID.At(base)))
	switch p.MissAction {
	case prm.FlowTableMissDefault:
	case prm.FlowTableMissFwd:
		if !d.objs.tables.has(p.MissTable, c.uid) || p.MissTable == n {
			return noObject("MODIFY_FLOW_TABLE: table_miss_id %d does not exist (or is the table itself)", p.MissTable)
		}
	default:
		return badParam("MODIFY_FLOW_TABLE: table_miss_action %d", p.MissAction)
	}
	return d.dp().ModifyFlowTable(p)
}

func (d *Device) queryFlowTable(c *cmd) error {
	in, out := prm.QueryFlowTableIn, prm.QueryFlowTableOut
	base := out.FlowTableContext.Off
	if err := c.need(ins(in.TableID), out.FlowTableContext); err != nil {
		return err
	}
	typ, err := tableType(c, in.TableType)
	if err != nil {
		return err
	}
	n := uint32(c.get(in.TableID))
	if !d.objs.tables.has(n, c.uid) {
		return noObject("QUERY_FLOW_TABLE: table %d does not exist", n)
	}
	p, err := d.dp().QueryFlowTable(typ, n)
	if err != nil {
		return err
	}
	ft := prm.FlowTableContext
	c.set(ft.Level.At(base), uint64(p.Level))
	c.set(ft.LogSize.At(base), uint64(p.LogSize))
	c.set(ft.TableMissAction.At(base), uint64(p.MissAction))
	c.set(ft.TableMissID.At(base), uint64(p.MissTable))
	return nil
}

func (d *Device) destroyFlowTable(c *cmd) error {
	in := prm.DestroyFlowTableIn
	if err := c.need(ins(in.TableID)); err != nil {
		return err
	}
	typ, err := tableType(c, in.TableType)
	if err != nil {
		return err
	}
	n := uint32(c.get(in.TableID))
	if !d.objs.tables.owns(n, c.uid) {
		return noObject("DESTROY_FLOW_TABLE: table %d does not exist", n)
	}
	if err := d.dp().DestroyFlowTable(typ, n); err != nil {
		return err
	}
	d.objs.tables.free(n)
	return nil
}

func (d *Device) setFlowTableRoot(c *cmd) error {
	in := prm.SetFlowTableRootIn
	if err := c.need(ins(in.TableID)); err != nil {
		return err
	}
	typ, err := tableType(c, in.TableType)
	if err != nil {
		return err
	}
	if c.opMod > 1 {
		return badOpMod(c, "neither connect (0) nor disconnect (1)")
	}
	if c.opMod == 1 {
		// Disconnect: the type has no root table any more (kernel fs_cmd.c
		// mlx5_cmd_update_root_ft sets op_mod 1 and table_id 0 to disconnect).
		return d.dp().ClearRoot(typ)
	}
	n := uint32(c.get(in.TableID))
	if !d.objs.tables.has(n, c.uid) {
		return noObject("SET_FLOW_TABLE_ROOT: table %d does not exist", n)
	}
	return d.dp().SetRoot(typ, n)
}

func (d *Device) createFlowGroup(c *cmd) error {
	in := prm.CreateFlowGroupIn
	if err := c.need(ins(in.MatchCriteria), prm.CreateFlowGroupOut.GroupID); err != nil {
		return err
	}
	typ, err := tableType(c, in.TableType)
	if err != nil {
		return err
	}
	p := datapath.FlowGroupParams{
		Type:           typ,
		Table:          uint32(c.get(in.TableID)),
		Start:          uint32(c.get(in.StartFlowIndex)),
		End:            uint32(c.get(in.EndFlowIndex)),
		CriteriaEnable: uint8(c.get(in.MatchCriteriaEnable)),
		Criteria:       matchParam(in.MatchCriteria.Slice(c.in)),
	}
	if !d.objs.tables.has(p.Table, c.uid) {
		return noObject("CREATE_FLOW_GROUP: table %d does not exist", p.Table)
	}
	if p.End < p.Start {
		return badParam("CREATE_FLOW_GROUP: end_flow_index %d before start_flow_index %d", p.End, p.Start)
	}
	n, err := d.objs.groups.alloc(c.uid, 1<<24)
	if err != nil {
		return err
	}
	p.ID = n
	if err := d.dp().CreateFlowGroup(p); err != nil {
		d.objs.groups.free(n)
		return err
	}
	c.set(prm.CreateFlowGroupOut.GroupID, uint64(n))
	return nil
}

func (d *Device) destroyFlowGroup(c *cmd) error {
	in := prm.DestroyFlowGroupIn
	if err := c.need(ins(in.GroupID)); err != nil {
		return err
	}
	typ, err := tableType(c, in.TableType)
	if err != nil {
		return err
	}
	n := uint32(c.get(in.GroupID))
	if !d.objs.groups.owns(n, c.uid) {
		return noObject("DESTROY_FLOW_GROUP: group %d does not exist", n)
	}
	if err := d.dp().DestroyFlowGroup(typ, uint32(c.get(in.TableID)), n); err != nil {
		return err
	}
	d.objs.groups.free(n)
	return nil
}

// setFTE is SET_FLOW_TABLE_ENTRY: the flow context's group, action bits, flow tag, reformat
// id, match value and destination list (dest_format_struct entries, then flow counters,
// packed prm.DestEntryBits apart, as kernel fs_cmd.c lays them out).
func (d *Device) setFTE(c *cmd) error {
	in := prm.SetFTEIn
	fc := prm.FlowContext
	base := in.FlowContext.Off
	if err := c.need(ins(fc.MatchValue.At(base))); err != nil {
		return err
	}
	typ, err := tableType(c, in.TableType)
	if err != nil {
		return err
	}
	p := datapath.FTEParams{
		Type:     typ,
		Table:    uint32(c.get(in.TableID)),
		Index:    uint32(c.get(in.FlowIndex)),
		Group:    uint32(c.get(fc.GroupID.At(base))),
		Action:   uint32(c.get(fc.Action.At(base))),
		FlowTag:  uint32(c.get(fc.FlowTag.At(base))),
		Reformat: uint32(c.get(fc.PacketReformatID.At(base))),
		PushVLAN: uint32(c.get(fc.PushVLAN.At(base))),
		Value:    matchParam(fc.MatchValue.At(base).Slice(c.in)),
	}
	if !d.objs.tables.has(p.Table, c.uid) {
		return noObject("SET_FLOW_TABLE_ENTRY: table %d does not exist", p.Table)
	}
	if !d.objs.groups.has(p.Group, c.uid) {
		return noObject("SET_FLOW_TABLE_ENTRY: group %d does not exist", p.Group)
	}
	nd := c.get(fc.DestinationListSize.At(base))
	nc := c.get(fc.FlowCounterListSize.At(base))
	if lim := uint64(1) << d.flowProp(typ, prm.FlowTablePropLayout.LogMaxDestination); nd > lim || nc > lim {
		return badParam("SET_FLOW_TABLE_ENTRY: %d destinations and %d counters; at most %d each (log_max_destination)", nd, nc, lim)
	}
	if p.Action&prm.FlowActionFwdDest != 0 && nd == 0 {
		return badParam("SET_FLOW_TABLE_ENTRY: forward action with an empty destination list")
	}
	if p.Action&prm.FlowActionCount != 0 && nc == 0 {
		return badParam("SET_FLOW_TABLE_ENTRY: count action without a flow counter")
	}
	if p.Action&prm.FlowActionPacketReformat != 0 && !d.objs.reformats.has(p.Reformat, c.uid) {
		return noObject("SET_FLOW_TABLE_ENTRY: packet reformat %d does not exist", p.Reformat)
	}
	// Entries are packed 0x40 bits apart (prm.DestEntryBits), as fs_cmd.c mlx5_cmd_set_fte
	// writes them; the model used the 0x80-bit width of the union flow_context declares
	// until the kernel's 840-byte SET_FLOW_TABLE_ENTRY showed the stride. Extended entries
	// (per-destination reformat) are not modelled.
	if c.get(fc.ExtendedDestination.At(base)) != 0 {
		return fail(prm.StatusBadParamErr, SyndromeNotModelled, "SET_FLOW_TABLE_ENTRY: extended_destination is not modelled")
	}
	slot := prm.DestEntryBits
	if nd+nc > 0 {
		last := prm.DestFormatStruct.DestinationEswitchOwnerVHCAID.At(base + fc.Destination.Off + uint32(nd+nc-1)*slot)
		if err := c.need(ins(last)); err != nil {
			return err
		}
	}
	df := prm.DestFormatStruct
	for i := uint64(0); i < nd; i++ {
		b := base + fc.Destination.Off + uint32(i)*slot
		dst := datapath.Dest{Type: uint8(c.get(df.DestinationType.At(b))), ID: uint32(c.get(df.DestinationID.At(b)))}
		switch dst.Type {
		case prm.FlowDestTIR:
			if !d.objs.tirs.has(dst.ID, c.uid) {
				return noObject("SET_FLOW_TABLE_ENTRY: destination %d: TIR %d does not exist", i, dst.ID)
			}
		case prm.FlowDestFlowTable:
			if !d.objs.tables.has(dst.ID, c.uid) {
				return noObject("SET_FLOW_TABLE_ENTRY: destination %d: table %d does not exist", i, dst.ID)
			}
		case prm.FlowDestVport:
		default:
			return fail(prm.StatusBadParamErr, SyndromeNotModelled, "SET_FLOW_TABLE_ENTRY: destination %d: type %d is not modelled (vport, flow table, TIR are)", i, dst.Type)
		}
		p.Dests = append(p.Dests, dst)
	}
	for i := uint64(0); i < nc; i++ {
		b := base + fc.Destination.Off + uint32(nd+i)*slot
		id := uint32(c.get(prm.FlowCounterList.FlowCounterID.At(b)))
		if !d.objs.counters.has(id, c.uid) {
			return noObject("SET_FLOW_TABLE_ENTRY: flow counter %d does not exist", id)
		}
		p.Counters = append(p.Counters, id)
	}
	return d.dp().SetFTE(p)
}

func (d *Device) queryFTE(c *cmd) error {
	in, out := prm.QueryFTEIn, prm.QueryFTEOut
	base := out.FlowContext.Off
	fc := prm.FlowContext
	if err := c.need(ins(in.FlowIndex), fc.MatchValue.At(base)); err != nil {
		return err
	}
	typ, err := tableType(c, in.TableType)
	if err != nil {
		return err
	}
	p, err := d.dp().QueryFTE(typ, uint32(c.get(in.TableID)), uint32(c.get(in.FlowIndex)))
	if err != nil {
		return err
	}
	slot := prm.DestEntryBits
	if n := len(p.Dests) + len(p.Counters); n > 0 {
		if err := c.need(nil, prm.DestFormatStruct.DestinationEswitchOwnerVHCAID.At(base+fc.Destination.Off+uint32(n-1)*slot)); err != nil {
			return err
		}
	}
	c.set(fc.GroupID.At(base), uint64(p.Group))
	c.set(fc.Action.At(base), uint64(p.Action))
	c.set(fc.FlowTag.At(base), uint64(p.FlowTag))
	c.set(fc.PacketReformatID.At(base), uint64(p.Reformat))
	c.set(fc.DestinationListSize.At(base), uint64(len(p.Dests)))
	c.set(fc.FlowCounterListSize.At(base), uint64(len(p.Counters)))
	copy(fc.MatchValue.At(base).Slice(c.out), p.Value)
	for i, dst := range p.Dests {
		b := base + fc.Destination.Off + uint32(i)*slot
		c.set(prm.DestFormatStruct.DestinationType.At(b), uint64(dst.Type))
		c.set(prm.DestFormatStruct.DestinationID.At(b), uint64(dst.ID))
	}
	for i, id := range p.Counters {
		c.set(prm.FlowCounterList.FlowCounterID.At(base+fc.Destination.Off+uint32(len(p.Dests)+i)*slot), uint64(id))
	}
	return nil
}

func (d *Device) deleteFTE(c *cmd) error {
	in := prm.DeleteFTEIn
	if err := c.need(ins(in.FlowIndex)); err != nil {
		return err
	}
	typ, err := tableType(c, in.TableType)
	if err != nil {
		return err
	}
	return d.dp().DeleteFTE(typ, uint32(c.get(in.TableID)), uint32(c.get(in.FlowIndex)))
}

func (d *Device) allocFlowCounter(c *cmd) error {
	if err := c.need(nil, prm.AllocFlowCounterOut.FlowCounterID); err != nil {
		return err
	}
	n, err := d.objs.counters.alloc(c.uid, 1<<d.flowProp(prm.FlowTableNICRX, prm.FlowTablePropLayout.LogMaxFlowCounter))
	if err != nil {
		return err
	}
	if err := d.dp().AllocFlowCounter(n); err != nil {
		d.objs.counters.free(n)
		return err
	}
	c.set(prm.AllocFlowCounterOut.FlowCounterID, uint64(n))
	return nil
}

func (d *Device) queryFlowCounter(c *cmd) error {
	in, out := prm.QueryFlowCounterIn, prm.QueryFlowCounterOut
	if err := c.need(ins(in.FlowCounterID), out.FlowStatistics); err != nil {
		return err
	}
	n := uint32(c.get(in.FlowCounterID))
	if !d.objs.counters.has(n, c.uid) {
		return noObject("QUERY_FLOW_COUNTER: counter %d does not exist", n)
	}
	v, err := d.dp().QueryFlowCounter(n, c.get(in.Clear) != 0)
	if err != nil {
		return err
	}
	b := out.FlowStatistics.Off
	c.set(prm.TrafficCounter.Packets.At(b), v.Packets)
	c.set(prm.TrafficCounter.Octets.At(b), v.Octets)
	return nil
}

func (d *Device) deallocFlowCounter(c *cmd) error {
	in := prm.DeallocFlowCounterIn
	if err := c.need(ins(in.FlowCounterID)); err != nil {
		return err
	}
	n := uint32(c.get(in.FlowCounterID))
	if !d.objs.counters.owns(n, c.uid) {
		return noObject("DEALLOC_FLOW_COUNTER: counter %d does not exist", n)
	}
	if err := d.dp().DeallocFlowCounter(n); err != nil {
		return err
	}
	d.objs.counters.free(n)
	return nil
}

// allocReformat is ALLOC_PACKET_REFORMAT_CONTEXT: type and header bytes (reformat_data
// continues into more_reformat_data; size at most max_encap_header_size).
func (d *Device) allocReformat(c *cmd) error {
	in := prm.AllocPacketReformatContextIn
	base := in.PacketReformatContext.Off
	r := prm.PacketReformatContextIn
	if err := c.need(ins(r.ReformatDataSize.At(base)), prm.AllocPacketReformatContextOut.PacketReformatID); err != nil {
		return err
	}
	typ := uint8(c.get(r.ReformatType.At(base)))
	size := c.get(r.ReformatDataSize.At(base))
	switch typ {
	case prm.ReformatL2ToVXLAN, prm.ReformatL2ToNVGRE, prm.ReformatL2ToL2Tunnel, prm.ReformatL2ToL3Tunnel:
		if m := d.capGet(prm.CapTypeFlowTable, prm.FlowTableNICCap.MaxEncapHeaderSize); size == 0 || size > m {
			return badParam("ALLOC_PACKET_REFORMAT_CONTEXT: reformat_data_size %d outside 1..%d (max_encap_header_size)", size, m)
		}
	case prm.ReformatL3TunnelToL2:
	default:
		return fail(prm.StatusBadParamErr, SyndromeNotModelled, "ALLOC_PACKET_REFORMAT_CONTEXT: reformat_type %d is not modelled", typ)
	}
	start := r.ReformatData.At(base).ByteOff()
	if start+int(size) > len(c.in) {
		return fail(prm.StatusBadInpLenErr, SyndromeBadLength, "ALLOC_PACKET_REFORMAT_CONTEXT: %d header bytes past the input's end", size)
	}
	n, err := d.objs.reformats.alloc(c.uid, 1<<d.capGet(prm.CapTypeFlowTable, prm.FlowTableNICCap.LogMaxPacketReformatContext))
	if err != nil {
		return err
	}
	p := datapath.ReformatParams{ID: n, Type: typ, Data: append([]byte(nil), c.in[start:start+int(size)]...)}
	if err := d.dp().AllocReformat(p); err != nil {
		d.objs.reformats.free(n)
		return err
	}
	c.set(prm.AllocPacketReformatContextOut.PacketReformatID, uint64(n))
	return nil
}

func (d *Device) deallocReformat(c *cmd) error {
	in := prm.DeallocPacketReformatContextIn
	if err := c.need(ins(in.PacketReformatID)); err != nil {
		return err
	}
	n := uint32(c.get(in.PacketReformatID))
	if !d.objs.reformats.owns(n, c.uid) {
		return noObject("DEALLOC_PACKET_REFORMAT_CONTEXT: %d does not exist", n)
	}
	if err := d.dp().DeallocReformat(n); err != nil {
		return err
	}
	d.objs.reformats.free(n)
	return nil
}

// setPacing is SET_PP_RATE_LIMIT: a rate-limit index (below packet_pacing_rate_table_size,
// index 0 is "no limit") gets a rate in kb/s within the QoS caps, or 0 to clear it.
func (d *Device) setPacing(c *cmd) error {
	in := prm.SetPPRateLimitIn
	ctx := in.Ctx.Off
	r := prm.SetPPRateLimitContext
	if err := c.need(ins(in.Ctx)); err != nil {
		return err
	}
	idx := uint16(c.get(in.RateLimitIndex))
	rate := c.get(r.RateLimit.At(ctx))
	q := prm.QoSCap
	if idx == 0 || uint64(idx) >= d.capGet(prm.CapTypeQoS, q.PacketPacingRateTableSize) {
		return badParam("SET_RATE_LIMIT: rate_limit_index %d outside 1..%d", idx, d.capGet(prm.CapTypeQoS, q.PacketPacingRateTableSize)-1)
	}
	if rate != 0 && (rate < d.capGet(prm.CapTypeQoS, q.PacketPacingMinRate) || rate > d.capGet(prm.CapTypeQoS, q.PacketPacingMaxRate)) {
		return badParam("SET_RATE_LIMIT: rate %d kb/s outside the caps %d..%d", rate, d.capGet(prm.CapTypeQoS, q.PacketPacingMinRate), d.capGet(prm.CapTypeQoS, q.PacketPacingMaxRate))
	}
	p := datapath.PacingParams{Index: idx, RateKbps: uint32(rate), BurstBytes: uint32(c.get(r.BurstUpperBound.At(ctx)))}
	if err := d.dp().SetPacing(p); err != nil {
		return err
	}
	d.objs.pacing[idx] = rate != 0
	return nil
}
