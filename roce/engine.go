package roce

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/rdmacm"
	"github.com/daqiri-go/daqiri/verbs"
)

// Tunables, named as upstream names them (upstream-daqiri.md §3.4).
const (
	// EnvSignalEvery: request a completion for 1 of every N sends (default
	// 1). Fewer completions cost less CPU; buffers of unsignalled sends are
	// released when a later signalled one completes, or at the latest about
	// a millisecond after the last send (the worker then posts a zero-length
	// signalled RDMA WRITE).
	EnvSignalEvery = "DAQIRI_RDMA_SEND_SIGNAL_EVERY"
	// EnvMinRNRTimer: the minimum RNR NAK timer code (0..31) this side's QPs
	// advertise; the peer waits that long before resending a message that
	// found no receive buffer posted. Default 12 (0.64 ms); the connection
	// manager's default, 0, means 655 ms and stalls a stream whenever a
	// receiver falls behind for a moment.
	EnvMinRNRTimer = "DAQIRI_RDMA_MIN_RNR_TIMER"

	// DefaultPort is the server port when local_addr names none (upstream).
	DefaultPort = 18515
	// DefaultMinRNRTimer is EnvMinRNRTimer's default.
	DefaultMinRNRTimer = 12
	// MaxConnections bounds a session's connections (upstream: 128).
	MaxConnections = 128
	// sqDepth bounds outstanding send work requests per connection and
	// maxRecvDepth posted receives (upstream: 1024 outstanding WRs).
	sqDepth      = 1024
	maxRecvDepth = 512
	// resolveTimeout bounds address and route resolution (upstream: 2 s).
	resolveTimeout = 2 * time.Second
	// ackTimeout is the RC ACK timeout exponent: 4.096 µs × 2^14 ≈ 67 ms
	// per try, so a peer that vanishes without a word is noticed within
	// about half a second of traffic (7 retries).
	ackTimeout = 14
)

// Engine is the RoCE engine: RC (or UC) connections made with rdma_cm,
// carrying the ports' bursts as SEND/RECV messages and RDMA WRITE/READ.
type Engine struct {
	env  *engine.Env
	log  *slog.Logger
	w    *engine.Workers
	ch   *rdmacm.Channel
	devs map[string]*device
	eps  []*endpoint

	signalEvery int
	minRNR      uint8

	st states

	mu     sync.Mutex
	conns  map[uint64]*conn
	byID   map[*rdmacm.ID]*conn
	nextID atomic.Uint64

	closing atomic.Bool
	stopCh  chan struct{}
	wg      sync.WaitGroup // connection workers and teardown
}

// Open starts the RoCE endpoints of env.Ports: each server binds and listens
// on its local_addr, each client binds its local_addr to find its device.
// Memory regions the ports' queues use are registered on the device.
func Open(ctx context.Context, env *engine.Env) (engine.Engine, error) {
	e := &Engine{env: env, log: env.Log, w: engine.NewWorkers(env.Log), devs: map[string]*device{},
		conns: map[uint64]*conn{}, byID: map[*rdmacm.ID]*conn{}, stopCh: make(chan struct{}),
		st: states{m: map[*engine.Burst]*burstState{}}}
	var err error
	if e.signalEvery, e.minRNR, err = tunables(); err != nil {
		return nil, err
	}
	for _, p := range env.Ports {
		if err := e.checkPort(p); err != nil {
			return nil, err
		}
	}
	if e.ch, err = rdmacm.Open(); err != nil {
		return nil, env.Config.Errorf(env.Ports[0].Path(), "interface %s: the RoCE engine needs the kernel's rdma_cm: %v", env.Ports[0].Name, err)
	}
	for _, p := range env.Ports {
		ep, err := e.newEndpoint(p)
		if err != nil {
			e.Close()
			return nil, err
		}
		e.eps = append(e.eps, ep)
	}
	// The connection manager's events are handled on master_core, as
	// upstream runs its CM thread.
	e.w.Go("roce/cm", strconv.Itoa(env.Config.MasterCore), e.cmLoop)
	return e, nil
}

// tunables reads the environment variables.
func tunables() (int, uint8, error) {
	every, rnr := 1, uint8(DefaultMinRNRTimer)
	if s := os.Getenv(EnvSignalEvery); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > sqDepth/2 {
			return 0, 0, fmt.Errorf("%s=%q: want a number of sends from 1 to %d", EnvSignalEvery, s, sqDepth/2)
		}
		every = n
	}
	if s := os.Getenv(EnvMinRNRTimer); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > 31 {
			return 0, 0, fmt.Errorf("%s=%q: want a timer code from 0 to 31", EnvMinRNRTimer, s)
		}
		rnr = uint8(n)
	}
	return every, rnr, nil
}

