package roce

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/rdmacm"
	"github.com/daqiri-go/daqiri/verbs"
)

// endpoint is one interface: a listening server or a client, with its
// connection slots. Slot k carries one connection on RX queue k mod #RX and
// TX queue k mod #TX; there are as many slots as the port has queues in its
// larger direction (upstream: a server's backlog and slots = its RX queues).
type endpoint struct {
	e       *Engine
	port    *engine.Port
	cfg     *config.SocketConfig
	qpType  verbs.QPType
	ps      rdmacm.PortSpace
	local   netip.AddrPort
	dev     *device
	devPort uint8
	listen  *rdmacm.ID
	advert  []LocalMR
	rxDepth []int // receives kept posted per connection, by RX queue index

	mu      sync.Mutex
	slots   []*conn
	claimed []bool

	rxDrops, txDrops []reasonCounters
}

func (e *Engine) newEndpoint(p *engine.Port) (*endpoint, error) {
	cfg := e.env.Config
	sc := p.Config.Socket
	ep := &endpoint{e: e, port: p, cfg: sc, qpType: verbs.QPTypeRC, ps: rdmacm.PSTCP,
		rxDrops: make([]reasonCounters, len(p.Rx)), txDrops: make([]reasonCounters, len(p.Tx))}
	if p.Config.RoCE.TransportMode == "UC" {
		// UC QPs connect in the IB port space, which carries the QP type.
		ep.qpType, ep.ps = verbs.QPTypeUC, rdmacm.PSIB
	}
	ip, _ := netip.ParseAddr(sc.Local.Host)
	// One slot per RX queue (upstream: a server's backlog and slots); a
	// port without RX queues gets one per TX queue.
	n := len(p.Rx)
	if n == 0 {
		n = max(len(p.Tx), 1)
	}
	ep.slots, ep.claimed = make([]*conn, n), make([]bool, n)
	localPath := p.Path() + ".socket_config.local_addr"
	var err error
	if sc.Mode == config.ModeServer {
		port := sc.Local.Port
		if port == 0 {
			port = DefaultPort
		}
		ep.local = netip.AddrPortFrom(ip, uint16(port))
		if ep.listen, err = e.ch.CreateID(ep.ps, ep.qpType); err != nil {
			return nil, cfg.Errorf(localPath, "interface %s: %v", p.Name, err)
		}
		if err := ep.listen.Bind(ep.local); err != nil {
			ep.listen.Destroy()
			ep.listen = nil
			return nil, cfg.Errorf(localPath, "interface %s: cannot listen on %v: %v", p.Name, ep.local, err)
		}
		info, devPort, err := ep.listen.Device()
		if err != nil {
			return nil, cfg.Errorf(localPath, "interface %s: %v", p.Name, err)
		}
		if ep.dev, err = e.openDevice(info); err != nil {
			return nil, cfg.Errorf(localPath, "interface %s: %v", p.Name, err)
		}
		ep.devPort = devPort
	} else {
		ep.local = netip.AddrPortFrom(ip, 0)
		if ep.dev, ep.devPort, err = e.deviceFor(ip, localPath); err != nil {
			return nil, err
		}
	}
	if err := ep.registerRegions(); err != nil {
		return nil, err
	}
	ep.sizeReceives()
	if ep.listen != nil {
		if err := ep.listen.Listen(max(len(p.Rx), 1)); err != nil {
			return nil, cfg.Errorf(localPath, "interface %s: listen on %v: %v", p.Name, ep.local, err)
		}
		e.log.Info("roce server listening", "interface", p.Name, "addr", ep.local, "device", ep.dev.info.Name, "transport", ep.qpType, "slots", n)
	}
	return ep, nil
}

