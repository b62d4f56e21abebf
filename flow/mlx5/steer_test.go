package mlx5_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/flow"
	"github.com/daqiri-go/daqiri/flow/internal/frametest"
	flowmlx5 "github.com/daqiri-go/daqiri/flow/mlx5"
	"github.com/daqiri-go/daqiri/mlx5/channel"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

var (
	srcIP = netip.MustParseAddr("10.0.0.1")
	dstIP = netip.MustParseAddr("10.0.0.2")
)

func udpFrame(sport, dport uint16) []byte {
	return frametest.Eth(flow.EtherTypeIPv4, frametest.IPv4(srcIP, dstIP, 17, 0, 0, frametest.UDP(sport, dport, []byte("payload!"))))
}

func rule(t *testing.T, f config.Flow) *flow.Rule {
	t.Helper()
	return frametest.Compile(t, []config.Flow{f}, nq)[0]
}

func toQueues(qs ...int) []config.Action {
	return []config.Action{{Type: config.ActionQueue, Queues: qs}}
}

func mustNew(t *testing.T, rig *rig, p flowmlx5.Params) *flowmlx5.Steering {
	t.Helper()
	p.RQNs, p.TD = rig.rqns, rig.td
	st, err := flowmlx5.New(rig.ch, p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func wantQueue(t *testing.T, rig *rig, f []byte, q int, tag uint32) got {
	t.Helper()
	g := rig.receive(f)
	if g.queue != q || g.tag != tag {
		t.Fatalf("frame went to queue %d with flow tag %d (dropped %v, missed %v); want queue %d, tag %d", g.queue, g.tag, g.dropped, g.missed, q, tag)
	}
	return g
}

// TestDynamicAddDelete: rules set and cleared while others steer; a port range becomes
// prefix entries (1000-1004: 1000-1003 and 1004); replacing a slot; every object of a
// cleared rule is gone, and Close leaves none.
func TestDynamicAddDelete(t *testing.T) {
	rig := newRig(t, nq)
	st := mustNew(t, rig, flowmlx5.Params{DefaultQueue: 3, Rules: []*flow.Rule{
		rule(t, config.Flow{Name: "static", ID: 7, Match: config.Match{UDPDst: config.PortRange{Lo: 5000, Hi: 5000}}, Actions: toQueues(1)}),
	}})
	base := rig.ch.alive()
	wantQueue(t, rig, udpFrame(1, 5000), 1, 7)
	wantQueue(t, rig, udpFrame(1, 1002), 3, 0)
	ranged := rule(t, config.Flow{Name: "range", ID: 9, Match: config.Match{UDPDst: config.PortRange{Lo: 1000, Hi: 1004}}, Actions: toQueues(2)})
	if err := st.Set(5, ranged); err != nil {
		t.Fatal(err)
	}
	for p := uint16(998); p <= 1006; p++ {
		want, tag := 3, uint32(0)
		if p >= 1000 && p <= 1004 {
			want, tag = 2, 9
		}
		wantQueue(t, rig, udpFrame(1, p), want, tag)
	}
	if n := rig.ch.alive() - base; n != 6 { // 2 groups (masks 0xfffc, 0xffff) + 2 entries for IPv4 and 2 for IPv6 (ports alone match both)
		t.Errorf("the range rule made %d objects, want 6", n)
	}
	wantQueue(t, rig, udpFrame(1, 5000), 1, 7) // the static rule is untouched
	// Replace slot 5 with a rule for another port; then clear it.
	if err := st.Set(5, rule(t, config.Flow{Name: "other", ID: 11, Match: config.Match{UDPDst: config.PortRange{Lo: 1002, Hi: 1002}}, Actions: toQueues(0)})); err != nil {
		t.Fatal(err)
	}
	wantQueue(t, rig, udpFrame(1, 1002), 0, 11)
	wantQueue(t, rig, udpFrame(1, 1000), 3, 0)
	if err := st.Clear(5); err != nil {
		t.Fatal(err)
	}
	wantQueue(t, rig, udpFrame(1, 1002), 3, 0)
	if n := rig.ch.alive(); n != base {
		t.Errorf("%d objects after clearing the dynamic rule, want %d", n, base)
	}
	// A rule in a lower slot takes precedence over a later one that overlaps it.
	if err := st.Set(3, rule(t, config.Flow{Name: "later", ID: 12, Match: config.Match{UDPDst: config.PortRange{Lo: 5000, Hi: 5000}}, Actions: toQueues(2)})); err != nil {
		t.Fatal(err)
	}
	wantQueue(t, rig, udpFrame(1, 5000), 1, 7)
	if err := st.Clear(0); err != nil {
		t.Fatal(err)
	}
	wantQueue(t, rig, udpFrame(1, 5000), 2, 12)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if n := rig.ch.alive(); n != 0 {
		t.Errorf("%d objects alive after Close", n)
	}
	if err := st.Set(1, ranged); !errors.Is(err, flowmlx5.ErrClosed) {
		t.Errorf("Set after Close: %v", err)
	}
	wantMiss(t, rig, udpFrame(1, 5000)) // detached: the RX root is gone
}

func wantMiss(t *testing.T, rig *rig, f []byte) {
	t.Helper()
	if g := rig.receive(f); !g.missed {
		t.Fatalf("frame went to queue %d (dropped %v); want a steering miss", g.queue, g.dropped)
	}
}

func wantDrop(t *testing.T, rig *rig, f []byte) {
	t.Helper()
	if g := rig.receive(f); !g.dropped {
		t.Fatalf("frame went to queue %d (missed %v); want dropped by a rule", g.queue, g.missed)
	}
}

// TestIsolationAndDropAll: with isolation an unmatched frame is left to the kernel (a miss
// on the model), without it the catch-all entry takes it to the default queue; drop-all
// drops matched and unmatched frames (counted by rule) and allow-all undoes it.
func TestIsolationAndDropAll(t *testing.T) {
	for _, iso := range []bool{false, true} {
		t.Run(fmt.Sprintf("isolation=%v", iso), func(t *testing.T) {
			rig := newRig(t, nq)
			st := mustNew(t, rig, flowmlx5.Params{Isolation: iso, DefaultQueue: 2, Rules: []*flow.Rule{
				rule(t, config.Flow{Name: "a", ID: 3, Match: config.Match{IPv4Src: srcIP, UDPDst: config.PortRange{Lo: 4000, Hi: 4000}}, Actions: toQueues(0)}),
			}})
			matched, other := udpFrame(9, 4000), udpFrame(9, 4001)
			unmatched := func() {
				if iso {
					wantMiss(t, rig, other)
				} else {
					wantQueue(t, rig, other, 2, 0)
				}
			}
			wantQueue(t, rig, matched, 0, 3)
			unmatched()
			if err := st.SetDropAll(true); err != nil {
				t.Fatal(err)
			}
			if !st.Table().DropAll {
				t.Error("Table does not show drop-all")
			}
			wantDrop(t, rig, matched)
			if iso {
				wantMiss(t, rig, other) // flow.Table: isolation passes unmatched frames even under drop-all
			} else {
				wantDrop(t, rig, other)
			}
			if err := st.SetDropAll(false); err != nil {
				t.Fatal(err)
			}
			wantQueue(t, rig, matched, 0, 3)
			unmatched()
		})
	}
}

// TestRSSIsToeplitz: a flow over four queues spreads random UDP 4-tuples as Toeplitz RSS
// does — every CQE's hash is flow.Tuple.Hash under the key, and the queue is the one
// flow.RSSIndex picks from the flow's queue list — with the default key and another one.
func TestRSSIsToeplitz(t *testing.T) {
	other := make([]byte, 40)
	for i := range other {
		other[i] = byte(i*37 + 11)
	}
	for _, key := range [][]byte{nil, other} {
		rig := newRig(t, nq)
		queues := []int{3, 1, 0, 2}
		mustNew(t, rig, flowmlx5.Params{Isolation: true, RSSKey: key, Rules: []*flow.Rule{
			rule(t, config.Flow{Name: "rss", ID: 5, Match: config.Match{UDPDst: config.PortRange{Lo: 6000, Hi: 6100}}, Actions: toQueues(queues...)}),
		}})
		k := key
		if k == nil {
			k = flow.DefaultRSSKey[:]
		}
		r := rand.New(rand.NewPCG(1, uint64(len(key))))
		var per [nq]int
		for range 400 {
			s, d := netip.AddrFrom4([4]byte{10, byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256))}), netip.AddrFrom4([4]byte{192, 168, byte(r.IntN(256)), byte(r.IntN(256))})
			tp := flow.Tuple{Src: s, Dst: d, SrcPort: uint16(r.IntN(65536)), DstPort: uint16(6000 + r.IntN(101))}
			f := frametest.Eth(flow.EtherTypeIPv4, frametest.IPv4(s, d, 17, 0, 0, frametest.UDP(tp.SrcPort, tp.DstPort, nil)))
			h := tp.Hash(k)
			g := wantQueue(t, rig, f, queues[flow.RSSIndex(h, len(queues))], 5)
			if g.hash != h {
				t.Fatalf("tuple %+v: CQE hash %#x, Toeplitz %#x", tp, g.hash, h)
			}
			per[g.queue]++
		}
		for q, n := range per {
			if n < 60 {
				t.Errorf("key %x: queue %d got %d of 400 flows: %v", key, q, n, per)
			}
		}
		t.Logf("key %x: spread %v", key, per)
	}
}

