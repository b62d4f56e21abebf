package daqiri

import (
	"fmt"
	"slices"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/reorder"
)

// Reorder plans (rx.reorder_configs) attach to a session through a service hook: when the
// session opens, every plan is compiled against its source queue and output region and the
// queue's deliveries are routed through package reorder; aggregates then arrive through
// RxBurst like any other burst, with FlagReordered set and Burst.ReorderInfo describing them.
//
// Upstream's set_reorder_cuda_stream has no counterpart: a gpu plan runs its kernels on a
// CUDA stream of its own and delivers an aggregate only after its kernel has finished, so the
// application never needs to synchronise with the GPU before reading (or launching work on)
// an aggregate, and get_reorder_burst_info never answers "not ready".

// ReorderStats are a reorder plan's counters (see Session.ReorderStats).
type ReorderStats = reorder.Stats

func openReorder(s *Session) error {
	var svc *reorder.Service
	fail := func(err error) error {
		if svc != nil {
			svc.Close()
		}
		return err
	}
	for _, p := range s.ports {
		ifc := p.Config
		if ifc.RX == nil {
			continue
		}
		for k := range ifc.RX.Reorders {
			rc := &ifc.RX.Reorders[k]
			path := fmt.Sprintf("%s.rx.reorder_configs[%d]", p.Path(), k)
			q, err := reorderQueue(s.cfg, p, rc, path)
			if err != nil {
				return fail(err)
			}
			out := s.regions[rc.MemoryRegion]
			if out == nil {
				return fail(s.cfg.Errorf(path+".memory_region", "output memory region %q is not allocated", rc.MemoryRegion))
			}
			if rc.Engine == config.ReorderEngineHW {
				h, err := hwReorder(s.cfg, p, rc, path, q, out)
				if err != nil {
					return fail(err)
				}
				s.hwReorders = append(s.hwReorders, h)
				continue
			}
			if svc == nil {
				svc = reorder.NewService(s.log.With("service", "reorder"))
			}
			if _, err := svc.Add(q, rc, out, reorder.Options{Timeout: q.Timeout()}); err != nil {
				return fail(s.cfg.Errorf(path, "%v", err))
			}
		}
	}
	if svc != nil {
		svc.Start()
		s.reorder = svc
	}
	return nil
}

func closeReorder(s *Session) {
	// s.reorder stays set: it is written only while Open runs, so calls racing with Close
	// read it without a lock (they then see the session closed).
	if s.reorder == nil {
		return
	}
	if err := s.reorder.Close(); err != nil {
		s.log.Error("closing reorder plans", "err", err)
	}
}

// reorderQueue finds the queue a plan reads: the single queue its flows steer to, or, on an
// interface without flows (socket streams), the interface's only RX queue.
func reorderQueue(cfg *config.Config, p *engine.Port, rc *config.Reorder, path string) (*engine.RxQueue, error) {
	qid := -1
	for _, id := range rc.FlowIDs {
		for _, f := range p.Config.RX.Flows {
			if f.ID != id {
				continue
			}
			for _, a := range f.Actions {
				if a.Type != config.ActionQueue || len(a.Queues) == 0 {
					continue
				}
				if len(a.Queues) > 1 {
					return nil, cfg.Errorf(path+".flow_ids", "flow %d spreads over several queues (RSS); a reorder plan reads one queue", id)
				}
				if qid >= 0 && a.Queues[0] != qid {
					return nil, cfg.Errorf(path+".flow_ids", "flow %d steers to queue %d, the plan's other flows to queue %d; a reorder plan reads one queue", id, a.Queues[0], qid)
				}
				qid = a.Queues[0]
			}
		}
	}
	if qid < 0 {
		if len(p.Rx) == 1 {
			return p.Rx[0], nil
		}
		return nil, cfg.Errorf(path+".flow_ids", "none of the plan's flows steers to a queue, and interface %s has %d RX queues: cannot tell which queue the plan reads", p.Name, len(p.Rx))
	}
	q := p.RxQueueByID(qid)
	if q == nil {
		return nil, cfg.Errorf(path+".flow_ids", "the plan's flows steer to queue %d, which interface %s does not have", qid, p.Name)
	}
	return q, nil
}

