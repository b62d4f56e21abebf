package mlx5

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/flow"
	"github.com/daqiri-go/daqiri/integration/netns"
	"github.com/daqiri-go/daqiri/internal/testutil"
)

// bridgeYAML is one model port bridged to a netdev: an RX queue behind flow 7 (UDP
// destination 7000) with isolation, and a TX queue whose frames to UDP 7101 get a VLAN tag
// (100) and to 7102 a VXLAN header (VNI 42) from the NIC's TX table.
const bridgeYAML = `
daqiri:
  cfg:
    version: 1
    stream_type: raw
    master_core: 0
    log_level: error
    rx_meta_buffers: 256
    tx_meta_buffers: 64
    memory_regions:
    - {name: tx, kind: host, affinity: 0, num_bufs: 256, buf_size: 2048}
    - {name: rx, kind: host, affinity: 0, num_bufs: 1024, buf_size: 2048}
    - {name: rx1, kind: host, affinity: 0, num_bufs: 1024, buf_size: 2048}
    interfaces:
    - name: br
      address: "model:0@%s"
      rx:
        flow_isolation: true
        queues:
        - {name: r0, id: 0, cpu_core: 0, batch_size: 8, timeout_us: 0, memory_regions: [rx]}
        - {name: r1, id: 1, cpu_core: 0, batch_size: 8, timeout_us: 0, memory_regions: [rx1]}
        flows:
        - name: to7000
          id: 7
          action: {type: queue, id: 0}
          match: {udp_dst: 7000}
        - name: rss
          id: 8
          action: {type: queue, ids: [0, 1]}
          match: {udp_dst: 7002}
      tx:
        queues:
        - {name: t0, id: 0, cpu_core: 0, batch_size: 8, memory_regions: [tx]}
        flows:
        - name: vlan
          id: 101
          actions:
          - {type: vlan_push, vlan_id: 100, pcp: 0, dei: 0, ethertype: 0x8100}
          match: {udp_dst: 7101}
        - name: vxlan
          id: 102
          actions:
          - type: tunnel_encap
            tunnel: {type: vxlan, outer_eth_src: "%s", outer_eth_dst: "%s", outer_ipv4_src: 192.0.2.1, outer_ipv4_dst: 192.0.2.2, outer_udp_src: 49152, outer_udp_dst: 4789, vni: 42}
          match: {udp_dst: 7102}
`

