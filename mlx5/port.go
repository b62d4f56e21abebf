package mlx5

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/daqiri-go/daqiri/cudart"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/hugepage"
	"github.com/daqiri-go/daqiri/mlx5/channel"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// port is one interface: its channel, the objects every queue shares, and its queues.
type port struct {
	e   *Engine
	p   *engine.Port
	ch  channel.Channel
	mac net.HardwareAddr

	pd, td, tis uint32
	qctr        uint32 // Q counter set of the port's RQs
	qctrObj     channel.Object
	uar         channel.UAR
	eqn         uint32
	keys        map[*engine.Region]uint32 // lkey by region
	// created lists what the port created, destroyed in reverse at close; umems and
	// memories follow the objects.
	created []channel.Object
	umems   []channel.UMEM
	pacings []channel.Pacing // pacing indexes a Pacer channel allocated
	mems    []*hugepage.Mem

	rxqs   []*rxq
	txqs   []*txq
	txByID map[int]*txq
	steer  steering
	hw     []*hwPlan // hardware reorder plans (hwreorder.go)

	seen   [4]atomic.Uint64 // NIC drop counters already counted: out of buffer, receive errors, drop rules, port discards
	missed atomic.Uint64    // the steering's miss counter as last read (frames passed to the kernel)
	// counted is when the workers last read the device's counters (countOutOfBuffer).
	counted atomic.Int64

	// healthFn reports the device's failure where the transport watches health (the VFIO
	// command queue: stalled health counter, firmware gone, fatal syndrome); failure holds
	// the first one seen, after which every send on the port fails with it.
	healthFn func() error
	failure  atomic.Pointer[error]
	// clock reads the device's timebase (nil: the transport cannot, and the device's real
	// time is taken as Unix time, as DevX's is); tb is the conversion in force, renewed by
	// the workers every clockRenew.
	clock channel.Clock
	// noPPCNT: the transport refused ACCESS_REG PPCNT (DevX: the kernel owns the port
	// registers), so the port's discards are not read again.
	noPPCNT   atomic.Bool
	tb        atomic.Pointer[channel.Timebase]
	tbAt      atomic.Int64
	tbRenewMu sync.Mutex
	// freeRunning: the RQs and SQs use the free-running timer (the device cannot stamp
	// real time).
	freeRunning bool
}

// create runs a create command and remembers the object for close.
func (pt *port) create(in []byte, outLen int) (channel.Object, []byte, error) {
	out := make([]byte, outLen)
	o, err := pt.ch.Create(in, out)
	if err != nil {
		return nil, nil, fmt.Errorf("%s (%s): %w", pt.p.Path(), pt.ch.Name(), err)
	}
	pt.created = append(pt.created, o)
	return o, out, nil
}

// exec runs a command that creates nothing.
func (pt *port) exec(in []byte, outLen int) ([]byte, error) {
	out := make([]byte, max(outLen, 16))
	if err := pt.ch.Exec(in, out); err != nil {
		return nil, fmt.Errorf("%s (%s): %w", pt.p.Path(), pt.ch.Name(), err)
	}
	return out, nil
}