// TestRXTransforms: vlan_pop and tunnel_decap happen in the NIC: the frame in the buffer is
// what flow's software transforms make of it (VLAN popped; VXLAN and NVGRE inner frames;
// GRE's inner packet behind an Ethernet header of the GRE protocol, whose MAC addresses the
// reformat context fixes at zero where flow keeps the outer ones).
func TestRXTransforms(t *testing.T) {
	rig := newRig(t, nq)
	inner := udpFrame(1111, 2222)
	innerIP := inner[14:]
	key := uint32(7<<8 | 0x42)
	mustNew(t, rig, flowmlx5.Params{Isolation: true, Rules: []*flow.Rule{
		rule(t, config.Flow{Name: "pop", ID: 1, Match: config.Match{UDPDst: config.PortRange{Lo: 2222, Hi: 2222}},
			Actions: append([]config.Action{{Type: config.ActionVLANPop}}, toQueues(0)...)}),
		rule(t, config.Flow{Name: "vxlan", ID: 2, Match: config.Match{UDPDst: config.PortRange{Lo: 2222, Hi: 2222}},
			Actions: append([]config.Action{{Type: config.ActionTunnelDecap, Tunnel: config.Tunnel{Type: config.TunnelVXLAN, VNI: 77}}}, toQueues(1)...)}),
		rule(t, config.Flow{Name: "nvgre", ID: 3, Match: config.Match{IPv4Dst: dstIP},
			Actions: append([]config.Action{{Type: config.ActionTunnelDecap, Tunnel: config.Tunnel{Type: config.TunnelNVGRE, TNI: 7}}}, toQueues(2)...)}),
		rule(t, config.Flow{Name: "gre", ID: 4, Match: config.Match{UDPSrc: config.PortRange{Lo: 1111, Hi: 1111}},
			Actions: append([]config.Action{{Type: config.ActionTunnelDecap, Tunnel: config.Tunnel{Type: config.TunnelGRE, GREProtocol: 0x0800}}}, toQueues(3)...)}),
	}})
	outer := func(proto uint8, payload []byte) []byte {
		return frametest.Eth(flow.EtherTypeIPv4, frametest.IPv4(netip.MustParseAddr("172.16.0.1"), netip.MustParseAddr("172.16.0.2"), proto, 0, 0, payload))
	}
	tagged := append(append(append([]byte{}, inner[:12]...), 0x81, 0, 0x20, 0x05), inner[12:]...)
	for _, c := range []struct {
		name  string
		frame []byte
		queue int
		tag   uint32
		want  []byte
		from  int // compare from this byte (GRE: after the MACs)
	}{
		{"vlan_pop", tagged, 0, 1, inner, 0},
		{"vxlan", outer(17, frametest.UDP(40000, 4789, frametest.VXLAN(77, inner))), 1, 2, inner, 0},
		{"nvgre", outer(47, frametest.GRE(flow.EtherTypeTEB, &key, true, false, inner)), 2, 3, inner, 0},
		{"gre", outer(47, frametest.GRE(0x0800, nil, false, true, innerIP)), 3, 4, append(make([]byte, 12), inner[12:]...), 0},
	} {
		g := wantQueue(t, rig, c.frame, c.queue, c.tag)
		if !bytes.Equal(g.frame[c.from:], c.want[c.from:]) {
			t.Errorf("%s: received\n% x\nwant\n% x", c.name, g.frame, c.want)
		}
		// flow's software transform gives the same bytes (GRE: but for the MACs).
		f := bytes.Clone(c.frame)
		var sw []byte
		switch c.name {
		case "vlan_pop":
			shift, _ := flow.PopVLAN(f)
			sw = f[shift:]
		case "vxlan", "nvgre", "gre":
			kind := map[string]flow.Decap{"vxlan": flow.DecapVXLAN, "nvgre": flow.DecapNVGRE, "gre": flow.DecapGRE}[c.name]
			start, n, ok := flow.Decapsulate(f, kind)
			if !ok {
				t.Fatalf("%s: flow.Decapsulate refused the frame", c.name)
			}
			sw = f[start : start+n]
		}
		from := 0
		if c.name == "gre" {
			from = 12
		}
		if !bytes.Equal(g.frame[from:], sw[from:]) {
			t.Errorf("%s: NIC and flow's software transform differ:\n% x\n% x", c.name, g.frame, sw)
		}
	}
}

