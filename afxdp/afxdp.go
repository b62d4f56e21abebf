// Package afxdp is the AF_XDP engine (engine name xdp): raw Ethernet on any Linux netdev,
// with flow steering, RSS, flow isolation, dynamic flows and software VLAN/tunnel transforms.
//
// Receive path. Each port gets the XDP program of package flow, attached natively when the
// driver supports XDP and in generic (SKB) mode otherwise. It classifies every frame against
// the port's rules (BPF maps, so flows change without reloading), writes the flow id, the
// target RX queue and the transforms as XDP metadata in front of the frame and redirects it
// into the AF_XDP socket of the NIC queue it arrived on — the kernel only lets a frame reach a
// socket bound to its own (netdev, queue), so the program cannot move frames between NIC
// queues. One socket is bound to every NIC RX queue: the socket of NIC queue k belongs to RX
// queue k mod n (configuration order) and its UMEM is that queue's memory region. The owning
// worker reads the metadata and hands each frame to its target queue: zero-copy when the
// target's region is the UMEM's, copied into a buffer of the target's region otherwise.
// Unmatched frames go to the kernel (flow_isolation) or to the first RX queue.
//
// Transmit path. TX queue j sends through the socket of NIC queue j: its own socket with the
// queue's region as UMEM (zero-copy from the application's buffers) on ports without RX
// queues; on ports that also receive, the socket of that NIC queue already has the RX
// region as its UMEM (the kernel allows one UMEM per NIC queue), so frames are copied into it.
//
// Regions must be CPU memory with buffers of 2048 to 4096 bytes (the kernel's UMEM chunk
// limits); the first 256 bytes of each RX buffer are the kernel's XDP headroom, so frames up
// to buf_size-256 bytes fit, and the interface MTU is checked against that.
package afxdp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf/link"
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/flow"
	"github.com/daqiri-go/daqiri/flow/xdp"
	"github.com/daqiri-go/daqiri/xsk"
	"github.com/vishvananda/netlink"
)

// Ring sizes.
const (
	maxRingSize   = 4096
	rxBatch       = 256 // descriptors read per RX poll
	txRingSize    = 2048
	sendRingSize  = 1024 // bursts waiting for an indirect TX worker
	directMaxPkts = 256  // packets one direct-mode RxBurst returns at most
	statsPeriod   = 50 * time.Millisecond
)

// Engine serves a session's xdp ports.
type Engine struct {
	env     *engine.Env
	w       *engine.Workers
	ports   []*port
	byID    map[int]*port
	closed  atomic.Bool
	flowMu  sync.Mutex
	flowIDs map[uint32]*port // dynamic flow id → port
	static  map[uint32]bool  // configured flow ids (never allocated)
	nextID  uint32
	statsWG sync.WaitGroup
}

// port is one interface.
type port struct {
	e       *Engine
	p       *engine.Port
	ifindex int
	mac     net.HardwareAddr
	mtu     int
	nicRx   int // NIC RX queues
	nicTx   int
	prog    *xdp.Program
	xdpLink link.Link
	mode    string // "native" or "generic"

	socks []*sock // by NIC queue (nil where none)
	// RX queues by position and TX queues, published whole so that pollers and senders read
	// them without a lock while queues are added and deleted at run time (qmu serialises
	// the changes). RX positions are never reused: a deleted queue stays as a tombstone.
	rxv atomic.Pointer[[]*rxq]
	txv atomic.Pointer[[]*txq]
	qmu sync.Mutex
	// timeouts is set when a partial burst to some RX queue may time out (an indirect queue
	// with timeout_us): only then do pollers read the clock.
	timeouts bool
	// jumbo: some queue's buffers exceed a UMEM chunk (4096 bytes), so frames up to the
	// buffer size are carried: sockets are multi-buffer (XDP_USE_SG) over staging UMEMs of
	// their own, received fragments are gathered into the queue's buffer and sent frames
	// are split into chained descriptors.
	jumbo bool

	mu      sync.Mutex                 // flows and configuration
	table   atomic.Pointer[flow.Table] // Go copy for frames without metadata
	slots   *flow.Slots                // run-time flows in the rule slots after the configured ones
	txRules []*flow.TxRule
	xdpCnt  [xdp.MaxQueues + 1][3]uint64
}

