package datapath

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// frameSpec describes a test frame for the steering cache tests.
type frameSpec struct {
	v6, tcp, vlan, frag, vxlan bool
	ihl                        int // IPv4 header words (5 when 0)
	src, dst                   byte
	sport, dport               uint16
	payload                    int
	id                         uint16
	ttl                        byte
	flags                      byte
	proto                      byte // when not TCP/UDP (ICMP 1, GRE 47)
}

// mkFrame builds a frame of a spec: Ethernet (a VLAN tag if asked), IPv4 or IPv6, then TCP,
// UDP (to the VXLAN port with an inner Ethernet/IPv4/UDP frame if asked) or another
// protocol's bytes. Checksums are not filled in: steering does not read them.
func mkFrame(s frameSpec) []byte {
	f := []byte{0x02, 0, 0, 0, 0, s.dst, 0x02, 0, 0, 0, 0, s.src}
	if s.vlan {
		f = binary.BigEndian.AppendUint16(f, etherCVLAN)
		f = binary.BigEndian.AppendUint16(f, 100+uint16(s.dst))
	}
	l4 := s.payload
	switch {
	case s.vxlan:
		l4 += 8 + 8 + 14 + 20 + 8
	case s.tcp:
		l4 += 20
	case s.proto != 0:
	default:
		l4 += 8
	}
	proto := byte(protoUDP)
	if s.tcp {
		proto = protoTCP
	}
	if s.proto != 0 {
		proto = s.proto
	}
	if s.v6 {
		f = binary.BigEndian.AppendUint16(f, etherIPv6)
		f = append(f, 0x60|s.ttl>>4, s.ttl<<4, byte(s.id>>8), byte(s.id))
		f = binary.BigEndian.AppendUint16(f, uint16(l4))
		f = append(f, proto, s.ttl)
		for i := 0; i < 2; i++ {
			f = append(f, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, byte(i), []byte{s.src, s.dst}[i])
		}
	} else {
		ihl := max(s.ihl, 5)
		f = binary.BigEndian.AppendUint16(f, etherIPv4)
		f = append(f, 0x40|byte(ihl), s.ttl&0xfc)
		f = binary.BigEndian.AppendUint16(f, uint16(ihl*4+l4))
		f = binary.BigEndian.AppendUint16(f, s.id)
		fo := uint16(0x4000) // don't fragment
		if s.frag {
			fo = 0x2000 | uint16(s.id&7)
		}
		f = binary.BigEndian.AppendUint16(f, fo)
		f = append(f, s.ttl, proto, byte(s.id), byte(s.id>>8))
		f = append(f, 10, 0, 0, s.src, 10, 1, 0, s.dst)
		for i := 5; i < ihl; i++ {
			f = append(f, 1, 1, 1, byte(s.id))
		}
	}
	switch {
	case s.tcp:
		f = binary.BigEndian.AppendUint16(f, s.sport)
		f = binary.BigEndian.AppendUint16(f, s.dport)
		f = binary.BigEndian.AppendUint32(f, uint32(s.id)*7)
		f = binary.BigEndian.AppendUint32(f, uint32(s.id)*13)
		f = append(f, 5<<4, s.flags, 0, 100, 0, 0, 0, 0)
	case s.proto != 0:
	default:
		f = binary.BigEndian.AppendUint16(f, s.sport)
		dport := s.dport
		if s.vxlan {
			dport = vxlanPort
		}
		f = binary.BigEndian.AppendUint16(f, dport)
		f = binary.BigEndian.AppendUint16(f, uint16(l4))
		f = binary.BigEndian.AppendUint16(f, s.id)
		if s.vxlan {
			f = append(f, 0x08, 0, 0, 0, 0, 0, s.dst, 0)
			inner := udpFrame([4]byte{192, 168, 0, s.src}, [4]byte{192, 168, 1, s.dst}, s.sport, s.dport, 0, 0)
			f = append(f, inner...)
		}
	}
	for i := 0; i < s.payload; i++ {
		f = append(f, byte(i)^byte(s.id))
	}
	return f
}

