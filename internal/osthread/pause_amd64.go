package osthread

// Pause tells the CPU the thread is spin-waiting (the PAUSE instruction, Intel SDM vol. 2B):
// the core stops issuing speculative loads of the polled line for a few dozen cycles, which
// leaves the line to the thread that is about to write it and saves the pipeline flush that
// ends a spin loop.
//
//go:noescape
func Pause()
