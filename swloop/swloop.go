// Package swloop is the software loopback engine (`loopback: "sw"`, engine name loopback):
// every TX burst comes back as an RX burst on the same interface without a NIC and without a
// copy — the RX burst points at the very buffers the application filled.
//
// Upstream's software loopback serves one interface with one RX and one TX queue. Here every
// interface loops on its own, TX queue j (configuration order) feeding RX queue j, or the
// first RX queue when there are fewer RX queues. Bursts keep their packets and segments
// (header-data split included); received packets carry flow id 0 and the time they came back
// (CLOCK_REALTIME, read as the monotonic clock plus an offset measured against the wall clock
// at most a millisecond earlier: a step of the wall clock shows within that millisecond).
// Queues added or deleted at run time take part: TX queue j (among the live ones) feeds live RX
// queue j. pacing_mbps and SetPacketTxTime are honoured in software in the sending thread, as
// in engine xdp.
package swloop

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
)

// Engine loops the TX queues of its ports back to their RX queues.
type Engine struct {
	env   *engine.Env
	meta  *engine.MetaPool // RX bursts that point at TX buffers
	ports []*engine.Port   // by port id; nil for ports of other engines
	// pacers is nil when no queue paces (the usual loopback): Send's len(pacers) is then a
	// nil test, with no load of a map header that may not be in the core's cache.
	pacers map[*engine.TxQueue]*pacer
	clock  *clock // receive timestamps of bursts sent without send times or pacing
	closed atomic.Bool
}

// clockResync is how often the receive clock measures CLOCK_REALTIME against the monotonic
// clock again: how long a step of the wall clock (a PTP servo's or an administrator's) can go
// unseen in receive timestamps. At 64 packets a burst and 10 ns a packet that is one
// time.Now per 1,500 bursts.
const clockResync = time.Millisecond

type pacer struct {
	mbps    float64
	next    float64 // earliest send time of the next packet, ns since epoch
	lastEnd float64 // when the previous Send finished
}

// Open builds the loopback for env's ports.
func Open(ctx context.Context, env *engine.Env) (engine.Engine, error) {
	n := env.Config.RxMetaBuffers
	if n <= 0 {
		n = config.DefaultMetaBuffers
	}
	capacity := 64
	for _, p := range env.Ports {
		for _, q := range p.Tx {
			capacity = max(capacity, q.BatchSize())
		}
	}
	m, err := engine.NewMetaPool("loopback-rx", n, min(capacity, 1024), false)
	if err != nil {
		return nil, err
	}
	e := &Engine{env: env, meta: m, clock: newClock(clockResync, time.Now)}
	for _, p := range env.Ports {
		if p.ID >= len(e.ports) {
			e.ports = append(e.ports, make([]*engine.Port, p.ID+1-len(e.ports))...)
		}
		e.ports[p.ID] = p
		for _, q := range p.Tx {
			if q.Config.PacingMbps > 0 {
				if e.pacers == nil {
					e.pacers = map[*engine.TxQueue]*pacer{}
				}
				e.pacers[q] = &pacer{mbps: float64(q.Config.PacingMbps)}
			}
		}
		if len(p.Tx) > 0 && len(p.Rx) == 0 {
			env.Log.Warn("loopback interface has TX queues but no RX queue: sent packets are counted as dropped", "interface", p.Name)
		}
	}
	return e, nil
}

// target is the RX queue a TX queue loops to: the live RX queue at the TX queue's position
// among the live TX queues, or the first live RX queue (nil when none). It also finds the TX
// queue by id among the live ones (nil when none). It walks the queue set in place: Send runs
// it for every burst.
func target(p *engine.Port, id int) (*engine.TxQueue, *engine.RxQueue) {
	set := p.Queues()
	var tq *engine.TxQueue
	pos := 0
	for _, q := range set.Tx {
		if q.Deleted() {
			continue
		}
		if q.ID == id {
			tq = q
			break
		}
		pos++
	}
	if tq == nil {
		return nil, nil
	}
	var first *engine.RxQueue
	k := 0
	for _, q := range set.Rx {
		if q.Deleted() {
			continue
		}
		if k == pos {
			return tq, q
		}
		if first == nil {
			first = q
		}
		k++
	}
	return tq, first
}

// AddRxQueue adds a loopback target: the session has published it, and target finds it.
func (e *Engine) AddRxQueue(q *engine.RxQueue) error { return nil }

// DeleteRxQueue: deliveries go through the queue's gate, which the session has shut.
func (e *Engine) DeleteRxQueue(q *engine.RxQueue) error { return nil }

// AddTxQueue accepts a TX queue without pacing (pacers are set up at Open).
func (e *Engine) AddTxQueue(q *engine.TxQueue) error {
	if q.Config.PacingMbps > 0 {
		return fmt.Errorf("loopback: pacing_mbps on a queue added at run time: %w", engine.ErrNotSupported)
	}
	return nil
}

// DeleteTxQueue: Send runs inside the queue's gate, so nothing of the queue is in flight.
func (e *Engine) DeleteTxQueue(q *engine.TxQueue) error { return nil }

