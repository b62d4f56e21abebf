package integration

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/flow"
	"github.com/daqiri-go/daqiri/integration/netns"
)

// TestXDPIPv6 sends IPv6/UDP frames from scapy across a veth: a flow on ipv6_dst steers its
// frames to queue 0, and an RSS flow spreads the others over four queues exactly as the
// Toeplitz reference hashes their IPv6 4-tuples, each tuple on one queue.
func TestXDPIPv6(t *testing.T) {
	netns.RequireScapy(t)
	p := netns.NewPairWith(t, netns.PairOptions{Queues: 4})
	special := netip.MustParseAddr("fd00:99::1")
	s := openXDP(t, p.B, rawConfig(xdpIface("rx", p.VethB, 4, []config.Flow{
		queueFlow("dst6", 66, config.Match{IPv6Dst: special, UDPDst: config.PortRange{Lo: 7000, Hi: 7999}}, 0),
		queueFlow("rss6", 56, config.Match{UDPDst: config.PortRange{Lo: 7000, Hi: 7999}}, 0, 1, 2, 3),
	}, true, true)))
	script := scapyHeader(p) + `
import random
pk = []
def a6(): return "fd00:%x:%x::%x" % (random.randint(0,65535), random.randint(0,65535), random.randint(1,65535))
for i in range(64):
    s, d = a6(), a6()
    sp, dp = random.randint(1024, 65535), random.randint(7000, 7999)
    for k in range(3):
        pk.append(E()/IPv6(src=s, dst=d)/UDP(sport=sp, dport=dp)/P("%s,%s,%d,%d,%d" % (s, d, sp, dp, k)))
for i in range(16):
    pk.append(E()/IPv6(src=a6(), dst="fd00:99::1")/UDP(sport=1, dport=7001)/P("special,%d" % i))
random.shuffle(pk)
sendp(pk, iface=IFACE)
`
	var got []rxPkt
	const total = 64*3 + 16
	sendWhile(t, p.A, script, func() { got = collect(t, s, 0, total, 15*time.Second) })
	if len(got) != total {
		t.Fatalf("got %d of %d frames; stats %+v", len(got), total, s.Stats())
	}
	onQueue := map[string]int{}
	per := map[int]int{}
	specials := 0
	for _, g := range got {
		tg := tag(g.data)
		if strings.HasPrefix(tg, "special,") {
			if g.queue != 0 || g.flow != 66 {
				t.Fatalf("frame to %v on queue %d flow %d", special, g.queue, g.flow)
			}
			specials++
			continue
		}
		var sa, da string
		var sp, dp, k int
		if _, err := fmt.Sscanf(strings.ReplaceAll(tg, ",", " "), "%s %s %d %d %d", &sa, &da, &sp, &dp, &k); err != nil {
			t.Fatalf("tag %q: %v", tg, err)
		}
		tu := flow.Tuple{Src: netip.MustParseAddr(sa), Dst: netip.MustParseAddr(da), SrcPort: uint16(sp), DstPort: uint16(dp)}
		key := fmt.Sprint(tu)
		if q, ok := onQueue[key]; ok && q != g.queue {
			t.Fatalf("tuple %s on queues %d and %d", key, q, g.queue)
		}
		onQueue[key] = g.queue
		if want := flow.RSSIndex(tu.Hash(flow.DefaultRSSKey[:]), 4); want != g.queue || g.flow != 56 {
			t.Fatalf("tuple %s on queue %d flow %d, Toeplitz reference queue %d flow 56", key, g.queue, g.flow, want)
		}
		per[g.queue]++
	}
	if specials != 16 || len(onQueue) != 64 || len(per) != 4 {
		t.Fatalf("%d special frames, %d tuples over queues %v", specials, len(onQueue), per)
	}
	t.Logf("64 IPv6 tuples over 4 queues: %v frames; 16 to %v on queue 0", per, special)
}