// randomSpec is a frame spec drawn from a small space, so that flows repeat.
func randomSpec(rnd *rand.Rand) frameSpec {
	s := frameSpec{
		v6: rnd.IntN(4) == 0, tcp: rnd.IntN(3) == 0, vlan: rnd.IntN(6) == 0,
		src: byte(rnd.IntN(3)), dst: byte(rnd.IntN(3)),
		sport: uint16(4000 + rnd.IntN(3)), dport: []uint16{53, 80, 5000, 6000}[rnd.IntN(4)],
		payload: rnd.IntN(80), id: uint16(rnd.Uint32()), ttl: 64, flags: 0x10,
	}
	switch rnd.IntN(24) {
	case 0:
		s.frag = true
	case 1:
		s.vxlan, s.tcp = true, false
	case 2:
		s.proto, s.tcp = []byte{1, protoGRE}[rnd.IntN(2)], false
	case 3:
		s.ihl = 6 + rnd.IntN(3)
	case 4:
		s.ttl = 1
	case 5:
		s.flags = 0x02
	}
	return s
}

// TestFrameKey: frames with equal keys parse alike (but for the frame itself), whatever
// else differs: random frames of every shape (TCP, UDP, IPv4 with options, IPv6, VLAN tags,
// fragments, VXLAN, other protocols) with random bytes of their first 96 changed and random
// lengths. A frame with a key parses as the cache assumes: a whole L4 header, no tunnel, no
// VLAN tag.
func TestFrameKey(t *testing.T) {
	rnd := rand.New(rand.NewPCG(31, 6))
	same, keyed := 0, 0
	for range 60000 {
		f := mkFrame(randomSpec(rnd))
		g := append([]byte(nil), f...)
		for range 1 + rnd.IntN(3) {
			if i := rnd.IntN(min(len(g), 96)); rnd.IntN(2) == 0 {
				g[i] ^= byte(1 + rnd.IntN(255))
			} else {
				g[i] = f[rnd.IntN(len(f))]
			}
		}
		switch rnd.IntN(4) {
		case 0:
			g = g[:rnd.IntN(len(g)+1)]
		case 1:
			g = append(g, make([]byte, rnd.IntN(64))...)
		}
		for _, h := range [][]byte{f, g} {
			k, ok := keyOf(h)
			if !ok {
				if k != (frameKey{}) && len(h) < 42 {
					t.Fatalf("frame % x: no key, but key words set", h)
				}
				continue
			}
			keyed++
			p := parse(h)
			if p.outer.l4 < 0 || p.tunneled || len(p.outer.vlans) > 0 || p.outer.l3 < 0 {
				t.Fatalf("frame % x has a key, but parses as %+v", h, p)
			}
		}
		kf, okf := keyOf(f)
		kg, okg := keyOf(g)
		if !okf || !okg || kf != kg {
			continue
		}
		same++
		pf, pg := parse(f), parse(g)
		pf.frame, pg.frame = nil, nil
		if !reflect.DeepEqual(pf, pg) {
			t.Fatalf("equal keys, different parses:\n% x\n%+v\n% x\n%+v", f, pf, g, pg)
		}
	}
	t.Logf("%d frames with a key, %d pairs with equal keys and different bytes or lengths", keyed, same)
	if same < 10000 {
		t.Fatalf("only %d pairs with equal keys: the test does not exercise the cache", same)
	}
}

// cacheRig is a receiving port with two flow tables, a direct TIR and an RSS TIR over three
// RQs, whose objects a test changes at random.
type cacheRig struct {
	e        *env
	rqs      []*testRQ
	tirs     [2]uint32
	rqt      uint32
	tables   [2]uint32
	groups   [2][]uint32 // per table
	gstart   [2][]uint32
	counters []uint32
}

