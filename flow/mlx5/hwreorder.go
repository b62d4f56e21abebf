package mlx5

import (
	"errors"
	"fmt"
	"math/bits"

	"github.com/daqiri-go/daqiri/flow"
	"github.com/daqiri-go/daqiri/mlx5/channel"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// Hardware reorder, as upstream daqiri's ibverbs engine does it (NVIDIA/daqiri pull request
// #290 for issue #291, "Hardware-Based Packet Reordering"): the flex parser samples the
// sequence field, and one steering rule per reorder slot sends the frame to that slot's own
// RQ, whose posted receive WQE points at the slot's offset in the batch buffer — so the NIC
// writes each frame at its place in the batch and no CPU or GPU step reorders anything. The
// batch is complete when every slot's RQ has completed its WQE (one shared CQ counts them).
//
// Limits, as upstream found them on ConnectX-7 and as the model keeps them:
//   - A slot rule matches the whole sequence field exactly (the PR's review: CX-7 firmware
//     takes these programmable samples as exact matches), so sequence numbers must cycle
//     over [0, packets per batch): a larger value matches no slot rule and is dropped by the
//     plan's last entry and counted there (OutOfRange), never placed. A wide monotonic
//     sequence therefore stops matching after its first cycle — the sender must cycle it,
//     as upstream's sender does.
//   - One rule per slot: at most MaxHWReorderSlots (upstream's tested 2,048).
//   - The field must lie in one 32-bit sample word: bit_offset mod 8 + bit_width ≤ 32, after
//     the Ethernet header of an untagged IPv4 frame (the node is entered from MAC on EtherType
//     0x0800; bit offsets count from the frame's first byte, as upstream's reorder plans do).
//   - A duplicate finds its slot's WQE already used: the slot's RQ has no receive WQE posted
//     until the batch is re-armed, so the device drops it and counts it out of buffer in the
//     RQs' Q counter, never placing it. Frames of the next batch that arrive before the slots
//     are re-armed are dropped the same way (the caller re-arms as soon as a batch completes).

// MaxHWReorderSlots is the most slots (steering rules) one hardware reorder plan may have:
// the 2,048 upstream ran on an IGX ConnectX-7.
const MaxHWReorderSlots = 2048

// flexMaxHeader bounds a node's fixed header (header_length_base_value): the largest the
// 8-bit sample base offset allows for a 4-byte sample; a device that reports less in its
// PARSE_GRAPH_NODE page refuses the node's CREATE, naming the length.
const flexMaxHeader = 255

// HWReorderParams describe one hardware reorder plan on a port.
type HWReorderParams struct {
	// Name is the plan's configuration key path (reorder_configs[i]), for errors.
	Name string
	// Rule selects the plan's frames (its match fields; its queues are ignored): an IPv4
	// flow without tunnel or VLAN actions.
	Rule *flow.Rule
	// SeqBitOffset and SeqBitWidth place the sequence field (sequence_number.bit_offset and
	// bit_width): bits counted from the frame's first byte, most significant first.
	SeqBitOffset, SeqBitWidth int
	// SlotRQNs are the slots' RQs in slot order: packets per batch is their number.
	SlotRQNs []uint32
	// SlotTagBase, when not 0, makes slot k's entry tag its frames SlotTagBase+k instead of
	// the flow's id, so that a CQ shared by the slot RQs tells each completion's slot from
	// the CQE's flow tag (defined on every ConnectX, unlike the RQ number).
	SlotTagBase uint32
}

// HWReorder is an installed plan: a table of one entry per slot behind the port's rule slot.
type HWReorder struct {
	s        *Steering
	ruleSlot int
	counter  channel.Object
}

// AddHWReorder installs a plan: ruleSlot (a rule slot of the port's table, as Set takes)
// forwards the plan's frames to a table that holds one entry per sequence value, each to its
// slot RQ's TIR, and a last entry that drops and counts the rest.
func (s *Steering) AddHWReorder(ruleSlot int, p HWReorderParams) (*HWReorder, error) {
	errf := func(key, format string, args ...any) error {
		return fmt.Errorf("%s%s: %s: %w", p.Name, key, fmt.Sprintf(format, args...), ErrNotExpressible)
	}
	n := len(p.SlotRQNs)
	switch {
	case n == 0:
		return nil, fmt.Errorf("%s: a hardware reorder plan needs slot RQs", p.Name)
	case n > MaxHWReorderSlots:
		return nil, errf(".method.packets_per_batch", "%d slots: hardware reorder has one steering rule per slot, at most %d", n, MaxHWReorderSlots)
	case p.SeqBitWidth < 1 || p.SeqBitWidth > 32:
		return nil, errf(".method.sequence_number.bit_width", "%d outside 1..32", p.SeqBitWidth)
	case p.SeqBitWidth < 32 && n > 1<<p.SeqBitWidth:
		return nil, errf(".method.packets_per_batch", "%d slots cannot be named by a %d-bit sequence", n, p.SeqBitWidth)
	case p.SeqBitOffset%8+p.SeqBitWidth > 32:
		return nil, errf(".method.sequence_number", "bits %d..%d span more than one 32-bit flex parser sample (bit_offset mod 8 + bit_width must be ≤ 32)", p.SeqBitOffset, p.SeqBitOffset+p.SeqBitWidth-1)
	case p.SeqBitOffset/8 < 14 || p.SeqBitOffset/8-14+4 > flexMaxHeader:
		return nil, errf(".method.sequence_number.bit_offset", "byte %d: the flex parser samples bytes 14..%d of the frame (after the Ethernet header)", p.SeqBitOffset/8, 14+flexMaxHeader-4)
	case p.Rule == nil:
		return nil, fmt.Errorf("%s: no flow selects the plan's frames", p.Name)
	case p.Rule.Decap != flow.DecapNone || p.Rule.VLANPop || p.Rule.ECPRI != nil || p.Rule.IPv6Src.IsValid() || p.Rule.IPv6Dst.IsValid():
		return nil, errf(".flow_ids", "flow %q: hardware reorder takes untagged IPv4 frames without tunnel actions", p.Rule.Name)
	}
	if ruleSlot < 0 || ruleSlot >= MaxRules {
		return nil, fmt.Errorf("flow/mlx5: slot %d outside 0..%d", ruleSlot, MaxRules-1)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if s.slots[ruleSlot] != nil {
		return nil, fmt.Errorf("flow/mlx5: %s: slot %d holds flow %q", p.Name, ruleSlot, s.slots[ruleSlot].rule.Name)
	}
	r := *p.Rule
	r.Queues = []int{0}
	ms, err := ruleMatches(&r, s)
	if err != nil {
		return nil, err
	}
	id, err := s.sampleID(flexWord{prm.GraphArcNodeMAC, flow.EtherTypeIPv4, p.SeqBitOffset/8 - 14})
	if err != nil {
		return nil, err
	}
	shift := 32 - p.SeqBitOffset%8 - p.SeqBitWidth
	mask := uint32(uint64(1)<<p.SeqBitWidth-1) << shift

	// The plan's table: entries 0..n-1 the slots (one group: EtherType and the sample),
	// entry n the drop-and-count of every other value (an empty mask).
	table, err := s.createTableAt(prm.FlowTableNICRX, uint64(bits.Len(uint(n))), tableLevel+1)
	if err != nil {
		return nil, fmt.Errorf("flow/mlx5: %s: the reorder table: %w", p.Name, err)
	}
	ctr, _, err := s.create(prm.NewCmdIn(prm.CmdOpAllocFlowCounter, 0, 16), outBytes(prm.AllocFlowCounterOut.FlowCounterID))
	if err != nil {
		return nil, fmt.Errorf("flow/mlx5: %s: the out-of-range counter: %w", p.Name, err)
	}
	l := prm.FTEMatchSetLyr24
	slotM := newMatch()
	slotM.set(outer, l.Ethertype, flow.EtherTypeIPv4)
	slotM.setSample(0, id, 0, mask)
	g, err := s.createGroup(prm.FlowTableNICRX, table.ID(), 0, uint32(n-1), slotM)
	if err != nil {
		return nil, fmt.Errorf("flow/mlx5: %s: the slots' group: %w", p.Name, err)
	}
	s.objs = append(s.objs, g)
	for k, rqn := range p.SlotRQNs {
		tir, err := s.createTIR(rqn, "", nil, false)
		if err != nil {
			return nil, fmt.Errorf("flow/mlx5: %s: TIR of slot %d (RQ %d): %w", p.Name, k, rqn, err)
		}
		m := slotM.clone()
		m.setSample(0, id, uint32(k)<<shift, mask)
		tag := r.FlowID & 0xffffff
		if p.SlotTagBase != 0 {
			tag = (p.SlotTagBase + uint32(k)) & 0xffffff
		}
		e := &entry{table: table.ID(), typ: prm.FlowTableNICRX, index: uint32(k), group: g.ID(), m: m,
			action: prm.FlowActionFwdDest, tag: tag, tir: tir.ID(), hasTIR: true}
		if _, _, err := s.create(e.bytes(), 16); err != nil {
			return nil, fmt.Errorf("flow/mlx5: %s: entry of slot %d: %w", p.Name, k, err)
		}
	}
	gl, err := s.createGroup(prm.FlowTableNICRX, table.ID(), uint32(n), uint32(n), newMatch())
	if err != nil {
		return nil, fmt.Errorf("flow/mlx5: %s: the out-of-range group: %w", p.Name, err)
	}
	s.objs = append(s.objs, gl)
	last := &entry{table: table.ID(), typ: prm.FlowTableNICRX, index: uint32(n), group: gl.ID(), m: newMatch(),
		action: prm.FlowActionDrop, counter: ctr.ID()}
	if _, _, err := s.create(last.bytes(), 16); err != nil {
		return nil, fmt.Errorf("flow/mlx5: %s: the out-of-range entry: %w", p.Name, err)
	}

	// The rule slot forwards the plan's frames to the table.
	sortByMask(ms)
	base := uint32(ruleSlot * slotSpan)
	sl := &slot{base: base, rule: p.Rule, matches: ms, fwd: table.ID(), hasFwd: true}
	for start := 0; start < len(ms); {
		end := start
		for end+1 < len(ms) && ms[end+1].key() == ms[start].key() {
			end++
		}
		g, err := s.createGroup(prm.FlowTableNICRX, s.table.ID(), base+uint32(start), base+uint32(end), ms[start])
		if err != nil {
			return nil, errors.Join(err, s.remove(sl))
		}
		sl.groups = append(sl.groups, g)
		start = end + 1
	}
	if err := s.writeEntries(sl, base, false); err != nil {
		return nil, errors.Join(err, s.remove(sl))
	}
	s.slots[ruleSlot] = sl
	return &HWReorder{s: s, ruleSlot: ruleSlot, counter: ctr}, nil
}

// OutOfRange is how many of the plan's frames carried a sequence number no slot takes (or
// were too short to carry one): dropped by the plan's last entry, never placed.
func (h *HWReorder) OutOfRange() (uint64, error) {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	if h.s.closed {
		return 0, ErrClosed
	}
	return queryCounter(h.counter)
}
