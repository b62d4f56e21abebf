package osthread

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// TestYieldOnPinnedThread: Yield returns on a thread pinned to one core, where it can only
// hand the core to another thread of the kernel's run queue (or keep it).
func TestYieldOnPinnedThread(t *testing.T) {
	if _, err := LockAndPin(0); err != nil {
		t.Fatal(err)
	}
	defer Unlock()
	for range 1000 {
		Yield()
	}
}

// TestUnlockLeavesNoPinnedThread: after many goroutines pinned themselves to one core and
// unlocked, a fresh goroutine still sees every core the process may use (no pinned thread
// went back to the scheduler), and pinning to the last allowed core still works.
func TestUnlockLeavesNoPinnedThread(t *testing.T) {
	all := NumAllowed()
	last := -1
	for c := 0; c < 4096; c++ {
		if Allowed(c) {
			last = c
		}
	}
	for round := range 50 {
		done := make(chan int, 1)
		go func() {
			defer func() { done <- NumAllowed() }()
			if _, err := LockAndPin(round % 2 * last); err != nil {
				t.Error(err)
			}
			defer Unlock()
		}()
		<-done
		got := make(chan [2]int, 1)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			pinned, _ := LockAndPin(last)
			defer Unlock()
			got <- [2]int{NumAllowed(), btoi(pinned)}
		}()
		if g := <-got; g[1] != 1 || g[0] != 1 {
			t.Fatalf("round %d: pinning to core %d: pinned %v, %d cores seen after", round, last, g[1] == 1, g[0])
		}
		if n := NumAllowed(); n != all {
			t.Fatalf("round %d: the test's thread sees %d cores, want %d", round, n, all)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestPinnedThreadIsNotReused: the thread a goroutine pinned and unlocked never runs another
// goroutine (the runtime terminates it), so no goroutine inherits its one-core mask.
func TestPinnedThreadIsNotReused(t *testing.T) {
	tid := make(chan int, 1)
	go func() {
		if _, err := LockAndPin(0); err != nil {
			t.Error(err)
		}
		defer Unlock()
		tid <- unix.Gettid()
	}()
	pinnedTid := <-tid
	for i := range 500 {
		seen := make(chan int, 1)
		go func() {
			runtime.LockOSThread() // report the thread this goroutine really ran on
			defer runtime.UnlockOSThread()
			seen <- unix.Gettid()
		}()
		if got := <-seen; got == pinnedTid {
			t.Fatalf("goroutine %d ran on thread %d, which had been pinned and unlocked", i, got)
		}
		runtime.Gosched()
	}
}
