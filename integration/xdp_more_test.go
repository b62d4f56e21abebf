package integration

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/integration/netns"
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// TestXDPDecapAndVLANPop sends VLAN-tagged, VXLAN, GRE and NVGRE frames built by scapy and
// checks each arrives as its inner frame (scapy writes the expected inner bytes into the
// payload tag's companion file: here the test compares with the inner frame rebuilt from the
// same fields).
func TestXDPDecapAndVLANPop(t *testing.T) {
	netns.RequireScapy(t)
	p := netns.NewPairWith(t, netns.PairOptions{Queues: 1})
	oS, oD := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	decap := func(tt config.TunnelType) config.Action {
		tun := config.Tunnel{Type: tt, OuterIPv4Src: oS, OuterIPv4Dst: oD, OuterEthSrc: p.MACA, OuterEthDst: p.MACB}
		switch tt {
		case config.TunnelVXLAN:
			tun.VNI, tun.OuterUDPDst = 100, 4789
		case config.TunnelGRE:
			tun.GREProtocol = 0x0800
		case config.TunnelNVGRE:
			tun.TNI = 200
		}
		return config.Action{Type: config.ActionTunnelDecap, Tunnel: tun}
	}
	q := func(id int) config.Action { return config.Action{Type: config.ActionQueue, Queues: []int{id}} }
	flows := []config.Flow{
		{Name: "vxlan", ID: 11, Actions: []config.Action{decap(config.TunnelVXLAN), q(0)}},
		{Name: "gre", ID: 12, Actions: []config.Action{decap(config.TunnelGRE), q(0)}},
		{Name: "nvgre", ID: 13, Actions: []config.Action{decap(config.TunnelNVGRE), q(0)}},
		{Name: "vlan", ID: 14, Actions: []config.Action{{Type: config.ActionVLANPop}, q(0)}},
	}
	s := openXDP(t, p.B, rawConfig(xdpIface("rx", p.VethB, 1, flows, true, false)))
	script := scapyHeader(p) + `
from scapy.layers.vxlan import VXLAN
from scapy.layers.l2 import GRE
import sys
inner_eth = Ether(src="02:11:11:11:11:11", dst="02:22:22:22:22:22")
def inner(t): return IP(src="10.9.0.1", dst="10.9.0.2")/UDP(sport=1111, dport=2222)/P(t)
pk = [
  E()/IP(src="192.0.2.1", dst="192.0.2.2")/UDP(sport=49152, dport=4789)/VXLAN(vni=100)/inner_eth/inner("vxlan"),
  E()/IP(src="192.0.2.1", dst="192.0.2.2")/GRE(proto=0x0800)/inner("gre"),
  E()/IP(src="192.0.2.1", dst="192.0.2.2")/GRE(proto=0x6558, key_present=1, key=(200 << 8) | 7)/inner_eth/inner("nvgre"),
  E()/Dot1Q(vlan=42)/inner("vlan"),
  E()/IP(src="192.0.2.1", dst="192.0.2.2")/UDP(sport=49152, dport=4789)/VXLAN(vni=101)/inner_eth/inner("vni101"),
  E()/IP(src="192.0.2.9", dst="192.0.2.2")/GRE(proto=0x0800)/inner("gre-other-src"),
]
sendp(pk, iface=IFACE)
# What each delivered frame must be.
for t in ["vxlan", "nvgre"]:
    sys.stdout.write("%s %s\n" % (t, bytes(inner_eth/inner(t)).hex()))
for t in ["gre"]:
    sys.stdout.write("%s %s\n" % (t, bytes(Ether(src=SRC_MAC, dst=DST_MAC, type=0x0800)/inner(t)).hex()))
sys.stdout.write("%s %s\n" % ("vlan", bytes(E()/inner("vlan")).hex()))
`
	var got []rxPkt
	var out []byte
	errc := make(chan error, 1)
	go func() {
		var err error
		out, err = p.A.Scapy(script)
		errc <- err
	}()
	got = collect(t, s, 0, 4, 8*time.Second)
	if err := <-errc; err != nil {
		t.Fatal(err, string(out))
	}
	want := map[string][]byte{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var name, hexs string
		fmt.Sscan(line, &name, &hexs)
		var b []byte
		fmt.Sscanf(hexs, "%x", &b)
		want[name] = b
	}
	if len(got) != 4 {
		t.Fatalf("got %d frames %v, want 4 (vxlan, gre, nvgre, vlan)", len(got), tags(got))
	}
	ids := map[string]uint32{"vxlan": 11, "gre": 12, "nvgre": 13, "vlan": 14}
	for _, g := range got {
		tg := tag(g.data)
		w, ok := want[tg]
		if !ok {
			t.Errorf("unexpected frame %q", tg)
			continue
		}
		// The kernel pads short frames to 60 bytes on the wire; compare the frame itself.
		if len(g.data) < len(w) || !bytes.Equal(g.data[:len(w)], w) {
			t.Errorf("%s: delivered\n%x\nwant\n%x", tg, g.data, w)
		}
		if g.flow != ids[tg] {
			t.Errorf("%s: flow %d, want %d", tg, g.flow, ids[tg])
		}
	}
}