// fields a group may match on (outer headers).
var rigCriteria = []func(b []byte, v uint64){
	func(b []byte, v uint64) { prm.FTEMatchSetLyr24.IPProtocol.Set(b, v) },
	func(b []byte, v uint64) { prm.FTEMatchSetLyr24.UDPDport.Set(b, v) },
	func(b []byte, v uint64) { prm.FTEMatchSetLyr24.TCPDport.Set(b, v) },
	func(b []byte, v uint64) { prm.FTEMatchSetLyr24.IPVersion.Set(b, v) },
	func(b []byte, v uint64) { prm.FTEMatchSetLyr24.DstIPv4DstIPv6.Set(b, v) },
	func(b []byte, v uint64) { prm.FTEMatchSetLyr24.CVLANTag.Set(b, v) },
	func(b []byte, v uint64) { prm.FTEMatchSetLyr24.Frag.Set(b, v) },
	func(b []byte, v uint64) { prm.FTEMatchSetLyr24.SMAC150.Set(b, v) },
	func(b []byte, v uint64) { prm.FTEMatchSetLyr24.TTLHoplimit.Set(b, v) },
	func(b []byte, v uint64) { prm.FTEMatchSetLyr24.TCPFlags.Set(b, v) },
}

// criteria values drawn for the fields above.
var rigValues = [][]uint64{
	{protoUDP, protoTCP, 1}, {53, 5000, 6000, 4789}, {80, 5000}, {4, 6},
	{0x0a010000, 0x0a010001, 0x0a010002}, {0, 1}, {0, 1}, {0x00000000, 0x00000001, 0x00000002},
	{64, 1}, {0x10, 0x02},
}

func newCacheRig(t *testing.T, off bool, layout []int) *cacheRig {
	e := newEnv(t)
	e.nic.noRXCache = off
	c := &cacheRig{e: e}
	for i := 0; i < 4; i++ {
		r := e.newRQ(e.newCQ(8, nil), 6, 2048, 0, 0)
		r.post(64)
		c.rqs = append(c.rqs, r)
	}
	c.tirs = [2]uint32{e.id(), e.id()}
	must(t, e.nic.CreateTIR(TIRParams{TIRN: c.tirs[0], InlineRQ: c.rqs[0].rqn}))
	c.rqt = e.id()
	must(t, e.nic.CreateRQT(RQTParams{RQTN: c.rqt, RQNs: []uint32{c.rqs[1].rqn, c.rqs[2].rqn, c.rqs[3].rqn}}))
	must(t, e.nic.CreateTIR(c.rssTIR(0)))
	c.tables = [2]uint32{e.id(), e.id()}
	must(t, e.nic.CreateFlowTable(FlowTableParams{Type: TableNICRX, ID: c.tables[1], Level: 1, LogSize: 5}))
	must(t, e.nic.CreateFlowTable(FlowTableParams{Type: TableNICRX, ID: c.tables[0], LogSize: 5, MissAction: 1, MissTable: c.tables[1]}))
	// Groups of four entries; layout gives each group's criteria as a bit set of rigCriteria.
	for i, crit := range layout {
		ti := i % 2
		start := uint32(len(c.groups[ti]) * 4)
		b := make([]byte, matchParamBytes)
		for j, set := range rigCriteria {
			if crit&(1<<j) != 0 {
				set(b, ^uint64(0))
			}
		}
		g := e.id()
		must(t, e.nic.CreateFlowGroup(FlowGroupParams{Type: TableNICRX, Table: c.tables[ti], ID: g, Start: start, End: start + 3, CriteriaEnable: 1, Criteria: b}))
		c.groups[ti] = append(c.groups[ti], g)
		c.gstart[ti] = append(c.gstart[ti], start)
	}
	for i := 0; i < 3; i++ {
		id := e.id()
		must(t, e.nic.AllocFlowCounter(id))
		c.counters = append(c.counters, id)
	}
	must(t, e.nic.SetRoot(TableNICRX, c.tables[0]))
	return c
}

func (c *cacheRig) rssTIR(seed uint64) TIRParams {
	var key [40]byte
	for i := range key {
		key[i] = byte(seed*31 + uint64(i)*7)
	}
	sel := HashFields{UDP: seed%2 == 0, Selected: uint32(1 + seed%15)}
	return TIRParams{TIRN: c.tirs[1], Indirect: true, RQT: c.rqt, HashFn: 2, Key: key, Outer: sel}
}

