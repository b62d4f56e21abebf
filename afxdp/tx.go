package afxdp

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/flow"
	"github.com/daqiri-go/daqiri/internal/ring"
	"github.com/daqiri-go/daqiri/xsk"
)

// pacerIdle is how long a sender must have had nothing to send for the pacer to restart its
// schedule from now (idle time earns no credit, as upstream); while packets are waiting, any
// lateness (an oversleep, a descheduled thread) is caught up, so the average rate holds.
const pacerIdle = 1e6 // ns

// txq is one configured TX queue.
type txq struct {
	pt     *port
	q      *engine.TxQueue
	pos    int
	region *engine.Region
	direct bool
	s      *sock
	copyTx bool // frames are copied into the socket's UMEM (it is another queue's region)
	// stopped ends this queue's worker (deleted at run time); done closes when it has.
	stopped atomic.Bool
	done    chan struct{}

	ring  *ring.Ring[*engine.Burst] // bursts for the worker (indirect)
	mu    sync.Mutex                // serialises senders on the socket's TX rings
	descs []xsk.Desc
	comp  []uint64
	nd    int

	mbps    float64 // pacing_mbps; 0 = line rate
	next    float64 // pacer: earliest send time of the next packet, ns since epoch
	lastEnd float64 // when the previous burst was done, ns since epoch
	idle    bool    // the worker found nothing to send since then
}

func (t *txq) init(e *Engine) {
	t.descs = make([]xsk.Desc, 64)
	t.comp = make([]uint64, 256)
	t.mbps = float64(t.q.Config.PacingMbps)
	t.done = make(chan struct{})
	if !t.direct {
		t.ring, _ = ring.New[*engine.Burst](sendRingSize, ring.MPSC)
	}
	if t.mbps > 0 {
		e.env.Log.Info("software pacer", "interface", t.pt.p.Name, "tx_queue", t.q.ID, "pacing_mbps", t.q.Config.PacingMbps)
	}
}

// Send transmits a TX burst: directly in the caller for direct queues, through the queue's
// worker otherwise. A full worker ring is ErrNotReady (the caller keeps the burst and may
// retry), so a fast sender is slowed down rather than made to drop.
func (e *Engine) Send(b *engine.Burst) error {
	if e.closed.Load() {
		return fmt.Errorf("engine closed: %w", engine.ErrNotReady)
	}
	pt := e.byID[b.Port()]
	if pt == nil {
		return fmt.Errorf("port %d is not an xdp port: %w", b.Port(), engine.ErrInvalidParameter)
	}
	var t *txq
	for _, x := range pt.txqs() {
		if x.q.ID == b.Queue() && !x.stopped.Load() {
			t = x
		}
	}
	if t == nil {
		return fmt.Errorf("port %d has no tx queue %d: %w", b.Port(), b.Queue(), engine.ErrInvalidParameter)
	}
	if b.NumSegments() != 1 {
		return fmt.Errorf("engine xdp sends one-segment packets: %w", engine.ErrInvalidParameter)
	}
	if t.direct {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.sendBurst(b)
		t.kick(true)
		return nil
	}
	if !t.ring.Enqueue(b) {
		return fmt.Errorf("tx queue %d of %s: %d bursts waiting: %w", t.q.ID, pt.p.Name, sendRingSize, engine.ErrNotReady)
	}
	return nil
}

// TxAvailable reports whether a burst of n packets can be taken and queued now.
func (e *Engine) TxAvailable(q *engine.TxQueue, n int) bool {
	if !q.Available(n) {
		return false
	}
	pt := e.byID[q.Port.ID]
	if pt == nil {
		return false
	}
	for _, t := range pt.txqs() {
		if t.q == q && t.ring != nil {
			return t.ring.Len() < sendRingSize
		}
	}
	return true
}

