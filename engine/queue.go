package engine

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/internal/ring"
)

// Port is one configured interface as an engine sees it.
type Port struct {
	ID     int               // port id: the interface's index in the configuration
	Name   string            // interface name
	Config *config.Interface // its configuration
	Engine string            // resolved engine name (config.Engine*)
	Raw    bool              // raw Ethernet stream (header helpers write L2-L4 headers)
	Rx     []*RxQueue
	Tx     []*TxQueue
	// Events counts what happens to the port outside its queues: connections refused or
	// closed for a protocol error, frames handed to the kernel.
	Events PortEvents

	set atomic.Pointer[QueueSet] // queues after a run-time change (nil: Rx and Tx)
}

// Path is the port's key path in the configuration, for errors.
func (p *Port) Path() string { return fmt.Sprintf("interfaces[%d]", p.ID) }

// RxQueueByID finds a receive queue by its configured id.
func (p *Port) RxQueueByID(id int) *RxQueue {
	for _, q := range p.Rx {
		if q.ID == id {
			return q
		}
	}
	return nil
}

// TxQueueByID finds a transmit queue by its configured id.
func (p *Port) TxQueueByID(id int) *TxQueue {
	for _, q := range p.Tx {
		if q.ID == id {
			return q
		}
	}
	return nil
}

// RxQueue is a receive queue: the engine fills bursts and delivers them through a bounded
// ring; the application takes them with RxBurst.
type RxQueue struct {
	Port    *Port
	ID      int
	Index   int // position in the configuration's rx.queues
	Config  *config.Queue
	Regions []*Region // one per segment
	Stats   Counters

	meta *MetaPool
	ring *ring.Ring[*Burst]
	gate gate
	succ atomic.Pointer[RxQueue] // after deletion: the queue that replaced it (Forward)

	// Poll, set by engines for direct-mode queues, is run by RxBurst in the caller's thread.
	Poll func() (*Burst, error)

	// Intercept, when set by a service before the engine starts (reorder), receives every
	// burst the engine delivers instead of the ring; the service hands its own output on with
	// DeliverDirect. It runs in the engine's worker thread.
	Intercept func(b *Burst)
}

// NewRxQueue wires a receive queue to its metadata pool; the ring holds up to ringSize bursts.
//
// The ring takes several consumers: nothing stops an application from polling one queue from
// two goroutines (RxBurst, RxBurstAny, RxBurstPort), and with a single-consumer ring two
// pollers could both take the same burst. It costs a compare-and-swap per burst taken.
func NewRxQueue(p *Port, index int, qc *config.Queue, regions []*Region, meta *MetaPool, ringSize int) (*RxQueue, error) {
	r, err := ring.New[*Burst](ringSize, ring.MPMC)
	if err != nil {
		return nil, err
	}
	return &RxQueue{Port: p, ID: qc.ID, Index: index, Config: qc, Regions: regions, meta: meta, ring: r}, nil
}

// Path is the queue's key path in the configuration.
func (q *RxQueue) Path() string { return fmt.Sprintf("%s.rx.queues[%d]", q.Port.Path(), q.Index) }

// BatchSize is the number of packets per full burst (at least 1).
func (q *RxQueue) BatchSize() int { return max(q.Config.BatchSize, 1) }

// Timeout is how long a partial burst may wait after its first packet (0 = no timeout).
func (q *RxQueue) Timeout() time.Duration {
	return time.Duration(q.Config.TimeoutUs) * time.Microsecond
}

// NewBurst takes an empty burst for this queue (for engines). Its arrays are sized for the
// batch, but never for more packets than the queue's first region has buffers: a burst cannot
// hold more, and a batch_size far above the pool would otherwise cost memory per burst.
func (q *RxQueue) NewBurst() (*Burst, error) {
	n := q.BatchSize()
	if len(q.Regions) > 0 && q.Regions[0].NumBufs > 0 {
		n = min(n, q.Regions[0].NumBufs)
	}
	return q.meta.Get(q.Port.ID, q.ID, q.Regions, q.Port.Raw, n)
}

// Deliver hands a filled burst to the application (through the queue's Intercept when one is
// set). When the ring is full the burst's packets are counted as dropped and freed; Deliver
// reports whether the burst was delivered. Empty bursts are freed.
func (q *RxQueue) Deliver(b *Burst) bool { return q.DeliverCounted(b, -1) }

