package roce

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/verbs"
	"github.com/daqiri-go/daqiri/verbs/provider"
)

const (
	// spinPolls is how many empty polls a worker makes (yielding between
	// them) before it arms the CQ and sleeps on its completion channel. Kept
	// small: a spinning worker steals the CPU that software RDMA (rxe) needs
	// to make progress.
	spinPolls = 64
	// maxSleep bounds a worker's sleep, so that partial bursts, unsignalled
	// sends and teardown requests are seen in time.
	maxSleep = 10 * time.Millisecond
	// flushAfter is how long unsignalled sends may wait for a completion
	// before the worker asks for one.
	flushAfter = time.Millisecond
)

// run is a connection's worker: it polls the CQ, hands received messages
// and finished READs to the application, frees sent bursts, keeps receive
// buffers posted, and tears the connection down when it fails.
func (c *conn) run() {
	spin := 0
	for {
		n, err := c.cq.Poll(c.wcs)
		if err != nil {
			c.fail(fmt.Errorf("polling the completion queue: %v: %w", err, ErrDisconnected))
		}
		for i := range n {
			c.handle(&c.wcs[i])
		}
		if n > 0 {
			spin = 0
			if c.recvPosted < c.rxDepth/2 {
				// Keep receives posted under load too: a peer's SEND that
				// finds none waits an RNR period (RC) or is lost (UC).
				c.replenish()
			}
			continue
		}
		select {
		case <-c.dying:
			c.teardown()
			return
		default:
		}
		c.idle()
		if spin < spinPolls {
			spin++
			runtime.Gosched()
			continue
		}
		spin = 0
		if err := c.cq.ReqNotify(false); err != nil {
			c.fail(fmt.Errorf("arming the completion queue: %v: %w", err, ErrDisconnected))
			continue
		}
		// A completion that came between the poll and the arming raised no
		// event: poll once more before sleeping.
		if n, _ := c.cq.Poll(c.wcs); n > 0 {
			for i := range n {
				c.handle(&c.wcs[i])
			}
			continue
		}
		sleep := maxSleep
		if c.cur != nil && c.rxq.Timeout() > 0 {
			sleep = max(min(sleep, c.rxq.Timeout()-time.Since(c.curSince)), 0)
		}
		if _, err := c.cch.Wait(sleep); err != nil && !errors.Is(err, verbs.ErrTimeout) {
			c.fail(fmt.Errorf("waiting for completions: %v: %w", err, ErrDisconnected))
		}
	}
}

// idle runs when the CQ is empty: hand over a partial burst whose time has
// come, post receive buffers the application returned, ask for a completion
// of unsignalled sends.
func (c *conn) idle() {
	if c.cur != nil {
		if t := c.rxq.Timeout(); t == 0 || time.Since(c.curSince) >= t {
			c.deliverCurrent()
		}
	}
	c.replenish()
	c.flushUnsignaled()
}

func (c *conn) handle(wc *verbs.WorkCompletion) {
	switch wc.ID >> kindShift {
	case kindRecv:
		c.onRecv(wc)
	case kindCtrlRecv:
		c.onCtrlRecv(wc)
	case kindSend:
		c.onSend(wc)
	default:
		c.rxReasons().add(ReasonRxUnknownWRID, 1)
	}
}

func (c *conn) rxReasons() *reasonCounters {
	if c.rxq == nil {
		return nil
	}
	return &c.ep.rxDrops[c.rxi]
}

func (c *conn) txReasons() *reasonCounters {
	if c.txq == nil {
		return nil
	}
	return &c.ep.txDrops[c.txi]
}

