// Package mlx5 is the ConnectX backend of package flow: it compiles flow's neutral rules into
// the NIC's receive steering — TIRs (one direct TIR per RX queue, an indirect TIR over an RQT
// for each flow that spreads over several queues with Toeplitz RSS), one NIC RX flow table
// whose entries match the rules' fields and carry the flow id as the flow tag — and its TX
// transforms into a NIC TX flow table with packet-reformat contexts and VLAN push. Everything
// goes through a channel.Channel, so the same code drives the device model, DevX and VFIO.
// It is a sibling of flow/xdp; the Go reference classifier (flow.Table.Classify) is its
// specification, and its tests run both on the same random frames through the device model.
//
// # How rules become flow-table entries
//
// Rule slot s owns a block of 2×EntriesPerRule consecutive entry indexes of the RX table, so
// the lowest index that matches is the first rule in slot order (the lookup order the device
// model implements within a table; inferred for hardware, where the kernel's fs_core keeps
// overlapping rules apart with priorities in separate tables) and a rule is added or deleted
// without touching the others. A rule uses one half of its block; replacing it writes the new
// rule's entries in the other half before deleting the old ones, so a frame meets the old
// rule or the new one, never neither. A rule becomes one or more entries with the same action: a UDP port range is split
// into prefix masks (a range 1000-1003 is one entry with mask 0xfffc, 1000-1004 two), and a
// source range and a destination range give the cross product; a VLAN-pop rule becomes one
// entry per tag kind (C-VLAN, S-VLAN). Entries with the same mask share a flow group.
//
// Matches follow flow's semantics field for field: IPv4 fields set ip_version 4, IPv6
// addresses ip_version 6 and the 16-byte address fields (outer headers only: flow parses a
// tunnel's inner IPv4 only), UDP ports alone one entry per IP version, MAC addresses the
// outer smac/dmac, UDP ports ip_protocol 17; tunnel rules match the outer headers (UDP 4789 and vxlan_vni; GRE protocol
// 47 with gre_protocol, and for NVGRE gre_k_present and the TNI in gre_key's high 24 bits),
// no outer fragment, and put the IPv4/UDP fields in inner_headers with no inner VLAN tag.
// The actions do the RX transforms in the NIC: VLAN_POP, DECAP for VXLAN and NVGRE (the
// inner Ethernet frame remains), and for GRE an L3_TUNNEL_TO_L2 reformat context whose
// Ethernet header carries the GRE protocol. RSS over several queues is an indirect TIR
// hashing the outer IPv4/UDP 4-tuple (after a decap, the inner one) over a 128-entry RQT
// filled round-robin with the flow's queues, which is flow.RSSIndex; a TIR's field selector
// names one IP version, so an RSS flow that can match IPv6 packets has a second TIR hashing
// the IPv6 4-tuple (its ip_version 6 entries go there), and other frames (no IP header, hash
// 0) take a lower-priority entry to the IPv4 TIR, as flow's zero tuple does.
//
// # TX
//
// TX rules (vlan_push and tunnel_encap, at most one each, the push first) become entries
// of a NIC TX table at the root of NIC TX steering; their actions allow the frame on with
// VLAN_PUSH (flow_context push_vlan) and a packet reformat context holding the outer headers
// flow.Encapsulate writes (L2_TO_VXLAN, L2_TO_NVGRE, L2_TO_L3_TUNNEL for GRE); the device
// fills the outer lengths and IPv4 checksum per packet. The TX table is put at the root with
// SET_FLOW_TABLE_ROOT through Channel.Exec, which the model and VFIO transports run; DevX
// user space may not (the kernel owns NIC TX steering, devx.c devx_is_general_cmd), so there
// New fails with an error matching channel.ErrUnsupported when TxRules are given, and an
// engine applies the TX transforms in software (flow.TxRule.ApplyTX) instead.
//
// Unmatched frames: with flow isolation they miss the table (on the real NIC they go on to
// the kernel's tables; the model counts them as steering misses); otherwise a catch-all entry
// at the table's last index forwards them to the default queue's TIR. DropAll replaces every
// entry's action by drop without changing the matches, so counts per flow stay meaningful.
//
// # What the NIC cannot express
//
// The IPv4 total length, eCPRI's message type and PC_ID/RTC_ID and flex items' payload words
// are programmable sample matches (misc_parameters_4) on the flex parser's samples: a port
// creates the parse-graph nodes its rules need (flex.go). A rule that the fte_match_param
// layout cannot express is refused with an error wrapping ErrNotExpressible that names the
// field: an ipv4_len of a tunnel's inner header (the flex parser samples outer headers),
// VXLAN on a UDP port other than 4789 (the parser recognises VXLAN on the port the device is
// told; the model knows only 4789), and a port range whose prefixes exceed EntriesPerRule.
// Engines report such a flow as unsupported (or steer it in software).
//
// # Where the NIC differs from flow's reference (inferred, and tested as such)
//
//   - A VNI-0 VXLAN rule also takes UDP/4789 frames that lack the VXLAN I flag (vxlan_vni
//     reads 0 for them; flow does not call them VXLAN).
//   - A GRE decap writes a fixed Ethernet header with zero MAC addresses (flow.Decapsulate
//     keeps the outer ones); a VXLAN encap with outer_udp_src 0 uses one fixed source port
//     (flow derives it from each inner flow).
//   - A flex parser node's samples exist only when its whole fixed-length header is in the
//     frame (eCPRI: 8 bytes after the EtherType, where flow needs 2 for the message type and
//     6 for PC_ID) and, after UDP, in the IPv4 packet.
//   - On damaged frames (a tot_len shorter than the frame, a truncated tunnel header) the
//     device model's parser reads to the frame's end where flow reads to tot_len; a first
//     fragment (MF set, offset 0) has no L4 fields on the model, where flow reads its UDP
//     ports. The property test compares intact frames exactly and damaged ones for
//     accounting only.
package mlx5

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"sync"

	"github.com/daqiri-go/daqiri/flow"
	"github.com/daqiri-go/daqiri/mlx5/channel"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// Limits of one port's steering.