// TestXDPDynamicFlowsUnderTraffic streams two flows while a dynamic flow for the second is
// added and deleted: the static flow's frames all arrive on their queue throughout; the
// second flow's frames go to the kernel before the add and after the delete and to the
// dynamic flow's queue, with its allocated id, in between — none lost.
func TestXDPDynamicFlowsUnderTraffic(t *testing.T) {
	netns.RequireScapy(t)
	p := netns.NewPairWith(t, netns.PairOptions{Queues: 2})
	s := openXDP(t, p.B, rawConfig(xdpIface("rx", p.VethB, 2, []config.Flow{
		queueFlow("static", 500, config.Match{UDPDst: config.PortRange{Lo: 8000, Hi: 8000}}, 0),
	}, true, false)))
	kern := listenUDP(t, p.B, netip.AddrPortFrom(p.AddrB, 8001))
	const n = 1500
	script := scapyHeader(p) + fmt.Sprintf(`
import time
pk = []
for i in range(%d):
    pk.append(E()/IP(src=A, dst=B)/UDP(sport=1000, dport=8000)/P("s%%d" %% i))
    pk.append(E()/IP(src=A, dst=B)/UDP(sport=1000, dport=8001)/P("d%%d" %% i))
s = conf.L2socket(iface=IFACE)
t0 = time.time()
for i, x in enumerate(pk):
    s.send(x)
    if i %% 100 == 99:
        time.sleep(0.01)
`, n)
	var got []rxPkt
	var dynID uint32
	var addErr, delErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		// Add the flow once a fifth of the stream went by, delete it at three fifths.
		waitFor := func(k uint64) {
			for end := time.Now().Add(20 * time.Second); time.Now().Before(end) && s.Stats().Ports[0].Rx[0].Packets < k; {
				time.Sleep(time.Millisecond)
			}
		}
		waitFor(n / 5)
		dynID, addErr = s.AddRxFlow(0, queueFlow("dyn", 0, config.Match{UDPDst: config.PortRange{Lo: 8001, Hi: 8001}}, 1))
		waitFor(3 * n / 5)
		if addErr == nil {
			delErr = s.DeleteFlow(dynID)
		}
	}()
	sendWhile(t, p.A, script, func() { got = collectQuiet(t, s, 0, 2*n, 30*time.Second, time.Second) })
	wg.Wait()
	if addErr != nil || delErr != nil {
		t.Fatalf("add %v, delete %v", addErr, delErr)
	}
	k := kern.drain(time.Second)
	statics, dyn := map[string]bool{}, 0
	for _, g := range got {
		tg := tag(g.data)
		switch {
		case strings.HasPrefix(tg, "s"):
			if g.queue != 0 || g.flow != 500 || statics[tg] {
				t.Fatalf("static frame %s on queue %d flow %d (dup %v)", tg, g.queue, g.flow, statics[tg])
			}
			statics[tg] = true
		case strings.HasPrefix(tg, "d"):
			if g.queue != 1 || g.flow != dynID {
				t.Fatalf("dynamic frame %s on queue %d flow %d, want queue 1 flow %d", tg, g.queue, g.flow, dynID)
			}
			dyn++
		}
	}
	t.Logf("static %d/%d on queue 0; dynamic flow %d took %d frames, kernel %d", len(statics), n, dynID, dyn, len(k))
	if len(statics) != n {
		t.Errorf("static flow lost frames during add/delete: %d of %d", len(statics), n)
	}
	time.Sleep(150 * time.Millisecond) // kernel-side drop counters are folded in periodically
	_, dropped := rxTotals(s)
	if dyn == 0 || len(k) == 0 || uint64(dyn+len(k))+dropped != n {
		t.Errorf("dynamic flow: %d on the queue + %d to the kernel + %d dropped, want both > 0 and %d in all; stats %+v", dyn, len(k), dropped, n, s.Stats())
	}
	// Deleting again, or a static id, is refused.
	if err := s.DeleteFlow(dynID); !errors.Is(err, daqiri.ErrInvalidParameter) {
		t.Errorf("second delete: %v", err)
	}
	if err := s.DeleteFlow(500); !errors.Is(err, daqiri.ErrInvalidParameter) {
		t.Errorf("delete of a static flow: %v", err)
	}
	// Bad dynamic rules.
	for _, bad := range []config.Flow{
		queueFlow("noqueue", 0, config.Match{}, 9),
		{Name: "push", Actions: []config.Action{{Type: config.ActionVLANPush}, {Type: config.ActionQueue, Queues: []int{0}}}},
		queueFlow("ecpri", 0, config.Match{ECPRI: &config.ECPRIMatch{}}, 0), // another flow class
	} {
		if _, err := s.AddRxFlow(0, bad); !errors.Is(err, daqiri.ErrInvalidParameter) {
			t.Errorf("AddRxFlow(%s): %v", bad.Name, err)
		}
	}
	ids, err := s.AddRxFlows(0, []config.Flow{queueFlow("ok", 0, config.Match{UDPSrc: config.PortRange{Lo: 1, Hi: 2}}, 0), queueFlow("bad", 0, config.Match{}, 7)})
	if err == nil || ids[0] == 0 || ids[1] != 0 {
		t.Errorf("batch with a bad second rule: ids %v, err %v", ids, err)
	}
}

