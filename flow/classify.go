package flow

import (
	"encoding/binary"
	"net/netip"
)

// EtherTypes and protocol numbers the classifier understands.
const (
	EtherTypeIPv4  = 0x0800
	EtherTypeIPv6  = 0x86DD
	EtherTypeVLAN  = 0x8100 // IEEE 802.1Q
	EtherTypeQinQ  = 0x88A8 // IEEE 802.1ad
	EtherTypeECPRI = 0xAEFE // eCPRI over Ethernet (eCPRI specification v2.0 §3.1)
	EtherTypeTEB   = 0x6558 // transparent Ethernet bridging: NVGRE payload (RFC 7637)
	protoUDP       = 17
	protoGRE       = 47
)

// tuple is what one IPv4 header (and its UDP header) yielded.
type tuple struct {
	ipv4, udp    bool
	ipv6         bool // an IPv6 header (outer only): src6, dst6 set, src and dst not
	src, dst     [4]byte
	src6, dst6   [16]byte
	sport, dport uint16
	iplen        uint16
	l4off        int
	end          int  // where the IPv4 packet ends in the frame: off + tot_len, or the frame's end
	frag         bool // a fragment: more-fragments set or a non-zero offset
	proto        uint8
}

func (t *tuple) rss() Tuple {
	if t.ipv6 {
		return Tuple{Src: netip.AddrFrom16(t.src6), Dst: netip.AddrFrom16(t.dst6), SrcPort: t.sport, DstPort: t.dport}
	}
	return Tuple{Src: netip.AddrFrom4(t.src), Dst: netip.AddrFrom4(t.dst), SrcPort: t.sport, DstPort: t.dport}
}

// packet is the parse of one frame, field for field what the XDP program records.
type packet struct {
	frame        []byte
	outer, inner tuple
	vlan         bool
	ecpri        bool
	ecpriType    uint8
	hasPCID      bool
	pcid         uint16
	tun          Decap
	tunKey       uint32
}

func be16(b []byte, off int) uint16 { return binary.BigEndian.Uint16(b[off:]) }

// parse reads a frame's headers; vxlanPort 0 disables VXLAN detection.
//
// Headers are read within the IPv4 packet only: the UDP header and a tunnel's payload must
// lie inside the outer header's tot_len (bytes after it are Ethernet padding or garbage, not
// part of the packet), and the IHL must fit in tot_len. A fragment is never decapsulated
// (its inner frame is incomplete), nor is GRE of a version other than 0 (RFC 2784; version
// 1 is PPTP's enhanced GRE, RFC 2637, whose payload is PPP).
func parse(b []byte, vxlanPort uint16) *packet {
	p := &packet{frame: b}
	if len(b) < 14 {
		return p
	}
	l3, et := 14, be16(b, 12)
	for tag := 0; tag < 2 && (et == EtherTypeVLAN || et == EtherTypeQinQ); tag++ {
		if len(b) < l3+4 {
			return p
		}
		p.vlan = true
		et = be16(b, l3+2)
		l3 += 4
	}
	if et == EtherTypeVLAN || et == EtherTypeQinQ {
		return p // more than two tags: not parsed further
	}
	switch et {
	case EtherTypeECPRI:
		if len(b) >= l3+2 {
			p.ecpri, p.ecpriType = true, b[l3+1]
			if len(b) >= l3+6 {
				p.hasPCID, p.pcid = true, be16(b, l3+4)
			}
		}
		return p
	case EtherTypeIPv6:
		parseIPv6(b, l3, &p.outer) // no tunnels over IPv6
		return p
	case EtherTypeIPv4:
	default:
		return p
	}
	if !parseIPv4(b, l3, &p.outer) || !p.outer.ipv4 {
		return p
	}
	o := &p.outer
	b = b[:o.end] // a tunnel's payload ends with the outer packet
	if o.frag {
		return p // a fragment's tunnel payload is incomplete: never decapsulated
	}
	switch {
	case o.udp && vxlanPort != 0 && o.dport == vxlanPort:
		// VXLAN (RFC 7348): 8-byte header with the I flag (0x08) and a 24-bit VNI, then the
		// inner Ethernet frame.
		vx := o.l4off + 8
		if len(b) < vx+8+14 || b[vx]&0x08 == 0 {
			return p
		}
		p.tun, p.tunKey = DecapVXLAN, binary.BigEndian.Uint32(b[vx+4:])>>8
		if be16(b, vx+8+12) == EtherTypeIPv4 {
			parseIPv4(b, vx+8+14, &p.inner)
		}
	case o.proto == protoGRE && o.l4off > 0:
		// GRE (RFC 2784/2890): flags C (checksum), K (key), S (sequence) each add 4 bytes.
		g := o.l4off
		if len(b) < g+4 {
			return p
		}
		fl, gp := be16(b, g), be16(b, g+2)
		if fl&7 != 0 {
			return p // GRE version ≠ 0: not a tunnel we decapsulate
		}
		c, k, s := int(fl>>15&1), int(fl>>13&1), int(fl>>12&1)
		hl := 4 + 4*(c+k+s)
		if len(b) < g+hl {
			return p
		}
		if gp == EtherTypeTEB {
			// NVGRE (RFC 7637): K set, key = 24-bit VSID (TNI) + 8-bit FlowID, inner Ethernet.
			if k == 0 || len(b) < g+hl+14 {
				return p
			}
			p.tun, p.tunKey = DecapNVGRE, binary.BigEndian.Uint32(b[g+4+4*c:])>>8
			if be16(b, g+hl+12) == EtherTypeIPv4 {
				parseIPv4(b, g+hl+14, &p.inner)
			}
			return p
		}
		p.tun, p.tunKey = DecapGRE, uint32(gp)
		if gp == EtherTypeIPv4 {
			parseIPv4(b, g+hl, &p.inner)
		}
	}
	return p
}