// openPort opens interface p on ch; base is the transport under ch's trace wrapper, asked
// for what the transport alone can do (health, the device's clock).
func (e *Engine) openPort(p *engine.Port, ch, base channel.Channel) (_ *port, err error) {
	pt := &port{e: e, p: p, ch: ch, keys: map[*engine.Region]uint32{}, txByID: map[int]*txq{}}
	if h, ok := base.(interface{ Health() error }); ok {
		pt.healthFn = h.Health
	}
	pt.clock, _ = base.(channel.Clock)
	defer func() {
		if err != nil {
			pt.closeQueues()
			pt.destroy() // closes the channel too
		}
	}()
	uar, err := ch.AllocUAR()
	if err != nil {
		return nil, err
	}
	pt.uar = uar
	if pt.eqn, err = ch.EQN(0); err != nil {
		return nil, err
	}
	o, _, err := pt.create(prm.NewCmdIn(prm.CmdOpAllocPD, 0, 16), 16)
	if err != nil {
		return nil, err
	}
	pt.pd = o.ID()
	if o, _, err = pt.create(prm.NewCmdIn(prm.CmdOpAllocTransportDomain, 0, 16), 16); err != nil {
		return nil, err
	}
	pt.td = o.ID()
	tisIn := prm.NewCmdIn(prm.CmdOpCreateTIS, 0, int(prm.CreateTISIn.Ctx.End()/8))
	prm.TISC.TransportDomain.At(prm.CreateTISIn.Ctx.Off).Set(tisIn, uint64(pt.td))
	if o, _, err = pt.create(tisIn, 16); err != nil {
		return nil, err
	}
	pt.tis = o.ID()
	if o, _, err = pt.create(prm.NewCmdIn(prm.CmdOpAllocQCounter, 0, 16), 16); err != nil {
		return nil, err
	}
	pt.qctr, pt.qctrObj = o.ID(), o
	if err := pt.queryVport(); err != nil {
		return nil, err
	}
	if err := pt.timestampFormat(); err != nil {
		return nil, err
	}
	for i, q := range p.Rx {
		r, err := pt.newRxq(i, q)
		if err != nil {
			return nil, err
		}
		pt.rxqs = append(pt.rxqs, r)
	}
	for i, q := range p.Tx {
		t, err := pt.newTxq(i, q)
		if err != nil {
			return nil, err
		}
		pt.txqs = append(pt.txqs, t)
		pt.txByID[q.ID] = t
	}
	if len(pt.rxqs) > 0 || p.Config.TX != nil && len(p.Config.TX.Flows) > 0 {
		if err := pt.openSteering(); err != nil {
			return nil, err
		}
		if err := pt.openHWReorders(); err != nil {
			return nil, err
		}
	}
	if fs, ok := pt.steer.(*flowSteer); ok && p.Config.RX != nil && p.Config.RX.FlowIsolation {
		// Frames no flow takes go on to the kernel's tables on a ConnectX: the steering's
		// miss counter counts them (the last value stays readable after Close).
		p.Events.KernelPassed = func() uint64 {
			if c, err := fs.Counts(); err == nil {
				pt.missed.Store(c.Missed)
			}
			return pt.missed.Load()
		}
	}
	return pt, nil
}

// queryVport reads the port's MAC and sets its MTU from the largest frame the RX queues take
// (upstream raises the netdev MTU to the frame size; the vport context's MTU is the frame
// size, mlx5_ifc.h nic_vport_context mtu).
func (pt *port) queryVport() error {
	o := prm.QueryNICVportContextOut
	out, err := pt.exec(prm.NewCmdIn(prm.CmdOpQueryNICVportContext, 0, 16), int(o.NICVportContext.End()/8))
	if err != nil {
		return err
	}
	ctx := o.NICVportContext.Off
	mac := prm.NICVportContext.PermanentAddress.At(ctx).Get(out)
	pt.mac = net.HardwareAddr{byte(mac >> 40), byte(mac >> 32), byte(mac >> 24), byte(mac >> 16), byte(mac >> 8), byte(mac)}
	frame := 0
	for _, q := range pt.p.Rx {
		sz := 0
		for _, r := range q.Regions {
			sz += r.BufSize
		}
		frame = max(frame, sz)
	}
	if frame == 0 {
		return nil
	}
	frame = min(frame, 9216)
	in := prm.ModifyNICVportContextIn
	b := prm.NewCmdIn(prm.CmdOpModifyNICVportContext, 0, int(in.NICVportContext.End()/8))
	prm.ModifyNICVportFieldSelect.MTU.At(in.FieldSelect.Off).Set(b, 1)
	prm.NICVportContext.MTU.At(in.NICVportContext.Off).Set(b, uint64(frame))
	if _, err = pt.exec(b, 16); errors.Is(err, channel.ErrUnsupported) {
		// DevX: the kernel's mlx5 driver owns the vport (the netdev's MTU), and user space
		// may not modify it (devx.c devx_is_general_cmd); upstream raises the netdev MTU.
		pt.e.env.Log.Info("mlx5: vport MTU left to the kernel driver", "interface", pt.p.Name, "frame", frame)
		return nil
	}
	return err
}

