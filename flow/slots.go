package flow

import (
	"errors"
	"fmt"
)

// ErrNoSlot is wrapped by Slots.Free's error when every rule slot is in use.
var ErrNoSlot = errors.New("all flow slots are in use")

// Slots is a backend's rule-slot bookkeeping, the same for the XDP program's rule map and
// the NIC's flow table blocks: the configured (static) rules hold slots 0..static-1, run-time
// flows take the lowest free slot after them, and each run-time flow's id maps to its slot.
// Not safe for concurrent use; backends hold their own lock around it.
type Slots struct {
	static, max int
	used        []bool // by slot - static
	byID        map[uint32]int
}

// NewSlots returns the bookkeeping of max slots whose first static hold configured rules.
func NewSlots(static, max int) *Slots {
	return &Slots{static: static, max: max, byID: map[uint32]int{}}
}

// Free returns the lowest slot a run-time flow may take, or an error wrapping ErrNoSlot.
func (s *Slots) Free() (int, error) {
	for i, u := range s.used {
		if !u {
			return s.static + i, nil
		}
	}
	if n := s.static + len(s.used); n < s.max {
		return n, nil
	}
	return -1, fmt.Errorf("%w (%d)", ErrNoSlot, s.max)
}

// Take records flow id in slot (one Free returned).
func (s *Slots) Take(slot int, id uint32) {
	i := slot - s.static
	for len(s.used) <= i {
		s.used = append(s.used, false)
	}
	s.used[i] = true
	s.byID[id] = slot
}

// Slot is the slot of run-time flow id.
func (s *Slots) Slot(id uint32) (int, bool) {
	slot, ok := s.byID[id]
	return slot, ok
}

// Release frees the slot of run-time flow id and returns it.
func (s *Slots) Release(id uint32) (int, bool) {
	slot, ok := s.byID[id]
	if !ok {
		return -1, false
	}
	delete(s.byID, id)
	s.used[slot-s.static] = false
	for n := len(s.used); n > 0 && !s.used[n-1]; n-- {
		s.used = s.used[:n-1]
	}
	return slot, true
}

// Len is one past the highest slot in use (static or run-time).
func (s *Slots) Len() int { return s.static + len(s.used) }
