//go:build !amd64

package osthread

// Pause tells the CPU the thread is spin-waiting; without an amd64 PAUSE it does nothing.
func Pause() {}
