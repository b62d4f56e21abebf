package datapath

import (
	"encoding/binary"
	"slices"

	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// table is a flow table with its groups and entries.
type table struct {
	p      FlowTableParams
	groups map[uint32]*group
	ftes   map[uint32]*FTEParams // by index
	order  []uint32              // the indexes of ftes, ascending: the lookup order
	refs   int                   // entries and tables forwarding or missing to it
}

type group struct {
	p    FlowGroupParams
	mask []byte // criteria, zero outside the enabled sections, full fte_match_param size
	// idx lists the bytes of mask that are not zero: a lookup compares only those.
	idx  []uint16
	ftes int
	// misc4 is set when the mask uses misc_parameters_4 (flex parser samples, flex.go).
	misc4 bool
}

// newGroup is a group with its effective mask.
func newGroup(p FlowGroupParams) *group {
	g := &group{p: p, mask: effectiveMask(p.CriteriaEnable, p.Criteria)}
	for i, m := range g.mask {
		if m != 0 {
			g.idx = append(g.idx, uint16(i))
		}
	}
	return g
}

// matches reports whether a frame's match parameter (mp, a whole fte_match_param) equals
// an entry's value under the group's mask: maskedEqual over the mask's non-zero bytes.
func (g *group) matches(mp, value []byte) bool {
	if len(mp) < len(g.mask) || len(value) < len(g.mask) {
		return maskedEqual(g.mask, mp, value)
	}
	for _, i := range g.idx {
		if (mp[i]^value[i])&g.mask[i] != 0 {
			return false
		}
	}
	return true
}

var matchParamBytes = int(prm.FTEMatchParam.MiscParameters5.End() / 8)

// sections of fte_match_param by match_criteria_enable bit (mlx5_ifc.h
// MLX5_MATCH_OUTER_HEADERS = 1<<0, MISC = 1<<1, INNER = 1<<2, MISC2 = 1<<3, MISC3 = 1<<4...).
var sections = []prm.Field{
	prm.FTEMatchParam.OuterHeaders, prm.FTEMatchParam.MiscParameters, prm.FTEMatchParam.InnerHeaders,
	prm.FTEMatchParam.MiscParameters2, prm.FTEMatchParam.MiscParameters3,
	prm.FTEMatchParam.MiscParameters4, prm.FTEMatchParam.MiscParameters5,
}

// effectiveMask is the criteria restricted to the enabled sections.
func effectiveMask(enable uint8, criteria []byte) []byte {
	m := make([]byte, matchParamBytes)
	for i, s := range sections {
		if enable&(1<<i) == 0 {
			continue
		}
		for b := s.ByteOff(); b < s.ByteOff()+s.Bytes() && b < len(criteria); b++ {
			m[b] = criteria[b]
		}
	}
	return m
}

func (n *NIC) tableOf(typ uint8, id uint32) (*table, error) {
	if typ > TableNICTX {
		return nil, errf(StatusBadParam, SyndromeBadTable, "flow table type %d not supported (NIC RX 0, NIC TX 1)", typ)
	}
	t := n.tables[typ][id]
	if t == nil {
		return nil, errf(StatusBadParam, SyndromeUnknownID, "no flow table %#x of type %d", id, typ)
	}
	return t, nil
}

// CreateFlowTable makes a flow table of a type (NIC RX or TX).
func (n *NIC) CreateFlowTable(p FlowTableParams) error {
	n.lock()
	defer n.unlock()
	if p.Type > TableNICTX {
		return errf(StatusBadParam, SyndromeBadTable, "CREATE_FLOW_TABLE: table type %d not supported", p.Type)
	}
	if n.tables[p.Type][p.ID] != nil {
		return errf(StatusBadParam, SyndromeDuplicateID, "CREATE_FLOW_TABLE: table %#x exists", p.ID)
	}
	if p.LogSize > 24 {
		return errf(StatusBadParam, SyndromeBadSize, "CREATE_FLOW_TABLE: log_size %d", p.LogSize)
	}
	if err := n.checkMiss(p); err != nil {
		return err
	}
	t := &table{p: p, groups: map[uint32]*group{}, ftes: map[uint32]*FTEParams{}}
	n.tables[p.Type][p.ID] = t
	if p.MissAction == 1 {
		n.tables[p.Type][p.MissTable].refs++
	}
	return nil
}

// checkMiss validates a miss to another table: it must exist and sit at a deeper level
// (firmware forbids loops by requiring a higher level; kernel fs_core.c connects misses to
// the next level so).
func (n *NIC) checkMiss(p FlowTableParams) error {
	if p.MissAction == 0 {
		return nil
	}
	if p.MissAction != 1 {
		return errf(StatusBadParam, SyndromeBadTable, "flow table %#x: table_miss_action %d not supported", p.ID, p.MissAction)
	}
	m := n.tables[p.Type][p.MissTable]
	if m == nil {
		return errf(StatusBadParam, SyndromeUnknownID, "flow table %#x: miss table %#x does not exist", p.ID, p.MissTable)
	}
	if m.p.Level <= p.Level {
		return errf(StatusBadParam, SyndromeBadTable, "flow table %#x at level %d: miss table %#x is at level %d, not deeper", p.ID, p.Level, p.MissTable, m.p.Level)
	}
	return nil
}

// ModifyFlowTable changes a table's miss action (MODIFY_FLOW_TABLE).
func (n *NIC) ModifyFlowTable(p FlowTableParams) error {
	n.lock()
	defer n.unlock()
	t, err := n.tableOf(p.Type, p.ID)
	if err != nil {
		return err
	}
	p.Level, p.LogSize = t.p.Level, t.p.LogSize
	if err := n.checkMiss(p); err != nil {
		return err
	}
	if t.p.MissAction == 1 {
		if m := n.tables[p.Type][t.p.MissTable]; m != nil {
			m.refs--
		}
	}
	if p.MissAction == 1 {
		n.tables[p.Type][p.MissTable].refs++
	}
	t.p.MissAction, t.p.MissTable = p.MissAction, p.MissTable
	return nil
}

// QueryFlowTable reports a table.
func (n *NIC) QueryFlowTable(typ uint8, id uint32) (FlowTableParams, error) {
	n.lock()
	defer n.unlock()
	t, err := n.tableOf(typ, id)
	if err != nil {
		return FlowTableParams{}, err
	}
	return t.p, nil
}

// DestroyFlowTable removes a table; one with groups, the root, or a destination is busy.
func (n *NIC) DestroyFlowTable(typ uint8, id uint32) error {
	n.lock()
	defer n.unlock()
	t, err := n.tableOf(typ, id)
	if err != nil {
		return err
	}
	if len(t.groups) > 0 || t.refs > 0 || (n.hasRoot[typ] && n.roots[typ] == id) {
		return errf(StatusBadResState, SyndromeInUse, "DESTROY_FLOW_TABLE: table %#x has groups, is the root or a destination", id)
	}
	if t.p.MissAction == 1 {
		if m := n.tables[typ][t.p.MissTable]; m != nil {
			m.refs--
		}
	}
	delete(n.tables[typ], id)
	return nil
}

// ClearRoot leaves a type without a root table (SET_FLOW_TABLE_ROOT op_mod 1, disconnect):
// NIC RX drops every frame as a miss again, NIC TX sends every frame to the wire.
func (n *NIC) ClearRoot(typ uint8) error {
	n.lock()
	defer n.unlock()
	if typ > TableNICTX {
		return errf(StatusBadParam, SyndromeBadTable, "SET_FLOW_TABLE_ROOT: table type %d not supported", typ)
	}
	n.hasRoot[typ] = false
	return nil
}

// SetRoot makes a table the root of its type (SET_FLOW_TABLE_ROOT).
func (n *NIC) SetRoot(typ uint8, id uint32) error {
	n.lock()
	defer n.unlock()
	if _, err := n.tableOf(typ, id); err != nil {
		return err
	}
	n.roots[typ], n.hasRoot[typ] = id, true
	return nil
}

// CreateFlowGroup makes a group in a table.
func (n *NIC) CreateFlowGroup(p FlowGroupParams) error {
	n.lock()
	defer n.unlock()
	t, err := n.tableOf(p.Type, p.Table)
	if err != nil {
		return err
	}
	if t.groups[p.ID] != nil {
		return errf(StatusBadParam, SyndromeDuplicateID, "CREATE_FLOW_GROUP: group %#x exists in table %#x", p.ID, p.Table)
	}
	size := uint32(1) << t.p.LogSize
	if p.Start > p.End || p.End >= size {
		return errf(StatusBadParam, SyndromeBadIndex, "CREATE_FLOW_GROUP: index range %d..%d outside table %#x of %d entries", p.Start, p.End, p.Table, size)
	}
	for _, g := range t.groups {
		if p.Start <= g.p.End && g.p.Start <= p.End {
			return errf(StatusBadParam, SyndromeBadIndex, "CREATE_FLOW_GROUP: range %d..%d overlaps group %#x (%d..%d)", p.Start, p.End, g.p.ID, g.p.Start, g.p.End)
		}
	}
	if len(p.Criteria) > matchParamBytes {
		return errf(StatusBadParam, SyndromeBadSize, "CREATE_FLOW_GROUP: %d bytes of match criteria, at most %d", len(p.Criteria), matchParamBytes)
	}
	p.Criteria = append([]byte(nil), p.Criteria...)
	g := newGroup(p)
	g.misc4 = hasMisc4(g.mask)
	t.groups[p.ID] = g
	return nil
}

// QueryFlowGroup reports a group.
func (n *NIC) QueryFlowGroup(typ uint8, table, id uint32) (FlowGroupParams, error) {
	n.lock()
	defer n.unlock()
	t, err := n.tableOf(typ, table)
	if err != nil {
		return FlowGroupParams{}, err
	}
	g := t.groups[id]
	if g == nil {
		return FlowGroupParams{}, errf(StatusBadParam, SyndromeUnknownID, "QUERY_FLOW_GROUP: no group %#x in table %#x", id, table)
	}
	return g.p, nil
}

// DestroyFlowGroup removes a group; one with entries is busy.
func (n *NIC) DestroyFlowGroup(typ uint8, table, id uint32) error {
	n.lock()
	defer n.unlock()
	t, err := n.tableOf(typ, table)
	if err != nil {
		return err
	}
	g := t.groups[id]
	if g == nil {
		return errf(StatusBadParam, SyndromeUnknownID, "DESTROY_FLOW_GROUP: no group %#x in table %#x", id, table)
	}
	if g.ftes > 0 {
		return errf(StatusBadResState, SyndromeInUse, "DESTROY_FLOW_GROUP: group %#x has %d entries", id, g.ftes)
	}
	delete(t.groups, id)
	return nil
}

// SetFTE sets (creates or replaces) a flow table entry at an index of a group's range.
func (n *NIC) SetFTE(p FTEParams) error {
	n.lock()
	defer n.unlock()
	t, err := n.tableOf(p.Type, p.Table)
	if err != nil {
		return err
	}
	g := t.groups[p.Group]
	if g == nil {
		return errf(StatusBadParam, SyndromeUnknownID, "SET_FLOW_TABLE_ENTRY: no group %#x in table %#x", p.Group, p.Table)
	}
	if p.Index < g.p.Start || p.Index > g.p.End {
		return errf(StatusBadParam, SyndromeBadIndex, "SET_FLOW_TABLE_ENTRY: index %d outside group %#x (%d..%d)", p.Index, p.Group, g.p.Start, g.p.End)
	}
	if len(p.Value) > matchParamBytes {
		return errf(StatusBadParam, SyndromeBadSize, "SET_FLOW_TABLE_ENTRY: %d bytes of match value", len(p.Value))
	}
	if p.Action&ActionDrop != 0 && p.Action&(ActionFwdDest|ActionAllow) != 0 {
		return errf(StatusBadParam, SyndromeBadDest, "SET_FLOW_TABLE_ENTRY: drop together with forward/allow")
	}
	if p.Action&(ActionDrop|ActionFwdDest|ActionAllow) == 0 {
		return errf(StatusBadParam, SyndromeBadDest, "SET_FLOW_TABLE_ENTRY: action %#x neither drops, forwards nor allows", p.Action)
	}
	if p.Action&ActionFwdDest != 0 && len(p.Dests) == 0 {
		return errf(StatusBadParam, SyndromeBadDest, "SET_FLOW_TABLE_ENTRY: forward without destinations")
	}
	for _, d := range p.Dests {
		switch d.Type {
		case DestTIR:
			if p.Type != TableNICRX || n.tirs[d.ID] == nil {
				return errf(StatusBadParam, SyndromeBadDest, "SET_FLOW_TABLE_ENTRY: destination TIR %#x does not exist (or table is not NIC RX)", d.ID)
			}
		case DestFlowTable:
			dt := n.tables[p.Type][d.ID]
			if dt == nil || dt.p.Level <= t.p.Level {
				return errf(StatusBadParam, SyndromeBadDest, "SET_FLOW_TABLE_ENTRY: destination table %#x missing or not deeper than level %d", d.ID, t.p.Level)
			}
		case DestVport:
			if p.Type != TableNICTX {
				return errf(StatusBadParam, SyndromeBadDest, "SET_FLOW_TABLE_ENTRY: vport destination only on NIC TX in the model")
			}
		default:
			return errf(StatusBadParam, SyndromeBadDest, "SET_FLOW_TABLE_ENTRY: destination type %d not supported", d.Type)
		}
	}
	if p.Action&ActionCount != 0 {
		for _, c := range p.Counters {
			if n.fcounters[c] == nil {
				return errf(StatusBadParam, SyndromeUnknownID, "SET_FLOW_TABLE_ENTRY: no flow counter %#x", c)
			}
		}
	}
	if p.Action&ActionReformat != 0 && n.reformats[p.Reformat] == nil {
		return errf(StatusBadParam, SyndromeUnknownID, "SET_FLOW_TABLE_ENTRY: no packet reformat context %#x", p.Reformat)
	}
	// Entries of one group with equal masked values would be ambiguous; firmware rejects
	// the duplicate (kernel fs_core.c merges such rules before they reach it).
	val := make([]byte, matchParamBytes)
	copy(val, p.Value)
	for i, o := range t.ftes {
		if i != p.Index && o.Group == p.Group && maskedEqual(g.mask, o.Value, val) {
			return errf(StatusBadParam, SyndromeDuplicateID, "SET_FLOW_TABLE_ENTRY: index %d duplicates the match of index %d", p.Index, i)
		}
	}
	if old := t.ftes[p.Index]; old != nil {
		n.unref(p.Type, old)
	} else {
		g.ftes++
		i, _ := slices.BinarySearch(t.order, p.Index)
		t.order = slices.Insert(t.order, i, p.Index)
	}
	p.Value = val
	p.Dests = append([]Dest(nil), p.Dests...)
	p.Counters = append([]uint32(nil), p.Counters...)
	cp := p
	t.ftes[p.Index] = &cp
	n.ref(p.Type, &cp)
	return nil
}

func (n *NIC) ref(typ uint8, f *FTEParams) { n.refDelta(typ, f, 1) }

func (n *NIC) unref(typ uint8, f *FTEParams) { n.refDelta(typ, f, -1) }

// refDelta keeps the objects an entry points to busy while it exists.
func (n *NIC) refDelta(typ uint8, f *FTEParams, d int) {
	for _, dst := range f.Dests {
		switch dst.Type {
		case DestFlowTable:
			if t := n.tables[typ][dst.ID]; t != nil {
				t.refs += d
			}
		case DestTIR:
			if t := n.tirs[dst.ID]; t != nil {
				t.refs += d
			}
		}
	}
}

func maskedEqual(mask, a, b []byte) bool {
	for i := range mask {
		var x, y byte
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if (x^y)&mask[i] != 0 {
			return false
		}
	}
	return true
}

// QueryFTE reports an entry.
func (n *NIC) QueryFTE(typ uint8, table, index uint32) (FTEParams, error) {
	n.lock()
	defer n.unlock()
	t, err := n.tableOf(typ, table)
	if err != nil {
		return FTEParams{}, err
	}
	f := t.ftes[index]
	if f == nil {
		return FTEParams{}, errf(StatusBadParam, SyndromeUnknownID, "QUERY_FLOW_TABLE_ENTRY: no entry %d in table %#x", index, table)
	}
	return *f, nil
}

// DeleteFTE removes an entry.
func (n *NIC) DeleteFTE(typ uint8, table, index uint32) error {
	n.lock()
	defer n.unlock()
	t, err := n.tableOf(typ, table)
	if err != nil {
		return err
	}
	f := t.ftes[index]
	if f == nil {
		return errf(StatusBadParam, SyndromeUnknownID, "DELETE_FLOW_TABLE_ENTRY: no entry %d in table %#x", index, table)
	}
	n.unref(typ, f)
	if g := t.groups[f.Group]; g != nil {
		g.ftes--
	}
	delete(t.ftes, index)
	if i, ok := slices.BinarySearch(t.order, index); ok {
		t.order = slices.Delete(t.order, i, i+1)
	}
	return nil
}

// AllocFlowCounter makes a flow counter.
func (n *NIC) AllocFlowCounter(id uint32) error {
	n.lock()
	defer n.unlock()
	if n.fcounters[id] != nil {
		return errf(StatusBadParam, SyndromeDuplicateID, "ALLOC_FLOW_COUNTER: counter %#x exists", id)
	}
	n.fcMu.Lock()
	n.fcounters[id] = &FlowCounter{}
	n.fcMu.Unlock()
	return nil
}

// QueryFlowCounter reads (and optionally clears) a flow counter. It takes the counters' own
// lock only, not the port's (see fcMu).
func (n *NIC) QueryFlowCounter(id uint32, clear bool) (FlowCounter, error) {
	n.fcMu.Lock()
	defer n.fcMu.Unlock()
	c := n.fcounters[id]
	if c == nil {
		return FlowCounter{}, errf(StatusBadParam, SyndromeUnknownID, "QUERY_FLOW_COUNTER: no counter %#x", id)
	}
	v := *c
	if clear {
		*c = FlowCounter{}
	}
	return v, nil
}

// DeallocFlowCounter removes a flow counter; one an entry counts into is busy.
func (n *NIC) DeallocFlowCounter(id uint32) error {
	n.lock()
	defer n.unlock()
	if n.fcounters[id] == nil {
		return errf(StatusBadParam, SyndromeUnknownID, "DEALLOC_FLOW_COUNTER: no counter %#x", id)
	}
	for typ := range n.tables {
		for _, t := range n.tables[typ] {
			for _, f := range t.ftes {
				for _, c := range f.Counters {
					if c == id {
						return errf(StatusBadResState, SyndromeInUse, "DEALLOC_FLOW_COUNTER: counter %#x used by table %#x entry %d", id, t.p.ID, f.Index)
					}
				}
			}
		}
	}
	n.fcMu.Lock()
	delete(n.fcounters, id)
	n.fcMu.Unlock()
	return nil
}

// AllocReformat makes a packet reformat context. The model performs encapsulations
// (prepending Data); decapsulation types are accepted and strip the outer headers up to the
// inner Ethernet frame when the packet is tunneled.
func (n *NIC) AllocReformat(p ReformatParams) error {
	n.lock()
	defer n.unlock()
	if n.reformats[p.ID] != nil {
		return errf(StatusBadParam, SyndromeDuplicateID, "ALLOC_PACKET_REFORMAT_CONTEXT: context %#x exists", p.ID)
	}
	if p.Type > 4 {
		return errf(StatusBadParam, SyndromeBadFormat, "ALLOC_PACKET_REFORMAT_CONTEXT: reformat type %d not supported", p.Type)
	}
	if p.Type != 3 && (len(p.Data) == 0 || len(p.Data) > 256) {
		return errf(StatusBadParam, SyndromeBadSize, "ALLOC_PACKET_REFORMAT_CONTEXT: %d bytes of header data (1..256)", len(p.Data))
	}
	p.Data = append([]byte(nil), p.Data...)
	n.reformats[p.ID] = &p
	return nil
}

// DeallocReformat removes a reformat context; one an entry uses is busy.
func (n *NIC) DeallocReformat(id uint32) error {
	n.lock()
	defer n.unlock()
	if n.reformats[id] == nil {
		return errf(StatusBadParam, SyndromeUnknownID, "DEALLOC_PACKET_REFORMAT_CONTEXT: no context %#x", id)
	}
	for typ := range n.tables {
		for _, t := range n.tables[typ] {
			for _, f := range t.ftes {
				if f.Action&ActionReformat != 0 && f.Reformat == id {
					return errf(StatusBadResState, SyndromeInUse, "DEALLOC_PACKET_REFORMAT_CONTEXT: context %#x used by table %#x entry %d", id, t.p.ID, f.Index)
				}
			}
		}
	}
	delete(n.reformats, id)
	return nil
}

// verdict is where steering sends a frame.
type verdict struct {
	drop    bool
	tir     uint32
	haveTIR bool
	flowTag uint32
	frame   []byte
	pkt     *packet // the frame parsed, when steering parsed it
	miss    bool
	wire    bool // NIC TX: on to the wire
	// rewritten: a header action changed the frame (the RX decision cache does not keep
	// the decision: it holds for the frame's key only without one).
	rewritten bool
	// flex: a group matching flex parser samples was met (the walk read bytes of the frame
	// beyond its parse).
	flex bool
}

// steer walks the tables of a type from the root: the first entry (lowest index) whose
// group's masked criteria equal the frame's masked fields decides; a miss goes to the miss
// table or takes the default (drop on NIC RX, pass on NIC TX; PRM table_miss_action 0).
func (n *NIC) steer(typ uint8, f []byte) verdict {
	v := verdict{frame: f}
	n.steerCounted = n.steerCounted[:0]
	if !n.hasRoot[typ] {
		v.miss = true
		v.wire = typ == TableNICTX
		v.drop = typ == TableNICRX
		return v
	}
	t := n.tables[typ][n.roots[typ]]
	// The frame is parsed and laid out into the NIC's own packet and match parameter of
	// the table type (a Step steers one frame at a time; a frame steered on RX keeps its
	// packet until it is delivered, before the next RX frame is steered).
	pkt := &n.steerPkt[typ]
	parseInto(pkt, f)
	v.pkt = pkt
	if len(n.steerMP[typ]) != matchParamBytes {
		n.steerMP[typ] = make([]byte, matchParamBytes)
	}
	mp := pkt.matchParamInto(n.steerMP[typ])
	var fx *flexMatch // the frame's flex samples, made when a misc4 group is met
	for hops := 0; t != nil && hops < 64; hops++ {
		fte := t.lookup(mp, func() *flexMatch {
			v.flex = true
			if fx == nil {
				fx = newFlexMatch(n, pkt, mp)
			}
			return fx
		})
		if fte == nil {
			if t.p.MissAction == 1 {
				t = n.tables[typ][t.p.MissTable]
				continue
			}
			v.miss = true
			v.wire = typ == TableNICTX
			v.drop = typ == TableNICRX
			return v
		}
		if len(fte.Counters) > 0 && fte.Action&ActionCount != 0 {
			n.fcMu.Lock()
			for _, c := range fte.Counters {
				if fc := n.fcounters[c]; fc != nil {
					fc.Packets++
					fc.Octets += uint64(len(v.frame))
					n.steerCounted = append(n.steerCounted, fc)
				}
			}
			n.fcMu.Unlock()
		}
		if fte.FlowTag != 0 {
			v.flowTag = fte.FlowTag
		}
		if a := fte.Action & (ActionDecap | ActionVLANPop | ActionVLANPush | ActionReformat); a != 0 && fte.Action&ActionDrop == 0 {
			// The header actions in the order a frame meets them: decapsulation, VLAN pop,
			// VLAN push, then the reformat (encapsulation on TX adds the outer headers last,
			// so a pushed tag is inside the tunnel; inferred from flow_table_prop_layout's
			// reformat_and_vlan_action, which allows both on one entry).
			f := v.frame
			if a&ActionDecap != 0 {
				f = decapL2(f, pkt)
			}
			if a&ActionVLANPop != 0 {
				f = popVLAN(f)
			}
			if a&ActionVLANPush != 0 {
				f = pushVLAN(f, fte.PushVLAN)
			}
			if a&ActionReformat != 0 {
				if r := n.reformats[fte.Reformat]; r != nil {
					f = reformat(r, f, parse(f))
				}
			}
			v.frame, v.rewritten = f, true
			parseInto(pkt, v.frame)
			mp = pkt.matchParamInto(mp)
			fx = nil
		}
		if fte.Action&ActionDrop != 0 {
			v.drop = true
			return v
		}
		if fte.Action&ActionAllow != 0 && fte.Action&ActionFwdDest == 0 {
			v.wire = true
			return v
		}
		var next *table
		for _, d := range fte.Dests {
			switch d.Type {
			case DestTIR:
				if !v.haveTIR {
					v.tir, v.haveTIR = d.ID, true
				}
			case DestFlowTable:
				if next == nil {
					next = n.tables[typ][d.ID]
				}
			case DestVport:
				v.wire = true
			}
		}
		if v.haveTIR || v.wire {
			return v
		}
		t = next
	}
	v.drop = typ == TableNICRX
	v.wire = typ == TableNICTX
	return v
}

func (t *table) lookup(mp []byte, flex func() *flexMatch) *FTEParams {
	for _, i := range t.order {
		f := t.ftes[i]
		g := t.groups[f.Group]
		if g != nil && g.misc4 {
			if flex().equal(g.mask, f.Value) {
				return f
			}
			continue
		}
		if g != nil && g.matches(mp, f.Value) {
			return f
		}
	}
	return nil
}

// reformat applies a packet reformat context: encapsulation prepends the context's header
// bytes (for an L2-to-L3 tunnel the original Ethernet header is removed first); L3-tunnel
// to L2 decapsulation replaces the outer headers with the context's Ethernet header.
func reformat(r *ReformatParams, f []byte, pkt *packet) []byte {
	switch r.Type {
	case 3: // L3 tunnel to L2: the data is the new L2 header, in place of everything up to the inner IP header
		// Only an L3 tunnel (GRE carrying IP) has its inner packet at innerOff.
		if !pkt.tunneled || !pkt.innerL3 || pkt.innerOff <= 0 || pkt.innerOff > len(f) {
			return f
		}
		return append(append([]byte(nil), r.Data...), f[pkt.innerOff:]...)
	case 4: // L2 to L3 tunnel: drop the Ethernet header
		if len(f) < 14 {
			return f
		}
		g := append(append([]byte(nil), r.Data...), f[14:]...)
		fixLengths(g)
		return g
	}
	g := append(append([]byte(nil), r.Data...), f...)
	fixLengths(g)
	return g
}

// decapL2 removes an L2 tunnel's outer headers (VXLAN, NVGRE: flow_context action DECAP):
// the inner Ethernet frame is what remains. A frame that is not such a tunnel is unchanged.
func decapL2(f []byte, pkt *packet) []byte {
	if !pkt.tunneled || pkt.innerL3 || pkt.innerOff <= 0 || pkt.innerOff+14 > len(f) {
		return f
	}
	return append([]byte(nil), f[pkt.innerOff:]...)
}

// popVLAN removes the outermost 802.1Q/802.1ad tag (flow_context action VLAN_POP).
func popVLAN(f []byte) []byte {
	if len(f) < 18 {
		return f
	}
	if et := binary.BigEndian.Uint16(f[12:]); et != etherCVLAN && et != etherSVLAN {
		return f
	}
	return append(append([]byte(nil), f[:12]...), f[16:]...)
}

// pushVLAN inserts a tag after the MAC addresses (flow_context action VLAN_PUSH with
// push_vlan: the TPID in the high 16 bits, the TCI in the low 16; mlx5_ifc.h vlan).
func pushVLAN(f []byte, v uint32) []byte {
	if len(f) < 12 {
		return f
	}
	g := make([]byte, 0, len(f)+4)
	g = append(g, f[:12]...)
	g = binary.BigEndian.AppendUint32(g, v)
	return append(g, f[12:]...)
}

// fixLengths sets the outer IPv4 total length/checksum and UDP length of an encapsulated
// frame, as the device does for the lengths a reformat header cannot know in advance.
func fixLengths(g []byte) {
	h := parseL2(g, 0)
	if h.l3 < 0 || h.ipVersion != 4 {
		return
	}
	binary.BigEndian.PutUint16(g[h.l3+2:], uint16(len(g)-h.l3))
	if h.proto == protoUDP && h.l4 >= 0 {
		binary.BigEndian.PutUint16(g[h.l4+4:], uint16(len(g)-h.l4))
		g[h.l4+6], g[h.l4+7] = 0, 0
	}
	fillChecksums(g, &h, true, false)
}
