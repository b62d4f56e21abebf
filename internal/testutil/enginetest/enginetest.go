// Package enginetest builds what a session gives an engine (ports with their queues over
// regions in host memory, burst metadata pools) so that an engine's own tests can open it
// directly, without the root package.
package enginetest

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/internal/testutil/regiontest"
)

// Ports validates cfg and builds its ports as a session does: every memory region in host
// memory (regiontest: a buffer not back at cleanup fails the test), one RX and one TX
// metadata pool, the queues. At cleanup the RX queues are drained (after the engine is
// closed, if the test registered its Close later, as cleanups run in reverse).
func Ports(t testing.TB, cfg *config.Config) []*engine.Port {
	t.Helper()
	return PortsMem(t, cfg, nil)
}

// PortsMem is Ports with the memory of each region from alloc where it returns non-nil (GPU
// memory in GPU tests); the region closes it at cleanup.
func PortsMem(t testing.TB, cfg *config.Config, alloc func(rc *config.MemoryRegion) engine.Memory) []*engine.Port {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	regions := map[string]*engine.Region{}
	for i := range cfg.MemoryRegions {
		rc := &cfg.MemoryRegions[i]
		if alloc != nil {
			if m := alloc(rc); m != nil {
				regions[rc.Name] = regiontest.With(t, rc, m)
				continue
			}
		}
		regions[rc.Name] = regiontest.New(t, rc)
	}
	rxN, txN := cfg.RxMetaBuffers, cfg.TxMetaBuffers
	if rxN <= 0 {
		rxN = config.DefaultMetaBuffers
	}
	if txN <= 0 {
		txN = config.DefaultMetaBuffers
	}
	rxMeta, err := engine.NewMetaPool("rx", rxN, 64, false)
	if err != nil {
		t.Fatal(err)
	}
	txMeta, err := engine.NewMetaPool("tx", txN, 64, true)
	if err != nil {
		t.Fatal(err)
	}
	var ports []*engine.Port
	for i := range cfg.Interfaces {
		ifc := &cfg.Interfaces[i]
		name, err := cfg.ResolveEngine(i)
		if err != nil {
			t.Fatal(err)
		}
		p := &engine.Port{ID: i, Name: ifc.Name, Config: ifc, Engine: name, Raw: cfg.StreamType == config.StreamRaw}
		of := func(q *config.Queue) []*engine.Region {
			var rs []*engine.Region
			for _, m := range q.MemoryRegions {
				rs = append(rs, regions[m])
			}
			return rs
		}
		if ifc.RX != nil {
			for qi := range ifc.RX.Queues {
				q, err := engine.NewRxQueue(p, qi, &ifc.RX.Queues[qi], of(&ifc.RX.Queues[qi]), rxMeta, rxN)
				if err != nil {
					t.Fatal(err)
				}
				p.Rx = append(p.Rx, q)
			}
		}
		if ifc.TX != nil {
			for qi := range ifc.TX.Queues {
				p.Tx = append(p.Tx, engine.NewTxQueue(p, qi, &ifc.TX.Queues[qi], of(&ifc.TX.Queues[qi]), txMeta))
			}
		}
		ports = append(ports, p)
	}
	t.Cleanup(func() {
		for _, p := range ports {
			for _, q := range p.Rx {
				q.Drain()
			}
		}
	})
	return ports
}

// Open builds cfg's ports and opens them with open (an engine's Open), closing the engine at
// cleanup (before the queues are drained and the regions checked).
func Open(t testing.TB, cfg *config.Config, open engine.Opener) (engine.Engine, []*engine.Port) {
	t.Helper()
	ports := Ports(t, cfg)
	e, err := open(context.Background(), &engine.Env{Config: cfg, Ports: ports, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("engine Close: %v", err)
		}
	})
	return e, ports
}

// Receive polls q until it holds n packets in all or the deadline passes, and returns the
// bursts taken (the caller frees them).
func Receive(t testing.TB, q *engine.RxQueue, n int, deadline time.Duration) []*engine.Burst {
	t.Helper()
	var got []*engine.Burst
	have := 0
	for end := time.Now().Add(deadline); have < n && time.Now().Before(end); {
		b, ok := q.Next()
		if !ok {
			time.Sleep(100 * time.Microsecond)
			continue
		}
		got = append(got, b)
		have += b.Len()
	}
	return got
}
