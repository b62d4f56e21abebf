package mlx5

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/mlx5/model/modelch"
)

// receiveN takes n packets from q (bounded) and returns their arrival times (the CQE
// timestamps) and the bursts' segment layouts, freeing them.
func receiveN(t *testing.T, q *engine.RxQueue, n int) (ts []int64) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); len(ts) < n && time.Now().Before(end); {
		b, ok := q.Next()
		if !ok {
			time.Sleep(100 * time.Microsecond)
			continue
		}
		for i := 0; i < b.Len(); i++ {
			at, err := b.RxTimestamp(i)
			if err != nil {
				t.Fatal(err)
			}
			ts = append(ts, at)
		}
		b.Free()
	}
	if len(ts) != n {
		t.Fatalf("received %d of %d", len(ts), n)
	}
	return ts
}

// TestAccurateSend: packets with a send time go out behind a WAIT-on-time WQE: the device
// holds the SQ until its clock reaches the time, so each packet's receive timestamp on the
// cabled port is at or after the time asked for (the model's clock is the host's here; no
// upper bound is asserted, as the machine may be slow).
func TestAccurateSend(t *testing.T) {
	for _, fr := range []bool{false, true} {
		t.Run(fmt.Sprintf("free_running=%v", fr), func(t *testing.T) { accurateSend(t, fr) })
	}
}

// accurateSend is TestAccurateSend with real-time stamps, or with the free-running timer
// converted (a device that cannot stamp real time).
func accurateSend(t *testing.T, freeRunning bool) {
	cfg := pairConfig(1, 1024, 2048, false)
	e, ports := openTest(t, cfg, options{striding: -1, compression: true, fabric: &modelch.Fabric{TimerOnly: freeRunning}})
	tq, rq := ports[0].Tx[0], ports[1].Rx[0]
	r := rand.New(rand.NewPCG(13, 14))
	const n = 5
	b, err := tq.NewBurst(n)
	if err != nil {
		t.Fatal(err)
	}
	base := time.Now().Add(30 * time.Millisecond).UnixNano()
	want := make([]int64, n)
	for i := 0; i < n; i++ {
		f := udpFrame(r, i, 100)
		copy(b.SegmentBuffer(0, i), f)
		b.SetPacketLengths(i, len(f))
		want[i] = base + int64(i)*int64(10*time.Millisecond)
		b.SetRxTimestamp(i, want[i])
	}
	if err := e.Send(b); err != nil {
		t.Fatal(err)
	}
	got := receiveN(t, rq, n)
	if late := time.Now().UnixNano(); got[n-1] > late {
		t.Errorf("the last packet is stamped %v in the future", time.Duration(got[n-1]-late))
	}
	for i := range got {
		// The device clock and the host's are related by the offset measured at open:
		// allow 1 ms for that measurement.
		if got[i] < want[i]-int64(time.Millisecond) {
			t.Errorf("packet %d arrived at %d, %v before its send time", i, got[i], time.Duration(want[i]-got[i]))
		}
	}
}

// TestPacing: a TX queue with pacing_mbps gets a rate-limit index, and its frames still all
// arrive. How fast they leave is the model's rate limiter, tested with a stopped
// and stepped clock in mlx5/model/internal/datapath (TestPacing there): measured here on the
// arrival stamps it was a timed assertion, which failed in CI when the receiving side ran
// late and stamped a backlog at once (58 ms for what the limiter spreads over 67).
func TestPacing(t *testing.T) {
	cfg := pairConfig(1, 1024, 2048, false)
	cfg.Interfaces[0].TX.Queues[0].PacingMbps = 40
	e, ports := openTest(t, cfg, options{striding: -1, compression: true})
	if e.ports[0].txqs[0].rateIdx == 0 {
		t.Fatal("no rate-limit index for a paced queue")
	}
	tq, rq := ports[0].Tx[0], ports[1].Rx[0]
	r := rand.New(rand.NewPCG(15, 16))
	fs := make([][]byte, 400)
	for i := range fs {
		fs[i] = udpFrame(r, i, 1000)
	}
	var none atomic.Int64
	sendFrames(t, e, tq, fs, 0, &none)
	if ts := receiveN(t, rq, len(fs)); len(ts) != len(fs) {
		t.Fatalf("%d of %d paced frames arrived", len(ts), len(fs))
	}
}

// TestHDSTransmit: a TX queue over two regions (header-data split) sends each packet as a
// SEND WQE with its first 18 bytes inline and the rest of both segments by pointer; the frames
// arrive whole.
func TestHDSTransmit(t *testing.T) {
	cfg := pairConfig(1, 1024, 2048, false)
	cfg.MemoryRegions = append(cfg.MemoryRegions, cfg.MemoryRegions[0])
	cfg.MemoryRegions[len(cfg.MemoryRegions)-1].Name = "txh"
	cfg.MemoryRegions[len(cfg.MemoryRegions)-1].BufSize = 64
	cfg.Interfaces[0].TX.Queues[0].MemoryRegions = []string{"txh", "tx"}
	e, ports := openTest(t, cfg, options{striding: -1, compression: true})
	tq, rq := ports[0].Tx[0], ports[1].Rx[0]
	r := rand.New(rand.NewPCG(17, 18))
	const n = 50
	b, err := tq.NewBurst(n)
	if err != nil {
		t.Fatal(err)
	}
	sent := make([][]byte, n)
	for i := 0; i < n; i++ {
		f := udpFrame(r, i, 60+r.IntN(1000))
		sent[i] = f
		h := min(42, len(f))
		copy(b.SegmentBuffer(0, i), f[:h])
		copy(b.SegmentBuffer(1, i), f[h:])
		b.SetPacketLengths(i, h, len(f)-h)
	}
	if err := e.Send(b); err != nil {
		t.Fatal(err)
	}
	got := 0
	for end := time.Now().Add(10 * time.Second); got < n && time.Now().Before(end); {
		rb, ok := rq.Next()
		if !ok {
			time.Sleep(100 * time.Microsecond)
			continue
		}
		for i := 0; i < rb.Len(); i++ {
			p := rb.Packet(i)
			if string(p) != string(sent[got]) {
				t.Fatalf("frame %d differs after header-data split TX", got)
			}
			got++
		}
		rb.Free()
	}
	if got != n {
		t.Fatalf("received %d of %d", got, n)
	}
}

// TestSQLogFor: an SQ takes a whole burst in its largest form (a SEND WQE after a WAIT WQE
// per packet), never less than 2^13 basic blocks; upstream's HDS example (10,240 packets of
// two segments) needs more than the 8,192 the ring had, and was refused "SQ full" forever.
func TestSQLogFor(t *testing.T) {
	for _, c := range []struct {
		batch, segs int
		want        uint8
	}{
		{0, 1, minSQLog}, {1, 1, minSQLog}, {64, 1, minSQLog}, {4096, 1, minSQLog},
		{4097, 1, 14}, {10240, 2, 15}, {10240, 4, 15}, {1 << 14, 1, 15}, {1 << 14, 3, 16},
	} {
		got := sqLogFor(c.batch, c.segs)
		if got != c.want {
			t.Errorf("sqLogFor(%d, %d) = %d, want %d", c.batch, c.segs, got, c.want)
		}
		if need := uint(max(c.batch, 1)) * uint(wqeBBs(plan{at: 1}, max(c.segs, 1))); 1<<got < need {
			t.Errorf("sqLogFor(%d, %d) = %d: %d basic blocks do not hold the burst's %d", c.batch, c.segs, got, 1<<got, need)
		}
	}
}
