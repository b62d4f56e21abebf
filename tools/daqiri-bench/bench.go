package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/internal/osthread"
)

// benchSection is the config's optional application section `bench:`.
type benchSection struct {
	PayloadSize int     `yaml:"payload_size"`
	RateGbps    float64 `yaml:"rate_gbps"`
	Window      int     `yaml:"window"`
}

// result is what a run measured. Rates count payload bytes (goodput) for socket streams and
// whole frames for raw streams.
type result struct {
	Seconds        float64           `json:"seconds"`
	PayloadSize    int               `json:"payload_size"`
	TxPackets      uint64            `json:"tx_packets"`
	TxBytes        uint64            `json:"tx_bytes"`
	RxPackets      uint64            `json:"rx_packets"`
	RxBytes        uint64            `json:"rx_bytes"`
	DroppedPackets uint64            `json:"dropped_packets"`
	Drops          map[string]uint64 `json:"drops,omitempty"`
	// Unaccounted are packets sent in this process and neither received nor counted as
	// dropped by it (lost in the network, or still in flight at the end).
	Unaccounted int64        `json:"unaccounted_packets"`
	TxGbps      float64      `json:"tx_gbps"`
	RxGbps      float64      `json:"rx_gbps"`
	TxMpps      float64      `json:"tx_mpps"`
	RxMpps      float64      `json:"rx_mpps"`
	SendErrors  uint64       `json:"send_errors"`
	Stats       daqiri.Stats `json:"stats"`
	mode        string
}

type counter struct {
	packets, bytes atomic.Uint64
}