const (
	// MaxRules is the number of rule slots (static and dynamic flows), as flow/xdp has.
	MaxRules = 128
	// EntriesPerRule is the size of each slot's block of flow-table entries: a rule whose
	// port ranges split into more prefixes (source × destination, × 2 with vlan_pop) is
	// refused with ErrNotExpressible.
	EntriesPerRule = 128
	// slotSpan is a slot's block: two halves, for make-before-break replacement.
	slotSpan = 2 * EntriesPerRule
	// rqtSize is the RSS indirection table size: flow.RETASize entries filled round-robin
	// with a flow's queues, so the RQT entry (hash mod 128) picks the queue flow.RSSIndex
	// picks.
	rqtSize = flow.RETASize
)

// ErrNotExpressible is wrapped by the error for a rule the NIC's match layout cannot express.
var ErrNotExpressible = errors.New("flow cannot be expressed in the NIC's flow tables")

// ErrClosed is returned by methods of a closed Steering.
var ErrClosed = errors.New("flow/mlx5: steering closed")

// Params describe one port's receive steering.
type Params struct {
	// RQNs are the RQ numbers of the port's RX queues, by queue position (flow.Rule.Queues
	// and DefaultQueue are positions). The RQs must exist. A port without RX queues (none)
	// gets only its TX table, and then needs TxRules.
	RQNs []uint32
	// TD is the transport domain of the TIRs (tir_context.transport_domain).
	TD uint32
	// Isolation: unmatched frames are given to no queue (upstream's flow isolation).
	Isolation bool
	// DefaultQueue is where unmatched frames go without isolation.
	DefaultQueue int
	// DropAll starts with every frame dropped (drop_all_traffic).
	DropAll bool
	// RSSKey is the Toeplitz key (40 bytes); nil means flow.DefaultRSSKey.
	RSSKey []byte
	// Rules are the static rules, installed in slots 0.. in order.
	Rules []*flow.Rule
	// TxRules are the TX transforms (vlan_push, tunnel_encap), matched in order on frames
	// the port's SQs send; none means no NIC TX table is created.
	TxRules []*flow.TxRule
}

