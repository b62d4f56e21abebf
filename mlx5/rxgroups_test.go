package mlx5

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/internal/testutil/enginetest"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// openStriding opens the one-queue benchmark configuration (a striding RQ over a region of
// 8192 buffers, 512 strides a WQE) with the engine's worker stopped: the test polls and
// stands in for the device with cqeWriter.
func openStriding(t *testing.T, comp bool, flow uint32) (*Engine, *rxq, *cqeWriter, *engine.RxQueue) {
	t.Helper()
	cfg := benchRxConfig(1)
	ports := enginetest.Ports(t, cfg)
	e, err := open(t.Context(), &engine.Env{Config: cfg, Ports: ports, Log: discard()}, withModel(options{striding: -1, compression: comp}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	e.w.Stop()
	r := e.ports[0].rxqs[0]
	if !r.striding || r.gr == nil {
		t.Fatal("the queue is not striding")
	}
	return e, r, &cqeWriter{r: r, comp: comp, flow: flow, want: []wantPkt{}}, ports[0].Rx[0]
}

// deliverWritten polls q until every packet w wrote has been delivered (at most 10000
// polls), fails on a burst carrying more packets than were written, and hands each burst to
// each with the index in w.want of its first packet; it returns the new count delivered.
func (w *cqeWriter) deliverWritten(t *testing.T, q *engine.RxQueue, round, got int, each func(b *engine.Burst, first int)) int {
	t.Helper()
	for polls := 0; got < w.written; polls++ {
		if polls > 10000 {
			t.Fatalf("round %d: %d of %d packets delivered; queue %+v", round, got, w.written, q.Stats.Snapshot())
		}
		b, err := q.Poll()
		if err != nil {
			continue
		}
		if got+b.Len() > w.written {
			t.Fatalf("round %d: a burst of %d after %d of %d packets: completions the device never wrote", round, b.Len(), got, w.written)
		}
		n := b.Len() // each may free b
		each(b, got)
		got += n
	}
	return got
}

// TestStridingHeldBuffers: the application holds random bursts across rounds and frees them
// in random order, with compressed sessions and plain CQEs mixed; a stride's buffer comes
// back to its WQE through the region's groups (no pool), so the checks are that no buffer is
// delivered again while the application still holds it (a WQE reposted too early), that
// every packet arrives exactly as written (none lost to a WQE never reposted), over several
// laps of the RQ, and that once everything is freed every WQE is posted again.
func TestStridingHeldBuffers(t *testing.T) {
	_, r, w, q := openStriding(t, true, 5)
	rnd := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	heldOff := map[uint64]bool{}
	var held []*engine.Burst
	release := func(k int) {
		b := held[k]
		for i := 0; i < b.Len(); i++ {
			delete(heldOff, b.SegmentOffset(0, i))
		}
		switch rnd.IntN(3) {
		case 0:
			b.Free()
		case 1:
			b.FreePacket(rnd.IntN(b.Len()))
			b.Free()
		default:
			b.FreePackets()
			b.FreeMeta()
		}
		held = append(held[:k], held[k+1:]...)
	}
	got := 0
	for round := 0; round < 40; round++ {
		w.comp = rnd.IntN(3) != 0
		want := 500 + rnd.IntN(3000)
		wrote := 0
		for stuck := 0; wrote < want; stuck++ {
			if stuck > 1000 {
				t.Fatalf("round %d: the device could write %d of %d with %d bursts held", round, wrote, want, len(held))
			}
			wrote += w.write(want-wrote, 60+rnd.IntN(1400))
			got = w.deliverWritten(t, q, round, got, func(b *engine.Burst, first int) {
				for i := 0; i < b.Len(); i++ {
					off, p := b.SegmentOffset(0, i), w.want[first+i]
					if off != p.off || b.PacketLen(i) != int(p.len) || b.FlowID(i) != 5 {
						t.Fatalf("round %d packet %d: offset %d length %d flow %d, want %d %d 5", round, first+i, off, b.PacketLen(i), b.FlowID(i), p.off, p.len)
					}
					if heldOff[off] {
						t.Fatalf("round %d packet %d: buffer at %d delivered while the application holds it", round, first+i, off)
					}
					heldOff[off] = true
				}
				held = append(held, b)
			})
			// Free some bursts, in random order; keep the rest for later rounds (but not
			// so many that no WQE can come back). A poll then takes back the WQEs that
			// are whole again.
			for len(held) > 0 && (rnd.IntN(2) == 0 || len(heldOff) > r.spw*r.groups/2) {
				release(rnd.IntN(len(held)))
			}
			if b, err := q.Poll(); err == nil {
				t.Fatalf("round %d: a burst of %d with nothing written", round, b.Len())
			}
		}
	}
	for len(held) > 0 {
		release(len(held) - 1)
	}
	r.poll(now(), 0)
	if s := q.Stats.Snapshot(); s.Packets != uint64(w.written) || s.Dropped != 0 {
		t.Fatalf("queue %+v after %d packets written", s, w.written)
	}
	if w.wc < 2<<r.ringLog {
		t.Fatalf("%d WQEs done on a ring of %d: the test should wrap it several times", w.wc, 1<<r.ringLog)
	}
	// Everything is back: every used group reposted, nothing left counted.
	if len(r.wait) != 0 || r.pc-w.wc != uint32(r.groups) {
		t.Fatalf("after every buffer came back: %d groups waiting, %d of %d WQEs posted", len(r.wait), r.pc-w.wc, r.groups)
	}
}

// TestStridingCloseWithHeldBuffers: the engine closes while the application holds bursts of
// a striding RQ; the region's Close then names exactly the buffers held (not the rest of
// their WQEs' strides), the memory stays mapped while any is held, and freeing the last one
// releases it, with every buffer back in the pool.
func TestStridingCloseWithHeldBuffers(t *testing.T) {
	for _, comp := range []bool{true, false} {
		t.Run(fmt.Sprintf("compression=%v", comp), func(t *testing.T) {
			e, _, w, q := openStriding(t, comp, 1)
			reg := q.Regions[0]
			// Four bursts of 200 over two WQEs.
			var bs []*engine.Burst
			for k := 0; k < 4; k++ {
				if n := w.write(200, 200); n != 200 {
					t.Fatalf("wrote %d", n)
				}
				b, err := q.Poll()
				if err != nil || b.Len() != 200 {
					t.Fatalf("burst %d: %v", k, err)
				}
				bs = append(bs, b)
			}
			held := 0
			for i, b := range bs {
				if i%2 == 1 {
					b.Free()
					continue
				}
				b.FreePacket(0) // one packet back on its own, the rest held
				held += b.Len() - 1
			}
			if held == 0 {
				t.Fatalf("%d bursts, nothing held", len(bs))
			}
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			err := reg.Close()
			if !errors.Is(err, engine.ErrBuffersOutstanding) || !strings.Contains(err.Error(), fmt.Sprintf("%d of %d buffers not returned", held, reg.NumBufs)) {
				t.Fatalf("region Close with %d buffers held: %v", held, err)
			}
			for i, b := range bs {
				if i%2 == 1 {
					continue
				}
				if reg.Unmapped() {
					t.Fatal("memory released while bursts are held")
				}
				b.Free()
			}
			if !reg.Unmapped() || reg.Available() != reg.NumBufs {
				t.Fatalf("after the last free: unmapped %v, %d of %d buffers in the pool", reg.Unmapped(), reg.Available(), reg.NumBufs)
			}
		})
	}
}

// TestCQSlotsStayInvalid: the receive loop leaves every CQ slot it has passed with the
// invalid opcode — a plain CQE, a session's title and mini-CQE arrays once read, the slots
// between the arrays because the device never writes them — so no slot can pass for a
// completion a lap later (readCQ). Compressed sessions and plain CQEs alternate at random
// over several laps of the CQ, so that sessions' holes fall on slots that held plain CQEs
// and titles a lap before; every packet must arrive exactly as written, nothing extra, and
// after each round every slot holds the invalid opcode. (Without invalidating plain CQEs the
// first check fails: a hole keeps an old CQE whose owner bit is valid two laps later.)
func TestCQSlotsStayInvalid(t *testing.T) {
	_, r, w, q := openStriding(t, true, 9)
	rnd := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	got := 0
	for round := 0; round < 80; round++ {
		w.comp = rnd.IntN(2) == 0
		n := 1 + rnd.IntN(2000)
		if wrote := w.write(n, 64+rnd.IntN(64)); wrote != n {
			t.Fatalf("round %d: the CQ or RQ took %d of %d completions", round, wrote, n)
		}
		got = w.deliverWritten(t, q, round, got, func(b *engine.Burst, first int) {
			for i := 0; i < b.Len(); i++ {
				if p := w.want[first+i]; b.SegmentOffset(0, i) != p.off || b.PacketLen(i) != int(p.len) {
					t.Fatalf("round %d packet %d: offset %d length %d, want %d %d", round, first+i, b.SegmentOffset(0, i), b.PacketLen(i), p.off, p.len)
				}
			}
			b.Free()
		})
		// One more poll finds nothing: no slot passes for a completion.
		if b, err := q.Poll(); err == nil {
			t.Fatalf("round %d: a burst of %d after every packet was delivered", round, b.Len())
		}
		if s := q.Stats.Snapshot(); s.Packets != uint64(w.written) || s.Dropped != 0 {
			t.Fatalf("round %d: queue %+v after %d written", round, s, w.written)
		}
		passed := min(int(r.ci), len(r.cq)/64)
		for i := 0; i < passed; i++ {
			if op := r.cq[i*64+63]; prm.CQEOpcode(op) != prm.CQEOpInvalid {
				t.Fatalf("round %d: slot %d has op_own %#x after the consumer passed it (ci %d)", round, i, op, r.ci)
			}
		}
	}
	if laps := w.pi >> r.cqLog; laps < 3 {
		t.Fatalf("the CQ went round %d times: the test should wrap it several times", laps)
	}
}
