package reorder

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
)

// Service runs a session's reorder plans. It takes every burst a queue with plans delivers
// (through the queue's Intercept, in the engine's worker), hands each packet to the plan of
// its flow — or, for a plan without flow ids (socket streams), every packet — and delivers the
// packets no plan takes as an ordinary burst. A timer goroutine of its own flushes batches
// whose timeout has passed, so a partial batch is delivered on time even when no traffic and
// no application poll arrive.
type Service struct {
	log    *slog.Logger
	epoch  time.Time
	groups []*group
	byQ    map[*engine.RxQueue]*group
	kick   chan struct{}
	stop   chan struct{}
	done   chan struct{}
	timed  bool
	start  sync.Once
	closed bool
}

// group is the plans of one queue; mu guards their state.
type group struct {
	s       *Service
	q       *engine.RxQueue
	mu      sync.Mutex
	plans   []*Plan
	byFlow  map[uint32]*Plan
	regions []*engine.Region
	keep    []kept
	// bulkFree: every plan is a CPU plan, so every packet a plan takes can go back to its
	// region with the rest of its burst, in bulk, once the burst has been through the plans.
	bulkFree bool
}

// kept is a packet no plan takes, to be delivered as an ordinary one.
type kept struct {
	i    int // index in the burst
	off  uint64
	len  uint32
	flow uint32
	ts   int64
}

