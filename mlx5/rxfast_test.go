package mlx5

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/internal/testutil/enginetest"
)

// TestStridingCompletionPaths: the receive paths that fill a burst straight from the CQ — a
// compressed session's mini-CQEs, plain one-stride CQEs — deliver exactly what the device
// wrote (cqeWriter, in the model's format): every packet's buffer (its WQE's group and
// stride), length, flow tag and receive time, in order, over several laps of the CQ and of the
// RQ, the freed buffers coming back and their WQEs reposted; nothing is dropped.
func TestStridingCompletionPaths(t *testing.T) {
	for _, comp := range []bool{true, false} {
		t.Run(fmt.Sprintf("compression=%v", comp), func(t *testing.T) {
			cfg := benchRxConfig(1)
			ports := enginetest.Ports(t, cfg)
			e, err := open(t.Context(), &engine.Env{Config: cfg, Ports: ports, Log: discard()}, withModel(options{striding: -1, compression: comp}))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { e.Close() })
			e.w.Stop() // the timebase stays as it is: the times below are converted with it
			pt := e.ports[0]
			r := pt.rxqs[0]
			if !r.striding {
				t.Fatal("the queue is not striding")
			}
			w := &cqeWriter{r: r, comp: comp, flow: 7, want: []wantPkt{}}
			q := ports[0].Rx[0]
			got, bytes := 0, 0
			for round := 0; round < 12; round++ {
				n, length := 1000+round*250, 60+round*131
				if wrote := w.write(n, length); wrote != n {
					t.Fatalf("round %d: the CQ or RQ took %d of %d completions", round, wrote, n)
				}
				got = w.deliverWritten(t, q, round, got, func(b *engine.Burst, first int) {
					for i := 0; i < b.Len(); i++ {
						want := w.want[first+i]
						ts, err := b.RxTimestamp(i)
						if off := b.SegmentOffset(0, i); off != want.off || b.PacketLen(i) != int(want.len) || b.FlowID(i) != 7 || err != nil || ts != pt.rxTime(want.ts) {
							t.Fatalf("round %d packet %d: offset %d length %d flow %d time %d (%v), want offset %d length %d flow 7 time %d",
								round, first+i, off, b.PacketLen(i), b.FlowID(i), ts, err, want.off, want.len, pt.rxTime(want.ts))
						}
					}
					bytes += b.TotalBytes()
					b.Free()
				})
			}
			if s := q.Stats.Snapshot(); s.Packets != uint64(w.written) || s.Dropped != 0 || s.Bytes != uint64(bytes) {
				t.Fatalf("queue %+v after %d packets written", s, w.written)
			}
			if lapsCQ := w.pi >> r.cqLog; lapsCQ < 1 {
				t.Fatalf("the CQ went round %d times: the test should wrap it", lapsCQ)
			}
			if w.wc < 2<<r.ringLog {
				t.Fatalf("%d WQEs done on a ring of %d: the test should wrap it several times", w.wc, 1<<r.ringLog)
			}
		})
	}
}