// hwReorder prepares a reorder_engine: hw plan for its engine, which must be one with
// hardware reorder: engine mlx5 (the flex parser and one steering rule per slot).
func hwReorder(cfg *config.Config, p *engine.Port, rc *config.Reorder, path string, q *engine.RxQueue, out *engine.Region) (*engine.HWReorder, error) {
	if p.Engine != config.EngineMLX5 {
		return nil, cfg.Errorf(path+".reorder_engine", "reorder_engine: hw needs engine mlx5 (the NIC's flex parser places each packet at its slot); interface %s runs on engine %s, which has no hardware reorder: use reorder_engine: sw", p.Name, p.Engine)
	}
	if len(rc.FlowIDs) != 1 {
		return nil, cfg.Errorf(path+".flow_ids", "reorder_engine: hw takes exactly one flow, got %d", len(rc.FlowIDs))
	}
	for i, f := range p.Config.RX.Flows {
		if f.ID == rc.FlowIDs[0] {
			return &engine.HWReorder{Path: path, Port: p, Queue: q, Config: rc, FlowID: uint32(f.ID), Flow: i, Out: out}, nil
		}
	}
	return nil, cfg.Errorf(path+".flow_ids", "flow id %d is not an RX flow of interface %s", rc.FlowIDs[0], p.Name)
}

// hwReordersOf lists the session's hardware reorder plans on ports.
func (s *Session) hwReordersOf(ports []*engine.Port) []*engine.HWReorder {
	var hs []*engine.HWReorder
	for _, h := range s.hwReorders {
		if slices.Contains(ports, h.Port) {
			hs = append(hs, h)
		}
	}
	return hs
}

// hwReorderPlan finds a hardware reorder plan by interface port and name.
func (s *Session) hwReorderPlan(port int, name string) *engine.HWReorder {
	for _, h := range s.hwReorders {
		if h.Port.ID == port && h.Config.Name == name {
			return h
		}
	}
	return nil
}

// reorderPlan finds a plan by interface port and name.
func (s *Session) reorderPlan(port int, name string) (*reorder.Plan, error) {
	p, err := s.port(port)
	if err != nil {
		return nil, err
	}
	if s.reorder == nil {
		return nil, fmt.Errorf("port %d (%s) has no reorder plan %q: %w", port, p.Name, name, ErrInvalidParameter)
	}
	for _, pl := range s.reorder.Plans() {
		if pl.Name() == name && pl.Port() == port {
			return pl, nil
		}
	}
	return nil, fmt.Errorf("port %d (%s) has no reorder plan %q: %w", port, p.Name, name, ErrInvalidParameter)
}

// ReorderStats snapshots the counters of reorder plan name on a port (software or hardware
// plan): packets placed,
// aggregates delivered (complete and incomplete), missing slots, and packets dropped as
// duplicate, late, malformed or for want of output buffers. ErrInvalidParameter when the port
// has no such plan.
func (s *Session) ReorderStats(port int, name string) (ReorderStats, error) {
	if h := s.hwReorderPlan(port, name); h != nil {
		if h.Sync != nil && !s.closed.Load() {
			h.Sync()
		}
		c := &h.Stats
		st := ReorderStats{Packets: c.Packets.Load(), Aggregates: c.Aggregates.Load(), Complete: c.Complete.Load(),
			Incomplete: c.Incomplete.Load(), MissingSlots: c.Missing.Load(), Duplicates: c.Duplicates.Load(),
			OutOfRange: c.OutOfRange.Load(), Malformed: c.Malformed.Load(), NoBuffers: c.NoBuffers.Load(), NoMetadata: c.NoMetadata.Load(),
			Dropped: c.Dropped.Load()}
		st.Received = st.Packets + st.Duplicates + st.OutOfRange + st.Malformed
		return st, nil
	}
	pl, err := s.reorderPlan(port, name)
	if err != nil {
		return ReorderStats{}, err
	}
	return pl.Stats(), nil
}

// FlushReorder delivers every batch the session's reorder plans are assembling now, complete
// or not (incomplete ones carry FlagReorderTimeout): for the end of a finite stream, or plans
// without a timeout. ErrNotSupported when the session has no reorder plans.
func (s *Session) FlushReorder() error {
	if s.closed.Load() {
		return fmt.Errorf("session closed: %w", ErrNotReady)
	}
	if s.reorder == nil {
		if len(s.hwReorders) > 0 {
			return fmt.Errorf("the session's reorder plans are hardware plans (reorder_engine: hw), which deliver complete batches only: %w", ErrNotSupported)
		}
		return fmt.Errorf("session has no reorder plans: %w", ErrNotSupported)
	}
	s.reorder.Flush()
	return nil
}
