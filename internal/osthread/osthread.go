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

// LastAllowed is the highest-numbered core in the process's CPU affinity mask, or -1 when
// the mask cannot be read.
func LastAllowed() int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return -1
	}
	for c := len(set)*64 - 1; c >= 0; c-- {
		if set.IsSet(c) {
			return c
		}
	}
	return -1
}

// AllowedCores lists the cores in the process's CPU affinity mask in ascending order (nil when
// the mask cannot be read).
func AllowedCores() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil
	}
	var cores []int
	for c := range len(set) * 64 {
		if set.IsSet(c) {
			cores = append(cores, c)
		}
	}
	return cores
}

// LockAndPin locks the calling goroutine to its OS thread and, when core is allowed, pins
// the thread to it. It reports whether the thread was pinned. Call Unlock (deferred) when the
// goroutine is done with the thread.
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

// Unlock ends LockAndPin; call it (deferred) as the goroutine's last act. The goroutine stays
// locked, so the runtime terminates the thread when the goroutine exits (as NetNS.Do does
// with a thread in another namespace) instead of handing a thread pinned to one core back to
// the scheduler. Restoring the thread's earlier mask would need it remembered per thread: this
// used to restore the main thread's mask instead, but a pinned goroutine can run on the main
// thread, and then every thread unlocked after it got that one core — Allowed then saw one
// core, later pins were skipped, and the two threads of a ring benchmark shared a core (all
// of issue 18's first cross-core figures were taken that way). Threads the runtime creates
// while a goroutine is locked come from its template thread, so no new thread inherits a pin.
func Unlock() {}

// NetNS is a handle on a network namespace (an open /proc/.../ns/net file).
type NetNS struct{ fd int }

// CurrentNetNS opens the calling thread's network namespace. Sockets are created in the
// namespace of the thread that creates them, so engines that create sockets from worker
// threads capture the namespace Open ran in and create them there.
func CurrentNetNS() (NetNS, error) {
	fd, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return NetNS{fd: -1}, fmt.Errorf("open network namespace: %w", err)
	}
	return NetNS{fd: fd}, nil
}

// Close releases the handle.
func (n NetNS) Close() error {
	if n.fd < 0 {
		return nil
	}
	return unix.Close(n.fd)
}

// Do runs fn on a fresh OS thread inside the namespace and waits for it. The thread is
// discarded afterwards rather than returned to the Go scheduler in a foreign namespace.
func (n NetNS) Do(fn func() error) error {
	if n.fd < 0 {
		return fn()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: the runtime terminates a locked thread when its goroutine
		// exits, which is what a thread switched into another namespace needs.
		if err := unix.Setns(n.fd, unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("enter network namespace: %w", err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// Yield gives the calling thread's core to another runnable thread of the kernel's run queue
// (sched_yield) without going through the Go scheduler: a goroutine locked to its thread that
// calls runtime.Gosched hands its P to another thread and sleeps until the scheduler hands it
// back, microseconds, while this returns at once when nothing else wants the core.
func Yield() {
	_, _, _ = unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
}
