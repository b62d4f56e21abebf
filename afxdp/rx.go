package afxdp

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/flow"
	"github.com/daqiri-go/daqiri/flow/xdp"
	"github.com/daqiri-go/daqiri/xsk"
)

// rxq is one configured RX queue.
type rxq struct {
	pt      *port
	q       *engine.RxQueue
	pos     int
	region  *engine.Region
	direct  bool
	deleted atomic.Bool // deleted at run time: frames steered here are dropped (closed)
	socks   []*sock     // sockets this queue polls (its worker, or its caller in direct mode)
	pend    []pending   // partial bursts being built by this queue's poller, by target position
	busy    atomic.Bool // direct mode: a caller is polling
}

// now is the time partial bursts are stamped and flushed with: the zero time when no queue of
// the port has a timeout (every partial burst then waits until the rings run dry), which
// spares pollers a clock read per poll.
func (pt *port) now() time.Time {
	if !pt.timeouts {
		return time.Time{}
	}
	return time.Now()
}

// pending is a partial burst for one target queue and when its first packet came.
type pending struct {
	b     *engine.Burst
	first time.Time
}

// batch is how many packets a burst to this queue holds before it is handed over.
func (r *rxq) batch() int {
	if r.direct {
		return directMaxPkts
	}
	return r.q.BatchSize()
}

// timeout is how long a partial burst to this queue may wait (0: until the rings run dry).
func (r *rxq) timeout() time.Duration {
	if r.direct {
		return 0
	}
	return r.q.Timeout()
}

func (r *rxq) drop(reason engine.DropReason, n int) { r.q.Stats.Drop(reason, n) }

// receive takes up to max frames off socket s and sorts them into the poller's partial bursts;
// hold is the queue whose burst must not be handed over when full (a direct poller's own).
func (r *rxq) receive(s *sock, max int, now time.Time, hold *rxq) int {
	if n := len(r.pt.rxqs()); len(r.pend) < n {
		// Queues added at run time: this poller's partial bursts grow with them.
		r.pend = append(r.pend, make([]pending, n-len(r.pend))...)
	}
	n := s.x.Receive(s.descs[:min(max, len(s.descs))])
	if n == 0 {
		// The fill ring was topped up with the last batch; only a region that ran short
		// then (the application held its buffers) needs another try.
		if s.short {
			s.refill()
		}
		if s.x.FillNeedsWakeup() {
			s.x.WakeupRx()
		}
		return 0
	}
	// Top the fill ring up before sorting the frames: the kernel has consumed at least n
	// entries, and buffers the application freed since the last batch are waiting.
	s.refill()
	descs := s.descs[:n]
	// Touch every frame's metadata first: the kernel wrote it from another core, and loads
	// that do not depend on each other let those cache misses overlap instead of taking one
	// at a time inside frame.
	buf := s.region.Bytes()
	var t byte
	for _, d := range descs {
		if off := xsk.FrameAddr(d.Addr); off >= xdp.MetaLen && off <= uint64(len(buf)) {
			t ^= buf[off-1]
		}
	}
	s.touched = t
	// One receive time for the batch: CLOCK_REALTIME nanoseconds when the descriptors were
	// taken off the RX ring (a software timestamp; veth and copy mode offer no NIC time).
	ts := time.Now().UnixNano()
	if !r.pt.jumbo {
		for _, d := range descs {
			r.frame(s, d, now, ts, hold)
		}
		return n
	}
	// Multi-buffer: a frame is a run of descriptors, each but the last flagged PktContd; a
	// run cut by the end of the batch waits in s.partial for its rest.
	for i := 0; i < len(descs); {
		j := i
		for j < len(descs) && descs[j].Options&xsk.PktContd != 0 {
			j++
		}
		if j == len(descs) {
			s.partial = append(s.partial, descs[i:]...)
			break
		}
		if len(s.partial) == 0 && j == i {
			r.frame(s, descs[i], now, ts, hold)
		} else {
			s.partial = append(s.partial, descs[i:j+1]...)
			r.frameFrags(s, s.partial, now, ts, hold)
			s.partial = s.partial[:0]
		}
		i = j + 1
	}
	return n
}

