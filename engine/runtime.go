package engine

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/daqiri-go/daqiri/internal/ring"
)

// Typed errors of runtime queue and region changes. Both wrap ErrInvalidParameter, so a Send
// that fails with them leaves the burst with the caller (the burst contract).
var (
	// ErrQueueDeleted: the queue was deleted from the open session (a poll, a TX burst, a
	// send, or a second delete).
	ErrQueueDeleted = fmt.Errorf("queue deleted: %w", ErrInvalidParameter)
	// ErrRegionInUse: a memory region still backs a queue, a reorder plan or buffers the
	// application holds, so it cannot be deleted.
	ErrRegionInUse = fmt.Errorf("memory region in use: %w", ErrInvalidParameter)
)

// QueueManager is implemented by engines that add and delete queues on an open session
// (xdp, socket, loopback; mlx5 when it lands). The session has built the queue (regions,
// metadata, ring) before Add*, and has closed its gate — no new poll, send or delivery can
// reach it — and waited for the ones in flight before Delete*; after Delete* returns the
// engine no longer touches the queue, and the session drains what is left in it. An engine
// that cannot serve a particular queue returns an error wrapping ErrNotSupported or
// ErrInvalidParameter and nothing changes.
type QueueManager interface {
	AddRxQueue(q *RxQueue) error
	DeleteRxQueue(q *RxQueue) error
	AddTxQueue(q *TxQueue) error
	DeleteTxQueue(q *TxQueue) error
}

// gate admits users of a queue until it is closed, and lets the closer wait for the ones
// inside: deletion never races a delivery, poll or send that already looked the queue up.
//
// Application calls that look up one queue (Send; RxBurst on a queue with a poll function)
// enter with enterOpen, which also checks the session's closed flag and counts them apart
// (calls): that is the session's gate and the queue's in one read-modify-write, and the
// session's Close waits for calls to leave with idle, without waiting for an engine's
// deliveries, which it stops later.
//
// Each side has a slot besides its count: the one caller at a time that takes the slot with
// a compare-and-swap leaves by storing 0 with a release store (a plain MOV on amd64), one
// locked instruction per call instead of the count's two; a caller that finds the slot
// taken counts itself in and out atomically as before. The closers read the slot as they
// read the count. The argument is the count's: the caller's CAS and the closer's flag store
// are both sequentially consistent, so either the caller sees the flag or the closer sees
// the slot taken; and a closer that sees the slot free again sees every load and store the
// caller made before freeing it (a release store, loaded atomically).
type gate struct {
	closed   atomic.Bool
	users    atomic.Int64
	userSlot uint32       // 1 while a delivery holds it (enterUser)
	_        [44]byte     // calls on a line of their own: deliveries and calls come from different threads
	calls    atomic.Int64 // application calls inside (enterOpen), besides the slot's
	callSlot uint32       // 1 while an application call holds it (enterOpen)
}

// enterOpen admits an application call unless the gate or the session (sessionClosed) is
// closed; every ok must be paired with leaveCall(slot). Both flags are read after the slot
// is taken or the count raised, and the closers set their flag before reading them
// (sequentially consistent atomics on both sides), so either the call sees the flag or the
// closer sees the call.
func (g *gate) enterOpen(sessionClosed *atomic.Bool) (slot, ok bool) {
	if atomic.CompareAndSwapUint32(&g.callSlot, 0, 1) {
		if g.closed.Load() || sessionClosed.Load() {
			ring.StoreRelease32(&g.callSlot, 0)
			return false, false
		}
		return true, true
	}
	g.calls.Add(1)
	if g.closed.Load() || sessionClosed.Load() {
		g.calls.Add(-1)
		return false, false
	}
	return false, true
}

// leaveCall ends what enterOpen began; slot is what it returned.
func (g *gate) leaveCall(slot bool) {
	if slot {
		ring.StoreRelease32(&g.callSlot, 0)
		return
	}
	g.calls.Add(-1)
}

// idle reports whether no application call is inside.
func (g *gate) idle() bool { return atomic.LoadUint32(&g.callSlot) == 0 && g.calls.Load() == 0 }

// enter admits a user unless the gate is closed; every true must be paired with leave.
func (g *gate) enter() bool {
	g.users.Add(1)
	if g.closed.Load() {
		g.users.Add(-1)
		return false
	}
	return true
}

func (g *gate) leave() { g.users.Add(-1) }

// enterUser is enter through the users' slot when it is free (a delivery: one locked
// instruction per burst); every ok must be paired with leaveUser(slot).
func (g *gate) enterUser() (slot, ok bool) {
	if atomic.CompareAndSwapUint32(&g.userSlot, 0, 1) {
		if g.closed.Load() {
			ring.StoreRelease32(&g.userSlot, 0)
			return false, false
		}
		return true, true
	}
	return false, g.enter()
}

// leaveUser ends what enterUser began; slot is what it returned.
func (g *gate) leaveUser(slot bool) {
	if slot {
		ring.StoreRelease32(&g.userSlot, 0)
		return
	}
	g.leave()
}

// busy reports whether some user or call is inside.
func (g *gate) busy() bool {
	return g.users.Load() > 0 || g.calls.Load() > 0 || atomic.LoadUint32(&g.userSlot) != 0 || atomic.LoadUint32(&g.callSlot) != 0
}