// Open starts the xdp ports of env.
func Open(ctx context.Context, env *engine.Env) (engine.Engine, error) {
	e := &Engine{env: env, w: engine.NewWorkers(env.Log), byID: map[int]*port{}, flowIDs: map[uint32]*port{}, static: map[uint32]bool{}, nextID: 1}
	for _, p := range env.Ports {
		for _, side := range [][]config.Flow{rxFlows(p), txFlows(p)} {
			for _, f := range side {
				e.static[uint32(f.ID)] = true
			}
		}
	}
	for _, p := range env.Ports {
		pt, err := e.openPort(p)
		if err != nil {
			e.Close()
			return nil, err
		}
		e.ports = append(e.ports, pt)
		e.byID[p.ID] = pt
	}
	for _, pt := range e.ports {
		pt.start()
	}
	e.statsWG.Add(1)
	go e.statsLoop()
	return e, nil
}

func rxFlows(p *engine.Port) []config.Flow {
	if p.Config.RX == nil {
		return nil
	}
	return p.Config.RX.Flows
}

func txFlows(p *engine.Port) []config.Flow {
	if p.Config.TX == nil {
		return nil
	}
	return p.Config.TX.Flows
}

func pow2Floor(n int) int {
	p := 1
	for p*2 <= n {
		p *= 2
	}
	return p
}

// checkRegion validates a queue's memory for AF_XDP.
func (e *Engine) checkRegion(path string, rs []*engine.Region, rx bool, mtu int, jumbo bool) error {
	cfg := e.env.Config
	if len(rs) != 1 {
		return cfg.Errorf(path+".memory_regions", "engine xdp needs exactly one memory region per queue (no header-data split), got %d", len(rs))
	}
	r := rs[0]
	if !r.CPU() {
		return cfg.Errorf(path+".memory_regions", "memory region %s is %s memory; engine xdp needs CPU memory (host, huge or host_pinned) for its UMEM", r.Name, r.Kind)
	}
	if jumbo {
		// Frames are gathered from the staging UMEM into these buffers: no headroom.
		if rx && 14+8+mtu > r.BufSize {
			return cfg.Errorf(path+".memory_regions", "memory region %s has buf_size %d but frames at the interface MTU %d need %d (22 bytes Ethernet/VLAN headers + MTU)", r.Name, r.BufSize, mtu, 22+mtu)
		}
		return nil
	}
	if r.BufSize < xsk.MinChunkSize || r.BufSize > 4096 {
		return cfg.Errorf(path+".memory_regions", "memory region %s has buf_size %d; engine xdp needs 2048 to 4096 (AF_XDP UMEM chunk limits), or buffers above 4096 for jumbo frames (multi-buffer AF_XDP)", r.Name, r.BufSize)
	}
	// Frames land after the kernel's XDP headroom; one or two VLAN tags may come on top of
	// the MTU.
	if rx {
		if need := xsk.PacketHeadroom + 14 + 8 + mtu; need > r.BufSize {
			return cfg.Errorf(path+".memory_regions", "memory region %s has buf_size %d but frames at the interface MTU %d need %d (256 bytes XDP headroom + 22 bytes Ethernet/VLAN headers + MTU): lower the MTU to %d or raise buf_size",
				r.Name, r.BufSize, mtu, need, r.BufSize-xsk.PacketHeadroom-22)
		}
	}
	return nil
}