// frameFrags gathers a multi-buffer frame (descriptors ds, in the socket's staging UMEM)
// into one buffer of its target queue and hands it on as frame does.
func (r *rxq) frameFrags(s *sock, ds []xsk.Desc, now time.Time, ts int64, hold *rxq) {
	pt := r.pt
	buf := s.region.Bytes()
	total, bad := 0, false
	for _, d := range ds {
		off := xsk.FrameAddr(d.Addr)
		if off+uint64(d.Len) > uint64(len(buf)) {
			bad = true
		}
		total += int(d.Len)
	}
	putAll := func() {
		for _, d := range ds {
			idx := s.index(xsk.FrameAddr(d.Addr))
			s.given[idx] = false
			s.region.Put(idx)
		}
	}
	off0 := xsk.FrameAddr(ds[0].Addr)
	if bad || off0 < xdp.MetaLen || ds[0].Len == 0 {
		putAll()
		s.owner.drop(engine.DropMalformed, 1)
		return
	}
	m, ok := xdp.ParseMeta(buf[off0-xdp.MetaLen : off0])
	if !ok {
		// Classify on the first buffer, which holds the headers the rules look at.
		v := pt.table.Load().Classify(buf[off0 : off0+uint64(ds[0].Len)])
		if v.Action != flow.ActionSteer {
			putAll()
			s.owner.drop(engine.DropFiltered, 1)
			return
		}
		m = xdp.Meta{FlowID: v.FlowID, Queue: v.Queue, VLANPop: v.VLANPop, Decap: v.Decap}
	}
	rxs := pt.rxqs()
	if m.Queue >= len(rxs) || m.Queue >= len(r.pend) {
		putAll()
		s.owner.drop(engine.DropMalformed, 1)
		return
	}
	tq := rxs[m.Queue]
	if tq.deleted.Load() {
		putAll()
		tq.drop(engine.DropClosed, 1)
		return
	}
	j, ok := tq.region.Get()
	if !ok {
		putAll()
		tq.drop(engine.DropNoPacketBuffers, 1)
		return
	}
	dst := tq.region.Buf(j)
	if total > len(dst) {
		tq.region.Put(j)
		putAll()
		tq.drop(engine.DropTruncated, 1)
		return
	}
	at := 0
	for _, d := range ds {
		o := xsk.FrameAddr(d.Addr)
		at += copy(dst[at:], buf[o:o+uint64(d.Len)])
	}
	putAll()
	st, n := 0, total
	switch {
	case m.Decap != flow.DecapNone:
		a, l, ok := flow.Decapsulate(dst[:total], m.Decap)
		if !ok {
			tq.region.Put(j)
			tq.drop(engine.DropMalformed, 1)
			return
		}
		st, n = a, l
	case m.VLANPop:
		if sh, ok := flow.PopVLAN(dst[:total]); ok {
			st, n = sh, total-sh
		}
	}
	r.appendTo(tq, uint64(j)*uint64(tq.region.BufSize)+uint64(st), n, m.FlowID, now, ts, hold)
}

// frame hands one received frame to its target queue's partial burst.
func (r *rxq) frame(s *sock, d xsk.Desc, now time.Time, ts int64, hold *rxq) {
	pt := r.pt
	off := xsk.FrameAddr(d.Addr)
	idx := s.index(off)
	s.given[idx] = false
	n := int(d.Len)
	buf := s.region.Bytes()
	if off < xdp.MetaLen || off+uint64(n) > uint64(len(buf)) || n == 0 {
		s.region.Put(idx)
		s.owner.drop(engine.DropMalformed, 1)
		return
	}
	m, ok := xdp.ParseMeta(buf[off-xdp.MetaLen : off])
	if !ok {
		// The driver gave no metadata room: classify here with the same rules.
		v := pt.table.Load().Classify(buf[off : off+uint64(n)])
		if v.Action != flow.ActionSteer {
			s.region.Put(idx)
			s.owner.drop(engine.DropFiltered, 1)
			return
		}
		m = xdp.Meta{FlowID: v.FlowID, Queue: v.Queue, VLANPop: v.VLANPop, Decap: v.Decap}
	}
	rxs := pt.rxqs()
	if m.Queue >= len(rxs) || m.Queue >= len(r.pend) {
		s.region.Put(idx)
		s.owner.drop(engine.DropMalformed, 1)
		return
	}
	tq := rxs[m.Queue]
	if tq.deleted.Load() {
		// Steered to a queue deleted at run time (its flows may still point at it).
		s.region.Put(idx)
		tq.drop(engine.DropClosed, 1)
		return
	}
	switch {
	case m.Decap != flow.DecapNone:
		st, l, ok := flow.Decapsulate(buf[off:off+uint64(n)], m.Decap)
		if !ok {
			s.region.Put(idx)
			tq.drop(engine.DropMalformed, 1)
			return
		}
		off += uint64(st)
		n = l
	case m.VLANPop:
		if sh, ok := flow.PopVLAN(buf[off : off+uint64(n)]); ok {
			off += uint64(sh)
			n -= sh
		}
	}
	if tq.region != s.region {
		// Another region: copy into one of its buffers.
		j, ok := tq.region.Get()
		if !ok {
			s.region.Put(idx)
			tq.drop(engine.DropNoPacketBuffers, 1)
			return
		}
		dst := tq.region.Buf(j)
		if n > len(dst) {
			tq.region.Put(j)
			s.region.Put(idx)
			tq.drop(engine.DropTruncated, 1)
			return
		}
		copy(dst, buf[off:off+uint64(n)])
		s.region.Put(idx)
		off = uint64(j) * uint64(tq.region.BufSize)
	}
	r.appendTo(tq, off, n, m.FlowID, now, ts, hold)
}

