// Command rxonly is make bench-xdp's daqiri receiver: the counterpart of testpmd's rxonly
// forwarding engine. It opens a configuration, polls every RX queue with RxBurst in one goroutine
// per queue (not locked to its thread: yielding a locked thread hands the P over through
// futex wakeups), counts the packets and bytes of every burst the application received
// and frees it, for a fixed time; then prints one JSON object (counts and the session's
// per-queue statistics with drops by reason).
//
// daqiri-bench --mode rx is not used for this: its main goroutine's progress loop keeps
// selecting on an already closed channel when it has no TX queues, so it spins on the
// receiver's core and takes most of its CPU time away from the polling thread.
//
//	rxonly --config rx.yaml --duration 7s [--cpuprofile FILE]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
)

type result struct {
	Seconds   float64 `json:"seconds"`
	RxPackets uint64  `json:"rx_packets"`
	RxBytes   uint64  `json:"rx_bytes"`
	RxBursts  uint64  `json:"rx_bursts"`
	// FullBursts counts bursts of the largest size seen (MaxBurst): many of them mean the
	// poller found more waiting than one burst holds, i.e. it fell behind.
	MaxBurst   int          `json:"max_burst"`
	FullBursts uint64       `json:"full_bursts"`
	Dropped    uint64       `json:"dropped_packets"`
	DropsText  string       `json:"drops_text"` // drops by reason over all queues, "reason n, ..."
	Stats      daqiri.Stats `json:"stats"`
}

func main() {
	cfgPath := flag.String("config", "", "daqiri YAML configuration with RX queues")
	dur := flag.Duration("duration", 10*time.Second, "how long to receive")
	prof := flag.String("cpuprofile", "", "write a Go CPU profile of the run to this file")
	every := flag.Duration("progress", 0, "print received packets and drops to stderr this often (0: never)")
	flag.Parse()
	if err := run(*cfgPath, *dur, *prof, *every); err != nil {
		fmt.Fprintln(os.Stderr, "rxonly:", err)
		os.Exit(1)
	}
}

func run(cfgPath string, dur time.Duration, prof string, every time.Duration) error {
	cfg, err := config.LoadFile(cfgPath)
	if err != nil {
		return err
	}
	s, err := daqiri.Open(context.Background(), cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	type pq struct{ port, queue int }
	var qs []pq
	for p := 0; p < s.NumPorts(); p++ {
		for _, q := range s.RxQueueIDs(p) {
			qs = append(qs, pq{p, q})
		}
	}
	if len(qs) == 0 {
		return errors.New("the configuration has no RX queues")
	}
	if prof != "" {
		f, err := os.Create(prof)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	var stop atomic.Bool
	var pkts, bytes, bursts, full atomic.Uint64
	var maxBurst atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for _, q := range qs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var n, nb, nbu, nfull uint64
			big := 0
			for !stop.Load() {
				b, err := s.RxBurst(q.port, q.queue)
				if err != nil {
					// Poll like testpmd's forwarding lcore, letting the engine's
					// statistics goroutine in.
					runtime.Gosched()
					continue
				}
				n += uint64(b.Len())
				nb += uint64(b.TotalBytes())
				nbu++
				switch l := b.Len(); {
				case l > big:
					big, nfull = l, 1
				case l == big:
					nfull++
				}
				b.Free()
			}
			pkts.Add(n)
			bytes.Add(nb)
			bursts.Add(nbu)
			if int64(big) > maxBurst.Load() {
				maxBurst.Store(int64(big))
				full.Store(nfull)
			}
		}()
	}
	if every > 0 {
		for end := start.Add(dur); time.Until(end) > 0; {
			time.Sleep(min(every, time.Until(end)))
			rx, _ := s.Stats().Totals()
			fmt.Fprintf(os.Stderr, "%7.3fs  received %d  dropped %d\n", time.Since(start).Seconds(), rx.Packets, rx.Dropped)
		}
	} else {
		time.Sleep(dur)
	}
	stop.Store(true)
	wg.Wait()
	res := result{Seconds: time.Since(start).Seconds(), RxPackets: pkts.Load(), RxBytes: bytes.Load(), RxBursts: bursts.Load(), MaxBurst: int(maxBurst.Load()), FullBursts: full.Load()}
	if err := s.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "rxonly: close:", err)
	}
	res.Stats = s.Stats()
	rx, _ := res.Stats.Totals()
	res.Dropped = rx.Dropped
	byReason := map[string]uint64{}
	for _, p := range res.Stats.Ports {
		for _, q := range p.Rx {
			for k, v := range q.Drops {
				byReason[k] += v
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(byReason)) {
		if res.DropsText != "" {
			res.DropsText += ", "
		}
		res.DropsText += fmt.Sprintf("%s %d", k, byReason[k])
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}
