package roce

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/rdmacm"
	"github.com/daqiri-go/daqiri/verbs"
)

// Work request ids: the top two bits say what the request was, the rest is
// a receive buffer's index in its region or a send's sequence number.
const (
	kindShift    = 62
	kindRecv     = 0
	kindCtrlRecv = 1
	kindSend     = 2 // application sends, the region table, flush writes
	idMask       = 1<<kindShift - 1

	ctrlSize    = 8192 // region-table buffers: receive in the first half, send in the second
	ctrlSendOff = ctrlSize / 2
)

// phases of a connection.
const (
	phaseConnecting = iota // client: events go to the connecting goroutine
	phaseRunning           // the QP is in RTS; events are handled by the connection
)

// conn is one connection: an rdma_cm ID, its QP, CQ and completion channel,
// and the worker that polls them.
type conn struct {
	e    *Engine
	ep   *endpoint
	id   uint64
	cm   *rdmacm.ID
	slot int

	rxq      *engine.RxQueue
	rxi      int
	rxRegion *engine.Region
	rxLKey   uint32
	rxDepth  int
	txq      *engine.TxQueue
	txi      int

	table  bool       // both sides exchange region tables
	remote []RemoteMR // what the peer advertised (set once, before ready)

	cq      *verbs.CQ
	cch     *verbs.CompChannel
	qp      *verbs.QP
	ctrl    []byte
	ctrlMR  *verbs.MR
	evc     chan rdmacm.Event
	phase   atomic.Int32
	started bool

	// readiness: established (rdma_cm) and, with tables, the peer's table.
	stMu        sync.Mutex
	established bool
	gotTable    bool
	readyFlag   atomic.Bool
	readyOnce   sync.Once
	readyCh     chan struct{}
	failOnce    sync.Once
	err         atomic.Pointer[error]
	dying, done chan struct{}

	// Send queue, guarded by sqMu: sequence numbers of posted and completed
	// work requests, the bursts in flight, scratch work requests.
	sqMu         sync.Mutex
	sqClosed     bool
	posted       uint64
	completed    uint64
	lastSignaled uint64 // posted count at the last signalled request
	lastPost     time.Time
	flights      []flight
	fhead        int
	wrs          []verbs.SendWR
	sges         []verbs.SGE

	// Receive side, worker only (and before the worker starts).
	recvOut    []bool // buffer index → posted as a receive
	recvPosted int
	recvWRs    []verbs.RecvWR
	recvSGEs   []verbs.SGE
	cur        *engine.Burst
	curOp      Opcode
	curSince   time.Time
	wcs        []verbs.WorkCompletion
}

// flight is one posted burst (or internal request when b is nil): its work
// requests are sequence numbers first..last.
type flight struct {
	b           *engine.Burst
	first, last uint64
	op          Opcode
	deliver     bool
	failed      bool
	n, bytes    int
	tag         uint64
}

// rdAtomic is how many RDMA READs this connection lets in flight (0 for UC).
func (c *conn) rdAtomic(devMax uint32) uint8 {
	if c.ep.qpType != verbs.QPTypeRC {
		return 0
	}
	return uint8(min(devMax, 16))
}

func (c *conn) setPhase(p int) { c.phase.Store(int32(p)) }

// setupQP creates the CQ, its completion channel, the QP and the
// region-table buffer, and moves the QP to INIT.
func (c *conn) setupQP() error {
	d := c.ep.dev
	var err error
	if c.cch, err = d.ctx.CreateCompChannel(); err != nil {
		return err
	}
	recv := uint32(c.rxDepth + 1)
	sges := uint32(1)
	if c.txq != nil {
		sges = uint32(max(len(c.txq.Regions), 1))
	}
	sq := uint32(min(sqDepth, int(d.attr.MaxQPWR)))
	if c.cq, err = d.ctx.CreateCQ(int(sq+recv)+16, c.cch, 0); err != nil {
		return err
	}
	if c.qp, err = d.pd.CreateQP(verbs.QPInit{Type: c.ep.qpType, SendCQ: c.cq, RecvCQ: c.cq,
		Cap: verbs.QPCap{MaxSendWR: sq, MaxRecvWR: recv, MaxSendSGE: sges, MaxRecvSGE: 1}}); err != nil {
		return err
	}
	if c.ctrl, err = unix.Mmap(-1, 0, ctrlSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS); err != nil {
		return fmt.Errorf("mapping the region-table buffer: %w", err)
	}
	if c.ctrlMR, err = d.pd.RegMR(c.ctrl, verbs.AccessLocalWrite); err != nil {
		return err
	}
	if c.rxRegion != nil {
		c.recvOut = make([]bool, c.rxRegion.NumBufs)
	}
	c.flights = make([]flight, 0, sqDepth)
	c.wcs = make([]verbs.WorkCompletion, 64)
	if c.ep.qpType == verbs.QPTypeRC {
		if err := c.cm.SetAckTimeout(ackTimeout); err != nil {
			return err
		}
	}
	return c.cm.ModifyQP(c.qp, verbs.QPStateInit, nil)
}