// TestXDPDropAll checks drop_all_traffic drops and counts what would be delivered, and
// allow_all_traffic restores delivery.
func TestXDPDropAll(t *testing.T) {
	netns.RequireScapy(t)
	p := netns.NewPairWith(t, netns.PairOptions{Queues: 1})
	s := openXDP(t, p.B, rawConfig(xdpIface("rx", p.VethB, 1, []config.Flow{
		queueFlow("f", 9, config.Match{UDPDst: config.PortRange{Lo: 8000, Hi: 8000}}, 0),
	}, true, false)))
	send := func(prefix string, n int) []rxPkt {
		script := scapyHeader(p) + fmt.Sprintf(`
sendp([E()/IP(src=A, dst=B)/UDP(sport=1, dport=8000)/P("%s%%d" %% i) for i in range(%d)], iface=IFACE)
`, prefix, n)
		var got []rxPkt
		sendWhile(t, p.A, script, func() { got = collect(t, s, 0, n, 4*time.Second) })
		return got
	}
	if err := s.DropAllTraffic(0); err != nil {
		t.Fatal(err)
	}
	if got := send("dropped", 20); len(got) != 0 {
		t.Fatalf("drop-all delivered %d frames", len(got))
	}
	if err := s.AllowAllTraffic(0); err != nil {
		t.Fatal(err)
	}
	if got := send("allowed", 20); len(got) != 20 {
		t.Fatalf("after allow-all: %d of 20 frames", len(got))
	}
	time.Sleep(150 * time.Millisecond) // kernel counters are folded in periodically
	q := s.Stats().Ports[0].Rx[0]
	if q.Drops["filtered"] != 20 || q.Packets != 20 {
		t.Fatalf("stats %+v: want 20 delivered and 20 filtered", q)
	}
	if _, err := s.MACAddr(0); err != nil {
		t.Fatal(err)
	}
}

