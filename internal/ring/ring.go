// Package ring is a bounded lock-free FIFO of values, single- or multi-producer and single-
// or multi-consumer, with all-or-nothing bulk operations, and a lock-free pool of buffer
// indices.
//
// Each slot carries a sequence number (the bounded MPMC queue design of D. Vyukov): a
// producer claims positions by advancing the enqueue cursor, writes the values and marks each
// slot full by storing its sequence; a consumer does the mirror image. No thread ever waits
// for another thread to finish: a producer preempted between claiming and filling a slot only
// makes that slot look not-yet-ready to consumers, which see the ring as empty there instead
// of spinning; likewise a consumer preempted between claiming and emptying a slot makes
// producers that reach the slot a lap later see the ring as full. With several consumers
// (MPMC, SPMC) that can happen while the ring holds few values, so a caller that knows a
// value must fit (a pool returning its own items) retries instead of giving up, as
// engine.MetaPool does. That keeps the rings well behaved when there are more threads than cores, which
// is common on small machines (a ring that publishes in claim order, like DPDK's rte_ring,
// stalls every other thread behind a preempted one).
package ring

import (
	"fmt"
	"reflect"
	"sync/atomic"
)

// gap is how far apart two fields written by different threads sit: two 64-byte lines,
// because Intel cores since Sandy Bridge have a spatial prefetcher that fetches the other line
// of each aligned 128-byte pair (Intel's optimization manual; crossbeam-utils' CachePadded and
// DPDK's RTE_CACHE_GUARD use 128 for the same reason). With 64, whether two cursors shared a
// pair depended on where the allocator put the ring.
const gap = 128

// Mode selects how many goroutines may enqueue and dequeue concurrently.
type Mode uint8

// Ring modes.
const (
	MPMC Mode = iota // any number of producers and consumers
	SPSC             // one producer and one consumer at a time
	MPSC             // many producers, one consumer
	SPMC             // one producer, many consumers
)

// slot is one MPMC position. seq is read with atomic loads; see publish for how it is written.
type slot[T any] struct {
	seq uint32
	v   T
}

// Ring is a bounded FIFO of T. The zero value is not usable; call New.
type Ring[T any] struct {
	_   [gap]byte
	enq uint32 // loaded with sync/atomic, stored with release.StoreUint32 or a CAS
	_   [gap - 4]byte
	deq uint32
	_   [gap - 4]byte
	// h is the whole ring in SPSC mode (every method hands over to it); nil otherwise.
	h    *Handoff[T]
	mask uint32
	size uint32
	sp   bool
	sc   bool
	// clear says a consumer must zero dequeued values: only when T holds pointers, so the
	// ring keeps nothing reachable.
	clear bool
	slots []slot[T]
	_     [gap]byte
}

// New returns a ring that holds at least capacity values (rounded up to a power of two, at
// least 2).
func New[T any](capacity int, mode Mode) (*Ring[T], error) {
	size, err := roundSize(capacity)
	if err != nil {
		return nil, err
	}
	if mode == SPSC {
		// One producer and one consumer: the cursors alone order the slots (a Lamport
		// queue), so the slots carry no sequence numbers and a bulk call costs one cursor
		// store however many values it moves.
		h, _ := NewHandoff[T](capacity)
		return &Ring[T]{h: h, mask: size - 1, size: size}, nil
	}
	r := &Ring[T]{
		mask:  size - 1,
		size:  size,
		sp:    mode == SPMC,
		sc:    mode == MPSC,
		clear: hasPointers(reflect.TypeFor[T]()),
		slots: make([]slot[T], size),
	}
	for i := range r.slots {
		r.slots[i].seq = uint32(i)
	}
	return r, nil
}

// roundSize checks a capacity and rounds it up to a power of two, at least 2: with one slot,
// "full in this lap" and "free in the next" would share a sequence number.
func roundSize(capacity int) (uint32, error) {
	if capacity <= 0 || capacity > 1<<30 {
		return 0, fmt.Errorf("ring: capacity %d out of range 1..%d", capacity, 1<<30)
	}
	size := uint32(2)
	for int(size) < capacity {
		size <<= 1
	}
	return size, nil
}

// Cap is the number of values the ring can hold.
func (r *Ring[T]) Cap() int { return int(r.size) }

// Len is the number of values in the ring (a snapshot; claimed slots count as used).
func (r *Ring[T]) Len() int {
	if r.h != nil {
		return r.h.Len()
	}
	n := int32(atomic.LoadUint32(&r.enq) - atomic.LoadUint32(&r.deq))
	return int(min(max(n, 0), int32(r.size)))
}

// Enqueue adds one value and reports whether there was room.
func (r *Ring[T]) Enqueue(v T) bool {
	if r.h != nil {
		return r.h.Enqueue(v)
	}
	// One slot: claim's loop for want == 1, without the slice and the loop over slots (a
	// metadata pool takes and returns one burst per call, several times per burst).
	for {
		pos := atomic.LoadUint32(&r.enq)
		s := &r.slots[pos&r.mask]
		if d := int32(atomic.LoadUint32(&s.seq) - pos); d != 0 {
			if d > 0 || atomic.LoadUint32(&r.enq) != pos {
				continue // another producer moved past pos: look again
			}
			return false // the slot still holds last lap's value: full
		}
		if r.sp {
			StoreRelease32(&r.enq, pos+1)
		} else if !atomic.CompareAndSwapUint32(&r.enq, pos, pos+1) {
			continue
		}
		s.v = v
		StoreRelease32(&s.seq, pos+1)
		return true
	}
}