// TestStridingNoBursts: with every burst of the metadata pool held by the application, the
// packets of a compressed session (or plain CQEs) are dropped and counted (no_burst_buffers),
// their strides still settle and their WQE is reposted; once the bursts come back, what
// follows is delivered exactly as written.
func TestStridingNoBursts(t *testing.T) {
	for _, comp := range []bool{true, false} {
		t.Run(fmt.Sprintf("compression=%v", comp), func(t *testing.T) {
			cfg := benchRxConfig(1)
			cfg.RxMetaBuffers = 2
			ports := enginetest.Ports(t, cfg)
			e, err := open(t.Context(), &engine.Env{Config: cfg, Ports: ports, Log: discard()}, withModel(options{striding: -1, compression: comp}))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { e.Close() })
			e.w.Stop()
			pt := e.ports[0]
			r := pt.rxqs[0]
			w := &cqeWriter{r: r, comp: comp, flow: 3, want: []wantPkt{}}
			q := ports[0].Rx[0]
			// Two bursts of directMaxPackets, held.
			if n := w.write(2*directMaxPackets, 64); n != 2*directMaxPackets {
				t.Fatalf("wrote %d", n)
			}
			var held []*engine.Burst
			for polls := 0; len(held) < 2; polls++ {
				if polls > 1000 {
					t.Fatalf("%d bursts delivered; queue %+v", len(held), q.Stats.Snapshot())
				}
				if b, err := q.Poll(); err == nil {
					held = append(held, b)
				}
			}
			// A whole WQE's worth with no burst to put it in.
			if n := w.write(r.spw, 64); n != r.spw {
				t.Fatalf("wrote %d", n)
			}
			for range 10 {
				if b, err := q.Poll(); err == nil {
					t.Fatalf("a burst of %d with the pool empty", b.Len())
				}
			}
			if d := q.Stats.Drops(engine.DropNoBurstBuffers); d != uint64(r.spw) {
				t.Fatalf("%d dropped for want of a burst, want %d; queue %+v", d, r.spw, q.Stats.Snapshot())
			}
			for _, b := range held {
				b.Free()
			}
			got := 2*directMaxPackets + r.spw // delivered or dropped so far
			for round := 0; round < 8; round++ {
				if n := w.write(3000, 100+round); n != 3000 {
					t.Fatalf("round %d: the CQ or RQ took %d of 3000 (the dropped packets' WQE not reposted?)", round, n)
				}
				for polls := 0; got < w.written; polls++ {
					if polls > 10000 {
						t.Fatalf("round %d: %d of %d; queue %+v", round, got, w.written, q.Stats.Snapshot())
					}
					b, err := q.Poll()
					if err != nil {
						continue
					}
					for i := 0; i < b.Len(); i++ {
						want := w.want[got+i]
						if b.SegmentOffset(0, i) != want.off || b.PacketLen(i) != int(want.len) || b.FlowID(i) != 3 {
							t.Fatalf("round %d packet %d: offset %d length %d flow %d, want %d %d 3", round, got+i, b.SegmentOffset(0, i), b.PacketLen(i), b.FlowID(i), want.off, want.len)
						}
					}
					got += b.Len()
					b.Free()
				}
			}
			if s := q.Stats.Snapshot(); s.Packets+s.Dropped != uint64(w.written) || s.Dropped != uint64(r.spw) {
				t.Fatalf("queue %+v after %d written", s, w.written)
			}
		})
	}
}

// TestDeliveredBytesCounted: the queue's byte counter, which the receive paths now feed with
// the sum they keep while filling a burst (DeliverCounted) instead of the queue summing the
// lengths again at delivery, equals the sum of the delivered bursts' TotalBytes — the old
// count — on every path: compressed sessions and plain CQEs on a striding RQ, a cyclic RQ,
// frames of random lengths, some too long for a stride (dropped as truncated, counting no
// bytes; on a cyclic RQ the device refuses them), and burst timeouts delivering partial bursts.
func TestDeliveredBytesCounted(t *testing.T) {
	for _, striding := range []int{-1, 0} {
		for _, comp := range []bool{true, false} {
			t.Run(fmt.Sprintf("striding=%d/compression=%v", striding, comp), func(t *testing.T) {
				cfg := benchRxConfig(1)
				ports := enginetest.Ports(t, cfg)
				e, err := open(t.Context(), &engine.Env{Config: cfg, Ports: ports, Log: discard()}, withModel(options{striding: striding, compression: comp}))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { e.Close() })
				if got := e.ports[0].rxqs[0].striding; got != (striding != 0) {
					t.Fatalf("striding RQ %v, want %v", got, striding != 0)
				}
				dev := modelOf(e, 0)
				r := rand.New(rand.NewPCG(uint64(striding+2), 31))
				q := ports[0].Rx[0]
				var sent, delivered, total, lens uint64
				poll := func() {
					b, err := q.Poll()
					if err != nil {
						return
					}
					total += uint64(b.TotalBytes())
					for i := 0; i < b.Len(); i++ {
						lens += uint64(b.PacketLen(i))
					}
					delivered += uint64(b.Len())
					b.Free()
				}
				for round := 0; round < 40; round++ {
					k := 1 + r.IntN(300)
					for j := 0; j < k; j++ {
						n := 60 + r.IntN(1980)
						if r.IntN(50) == 0 {
							n = 2100 + r.IntN(1000) // over one stride
						}
						dev.Receive(udpFrame(r, j, n))
					}
					sent += uint64(k)
					for end := time.Now().Add(10 * time.Second); dev.Counters().RXPackets+dev.Counters().RXOutOfBuffer+dev.Counters().RXErrors < sent; {
						if time.Now().After(end) {
							t.Fatalf("round %d: model took %d of %d: %+v", round, dev.Counters().RXPackets, sent, dev.Counters())
						}
						poll()
						time.Sleep(20 * time.Microsecond)
					}
				}
				s := q.Stats.Snapshot()
				for polls := 0; delivered+s.Dropped < dev.Counters().RXPackets; polls++ {
					if polls > 100000 {
						t.Fatalf("%d delivered + %d dropped of %d the model received: %+v", delivered, s.Dropped, dev.Counters().RXPackets, s)
					}
					poll()
					s = q.Stats.Snapshot()
				}
				if s.Packets != delivered || s.Bytes != total || total != lens {
					t.Fatalf("queue counted %d packets and %d bytes; the bursts held %d packets, TotalBytes %d, lengths %d", s.Packets, s.Bytes, delivered, total, lens)
				}
				if delivered == 0 || total < delivered*60 {
					t.Fatalf("%d packets, %d bytes delivered: the test delivered too little", delivered, total)
				}
			})
		}
	}
}

