package engine

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
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

// TestMetaPoolHotBurst: the burst returned last is the one taken next (its arrays are still in
// cache), the others come in the ring's order as before; Available counts the hot burst; with
// every burst out, Get refuses with ErrNoFreeBurstBuffers, and a burst returned then is taken.
func TestMetaPoolHotBurst(t *testing.T) {
	const bursts = 5
	m, err := NewMetaPool("hot", bursts, 4, false)
	if err != nil {
		t.Fatal(err)
	}
	var out []*Burst
	seen := map[*Burst]bool{}
	for i := 0; i < bursts; i++ {
		b, err := m.Get(0, 0, nil, false, 4)
		if err != nil || seen[b] {
			t.Fatalf("take %d: %p %v (already out: %v)", i, b, err, seen[b])
		}
		seen[b] = true
		out = append(out, b)
		if m.Available() != bursts-1-i {
			t.Fatalf("after %d takes Available %d", i+1, m.Available())
		}
	}
	if b, err := m.Get(0, 0, nil, false, 4); !errors.Is(err, ErrNoFreeBurstBuffers) {
		t.Fatalf("Get with every burst out: %p %v", b, err)
	}
	out[2].FreeMeta()
	if m.Available() != 1 {
		t.Fatalf("Available %d with one burst back", m.Available())
	}
	if b, err := m.Get(0, 0, nil, false, 4); err != nil || b != out[2] {
		t.Fatalf("took %p %v, want the burst just returned %p", b, err, out[2])
	}
	// Return 0, 1, 3, 4: 0 goes hot, the rest into the ring in order; takes give 0 first,
	// then 1, 3, 4 (FIFO), then the pool is empty.
	for _, i := range []int{0, 1, 3, 4} {
		out[i].FreeMeta()
	}
	if m.Available() != 4 {
		t.Fatalf("Available %d with four bursts back", m.Available())
	}
	for _, i := range []int{0, 1, 3, 4} {
		if b, err := m.Get(0, 0, nil, false, 4); err != nil || b != out[i] {
			t.Fatalf("took %p %v, want burst %d %p", b, err, i, out[i])
		}
	}
	if _, err := m.Get(0, 0, nil, false, 4); !errors.Is(err, ErrNoFreeBurstBuffers) {
		t.Fatalf("Get with every burst out: %v", err)
	}
}

// TestMetaPoolExclusive: goroutines taking and returning a small pool's bursts at random
// never hold the same burst at once (each burst is in hot or in the ring, handed to one
// taker), and the pool ends with every burst. Run with -race too.
func TestMetaPoolExclusive(t *testing.T) {
	const bursts, workers = 3, 6
	m, err := NewMetaPool("excl", bursts, 4, false)
	if err != nil {
		t.Fatal(err)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(workers))
	var holders sync.Map // *Burst → *atomic.Int32
	var wg sync.WaitGroup
	var bad atomic.Int32
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20000; i++ {
				b, err := m.Get(0, 0, nil, false, 4)
				if err != nil {
					runtime.Gosched()
					continue
				}
				c, _ := holders.LoadOrStore(b, new(atomic.Int32))
				if c.(*atomic.Int32).Add(1) != 1 {
					bad.Add(1)
				}
				if i%7 == 0 {
					runtime.Gosched()
				}
				c.(*atomic.Int32).Add(-1)
				b.FreeMeta()
			}
		}()
	}
	wg.Wait()
	if bad.Load() != 0 {
		t.Fatalf("%d takes found their burst held by another goroutine", bad.Load())
	}
	if m.Available() != bursts {
		t.Fatalf("%d of %d bursts back in the pool", m.Available(), bursts)
	}
	n := 0
	holders.Range(func(any, any) bool { n++; return true })
	if n != bursts {
		t.Fatalf("%d distinct bursts handed out, the pool has %d", n, bursts)
	}
}
