package reorder

import (
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/internal/testutil/regiontest"
)

// rig is one RX queue with a source region, an output region and a metadata pool, fed by the
// test instead of an engine.
type rig struct {
	t        testing.TB
	q        *engine.RxQueue
	src, out *engine.Region
	meta     *engine.MetaPool
	svc      *Service
	metaN    int
}

type rigSpec struct {
	srcBufs, srcSize int
	outBufs, outSize int
	meta             int // burst metadata blocks (default 64)
	batch            int // queue batch_size (default 64)
}

func newRig(t testing.TB, s rigSpec) *rig {
	t.Helper()
	if s.meta == 0 {
		s.meta = 64
	}
	if s.batch == 0 {
		s.batch = 64
	}
	g := &rig{t: t, metaN: s.meta}
	g.src = regiontest.Host(t, "src", s.srcBufs, s.srcSize)
	g.out = regiontest.Host(t, "out", s.outBufs, s.outSize)
	var err error
	g.meta, err = engine.NewMetaPool("rx", s.meta, s.batch, false)
	if err != nil {
		t.Fatal(err)
	}
	port := &engine.Port{ID: 0, Name: "p0", Config: &config.Interface{Name: "p0"}}
	qc := &config.Queue{Name: "q0", ID: 0, BatchSize: s.batch, MemoryRegions: []string{"src"}}
	g.q, err = engine.NewRxQueue(port, 0, qc, []*engine.Region{g.src}, g.meta, s.meta)
	if err != nil {
		t.Fatal(err)
	}
	port.Rx = []*engine.RxQueue{g.q}
	g.svc = NewService(nil)
	t.Cleanup(func() {
		g.svc.Close()
		g.q.Drain()
	})
	return g
}

// pkt is one packet the test sends.
type pkt struct {
	data []byte
	flow uint32
}

// send delivers packets as bursts of up to batch packets, as an engine would.
func (g *rig) send(pkts []pkt, batch int) {
	g.t.Helper()
	for len(pkts) > 0 {
		n := min(batch, len(pkts))
		b, err := g.q.NewBurst()
		if err != nil {
			g.t.Fatalf("test rig: %v", err)
		}
		for _, p := range pkts[:n] {
			idx, ok := g.src.Get()
			if !ok {
				g.t.Fatal("test rig: source region exhausted (a plan is leaking packets?)")
			}
			if len(p.data) > g.src.BufSize {
				g.t.Fatalf("test rig: %d-byte packet in %d-byte buffers", len(p.data), g.src.BufSize)
			}
			copy(g.src.Buf(idx), p.data)
			b.Append(uint64(idx)*uint64(g.src.BufSize), uint32(len(p.data)), p.flow, 1000+int64(idx))
		}
		g.q.Deliver(b)
		pkts = pkts[n:]
	}
}

// drain takes every burst waiting in the queue's ring.
func (g *rig) drain() []*engine.Burst {
	var bs []*engine.Burst
	for i := 0; i < 1<<20; i++ {
		b, ok := g.q.Next()
		if !ok {
			break
		}
		bs = append(bs, b)
	}
	return bs
}

// checkReturned asserts that every buffer and burst went back to its pool.
func (g *rig) checkReturned() {
	g.t.Helper()
	if a := g.src.Available(); a != g.src.NumBufs {
		g.t.Errorf("source region: %d of %d buffers free", a, g.src.NumBufs)
	}
	if a := g.out.Available(); a != g.out.NumBufs {
		g.t.Errorf("output region: %d of %d buffers free", a, g.out.NumBufs)
	}
	if a := g.meta.Available(); a != g.metaN {
		g.t.Errorf("metadata pool: %d of %d bursts free", a, g.metaN)
	}
}

// putField writes v into a big-endian bit field bit by bit (independently of readField).
func putField(p []byte, f config.BitField, v uint64) {
	for k := 0; k < f.Width; k++ {
		bit := (v >> uint(f.Width-1-k)) & 1
		pos := f.Offset + k
		mask := byte(0x80) >> uint(pos%8)
		if bit == 1 {
			p[pos/8] |= mask
		} else {
			p[pos/8] &^= mask
		}
	}
}

// bigField reads a bit field through math/big, as a second reference.
func bigField(p []byte, f config.BitField) uint64 {
	x := new(big.Int).SetBytes(p)
	x.Rsh(x, uint(len(p)*8-f.Offset-f.Width))
	x.And(x, new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), uint(f.Width)), big.NewInt(1)))
	return x.Uint64()
}

func newRand() *rand.Rand { return rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())) }