// timestampFormat picks the RQs' and SQs' timestamp format from the general capabilities:
// real time when the device can stamp it (cmd_hca_cap rq_ts_format 1 or 2: MLX5_TIMESTAMP_
// FORMAT_CAP_REAL_TIME, _FREE_RUNNING_AND_REAL_TIME), else the free-running timer; then
// reads the device's timebase.
func (pt *port) timestampFormat() error {
	out := make([]byte, prm.QueryHCACapOut.Capability.End()/8)
	in := prm.NewCmdIn(prm.CmdOpQueryHCACap, uint16(prm.CapTypeGeneral)<<1|prm.CapOpModCur, 16)
	if err := pt.ch.Exec(in, out); err != nil {
		return fmt.Errorf("%s: QUERY_HCA_CAP: %w", pt.p.Path(), err)
	}
	c := prm.QueryHCACapOut.Capability.Off
	pt.freeRunning = prm.CmdHCACap.RQTSFormat.At(c).Get(out) == 0
	if err := pt.renewClock(); err != nil {
		return fmt.Errorf("%s (%s): the device's clock: %w", pt.p.Path(), pt.ch.Name(), err)
	}
	if pt.freeRunning && pt.tb.Load().Timer.Mult == 0 {
		return fmt.Errorf("%s (%s): the device stamps only its free-running timer, and the transport gives no way to convert it", pt.p.Path(), pt.ch.Name())
	}
	return nil
}

// clockRenew is how often the workers read the timebase again: it follows the device's
// clock adjustments (DevX: the kernel's PTP steering) and keeps the free-running reference
// far inside the counter's wrap.
const clockRenew = int64(time.Second)

// renewClock reads the device's timebase. Without a Clock the real-time offset is 0: the
// device's real-time clock is the host's (DevX, where the kernel keeps it so).
func (pt *port) renewClock() error {
	tb := channel.Timebase{}
	if pt.clock != nil {
		var err error
		if tb, err = pt.clock.Timebase(); err != nil {
			return err
		}
	}
	pt.tb.Store(&tb)
	pt.tbAt.Store(now())
	return nil
}

// maybeRenewClock renews the timebase when it is older than clockRenew (workers, now and
// then); a failed read keeps the last one.
func (pt *port) maybeRenewClock(t int64) {
	if t-pt.tbAt.Load() < clockRenew || !pt.tbRenewMu.TryLock() {
		return
	}
	defer pt.tbRenewMu.Unlock()
	if err := pt.renewClock(); err != nil {
		pt.tbAt.Store(t) // not again for a while
		pt.e.env.Log.Warn("mlx5: reading the device's clock failed; timestamps keep the last conversion", "interface", pt.p.Name, "err", err)
	}
}

// rxTime converts a CQE timestamp to Unix ns.
func (pt *port) rxTime(ts uint64) int64 {
	tb := pt.tb.Load()
	if pt.freeRunning {
		return tb.Timer.Nanos(ts)
	}
	return tb.RealTime(ts)
}

