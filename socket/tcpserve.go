package socket

import (
	"errors"
	"io"
	"slices"
	"time"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/internal/sockio"
)

// A TCP endpoint's connections — accepted ones, the client's own, those the application
// opens with Connect — are all served by one worker: the endpoint's receive worker, pinned to
// its queue's cpu_core, waiting on an epoll instance. A connection costs a descriptor, a
// staging buffer and a table entry, never a thread, so a peer opening many idle connections
// cannot grow the process's threads; a server also refuses connections past
// max_connections (accepted and closed at once, counted per port).

// listenToken is the listener's poll token; connection ids start at 1.
const listenToken = 0

// readBudget bounds the reads one connection gets per wakeup, so that one busy peer cannot
// starve the others.
const readBudget = 16

// tcpBurstBytes hands a TCP receive burst over once it holds this many payload bytes, before
// batch_size frames. The kernel copies each frame into a pool buffer, and buffers return to
// the pool (which hands out the most recently returned first) only when the application
// frees their burst: a burst of 256 frames of 64 KB is 16 MiB, so while a busy receiver's
// bursts filled up, every copy went to memory long out of the cache (the copy then cost
// twice iperf3's, which reads into one hot buffer). A few hundred KiB in flight stay in the
// L2 cache; small frames still fill whole bursts.
const tcpBurstBytes = 256 << 10

// streamLowat and lowatCheck pace the worker on fast streams. While a connection streams
// (one wakeup's reads took at least streamLowat bytes), its socket reports readable only
// once streamLowat bytes are queued (SO_RCVLOWAT). On loopback the sender's system call
// delivers each segment and wakes the reader: waking it once per 256 KiB instead of about
// once per 64 KiB segment took work off the sending thread, the bottleneck at 64 KB
// messages (H200 host, medians of 6: 52.6 Gb/s without, 59.5 with; 65.6 against iperf3's
// 56.9 with 1 MiB sends), and the reader takes more per call. Bytes below the mark are not
// left waiting for more: a raised connection not served for lowatCheck is read anyway,
// and a read that finds less than streamLowat (the stream slowed below ~20 Gb/s, or
// stopped) lowers the mark to 1 again. So the last bytes of a fast stream wait at most
// about lowatCheck (a millisecond where the poller cannot wait less: kernels before 5.11);
// slower streams never raise it.
const (
	streamLowat = 256 << 10
	lowatCheck  = 100 * time.Microsecond
)

// rxConn is the receive side of one connection, owned by the endpoint's worker.
type rxConn struct {
	c      *conn
	fr     *framer
	x      *rxBatcher // nil without an RX queue
	fio    frameIO    // built once: serve runs for every wakeup
	raised bool       // SO_RCVLOWAT is streamLowat (else 1)
	served time.Time  // when a raised connection was last read
}

// register hands a connection (a client's, from another thread) to the endpoint's worker,
// which takes it over at its first event: from then on the worker alone closes it.
func (ep *endpoint) register(c *conn) error {
	ep.regMu.Lock()
	if ep.reg == nil {
		ep.reg = map[uint64]*conn{}
	}
	ep.reg[c.id] = c
	ep.regMu.Unlock()
	if err := ep.poller.Add(c.fd, c.id); err != nil {
		ep.regMu.Lock()
		delete(ep.reg, c.id)
		ep.regMu.Unlock()
		return err
	}
	return nil
}

// claim takes a registered connection over.
func (ep *endpoint) claim(id uint64) *conn {
	ep.regMu.Lock()
	defer ep.regMu.Unlock()
	c := ep.reg[id]
	delete(ep.reg, id)
	return c
}

// frameLimit is the largest frame a peer may announce: max_payload_size, or the RX buffer
// size when it is not set (validated to fit the buffers), or without an RX queue the largest
// socket payload.
func (ep *endpoint) frameLimit() int {
	switch {
	case ep.cfg.MaxPayload > 0:
		return ep.cfg.MaxPayload
	case ep.rxq != nil:
		return ep.rxq.Regions[0].BufSize
	}
	return config.MaxSocketPayload
}