// onRecv: a message (or a write-with-immediate notification) arrived in a
// posted buffer.
func (c *conn) onRecv(wc *verbs.WorkCompletion) {
	idx := wc.ID & idMask
	if c.rxRegion == nil || idx >= uint64(len(c.recvOut)) || !c.recvOut[idx] {
		if r := c.rxReasons(); r != nil {
			r.add(ReasonRxUnknownWRID, 1)
		}
		return
	}
	c.recvOut[idx] = false
	c.recvPosted--
	if wc.Status != verbs.WCSuccess {
		c.rxRegion.Put(uint32(idx))
		if wc.Status == verbs.WCWRFlushErr {
			return // the connection is going down: the buffer held nothing
		}
		c.rxReasons().add(ReasonRxCompletionError, 1)
		why := engine.DropOther
		hint := ""
		if wc.Status == provider.WCLocLenErr {
			why = engine.DropTruncated
			hint = fmt.Sprintf(" (a message longer than the %d-byte buffers of region %s)", c.rxRegion.BufSize, c.rxRegion.Name)
		}
		c.rxq.Stats.Drop(why, 1)
		c.fail(fmt.Errorf("interface %s connection %d: receive failed: %v%s: %w", c.ep.port.Name, c.id, wc.Err(), hint, ErrDisconnected))
		return
	}
	op, length, wlen := OpReceive, wc.ByteLen, uint32(0)
	if wc.Opcode == verbs.WCRecvRDMAWithImm {
		// The data went to this side's memory region; the buffer holds
		// nothing.
		op, length, wlen = OpWriteImm, 0, wc.ByteLen
	}
	b := c.rxBurst(op)
	if b == nil {
		c.rxRegion.Put(uint32(idx))
		c.rxq.Stats.Drop(engine.DropNoBurstBuffers, 1)
		c.rxReasons().add(ReasonRxCompletionEnqueueFailure, 1)
		return
	}
	// The receive time is when the completion was polled: CLOCK_REALTIME ns (verbs gives no
	// wall-clock completion time without a device clock).
	b.Append(idx*uint64(c.rxRegion.BufSize), length, 0, time.Now().UnixNano())
	st := b.Engine.(*burstState)
	st.comp.Append(wc.Imm, wc.Flags&verbs.WCFlagWithImm != 0, wlen)
	if b.Len() >= c.rxq.BatchSize() {
		c.deliverCurrent()
	}
}

// rxBurst is the burst being filled with op completions, starting a new one
// (and handing over the current) as needed; nil when no burst is free.
func (c *conn) rxBurst(op Opcode) *engine.Burst {
	if c.cur != nil && c.curOp != op {
		c.deliverCurrent()
	}
	if c.cur == nil {
		b, err := c.rxq.NewBurst()
		if err != nil {
			return nil
		}
		st := c.e.st.of(b)
		st.done = true
		st.comp.Reset(op, c.id)
		b.SetConnID(c.id)
		c.cur, c.curOp, c.curSince = b, op, time.Now()
	}
	return c.cur
}

func (c *conn) deliverCurrent() {
	b := c.cur
	if b == nil {
		return
	}
	c.cur = nil
	n := b.Len()
	if !c.rxq.Deliver(b) && n > 0 {
		c.rxReasons().add(ReasonRxCompletionEnqueueFailure, n)
	}
}

// onCtrlRecv: the peer's region table arrived.
func (c *conn) onCtrlRecv(wc *verbs.WorkCompletion) {
	if wc.Status != verbs.WCSuccess {
		if wc.Status != verbs.WCWRFlushErr {
			c.fail(fmt.Errorf("interface %s connection %d: receiving the peer's region table: %v: %w", c.ep.port.Name, c.id, wc.Err(), ErrDisconnected))
		}
		return
	}
	t, err := decodeTable(c.ctrl[:min(int(wc.ByteLen), ctrlSendOff)])
	if err != nil {
		c.fail(fmt.Errorf("interface %s connection %d: %v: %w", c.ep.port.Name, c.id, err, ErrDisconnected))
		return
	}
	c.stMu.Lock()
	c.remote = t
	c.gotTable = true
	c.stMu.Unlock()
	c.checkReady()
}

// replenish keeps the connection's receive buffers posted, taking free
// buffers from the RX region.
func (c *conn) replenish() {
	if c.rxRegion == nil || c.recvPosted >= c.rxDepth {
		return
	}
	select {
	case <-c.dying:
		return
	default:
	}
	want := c.rxDepth - c.recvPosted
	if cap(c.recvWRs) < want {
		c.recvWRs = make([]verbs.RecvWR, 0, c.rxDepth)
		c.recvSGEs = make([]verbs.SGE, c.rxDepth)
	}
	wrs := c.recvWRs[:0]
	bs := uint64(c.rxRegion.BufSize)
	for len(wrs) < want {
		idx, ok := c.rxRegion.Get()
		if !ok {
			break // the application holds the rest; try again later
		}
		k := len(wrs)
		c.recvSGEs[k] = verbs.SGE{Addr: uint64(c.rxRegion.Addr(uint64(idx) * bs)), Length: uint32(min(bs, 1<<32-1)), LKey: c.rxLKey}
		wrs = append(wrs, verbs.RecvWR{ID: kindRecv<<kindShift | uint64(idx), SGL: c.recvSGEs[k : k+1]})
	}
	if len(wrs) == 0 {
		return
	}
	n, err := c.qp.PostRecv(wrs...)
	for _, wr := range wrs[:n] {
		c.recvOut[wr.ID&idMask] = true
	}
	c.recvPosted += n
	if err != nil {
		for _, wr := range wrs[n:] {
			c.rxRegion.Put(uint32(wr.ID & idMask))
		}
		c.rxReasons().add(ReasonRxPostFailure, len(wrs)-n)
		if !errors.Is(err, verbs.ErrQueueFull) {
			c.fail(fmt.Errorf("interface %s connection %d: posting receives: %v: %w", c.ep.port.Name, c.id, err, ErrDisconnected))
		}
	}
}

