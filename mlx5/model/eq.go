package model

import (
	"github.com/daqiri-go/daqiri/internal/iomem"
	"github.com/daqiri-go/daqiri/mlx5/model/internal/datapath"
	"github.com/daqiri-go/daqiri/mlx5/model/internal/dma"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// eqeSize is the size of an EQE (mlx5_ifc.h eqe: 0x200 bits).
const eqeSize = 64

// eq is an event queue: firmware writes EQEs into the driver's ring and, when the EQ is
// armed, signals its MSI-X vector once.
type eq struct {
	n       uint32
	uid     uint16
	logSize uint8
	uar     uint32
	intr    uint16
	mask    [4]uint64 // event_bitmask: bit t of word t/64 subscribes event type t
	mem     datapath.Paged
	npages  int
	pi, ci  uint32
	armed   bool
	overrun bool
	ctx     []byte // the eqc as created, for QUERY_EQ
	seq     uint64 // creation order (Device.eqSeq)
}

func (e *eq) wants(t prm.EventType) bool { return e.mask[t/64]>>(t%64)&1 != 0 }

// post writes one EQE (owner bit = lap parity of the producer index: the kernel's eq.c takes
// an EQE as software's when its owner bit equals the consumer's lap parity, and initialises
// the ring with owner 1 so that the first lap's zeros are not taken) and raises the
// interrupt if the EQ is armed. A full EQ (every slot unconsumed) loses the event and is
// marked overrun. Inferred: real firmware then reports an EQ overrun through the health
// syndrome (MLX5_INITIAL_SEG_HEALTH_SYNDROME_ASYNCHRONOUS_EQ_BUF_OVERRUN).
func (d *Device) post(e *eq, t prm.EventType, sub uint8, fill func(data []byte)) {
	nent := uint32(1) << e.logSize
	if e.pi-e.ci >= nent {
		e.overrun = true
		return
	}
	slot, err := e.mem.Slice(uint64(e.pi&(nent-1))*eqeSize, eqeSize, dma.Write)
	if err != nil {
		e.overrun = true
		return
	}
	clear(slot)
	prm.EQE.EventType.Set(slot, uint64(t))
	prm.EQE.EventSubType.Set(slot, uint64(sub))
	if fill != nil {
		fill(prm.EQE.EventData.Slice(slot))
	}
	iomem.ToDevice() // the EQE before its owner bit, as a device's ordered writes (see datapath's store)
	prm.EQE.Owner.Set(slot, uint64(e.pi>>e.logSize&1))
	e.pi++
	if e.armed {
		e.armed = false
		if d.cfg.Interrupt != nil {
			d.cfg.Interrupt(e.intr)
		}
	}
}

// subscriber is the lowest-numbered EQ that asked for event type t.
func (d *Device) subscriber(t prm.EventType) *eq { return d.subscriberBefore(t, ^uint64(0)) }

// subscriberBefore is the lowest-numbered EQ created before the seq-th that asked for t.
func (d *Device) subscriberBefore(t prm.EventType, seq uint64) *eq {
	var best *eq
	for _, e := range d.eqs {
		if e.seq < seq && e.wants(t) && (best == nil || e.n < best.n) {
			best = e
		}
	}
	return best
}

// eqsCreated is the EQ creation count now, for cmdCompletionEvent.
func (d *Device) eqsCreated() uint64 {
	d.evMu.Lock()
	defer d.evMu.Unlock()
	return d.eqSeq
}

// cmdCompletionEvent reports completed command-queue entries to the EQ that asked for
// command events and existed before the commands ran (before is eqsCreated then). The
// command that creates the command EQ is not reported on it: mlx5_core sends that CREATE_EQ
// in polling mode and takes its completion from the entry (eq.c create_async_eqs, then
// mlx5_cmd_use_events); an EQE for it would name an entry the kernel has already released
// (cmd.c mlx5_cmd_comp_handler). Inferred: the PRM does not say when firmware starts
// reporting on a new EQ; the model reported the creating command until the kernel showed
// why not.
func (d *Device) cmdCompletionEvent(vector uint32, before uint64) {
	d.evMu.Lock()
	defer d.evMu.Unlock()
	if e := d.subscriberBefore(prm.EventTypeCmd, before); e != nil {
		d.post(e, prm.EventTypeCmd, 0, func(b []byte) {
			prm.CmdInterCompEvent.CommandCompletionVector.Set(b, uint64(vector))
		})
	}
}

// RequestPages makes firmware ask for n more pages (negative: offer -n pages back) with a
// page-request EQE (device.h struct mlx5_eqe_page_req: func_id, num_pages), as firmware does
// when it needs memory after INIT_HCA; QUERY_PAGES with the regular op_mod then reports the
// outstanding request. It reports whether an EQ took the event.
func (d *Device) RequestPages(n int32) bool {
	d.mu.Lock()
	d.pages.want += n
	d.mu.Unlock()
	d.evMu.Lock()
	defer d.evMu.Unlock()
	e := d.subscriber(prm.EventTypePageRequest)
	if e == nil {
		return false
	}
	d.post(e, prm.EventTypePageRequest, 0, func(b []byte) {
		prm.EQEPageReq.FuncID.Set(b, 0)
		prm.EQEPageReq.NumPages.Set(b, uint64(uint32(n)))
	})
	return true
}

// events is the datapath's view of the EQs.
type events struct{ d *Device }

// Completion writes a completion EQE (event type 0, comp_event.cq_number) to EQ eqn.
func (ev events) Completion(eqn, cqn uint32) {
	d := ev.d
	d.evMu.Lock()
	defer d.evMu.Unlock()
	if e := d.eqs[eqn]; e != nil {
		d.post(e, prm.EventTypeComp, 0, func(b []byte) { prm.CompEvent.CQNumber.Set(b, uint64(cqn)) })
	}
}

// CQError writes a CQ error EQE (cq_error: cqn, syndrome) to the EQ that asked for them.
func (ev events) CQError(eqn, cqn uint32, syndrome uint8) {
	d := ev.d
	d.evMu.Lock()
	defer d.evMu.Unlock()
	if e := d.subscriber(prm.EventTypeCQError); e != nil {
		d.post(e, prm.EventTypeCQError, 0, func(b []byte) {
			prm.CQError.CQN.Set(b, uint64(cqn))
			prm.CQError.Syndrome.Set(b, uint64(syndrome))
		})
	}
}

// EQDoorbell takes the driver's consumer index and, when asked, arms the EQ. Arming an EQ
// that holds unconsumed EQEs raises its interrupt at once (inferred from the usual
// event-queue contract: the kernel re-arms after draining and relies on not missing events
// that arrived in between).
func (ev events) EQDoorbell(uar, eqn, ci uint32, arm bool) {
	d := ev.d
	d.evMu.Lock()
	defer d.evMu.Unlock()
	e := d.eqs[eqn]
	if e == nil || e.uar != uar {
		return
	}
	// The doorbell carries 24 bits of consumer index; extend it to the 32-bit count.
	e.ci = e.pi - (e.pi-ci)&0xffffff
	if e.pi-e.ci > 1<<e.logSize {
		e.ci = e.pi
	}
	if !arm {
		return
	}
	if e.pi != e.ci {
		if d.cfg.Interrupt != nil {
			d.cfg.Interrupt(e.intr)
		}
		return
	}
	e.armed = true
}

// createEQ is CREATE_EQ: eqc (log_eq_size, uar_page, intr, log_page_size, page_offset), the
// event bitmask and the PAS list of the ring (mlx5_ifc.h create_eq_in).
func (d *Device) createEQ(c *cmd) error {
	in := prm.CreateEQIn
	base := in.EQContextEntry.Off
	if err := c.need(ins(in.EQContextEntry, in.EventBitmask), prm.CreateEQOut.EQNumber); err != nil {
		return err
	}
	logSize := uint8(c.get(prm.EQC.LogEQSize.At(base)))
	if max := uint8(d.capGet(prm.CapTypeGeneral, prm.CmdHCACap.LogMaxEQSz)); logSize > max {
		return badParam("CREATE_EQ: log_eq_size %d above the cap log_max_eq_sz %d", logSize, max)
	}
	uar := uint32(c.get(prm.EQC.UARPage.At(base)))
	if !d.objs.uars.has(uar, c.uid) {
		return noObject("CREATE_EQ: uar_page %d is not allocated", uar)
	}
	intr := uint16(c.get(prm.EQC.Intr.At(base)))
	if intr >= maxMSIX {
		return badParam("CREATE_EQ: intr %d beyond the %d MSI-X vectors", intr, maxMSIX)
	}
	ringBytes := uint64(eqeSize) << logSize
	mem, npages, err := d.pasMemory(c, in.PAS, uint8(c.get(prm.EQC.LogPageSize.At(base))),
		c.get(prm.EQC.PageOffset.At(base)), ringBytes, "CREATE_EQ")
	if err != nil {
		return err
	}
	n, err := d.objs.eqs.alloc(c.uid, d.capLimit(prm.CmdHCACap.LogMaxEQ))
	if err != nil {
		return err
	}
	e := &eq{n: n, uid: c.uid, logSize: logSize, uar: uar, intr: intr, mem: mem, npages: npages,
		ctx: append([]byte(nil), in.EQContextEntry.Slice(c.in)...)}
	for i := range e.mask {
		e.mask[i] = c.get(in.EventBitmask.At(uint32(i) * 64))
	}
	d.evMu.Lock()
	e.seq = d.eqSeq
	d.eqSeq++
	d.eqs[n] = e
	d.evMu.Unlock()
	c.set(prm.CreateEQOut.EQNumber, uint64(n))
	return nil
}

// queryEQ is QUERY_EQ: the context as created, with the current state and indexes.
func (d *Device) queryEQ(c *cmd) error {
	if err := c.need(ins(prm.QueryEQIn.EQNumber), prm.QueryEQOut.EQContextEntry, prm.QueryEQOut.EventBitmask); err != nil {
		return err
	}
	n := uint32(c.get(prm.QueryEQIn.EQNumber))
	d.evMu.Lock()
	defer d.evMu.Unlock()
	e := d.eqs[n]
	if e == nil || !d.objs.eqs.has(n, c.uid) {
		return noObject("QUERY_EQ: EQ %d does not exist", n)
	}
	base := prm.QueryEQOut.EQContextEntry.Off
	copy(prm.QueryEQOut.EQContextEntry.Slice(c.out), e.ctx)
	c.set(prm.EQC.ProducerCounter.At(base), uint64(e.pi&0xffffff))
	c.set(prm.EQC.ConsumerCounter.At(base), uint64(e.ci&0xffffff))
	// eqc status: 0 OK, 0xa write failure (overrun); mlx5_ifc.h MLX5_EQC_STATUS_*.
	if e.overrun {
		c.set(prm.EQC.Status.At(base), 0xa)
	}
	for i := range e.mask {
		c.set(prm.QueryEQOut.EventBitmask.At(uint32(i)*64), e.mask[i])
	}
	return nil
}

// destroyEQ is DESTROY_EQ.
func (d *Device) destroyEQ(c *cmd) error {
	if err := c.need(ins(prm.DestroyEQIn.EQNumber)); err != nil {
		return err
	}
	n := uint32(c.get(prm.DestroyEQIn.EQNumber))
	if !d.objs.eqs.has(n, c.uid) {
		return noObject("DESTROY_EQ: EQ %d does not exist", n)
	}
	if d.objs.eqRefs[n] > 0 {
		return fail(prm.StatusResBusy, SyndromeBusy, "DESTROY_EQ: EQ %d still has %d CQs", n, d.objs.eqRefs[n])
	}
	d.objs.eqs.free(n)
	d.evMu.Lock()
	delete(d.eqs, n)
	d.evMu.Unlock()
	return nil
}