// EnqueueBulk adds all of vs or none of them.
func (r *Ring[T]) EnqueueBulk(vs []T) bool { return r.enqueue(vs, true) == len(vs) }

// EnqueueBurst adds as many of vs as fit and returns how many.
func (r *Ring[T]) EnqueueBurst(vs []T) int { return r.enqueue(vs, false) }

// Dequeue removes one value; ok is false when the ring is empty.
func (r *Ring[T]) Dequeue() (v T, ok bool) {
	if r.h != nil {
		return r.h.Dequeue()
	}
	// One slot, as in Enqueue.
	for {
		pos := atomic.LoadUint32(&r.deq)
		s := &r.slots[pos&r.mask]
		if d := int32(atomic.LoadUint32(&s.seq) - (pos + 1)); d != 0 {
			if d > 0 || atomic.LoadUint32(&r.deq) != pos {
				continue // another consumer moved past pos: look again
			}
			return v, false // not filled yet: empty
		}
		if r.sc {
			StoreRelease32(&r.deq, pos+1)
		} else if !atomic.CompareAndSwapUint32(&r.deq, pos, pos+1) {
			continue
		}
		v = s.v
		if r.clear {
			var zero T
			s.v = zero // do not keep the value reachable from the ring
		}
		StoreRelease32(&s.seq, pos+r.size)
		return v, true
	}
}

// DequeueBulk fills all of dst or takes nothing, and reports which.
func (r *Ring[T]) DequeueBulk(dst []T) bool { return r.dequeue(dst, true) == len(dst) }

// DequeueBurst fills as much of dst as there are values and returns how many.
func (r *Ring[T]) DequeueBurst(dst []T) int { return r.dequeue(dst, false) }

// claim finds how many consecutive slots from the cursor are in the wanted state (offset 0:
// free for this lap; offset 1: full) and advances the cursor over up to want of them.
func (r *Ring[T]) claim(cur *uint32, want uint32, all, single bool, offset uint32) (uint32, uint32) {
	for {
		pos := atomic.LoadUint32(cur)
		k := uint32(0)
		stale := false
		for k < want {
			d := int32(atomic.LoadUint32(&r.slots[(pos+k)&r.mask].seq) - (pos + k + offset))
			if d != 0 {
				stale = d > 0 // another thread already moved past pos
				break
			}
			k++
		}
		if stale && k == 0 {
			continue
		}
		if k < want && (all || k == 0) {
			if stale || atomic.LoadUint32(cur) != pos {
				continue
			}
			return pos, 0
		}
		if single {
			StoreRelease32(cur, pos+k)
			return pos, k
		}
		if atomic.CompareAndSwapUint32(cur, pos, pos+k) {
			return pos, k
		}
	}
}

func (r *Ring[T]) enqueue(vs []T, all bool) int {
	if r.h != nil {
		return r.h.enqueue(vs, all)
	}
	want := uint32(min(len(vs), int(r.size)))
	if want == 0 || (all && len(vs) > int(r.size)) {
		return 0
	}
	pos, n := r.claim(&r.enq, want, all, r.sp, 0)
	for i := uint32(0); i < n; i++ {
		r.slots[(pos+i)&r.mask].v = vs[i]
	}
	r.publish(pos, n, 1)
	return int(n)
}

func (r *Ring[T]) dequeue(dst []T, all bool) int {
	if r.h != nil {
		return r.h.dequeue(dst, all)
	}
	want := uint32(min(len(dst), int(r.size)))
	if want == 0 || (all && len(dst) > int(r.size)) {
		return 0
	}
	pos, n := r.claim(&r.deq, want, all, r.sc, 1)
	for i := uint32(0); i < n; i++ {
		dst[i] = r.slots[(pos+i)&r.mask].v
	}
	if r.clear {
		var zero T
		for i := uint32(0); i < n; i++ {
			r.slots[(pos+i)&r.mask].v = zero // do not keep the value reachable from the ring
		}
	}
	r.publish(pos, n, r.size)
	return int(n)
}

// publish hands the n claimed slots from pos to the other side: slot pos+i gets sequence
// pos+i+offset (offset 1: full; size: free for the next lap).
//
// Only the first slot's sequence is stored last, with release ordering (release.StoreUint32:
// a plain MOV on amd64, where sync/atomic's store is an exchange that would stall the thread
// until every earlier store, slot lines of the other side included, had landed); the others
// get plain stores before it. That is enough because a thread of the other side reaches slot
// pos+i only by scanning from its cursor, in order, and its cursor passes pos only after it
// has loaded the first slot's sequence, which makes every store made before that release
// store visible to what it reads next. A thread holding a stale cursor can load a later slot's
// sequence while it is being written, a race the program does not depend on (either value
// tells it the slot is not the one it expects, as the claim loop's stale check says); under
// the race detector every slot is stored atomically so that it can check the rest.
func (r *Ring[T]) publish(pos, n, offset uint32) {
	if n == 0 {
		return
	}
	for i := uint32(1); i < n; i++ {
		s := &r.slots[(pos+i)&r.mask]
		if raceEnabled {
			atomic.StoreUint32(&s.seq, pos+i+offset)
		} else {
			s.seq = pos + i + offset
		}
	}
	StoreRelease32(&r.slots[pos&r.mask].seq, pos+offset)
}

// hasPointers reports whether values of t can hold pointers the garbage collector follows.
func hasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return false
	case reflect.Array:
		return t.Len() > 0 && hasPointers(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if hasPointers(t.Field(i).Type) {
				return true
			}
		}
		return false
	}
	return true
}