// regionKey registers region r with the device (once per port) and returns the lkey of a
// key over the UMEM at the memory's address, the address WQEs carry. Host memory (host,
// huge, host_pinned: the CPU can address it) registers by address; device memory has no host
// address and registers as a DMA-BUF the memory exports, as upstream's ibverbs engine
// registers it with ibv_reg_dmabuf_mr (DEVX_UMEM_REG with the fd on DevX).
func (pt *port) regionKey(r *engine.Region) (uint32, error) {
	if k, ok := pt.keys[r]; ok {
		return k, nil
	}
	mem := r.Memory()
	b := mem.Bytes()
	var um channel.UMEM
	var start, n uint64
	if b != nil {
		var err error
		if um, err = pt.ch.RegisterMemory(b, channel.AccessLocalWrite); err != nil {
			return 0, fmt.Errorf("%s: register memory region %s: %w", pt.p.Path(), r.Name, err)
		}
		start, n = addrOf(b), uint64(len(b))
	} else {
		// The region's bytes in whole pages: DMA-BUF ranges and UMEMs are page granular, and
		// GPU allocations are rounded up to 64 KiB (gpu.go).
		n = (uint64(r.NumBufs)*uint64(r.BufSize) + 4095) &^ 4095
		start = uint64(mem.Addr())
		reg, ok := pt.ch.(channel.DMABufRegistrar)
		if !ok {
			return 0, fmt.Errorf("%s: memory region %s is %s memory, which %s cannot register (no DMA-BUF registration): %w", pt.p.Path(), r.Name, r.Kind, pt.ch.Name(), engine.ErrNotSupported)
		}
		fd, off, err := exportDMABuf(mem)
		if err != nil {
			return 0, fmt.Errorf("%s: memory region %s is %s memory: exporting it as a DMA-BUF: %w", pt.p.Path(), r.Name, r.Kind, err)
		}
		um, err = reg.RegisterDMABuf(fd, off, n, channel.AccessLocalWrite)
		// The registration holds the buffer itself (the kernel's UMEM a reference to the
		// DMA-BUF, the model the allocation): the fd is ours to close either way.
		unix.Close(fd)
		if err != nil {
			if errors.Is(err, channel.ErrUnsupported) {
				err = fmt.Errorf("%w (%w)", err, engine.ErrNotSupported)
			}
			return 0, fmt.Errorf("%s: register memory region %s (%s, %d bytes as a DMA-BUF): %w", pt.p.Path(), r.Name, r.Kind, n, err)
		}
	}
	pt.umems = append(pt.umems, um)
	k, err := pt.umemKey(um.ID(), start, n)
	if err != nil {
		return 0, err
	}
	pt.keys[r] = k
	return k, nil
}

// DMABufMemory is device memory that exports itself as a DMA-BUF for registration with the
// NIC. cudart device allocations (the `device` regions) are exported directly; another
// allocator's memory implements this.
type DMABufMemory interface {
	engine.Memory
	// DMABuf returns a new DMA-BUF fd for the memory (the caller closes it) and the offset
	// of Addr() within it.
	DMABuf() (fd int, offset uint64, err error)
}

// exportDMABuf gets a DMA-BUF fd for device memory.
func exportDMABuf(mem engine.Memory) (int, uint64, error) {
	switch m := mem.(type) {
	case DMABufMemory:
		return m.DMABuf()
	case *cudart.DeviceMem:
		fd, err := m.Device().ExportDMABuf(m.Ptr(), m.Size())
		return fd, 0, err
	}
	return -1, 0, fmt.Errorf("%T is neither host memory nor exportable as a DMA-BUF", mem)
}

// memBase is the address WQEs carry for the first byte of mem: its host address, or the
// device address of GPU memory (the key over it starts there).
func memBase(mem engine.Memory) uint64 {
	if b := mem.Bytes(); b != nil {
		return addrOf(b)
	}
	return uint64(mem.Addr())
}

// umemKey creates a key over a whole UMEM at virtual address start (prm.UMEMMKeyIn) and
// returns the lkey.
func (pt *port) umemKey(umem uint32, start, n uint64) (uint32, error) {
	o, _, err := pt.create(prm.UMEMMKeyIn(pt.pd, umem, start, n), 16)
	if err != nil {
		return 0, err
	}
	return o.ID()<<8 | prm.UMEMKeyVariant, nil
}

// queueMem is host memory for one queue's rings and doorbell record, registered with the
// device.
type queueMem struct {
	b    []byte
	addr uint64
	umem uint32 // the UMEM the queue contexts name (DevX: the only way to give a queue memory)
	next int
}

func (pt *port) newQueueMem(n int) (*queueMem, error) {
	m, err := hugepage.Map(n, false)
	if err != nil {
		return nil, fmt.Errorf("%s: queue memory: %w", pt.p.Path(), err)
	}
	pt.mems = append(pt.mems, m)
	um, err := pt.ch.RegisterMemory(m.Bytes(), channel.AccessLocalWrite)
	if err != nil {
		return nil, fmt.Errorf("%s: register queue memory: %w", pt.p.Path(), err)
	}
	pt.umems = append(pt.umems, um)
	return &queueMem{b: m.Bytes(), addr: uint64(m.Addr()), umem: um.ID()}, nil
}