// TestNotExpressibleAndRejected: rules the match layout cannot express are refused before
// the device is touched; a create the device rejects leaves nothing behind and the rules
// already installed keep steering.
func TestNotExpressibleAndRejected(t *testing.T) {
	for _, f := range []config.Flow{
		// The flex parser samples outer headers only.
		{Name: "inner-len", ID: 1, Match: config.Match{IPv4Len: 100}, Actions: append([]config.Action{{Type: config.ActionTunnelDecap, Tunnel: config.Tunnel{Type: config.TunnelVXLAN}}}, toQueues(0)...)},
		{Name: "vxlan8472", ID: 4, Actions: append([]config.Action{{Type: config.ActionTunnelDecap, Tunnel: config.Tunnel{Type: config.TunnelVXLAN, OuterUDPDst: 8472}}}, toQueues(0)...)},
		{Name: "wide", ID: 5, Match: config.Match{UDPSrc: config.PortRange{Lo: 1, Hi: 65534}, UDPDst: config.PortRange{Lo: 1, Hi: 65534}}, Actions: toQueues(0)},
	} {
		if err := flowmlx5.Check(rule(t, f)); !errors.Is(err, flowmlx5.ErrNotExpressible) {
			t.Errorf("%s: Check gave %v, want ErrNotExpressible", f.Name, err)
		} else {
			t.Logf("%s: %v", f.Name, err)
		}
	}
	rig := newRig(t, nq)
	st := mustNew(t, rig, flowmlx5.Params{Isolation: true, Rules: []*flow.Rule{
		rule(t, config.Flow{Name: "keep", ID: 8, Match: config.Match{UDPDst: config.PortRange{Lo: 7000, Hi: 7000}}, Actions: toQueues(1)}),
	}})
	base := rig.ch.alive()
	if err := st.Set(2, rule(t, config.Flow{Name: "wide", ID: 1, Match: config.Match{UDPSrc: config.PortRange{Lo: 1, Hi: 65534}, UDPDst: config.PortRange{Lo: 1, Hi: 65534}}, Actions: toQueues(0)})); !errors.Is(err, flowmlx5.ErrNotExpressible) {
		t.Errorf("Set of an inexpressible rule: %v", err)
	}
	for _, op := range []prm.CmdOp{prm.CmdOpCreateTIR, prm.CmdOpCreateFlowGroup, prm.CmdOpSetFlowTableEntry} {
		rig.ch.mu.Lock()
		rig.ch.fail = op
		rig.ch.mu.Unlock()
		err := st.Set(3, rule(t, config.Flow{Name: "rejected", ID: 9, Match: config.Match{UDPDst: config.PortRange{Lo: 7001, Hi: 7003}}, Actions: toQueues(0, 2)}))
		var ce *channel.CommandError
		if !errors.As(err, &ce) || ce.Opcode != uint16(op) {
			t.Fatalf("Set with %v rejected: %v", op, err)
		}
		t.Logf("%v rejected: %v", op, err)
		// Only RSS TIRs/RQTs made before the rejection may stay (kept for reuse until Close):
		// one pair per IP version.
		if n := rig.ch.alive() - base; n > 4 {
			t.Errorf("%v rejected: %d objects left behind", op, n)
		}
		wantQueue(t, rig, udpFrame(1, 7000), 1, 8)
		wantMiss(t, rig, udpFrame(1, 7002))
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if n := rig.ch.alive(); n != 0 {
		t.Errorf("%d objects alive after Close", n)
	}
}

// TestTXTransforms: TX rules become NIC TX flow-table entries; a frame an SQ sends leaves on
// the wire with the rule's VLAN push and/or tunnel encap done by the device (push_vlan,
// packet-reformat contexts of flow.Encapsulate's outer headers, the lengths and the outer
// IPv4 checksum filled per packet), byte for byte what flow's software ApplyTX makes of it;
// a frame no rule matches leaves unchanged; Close takes the TX table off the root.
func TestTXTransforms(t *testing.T) {
	mac1, mac2 := []byte{2, 0, 0, 0, 0, 0xa}, []byte{2, 0, 0, 0, 0, 0xb}
	tun := func(typ config.TunnelType) config.Tunnel {
		return config.Tunnel{Type: typ, OuterEthSrc: mac1, OuterEthDst: mac2, OuterIPv4Src: netip.MustParseAddr("192.0.2.1"),
			OuterIPv4Dst: netip.MustParseAddr("192.0.2.2"), OuterTTL: 17, VNI: 4242, OuterUDPSrc: 50000, TNI: 99}
	}
	push := config.Action{Type: config.ActionVLANPush, VLAN: config.VLAN{ID: 100, PCP: 5, DEI: 1}}
	flows := []config.Flow{
		{Name: "push", Match: config.Match{UDPDst: config.PortRange{Lo: 8001, Hi: 8001}}, Actions: []config.Action{push}},
		{Name: "vxlan", Match: config.Match{UDPDst: config.PortRange{Lo: 8002, Hi: 8002}}, Actions: []config.Action{{Type: config.ActionTunnelEncap, Tunnel: tun(config.TunnelVXLAN)}}},
		{Name: "nvgre", Match: config.Match{UDPDst: config.PortRange{Lo: 8003, Hi: 8003}}, Actions: []config.Action{{Type: config.ActionTunnelEncap, Tunnel: tun(config.TunnelNVGRE)}}},
		{Name: "gre", Match: config.Match{UDPDst: config.PortRange{Lo: 8004, Hi: 8004}}, Actions: []config.Action{{Type: config.ActionTunnelEncap, Tunnel: tun(config.TunnelGRE)}}},
		{Name: "push+vxlan", Match: config.Match{UDPDst: config.PortRange{Lo: 8005, Hi: 8010}}, Actions: []config.Action{push, {Type: config.ActionTunnelEncap, Tunnel: tun(config.TunnelVXLAN)}}},
	}
	var rules []*flow.TxRule
	for i := range flows {
		r, err := flow.CompileTX(nil, "tx", &flows[i])
		if err != nil {
			t.Fatal(err)
		}
		if err := flowmlx5.CheckTX(r); err != nil {
			t.Fatalf("%s: %v", r.Name, err)
		}
		rules = append(rules, r)
	}
	rig := newRig(t, nq)
	// A send-only port: TX table only (no RX queues, no RX root).
	if _, err := flowmlx5.New(rig.ch, flowmlx5.Params{TD: rig.td}); err == nil {
		t.Fatal("New with neither RX queues nor TX rules succeeded")
	}
	st, err := flowmlx5.New(rig.ch, flowmlx5.Params{TD: rig.td, TxRules: rules})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Set(0, rule(t, config.Flow{Name: "x", ID: 1, Actions: toQueues(0)})); err == nil {
		t.Error("Set on a send-only port succeeded")
	}
	sq := rig.newTX()
	for _, port := range []uint16{8000, 8001, 8002, 8003, 8004, 8005, 8010} {
		f := udpFrame(1234, port)
		want := bytes.Clone(f)
		if r := flow.MatchTX(rules, f); r != nil {
			buf := make([]byte, 256)
			copy(buf, f)
			n, err := r.ApplyTX(buf, len(f))
			if err != nil {
				t.Fatal(err)
			}
			want = buf[:n]
		}
		if got := sq.send(f); !bytes.Equal(got, want) {
			t.Errorf("port %d: on the wire\n% x\nflow's ApplyTX\n% x", port, got, want)
		}
	}
	// Not expressible on TX: encap then push (a tag on the outer frame), two pushes.
	bad, _ := flow.CompileTX(nil, "tx", &config.Flow{Name: "late push", Actions: []config.Action{{Type: config.ActionTunnelEncap, Tunnel: tun(config.TunnelGRE)}, push}})
	if err := flowmlx5.CheckTX(bad); !errors.Is(err, flowmlx5.ErrNotExpressible) {
		t.Errorf("encap then push: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if n := rig.ch.alive(); n != 0 {
		t.Errorf("%d objects alive after Close", n)
	}
	f := udpFrame(1234, 8001)
	if got := sq.send(f); !bytes.Equal(got, f) {
		t.Error("a frame is still transformed after Close")
	}
}

// TestChangesUnderTraffic: rules in other slots are set and cleared from another goroutine
// while frames arrive; every frame of the static rule still reaches its queue with its flow
// id (no moment without it), and the race detector sees the steering's locking.
func TestChangesUnderTraffic(t *testing.T) {
	rig := newRig(t, nq)
	st := mustNew(t, rig, flowmlx5.Params{Isolation: true, Rules: []*flow.Rule{
		rule(t, config.Flow{Name: "static", ID: 4, Match: config.Match{UDPDst: config.PortRange{Lo: 9000, Hi: 9000}}, Actions: toQueues(3)}),
	}})
	var dyn []*flow.Rule
	for i := range 200 {
		dyn = append(dyn, rule(t, config.Flow{Name: "dyn", ID: 100 + i, Match: config.Match{UDPDst: config.PortRange{Lo: uint16(9001 + i), Hi: uint16(9010 + i)}}, Actions: toQueues(i % nq)}))
	}
	done := make(chan error, 1)
	go func() {
		for i := range 200 {
			slot := 1 + i%4
			var err error
			if i%3 == 2 {
				err = st.Clear(slot)
			} else {
				err = st.Set(slot, dyn[i])
			}
			if err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for range 500 {
		wantQueue(t, rig, udpFrame(7, 9000), 3, 4)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestReplaceUnderTraffic: a slot's rule is replaced 1000 times (make-before-break: the
// new entries in the block's other half, then the old ones deleted) while its frames
// arrive; every frame reaches the old rule's queue or the new one's, none misses.
func TestReplaceUnderTraffic(t *testing.T) {
	rig := newRig(t, nq)
	match := config.Match{UDPDst: config.PortRange{Lo: 9100, Hi: 9103}}
	st := mustNew(t, rig, flowmlx5.Params{Isolation: true, Rules: []*flow.Rule{
		rule(t, config.Flow{Name: "v0", ID: 1, Match: match, Actions: toQueues(0)}),
	}})
	// Two rules alternate: frames must reach queue 0 (the first), 1 or 2, never nothing.
	var next []*flow.Rule
	for i := range 1000 {
		next = append(next, rule(t, config.Flow{Name: "v", ID: 2 + i%2, Match: match, Actions: toQueues(1 + i%2)}))
	}
	done := make(chan error, 1)
	go func() {
		for _, r := range next {
			if err := st.Set(0, r); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	counts := map[int]int{}
	for range 1000 {
		g := rig.receive(udpFrame(5, 9102))
		if g.queue < 0 {
			t.Fatalf("a frame met no rule during a replacement (dropped %v, missed %v)", g.dropped, g.missed)
		}
		if want := uint32(map[int]int{0: 1, 1: 2, 2: 3}[g.queue]); g.tag != want {
			t.Fatalf("queue %d with flow tag %d, want %d", g.queue, g.tag, want)
		}
		counts[g.queue]++
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	wantQueue(t, rig, udpFrame(5, 9102), 2, 3) // the last rule: i = 999 → queue 2, id 3
	t.Logf("frames per queue during the replacements: %v", counts)
}
