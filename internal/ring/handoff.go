package ring

import (
	"reflect"
	"sync/atomic"
)

// Handoff is a bounded FIFO between exactly one producer goroutine and one consumer goroutine
// at a time: a Lamport queue whose cursors alone order the slots, so the slots carry no
// sequence numbers and a bulk call costs one cursor store however many values it moves. It is
// what a Ring in SPSC mode runs on; using it directly lets the compiler inline the single-value
// Enqueue and Dequeue into the caller, which a Ring's mode dispatch prevents. The zero value is
// not usable; call NewHandoff.
type Handoff[T any] struct {
	_   [gap]byte
	enq uint32 // written by the producer only (StoreRelease32), loaded atomically
	_   [gap - 4]byte
	deq uint32 // written by the consumer only
	_   [gap - 4]byte
	// deqSeen is the producer's last view of deq: a producer reads the consumer's cursor only
	// when this cached copy says the ring is full, so in steady state the two threads never
	// read each other's cursor line. Each cached copy has a block of its own, not the block of
	// its side's cursor: a side waiting on a full or empty ring rewrites its copy on every try,
	// and if that were the line the other side polls, every try would take the line away from
	// the poller and delay the other side's next cursor store.
	deqSeen uint32
	_       [gap - 4]byte
	enqSeen uint32 // the consumer's last view of enq
	_       [gap - 4]byte
	mask    uint32
	size    uint32
	// clear says the consumer must zero dequeued values: only when T holds pointers, so the
	// ring keeps nothing reachable. For pointer-free T the consumer never writes a slot, and
	// the slots' lines are not bounced between the two sides.
	clear bool
	vals  []T
	_     [gap]byte
}

// NewHandoff returns a handoff ring that holds at least capacity values (rounded up to a power
// of two, at least 2).
func NewHandoff[T any](capacity int) (*Handoff[T], error) {
	size, err := roundSize(capacity)
	if err != nil {
		return nil, err
	}
	return &Handoff[T]{mask: size - 1, size: size, clear: hasPointers(reflect.TypeFor[T]()), vals: make([]T, size)}, nil
}

// Cap is the number of values the ring can hold.
func (h *Handoff[T]) Cap() int { return int(h.size) }

// Len is the number of values in the ring (a snapshot).
func (h *Handoff[T]) Len() int {
	n := int32(atomic.LoadUint32(&h.enq) - atomic.LoadUint32(&h.deq))
	return int(min(max(n, 0), int32(h.size)))
}

// Enqueue adds one value and reports whether there was room; producer only.
//
// It has no calls, so that it stays under the compiler's inlining budget: a call around every
// single-value handoff made it several times slower between two cores (BENCHMARKS.md, issue
// 18 third step; TestHandoffInlined checks it).
func (h *Handoff[T]) Enqueue(v T) bool {
	pos := atomic.LoadUint32(&h.enq) // only this thread writes it
	if pos-h.deqSeen == h.size {
		if h.deqSeen = atomic.LoadUint32(&h.deq); pos-h.deqSeen == h.size {
			return false
		}
	}
	h.vals[pos&h.mask] = v
	StoreRelease32(&h.enq, pos+1)
	return true
}

// Dequeue removes one value; ok is false when the ring is empty. Consumer only; inlined like
// Enqueue.
func (h *Handoff[T]) Dequeue() (v T, ok bool) {
	pos := atomic.LoadUint32(&h.deq) // only this thread writes it
	if pos == h.enqSeen {
		if h.enqSeen = atomic.LoadUint32(&h.enq); pos == h.enqSeen {
			return v, false
		}
	}
	s := &h.vals[pos&h.mask]
	v = *s
	if h.clear {
		var zero T
		*s = zero
	}
	StoreRelease32(&h.deq, pos+1)
	return v, true
}

// EnqueueBulk adds all of vs or none of them; producer only.
//
// A run of up to shortRun values is moved here rather than in enqueueShort: one call and one
// set of checks fewer per bulk, which is much of a bulk's cost while the other side keeps up.
// Bulks of 8 between two cores of the H200 host, same harness: 160–208 M values a second
// through enqueueShort, 199–226 this way; one thread enqueueing and dequeueing on the
// development machine, 2.0–3.4 ns a value before, 1.7–3.0 after (BENCHMARKS.md, issue 31
// second round).
func (h *Handoff[T]) EnqueueBulk(vs []T) bool {
	n := uint32(len(vs))
	if len(vs) > shortRun {
		return h.enqueue(vs, true) == len(vs)
	}
	pos := atomic.LoadUint32(&h.enq) // only this thread writes it
	if n > h.size-(pos-h.deqSeen) {
		// Also refuses a run longer than the ring, whatever the consumer has taken.
		if h.deqSeen = atomic.LoadUint32(&h.deq); n > h.size-(pos-h.deqSeen) {
			return false
		}
	}
	h.putSlots(pos, vs)
	StoreRelease32(&h.enq, pos+n)
	return true
}

// EnqueueBurst adds as many of vs as fit and returns how many; producer only.
func (h *Handoff[T]) EnqueueBurst(vs []T) int {
	if len(vs) <= shortRun {
		return h.enqueueShort(vs, false)
	}
	return h.enqueue(vs, false)
}

