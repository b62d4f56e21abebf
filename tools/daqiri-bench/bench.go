package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/internal/osthread"
	"github.com/daqiri-go/daqiri/internal/tty"
	"github.com/daqiri-go/daqiri/mlx5/model/modelch"
)

// defaultWindow bounds the packets in flight when neither --window nor bench.window says:
// sender and receiver share the process, and an unbounded sender measures socket-buffer
// overflow rather than the data path.
const defaultWindow = 4096

// benchSection is the config's optional application section `bench:`.
type benchSection struct {
	PayloadSize int     `yaml:"payload_size"`
	RateGbps    float64 `yaml:"rate_gbps"`
	Window      *int    `yaml:"window"`
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
	Unaccounted int64   `json:"unaccounted_packets"`
	TxGbps      float64 `json:"tx_gbps"`
	RxGbps      float64 `json:"rx_gbps"`
	TxMpps      float64 `json:"tx_mpps"`
	RxMpps      float64 `json:"rx_mpps"`
	SendErrors  uint64  `json:"send_errors"`
	// SendErrorReasons counts send errors by what went wrong.
	SendErrorReasons map[string]uint64 `json:"send_error_reasons,omitempty"`
	// Reorder counts the aggregates reorder plans delivered (raw configurations with
	// reorder_configs): batches complete, batches delivered on timeout with slots missing.
	Reorder *reorderResult `json:"reorder,omitempty"`
	Stats   daqiri.Stats   `json:"stats"`
	mode    string
}

// reorderResult sums the reorder aggregates a run received.
type reorderResult struct {
	Batches       uint64 `json:"batches"`
	Complete      uint64 `json:"complete"`
	TimedOut      uint64 `json:"timed_out"`
	MissingSlots  uint64 `json:"missing_slots"`
	SourcePackets uint64 `json:"source_packets"`
}

// errCounter counts send errors with their reasons.
type errCounter struct {
	n       atomic.Uint64
	mu      sync.Mutex
	reasons map[string]uint64
}

func (e *errCounter) add(err error) {
	e.n.Add(1)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.reasons == nil {
		e.reasons = map[string]uint64{}
	}
	if k := err.Error(); len(e.reasons) < 16 || e.reasons[k] > 0 {
		e.reasons[k]++
	}
}

func (e *errCounter) snapshot() map[string]uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.reasons) == 0 {
		return nil
	}
	out := make(map[string]uint64, len(e.reasons))
	for k, v := range e.reasons {
		out[k] = v
	}
	return out
}