// postInitialReceives posts the region-table receive first (so the peer's
// first message lands in it: receives complete in order) and then the
// application's receive buffers.
func (c *conn) postInitialReceives() error {
	if c.table {
		s, _ := c.ctrlMR.Slice(0, ctrlSendOff)
		if _, err := c.qp.PostRecv(verbs.RecvWR{ID: kindCtrlRecv << kindShift, SGL: []verbs.SGE{s}}); err != nil {
			return err
		}
	}
	c.replenish()
	return nil
}

// toRTS moves the QP through RTR to RTS with the negotiated attributes,
// this side's READ limits and a short minimum RNR timer.
func (c *conn) toRTS(respRes, initDepth uint8) error {
	rtr := func(a *verbs.QPAttr, m *verbs.QPAttrMask) {
		if *m&verbs.QPAttrMinRNRTimer != 0 {
			a.MinRNRTimer = c.e.minRNR
		}
		if *m&verbs.QPAttrMaxDestRdAtomic != 0 {
			a.MaxDestRdAtomic = respRes
		}
	}
	// INIT again first: on the active side the QP went to INIT before the
	// connection manager knew the negotiated READ resources, so its access
	// flags lack remote read (librdmacm's ucma_modify_qp_rtr does the same).
	if err := c.cm.ModifyQP(c.qp, verbs.QPStateInit, nil); err != nil {
		return err
	}
	if err := c.cm.ModifyQP(c.qp, verbs.QPStateRTR, rtr); err != nil {
		return err
	}
	return c.cm.ModifyQP(c.qp, verbs.QPStateRTS, func(a *verbs.QPAttr, m *verbs.QPAttrMask) {
		if *m&verbs.QPAttrMaxQPRdAtomic != 0 {
			a.MaxRdAtomic = initDepth
		}
	})
}

// start runs the connection's worker, pinned to its queue's core.
func (c *conn) start() {
	core := ""
	if c.txq != nil {
		core = c.txq.Config.CPUCore
	} else if c.rxq != nil {
		core = c.rxq.Config.CPUCore
	}
	c.started = true
	c.e.w.Go(fmt.Sprintf("%s/roce-conn-%d", c.ep.port.Name, c.id), core, c.run)
}

// await waits for the connecting goroutine's next event, which must be
// want; any other event, a failure or the deadline ends the wait with an
// error.
func (c *conn) await(deadline time.Time, want rdmacm.EventType) (rdmacm.Event, error) {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case ev := <-c.evc:
		if ev.Type != want {
			if err := ev.Err(); err != nil {
				return ev, err
			}
			return ev, fmt.Errorf("unexpected rdma_cm event %v (status %d) while waiting for %v", ev.Type, ev.Status, want)
		}
		return ev, nil
	case <-t.C:
		return rdmacm.Event{}, fmt.Errorf("no %v within the timeout", want)
	case <-c.e.stopCh:
		return rdmacm.Event{}, fmt.Errorf("session closing: %w", ErrDisconnected)
	}
}

// onEvent handles an rdma_cm event for the connection (cm goroutine).
func (c *conn) onEvent(ev rdmacm.Event) {
	if c.phase.Load() == phaseConnecting {
		select {
		case c.evc <- ev:
		default:
			c.e.log.Warn("roce: connect-phase event dropped", "conn", c.id, "event", ev.Type)
		}
		return
	}
	switch ev.Type {
	case rdmacm.EventEstablished:
		c.onEstablished()
	case rdmacm.EventDisconnected:
		c.fail(fmt.Errorf("interface %s connection %d: the peer disconnected: %w", c.ep.port.Name, c.id, ErrDisconnected))
	case rdmacm.EventConnectError, rdmacm.EventUnreachable, rdmacm.EventRejected, rdmacm.EventDeviceRemoval, rdmacm.EventAddrChange:
		c.fail(fmt.Errorf("interface %s connection %d: %v: %w", c.ep.port.Name, c.id, ev.Err(), ErrDisconnected))
	case rdmacm.EventTimewaitExit:
	default:
		c.e.log.Debug("roce: rdma_cm event ignored", "conn", c.id, "event", ev.Type)
	}
}

// onEstablished sends the region table (when both sides exchange them) and
// checks readiness.
func (c *conn) onEstablished() {
	c.stMu.Lock()
	c.established = true
	c.stMu.Unlock()
	if c.table {
		if err := c.sendTable(); err != nil {
			c.fail(fmt.Errorf("sending the region table: %v: %w", err, ErrDisconnected))
			return
		}
	}
	c.checkReady()
}

func (c *conn) checkReady() {
	c.stMu.Lock()
	ok := c.established && (!c.table || c.gotTable)
	c.stMu.Unlock()
	if ok && c.errNow() == nil {
		c.readyOnce.Do(func() {
			c.readyFlag.Store(true)
			close(c.readyCh)
		})
	}
}

