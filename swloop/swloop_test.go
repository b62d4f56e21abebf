package swloop

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/internal/testutil/enginetest"
)

// loopConfig is one loopback interface with ntx TX and nrx RX queues (RX ids 10, 11, ...),
// each queue on one region, or two (header-data split) when hds.
func loopConfig(ntx, nrx int, hds bool, rxMeta int) *config.Config {
	c := &config.Config{Version: 1, StreamType: config.StreamRaw, Loopback: "sw", LogLevel: "error", RxMetaBuffers: rxMeta, TxMetaBuffers: 16}
	ifc := config.Interface{Name: "lb", Address: "loopback"}
	regs := func(pfx string, i int) []string {
		r := []string{fmt.Sprintf("%s%d", pfx, i)}
		if hds {
			r = append(r, fmt.Sprintf("%s%dd", pfx, i))
		}
		for _, n := range r {
			c.MemoryRegions = append(c.MemoryRegions, config.MemoryRegion{Name: n, Kind: config.KindHost, Access: config.AccessLocal, NumBufs: 64, BufSize: 512})
		}
		return r
	}
	if ntx > 0 {
		ifc.TX = &config.TxConfig{}
	}
	for i := 0; i < ntx; i++ {
		ifc.TX.Queues = append(ifc.TX.Queues, config.Queue{Name: fmt.Sprintf("t%d", i), ID: i, CPUCore: "0", BatchSize: 16, MemoryRegions: regs("tx", i)})
	}
	if nrx > 0 {
		ifc.RX = &config.RxConfig{}
	}
	for i := 0; i < nrx; i++ {
		ifc.RX.Queues = append(ifc.RX.Queues, config.Queue{Name: fmt.Sprintf("r%d", i), ID: 10 + i, CPUCore: "0", BatchSize: 16, MemoryRegions: regs("rx", i)})
	}
	c.Interfaces = []config.Interface{ifc}
	return c
}

// fill takes a TX burst of n packets with random lengths and bytes in every segment and
// returns each packet's segments as sent.
func fill(t *testing.T, r *rand.Rand, q *engine.TxQueue, n int) (*engine.Burst, [][][]byte) {
	t.Helper()
	b, err := q.NewBurst(n)
	if err != nil {
		t.Fatal(err)
	}
	sent := make([][][]byte, n)
	for i := 0; i < n; i++ {
		lens := make([]int, b.NumSegments())
		for s := range lens {
			lens[s] = 1 + r.IntN(512)
		}
		if err := b.SetPacketLengths(i, lens...); err != nil {
			t.Fatal(err)
		}
		for s := range lens {
			seg := b.Segment(s, i)
			for k := range seg {
				seg[k] = byte(r.Uint32())
			}
			sent[i] = append(sent[i], append([]byte(nil), seg...))
		}
	}
	return b, sent
}

// TestLoopQueues sends random bursts on three TX queues of an interface with two RX queues:
// TX queue j comes back on RX queue j, the third on the first, at the very addresses sent
// (no copy), with every segment intact, flow id 0 and no timestamp; the counters agree and
// every buffer is back in its region at the end (enginetest checks).
func TestLoopQueues(t *testing.T) {
	for _, hds := range []bool{false, true} {
		e, ports := enginetest.Open(t, loopConfig(3, 2, hds, 32), Open)
		p := ports[0]
		r := rand.New(rand.NewPCG(rand.Uint64(), 3))
		sentPerRx := map[int]int{}
		for round := 0; round < 20; round++ {
			j := r.IntN(3)
			n := 1 + r.IntN(16)
			b, sent := fill(t, r, p.Tx[j], n)
			addrs := make([]uintptr, n)
			for i := range addrs {
				addrs[i] = b.SegmentAddr(0, i)
			}
			if err := e.Send(b); err != nil {
				t.Fatal(err)
			}
			rq := p.Rx[[]int{0, 1, 0}[j]]
			rb, ok := rq.Next()
			if !ok {
				t.Fatalf("TX queue %d: nothing on RX queue %d", j, rq.ID)
			}
			if rb.Len() != n || rb.IsTx() || rb.Queue() != rq.ID || rb.NumSegments() != len(sent[0]) {
				t.Fatalf("rx burst: %d packets (sent %d), tx %v, queue %d, %d segments", rb.Len(), n, rb.IsTx(), rb.Queue(), rb.NumSegments())
			}
			for i := 0; i < n; i++ {
				if rb.SegmentAddr(0, i) != addrs[i] {
					t.Fatalf("packet %d was copied", i)
				}
				for s := range sent[i] {
					if !bytes.Equal(rb.Segment(s, i), sent[i][s]) {
						t.Fatalf("packet %d segment %d differs", i, s)
					}
				}
				if ts, err := rb.RxTimestamp(i); err != nil || ts <= 0 || ts > time.Now().UnixNano() || rb.FlowID(i) != 0 {
					t.Fatalf("packet %d: flow %d, receive time %d (%v); want a CLOCK_REALTIME time up to now", i, rb.FlowID(i), ts, err)
				}
			}
			rb.Free()
			sentPerRx[rq.ID] += n
		}
		for _, q := range p.Rx {
			if _, ok := q.Next(); ok {
				t.Fatalf("queue %d: extra burst", q.ID)
			}
		}
		var tx uint64
		for _, q := range p.Tx {
			tx += q.Stats.Packets.Load()
		}
		if tx != uint64(sentPerRx[10]+sentPerRx[11]) {
			t.Fatalf("TX counted %d packets, %v looped", tx, sentPerRx)
		}
	}
}

