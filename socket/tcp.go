package socket

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/internal/sockio"
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

// accept runs the TCP server's accept loop.
func (ep *endpoint) accept() {
	for !ep.stopped() {
		tc, from, err := ep.ln.Accept()
		if errors.Is(err, sockio.ErrTimeout) {
			continue
		}
		if err != nil {
			if !ep.stopped() {
				ep.e.env.Log.Error("tcp accept failed", "interface", ep.port.Name, "err", err)
				time.Sleep(10 * time.Millisecond)
			}
			continue
		}
		if ep.stopped() {
			tc.Close()
			return
		}
		c := ep.e.newConn(ep, tc)
		ep.def.CompareAndSwap(nil, c)
		ep.e.env.Log.Info("tcp connection accepted", "interface", ep.port.Name, "from", from, "conn", c.id)
		ep.e.startConnRx(c)
	}
}

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
		ep.e.startConnRx(c)
	}
}

// sleep waits d or until the engine stops.
func (ep *endpoint) sleep(d time.Duration) {
	select {
	case <-ep.e.w.Stopping():
	case <-time.After(d):
	}
}

// tcpRx reads frames from one connection into the endpoint's RX queue.
func (ep *endpoint) tcpRx(c *conn) {
	defer func() {
		ep.e.dropConn(c)
		if !ep.stopped() {
			ep.e.env.Log.Info("tcp connection closed", "interface", ep.port.Name, "conn", c.id)
		}
	}()
	q := ep.rxq
	if q == nil {
		// No RX queue: drain and discard so the peer is never blocked, counting nothing
		// (there is no queue to count on).
		buf := make([]byte, stagingSize)
		for !ep.stopped() {
			if _, err := c.tcp.Read(buf); err != nil && !errors.Is(err, sockio.ErrTimeout) {
				return
			}
		}
		return
	}
	r := q.Regions[0]
	x := &rxBatcher{q: q, conn: c.id}
	defer x.release()
	stage := make([]byte, stagingSize)
	have, pos := 0, 0 // stage[pos:have] is unparsed
	keep := func() bool { return !ep.stopped() }
	var scratch [4096]byte
	// dry: the last read returned less than it asked for, so the socket had nothing more at
	// that moment. With timeout_us 0 a burst is handed over then (once no whole frame is left
	// in the staging buffer), whatever the frame size: a stream of large frames is delivered
	// in bursts as large as what had arrived, not held until batch_size frames have come.
	dry := false
	for !ep.stopped() {
		if pos == have {
			pos, have = 0, 0
		}
		if have-pos < FrameHeaderLen {
			// Need more bytes for a header: compact and read.
			if pos > 0 {
				have = copy(stage, stage[pos:have])
				pos = 0
			}
			n, err := c.tcp.Read(stage[have:])
			if errors.Is(err, sockio.ErrTimeout) {
				if x.remaining() <= 0 {
					x.flush()
				}
				continue
			}
			if err != nil {
				x.flush()
				if !errors.Is(err, io.EOF) && !ep.stopped() {
					ep.e.env.Log.Warn("tcp read failed", "interface", ep.port.Name, "conn", c.id, "err", err)
				}
				return
			}
			dry = n < len(stage)-have
			have += n
			if have-pos < FrameHeaderLen {
				continue
			}
		}
		l := int(binary.BigEndian.Uint32(stage[pos:]))
		pos += FrameHeaderLen
		inStage := min(l, have-pos)
		var dst []byte
		idx, ok := uint32(0), false
		if l > r.BufSize {
			q.Stats.Drop(engine.DropTruncated, 1)
		} else {
			// TCP has flow control: when the application holds every burst or buffer, stop
			// reading and let the sender block instead of dropping data.
			for {
				if x.burst() != nil {
					if idx, ok = r.Get(); ok {
						break
					}
				}
				x.flush()
				if ep.stopped() {
					return
				}
				time.Sleep(50 * time.Microsecond)
			}
			dst = r.Buf(idx)[:l]
		}
		if dst != nil {
			copy(dst, stage[pos:pos+inStage])
		}
		pos += inStage
		if rest := l - inStage; rest > 0 {
			// The frame continues on the socket: read the rest straight into its buffer (or
			// discard it when the frame is being dropped), and whatever follows into the
			// staging buffer, which is empty now.
			pos, have = 0, 0
			var err error
			for rest > 0 && err == nil {
				var n int
				var into []byte
				if dst != nil {
					into = dst[l-rest : l]
				} else {
					into = scratch[:min(rest, len(scratch))]
				}
				// Bytes past the frame may only go to the staging buffer once this read can
				// complete the frame.
				var after []byte
				if len(into) == rest {
					after = stage
					if l >= len(stage)/2 {
						// Large frames: stage only the next header, so the next payload
						// too is read straight into its buffer instead of copied twice.
						after = stage[:FrameHeaderLen]
					}
				}
				n, err = c.tcp.Readv(into, after)
				if errors.Is(err, sockio.ErrTimeout) {
					if keep() {
						err = nil
					}
					continue
				}
				dry = n < len(into)+len(after)
				if n > len(into) {
					have = n - len(into)
					n = len(into)
				}
				rest -= n
			}
			if err != nil {
				if ok {
					r.Put(idx)
					q.Stats.Drop(engine.DropClosed, 1)
				}
				x.flush()
				return
			}
		}
		if ok {
			x.b.Append(uint64(idx)*uint64(r.BufSize), uint32(l), 0, time.Now().UnixNano())
			x.added()
		}
		if x.full() || ((pos == have || (dry && !frameStaged(stage[pos:have]))) && x.remaining() <= 0) {
			x.flush()
		}
	}
}

// frameStaged reports whether b starts with a whole frame (header and payload).
func frameStaged(b []byte) bool {
	return len(b) >= FrameHeaderLen && len(b)-FrameHeaderLen >= int(binary.BigEndian.Uint32(b))
}

// sendTCP writes a burst as length-prefixed frames on its connection (the burst's ConnID, or
// the port's default connection).
func (ep *endpoint) sendTCP(b *engine.Burst) error {
	var c *conn
	if id := b.ConnID(); id != 0 {
		cc, err := ep.e.conn(id)
		if err != nil {
			// The connection is gone: the burst cannot go anywhere; consume and count it.
			ep.txq.Stats.Drop(engine.DropNotConnected, b.Len())
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
	q := ep.txq
	b.Free()
	if err != nil {
		q.Stats.Drop(engine.DropSendFailure, n)
		ep.e.dropConn(c)
		return fmt.Errorf("interface %s connection %d: %v: %w", ep.port.Name, c.id, err, engine.ErrConnectFailure)
	}
	q.Stats.Add(n, bytes)
	return nil
}
