package datapath

import (
	"encoding/binary"

	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// The flex parser: parse-graph nodes (the PRM's FLEX_PARSE_GRAPH general object) add headers
// the fixed parser does not know, and their samples feed fte_match_set_misc4's programmable
// sample matches. The model's parser enters a node from the two arcs daqiri's engines use
// (DPDK's mlx5_flex_parser_ecpri_alloc and upstream daqiri's ibverbs engine do the same):
// after the Ethernet header and its VLAN tags on an EtherType (arc node MAC), and after an
// outer UDP header on a destination port (arc node UDP). A node's header has a fixed length;
// a frame that ends, or whose IP packet ends (UDP arc), before the header does has no
// samples from it, as the parser does not walk past the packet.

// FlexArc is one input arc: the arc node kind (prm.GraphArcNodeMAC or GraphArcNodeUDP) and the
// EtherType or UDP port it compares.
type FlexArc struct {
	Node  uint8
	Value uint16
}

// FlexSample is one sample: the id the device gave it and its byte offset in the header.
type FlexSample struct {
	ID     uint32
	Offset int
}

// FlexNodeParams is a flex parser node as the datapath applies it.
type FlexNodeParams struct {
	ID      uint32
	Length  int // the fixed header length in bytes
	Arcs    []FlexArc
	Samples []FlexSample
}

// CreateFlexNode adds a node to the port's parser.
func (n *NIC) CreateFlexNode(p FlexNodeParams) error {
	n.lock()
	defer n.unlock()
	if n.flex == nil {
		n.flex = map[uint32]*FlexNodeParams{}
	}
	if n.flex[p.ID] != nil {
		return errf(StatusBadParam, SyndromeDuplicateID, "flex parser node %#x exists", p.ID)
	}
	p.Arcs = append([]FlexArc(nil), p.Arcs...)
	p.Samples = append([]FlexSample(nil), p.Samples...)
	n.flex[p.ID] = &p
	return nil
}

// DestroyFlexNode removes a node.
func (n *NIC) DestroyFlexNode(id uint32) error {
	n.lock()
	defer n.unlock()
	if n.flex[id] == nil {
		return errf(StatusBadParam, SyndromeUnknownID, "no flex parser node %#x", id)
	}
	delete(n.flex, id)
	return nil
}

// sampleFrame returns the sample registers a frame fills: sample id to its 32-bit value
// (network byte order read as big-endian), nil when no node applies.
func (n *NIC) sampleFrame(p *packet) map[uint32]uint32 {
	if len(n.flex) == 0 {
		return nil
	}
	var out map[uint32]uint32
	f := p.frame
	o := &p.outer
	for _, node := range n.flex {
		for _, a := range node.Arcs {
			start, end := -1, len(f)
			switch a.Node {
			case prm.GraphArcNodeMAC:
				if l2 := l2End(f); l2 > 0 && o.ethertype == a.Value {
					start = l2
				}
			case prm.GraphArcNodeUDP:
				if o.l4 >= 0 && o.proto == protoUDP && o.dport == a.Value {
					start, end = o.l4+8, ipPayloadEnd(f, o)
				}
			}
			if start < 0 || start+node.Length > end {
				continue
			}
			for _, s := range node.Samples {
				if at := start + s.Offset; at+4 <= end {
					if out == nil {
						out = map[uint32]uint32{}
					}
					out[s.ID] = binary.BigEndian.Uint32(f[at:])
				}
			}
			break // one arc enters the node
		}
	}
	return out
}

// l2End is where the header after Ethernet and up to two VLAN tags starts (0: no L2).
func l2End(f []byte) int {
	if len(f) < 14 {
		return 0
	}
	et, p := binary.BigEndian.Uint16(f[12:]), 14
	for k := 0; k < 2 && (et == etherCVLAN || et == etherSVLAN) && len(f) >= p+4; k++ {
		et, p = binary.BigEndian.Uint16(f[p+2:]), p+4
	}
	return p
}

// misc4Of is the misc_parameters_4 section in an fte_match_param.
var misc4Of = prm.FTEMatchParam.MiscParameters4

// hasMisc4 reports whether a group's effective mask uses misc_parameters_4.
func hasMisc4(mask []byte) bool {
	s := misc4Of.ByteOff()
	for _, b := range mask[s : s+misc4Of.Bytes()] {
		if b != 0 {
			return true
		}
	}
	return false
}

// flexMatch is a frame's match parameters with its samples, for groups that use misc4: each
// entry names its own samples (prog_sample_field_id_N), so the frame's misc4 section is
// written per entry from the sample registers before the masked comparison.
type flexMatch struct {
	samples map[uint32]uint32
	buf     []byte
}

func newFlexMatch(n *NIC, p *packet, mp []byte) *flexMatch {
	return &flexMatch{samples: n.sampleFrame(p), buf: append([]byte(nil), mp...)}
}

// equal compares under mask as maskedEqual, with the frame's misc4 filled for entry value v: a
// sample id the frame has no register for reads as its complement, so it never matches.
func (x *flexMatch) equal(mask, v []byte) bool {
	s := misc4Of.ByteOff()
	if len(v) < s+misc4Of.Bytes() || len(x.buf) < s+misc4Of.Bytes() {
		return false // no misc4 section to compare
	}
	v4, b4 := v[s:], x.buf[s:]
	for _, pair := range prm.ProgSamples() {
		id := uint32(pair[1].Get(v4))
		val, ok := x.samples[id]
		if !ok {
			id = ^id
		}
		pair[1].Set(b4, uint64(id))
		pair[0].Set(b4, uint64(val))
	}
	return maskedEqual(mask, x.buf, v)
}
