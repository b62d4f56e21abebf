// Package osthread locks goroutines to OS threads and pins those threads to CPU cores.
package osthread

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// Allowed reports whether core is in the process's CPU affinity mask (the core exists and
// the process may run on it).
func Allowed(core int) bool {
	if core < 0 {
		return false
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return false
	}
	return set.IsSet(core)
}

// NumAllowed is the number of cores the process may run on.
func NumAllowed() int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return runtime.NumCPU()
	}
	return set.Count()
}

// LockAndPin locks the calling goroutine to its OS thread and, when core is allowed, pins
// the thread to it. It reports whether the thread was pinned. Call Unlock when done; the
// thread is then released with its affinity restored.
func LockAndPin(core int) (pinned bool, err error) {
	runtime.LockOSThread()
	if !Allowed(core) {
		return false, nil
	}
	var set unix.CPUSet
	set.Set(core)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return false, fmt.Errorf("pin thread to core %d: %w", core, err)
	}
	return true, nil
}

// Unlock restores the thread's affinity to the whole process mask and unlocks it.
func Unlock() {
	var set unix.CPUSet
	if unix.SchedGetaffinity(unix.Getpid(), &set) == nil {
		_ = unix.SchedSetaffinity(0, &set)
	}
	runtime.UnlockOSThread()
}
