package engine

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestGateSlots: the first caller of each side takes the slot, a second one at the same time
// the count; the closers see either: shut refuses to finish while a slot or a count is held
// (bounded wait), idle says busy while a call holds the slot, and nothing enters once the
// gate or the session is closed, whichever way it would have entered. Leaving frees exactly
// what was taken.
func TestGateSlots(t *testing.T) {
	var g gate
	var sess atomic.Bool
	c1, ok1 := g.enterOpen(&sess)
	c2, ok2 := g.enterOpen(&sess)
	if !ok1 || !ok2 || !c1 || c2 || g.calls.Load() != 1 || g.idle() {
		t.Fatalf("two calls: slot %v %v ok %v %v count %d idle %v", c1, c2, ok1, ok2, g.calls.Load(), g.idle())
	}
	g.leaveCall(c2)
	if g.idle() {
		t.Fatal("idle with the slot held")
	}
	g.leaveCall(c1)
	if !g.idle() || g.calls.Load() != 0 || atomic.LoadUint32(&g.callSlot) != 0 {
		t.Fatal("not idle after both left")
	}
	u1, v1 := g.enterUser()
	u2, v2 := g.enterUser()
	if !v1 || !v2 || !u1 || u2 || g.users.Load() != 1 {
		t.Fatalf("two users: slot %v %v ok %v %v count %d", u1, u2, v1, v2, g.users.Load())
	}
	g.leaveUser(u2)
	if !g.busy() {
		t.Fatal("not busy with the users' slot held")
	}
	// Shut waits for the slot holder: bounded, it gives up while the slot is held...
	if err := g.shut(20 * time.Millisecond); err == nil {
		t.Fatal("shut finished with a delivery inside")
	}
	// ...and nobody enters meanwhile (the gate is closed), by slot or by count.
	g.leaveUser(u1)
	if s, ok := g.enterUser(); ok || s {
		t.Fatal("a user entered a closed gate")
	}
	if s, ok := g.enterOpen(&sess); ok || s {
		t.Fatal("a call entered a closed gate")
	}
	if g.busy() || g.users.Load() != 0 || g.calls.Load() != 0 {
		t.Fatal("refused entries left something held")
	}
	// A session closed: no call enters through a fresh gate's slot or its count.
	var h gate
	sess.Store(true)
	if _, ok := h.enterOpen(&sess); ok {
		t.Fatal("a call entered a closed session (slot)")
	}
	atomic.StoreUint32(&h.callSlot, 1) // slot taken by someone: the count path
	if _, ok := h.enterOpen(&sess); ok || h.calls.Load() != 0 {
		t.Fatal("a call entered a closed session (count)")
	}
}

// TestGateShutWaitsForSlotHolder: shut, started while a call holds the slot, returns only
// after that call left, and a call made after shut began never enters; run many times with
// the race detector, it checks that what the caller wrote before leaving is visible to the
// closer.
func TestGateShutWaitsForSlotHolder(t *testing.T) {
	for round := 0; round < 200; round++ {
		var g gate
		var sess atomic.Bool
		slot, ok := g.enterOpen(&sess)
		if !ok || !slot {
			t.Fatal("first call did not take the slot")
		}
		var wrote int // written by the caller before leaving, read by the closer after shut
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			wrote = round + 1
			g.leaveCall(slot)
		}()
		if err := g.shut(5 * time.Second); err != nil {
			t.Fatal(err)
		}
		if wrote != round+1 {
			t.Fatalf("round %d: shut returned before the call left (saw %d)", round, wrote)
		}
		wg.Wait()
		if _, ok := g.enterOpen(&sess); ok {
			t.Fatal("entered after shut")
		}
	}
}
