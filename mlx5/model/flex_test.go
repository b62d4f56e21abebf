package model_test

import (
	"testing"

	"github.com/daqiri-go/daqiri/mlx5/model"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// flexIn is a CREATE_GENERAL_OBJECT(FLEX_PARSE_GRAPH) of a fixed header of hl bytes entered
// from arc on value, with a sample at each offset, and extra node fields (offsets from the
// node's start).
func flexIn(hl int, arc uint8, value uint16, offsets []int, extra ...any) []byte {
	base := prm.FlexParserObj.Flex.Off
	g, a, s := prm.ParseGraphFlex, prm.ParseGraphArc, prm.ParseGraphSample
	kv := []any{prm.GeneralObjInCmdHdr.ObjType, prm.GeneralObjTypeFlexParseGraph,
		g.HeaderLengthBaseValue.At(base), hl,
		a.ArcParseGraphNode.At(prm.GraphInArc(base, 0)), int(arc), a.CompareConditionValue.At(prm.GraphInArc(base, 0)), int(value)}
	for i, o := range offsets {
		at := prm.GraphSample(base, i)
		kv = append(kv, s.En.At(at), 1, s.FieldBaseOffset.At(at), o)
	}
	for i := 0; i+1 < len(extra); i += 2 {
		kv = append(kv, extra[i].(prm.Field).At(base), extra[i+1])
	}
	return in(prm.CmdOpCreateGeneralObject, 0, int(prm.FlexParserObj.Flex.End()/8), kv...)
}

// TestFlexParserObject: the PARSE_GRAPH_NODE page and general_obj_types report the flex
// parser; a node is created, queried (its samples' ids, distinct) and destroyed; nodes the
// capabilities do not allow are refused with BAD_PARAM naming the field; other general object
// types stay unimplemented.
func TestFlexParserObject(t *testing.T) {
	r := newReady(t, model.Config{})
	capOut := r.mustCmd(in(prm.CmdOpQueryHCACap, uint16(prm.CapTypeParseGraphNode)<<1|prm.CapOpModCur, 16), int(prm.QueryHCACapOut.Capability.End()/8))
	c := prm.ParseGraphNodeCap
	base := prm.QueryHCACapOut.Capability.Off
	if in := get(capOut, c.NodeIn.At(base)); in != 1<<prm.GraphArcNodeMAC|1<<prm.GraphArcNodeUDP {
		t.Errorf("node_in %#x", in)
	}
	if n := get(capOut, c.MaxNumSample.At(base)); n != 8 {
		t.Errorf("max_num_sample %d", n)
	}
	outLen := int(prm.FlexParserObj.Flex.End() / 8)
	out := r.mustCmd(flexIn(8, prm.GraphArcNodeMAC, 0xaefe, []int{0, 4}), 16)
	id := get(out, prm.GeneralObjOutCmdHdr.ObjID)
	q := in(prm.CmdOpQueryGeneralObject, 0, 16, prm.GeneralObjInCmdHdr.ObjType, prm.GeneralObjTypeFlexParseGraph, prm.GeneralObjInCmdHdr.ObjID, id)
	qo := r.mustCmd(q, outLen)
	fb := prm.FlexParserObj.Flex.Off
	s0 := get(qo, prm.ParseGraphSample.FieldID.At(prm.GraphSample(fb, 0)))
	s1 := get(qo, prm.ParseGraphSample.FieldID.At(prm.GraphSample(fb, 1)))
	if s0 == 0 || s1 == 0 || s0 == s1 {
		t.Errorf("sample ids %d, %d: want distinct non-zero", s0, s1)
	}
	if v := get(qo, prm.ParseGraphFlex.HeaderLengthBaseValue.At(fb)); v != 8 {
		t.Errorf("queried header length %d", v)
	}
	out2 := r.mustCmd(flexIn(4, prm.GraphArcNodeUDP, 4096, []int{0}), 16)
	q2 := r.mustCmd(in(prm.CmdOpQueryGeneralObject, 0, 16, prm.GeneralObjInCmdHdr.ObjType, prm.GeneralObjTypeFlexParseGraph, prm.GeneralObjInCmdHdr.ObjID, get(out2, prm.GeneralObjOutCmdHdr.ObjID)), outLen)
	if s := get(q2, prm.ParseGraphSample.FieldID.At(prm.GraphSample(fb, 0))); s == s0 || s == s1 || s == 0 {
		t.Errorf("second node's sample id %d reuses one of %d, %d", s, s0, s1)
	}

	g := prm.ParseGraphFlex
	for name, b := range map[string][]byte{
		"no input arc":        flexIn(4, 0, 0, []int{0}),
		"IP arc":              flexIn(4, 3, 0x11, []int{0}),
		"sample past header":  flexIn(4, prm.GraphArcNodeMAC, 0x0800, []int{2}),
		"zero length":         flexIn(0, prm.GraphArcNodeMAC, 0x0800, nil),
		"field length mode":   flexIn(4, prm.GraphArcNodeMAC, 0x0800, []int{0}, g.HeaderLengthMode, 1),
		"output arc":          flexIn(4, prm.GraphArcNodeMAC, 0x0800, []int{0}, prm.ParseGraphArc.ArcParseGraphNode.At(prm.GraphOutArc(0, 0)), prm.GraphArcNodeUDP),
		"modify_field_select": flexIn(4, prm.GraphArcNodeMAC, 0x0800, []int{0}, g.ModifyFieldSelect, 1),
	} {
		if synd := r.wantStatus(b, 16, prm.StatusBadParamErr); synd == 0 {
			t.Errorf("%s: syndrome 0", name)
		}
	}
	// Other general object types: not implemented (BAD_OP), as before the flex parser.
	r.wantStatus(in(prm.CmdOpCreateGeneralObject, 0, 16, prm.GeneralObjInCmdHdr.ObjType, 0x13), 16, prm.StatusBadOpErr)
	del := in(prm.CmdOpDestroyGeneralObject, 0, 16, prm.GeneralObjInCmdHdr.ObjType, prm.GeneralObjTypeFlexParseGraph, prm.GeneralObjInCmdHdr.ObjID, id)
	r.mustCmd(del, 16)
	r.wantStatus(del, 16, prm.StatusBadResErr)
	r.wantStatus(q, outLen, prm.StatusBadResErr)
}
