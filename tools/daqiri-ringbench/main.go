// Command daqiri-ringbench measures daqiri's burst rings and buffer pools with the cases of
// upstream DAQIRI's pool_ring_bench (SPSC single/bulk8/bulk32 1p1c, MPMC single 2p2c and
// 4p4c, MPMC bulk8 2p2c and bulk32 4p4c, pool get/put with 1, 4 and 8 threads), next to a
// buffered Go channel doing the same work as the peer baseline. Each case runs several times;
// the table shows the median. Threads are locked to OS threads and pinned to distinct cores
// (round-robin when there are more threads than cores).
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/daqiri-go/daqiri/internal/osthread"
	"github.com/daqiri-go/daqiri/internal/ring"
)

type bench struct {
	name       string
	prod, cons int
	bulk       int
	mode       ring.Mode
	pool       int // threads, for pool cases
}

func main() {
	items := flag.Int("items", 2_000_000, "items moved per run (ring cases) or get/put pairs per thread (pool cases)")
	repeats := flag.Int("repeats", 5, "runs per case; the median is reported")
	flag.Parse()
	cases := []bench{
		{name: "spsc single 1p1c", prod: 1, cons: 1, bulk: 1, mode: ring.SPSC},
		{name: "spsc bulk8 1p1c", prod: 1, cons: 1, bulk: 8, mode: ring.SPSC},
		{name: "spsc bulk32 1p1c", prod: 1, cons: 1, bulk: 32, mode: ring.SPSC},
		{name: "mpmc single 2p2c", prod: 2, cons: 2, bulk: 1, mode: ring.MPMC},
		{name: "mpmc single 4p4c", prod: 4, cons: 4, bulk: 1, mode: ring.MPMC},
		{name: "mpmc bulk8 2p2c", prod: 2, cons: 2, bulk: 8, mode: ring.MPMC},
		{name: "mpmc bulk32 4p4c", prod: 4, cons: 4, bulk: 32, mode: ring.MPMC},
		{name: "pool get/put 1t", pool: 1},
		{name: "pool get/put 4t", pool: 4},
		{name: "pool get/put 8t", pool: 8},
	}
	cores := osthread.NumAllowed()
	fmt.Printf("daqiri ring/pool bench: %d items per run, median of %d runs, %d cores, %s\n\n", *items, *repeats, cores, runtime.Version())
	fmt.Printf("%-20s %12s %10s %14s %10s %8s\n", "case", "daqiri Mops", "ns/op", "chan Mops", "ns/op", "ratio")
	for _, c := range cases {
		d := median(*repeats, func() float64 { return run(c, *items, false, cores) })
		g := median(*repeats, func() float64 { return run(c, *items, true, cores) })
		fmt.Printf("%-20s %12.2f %10.1f %14.2f %10.1f %7.2fx\n", c.name, d, 1e3/d, g, 1e3/g, d/g)
	}
	if cores < 8 {
		fmt.Fprintf(os.Stderr, "\nnote: %d cores; cases with more threads than cores time-share them\n", cores)
	}
}

func median(n int, f func() float64) float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = f()
	}
	sort.Float64s(v)
	return v[n/2]
}

// run returns Mops/s: items moved through the ring, or get/put pairs on the pool, per second.
func run(c bench, items int, useChan bool, cores int) float64 {
	var wg sync.WaitGroup
	startc := make(chan struct{})
	thread := 0
	spawn := func(fn func()) {
		core := thread % cores
		thread++
		wg.Add(1)
		go func() {
			defer wg.Done()
			osthread.LockAndPin(core)
			defer osthread.Unlock()
			<-startc
			fn()
		}()
	}
	if c.pool > 0 {
		per := items / c.pool
		if useChan {
			ch := make(chan uint32, 8192)
			for i := 0; i < 8192; i++ {
				ch <- uint32(i)
			}
			for t := 0; t < c.pool; t++ {
				spawn(func() {
					for i := 0; i < per; i++ {
						v := <-ch
						ch <- v
					}
				})
			}
		} else {
			p, _ := ring.NewPool(8192)
			for t := 0; t < c.pool; t++ {
				spawn(func() {
					for i := 0; i < per; i++ {
						v, ok := p.Get()
						for !ok {
							runtime.Gosched()
							v, ok = p.Get()
						}
						p.Put(v)
					}
				})
			}
		}
		t0 := time.Now()
		close(startc)
		wg.Wait()
		return float64(per*c.pool) / time.Since(t0).Seconds() / 1e6
	}
	per := items / c.prod / c.bulk * c.bulk
	total := per * c.prod
	perCons := total / c.cons
	if useChan {
		ch := make(chan uint64, 1024)
		for p := 0; p < c.prod; p++ {
			spawn(func() {
				for i := 0; i < per; i++ {
					ch <- uint64(i)
				}
			})
		}
		for k := 0; k < c.cons; k++ {
			n := perCons
			if k == c.cons-1 {
				n = total - perCons*(c.cons-1)
			}
			spawn(func() {
				for i := 0; i < n; i++ {
					<-ch
				}
			})
		}
	} else {
		r, _ := ring.New[uint64](1024, c.mode)
		for p := 0; p < c.prod; p++ {
			spawn(func() {
				buf := make([]uint64, c.bulk)
				for i := 0; i < per; i += c.bulk {
					spins := 0
					for !r.EnqueueBulk(buf) {
						if spins++; spins > 32 {
							runtime.Gosched()
						}
					}
				}
			})
		}
		var left atomic.Int64
		left.Store(int64(total))
		for k := 0; k < c.cons; k++ {
			spawn(func() {
				buf := make([]uint64, c.bulk)
				spins := 0
				for {
					if left.Load() <= 0 {
						return
					}
					n := r.DequeueBurst(buf)
					if n == 0 {
						if spins++; spins > 32 {
							runtime.Gosched()
						}
						continue
					}
					spins = 0
					left.Add(-int64(n))
				}
			})
		}
	}
	t0 := time.Now()
	close(startc)
	wg.Wait()
	return float64(total) / time.Since(t0).Seconds() / 1e6
}
