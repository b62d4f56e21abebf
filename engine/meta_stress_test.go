package engine

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestMetaPoolConcurrentReturns has more goroutines than cores take and return the bursts of
// a small pool as fast as they can. Goroutines are preempted between taking a slot and
// marking it free, so a return often finds its slot of the ring still held a lap later; put
// must wait for it instead of treating it as a double free (which panicked before), and the
// pool must end with every burst.
func TestMetaPoolConcurrentReturns(t *testing.T) {
	const bursts, workers = 4, 8
	m, err := NewMetaPool("stress", bursts, 4, false)
	if err != nil {
		t.Fatal(err)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(workers))
	deadline := time.Now().Add(2 * time.Second)
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for i := 0; i < 300000 && time.Now().Before(deadline); i++ {
				b, err := m.Get(0, 0, nil, false, 4)
				if err != nil {
					runtime.Gosched()
					continue
				}
				n++
				b.FreeMeta()
			}
			mu.Lock()
			total += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	if m.Available() != bursts {
		t.Fatalf("%d of %d bursts back in the pool", m.Available(), bursts)
	}
	t.Logf("%d takes and returns; %d returns waited for a preempted taker", total, m.Stalls())
}