// NewService returns a service without plans (log: nil for slog.Default).
func NewService(log *slog.Logger) *Service {
	if log == nil {
		log = slog.Default()
	}
	return &Service{log: log, epoch: time.Now(), byQ: map[*engine.RxQueue]*group{}, kick: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
}

// now is the service's monotonic clock in nanoseconds.
func (s *Service) now() int64 { return int64(time.Since(s.epoch)) }

// Add compiles a reorder configuration for queue q, writing aggregates into region out. Call
// it before Start. A cpu plan needs CPU-addressable source and output regions; a gpu plan
// needs a source region the GPU can read (device or host_pinned) and an output region of
// kind device or host_pinned.
func (s *Service) Add(q *engine.RxQueue, rc *config.Reorder, out *engine.Region, opt Options) (*Plan, error) {
	if s.closed {
		return nil, errors.New("reorder: service closed")
	}
	p, err := newPlan(rc, q, out, opt)
	if err != nil {
		return nil, err
	}
	p.log = s.log
	g := s.byQ[q]
	if g == nil {
		g = &group{s: s, q: q, byFlow: map[uint32]*Plan{}, regions: []*engine.Region{q.Regions[0]}}
	}
	for _, id := range p.flows {
		if o := g.byFlow[id]; o != nil {
			return nil, fmt.Errorf("reorder plan %s: flow id %d already belongs to plan %s on queue %s", p.name, id, o.name, q.Path())
		}
	}
	switch rc.Type {
	case config.ReorderCPU, "":
		if !p.src.CPU() {
			return nil, fmt.Errorf("reorder plan %s: a cpu plan reads packets with the CPU, but region %s is %s memory", p.name, p.src.Name, p.src.Kind)
		}
		if !out.CPU() {
			return nil, fmt.Errorf("reorder plan %s: a cpu plan writes with the CPU, but output region %s is %s memory (use host, huge or host_pinned)", p.name, out.Name, out.Kind)
		}
		p.be, p.cpu = &cpuBackend{p: p}, true
	case config.ReorderGPU:
		be, err := newGPUBackend(p, opt)
		if err != nil {
			return nil, err
		}
		p.be, p.gpu = be, true
	default:
		return nil, fmt.Errorf("reorder plan %s: unknown reorder_type %q", p.name, rc.Type)
	}
	p.g = g
	if s.byQ[q] == nil {
		s.byQ[q] = g
		s.groups = append(s.groups, g)
	}
	g.plans = append(g.plans, p)
	for _, id := range p.flows {
		g.byFlow[id] = p
	}
	if p.timeout > 0 {
		s.timed = true
	}
	return p, nil
}

// Plans lists the service's plans in the order they were added.
func (s *Service) Plans() []*Plan {
	var ps []*Plan
	for _, g := range s.groups {
		ps = append(ps, g.plans...)
	}
	return ps
}

// Start routes the queues' deliveries through their plans and starts the timeout timer. Call
// it once, before the engines start delivering.
func (s *Service) Start() {
	s.start.Do(func() {
		for _, g := range s.groups {
			g.bulkFree = true
			for _, p := range g.plans {
				g.bulkFree = g.bulkFree && p.cpu
			}
			for _, p := range g.plans {
				p.bulkFree = g.bulkFree
			}
			g.q.Intercept = g.intercept
		}
		if s.timed {
			go s.timer()
		} else {
			close(s.done)
		}
	})
}

// Close stops the timer, waits for GPU work in flight (its aggregates are still delivered),
// and drops every batch still being assembled, returning its buffers. Call it after the
// engines have stopped delivering.
func (s *Service) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	s.start.Do(func() { close(s.done) }) // never started: nothing runs
	close(s.stop)
	<-s.done
	var errs []error
	for _, g := range s.groups {
		g.q.Intercept = nil
		g.mu.Lock()
		for _, p := range g.plans {
			p.discard()
		}
		g.mu.Unlock()
		for _, p := range g.plans {
			if err := p.be.close(); err != nil {
				errs = append(errs, fmt.Errorf("reorder plan %s: %w", p.name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Flush delivers every batch being assembled now, complete or not (for example at the end of
// a finite stream); incomplete ones carry FlagReorderTimeout.
func (s *Service) Flush() {
	for _, g := range s.groups {
		g.mu.Lock()
		for _, p := range g.plans {
			p.expire(0, true)
		}
		g.mu.Unlock()
	}
}

// armed tells the timer that a batch with a deadline opened.
func (g *group) armed(int64) {
	select {
	case g.s.kick <- struct{}{}:
	default:
	}
}

// timer flushes batches whose deadline passed. It sleeps until the earliest deadline, or
// until a new batch opens (kick), or until Close.
func (s *Service) timer() {
	defer close(s.done)
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		now := s.now()
		next := int64(math.MaxInt64)
		for _, g := range s.groups {
			g.mu.Lock()
			for _, p := range g.plans {
				p.expire(now, false)
				if d := p.nextDeadline(); d != 0 && d < next {
					next = d
				}
			}
			g.mu.Unlock()
		}
		wait := time.Hour
		if next != math.MaxInt64 {
			wait = time.Duration(max(next-s.now(), 0))
		}
		t.Reset(wait)
		select {
		case <-s.stop:
			return
		case <-s.kick:
			if !t.Stop() {
				select {
				case <-t.C:
				default:
				}
			}
		case <-t.C:
		}
	}
}

// intercept is the queues' Intercept: it runs in the engine's worker for every burst.
func (g *group) intercept(b *engine.Burst) {
	n := b.Len()
	g.mu.Lock()
	now := g.s.now()
	for _, p := range g.plans {
		p.expire(now, false)
	}
	keep := g.keep[:0]
	// The packets' bytes, sliced here rather than through b.Packet (which checks more).
	var buf []byte
	if r := b.SegmentRegion(0); r != nil {
		buf = r.Bytes()
	}
	if len(g.plans) == 1 && len(g.plans[0].flows) == 0 {
		// A plan without flow ids (a socket stream) reads every packet of its queue. A plan
		// with flow ids takes only those: other flows steered to the same queue pass through.
		g.plans[0].addRun(b, 0, n, buf, now)
	} else {
		// Flows mostly come in runs: one plan lookup per run.
		for i := 0; i < n; {
			flow := b.FlowID(i)
			j := i + 1
			for j < n && b.FlowID(j) == flow {
				j++
			}
			if p := g.byFlow[flow]; p != nil {
				p.addRun(b, i, j, buf, now)
			} else {
				for ; i < j; i++ {
					ts, _ := b.RxTimestamp(i)
					keep = append(keep, kept{i, b.SegmentOffset(0, i), uint32(b.SegmentLen(0, i)), flow, ts})
				}
			}
			i = j
		}
	}
	g.keep = keep
	for _, p := range g.plans {
		p.st.received.Store(p.received) // once per burst: an atomic per packet costs more
	}
	g.mu.Unlock()
	switch {
	case len(keep) == 0:
		// Every packet went to a plan, which owns or freed it; with bulkFree the plans left
		// them all to be freed here.
		if g.bulkFree {
			b.Free()
		} else {
			b.FreeMeta()
		}
	case len(keep) == n:
		g.q.DeliverDirect(b)
	default:
		if g.bulkFree {
			// The packets the plans took go back now: the burst is rebuilt without them.
			k := 0
			for i := 0; i < n; i++ {
				if k < len(keep) && keep[k].i == i {
					k++
					continue
				}
				b.FreePacket(i)
			}
		}
		// Rebuild the burst from the packets no plan took, keeping what the engine set. The
		// burst's own region, not the queue's: a loopback engine hands over TX buffers.
		conn, flags, eng := b.ConnID(), b.Flags(), b.Engine
		g.regions[0] = b.SegmentRegion(0)
		b.Reset(b.Port(), b.Queue(), g.regions, g.q.Port.Raw, len(keep))
		b.SetConnID(conn)
		b.SetFlags(flags)
		b.Engine = eng
		for _, k := range keep {
			b.Append(k.off, k.len, k.flow, k.ts)
		}
		g.q.DeliverDirect(b)
	}
}
