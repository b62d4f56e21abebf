package mlx5

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"unsafe"

	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/hugepage"
	"github.com/daqiri-go/daqiri/mlx5/channel"
	"github.com/daqiri-go/daqiri/mlx5/model"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// port is one interface: its channel, the objects every queue shares, and its queues.
type port struct {
	e   *Engine
	p   *engine.Port
	ch  channel.Channel
	dev *model.Device // the model behind a model port (its BAR for the clock); nil otherwise
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

	seen [5]atomic.Uint64 // NIC drop counters already counted: out of buffer, errors, rules, not ready, TX rules

	// healthFn reports the device's failure where the transport watches health (the VFIO
	// command queue: stalled health counter, firmware gone, fatal syndrome); failure holds
	// the first one seen, after which every send on the port fails with it.
	healthFn func() error
	failure  atomic.Pointer[error]
	// clockOff converts the device's real-time clock to Unix time: unix ns = device ns + off.
	clockOff int64
	// freeRunning: the RQs report the free-running timer (the device cannot stamp real
	// time); ticks convert to ns with freqKHz, and frOff to Unix time.
	freeRunning bool
	freqKHz     uint64
	frOff       int64
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

func (e *Engine) openPort(p *engine.Port, ch channel.Channel, dev *model.Device) (_ *port, err error) {
	pt := &port{e: e, p: p, ch: ch, dev: dev, keys: map[*engine.Region]uint32{}, txByID: map[int]*txq{}}
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
	pt.clockOff = now() - pt.deviceNanos()
	if err := pt.timestampFormat(); err != nil {
		return nil, err
	}
	if dev != nil && p.Config.RX != nil && p.Config.RX.FlowIsolation {
		// Frames no flow takes go to the kernel's tables on a real NIC; the model counts
		// them as steering misses.
		p.Events.KernelPassed = func() uint64 { return dev.Counters().RXSteeringMiss }
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

// deviceNanos is the device's real-time clock in ns (init segment real_time, seconds<<32 |
// ns as the PRM's real-time format; mlx5_ifc.h initial_seg).
func (pt *port) deviceNanos() int64 {
	if pt.dev == nil {
		return 0
	}
	var b [8]byte
	if _, err := pt.dev.BAR0().ReadAt(b[:], int64(prm.InitSeg.RealTimeH.ByteOff())); err != nil {
		return 0
	}
	return rtNanos(binary.BigEndian.Uint64(b[:]))
}

func rtNanos(rt uint64) int64 { return int64(rt>>32)*1e9 + int64(rt&0xffffffff) }

// timestampFormat picks the RQs' timestamp format from the general capabilities: real time
// when the device can stamp it (cmd_hca_cap rq_ts_format 1 or 2: MLX5_TIMESTAMP_FORMAT_CAP_
// REAL_TIME, _FREE_RUNNING_AND_REAL_TIME), else the free-running timer, converted with
// device_frequency_khz and an offset measured now against the init segment's internal timer.
func (pt *port) timestampFormat() error {
	out := make([]byte, prm.QueryHCACapOut.Capability.End()/8)
	in := prm.NewCmdIn(prm.CmdOpQueryHCACap, uint16(prm.CapTypeGeneral)<<1|prm.CapOpModCur, 16)
	if err := pt.ch.Exec(in, out); err != nil {
		return fmt.Errorf("%s: QUERY_HCA_CAP: %w", pt.p.Path(), err)
	}
	c := prm.QueryHCACapOut.Capability.Off
	pt.freqKHz = prm.CmdHCACap.DeviceFrequencyKhz.At(c).Get(out)
	f := prm.CmdHCACap.RQTSFormat.At(c).Get(out)
	pt.freeRunning = f == 0 || pt.e.opts.freeRunning
	if pt.freeRunning && pt.freqKHz == 0 {
		return fmt.Errorf("%s: the device stamps only its free-running timer and reports no frequency", pt.p.Path())
	}
	if pt.freeRunning && pt.dev != nil {
		var b [8]byte
		if _, err := pt.dev.BAR0().ReadAt(b[:], int64(prm.InitSeg.InternalTimerH.ByteOff())); err == nil {
			pt.frOff = now() - pt.ticksToNanos(binary.BigEndian.Uint64(b[:]))
		}
	}
	return nil
}

func (pt *port) ticksToNanos(t uint64) int64 {
	return int64(t/pt.freqKHz*1e6 + t%pt.freqKHz*1e6/pt.freqKHz)
}

// rxTime converts a CQE timestamp to Unix ns.
func (pt *port) rxTime(ts uint64) int64 {
	if pt.freeRunning {
		return pt.ticksToNanos(ts) + pt.frOff
	}
	return rtNanos(ts) + pt.clockOff
}

// regionKey registers region r with the device (once per port) and returns the lkey of a
// key over the UMEM at the memory's virtual address, the address WQEs carry.
func (pt *port) regionKey(r *engine.Region) (uint32, error) {
	if k, ok := pt.keys[r]; ok {
		return k, nil
	}
	mem := r.Memory().Bytes()
	if mem == nil {
		return 0, fmt.Errorf("%s: memory region %s is device memory: the model transport registers only host memory: %w", pt.p.Path(), r.Name, engine.ErrNotSupported)
	}
	um, err := pt.ch.RegisterMemory(mem, channel.AccessLocalWrite)
	if err != nil {
		return 0, fmt.Errorf("%s: register memory region %s: %w", pt.p.Path(), r.Name, err)
	}
	pt.umems = append(pt.umems, um)
	k, err := pt.umemKey(um.ID(), addrOf(mem), uint64(len(mem)))
	if err != nil {
		return 0, err
	}
	pt.keys[r] = k
	return k, nil
}

// umemKey creates a key over a whole UMEM at virtual address start (MTT mode with
// mkey_umem_valid and no translations, as DPDK's mlx5_devx_cmd_mkey_create does for a UMEM)
// with local read and write (mlx5_ifc.h mkc), and returns the lkey (index << 8 | the variant
// byte).
func (pt *port) umemKey(umem uint32, start, n uint64) (uint32, error) {
	const variant = 0xd5
	base := prm.CreateMKeyIn.MemoryKeyMKeyEntry.Off
	k := prm.MKC
	in := prm.NewCmdIn(prm.CmdOpCreateMKey, 0, prm.CreateMKeyIn.KlmPASMtt.ByteOff())
	for _, kv := range []struct {
		f prm.Field
		v uint64
	}{{k.AccessMode10, prm.MKeyAccessMTT}, {k.Lr, 1}, {k.Lw, 1}, {k.PD, uint64(pt.pd)}, {k.QPN, 0xffffff},
		{k.MKey70, variant}, {k.StartAddr, start}, {k.Len, n}} {
		kv.f.At(base).Set(in, kv.v)
	}
	prm.CreateMKeyIn.MKeyUMEMValid.Set(in, 1)
	prm.CreateMKeyIn.MKeyUMEMID.Set(in, uint64(umem))
	o, _, err := pt.create(in, 16)
	if err != nil {
		return 0, err
	}
	return o.ID()<<8 | variant, nil
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
			pt.countOutOfBuffer()
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

// countOutOfBuffer adds the NIC's receive drops since the last call to the first RX queue's
// counters: the Q counter's out_of_buffer (frames an RQ had no WQE for; it covers all the
// port's RQs), and on a model port also what the port dropped before any RQ — its input
// backlog overflowing (the physical port's discards on a real NIC), errors and drop rules —
// from the model's port counters.
func (pt *port) countOutOfBuffer() {
	if pt.dev != nil && len(pt.txqs) > 0 {
		// Frames a TX flow rule dropped completed their WQEs; the NIC counts them.
		pt.dropDelta(&pt.txqs[0].q.Stats, &pt.seen[4], pt.dev.Counters().TXDropRule, engine.DropFiltered)
	}
	if len(pt.rxqs) == 0 {
		return
	}
	q := &pt.rxqs[0].q.Stats
	if pt.dev != nil {
		c := pt.dev.Counters()
		pt.dropDelta(q, &pt.seen[0], c.RXOutOfBuffer, engine.DropNoPacketBuffers)
		pt.dropDelta(q, &pt.seen[1], c.RXErrors, engine.DropMalformed)
		pt.dropDelta(q, &pt.seen[2], c.RXDropRule, engine.DropFiltered)
		pt.dropDelta(q, &pt.seen[3], c.RXNotReady, engine.DropOther)
		return
	}
	in := prm.NewCmdIn(prm.CmdOpQueryQCounter, 0, 0x20)
	prm.QueryQCounterIn.CounterSetID.Set(in, uint64(pt.qctr))
	out := make([]byte, prm.QueryQCounterOut.OutOfBuffer.End()/8)
	if err := pt.qctrObj.Query(in, out); err != nil {
		return
	}
	pt.dropDelta(q, &pt.seen[0], prm.QueryQCounterOut.OutOfBuffer.Get(out), engine.DropNoPacketBuffers)
}

// reconcile runs at close, once everything that arrived has been read: a CQ that overran
// completed nothing more, and on a model port the packets the NIC received beyond the
// completions read are counted dropped (reason other) on the queues whose CQ overran.
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
	if pt.dev == nil || len(bad) == 0 {
		return
	}
	var read uint64
	for _, r := range pt.rxqs {
		read += r.packets
	}
	if nic := pt.dev.Counters().RXPackets; nic > read {
		bad[0].q.Stats.Drop(engine.DropOther, int(nic-read))
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