// change applies one random object change (the same draw to every rig of a test: the
// draws come from op, not from the rig). Errors are what the model answers (duplicates,
// busy objects) and are compared, not fatal.
func (c *cacheRig) change(op []uint64, layout []int) string {
	n := c.e.nic
	switch op[0] % 9 {
	case 0, 1, 2: // set an entry
		ti := int(op[1] % 2)
		if len(c.groups[ti]) == 0 {
			return "no group"
		}
		gi := int(op[2] % uint64(len(c.groups[ti])))
		crit := layout[gi*2+ti]
		v := make([]byte, matchParamBytes)
		for j, set := range rigCriteria {
			if crit&(1<<j) != 0 {
				vals := rigValues[j]
				set(v, vals[(op[3]>>(3*j))%uint64(len(vals))])
			}
		}
		p := FTEParams{Type: TableNICRX, Table: c.tables[ti], Group: c.groups[ti][gi], Index: c.gstart[ti][gi] + uint32(op[4]%4), Value: v, FlowTag: uint32(op[5] % 4 * 0x10101)}
		switch op[6] % 5 {
		case 0:
			p.Action = ActionDrop
		case 1:
			if ti == 0 {
				p.Action, p.Dests = ActionFwdDest, []Dest{{DestFlowTable, c.tables[1]}}
				break
			}
			fallthrough
		case 2:
			p.Action, p.Dests = ActionFwdDest, []Dest{{DestTIR, c.tirs[0]}}
		default:
			p.Action, p.Dests = ActionFwdDest, []Dest{{DestTIR, c.tirs[1]}}
		}
		if k := op[7] % 4; k > 0 && len(c.counters) > 0 {
			p.Action |= ActionCount
			for i := uint64(0); i < k && i < uint64(len(c.counters)); i++ {
				p.Counters = append(p.Counters, c.counters[(op[8]+i)%uint64(len(c.counters))])
			}
		}
		return fmt.Sprint("set ", n.SetFTE(p))
	case 3: // delete an entry
		ti := int(op[1] % 2)
		return fmt.Sprint("delete ", n.DeleteFTE(TableNICRX, c.tables[ti], uint32(op[2]%uint64(4*len(c.groups[ti])))))
	case 4:
		return fmt.Sprint("tir ", n.ModifyTIR(c.rssTIR(op[1])))
	case 5:
		rqns := []uint32{c.rqs[1].rqn, c.rqs[2].rqn, c.rqs[3].rqn}
		k := 1 + int(op[1]%3)
		rqns = rqns[op[2]%3:]
		rqns = append(rqns, c.rqs[1].rqn, c.rqs[2].rqn)[:k]
		return fmt.Sprint("rqt ", n.ModifyRQT(c.rqt, rqns))
	case 6:
		if op[1]%4 == 0 {
			return fmt.Sprint("clear root ", n.ClearRoot(TableNICRX))
		}
		return fmt.Sprint("root ", n.SetRoot(TableNICRX, c.tables[op[1]%4/3])) // table 1 a third of the time
	case 7: // a counter freed (busy while an entry counts into it) or a new one
		if op[1]%2 == 0 && len(c.counters) > 0 {
			i := int(op[2] % uint64(len(c.counters)))
			err := n.DeallocFlowCounter(c.counters[i])
			if err == nil {
				c.counters = append(c.counters[:i], c.counters[i+1:]...)
			}
			return fmt.Sprint("dealloc ", errCode(err)) // the message names any entry using it
		}
		id := c.e.id()
		err := n.AllocFlowCounter(id)
		c.counters = append(c.counters, id)
		return fmt.Sprint("alloc ", err)
	default:
		_, err := n.QueryFlowTable(TableNICRX, c.tables[0])
		return fmt.Sprint("query ", err)
	}
}

// errCode is an error's status and syndrome (its message may name any of several objects).
func errCode(err error) string {
	if e, ok := err.(*Error); ok {
		return fmt.Sprintf("status %#x syndrome %#x", e.Status, e.Syndrome)
	}
	return fmt.Sprint(err)
}

