package afxdp

import (
	"fmt"

	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/flow/xdp"
)

var _ engine.QueueManager = (*Engine)(nil)

func (pt *port) rxqs() []*rxq {
	if v := pt.rxv.Load(); v != nil {
		return *v
	}
	return nil
}

func (pt *port) txqs() []*txq {
	if v := pt.txv.Load(); v != nil {
		return *v
	}
	return nil
}

func (e *Engine) portOf(p *engine.Port) (*port, error) {
	pt := e.byID[p.ID]
	if pt == nil {
		return nil, fmt.Errorf("port %d is not an xdp port: %w", p.ID, engine.ErrInvalidParameter)
	}
	if e.closed.Load() {
		return nil, fmt.Errorf("engine closed: %w", engine.ErrNotReady)
	}
	return pt, nil
}

// AddRxQueue adds a steering target: the next RX queue position (positions are not reused,
// at most xdp.MaxQueues per port), reached by flows added with the queue's id. It has no
// AF_XDP socket of its own: the workers of the configured queues, which poll every NIC
// queue's socket, hand it its frames (copied when its region is not their UMEM).
func (e *Engine) AddRxQueue(q *engine.RxQueue) error {
	pt, err := e.portOf(q.Port)
	if err != nil {
		return err
	}
	pt.qmu.Lock()
	defer pt.qmu.Unlock()
	old := pt.rxqs()
	if len(old) == 0 || pt.prog == nil {
		return fmt.Errorf("interface %s: engine xdp adds RX queues only to ports opened with one (the XDP program and its sockets come with the first): %w", pt.p.Name, engine.ErrNotSupported)
	}
	if len(old) >= xdp.MaxQueues {
		return fmt.Errorf("interface %s: %d RX queue positions used (deleted ones included), at most %d: %w", pt.p.Name, len(old), xdp.MaxQueues, engine.ErrInvalidParameter)
	}
	if err := e.checkRegion(q.Path(), q.Regions, true, pt.mtu, pt.jumbo); err != nil {
		return fmt.Errorf("%v: %w", err, engine.ErrInvalidParameter)
	}
	if len(q.Regions) != 1 {
		return fmt.Errorf("interface %s: engine xdp RX queues have one region: %w", pt.p.Name, engine.ErrInvalidParameter)
	}
	r := &rxq{pt: pt, q: q, pos: len(old), region: q.Regions[0]}
	if r.timeout() > 0 && !pt.timeouts {
		// Pollers read the clock only when some queue has a timeout; this one would never be
		// flushed by time otherwise. Its partial bursts go out when the rings run dry.
		e.env.Log.Warn("xdp: timeout_us of a queue added at run time applies when the port already has a queue with a timeout", "interface", pt.p.Name, "queue", q.ID)
	}
	next := append(append([]*rxq(nil), old...), r)
	pt.rxv.Store(&next)
	return nil
}

// DeleteRxQueue makes the queue's position a tombstone: frames still steered to it (by flows
// naming it) are dropped and counted (closed); a configured queue's worker goes on polling
// its sockets for the other queues.
func (e *Engine) DeleteRxQueue(q *engine.RxQueue) error {
	pt, err := e.portOf(q.Port)
	if err != nil {
		return err
	}
	pt.qmu.Lock()
	defer pt.qmu.Unlock()
	for _, r := range pt.rxqs() {
		if r.q == q {
			r.deleted.Store(true)
			return nil
		}
	}
	return fmt.Errorf("interface %s has no rx queue %d: %w", pt.p.Name, q.ID, engine.ErrInvalidParameter)
}

// AddTxQueue binds a TX queue to the first NIC queue no live TX queue uses: it shares that
// NIC queue's RX socket (frames copied into its UMEM) or reuses the TX socket a deleted
// queue left there (same region), else opens a socket with the queue's region as its UMEM.
func (e *Engine) AddTxQueue(q *engine.TxQueue) error {
	pt, err := e.portOf(q.Port)
	if err != nil {
		return err
	}
	pt.qmu.Lock()
	defer pt.qmu.Unlock()
	if len(q.Regions) != 1 {
		return fmt.Errorf("interface %s: engine xdp TX queues have one region: %w", pt.p.Name, engine.ErrInvalidParameter)
	}
	if err := e.checkRegion(q.Path(), q.Regions, false, pt.mtu, pt.jumbo); err != nil {
		return fmt.Errorf("%v: %w", err, engine.ErrInvalidParameter)
	}
	old := pt.txqs()
	used := map[int]bool{}
	for _, t := range old {
		used[t.pos] = true
	}
	limit := pt.nicTx
	if len(pt.rxqs()) > 0 {
		limit = min(limit, pt.nicRx)
	}
	pos := -1
	for j := 0; j < limit && j < len(pt.socks); j++ {
		if !used[j] {
			pos = j
			break
		}
	}
	if pos < 0 {
		return fmt.Errorf("interface %s: every one of its %d NIC TX queues has a TX queue: %w", pt.p.Name, limit, engine.ErrInvalidParameter)
	}
	t := &txq{pt: pt, q: q, pos: pos, region: q.Regions[0]}
	switch s := pt.socks[pos]; {
	case s != nil && s.owner != nil:
		t.s, t.copyTx = s, true
	case s != nil && s.umem:
		t.s, t.copyTx = s, true
	case s != nil && s.region == t.region:
		t.s = s
	case s != nil:
		return fmt.Errorf("interface %s: NIC queue %d keeps the TX socket of a deleted queue, whose UMEM is region %s; add the queue with that region: %w", pt.p.Name, pos, s.region.Name, engine.ErrInvalidParameter)
	case pt.jumbo:
		s, err := pt.openStagingSock(pos, false, true)
		if err != nil {
			return fmt.Errorf("%v: %w", err, engine.ErrInvalidParameter)
		}
		pt.socks[pos] = s
		t.s, t.copyTx = s, true
	default:
		s, err := pt.openSock(pos, t.region, false, true, 1)
		if err != nil {
			return fmt.Errorf("%v: %w", err, engine.ErrInvalidParameter)
		}
		pt.socks[pos] = s
		t.s = s
	}
	t.init(e)
	next := append(append([]*txq(nil), old...), t)
	pt.txv.Store(&next)
	e.w.Go(fmt.Sprintf("%s/xdp-tx%d", pt.p.Name, q.ID), q.Config.CPUCore, t.run)
	return nil
}

// DeleteTxQueue stops the queue's worker, drops (closed) what waits in its ring, lets the
// kernel finish what it was given and returns the buffers. The socket stays for a later
// queue on the same NIC queue.
func (e *Engine) DeleteTxQueue(q *engine.TxQueue) error {
	pt, err := e.portOf(q.Port)
	if err != nil {
		return err
	}
	pt.qmu.Lock()
	defer pt.qmu.Unlock()
	old := pt.txqs()
	var t *txq
	var next []*txq
	for _, x := range old {
		if x.q == q {
			t = x
			continue
		}
		next = append(next, x)
	}
	if t == nil {
		return fmt.Errorf("interface %s has no tx queue %d: %w", pt.p.Name, q.ID, engine.ErrInvalidParameter)
	}
	pt.txv.Store(&next)
	t.stopped.Store(true)
	if !t.direct {
		<-t.done
	}
	t.shutdown()
	return nil
}
