package engine

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/daqiri-go/daqiri/config"
)

// TestNewBurstOpen: TxBurst's gateless form returns NewBurst's burst and error while the
// queue and session are open, and once either is closed (the flag set before the call, as
// a closer that ran between the take and the check leaves it) gives everything it took back
// — every buffer to its region, the metadata to its pool — and says closed.
func TestNewBurstOpen(t *testing.T) {
	hdr := testRegion(t, "hdr", 16, 128)
	data := testRegion(t, "data", 10, 2048)
	q := testTxQueue(t, true, hdr, data)
	var sess atomic.Bool
	b, closed, err := q.NewBurstOpen(3, &sess)
	if err != nil || closed || b == nil || b.Len() != 3 || b.NumSegments() != 2 {
		t.Fatalf("open: burst %v closed %v err %v", b, closed, err)
	}
	if hdr.Available() != 13 || data.Available() != 7 {
		t.Fatalf("open burst took hdr %d data %d", 16-hdr.Available(), 10-data.Available())
	}
	b.Free()
	// NewBurst's own errors come through unchanged while open.
	if _, closed, err := q.NewBurstOpen(11, &sess); closed || !errors.Is(err, ErrNoFreePacketBuffers) {
		t.Fatalf("exhausted: closed %v err %v", closed, err)
	}
	if _, closed, err := q.NewBurstOpen(-1, &sess); closed || !errors.Is(err, ErrInvalidParameter) {
		t.Fatalf("bad size: closed %v err %v", closed, err)
	}
	check := func(what string) {
		t.Helper()
		b, closed, err := q.NewBurstOpen(5, &sess)
		if b != nil || !closed || err != nil {
			t.Fatalf("%s: burst %v closed %v err %v", what, b, closed, err)
		}
		if hdr.Available() != 16 || data.Available() != 10 || q.meta.Available() != q.meta.Size() {
			t.Fatalf("%s: not everything back: hdr %d/16 data %d/10 metadata %d/%d", what, hdr.Available(), data.Available(), q.meta.Available(), q.meta.Size())
		}
	}
	sess.Store(true)
	check("session closed")
	sess.Store(false)
	if err := q.Shut(); err != nil {
		t.Fatal(err)
	}
	check("queue deleted")
}

// TestNextOpen: RxBurst's gateless form takes delivered bursts in order while the queue and
// session are open; once either is closed a burst it took is freed (buffers back, metadata
// back) and counted as dropped closed as the closer's Drain counts it — a reorder
// aggregate as its source packets — and an empty ring just says closed.
func TestNextOpen(t *testing.T) {
	reg := testRegion(t, "rx", 32, 256)
	meta, err := NewMetaPool("rx", 4, 8, false)
	if err != nil {
		t.Fatal(err)
	}
	p := &Port{ID: 0, Name: "p0", Raw: true}
	q, err := NewRxQueue(p, 0, &config.Queue{Name: "r", ID: 7, BatchSize: 8, MemoryRegions: []string{"rx"}}, []*Region{reg}, meta, 4)
	if err != nil {
		t.Fatal(err)
	}
	p.Rx = []*RxQueue{q}
	deliver := func(n int, ri *ReorderInfo) {
		t.Helper()
		b, err := q.NewBurst()
		if err != nil {
			t.Fatal(err)
		}
		for k := 0; k < n; k++ {
			idx, ok := reg.Get()
			if !ok {
				t.Fatal("region empty")
			}
			b.Append(uint64(idx)*256, 60, 0, 1)
		}
		if ri != nil {
			b.SetReorderInfo(ri)
		}
		if !q.Deliver(b) {
			t.Fatal("not delivered")
		}
	}
	var sess atomic.Bool
	if b, ok, closed := q.NextOpen(&sess); b != nil || ok || closed {
		t.Fatalf("empty ring: %v %v %v", b, ok, closed)
	}
	deliver(3, nil)
	deliver(5, nil)
	b, ok, closed := q.NextOpen(&sess)
	if !ok || closed || b.Len() != 3 {
		t.Fatalf("open: ok %v closed %v burst %v", ok, closed, b)
	}
	b.Free()
	sess.Store(true)
	if b, ok, closed := q.NextOpen(&sess); b != nil || ok || !closed {
		t.Fatalf("session closed: %v %v %v", b, ok, closed)
	}
	if d := q.Stats.Drops(DropClosed); d != 5 {
		t.Fatalf("dropped closed %d, want 5", d)
	}
	if b, ok, closed := q.NextOpen(&sess); b != nil || ok || !closed {
		t.Fatalf("session closed, empty ring: %v %v %v", b, ok, closed)
	}
	sess.Store(false)
	deliver(2, &ReorderInfo{SourcePackets: 9})
	if err := q.Shut(); err != nil {
		t.Fatal(err)
	}
	if b, ok, closed := q.NextOpen(&sess); b != nil || ok || !closed {
		t.Fatalf("queue deleted: %v %v %v", b, ok, closed)
	}
	if d := q.Stats.Drops(DropClosed); d != 5+9 {
		t.Fatalf("dropped closed %d, want 14 (the aggregate's 9 source packets)", d)
	}
	if reg.Available() != 32 || meta.Available() != meta.Size() {
		t.Fatalf("not everything back: region %d/32 metadata %d/%d", reg.Available(), meta.Available(), meta.Size())
	}
	if got := q.Stats.Snapshot().Packets; got != 3+5+2 {
		t.Fatalf("received %d, want 10", got)
	}
}