var _ engine.QueueManager = (*Engine)(nil)

// waitUntilNs waits until CLOCK_REALTIME reaches ns (a SetPacketTxTime send time). It
// compares integers: as a float64, a time in nanoseconds since 1970 lies on a 256 ns grid,
// and a packet released on that grid could come back up to 256 ns before its time.
func waitUntilNs(ns int64) {
	for {
		d := ns - time.Now().UnixNano()
		if d <= 0 {
			return
		}
		if d > 200e3 {
			time.Sleep(time.Duration(d - 100e3))
		}
	}
}

// waitUntil waits until CLOCK_REALTIME reaches ns, a pacing schedule's float time (its
// 256 ns grid is far finer than pacing needs).
func waitUntil(ns float64) {
	for {
		d := ns - float64(time.Now().UnixNano())
		if d <= 0 {
			return
		}
		if d > 200e3 {
			time.Sleep(time.Duration(d - 100e3))
		}
	}
}

// Send hands the burst's packets to the looped RX queue; ownership of the buffers passes to
// the RX burst, the TX burst's metadata is freed.
func (e *Engine) Send(b *engine.Burst) error {
	if e.closed.Load() {
		return fmt.Errorf("loopback closed: %w", engine.ErrNotReady)
	}
	var p *engine.Port
	if id := b.Port(); id >= 0 && id < len(e.ports) {
		p = e.ports[id]
	}
	if p == nil {
		return fmt.Errorf("port %d is not a loopback port: %w", b.Port(), engine.ErrInvalidParameter)
	}
	tq, rq := target(p, b.Queue())
	if tq == nil {
		return fmt.Errorf("port %d has no tx queue %d: %w", b.Port(), b.Queue(), engine.ErrInvalidParameter)
	}
	n := b.Len()
	if rq == nil {
		tq.Stats.Drop(engine.DropNotConnected, n)
		b.Free()
		return nil
	}
	var segRegions [config.MaxSegments]*engine.Region
	rs := segRegions[:b.NumSegments()]
	for s := range rs {
		rs[s] = b.SegmentRegion(s)
	}
	rb, err := e.meta.Get(p.ID, rq.ID, rs, p.Raw, n)
	if err != nil {
		rq.Stats.Drop(engine.DropNoBurstBuffers, n)
		tq.Stats.Add(n, b.TotalBytes())
		b.Free()
		return nil
	}
	var bytes int
	var pc *pacer
	if len(e.pacers) != 0 { // no map lookup per burst for the usual unpaced loopback
		pc = e.pacers[tq]
	}
	if pc != nil || b.AnyTimestamp() {
		bytes = e.sendTimed(b, rb, pc)
	} else {
		// Nothing to wait for: the whole burst comes back at once, at one time. The RX
		// timestamp is when the packets came back, CLOCK_REALTIME nanoseconds. rb takes
		// b's packet arrays (b gets rb's empty ones) instead of copying them.
		bytes = rb.TakePackets(b, e.clock.Now())
	}
	tq.Stats.Add(n, bytes)
	b.FreeMeta() // the packets now belong to rb
	rq.DeliverCounted(rb, bytes)
	return nil
}

// sendTimed moves b's packets to rb one by one, each after its send time (SetPacketTxTime)
// and its turn under the queue's pacing (pc, nil without), and returns their bytes.
func (e *Engine) sendTimed(b, rb *engine.Burst, pc *pacer) int {
	if pc != nil {
		// A sender that was away for over a millisecond restarts the schedule (idle time
		// earns no credit); shorter gaps and any lateness inside a burst are caught up.
		now := float64(time.Now().UnixNano())
		if now-pc.lastEnd > 1e6 && pc.next < now {
			pc.next = now
		}
		defer func() { pc.lastEnd = float64(time.Now().UnixNano()) }()
	}
	var offs [config.MaxSegments]uint64
	var lens [config.MaxSegments]uint32
	// The RX timestamp is when the packet came back: CLOCK_REALTIME nanoseconds, read again
	// only after a scheduled wait.
	rxAt := time.Now().UnixNano()
	for i := 0; i < b.Len(); i++ {
		if at, err := b.RxTimestamp(i); err == nil {
			waitUntilNs(at)
			rxAt = time.Now().UnixNano()
		}
		if pc != nil {
			waitUntil(pc.next)
			pc.next += float64(b.PacketLen(i)) * 8 * 1e3 / pc.mbps
			rxAt = time.Now().UnixNano()
		}
		for s := 0; s < b.NumSegments(); s++ {
			offs[s] = b.SegmentOffset(s, i)
			lens[s] = uint32(b.SegmentLen(s, i))
		}
		rb.AppendSegments(offs[:b.NumSegments()], lens[:b.NumSegments()], 0, rxAt)
	}
	return b.TotalBytes()
}

// Close stops accepting bursts. RX bursts still queued are freed by the session.
func (e *Engine) Close() error {
	e.closed.Store(true)
	return nil
}