// DequeueBulk fills all of dst or takes nothing, and reports which; consumer only. Runs of up
// to shortRun values are moved here, as in EnqueueBulk.
func (h *Handoff[T]) DequeueBulk(dst []T) bool {
	n := uint32(len(dst))
	if len(dst) > shortRun {
		return h.dequeue(dst, true) == len(dst)
	}
	pos := atomic.LoadUint32(&h.deq) // only this thread writes it
	if n > h.enqSeen-pos {
		if h.enqSeen = atomic.LoadUint32(&h.enq); n > h.enqSeen-pos {
			return false
		}
	}
	h.takeSlots(pos, dst)
	StoreRelease32(&h.deq, pos+n)
	return true
}

// DequeueBurst fills as much of dst as there are values and returns how many; consumer only.
func (h *Handoff[T]) DequeueBurst(dst []T) int {
	if len(dst) <= shortRun {
		return h.dequeueShort(dst, false)
	}
	return h.dequeue(dst, false)
}

// shortRun is the longest bulk that enqueueShort and dequeueShort move, one value at a time
// in registers. copy is a call to memmove (two with the wrap), and around each call the
// compiler spills and reloads the cursors: a bulk of 8 uint64 enqueued and dequeued on one
// thread took 2.0 ns a value this way against 2.5 with copy, a bulk of 4 3.2 against 4.8,
// while from 16 values on the loop was no faster than memmove's wide moves (development
// machine; BENCHMARKS.md, issue 31).
const shortRun = 8

// enqueueShort is enqueue for at most shortRun values: slot by slot, the index masked, so a
// run that wraps needs no second pass.
func (h *Handoff[T]) enqueueShort(vs []T, all bool) int {
	pos := atomic.LoadUint32(&h.enq)
	free := h.size - (pos - h.deqSeen)
	if uint32(min(len(vs), int(h.size))) > free {
		h.deqSeen = atomic.LoadUint32(&h.deq)
		free = h.size - (pos - h.deqSeen)
	}
	n := uint32(min(len(vs), int(free)))
	if n == 0 || (all && int(n) < len(vs)) {
		return 0
	}
	h.putSlots(pos, vs[:n])
	StoreRelease32(&h.enq, pos+n)
	return int(n)
}

// dequeueShort is dequeue for at most shortRun values.
func (h *Handoff[T]) dequeueShort(dst []T, all bool) int {
	pos := atomic.LoadUint32(&h.deq)
	avail := h.enqSeen - pos
	if uint32(min(len(dst), int(h.size))) > avail {
		h.enqSeen = atomic.LoadUint32(&h.enq)
		avail = h.enqSeen - pos
	}
	n := uint32(min(len(dst), int(avail)))
	if n == 0 || (all && int(n) < len(dst)) {
		return 0
	}
	h.takeSlots(pos, dst[:n])
	StoreRelease32(&h.deq, pos+n)
	return int(n)
}

// putSlots writes a short run vs into the slots from cursor pos on, one slot at a time in
// registers (a copy would be a memmove call, twice at the wrap, with the cursors spilled).
func (h *Handoff[T]) putSlots(pos uint32, vs []T) {
	mask := h.mask
	vals := h.vals[:uint64(mask)+1] // lets the compiler drop the bounds check of each masked index
	for j, v := range vs {
		vals[(pos+uint32(j))&mask] = v
	}
}

// takeSlots reads a short run into dst from cursor pos on, clearing the slots when they hold
// pointers.
func (h *Handoff[T]) takeSlots(pos uint32, dst []T) {
	mask := h.mask
	vals := h.vals[:uint64(mask)+1]
	if h.clear {
		var zero T
		for j := range dst {
			s := &vals[(pos+uint32(j))&mask]
			dst[j] = *s
			*s = zero
		}
		return
	}
	for j := range dst {
		dst[j] = vals[(pos+uint32(j))&mask]
	}
}

// enqueue writes the values, then one release store of the cursor publishes them all.
func (h *Handoff[T]) enqueue(vs []T, all bool) int {
	pos := atomic.LoadUint32(&h.enq)
	free := h.size - (pos - h.deqSeen)
	if uint32(min(len(vs), int(h.size))) > free {
		h.deqSeen = atomic.LoadUint32(&h.deq)
		free = h.size - (pos - h.deqSeen)
	}
	n := uint32(min(len(vs), int(free)))
	if n == 0 || (all && int(n) < len(vs)) {
		return 0
	}
	i := pos & h.mask
	k := copy(h.vals[i:], vs[:n])
	copy(h.vals, vs[k:n])
	StoreRelease32(&h.enq, pos+n)
	return int(n)
}

// dequeue reads the values (and clears the slots when they hold pointers), then one release
// store of the cursor hands the slots back.
func (h *Handoff[T]) dequeue(dst []T, all bool) int {
	pos := atomic.LoadUint32(&h.deq)
	avail := h.enqSeen - pos
	if uint32(min(len(dst), int(h.size))) > avail {
		h.enqSeen = atomic.LoadUint32(&h.enq)
		avail = h.enqSeen - pos
	}
	n := uint32(min(len(dst), int(avail)))
	if n == 0 || (all && int(n) < len(dst)) {
		return 0
	}
	i := pos & h.mask
	k := copy(dst[:n], h.vals[i:])
	copy(dst[k:n], h.vals)
	if h.clear {
		end := min(i+n, h.size)
		clear(h.vals[i:end])
		if rest := n - (end - i); rest > 0 {
			clear(h.vals[:rest])
		}
	}
	StoreRelease32(&h.deq, pos+n)
	return int(n)
}
