package mlx5

import (
	"fmt"

	"github.com/daqiri-go/daqiri/flow"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// The flex parser: matches the fixed header layout cannot express — the IPv4 total length,
// eCPRI's message type and PC_ID/RTC_ID, a flex item's word after a UDP header — are
// programmable sample matches (fte_match_set_misc4) on samples of parse-graph nodes, general
// objects of type FLEX_PARSE_GRAPH (prm/ifc_flex.go). A port creates each node the first time
// a rule needs it and keeps it until Close, one node per sampled 32-bit word and arc as
// upstream daqiri's ibverbs engine does (create_flex_parser_node: entered from MAC on an
// EtherType or from UDP on a destination port, a fixed header just long enough for the
// sample) — except eCPRI, one node with two samples, the common header and the first word of
// the message body (DPDK's mlx5_flex_parser_ecpri_alloc; upstream's create_ecpri_parser_node).
// The device names each sample by the id QUERY_GENERAL_OBJECT returns.

// flexWord is one sampled word: the arc that enters its node and the word's byte offset in
// the header there.
type flexWord struct {
	arc    uint8  // prm.GraphArcNodeMAC or GraphArcNodeUDP
	value  uint16 // the EtherType or UDP destination port the arc compares
	offset int
}

// eCPRI's node: the 4-byte common header and the message body's first word (eCPRI
// specification v2.0 §3.1.3: revision/flags, message type, payload size; then PC_ID/RTC_ID).
var (
	ecpriCommon = flexWord{prm.GraphArcNodeMAC, flow.EtherTypeECPRI, 0}
	ecpriBody   = flexWord{prm.GraphArcNodeMAC, flow.EtherTypeECPRI, 4}
	ipv4Word0   = flexWord{prm.GraphArcNodeMAC, flow.EtherTypeIPv4, 0} // version/IHL, DSCP/ECN, total length
)

// sampler gives the sample id of a word, creating its node when needed.
type sampler interface {
	sampleID(w flexWord) (uint32, error)
}

// checkSampler answers every word with a placeholder id: Check validates without a device.
type checkSampler struct{}

func (checkSampler) sampleID(flexWord) (uint32, error) { return 1, nil }

// setSample matches misc4 slot n: the sample named id, under mask, against value.
func (m *match) setSample(n int, id, value, mask uint32) {
	base := prm.FTEMatchParam.MiscParameters4.Off
	pair := prm.ProgSamples()[n]
	// The id is a selector: all ones in the criteria, the id in the value (as upstream and
	// DPDK set prog_sample_field_id_N).
	pair[1].At(base).Set(m.mask, 0xffffffff)
	pair[1].At(base).Set(m.value, uint64(id))
	pair[0].At(base).Set(m.mask, uint64(mask))
	pair[0].At(base).Set(m.value, uint64(value&mask))
	m.enable |= enableMisc4
}

// flexNodeOf is a created node: its object and its samples' ids by header offset.
type flexNodeOf struct {
	ids map[int]uint32
}

// sampleID implements sampler for a port: the word's node is created on first use.
func (s *Steering) sampleID(w flexWord) (uint32, error) {
	key := flexWord{w.arc, w.value, 0}
	if n := s.flex[key]; n != nil {
		if id, ok := n.ids[w.offset]; ok {
			return id, nil
		}
	}
	offsets := []int{w.offset}
	if key == (flexWord{ecpriCommon.arc, ecpriCommon.value, 0}) {
		offsets = []int{ecpriCommon.offset, ecpriBody.offset}
	}
	ids, err := s.createFlexNode(w.arc, w.value, offsets)
	if err != nil {
		return 0, fmt.Errorf("flow/mlx5: flex parser node (arc %d, compare %#x, offsets %v): %w", w.arc, w.value, offsets, err)
	}
	n := s.flex[key]
	if n == nil {
		n = &flexNodeOf{ids: map[int]uint32{}}
		s.flex[key] = n
	}
	for i, o := range offsets {
		n.ids[o] = ids[i]
	}
	return n.ids[w.offset], nil
}

// createFlexNode creates a fixed-length node entered from arc on value with one sample per
// offset and returns the samples' ids, read back with QUERY_GENERAL_OBJECT (upstream's
// ibverbs engine does the same: the create's output does not carry them).
func (s *Steering) createFlexNode(arc uint8, value uint16, offsets []int) ([]uint32, error) {
	base := prm.FlexParserObj.Flex.Off
	n := int(prm.FlexParserObj.Flex.End() / 8)
	in := prm.NewCmdIn(prm.CmdOpCreateGeneralObject, 0, n)
	prm.GeneralObjInCmdHdr.ObjType.Set(in, prm.GeneralObjTypeFlexParseGraph)
	g := prm.ParseGraphFlex
	length := 0
	for _, o := range offsets {
		length = max(length, o+4)
	}
	g.HeaderLengthMode.At(base).Set(in, prm.GraphNodeLenFixed)
	g.HeaderLengthBaseValue.At(base).Set(in, uint64(length))
	a := prm.ParseGraphArc
	a.ArcParseGraphNode.At(prm.GraphInArc(base, 0)).Set(in, uint64(arc))
	a.CompareConditionValue.At(prm.GraphInArc(base, 0)).Set(in, uint64(value))
	sm := prm.ParseGraphSample
	for i, o := range offsets {
		at := prm.GraphSample(base, i)
		sm.En.At(at).Set(in, 1)
		sm.OffsetMode.At(at).Set(in, prm.GraphSampleOffsetFixed)
		sm.FieldBaseOffset.At(at).Set(in, uint64(o))
	}
	obj, _, err := s.create(in, outBytes(prm.GeneralObjOutCmdHdr.ObjID))
	if err != nil {
		return nil, err
	}
	q := prm.NewCmdIn(prm.CmdOpQueryGeneralObject, 0, int(prm.GeneralObjInCmdHdr.ObjID.End()/8)+4)
	prm.GeneralObjInCmdHdr.ObjType.Set(q, prm.GeneralObjTypeFlexParseGraph)
	prm.GeneralObjInCmdHdr.ObjID.Set(q, uint64(obj.ID()))
	out := make([]byte, n)
	if err := obj.Query(q, out); err != nil {
		return nil, fmt.Errorf("QUERY_GENERAL_OBJECT: %w", err)
	}
	ids := make([]uint32, len(offsets))
	for i := range offsets {
		ids[i] = uint32(sm.FieldID.At(prm.GraphSample(base, i)).Get(out))
	}
	return ids, nil
}
