// Package socket is the kernel socket engine: UDP and TCP endpoints (stream_type socket,
// udp:// and tcp:// addresses), client and server, behind the burst API.
//
// Compared with upstream DAQIRI's socket engine it receives straight into the queue's memory
// region (no per-packet allocation), honours batch_size and timeout_us (a partial burst is
// handed over timeout_us after its first packet; with timeout_us 0 as soon as the socket runs
// dry), batches with recvmmsg/sendmmsg, uses UDP GRO/GSO where the kernel offers them, counts
// every kernel-side drop (SO_RXQ_OVFL / SO_MEMINFO), stamps packets with the kernel receive
// time, keeps TCP message boundaries with a 4-byte length prefix, and connects TCP clients in
// the background so Open never blocks on a peer.
//
// Accounting: every datagram the kernel drops for a full socket buffer is counted under
// socket_overflow. One caveat comes from the kernel: when a receive queue uses UDP GRO (its
// buffers are at least 64 KiB) and the sender uses GSO on the same host (loopback), a
// coalesced datagram that finds the buffer full is dropped and counted once although it held
// several packets. Size socket buffers (recv_buffer_size) or pace the sender so this does not
// happen; across a real NIC or a veth the kernel counts per packet.
package socket

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/internal/osthread"
	"github.com/daqiri-go/daqiri/internal/sockio"
)

// Defaults for kernel socket buffers: large enough that a burst of a few thousand 8 KB
// datagrams does not overflow while the worker is handing a burst over.
const (
	DefaultRecvBuffer = 32 << 20
	DefaultSendBuffer = 8 << 20
	groBufSize        = 65536 // a receive buffer must hold a whole coalesced GRO datagram
	maxRecvBatch      = 256
)

// Engine serves the socket endpoints of a session.
type Engine struct {
	env     *engine.Env
	w       *engine.Workers
	eps     []*endpoint
	nextID  atomic.Uint64
	mu      sync.Mutex
	conns   map[uint64]*conn // every live connection, TCP and UDP
	closing atomic.Bool
	// netns is the network namespace Open ran in: TCP clients dial from worker threads,
	// which must create their sockets there.
	netns osthread.NetNS
}

// endpoint is one interface: one socket (UDP) or one listener / client connection (TCP).
type endpoint struct {
	e    *Engine
	port *engine.Port
	cfg  *config.SocketConfig
	rxq  *engine.RxQueue // the RX queue of Open (its successors take over: Forward)
	txq  *engine.TxQueue // the TX queue of Open
	txv  atomic.Pointer[engine.TxQueue]
	opt  sockio.Options

	// UDP
	udp     *sockio.UDP
	udpConn *conn
	peer    atomic.Pointer[netip.AddrPort] // server: last sender, the reply target
	allow   netip.AddrPort                 // server: remote_addr, the only peer accepted (port 0: any)
	txMu    sync.Mutex
	sb      *sockio.SendBatch
	msgs    []sockio.SendMsg
	bufs    [][]byte
	gsoOK   atomic.Bool

	// TCP
	ln     *sockio.TCPListener
	poller *sockio.Poller       // the receive worker's epoll set (see tcpserve.go)
	raised int                  // connections with a raised SO_RCVLOWAT (the worker's own; see tcpserve.go)
	def    atomic.Pointer[conn] // default TX connection
	regMu  sync.Mutex
	reg    map[uint64]*conn // connections handed to the worker, not yet taken over by it
}

// conn is a connection id's state.
type conn struct {
	id   uint64
	ep   *endpoint
	tcp  *sockio.TCPConn // nil for UDP
	dead atomic.Bool
	txMu sync.Mutex
	hdrs []byte
	iov  [][]byte
	// fd is the TCP descriptor's number, fixed at creation (for the poller). fdMu orders
	// shutting the socket down (from Close, from any thread) against closing it (by its
	// receive worker), so that a shutdown never reaches a descriptor number the kernel has
	// since handed to another socket.
	fd       int
	fdMu     sync.Mutex
	fdClosed bool
}

// shutdown shuts the connection's socket down (waking a sender blocked on it), unless it
// is closed already.
func (c *conn) shutdown() {
	c.fdMu.Lock()
	defer c.fdMu.Unlock()
	if !c.fdClosed {
		c.tcp.Shutdown()
	}
}

// closeFD closes the connection's socket once.
func (c *conn) closeFD() error {
	c.fdMu.Lock()
	defer c.fdMu.Unlock()
	if c.fdClosed {
		return nil
	}
	c.fdClosed = true
	return c.tcp.Close()
}