// Steering is one port's compiled steering on the device. Its methods are safe for
// concurrent use; traffic keeps flowing while rules change.
type Steering struct {
	mu      sync.Mutex
	ch      channel.Channel
	p       Params
	key     [40]byte
	objs    []channel.Object // TIRs, RQTs, tables, reformats: destroyed in reverse at Close
	tirs    []channel.Object // direct TIR per queue position
	rss     map[string]channel.Object
	l3decap map[uint64]channel.Object // L3_TUNNEL_TO_L2 reformat per GRE protocol
	flex    map[flexWord]*flexNodeOf  // flex parser nodes by arc (offset 0), flex.go
	table   channel.Object
	detach  func() error
	slots   [MaxRules]*slot
	def     *slot // the catch-all entry (no isolation)
	dropAll bool
	tx      *txTable
	closed  bool
	// dropCounter counts the frames every drop entry drops; missCounter, under isolation,
	// the frames no rule took (a catch-all entry that counts and forwards to missTable, an
	// empty table, so they miss exactly where they missed before). Flow counter ids, 0
	// until created.
	dropCounter, missCounter uint32
	dropCtr, missCtr         channel.Object
	missEntry                channel.Object
}

// slot is one installed rule: its entries and their groups.
type slot struct {
	base     uint32 // first entry index: the slot's block, first or second half
	rule     *flow.Rule
	matches  []*match
	tir      uint32
	tir6     uint32 // the IPv6 RSS TIR of a multi-queue rule (its v6 entries' destination)
	reformat uint32 // GRE decap: the L3_TUNNEL_TO_L2 context
	// fwd is the table a hardware reorder plan's slot forwards to instead of a TIR.
	fwd     uint32
	hasFwd  bool
	entries []channel.Object
	groups  []channel.Object
}

// New builds the port's steering on ch: TIRs, RQTs, the RX flow table with its groups and
// entries for p.Rules, attached at the root of NIC RX steering, and the TX table for
// p.TxRules. On error everything created so far is destroyed.
func New(ch channel.Channel, p Params) (*Steering, error) {
	if len(p.RQNs) == 0 && (len(p.Rules) > 0 || len(p.TxRules) == 0) {
		return nil, fmt.Errorf("flow/mlx5: no RX queues to steer to")
	}
	if len(p.RQNs) > 0 && !p.Isolation && (p.DefaultQueue < 0 || p.DefaultQueue >= len(p.RQNs)) {
		return nil, fmt.Errorf("flow/mlx5: default queue %d outside the %d RX queues", p.DefaultQueue, len(p.RQNs))
	}
	if len(p.Rules) > MaxRules {
		return nil, fmt.Errorf("flow/mlx5: %d rules, at most %d", len(p.Rules), MaxRules)
	}
	s := &Steering{ch: ch, p: p, rss: map[string]channel.Object{}, l3decap: map[uint64]channel.Object{}, flex: map[flexWord]*flexNodeOf{}, dropAll: p.DropAll}
	s.p.RQNs = slices.Clone(p.RQNs)
	copy(s.key[:], flow.DefaultRSSKey[:])
	if p.RSSKey != nil {
		if len(p.RSSKey) != len(s.key) {
			return nil, fmt.Errorf("flow/mlx5: RSS key of %d bytes, want %d", len(p.RSSKey), len(s.key))
		}
		copy(s.key[:], p.RSSKey)
	}
	err := s.build()
	if err != nil {
		s.closed = true
		return nil, errors.Join(err, s.teardown())
	}
	return s, nil
}

func (s *Steering) build() error {
	if len(s.p.RQNs) == 0 {
		// A port that only sends: its TX transforms, no receive steering.
		tx, err := newTX(s, s.p.TxRules)
		if err != nil {
			return err
		}
		s.tx = tx
		return nil
	}
	for q, rqn := range s.p.RQNs {
		tir, err := s.createTIR(rqn, "", nil, false)
		if err != nil {
			return fmt.Errorf("flow/mlx5: direct TIR of queue %d (RQ %d): %w", q, rqn, err)
		}
		s.tirs = append(s.tirs, tir)
	}
	logSize := uint64(bits.Len(uint(MaxRules * slotSpan))) // the blocks and the catch-all after them
	t, err := s.createTable(prm.FlowTableNICRX, logSize)
	if err != nil {
		return fmt.Errorf("flow/mlx5: RX flow table: %w", err)
	}
	s.table = t
	if err := s.openCounters(); err != nil {
		return err
	}
	for i, r := range s.p.Rules {
		sl, err := s.install(i, 0, r)
		if err != nil {
			return err
		}
		s.slots[i] = sl
	}
	if !s.p.Isolation {
		if err := s.installDefault(); err != nil {
			return err
		}
	} else if err := s.installMiss(); err != nil {
		return err
	}
	detach, err := s.ch.AttachRoot(t.ID())
	if err != nil {
		return fmt.Errorf("flow/mlx5: attaching the RX table at the root: %w", err)
	}
	s.detach = detach
	if len(s.p.TxRules) > 0 {
		tx, err := newTX(s, s.p.TxRules)
		if err != nil {
			return err
		}
		s.tx = tx
	}
	return nil
}

