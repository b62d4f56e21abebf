// Command daqiri-ringbench measures daqiri's burst rings and buffer pools with the cases of
// upstream DAQIRI's pool_ring_bench (SPSC single/bulk8/bulk32 1p1c, MPMC single 2p2c and
// 4p4c, MPMC bulk8 2p2c and bulk32 4p4c, pool get/put with 1, 4 and 8 threads), next to a
// buffered Go channel doing the same work as a peer baseline and, given -upstream, upstream's
// own binary run in the same process tree just before (with -rounds N, N times, each before a
// round of this tool's runs, and both columns are medians). Each case runs several times; the
// table shows the median.
//
// The method is upstream's: a 1024-slot ring, every producer moving -items values with
// all-or-nothing calls of the case's bulk size, consumers taking whole bulks, every thread
// locked to an OS thread and pinned to a distinct core (round-robin when there are more
// threads than cores), a warm-up pass, then timed passes. A pool thread takes up to 16
// buffers and returns them, -items times per thread in all.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/daqiri-go/daqiri/internal/osthread"
	"github.com/daqiri-go/daqiri/internal/ring"
	"github.com/daqiri-go/daqiri/internal/testutil/benchtest"
)

type bench struct {
	name       string
	prod, cons int
	bulk       int
	mode       ring.Mode
	pool       int  // threads, for pool cases
	cached     bool // pool cases through a per-thread ring.Cache
	upstream   string
	issue      float64 // upstream's figure from issue 18 (H200 host), used without -upstream
}