// DeliverCounted is Deliver for an engine that has already summed the burst's bytes
// (bytes = b.TotalBytes(); -1: not known), saving the queue's counter a second pass over the
// lengths.
func (q *RxQueue) DeliverCounted(b *Burst, bytes int) bool {
	slot, ok := q.gate.enterUser()
	if !ok {
		if s := q.succ.Load(); s != nil {
			b.queue = s.ID
			return s.DeliverCounted(b, bytes)
		}
		// Deleted: the session drains the ring once deliveries in flight are out.
		q.Stats.Drop(DropClosed, b.Len())
		b.Free()
		return false
	}
	defer q.gate.leaveUser(slot)
	if q.Intercept != nil && b.Len() > 0 {
		q.Intercept(b)
		return true
	}
	return q.enqueue(b, bytes) // already inside the gate: no second pass through it
}

// DeliverDirect puts a burst on the application ring, bypassing Intercept.
func (q *RxQueue) DeliverDirect(b *Burst) bool { return q.DeliverDirectCounted(b, -1) }

// DeliverDirectCounted is DeliverDirect for an engine that has already summed the burst's
// bytes (bytes = b.TotalBytes(); -1: not known), as DeliverCounted is for Deliver.
func (q *RxQueue) DeliverDirectCounted(b *Burst, bytes int) bool {
	slot, ok := q.gate.enterUser()
	if !ok {
		if s := q.succ.Load(); s != nil {
			b.queue = s.ID
			return s.DeliverDirectCounted(b, bytes)
		}
		q.Stats.Drop(DropClosed, b.Len())
		b.Free()
		return false
	}
	defer q.gate.leaveUser(slot)
	return q.enqueue(b, bytes)
}

// enqueue puts a burst holding bytes bytes (-1: not known yet) on the application ring,
// inside the queue's gate.
func (q *RxQueue) enqueue(b *Burst, bytes int) bool {
	n := b.Len()
	if n == 0 {
		b.Free()
		return false
	}
	if bytes < 0 {
		bytes = b.TotalBytes()
	}
	if !q.ring.Enqueue(b) {
		q.Stats.Drop(DropRingFull, n)
		b.Free()
		return false
	}
	q.Stats.Add(n, bytes)
	return true
}

// Next takes the next delivered burst, if any.
func (q *RxQueue) Next() (*Burst, bool) { return q.ring.Dequeue() }

// NextOpen is the application's Next (RxBurst on a queue without Poll) without a gate: it
// takes the next burst, then reads the queue's deleted flag and sessionClosed. The take is
// an atomic read-modify-write of the ring and both reads are atomic loads, and the closers
// (Shut, the session's Close) set their flag before they drain the ring, all sequentially
// consistent: when both reads say open, the take came before either flag was set, so the
// burst is one an EnterCall made before the close would have returned, and the application
// owns it. Otherwise the burst is dropped as the closer's drain drops what it finds
// (DropClosed, counted as Drain counts) and closed is true. Nothing else of the queue or
// its engine is touched, so the call need not be waited for: it saves EnterCall's two
// read-modify-writes per burst.
func (q *RxQueue) NextOpen(sessionClosed *atomic.Bool) (b *Burst, ok, closed bool) {
	b, ok = q.ring.Dequeue()
	if q.gate.closed.Load() || sessionClosed.Load() {
		if ok {
			q.Stats.Drop(DropClosed, drainCount(b))
			b.Free()
		}
		return nil, false, true
	}
	return b, ok, false
}

// drainCount is the packets a burst freed undelivered counts as dropped: a reorder
// aggregate is one packet holding its batch, and drops the source packets that filled it.
func drainCount(b *Burst) int {
	if b.reorder != nil {
		return b.reorder.SourcePackets
	}
	return b.Len()
}

// Pending is the number of bursts waiting in the ring.
func (q *RxQueue) Pending() int { return q.ring.Len() }

// Drain frees every burst still in the ring and returns how many packets that dropped. A
// reorder aggregate is one packet holding its batch: it drops the source packets that filled
// it (counting it as one left a batch's packets neither received nor dropped).
func (q *RxQueue) Drain() int {
	n := 0
	for {
		b, ok := q.ring.Dequeue()
		if !ok {
			return n
		}
		n += drainCount(b)
		b.Free()
	}
}

