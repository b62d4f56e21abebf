package osthread

import "testing"

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