// registerRegions registers every region of the port's queues on the
// endpoint's device and collects those peers may access.
func (ep *endpoint) registerRegions() error {
	cfg := ep.e.env.Config
	type use struct {
		r    *engine.Region
		path string
	}
	var uses []use
	for _, q := range ep.port.Rx {
		for _, r := range q.Regions {
			uses = append(uses, use{r, q.Path() + ".memory_regions"})
		}
	}
	for _, q := range ep.port.Tx {
		for _, r := range q.Regions {
			uses = append(uses, use{r, q.Path() + ".memory_regions"})
		}
	}
	seen := map[*engine.Region]bool{}
	for _, u := range uses {
		m, err := ep.e.register(ep.dev, u.r, u.path)
		if err != nil {
			return err
		}
		if seen[u.r] {
			continue
		}
		seen[u.r] = true
		if l := m.local(); l.RemoteRead || l.RemoteWrite {
			ep.advert = append(ep.advert, l)
		}
	}
	if len(ep.advert) > MaxAdvertised {
		return cfg.Errorf(ep.port.Path(), "interface %s: %d memory regions grant remote access; at most %d can be advertised to a peer", ep.port.Name, len(ep.advert), MaxAdvertised)
	}
	for _, l := range ep.advert {
		if len(l.Name) > nameLen {
			return cfg.Errorf(ep.port.Path(), "interface %s: memory region name %q is longer than the %d bytes a peer can be told", ep.port.Name, l.Name, nameLen)
		}
	}
	return nil
}

// sizeReceives decides how many receive buffers each connection keeps
// posted: the RX region's buffers shared among the slots that receive into
// it, at most maxRecvDepth.
func (ep *endpoint) sizeReceives() {
	ep.rxDepth = make([]int, len(ep.port.Rx))
	if len(ep.port.Rx) == 0 {
		return
	}
	users := map[*engine.Region]int{}
	for k := range ep.slots {
		users[ep.port.Rx[k%len(ep.port.Rx)].Regions[0]]++
	}
	for i, q := range ep.port.Rx {
		r := q.Regions[0]
		ep.rxDepth[i] = min(max(r.NumBufs/users[r], 1), maxRecvDepth)
	}
}

func (ep *endpoint) slotConns() []*conn {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	var out []*conn
	for _, c := range ep.slots {
		if c != nil {
			out = append(out, c)
		}
	}
	return out
}

// reserve takes a free slot for c; false when all are taken.
func (ep *endpoint) reserve(c *conn) bool {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	for i, s := range ep.slots {
		if s == nil {
			ep.slots[i] = c
			ep.claimed[i] = false
			c.slot = i
			return true
		}
	}
	return false
}

func (ep *endpoint) release(c *conn) {
	ep.mu.Lock()
	if c.slot >= 0 && c.slot < len(ep.slots) && ep.slots[c.slot] == c {
		ep.slots[c.slot] = nil
		ep.claimed[c.slot] = false
	}
	ep.mu.Unlock()
}

