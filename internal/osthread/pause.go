//go:build amd64 || arm64

package osthread

// Pause tells the CPU the thread is spin-waiting. amd64: PAUSE (Intel SDM vol. 2B): the core
// stops issuing speculative loads of the polled line for a few dozen cycles, which leaves the
// line to the thread that is about to write it and saves the pipeline flush that ends a spin
// loop. arm64: YIELD, the hint Linux's cpu_relax and Go's runtime procyield use there (a
// simultaneous-multithreading core gives the other thread the pipeline; elsewhere a NOP).
//
//go:noescape
func Pause()
