package daqiri

import (
	"fmt"
	"slices"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/reorder"
)

// readBy reports whether a reorder plan reads q.
func (s *Session) readBy(q *engine.RxQueue) bool {
	if slices.ContainsFunc(s.hwReorders, func(h *engine.HWReorder) bool { return h.Queue == q }) {
		return true // a hardware plan delivers its aggregates there
	}
	return s.reorder != nil && slices.ContainsFunc(s.reorder.Plans(), func(pl *reorder.Plan) bool {
		return pl.Port() == q.Port.ID && pl.Queue() == q.ID
	})
}

// Errors of run-time queue and region changes (both wrap ErrInvalidParameter, so a Send
// refused with ErrQueueDeleted leaves the burst with the caller).
var (
	ErrQueueDeleted = engine.ErrQueueDeleted
	ErrRegionInUse  = engine.ErrRegionInUse
)

// maxTombstones bounds how many deleted queues a port keeps (for Stats and ErrQueueDeleted)
// per direction; the oldest go first.
const maxTombstones = 256

// prune drops the oldest deleted queues of qs beyond maxTombstones, keeping the order.
func prune[Q interface{ Deleted() bool }](qs []Q) []Q {
	dead := 0
	for _, q := range qs {
		if q.Deleted() {
			dead++
		}
	}
	out := qs[:0:0]
	for _, q := range qs {
		if q.Deleted() && dead > maxTombstones {
			dead--
			continue
		}
		out = append(out, q)
	}
	return out
}

// queueOp runs fn on port's engine as an engine.QueueManager, inside the session (enter/leave)
// with the queue lock held: how every run-time queue change starts.
func (s *Session) queueOp(port int, fn func(p *engine.Port, qm engine.QueueManager) error) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	s.qmu.Lock()
	defer s.qmu.Unlock()
	p, qm, err := s.queueManager(port)
	if err != nil {
		return err
	}
	return fn(p, qm)
}

// queueManager is the port's engine as an engine.QueueManager.
func (s *Session) queueManager(port int) (*engine.Port, engine.QueueManager, error) {
	p, err := s.port(port)
	if err != nil {
		return nil, nil, err
	}
	qm, ok := s.byPort[port].(engine.QueueManager)
	if !ok {
		return nil, nil, fmt.Errorf("port %d (%s): engine %s cannot add or delete queues at run time: %w", port, p.Name, p.Engine, ErrNotSupported)
	}
	return p, qm, nil
}

// runtimeQueue checks a queue configuration given at run time by the rules Open applies
// (config.CheckQueue: the key path it would have, interfaces[port].rx.queues[index], is in
// the error) and resolves its regions. live are the port's live queues of the direction.
func (s *Session) runtimeQueue(p *engine.Port, dir string, index int, qc *config.Queue, live []*config.Queue) ([]*engine.Region, error) {
	regions := make(map[string]*config.MemoryRegion, len(s.regions))
	for name, r := range s.regions {
		regions[name] = &config.MemoryRegion{Name: r.Name, Kind: r.Kind, NumBufs: r.NumBufs, BufSize: r.BufSize}
	}
	if err := s.cfg.CheckQueue(p.ID, index, dir == "tx", qc, live, regions); err != nil {
		return nil, fmt.Errorf("port %d (%s) %s queue %q (id %d): %w: %w", p.ID, p.Name, dir, qc.Name, qc.ID, err, ErrInvalidParameter)
	}
	rs := make([]*engine.Region, 0, len(qc.MemoryRegions))
	for _, name := range qc.MemoryRegions {
		rs = append(rs, s.regions[name])
	}
	return rs, nil
}

