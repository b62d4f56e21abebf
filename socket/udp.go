package socket

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/internal/sockio"
)

// rxBatcher accumulates packets into bursts and hands them over on batch_size, on timeout_us
// after the first packet, or (timeout 0) when the source runs dry.
type rxBatcher struct {
	q     *engine.RxQueue
	b     *engine.Burst
	first time.Time
	conn  uint64
	bytes int // payload bytes in b
}

// burst returns the open burst, taking a new one when needed; nil when metadata is exhausted.
func (x *rxBatcher) burst() *engine.Burst {
	if x.b == nil {
		b, err := x.q.NewBurst()
		if err != nil {
			return nil
		}
		b.SetConnID(x.conn)
		x.b = b
	}
	return x.b
}

func (x *rxBatcher) full() bool { return x.b != nil && x.b.Len() >= x.q.BatchSize() }

// added records a packet of l bytes appended to the open burst.
func (x *rxBatcher) added(l int) {
	if x.b.Len() == 1 {
		x.first = time.Now()
		x.bytes = 0
	}
	x.bytes += l
}

// remaining is how long the open burst may still wait (≤ 0: hand it over).
func (x *rxBatcher) remaining() time.Duration {
	if x.b == nil || x.b.Len() == 0 {
		return time.Hour
	}
	t := x.q.Timeout()
	if t == 0 {
		return 0
	}
	return t - time.Since(x.first)
}

func (x *rxBatcher) flush() {
	if x.b != nil && x.b.Len() > 0 {
		x.q.Deliver(x.b)
		x.b = nil
	}
}

// release frees whatever is still open (at shutdown), counting it as dropped.
func (x *rxBatcher) release() {
	if x.b != nil {
		x.q.Stats.Drop(engine.DropClosed, x.b.Len())
		x.b.Free()
		x.b = nil
	}
}

// udpRx is the receive worker: recvmmsg straight into the queue's region buffers.
func (ep *endpoint) udpRx() {
	q := ep.rxq
	r := q.Regions[0]
	gro := ep.opt.GRO && ep.udp.GRO()
	vlen := min(q.BatchSize(), maxRecvBatch)
	batch := sockio.NewRecvBatch(vlen)
	ready := make([]uint32, 0, vlen) // buffers waiting to be received into
	x := &rxBatcher{q: q, conn: ep.udpConn.id}
	var ovfl uint32
	countOverflow := func(v uint32) {
		// v is the socket's drop counter as a datagram's control message saw it when the
		// kernel queued that datagram, or as SO_MEMINFO reads it now: a datagram queued
		// before a read of the counter carries an older (smaller) value, which must not move
		// the mark back (that would count the drops between the two again).
		if d := v - ovfl; d != 0 && d < 1<<31 {
			q.Stats.Drop(engine.DropSocketOverflow, int(d))
			ovfl = v
		}
	}
	// readDrops counts drops that no received datagram reports: SO_RXQ_OVFL rides on a
	// datagram queued after the drops, so drops while the queue is full and the last of the
	// traffic (nothing queued after them) would otherwise show only at shutdown.
	readDrops := func() {
		if v, err := ep.udp.Drops(); err == nil {
			countOverflow(v)
		}
	}
	stalled := 0 // idle rounds without room to receive into
	defer func() {
		x.release()
		for _, i := range ready {
			r.Put(i)
		}
		// Drops that happened after the last received datagram carry no control message:
		// read the socket's counter directly.
		readDrops()
	}()
	for !ep.stopped() {
		if n := vlen - len(ready); n > 0 {
			ready = ready[:len(ready)+r.GetBurst(ready[len(ready):vlen])]
		}
		b := x.burst()
		if b == nil || len(ready) == 0 {
			// Out of burst metadata or buffers: the application is holding them. Hand over
			// what we have and wait; the kernel queues (and, when full, drops and counts)
			// meanwhile.
			x.flush()
			// The kernel queue fills and drops meanwhile; keep Stats current (every ~100
			// rounds: one getsockopt per few milliseconds while stalled).
			if stalled++; stalled%100 == 1 {
				readDrops()
			}
			time.Sleep(50 * time.Microsecond)
			continue
		}
		stalled = 0
		room := q.BatchSize() - b.Len()
		k := min(len(ready), room)
		if gro {
			// One coalesced datagram can hold many packets: take fewer slots.
			k = min(len(ready), max(1, room/8))
		}
		wait := b.Len() == 0
		for i := 0; i < k; i++ {
			batch.Msgs[i].Buf = r.Buf(ready[i])
		}
		n, err := ep.udp.Recv(batch, k, wait)
		if err != nil {
			ep.e.env.Log.Error("udp receive failed", "interface", ep.port.Name, "err", err)
			time.Sleep(time.Millisecond)
			continue
		}
		if batch.HasOverflow {
			countOverflow(batch.Overflow)
		}
		if n == 0 {
			// The socket ran dry (or the poll timeout passed): whatever it dropped so far
			// will be reported by no datagram until the next one comes.
			readDrops()
		}
		for i := 0; i < n; i++ {
			m := &batch.Msgs[i]
			idx := ready[i]
			if m.Trunc {
				q.Stats.Drop(engine.DropTruncated, max(1, segments(m)))
				r.Put(idx)
				continue
			}
			if a := ep.allow; a.IsValid() && (m.From.Addr().Unmap() != a.Addr() || a.Port() != 0 && m.From.Port() != a.Port()) {
				// remote_addr on a server: the one peer it accepts.
				q.Stats.Drop(engine.DropPeerFiltered, max(1, segments(m)))
				r.Put(idx)
				continue
			}
			if ep.cfg.Mode == "server" {
				if p := ep.peer.Load(); p == nil || *p != m.From {
					from := m.From
					ep.peer.Store(&from)
				}
			}
			base := uint64(idx) * uint64(r.BufSize)
			if gro && m.GSO > 0 && m.N > m.GSO {
				segs := segments(m)
				r.Share(idx, int32(segs))
				for s := 0; s < segs; s++ {
					l := min(m.GSO, m.N-s*m.GSO)
					if x.full() {
						x.flush()
					}
					bb := x.burst()
					if bb == nil {
						// No metadata for the rest of this datagram: count and release.
						q.Stats.Drop(engine.DropNoBurstBuffers, segs-s)
						for ; s < segs; s++ {
							r.Release(base) // drops one share each
						}
						break
					}
					bb.Append(base+uint64(s*m.GSO), uint32(l), 0, m.Stamp)
					x.added(l)
				}
			} else {
				if gro {
					r.Share(idx, 1)
				}
				x.b.Append(base, uint32(m.N), 0, m.Stamp)
				x.added(m.N)
			}
		}
		// Drop the consumed slots from the front of ready.
		ready = ready[:copy(ready, ready[n:])]
		switch {
		case x.full():
			x.flush()
		case x.b != nil && x.b.Len() > 0:
			rem := x.remaining()
			if rem <= 0 || (x.q.Timeout() == 0 && n < k) {
				x.flush()
			} else if n == 0 {
				ep.udp.Wait(min(rem, 100*time.Millisecond))
				if x.remaining() <= 0 {
					x.flush()
				}
			}
		}
	}
}

