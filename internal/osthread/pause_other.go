//go:build !amd64 && !arm64

package osthread

// Pause tells the CPU the thread is spin-waiting; without a spin-wait hint (amd64 PAUSE, arm64 YIELD) it does nothing.
func Pause() {}
