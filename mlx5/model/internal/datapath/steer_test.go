package datapath

import (
	"encoding/binary"
	"math/rand/v2"
	"net"
	"testing"

	"github.com/daqiri-go/daqiri/flow"
	"github.com/daqiri-go/daqiri/mlx5/prm"
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// refRule is a flow entry as the reference classifier sees it: which fields it constrains
// (its group's criteria) and the values.
type refRule struct {
	index            uint32
	useProto, useDst bool
	useNet, useVLAN  bool
	proto            uint8
	dport            uint16
	net              [3]byte // source /24
	tagged           bool
	vid              uint16
	drop, toTable    bool
	tir              int
	flowTag          uint32
}

type refTable struct {
	rules []refRule // by index
	miss  bool      // miss goes to table 2
}

// refFrame is a frame decoded by gopacket (independently of the model's parser).
type refFrame struct {
	tagged       bool
	vid          uint16
	src, dst     net.IP
	proto        uint8
	sport, dport uint16
}

func decodeRef(t *testing.T, f []byte) refFrame {
	p := gopacket.NewPacket(f, layers.LayerTypeEthernet, gopacket.Default)
	var r refFrame
	if d, ok := p.Layer(layers.LayerTypeDot1Q).(*layers.Dot1Q); ok {
		r.tagged, r.vid = true, d.VLANIdentifier
	}
	ip, ok := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	if !ok {
		t.Fatalf("gopacket finds no IPv4 in %x", f)
	}
	r.src, r.dst, r.proto = ip.SrcIP.To4(), ip.DstIP.To4(), uint8(ip.Protocol)
	if u, ok := p.Layer(layers.LayerTypeUDP).(*layers.UDP); ok {
		r.sport, r.dport = uint16(u.SrcPort), uint16(u.DstPort)
	}
	if c, ok := p.Layer(layers.LayerTypeTCP).(*layers.TCP); ok {
		r.sport, r.dport = uint16(c.SrcPort), uint16(c.DstPort)
	}
	return r
}

func (r refRule) matches(f refFrame) bool {
	if r.useProto && f.proto != r.proto {
		return false
	}
	if r.useDst && f.dport != r.dport {
		return false
	}
	if r.useNet && [3]byte(f.src[:3]) != r.net {
		return false
	}
	if r.useVLAN && (f.tagged != r.tagged || (r.tagged && f.vid != r.vid)) {
		return false
	}
	return true
}

// lookup is the first rule by index that matches.
func (t *refTable) lookup(f refFrame) *refRule {
	var best *refRule
	for i := range t.rules {
		r := &t.rules[i]
		if r.matches(f) && (best == nil || r.index < best.index) {
			best = r
		}
	}
	return best
}

// criteria and value bytes for a rule of a group (fte_match_param).
func ruleBytes(r refRule, mask bool) []byte {
	b := make([]byte, matchParamBytes)
	o := b[prm.FTEMatchParam.OuterHeaders.ByteOff():]
	l := prm.FTEMatchSetLyr24
	pick := func(v, m uint64) uint64 {
		if mask {
			return m
		}
		return v
	}
	if r.useProto {
		l.IPProtocol.Set(o, pick(uint64(r.proto), 0xff))
	}
	if r.useDst {
		if r.proto == protoTCP {
			l.TCPDport.Set(o, pick(uint64(r.dport), 0xffff))
		} else {
			l.UDPDport.Set(o, pick(uint64(r.dport), 0xffff))
		}
	}
	if r.useNet {
		src := l.SrcIPv4SrcIPv6.Slice(o)
		if mask {
			copy(src[12:], []byte{0xff, 0xff, 0xff, 0})
		} else {
			copy(src[12:], r.net[:])
		}
	}
	if r.useVLAN {
		var tag uint64
		if r.tagged {
			tag = 1
		}
		l.CVLANTag.Set(o, pick(tag, 1))
		if r.tagged || mask {
			l.FirstVid.Set(o, pick(uint64(r.vid), 0xfff))
		}
	}
	return b
}

// TestSteeringProperty sends random frames through random flow tables (random groups of
// criteria over IP protocol, L4 destination port, source /24 and VLAN; drop, forward to a
// direct TIR, forward to an RSS TIR, forward to the next table; miss to the next table or
// drop) and checks every frame's fate against a reference classifier working on gopacket's
// decoding of the frame, and every RSS hash against flow.Toeplitz.
func TestSteeringProperty(t *testing.T) {
	for seed := uint64(1); seed <= 12; seed++ {
		steeringRound(t, rand.New(rand.NewPCG(seed, seed*7919)))
	}
}

func steeringRound(t *testing.T, rnd *rand.Rand) {
	e := newEnv(t)
	// RQ 0 behind a direct TIR, RQs 1-4 behind an RSS TIR.
	var rqs []*testRQ
	for i := 0; i < 5; i++ {
		r := e.newRQ(e.newCQ(4, nil), 4, 2048, 0, 0)
		r.post(16)
		rqs = append(rqs, r)
	}
	tirs := []uint32{e.id(), e.id()}
	must(t, e.nic.CreateTIR(TIRParams{TIRN: tirs[0], InlineRQ: rqs[0].rqn}))
	rqtn := e.id()
	must(t, e.nic.CreateRQT(RQTParams{RQTN: rqtn, RQNs: []uint32{rqs[1].rqn, rqs[2].rqn, rqs[3].rqn, rqs[4].rqn}}))
	var key [40]byte
	for i := range key {
		key[i] = byte(rnd.Uint32())
	}
	sel := HashFields{UDP: rnd.IntN(2) == 0, Selected: uint32(1 + rnd.IntN(15))}
	must(t, e.nic.CreateTIR(TIRParams{TIRN: tirs[1], Indirect: true, RQT: rqtn, HashFn: 2, Key: key, Outer: sel}))

	ids := []uint32{e.id(), e.id()}
	ref := []*refTable{{miss: rnd.IntN(2) == 0}, {}}
	must(t, e.nic.CreateFlowTable(FlowTableParams{Type: TableNICRX, ID: ids[1], Level: 1, LogSize: 6}))
	p1 := FlowTableParams{Type: TableNICRX, ID: ids[0], LogSize: 6}
	if ref[0].miss {
		p1.MissAction, p1.MissTable = 1, ids[1]
	}
	must(t, e.nic.CreateFlowTable(p1))
	protos := []uint8{protoTCP, protoUDP}
	ports := []uint16{53, 80, 443, 8080}
	for ti := 0; ti < 2; ti++ {
		start := uint32(0)
		for g := 0; g < 1+rnd.IntN(4); g++ {
			shape := refRule{useProto: rnd.IntN(2) == 0, useNet: rnd.IntN(3) == 0, useVLAN: rnd.IntN(3) == 0}
			shape.useDst = shape.useProto && rnd.IntN(2) == 0
			if !shape.useProto && !shape.useNet && !shape.useVLAN {
				shape.useNet = true
			}
			size := uint32(1 + rnd.IntN(6))
			gid := e.id()
			proto := protos[rnd.IntN(2)] // a group with a port criterion is for one protocol
			shape.proto = proto
			crit := ruleBytes(shape, true)
			must(t, e.nic.CreateFlowGroup(FlowGroupParams{Type: TableNICRX, Table: ids[ti], ID: gid, Start: start, End: start + size - 1, CriteriaEnable: 1, Criteria: crit}))
			for k := uint32(0); k < size; k++ {
				r := shape
				r.index = start + k
				if !r.useDst {
					r.proto = protos[rnd.IntN(2)]
				}
				r.dport = ports[rnd.IntN(len(ports))]
				r.net = [3]byte{10, 0, byte(rnd.IntN(3))}
				r.tagged = rnd.IntN(2) == 0
				r.vid = uint16(1 + rnd.IntN(3))
				fp := FTEParams{Type: TableNICRX, Table: ids[ti], Group: gid, Index: r.index, Value: ruleBytes(r, false)}
				switch a := rnd.IntN(4); {
				case a == 0:
					r.drop = true
					fp.Action = ActionDrop
				case a == 1 && ti == 0:
					r.toTable = true
					fp.Action, fp.Dests = ActionFwdDest, []Dest{{DestFlowTable, ids[1]}}
				default:
					r.tir = rnd.IntN(2)
					r.flowTag = uint32(1 + rnd.IntN(0xffffff))
					fp.Action, fp.FlowTag, fp.Dests = ActionFwdDest, r.flowTag, []Dest{{DestTIR, tirs[r.tir]}}
				}
				if err := e.nic.SetFTE(fp); err != nil {
					if de, ok := err.(*Error); ok && de.Syndrome == SyndromeDuplicateID {
						continue // same match as an entry before it in the group
					}
					t.Fatal(err)
				}
				ref[ti].rules = append(ref[ti].rules, r)
			}
			start += size
		}
	}
	must(t, e.nic.SetRoot(TableNICRX, ids[0]))

	var wantMiss, wantDrop, rss uint64
	for n := 0; n < 300; n++ {
		f := randomFrame(t, rnd)
		rf := decodeRef(t, f)
		// Reference: table 1, then table 2 on a forward or a miss to it.
		var hit *refRule
		miss := false
		if hit = ref[0].lookup(rf); hit == nil || hit.toTable {
			if hit == nil && !ref[0].miss {
				miss = true
			} else if hit = ref[1].lookup(rf); hit == nil {
				miss = true
			}
		}
		e.nic.Receive(f)
		e.nic.Step(4)
		var got []int
		var cqe [64]byte
		for i, r := range rqs {
			for _, c := range r.cq.poll() {
				got = append(got, i)
				cqe = c
				r.post(1)
			}
		}
		switch {
		case miss || hit.drop:
			if miss {
				wantMiss++
			} else {
				wantDrop++
			}
			if len(got) != 0 {
				t.Fatalf("frame %d (%+v) should be dropped (miss %v), landed in RQ %v", n, rf, miss, got)
			}
			continue
		}
		if len(got) != 1 {
			t.Fatalf("frame %d (%+v): %d CQEs, want 1 (rule %+v)", n, rf, len(got), *hit)
		}
		if tag := uint32(prm.CQE64.SopDropQPN.Get(cqe[:])) & 0xffffff; tag != hit.flowTag {
			t.Fatalf("frame %d: flow tag %#x, want %#x", n, tag, hit.flowTag)
		}
		want := 0
		if hit.tir == 1 {
			rss++
			h := refHash(key[:], sel, rf)
			want = 1 + int(h&3)
			if gh := uint32(prm.CQE64.RSSHashResult.Get(cqe[:])); gh != h {
				t.Fatalf("frame %d: hash %#x, want %#x", n, gh, h)
			}
		}
		if got[0] != want {
			t.Fatalf("frame %d (%+v): RQ %d, want %d (rule %+v)", n, rf, got[0], want, *hit)
		}
	}
	c := e.nic.Counters(false)
	t.Logf("rules %d+%d: %d delivered (%d through RSS), %d missed, %d dropped by a rule", len(ref[0].rules), len(ref[1].rules), c.RXPackets, rss, wantMiss, wantDrop)
	if c.RXSteeringMiss != wantMiss || c.RXDropRule != wantDrop {
		t.Fatalf("counters miss %d drop %d, want %d %d", c.RXSteeringMiss, c.RXDropRule, wantMiss, wantDrop)
	}
}

// refHash is the RSS hash by Microsoft's input order, with flow.Toeplitz: the L4 ports only
// when the frame's protocol is the selector's.
func refHash(key []byte, sel HashFields, f refFrame) uint32 {
	var in []byte
	if sel.Selected&HashSrcIP != 0 {
		in = append(in, f.src...)
	}
	if sel.Selected&HashDstIP != 0 {
		in = append(in, f.dst...)
	}
	want := uint8(protoTCP)
	if sel.UDP {
		want = protoUDP
	}
	if f.proto == want {
		if sel.Selected&HashL4SPort != 0 {
			in = binary.BigEndian.AppendUint16(in, f.sport)
		}
		if sel.Selected&HashL4DPort != 0 {
			in = binary.BigEndian.AppendUint16(in, f.dport)
		}
	}
	if len(in) == 0 {
		return 0
	}
	return flow.Toeplitz(key, in)
}

// randomFrame builds a TCP or UDP frame with gopacket, tagged or not.
func randomFrame(t *testing.T, rnd *rand.Rand) []byte {
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, SrcIP: net.IP{10, 0, byte(rnd.IntN(3)), byte(rnd.Uint32())}, DstIP: net.IP{10, 9, 9, byte(rnd.IntN(4))}}
	ports := []uint16{53, 80, 443, 8080, 9999}
	var ls []gopacket.SerializableLayer
	ls = append(ls, eth)
	if rnd.IntN(2) == 0 {
		eth.EthernetType = layers.EthernetTypeDot1Q
		ls = append(ls, &layers.Dot1Q{VLANIdentifier: uint16(1 + rnd.IntN(3)), Type: layers.EthernetTypeIPv4})
	}
	ls = append(ls, ip)
	sport, dport := layers.TCPPort(1024+rnd.IntN(60000)), layers.TCPPort(ports[rnd.IntN(len(ports))])
	payload := gopacket.Payload(make([]byte, rnd.IntN(200)))
	if rnd.IntN(2) == 0 {
		ip.Protocol = layers.IPProtocolTCP
		tcp := &layers.TCP{SrcPort: sport, DstPort: dport, ACK: true, Window: 100}
		must(t, tcp.SetNetworkLayerForChecksum(ip))
		ls = append(ls, tcp, payload)
	} else {
		ip.Protocol = layers.IPProtocolUDP
		udp := &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}
		must(t, udp.SetNetworkLayerForChecksum(ip))
		ls = append(ls, udp, payload)
	}
	buf := gopacket.NewSerializeBuffer()
	must(t, gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...))
	return buf.Bytes()
}