// withFD runs fn on the open socket; ErrConnectFailure once it is closed.
func (c *conn) withFD(fn func() error) error {
	c.fdMu.Lock()
	defer c.fdMu.Unlock()
	if c.fdClosed {
		return fmt.Errorf("connection %d is closed: %w", c.id, engine.ErrConnectFailure)
	}
	return fn()
}

// Open starts the endpoints of env.Ports.
func Open(ctx context.Context, env *engine.Env) (engine.Engine, error) {
	e := &Engine{env: env, w: engine.NewWorkers(env.Log), conns: map[uint64]*conn{}}
	ns, err := osthread.CurrentNetNS()
	if err != nil {
		return nil, err
	}
	e.netns = ns
	for _, p := range env.Ports {
		ep, err := e.newEndpoint(p)
		if err != nil {
			e.Close()
			return nil, err
		}
		e.eps = append(e.eps, ep)
	}
	for _, ep := range e.eps {
		if err := ep.start(); err != nil {
			e.Close()
			return nil, err
		}
	}
	return e, nil
}

func (e *Engine) newEndpoint(p *engine.Port) (*endpoint, error) {
	cfg := e.env.Config
	sc := p.Config.Socket
	if sc == nil {
		return nil, cfg.Errorf(p.Path(), "interface %s: the socket engine needs socket_config", p.Name)
	}
	if len(p.Rx) > 1 {
		return nil, cfg.Errorf(p.Path()+".rx.queues", "interface %s: the socket engine serves one rx queue per endpoint, %d configured", p.Name, len(p.Rx))
	}
	if len(p.Tx) > 1 {
		return nil, cfg.Errorf(p.Path()+".tx.queues", "interface %s: the socket engine serves one tx queue per endpoint, %d configured", p.Name, len(p.Tx))
	}
	ep := &endpoint{e: e, port: p, cfg: sc}
	if len(p.Rx) == 1 {
		ep.rxq = p.Rx[0]
		if err := checkRegions(cfg, ep.rxq.Path(), ep.rxq.Regions); err != nil {
			return nil, err
		}
	}
	if len(p.Tx) == 1 {
		ep.txq = p.Tx[0]
		ep.txv.Store(ep.txq)
		if err := checkRegions(cfg, ep.txq.Path(), ep.txq.Regions); err != nil {
			return nil, err
		}
	}
	// Payloads up to max_payload_size must fit a buffer on both sides.
	if mp := sc.MaxPayload; mp > 0 {
		var rs []*engine.Region
		if ep.rxq != nil {
			rs = append(rs, ep.rxq.Regions[0])
		}
		if ep.txq != nil {
			rs = append(rs, ep.txq.Regions[0])
		}
		for _, r := range rs {
			if r.BufSize < mp {
				return nil, cfg.Errorf(p.Path()+".socket_config.max_payload_size", "max_payload_size %d exceeds the %d-byte buffers of memory region %s", mp, r.BufSize, r.Name)
			}
		}
	}
	ep.opt = sockio.Options{
		RecvBuf:    sc.RecvBufferBytes,
		SendBuf:    sc.SendBufferBytes,
		Timestamps: true,
	}
	// UDP has no flow control: a deep receive buffer absorbs bursts. TCP keeps the kernel's
	// buffer autotuning unless the configuration sets sizes (a fixed SO_RCVBUF turns it off).
	if sc.Proto() == config.ProtoUDP {
		if ep.opt.RecvBuf == 0 {
			ep.opt.RecvBuf = DefaultRecvBuffer
		}
		if ep.opt.SendBuf == 0 {
			ep.opt.SendBuf = DefaultSendBuffer
		}
	}
	return ep, nil
}

func checkRegions(cfg *config.Config, path string, rs []*engine.Region) error {
	if len(rs) != 1 {
		return cfg.Errorf(path+".memory_regions", "the socket engine needs exactly one memory region per queue (no header-data split), got %d", len(rs))
	}
	if !rs[0].CPU() {
		return cfg.Errorf(path+".memory_regions", "memory region %s is %s memory; the socket engine needs CPU-addressable memory (host, huge or host_pinned)", rs[0].Name, rs[0].Kind)
	}
	return nil
}

func parseAddr(ep config.Endpoint) (netip.AddrPort, error) {
	if ep.IsZero() {
		return netip.AddrPort{}, nil
	}
	a, err := netip.ParseAddr(ep.Host)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%s: the socket engine needs an IP address (IPv4, or IPv6 in brackets), not %q", ep, ep.Host)
	}
	return netip.AddrPortFrom(a.Unmap(), uint16(ep.Port)), nil
}

