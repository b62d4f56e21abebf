package ring

import (
	"math/rand/v2"
	"sync"
	"testing"
)

func TestRingFIFOAndBounds(t *testing.T) {
	r, err := New[int](5, SPSC)
	if err != nil {
		t.Fatal(err)
	}
	if r.Cap() != 8 {
		t.Fatalf("cap = %d, want 8", r.Cap())
	}
	for round := 0; round < 100; round++ { // wraps the uint32 cursors' low bits many times
		for i := 0; i < 8; i++ {
			if !r.Enqueue(round*8 + i) {
				t.Fatalf("enqueue %d failed with room", i)
			}
		}
		if r.Enqueue(-1) {
			t.Fatal("enqueue into a full ring succeeded")
		}
		for i := 0; i < 8; i++ {
			v, ok := r.Dequeue()
			if !ok || v != round*8+i {
				t.Fatalf("dequeue = %d,%v want %d", v, ok, round*8+i)
			}
		}
		if _, ok := r.Dequeue(); ok {
			t.Fatal("dequeue from an empty ring succeeded")
		}
	}
}

func TestRingBulkAllOrNothing(t *testing.T) {
	r, _ := New[int](8, MPMC)
	if !r.EnqueueBulk([]int{1, 2, 3, 4, 5}) {
		t.Fatal("bulk enqueue of 5 into 8 failed")
	}
	if r.EnqueueBulk([]int{6, 7, 8, 9}) {
		t.Fatal("bulk enqueue of 4 into 3 free slots succeeded")
	}
	if n := r.EnqueueBurst([]int{6, 7, 8, 9}); n != 3 {
		t.Fatalf("burst enqueue = %d, want 3", n)
	}
	dst := make([]int, 10)
	if r.DequeueBulk(dst) {
		t.Fatal("bulk dequeue of 10 from 8 succeeded")
	}
	if n := r.DequeueBurst(dst); n != 8 {
		t.Fatalf("burst dequeue = %d, want 8", n)
	}
	for i, v := range dst[:8] {
		if v != i+1 {
			t.Fatalf("dst[%d] = %d", i, v)
		}
	}
	if _, err := New[int](0, MPMC); err == nil {
		t.Fatal("capacity 0 accepted")
	}
}

// TestRingConcurrent checks that with several producers and consumers every value is delivered
// exactly once, for every mode and for single and bulk operations (calls: Enqueue and Dequeue,
// whose one-slot paths are their own code, instead of bulk calls of one).
func TestRingConcurrent(t *testing.T) {
	for _, tc := range []struct {
		name       string
		mode       Mode
		prod, cons int
		bulk       int
		calls      bool
	}{
		{"spsc-single", SPSC, 1, 1, 1, false},
		{"spsc-bulk8", SPSC, 1, 1, 8, false},
		{"mpmc-single-4p4c", MPMC, 4, 4, 1, false},
		{"mpmc-bulk32-3p2c", MPMC, 3, 2, 32, false},
		{"mpsc-bulk8", MPSC, 3, 1, 8, false},
		{"mpmc-calls-4p4c", MPMC, 4, 4, 1, true},
		{"mpsc-calls-3p", MPSC, 3, 1, 1, true},
		{"spmc-calls-3c", SPMC, 1, 3, 1, true},
		{"spsc-calls", SPSC, 1, 1, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := New[uint64](64+rand.IntN(64), tc.mode)
			const perProducer = 20000
			total := tc.prod * perProducer
			seen := make([]uint32, total)
			var wg sync.WaitGroup
			for p := 0; p < tc.prod; p++ {
				wg.Add(1)
				go func(p int) {
					defer wg.Done()
					buf := make([]uint64, tc.bulk)
					for i := 0; i < perProducer; i += tc.bulk {
						for j := range buf {
							buf[j] = uint64(p*perProducer + i + j)
						}
						if tc.calls {
							for idle := 0; !r.Enqueue(buf[0]); idle = yieldSometimes(idle) {
							}
							continue
						}
						for idle := 0; !r.EnqueueBulk(buf); idle = yieldSometimes(idle) {
						}
					}
				}(p)
			}
			var mu sync.Mutex
			got := 0
			var cwg sync.WaitGroup
			for c := 0; c < tc.cons; c++ {
				cwg.Add(1)
				go func() {
					defer cwg.Done()
					buf := make([]uint64, tc.bulk)
					for idle := 0; ; {
						mu.Lock()
						done := got >= total
						mu.Unlock()
						if done {
							return
						}
						var n int
						if tc.calls {
							if v, ok := r.Dequeue(); ok {
								buf[0], n = v, 1
							}
						} else {
							n = r.DequeueBurst(buf)
						}
						if n == 0 {
							idle = yieldSometimes(idle)
							continue
						}
						idle = 0
						mu.Lock()
						for _, v := range buf[:n] {
							seen[v]++
						}
						got += n
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			cwg.Wait()
			for v, c := range seen {
				if c != 1 {
					t.Fatalf("value %d delivered %d times", v, c)
				}
			}
		})
	}
}

func TestPool(t *testing.T) {
	p, err := NewPool(100)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]uint32, 100)
	if !p.GetBulk(got) {
		t.Fatal("could not take all 100")
	}
	if _, ok := p.Get(); ok {
		t.Fatal("empty pool returned an index")
	}
	mark := make([]bool, 100)
	for _, i := range got {
		if mark[i] {
			t.Fatalf("index %d handed out twice", i)
		}
		mark[i] = true
	}
	p.PutBulk(got[:50])
	if p.Available() != 50 {
		t.Fatalf("available = %d", p.Available())
	}
	if _, err := NewPool(0); err == nil {
		t.Fatal("pool of 0 accepted")
	}
}

// TestPoolConcurrent has goroutines take and return random amounts and checks that no index
// is ever held twice and that all come back.
func TestPoolConcurrent(t *testing.T) {
	const n = 512
	p, _ := NewPool(n)
	owner := make([]int32, n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := 0; g < 6; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			buf := make([]uint32, 32)
			for it := 0; it < 3000; it++ {
				k := 1 + rand.IntN(32)
				var got []uint32
				switch it % 3 {
				case 0:
					if p.GetBulk(buf[:k]) {
						got = buf[:k]
					}
				case 1:
					got = buf[:p.GetBurst(buf[:k])]
				default:
					if i, ok := p.Get(); ok {
						buf[0] = i
						got = buf[:1]
					}
				}
				mu.Lock()
				for _, i := range got {
					if owner[i] != 0 {
						mu.Unlock()
						t.Errorf("index %d handed to %d while held by %d", i, g+1, owner[i])
						return
					}
					owner[i] = int32(g + 1)
				}
				for _, i := range got {
					owner[i] = 0
				}
				mu.Unlock()
				if len(got) > 1 && it%2 == 0 {
					p.PutBulk(got)
				} else {
					for _, i := range got {
						p.Put(i)
					}
				}
			}
		}(g)
	}
	wg.Wait()
	if p.Available() != n {
		t.Fatalf("available %d, want %d", p.Available(), n)
	}
	all := make([]uint32, n)
	if !p.GetBulk(all) {
		t.Fatal("could not take every index back")
	}
	seen := make([]bool, n)
	for _, i := range all {
		if seen[i] {
			t.Fatalf("index %d twice in the pool", i)
		}
		seen[i] = true
	}
}