// TestXDPTxEncapAndAccounting sends from one xdp session through TX flows (VLAN push on one
// port range, VXLAN encap on another, none on a third) and receives with a second xdp session
// with no flows; every frame must parse in gopacket with the configured outer headers, and
// sent == received + dropped on the receiving port.
func TestXDPTxEncapAndAccounting(t *testing.T) {
	p := netns.NewPairWith(t, netns.PairOptions{Queues: 1})
	oS, oD := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	omac := net.HardwareAddr{2, 0xaa, 0, 0, 0, 1}
	tx := config.Interface{Name: "tx", Address: p.VethA, TX: &config.TxConfig{
		Queues: []config.Queue{{Name: "t0", ID: 0, CPUCore: "0", BatchSize: 64, MemoryRegions: []string{"tx0"}}},
		Flows: []config.Flow{
			{Name: "vlan", ID: 1, Match: config.Match{UDPDst: config.PortRange{Lo: 20000, Hi: 20099}}, Actions: []config.Action{{Type: config.ActionVLANPush, VLAN: config.VLAN{ID: 77, PCP: 5}}}},
			{Name: "vxlan", ID: 2, Match: config.Match{UDPDst: config.PortRange{Lo: 20100, Hi: 20199}}, Actions: []config.Action{{Type: config.ActionTunnelEncap, Tunnel: config.Tunnel{Type: config.TunnelVXLAN, OuterEthSrc: omac, OuterEthDst: p.MACB, OuterIPv4Src: oS, OuterIPv4Dst: oD, VNI: 4242, OuterUDPDst: 4789}}}},
		}}}
	txs := openXDP(t, p.A, rawConfig(tx))
	rxs := openXDP(t, p.B, rawConfig(xdpIface("rx", p.VethB, 1, nil, false, false)))
	const total = 3000
	var got []rxPkt
	done := make(chan struct{})
	go func() {
		defer close(done)
		got = collectQuiet(t, rxs, 0, total, 15*time.Second, time.Second)
	}()
	sent := 0
	for deadline := time.Now().Add(10 * time.Second); sent < total && time.Now().Before(deadline); {
		b, err := txs.TxBurst(0, 0, min(64, total-sent))
		if err != nil {
			time.Sleep(50 * time.Microsecond)
			continue
		}
		for i := 0; i < b.Len(); i++ {
			k := sent + i
			dport := uint16(20000 + 100*(k%3) + k%50) // no port gopacket decodes specially
			if err := b.SetEthHeader(i, p.MACB, p.MACA); err != nil {
				t.Fatal(err)
			}
			pl := fmt.Appendf(nil, "<tag:%d>", k)
			b.SetIPv4Header(i, 8+len(pl), 17, p.AddrA, p.AddrB)
			b.SetUDPHeader(i, len(pl), 5555, dport)
			b.SetUDPPayload(i, pl)
		}
		n := b.Len()
		for {
			err := txs.Send(b)
			if err == nil {
				break
			}
			if !errors.Is(err, daqiri.ErrNotReady) {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Microsecond)
		}
		sent += n
	}
	<-done
	time.Sleep(150 * time.Millisecond)
	rxq := rxs.Stats().Ports[0].Rx[0]
	if txq := txs.Stats().Ports[0].Tx[0]; txq.Packets != total {
		t.Fatalf("tx counted %d of %d (%+v)", txq.Packets, total, txq)
	}
	var kinds [3]int
	for _, g := range got {
		pkt := gopacket.NewPacket(g.data, layers.LayerTypeEthernet, gopacket.Default)
		if el := pkt.ErrorLayer(); el != nil {
			t.Fatalf("gopacket: %v (%x)", el.Error(), g.data)
		}
		var k int
		fmt.Sscanf(tag(g.data), "%d", &k)
		switch k % 3 {
		case 0:
			q, ok := pkt.Layer(layers.LayerTypeDot1Q).(*layers.Dot1Q)
			if !ok || q.VLANIdentifier != 77 || q.Priority != 5 {
				t.Fatalf("frame %d: want VLAN 77 pcp 5, got %v", k, pkt)
			}
		case 1:
			vx, ok := pkt.Layer(layers.LayerTypeVXLAN).(*layers.VXLAN)
			ip := pkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
			if !ok || vx.VNI != 4242 || !ip.SrcIP.Equal(oS.AsSlice()) || !ip.DstIP.Equal(oD.AsSlice()) {
				t.Fatalf("frame %d: want VXLAN 4242 from %v, got %v", k, oS, pkt)
			}
			var inner int
			for _, l := range pkt.Layers() {
				if _, ok := l.(*layers.UDP); ok {
					inner++
				}
			}
			if inner != 2 {
				t.Fatalf("frame %d: %d UDP layers, want outer and inner", k, inner)
			}
		case 2:
			if pkt.Layer(layers.LayerTypeDot1Q) != nil || pkt.Layer(layers.LayerTypeVXLAN) != nil {
				t.Fatalf("frame %d: transformed although no TX flow matches", k)
			}
			u := pkt.Layer(layers.LayerTypeUDP).(*layers.UDP)
			if binary.BigEndian.Uint16(u.Contents[2:]) < 20200 {
				t.Fatalf("frame %d: port %d", k, u.DstPort)
			}
		}
		kinds[k%3]++
	}
	t.Logf("sent %d, received %d (vlan %d, vxlan %d, plain %d), rx drops %d %v", total, len(got), kinds[0], kinds[1], kinds[2], rxq.Dropped, rxq.Drops)
	if uint64(len(got))+rxq.Dropped != total {
		t.Fatalf("received %d + dropped %d != sent %d", len(got), rxq.Dropped, total)
	}
}

// rxTotals sums a session's RX packets and drops over all queues.
func rxTotals(s *daqiri.Session) (packets, dropped uint64) {
	rx, _ := s.Stats().Totals()
	return rx.Packets, rx.Dropped
}
