package prm

// The flex parser: a parse-graph node is a general object (CREATE/QUERY/DESTROY_GENERAL_OBJECT
// with obj_type FLEX_PARSE_GRAPH) that tells the device's packet parser about a header it does
// not know: where the node is entered from (input arcs: after the Ethernet header on an
// EtherType, after UDP on a destination port), how long the header is, and up to eight 32-bit
// samples of it. The device gives each sample a flow_match_sample_field_id, which QUERY returns;
// a flow entry then matches a sample's value through fte_match_set_misc4's programmable sample
// fields (prog_sample_field_id_N names the sample, prog_sample_field_value_N is compared under
// the criteria's mask).
//
// Sources: the misc4 layout is the installed kernel's mlx5_ifc.h (struct
// mlx5_ifc_fte_match_set_misc4_bits), checked like every ifcField. The parse-graph layouts,
// the object type, the arc node numbers and the capability page are DPDK's
// drivers/common/mlx5/mlx5_prm.h (struct mlx5_ifc_parse_graph_flex_bits,
// _parse_graph_flow_match_sample_bits, _parse_graph_arc_bits, _parse_graph_node_cap_bits,
// enum mlx5_parse_graph_arc_node_index, MLX5_GENERAL_OBJ_TYPE_FLEX_PARSE_GRAPH,
// MLX5_GET_HCA_CAP_OP_MOD_PARSE_GRAPH_NODE_CAP); how a driver uses them is DPDK's
// drivers/net/mlx5/mlx5_flow_flex.c and mlx5.c (mlx5_flex_parser_ecpri_alloc: a node entered
// from MAC on EtherType 0xAEFE, samples at offsets 0 and 4) and upstream daqiri's ibverbs
// engine (create_flex_parser_node: the IPv4 total length sampled by a node entered from MAC on
// EtherType 0x0800 at offset 0, matched under mask 0x0000ffff).

// FTEMatchSetMisc4 is misc_parameters_4 of fte_match_param: four programmable sample matches
// (mlx5_ifc.h struct mlx5_ifc_fte_match_set_misc4_bits).
var FTEMatchSetMisc4 = struct {
	ProgSampleFieldValue0 Field
	ProgSampleFieldID0    Field
	ProgSampleFieldValue1 Field
	ProgSampleFieldID1    Field
	ProgSampleFieldValue2 Field
	ProgSampleFieldID2    Field
	ProgSampleFieldValue3 Field
	ProgSampleFieldID3    Field
}{
	ProgSampleFieldValue0: ifcField("fte_match_set_misc4", "prog_sample_field_value_0", 0x0, 32),
	ProgSampleFieldID0:    ifcField("fte_match_set_misc4", "prog_sample_field_id_0", 0x20, 32),
	ProgSampleFieldValue1: ifcField("fte_match_set_misc4", "prog_sample_field_value_1", 0x40, 32),
	ProgSampleFieldID1:    ifcField("fte_match_set_misc4", "prog_sample_field_id_1", 0x60, 32),
	ProgSampleFieldValue2: ifcField("fte_match_set_misc4", "prog_sample_field_value_2", 0x80, 32),
	ProgSampleFieldID2:    ifcField("fte_match_set_misc4", "prog_sample_field_id_2", 0xa0, 32),
	ProgSampleFieldValue3: ifcField("fte_match_set_misc4", "prog_sample_field_value_3", 0xc0, 32),
	ProgSampleFieldID3:    ifcField("fte_match_set_misc4", "prog_sample_field_id_3", 0xe0, 32),
}

// ProgSamples are misc4's (value, id) pairs in order.
func ProgSamples() [4][2]Field {
	m := FTEMatchSetMisc4
	return [4][2]Field{
		{m.ProgSampleFieldValue0, m.ProgSampleFieldID0}, {m.ProgSampleFieldValue1, m.ProgSampleFieldID1},
		{m.ProgSampleFieldValue2, m.ProgSampleFieldID2}, {m.ProgSampleFieldValue3, m.ProgSampleFieldID3},
	}
}