// connect makes one client connection (Engine.Connect).
func (ep *endpoint) connect(server netip.AddrPort, timeout time.Duration) (uint64, error) {
	e := ep.e
	deadline := time.Now().Add(timeout)
	c, err := ep.newConn()
	if err != nil {
		return 0, err
	}
	if c.cm, err = e.ch.CreateID(ep.ps, ep.qpType); err != nil {
		c.abort(err)
		return 0, fmt.Errorf("%v: %w", err, engine.ErrConnectFailure)
	}
	e.mu.Lock()
	e.byID[c.cm] = c
	e.mu.Unlock()
	fail := func(what string, err error) (uint64, error) {
		err = fmt.Errorf("interface %s: connecting to %v: %s: %v: %w", ep.port.Name, server, what, err, engine.ErrConnectFailure)
		c.abort(err)
		return 0, err
	}
	left := func(d time.Duration) time.Duration { return max(min(d, time.Until(deadline)), time.Millisecond) }
	if err := c.cm.ResolveAddr(ep.local, server, left(resolveTimeout)); err != nil {
		return fail("resolving the address", err)
	}
	if _, err := c.await(deadline, rdmacm.EventAddrResolved); err != nil {
		return fail("resolving the address", err)
	}
	if err := c.cm.ResolveRoute(left(resolveTimeout)); err != nil {
		return fail("resolving the route", err)
	}
	if _, err := c.await(deadline, rdmacm.EventRouteResolved); err != nil {
		return fail("resolving the route", err)
	}
	if info, _, err := c.cm.Device(); err != nil {
		return fail("finding the device", err)
	} else if info.Name != ep.dev.info.Name {
		return fail("finding the device", fmt.Errorf("the route leaves through %s, but %s (local_addr %v) is on %s", info.Name, ep.port.Name, ep.local.Addr(), ep.dev.info.Name))
	}
	if err := c.setupQP(); err != nil {
		return fail("creating the queue pair", err)
	}
	rr := c.rdAtomic(ep.dev.attr.MaxQPRdAtom)
	if err := c.cm.Connect(rdmacm.ConnParam{PrivateData: privateData(), QPNum: c.qp.Num(), ResponderResources: rr,
		InitiatorDepth: c.rdAtomic(ep.dev.attr.MaxQPInitRdAtom), RetryCount: 7, RNRRetryCount: 7}); err != nil {
		return fail("sending the request", err)
	}
	ev, err := c.await(deadline, rdmacm.EventConnectResponse)
	if err != nil {
		return fail("waiting for the server's answer", err)
	}
	c.table = speaksTable(ev.Conn.PrivateData)
	if err := c.postInitialReceives(); err != nil {
		return fail("posting receives", err)
	}
	// This side's responder resources answer the server's initiator depth
	// and the other way round, capped by the device (librdmacm does the
	// same in ucma_modify_qp_rtr/rts).
	if err := c.toRTS(min(ev.Conn.InitiatorDepth, rr), min(ev.Conn.ResponderResources, c.rdAtomic(ep.dev.attr.MaxQPInitRdAtom))); err != nil {
		return fail("moving the queue pair to RTS", err)
	}
	c.setPhase(phaseRunning)
	if err := c.cm.EstablishActive(); err != nil {
		return fail("completing the handshake", err)
	}
	c.start()
	c.onEstablished()
	select {
	case <-c.readyCh:
	case <-time.After(time.Until(deadline)):
		err := fmt.Errorf("the server sent no region table within %v", timeout)
		c.fail(err)
		<-c.done
		return 0, fmt.Errorf("interface %s: connecting to %v: %v: %w", ep.port.Name, server, err, engine.ErrConnectFailure)
	}
	if err := c.errNow(); err != nil {
		<-c.done
		return 0, fmt.Errorf("interface %s: connecting to %v: %w", ep.port.Name, server, err)
	}
	e.log.Info("roce connected", "interface", ep.port.Name, "server", server, "conn", c.id, "qp", c.qp.Num(), "slot", c.slot, "region_table", c.table)
	return c.id, nil
}

// accept answers a connection request on a server endpoint (cm goroutine).
func (ep *endpoint) accept(ev rdmacm.Event) {
	e := ep.e
	reject := func(why string) {
		e.log.Warn("roce connection request rejected", "interface", ep.port.Name, "reason", why)
		_ = ev.ID.Reject([]byte(why))
		_, _ = ev.ID.Destroy()
	}
	c, err := ep.newConn()
	if err != nil {
		reject(err.Error())
		return
	}
	c.cm = ev.ID
	e.mu.Lock()
	e.byID[c.cm] = c
	e.mu.Unlock()
	fail := func(what string, err error) {
		e.log.Warn("roce accept failed", "interface", ep.port.Name, "step", what, "err", err)
		_ = c.cm.Reject(nil)
		c.abort(fmt.Errorf("accepting a connection: %s: %w", what, err))
	}
	if info, _, err := c.cm.Device(); err != nil || info.Name != ep.dev.info.Name {
		fail("finding the device", fmt.Errorf("request arrived on %s, expected %s (%v)", info.Name, ep.dev.info.Name, err))
		return
	}
	c.table = speaksTable(ev.Conn.PrivateData)
	if err := c.setupQP(); err != nil {
		fail("creating the queue pair", err)
		return
	}
	if err := c.postInitialReceives(); err != nil {
		fail("posting receives", err)
		return
	}
	resp := min(ev.Conn.InitiatorDepth, c.rdAtomic(ep.dev.attr.MaxQPRdAtom))
	init := min(ev.Conn.ResponderResources, c.rdAtomic(ep.dev.attr.MaxQPInitRdAtom))
	if err := c.toRTS(resp, init); err != nil {
		fail("moving the queue pair to RTS", err)
		return
	}
	c.setPhase(phaseRunning)
	c.start()
	if err := c.cm.Accept(rdmacm.ConnParam{PrivateData: privateData(), QPNum: c.qp.Num(), ResponderResources: resp,
		InitiatorDepth: init, RetryCount: 7, RNRRetryCount: 7}); err != nil {
		c.fail(fmt.Errorf("accept: %w", err))
		return
	}
	e.log.Info("roce connection accepted", "interface", ep.port.Name, "conn", c.id, "qp", c.qp.Num(), "slot", c.slot, "region_table", c.table)
}