// alloc returns n bytes aligned to align and their offset in the UMEM.
func (m *queueMem) alloc(n, align int) ([]byte, uint64) {
	off := (m.next + align - 1) &^ (align - 1)
	m.next = off + n
	return m.b[off : off+n : off+n], uint64(off)
}

func addrOf(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

// start launches the port's workers: one per distinct cpu_core of its indirect RX queues
// (polling them in turn) and one for TX completions when no RX worker would poll them.
func (pt *port) start() {
	pt.startHWReorders()
	groups := map[string][]*rxq{}
	var order []string
	for _, r := range pt.rxqs {
		if r.direct {
			continue
		}
		c := r.q.Config.CPUCore
		if _, ok := groups[c]; !ok {
			order = append(order, c)
		}
		groups[c] = append(groups[c], r)
	}
	for i, c := range order {
		rs := groups[c]
		var ts []*txq
		if i == 0 {
			ts = pt.txqs
		}
		pt.e.w.Go(fmt.Sprintf("mlx5 %s rx %d", pt.p.Name, i), c, func() { pt.work(rs, ts) })
	}
	if len(order) == 0 && len(pt.txqs) > 0 {
		c := pt.txqs[0].q.Config.CPUCore
		pt.e.w.Go(fmt.Sprintf("mlx5 %s tx", pt.p.Name), c, func() { pt.work(nil, pt.txqs) })
	}
}

// work polls RX queues and TX completions until the engine stops. Idle rounds back off to
// short sleeps so an idle port costs little CPU.
func (pt *port) work(rs []*rxq, ts []*txq) {
	idle := 0
	for round := 0; !pt.e.w.Stopped(); round++ {
		n := 0
		t := now()
		for _, r := range rs {
			n += r.poll(t, 1024)
		}
		for _, q := range ts {
			n += q.complete()
		}
		if round&1023 == 0 {
			pt.checkHealth()
			if last := pt.counted.Load(); t-last >= countEvery && pt.counted.CompareAndSwap(last, t) {
				// Each read is a few device commands: often enough for live drop counts,
				// rarely enough to cost the datapath nothing.
				pt.countOutOfBuffer()
			}
			pt.maybeRenewClock(t)
			for _, r := range rs {
				if !r.overran && r.overrun() {
					// The device completes nothing more on this queue; Close counts
					// what it received since as dropped.
					r.overran = true
					pt.e.env.Log.Error("mlx5: RX CQ overran; the queue receives nothing more", "queue", r.q.Path())
				}
			}
		}
		if n > 0 {
			idle = 0
			continue
		}
		idle++
		backoff(idle)
	}
}

// countEvery is how often the workers read the device's drop counters.
const countEvery = int64(10 * time.Millisecond)

// countOutOfBuffer adds the NIC's receive drops since the last call to the first RX queue's
// counters, all read from the device as on hardware: the Q counter's out_of_buffer (frames
// an RQ had no WQE for; it covers all the port's RQs; QUERY_Q_COUNTER), the vport's
// received_errors (QUERY_VPORT_COUNTER), and the flow counter on the port's drop rules
// (QUERY_FLOW_COUNTER).
func (pt *port) countOutOfBuffer() {
	if len(pt.rxqs) == 0 {
		return
	}
	q := &pt.rxqs[0].q.Stats
	if n, ok := pt.outOfBuffer(); ok {
		pt.dropDelta(q, &pt.seen[0], n, engine.DropNoPacketBuffers)
	}
	if v, err := pt.vportCounters(); err == nil {
		pt.dropDelta(q, &pt.seen[1], v.rxErrors, engine.DropMalformed)
	}
	if fs, ok := pt.steer.(*flowSteer); ok {
		if c, err := fs.Counts(); err == nil {
			pt.dropDelta(q, &pt.seen[2], c.Dropped, engine.DropFiltered)
		}
	}
	if n, ok := pt.portDiscards(); ok {
		pt.dropDelta(q, &pt.seen[3], n, engine.DropNoPacketBuffers)
	}
}

// portDiscards reads the physical port's receive discards: PPCNT's RFC 2863 group,
// if_in_discards (ethtool rx_discards_phy), through ACCESS_REG, which a driver that owns the
// function may run (VFIO, the model); DevX may not, and then the port's discards stay the
// kernel's to report.
func (pt *port) portDiscards() (uint64, bool) {
	if pt.noPPCNT.Load() {
		return 0, false
	}
	p := prm.PPCNT
	base := prm.AccessRegisterIn.RegisterData.Off
	in := prm.NewCmdIn(prm.CmdOpAccessReg, prm.AccessRegRead, int(p.CounterSet.At(base).End()/8))
	prm.AccessRegisterIn.RegisterID.Set(in, prm.RegPPCNT)
	p.LocalPort.At(base).Set(in, 1)
	p.Grp.At(base).Set(in, prm.PPCNTRFC2863Group)
	out := make([]byte, prm.AccessRegisterOut.RegisterData.Off/8+p.CounterSet.End()/8)
	if err := pt.ch.Exec(in, out); err != nil {
		pt.noPPCNT.Store(true)
		pt.e.env.Log.Debug("mlx5: the port's discards are not readable here", "interface", pt.p.Name, "err", err)
		return 0, false
	}
	ob := prm.AccessRegisterOut.RegisterData.Off
	return p.IfInDiscardsHigh.At(ob).Get(out)<<32 | p.IfInDiscardsHigh.At(ob+32).Get(out), true
}

// outOfBuffer reads the port's Q counter: frames its RQs had no WQE for (QUERY_Q_COUNTER
// through the counter's object, as DevX wants it).
func (pt *port) outOfBuffer() (uint64, bool) {
	if pt.qctrObj == nil {
		return 0, false
	}
	in := prm.NewCmdIn(prm.CmdOpQueryQCounter, 0, 0x20)
	prm.QueryQCounterIn.CounterSetID.Set(in, uint64(pt.qctr))
	out := make([]byte, prm.QueryQCounterOut.OutOfBuffer.End()/8)
	if err := pt.qctrObj.Query(in, out); err != nil {
		return 0, false
	}
	return prm.QueryQCounterOut.OutOfBuffer.Get(out), true
}

// vportCounts is what the engine reads of QUERY_VPORT_COUNTER.
type vportCounts struct {
	rxPackets, txPackets, rxErrors uint64
}

// vportCounters reads the vport's traffic counters (a DevX general command, and a command
// every driver of the function may run).
func (pt *port) vportCounters() (vportCounts, error) {
	o := prm.QueryVportCounterOut
	out, err := pt.exec(prm.NewCmdIn(prm.CmdOpQueryVportCounter, 0, 0x20), int(o.TransmittedEthMulticast.End()/8))
	if err != nil {
		return vportCounts{}, err
	}
	tc := prm.TrafficCounter
	pk := func(f prm.Field) uint64 { return tc.Packets.At(f.Off).Get(out) }
	return vportCounts{
		rxPackets: pk(o.ReceivedEthUnicast) + pk(o.ReceivedEthMulticast) + pk(o.ReceivedEthBroadcast),
		txPackets: pk(o.TransmittedEthUnicast) + pk(o.TransmittedEthMulticast) + pk(o.TransmittedEthBroadcast),
		rxErrors:  pk(o.ReceivedErrors),
	}, nil
}

// trafficSum is a sum of the port's moving counters, for Close to tell when the port went
// quiet; 0 when the device does not answer.
func (pt *port) trafficSum() uint64 {
	// The same commands in the same order as countOutOfBuffer: Q counter, vport, flow
	// counters, PPCNT.
	var sum uint64
	if n, ok := pt.outOfBuffer(); ok {
		sum += n
	}
	if v, err := pt.vportCounters(); err == nil {
		sum += v.rxPackets + v.txPackets + v.rxErrors
	}
	if fs, ok := pt.steer.(*flowSteer); ok {
		if c, err := fs.Counts(); err == nil {
			sum += c.Dropped + c.Missed
		}
	}
	if n, ok := pt.portDiscards(); ok {
		sum += n
	}
	return sum
}

// reconcile runs at close, once everything that arrived has been read: a CQ that overran
// completed nothing more, so the packets the vport received beyond the completions read are
// counted dropped (reason other) on the queues whose CQ overran.
func (pt *port) reconcile() {
	pt.countOutOfBuffer()
	var bad []*rxq
	for _, r := range pt.rxqs {
		if r.overran || r.overrun() {
			if !r.overran {
				pt.e.env.Log.Error("mlx5: RX CQ overran; the queue received nothing more", "queue", r.q.Path())
			}
			r.overran = true
			bad = append(bad, r)
		}
	}
	if len(bad) == 0 {
		return
	}
	v, err := pt.vportCounters()
	if err != nil {
		pt.e.env.Log.Warn("mlx5: cannot count what the overrun CQ lost", "interface", pt.p.Name, "err", err)
		return
	}
	var read uint64
	for _, r := range pt.rxqs {
		read += r.packets
	}
	if v.rxPackets > read {
		bad[0].q.Stats.Drop(engine.DropOther, int(v.rxPackets-read))
	}
}

func (pt *port) dropDelta(q *engine.Counters, seen *atomic.Uint64, total uint64, why engine.DropReason) {
	if old := seen.Swap(total); total > old {
		q.Drop(why, int(total-old))
	}
}

// close drains the port: TX completions (bounded), RX queues, steering, then every object in
// reverse order, the UMEMs and the memory.
func (pt *port) close() error {
	var errs []error
	for _, t := range pt.txqs {
		t.drain()
	}
	pt.countOutOfBuffer()
	pt.closeHWReorders()
	if pt.steer != nil {
		if err := pt.steer.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, r := range pt.rxqs {
		r.close()
	}
	errs = append(errs, pt.destroy())
	pt.checkHealth()
	if err := errors.Join(errs...); err != nil && pt.failure.Load() != nil {
		// A failed device answers no destroy command; its objects went with it. The host's
		// side (buffers, DMA mappings, the channel) is released all the same, so this is
		// not Close's failure.
		pt.e.env.Log.Warn("mlx5: the device had failed; its objects could not be destroyed", "interface", pt.p.Name, "err", err)
		return nil
	}
	return errors.Join(errs...)
}

// closeQueues gives back the buffers the RX queues took (a port that failed to open).
func (pt *port) closeQueues() {
	for _, r := range pt.rxqs {
		r.close()
	}
}

// destroy releases what the port created, newest first, and closes the channel.
func (pt *port) destroy() error {
	var errs []error
	for i := len(pt.created) - 1; i >= 0; i-- {
		if err := pt.created[i].Destroy(); err != nil {
			errs = append(errs, err)
		}
	}
	pt.created = nil
	for _, p := range pt.pacings {
		if err := p.Release(); err != nil {
			errs = append(errs, err)
		}
	}
	pt.pacings = nil
	for i := len(pt.umems) - 1; i >= 0; i-- {
		if err := pt.umems[i].Release(); err != nil {
			errs = append(errs, err)
		}
	}
	pt.umems = nil
	if pt.uar != nil {
		if err := pt.uar.Release(); err != nil {
			errs = append(errs, err)
		}
		pt.uar = nil
	}
	if err := pt.ch.Close(); err != nil && !errors.Is(err, channel.ErrClosed) {
		errs = append(errs, err)
	}
	for _, m := range pt.mems {
		m.Close()
	}
	pt.mems = nil
	return errors.Join(errs...)
}

// checkHealth records the device's failure once, from the port's worker, and says so.
func (pt *port) checkHealth() {
	if pt.healthFn == nil || pt.failure.Load() != nil {
		return
	}
	if err := pt.healthFn(); err != nil && pt.failure.CompareAndSwap(nil, &err) {
		pt.e.env.Log.Error("mlx5: the device failed; every queue of the port fails from now on", "interface", pt.p.Name, "err", err)
	}
}

// failed is the port's device failure, wrapped as the engine reports it, or nil.
func (pt *port) failed() error {
	if p := pt.failure.Load(); p != nil {
		return fmt.Errorf("mlx5 %s: device failed: %v: %w", pt.p.Name, *p, engine.ErrInternalError)
	}
	return nil
}
