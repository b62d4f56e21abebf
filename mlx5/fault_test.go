package mlx5

import (
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/internal/testutil"
	"github.com/daqiri-go/daqiri/mlx5/channel"
)

// send sends frames (bounded retries) and returns when every one is posted.
func send(t *testing.T, e engine.Engine, q *engine.TxQueue, frames [][]byte) {
	t.Helper()
	var none atomic.Int64
	sendFrames(t, e, q, frames, 0, &none)
}

func frames(r *rand.Rand, from, n int) [][]byte {
	fs := make([][]byte, n)
	for i := range fs {
		fs[i] = udpFrame(r, from+i, 60+r.IntN(900))
	}
	return fs
}

// settle waits until the TX queue counted want packets and the RX side stopped changing.
func settle(t *testing.T, tq *engine.TxQueue, want uint64) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); tq.Stats.Packets.Load()+tq.Stats.Drops(engine.DropSendFailure) < want && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
}

// take collects every burst waiting on q.
func take(q *engine.RxQueue) (bs []*engine.Burst, n int) {
	for {
		b, ok := q.Next()
		if !ok {
			return bs, n
		}
		bs = append(bs, b)
		n += b.Len()
	}
}

// TestRQStarvation: the application holds every buffer of the striding RQ's region; frames
// then find no WQE and are counted as no_packet_buffers (the NIC's out-of-buffer counter);
// once the application frees them the WQEs are reposted and traffic flows again. Counts are
// exact and every buffer is back at the end (the region test helper checks).
func TestRQStarvation(t *testing.T) {
	cfg := pairConfig(1, 1024, 2048, false)
	e, ports := openTest(t, cfg, options{striding: -1, compression: true})
	tq, rq := ports[0].Tx[0], ports[1].Rx[0]
	r := rand.New(rand.NewPCG(5, 6))
	send(t, e, tq, frames(r, 0, 1024))
	settle(t, tq, 1024)
	held, n := take(rq)
	for end := time.Now().Add(5 * time.Second); n < 1024 && time.Now().Before(end); {
		more, k := take(rq)
		held, n = append(held, more...), n+k
		time.Sleep(time.Millisecond)
	}
	if n != 1024 {
		t.Fatalf("%d of 1024 received before starvation", n)
	}
	send(t, e, tq, frames(r, 1024, 300))
	settle(t, tq, 1324)
	e.ports[1].countOutOfBuffer()
	if d := rq.Stats.Drops(engine.DropNoPacketBuffers); d != 300 {
		t.Fatalf("%d counted out of buffer while the application held every buffer, want 300", d)
	}
	for _, b := range held {
		b.Free()
	}
	// Frames that arrive before the engine has taken the buffers back and reposted are
	// dropped as they should be; wait for the repost (nothing returned and not yet taken
	// back) first.
	gr := e.ports[1].rxqs[0].gr
	for end := time.Now().Add(5 * time.Second); gr.Pending() != 0 && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(5 * time.Millisecond)
	send(t, e, tq, frames(r, 1324, 200))
	settle(t, tq, 1524)
	got := 0
	for end := time.Now().Add(5 * time.Second); got < 200 && time.Now().Before(end); {
		bs, k := take(rq)
		for _, b := range bs {
			b.Free()
		}
		got += k
		time.Sleep(time.Millisecond)
	}
	if got != 200 {
		x := e.ports[1].rxqs[0]
		t.Logf("delivered %v consumed %v pc %d ci %d pending %d dbr % x dirty %v model %+v", x.delivered, x.consumed, x.pc, x.ci, x.gr.Pending(), x.dbr, x.dirty, modelOf(e, 1).Counters())
		t.Fatalf("%d of 200 received after the buffers came back", got)
	}
}