// create runs a create command of outLen output bytes and keeps the object for Close.
func (s *Steering) create(in []byte, outLen int) (channel.Object, []byte, error) {
	out := make([]byte, outLen)
	o, err := s.ch.Create(in, out)
	if err != nil {
		return nil, nil, err
	}
	s.objs = append(s.objs, o)
	return o, out, nil
}

func outBytes(f prm.Field) int { return max(16, int(f.End()+7)/8) }

// createTIR makes a direct TIR to rqn (queues nil) or an indirect Toeplitz TIR over a new
// RQT that spreads over queues as flow.RSSIndex does.
func (s *Steering) createTIR(rqn uint32, name string, queues []int, v6 bool) (channel.Object, error) {
	tc := prm.TIRC
	base := prm.CreateTIRIn.Ctx.Off
	in := prm.NewCmdIn(prm.CmdOpCreateTIR, 0, int(prm.CreateTIRIn.Ctx.End()/8))
	tc.TransportDomain.At(base).Set(in, uint64(s.p.TD))
	if queues == nil {
		tc.DispType.At(base).Set(in, prm.TIRDispDirect)
		tc.InlineRQN.At(base).Set(in, uint64(rqn))
	} else {
		rqt, err := s.createRQT(queues)
		if err != nil {
			return nil, fmt.Errorf("RQT over queues %s: %w", name, err)
		}
		tc.DispType.At(base).Set(in, prm.TIRDispIndirect)
		tc.IndirectTable.At(base).Set(in, uint64(rqt.ID()))
		tc.RXHashFn.At(base).Set(in, prm.RXHashFnToeplitz)
		copy(in[(base+tc.RXHashToeplitzKey.Off)/8:], s.key[:])
		// Hash the IPv4 (or, v6, the IPv6) 4-tuple of UDP, as flow.Tuple does; frames
		// without it hash their addresses or nothing, as flow's zero ports and zero tuple do.
		sel := base + tc.RXHashFieldSelectorOuter.Off
		hs := prm.RXHashFieldSelect
		if v6 {
			hs.L3ProtType.At(sel).Set(in, prm.L3ProtIPv6)
		} else {
			hs.L3ProtType.At(sel).Set(in, prm.L3ProtIPv4)
		}
		hs.L4ProtType.At(sel).Set(in, prm.L4ProtUDP)
		hs.SelectedFields.At(sel).Set(in, prm.HashFieldSrcIP|prm.HashFieldDstIP|prm.HashFieldL4SPort|prm.HashFieldL4DPort)
	}
	o, _, err := s.create(in, outBytes(prm.CreateTIROut.TIRN))
	if err != nil && queues != nil {
		// The RQT made for it would be an orphan until Close.
		rqt := s.objs[len(s.objs)-1]
		s.objs = s.objs[:len(s.objs)-1]
		err = errors.Join(err, rqt.Destroy())
	}
	return o, err
}

func (s *Steering) createRQT(queues []int) (channel.Object, error) {
	t := prm.RQTC
	base := prm.CreateRQTIn.RQTContext.Off
	in := prm.NewCmdIn(prm.CmdOpCreateRQT, 0, int(t.RQNum.At(base+(rqtSize-1)*32).End()/8))
	t.RQTMaxSize.At(base).Set(in, rqtSize)
	t.RQTActualSize.At(base).Set(in, rqtSize)
	for i := 0; i < rqtSize; i++ {
		prm.RQNum.RQNum.At(base+t.RQNum.Off+uint32(i)*32).Set(in, uint64(s.p.RQNs[queues[i%len(queues)]]))
	}
	o, _, err := s.create(in, outBytes(prm.CreateRQTOut.RQTN))
	return o, err
}