// onSend: send work requests up to the completion's sequence number are
// done (the send queue completes in order).
func (c *conn) onSend(wc *verbs.WorkCompletion) {
	seq := wc.ID & idMask
	c.sqMu.Lock()
	if seq < c.completed || seq >= c.posted {
		c.sqMu.Unlock()
		c.txReasons().add(ReasonTxUnknownWRID, 1)
		return
	}
	failed := wc.Status != verbs.WCSuccess
	if failed {
		for i := c.fhead; i < len(c.flights); i++ {
			if f := &c.flights[i]; f.first <= seq && seq <= f.last {
				f.failed = true
				break
			}
		}
	}
	c.completed = seq + 1
	var done []flight
	for c.fhead < len(c.flights) && c.flights[c.fhead].last < c.completed {
		done = append(done, c.flights[c.fhead])
		c.flights[c.fhead] = flight{}
		c.fhead++
	}
	if c.fhead == len(c.flights) {
		c.flights, c.fhead = c.flights[:0], 0
	}
	c.sqMu.Unlock()
	if failed && wc.Status != verbs.WCWRFlushErr {
		what := "a send"
		if len(done) > 0 {
			what = done[len(done)-1].op.String()
		}
		c.fail(fmt.Errorf("interface %s connection %d: %s failed: %v: %w", c.ep.port.Name, c.id, what, wc.Err(), ErrDisconnected))
	}
	for _, f := range done {
		c.finish(f)
	}
}

// finish hands a completed burst back or frees it.
func (c *conn) finish(f flight) {
	if f.b == nil {
		return // region table or flush write
	}
	stats := c.txStats(f)
	if f.failed {
		stats.Drop(engine.DropSendFailure, f.n)
		c.txReasons().add(ReasonTxCompletionError, f.n)
		f.b.Free()
		return
	}
	stats.Add(f.n, f.bytes)
	if !f.deliver {
		f.b.Free()
		return
	}
	st := c.e.st.of(f.b)
	st.done = true
	st.comp.Reset(f.op, c.id)
	st.comp.Tag = f.tag
	for range f.n {
		st.comp.Append(0, false, 0)
	}
	if c.rxq == nil {
		// Nowhere to hand it: the data was read (or sent) all the same.
		c.txReasons().add(ReasonTxCompletionEnqueueFailure, f.n)
		f.b.Free()
		return
	}
	if !c.rxq.Deliver(f.b) {
		c.txReasons().add(ReasonTxCompletionEnqueueFailure, f.n)
	}
}

// flushUnsignaled posts a signalled zero-length RDMA WRITE when unsignalled
// sends have waited for a completion for a while, so that their bursts are
// released (IB spec C9-88: a zero-length RDMA WRITE needs no remote key).
func (c *conn) flushUnsignaled() {
	if c.e.signalEvery == 1 {
		return
	}
	c.sqMu.Lock()
	defer c.sqMu.Unlock()
	if c.sqClosed || c.lastSignaled >= c.posted || time.Since(c.lastPost) < flushAfter || c.posted-c.completed >= sqDepth {
		return
	}
	seq := c.posted
	if _, err := c.qp.PostSend(verbs.SendWR{ID: kindSend<<kindShift | seq, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled}); err != nil {
		return
	}
	c.flights = append(c.flights, flight{first: seq, last: seq, op: OpWrite})
	c.posted++
	c.lastSignaled = c.posted
	c.lastPost = time.Now()
}

