package mlx5

import (
	"fmt"
	"testing"

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
			got := 0
			for round := 0; round < 12; round++ {
				n, length := 1000+round*250, 60+round*131
				if wrote := w.write(n, length); wrote != n {
					t.Fatalf("round %d: the CQ or RQ took %d of %d completions", round, wrote, n)
				}
				for polls := 0; got < w.written; polls++ {
					if polls > 10000 {
						t.Fatalf("round %d: %d of %d packets delivered; queue %+v", round, got, w.written, q.Stats.Snapshot())
					}
					b, err := q.Poll()
					if err != nil {
						continue
					}
					for i := 0; i < b.Len(); i++ {
						want := w.want[got+i]
						ts, err := b.RxTimestamp(i)
						if off := b.SegmentOffset(0, i); off != want.off || b.PacketLen(i) != int(want.len) || b.FlowID(i) != 7 || err != nil || ts != pt.rxTime(want.ts) {
							t.Fatalf("round %d packet %d: offset %d length %d flow %d time %d (%v), want offset %d length %d flow 7 time %d",
								round, got+i, off, b.PacketLen(i), b.FlowID(i), ts, err, want.off, want.len, pt.rxTime(want.ts))
						}
					}
					got += b.Len()
					b.Free()
				}
			}
			if s := q.Stats.Snapshot(); s.Packets != uint64(w.written) || s.Dropped != 0 {
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