// AddRxQueue adds a receive queue to an open port (xdp, socket and loopback engines). The
// queue is indirect: qc needs a name and an id unused by the port's live RX queues,
// batch_size, the names of existing memory regions and optionally cpu_core and timeout_us,
// checked by the rules Open applies to rx.queues (Config.CheckQueue), with the key path the
// queue takes in the error. The name and id of a deleted queue may be reused. The engine decides what reaches the queue (xdp: flows added with its
// id; socket: the endpoint's traffic when the endpoint has no live RX queue; loopback: the TX
// queue at the same position). Errors wrap ErrInvalidParameter or ErrNotSupported.
func (s *Session) AddRxQueue(port int, qc config.Queue) error {
	return s.queueOp(port, func(p *engine.Port, qm engine.QueueManager) error {
		set := p.Queues()
		var live []*config.Queue
		for _, q := range set.LiveRx() {
			live = append(live, q.Config)
		}
		rs, err := s.runtimeQueue(p, "rx", len(set.Rx), &qc, live)
		if err != nil {
			return err
		}
		c := qc
		q, err := engine.NewRxQueue(p, len(set.Rx), &c, rs, s.rxMeta, s.rxRing)
		if err != nil {
			return err
		}
		// Publish first, so the engine's first delivery has a queue the application can poll.
		next := &engine.QueueSet{Tx: set.Tx}
		for _, x := range set.Rx {
			if x.ID != qc.ID { // a deleted queue of the same id is replaced
				next.Rx = append(next.Rx, x)
			}
		}
		next.Rx = append(next.Rx, q)
		p.SetQueues(next)
		if err := qm.AddRxQueue(q); err != nil {
			p.SetQueues(set)
			return err
		}
		s.log.Info("rx queue added", "interface", p.Name, "queue", qc.ID)
		return nil
	})
}

// DeleteRxQueue deletes a receive queue of an open port. Deliveries and polls in flight
// finish first; from then on a poll of the id is ErrQueueDeleted, the engine delivers nothing
// more to it (what it receives for the queue is counted as dropped, reason closed), and the
// bursts still in its ring are freed and counted the same way. Bursts the application already
// holds stay valid until it frees them. Deleting it again is ErrQueueDeleted; a queue a
// reorder plan reads cannot be deleted.
func (s *Session) DeleteRxQueue(port, id int) error {
	return s.queueOp(port, func(p *engine.Port, qm engine.QueueManager) error {
		q, err := s.rxQueue(port, id)
		if err != nil {
			return err
		}
		if s.readBy(q) {
			return fmt.Errorf("port %d (%s) rx queue %d: a reorder plan reads it: %w", port, p.Name, id, ErrInvalidParameter)
		}
		if err := q.Shut(); err != nil {
			return fmt.Errorf("port %d (%s) rx queue %d: %w", port, p.Name, id, err)
		}
		err = qm.DeleteRxQueue(q)
		if n := q.Drain(); n > 0 {
			q.Stats.Drop(engine.DropClosed, n)
		}
		p.SetQueues(&engine.QueueSet{Rx: prune(p.Queues().Rx), Tx: p.Queues().Tx})
		s.log.Info("rx queue deleted", "interface", p.Name, "queue", id)
		return err
	})
}

// AddTxQueue adds a transmit queue to an open port (as AddRxQueue; xdp: NIC queue j of the
// queue's position j must exist).
func (s *Session) AddTxQueue(port int, qc config.Queue) error {
	return s.queueOp(port, func(p *engine.Port, qm engine.QueueManager) error {
		set := p.Queues()
		var live []*config.Queue
		for _, q := range set.LiveTx() {
			live = append(live, q.Config)
		}
		rs, err := s.runtimeQueue(p, "tx", len(set.Tx), &qc, live)
		if err != nil {
			return err
		}
		c := qc
		q := engine.NewTxQueue(p, len(set.Tx), &c, rs, s.txMeta)
		if err := qm.AddTxQueue(q); err != nil {
			return err
		}
		next := &engine.QueueSet{Rx: set.Rx}
		for _, x := range set.Tx {
			if x.ID != qc.ID {
				next.Tx = append(next.Tx, x)
			}
		}
		next.Tx = append(next.Tx, q)
		p.SetQueues(next)
		s.log.Info("tx queue added", "interface", p.Name, "queue", qc.ID)
		return nil
	})
}

