package daqiri

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/hugepage"
	"github.com/daqiri-go/daqiri/mlx5"
	"github.com/daqiri-go/daqiri/mlx5/channel"
	"github.com/daqiri-go/daqiri/reorder"
)

// Option adjusts how a session is opened.
type Option func(*options)

type options struct {
	log     *slog.Logger
	meter   metric.MeterProvider
	engines map[string]engine.Opener // replaces builtin engines by name (tests)
	appMem  map[string]engine.Memory // application memory by region name (WithRegionMemory)
}

// WithLogger sends the session's and engines' logs to l (default: stderr at the configured
// log_level).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithMeterProvider makes the session report its queue counters (package metrics' names) to
// mp from Open until Close. Upstream DAQIRI reports to the global provider: pass
// otel.GetMeterProvider() for the same.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(o *options) { o.meter = mp }
}

// WithMLX5Fabric gives the mlx5 engine a fabric for the addresses it claims: the ConnectX
// device model's ports (model:N, vfio+model:N) through &modelch.Fabric{} from package
// mlx5/model/modelch, or a test double of the user's. Without it the library links no model,
// and a model address is refused with the key path.
func WithMLX5Fabric(f channel.Fabric) Option {
	return withEngine(config.EngineMLX5, mlx5.OpenWith(f))
}

// withEngine opens engine name with open instead of the built-in one (for tests, which stand
// a fake engine in for a real one).
func withEngine(name string, open engine.Opener) Option {
	return func(o *options) {
		if o.engines == nil {
			o.engines = map[string]engine.Opener{}
		}
		o.engines[name] = open
	}
}

// Session is an open configuration: allocated memory, running queues and engines.
type Session struct {
	cfg     *config.Config
	log     *slog.Logger
	ports   []*engine.Port
	regions map[string]*engine.Region
	engines map[string]engine.Engine
	byPort  []engine.Engine
	rxMeta  *engine.MetaPool
	txMeta  *engine.MetaPool
	rxRing  int        // ring size of RX queues (rx_meta_buffers)
	qmu     sync.Mutex // serialises run-time queue and region changes

	rrPort []atomic.Uint32 // round-robin cursor per port (RxBurstPort)
	rrAll  atomic.Uint32   // round-robin cursor over ports (RxBurstAny)

	// Services' per-session state (see services in engines.go).
	meterProvider metric.MeterProvider // WithMeterProvider's, or nil
	metricsReg    metric.Registration  // registration with meterProvider
	reorder       *reorder.Service     // nil without reorder plans
	hwReorders    []*engine.HWReorder  // reorder_engine: hw plans, run by their engines

	opened    []sessionHook // hooks whose open succeeded, closed in reverse order
	closeOnce sync.Once
	closeErrs []error // what the first Close could not do (engines, unmapping)
	// heldAtClose are the regions the first Close left mapped because buffers were held;
	// every Close reports what they still hold.
	heldAtClose []*engine.Region
	closed      atomic.Bool
	inflight    atomic.Int64 // API calls in progress; Close waits for them
}

// enter admits an API call unless the session is closing; leave ends it.
func (s *Session) enter() error {
	s.inflight.Add(1)
	if s.closed.Load() {
		s.inflight.Add(-1)
		return fmt.Errorf("session closed: %w", ErrNotReady)
	}
	return nil
}

func (s *Session) leave() { s.inflight.Add(-1) }

// OpenFile loads a YAML configuration file and opens it.
func OpenFile(ctx context.Context, path string, opts ...Option) (*Session, error) {
	cfg, err := config.LoadFile(path)
	if err != nil {
		return nil, err
	}
	return Open(ctx, cfg, opts...)
}