type counter struct {
	packets, bytes atomic.Uint64
	// Reorder aggregates (receivers only).
	batches, complete, timedOut, missing, sources atomic.Uint64
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
	if err := checkPayload("bench.payload_size", sec.PayloadSize); err != nil {
		return nil, err
	}
	if err := checkRate("bench.rate_gbps", sec.RateGbps); err != nil {
		return nil, err
	}
	if sec.Window != nil && *sec.Window < 0 {
		return nil, fmt.Errorf("bench.window must be ≥ 0 (0: no limit), got %d", *sec.Window)
	}
	up, err := readUpstreamSections(cfg)
	if err != nil {
		return nil, err
	}
	for _, n := range up.notes {
		fmt.Fprintln(progress, "note:", n)
	}
	payload := o.payload
	if payload == 0 {
		payload = sec.PayloadSize
	}
	if payload == 0 && !up.hasTx && !up.hasSocks {
		payload = 8000
	}
	rate := o.rateGbps
	if rate == 0 {
		rate = sec.RateGbps
	}
	window := defaultWindow
	switch {
	case o.window.set:
		window = o.window.v
	case sec.Window != nil:
		window = *sec.Window
	}
	if o.mode != "both" {
		window = 0 // the receiver is in another process: nothing to measure in flight
	}
	s, err := daqiri.Open(ctx, cfg, daqiri.WithMLX5Fabric(&modelch.Fabric{}))
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
	if o.runtimeFlows {
		notes, err := addRuntimeFlows(s, cfg, up)
		if err != nil {
			return nil, err
		}
		for _, n := range notes {
			fmt.Fprintln(progress, "note:", n)
		}
	}

	var tx, rx counter
	var sendErrs errCounter
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
	// How each TX queue sends: upstream's bench sections, else the flags and bench section.
	plans := map[pq]*txPlan{}
	var sending []pq
	for _, q := range txqs {
		pl, err := up.txPlanFor(s, cfg, q.port, q.queue, o.payload)
		if err != nil {
			return nil, err
		}
		if pl == nil {
			continue // the socket bench section says this side does not send
		}
		if pl.payload == 0 {
			pl.payload = payload
			if pl.payload == 0 {
				pl.payload = 8000
			}
		}
		if err := checkFits(s, q.port, q.queue, pl); err != nil {
			return nil, err
		}
		if cfg.StreamType == config.StreamSocket {
			capBurstBytes(s, q.port, q.queue, pl)
		}
		plans[q] = pl
		sending = append(sending, q)
		payload = pl.payload
	}
	txqs = sending
	// One receiver per core serves every RX queue pinned to that core (and one per queue
	// without a core): goroutines locked to threads that share a core hand the core's P
	// between their threads at every park, several futex calls each (see groupByCore).
	rxGroups := groupByCore(cfg, rxqs, func(q pq) *int { return up.rxCoreFor(s, cfg, q.port, q.queue) })
	defer raiseProcs(cfg, len(rxGroups)+len(txqs))()
	for _, g := range rxGroups {
		rxWG.Add(1)
		loops := make([]rxLoop, len(g.qs))
		for i, q := range g.qs {
			loops[i] = rxLoop{q.port, q.queue}
		}
		go func() {
			defer rxWG.Done()
			pinTo(g.core)
			defer osthread.Unlock()
			receiver(s, loops, &rx, stopRx)
		}()
	}
	// Let receivers and servers come up before sending.
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	o.plot.begin(s, start)
	txGroups := groupByCore(cfg, txqs, func(q pq) *int {
		if pl := plans[q]; pl.core != nil {
			return pl.core
		}
		return txQueueCore(cfg, q.port, q.queue)
	})
	for _, g := range txGroups {
		txWG.Add(1)
		loops := make([]*txLoop, len(g.qs))
		drops := &dropCount{} // one per sender goroutine: its loops share the reads
		for i, q := range g.qs {
			loops[i] = newTxLoop(s, q.port, q.queue, plans[q], rate/float64(len(txqs)), &tx, &sendErrs, &rx, uint64(window), drops)
		}
		go func() {
			defer txWG.Done()
			pinTo(g.core)
			defer osthread.Unlock()
			sender(runCtx, loops)
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
	line := tty.NewProgress(progress)
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
				line.Update(fmt.Sprintf("%6.1fs  tx %7.2f Gb/s %7.3f Mpps | rx %7.2f Gb/s %7.3f Mpps | dropped %d",
					now.Sub(start).Seconds(),
					float64(tb-lastTx)*8/dt/1e9, float64(tp-lastTxP)/dt/1e6,
					float64(rb-lastRx)*8/dt/1e9, float64(rp-lastRxP)/dt/1e6,
					rxs.Dropped+txs.Dropped))
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
	line.Done()
	if err := s.Close(); err != nil {
		fmt.Fprintln(progress, "close:", err)
	}
	closed = true
	st := s.Stats()
	o.plot.end(time.Since(start).Seconds(), st)
	res := &result{Seconds: elapsed, PayloadSize: payload, Stats: st, mode: o.mode, SendErrors: sendErrs.n.Load(), SendErrorReasons: sendErrs.snapshot()}
	if n := rx.batches.Load(); n > 0 {
		res.Reorder = &reorderResult{Batches: n, Complete: rx.complete.Load(), TimedOut: rx.timedOut.Load(), MissingSlots: rx.missing.Load(), SourcePackets: rx.sources.Load()}
	}
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

// txBurstBytes bounds the bytes of one socket TX burst: the kernel copies every message out
// of its buffer, and the sender's buffers come back to the pool (most recently returned
// first) burst by burst, so a burst's buffers are its working set. The bench writes only a
// sequence number into each, so the rest of a buffer is read from wherever it last was: 64
// messages of 64 KB (4 MiB) came from memory beyond the L2 cache, and the sending thread, the
// bottleneck of TCP over loopback, reached 43 Gb/s on the H200 host against 53 Gb/s with
// bursts of 8 (iperf3 sends from one 64 KB buffer). 1 MiB (16 such messages, half the
// host's 2 MiB L2) measured better again than 512 KiB, fewer system calls for the same
// cache footprint: medians of 6 runs 58.0 against 52.6 Gb/s, 65.6 against 59.5 with the
// receiver's SO_RCVLOWAT pacing.
const txBurstBytes = 1 << 20

// capBurstBytes lowers a socket plan's packets per burst (the queue's batch_size unless the
// bench section sets one) to what fits txBurstBytes, one at least.
func capBurstBytes(s *daqiri.Session, port, queue int, pl *txPlan) {
	batch := pl.batch
	if batch == 0 {
		q := s.Ports()[port].TxQueueByID(queue)
		if q == nil {
			return
		}
		batch = q.BatchSize()
	}
	pl.batch = socketBurst(batch, pl.frameLen())
}

// socketBurst is the packets per burst for frames of frameLen bytes, batch at most.
func socketBurst(batch, frameLen int) int {
	return max(1, min(batch, txBurstBytes/max(frameLen, 1)))
}

// checkFits refuses a plan whose frames do not fit the TX queue's buffers, before anything is
// sent: otherwise every burst would fail the same way.
func checkFits(s *daqiri.Session, port, queue int, pl *txPlan) error {
	q := s.Ports()[port].TxQueueByID(queue)
	if q == nil {
		return nil
	}
	room := 0
	for _, r := range q.Regions {
		room += r.BufSize
	}
	if n := pl.frameLen(); n > room {
		what := fmt.Sprintf("payload %d B", pl.payload)
		if len(pl.header) > 0 {
			what = fmt.Sprintf("header %d B + payload %d B = %d B", len(pl.header), pl.payload, n)
		}
		return fmt.Errorf("interface %s TX queue %d: %s does not fit its %d-byte buffers (memory_regions %v); use --payload %d or less", s.PortName(port), queue, what, room, q.Config.MemoryRegions, max(room-len(pl.header), 0))
	}
	return nil
}

// segmentLengths splits an n-byte frame over the segments of a TX queue that names several
// memory regions (header-data split), as upstream's bench sends it: every segment but the
// last holds as much as its buffers take (the header region's buffers are header_size bytes),
// the last one the rest. nil for a one-segment queue, whose packets take n directly.
func segmentLengths(s *daqiri.Session, port, queue, n int) []int {
	q := s.Ports()[port].TxQueueByID(queue)
	if q == nil || len(q.Regions) < 2 {
		return nil
	}
	lens := make([]int, len(q.Regions))
	for i, r := range q.Regions {
		lens[i] = min(n, r.BufSize)
		if i == len(q.Regions)-1 {
			lens[i] = n
		}
		n -= lens[i]
	}
	return lens
}

// sender fills and sends bursts until ctx ends. Each packet carries a sequence number: with
// an upstream bench_tx section, a big-endian u32 at header_size + sequence_number_offset from
// sequence_number_start, after the Ethernet/IPv4/UDP header area; otherwise a big-endian u64
// in its first 8 bytes. The rest of the payload is whatever the buffer holds (the data a
// sensor would have written there).
// txLoop is one TX queue's sending state. A goroutine serves one or more of them in turn
// (step), so that the queues of one core cost one thread rather than one each.
type txLoop struct {
	s           *daqiri.Session
	port, queue int
	pl          *txPlan
	c, rx       *counter
	errs        *errCounter
	window      uint64
	bytesPerSec float64

	seq    uint64
	n      int
	header []byte
	lens   []int
	start  time.Time
	// drops is the packets the run counted dropped, as last read; the loops of one sender
	// goroutine share it (see dropCount).
	drops     *dropCount
	done      bool      // a frame could not be built: this queue sends no more
	notBefore time.Time // paced or backing off: step sends nothing before this
}

// dropCount is the run's dropped packets as a sender last read them (Session.Stats), and
// when. The loops of one sender goroutine share one, so a full window costs that goroutine
// one read per millisecond, not one per queue: each read is device commands, which on the
// model wait for the receiving port's Step in progress (the sender's thread parked on that
// port's lock 690 times in a 3 s trace with one read per queue).
type dropCount struct {
	n  uint64
	at time.Time
}

func newTxLoop(s *daqiri.Session, port, queue int, pl *txPlan, gbps float64, c *counter, errs *errCounter, rx *counter, window uint64, drops *dropCount) *txLoop {
	t := &txLoop{s: s, port: port, queue: queue, pl: pl, c: c, rx: rx, errs: errs, window: window, drops: drops,
		bytesPerSec: gbps * 1e9 / 8, seq: uint64(pl.seqFrom), n: pl.frameLen(), start: time.Now()}
	if len(pl.header) > 0 {
		t.header = append([]byte(nil), pl.header...)
		finishHeader(t.header, t.n)
	}
	t.lens = segmentLengths(s, port, queue, t.n)
	return t
}

// sender sends on its queues until ctx ends (or every queue is done), one burst per queue
// in turn; when none of them could send it waits: until the earliest paced queue may send
// again when all of them wait on a time, else by the idler.
func sender(ctx context.Context, ts []*txLoop) {
	var wait idler
	for ctx.Err() == nil {
		sent, live := false, false
		var until time.Time
		timed := true
		for _, t := range ts {
			if t.done {
				continue
			}
			live = true
			if !t.notBefore.IsZero() {
				if now := time.Now(); now.Before(t.notBefore) {
					if until.IsZero() || t.notBefore.Before(until) {
						until = t.notBefore
					}
					continue
				}
				t.notBefore = time.Time{}
			}
			if t.step() {
				sent = true
			} else if t.notBefore.IsZero() {
				timed = false
			} else if until.IsZero() || t.notBefore.Before(until) {
				until = t.notBefore
			}
		}
		switch {
		case !live:
			return
		case sent:
			wait.busy()
		case timed && !until.IsZero():
			time.Sleep(time.Until(until))
		default:
			wait.idle()
		}
	}
}

// step sends one burst if the window, the pacing and the pools allow; it reports whether
// it did. A queue that must wait a known time sets notBefore.
func (t *txLoop) step() bool {
	pl, c := t.pl, t.c
	if t.window > 0 && c.packets.Load() > t.rx.packets.Load()+t.drops.n+t.window {
		// Sender and receiver share this process: keep at most window packets in flight,
		// so a loopback run measures the data path rather than socket-buffer overflow.
		// Dropped packets never arrive: they leave the window too (the counters are read
		// at most once a millisecond while the window is full).
		if now := time.Now(); now.Sub(t.drops.at) > time.Millisecond {
			rxs, txs := t.s.Stats().Totals()
			t.drops.n, t.drops.at = rxs.Dropped+txs.Dropped, now
		}
		return false
	}
	if t.bytesPerSec > 0 {
		ahead := float64(c.bytes.Load()) - time.Since(t.start).Seconds()*t.bytesPerSec
		if ahead > 0 {
			t.notBefore = time.Now().Add(time.Duration(ahead / t.bytesPerSec * 1e9))
			return false
		}
	}
	b, err := t.s.TxBurst(t.port, t.queue, pl.batch)
	if err != nil {
		if errors.Is(err, daqiri.ErrNoFreePacketBuffers) || errors.Is(err, daqiri.ErrNoFreeBurstBuffers) {
			return false
		}
		t.errs.add(fmt.Errorf("taking a TX burst: %w", err))
		t.notBefore = time.Now().Add(time.Millisecond)
		return false
	}
	k := b.Len()
	seq := t.seq
	for i := 0; i < k; i++ {
		var err error
		if t.lens != nil {
			err = b.SetPacketLengths(i, t.lens...)
		} else {
			err = b.SetPacketLengths(i, t.n)
		}
		if err != nil {
			b.Free()
			t.errs.add(fmt.Errorf("setting a %d-byte packet length (segments %v): %w", t.n, t.lens, err))
			t.done = true
			return false
		}
		p := b.Packet(i)
		copy(p, t.header)
		switch {
		case pl.seq32 && len(p) >= pl.seqAt+4:
			binary.BigEndian.PutUint32(p[pl.seqAt:], uint32(seq))
		case !pl.seq32 && len(p) >= 8:
			binary.BigEndian.PutUint64(p, seq)
		}
		if len(pl.fields) > 0 {
			for _, f := range pl.fields {
				f.put(p, seq-uint64(pl.seqFrom))
			}
			ipv4Checksum(p)
		}
		seq++
	}
	if err := t.s.Send(b); err != nil {
		if errors.Is(err, daqiri.ErrNotReady) {
			// Not connected yet (TCP client, UDP server without a peer): the burst is
			// still ours, and its sequence numbers are used again.
			b.Free()
			t.notBefore = time.Now().Add(10 * time.Millisecond)
			return false
		}
		if errors.Is(err, daqiri.ErrInvalidParameter) {
			b.Free()
		}
		t.seq = seq
		t.errs.add(err)
		return true // as before: the next burst is tried at once
	}
	t.seq = seq
	c.packets.Add(uint64(k))
	c.bytes.Add(uint64(k * pl.payload))
	return true
}

// rxLoop is one RX queue a receiver serves.
type rxLoop struct{ port, queue int }

// receiver takes bursts from its queues in turn and frees them, counting packets and bytes.
// An aggregate of a reorder plan counts as the packets that went into it.
func receiver(s *daqiri.Session, qs []rxLoop, c *counter, stop <-chan struct{}) {
	var wait idler
	for {
		got := false
		for _, q := range qs {
			b, err := s.RxBurst(q.port, q.queue)
			if err != nil {
				continue
			}
			got = true
			if info, err := b.ReorderInfo(); err == nil {
				c.batches.Add(1)
				c.sources.Add(uint64(info.SourcePackets))
				c.missing.Add(uint64(info.Missing))
				if info.Missing == 0 {
					c.complete.Add(1)
				} else {
					c.timedOut.Add(1)
				}
				c.packets.Add(uint64(info.SourcePackets))
				c.bytes.Add(uint64(info.SourcePackets * info.PayloadLen))
				b.Free()
				continue
			}
			c.packets.Add(uint64(b.Len()))
			c.bytes.Add(uint64(b.TotalBytes()))
			b.Free()
		}
		if got {
			wait.busy()
			continue
		}
		select {
		case <-stop:
			return
		default:
		}
		wait.idle()
	}
}

// idler paces a polling loop that found nothing to do. The loop's goroutine is locked to its
// thread (pinned to a core), so it keeps polling for spinFor, then sleeps between polls so
// that an idle receiver or a blocked sender leaves the CPU to the engine's workers on a small
// machine. It never yields with runtime.Gosched: for a goroutine locked to its thread that
// hands the thread's P to another thread and back, several futex calls each time (they were
// most of this process's system calls while streaming, which matters where system calls are
// expensive, as under gVisor).
type idler struct {
	n     int
	since time.Time
}

const spinFor = 50 * time.Microsecond

// busy says the loop found work.
func (i *idler) busy() { i.n = 0 }

// idle says the loop found nothing to do this time.
func (i *idler) idle() {
	if i.n == 0 {
		i.since = time.Now()
	}
	i.n++
	if i.n%16 == 0 {
		if d := time.Since(i.since); d > spinFor {
			// The longer the loop has been idle, the longer it sleeps, up to 1 ms: a queue
			// that gets no traffic (an RSS queue no flow hashes to) costs a wake-up per
			// millisecond, not one per 20 µs, each of which hands the core's P between
			// threads (a goroutine locked to its thread parks with several futex calls).
			time.Sleep(min(max(20*time.Microsecond, d/8), time.Millisecond))
		}
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
		if len(p.Events) > 0 {
			fmt.Fprintf(w, "%-16s %-8s events: %s\n", p.Name, p.Engine, strings.TrimSuffix(strings.TrimPrefix(reasons(p.Events), "  ("), ")"))
		}
	}
	fmt.Fprintf(w, "\n%.2f s, payload %d B\n", r.Seconds, r.PayloadSize)
	fmt.Fprintf(w, "  sent      %14d packets  %8.2f Gb/s  %8.3f Mpps\n", r.TxPackets, r.TxGbps, r.TxMpps)
	fmt.Fprintf(w, "  received  %14d packets  %8.2f Gb/s  %8.3f Mpps\n", r.RxPackets, r.RxGbps, r.RxMpps)
	fmt.Fprintf(w, "  dropped   %14d packets%s\n", r.DroppedPackets, reasons(r.Drops))
	if r.mode == "both" {
		fmt.Fprintf(w, "  unaccounted %12d packets\n", r.Unaccounted)
	}
	if r.Reorder != nil {
		fmt.Fprintf(w, "  reorder   %14d batches (%d complete, %d delivered on timeout with %d slots missing) from %d packets\n",
			r.Reorder.Batches, r.Reorder.Complete, r.Reorder.TimedOut, r.Reorder.MissingSlots, r.Reorder.SourcePackets)
	}
	if r.SendErrors > 0 {
		fmt.Fprintf(w, "  send errors %12d\n", r.SendErrors)
		keys := make([]string, 0, len(r.SendErrorReasons))
		for k := range r.SendErrorReasons {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "    %d × %s\n", r.SendErrorReasons[k], k)
		}
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

// raiseProcs gives every goroutine the run locks to a thread a P of its own (the bench's
// loops, at most loops of them, and the engine's workers, engineThreads), on top of the Ps
// the process had, which the unlocked goroutines (a device model's ports) keep. A locked
// goroutine that parks hands its P to another thread and takes one back when it wakes (futex
// calls and a thread wake-up each time, slow under gVisor); with Ps to spare, the P it
// leaves goes idle and the unlocked goroutines do not wait for the locked ones' threads to
// hand Ps around (issue 31: the two-port model run's Ps ran only half the time, with
// goroutines runnable, before). Idle Ps cost nothing. A GOMAXPROCS the environment sets is
// left as it is; the returned function restores the old value.
func raiseProcs(cfg *config.Config, loops int) (restore func()) {
	if os.Getenv("GOMAXPROCS") != "" {
		return func() {}
	}
	old := runtime.GOMAXPROCS(0)
	runtime.GOMAXPROCS(old + loops + engineThreads(cfg))
	return func() { runtime.GOMAXPROCS(old) }
}

// engineThreads estimates the worker threads an engine runs for cfg: one per interface and
// distinct cpu_core of its RX queues, or one for an interface with TX queues only (the mlx5
// engine's rule; the others run no more).
func engineThreads(cfg *config.Config) int {
	n := 0
	for _, it := range cfg.Interfaces {
		cores := map[string]bool{}
		if it.RX != nil {
			for _, q := range it.RX.Queues {
				cores[q.CPUCore] = true
			}
		}
		switch {
		case len(cores) > 0:
			n += len(cores)
		case it.TX != nil && len(it.TX.Queues) > 0:
			n++
		}
	}
	return n
}

// pinTo locks the calling goroutine to its OS thread and pins it to core when one is given
// and allowed (upstream's bench sections name the cores of the application's threads).
func pinTo(core *int) {
	if core != nil {
		if _, err := osthread.LockAndPin(*core); err == nil {
			return
		}
	}
	runtime.LockOSThread()
}

// txQueueCore is the TX queue's own cpu_core when one is set. Engines without TX
// workers (socket, RoCE) do their sending in the caller's thread, so this is where the
// queue's core takes effect; it also keeps the kernel's send work off the core of the RX
// worker.
func txQueueCore(cfg *config.Config, port, queue int) *int {
	if tx := cfg.Interfaces[port].TX; tx != nil {
		for _, q := range tx.Queues {
			if c, ok := q.Core(); ok && q.ID == queue {
				return &c
			}
		}
	}
	return nil
}

// coreGroup is the queues one bench goroutine serves, and the core its thread is pinned to
// (nil: locked, not pinned).
type coreGroup[Q any] struct {
	core *int
	qs   []Q
}

// groupByCore puts the queues whose goroutines would be pinned to the same core into one
// group, in the order of qs; a queue without a core, or with one this process may not run
// on (its thread is not pinned), gets a group of its own. Threads pinned
// to one core share it anyway, and a goroutine locked to its thread hands its P to another
// thread and back whenever it parks (several futex calls, expensive under gVisor): the
// two-port model run spent about a fifth of its CPU on those hand-offs with a goroutine per
// queue. Socket streams keep a goroutine per queue: their sends are system calls in the
// sender's thread, and one that blocks must not hold up the core's other queues.
func groupByCore[Q any](cfg *config.Config, qs []Q, core func(Q) *int) []coreGroup[Q] {
	var gs []coreGroup[Q]
	at := map[int]int{}
	for _, q := range qs {
		c := core(q)
		if c == nil || !osthread.Allowed(*c) || cfg.StreamType == config.StreamSocket {
			gs = append(gs, coreGroup[Q]{core: c, qs: []Q{q}})
			continue
		}
		if i, ok := at[*c]; ok {
			gs[i].qs = append(gs[i].qs, q)
			continue
		}
		at[*c] = len(gs)
		gs = append(gs, coreGroup[Q]{core: c, qs: []Q{q}})
	}
	return gs
}