func (e *Engine) openPort(p *engine.Port) (pt *port, err error) {
	cfg := e.env.Config
	path := p.Path()
	pt = &port{e: e, p: p}
	self := pt // the named result is nil after `return nil, err`
	defer func() {
		if err != nil {
			self.close()
		}
	}()
	l, err := netlink.LinkByName(p.Config.Address)
	if err != nil {
		return nil, cfg.Errorf(path+".address", "interface %s: netdev %q: %v", p.Name, p.Config.Address, err)
	}
	a := l.Attrs()
	pt.ifindex, pt.mac, pt.mtu = a.Index, a.HardwareAddr, a.MTU
	pt.nicRx, pt.nicTx = max(a.NumRxQueues, 1), max(a.NumTxQueues, 1)
	// The active queue counts (real_num_rx/tx_queues) can be fewer than the allocated ones
	// netlink reports; ethtool knows them where the driver implements get_channels.
	if ch, err := xsk.GetChannels(p.Config.Address); err == nil && ch.RxQueues() > 0 {
		pt.nicRx, pt.nicTx = ch.RxQueues(), max(ch.TxQueues(), 1)
	}
	pt.nicRx = min(pt.nicRx, xdp.MaxNICQueues)
	if len(p.Rx) > xdp.MaxQueues {
		return nil, cfg.Errorf(path+".rx.queues", "engine xdp steers to at most %d RX queues per interface", xdp.MaxQueues)
	}
	for _, q := range p.Rx {
		pt.jumbo = pt.jumbo || len(q.Regions) == 1 && q.Regions[0].BufSize > 4096
	}
	for _, q := range p.Tx {
		pt.jumbo = pt.jumbo || len(q.Regions) == 1 && q.Regions[0].BufSize > 4096
	}
	for _, q := range p.Rx {
		if err := e.checkRegion(q.Path(), q.Regions, true, pt.mtu, pt.jumbo); err != nil {
			return nil, err
		}
	}
	for _, q := range p.Tx {
		if err := e.checkRegion(q.Path(), q.Regions, false, pt.mtu, pt.jumbo); err != nil {
			return nil, err
		}
	}
	if len(p.Tx) > pt.nicTx {
		return nil, cfg.Errorf(path+".tx.queues", "interface %s (%s) has %d TX queues; engine xdp binds TX queue j to NIC queue j and needs %d (create veths with numtxqueues, or ethtool -L)", p.Name, p.Config.Address, pt.nicTx, len(p.Tx))
	}
	if len(p.Rx) > 0 && len(p.Tx) > pt.nicRx {
		return nil, cfg.Errorf(path+".tx.queues", "interface %s (%s) has %d RX queues; TX queue j shares NIC queue j's socket with the receive side, so %d are needed", p.Name, p.Config.Address, pt.nicRx, len(p.Tx))
	}
	// Flows.
	if err := pt.compileFlows(); err != nil {
		return nil, err
	}
	pt.socks = make([]*sock, max(pt.nicRx, len(p.Tx)))
	var rxs []*rxq
	for i, q := range p.Rx {
		r := &rxq{pt: pt, q: q, pos: i, region: q.Regions[0], direct: q.Config.PollMode == config.PollDirect}
		rxs = append(rxs, r)
		pt.timeouts = pt.timeouts || r.timeout() > 0
	}
	pt.rxv.Store(&rxs)
	if len(p.Rx) > 0 {
		if pt.prog, err = xdp.NewProgram(nil); err != nil {
			return nil, cfg.Errorf(path, "interface %s: %v", p.Name, err)
		}
		if err := pt.installStatic(); err != nil {
			return nil, err
		}
		// Sockets sharing a region split its buffers between their fill rings.
		users := map[*engine.Region]int{}
		for k := 0; k < pt.nicRx; k++ {
			users[rxs[k%len(rxs)].region]++
		}
		for k := 0; k < pt.nicRx; k++ {
			owner := rxs[k%len(rxs)]
			// Every RX socket gets a TX ring, so that a TX queue added at run time can share it.
			var s *sock
			var err error
			if pt.jumbo {
				s, err = pt.openStagingSock(k, true, k < pt.nicTx)
			} else {
				s, err = pt.openSock(k, owner.region, true, k < pt.nicTx, users[owner.region])
			}
			if err != nil {
				return nil, err
			}
			s.owner = owner
			owner.socks = append(owner.socks, s)
			pt.socks[k] = s
			if err := pt.prog.SetSocket(k, s.x.FD()); err != nil {
				return nil, cfg.Errorf(path, "interface %s: %v", p.Name, err)
			}
			s.refill()
		}
	}
	var txs []*txq
	defer func() { pt.txv.Store(&txs) }()
	for j, q := range p.Tx {
		t := &txq{pt: pt, q: q, pos: j, region: q.Regions[0], direct: q.Config.PollMode == config.PollDirect}
		if s := pt.socks[j]; s != nil {
			// Shares the RX socket of this NIC queue: frames are copied into its UMEM.
			t.s, t.copyTx = s, true
		} else if pt.jumbo {
			s, err := pt.openStagingSock(j, false, true)
			if err != nil {
				return nil, err
			}
			pt.socks[j] = s
			t.s, t.copyTx = s, true
		} else {
			s, err := pt.openSock(j, t.region, false, true, 1)
			if err != nil {
				return nil, err
			}
			pt.socks[j] = s
			t.s = s
		}
		t.init(e)
		txs = append(txs, t)
	}
	if pt.prog != nil {
		if err := pt.attach(); err != nil {
			return nil, err
		}
		p.Events.KernelPassed = pt.kernelPassed
	}
	zc := false
	for _, s := range pt.socks {
		switch {
		case s == nil:
		case s.x.ZeroCopy():
			zc = true
			p.Events.AFXDPZeroCopy.Add(1)
		default:
			p.Events.AFXDPCopyMode.Add(1)
		}
	}
	mode := "copy"
	if zc {
		mode = "zero-copy"
	}
	if !zc {
		// Zero-copy was asked for first on every socket; the driver (veth, generic XDP)
		// did not offer it. Said here and counted in the port's events (afxdp_copy_mode).
		e.env.Log.Info("xdp: zero-copy bind not offered by the driver; AF_XDP runs in copy mode", "interface", p.Name, "netdev", p.Config.Address)
	}
	e.env.Log.Info("xdp port up", "interface", p.Name, "netdev", p.Config.Address, "xdp", pt.mode, "afxdp", mode, "jumbo", pt.jumbo,
		"nic_rx_queues", pt.nicRx, "rx_queues", len(p.Rx), "tx_queues", len(p.Tx), "flows", len(pt.table.Load().Slots))
	return pt, nil
}