// TestFlowCounterDuringSteps: a flow counter read (and cleared) from another goroutine while
// frames are steered counts whole frames — every read's octets are its packets times the frame
// size — and the reads and the last value add up to every frame steered. QueryFlowCounter does
// not take the port's lock (fcMu), so this runs under the race detector too. A read with the
// port's lock held by this goroutine returns as well.
func TestFlowCounterDuringSteps(t *testing.T) {
	e := newEnv(t)
	c := e.newCQ(10, nil)
	r := e.newRQ(c, 10, 2048, 0, 0)
	tirn := e.id()
	must(t, e.nic.CreateTIR(TIRParams{TIRN: tirn, InlineRQ: r.rqn}))
	must(t, e.nic.AllocFlowCounter(7))
	ft, g := e.id(), e.id()
	must(t, e.nic.CreateFlowTable(FlowTableParams{Type: TableNICRX, ID: ft, LogSize: 4}))
	must(t, e.nic.CreateFlowGroup(FlowGroupParams{Type: TableNICRX, Table: ft, ID: g, Start: 0, End: 0}))
	must(t, e.nic.SetFTE(FTEParams{Type: TableNICRX, Table: ft, Group: g, Index: 0, Action: ActionFwdDest | ActionCount,
		Counters: []uint32{7}, Dests: []Dest{{Type: DestTIR, ID: tirn}}}))
	must(t, e.nic.SetRoot(TableNICRX, ft))

	f := udpFrame([4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 5, 6, 100, 1)
	const frames = 3000
	stop := make(chan struct{})
	reads := make(chan FlowCounter, 1)
	go func() {
		var sum FlowCounter
		for {
			select {
			case <-stop:
				reads <- sum
				return
			default:
			}
			v, err := e.nic.QueryFlowCounter(7, true)
			if err != nil {
				t.Error(err)
			}
			if v.Octets != v.Packets*uint64(len(f)) {
				t.Errorf("a read saw %d packets and %d octets: not whole %d-byte frames", v.Packets, v.Octets, len(f))
			}
			sum.Packets += v.Packets
			sum.Octets += v.Octets
		}
	}()
	for i := 0; i < frames; i++ {
		if i%512 == 0 {
			r.post(512)
		}
		e.nic.Receive(f)
		if i%16 == 15 {
			e.nic.Step(64)
			c.poll()
		}
	}
	e.nic.Step(64)
	close(stop)
	sum := <-reads
	last, err := e.nic.QueryFlowCounter(7, false)
	must(t, err)
	if got := sum.Packets + last.Packets; got != frames || sum.Octets+last.Octets != frames*uint64(len(f)) {
		t.Fatalf("reads and the last value count %d packets, %d octets; want %d, %d", got, sum.Octets+last.Octets, frames, frames*len(f))
	}

	e.nic.mu.Lock()
	v, err := e.nic.QueryFlowCounter(7, false)
	e.nic.mu.Unlock()
	if err != nil || v != last {
		t.Fatalf("read with the port's lock held: %+v, %v; want %+v", v, err, last)
	}
	if _, err := e.nic.QueryFlowCounter(8, false); err == nil {
		t.Fatal("a counter that does not exist was read")
	}
}