// ParseGraphSample is one entry of a node's sample table (mlx5_prm.h struct
// mlx5_ifc_parse_graph_flow_match_sample_bits, 128 bits).
var ParseGraphSample = struct {
	En              Field
	OffsetMode      Field
	FieldOffset     Field
	FieldOffsetSh   Field
	FieldBaseOffset Field
	TunnelMode      Field
	FieldOffsetMask Field
	FieldID         Field
}{
	En:              dpdkIfcField("parse_graph_flow_match_sample", "flow_match_sample_en", 0x0, 1),
	OffsetMode:      dpdkIfcField("parse_graph_flow_match_sample", "flow_match_sample_offset_mode", 0x4, 4),
	FieldOffset:     dpdkIfcField("parse_graph_flow_match_sample", "flow_match_sample_field_offset", 0x10, 16),
	FieldOffsetSh:   dpdkIfcField("parse_graph_flow_match_sample", "flow_match_sample_field_offset_shift", 0x24, 4),
	FieldBaseOffset: dpdkIfcField("parse_graph_flow_match_sample", "flow_match_sample_field_base_offset", 0x28, 8),
	TunnelMode:      dpdkIfcField("parse_graph_flow_match_sample", "flow_match_sample_tunnel_mode", 0x3d, 3),
	FieldOffsetMask: dpdkIfcField("parse_graph_flow_match_sample", "flow_match_sample_field_offset_mask", 0x40, 32),
	FieldID:         dpdkIfcField("parse_graph_flow_match_sample", "flow_match_sample_field_id", 0x60, 32),
}

// ParseGraphArc is one input or output arc of a node (mlx5_prm.h struct
// mlx5_ifc_parse_graph_arc_bits, 128 bits).
var ParseGraphArc = struct {
	StartInnerTunnel      Field
	ArcParseGraphNode     Field
	CompareConditionValue Field
	ParseGraphNodeHandle  Field
}{
	StartInnerTunnel:      dpdkIfcField("parse_graph_arc", "start_inner_tunnel", 0x0, 1),
	ArcParseGraphNode:     dpdkIfcField("parse_graph_arc", "arc_parse_graph_node", 0x8, 8),
	CompareConditionValue: dpdkIfcField("parse_graph_arc", "compare_condition_value", 0x10, 16),
	ParseGraphNodeHandle:  dpdkIfcField("parse_graph_arc", "parse_graph_node_handle", 0x20, 32),
}

// ParseGraphFlex is the flex parser node (mlx5_prm.h struct mlx5_ifc_parse_graph_flex_bits,
// 0xd00 bits): the header's length, then eight samples, eight input and eight output arcs of
// 128 bits each.
var ParseGraphFlex = struct {
	ModifyFieldSelect       Field
	HeaderLengthBaseValue   Field
	HeaderLengthFieldShift  Field
	HeaderLengthMode        Field
	HeaderLengthFieldOffset Field
	NextHeaderFieldOffset   Field
	NextHeaderFieldSize     Field
	HeaderLengthFieldMask   Field
	SampleTable             Field
	InputArc                Field
	OutputArc               Field
}{
	ModifyFieldSelect:       dpdkIfcField("parse_graph_flex", "modify_field_select", 0x0, 64),
	HeaderLengthBaseValue:   dpdkIfcField("parse_graph_flex", "header_length_base_value", 0x60, 16),
	HeaderLengthFieldShift:  dpdkIfcField("parse_graph_flex", "header_length_field_shift", 0x74, 4),
	HeaderLengthMode:        dpdkIfcField("parse_graph_flex", "header_length_mode", 0x7c, 4),
	HeaderLengthFieldOffset: dpdkIfcField("parse_graph_flex", "header_length_field_offset", 0x80, 16),
	NextHeaderFieldOffset:   dpdkIfcField("parse_graph_flex", "next_header_field_offset", 0x90, 16),
	NextHeaderFieldSize:     dpdkIfcField("parse_graph_flex", "next_header_field_size", 0xbb, 5),
	HeaderLengthFieldMask:   dpdkIfcField("parse_graph_flex", "header_length_field_mask", 0xc0, 32),
	SampleTable:             dpdkIfcField("parse_graph_flex", "sample_table", 0x100, 0x400),
	InputArc:                dpdkIfcField("parse_graph_flex", "input_arc", 0x500, 0x400),
	OutputArc:               dpdkIfcField("parse_graph_flex", "output_arc", 0x900, 0x400),
}

// FlexParserObj is create_flex_parser_in/out (mlx5_prm.h): the general-object command header
// (in) or output header (out), 0x80 bits, then the node.
var FlexParserObj = struct {
	Flex Field
}{
	Flex: dpdkIfcField("create_flex_parser_in", "flex", 0x80, 0xd00),
}

// ParseGraphEntries is the number of samples, input arcs and output arcs a node has room for
// (mlx5_prm.h MLX5_GRAPH_NODE_SAMPLE_NUM, MLX5_GRAPH_NODE_ARC_NUM: 8 each).
const ParseGraphEntries = 8