// run is the worker of an indirect TX queue.
func (t *txq) run() {
	defer close(t.done)
	w := t.pt.e.w
	idle := 0
	for !w.Stopped() && !t.stopped.Load() {
		b, ok := t.ring.Dequeue()
		if !ok {
			t.mu.Lock()
			t.kick(false)
			t.reap()
			t.mu.Unlock()
			t.idle = true
			if idle++; idle > 64 {
				time.Sleep(50 * time.Microsecond)
			}
			continue
		}
		idle = 0
		t.mu.Lock()
		t.sendBurst(b)
		// Copy mode transmits only inside sendto, so every burst is pushed out at once.
		t.kick(true)
		t.reap()
		t.mu.Unlock()
	}
}

// wait holds the sender until ns (wall-clock nanoseconds), pushing out what is queued first:
// sleeping for long waits, spinning for the last stretch so the pacer is accurate.
func (t *txq) wait(ns int64) {
	for {
		// Integers: a float64 time in nanoseconds since 1970 lies on a 256 ns grid, and a
		// SetPacketTxTime packet could leave up to 256 ns before its time.
		d := ns - time.Now().UnixNano()
		if d <= 0 {
			return
		}
		t.submit()
		t.kick(false)
		t.reap()
		if d > 200e3 {
			time.Sleep(time.Duration(d - 100e3))
		} else if t.pt.e.w.Stopped() {
			return
		}
	}
}

// sendBurst puts a burst's packets on the TX ring, applying TX flows, per-packet send times
// and the pacer; it consumes the burst.
func (t *txq) sendBurst(b *engine.Burst) {
	pt := t.pt
	sent, bytes := 0, 0
	s := t.s
	if t.mbps > 0 {
		now := float64(time.Now().UnixNano())
		if (t.idle || t.direct) && now-t.lastEnd > pacerIdle && t.next < now {
			t.next = now
		}
		t.idle = false
		defer func() { t.lastEnd = float64(time.Now().UnixNano()) }()
	}
	bs := uint64(s.region.BufSize)
	for i := 0; i < b.Len(); i++ {
		buf := b.SegmentBuffer(0, i)
		n := b.SegmentLen(0, i)
		if buf == nil || n == 0 {
			b.FreePacket(i)
			t.q.Stats.Drop(engine.DropMalformed, 1)
			continue
		}
		if rules := pt.txRules; len(rules) > 0 {
			if r := flow.MatchTX(rules, buf[:n]); r != nil {
				m, err := r.ApplyTX(buf, n)
				if err != nil {
					b.FreePacket(i)
					t.q.Stats.Drop(engine.DropMalformed, 1)
					continue
				}
				n = m
			}
		}
		// set_packet_tx_time: the burst's per-packet timestamp slot holds the send time.
		if at, err := b.RxTimestamp(i); err == nil {
			t.wait(at)
		}
		if t.mbps > 0 {
			t.wait(int64(t.next))
			t.next += float64(n) * 8 * 1e3 / t.mbps
		}
		if t.copyTx && n > s.region.BufSize {
			// Multi-buffer: the frame goes out as a chain of chunks, each but the last
			// flagged PktContd (the socket is bound with XDP_USE_SG).
			if !t.sendChain(buf[:n]) {
				b.FreePacket(i)
				t.q.Stats.Drop(engine.DropNoPacketBuffers, 1)
				continue
			}
			b.FreePacket(i)
			sent++
			bytes += n
			continue
		}
		var addr uint64
		if t.copyTx {
			j, ok := s.region.Get()
			for tries := 0; !ok && tries < 1000; tries++ {
				t.submit()
				t.kick(false)
				t.reap()
				j, ok = s.region.Get()
				if !ok {
					time.Sleep(10 * time.Microsecond)
				}
			}
			if !ok || n > s.region.BufSize {
				b.FreePacket(i)
				t.q.Stats.Drop(engine.DropNoPacketBuffers, 1)
				continue
			}
			copy(s.region.Buf(j), buf[:n])
			b.FreePacket(i)
			addr = uint64(j) * bs
		} else {
			addr = b.SegmentOffset(0, i)
		}
		s.given[addr/bs] = true
		t.descs[t.nd] = xsk.Desc{Addr: addr, Len: uint32(n)}
		t.nd++
		sent++
		bytes += n
		if t.nd == len(t.descs) {
			t.submit()
		}
	}
	t.submit()
	// Packet buffers now belong to the kernel until their completions come back.
	b.FreeMeta()
	if sent > 0 {
		t.q.Stats.Add(sent, bytes)
	}
}