// newConn makes a connection object in a free slot.
func (ep *endpoint) newConn() (*conn, error) {
	e := ep.e
	c := &conn{e: e, ep: ep, slot: -1, evc: make(chan rdmacm.Event, 8), readyCh: make(chan struct{}),
		dying: make(chan struct{}), done: make(chan struct{})}
	c.id = e.nextID.Add(1)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closing.Load() {
		return nil, fmt.Errorf("session closing: %w", engine.ErrNotReady)
	}
	if len(e.conns) >= MaxConnections {
		return nil, fmt.Errorf("interface %s: %d connections open, the most a session holds: %w", ep.port.Name, len(e.conns), engine.ErrNoSpaceAvailable)
	}
	if !ep.reserve(c) {
		return nil, fmt.Errorf("interface %s: all %d connection slots are in use (one per queue): %w", ep.port.Name, len(ep.slots), engine.ErrNoSpaceAvailable)
	}
	if n := len(ep.port.Rx); n > 0 {
		c.rxi = c.slot % n
		c.rxq = ep.port.Rx[c.rxi]
		c.rxDepth = ep.rxDepth[c.rxi]
		c.rxRegion = c.rxq.Regions[0]
		c.rxLKey = ep.dev.mrs[c.rxRegion].mr.LKey
	}
	if n := len(ep.port.Tx); n > 0 {
		c.txi = c.slot % n
		c.txq = ep.port.Tx[c.txi]
	}
	e.conns[c.id] = c
	e.wg.Add(1) // released when the connection is torn down
	return c, nil
}

// listenerEndpoint finds the endpoint a connection request arrived on.
func (e *Engine) listenerEndpoint(id *rdmacm.ID) *endpoint {
	for _, ep := range e.eps {
		if ep.listen == id {
			return ep
		}
	}
	return nil
}

// cmLoop reads rdma_cm events and hands them to endpoints and connections.
func (e *Engine) cmLoop() {
	for !e.w.Stopped() {
		ev, err := e.ch.NextEvent(50 * time.Millisecond)
		switch {
		case errors.Is(err, rdmacm.ErrTimeout):
			continue
		case errors.Is(err, rdmacm.ErrClosed):
			return
		case err != nil:
			e.log.Error("roce: reading rdma_cm events", "err", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if ev.Type == rdmacm.EventConnectRequest {
			ep := e.listenerEndpoint(ev.Listen)
			if ep == nil || e.closing.Load() {
				_ = ev.ID.Reject(nil)
				_, _ = ev.ID.Destroy()
				continue
			}
			ep.accept(ev)
			continue
		}
		e.mu.Lock()
		c := e.byID[ev.ID]
		e.mu.Unlock()
		if c == nil {
			e.log.Debug("roce: rdma_cm event for no connection", "event", ev.Type)
			continue
		}
		c.onEvent(ev)
	}
}
