package ring

import (
	"sync/atomic"
	"testing"
)

// TestStalledConsumerLooksFull pins down the property engine.MetaPool relies on: a consumer
// that has claimed a slot but not yet emptied it (preempted in between) makes a producer that
// reaches that slot a lap later see the ring as full, although other consumers have emptied
// everything else; once the stalled consumer finishes, the producer succeeds.
func TestStalledConsumerLooksFull(t *testing.T) {
	r, err := New[int](2, MPMC)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Enqueue(1) || !r.Enqueue(2) {
		t.Fatal("enqueue into an empty ring failed")
	}
	// A consumer claims position 0 and stalls before emptying the slot.
	pos, n := r.claim(&r.deq, 1, true, r.sc, 1)
	if pos != 0 || n != 1 {
		t.Fatalf("claim = %d, %d; want 0, 1", pos, n)
	}
	// Another consumer takes the second value: the ring now counts nothing in it.
	if v, ok := r.Dequeue(); !ok || v != 2 {
		t.Fatalf("Dequeue = %d, %v; want 2, true", v, ok)
	}
	if r.Len() != 0 {
		t.Fatalf("Len = %d, want 0", r.Len())
	}
	// Position 2 maps to the stalled slot: full, for now.
	if r.Enqueue(3) {
		t.Fatal("Enqueue succeeded into a slot a stalled consumer still holds")
	}
	// The stalled consumer finishes as dequeue would.
	s := &r.slots[pos&r.mask]
	if s.v != 1 {
		t.Fatalf("stalled slot holds %d, want 1", s.v)
	}
	s.v = 0
	atomic.StoreUint32(&s.seq, pos+r.size)
	if !r.Enqueue(3) {
		t.Fatal("Enqueue failed after the stalled consumer finished")
	}
	if v, ok := r.Dequeue(); !ok || v != 3 {
		t.Fatalf("Dequeue = %d, %v; want 3, true", v, ok)
	}
}