// tableLevel is the level of the tables this package creates. A flow entry may forward only
// to a table of a higher level than its own (the PRM's rule, which mlx5_core enforces too:
// fs_core.c dest_is_valid). Under DevX the kernel's root rule that sends traffic here sits in
// a table of mlx5_ib's bypass namespace, whose levels are its priorities (fs.c
// _get_flow_table: MLX5_BY_PASS_NUM_PRIOS of one level each, 16 in Linux 6.1), so a table of
// level 0 there could never be reached; 16 is above all of them and far below max_ft_level
// (63 on ConnectX-5). Seen in the mlx5 conformance VM: the kernel's SET_FLOW_TABLE_ENTRY
// into a level-0 table was refused.
const tableLevel = 16

func (s *Steering) createTable(typ uint8, logSize uint64) (channel.Object, error) {
	return s.createTableAt(typ, logSize, tableLevel)
}

func (s *Steering) createTableAt(typ uint8, logSize, level uint64) (channel.Object, error) {
	in := prm.NewCmdIn(prm.CmdOpCreateFlowTable, 0, int(prm.CreateFlowTableIn.FlowTableContext.End()/8))
	prm.CreateFlowTableIn.TableType.Set(in, uint64(typ))
	ctx := prm.CreateFlowTableIn.FlowTableContext.Off
	prm.FlowTableContext.LogSize.At(ctx).Set(in, logSize)
	prm.FlowTableContext.Level.At(ctx).Set(in, level)
	o, _, err := s.create(in, outBytes(prm.CreateFlowTableOut.TableID))
	return o, err
}

// tirFor is the TIR a rule's frames go to: the queue's direct TIR, or the RSS TIR of its
// queue list for one IP version (shared by rules with the same list).
func (s *Steering) tirFor(r *flow.Rule, v6 bool) (uint32, error) {
	for _, q := range r.Queues {
		if q < 0 || q >= len(s.p.RQNs) {
			return 0, fmt.Errorf("flow/mlx5: flow %q: queue position %d outside the %d RX queues", r.Name, q, len(s.p.RQNs))
		}
	}
	if len(r.Queues) == 1 {
		return s.tirs[r.Queues[0]].ID(), nil
	}
	name := fmt.Sprint(r.Queues)
	if v6 {
		name += "/ipv6"
	}
	if t := s.rss[name]; t != nil {
		return t.ID(), nil
	}
	t, err := s.createTIR(0, name, r.Queues, v6)
	if err != nil {
		return 0, fmt.Errorf("flow/mlx5: RSS TIR of flow %q: %w", r.Name, err)
	}
	s.rss[name] = t
	return t.ID(), nil
}

// entry is the SET_FLOW_TABLE_ENTRY input of one entry.
type entry struct {
	table    uint32
	typ      uint8
	index    uint32
	group    uint32
	m        *match
	action   uint32
	tag      uint32
	tir      uint32
	hasTIR   bool
	reformat uint32
	vlan     uint32
	// nextTable forwards to another flow table (the miss counter's entry) instead of a TIR.
	nextTable    uint32
	hasNextTable bool
	// counter is a flow counter the entry counts in (action COUNT), 0 for none.
	counter uint32
}

func (e *entry) bytes() []byte {
	fc := prm.FlowContext
	cb := prm.SetFTEIn.FlowContext.Off
	// The destination list holds the destinations, then the flow counters, one
	// dest_format_struct-sized slot each (mlx5_ifc.h flow_context destination[]).
	slots := uint32(1)
	if e.counter != 0 {
		slots++
	}
	in := prm.NewCmdIn(prm.CmdOpSetFlowTableEntry, 0, int(cb+fc.Destination.Off+slots*prm.DestEntryBits)/8)
	prm.SetFTEIn.TableType.Set(in, uint64(e.typ))
	prm.SetFTEIn.TableID.Set(in, uint64(e.table))
	prm.SetFTEIn.FlowIndex.Set(in, uint64(e.index))
	fc.GroupID.At(cb).Set(in, uint64(e.group))
	action := e.action
	if e.counter != 0 {
		action |= prm.FlowActionCount
	}
	fc.Action.At(cb).Set(in, uint64(action))
	fc.FlowTag.At(cb).Set(in, uint64(e.tag))
	fc.PacketReformatID.At(cb).Set(in, uint64(e.reformat))
	fc.PushVLAN.At(cb).Set(in, uint64(e.vlan))
	copy(fc.MatchValue.At(cb).Slice(in), e.m.value)
	nd := uint32(0)
	d := cb + fc.Destination.Off
	switch {
	case e.hasTIR && e.action&prm.FlowActionDrop == 0:
		prm.DestFormatStruct.DestinationType.At(d).Set(in, prm.FlowDestTIR)
		prm.DestFormatStruct.DestinationID.At(d).Set(in, uint64(e.tir))
		nd = 1
	case e.hasNextTable:
		prm.DestFormatStruct.DestinationType.At(d).Set(in, prm.FlowDestFlowTable)
		prm.DestFormatStruct.DestinationID.At(d).Set(in, uint64(e.nextTable))
		nd = 1
	}
	fc.DestinationListSize.At(cb).Set(in, uint64(nd))
	if e.counter != 0 {
		fc.FlowCounterListSize.At(cb).Set(in, 1)
		prm.FlowCounterList.FlowCounterID.At(d+nd*prm.DestEntryBits).Set(in, uint64(e.counter))
	}
	return in
}