func (e *Engine) newConn(ep *endpoint, c *sockio.TCPConn) *conn {
	cn := &conn{id: e.nextID.Add(1), ep: ep, tcp: c, fd: c.FD()}
	e.mu.Lock()
	e.conns[cn.id] = cn
	e.mu.Unlock()
	return cn
}

func (e *Engine) dropConn(cn *conn) {
	if cn.dead.Swap(true) {
		return
	}
	e.mu.Lock()
	delete(e.conns, cn.id)
	e.mu.Unlock()
	if cn.tcp != nil {
		cn.shutdown()
	}
	cn.ep.def.CompareAndSwap(cn, nil)
}

func (ep *endpoint) start() error {
	e := ep.e
	cfg := e.env.Config
	local, err := parseAddr(ep.cfg.Local)
	if err != nil {
		return cfg.Errorf(ep.port.Path()+".socket_config.local_addr", "%v", err)
	}
	remote, err := parseAddr(ep.cfg.Remote)
	if err != nil {
		return cfg.Errorf(ep.port.Path()+".socket_config.remote_addr", "%v", err)
	}
	switch ep.cfg.Proto() {
	case config.ProtoUDP:
		if ep.rxq != nil && ep.rxq.Regions[0].BufSize >= groBufSize {
			ep.opt.GRO = true
		}
		if ep.cfg.Mode == config.ModeServer && remote.IsValid() {
			// The server does not connect to its remote_addr (the kernel would drop other
			// peers silently): it filters and counts them (peer_filtered), and replies to it
			// before it has heard from it when its port is known.
			ep.allow, remote = remote, netip.AddrPort{}
			if ep.allow.Port() != 0 {
				p := ep.allow
				ep.peer.Store(&p)
			}
		}
		ep.udp, err = sockio.ListenUDP(local, remote, ep.opt)
		if err != nil {
			return cfg.Errorf(ep.port.Path()+".socket_config", "interface %s: %v", ep.port.Name, err)
		}
		if ep.opt.GRO && ep.udp.GRO() {
			ep.rxq.Regions[0].EnableSharing()
		}
		ep.gsoOK.Store(true)
		ep.sb = sockio.NewSendBatch(64, 1024)
		ep.udpConn = &conn{id: e.nextID.Add(1), ep: ep}
		e.mu.Lock()
		e.conns[ep.udpConn.id] = ep.udpConn
		e.mu.Unlock()
		if ep.rxq != nil {
			e.w.Go(ep.port.Name+"/udp-rx", ep.rxq.Config.CPUCore, ep.udpRx)
		}
	case config.ProtoTCP:
		if ep.poller, err = sockio.NewPoller(64); err != nil {
			return cfg.Errorf(ep.port.Path()+".socket_config", "interface %s: %v", ep.port.Name, err)
		}
		core := ""
		if ep.rxq != nil {
			core = ep.rxq.Config.CPUCore
		}
		if ep.cfg.Mode == config.ModeServer {
			ep.ln, err = sockio.ListenTCP(local, 128, ep.opt)
			if err == nil {
				err = ep.ln.SetNonblock()
			}
			if err == nil {
				err = ep.poller.Add(ep.ln.FD(), listenToken)
			}
			if err != nil {
				return cfg.Errorf(ep.port.Path()+".socket_config.local_addr", "interface %s: %v", ep.port.Name, err)
			}
		} else {
			e.w.Go(ep.port.Name+"/tcp-connect", "", func() { ep.dialLoop(local, remote) })
		}
		e.w.Go(ep.port.Name+"/tcp-rx", core, ep.tcpServe)
	default:
		return cfg.Errorf(ep.port.Path()+".socket_config", "interface %s: protocol %q is not served by the socket engine", ep.port.Name, ep.cfg.Proto())
	}
	return nil
}

// Close stops every worker, closes every socket and frees everything in flight.
func (e *Engine) Close() error {
	e.closing.Store(true)
	e.mu.Lock()
	conns := make([]*conn, 0, len(e.conns))
	for _, c := range e.conns {
		conns = append(conns, c)
	}
	e.mu.Unlock()
	for _, c := range conns {
		if c.tcp != nil {
			c.shutdown()
		}
	}
	e.w.Stop()
	// The workers closed the connections they served; these are the ones they never saw.
	e.mu.Lock()
	conns = conns[:0]
	for _, c := range e.conns {
		conns = append(conns, c)
	}
	e.mu.Unlock()
	var errs []error
	for _, c := range conns {
		if c.tcp != nil {
			e.dropConn(c)
			errs = append(errs, c.closeFD())
		}
	}
	for _, ep := range e.eps {
		if ep.udp != nil {
			errs = append(errs, ep.udp.Close())
		}
		if ep.ln != nil {
			errs = append(errs, ep.ln.Close())
		}
		if ep.poller != nil {
			errs = append(errs, ep.poller.Close())
		}
	}
	errs = append(errs, e.netns.Close())
	return errors.Join(errs...)
}