// TestRXCacheMatchesWalk: a port with the RX decision cache and one without get the same
// frames and the same random object changes (entries set and deleted with random matches,
// actions, flow tags and counters; the RSS TIR's key and fields; the RQT's list; the root;
// counters freed and made; queries) between them; after every frame both have written the
// same CQEs (hash, flow tag, checksums, queue), the same bytes in every buffer, the same
// port counters and the same flow counters. Most frames repeat a few flows, so the cache
// hits; the changes make cached decisions stale.
func TestRXCacheMatchesWalk(t *testing.T) {
	var delivered uint64
	for seed := uint64(1); seed <= 12; seed++ {
		rnd := rand.New(rand.NewPCG(seed, 99))
		layout := make([]int, 4+rnd.IntN(3))
		for i := range layout {
			layout[i] = rnd.IntN(1024)
		}
		layout[len(layout)-1] = 0 // the last group matches every frame
		rigs := [2]*cacheRig{newCacheRig(t, false, layout), newCacheRig(t, true, layout)}
		hits := 0
		var pool []frameSpec
		for range 6 {
			pool = append(pool, randomSpec(rnd))
		}
		for i := -60; i < 3000; i++ {
			if i < 0 || rnd.IntN(40) == 0 {
				op := make([]uint64, 9)
				for j := range op {
					op[j] = rnd.Uint64()
				}
				if i < 0 {
					op[0] = 0 // entries first
				}
				a, b := rigs[0].change(op, layout), rigs[1].change(op, layout)
				if a != b {
					t.Fatalf("seed %d frame %d: change %v answered %q with the cache, %q without", seed, i, op, a, b)
				}
			}
			if i < 0 {
				continue
			}
			// Mostly a few flows (new IP identification, TCP sequence and payload each
			// time), now and then any.
			spec := randomSpec(rnd)
			if rnd.IntN(8) != 0 {
				id, payload := spec.id, spec.payload
				spec = pool[rnd.IntN(len(pool))]
				spec.id, spec.payload = id, payload
			}
			f := mkFrame(spec)
			if k, ok := keyOf(f); ok && rigs[0].e.nic.rxCache.get(&k, rigs[0].e.nic.gen) != nil {
				hits++
			}
			var got [2][][64]byte
			for j, r := range rigs {
				r.e.clock.Advance(7)
				r.e.nic.Receive(f)
				r.e.nic.Step(1)
				for _, q := range r.rqs {
					cqes := q.cq.poll()
					q.post(len(cqes))
					got[j] = append(got[j], cqes...)
				}
			}
			if !reflect.DeepEqual(got[0], got[1]) {
				t.Fatalf("seed %d frame %d % x: CQEs with the cache\n%x\nwithout\n%x", seed, i, f, got[0], got[1])
			}
			if a, b := rigs[0].e.nic.Counters(false), rigs[1].e.nic.Counters(false); a != b {
				t.Fatalf("seed %d frame %d: counters %+v with the cache, %+v without", seed, i, a, b)
			}
		}
		for _, id := range rigs[1].counters {
			a, erra := rigs[0].e.nic.QueryFlowCounter(id, false)
			b, errb := rigs[1].e.nic.QueryFlowCounter(id, false)
			if a != b || (erra == nil) != (errb == nil) {
				t.Fatalf("seed %d: flow counter %#x %+v with the cache, %+v without", seed, id, a, b)
			}
		}
		for i := range rigs[0].rqs {
			for w := range rigs[0].rqs[i].mem {
				if !bytes.Equal(rigs[0].rqs[i].mem[w], rigs[1].rqs[i].mem[w]) {
					t.Fatalf("seed %d: RQ %d buffer %d differs", seed, i, w)
				}
			}
		}
		c := rigs[0].e.nic.Counters(false)
		t.Logf("seed %d: %d cache hits of 3000 frames; delivered %d, missed %d, dropped by rule %d", seed, hits, c.RXPackets, c.RXSteeringMiss, c.RXDropRule)
		if hits < 500 {
			t.Fatalf("seed %d: %d hits: the test does not exercise the cache", seed, hits)
		}
		delivered += c.RXPackets
	}
	if delivered < 10000 {
		t.Fatalf("%d frames delivered in all: the test does not exercise delivery", delivered)
	}
}

// countingClock is a ManualClock that counts its readings.
type countingClock struct {
	ManualClock
	free, rt int
}

func (c *countingClock) FreeRunning() uint64 { c.free++; return c.ManualClock.FreeRunning() }
func (c *countingClock) RealTime() uint64    { c.rt++; return c.ManualClock.RealTime() }