// TestBridgeVeth bridges a model port to one end of a veth pair (moved to this process's
// namespace so the engine's AF_PACKET bridge can open it) whose other end is in a namespace:
// datagrams the peer's kernel sends to UDP 7000 arrive on the RX queue with flow id 7, others
// not at all (isolation); frames the engine sends are decoded by tshark on the peer — plain,
// with the VLAN tag the TX table pushes, and inside the VXLAN header it adds. Run it under
// `flock /tmp/daqiri-priv.lock`.
func TestBridgeVeth(t *testing.T) {
	netns.Require(t)
	tshark := testutil.RequireTool(t, "tshark", "Debian: apt-get install tshark; CI installs it from .ci/apt.d/mlx5.txt")
	pair := netns.NewPairWith(t, netns.PairOptions{MTU: 1500})
	if out, err := netns.RunIn(pair.A, "ip", "link", "set", pair.VethA, "netns", "1"); err != nil {
		t.Fatalf("move %s to the test's namespace: %v: %s", pair.VethA, err, out)
	}
	if out, err := exec.Command("ip", "link", "set", pair.VethA, "up").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	cfg, err := config.Parse([]byte(fmt.Sprintf(bridgeYAML, pair.VethA, pair.MACA, pair.MACB)), "bridge.yaml")
	if err != nil {
		t.Fatal(err)
	}
	e, ports := openTest(t, cfg, options{striding: -1, compression: true})
	rq, tq := ports[0].Rx[0], ports[0].Tx[0]

	// Peer → engine: probes until the bridge is up, then counted datagrams.
	peerSend := func(port int, msgs ...string) {
		t.Helper()
		if err := pair.B.Do(func() error {
			c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: pair.AddrB.AsSlice()})
			if err != nil {
				return err
			}
			defer c.Close()
			for _, m := range msgs {
				if _, err := c.WriteToUDP([]byte(m), &net.UDPAddr{IP: pair.AddrA.AsSlice(), Port: port}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	recv := func() (msgs []string) {
		for {
			b, ok := rq.Next()
			if !ok {
				return msgs
			}
			for i := 0; i < b.Len(); i++ {
				if b.FlowID(i) != 7 {
					t.Errorf("flow id %d, want 7", b.FlowID(i))
				}
				if h, ok := b.RSSHash(i); ok {
					t.Errorf("a packet of a one-queue flow (direct TIR) reports RSS hash %#x", h)
				}
				msgs = append(msgs, string(b.Packet(i)[42:]))
			}
			b.Free()
		}
	}
	up := false
	for i := 0; i < 100 && !up; i++ {
		peerSend(7000, "probe")
		time.Sleep(100 * time.Millisecond)
		up = len(recv()) > 0
	}
	if !up {
		t.Fatalf("no probe from the peer arrived (model counters %+v)", modelOf(e, 0).Counters())
	}
	peerSend(7999, "not-for-any-flow")
	var want []string
	for i := 0; i < 5; i++ {
		want = append(want, fmt.Sprintf("peer-%d", i))
	}
	peerSend(7000, want...)
	var got []string
	for end := time.Now().Add(10 * time.Second); len(got) < len(want) && time.Now().Before(end); time.Sleep(time.Millisecond) {
		for _, m := range recv() {
			if m != "probe" {
				got = append(got, m)
			}
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("engine received %q, want %q", got, want)
	}

	// Peer → engine over RSS: datagrams from 16 source ports to the RSS flow arrive with flow
	// id 8, each on the queue its Toeplitz hash picks (ids[(hash & 127) % 2]), with the NIC's
	// hash in the burst equal to flow's Toeplitz of the packet's 4-tuple (default key).
	for i := 0; i < 16; i++ {
		peerSend(7002, fmt.Sprintf("rss-%d", i))
	}
	rss := 0
	perQueue := [2]int{}
	for end := time.Now().Add(10 * time.Second); rss < 16 && time.Now().Before(end); time.Sleep(time.Millisecond) {
		for qi, q := range ports[0].Rx {
			for {
				b, ok := q.Next()
				if !ok {
					break
				}
				for i := 0; i < b.Len(); i++ {
					p := b.Packet(i)
					if string(p[42:]) == "probe" {
						continue
					}
					h, ok := b.RSSHash(i)
					src, _ := netip.AddrFromSlice(p[26:30])
					dst, _ := netip.AddrFromSlice(p[30:34])
					tu := flow.Tuple{Src: src, Dst: dst, SrcPort: binary.BigEndian.Uint16(p[34:]), DstPort: binary.BigEndian.Uint16(p[36:])}
					want := tu.Hash(flow.DefaultRSSKey[:])
					switch {
					case b.FlowID(i) != 8:
						t.Errorf("%q: flow id %d, want 8", p[42:], b.FlowID(i))
					case !ok || h != want:
						t.Errorf("%q: RSS hash %#x (reported %v), flow's Toeplitz says %#x", p[42:], h, ok, want)
					case int(want&127)%2 != qi:
						t.Errorf("%q: on queue %d, hash %#x picks queue %d", p[42:], qi, want, int(want&127)%2)
					}
					rss++
					perQueue[qi]++
				}
				b.Free()
			}
		}
	}
	if rss != 16 {
		t.Fatalf("%d of 16 RSS datagrams arrived", rss)
	}
	t.Logf("RSS datagrams per queue: %v", perQueue)

	// Engine → peer, decoded by tshark on the peer's end.
	ts := netns.StartTshark(t, tshark, pair.B, pair.VethB, "udp", "-o", "udp.check_checksum:FALSE",
		"-T", "fields", "-E", "separator=|", "-e", "vlan.id", "-e", "vxlan.vni", "-e", "udp.dstport", "-e", "data.data")
	lines := ts.Lines
	send := func(dport uint16, payload string) {
		t.Helper()
		b, err := tq.NewBurst(1)
		if err != nil {
			t.Fatal(err)
		}
		f := bridgeFrame(pair.MACB, pair.MACA, pair.AddrA.As4(), pair.AddrB.As4(), 7000, dport, payload)
		copy(b.SegmentBuffer(0, 0), f)
		b.SetPacketLengths(0, len(f))
		for tries := 0; ; tries++ {
			err := e.Send(b)
			if err == nil {
				return
			}
			if tries > 1000 {
				t.Fatal(err)
			}
			time.Sleep(time.Millisecond)
		}
	}
	ts.WaitLive(t, func(payload string) { send(7100, payload) })
	cases := []struct {
		dport      uint16
		vlan, vni  string
		payload    string
		outerDport string
	}{
		{7100, "", "", "plain", "7100"},
		{7101, "100", "", "tagged", "7101"},
		{7102, "", "42", "tunneled", "4789,7102"},
	}
	for _, c := range cases {
		send(c.dport, c.payload)
	}
	for _, c := range cases {
		var l string
		for {
			select {
			case l = <-lines:
			case <-time.After(30 * time.Second):
				t.Fatalf("tshark: no frame for %q: %s", c.payload, ts.Stderr())
			}
			if !strings.Contains(l, fmt.Sprintf("%x", "probe")) {
				break
			}
		}
		fs := strings.Split(l, "|")
		if len(fs) != 4 || fs[0] != c.vlan || fs[1] != c.vni || fs[2] != c.outerDport || strings.ReplaceAll(fs[3], ":", "") != fmt.Sprintf("%x", c.payload) {
			t.Errorf("tshark decoded %q for %q; want vlan %q, vni %q, udp ports %q", l, c.payload, c.vlan, c.vni, c.outerDport)
		}
	}
	_ = engine.ErrNotReady
}

// bridgeFrame is an Ethernet/IPv4/UDP frame with a valid IPv4 checksum and no UDP checksum.
func bridgeFrame(dmac, smac net.HardwareAddr, src, dst [4]byte, sport, dport uint16, payload string) []byte {
	f := make([]byte, 42, 42+len(payload))
	copy(f, dmac)
	copy(f[6:], smac)
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:]
	ip[0], ip[8], ip[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(ip[2:], uint16(28+len(payload)))
	copy(ip[12:], src[:])
	copy(ip[16:], dst[:])
	binary.BigEndian.PutUint16(ip[10:], engine.IPv4Checksum(ip[:20]))
	binary.BigEndian.PutUint16(ip[20:], sport)
	binary.BigEndian.PutUint16(ip[22:], dport)
	binary.BigEndian.PutUint16(ip[24:], uint16(8+len(payload)))
	return append(f, payload...)
}