// TestCQOverrun: a direct-mode queue whose application does not poll, with a CQ of 64
// entries, overruns; the engine finds it (QUERY_CQ), reports it, and counts every packet the
// NIC received but could not complete as dropped, so tx = rx + dropped still holds.
func TestCQOverrun(t *testing.T) {
	cfg := pairConfig(1, 1024, 2048, false)
	cfg.Interfaces[1].RX.Queues[0].PollMode = config.PollDirect
	cfg.Interfaces[1].RX.Queues[0].CPUCore = ""
	cfg.Interfaces[1].RX.Queues[0].BatchSize = 0
	e, ports := openTest(t, cfg, options{striding: -1, compression: false, rxCQLog: 6})
	tq, rq := ports[0].Tx[0], ports[1].Rx[0]
	r := rand.New(rand.NewPCG(7, 8))
	send(t, e, tq, frames(r, 0, 200))
	settle(t, tq, 200)
	got := 0
	for i := 0; i < 100; i++ {
		b, err := rq.Poll()
		if err != nil {
			continue
		}
		got += b.Len()
		b.Free()
	}
	if got != 64 {
		t.Fatalf("received %d packets through a 64-entry CQ that overran, want 64", got)
	}
	if !e.ports[1].rxqs[0].overrun() {
		t.Fatal("the CQ did not report the overrun")
	}
	e.ports[1].reconcile()
	if s := rq.Stats.Snapshot(); s.Packets+s.Dropped != 200 || rq.Stats.Drops(engine.DropOther) != 136 {
		t.Fatalf("stats %+v: want 64 received and 136 dropped (other)", s)
	}
}

// TestSQErrorCQE: a WQE with a key the device does not know completes in error (local
// protection); the burst is counted as send_failure, the SQ is reset and made ready again,
// and the next bursts go out.
func TestSQErrorCQE(t *testing.T) {
	cfg := pairConfig(1, 1024, 2048, false)
	e, ports := openTest(t, cfg, options{striding: -1, compression: true})
	tq, rq := ports[0].Tx[0], ports[1].Rx[0]
	txq := e.ports[0].txqs[0]
	r := rand.New(rand.NewPCG(9, 10))
	good := txq.lkeys[0]
	txq.mu.Lock()
	txq.lkeys[0] = good ^ 0xabcd00 // a key the device never gave
	txq.mu.Unlock()
	send(t, e, tq, frames(r, 0, 10))
	for end := time.Now().Add(5 * time.Second); tq.Stats.Drops(engine.DropSendFailure) < 10 && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	if d := tq.Stats.Drops(engine.DropSendFailure); d != 10 {
		t.Fatalf("%d counted send_failure after a WQE with a bad key, want 10", d)
	}
	txq.mu.Lock()
	txq.lkeys[0] = good
	txq.mu.Unlock()
	for end := time.Now().Add(5 * time.Second); ; {
		txq.mu.Lock()
		broken := txq.inError
		txq.mu.Unlock()
		if !broken {
			break
		}
		if time.Now().After(end) {
			t.Fatal("SQ not recovered after 5 s")
		}
		time.Sleep(time.Millisecond)
	}
	send(t, e, tq, frames(r, 10, 100))
	settle(t, tq, 110)
	got := 0
	for end := time.Now().Add(5 * time.Second); got < 100 && time.Now().Before(end); {
		bs, k := take(rq)
		for _, b := range bs {
			b.Free()
		}
		got += k
		time.Sleep(time.Millisecond)
	}
	if got != 100 || tq.Stats.Packets.Load() != 100 {
		t.Fatalf("after recovery: %d received, %d sent; want 100 and 100", got, tq.Stats.Packets.Load())
	}
}