// Send posts a TX burst on its connection (in the caller's thread): one
// work request per packet, one scatter/gather element per segment.
func (e *Engine) Send(b *engine.Burst) error {
	ep := e.endpointOf(b.Port())
	if ep == nil || ep.port.TxQueueByID(b.Queue()) == nil {
		return fmt.Errorf("port %d queue %d is not a RoCE tx queue: %w", b.Port(), b.Queue(), engine.ErrInvalidParameter)
	}
	h := Header{Op: OpSend}
	if hh, ok := HeaderOf(b); ok {
		h = hh
	}
	var c *conn
	if id := b.ConnID(); id != 0 {
		if c = e.conn(id); c == nil {
			q := ep.port.TxQueueByID(b.Queue())
			q.Stats.Drop(engine.DropNotConnected, b.Len())
			n := b.Len()
			b.Free()
			ep.txDrops[indexOfTx(ep.port, q)].add(ReasonTxEnqueueFailure, n)
			return fmt.Errorf("interface %s: connection %d: %w", ep.port.Name, id, ErrDisconnected)
		}
		if c.ep != ep {
			return fmt.Errorf("connection %d belongs to interface %s, not %s: %w", id, c.ep.port.Name, ep.port.Name, engine.ErrInvalidParameter)
		}
	} else {
		var live []*conn
		for _, x := range ep.slotConns() {
			if x.ready() {
				live = append(live, x)
			}
		}
		switch len(live) {
		case 0:
			return fmt.Errorf("interface %s: no RoCE connection yet: %w", ep.port.Name, engine.ErrNotReady)
		case 1:
			c = live[0]
		default:
			return fmt.Errorf("interface %s has %d connections: set the burst's connection id (SetConnID or the header's Conn): %w", ep.port.Name, len(live), engine.ErrInvalidParameter)
		}
	}
	return c.post(b, h)
}

func indexOfTx(p *engine.Port, q *engine.TxQueue) int {
	for i, x := range p.Tx {
		if x == q {
			return i
		}
	}
	return 0
}

// post validates a burst against the connection and posts it.
func (c *conn) post(b *engine.Burst, h Header) error {
	n := b.Len()
	if n == 0 || n >= sqDepth {
		return fmt.Errorf("a RoCE burst carries 1 to %d packets, not %d: %w", sqDepth-1, n, engine.ErrInvalidParameter)
	}
	if h.Op == OpRead && c.ep.qpType != verbs.QPTypeRC {
		return fmt.Errorf("interface %s is %v: RDMA READ needs transport_mode RC: %w", c.ep.port.Name, c.ep.qpType, engine.ErrInvalidParameter)
	}
	var raddr uint64
	var rkey uint32
	total := uint64(b.TotalBytes())
	if h.Op == OpWrite || h.Op == OpWriteImm || h.Op == OpRead {
		var err error
		if raddr, rkey, err = c.remoteTarget(h, total); err != nil {
			return err
		}
	}
	c.sqMu.Lock()
	defer c.sqMu.Unlock()
	// A connection that failed but is not torn down yet (the worker closes its send queue a
	// little later) is as dead as a closed one: its error, not "still connecting".
	if c.sqClosed || c.errNow() != nil {
		err := c.errNow()
		c.txStatsQ(b).Drop(engine.DropNotConnected, n)
		c.txReasons().add(ReasonTxEnqueueFailure, n)
		b.Free()
		return err
	}
	if !c.ready() {
		return fmt.Errorf("interface %s connection %d is still connecting: %w", c.ep.port.Name, c.id, engine.ErrNotReady)
	}
	if used := c.posted - c.completed; used+uint64(n) > sqDepth {
		return fmt.Errorf("interface %s connection %d: send queue full (%d of %d work requests in flight): %w", c.ep.port.Name, c.id, used, sqDepth, engine.ErrNotReady)
	}
	nsegs := b.NumSegments()
	if cap(c.sges) < n*nsegs {
		c.sges = make([]verbs.SGE, n*nsegs)
	}
	if cap(c.wrs) < n {
		c.wrs = make([]verbs.SendWR, n)
	}
	sges, wrs := c.sges[:n*nsegs], c.wrs[:n]
	deliver := h.Op == OpRead || h.Complete
	every := uint64(c.e.signalEvery)
	nearFull := c.posted-c.completed+uint64(n)+every > sqDepth
	off := uint64(0)
	for i := range n {
		k := 0
		plen := 0
		for s := range nsegs {
			l := b.SegmentLen(s, i)
			if l == 0 {
				continue
			}
			m := c.ep.dev.mrs[b.SegmentRegion(s)]
			if m == nil {
				c.txReasons().add(ReasonMissingMemoryRegion, 1)
				return fmt.Errorf("region %s of the burst is not registered with %s: %w", b.SegmentRegion(s).Name, c.ep.dev.info.Name, engine.ErrInvalidParameter)
			}
			sges[i*nsegs+k] = verbs.SGE{Addr: uint64(b.SegmentAddr(s, i)), Length: uint32(l), LKey: m.mr.LKey}
			k++
			plen += l
		}
		seq := c.posted + uint64(i)
		wr := verbs.SendWR{ID: kindSend<<kindShift | seq, SGL: sges[i*nsegs : i*nsegs+k]}
		switch h.Op {
		case OpSend:
			wr.Opcode = verbs.WRSend
		case OpWrite:
			wr.Opcode = verbs.WRRDMAWrite
		case OpWriteImm:
			wr.Opcode = verbs.WRRDMAWrite
			if i == n-1 {
				wr.Opcode, wr.Imm = verbs.WRRDMAWriteWithImm, h.Imm
			}
		case OpRead:
			wr.Opcode = verbs.WRRDMARead
		}
		if wr.Opcode != verbs.WRSend {
			wr.RemoteAddr, wr.RKey = raddr+off, rkey
		}
		off += uint64(plen)
		if (seq+1)%every == 0 || (i == n-1 && (deliver || nearFull)) {
			wr.Flags = verbs.SendSignaled
		}
		wrs[i] = wr
	}
	k, err := c.qp.PostSend(wrs...)
	if k == 0 {
		c.txStatsQ(b).Drop(engine.DropSendFailure, n)
		c.txReasons().add(ReasonTxPostFailure, n)
		b.Free()
		return fmt.Errorf("interface %s connection %d: posting %v: %v: %w", c.ep.port.Name, c.id, h.Op, err, engine.ErrGenericFailure)
	}
	f := flight{b: b, first: c.posted, last: c.posted + uint64(k) - 1, op: h.Op, deliver: deliver, n: k, tag: h.Tag}
	if k < n {
		// The provider refused work request k: the rest of the burst never
		// leaves. The posted part completes as usual.
		c.txStatsQ(b).Drop(engine.DropSendFailure, n-k)
		c.txReasons().add(ReasonTxPostFailure, n-k)
		b.Truncate(k)
		if wrs[k-1].Flags&verbs.SendSignaled == 0 {
			c.lastSignaled = 0 // let the worker ask for a completion
		}
	}
	f.bytes = b.TotalBytes()
	for i := range k {
		if wrs[i].Flags&verbs.SendSignaled != 0 {
			c.lastSignaled = f.first + uint64(i) + 1
		}
	}
	c.flights = append(c.flights, f)
	c.posted += uint64(k)
	c.lastPost = time.Now()
	if k < n {
		return fmt.Errorf("interface %s connection %d: %d of %d packets posted: %v: %w", c.ep.port.Name, c.id, k, n, err, engine.ErrGenericFailure)
	}
	return nil
}