// sendChain copies a frame larger than a chunk into as many chunks as it needs and queues
// their chained descriptors; false when the UMEM has no free chunks (nothing queued).
func (t *txq) sendChain(f []byte) bool {
	s := t.s
	bs := s.region.BufSize
	k := (len(f) + bs - 1) / bs
	if k > len(t.descs) {
		return false
	}
	if t.nd+k > len(t.descs) {
		t.submit() // a chain never straddles two submits
	}
	idx := make([]uint32, 0, 8)
	for len(idx) < k {
		j, ok := s.region.Get()
		for tries := 0; !ok && tries < 1000; tries++ {
			t.submit()
			t.kick(false)
			t.reap()
			if j, ok = s.region.Get(); !ok {
				time.Sleep(10 * time.Microsecond)
			}
		}
		if !ok {
			for _, x := range idx {
				s.region.Put(x)
			}
			return false
		}
		idx = append(idx, j)
	}
	for c, j := range idx {
		part := f[c*bs : min(len(f), (c+1)*bs)]
		copy(s.region.Buf(j), part)
		s.given[j] = true
		d := xsk.Desc{Addr: uint64(j) * uint64(bs), Len: uint32(len(part))}
		if c < k-1 {
			d.Options = xsk.PktContd
		}
		t.descs[t.nd] = d
		t.nd++
	}
	if t.nd == len(t.descs) {
		t.submit()
	}
	return true
}

// submit moves the queued descriptors onto the TX ring, making room as needed.
func (t *txq) submit() {
	for done, tries := 0, 0; done < t.nd; tries++ {
		k := t.s.x.Transmit(t.descs[done:t.nd])
		done += k
		if k > 0 {
			tries = 0
		}
		if done < t.nd {
			t.kick(true)
			t.reap()
			if tries > 100000 || t.pt.e.closed.Load() && tries > 1000 {
				// The kernel stopped consuming: count the rest as failed and give the
				// buffers back.
				for _, d := range t.descs[done:t.nd] {
					t.release(d.Addr)
				}
				t.q.Stats.Drop(engine.DropSendFailure, t.nd-done)
				break
			}
			if tries > 10 {
				runtime.Gosched()
			}
		}
	}
	t.nd = 0
}

// kick asks the kernel to transmit. Copy mode transmits a bounded batch per call, so with
// all set it keeps kicking while frames are outstanding.
func (t *txq) kick(all bool) {
	x := t.s.x
	if x.TxOutstanding() == 0 {
		return
	}
	if x.ZeroCopy() && !x.TxNeedsWakeup() {
		return
	}
	for i := 0; i < 64; i++ {
		if err := x.Kick(); err != nil {
			return
		}
		if !all || x.TxOutstanding() == 0 {
			return
		}
	}
}

func (t *txq) release(addr uint64) {
	bs := uint64(t.s.region.BufSize)
	idx := uint32(addr / bs)
	t.s.given[idx] = false
	t.s.region.Put(idx)
}

// reap returns the buffers of completed frames to their region.
func (t *txq) reap() {
	for {
		n := t.s.x.Complete(t.comp)
		for _, a := range t.comp[:n] {
			t.release(a)
		}
		if n < len(t.comp) {
			return
		}
	}
}

// shutdown drops what waits in the ring and lets the kernel finish what it has (bounded).
func (t *txq) shutdown() {
	if t.s == nil || t.s.x == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ring != nil {
		for {
			b, ok := t.ring.Dequeue()
			if !ok {
				break
			}
			t.q.Stats.Drop(engine.DropClosed, b.Len())
			b.Free()
		}
	}
	deadline := time.Now().Add(200 * time.Millisecond)
	for t.s.x.TxOutstanding() > 0 && time.Now().Before(deadline) {
		t.kick(true)
		t.reap()
		time.Sleep(100 * time.Microsecond)
	}
	t.reap()
}