// createGroup makes a group of [start, end] in a table with one mask.
func (s *Steering) createGroup(typ uint8, table, start, end uint32, m *match) (channel.Object, error) {
	g := prm.CreateFlowGroupIn
	in := prm.NewCmdIn(prm.CmdOpCreateFlowGroup, 0, int(g.MatchCriteria.End()/8))
	g.TableType.Set(in, uint64(typ))
	g.TableID.Set(in, uint64(table))
	g.StartFlowIndex.Set(in, uint64(start))
	g.EndFlowIndex.Set(in, uint64(end))
	g.MatchCriteriaEnable.Set(in, uint64(m.enable))
	copy(g.MatchCriteria.Slice(in), m.mask)
	out := make([]byte, outBytes(prm.CreateFlowGroupOut.GroupID))
	return s.ch.Create(in, out)
}

// rxAction is a rule entry's action bits: forward (or drop under drop-all) with the rule's
// RX transforms.
func (s *Steering) rxAction(r *flow.Rule) uint32 {
	if s.dropAll {
		return prm.FlowActionDrop
	}
	a := uint32(prm.FlowActionFwdDest)
	if r.VLANPop {
		a |= prm.FlowActionVLANPop
	}
	switch r.Decap {
	case flow.DecapVXLAN, flow.DecapNVGRE:
		a |= prm.FlowActionDecap // L2 tunnels: the inner Ethernet frame remains
	case flow.DecapGRE:
		a |= prm.FlowActionPacketReformat // L3 tunnel: a new Ethernet header replaces the outer headers
	}
	return a
}

// writeEntries creates (or, with modify, rewrites) a slot's entries in its index block.
func (s *Steering) writeEntries(sl *slot, base uint32, modify bool) error {
	gi := 0
	for i, m := range sl.matches {
		if i > 0 && m.key() != sl.matches[i-1].key() {
			gi++
		}
		e := &entry{table: s.table.ID(), typ: prm.FlowTableNICRX, index: base + uint32(i), group: sl.groups[gi].ID(),
			m: m, action: s.rxAction(sl.rule), tag: sl.rule.FlowID & 0xffffff, tir: sl.tir, hasTIR: !s.dropAll}
		if e.action&prm.FlowActionDrop != 0 {
			e.counter = s.dropCounter
		}
		if m.v6 {
			e.tir = sl.tir6
		}
		if sl.hasFwd && !s.dropAll {
			e.hasTIR, e.nextTable, e.hasNextTable = false, sl.fwd, true
		}
		if e.action&prm.FlowActionPacketReformat != 0 {
			e.reformat = sl.reformat
		}
		in := e.bytes()
		if modify {
			// Modify the existing entry: set_fte_in op_mod 1, which the kernel's devx.c
			// (devx_is_obj_modify_cmd) takes as DEVX_OBJ_MODIFY of the entry's object.
			prm.SetFTEIn.OpMod.Set(in, 1)
			prm.SetFTEIn.ModifyEnableMask.Set(in, 1<<prm.SetFTEModifyAction|1<<prm.SetFTEModifyDestList|1<<prm.SetFTEModifyCounters)
			if err := sl.entries[i].Modify(in, make([]byte, 16)); err != nil {
				return err
			}
			continue
		}
		o, err := s.ch.Create(in, make([]byte, 16))
		if err != nil {
			return err
		}
		sl.entries = append(sl.entries, o)
	}
	return nil
}