// parseIPv4 parses the IPv4 header at off (and a UDP header after it). It reports whether
// the IPv4 header was valid; t.udp tells about UDP. The header must fit in its
// tot_len and the UDP header must lie within it.
// parseIPv6 parses the fixed IPv6 header at off and a UDP header right after it (next
// header 17; extension headers are not walked, so a packet with any has no L4 fields). The
// UDP header must lie within the payload length.
func parseIPv6(b []byte, off int, t *tuple) {
	if len(b) < off+40 || b[off]>>4 != 6 {
		return
	}
	t.ipv6 = true
	copy(t.src6[:], b[off+8:off+24])
	copy(t.dst6[:], b[off+24:off+40])
	t.end = min(off+40+int(be16(b, off+4)), len(b))
	t.proto = b[off+6]
	t.l4off = off + 40
	if t.proto == protoUDP && t.end >= t.l4off+8 {
		t.udp = true
		t.sport, t.dport = be16(b, t.l4off), be16(b, t.l4off+2)
	}
}

func parseIPv4(b []byte, off int, t *tuple) bool {
	if len(b) < off+20 || b[off]>>4 != 4 {
		return false
	}
	ihl := int(b[off]&0x0f) * 4
	if ihl < 20 || len(b) < off+ihl {
		return false
	}
	t.iplen = be16(b, off+2)
	if int(t.iplen) < ihl {
		return false // tot_len shorter than the header: not a valid IPv4 packet
	}
	t.end = min(off+int(t.iplen), len(b))
	t.ipv4 = true
	copy(t.src[:], b[off+12:off+16])
	copy(t.dst[:], b[off+16:off+20])
	fo := be16(b, off+6)
	t.frag = fo&0x3fff != 0 // MF or an offset
	if fo&0x1fff != 0 {
		return true // a later fragment: no L4 header
	}
	t.proto = b[off+9]
	t.l4off = off + ihl
	if t.proto == protoUDP && t.end >= t.l4off+8 {
		t.udp = true
		t.sport, t.dport = be16(b, t.l4off), be16(b, t.l4off+2)
	}
	return true
}

