package datapath

import (
	"context"
	"encoding/binary"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// NIC is one simulated port's datapath: its queues, steering and wire. The control side
// decodes and validates commands, then calls these methods; a method's *Error carries the
// PRM status and syndrome the command must return. Methods are safe for concurrent use.
// Events are delivered after the NIC's lock is released, so an Events implementation may
// call back into the NIC.
type NIC struct {
	cfg Config

	mu        sync.Mutex
	cqs       map[uint32]*cq
	rqs       map[uint32]*rq
	sqs       map[uint32]*sq
	rqts      map[uint32]*rqt
	tirs      map[uint32]*tir
	tiss      map[uint32]*TISParams
	tables    [2]map[uint32]*table
	roots     [2]uint32
	hasRoot   [2]bool
	fcounters map[uint32]*FlowCounter // the map under mu and fcMu, the values under fcMu
	reformats map[uint32]*ReformatParams
	pacing    map[uint16]PacingParams
	stats     Counters
	qOOB      map[uint32]uint64 // out_of_buffer per Q counter set
	wire      Wire
	pendingSQ map[uint32]bool
	events    []func()
	flex      map[uint32]*FlexNodeParams // flex parser nodes (flex.go)

	// fcMu guards the flow counters' values, and with mu their map: QUERY_FLOW_COUNTER
	// takes only fcMu, so a counter read does not wait for a Step in progress (which holds
	// mu for up to a Step's budget of frames; daqiri-bench reads the drop counters while its
	// window is full), and still sees whole frames counted.
	fcMu sync.Mutex

	// rung lists the SQs whose doorbell was rung since the last Step, each once (under
	// dbMu, which UARWrite takes instead of mu for SQ doorbells).
	dbMu sync.Mutex
	rung []uint32

	inMu    sync.Mutex
	inbox   [][]byte
	inDrops uint64 // frames the full inbox refused, under inMu
	// inLen is len(inbox), stored under inMu wherever the inbox changes: the peer's direct
	// delivery reads it per frame without the lock (deliverDirect; a locked instruction there
	// waited for the previous frame's streaming stores to drain).
	inLen atomic.Int32
	// spare holds frame buffers Step is done with, for Receive to copy the next frames
	// into (under inMu): a frame costs no allocation once the port has run a while.
	spare [][]byte

	// work is Step's batch of frames taken from the inbox, and sqns its list of SQs to
	// serve (reused between Steps, under mu).
	work [][]byte
	sqns []uint32
	// outbox holds the frames the Step transmitted to outPeer, its cabled peer, in buffers
	// from frameBuf: they go to the peer's inbox in one batch when the Step ends, or before
	// any other frame this port sends it (flushOut; under mu).
	outbox  [][]byte
	outPeer *NIC
	// kickPeer is the cabled port this Step put frames into: it is woken once, when the
	// Step ends, rather than once per frame (under mu).
	kickPeer *NIC
	// direct is the cabled peer whose lock this Step holds while it delivers frames straight
	// from host memory into the peer's RX buffers (deliverDirect), nil when none; directN
	// counts the frames of that batch (under mu). noDirect turns the path off (tests compare).
	direct   *NIC
	directN  int
	noDirect bool
	// directHook, when set (tests), is called after each frame deliverDirect received.
	directHook func(f []byte)
	// dirty lists the CQs with CQEs pending for the end of the Step (under mu).
	dirty []*cq
	// dmaw writes received frames into RX buffers (streaming stores; under mu).
	dmaw dmaWriter
	// spans caches the host spans of the keys TX gathers and cyclic RQ scatters name
	// (under mu).
	spans spanCache
	// txFrame is the buffer a SEND or enhanced MPW WQE builds its frame in when the wire
	// is not a cable (the wire copies it), reused WQE after WQE (under mu).
	txFrame []byte
	// txBufs are frame buffers for frames to a cabled peer (see frameBuf; under mu).
	txBufs [][]byte
	// mpwSegs are an enhanced MPW WQE's packets, checked before any is sent (under mu).
	mpwSegs [][]byte
	// steerPkt and steerMP are steering's parsed frame and match parameter, per table
	// type (under mu).
	steerPkt [2]packet
	steerMP  [2][]byte
	// steerCounted lists the flow counters the last steer counted into (under mu).
	steerCounted []*FlowCounter
	// rxCache holds RX decisions by frame key (steercache.go), valid while gen is what it
	// was when they were made (under mu).
	rxCache steerCache
	// gen counts the holds of the port's lock by its control methods (lock): any change
	// of an object steering, RSS or an RQ choice reads moves it, and the cached decisions
	// made before are not used again (under mu). noRXCache turns the cache off (tests
	// compare the two).
	gen       uint64
	noRXCache bool
	// rxStamps are the clock's readings for the frames of the Step's batch, by kind (0
	// free-running, 1 real time), read at the batch's first frame that needs one (rxRead
	// says which were read; under mu).
	rxStamps [2]uint64
	rxRead   [2]bool

	kick chan struct{}
	// running counts the Run goroutines stepping the port (free-running mode): only then
	// does an SQ doorbell do the Step's work in the ringing thread (see UARWrite).
	running atomic.Int32
}

// inboxLimit bounds the frames waiting for a Step: a port that is not stepped drops what
// arrives beyond it (counted as out of buffer), as a NIC's RX FIFO overflows.
const inboxLimit = 4096

// New returns a port's datapath with no objects.
func New(cfg Config) *NIC {
	n := &NIC{
		cfg:       cfg,
		cqs:       map[uint32]*cq{},
		rqs:       map[uint32]*rq{},
		sqs:       map[uint32]*sq{},
		rqts:      map[uint32]*rqt{},
		tirs:      map[uint32]*tir{},
		tiss:      map[uint32]*TISParams{},
		fcounters: map[uint32]*FlowCounter{},
		reformats: map[uint32]*ReformatParams{},
		pacing:    map[uint16]PacingParams{},
		pendingSQ: map[uint32]bool{},
		qOOB:      map[uint32]uint64{},
		kick:      make(chan struct{}, 1),
	}
	n.tables[0] = map[uint32]*table{}
	n.tables[1] = map[uint32]*table{}
	return n
}

// lock and unlock bracket every method; unlock delivers the events raised meanwhile. lock
// moves gen: every method that may change an object takes it (queries too, which costs
// nothing but a cache refill), so the RX decision cache needs no list of the methods that
// change what it caches. Step and the datapath's doorbells take mu directly.
func (n *NIC) lock() {
	n.mu.Lock()
	n.gen++
}

func (n *NIC) unlock() {
	ev := n.events
	n.events = nil
	n.mu.Unlock()
	for _, f := range ev {
		f()
	}
}

func (n *NIC) raise(f func()) {
	if n.cfg.Events != nil {
		n.events = append(n.events, f)
	}
}

func (n *NIC) signal() {
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

// Counters reads the port's counters; clear zeroes them after reading.
func (n *NIC) Counters(clear bool) Counters {
	n.mu.Lock() // reads counters only: gen stays
	defer n.unlock()
	c := n.stats
	n.inMu.Lock()
	c.RXOutOfBuffer += n.inDrops
	c.RXInputDrops = n.inDrops
	if clear {
		n.stats = Counters{}
		n.inDrops = 0
	}
	n.inMu.Unlock()
	return c
}

// QCounterOutOfBuffer reads (and optionally clears) a Q counter set's out_of_buffer: the
// frames dropped because an RQ whose rqc counter_set_id names the set had no posted WQE
// (QUERY_Q_COUNTER; DPDK reports it as rx_out_of_buffer). Counters' RXOutOfBuffer counts
// them for all RQs.
func (n *NIC) QCounterOutOfBuffer(set uint32, clear bool) uint64 {
	n.mu.Lock() // reads counters only: gen stays
	defer n.unlock()
	v := n.qOOB[set]
	if clear {
		delete(n.qOOB, set)
	}
	return v
}

// UARWrite is a store to a UAR page of BAR0 at byte offset off (4 or 8 bytes, or a whole
// BlueFlame buffer), big-endian data as the driver wrote it: CQ arm doorbells (0x20), EQ
// doorbells (0x40, 0x48, forwarded to Events) and SQ doorbells/BlueFlame (0x800 to 0xfff).
// A store the model does not decode is ignored, as writes to unused UAR space are.
//
// An SQ doorbell takes only the doorbell lock, not the port's: the driver's sending thread
// never waits for a Step in progress (which holds the port's lock while it serves the SQs and
// the frames), and the next Step serves every SQ rung since the last one. In free-running
// mode a doorbell that finds the port's lock free does that Step's work itself.
func (n *NIC) UARWrite(uar uint32, off uint32, data []byte) {
	if off >= prm.UARBlueFlame && off < prm.UARPageSize && len(data) >= 8 {
		// The first 8 bytes of the control segment: the SQ number is in qpn_ds (rdma-core
		// qp.c mlx5_bf_copy / DPDK mlx5_tx_dbrec: the doorbell is the ctrl segment's head).
		// An SQ that does not exist (or no longer does when the Step comes) is ignored.
		sqn := prm.CtrlSQN(binary.BigEndian.Uint32(data[4:]))
		n.dbMu.Lock()
		if !slices.Contains(n.rung, sqn) {
			n.rung = append(n.rung, sqn)
		}
		n.dbMu.Unlock()
		if n.running.Load() > 0 && n.mu.TryLock() {
			// Free-running and no Step in progress: the ringing thread does the Step's work
			// itself, as a NIC starts on a doorbell at once, instead of waking the port's
			// goroutine for it (a wake-up and a thread hand-off per doorbell, and the WQEs
			// and buffers the driver just wrote are still in this CPU's cache). What the
			// budget leaves is the goroutine's, as is any doorbell rung while the lock is
			// held (TryLock fails there, and that doorbell signals).
			n.stepLocked(inlineBudget)
			more := len(n.pendingSQ) > 0 || n.rungAny() || n.inboxAny()
			peer := n.kickPeer
			n.kickPeer = nil
			n.unlock()
			if peer != nil {
				peer.receiveInline()
			}
			if !more {
				return
			}
		}
		n.signal()
		return
	}
	n.mu.Lock() // CQ arm and EQ doorbells change no object steering reads: gen stays
	defer n.unlock()
	switch {
	case off == prm.UARCQDoorbell && len(data) >= 8:
		// kernel cq.h mlx5_cq_arm: sn<<28 | cmd | ci, then the CQ number.
		hi := binary.BigEndian.Uint32(data)
		cqn := binary.BigEndian.Uint32(data[4:]) & 0xffffff
		if c := n.cqs[cqn]; c != nil {
			n.armCQ(c, hi&0xffffff, hi&prm.CQDBReqNotSol != 0)
		}
	case (off == prm.UAREQDoorbellArm || off == prm.UAREQDoorbellUpdate) && len(data) >= 4:
		v := binary.BigEndian.Uint32(data)
		arm := off == prm.UAREQDoorbellArm
		ev := n.cfg.Events
		n.raise(func() { ev.EQDoorbell(uar, v>>24, v&0xffffff, arm) })
	}
}

// SetWire connects the port's transmit side; nil drops what it sends.
func (n *NIC) SetWire(w Wire) {
	n.lock()
	defer n.unlock()
	n.wire = w
}

// Receive hands the port a frame from its wire. The frame is copied and processed on the
// next Step (or at once in free-running mode).
func (n *NIC) Receive(frame []byte) {
	if n.enqueue(frame) {
		n.signal()
	}
}

// enqueue copies a frame into the inbox; it reports whether the inbox was empty before, so
// that the port's goroutine needs a wake-up (while frames wait, a Step is due anyway: Run
// steps until Step finds nothing, and a frame arriving after that finds the inbox empty).
func (n *NIC) enqueue(frame []byte) (wake bool) {
	n.inMu.Lock()
	if len(n.inbox) >= inboxLimit {
		n.inDrops++
		n.inMu.Unlock()
		return false
	}
	var b []byte
	if k := len(n.spare); k > 0 {
		b = n.spare[k-1]
		n.spare[k-1] = nil
		n.spare = n.spare[:k-1]
	}
	if cap(b) < len(frame) {
		b = make([]byte, 0, max(len(frame), minFrameBuf))
	}
	wake = len(n.inbox) == 0
	n.inbox = append(n.inbox, append(b[:0], frame...))
	n.inLen.Store(int32(len(n.inbox)))
	n.inMu.Unlock()
	return wake
}

// push is enqueue for frames already in buffers of the port's kind (frameBuf), in order: the
// inbox takes the buffers themselves, under one hold of its lock. A frame that finds the
// inbox full is dropped, and its buffer kept as a spare.
func (n *NIC) push(bufs [][]byte) (wake bool) {
	n.inMu.Lock()
	defer n.inMu.Unlock()
	wake = len(n.inbox) == 0 && len(bufs) > 0
	for _, buf := range bufs {
		if len(n.inbox) >= inboxLimit {
			n.inDrops++
			if len(n.spare) < inboxLimit {
				n.spare = append(n.spare, buf)
			}
			continue
		}
		n.inbox = append(n.inbox, buf)
	}
	n.inLen.Store(int32(len(n.inbox)))
	return wake
}

// flushOut hands the frames the Step transmitted to the cabled peer (outbox) to its inbox.
func (n *NIC) flushOut() {
	if len(n.outbox) == 0 {
		return
	}
	if n.outPeer.push(n.outbox) {
		n.kickPeer = n.outPeer
	}
	clear(n.outbox)
	n.outbox = n.outbox[:0]
}

// deliverDirect is the one-copy cable path (the port's lock held): the cabled peer w receives
// f, a frame in host memory the TX side must not complete before it is copied, at once in
// this thread, so that its RX buffer write is the frame's only copy (the inbox path gathers
// it into a cable buffer first). It reports false, and the caller takes the inbox path, when
// the peer is not free-running (deterministic mode is Step's alone), is this port (internal
// loopback), or is in a Step of its own (TryLock: this port's lock is held, and a port never
// waits for its peer's lock while holding its own), or when a frame is waiting in the
// outbox or the peer's inbox (a direct frame must not overtake it).
//
// The peer's lock, once taken, is held for a batch of frames as one Step of the peer would
// take them from the inbox: the batch's RX timestamps are read at its first frame that
// needs one, and its CQEs are written when it ends (endDirect: after inlineBudget frames,
// and at the end of this Step before this Step's own CQEs, so no TX completion of a frame
// is visible before the frame's RX copy is done). What differs from the inbox path, none of
// it visible as data: the batch's clock reading is taken during this Step rather than after
// it; a Step that sends some frames direct and then some through the inbox (behind a frame
// that could not go direct) has the peer take them in two batches rather than one, so a
// compressed CQE session may end between them (TestDirectMatchesInbox compares the CQEs as
// a driver reads them there, the rings as written elsewhere); and direct frames never meet
// the inbox's limit, which a single Step of more than inboxLimit frames would.
func (n *NIC) deliverDirect(w *NIC, f []byte) bool {
	if len(n.outbox) > 0 {
		return false
	}
	if n.direct == nil {
		if n.noDirect || w == n || w.running.Load() == 0 || !w.mu.TryLock() {
			return false
		}
		n.direct, n.directN = w, 0
		w.rxRead = [2]bool{}
	}
	if w.inLen.Load() > 0 {
		return false
	}
	w.receive(f)
	if n.directHook != nil {
		n.directHook(f)
	}
	if n.directN++; n.directN >= inlineBudget {
		n.endDirect()
	}
	return true
}

// endDirect ends a direct batch (deliverDirect): the peer's CQEs are written, its lock
// released, and the events its Step would raise are delivered with this port's, once this
// port's lock is released too.
func (n *NIC) endDirect() {
	w := n.direct
	if w == nil {
		return
	}
	n.direct = nil
	w.flushCQs()
	n.events = append(n.events, w.events...)
	w.events = nil
	w.mu.Unlock()
}

// minFrameBuf is the smallest inbox buffer: a standard frame fits, so buffers are reused
// whatever the frame sizes of a run.
const minFrameBuf = 2048

// Transmit makes a NIC a Wire: what is transmitted to it, it receives.
func (n *NIC) Transmit(frame []byte) { n.Receive(frame) }

// Step does the work pending now: SQ doorbells rung since the last Step and frames received
// are processed until none is left or budget units of work (a WQE, a frame) were done. It
// returns the units done; 0 means idle. Deterministic mode is calling only Step.
//
// The frames are taken from the inbox in one batch and processed under one hold of the
// port's lock; the CQEs of the Step are written at its end (compressed where the CQ asks),
// and a cabled peer that got frames is woken once.
func (n *NIC) Step(budget int) int {
	if budget <= 0 {
		return 0
	}
	n.mu.Lock() // the datapath: gen stays
	done := n.stepLocked(budget)
	n.finishStep()
	return done
}

// inlineBudget is the work an SQ doorbell does in the ringing thread (UARWrite), as Run's
// Step does per call.
const inlineBudget = 256

// finishStep ends a Step (the port's lock held): the lock is released, the events raised
// are delivered, and a cabled peer that got frames is woken once.
func (n *NIC) finishStep() {
	peer := n.kickPeer
	n.kickPeer = nil
	n.unlock()
	if peer != nil {
		peer.signal()
	}
}

// receiveInline is the cabled peer's side of an inline doorbell Step that put frames into
// this port's inbox: in free-running mode, when no Step of this port is in progress, the
// ringing thread does the receive Step too (the frames it just built are still in its CPU's
// cache, and this port's goroutine is not woken for them); otherwise, or for what the budget
// leaves, the port's goroutine is woken as before. A frame this Step transmits back (this
// port's own SQs) wakes the other port's goroutine: the inline work does not chain.
func (n *NIC) receiveInline() {
	if n.running.Load() > 0 && n.mu.TryLock() {
		n.stepLocked(inlineBudget)
		more := len(n.pendingSQ) > 0 || n.rungAny() || n.inboxAny()
		n.finishStep()
		if !more {
			return
		}
	}
	n.signal()
}

// rungAny reports whether an SQ doorbell waits for a Step.
func (n *NIC) rungAny() bool {
	n.dbMu.Lock()
	defer n.dbMu.Unlock()
	return len(n.rung) > 0
}

// inboxAny reports whether a frame waits for a Step.
func (n *NIC) inboxAny() bool {
	n.inMu.Lock()
	defer n.inMu.Unlock()
	return len(n.inbox) > 0
}

// stepLocked is Step's work, with the port's lock held.
func (n *NIC) stepLocked(budget int) int {
	done := 0
	n.dbMu.Lock()
	for _, sqn := range n.rung {
		if n.sqs[sqn] != nil {
			n.pendingSQ[sqn] = true
		}
	}
	n.rung = n.rung[:0]
	n.dbMu.Unlock()
	// SQs in number order, so that runs are reproducible.
	sqns := n.sqns[:0]
	for sqn := range n.pendingSQ {
		sqns = append(sqns, sqn)
	}
	slices.Sort(sqns)
	n.sqns = sqns
	for _, sqn := range sqns {
		s := n.sqs[sqn]
		if s == nil {
			delete(n.pendingSQ, sqn)
			continue
		}
		k, idle := n.runSQ(s, budget-done)
		done += k
		if idle {
			delete(n.pendingSQ, sqn)
		}
		if done >= budget {
			break
		}
	}
	if done < budget {
		n.inMu.Lock()
		k := min(len(n.inbox), budget-done)
		work := append(n.work[:0], n.inbox[:k]...)
		rest := copy(n.inbox, n.inbox[k:])
		clear(n.inbox[rest:])
		n.inbox = n.inbox[:rest]
		n.inLen.Store(int32(rest))
		n.inMu.Unlock()
		n.rxRead = [2]bool{}
		for _, f := range work {
			n.receive(f)
		}
		done += len(work)
		n.inMu.Lock()
		for i, f := range work {
			if len(n.spare) < inboxLimit {
				n.spare = append(n.spare, f)
			}
			work[i] = nil
		}
		n.inMu.Unlock()
		n.work = work[:0]
	}
	n.endDirect()
	n.flushOut()
	n.flushCQs()
	return done
}

// Pending reports whether a Step has work: doorbells not yet served or frames waiting.
// A paced or waiting SQ stays pending until its time comes.
func (n *NIC) Pending() bool {
	n.mu.Lock() // gen stays
	p := len(n.pendingSQ) > 0
	n.unlock()
	n.dbMu.Lock()
	p = p || len(n.rung) > 0
	n.dbMu.Unlock()
	n.inMu.Lock()
	p = p || len(n.inbox) > 0
	n.inMu.Unlock()
	return p
}

// Run steps the port from a goroutine until ctx ends (free-running mode). It sleeps while
// idle until a doorbell or a frame arrives, or briefly while an SQ waits for its time.
func (n *NIC) Run(ctx context.Context) {
	n.running.Add(1)
	defer n.running.Add(-1)
	t := time.NewTimer(time.Millisecond)
	defer t.Stop()
	for ctx.Err() == nil {
		if n.Step(256) > 0 {
			continue
		}
		wait := time.Hour
		if n.Pending() {
			wait = 50 * time.Microsecond
		}
		t.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-n.kick:
		case <-t.C:
		}
	}
}

// Cable connects two ports back to back: each one's transmit is the other's receive.
// Cable(a, a) is a port's internal loopback.
func Cable(a, b *NIC) {
	a.SetWire(b)
	if a != b {
		b.SetWire(a)
	}
}

func (n *NIC) now() (free, rt uint64) {
	if n.cfg.Clock == nil {
		return 0, 0
	}
	return n.cfg.Clock.FreeRunning(), n.cfg.Clock.RealTime()
}

// stamp is a CQE timestamp in a queue's format: the real-time clock or the free-running
// counter, whichever the format names (only that one is read).
func (n *NIC) stamp(f TSFormat) uint64 {
	switch {
	case n.cfg.Clock == nil:
		return 0
	case f == TSRealTime:
		return n.cfg.Clock.RealTime()
	}
	return n.cfg.Clock.FreeRunning()
}

// rxStamp is the timestamp of a received frame in a queue's format: the frames a Step takes
// from its inbox in one batch are stamped with one reading of the clock (per format), taken
// when the batch's first frame is stamped — the time the port took them, as a NIC stamps
// the frames it takes from its receive FIFO. A real NIC reads its clock per frame; the
// model's per-frame reading was a tenth of the two-port run's receiving work (about 60 ns a
// frame here) and gave the frames of a batch times the processing of the frames before them
// spread them over, not their arrival. Stamps never decrease from Step to Step (the clock
// does not), frames of one batch share theirs, and with equal stamps their CQEs may form
// compressed sessions where the CQ asks for compression.
func (n *NIC) rxStamp(f TSFormat) uint64 {
	k := 0
	if f == TSRealTime {
		k = 1
	}
	if !n.rxRead[k] {
		n.rxStamps[k], n.rxRead[k] = n.stamp(f), true
	}
	return n.rxStamps[k]
}

// rtNanos converts the PRM real-time format (seconds << 32 | nanoseconds) to nanoseconds.
func rtNanos(v uint64) uint64 { return (v>>32)*1e9 + v&0xffffffff }

// ManualClock is a Clock tests advance by hand: both formats derive from one nanosecond
// count (the free-running counter ticks once a nanosecond, i.e. device_frequency_khz 1e6).
type ManualClock struct {
	mu sync.Mutex
	ns uint64
}

// Advance moves the clock forward by d.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.ns += uint64(d)
	c.mu.Unlock()
}

// Set sets the clock to ns nanoseconds.
func (c *ManualClock) Set(ns uint64) {
	c.mu.Lock()
	c.ns = ns
	c.mu.Unlock()
}

// FreeRunning implements Clock.
func (c *ManualClock) FreeRunning() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ns
}

// RealTime implements Clock.
func (c *ManualClock) RealTime() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ns/1e9<<32 | c.ns%1e9
}