func bench(ctx context.Context, cfg *config.Config, o *options, progress io.Writer) (*result, error) {
	var sec benchSection
	for _, name := range cfg.AppNames() {
		if name == "bench" {
			if err := cfg.App("bench", &sec); err != nil {
				return nil, err
			}
		}
	}
	payload := o.payload
	if payload == 0 {
		payload = sec.PayloadSize
	}
	if payload == 0 {
		payload = 8000
	}
	rate := o.rateGbps
	if rate == 0 {
		rate = sec.RateGbps
	}
	window := o.window
	if window < 0 {
		window = sec.Window
	}
	if o.mode != "both" {
		window = 0 // the receiver is in another process: nothing to measure in flight
	}
	s, err := daqiri.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	closed := false
	defer func() {
		if !closed {
			s.Close()
		}
	}()
	if err := o.metrics.register(s); err != nil {
		return nil, err
	}

	var tx, rx counter
	var sendErrs atomic.Uint64
	runCtx, cancel := context.WithTimeout(ctx, o.duration)
	defer cancel()
	stopRx := make(chan struct{})
	var txWG, rxWG sync.WaitGroup
	type pq struct{ port, queue int }
	var txqs, rxqs []pq
	for p := 0; p < s.NumPorts(); p++ {
		for _, q := range s.TxQueueIDs(p) {
			txqs = append(txqs, pq{p, q})
		}
		for _, q := range s.RxQueueIDs(p) {
			rxqs = append(rxqs, pq{p, q})
		}
	}
	if o.mode == "rx" {
		txqs = nil
	}
	if o.mode == "tx" {
		rxqs = nil
	}
	if len(txqs) == 0 && len(rxqs) == 0 {
		return nil, errors.New("the configuration has no queues to drive in this mode")
	}
	for _, q := range rxqs {
		rxWG.Add(1)
		go func() {
			defer rxWG.Done()
			receiver(s, q.port, q.queue, &rx, stopRx)
		}()
	}
	// Let receivers and servers come up before sending.
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	for _, q := range txqs {
		txWG.Add(1)
		go func() {
			defer txWG.Done()
			pinSender(cfg, q.port, q.queue)
			defer osthread.Unlock()
			sender(runCtx, s, q.port, q.queue, payload, rate/float64(len(txqs)), &tx, &sendErrs, &rx, uint64(window))
		}()
	}
	// done closes when every sender has finished; with no senders (--mode rx) it stays nil,
	// so the loop below waits for the duration instead of spinning on a closed channel.
	var done chan struct{}
	if len(txqs) > 0 {
		done = make(chan struct{})
		go func() { txWG.Wait(); close(done) }()
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	// The live line shows the last interval's rates, bits and packets alike; the final table
	// shows the whole run's.
	var lastTx, lastRx, lastTxP, lastRxP uint64
	last := start
	live := !o.quiet && !o.json
wait:
	for {
		select {
		case <-done:
			break wait
		case <-runCtx.Done():
			if len(txqs) == 0 {
				break wait
			}
		case now := <-tick.C:
			if live {
				dt := now.Sub(last).Seconds()
				tb, rb := tx.bytes.Load(), rx.bytes.Load()
				st := s.Stats()
				rxs, txs := st.Totals()
				tp, rp := txs.Packets, rx.packets.Load()
				fmt.Fprintf(progress, "\r%6.1fs  tx %7.2f Gb/s %7.3f Mpps | rx %7.2f Gb/s %7.3f Mpps | dropped %d   ",
					now.Sub(start).Seconds(),
					float64(tb-lastTx)*8/dt/1e9, float64(tp-lastTxP)/dt/1e6,
					float64(rb-lastRx)*8/dt/1e9, float64(rp-lastRxP)/dt/1e6,
					rxs.Dropped+txs.Dropped)
				lastTx, lastRx, lastTxP, lastRxP, last = tb, rb, tp, rp, now
			}
		}
	}
	elapsed := time.Since(start).Seconds()
	// Drain: wait until the receive side has been quiet for 200 ms (at most 2 s).
	if len(rxqs) > 0 {
		prev := rx.packets.Load()
		quiet := time.Now()
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
			if n := rx.packets.Load(); n != prev {
				prev, quiet = n, time.Now()
			} else if time.Since(quiet) > 200*time.Millisecond {
				break
			}
		}
	}
	close(stopRx)
	rxWG.Wait()
	if live {
		fmt.Fprintln(progress)
	}
	if err := s.Close(); err != nil {
		fmt.Fprintln(progress, "close:", err)
	}
	closed = true
	st := s.Stats()
	res := &result{Seconds: elapsed, PayloadSize: payload, Stats: st, mode: o.mode, SendErrors: sendErrs.Load()}
	rxs, txs := st.Totals()
	res.TxPackets, res.TxBytes = txs.Packets, tx.bytes.Load()
	res.RxPackets, res.RxBytes = rx.packets.Load(), rx.bytes.Load()
	for _, p := range st.Ports {
		for _, q := range append(append([]daqiri.QueueStats{}, p.Rx...), p.Tx...) {
			for k, v := range q.Drops {
				if res.Drops == nil {
					res.Drops = map[string]uint64{}
				}
				res.Drops[k] += v
			}
		}
	}
	res.DroppedPackets = rxs.Dropped + txs.Dropped
	if o.mode == "both" {
		res.Unaccounted = int64(res.TxPackets) - int64(res.RxPackets) - int64(res.DroppedPackets)
	}
	res.TxGbps = float64(res.TxBytes) * 8 / elapsed / 1e9
	res.RxGbps = float64(res.RxBytes) * 8 / elapsed / 1e9
	res.TxMpps = float64(res.TxPackets) / elapsed / 1e6
	res.RxMpps = float64(res.RxPackets) / elapsed / 1e6
	return res, nil
}

// sender fills and sends bursts until ctx ends. Each packet carries a sequence number in its
// first 8 bytes; the rest of the payload is whatever the buffer holds (the data a sensor
// would have written there).
func sender(ctx context.Context, s *daqiri.Session, port, queue, payload int, gbps float64, c *counter, errs *atomic.Uint64, rx *counter, window uint64) {
	var seq uint64
	start := time.Now()
	bytesPerSec := gbps * 1e9 / 8
	for ctx.Err() == nil {
		if window > 0 && c.packets.Load() > rx.packets.Load()+window {
			// Sender and receiver share this process: keep at most window packets in flight,
			// so a loopback run measures the data path rather than socket-buffer overflow.
			runtime.Gosched()
			continue
		}
		if bytesPerSec > 0 {
			ahead := float64(c.bytes.Load()) - time.Since(start).Seconds()*bytesPerSec
			if ahead > 0 {
				time.Sleep(time.Duration(ahead / bytesPerSec * 1e9))
				continue
			}
		}
		b, err := s.TxBurst(port, queue, 0)
		if err != nil {
			if errors.Is(err, daqiri.ErrNoFreePacketBuffers) || errors.Is(err, daqiri.ErrNoFreeBurstBuffers) {
				runtime.Gosched()
				continue
			}
			errs.Add(1)
			time.Sleep(time.Millisecond)
			continue
		}
		n := b.Len()
		for i := 0; i < n; i++ {
			if err := b.SetPacketLengths(i, payload); err != nil {
				b.Free()
				errs.Add(1)
				return
			}
			if p := b.Packet(i); len(p) >= 8 {
				binary.BigEndian.PutUint64(p, seq)
			}
			seq++
		}
		if err := s.Send(b); err != nil {
			if errors.Is(err, daqiri.ErrNotReady) {
				// Not connected yet (TCP client, UDP server without a peer): the burst is
				// still ours.
				b.Free()
				seq -= uint64(n)
				time.Sleep(10 * time.Millisecond)
				continue
			}
			if errors.Is(err, daqiri.ErrInvalidParameter) {
				b.Free()
			}
			errs.Add(1)
			continue
		}
		c.packets.Add(uint64(n))
		c.bytes.Add(uint64(n * payload))
	}
}

