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

// TestXDPRuntimeQueuesUnderTraffic adds and deletes RX queues (each with a flow steering a
// UDP port to it) over and over while the peer sends to a static flow's port and to the
// churned port: every frame of the static flow arrives once on queue 0, the churned frames
// are received on the queue of the moment or counted (closed, or to the kernel while no flow
// exists), and Close finds every buffer back.
func TestXDPRuntimeQueuesUnderTraffic(t *testing.T) {
	netns.RequireScapy(t)
	p := netns.NewPairWith(t, netns.PairOptions{})
	ifc := xdpIface("rx", p.VethB, 1, []config.Flow{queueFlow("static", 500, config.Match{UDPDst: config.PortRange{Lo: 8000, Hi: 8000}}, 0)}, true, false)
	s := openXDP(t, p.B, rawConfig(ifc))
	const n = 1200
	script := scapyHeader(p) + fmt.Sprintf(`
import time
s = conf.L2socket(iface=IFACE)
for i in range(%d):
    s.send(E()/IP(src=A, dst=B)/UDP(sport=1000, dport=8000)/P("s%%d" %% i))
    s.send(E()/IP(src=A, dst=B)/UDP(sport=1000, dport=8001)/P("c%%d" %% i))
    if i %% 100 == 99:
        time.sleep(0.01)
`, n)
	done := make(chan struct{})
	var churnErr error
	cycles := 0
	var churned []rxPkt
	go func() {
		defer close(done)
		for cycles = 0; cycles < 25; cycles++ {
			id := 10 + cycles
			if err := s.AddRxQueue(0, config.Queue{Name: "c", ID: id, CPUCore: "0", BatchSize: 8, MemoryRegions: []string{"rx0"}}); err != nil {
				churnErr = err
				return
			}
			fid, err := s.AddRxFlow(0, queueFlow("c", 0, config.Match{UDPDst: config.PortRange{Lo: 8001, Hi: 8001}}, id))
			if err != nil {
				churnErr = err
				return
			}
			for end := time.Now().Add(30 * time.Millisecond); time.Now().Before(end); {
				if b, err := s.RxBurst(0, id); err == nil {
					for i := 0; i < b.Len(); i++ {
						churned = append(churned, rxPkt{queue: id, flow: b.FlowID(i), data: append([]byte(nil), b.Packet(i)...)})
					}
					b.Free()
				}
			}
			// Delete the queue first (its flow still steers there: dropped as closed), then
			// the flow.
			if err := s.DeleteRxQueue(0, id); err != nil {
				churnErr = err
				return
			}
			if err := s.DeleteFlow(fid); err != nil {
				churnErr = err
				return
			}
		}
	}()
	var got []rxPkt
	sendWhile(t, p.A, script, func() {
		end := time.Now().Add(30 * time.Second)
		for len(got) < n && time.Now().Before(end) {
			b, err := s.RxBurst(0, 0)
			if err != nil {
				time.Sleep(200 * time.Microsecond)
				continue
			}
			for i := 0; i < b.Len(); i++ {
				got = append(got, rxPkt{queue: 0, flow: b.FlowID(i), data: append([]byte(nil), b.Packet(i)...)})
			}
			b.Free()
		}
	})
	<-done
	if churnErr != nil {
		t.Fatalf("churn cycle %d: %v", cycles, churnErr)
	}
	seen := map[string]bool{}
	for _, g := range got {
		tg := tag(g.data)
		if !strings.HasPrefix(tg, "s") || g.flow != 500 || seen[tg] {
			t.Fatalf("queue 0 got %q flow %d (dup %v)", tg, g.flow, seen[tg])
		}
		seen[tg] = true
	}
	for _, g := range churned {
		if !strings.HasPrefix(tag(g.data), "c") {
			t.Fatalf("churned queue %d got %q", g.queue, tag(g.data))
		}
	}
	t.Logf("%d add/delete cycles under traffic; static %d/%d; churned port: %d received on the queues of the moment", cycles, len(seen), n, len(churned))
	if len(seen) != n {
		t.Fatalf("static flow lost frames while queues came and went: %d of %d", len(seen), n)
	}
	// Every churned frame is accounted for: received, dropped on a (deleted) queue, or
	// handed to the kernel while no flow named the port.
	time.Sleep(150 * time.Millisecond) // kernel-side counters are folded in periodically
	st := s.Stats().Ports[0]
	var dropped uint64
	for _, q := range st.Rx {
		if q.Queue != 0 {
			dropped += q.Dropped
		}
	}
	if total := uint64(len(churned)) + dropped + st.Events["kernel_passed"]; total != n {
		t.Fatalf("churned port: %d received + %d dropped + %d to the kernel = %d, want %d; stats %+v", len(churned), dropped, st.Events["kernel_passed"], total, n, st)
	}
}