// matches reports whether r matches p, and which tuple it matched (for RSS).
func (r *Rule) matches(p *packet) (*tuple, bool) {
	if r.VLANPop && !p.vlan {
		return nil, false
	}
	if r.EthDst != nil && (len(p.frame) < 14 || string(p.frame[0:6]) != string(r.EthDst)) {
		return nil, false
	}
	if r.EthSrc != nil && (len(p.frame) < 14 || string(p.frame[6:12]) != string(r.EthSrc)) {
		return nil, false
	}
	t := &p.outer
	if r.Decap != DecapNone {
		if p.tun != r.Decap || p.tunKey != r.TunnelKey {
			return nil, false
		}
		if r.OuterSrc.IsValid() && p.outer.src != r.OuterSrc.As4() {
			return nil, false
		}
		if r.OuterDst.IsValid() && p.outer.dst != r.OuterDst.As4() {
			return nil, false
		}
		t = &p.inner
	}
	if r.IPv6Src.IsValid() && (!t.ipv6 || t.src6 != r.IPv6Src.As16()) {
		return nil, false
	}
	if r.IPv6Dst.IsValid() && (!t.ipv6 || t.dst6 != r.IPv6Dst.As16()) {
		return nil, false
	}
	if r.IPv4Src.IsValid() && (!t.ipv4 || t.src != r.IPv4Src.As4()) {
		return nil, false
	}
	if r.IPv4Dst.IsValid() && (!t.ipv4 || t.dst != r.IPv4Dst.As4()) {
		return nil, false
	}
	if r.IPv4Len != 0 && (!t.ipv4 || t.iplen != r.IPv4Len) {
		return nil, false
	}
	if !r.UDPSrc.Any() && (!t.udp || !r.UDPSrc.Contains(t.sport)) {
		return nil, false
	}
	if !r.UDPDst.Any() && (!t.udp || !r.UDPDst.Contains(t.dport)) {
		return nil, false
	}
	if f := r.Flex; f != nil {
		o := &p.outer
		at := o.l4off + 8 + f.Offset
		if !o.ipv4 || !o.udp || o.dport != f.UDPPort || min(len(p.frame), o.end) < at+4 {
			return nil, false
		}
		if binary.BigEndian.Uint32(p.frame[at:])&f.Mask != f.Value {
			return nil, false
		}
	}
	if e := r.ECPRI; e != nil {
		if !p.ecpri {
			return nil, false
		}
		if e.MsgType != nil && p.ecpriType != *e.MsgType {
			return nil, false
		}
		if e.PCID != nil && (!p.hasPCID || p.pcid != *e.PCID) {
			return nil, false
		}
	}
	return t, true
}

// Action is what happens to a received frame.
type Action uint8

// Actions.
const (
	ActionPass  Action = iota // to the kernel (flow isolation, unmatched)
	ActionSteer               // to an RX queue
	ActionDrop                // dropped (drop_all_traffic)
)

func (a Action) String() string { return [...]string{"pass", "steer", "drop"}[a] }

// Verdict is the classification of one frame.
type Verdict struct {
	Action  Action
	Queue   int    // RX queue position (ActionSteer, and the queue a drop is counted on)
	FlowID  uint32 // matched rule's flow id; 0 when unmatched
	Rule    int    // matched slot, -1 when none
	VLANPop bool
	Decap   Decap
}

// Table is a port's steering state: rules by slot (nil = free), and what happens to frames
// no rule matches. It is the Go reference of the XDP program, used to test it and by engines
// that steer in software.
type Table struct {
	Slots        []*Rule
	Isolation    bool // unmatched frames go to the kernel; else to DefaultQueue
	DefaultQueue int
	DropAll      bool
	Key          []byte // Toeplitz key (nil: DefaultRSSKey)
}

// VXLANPort is the outer UDP port the table's VXLAN decap rules use (0 = none). Compile
// checks that they agree (CheckTable).
func (t *Table) VXLANPort() uint16 {
	for _, r := range t.Slots {
		if r != nil && r.Decap == DecapVXLAN {
			return r.VXLANPort
		}
	}
	return 0
}

// Classify decides what happens to a frame.
func (t *Table) Classify(frame []byte) Verdict { return t.classify(parse(frame, t.VXLANPort())) }

func (t *Table) classify(p *packet) Verdict {
	key := t.Key
	if key == nil {
		key = DefaultRSSKey[:]
	}
	for i, r := range t.Slots {
		if r == nil {
			continue
		}
		tp, ok := r.matches(p)
		if !ok {
			continue
		}
		v := Verdict{Action: ActionSteer, Queue: r.Queues[0], FlowID: r.FlowID, Rule: i, VLANPop: r.VLANPop, Decap: r.Decap}
		if len(r.Queues) > 1 {
			v.Queue = r.Queues[RSSIndex(tp.rss().Hash(key), len(r.Queues))]
		}
		if t.DropAll {
			v.Action = ActionDrop
		}
		return v
	}
	switch {
	case t.Isolation:
		return Verdict{Action: ActionPass, Rule: -1}
	case t.DropAll:
		return Verdict{Action: ActionDrop, Queue: t.DefaultQueue, Rule: -1}
	}
	return Verdict{Action: ActionSteer, Queue: t.DefaultQueue, Rule: -1}
}