// dial connects from inside the session's network namespace.
func (e *Engine) dial(local, remote netip.AddrPort, timeout time.Duration, o sockio.Options) (*sockio.TCPConn, error) {
	var tc *sockio.TCPConn
	err := e.netns.Do(func() (err error) {
		tc, err = sockio.DialTCP(local, remote, timeout, o)
		return err
	})
	return tc, err
}

// Send transmits a TX burst synchronously in the caller's thread.
func (e *Engine) Send(b *engine.Burst) error {
	ep := e.endpointOf(b.Port())
	if ep == nil || ep.tx() == nil || ep.tx().ID != b.Queue() {
		return fmt.Errorf("port %d queue %d is not a socket tx queue: %w", b.Port(), b.Queue(), engine.ErrInvalidParameter)
	}
	if ep.udp != nil {
		return ep.sendUDP(b)
	}
	return ep.sendTCP(b)
}

func (e *Engine) endpointOf(port int) *endpoint {
	for _, ep := range e.eps {
		if ep.port.ID == port {
			return ep
		}
	}
	return nil
}

func (ep *endpoint) stopped() bool { return ep.e.w.Stopped() }

// ConnID returns the connection id of a port's default peer: the UDP endpoint, a TCP
// client's connection or a TCP server's first accepted connection. ErrNotReady while there is
// none yet.
func (e *Engine) ConnID(port int) (uint64, error) {
	ep := e.endpointOf(port)
	if ep == nil {
		return 0, fmt.Errorf("port %d is not a socket endpoint: %w", port, engine.ErrInvalidParameter)
	}
	if ep.udpConn != nil {
		return ep.udpConn.id, nil
	}
	if c := ep.def.Load(); c != nil {
		return c.id, nil
	}
	return 0, fmt.Errorf("interface %s: no connection yet: %w", ep.port.Name, engine.ErrNotReady)
}

// Conns lists the live connection ids of a port.
func (e *Engine) Conns(port int) []uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	var ids []uint64
	for id, c := range e.conns {
		if c.ep.port.ID == port && !c.dead.Load() {
			ids = append(ids, id)
		}
	}
	return ids
}

func (e *Engine) conn(id uint64) (*conn, error) {
	e.mu.Lock()
	c := e.conns[id]
	e.mu.Unlock()
	if c == nil || c.dead.Load() {
		return nil, fmt.Errorf("connection %d is closed or unknown: %w", id, engine.ErrConnectFailure)
	}
	return c, nil
}

// PortQueue maps a connection id to the port and queues that carry it.
func (e *Engine) PortQueue(id uint64) (port, rxQueue, txQueue int, err error) {
	c, err := e.conn(id)
	if err != nil {
		return 0, 0, 0, err
	}
	rxQueue, txQueue = -1, -1
	if c.ep.rxq != nil {
		rxQueue = c.ep.rxq.ID
	}
	if c.ep.txq != nil {
		txQueue = c.ep.txq.ID
	}
	return c.ep.port.ID, rxQueue, txQueue, nil
}

// SetSockopt sets a raw socket option on a connection's socket.
func (e *Engine) SetSockopt(id uint64, level, opt int, val []byte) error {
	c, err := e.conn(id)
	if err != nil {
		return err
	}
	var serr error
	if c.tcp != nil {
		if err := c.withFD(func() error { serr = c.tcp.Setsockopt(level, opt, val); return nil }); err != nil {
			return err
		}
	} else {
		serr = c.ep.udp.Setsockopt(level, opt, val)
	}
	if serr != nil {
		return fmt.Errorf("setsockopt(%d, %d) on connection %d: %v: %w", level, opt, id, serr, engine.ErrGenericFailure)
	}
	return nil
}