// TestStridingOddMinis: compressed sessions with other kinds of mini-CQE among the common
// ones (cqeWriter.odd: fillers, stride indexes past the WQE's; fresh random placement each
// run, the seed logged) deliver exactly the packets written, in order, with their lengths,
// flow tags and times, whether the odd one starts an array, ends it or sits inside; fillers
// count nowhere, the bad indexes as truncated drops, and every stride still settles (the RQ
// keeps taking completions over several laps).
func TestStridingOddMinis(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	cfg := benchRxConfig(1)
	ports := enginetest.Ports(t, cfg)
	e, err := open(t.Context(), &engine.Env{Config: cfg, Ports: ports, Log: discard()}, withModel(options{striding: -1, compression: true}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	e.w.Stop()
	pt := e.ports[0]
	r := pt.rxqs[0]
	w := &cqeWriter{r: r, comp: true, flow: 9, want: []wantPkt{}, odd: rand.New(rand.NewPCG(seed, 9))}
	q := ports[0].Rx[0]
	got, bytes := 0, 0
	for round := range 12 {
		n, length := 1000+round*250, 60+round*131
		if wrote := w.write(n, length); wrote != n {
			t.Fatalf("round %d: the CQ or RQ took %d of %d completions (strides not settled?)", round, wrote, n)
		}
		for polls := 0; got < len(w.want); polls++ {
			if polls > 10000 {
				t.Fatalf("round %d: %d of %d packets delivered; queue %+v", round, got, len(w.want), q.Stats.Snapshot())
			}
			b, err := q.Poll()
			if err != nil {
				continue
			}
			if got+b.Len() > len(w.want) {
				t.Fatalf("round %d: a burst of %d after %d of %d packets", round, b.Len(), got, len(w.want))
			}
			for i := 0; i < b.Len(); i++ {
				want := w.want[got+i]
				ts, err := b.RxTimestamp(i)
				if off := b.SegmentOffset(0, i); off != want.off || b.PacketLen(i) != int(want.len) || b.FlowID(i) != 9 || err != nil || ts != pt.rxTime(want.ts) {
					t.Fatalf("round %d packet %d: offset %d length %d flow %d time %d (%v), want offset %d length %d flow 9 time %d",
						round, got+i, off, b.PacketLen(i), b.FlowID(i), ts, err, want.off, want.len, pt.rxTime(want.ts))
				}
			}
			got += b.Len()
			bytes += b.TotalBytes()
			b.Free()
		}
	}
	s := q.Stats.Snapshot()
	if s.Packets != uint64(len(w.want)) || s.Bytes != uint64(bytes) || s.Dropped != uint64(w.bad) || q.Stats.Drops(engine.DropTruncated) != uint64(w.bad) {
		t.Fatalf("queue %+v; %d packets written, %d fillers, %d bad stride indexes", s, len(w.want), w.fillers, w.bad)
	}
	if w.fillers < 100 || w.bad < 100 || w.written != len(w.want)+w.fillers+w.bad {
		t.Fatalf("%d fillers and %d bad indexes among %d completions (%d packets)", w.fillers, w.bad, w.written, len(w.want))
	}
	if w.wc < 2<<r.ringLog {
		t.Fatalf("%d WQEs done on a ring of %d: the test should wrap it several times", w.wc, 1<<r.ringLog)
	}
}
