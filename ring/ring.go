// Package ring is a bounded lock-free ring of values, single- or multi-producer and
// single- or multi-consumer, with all-or-nothing bulk operations, and a pool of buffer
// indices built on it.
//
// The design follows the classic two-cursor ring (head/tail for producers and consumers, as
// in DPDK's rte_ring): a producer reserves slots by advancing prod.head (with a CAS when there
// may be several producers), writes them, then publishes by advancing prod.tail in reservation
// order. Cursors are free-running uint32 counters, so the capacity is a power of two and the
// number of used slots is prod.tail - cons.head in wrapping arithmetic.
package ring

import (
	"fmt"
	"runtime"
	"sync/atomic"
)

// cacheLine separates the cursors so producers and consumers do not share a line.
const cacheLine = 64

type cursor struct {
	head atomic.Uint32
	_    [cacheLine - 4]byte
	tail atomic.Uint32
	_    [cacheLine - 4]byte
}

// Mode selects how many goroutines may enqueue and dequeue concurrently.
type Mode uint8

// Ring modes.
const (
	MPMC Mode = iota // any number of producers and consumers
	SPSC             // one producer and one consumer at a time
	MPSC             // many producers, one consumer
	SPMC             // one producer, many consumers
)

// Ring is a bounded FIFO of T. The zero value is not usable; call New.
type Ring[T any] struct {
	_     [cacheLine]byte
	prod  cursor
	cons  cursor
	mask  uint32
	size  uint32
	sp    bool
	sc    bool
	slots []T
}

// New returns a ring that holds at least capacity values (rounded up to a power of two).
func New[T any](capacity int, mode Mode) (*Ring[T], error) {
	if capacity <= 0 || capacity > 1<<30 {
		return nil, fmt.Errorf("ring: capacity %d out of range 1..%d", capacity, 1<<30)
	}
	size := uint32(1)
	for int(size) < capacity {
		size <<= 1
	}
	return &Ring[T]{
		mask:  size - 1,
		size:  size,
		sp:    mode == SPSC || mode == SPMC,
		sc:    mode == SPSC || mode == MPSC,
		slots: make([]T, size),
	}, nil
}

// Cap is the number of values the ring can hold.
func (r *Ring[T]) Cap() int { return int(r.size) }

// Len is the number of values in the ring (a snapshot).
func (r *Ring[T]) Len() int { return int(r.prod.tail.Load() - r.cons.tail.Load()) }

// Enqueue adds one value and reports whether there was room.
func (r *Ring[T]) Enqueue(v T) bool {
	head, ok := r.reserveProd(1, true)
	if !ok {
		return false
	}
	r.slots[head&r.mask] = v
	r.publish(&r.prod, head, head+1, r.sp)
	return true
}

// EnqueueBulk adds all of vs or none of them.
func (r *Ring[T]) EnqueueBulk(vs []T) bool {
	return r.enqueue(vs, true) == len(vs)
}

// EnqueueBurst adds as many of vs as fit and returns how many.
func (r *Ring[T]) EnqueueBurst(vs []T) int {
	return r.enqueue(vs, false)
}

// Dequeue removes one value; ok is false when the ring is empty.
func (r *Ring[T]) Dequeue() (v T, ok bool) {
	head, got := r.reserveCons(1, true)
	if !got {
		return v, false
	}
	v = r.slots[head&r.mask]
	r.publish(&r.cons, head, head+1, r.sc)
	return v, true
}

// DequeueBulk fills all of dst or takes nothing, and reports which.
func (r *Ring[T]) DequeueBulk(dst []T) bool {
	return r.dequeue(dst, true) == len(dst)
}

// DequeueBurst fills as much of dst as there are values and returns how many.
func (r *Ring[T]) DequeueBurst(dst []T) int {
	return r.dequeue(dst, false)
}

func (r *Ring[T]) enqueue(vs []T, all bool) int {
	if len(vs) == 0 {
		return 0
	}
	n := uint32(len(vs))
	if n > r.size {
		if all {
			return 0
		}
		n = r.size
	}
	head, ok := r.reserveProdN(&n, all)
	if !ok {
		return 0
	}
	idx := head & r.mask
	if first := r.size - idx; n <= first {
		copy(r.slots[idx:idx+n], vs[:n])
	} else {
		copy(r.slots[idx:], vs[:first])
		copy(r.slots[:n-first], vs[first:n])
	}
	r.publish(&r.prod, head, head+n, r.sp)
	return int(n)
}

func (r *Ring[T]) dequeue(dst []T, all bool) int {
	if len(dst) == 0 {
		return 0
	}
	n := uint32(len(dst))
	if n > r.size {
		if all {
			return 0
		}
		n = r.size
	}
	head, ok := r.reserveConsN(&n, all)
	if !ok {
		return 0
	}
	idx := head & r.mask
	if first := r.size - idx; n <= first {
		copy(dst[:n], r.slots[idx:idx+n])
	} else {
		copy(dst[:first], r.slots[idx:])
		copy(dst[first:n], r.slots[:n-first])
	}
	r.publish(&r.cons, head, head+n, r.sc)
	return int(n)
}

func (r *Ring[T]) reserveProd(n uint32, all bool) (uint32, bool) {
	return r.reserveProdN(&n, all)
}

// reserveProdN claims *n free slots (or fewer, when !all) and returns the first position.
func (r *Ring[T]) reserveProdN(n *uint32, all bool) (uint32, bool) {
	for {
		head := r.prod.head.Load()
		free := r.size - (head - r.cons.tail.Load())
		want := *n
		if want > free {
			if all || free == 0 {
				return 0, false
			}
			want = free
		}
		if r.sp {
			r.prod.head.Store(head + want)
			*n = want
			return head, true
		}
		if r.prod.head.CompareAndSwap(head, head+want) {
			*n = want
			return head, true
		}
	}
}

func (r *Ring[T]) reserveCons(n uint32, all bool) (uint32, bool) {
	return r.reserveConsN(&n, all)
}

func (r *Ring[T]) reserveConsN(n *uint32, all bool) (uint32, bool) {
	for {
		head := r.cons.head.Load()
		avail := r.prod.tail.Load() - head
		want := *n
		if want > avail {
			if all || avail == 0 {
				return 0, false
			}
			want = avail
		}
		if r.sc {
			r.cons.head.Store(head + want)
			*n = want
			return head, true
		}
		if r.cons.head.CompareAndSwap(head, head+want) {
			*n = want
			return head, true
		}
	}
}

// publish makes [head, next) visible once every earlier reservation has been published.
func (r *Ring[T]) publish(c *cursor, head, next uint32, single bool) {
	if !single {
		// Earlier reservations finish in order; a preempted earlier goroutine would make a
		// pure spin burn its whole time slice on two cores, so yield after a short spin.
		for spins := 0; c.tail.Load() != head; spins++ {
			if spins > 64 {
				runtime.Gosched()
			}
		}
	}
	c.tail.Store(next)
}