// Open validates cfg, allocates its memory regions, sets up every queue and starts the
// engines. On error everything allocated so far is released.
func Open(ctx context.Context, cfg *config.Config, opts ...Option) (s *Session, err error) {
	var o options
	for _, f := range opts {
		f(&o)
	}
	if cfg == nil {
		return nil, fmt.Errorf("daqiri: nil config: %w", ErrNullPtr)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(cfg.Placeholders) > 0 {
		var errs []error
		for _, p := range cfg.Placeholders {
			errs = append(errs, cfg.Errorf(p, "placeholder value must be replaced with a real one before the configuration can be opened"))
		}
		return nil, errors.Join(errs...)
	}
	if o.log == nil {
		o.log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel(cfg.LogLevel)}))
	}
	for _, w := range cfg.Warnings {
		o.log.Warn("config: " + w)
	}
	s = &Session{cfg: cfg, log: o.log, meterProvider: o.meter, regions: map[string]*engine.Region{}, engines: map[string]engine.Engine{}}
	sess := s // the named result is overwritten by `return nil, err`
	defer func() {
		if err != nil {
			sess.Close()
		}
	}()

	if err := s.allocRegions(o.appMem); err != nil {
		return nil, err
	}
	if err := s.buildPorts(); err != nil {
		return nil, err
	}
	s.rrPort = make([]atomic.Uint32, len(s.ports))
	s.byPort = make([]engine.Engine, len(s.ports))
	for _, h := range services() {
		if h.open == nil {
			continue
		}
		if err := h.open(s); err != nil {
			return nil, err
		}
		s.opened = append(s.opened, h)
	}

	// Group ports by engine and open each engine once.
	groups := map[string][]*engine.Port{}
	var names []string
	for _, p := range s.ports {
		if _, ok := groups[p.Engine]; !ok {
			names = append(names, p.Engine)
		}
		groups[p.Engine] = append(groups[p.Engine], p)
	}
	for _, name := range names {
		open, err := opener(cfg, name, groups[name], o.engines)
		if err != nil {
			return nil, err
		}
		e, err := open(ctx, &engine.Env{Config: cfg, Ports: groups[name], Log: s.log.With("engine", name), HWReorders: s.hwReordersOf(groups[name])})
		if err != nil {
			return nil, err
		}
		s.engines[name] = e
		for _, p := range groups[name] {
			s.byPort[p.ID] = e
		}
	}
	return s, nil
}

func logLevel(s string) slog.Level {
	switch strings.ToLower(s) {
	case "trace", "debug":
		return slog.LevelDebug
	case "info":
		return slog.LevelInfo
	case "error", "critical":
		return slog.LevelError
	case "off":
		return slog.LevelError + 100
	}
	return slog.LevelWarn
}

// usedRegions is the set of region names some queue or reorder plan refers to.
func usedRegions(cfg *config.Config) map[string]bool {
	used := map[string]bool{}
	for _, ifc := range cfg.Interfaces {
		var qs []config.Queue
		if ifc.RX != nil {
			qs = append(qs, ifc.RX.Queues...)
			for _, ro := range ifc.RX.Reorders {
				used[ro.MemoryRegion] = true
			}
		}
		if ifc.TX != nil {
			qs = append(qs, ifc.TX.Queues...)
		}
		for _, q := range qs {
			for _, m := range q.MemoryRegions {
				used[m] = true
			}
		}
	}
	return used
}

func (s *Session) allocRegions(app map[string]engine.Memory) error {
	used := usedRegions(s.cfg)
	for name := range app {
		rc := s.cfg.Region(name)
		switch {
		case rc == nil:
			return fmt.Errorf("daqiri.WithRegionMemory: no memory region %q in memory_regions: %w", name, ErrInvalidParameter)
		case !rc.Unowned:
			return fmt.Errorf("daqiri.WithRegionMemory: memory region %q is owned by the library; mark it owned: false to lend it application memory: %w", name, ErrInvalidParameter)
		}
	}
	for i := range s.cfg.MemoryRegions {
		rc := &s.cfg.MemoryRegions[i]
		path := fmt.Sprintf("memory_regions[%d]", i)
		if !used[rc.Name] {
			s.log.Warn("memory region not used by any queue; not allocated", "region", rc.Name)
			continue
		}
		var mem engine.Memory
		var err error
		if rc.Unowned {
			if mem, err = s.appMemory(rc, path, app[rc.Name]); err != nil {
				return err
			}
		} else {
			node := -1
			if rc.Kind == config.KindHost || rc.Kind == config.KindHuge {
				// affinity is the NUMA node of host and huge memory (upstream passes it to
				// rte_malloc_socket). A node this machine lacks is said loudly, not ignored.
				if hugepage.NodeExists(rc.Affinity) {
					node = rc.Affinity
				} else {
					s.log.Warn(s.cfg.Errorf(path+".affinity", "NUMA node %d does not exist on this machine; memory region %s is allocated without a node preference", rc.Affinity, rc.Name).Error())
				}
			}
			mem, err = allocMemory(rc, node)
		}
		if err != nil {
			return s.cfg.Errorf(path, "memory region %s (%s, %d × %d bytes): %w", rc.Name, rc.Kind, rc.NumBufs, rc.BufSize, err)
		}
		r, err := engine.NewRegion(rc, mem)
		if err != nil {
			mem.Close()
			return s.cfg.Errorf(path, "%v", err)
		}
		s.regions[rc.Name] = r
	}
	return nil
}