// GraphSample is sample i of a node at base (the node's bit offset in its buffer).
func GraphSample(base uint32, i int) uint32 {
	return base + ParseGraphFlex.SampleTable.Off + uint32(i)*(ParseGraphFlex.SampleTable.Width/ParseGraphEntries)
}

// GraphInArc is input arc i of a node at base.
func GraphInArc(base uint32, i int) uint32 {
	return base + ParseGraphFlex.InputArc.Off + uint32(i)*(ParseGraphFlex.InputArc.Width/ParseGraphEntries)
}

// GraphOutArc is output arc i of a node at base.
func GraphOutArc(base uint32, i int) uint32 {
	return base + ParseGraphFlex.OutputArc.Off + uint32(i)*(ParseGraphFlex.OutputArc.Width/ParseGraphEntries)
}

// ParseGraphNodeCap is the PARSE_GRAPH_NODE capability page (mlx5_prm.h struct
// mlx5_ifc_parse_graph_node_cap_bits): the arc node kinds a node may be entered from (node_in)
// and lead to (node_out) as bitmaps indexed by arc node number, the header-length and sample
// offset modes as bitmaps indexed by mode, and the limits.
var ParseGraphNodeCap = struct {
	NodeIn                Field
	NodeOut               Field
	HeaderLengthMode      Field
	SampleOffsetMode      Field
	MaxNumArcIn           Field
	MaxNumArcOut          Field
	MaxNumSample          Field
	SampleIDInOut         Field
	MaxBaseHeaderLength   Field
	MaxSampleBaseOffset   Field
	MaxNextHeaderOffset   Field
	HeaderLengthMaskWidth Field
}{
	NodeIn:                dpdkIfcField("parse_graph_node_cap", "node_in", 0x0, 32),
	NodeOut:               dpdkIfcField("parse_graph_node_cap", "node_out", 0x20, 32),
	HeaderLengthMode:      dpdkIfcField("parse_graph_node_cap", "header_length_mode", 0x40, 16),
	SampleOffsetMode:      dpdkIfcField("parse_graph_node_cap", "sample_offset_mode", 0x50, 16),
	MaxNumArcIn:           dpdkIfcField("parse_graph_node_cap", "max_num_arc_in", 0x60, 8),
	MaxNumArcOut:          dpdkIfcField("parse_graph_node_cap", "max_num_arc_out", 0x68, 8),
	MaxNumSample:          dpdkIfcField("parse_graph_node_cap", "max_num_sample", 0x70, 8),
	SampleIDInOut:         dpdkIfcField("parse_graph_node_cap", "sample_id_in_out", 0x7f, 1),
	MaxBaseHeaderLength:   dpdkIfcField("parse_graph_node_cap", "max_base_header_length", 0x80, 16),
	MaxSampleBaseOffset:   dpdkIfcField("parse_graph_node_cap", "max_sample_base_offset", 0x98, 8),
	MaxNextHeaderOffset:   dpdkIfcField("parse_graph_node_cap", "max_next_header_offset", 0xa0, 16),
	HeaderLengthMaskWidth: dpdkIfcField("parse_graph_node_cap", "header_length_mask_width", 0xb8, 8),
}

// Flex parser constants (mlx5_prm.h; no installed header has them, so they carry no C: mark).
const (
	// GeneralObjTypeFlexParseGraph is MLX5_GENERAL_OBJ_TYPE_FLEX_PARSE_GRAPH; cmd_hca_cap's
	// general_obj_types has bit 1<<0x22 set when the device supports it
	// (MLX5_GENERAL_OBJ_TYPES_CAP_PARSE_GRAPH_FLEX_NODE).
	GeneralObjTypeFlexParseGraph = 0x22
	// CapTypeParseGraphNode is the capability page's type (op_mod
	// MLX5_GET_HCA_CAP_OP_MOD_PARSE_GRAPH_NODE_CAP = 0x1c << 1).
	CapTypeParseGraphNode CapType = 0x1c

	// Arc node numbers (enum mlx5_parse_graph_arc_node_index): MAC compares the EtherType
	// after the VLAN tags, UDP the destination port.
	GraphArcNodeMAC = 0x2
	GraphArcNodeUDP = 0x5

	// GraphNodeLenFixed is header_length_mode 0: the header is header_length_base_value
	// bytes (MLX5_GRAPH_NODE_LEN_FIXED).
	GraphNodeLenFixed = 0x0
	// GraphSampleOffsetFixed is flow_match_sample_offset_mode 0: the sample is at
	// flow_match_sample_field_base_offset bytes into the header (MLX5_GRAPH_SAMPLE_OFFSET_FIXED).
	GraphSampleOffsetFixed = 0x0
)