// Connect points a client endpoint at a server. UDP: the endpoint's socket is re-connected
// and its connection id returned. TCP: an existing live connection to that server is reused,
// otherwise one is dialled (bounded by timeout) and becomes the port's default.
func (e *Engine) Connect(port int, remote netip.AddrPort, timeout time.Duration) (uint64, error) {
	ep := e.endpointOf(port)
	if ep == nil || ep.cfg.Mode != config.ModeClient {
		return 0, fmt.Errorf("port %d is not a socket client endpoint: %w", port, engine.ErrInvalidParameter)
	}
	if ep.udp != nil {
		if err := ep.udp.Connect(remote); err != nil {
			return 0, fmt.Errorf("%v: %w", err, engine.ErrConnectFailure)
		}
		return ep.udpConn.id, nil
	}
	if c := ep.def.Load(); c != nil {
		var ra netip.AddrPort
		if c.withFD(func() error { ra = c.tcp.RemoteAddr(); return nil }) == nil && ra == remote {
			return c.id, nil
		}
	}
	local, _ := parseAddr(config.Endpoint{Proto: config.ProtoTCP, Host: ep.cfg.Local.Host})
	if ep.cfg.Local.IsZero() {
		local = netip.AddrPort{}
	}
	tc, err := e.dial(local, remote, timeout, ep.opt)
	if err != nil {
		return 0, fmt.Errorf("%v: %w", err, engine.ErrConnectFailure)
	}
	c := e.newConn(ep, tc)
	if err := ep.register(c); err != nil {
		e.dropConn(c)
		c.closeFD()
		return 0, fmt.Errorf("%v: %w", err, engine.ErrConnectFailure)
	}
	ep.def.Store(c)
	return c.id, nil
}

var _ engine.QueueManager = (*Engine)(nil)

// tx is the endpoint's current TX queue (nil: none).
func (ep *endpoint) tx() *engine.TxQueue { return ep.txv.Load() }

func (e *Engine) endpointFor(p *engine.Port) (*endpoint, error) {
	for _, ep := range e.eps {
		if ep.port == p {
			return ep, nil
		}
	}
	return nil, fmt.Errorf("port %d is not a socket port: %w", p.ID, engine.ErrInvalidParameter)
}

func sameRegions(a, b []*engine.Region) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// AddRxQueue replaces the endpoint's deleted RX queue: a socket serves one RX queue, started
// at Open, so the new queue must use the same memory region; what the socket receives from
// now on is delivered to it (engine.RxQueue.Forward).
func (e *Engine) AddRxQueue(q *engine.RxQueue) error {
	ep, err := e.endpointFor(q.Port)
	if err != nil {
		return err
	}
	if ep.rxq == nil {
		return fmt.Errorf("interface %s: the socket engine receives with the RX queue given at Open, and this endpoint had none: %w", ep.port.Name, engine.ErrNotSupported)
	}
	cur := ep.rxq
	for s := cur.Successor(); s != nil; s = s.Successor() {
		cur = s
	}
	switch {
	case !cur.Deleted():
		return fmt.Errorf("interface %s: the socket engine serves one rx queue per endpoint, and queue %d is live: %w", ep.port.Name, cur.ID, engine.ErrInvalidParameter)
	case !sameRegions(q.Regions, ep.rxq.Regions):
		return fmt.Errorf("interface %s: a replacement rx queue must use the endpoint's memory region %s (its socket receives into it): %w", ep.port.Name, ep.rxq.Regions[0].Name, engine.ErrNotSupported)
	}
	cur.Forward(q)
	return nil
}

// DeleteRxQueue: the socket keeps receiving; what it delivers to the deleted queue is
// counted as dropped (closed) until a replacement is added.
func (e *Engine) DeleteRxQueue(q *engine.RxQueue) error {
	_, err := e.endpointFor(q.Port)
	return err
}

// AddTxQueue replaces the endpoint's deleted TX queue (or gives one to an endpoint that had
// none): sends of its bursts go out through the endpoint's socket.
func (e *Engine) AddTxQueue(q *engine.TxQueue) error {
	ep, err := e.endpointFor(q.Port)
	if err != nil {
		return err
	}
	if cur := ep.tx(); cur != nil && !cur.Deleted() {
		return fmt.Errorf("interface %s: the socket engine serves one tx queue per endpoint, and queue %d is live: %w", ep.port.Name, cur.ID, engine.ErrInvalidParameter)
	}
	if err := checkRegions(e.env.Config, q.Path(), q.Regions); err != nil {
		return fmt.Errorf("%v: %w", err, engine.ErrInvalidParameter)
	}
	ep.txv.Store(q)
	return nil
}

// DeleteTxQueue: the session has stopped sends on the queue; nothing is queued in the
// engine (sends are synchronous).
func (e *Engine) DeleteTxQueue(q *engine.TxQueue) error {
	_, err := e.endpointFor(q.Port)
	return err
}
