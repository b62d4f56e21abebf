package mlx5

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/internal/testutil/enginetest"
)

// sharedConfig is pairConfig with its nrx RX queues all naming region rx0 (which would
// otherwise fit a striding RQ) and flows spreading udpFrame's source ports 1000–1006 over
// them.
func sharedConfig(nrx int) *config.Config {
	c := pairConfig(nrx, 4096, 2048, false)
	c.MemoryRegions = c.MemoryRegions[:2] // tx, rx0
	rx := c.Interfaces[1].RX
	for i := range rx.Queues {
		rx.Queues[i].MemoryRegions = []string{"rx0"}
	}
	for s := 0; s < 7; s++ {
		q := s % nrx
		rx.Flows = append(rx.Flows, config.Flow{Name: "f", ID: s, Match: config.Match{UDPSrc: config.PortRange{Lo: uint16(1000 + s), Hi: uint16(1000 + s)}},
			Actions: []config.Action{{Type: config.ActionQueue, Queues: []int{q}}}})
	}
	return c
}

// TestSharedRxRegion (issue 32 item 5): a memory region named by three RX queues is shared
// as upstream's DPDK engine shares a mempool: each queue gets a cyclic RQ drawing buffers one
// at a time from the region (no striding RQ, which would own all of them), the rings
// together post at most half the pool, and 6,000 frames steered over the three queues all
// arrive intact on the queue their flow names, with exact counts. On the old engine the
// second queue's striding RQ found the region taken and Open failed.
func TestSharedRxRegion(t *testing.T) {
	const nrx = 3
	cfg := sharedConfig(nrx)
	e, ports := openTest(t, cfg, options{striding: -1, compression: true})
	posted := 0
	for qi, r := range e.ports[1].rxqs {
		if r.striding {
			t.Fatalf("queue %d got a striding RQ on a shared region", qi)
		}
		posted += 1 << r.ringLog
	}
	reg := ports[1].Rx[0].Regions[0]
	if posted > reg.NumBufs/2 {
		t.Fatalf("the rings post %d WQEs of a %d-buffer shared region: want at most half", posted, reg.NumBufs)
	}
	for qi := range ports[1].Rx {
		if ports[1].Rx[qi].Regions[0] != reg {
			t.Fatalf("queue %d has its own region", qi)
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	const n = 6000
	frames := make([][]byte, n)
	want := make([]int, nrx)
	for i := range frames {
		frames[i] = udpFrame(r, i, 60+r.IntN(1400))
		want[(i%7)%nrx]++
	}
	var count atomic.Int64
	var got int
	var perQueue []int
	done := make(chan struct{})
	go func() {
		defer close(done)
		got, perQueue = receiveAll(t, ports[1].Rx, frames, n, 30*time.Second, &count)
	}()
	// At most one RX ring's worth in flight: with more, one queue that lags behind the
	// others on a loaded machine could find its ring empty and drop frames, which this test
	// (exact counts) does not expect; on 29e8b14 that failed about one run in forty.
	sendFrames(t, e, ports[0].Tx[0], frames, 512, &count)
	<-done
	if got != n {
		t.Fatalf("received %d of %d (per queue %v); rx stats %+v %+v %+v", got, n, perQueue, ports[1].Rx[0].Stats.Snapshot(), ports[1].Rx[1].Stats.Snapshot(), ports[1].Rx[2].Stats.Snapshot())
	}
	for qi := range want {
		if perQueue[qi] != want[qi] {
			t.Errorf("queue %d received %d, want %d (its flows' share)", qi, perQueue[qi], want[qi])
		}
	}
	waitTx(t, ports[0].Tx[0], n)
}

// TestSharedRxRegionStridingForced: DAQIRI_IBV_STRIDING=1 cannot give a shared region a
// striding RQ; Open says so, naming the region and every queue that names it.
func TestSharedRxRegionStridingForced(t *testing.T) {
	cfg := sharedConfig(2)
	ports := enginetest.Ports(t, cfg)
	e, err := open(context.Background(), &engine.Env{Config: cfg, Ports: ports, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, withModel(options{striding: 1, compression: true}))
	if err == nil {
		e.Close()
		t.Fatal("opened a striding RQ on a shared region")
	}
	for _, w := range []string{"DAQIRI_IBV_STRIDING=1", "memory region rx0 is shared", "interfaces[1].rx.queues[0]", "interfaces[1].rx.queues[1]"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}