// checkPort validates what the configuration schema cannot: the engine's own
// limits.
func (e *Engine) checkPort(p *engine.Port) error {
	cfg := e.env.Config
	sc, rc := p.Config.Socket, p.Config.RoCE
	if sc == nil || sc.Proto() != config.ProtoRoCE || rc == nil {
		return cfg.Errorf(p.Path(), "interface %s: the RoCE engine serves roce:// endpoints with roce_config", p.Name)
	}
	switch rc.TransportMode {
	case "RC", "UC":
	case "UD":
		return cfg.Errorf(p.Path()+".roce_config.transport_mode", "interface %s: transport_mode UD is not supported by the RoCE engine (it carries connections: use RC, or UC for unacknowledged SEND/WRITE)", p.Name)
	default:
		return cfg.Errorf(p.Path()+".roce_config.transport_mode", "interface %s: invalid transport_mode %q (valid: RC, UC)", p.Name, rc.TransportMode)
	}
	if _, err := netip.ParseAddr(sc.Local.Host); err != nil {
		return cfg.Errorf(p.Path()+".socket_config.local_addr", "interface %s: %s: the RoCE engine needs an IP address, not %q", p.Name, sc.Local, sc.Local.Host)
	}
	// Upstream's RDMA engine ignores queue memory_regions and names a
	// region per burst (local_mr_name); here the queue's regions are where
	// messages are received and sent from.
	for _, q := range p.Rx {
		if len(q.Regions) != 1 {
			return cfg.Errorf(q.Path()+".memory_regions", "interface %s rx queue %d: the RoCE engine receives into the queue's memory region: list exactly one (upstream's local_mr_name is not used), %d configured", p.Name, q.ID, len(q.Regions))
		}
	}
	for _, q := range p.Tx {
		if len(q.Regions) == 0 {
			return cfg.Errorf(q.Path()+".memory_regions", "interface %s tx queue %d: the RoCE engine sends from the queue's memory regions (one per segment; upstream's local_mr_name is not used): list at least one", p.Name, q.ID)
		}
	}
	if rc.TransportMode == "UC" {
		for _, r := range portRegions(p) {
			if regionAccess(cfg, r.Name)&config.AccessRDMARead != 0 {
				return cfg.Errorf(p.Path()+".roce_config.transport_mode", "interface %s: transport_mode UC cannot serve RDMA READ, but memory region %s grants rdma_read: use RC, or drop rdma_read from the region's access", p.Name, r.Name)
			}
		}
	}
	return nil
}

// portRegions lists the distinct regions of a port's queues.
func portRegions(p *engine.Port) []*engine.Region {
	var out []*engine.Region
	seen := map[*engine.Region]bool{}
	add := func(rs []*engine.Region) {
		for _, r := range rs {
			if !seen[r] {
				seen[r] = true
				out = append(out, r)
			}
		}
	}
	for _, q := range p.Rx {
		add(q.Regions)
	}
	for _, q := range p.Tx {
		add(q.Regions)
	}
	return out
}