func main() {
	items := flag.Int("items", 2_000_000, "values each producer moves (ring cases) or buffers each thread takes and returns (pool cases), per run")
	repeats := flag.Int("repeats", 5, "runs per case; the median is reported")
	withChan := flag.Bool("chan", true, "also run every case on a buffered Go channel")
	upstreamBin := flag.String("upstream", "", "upstream's pool_ring_bench binary to run first; its figures fill the upstream column")
	only := flag.String("run", "", "run only the cases whose name matches this regular expression")
	waitMode := flag.String("wait", "spin", "what a thread does when the ring is full or empty: spin, pause (spin with the CPU's spin-wait hint), yield (sched_yield) or gosched (runtime.Gosched)")
	cpuList := flag.String("cpus", "", "comma-separated cores to pin threads to, in order (default: every allowed core)")
	rounds := flag.Int("rounds", 1, "with -upstream: run upstream's binary and then this tool's cases this many times in turn (the -repeats runs spread over the rounds), and report both columns as medians over every round (the GPU host's cores have spells of a busy sibling hardware thread lasting seconds; one upstream run against this tool's median compares a sample with a median)")
	fastStart := flag.Bool("fast-start", os.Getenv("DAQIRI_BENCH_WAIT") == "fast", "start upstream's binary and each of this tool's runs once the host shows its fast speed (at most 10 s each; the test is calibrated on the GPU host, whose cores all turn slow together about half of the time: BENCHMARKS.md, issue 31 sixth round); default from DAQIRI_BENCH_WAIT=fast")
	each := flag.Bool("each", false, "also print every run's Mops, in the order run (a pair of spinning threads can settle in a fast or a slow state; the median hides which)")
	flag.Parse()
	var o opts
	switch *waitMode {
	case "spin", "pause", "yield", "gosched":
		o.wait = *waitMode
	default:
		fmt.Fprintf(os.Stderr, "daqiri-ringbench: -wait %q: want spin, pause, yield or gosched\n", *waitMode)
		os.Exit(2)
	}
	for _, f := range strings.Split(*cpuList, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		c, err := strconv.Atoi(f)
		if err != nil || !osthread.Allowed(c) {
			fmt.Fprintf(os.Stderr, "daqiri-ringbench: -cpus: %q is not a core this process may run on\n", f)
			os.Exit(2)
		}
		o.cpus = append(o.cpus, c)
	}
	if len(o.cpus) == 0 {
		for c := 0; len(o.cpus) < osthread.NumAllowed() && c < 4096; c++ {
			if osthread.Allowed(c) {
				o.cpus = append(o.cpus, c)
			}
		}
	}
	match, err := regexp.Compile(*only)
	if err != nil {
		fmt.Fprintln(os.Stderr, "daqiri-ringbench: -run:", err)
		os.Exit(2)
	}
	cases := []bench{
		{name: "spsc single 1p1c", prod: 1, cons: 1, bulk: 1, mode: ring.SPSC, issue: 60.3},
		{name: "spsc bulk8 1p1c", prod: 1, cons: 1, bulk: 8, mode: ring.SPSC, issue: 132.0},
		{name: "spsc bulk32 1p1c", prod: 1, cons: 1, bulk: 32, mode: ring.SPSC, issue: 203.6},
		{name: "mpmc single 2p2c", prod: 2, cons: 2, bulk: 1, mode: ring.MPMC, issue: 3.5},
		{name: "mpmc single 4p4c", prod: 4, cons: 4, bulk: 1, mode: ring.MPMC, issue: 2.2},
		{name: "mpmc bulk8 2p2c", prod: 2, cons: 2, bulk: 8, mode: ring.MPMC, issue: 27.4},
		{name: "mpmc bulk32 4p4c", prod: 4, cons: 4, bulk: 32, mode: ring.MPMC, issue: 58.3},
		{name: "pool get/put 1t", pool: 1, issue: 42.9},
		{name: "pool get/put 4t", pool: 4, issue: 3.5},
		{name: "pool get/put 8t", pool: 8, issue: 2.4},
		{name: "pool cached 1t", pool: 1, cached: true, upstream: "pool get/put 1t", issue: 42.9},
		{name: "pool cached 4t", pool: 4, cached: true, upstream: "pool get/put 4t", issue: 3.5},
		{name: "pool cached 8t", pool: 8, cached: true, upstream: "pool get/put 8t", issue: 2.4},
	}
	cores := len(o.cpus)
	if *rounds < 1 || (*rounds > 1 && *upstreamBin == "") {
		fmt.Fprintf(os.Stderr, "daqiri-ringbench: -rounds %d: want 1, or more with -upstream\n", *rounds)
		os.Exit(2)
	}
	var sel []bench
	for _, c := range cases {
		if match.MatchString(c.name) {
			sel = append(sel, c)
		}
	}
	// ours[i] and chans[i] gather case i's runs over every round; ups[key] upstream's figure
	// per round.
	ours := make([][]float64, len(sel))
	chans := make([][]float64, len(sel))
	ups := map[string][]float64{}
	source := "issue 18's figures for upstream's pool_ring_bench on the 16-core H200 host; compare only there"
	if *upstreamBin != "" {
		source = "upstream's pool_ring_bench (" + *upstreamBin + "), run on this host just before"
		if *rounds > 1 {
			source = fmt.Sprintf("upstream's pool_ring_bench (%s), median of %d runs, each just before a round of this tool's runs", *upstreamBin, *rounds)
		}
	}
	// The -repeats runs of a case are spread over the rounds, so that more rounds cost only
	// upstream's runs.
	perRound := max(1, (*repeats+*rounds-1) / *rounds)
	for r := 1; r <= *rounds; r++ {
		if *upstreamBin != "" {
			if *rounds > 1 {
				fmt.Fprintf(os.Stderr, "round %d of %d: upstream\n", r, *rounds)
			}
			settle(*fastStart)
			u, err := runUpstream(*upstreamBin)
			if err != nil {
				fmt.Fprintln(os.Stderr, "daqiri-ringbench:", err)
				os.Exit(1)
			}
			for k, v := range u {
				ups[k] = append(ups[k], v)
			}
		}
		for i, c := range sel {
			if *rounds > 1 {
				fmt.Fprintf(os.Stderr, "round %d of %d: %s\n", r, *rounds, c.name)
			}
			// Warm-up pass (page faults, thread start-up, CPU frequency).
			run(c, *items/10, false, o)
			_, runs := median(perRound, func() float64 { settle(*fastStart); return run(c, *items, false, o) })
			ours[i] = append(ours[i], runs...)
			if *withChan {
				_, g := median(perRound, func() float64 { settle(*fastStart); return run(c, *items, true, o) })
				chans[i] = append(chans[i], g...)
			}
		}
	}
	fmt.Printf("daqiri ring/pool bench: %d items per producer or thread, median of %d runs, %d cores, wait %s, %s\n\n", *items, perRound**rounds, cores, o.wait, runtime.Version())
	fmt.Printf("%-20s %12s %8s %11s %8s %14s %9s\n", "case", "daqiri Mops", "ns/op", "chan Mops", "vs chan", "upstream Mops*", "vs upstr")
	for i, c := range sel {
		d := medianOf(ours[i])
		row := fmt.Sprintf("%-20s %12.2f %8.1f", c.name, d, 1e3/d)
		if *withChan {
			g := medianOf(chans[i])
			row += fmt.Sprintf(" %11.2f %7.2fx", g, d/g)
		} else {
			row += fmt.Sprintf(" %11s %8s", "-", "-")
		}
		key := c.name
		if c.upstream != "" {
			key = c.upstream
		}
		u, ok := c.issue, *upstreamBin == ""
		if !ok && len(ups[key]) > 0 {
			u, ok = medianOf(ups[key]), true
		}
		if ok && u > 0 {
			row += fmt.Sprintf(" %14.1f %8.2fx", u, d/u)
		}
		fmt.Println(row)
		if *each {
			fmt.Println(eachLine(ours[i]))
			if len(ups[key]) > 0 {
				fmt.Println(strings.Replace(eachLine(ups[key]), "runs:", "upstream:", 1))
			}
		}
	}
	fmt.Println("\n* " + source)
	if cores < 8 {
		fmt.Fprintf(os.Stderr, "\nnote: %d cores; cases with more threads than cores time-share them\n", cores)
	}
}

