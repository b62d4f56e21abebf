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
	"time"

	"github.com/daqiri-go/daqiri/internal/osthread"
	"github.com/daqiri-go/daqiri/internal/ring"
)

type bench struct {
	name       string
	prod, cons int
	bulk       int
	mode       ring.Mode
	pool       int  // threads, for pool cases
	cached     bool // pool cases through a per-thread ring.Cache
	upstream   float64
}

func main() {
	items := flag.Int("items", 2_000_000, "items moved per run (ring cases) or get/put pairs per thread (pool cases)")
	repeats := flag.Int("repeats", 5, "runs per case; the median is reported")
	flag.Parse()
	cases := []bench{
		{name: "spsc single 1p1c", prod: 1, cons: 1, bulk: 1, mode: ring.SPSC, upstream: 60.3},
		{name: "spsc bulk8 1p1c", prod: 1, cons: 1, bulk: 8, mode: ring.SPSC, upstream: 132.0},
		{name: "spsc bulk32 1p1c", prod: 1, cons: 1, bulk: 32, mode: ring.SPSC, upstream: 203.6},
		{name: "mpmc single 2p2c", prod: 2, cons: 2, bulk: 1, mode: ring.MPMC, upstream: 3.5},
		{name: "mpmc single 4p4c", prod: 4, cons: 4, bulk: 1, mode: ring.MPMC, upstream: 2.2},
		{name: "mpmc bulk8 2p2c", prod: 2, cons: 2, bulk: 8, mode: ring.MPMC, upstream: 27.4},
		{name: "mpmc bulk32 4p4c", prod: 4, cons: 4, bulk: 32, mode: ring.MPMC, upstream: 58.3},
		{name: "pool get/put 1t", pool: 1, upstream: 42.9},
		{name: "pool get/put 4t", pool: 4, upstream: 3.5},
		{name: "pool get/put 8t", pool: 8, upstream: 2.4},
		{name: "pool cached 1t", pool: 1, cached: true, upstream: 42.9},
		{name: "pool cached 4t", pool: 4, cached: true, upstream: 3.5},
		{name: "pool cached 8t", pool: 8, cached: true, upstream: 2.4},
	}
	cores := osthread.NumAllowed()
	fmt.Printf("daqiri ring/pool bench: %d items per run, median of %d runs, %d cores, %s\n\n", *items, *repeats, cores, runtime.Version())
	fmt.Printf("%-20s %12s %8s %11s %8s %14s %9s\n", "case", "daqiri Mops", "ns/op", "chan Mops", "vs chan", "upstream Mops*", "vs upstr")
	for _, c := range cases {
		// Warm-up pass (page faults, thread start-up, CPU frequency), as upstream's bench does.
		run(c, *items/10, false, cores)
		d := median(*repeats, func() float64 { return run(c, *items, false, cores) })
		g := median(*repeats, func() float64 { return run(c, *items, true, cores) })
		fmt.Printf("%-20s %12.2f %8.1f %11.2f %7.2fx %14.1f %8.2fx\n", c.name, d, 1e3/d, g, d/g, c.upstream, d/c.upstream)
	}
	fmt.Println("\n* upstream's pool_ring_bench (C++, -O3) on the 16-core H200 host (issue 18); compare only on that host")
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
				if c.cached {
					spawn(func() {
						cache, _ := p.NewCache(256)
						for i := 0; i < per; i++ {
							v, ok := cache.Get()
							for !ok {
								runtime.Gosched()
								v, ok = cache.Get()
							}
							cache.Put(v)
						}
						cache.Flush()
					})
					continue
				}
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
					if c.bulk == 1 { // single operations, as upstream's single cases
						for !r.Enqueue(uint64(i)) {
							if spins++; spins > 32 {
								runtime.Gosched()
							}
						}
						continue
					}
					for !r.EnqueueBulk(buf) {
						if spins++; spins > 32 {
							runtime.Gosched()
						}
					}
				}
			})
		}
		// Each consumer takes a fixed share with all-or-nothing bulk calls, as upstream's
		// consumers do: no counter shared between threads, so the harness adds no atomics.
		for k := 0; k < c.cons; k++ {
			n := perCons / c.bulk * c.bulk
			if k == c.cons-1 {
				n = total - (perCons/c.bulk*c.bulk)*(c.cons-1)
			}
			spawn(func() {
				buf := make([]uint64, c.bulk)
				spins := 0
				for got := 0; got < n; {
					if c.bulk == 1 {
						if _, ok := r.Dequeue(); ok {
							got++
							spins = 0
						} else if spins++; spins > 32 {
							runtime.Gosched()
						}
						continue
					}
					want := buf[:min(c.bulk, n-got)]
					if !r.DequeueBulk(want) {
						if spins++; spins > 32 {
							runtime.Gosched()
						}
						continue
					}
					spins = 0
					got += len(want)
				}
			})
		}
	}
	t0 := time.Now()
	close(startc)
	wg.Wait()
	return float64(total) / time.Since(t0).Seconds() / 1e6
}