// Close disconnects every connection, stops the workers, frees every burst
// the engine holds and releases every RDMA object.
func (e *Engine) Close() error {
	if e.closing.Swap(true) {
		return nil
	}
	close(e.stopCh)
	var errs []error
	for _, ep := range e.eps {
		if ep.listen != nil {
			if _, err := ep.listen.Destroy(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	e.mu.Lock()
	conns := make([]*conn, 0, len(e.conns))
	for _, c := range e.conns {
		conns = append(conns, c)
	}
	e.mu.Unlock()
	for _, c := range conns {
		c.fail(fmt.Errorf("session closing: %w", ErrDisconnected))
	}
	// Teardown is bounded per connection; wait for all of them.
	e.wg.Wait()
	e.w.Stop()
	if e.ch != nil {
		if err := e.ch.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, d := range e.devs {
		if err := d.close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (e *Engine) endpointOf(port int) *endpoint {
	for _, ep := range e.eps {
		if ep.port.ID == port {
			return ep
		}
	}
	return nil
}

func (e *Engine) conn(id uint64) *conn {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.conns[id]
}

// ConnID is a port's first ready connection (ErrNotReady while there is
// none).
func (e *Engine) ConnID(port int) (uint64, error) {
	ep := e.endpointOf(port)
	if ep == nil {
		return 0, fmt.Errorf("port %d is not a RoCE endpoint: %w", port, engine.ErrInvalidParameter)
	}
	for _, c := range ep.slotConns() {
		if c.ready() {
			return c.id, nil
		}
	}
	return 0, fmt.Errorf("interface %s: no RoCE connection yet: %w", ep.port.Name, engine.ErrNotReady)
}

// Conns lists a port's ready connections, in slot order.
func (e *Engine) Conns(port int) []uint64 {
	ep := e.endpointOf(port)
	if ep == nil {
		return nil
	}
	var ids []uint64
	for _, c := range ep.slotConns() {
		if c.ready() {
			ids = append(ids, c.id)
		}
	}
	return ids
}

// ClaimServerConn returns the next accepted connection of a server port that
// no earlier call returned (upstream rdma_get_server_conn_id): ErrNotReady
// while none is waiting, ErrNoSpaceAvailable once every slot (one per RX
// queue) is claimed.
func (e *Engine) ClaimServerConn(port int) (uint64, error) {
	ep := e.endpointOf(port)
	if ep == nil || ep.cfg.Mode != config.ModeServer {
		return 0, fmt.Errorf("port %d is not a RoCE server endpoint: %w", port, engine.ErrInvalidParameter)
	}
	ep.mu.Lock()
	defer ep.mu.Unlock()
	all := true
	for i, c := range ep.slots {
		if ep.claimed[i] {
			continue
		}
		all = false
		if c != nil && c.ready() {
			ep.claimed[i] = true
			return c.id, nil
		}
	}
	if all {
		return 0, fmt.Errorf("interface %s: all %d connection slots are claimed: %w", ep.port.Name, len(ep.slots), engine.ErrNoSpaceAvailable)
	}
	return 0, fmt.Errorf("interface %s: no unclaimed connection yet: %w", ep.port.Name, engine.ErrNotReady)
}

// PortQueue maps a connection to its port and queue ids (-1 when the port
// has no queue in that direction).
func (e *Engine) PortQueue(id uint64) (port, rxQueue, txQueue int, err error) {
	c := e.conn(id)
	if c == nil {
		return 0, 0, 0, fmt.Errorf("connection %d is closed or unknown: %w", id, engine.ErrConnectFailure)
	}
	rxQueue, txQueue = -1, -1
	if c.rxq != nil {
		rxQueue = c.rxq.ID
	}
	if c.txq != nil {
		txQueue = c.txq.ID
	}
	return c.ep.port.ID, rxQueue, txQueue, nil
}

// SetSockopt is not supported: RoCE connections have no socket.
func (e *Engine) SetSockopt(id uint64, level, opt int, val []byte) error {
	return fmt.Errorf("connection %d: RoCE connections have no socket options: %w", id, engine.ErrNotSupported)
}

// Connect makes a new connection from a client port to a RoCE server,
// waiting at most timeout (upstream rdma_connect_to_server). It resolves the
// server's address and route (2 s each at most), exchanges the region
// tables and returns the connection id once the connection carries traffic.
func (e *Engine) Connect(port int, server netip.AddrPort, timeout time.Duration) (uint64, error) {
	ep := e.endpointOf(port)
	if ep == nil || ep.cfg.Mode != config.ModeClient {
		return 0, fmt.Errorf("port %d is not a RoCE client endpoint: %w", port, engine.ErrInvalidParameter)
	}
	if !server.IsValid() || server.Port() == 0 {
		return 0, fmt.Errorf("interface %s: server address %v needs an IP and a non-zero port: %w", ep.port.Name, server, engine.ErrInvalidParameter)
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	return ep.connect(server, timeout)
}

// ConnErr is nil while a connection is alive and the reason it ended after
// (wrapping ErrDisconnected). Unknown ids report ErrDisconnected too: their
// connection is gone.
func (e *Engine) ConnErr(id uint64) error {
	c := e.conn(id)
	if c == nil {
		return fmt.Errorf("connection %d: %w", id, ErrDisconnected)
	}
	return c.errNow()
}

// LocalMRs lists the regions a port registered, as a peer would address
// them.
func (e *Engine) LocalMRs(port int) ([]LocalMR, error) {
	ep := e.endpointOf(port)
	if ep == nil {
		return nil, fmt.Errorf("port %d is not a RoCE endpoint: %w", port, engine.ErrInvalidParameter)
	}
	var out []LocalMR
	for _, r := range portRegions(ep.port) {
		if m := ep.dev.mrs[r]; m != nil {
			out = append(out, m.local())
		}
	}
	return out, nil
}

// RemoteMRs lists the regions the peer of a connection advertised (empty for
// peers that do not speak this engine's connect protocol).
func (e *Engine) RemoteMRs(id uint64) ([]RemoteMR, error) {
	c := e.conn(id)
	if c == nil {
		return nil, fmt.Errorf("connection %d: %w", id, ErrDisconnected)
	}
	c.stMu.Lock()
	defer c.stMu.Unlock()
	return append([]RemoteMR(nil), c.remote...), nil
}

// RemoteKey is the rkey and I/O address of packet i's segment seg of a burst
// from one of the port's queues: what to advertise to a peer that reads or
// writes that buffer directly (rping's protocol).
func (e *Engine) RemoteKey(b *engine.Burst, seg, i int) (addr uint64, rkey uint32, err error) {
	ep := e.endpointOf(b.Port())
	if ep == nil {
		return 0, 0, fmt.Errorf("port %d is not a RoCE endpoint: %w", b.Port(), engine.ErrInvalidParameter)
	}
	if i < 0 || i >= b.Len() || seg < 0 || seg >= b.NumSegments() {
		return 0, 0, fmt.Errorf("packet %d segment %d of a %d-packet burst: %w", i, seg, b.Len(), engine.ErrInvalidParameter)
	}
	m := ep.dev.mrs[b.SegmentRegion(seg)]
	if m == nil {
		return 0, 0, fmt.Errorf("region %s is not registered on %s: %w", b.SegmentRegion(seg).Name, ep.dev.info.Name, engine.ErrInvalidParameter)
	}
	return uint64(b.SegmentAddr(seg, i)), m.mr.RKey, nil
}

// SetHeader sets what Send does with a TX burst (upstream rdma_set_header).
func (e *Engine) SetHeader(b *engine.Burst, h Header) error {
	if !b.IsTx() {
		return fmt.Errorf("a header goes on a TX burst: %w", engine.ErrInvalidParameter)
	}
	switch h.Op {
	case OpSend, OpWrite, OpWriteImm, OpRead:
	case OpReadImm:
		return fmt.Errorf("RDMA READ with immediate does not exist in RDMA: %w", engine.ErrNotSupported)
	case OpReceive:
		return fmt.Errorf("opcode RECEIVE: the RoCE engine posts receive buffers itself from the rx queue's memory region: %w", engine.ErrNotSupported)
	default:
		return fmt.Errorf("opcode %v is not one a burst can carry: %w", h.Op, engine.ErrInvalidParameter)
	}
	st := e.st.of(b)
	st.hdr, st.hasHdr, st.done = h, true, false
	if h.Conn != 0 {
		b.SetConnID(h.Conn)
	}
	return nil
}

// Drops snapshots a port's drop counters under upstream's RDMA reason names,
// per RX and TX queue (in configuration order).
func (e *Engine) Drops(port int) (rx, tx []map[string]uint64) {
	ep := e.endpointOf(port)
	if ep == nil {
		return nil, nil
	}
	snap := func(cs []reasonCounters) []map[string]uint64 {
		out := make([]map[string]uint64, len(cs))
		for i := range cs {
			out[i] = cs[i].snapshot()
		}
		return out
	}
	return snap(ep.rxDrops), snap(ep.txDrops)
}

type reasonCounters [NumReasons]atomic.Uint64

func (r *reasonCounters) add(why Reason, n int) {
	if r != nil && n > 0 {
		r[why].Add(uint64(n))
	}
}

func (r *reasonCounters) snapshot() map[string]uint64 {
	m := map[string]uint64{}
	for i := range r {
		if v := r[i].Load(); v != 0 {
			m[Reason(i).String()] = v
		}
	}
	return m
}

// verbsDevice is the RDMA device a local address belongs to: an ID bound to
// it tells.
func (e *Engine) deviceFor(local netip.Addr, path string) (*device, uint8, error) {
	id, err := e.ch.CreateID(rdmacm.PSTCP, verbs.QPTypeRC)
	if err != nil {
		return nil, 0, err
	}
	defer id.Destroy()
	if err := id.Bind(netip.AddrPortFrom(local, 0)); err != nil {
		return nil, 0, e.env.Config.Errorf(path, "%v: %v", local, err)
	}
	info, port, err := id.Device()
	if err != nil {
		return nil, 0, e.env.Config.Errorf(path, "%v", err)
	}
	d, err := e.openDevice(info)
	if err != nil {
		return nil, 0, e.env.Config.Errorf(path, "%v: %v", local, err)
	}
	return d, port, nil
}
