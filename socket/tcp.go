package socket

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"time"

	"github.com/daqiri-go/daqiri/engine"
)

// FrameHeaderLen is the TCP framing: each packet is sent as a 4-byte big-endian length
// followed by that many bytes, so the receiver gets the sender's packets back with their
// boundaries (upstream delivers whatever each recv() returned).
const FrameHeaderLen = 4

// stagingSize is the per-connection receive staging buffer. Small frames are parsed out of it
// many per read; the rest of a frame that was not staged is read straight into its packet
// buffer together with the next staging fill (readv), so large frames are copied only once,
// by the kernel.
const stagingSize = 16 << 10

// dialLoop connects a TCP client in the background, retrying every retry_connect_s, and
// reconnects when the connection is lost.
func (ep *endpoint) dialLoop(local, remote netip.AddrPort) {
	period := time.Duration(max(ep.cfg.RetryConnectS, 1)) * time.Second
	for !ep.stopped() {
		if c := ep.def.Load(); c != nil && !c.dead.Load() {
			ep.sleep(100 * time.Millisecond)
			continue
		}
		tc, err := ep.e.dial(local, remote, period, ep.opt)
		if err != nil {
			ep.e.env.Log.Debug("tcp connect failed; retrying", "interface", ep.port.Name, "remote", remote, "err", err)
			ep.sleep(period)
			continue
		}
		c := ep.e.newConn(ep, tc)
		ep.def.Store(c)
		ep.e.env.Log.Info("tcp connected", "interface", ep.port.Name, "remote", remote, "conn", c.id)
		if err := ep.register(c); err != nil {
			ep.e.env.Log.Warn("tcp connection not served", "interface", ep.port.Name, "conn", c.id, "err", err)
			ep.e.dropConn(c)
			c.closeFD()
		}
	}
}

// sleep waits d or until the engine stops.
func (ep *endpoint) sleep(d time.Duration) {
	select {
	case <-ep.e.w.Stopping():
	case <-time.After(d):
	}
}

// sendTCP writes a burst as length-prefixed frames on its connection (the burst's ConnID, or
// the port's default connection).
func (ep *endpoint) sendTCP(b *engine.Burst) error {
	var c *conn
	if id := b.ConnID(); id != 0 {
		cc, err := ep.e.conn(id)
		if err != nil {
			// The connection is gone: the burst cannot go anywhere; consume and count it.
			ep.tx().Stats.Drop(engine.DropNotConnected, b.Len())
			b.Free()
			return err
		}
		if cc.ep != ep {
			return fmt.Errorf("connection %d belongs to interface %s, not %s: %w", id, cc.ep.port.Name, ep.port.Name, engine.ErrInvalidParameter)
		}
		c = cc
	} else if c = ep.def.Load(); c == nil {
		return fmt.Errorf("interface %s: no TCP connection yet: %w", ep.port.Name, engine.ErrNotReady)
	}
	n := b.Len()
	c.txMu.Lock()
	defer c.txMu.Unlock()
	if c.dead.Load() {
		// Closed by its receive side since it was looked up (its descriptor may be gone).
		ep.tx().Stats.Drop(engine.DropNotConnected, n)
		b.Free()
		return fmt.Errorf("interface %s connection %d is closed: %w", ep.port.Name, c.id, engine.ErrConnectFailure)
	}
	if cap(c.hdrs) < n*FrameHeaderLen {
		c.hdrs = make([]byte, n*FrameHeaderLen)
		c.iov = make([][]byte, 0, 2*n)
	}
	iov := c.iov[:0]
	bytes := 0
	for i := 0; i < n; i++ {
		p := b.Packet(i)
		h := c.hdrs[i*FrameHeaderLen : (i+1)*FrameHeaderLen]
		binary.BigEndian.PutUint32(h, uint32(len(p)))
		iov = append(iov, h, p)
		bytes += len(p)
	}
	c.iov = iov
	_, err := c.tcp.Writev(iov)
	q := ep.tx()
	b.Free()
	if err != nil {
		q.Stats.Drop(engine.DropSendFailure, n)
		ep.e.dropConn(c)
		return fmt.Errorf("interface %s connection %d: %v: %w", ep.port.Name, c.id, err, engine.ErrConnectFailure)
	}
	q.Stats.Add(n, bytes)
	return nil
}
