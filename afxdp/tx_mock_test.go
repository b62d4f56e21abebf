package afxdp

import (
	"io"
	"log/slog"
	"testing"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/internal/testutil/regiontest"
	"github.com/daqiri-go/daqiri/xsk"
)

// newMockTx builds a port with one direct TX queue whose own socket (zero-copy from the
// queue's region) is a mock.
func newMockTx(tb testing.TB, zeroCopy bool) (*Engine, *txq, *xsk.Mock, *engine.Region) {
	tb.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	e := &Engine{env: &engine.Env{Log: log}, w: engine.NewWorkers(log), byID: map[int]*port{}}
	region := regiontest.Host(tb, "tx_mem", 256, 2048)
	meta, err := engine.NewMetaPool("tx", 8, 64, true)
	if err != nil {
		tb.Fatal(err)
	}
	p := &engine.Port{Name: "mock", Config: &config.Interface{Name: "mock", Address: "mock0"}, Engine: config.EngineXDP, Raw: true}
	q := engine.NewTxQueue(p, 0, &config.Queue{Name: "t", BatchSize: 16, PollMode: config.PollDirect}, []*engine.Region{region}, meta)
	p.Tx = []*engine.TxQueue{q}
	pt := &port{e: e, p: p}
	e.byID[0] = pt
	x, m, err := xsk.NewMock(xsk.Options{Mem: region.Bytes(), ChunkSize: 2048, Unaligned: true, FillSize: 8, CompSize: 64, TxSize: 64})
	if err != nil {
		tb.Fatal(err)
	}
	m.SetZeroCopy(zeroCopy)
	s := newSock(pt, 0, x, region, false)
	t := &txq{pt: pt, q: q, region: region, direct: true, s: s}
	t.init(e)
	pt.txv.Store(&[]*txq{t})
	pt.socks = []*sock{s}
	tb.Cleanup(func() {
		s.close()
	})
	return e, t, m, region
}

// TestXDPMockTxWakeups checks the TX side's use of sendto: always in copy mode (the kernel
// only transmits inside it), and in zero-copy mode only while the TX ring asks for a wakeup.
func TestXDPMockTxWakeups(t *testing.T) {
	for _, c := range []struct {
		name       string
		zc, flag   bool
		wantWakeup bool
	}{
		{"copy", false, false, true},
		{"zero-copy", true, false, false},
		{"zero-copy need_wakeup", true, true, true},
	} {
		e, tq, m, region := newMockTx(t, c.zc)
		m.SetNeedWakeup(false, c.flag)
		b, err := tq.q.NewBurst(16)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.SetAllPacketLengths(60); err != nil {
			t.Fatal(err)
		}
		if err := e.Send(b); err != nil {
			t.Fatal(err)
		}
		st, _ := tq.s.x.Stats()
		if (st.Wakeups > 0) != c.wantWakeup {
			t.Errorf("%s: %d wakeups", c.name, st.Wakeups)
		}
		var sent []xsk.Desc
		if n := m.Transmit(0, &sent); n != 16 || sent[3].Len != 60 {
			t.Fatalf("%s: kernel took %d descriptors", c.name, n)
		}
		tq.reap()
		if region.Available() != 256 {
			t.Fatalf("%s: %d of 256 buffers back after completion", c.name, region.Available())
		}
		if got := tq.q.Stats.Snapshot(); got.Packets != 16 || got.Dropped != 0 {
			t.Fatalf("%s: stats %+v", c.name, got)
		}
	}
}