func (c *conn) ready() bool { return c.readyFlag.Load() && c.errNow() == nil }

// errNow is nil while the connection lives.
func (c *conn) errNow() error {
	if p := c.err.Load(); p != nil {
		return *p
	}
	return nil
}

// fail marks the connection dead; the worker tears it down.
func (c *conn) fail(err error) {
	c.failOnce.Do(func() {
		c.err.Store(&err)
		c.readyFlag.Store(false)
		close(c.dying)
		c.readyOnce.Do(func() { close(c.readyCh) })
		if !c.e.closing.Load() {
			c.e.log.Info("roce connection closed", "interface", c.ep.port.Name, "conn", c.id, "reason", err)
		}
	})
}

// abort fails a connection whose worker may not run yet and waits until it
// is torn down.
func (c *conn) abort(err error) {
	c.fail(err)
	if !c.started {
		c.teardown()
	}
	<-c.done
}

// sendTable posts this side's region table as the connection's first SEND.
func (c *conn) sendTable() error {
	n, err := encodeTable(c.ctrl[ctrlSendOff:], c.ep.advert)
	if err != nil {
		return err
	}
	s, _ := c.ctrlMR.Slice(ctrlSendOff, uint64(n))
	c.sqMu.Lock()
	defer c.sqMu.Unlock()
	if c.sqClosed {
		return c.errNow()
	}
	seq := c.posted
	if _, err := c.qp.PostSend(verbs.SendWR{ID: kindSend<<kindShift | seq, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{s}}); err != nil {
		return err
	}
	c.flights = append(c.flights, flight{first: seq, last: seq, op: OpSend})
	c.posted++
	c.lastSignaled = c.posted
	c.lastPost = time.Now()
	return nil
}

// teardown releases everything the connection holds (its worker runs it, or
// abort when there is none). Bounded: at most about two seconds waiting for
// the device to return posted buffers.
func (c *conn) teardown() {
	e := c.e
	c.sqMu.Lock()
	c.sqClosed = true
	c.sqMu.Unlock()
	if c.qp != nil {
		_ = c.qp.Modify(&verbs.QPAttr{State: verbs.QPStateErr}, verbs.QPAttrState)
	}
	if c.cm != nil && c.phase.Load() == phaseRunning {
		// Sends the disconnect request, or answers the peer's.
		_ = c.cm.Disconnect()
	}
	if c.qp != nil && c.cq != nil {
		// Flushed completions return posted receives and in-flight sends.
		for deadline := time.Now().Add(2 * time.Second); c.outstanding() && time.Now().Before(deadline); {
			n, err := c.cq.Poll(c.wcs)
			if err != nil {
				break
			}
			for i := range n {
				c.handle(&c.wcs[i])
			}
			if n == 0 {
				time.Sleep(time.Millisecond)
			}
		}
	}
	c.deliverCurrent()
	var errs []error
	if c.qp != nil {
		errs = append(errs, c.qp.Close())
	}
	// The device no longer touches anything: return what is left.
	c.sqMu.Lock()
	for i := c.fhead; i < len(c.flights); i++ {
		if f := c.flights[i]; f.b != nil {
			c.txStats(f).Drop(engine.DropClosed, f.n)
			f.b.Free()
		}
	}
	c.flights, c.fhead = c.flights[:0], 0
	c.sqMu.Unlock()
	for idx, out := range c.recvOut {
		if out {
			c.rxRegion.Put(uint32(idx))
			c.recvOut[idx] = false
		}
	}
	c.recvPosted = 0
	if c.cq != nil {
		errs = append(errs, c.cq.Close())
	}
	if c.cch != nil {
		errs = append(errs, c.cch.Close())
	}
	if c.ctrlMR != nil {
		errs = append(errs, c.ctrlMR.Close())
	}
	if c.ctrl != nil {
		errs = append(errs, unix.Munmap(c.ctrl))
	}
	if c.cm != nil {
		_, err := c.cm.Destroy()
		errs = append(errs, err)
		e.mu.Lock()
		delete(e.byID, c.cm)
		e.mu.Unlock()
	}
	for _, err := range errs {
		if err != nil {
			e.log.Warn("roce: releasing a connection", "conn", c.id, "err", err)
		}
	}
	c.ep.release(c)
	e.mu.Lock()
	delete(e.conns, c.id)
	e.mu.Unlock()
	close(c.done)
	e.wg.Done()
}

// outstanding reports whether the device still holds posted work.
func (c *conn) outstanding() bool {
	c.sqMu.Lock()
	s := c.posted != c.completed
	c.sqMu.Unlock()
	return s || c.recvPosted > 0
}

// txStats is the counters of the queue a flight's burst came from.
func (c *conn) txStats(f flight) *engine.Counters {
	if q := c.ep.port.TxQueueByID(f.b.Queue()); q != nil {
		return &q.Stats
	}
	return &c.txq.Stats
}