// DeleteTxQueue deletes a transmit queue: sends in flight finish, bursts the engine still
// holds for it are sent or counted (reason closed), and from then on TxBurst and Send for the
// id are ErrQueueDeleted (the burst stays the caller's; Free returns its buffers). Deleting it
// again is ErrQueueDeleted.
func (s *Session) DeleteTxQueue(port, id int) error {
	return s.queueOp(port, func(p *engine.Port, qm engine.QueueManager) error {
		q, err := s.txQueue(port, id)
		if err != nil {
			return err
		}
		if err := q.Shut(); err != nil {
			return fmt.Errorf("port %d (%s) tx queue %d: %w", port, p.Name, id, err)
		}
		err = qm.DeleteTxQueue(q)
		p.SetQueues(&engine.QueueSet{Rx: p.Queues().Rx, Tx: prune(p.Queues().Tx)})
		s.log.Info("tx queue deleted", "interface", p.Name, "queue", id)
		return err
	})
}

// AddMemoryRegion allocates a memory region on an open session for queues added later
// (config keys as in memory_regions, checked by the rules Open applies with
// config.CheckMemoryRegion, the key path memory_regions[N] in the error). With rc.Unowned set, mem is the application's memory,
// checked as WithRegionMemory's; otherwise mem must be nil and the library allocates.
func (s *Session) AddMemoryRegion(rc config.MemoryRegion, mem engine.Memory) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	s.qmu.Lock()
	defer s.qmu.Unlock()
	// The key path is the position the region takes among the session's regions.
	path := fmt.Sprintf("memory_regions[%d]", len(s.regions))
	existing := make([]config.MemoryRegion, 0, len(s.regions))
	for _, r := range s.regions {
		existing = append(existing, config.MemoryRegion{Name: r.Name, Kind: r.Kind, NumBufs: r.NumBufs, BufSize: r.BufSize})
	}
	if err := config.CheckMemoryRegion(path, &rc, existing); err != nil {
		return fmt.Errorf("memory region %q: %w: %w", rc.Name, err, ErrInvalidParameter)
	}
	if mem != nil && !rc.Unowned {
		return fmt.Errorf("memory region %q: memory given for a region the library owns (set Unowned, YAML owned: false): %w", rc.Name, ErrInvalidParameter)
	}
	var err error
	if rc.Unowned {
		if mem, err = s.appMemory(&rc, "memory_regions["+rc.Name+"]", mem); err != nil {
			return err
		}
	} else if mem, err = allocMemory(&rc, -1); err != nil {
		// As Open says it: the region, not only the mmap that failed.
		return fmt.Errorf("%s: memory region %s (%s, %d × %d bytes): %w", path, rc.Name, rc.Kind, rc.NumBufs, rc.BufSize, err)
	}
	r, err := engine.NewRegion(&rc, mem)
	if err != nil {
		mem.Close()
		return err
	}
	s.regions[rc.Name] = r
	return nil
}

// DeleteMemoryRegion frees a region no live queue, reorder plan or outstanding buffer uses;
// otherwise ErrRegionInUse, naming the user. Application memory is not freed.
func (s *Session) DeleteMemoryRegion(name string) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	s.qmu.Lock()
	defer s.qmu.Unlock()
	r := s.regions[name]
	if r == nil {
		return fmt.Errorf("memory region %q does not exist: %w", name, ErrInvalidParameter)
	}
	inUse := func(format string, args ...any) error {
		return fmt.Errorf("memory region %q: %s: %w", name, fmt.Sprintf(format, args...), ErrRegionInUse)
	}
	for _, p := range s.ports {
		set := p.Queues()
		for _, q := range set.LiveRx() {
			if slices.Contains(q.Regions, r) {
				return inUse("rx queue %d of %s uses it", q.ID, p.Name)
			}
		}
		for _, q := range set.LiveTx() {
			if slices.Contains(q.Regions, r) {
				return inUse("tx queue %d of %s uses it", q.ID, p.Name)
			}
		}
	}
	if s.reorder != nil && slices.ContainsFunc(s.reorder.Plans(), func(pl *reorder.Plan) bool { return pl.Output() == r }) {
		return inUse("a reorder plan writes into it")
	}
	if slices.ContainsFunc(s.hwReorders, func(h *engine.HWReorder) bool { return h.Out == r }) {
		return inUse("a hardware reorder plan's NIC writes into it")
	}
	if a := r.Available(); a != r.NumBufs {
		return inUse("%d of its %d buffers are still held (bursts not freed, or a deleted queue's engine buffers)", r.NumBufs-a, r.NumBufs)
	}
	if err := r.Close(); err != nil {
		return err
	}
	delete(s.regions, name)
	return nil
}
