// Command inline instantiates the ring types from outside package ring, as the engines and
// applications do, for TestHandoffInlined to read the compiled code: a generic's methods are
// compiled where they are instantiated, and inlining there differs from inside the package.
package main

import (
	"fmt"

	"github.com/daqiri-go/daqiri/internal/ring"
)

//go:noinline
func handoffLoop(h *ring.Handoff[uint64], n int) (sum uint64) {
	for i := range n {
		h.Enqueue(uint64(i))
		v, _ := h.Dequeue()
		sum += v
	}
	return sum
}

//go:noinline
func ringLoop(r *ring.Ring[uint64], n int) (sum uint64) {
	buf := make([]uint64, 4)
	for range n {
		r.EnqueueBulk(buf)
		r.DequeueBulk(buf)
		sum += buf[0]
	}
	return sum
}

func main() {
	h, _ := ring.NewHandoff[uint64](8)
	r, _ := ring.New[uint64](8, ring.MPMC)
	fmt.Println(handoffLoop(h, 10), ringLoop(r, 10))
}