// TxQueue is a transmit queue.
type TxQueue struct {
	Port    *Port
	ID      int
	Index   int
	Config  *config.Queue
	Regions []*Region
	Stats   Counters

	meta *MetaPool
	gate gate
}

// NewTxQueue wires a transmit queue to its metadata pool.
func NewTxQueue(p *Port, index int, qc *config.Queue, regions []*Region, meta *MetaPool) *TxQueue {
	return &TxQueue{Port: p, ID: qc.ID, Index: index, Config: qc, Regions: regions, meta: meta}
}

// Path is the queue's key path in the configuration.
func (q *TxQueue) Path() string { return fmt.Sprintf("%s.tx.queues[%d]", q.Port.Path(), q.Index) }

// BatchSize is the default number of packets per TX burst.
func (q *TxQueue) BatchSize() int { return max(q.Config.BatchSize, 1) }

// Available reports whether n packets' buffers are free in every segment region now.
func (q *TxQueue) Available(n int) bool {
	if q.meta.Available() == 0 {
		return false
	}
	for _, r := range q.Regions {
		if r.Available() < n {
			return false
		}
	}
	return true
}

// NewBurstOpen is the application's NewBurst (TxBurst) without a gate: it takes the burst,
// then reads the queue's deleted flag and sessionClosed. NewBurst touches only Go memory
// (the metadata pool, the regions' buffer pools, the burst's arrays), never a buffer's
// bytes, and takes its buffers with atomic read-modify-writes; the closers (Shut, the
// session's Close) set their flag before the queue's regions can be closed or deleted, all
// sequentially consistent. When both reads say open, the buffers left their pools before
// either flag was set, so a region's Close or delete counts them as held — the burst is one
// an EnterCall made before the close would have returned. Otherwise the burst goes back
// (buffers, then metadata) and closed is true (with a nil burst and error). It saves
// EnterCall's two read-modify-writes per burst.
func (q *TxQueue) NewBurstOpen(n int, sessionClosed *atomic.Bool) (b *Burst, closed bool, err error) {
	b, err = q.NewBurst(n)
	if q.gate.closed.Load() || sessionClosed.Load() {
		if err == nil {
			b.Free()
		}
		return nil, true, nil
	}
	return b, false, err
}

// NewBurst takes a burst with n packets whose buffers come from the queue's regions (one per
// segment), lengths zero. n == 0 means the queue's batch size.
func (q *TxQueue) NewBurst(n int) (*Burst, error) {
	if n == 0 {
		n = q.BatchSize()
	}
	if n < 0 || n > 1<<20 {
		return nil, fmt.Errorf("burst of %d packets: %w", n, ErrInvalidParameter)
	}
	b, err := q.meta.Get(q.Port.ID, q.ID, q.Regions, q.Port.Raw, n)
	if err != nil {
		return nil, err
	}
	// The buffer indices land in the segment's length array first (Reset gave it room for
	// n): one all-or-nothing pool operation per segment, and no scratch array to clear.
	for s, r := range q.Regions {
		seg := &b.segs[s]
		idx := seg.len[:n]
		if !r.GetBulk(idx) {
			// Give back what this burst already took from the earlier segments' regions.
			for t := 0; t < s; t++ {
				rt := b.segs[t].region
				for _, o := range b.segs[t].off[:n] {
					rt.Put(uint32(rt.bufIndex(o)))
				}
			}
			b.n = 0
			b.FreeMeta()
			// The bare status: exhaustion is a normal, frequent outcome for a sender
			// outrunning its completions, and formatting a message here costs more
			// than the retry it prompts.
			return nil, ErrNoFreePacketBuffers
		}
		off := seg.off[:n]
		off = off[:len(idx)]
		if r.shift >= 0 { // a shift for power-of-two buffers
			// The lengths, from now on: each index is cleared in the pass that reads it.
			indexesToOffsetsClear(off, idx, uint(r.shift))
		} else {
			bs := uint64(r.BufSize)
			for j, i := range idx {
				off[j] = uint64(i) * bs
			}
			clear(idx)
		}
		seg.off, seg.len = off, idx
	}
	// Flow ids and times zero and no segment freed, without writing the three arrays: the
	// burst is lazy (see Burst.lazy) and not partial (Reset), so their content is not read.
	b.flow = b.flow[:n]
	b.ts = b.ts[:n]
	b.freed = b.freed[:n]
	b.lazy, b.lazyTS = true, 0
	b.n = n
	b.txq = q
	return b, nil
}
