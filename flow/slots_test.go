package flow

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// TestSlots: run-time flows take the lowest free slot after the static ones, a released slot
// is taken again first, the count never exceeds the maximum (then ErrNoSlot), and Len follows
// the highest slot in use — checked against a plain model over random take/release runs.
func TestSlots(t *testing.T) {
	r := rand.New(rand.NewPCG(rand.Uint64(), 3))
	for range 50 {
		static, max := r.IntN(5), 5+r.IntN(20)
		s := NewSlots(static, max)
		held := map[uint32]int{}
		taken := make([]bool, max)
		next := uint32(1)
		for range 500 {
			if r.IntN(3) > 0 {
				want := -1
				for i := static; i < max; i++ {
					if !taken[i] {
						want = i
						break
					}
				}
				slot, err := s.Free()
				if want < 0 {
					if !errors.Is(err, ErrNoSlot) {
						t.Fatalf("full: Free = %d, %v", slot, err)
					}
					continue
				}
				if err != nil || slot != want {
					t.Fatalf("Free = %d, %v; want %d", slot, err, want)
				}
				s.Take(slot, next)
				held[next], taken[slot] = slot, true
				next++
			} else if len(held) > 0 {
				for id, slot := range held {
					got, ok := s.Release(id)
					if !ok || got != slot {
						t.Fatalf("Release(%d) = %d, %v; want %d", id, got, ok, slot)
					}
					delete(held, id)
					taken[slot] = false
					break
				}
			}
			hi := static
			for i := static; i < max; i++ {
				if taken[i] {
					hi = i + 1
				}
			}
			if s.Len() != hi {
				t.Fatalf("Len = %d, want %d", s.Len(), hi)
			}
		}
		if _, ok := s.Release(next + 1); ok {
			t.Fatal("released an id never taken")
		}
	}
}