// install writes r's entries into half (0 or 1) of slot i's block and returns the slot.
func (s *Steering) install(i, half int, r *flow.Rule) (*slot, error) {
	ms, err := ruleMatches(r, s)
	if err != nil {
		return nil, err
	}
	sortByMask(ms)
	tir, err := s.tirFor(r, false)
	if err != nil {
		return nil, err
	}
	tir6 := tir
	for _, m := range ms {
		if m.v6 {
			if tir6, err = s.tirFor(r, true); err != nil {
				return nil, err
			}
			break
		}
	}
	base := uint32(i*slotSpan + half*EntriesPerRule)
	sl := &slot{base: base, rule: r, matches: ms, tir: tir, tir6: tir6}
	if r.Decap == flow.DecapGRE {
		if sl.reformat, err = s.greDecap(uint64(r.TunnelKey)); err != nil {
			return nil, fmt.Errorf("flow/mlx5: GRE decap of flow %q: %w", r.Name, err)
		}
	}
	fail := func(err error) error {
		return errors.Join(fmt.Errorf("flow/mlx5: installing flow %q (id %d) in slot %d: %w", r.Name, r.FlowID, i, err), s.remove(sl))
	}
	for start := 0; start < len(ms); {
		end := start
		for end+1 < len(ms) && ms[end+1].key() == ms[start].key() {
			end++
		}
		g, err := s.createGroup(prm.FlowTableNICRX, s.table.ID(), base+uint32(start), base+uint32(end), ms[start])
		if err != nil {
			return nil, fail(err)
		}
		sl.groups = append(sl.groups, g)
		start = end + 1
	}
	if err := s.writeEntries(sl, base, false); err != nil {
		return nil, fail(err)
	}
	return sl, nil
}

// installDefault is the catch-all entry at the table's last index: unmatched frames to the
// default queue (dropped under drop-all).
func (s *Steering) installDefault() error {
	idx := uint32(MaxRules * slotSpan)
	m := newMatch()
	g, err := s.createGroup(prm.FlowTableNICRX, s.table.ID(), idx, idx, m)
	if err != nil {
		return fmt.Errorf("flow/mlx5: default entry group: %w", err)
	}
	sl := &slot{base: idx, rule: &flow.Rule{Name: "default", Queues: []int{s.p.DefaultQueue}}, matches: []*match{m}, tir: s.tirs[s.p.DefaultQueue].ID(), groups: []channel.Object{g}}
	if err := s.writeEntries(sl, idx, false); err != nil {
		return errors.Join(fmt.Errorf("flow/mlx5: default entry: %w", err), s.remove(sl))
	}
	s.def = sl
	return nil
}

// greDecap is the L3_TUNNEL_TO_L2 reformat context that turns a GRE packet carrying
// protocol proto into an Ethernet frame of that EtherType. Its MAC addresses are zero: the
// context's header is fixed, so the outer MACs flow.Decapsulate keeps cannot be kept
// (inferred: hardware writes the context's data as the new L2 header).
func (s *Steering) greDecap(proto uint64) (uint32, error) {
	if o := s.l3decap[proto]; o != nil {
		return o.ID(), nil
	}
	base := prm.AllocPacketReformatContextIn.PacketReformatContext.Off
	r := prm.PacketReformatContextIn
	start := r.ReformatData.At(base).ByteOff()
	in := prm.NewCmdIn(prm.CmdOpAllocPacketReformatContext, 0, start+14)
	r.ReformatType.At(base).Set(in, prm.ReformatL3TunnelToL2)
	r.ReformatDataSize.At(base).Set(in, 14)
	in[start+12], in[start+13] = byte(proto>>8), byte(proto)
	o, _, err := s.create(in, outBytes(prm.AllocPacketReformatContextOut.PacketReformatID))
	if err != nil {
		return 0, err
	}
	s.l3decap[proto] = o
	return o.ID(), nil
}

// remove deletes a slot's entries and groups.
func (s *Steering) remove(sl *slot) error {
	var errs []error
	for _, o := range slices.Backward(sl.entries) {
		errs = append(errs, o.Destroy())
	}
	for _, o := range slices.Backward(sl.groups) {
		errs = append(errs, o.Destroy())
	}
	sl.entries, sl.groups = nil, nil
	return errors.Join(errs...)
}