// TestRXStampPerStep: the frames one Step takes from the inbox share one reading of the clock
// per timestamp format (an RQ stamping real time and one stamping free-running in the same
// batch each get theirs), the next Step's frames the clock's time then; a Step with no frame
// reads no clock for them.
func TestRXStampPerStep(t *testing.T) {
	e := newEnv(t)
	clk := &countingClock{}
	e.nic = New(Config{Space: e.space, Keys: keys{e.space}, Events: e.ev, Clock: clk})
	e.rqMod = func(p *RQParams) { p.TSFormat = TSRealTime }
	rt := e.newRQ(e.newCQ(8, nil), 6, 2048, 0, 0)
	e.rqMod = nil
	fr := e.newRQ(e.newCQ(8, nil), 6, 2048, 0, 0)
	rt.post(64)
	fr.post(64)
	// UDP destination 1 to the real-time RQ, anything else to the free-running one.
	tirs := [2]uint32{e.id(), e.id()}
	must(t, e.nic.CreateTIR(TIRParams{TIRN: tirs[0], InlineRQ: rt.rqn}))
	must(t, e.nic.CreateTIR(TIRParams{TIRN: tirs[1], InlineRQ: fr.rqn}))
	ft, g1, g2 := e.id(), e.id(), e.id()
	must(t, e.nic.CreateFlowTable(FlowTableParams{Type: TableNICRX, ID: ft, LogSize: 4}))
	crit := make([]byte, matchParamBytes)
	prm.FTEMatchSetLyr24.UDPDport.Set(crit, 0xffff)
	must(t, e.nic.CreateFlowGroup(FlowGroupParams{Type: TableNICRX, Table: ft, ID: g1, Start: 0, End: 0, CriteriaEnable: 1, Criteria: crit}))
	must(t, e.nic.CreateFlowGroup(FlowGroupParams{Type: TableNICRX, Table: ft, ID: g2, Start: 1, End: 1}))
	val := make([]byte, matchParamBytes)
	prm.FTEMatchSetLyr24.UDPDport.Set(val, 1)
	must(t, e.nic.SetFTE(FTEParams{Type: TableNICRX, Table: ft, Group: g1, Index: 0, Action: ActionFwdDest, Value: val, Dests: []Dest{{DestTIR, tirs[0]}}}))
	must(t, e.nic.SetFTE(FTEParams{Type: TableNICRX, Table: ft, Group: g2, Index: 1, Action: ActionFwdDest, Dests: []Dest{{DestTIR, tirs[1]}}}))
	must(t, e.nic.SetRoot(TableNICRX, ft))

	var last [2]uint64
	for step := 0; step < 5; step++ {
		clk.Set(uint64(step)*1_500_000_000 + 7) // over a second apart: both formats move
		clk.free, clk.rt = 0, 0
		for i := 0; i < 2+step; i++ {
			e.nic.Receive(udpFrame([4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 9, uint16(1+i%2), 100+i, 0))
		}
		e.nic.Step(64)
		if clk.free != 1 || clk.rt != 1 {
			t.Fatalf("step %d: clock read %d times free-running, %d real time; want once each", step, clk.free, clk.rt)
		}
		for k, q := range []*testRQ{rt, fr} {
			cqes := q.cq.poll()
			q.post(len(cqes))
			want := clk.ManualClock.FreeRunning()
			if k == 0 {
				want = clk.ManualClock.RealTime()
			}
			if len(cqes) == 0 {
				t.Fatalf("step %d: no frame in RQ %d", step, k)
			}
			for i, c := range cqes {
				if ts := prm.CQE64.Timestamp.Get(c[:]); ts != want {
					t.Fatalf("step %d RQ %d frame %d: stamp %#x, want the Step's %#x", step, k, i, ts, want)
				}
			}
			if want <= last[k] {
				t.Fatalf("step %d RQ %d: stamp %#x after %#x", step, k, want, last[k])
			}
			last[k] = want
		}
	}
	clk.free, clk.rt = 0, 0
	e.nic.Step(64)
	if clk.free != 0 || clk.rt != 0 {
		t.Fatalf("a Step without frames read the clock %d+%d times", clk.free, clk.rt)
	}
}