// receiver takes bursts from one queue and frees them, counting packets and bytes.
func receiver(s *daqiri.Session, port, queue int, c *counter, stop <-chan struct{}) {
	idle := 0
	for {
		b, err := s.RxBurst(port, queue)
		if err != nil {
			select {
			case <-stop:
				return
			default:
			}
			// Back off when idle so a polling receiver does not starve the engine's workers
			// on a small machine.
			idle++
			if idle < 64 {
				runtime.Gosched()
			} else {
				time.Sleep(20 * time.Microsecond)
			}
			continue
		}
		idle = 0
		c.packets.Add(uint64(b.Len()))
		c.bytes.Add(uint64(b.TotalBytes()))
		b.Free()
	}
}

func (r *result) table(w io.Writer) {
	fmt.Fprintf(w, "\n%-16s %-8s %-3s %5s %14s %16s %12s\n", "interface", "engine", "dir", "queue", "packets", "bytes", "dropped")
	for _, p := range r.Stats.Ports {
		for i, q := range p.Rx {
			fmt.Fprintf(w, "%-16s %-8s %-3s %5d %14d %16d %12d%s\n", p.Name, p.Engine, "rx", i, q.Packets, q.Bytes, q.Dropped, reasons(q.Drops))
		}
		for i, q := range p.Tx {
			fmt.Fprintf(w, "%-16s %-8s %-3s %5d %14d %16d %12d%s\n", p.Name, p.Engine, "tx", i, q.Packets, q.Bytes, q.Dropped, reasons(q.Drops))
		}
	}
	fmt.Fprintf(w, "\n%.2f s, payload %d B\n", r.Seconds, r.PayloadSize)
	fmt.Fprintf(w, "  sent      %14d packets  %8.2f Gb/s  %8.3f Mpps\n", r.TxPackets, r.TxGbps, r.TxMpps)
	fmt.Fprintf(w, "  received  %14d packets  %8.2f Gb/s  %8.3f Mpps\n", r.RxPackets, r.RxGbps, r.RxMpps)
	fmt.Fprintf(w, "  dropped   %14d packets%s\n", r.DroppedPackets, reasons(r.Drops))
	if r.mode == "both" {
		fmt.Fprintf(w, "  unaccounted %12d packets\n", r.Unaccounted)
	}
	if r.SendErrors > 0 {
		fmt.Fprintf(w, "  send errors %12d\n", r.SendErrors)
	}
}

func reasons(m map[string]uint64) string {
	if len(m) == 0 {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := "  ("
	for i, k := range keys {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s %d", k, m[k])
	}
	return s + ")"
}

// pinSender locks the calling goroutine to its OS thread and pins that thread to the TX
// queue's cpu_core when one is set and allowed. Engines without TX workers (socket, RoCE) do
// their sending in the caller's thread, so this is where the queue's core takes effect; it
// also keeps the kernel's send work off the core of the RX worker.
func pinSender(cfg *config.Config, port, queue int) {
	if tx := cfg.Interfaces[port].TX; tx != nil {
		for _, q := range tx.Queues {
			if c, ok := q.Core(); ok && q.ID == queue {
				if _, err := osthread.LockAndPin(c); err == nil {
					return
				}
			}
		}
	}
	runtime.LockOSThread()
}