// TestLoopDrops: an interface without RX queues counts what it sends as not connected; with
// the loopback's burst metadata exhausted, a burst is counted as dropped on the RX queue; in
// both cases every buffer goes back (the regions' leak check at cleanup).
func TestLoopDrops(t *testing.T) {
	e, ports := enginetest.Open(t, loopConfig(1, 0, false, 32), Open)
	r := rand.New(rand.NewPCG(rand.Uint64(), 4))
	b, _ := fill(t, r, ports[0].Tx[0], 5)
	if err := e.Send(b); err != nil {
		t.Fatal(err)
	}
	if d := ports[0].Tx[0].Stats.Drops(engine.DropNotConnected); d != 5 {
		t.Fatalf("not connected: %d drops, want 5", d)
	}

	e, ports = enginetest.Open(t, loopConfig(1, 1, false, 2), Open)
	p := ports[0]
	for k := 0; k < 3; k++ { // the loopback has 2 RX bursts; nobody reads
		b, _ := fill(t, r, p.Tx[0], 4)
		if err := e.Send(b); err != nil {
			t.Fatal(err)
		}
	}
	if d := p.Rx[0].Stats.Drops(engine.DropNoBurstBuffers); d != 4 {
		t.Fatalf("metadata exhausted: %d drops, want 4", d)
	}
	if got := p.Tx[0].Stats.Packets.Load(); got != 12 {
		t.Fatalf("TX counted %d packets, want 12 (sent, whatever happened after)", got)
	}
}

// TestLoopTimedSendNotEarly: no packet comes back stamped before its send time, to the
// nanosecond. Send times 1 µs apart with random nanoseconds: compared as float64 (a 256 ns
// grid at today's dates), about half came back up to 256 ns early.
func TestLoopTimedSendNotEarly(t *testing.T) {
	e, ports := enginetest.Open(t, loopConfig(1, 1, false, 32), Open)
	p := ports[0]
	r := rand.New(rand.NewPCG(rand.Uint64(), 3))
	early := 0
	for range 8 {
		b, _ := fill(t, r, p.Tx[0], 16)
		base := time.Now().Add(100 * time.Microsecond).UnixNano()
		ats := make([]int64, b.Len())
		for i := range ats {
			ats[i] = base + int64(i)*1000 + r.Int64N(1000)
			b.SetRxTimestamp(i, ats[i])
		}
		if err := e.Send(b); err != nil {
			t.Fatal(err)
		}
		rb, ok := p.Rx[0].Next()
		if !ok || rb.Len() != len(ats) {
			t.Fatal("timed burst not looped")
		}
		for i, at := range ats {
			if ts, err := rb.RxTimestamp(i); err != nil || ts < at {
				early++
				t.Logf("packet %d: back at %d, %d ns before its send time %d (%v)", i, ts, at-ts, at, err)
			}
		}
		rb.Free()
	}
	if early > 0 {
		t.Fatalf("%d of 128 packets came back before their send time", early)
	}
}

// TestLoopTimedSend: a packet given a send time is not delivered before it; a burst after
// Close is refused with ErrNotReady and stays the caller's.
func TestLoopTimedSend(t *testing.T) {
	e, ports := enginetest.Open(t, loopConfig(1, 1, false, 32), Open)
	p := ports[0]
	b, _ := fill(t, rand.New(rand.NewPCG(1, 2)), p.Tx[0], 2)
	at := time.Now().Add(20 * time.Millisecond)
	b.SetRxTimestamp(1, at.UnixNano())
	if err := e.Send(b); err != nil {
		t.Fatal(err)
	}
	if time.Now().Before(at) {
		t.Fatal("Send returned before the packet's send time")
	}
	rb, ok := p.Rx[0].Next()
	if !ok || rb.Len() != 2 {
		t.Fatal("timed burst not looped")
	}
	rb.Free()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ = fill(t, rand.New(rand.NewPCG(1, 2)), p.Tx[0], 1)
	if err := e.Send(b); !errors.Is(err, engine.ErrNotReady) {
		t.Fatalf("Send after Close: %v", err)
	}
	b.Free()
}