// Set installs r in slot (0 ≤ slot < MaxRules), replacing what was there: the new rule's
// entries are written in the other half of the slot's block before the old ones are deleted,
// so a frame meets the old rule or the new one. A rule that cannot be expressed is refused
// before anything changes; a device error leaves the old rule in place.
func (s *Steering) Set(slot int, r *flow.Rule) error {
	if slot < 0 || slot >= MaxRules {
		return fmt.Errorf("flow/mlx5: slot %d outside 0..%d", slot, MaxRules-1)
	}
	if err := Check(r); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.table == nil {
		return fmt.Errorf("flow/mlx5: the port has no RX queues to steer to")
	}
	old := s.slots[slot]
	half := 0
	if old != nil && old.base == uint32(slot*slotSpan) {
		half = 1
	}
	sl, err := s.install(slot, half, r)
	if err != nil {
		return err
	}
	s.slots[slot] = sl
	if old != nil {
		return s.remove(old)
	}
	return nil
}

// Clear empties a slot (deletes its entries and groups). RSS TIRs stay until Close, for the
// next rule over the same queues.
func (s *Steering) Clear(slot int) error {
	if slot < 0 || slot >= MaxRules {
		return fmt.Errorf("flow/mlx5: slot %d outside 0..%d", slot, MaxRules-1)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	sl := s.slots[slot]
	if sl == nil {
		return nil
	}
	s.slots[slot] = nil
	return s.remove(sl)
}

// SetDropAll switches drop_all_traffic on (every frame dropped, matched or not; flow tags
// and counts stay) or off. Each entry is rewritten in place.
func (s *Steering) SetDropAll(on bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.dropAll == on {
		return nil
	}
	s.dropAll = on
	if s.table == nil {
		return nil
	}
	for i, sl := range s.slots {
		if sl != nil {
			if err := s.writeEntries(sl, sl.base, true); err != nil {
				return fmt.Errorf("flow/mlx5: drop-all %v on slot %d: %w", on, i, err)
			}
		}
	}
	if s.def != nil {
		return s.writeEntries(s.def, s.def.base, true)
	}
	return nil
}

// Table is the reference of what is installed: flow.Table.Classify on it gives, for any
// frame, the verdict the NIC's steering gives (queue position, flow id, drop, or pass for
// frames no rule takes under isolation).
func (s *Steering) Table() *flow.Table {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := &flow.Table{Isolation: s.p.Isolation, DefaultQueue: s.p.DefaultQueue, DropAll: s.dropAll, Key: slices.Clone(s.key[:])}
	n := 0
	for i, sl := range s.slots {
		if sl != nil {
			n = i + 1
		}
	}
	t.Slots = make([]*flow.Rule, n)
	for i := range n {
		if sl := s.slots[i]; sl != nil {
			t.Slots[i] = sl.rule
		}
	}
	return t
}

// TIR returns the direct TIR of queue position q; ok is false for a position without one.
func (s *Steering) TIR(q int) (tirn uint32, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q < 0 || q >= len(s.tirs) {
		return 0, false
	}
	return s.tirs[q].ID(), true
}

// Close detaches the tables and destroys every entry, group, table, TIR, RQT and reformat
// context it created, in reverse order of creation. Destroy the RQs after it.
func (s *Steering) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.closed = true
	return s.teardown()
}

func (s *Steering) teardown() error {
	var errs []error
	if s.tx != nil {
		errs = append(errs, s.tx.close())
	}
	if s.detach != nil {
		errs = append(errs, s.detach())
		s.detach = nil
	}
	for i := len(s.slots) - 1; i >= 0; i-- {
		if sl := s.slots[i]; sl != nil {
			errs = append(errs, s.remove(sl))
			s.slots[i] = nil
		}
	}
	if s.def != nil {
		errs = append(errs, s.remove(s.def))
		s.def = nil
	}
	if s.missEntry != nil {
		errs = append(errs, s.missEntry.Destroy())
		s.missEntry = nil
	}
	for _, o := range slices.Backward(s.objs) {
		errs = append(errs, o.Destroy())
	}
	s.objs = nil
	return errors.Join(errs...)
}

// FlowID is the flow id a received frame's CQE flow tag carries (the CQE's sop_drop_qpn
// low 24 bits, mlx5dv.h struct mlx5_cqe64): the matched rule's id, 0 when no rule matched —
// as flow.Verdict.FlowID. Flow ids are 24-bit (config.MaxFlowID), like the flow tag.
func FlowID(cqeFlowTag uint32) uint32 { return cqeFlowTag & 0xffffff }