func segments(m *sockio.RecvMsg) int {
	if m.GSO <= 0 || m.N <= m.GSO {
		return 1
	}
	return (m.N + m.GSO - 1) / m.GSO
}

// sendUDP sends a burst with sendmmsg, packing runs of equal-sized packets into GSO sends.
func (ep *endpoint) sendUDP(b *engine.Burst) error {
	var to netip.AddrPort
	if ep.cfg.Mode == "server" {
		p := ep.peer.Load()
		if p == nil {
			return fmt.Errorf("interface %s: UDP server has no peer yet (it replies to the last sender): %w", ep.port.Name, engine.ErrNotReady)
		}
		to = *p
	}
	q := ep.tx()
	n := b.Len()
	for i := 0; i < n; i++ {
		if l := b.PacketLen(i); l > sockio.MaxUDPPayload {
			return fmt.Errorf("packet %d: %d bytes exceeds the UDP maximum of %d: %w", i, l, sockio.MaxUDPPayload, engine.ErrInvalidParameter)
		}
	}
	ep.txMu.Lock()
	defer ep.txMu.Unlock()
	useGSO := ep.gsoOK.Load()
	msgs, bufs := ep.msgs[:0], ep.bufs[:0]
	if cap(bufs) < n {
		bufs = make([][]byte, 0, n)
	}
	for i := 0; i < n; {
		l := b.PacketLen(i)
		j := i + 1
		if useGSO && l > 0 {
			limit := min(sockio.MaxGSOSegments, sockio.MaxUDPPayload/l)
			for j < n && j-i < limit && b.PacketLen(j) == l {
				j++
			}
			// A shorter packet may end a GSO run.
			if j < n && j-i < limit && b.PacketLen(j) < l && b.PacketLen(j) > 0 {
				j++
			}
		}
		start := len(bufs)
		for k := i; k < j; k++ {
			bufs = append(bufs, b.Packet(k))
		}
		m := sockio.SendMsg{Bufs: bufs[start:len(bufs):len(bufs)], To: to}
		if j-i > 1 {
			m.GSO = l
		}
		msgs = append(msgs, m)
		i = j
	}
	ep.msgs, ep.bufs = msgs, bufs
	sent, err := ep.udp.Send(ep.sb, msgs)
	if err != nil && sent == 0 && useGSO && len(msgs) < n {
		// The kernel refused GSO (an old kernel or a device without it): fall back for good.
		ep.gsoOK.Store(false)
		ep.txMu.Unlock()
		err2 := ep.sendUDP(b)
		ep.txMu.Lock()
		return err2
	}
	pk, by := 0, 0
	for _, m := range msgs[:sent] {
		pk += len(m.Bufs)
		for _, bb := range m.Bufs {
			by += len(bb)
		}
	}
	q.Stats.Add(pk, by)
	b.Free()
	if err != nil {
		q.Stats.Drop(engine.DropSendFailure, n-pk)
		return fmt.Errorf("interface %s: sent %d of %d packets: %v: %w", ep.port.Name, pk, n, err, engine.ErrGenericFailure)
	}
	return nil
}