// TestLoopHeldBursts: RX bursts the application keeps while more are sent stay intact — the
// loopback hands each TX burst's packet arrays to the RX burst and gives the TX burst the RX
// burst's, so a kept burst must share no array with a TX burst built later — for one and two
// segments, with RX bursts freed in random order; every buffer is back at the end and the
// packet and byte counters agree (enginetest's checks at cleanup).
func TestLoopHeldBursts(t *testing.T) {
	for _, hds := range []bool{false, true} {
		e, ports := enginetest.Open(t, loopConfig(1, 1, hds, 8), Open)
		p := ports[0]
		r := rand.New(rand.NewPCG(rand.Uint64(), 5))
		type kept struct {
			b     *engine.Burst
			addrs [][]uintptr
			sent  [][][]byte
		}
		var held []kept
		sent, sentBytes := 0, 0
		for round := 0; round < 200; round++ {
			if len(held) == 3 || (len(held) > 0 && r.IntN(2) == 0) {
				j := r.IntN(len(held))
				held[j].b.Free()
				held = append(held[:j], held[j+1:]...)
			}
			b, data := fill(t, r, p.Tx[0], 1+r.IntN(16))
			k := kept{sent: data}
			for i := 0; i < b.Len(); i++ {
				var a []uintptr
				for s := 0; s < b.NumSegments(); s++ {
					a = append(a, b.SegmentAddr(s, i))
				}
				k.addrs = append(k.addrs, a)
			}
			if err := e.Send(b); err != nil {
				t.Fatal(err)
			}
			sent += len(data)
			for i := range data {
				for s := range data[i] {
					sentBytes += len(data[i][s])
				}
			}
			rb, ok := p.Rx[0].Next()
			if !ok {
				t.Fatal("nothing looped")
			}
			k.b = rb
			held = append(held, k)
			for _, h := range held {
				if h.b.Len() != len(h.sent) {
					t.Fatalf("round %d: kept burst has %d packets, %d sent", round, h.b.Len(), len(h.sent))
				}
				for i := range h.sent {
					for s := range h.sent[i] {
						if h.b.SegmentAddr(s, i) != h.addrs[i][s] || !bytes.Equal(h.b.Segment(s, i), h.sent[i][s]) {
							t.Fatalf("round %d: kept packet %d segment %d changed", round, i, s)
						}
					}
				}
			}
		}
		for _, h := range held {
			h.b.Free()
		}
		if got := p.Tx[0].Stats.Packets.Load(); got != uint64(sent) {
			t.Fatalf("TX counted %d packets, %d sent", got, sent)
		}
		if got := p.Rx[0].Stats.Packets.Load(); got != uint64(sent) {
			t.Fatalf("RX counted %d packets, %d sent", got, sent)
		}
		if rx, tx := p.Rx[0].Stats.Bytes.Load(), p.Tx[0].Stats.Bytes.Load(); rx != uint64(sentBytes) || tx != uint64(sentBytes) {
			t.Fatalf("RX counted %d bytes, TX %d, %d sent", rx, tx, sentBytes)
		}
	}
}

// TestLoopPacers: only a queue with pacing_mbps gets a pacer (an engine with no paced queue
// has no map, Send's test for pacing then loads nothing), and a burst through a paced queue
// and through an unpaced one of the same engine both come back whole.
func TestLoopPacers(t *testing.T) {
	e0, _ := enginetest.Open(t, loopConfig(2, 1, false, 32), Open)
	if pc := e0.(*Engine).pacers; pc != nil {
		t.Fatalf("no queue paces, pacers = %v, want nil", pc)
	}
	cfg := loopConfig(2, 1, false, 32)
	cfg.Interfaces[0].TX.Queues[1].PacingMbps = 100000
	e, ports := enginetest.Open(t, cfg, Open)
	p := ports[0]
	pc := e.(*Engine).pacers
	if len(pc) != 1 || pc[p.Tx[1]] == nil || pc[p.Tx[1]].mbps != 100000 {
		t.Fatalf("pacers %v: want one for tx queue 1 at 100000 Mb/s", pc)
	}
	for _, q := range p.Tx {
		b, _ := fill(t, rand.New(rand.NewPCG(7, 8)), q, 4)
		if err := e.Send(b); err != nil {
			t.Fatal(err)
		}
		rb, ok := p.Rx[0].Next()
		if !ok || rb.Len() != 4 {
			t.Fatalf("tx queue %d: burst not looped", q.ID)
		}
		rb.Free()
	}
}
