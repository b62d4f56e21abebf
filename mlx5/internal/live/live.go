// Package live keeps what a channel transport created (objects, UMEMs, UARs) in creation
// order, so that Close releases it newest first, as the kernel tears a DevX context down,
// and a handle released twice can tell the second time.
package live

import "sync"

// Set is a set of handles in the order they were added. The zero value is empty and ready;
// its methods are safe for concurrent use.
type Set[T comparable] struct {
	mu    sync.Mutex
	items []T
}

// Add records x as the newest handle.
func (s *Set[T]) Add(x T) {
	s.mu.Lock()
	s.items = append(s.items, x)
	s.mu.Unlock()
}

// Remove forgets x and reports whether it was there (false: released already).
func (s *Set[T]) Remove(x T) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.items) - 1; i >= 0; i-- {
		if s.items[i] == x {
			s.items = append(s.items[:i], s.items[i+1:]...)
			return true
		}
	}
	return false
}

// Take empties the set and returns what it held, newest first.
func (s *Set[T]) Take() []T {
	s.mu.Lock()
	items := s.items
	s.items = nil
	s.mu.Unlock()
	for i, j := 0, len(items)-1; i < j; i, j = i+1, j-1 {
		items[i], items[j] = items[j], items[i]
	}
	return items
}