func (c *conn) txStatsQ(b *engine.Burst) *engine.Counters {
	if q := c.ep.port.TxQueueByID(b.Queue()); q != nil {
		return &q.Stats
	}
	return &c.txq.Stats
}

// remoteTarget resolves where a WRITE or READ goes in the peer's memory.
func (c *conn) remoteTarget(h Header, total uint64) (uint64, uint32, error) {
	if h.RemoteMR == "" {
		if h.RKey == 0 && h.RemoteAddr == 0 {
			return 0, 0, fmt.Errorf("%v needs the peer's memory: set the header's RemoteMR (a region the peer advertised) or RemoteAddr and RKey: %w", h.Op, engine.ErrInvalidParameter)
		}
		return h.RemoteAddr, h.RKey, nil
	}
	c.stMu.Lock()
	remote := c.remote
	c.stMu.Unlock()
	for _, r := range remote {
		if r.Name != h.RemoteMR {
			continue
		}
		if (h.Op == OpRead && !r.RemoteRead) || (h.Op != OpRead && !r.RemoteWrite) {
			c.txReasons().add(ReasonMissingMemoryKey, 1)
			return 0, 0, fmt.Errorf("the peer's region %s does not grant %v (write %v, read %v): %w", r.Name, h.Op, r.RemoteWrite, r.RemoteRead, engine.ErrInvalidParameter)
		}
		if h.RemoteOffset > r.Length || total > r.Length-h.RemoteOffset {
			return 0, 0, fmt.Errorf("%v of %d bytes at offset %d exceeds the peer's %d-byte region %s: %w", h.Op, total, h.RemoteOffset, r.Length, r.Name, engine.ErrInvalidParameter)
		}
		return r.Addr + h.RemoteOffset, r.RKey, nil
	}
	names := make([]string, len(remote))
	for i, r := range remote {
		names[i] = r.Name
	}
	c.txReasons().add(ReasonMissingMemoryRegion, 1)
	return 0, 0, fmt.Errorf("the peer advertised no region %q (it advertised %v): %w", h.RemoteMR, names, engine.ErrInvalidParameter)
}