// allocMemory maps a region's backing store by kind; host and huge memory preferably on NUMA
// node node (< 0: anywhere).
func allocMemory(rc *config.MemoryRegion, node int) (engine.Memory, error) {
	size := rc.NumBufs * rc.BufSize
	switch rc.Kind {
	case config.KindHost:
		return hugepage.MapOnNode(size, false, node)
	case config.KindHuge:
		return hugepage.MapOnNode(size, true, node)
	case config.KindHostPinned, config.KindDevice:
		return allocGPU(rc, size)
	}
	return nil, fmt.Errorf("unknown memory kind %q", rc.Kind)
}

func (s *Session) buildPorts() error {
	cfg := s.cfg
	maxRx, maxTx := 1, 1
	for _, ifc := range cfg.Interfaces {
		if ifc.RX != nil {
			for _, q := range ifc.RX.Queues {
				maxRx = max(maxRx, q.BatchSize)
			}
		}
		if ifc.TX != nil {
			for _, q := range ifc.TX.Queues {
				maxTx = max(maxTx, q.BatchSize)
			}
		}
	}
	var err error
	rxN, txN := cfg.RxMetaBuffers, cfg.TxMetaBuffers
	if rxN <= 0 {
		rxN = config.DefaultMetaBuffers
	}
	if txN <= 0 {
		txN = config.DefaultMetaBuffers
	}
	// Arrays are sized for small batches up front and grow once to the largest batch, so
	// rx_meta_buffers × a 10240-packet batch is not paid for bursts that never carry it.
	s.rxRing = rxN
	if s.rxMeta, err = engine.NewMetaPool("rx", rxN, min(maxRx, 64), false); err != nil {
		return err
	}
	if s.txMeta, err = engine.NewMetaPool("tx", txN, min(maxTx, 64), true); err != nil {
		return err
	}
	for i := range cfg.Interfaces {
		ifc := &cfg.Interfaces[i]
		name, err := cfg.ResolveEngine(i)
		if err != nil {
			return err
		}
		p := &engine.Port{ID: i, Name: ifc.Name, Config: ifc, Engine: name, Raw: cfg.StreamType == config.StreamRaw}
		regions := func(q *config.Queue) []*engine.Region {
			var rs []*engine.Region
			for _, m := range q.MemoryRegions {
				if r := s.regions[m]; r != nil {
					rs = append(rs, r)
				}
			}
			return rs
		}
		if ifc.RX != nil {
			for qi := range ifc.RX.Queues {
				qc := &ifc.RX.Queues[qi]
				q, err := engine.NewRxQueue(p, qi, qc, regions(qc), s.rxMeta, rxN)
				if err != nil {
					return err
				}
				p.Rx = append(p.Rx, q)
			}
		}
		if ifc.TX != nil {
			for qi := range ifc.TX.Queues {
				qc := &ifc.TX.Queues[qi]
				p.Tx = append(p.Tx, engine.NewTxQueue(p, qi, qc, regions(qc), s.txMeta))
			}
		}
		s.ports = append(s.ports, p)
	}
	return nil
}