// settle waits for the host's fast speed when on is set (-fast-start), and says on stderr when
// it did not come.
func settle(on bool) {
	if !on {
		return
	}
	if r, ok := benchtest.WaitFast(); !ok {
		fmt.Fprintf(os.Stderr, "daqiri-ringbench: the host's fast speed not seen within %v (control ratio %.2f): running anyway\n", benchtest.FastWait, r)
	}
}

// runUpstream runs upstream's benchmark and reads its table.
func runUpstream(bin string) (map[string]float64, error) {
	out, err := exec.Command(bin).Output()
	if err != nil {
		return nil, fmt.Errorf("run upstream benchmark %s: %w", bin, err)
	}
	res := parseUpstream(out)
	if len(res) == 0 {
		return nil, fmt.Errorf("upstream benchmark %s printed no table:\n%s", bin, out)
	}
	return res, nil
}

// parseUpstream reads the "case | Mops ns/op" rows of upstream's table into Mops by this
// tool's case names (upstream's "ObjectPool get/put 4t" is "pool get/put 4t" here).
func parseUpstream(out []byte) map[string]float64 {
	res := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "|")
		if len(cols) < 2 {
			continue
		}
		f := strings.Fields(cols[1])
		if len(f) == 0 {
			continue
		}
		mops, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue // the header
		}
		name := strings.ToLower(strings.TrimSpace(cols[0]))
		name = strings.Replace(name, "objectpool ", "pool ", 1)
		res[name] = mops
	}
	return res
}

// median runs f n times (at least once) and returns the median and every result in the order
// run.
func median(n int, f func() float64) (float64, []float64) {
	v := make([]float64, max(n, 1))
	for i := range v {
		v[i] = f()
	}
	return medianOf(v), v
}