// TestFlowRejected: a flow the NIC's match layout cannot express (VXLAN on port 8472) and a
// flow beyond the last rule slot are typed errors; the flows before them stay installed and
// can be deleted; deleting an unknown id is ErrInvalidParameter.
func TestFlowRejected(t *testing.T) {
	cfg := pairConfig(2, 1024, 2048, false)
	e, _ := openTest(t, cfg, options{striding: -1, compression: true})
	ok := config.Flow{Name: "ok", Actions: []config.Action{{Type: config.ActionQueue, Queues: []int{1}}}, Match: config.Match{UDPDst: config.PortRange{Lo: 7777, Hi: 7777}}}
	bad := ok
	bad.Name = "vxlan8472"
	bad.Match = config.Match{}
	bad.Actions = []config.Action{{Type: config.ActionTunnelDecap, Tunnel: config.Tunnel{Type: config.TunnelVXLAN, OuterUDPDst: 8472}}, ok.Actions[0]}
	ids, err := e.AddRxFlows(1, []config.Flow{ok, bad})
	if !errors.Is(err, engine.ErrInvalidParameter) || ids[0] == 0 || ids[1] != 0 {
		t.Fatalf("AddRxFlows(ok, vxlan 8472) = %v, %v; want one id and ErrInvalidParameter", ids, err)
	}
	if err := e.DeleteFlow(ids[0]); err != nil {
		t.Fatal(err)
	}
	if err := e.DeleteFlow(ids[0]); !errors.Is(err, engine.ErrInvalidParameter) {
		t.Fatalf("second delete: %v", err)
	}
	var added []uint32
	for i := 0; ; i++ {
		f := ok
		f.Match.UDPDst = config.PortRange{Lo: uint16(8000 + i), Hi: uint16(8000 + i)}
		ids, err := e.AddRxFlows(1, []config.Flow{f})
		if err != nil {
			if !errors.Is(err, engine.ErrNoSpaceAvailable) {
				t.Fatalf("flow %d: %v, want ErrNoSpaceAvailable once the slots are used", i, err)
			}
			break
		}
		added = append(added, ids[0])
		if i > 1000 {
			t.Fatal("no slot limit")
		}
	}
	for _, id := range added {
		if err := e.DeleteFlow(id); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCloseUnderLoad closes the engine while a sender and a receiver run (the receiver keeps
// some bursts): Close returns, every packet the TX queue took is counted sent or dropped, the
// receive side's counts add up, and every buffer is back once the application frees what it
// held (the region helper checks at cleanup).
func TestCloseUnderLoad(t *testing.T) {
	cfg := pairConfig(2, 1024, 2048, true)
	ports := enginetestPorts(t, cfg)
	e := openPorts(t, cfg, ports)
	tq := ports[0].Tx[0]
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var held []*engine.Burst
	wg.Add(2)
	go func() {
		defer wg.Done()
		r := rand.New(rand.NewPCG(11, 12))
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			b, err := tq.NewBurst(32)
			if err != nil {
				time.Sleep(10 * time.Microsecond)
				continue
			}
			for j := 0; j < 32; j++ {
				f := udpFrame(r, i*32+j, 60+r.IntN(900))
				copy(b.SegmentBuffer(0, j), f)
				b.SetPacketLengths(j, len(f))
			}
			if err := e.Send(b); err != nil {
				b.Free()
			}
		}
	}()
	go func() {
		defer wg.Done()
		for k := 0; ; k++ {
			select {
			case <-stop:
				return
			default:
			}
			for _, q := range ports[1].Rx {
				if b, ok := q.Next(); ok {
					if k%50 == 0 && len(held) < 8 {
						held = append(held, b)
					} else {
						b.Free()
					}
				}
			}
		}
	}()
	time.Sleep(200 * time.Millisecond)
	done := make(chan error)
	go func() { done <- e.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Close under load: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return in 10 s")
	}
	close(stop)
	wg.Wait()
	for _, b := range held {
		b.Free()
	}
	var rx, drops uint64
	for _, q := range ports[1].Rx {
		q.Drain()
		s := q.Stats.Snapshot()
		rx += s.Packets
		drops += s.Dropped
	}
	ts := tq.Stats.Snapshot()
	if ts.Packets == 0 || ts.Packets+ts.Dropped != rx+drops+ts.Dropped {
		t.Fatalf("tx %+v, rx %d + dropped %d: every packet sent must be received or counted", ts, rx, drops)
	}
}

// TestFlowRefusedByDevice: when the device refuses the commands of a flow (here: its
// firmware has failed, every command completes with INT_ERR), AddRxFlows returns
// ErrInvalidParameter with the device's *channel.CommandError in the chain, and nothing is
// left half-installed for the application to see (no id).
func TestFlowRefusedByDevice(t *testing.T) {
	cfg := pairConfig(2, 1024, 2048, false)
	ports := enginetestPorts(t, cfg)
	e := openPorts(t, cfg, ports)
	modelOf(e, 1).Fail(1)
	f := config.Flow{Name: "late", Actions: []config.Action{{Type: config.ActionQueue, Queues: []int{1}}}, Match: config.Match{UDPDst: config.PortRange{Lo: 7777, Hi: 7777}}}
	ids, err := e.AddRxFlows(1, []config.Flow{f})
	var ce *channel.CommandError
	if !errors.Is(err, engine.ErrInvalidParameter) || !errors.As(err, &ce) || ids[0] != 0 {
		t.Fatalf("AddRxFlows on a failed device = %v, %v; want no id, ErrInvalidParameter and the command error", ids, err)
	}
	// Close reports what the failed device refused, and still returns every buffer.
	if err := e.Close(); err == nil {
		t.Log("Close on a failed device reported nothing")
	}
}

var _ = testutil.RandBytes