// attach puts the program on the netdev: driver mode where supported, else generic.
func (pt *port) attach() error {
	var errs []error
	for _, m := range []struct {
		name  string
		flags link.XDPAttachFlags
	}{{"native", link.XDPDriverMode}, {"generic", link.XDPGenericMode}} {
		l, err := link.AttachXDP(link.XDPOptions{Program: pt.prog.Program(), Interface: pt.ifindex, Flags: m.flags})
		if err == nil {
			pt.xdpLink, pt.mode = l, m.name
			return nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", m.name, err))
	}
	return pt.e.env.Config.Errorf(pt.p.Path()+".address", "interface %s: attach XDP program to %s: %v", pt.p.Name, pt.p.Config.Address, errors.Join(errs...))
}

// Mode reports how a port's XDP program and sockets run: "native"/"generic" and whether any
// socket is zero-copy.
func (e *Engine) Mode(portID int) (xdpMode string, zeroCopy bool) {
	pt := e.byID[portID]
	if pt == nil {
		return "", false
	}
	for _, s := range pt.socks {
		if s != nil && s.x.ZeroCopy() {
			zeroCopy = true
		}
	}
	return pt.mode, zeroCopy
}

func (pt *port) start() {
	e := pt.e
	for _, r := range pt.rxqs() {
		if r.direct {
			r.q.Poll = r.poll
			continue
		}
		if len(r.socks) > 0 {
			r := r
			e.w.Go(fmt.Sprintf("%s/xdp-rx%d", pt.p.Name, r.q.ID), r.q.Config.CPUCore, r.run)
		}
	}
	for _, t := range pt.txqs() {
		if !t.direct {
			t := t
			e.w.Go(fmt.Sprintf("%s/xdp-tx%d", pt.p.Name, t.q.ID), t.q.Config.CPUCore, t.run)
		}
	}
}

// Close stops the workers, detaches the programs, closes the sockets and returns every
// buffer the kernel or the engine still held.
func (e *Engine) Close() error {
	if e.closed.Swap(true) {
		return nil
	}
	e.w.Stop()
	e.statsWG.Wait()
	for _, pt := range e.ports {
		pt.syncStats()
		pt.close()
	}
	return nil
}

func (pt *port) close() {
	if pt.xdpLink != nil {
		pt.xdpLink.Close()
		pt.xdpLink = nil
	}
	for _, t := range pt.txqs() {
		t.shutdown()
	}
	for _, r := range pt.rxqs() {
		r.flushAll()
	}
	for _, s := range pt.socks {
		if s != nil {
			s.close()
		}
	}
	pt.socks = nil
	pt.mu.Lock() // Stats may read the program's counters meanwhile (kernelPassed)
	if pt.prog != nil {
		pt.prog.Close()
		pt.prog = nil
	}
	pt.mu.Unlock()
}

// MACAddr is the port's Ethernet address.
func (e *Engine) MACAddr(portID int) (net.HardwareAddr, error) {
	pt := e.byID[portID]
	if pt == nil {
		return nil, fmt.Errorf("port %d is not served by engine xdp: %w", portID, engine.ErrInvalidParameter)
	}
	return append(net.HardwareAddr(nil), pt.mac...), nil
}

// statsLoop folds kernel-side drops (XDP program counters, AF_XDP socket statistics) into the
// queues' counters.
func (e *Engine) statsLoop() {
	defer e.statsWG.Done()
	t := time.NewTicker(statsPeriod)
	defer t.Stop()
	for {
		select {
		case <-e.w.Stopping():
			return
		case <-t.C:
			for _, pt := range e.ports {
				pt.syncStats()
			}
		}
	}
}

// kernelPassed is the count of frames the XDP program handed to the kernel because no flow
// matched them under flow isolation (the program's global CounterPassed), read live while
// the program is loaded and from the last reading after.
func (pt *port) kernelPassed() uint64 {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	if pt.prog != nil {
		if c, err := pt.prog.Counters(); err == nil {
			return c[xdp.MaxQueues][xdp.CounterPassed]
		}
	}
	return pt.xdpCnt[xdp.MaxQueues][xdp.CounterPassed]
}

func (pt *port) syncStats() {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	if pt.prog != nil {
		if c, err := pt.prog.Counters(); err == nil {
			rxs := pt.rxqs()
			for q := 0; q < len(rxs) && q < xdp.MaxQueues; q++ {
				for reason, dr := range []engine.DropReason{engine.DropFiltered, engine.DropOther} {
					if d := c[q][reason] - pt.xdpCnt[q][reason]; d > 0 {
						rxs[q].q.Stats.Drop(dr, int(d))
					}
				}
			}
			for q := range pt.xdpCnt {
				copy(pt.xdpCnt[q][:], c[q][:3])
			}
		}
	}
	for _, s := range pt.socks {
		if s == nil || s.owner == nil {
			continue
		}
		st, err := s.x.Stats()
		if err != nil {
			continue
		}
		c := &s.owner.q.Stats
		if d := st.RxRingFull - s.last.RxRingFull; d > 0 {
			c.Drop(engine.DropRingFull, int(d))
		}
		// A frame dropped for want of a fill-ring buffer counts in both rx_dropped and
		// rx_fill_ring_empty_descs (net/xdp/xsk.c, xsk_buff_pool.c); other rx_dropped frames
		// did not fit the chunk. The kernel bumps the fill-ring counter first, so a snapshot
		// can catch it one ahead: split the running totals, not this period's differences,
		// or such a frame would be counted as truncated in the next period.
		nb := min(st.RxDropped, st.RxFillRingEmpty)
		c.Drop(engine.DropNoPacketBuffers, int(nb-s.nbDrops))
		s.nbDrops = nb
		if tr := st.RxDropped - nb; tr > s.truncDrops {
			c.Drop(engine.DropTruncated, int(tr-s.truncDrops))
			s.truncDrops = tr
		}
		if d := st.RxInvalidDescs - s.last.RxInvalidDescs; d > 0 {
			c.Drop(engine.DropOther, int(d))
		}
		s.last = st
	}
}