// medianOf is the median of v (the upper one of an even count), v unchanged; 0 when empty.
func medianOf(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// eachLine is the -each line under a case's row.
func eachLine(runs []float64) string {
	f := make([]string, len(runs))
	for i, r := range runs {
		f[i] = strconv.FormatFloat(r, 'f', 1, 64)
	}
	return "    runs: " + strings.Join(f, " ")
}

// opts are the harness settings every case runs with.
type opts struct {
	cpus []int  // cores to pin threads to, round-robin
	wait string // spin, pause, yield or gosched
}

// waiter is what a thread does when the ring is full or empty. "spin" retries at once, as
// upstream's threads do (with a sched_yield every 4096 tries, and at every try when there are
// more threads than cores: the other pinned threads need the core to make progress). "yield"
// calls sched_yield at every failed try, which returns at once when nothing else wants the core
// but keeps the thread off the other side's cache lines for a few hundred nanoseconds.
// "pause" spins with the CPU's spin-wait hint between tries (osthread.Pause).
// "gosched" is what the first version of this harness did after 32 tries: runtime.Gosched on
// a goroutine locked to its thread hands the P to another thread and sleeps until the
// scheduler hands it back, microseconds, during which the other side runs alone.
//
// Every thread's waiter is a heap object that it writes on every failed try; the padding keeps
// two threads' waiters out of one 128-byte block (see ring.gap), so the harness adds no sharing of its own.
type waiter struct {
	_      [128]byte
	mode   string
	shared bool
	n      int
	_      [128]byte
}

func (w *waiter) wait() {
	w.n++
	switch {
	case w.mode == "gosched":
		if w.n > 32 {
			runtime.Gosched()
		}
	case w.mode == "yield" || w.shared || w.n&4095 == 0:
		osthread.Yield()
	case w.mode == "pause":
		osthread.Pause()
	}
}

// done resets the count of failed tries after a success.
func (w *waiter) done() { w.n = 0 }

// run returns Mops/s: values moved through the ring, or buffers taken from and returned to
// the pool, per second.
func run(c bench, items int, useChan bool, o opts) float64 {
	cores := len(o.cpus)
	var wg sync.WaitGroup
	// Every thread pins itself, says it is ready and spins until start is set, as upstream's
	// threads do: the clock starts once all are on their cores and none has to be woken (a
	// goroutine locked to its thread and blocked on a channel is woken through the scheduler
	// and a futex, tens of microseconds for each thread, inside a run of a few milliseconds).
	// Spinning threads hold their Ps, so they spin only while a P is left for the rest (the
	// threads not started yet, this goroutine); otherwise they wait on startc.
	var ready, start atomic.Int32
	startc := make(chan struct{})
	thread := 0
	threads := c.pool + c.prod + c.cons
	spin := threads < runtime.GOMAXPROCS(0)
	spawn := func(fn func(w *waiter)) {
		core := o.cpus[thread%cores]
		thread++
		wg.Add(1)
		go func() {
			defer wg.Done()
			osthread.LockAndPin(core)
			defer osthread.Unlock()
			w := &waiter{mode: o.wait, shared: threads > cores}
			ready.Add(1)
			if spin {
				for start.Load() == 0 {
				}
			} else {
				<-startc
			}
			fn(w)
		}()
	}
	var total int
	if c.pool > 0 {
		total = items * c.pool
		if useChan {
			ch := make(chan uint32, 4096)
			for i := 0; i < 4096; i++ {
				ch <- uint32(i)
			}
			for t := 0; t < c.pool; t++ {
				spawn(func(w *waiter) {
					var held [16]uint32
					for done := 0; done < items; {
						k := 0
						for ; k < len(held); k++ {
							select {
							case held[k] = <-ch:
								continue
							default:
							}
							break
						}
						for _, v := range held[:k] {
							ch <- v
						}
						if done += k; k == 0 {
							w.wait()
						} else {
							w.done()
						}
					}
				})
			}
		} else {
			p, _ := ring.NewPool(4096)
			for t := 0; t < c.pool; t++ {
				if c.cached {
					spawn(func(w *waiter) { cachedGetPut(w, items, p) })
				} else {
					spawn(func(w *waiter) { poolGetPut(w, items, p) })
				}
			}
		}
	} else {
		per := items / c.bulk * c.bulk
		total = per * c.prod
		perCons := total / c.cons / c.bulk * c.bulk
		share := func(k int) int {
			if k == c.cons-1 {
				return total - perCons*(c.cons-1)
			}
			return perCons
		}
		if useChan {
			ch := make(chan uint64, 1024)
			for p := 0; p < c.prod; p++ {
				spawn(func(*waiter) {
					for i := 0; i < per; i++ {
						ch <- uint64(i)
					}
				})
			}
			for k := 0; k < c.cons; k++ {
				n := share(k)
				spawn(func(*waiter) {
					for i := 0; i < n; i++ {
						<-ch
					}
				})
			}
		} else if c.mode == ring.SPSC {
			// One producer, one consumer: the ring's SPSC mode is a Handoff, used directly so
			// that its single-value calls are inlined into the loop as upstream's are.
			h, _ := ring.NewHandoff[uint64](1024)
			spawn(func(w *waiter) { handoffProduce(w, per, c.bulk, h) })
			spawn(func(w *waiter) { handoffConsume(w, share(0), c.bulk, h) })
		} else {
			r, _ := ring.New[uint64](1024, c.mode)
			for p := 0; p < c.prod; p++ {
				spawn(func(w *waiter) { produce(w, per, c.bulk, r.Enqueue, r.EnqueueBulk) })
			}
			// Each consumer takes a fixed share with all-or-nothing bulk calls: no counter
			// shared between threads, so the harness adds no atomics of its own.
			for k := 0; k < c.cons; k++ {
				n := share(k)
				spawn(func(w *waiter) { consume(w, n, c.bulk, r.Dequeue, r.DequeueBulk) })
			}
		}
	}
	for i := 0; ready.Load() < int32(threads); i++ {
		if i > 1000 {
			time.Sleep(10 * time.Microsecond)
		}
		runtime.Gosched()
	}
	t0 := time.Now()
	start.Store(1)
	close(startc)
	wg.Wait()
	return float64(total) / time.Since(t0).Seconds() / 1e6
}

// produce moves per values with single calls (bulk 1, as upstream's single cases) or
// all-or-nothing bulk calls.
func produce(w *waiter, per, bulk int, one func(uint64) bool, bulkOne func([]uint64) bool) {
	buf := make([]uint64, bulk)
	for i := range buf {
		buf[i] = uint64(i + 1)
	}
	for i := 0; i < per; i += bulk {
		if bulk == 1 {
			for !one(buf[0]) {
				w.wait()
			}
		} else {
			for !bulkOne(buf) {
				w.wait()
			}
		}
		w.done()
	}
}

// consume takes n values the same way.
func consume(w *waiter, n, bulk int, one func() (uint64, bool), bulkOne func([]uint64) bool) {
	buf := make([]uint64, bulk)
	for got := 0; got < n; {
		ok := false
		if bulk == 1 {
			_, ok = one()
		} else {
			ok = bulkOne(buf)
		}
		if ok {
			got += bulk
			w.done()
		} else {
			w.wait()
		}
	}
}

// handoffProduce is produce on a Handoff, calling its methods directly: through a function
// value (or a generic type parameter) they could not be inlined into the loop.
func handoffProduce(w *waiter, per, bulk int, h *ring.Handoff[uint64]) {
	buf := make([]uint64, bulk)
	for i := range buf {
		buf[i] = uint64(i + 1)
	}
	for i := 0; i < per; i += bulk {
		if bulk == 1 {
			for !h.Enqueue(buf[0]) {
				w.wait()
			}
		} else {
			for !h.EnqueueBulk(buf) {
				w.wait()
			}
		}
		w.done()
	}
}

// handoffConsume is consume on a Handoff.
func handoffConsume(w *waiter, n, bulk int, h *ring.Handoff[uint64]) {
	buf := make([]uint64, bulk)
	for got := 0; got < n; {
		ok := false
		if bulk == 1 {
			_, ok = h.Dequeue()
		} else {
			ok = h.DequeueBulk(buf)
		}
		if ok {
			got += bulk
			w.done()
		} else {
			w.wait()
		}
	}
}

// poolGetPut takes up to 16 buffers from the pool and returns them, until it has moved items;
// upstream's pool loop, with no branch of the harness's own per buffer.
func poolGetPut(w *waiter, items int, p *ring.Pool) {
	var held [16]uint32
	for done := 0; done < items; {
		k := 0
		for ; k < len(held); k++ {
			v, ok := p.Get()
			if !ok {
				break
			}
			held[k] = v
		}
		for _, v := range held[:k] {
			p.Put(v)
		}
		if done += k; k == 0 {
			w.wait()
		} else {
			w.done()
		}
	}
}

// cachedGetPut is poolGetPut through a per-thread cache.
func cachedGetPut(w *waiter, items int, p *ring.Pool) {
	cache, _ := p.NewCache(256)
	defer cache.Flush()
	var held [16]uint32
	for done := 0; done < items; {
		k := 0
		for ; k < len(held); k++ {
			v, ok := cache.Get()
			if !ok {
				break
			}
			held[k] = v
		}
		for _, v := range held[:k] {
			cache.Put(v)
		}
		if done += k; k == 0 {
			w.wait()
		} else {
			w.done()
		}
	}
}