// tcpServe is the endpoint's receive worker.
func (ep *endpoint) tcpServe() {
	live := map[uint64]*rxConn{}
	defer func() {
		for _, rc := range live {
			ep.closeConn(rc, live, engine.DropClosed)
		}
		ep.regMu.Lock()
		for id, c := range ep.reg {
			delete(ep.reg, id)
			ep.poller.Remove(c.fd)
			ep.e.dropConn(c)
			c.closeFD()
		}
		ep.regMu.Unlock()
	}()
	evs := make([]sockio.PollEvent, 64)
	warned := false
	// waiting are connections that stopped for want of buffers. Their next frames may be in
	// their staging buffers already, with nothing left on the socket to wake the poller: they
	// are retried on every round until they get through.
	var waiting, retry []*rxConn
	var stalled bool
	// serveNoting serves a connection and notes one that stopped for want of buffers.
	serveNoting := func(rc *rxConn) {
		if ep.serve(rc, live) {
			stalled = true
			if !slices.Contains(waiting, rc) {
				waiting = append(waiting, rc)
			}
		}
	}
	for !ep.stopped() {
		wait := ep.waitFor(live)
		if len(waiting) > 0 {
			wait = 0
		}
		if ep.raised > 0 {
			wait = min(wait, lowatCheck)
		}
		n, err := ep.poller.Wait(evs, wait)
		if err != nil {
			ep.e.env.Log.Error("tcp poll failed", "interface", ep.port.Name, "err", err)
			ep.sleep(10 * time.Millisecond)
			continue
		}
		stalled = false
		retry, waiting = append(retry[:0], waiting...), waiting[:0]
		for _, rc := range retry {
			if live[rc.c.id] == rc && ep.serve(rc, live) {
				stalled = true
				waiting = append(waiting, rc)
			}
		}
		for _, ev := range evs[:n] {
			if ev.Token == listenToken {
				warned = ep.acceptAll(live, warned)
				continue
			}
			rc := live[ev.Token]
			if rc == nil {
				c := ep.claim(ev.Token)
				if c == nil {
					continue
				}
				rc = ep.newRxConn(c)
				live[c.id] = rc
			}
			serveNoting(rc)
		}
		var now time.Time
		if ep.raised > 0 {
			now = time.Now()
		}
		for _, rc := range live {
			if rc.raised && now.Sub(rc.served) >= lowatCheck {
				serveNoting(rc)
			}
			if rc.x != nil && rc.x.remaining() <= 0 {
				rc.x.flush()
			}
		}
		if stalled {
			// No buffer or burst metadata: the application holds them. Hand over every
			// partial burst so it can return them, and wait a little instead of spinning on
			// sockets that stay readable; TCP flow control then slows the peers down.
			for _, rc := range live {
				if rc.x != nil {
					rc.x.flush()
				}
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
}

// waitFor is how long the worker may sleep: until the first partial burst's timeout, and
// never so long that it misses Stop.
func (ep *endpoint) waitFor(live map[uint64]*rxConn) time.Duration {
	d := 100 * time.Millisecond
	for _, rc := range live {
		if rc.x != nil {
			d = max(min(d, rc.x.remaining()), 0)
		}
	}
	return d
}

func (ep *endpoint) newRxConn(c *conn) *rxConn {
	rc := &rxConn{c: c, fr: newFramer(ep.frameLimit())}
	if ep.rxq != nil {
		rc.x = &rxBatcher{q: ep.rxq, conn: c.id}
	}
	q := ep.rxq
	rc.fio = frameIO{
		read: c.tcp.ReadNow,
		alloc: func(l int) ([]byte, uint32, bool) {
			if q == nil {
				return nil, 0, true // no RX queue: frames are read and discarded
			}
			if rc.x.burst() == nil {
				return nil, 0, false
			}
			idx, ok := q.Regions[0].Get()
			if !ok {
				return nil, 0, false
			}
			return q.Regions[0].Buf(idx)[:l], idx, true
		},
		emit: func(idx uint32, l int) bool {
			if q == nil {
				return true
			}
			// The burst open at alloc may have been handed over since (full, or the socket
			// ran dry); with no metadata free for the next one the framer keeps the frame
			// and the worker retries (stalled) until the application frees a burst.
			b := rc.x.burst()
			if b == nil {
				return false
			}
			b.Append(uint64(idx)*uint64(q.Regions[0].BufSize), uint32(l), 0, time.Now().UnixNano())
			rc.x.added(l)
			if rc.x.full() || rc.x.bytes >= tcpBurstBytes {
				rc.x.flush()
			}
			return true
		},
		free: func(idx uint32) {
			if q != nil {
				q.Regions[0].Put(idx)
			}
		},
	}
	return rc
}

// acceptAll accepts every pending connection, refusing those past max_connections. It
// returns whether the refusal has been logged (once per endpoint: the counter says the rest).
func (ep *endpoint) acceptAll(live map[uint64]*rxConn, warned bool) bool {
	limit := ep.cfg.ConnLimit()
	for !ep.stopped() {
		tc, from, err := ep.ln.Accept()
		if errors.Is(err, sockio.ErrTimeout) {
			return warned
		}
		if err != nil {
			ep.e.env.Log.Error("tcp accept failed", "interface", ep.port.Name, "err", err)
			return warned
		}
		if len(live) >= limit {
			tc.Close()
			ep.port.Events.ConnsRefused.Add(1)
			if !warned {
				warned = true
				ep.e.env.Log.Warn("tcp connection refused: max_connections reached (further refusals are only counted, as connections_refused_max_connections)", "interface", ep.port.Name, "from", from, "max_connections", limit)
			}
			continue
		}
		c := ep.e.newConn(ep, tc)
		if err := ep.register(c); err != nil {
			ep.e.env.Log.Warn("tcp connection not served", "interface", ep.port.Name, "conn", c.id, "err", err)
			ep.e.dropConn(c)
			c.closeFD()
			continue
		}
		live[c.id] = ep.newRxConn(c)
		ep.def.CompareAndSwap(nil, c)
		ep.port.Events.ConnsAccepted.Add(1)
		ep.e.env.Log.Info("tcp connection accepted", "interface", ep.port.Name, "from", from, "conn", c.id)
	}
	return warned
}

// serve reads what a connection has; it reports whether it stopped for want of buffers.
func (ep *endpoint) serve(rc *rxConn, live map[uint64]*rxConn) (stalled bool) {
	before := rc.fr.taken
	res, err := rc.fr.pump(rc.fio, readBudget)
	if err == nil && res != pumpStalled {
		// A stall says nothing about the stream's rate: the mark stays as it is.
		ep.pace(rc, rc.fr.taken-before)
	}
	if err != nil {
		var big *frameTooLarge
		switch {
		case ep.stopped():
			// Closing: the session shut the connection down itself.
		case errors.As(err, &big):
			// The peer broke the framing: nothing after this header can be trusted.
			ep.port.Events.ConnsFrameTooLarge.Add(1)
			ep.e.env.Log.Info("tcp connection closed: protocol error", "interface", ep.port.Name, "conn", rc.c.id, "err", err)
		case errors.Is(err, io.EOF):
			ep.e.env.Log.Info("tcp connection closed by the peer", "interface", ep.port.Name, "conn", rc.c.id)
		default:
			ep.e.env.Log.Warn("tcp read failed; connection closed", "interface", ep.port.Name, "conn", rc.c.id, "err", err)
		}
		ep.closeConn(rc, live, engine.DropClosed)
		return false
	}
	if res == pumpDry && rc.x != nil && rc.x.remaining() <= 0 {
		rc.x.flush()
	}
	return res == pumpStalled
}

// pace raises a connection's SO_RCVLOWAT when one serve took n ≥ streamLowat bytes and
// lowers it when it took less (see streamLowat). A kernel that refuses the option leaves
// the connection as it was: it is only slower.
func (ep *endpoint) pace(rc *rxConn, n uint64) {
	stream := n >= streamLowat
	if stream != rc.raised {
		mark := 1
		if stream {
			mark = streamLowat
		}
		if rc.c.tcp.SetRecvLowat(mark) != nil {
			return
		}
		rc.raised = stream
		if stream {
			ep.raised++
		} else {
			ep.raised--
		}
	}
	if rc.raised {
		rc.served = time.Now()
	}
}

// closeConn ends a connection's receive side: its partial burst is delivered, the buffer of
// a frame cut short goes back (counted under reason), and the descriptor is closed.
func (ep *endpoint) closeConn(rc *rxConn, live map[uint64]*rxConn, reason engine.DropReason) {
	delete(live, rc.c.id)
	if rc.raised {
		rc.raised = false
		ep.raised--
	}
	if rc.x != nil {
		if ep.stopped() {
			rc.x.release()
		} else {
			rc.x.flush()
		}
		if idx, ok := rc.fr.holding(); ok {
			ep.rxq.Regions[0].Put(idx)
			ep.rxq.Stats.Drop(reason, 1)
		}
		// Whole frames still waiting for burst metadata: delivered if the application has
		// freed some since, else returned and counted.
		for _, w := range rc.fr.waiting() {
			if ep.stopped() || !rc.fio.emit(w.id, w.l) {
				ep.rxq.Regions[0].Put(w.id)
				ep.rxq.Stats.Drop(reason, 1)
			}
		}
		if !ep.stopped() {
			rc.x.flush()
		}
	}
	ep.poller.Remove(rc.c.fd)
	ep.e.dropConn(rc.c)
	// The send side checks dead under txMu: closing under it keeps a send from writing to a
	// descriptor number that has been reused.
	rc.c.txMu.Lock()
	rc.c.closeFD()
	rc.c.txMu.Unlock()
}
