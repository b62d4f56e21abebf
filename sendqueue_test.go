package daqiri

import (
	"context"
	"errors"
	"testing"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
)

// TestSendQueueMatchesTxQueue pins Send's queue lookup from the burst (sendQueue) to the walk
// of the port's queue set it replaces (txQueue by the burst's ids): the same queue or the same
// error for bursts of every queue, a burst of another session, a burst of a deleted queue, and
// one of a deleted queue whose id went to a new queue; and that the fast form is the one taken
// for a burst from TxBurst.
func TestSendQueueMatchesTxQueue(t *testing.T) {
	open := func() *Session {
		s, err := Open(context.Background(), loopbackConfig(2, false))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	same := func(what string, s *Session, b *Burst) {
		t.Helper()
		got, gerr := s.sendQueue(b)
		want, werr := s.txQueue(b.Port(), b.Queue())
		if got != want || (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
			t.Fatalf("%s: sendQueue %p, %v; txQueue %p, %v", what, got, gerr, want, werr)
		}
	}
	a, other := open(), open()
	for q := 0; q < 2; q++ {
		b, err := a.TxBurst(0, q, 1)
		if err != nil {
			t.Fatal(err)
		}
		if b.TxQueueOf() == nil || b.TxQueueOf().ID != q {
			t.Fatalf("queue %d: burst from TxBurst does not name its queue (%v)", q, b.TxQueueOf())
		}
		same("own queue", a, b)
		same("burst of another session", other, b)
		if got, _ := other.sendQueue(b); got == b.TxQueueOf() {
			t.Fatalf("queue %d: another session's Send would use this session's queue", q)
		}
		b.Free()
	}
	held, err := a.TxBurst(0, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.DeleteTxQueue(0, 1); err != nil {
		t.Fatal(err)
	}
	same("burst of a deleted queue", a, held)
	if err := a.AddTxQueue(0, config.Queue{Name: "t1b", ID: 1, BatchSize: 8, MemoryRegions: []string{"tx"}}); err != nil {
		t.Fatal(err)
	}
	same("burst of a deleted queue whose id was reused", a, held)
	if got, err := a.sendQueue(held); err != nil || got == held.TxQueueOf() {
		t.Fatalf("reused id: sendQueue %p, %v (the deleted queue %p)", got, err, held.TxQueueOf())
	}
	held.Free()
	// A burst not from NewBurst (an RX burst's metadata, no queue) takes the walk.
	m, err := engine.NewMetaPool("t", 1, 4, true)
	if err != nil {
		t.Fatal(err)
	}
	nb, err := m.Get(0, 0, nil, true, 1)
	if err != nil {
		t.Fatal(err)
	}
	if nb.TxQueueOf() != nil {
		t.Fatal("a burst from a metadata pool names a TX queue")
	}
	same("burst not from NewBurst", a, nb)
	// After Close: the error txQueue gave first ("session closed"), now from the gate.
	late, err := other.TxBurst(0, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	other.Close()
	if err := other.Send(late); !errors.Is(err, ErrNotReady) || err.Error() != "session closed: "+ErrNotReady.Error() {
		t.Fatalf("Send after Close: %v", err)
	}
	if _, err := other.txQueue(0, 0); err == nil || err.Error() != "session closed: "+ErrNotReady.Error() {
		t.Fatalf("txQueue after Close: %v", err)
	}
}