// Close stops every engine, frees every burst still queued to the application and releases
// the memory regions. Bursts the application still holds must be freed before Close: memory
// with outstanding buffers stays mapped and Close reports it. Close is idempotent.
func (s *Session) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		// Let calls that were already inside (a Send writing to a socket) finish before the
		// engines release what they use: those admitted by the session's own gate and those
		// admitted by a queue's (TxBurst, Send, RxBurst). Calls are short; bound the wait
		// anyway.
		for deadline := time.Now().Add(5 * time.Second); !s.callsIdle() && time.Now().Before(deadline); {
			time.Sleep(100 * time.Microsecond)
		}
		var errs []error
		for name, e := range s.engines {
			if err := e.Close(); err != nil {
				errs = append(errs, fmt.Errorf("engine %s: %w", name, err))
			}
		}
		for i := len(s.opened) - 1; i >= 0; i-- {
			if s.opened[i].close != nil {
				s.opened[i].close(s)
			}
		}
		for _, p := range s.ports {
			for _, q := range p.Queues().Rx {
				if n := q.Drain(); n > 0 {
					q.Stats.Drop(engine.DropClosed, n)
				}
			}
		}
		names := make([]string, 0, len(s.regions))
		for n := range s.regions {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			r := s.regions[n]
			if err := r.Close(); errors.Is(err, engine.ErrBuffersOutstanding) {
				s.heldAtClose = append(s.heldAtClose, r)
			} else if err != nil {
				errs = append(errs, err)
			}
		}
		s.closeErrs = errs
	})
	// Buffers held at the first Close are counted as of now: those freed since are not
	// reported again, and a region whose last buffer came back is not reported at all.
	errs := slices.Clone(s.closeErrs)
	for _, r := range s.heldAtClose {
		if err := r.Outstanding(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// callsIdle reports whether no API call is inside the session: none admitted by enter and
// none by a queue's EnterCall. Every queue a call can have entered is in its port's current
// queue set: a deleted queue leaves the set only after its Shut waited for its calls.
func (s *Session) callsIdle() bool {
	if s.inflight.Load() > 0 {
		return false
	}
	for _, p := range s.ports {
		set := p.Queues()
		for _, q := range set.Rx {
			if !q.CallsIdle() {
				return false
			}
		}
		for _, q := range set.Tx {
			if !q.CallsIdle() {
				return false
			}
		}
	}
	return true
}

// Ports are the session's ports as engines and services see them (read-only).
func (s *Session) Ports() []*engine.Port { return s.ports }

// Region is an allocated memory region by name (nil when absent or not allocated).
func (s *Session) Region(name string) *engine.Region {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	return s.regions[name]
}

// Engine is the engine serving a port (nil for a bad port).
func (s *Session) Engine(port int) engine.Engine {
	if port < 0 || port >= len(s.byPort) {
		return nil
	}
	return s.byPort[port]
}

// Logger is the session's logger.
func (s *Session) Logger() *slog.Logger { return s.log }

// Config is the session's configuration (do not modify it).
func (s *Session) Config() *config.Config { return s.cfg }

// NumPorts is the number of configured interfaces.
func (s *Session) NumPorts() int { return len(s.ports) }

// Port returns the port id of the interface with this name or address (upstream
// get_port_id); ErrInvalidParameter when there is none.
func (s *Session) Port(key string) (int, error) {
	for _, p := range s.ports {
		if p.Name == key {
			return p.ID, nil
		}
	}
	for _, p := range s.ports {
		if p.Config.Address == key {
			return p.ID, nil
		}
	}
	return -1, fmt.Errorf("no interface named %q: %w", key, ErrInvalidParameter)
}

// PortName is the interface name of a port id.
func (s *Session) PortName(port int) string {
	if port < 0 || port >= len(s.ports) {
		return ""
	}
	return s.ports[port].Name
}

// NumRxQueues is the number of receive queues on a port.
func (s *Session) NumRxQueues(port int) int {
	if port < 0 || port >= len(s.ports) {
		return 0
	}
	return len(s.ports[port].Queues().LiveRx())
}

// NumTxQueues is the number of transmit queues on a port.
func (s *Session) NumTxQueues(port int) int {
	if port < 0 || port >= len(s.ports) {
		return 0
	}
	return len(s.ports[port].Queues().LiveTx())
}

// RxQueueIDs lists a port's receive queue ids in configuration order.
func (s *Session) RxQueueIDs(port int) []int {
	if port < 0 || port >= len(s.ports) {
		return nil
	}
	live := s.ports[port].Queues().LiveRx()
	ids := make([]int, len(live))
	for i, q := range live {
		ids[i] = q.ID
	}
	return ids
}

// TxQueueIDs lists a port's transmit queue ids in configuration order.
func (s *Session) TxQueueIDs(port int) []int {
	if port < 0 || port >= len(s.ports) {
		return nil
	}
	live := s.ports[port].Queues().LiveTx()
	ids := make([]int, len(live))
	for i, q := range live {
		ids[i] = q.ID
	}
	return ids
}

func (s *Session) port(port int) (*engine.Port, error) {
	if s.closed.Load() {
		return nil, fmt.Errorf("session closed: %w", ErrNotReady)
	}
	if port < 0 || port >= len(s.ports) {
		return nil, fmt.Errorf("port %d of %d: %w", port, len(s.ports), ErrInvalidParameter)
	}
	return s.ports[port], nil
}

func (s *Session) rxQueue(port, queue int) (*engine.RxQueue, error) {
	p, err := s.port(port)
	if err != nil {
		return nil, err
	}
	var q *engine.RxQueue
	for _, x := range p.Queues().Rx {
		if x.ID == queue {
			q = x
		}
	}
	switch {
	case q == nil:
		return nil, fmt.Errorf("port %d (%s) has no rx queue %d: %w", port, p.Name, queue, ErrInvalidParameter)
	case q.Deleted():
		return nil, fmt.Errorf("port %d (%s) rx queue %d: %w", port, p.Name, queue, ErrQueueDeleted)
	}
	return q, nil
}

// RxBurst takes the next received burst of one queue. It never blocks: when nothing is ready
// the error is ErrNotReady.
func (s *Session) RxBurst(port, queue int) (*Burst, error) {
	q, err := s.rxQueue(port, queue)
	if err != nil {
		return nil, err
	}
	if q.Poll == nil {
		// A ring: taken without a gate, checked after the take (RxQueue.NextOpen says why
		// that is safe against Close and deletion).
		b, ok, closed := q.NextOpen(&s.closed)
		switch {
		case closed:
			return nil, s.gateErr(port, "rx", queue)
		case ok:
			return b, nil
		}
		return nil, ErrNotReady
	}
	// A poll runs the engine's code: one gate for the session and the queue (Close waits
	// for the queue's calls).
	c, ok := q.EnterCall(&s.closed)
	if !ok {
		return nil, s.gateErr(port, "rx", queue)
	}
	defer q.LeaveCall(c)
	return s.next(q)
}

// gateErr says why a queue's EnterCall refused a call: the session is closing, or the
// queue was deleted.
func (s *Session) gateErr(port int, dir string, queue int) error {
	if s.closed.Load() {
		return fmt.Errorf("session closed: %w", ErrNotReady)
	}
	return fmt.Errorf("port %d %s queue %d: %w", port, dir, queue, ErrQueueDeleted)
}

func (s *Session) next(q *engine.RxQueue) (*Burst, error) {
	if q.Poll != nil {
		return q.Poll()
	}
	if b, ok := q.Next(); ok {
		return b, nil
	}
	return nil, ErrNotReady
}

// RxBurstPort takes the next burst from any queue of a port, round-robin.
func (s *Session) RxBurstPort(port int) (*Burst, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	return s.rxBurstPort(port)
}

func (s *Session) rxBurstPort(port int) (*Burst, error) {
	p, err := s.port(port)
	if err != nil {
		return nil, err
	}
	rxs := p.Queues().Rx
	n := len(rxs)
	if n == 0 {
		return nil, fmt.Errorf("port %d (%s) has no rx queues: %w", port, p.Name, ErrInvalidParameter)
	}
	start := int(s.rrPort[port].Add(1)-1) % n
	for k := 0; k < n; k++ {
		q := rxs[(start+k)%n]
		if !q.Enter() {
			continue // deleted
		}
		b, err := s.next(q)
		q.Leave()
		if err == nil {
			s.rrPort[port].Store(uint32((start + k + 1) % n))
			return b, nil
		} else if !errors.Is(err, ErrNotReady) {
			return nil, err
		}
	}
	return nil, ErrNotReady
}

// RxBurstAny takes the next burst from any port, round-robin over ports.
func (s *Session) RxBurstAny() (*Burst, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	n := len(s.ports)
	start := int(s.rrAll.Add(1)-1) % max(n, 1)
	for k := 0; k < n; k++ {
		p := (start + k) % n
		if len(s.ports[p].Queues().Rx) == 0 {
			continue
		}
		if b, err := s.rxBurstPort(p); err == nil {
			return b, nil
		} else if !errors.Is(err, ErrNotReady) {
			return nil, err
		}
	}
	return nil, ErrNotReady
}

func (s *Session) txQueue(port, queue int) (*engine.TxQueue, error) {
	p, err := s.port(port)
	if err != nil {
		return nil, err
	}
	var q *engine.TxQueue
	for _, x := range p.Queues().Tx {
		if x.ID == queue {
			q = x
		}
	}
	switch {
	case q == nil:
		return nil, fmt.Errorf("port %d (%s) has no tx queue %d: %w", port, p.Name, queue, ErrInvalidParameter)
	case q.Deleted():
		return nil, fmt.Errorf("port %d (%s) tx queue %d: %w", port, p.Name, queue, ErrQueueDeleted)
	}
	return q, nil
}

// sendQueue is txQueue(b.Port(), b.Queue()) for Send, without walking the port's queue set
// when the burst came from NewBurst of a live queue of this session: a queue not deleted is
// in its port's set under its id (ids are unique in a set, and a queue leaves it only after
// it was deleted), and the session-closed check txQueue makes first is the same as EnterCall's
// after it, with the same error (gateErr). A deletion after this check is caught by the gate,
// as after txQueue's own check. Anything else — a burst of another session, of a deleted
// queue (whose id may now be another queue's), not from NewBurst — takes txQueue.
func (s *Session) sendQueue(b *Burst) (*engine.TxQueue, error) {
	if q := b.TxQueueOf(); q != nil {
		if p := b.Port(); p >= 0 && p < len(s.ports) && s.ports[p] == q.Port && !q.Deleted() {
			return q, nil
		}
	}
	return s.txQueue(b.Port(), b.Queue())
}

// TxAvailable reports whether a TX burst of n packets can be taken now.
func (s *Session) TxAvailable(port, queue, n int) bool {
	q, err := s.txQueue(port, queue)
	if err != nil {
		return false
	}
	if c, ok := s.byPort[port].(engine.TxChecker); ok {
		return c.TxAvailable(q, n)
	}
	return q.Available(n)
}

// TxBurst takes a TX burst of n packets (0 = the queue's batch_size) with buffers from the
// queue's memory regions and zero lengths. Errors: ErrNoFreeBurstBuffers when no burst
// metadata is free, ErrNoFreePacketBuffers when a region lacks buffers.
func (s *Session) TxBurst(port, queue, n int) (*Burst, error) {
	q, err := s.txQueue(port, queue)
	if err != nil {
		return nil, err
	}
	// No gate: the burst is checked after it is taken (TxQueue.NewBurstOpen says why that
	// is safe against Close and deletion).
	b, closed, err := q.NewBurstOpen(n, &s.closed)
	if closed {
		return nil, s.gateErr(port, "tx", queue)
	}
	return b, err
}

// Send transmits a TX burst. On success the engine owns the burst. When the error wraps
// ErrNotReady (not connected yet, no peer yet, session closing) or ErrInvalidParameter (bad
// port, queue or packet) nothing was sent and the caller still owns the burst: retry or Free
// it. After any other error the engine took the burst, sent what it could and counted the
// rest as dropped.
func (s *Session) Send(b *Burst) error {
	if b == nil {
		return ErrNullPtr
	}
	if !b.IsTx() {
		return fmt.Errorf("Send of a received burst: %w", ErrInvalidParameter)
	}
	q, err := s.sendQueue(b)
	if err != nil {
		return err
	}
	c, ok := q.EnterCall(&s.closed)
	if !ok {
		return s.gateErr(b.Port(), "tx", b.Queue())
	}
	defer q.LeaveCall(c)
	return s.byPort[b.Port()].Send(b)
}

// Stats is a snapshot of every queue's counters.
type Stats struct {
	Ports []PortStats `json:"ports"`
}

// PortStats is one port's queues.
type PortStats struct {
	Port   int          `json:"port"`
	Name   string       `json:"name"`
	Engine string       `json:"engine"`
	Rx     []QueueStats `json:"rx"`
	Tx     []QueueStats `json:"tx"`
	// Events counts what happened on the port outside its queues, by name (only non-zero
	// ones): connections_accepted, connections_refused_max_connections (a TCP server at its
	// max_connections), connections_closed_frame_too_large (a TCP peer announced a frame
	// above max_payload_size), kernel_passed (frames an XDP port with flow_isolation handed
	// to the kernel because no flow matched them).
	Events map[string]uint64 `json:"events,omitempty"`
}

// Totals sums packets, bytes and drops over every queue of the snapshot.
func (st Stats) Totals() (rx, tx QueueStats) {
	for _, p := range st.Ports {
		for _, q := range p.Rx {
			rx.Packets += q.Packets
			rx.Bytes += q.Bytes
			rx.Bursts += q.Bursts
			rx.Dropped += q.Dropped
		}
		for _, q := range p.Tx {
			tx.Packets += q.Packets
			tx.Bytes += q.Bytes
			tx.Bursts += q.Bursts
			tx.Dropped += q.Dropped
		}
	}
	return rx, tx
}

// Stats snapshots every queue's counters (per port and queue: packets, bytes, drops by reason,
// ring occupancy). Queues deleted at run time keep their final counters, marked Deleted,
// until their id is reused (at most the 256 most recent per port and direction).
func (s *Session) Stats() Stats {
	var st Stats
	for _, p := range s.ports {
		ps := PortStats{Port: p.ID, Name: p.Name, Engine: p.Engine, Events: p.Events.Snapshot()}
		set := p.Queues()
		for _, q := range set.Rx {
			qs := q.Stats.Snapshot()
			qs.Queue, qs.Deleted = q.ID, q.Deleted()
			qs.RingUsed = q.Pending()
			ps.Rx = append(ps.Rx, qs)
		}
		for _, q := range set.Tx {
			qs := q.Stats.Snapshot()
			qs.Queue, qs.Deleted = q.ID, q.Deleted()
			ps.Tx = append(ps.Tx, qs)
		}
		st.Ports = append(st.Ports, ps)
	}
	return st
}

// PrintStats writes a per-queue table of the counters (upstream print_stats).
func (s *Session) PrintStats(w io.Writer) {
	st := s.Stats()
	fmt.Fprintf(w, "%-16s %-8s %-4s %5s %14s %16s %12s\n", "interface", "engine", "dir", "queue", "packets", "bytes", "dropped")
	for _, p := range st.Ports {
		for _, q := range p.Rx {
			fmt.Fprintf(w, "%-16s %-8s %-4s %5d %14d %16d %12d%s%s\n", p.Name, p.Engine, "rx", q.Queue, q.Packets, q.Bytes, q.Dropped, dropDetail(q), deletedNote(q))
		}
		for _, q := range p.Tx {
			fmt.Fprintf(w, "%-16s %-8s %-4s %5d %14d %16d %12d%s%s\n", p.Name, p.Engine, "tx", q.Queue, q.Packets, q.Bytes, q.Dropped, dropDetail(q), deletedNote(q))
		}
		if len(p.Events) > 0 {
			fmt.Fprintf(w, "%-16s %-8s events: %s\n", p.Name, p.Engine, strings.TrimSuffix(strings.TrimPrefix(dropDetail(QueueStats{Drops: p.Events}), "  ("), ")"))
		}
	}
}

func deletedNote(q QueueStats) string {
	if q.Deleted {
		return "  [deleted]"
	}
	return ""
}

func dropDetail(q QueueStats) string {
	if len(q.Drops) == 0 {
		return ""
	}
	keys := make([]string, 0, len(q.Drops))
	for k := range q.Drops {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("  (")
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", k, q.Drops[k])
	}
	b.WriteString(")")
	return b.String()
}