// appendTo adds the packet at offset off (n bytes) of tq's region to the poller's partial
// burst for tq, handing the burst over when full.
func (r *rxq) appendTo(tq *rxq, off uint64, n int, flowID uint32, now time.Time, ts int64, hold *rxq) {
	p := &r.pend[tq.pos]
	if p.b == nil {
		b, err := tq.q.NewBurst()
		if err != nil {
			tq.region.Release(off)
			tq.drop(engine.DropNoBurstBuffers, 1)
			return
		}
		p.b, p.first = b, now
	}
	p.b.Append(off, uint32(n), flowID, ts)
	if tq != hold && p.b.Len() >= tq.batch() {
		tq.q.Deliver(p.b)
		p.b = nil
	}
}

// flush hands over partial bursts whose time is up; idle means the rings ran dry. It returns
// how long the oldest remaining one may still wait (0 when none waits).
func (r *rxq) flush(now time.Time, idle bool, hold *rxq) time.Duration {
	var wait time.Duration
	rxs := r.pt.rxqs()
	for i := range r.pend {
		p := &r.pend[i]
		if p.b == nil || rxs[i] == hold {
			continue
		}
		tq := rxs[i]
		to := tq.timeout()
		left := to - now.Sub(p.first)
		if (to == 0 && idle) || (to > 0 && left <= 0) {
			tq.q.Deliver(p.b)
			p.b = nil
			continue
		}
		if to > 0 && (wait == 0 || left < wait) {
			wait = left
		}
	}
	return wait
}

// flushAll hands over every partial burst (at Close: they are freed by the session's drain).
func (r *rxq) flushAll() {
	rxs := r.pt.rxqs()
	for i := range r.pend {
		if p := &r.pend[i]; p.b != nil {
			rxs[i].q.Deliver(p.b)
			p.b = nil
		}
	}
}

// run is the worker of an indirect RX queue.
func (r *rxq) run() {
	w := r.pt.e.w
	const maxWait = 2 * time.Millisecond
	for !w.Stopped() {
		now := r.pt.now()
		got := 0
		for _, s := range r.socks {
			got += r.receive(s, rxBatch, now, nil)
		}
		wait := r.flush(now, got == 0, nil)
		if got > 0 {
			continue
		}
		if wait <= 0 || wait > maxWait {
			wait = maxWait
		}
		xsk.WaitAny(r.sockets(), wait)
	}
}

func (r *rxq) sockets() []*xsk.Socket {
	xs := make([]*xsk.Socket, 0, len(r.socks))
	for _, s := range r.socks {
		xs = append(xs, s.x)
	}
	return xs
}

// poll is RxBurst of a direct queue: the caller's thread reads the queue's sockets.
func (r *rxq) poll() (*engine.Burst, error) {
	if b, ok := r.q.Next(); ok {
		return b, nil // forwarded to this queue by another queue's poller
	}
	if !r.busy.CompareAndSwap(false, true) {
		return nil, fmt.Errorf("another thread is polling direct queue %d: %w", r.q.ID, engine.ErrNotReady)
	}
	defer r.busy.Store(false)
	if r.pt.e.closed.Load() {
		return nil, engine.ErrNotReady
	}
	now := r.pt.now()
	for _, s := range r.socks {
		have := 0
		if r.pend != nil && r.pend[r.pos].b != nil {
			have = r.pend[r.pos].b.Len()
		}
		if have >= directMaxPkts {
			break
		}
		r.receive(s, directMaxPkts-have, now, r)
	}
	r.flush(now, true, r)
	if r.pend == nil {
		return nil, engine.ErrNotReady
	}
	p := &r.pend[r.pos]
	b := p.b
	p.b = nil
	if b == nil {
		return nil, engine.ErrNotReady
	}
	r.q.Stats.Add(b.Len(), b.TotalBytes())
	return b, nil
}
