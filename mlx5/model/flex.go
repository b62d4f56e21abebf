package model

import (
	"github.com/daqiri-go/daqiri/mlx5/model/internal/datapath"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// The flex parser as a general object (CREATE/QUERY/DESTROY_GENERAL_OBJECT, obj_type
// FLEX_PARSE_GRAPH; layouts in prm/ifc_flex.go). The model implements the subset its
// PARSE_GRAPH_NODE capability page reports: fixed-length headers entered from the MAC arc (an
// EtherType) or the UDP arc (a destination port), fixed-offset samples of the outer headers,
// no output arcs. Every other general object type is answered as before: BAD_OP, an opcode the
// model does not implement for it.

// Flex parser limits the model reports (flexCaps). Inferred, not copied from a device: DPDK's
// mlx5_prm.h sizes a node at 8 samples and 8 arcs each way; the header and offset limits are
// the widths of the fields that carry them (8 bits of base offset).
const (
	flexMaxNodes      = 64
	flexMaxHeaderLen  = 255
	flexMaxBaseOffset = 251 // a 4-byte sample must end inside a header of at most 255 bytes
	firstFlexSampleID = 1   // sample id 0 is never handed out, so an unused misc4 slot names none
)

// flexObjects are the parse-graph nodes: their numbers, and each node's parameters as created
// with the sample ids the device assigned.
type flexObjects struct {
	ids        idSpace
	nodes      map[uint32]*flexNode
	nextSample uint32
}

type flexNode struct {
	raw []byte // the parse_graph_flex bytes as created, sample ids filled in
	p   datapath.FlexNodeParams
}

func newFlexObjects() flexObjects {
	return flexObjects{ids: newIDs("flex parser node", 1, 1<<24), nodes: map[uint32]*flexNode{}, nextSample: firstFlexSampleID}
}

// flexCaps is the PARSE_GRAPH_NODE capability page: node_in bits for the MAC and UDP arc
// nodes, fixed header length and fixed sample offset modes only.
func flexCaps() []capVal {
	c := prm.ParseGraphNodeCap
	return []capVal{
		{c.NodeIn, 1<<prm.GraphArcNodeMAC | 1<<prm.GraphArcNodeUDP}, {c.NodeOut, 0},
		{c.HeaderLengthMode, 1 << prm.GraphNodeLenFixed}, {c.SampleOffsetMode, 1 << prm.GraphSampleOffsetFixed},
		{c.MaxNumArcIn, prm.ParseGraphEntries}, {c.MaxNumArcOut, 0}, {c.MaxNumSample, prm.ParseGraphEntries},
		{c.MaxBaseHeaderLength, flexMaxHeaderLen}, {c.MaxSampleBaseOffset, flexMaxBaseOffset},
	}
}

// generalObjHandler maps the general-object commands to the flex parser's handlers.
func generalObjHandler(op prm.CmdOp) handler {
	switch op {
	case prm.CmdOpCreateGeneralObject:
		return flexOnly((*Device).createFlexNode)
	case prm.CmdOpQueryGeneralObject:
		return flexOnly((*Device).queryFlexNode)
	case prm.CmdOpDestroyGeneralObject:
		return flexOnly((*Device).destroyFlexNode)
	}
	return nil
}

// flexOnly runs h for obj_type FLEX_PARSE_GRAPH and answers any other type as an opcode the
// model does not implement.
func flexOnly(h handler) handler {
	return func(d *Device, c *cmd) error {
		if err := c.need(ins(prm.GeneralObjInCmdHdr.ObjID)); err != nil {
			return err
		}
		if t := c.get(prm.GeneralObjInCmdHdr.ObjType); t != prm.GeneralObjTypeFlexParseGraph {
			return fail(prm.StatusBadOpErr, SyndromeBadOpcode, "%v: general object type %#x is not implemented by the model (only FLEX_PARSE_GRAPH %#x)", c.op, t, prm.GeneralObjTypeFlexParseGraph)
		}
		return h(d, c)
	}
}

// createFlexNode checks a node against the capabilities and gives each enabled sample an id.
func (d *Device) createFlexNode(c *cmd) error {
	base := prm.FlexParserObj.Flex.Off
	if err := c.need(ins(prm.FlexParserObj.Flex), prm.GeneralObjOutCmdHdr.ObjID); err != nil {
		return err
	}
	if d.capGet(prm.CapTypeGeneral, prm.CmdHCACap.GeneralObjTypes)&(1<<prm.GeneralObjTypeFlexParseGraph) == 0 {
		return fail(prm.StatusBadOpErr, SyndromeBadOpcode, "CREATE_GENERAL_OBJECT: FLEX_PARSE_GRAPH is off in general_obj_types")
	}
	g := prm.ParseGraphFlex
	const what = "CREATE_GENERAL_OBJECT(FLEX_PARSE_GRAPH)"
	if v := c.get(g.ModifyFieldSelect.At(base)); v != 0 {
		return badParam("%s: modify_field_select %#x on create", what, v)
	}
	if m := c.get(g.HeaderLengthMode.At(base)); m != prm.GraphNodeLenFixed {
		return fail(prm.StatusBadParamErr, SyndromeNotModelled, "%s: header_length_mode %d: the model parses fixed-length headers only (mode 0)", what, m)
	}
	hl := int(c.get(g.HeaderLengthBaseValue.At(base)))
	if hl < 1 || hl > flexMaxHeaderLen {
		return badParam("%s: header_length_base_value %d outside 1..%d (max_base_header_length)", what, hl, flexMaxHeaderLen)
	}
	p := datapath.FlexNodeParams{Length: hl}
	a := prm.ParseGraphArc
	for i := 0; i < prm.ParseGraphEntries; i++ {
		if n := c.get(a.ArcParseGraphNode.At(prm.GraphOutArc(base, i))); n != 0 {
			return badParam("%s: output_arc[%d] names arc node %d; the model's nodes have no output arcs (max_num_arc_out 0)", what, i, n)
		}
		at := prm.GraphInArc(base, i)
		n := uint8(c.get(a.ArcParseGraphNode.At(at)))
		if n == 0 {
			continue
		}
		if n != prm.GraphArcNodeMAC && n != prm.GraphArcNodeUDP {
			return badParam("%s: input_arc[%d] from arc node %d; node_in allows MAC (%d) and UDP (%d)", what, i, n, prm.GraphArcNodeMAC, prm.GraphArcNodeUDP)
		}
		if c.get(a.StartInnerTunnel.At(at)) != 0 {
			return badParam("%s: input_arc[%d] start_inner_tunnel: the model samples outer headers only", what, i)
		}
		p.Arcs = append(p.Arcs, datapath.FlexArc{Node: n, Value: uint16(c.get(a.CompareConditionValue.At(at)))})
	}
	if len(p.Arcs) == 0 {
		return badParam("%s: no input arc: the parser would never enter the node", what)
	}
	s := prm.ParseGraphSample
	var sampleAt []uint32
	for i := 0; i < prm.ParseGraphEntries; i++ {
		at := prm.GraphSample(base, i)
		if c.get(s.En.At(at)) == 0 {
			continue
		}
		if m := c.get(s.OffsetMode.At(at)); m != prm.GraphSampleOffsetFixed {
			return fail(prm.StatusBadParamErr, SyndromeNotModelled, "%s: sample_table[%d] offset mode %d: the model samples at fixed offsets only (mode 0)", what, i, m)
		}
		if m := c.get(s.TunnelMode.At(at)); m != 0 {
			return badParam("%s: sample_table[%d] tunnel mode %d: the model samples outer headers only", what, i, m)
		}
		off := int(c.get(s.FieldBaseOffset.At(at)))
		if off+4 > hl {
			return badParam("%s: sample_table[%d] at byte %d ends past the %d-byte header", what, i, off, hl)
		}
		p.Samples = append(p.Samples, datapath.FlexSample{Offset: off})
		sampleAt = append(sampleAt, at)
	}
	fo := &d.objs.flex
	id, err := fo.ids.alloc(c.uid, flexMaxNodes)
	if err != nil {
		return err
	}
	p.ID = id
	raw := append([]byte(nil), prm.FlexParserObj.Flex.Slice(c.in)...)
	for i := range p.Samples {
		p.Samples[i].ID = fo.nextSample
		fo.nextSample++
		s.FieldID.At(sampleAt[i]-base).Set(raw, uint64(p.Samples[i].ID))
	}
	if err := d.dp().CreateFlexNode(p); err != nil {
		fo.ids.free(id)
		return err
	}
	fo.nodes[id] = &flexNode{raw: raw, p: p}
	c.set(prm.GeneralObjOutCmdHdr.ObjID, uint64(id))
	return nil
}

// queryFlexNode returns the node as created, with the sample ids the device assigned.
func (d *Device) queryFlexNode(c *cmd) error {
	if err := c.need(nil, prm.FlexParserObj.Flex); err != nil {
		return err
	}
	id := uint32(c.get(prm.GeneralObjInCmdHdr.ObjID))
	n := d.objs.flex.nodes[id]
	if n == nil || !d.objs.flex.ids.has(id, c.uid) {
		return noObject("QUERY_GENERAL_OBJECT: flex parser node %d does not exist", id)
	}
	copy(prm.FlexParserObj.Flex.Slice(c.out), n.raw)
	c.set(prm.GeneralObjOutCmdHdr.ObjID, uint64(id))
	return nil
}

func (d *Device) destroyFlexNode(c *cmd) error {
	id := uint32(c.get(prm.GeneralObjInCmdHdr.ObjID))
	fo := &d.objs.flex
	if fo.nodes[id] == nil || !fo.ids.owns(id, c.uid) {
		return noObject("DESTROY_GENERAL_OBJECT: flex parser node %d does not exist", id)
	}
	if err := d.dp().DestroyFlexNode(id); err != nil {
		return err
	}
	delete(fo.nodes, id)
	fo.ids.free(id)
	return nil
}