// shut closes the gate and waits (up to bound) for the users inside to leave.
func (g *gate) shut(bound time.Duration) error {
	if g.closed.Swap(true) {
		return ErrQueueDeleted
	}
	deadline := time.Now().Add(bound)
	for i := 0; g.busy(); i++ {
		if time.Now().After(deadline) {
			return errors.New("queue still in use after " + bound.String())
		}
		if i < 100 {
			continue
		}
		time.Sleep(50 * time.Microsecond)
	}
	return nil
}

// queueShutBound bounds how long a delete waits for calls inside the queue; every such call
// is a bounded, non-blocking operation, so this is generous.
const queueShutBound = 5 * time.Second

// Enter admits a caller (a poll) to the queue; false once it is deleted. Pair with Leave.
func (q *RxQueue) Enter() bool { return q.gate.enter() }

// Leave ends what Enter began.
func (q *RxQueue) Leave() { q.gate.leave() }

// Call is an application call admitted by EnterCall, to be passed to LeaveCall.
type Call struct{ slot bool }

// EnterCall admits an application call (RxBurst on a queue with a poll function) unless the
// queue is deleted or sessionClosed is set: the session's and the queue's gate in one
// read-modify-write. Pair an ok with LeaveCall. The session's Close sets its flag, then
// waits for CallsIdle.
func (q *RxQueue) EnterCall(sessionClosed *atomic.Bool) (c Call, ok bool) {
	c.slot, ok = q.gate.enterOpen(sessionClosed)
	return c, ok
}

// LeaveCall ends what EnterCall began.
func (q *RxQueue) LeaveCall(c Call) { q.gate.leaveCall(c.slot) }

// CallsIdle reports whether no application call admitted by EnterCall is inside.
func (q *RxQueue) CallsIdle() bool { return q.gate.idle() }

// Deleted reports whether the queue was deleted.
func (q *RxQueue) Deleted() bool { return q.gate.closed.Load() }

// Shut marks the queue deleted and waits for polls and deliveries in flight (the session,
// before the engine's DeleteRxQueue). A second Shut is ErrQueueDeleted.
func (q *RxQueue) Shut() error { return q.gate.shut(queueShutBound) }

// Forward makes a deleted queue hand what is still delivered to it to its replacement (an
// engine whose workers keep the queue they started with, such as socket's, uses it when the
// application adds a queue over the same regions). The bursts take the new queue's id.
func (q *RxQueue) Forward(to *RxQueue) { q.succ.Store(to) }

// Successor is the queue a deleted queue forwards to (nil: none).
func (q *RxQueue) Successor() *RxQueue { return q.succ.Load() }

// Enter admits a caller (TX burst, send) to the queue; false once it is deleted.
func (q *TxQueue) Enter() bool { return q.gate.enter() }

// Leave ends what Enter began.
func (q *TxQueue) Leave() { q.gate.leave() }

// EnterCall admits an application call (Send) unless the queue is deleted or
// sessionClosed is set: the session's and the queue's gate in one read-modify-write. Pair
// an ok with LeaveCall. The session's Close sets its flag, then waits for CallsIdle.
func (q *TxQueue) EnterCall(sessionClosed *atomic.Bool) (c Call, ok bool) {
	c.slot, ok = q.gate.enterOpen(sessionClosed)
	return c, ok
}

// LeaveCall ends what EnterCall began.
func (q *TxQueue) LeaveCall(c Call) { q.gate.leaveCall(c.slot) }

// CallsIdle reports whether no application call admitted by EnterCall is inside.
func (q *TxQueue) CallsIdle() bool { return q.gate.idle() }

// Deleted reports whether the queue was deleted.
func (q *TxQueue) Deleted() bool { return q.gate.closed.Load() }

// Shut marks the queue deleted and waits for calls in flight.
func (q *TxQueue) Shut() error { return q.gate.shut(queueShutBound) }

// QueueSet is a port's queues at one moment, including deleted ones until their id is
// reused (so that polling a deleted id says so). It is never modified once published.
type QueueSet struct {
	Rx []*RxQueue
	Tx []*TxQueue
}

// Queues is the port's current queue set: the configured queues (Rx, Tx) until a queue is
// added or deleted at run time.
func (p *Port) Queues() *QueueSet {
	if s := p.set.Load(); s != nil {
		return s
	}
	return &QueueSet{Rx: p.Rx, Tx: p.Tx}
}

// SetQueues publishes a new queue set (the session, serialised by its own lock).
func (p *Port) SetQueues(s *QueueSet) { p.set.Store(s) }

// LiveRx is the set's RX queues that are not deleted.
func (s *QueueSet) LiveRx() []*RxQueue {
	out := make([]*RxQueue, 0, len(s.Rx))
	for _, q := range s.Rx {
		if !q.Deleted() {
			out = append(out, q)
		}
	}
	return out
}

// LiveTx is the set's TX queues that are not deleted.
func (s *QueueSet) LiveTx() []*TxQueue {
	out := make([]*TxQueue, 0, len(s.Tx))
	for _, q := range s.Tx {
		if !q.Deleted() {
			out = append(out, q)
		}
	}
	return out
}
