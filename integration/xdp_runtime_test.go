package integration

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/integration/netns"
)

// TestXDPRuntimeQueues adds an RX queue to an open xdp port, steers a flow to it, receives
// on it, deletes it while frames keep coming (they are counted as dropped, closed), and adds
// a TX queue that sends frames the peer's kernel receives; deleting twice and using deleted
// queues give ErrQueueDeleted.
func TestXDPRuntimeQueues(t *testing.T) {
	netns.RequireScapy(t)
	p := netns.NewPairWith(t, netns.PairOptions{})
	ifc := xdpIface("rx", p.VethB, 1, []config.Flow{queueFlow("static", 500, config.Match{UDPDst: config.PortRange{Lo: 8000, Hi: 8000}}, 0)}, true, false)
	s := openXDP(t, p.B, rawConfig(ifc))
	if err := s.AddRxQueue(0, config.Queue{Name: "rt", ID: 3, CPUCore: "0", BatchSize: 16, MemoryRegions: []string{"rx0"}}); err != nil {
		t.Fatal(err)
	}
	id, err := s.AddRxFlow(0, queueFlow("to3", 0, config.Match{UDPDst: config.PortRange{Lo: 8001, Hi: 8001}}, 3))
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	script := scapyHeader(p) + fmt.Sprintf(`
s = conf.L2socket(iface=IFACE)
for i in range(%d):
    s.send(E()/IP(src=A, dst=B)/UDP(sport=1000, dport=8000)/P("s%%d" %% i))
    s.send(E()/IP(src=A, dst=B)/UDP(sport=1000, dport=8001)/P("r%%d" %% i))
`, n)
	var got []rxPkt
	sendWhile(t, p.A, script, func() { got = collectQuiet(t, s, 0, 2*n, 20*time.Second, time.Second) })
	per := map[int]int{}
	for _, g := range got {
		tg := tag(g.data)
		switch {
		case strings.HasPrefix(tg, "s") && g.queue == 0 && g.flow == 500:
		case strings.HasPrefix(tg, "r") && g.queue == 3 && g.flow == id:
		default:
			t.Fatalf("frame %q on queue %d flow %d", tg, g.queue, g.flow)
		}
		per[g.queue]++
	}
	if per[0] != n || per[3] != n {
		t.Fatalf("queue 0 got %d, queue 3 got %d; want %d each", per[0], per[3], n)
	}

	// Delete queue 3 while its flow still steers there: frames are dropped as closed.
	if err := s.DeleteRxQueue(0, 3); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRxQueue(0, 3); !errors.Is(err, daqiri.ErrQueueDeleted) {
		t.Fatalf("second delete: %v", err)
	}
	if _, err := s.RxBurst(0, 3); !errors.Is(err, daqiri.ErrQueueDeleted) {
		t.Fatalf("poll of the deleted queue: %v", err)
	}
	sendWhile(t, p.A, script, func() { got = collectQuiet(t, s, 0, n, 20*time.Second, time.Second) })
	time.Sleep(150 * time.Millisecond)
	var closed uint64
	for _, q := range s.Stats().Ports[0].Rx {
		if q.Queue == 3 && q.Deleted {
			closed = q.Drops["closed"]
		}
	}
	if len(got) != n || closed != n {
		t.Fatalf("after delete: %d frames received (want %d on queue 0), %d counted closed on queue 3 (want %d); stats %+v", len(got), n, closed, n, s.Stats())
	}

	// A TX queue added at run time shares NIC queue 0's socket; the peer's kernel receives.
	if err := s.AddTxQueue(0, config.Queue{Name: "tt", ID: 9, BatchSize: 16, MemoryRegions: []string{"rx0"}}); err != nil {
		t.Fatal(err)
	}
	kern := listenUDP(t, p.A, netip.AddrPortFrom(p.AddrA, 9009))
	sent := 0
	for sent < 50 {
		b, err := s.TxBurst(0, 9, 10)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < b.Len(); i++ {
			pl := []byte(fmt.Sprintf("<tag:t%d>xxxxxxxx", sent+i))
			b.SetEthHeader(i, p.MACA, p.MACB)
			b.SetIPv4Header(i, 8+len(pl), 17, p.AddrB, p.AddrA)
			b.SetUDPHeader(i, len(pl), 5555, 9009)
			b.SetUDPPayload(i, pl)
		}
		if err := s.Send(b); err != nil {
			b.Free()
			if errors.Is(err, daqiri.ErrNotReady) {
				time.Sleep(time.Millisecond)
				continue
			}
			t.Fatal(err)
		}
		sent += 10
	}
	if k := kern.drain(2 * time.Second); len(k) != 50 {
		t.Fatalf("peer kernel received %d of 50 frames from the run-time TX queue", len(k))
	}
	if err := s.DeleteTxQueue(0, 9); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TxBurst(0, 9, 1); !errors.Is(err, daqiri.ErrQueueDeleted) {
		t.Fatalf("TxBurst on the deleted TX queue: %v", err)
	}
	if err := s.DeleteTxQueue(0, 9); !errors.Is(err, daqiri.ErrQueueDeleted) {
		t.Fatalf("second TX delete: %v", err)
	}
	// Re-added on the same NIC queue.
	if err := s.AddTxQueue(0, config.Queue{Name: "tt2", ID: 9, BatchSize: 16, MemoryRegions: []string{"rx0"}}); err != nil {
		t.Fatal(err)
	}
}
