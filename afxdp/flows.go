package afxdp

import (
	"fmt"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/flow"
	"github.com/daqiri-go/daqiri/flow/xdp"
)

// rxQueueIDs are the queue ids by position, for flow.Compile: the configured queues, then
// those added at run time; a deleted position is -1 (no flow can name it).
func (pt *port) rxQueueIDs() []int {
	rxs := pt.rxqs()
	if rxs == nil { // compiling the configured flows, before the queues are built
		ids := make([]int, len(pt.p.Rx))
		for i, q := range pt.p.Rx {
			ids[i] = q.ID
		}
		return ids
	}
	ids := make([]int, len(rxs))
	for i, r := range rxs {
		ids[i] = r.q.ID
		if r.deleted.Load() {
			ids[i] = -1
		}
	}
	return ids
}

func (pt *port) flexItems() []config.FlexItem {
	if pt.p.Config.RX == nil {
		return nil
	}
	return pt.p.Config.RX.FlexItems
}

// compileFlows compiles the configured RX and TX flows into the port's table.
func (pt *port) compileFlows() error {
	cfg := pt.e.env.Config
	tb := &flow.Table{}
	if rx := pt.p.Config.RX; rx != nil {
		tb.Isolation = rx.FlowIsolation
		for i := range rx.Flows {
			r, err := flow.Compile(cfg, fmt.Sprintf("%s.rx.flows[%d]", pt.p.Path(), i), &rx.Flows[i], pt.rxQueueIDs(), rx.FlexItems)
			if err != nil {
				return err
			}
			tb.Slots = append(tb.Slots, r)
		}
		if len(tb.Slots) > xdp.MaxRules {
			return cfg.Errorf(pt.p.Path()+".rx.flows", "engine xdp holds at most %d flows per interface, %d configured", xdp.MaxRules, len(tb.Slots))
		}
		if err := checkTable(tb); err != nil {
			return cfg.Errorf(pt.p.Path()+".rx.flows", "%v", err)
		}
	}
	pt.slots = flow.NewSlots(len(tb.Slots), xdp.MaxRules)
	pt.table.Store(tb)
	if tx := pt.p.Config.TX; tx != nil {
		for i := range tx.Flows {
			r, err := flow.CompileTX(cfg, fmt.Sprintf("%s.tx.flows[%d]", pt.p.Path(), i), &tx.Flows[i])
			if err != nil {
				return err
			}
			pt.txRules = append(pt.txRules, r)
		}
	}
	return nil
}

// checkTable enforces what the XDP program needs of a rule set: one VXLAN port, one flow
// class (standard, flex or eCPRI) per interface as upstream.
func checkTable(tb *flow.Table) error {
	var vx uint16
	class := ""
	for _, r := range tb.Slots {
		if r == nil {
			continue
		}
		if r.Decap == flow.DecapVXLAN {
			if vx != 0 && r.VXLANPort != vx {
				return fmt.Errorf("VXLAN decap flows use outer UDP ports %d and %d; engine xdp recognises one VXLAN port per interface", vx, r.VXLANPort)
			}
			vx = r.VXLANPort
		}
		if class == "" {
			class = r.Class()
		} else if r.Class() != class {
			return fmt.Errorf("flow %q is a %s flow but the interface already has %s flows; one flow class per interface", r.Name, r.Class(), class)
		}
	}
	return nil
}

func (pt *port) nRules(tb *flow.Table) int {
	n := len(tb.Slots)
	for n > 0 && tb.Slots[n-1] == nil {
		n--
	}
	return n
}

// writeConf pushes the table's global settings to the program.
func (pt *port) writeConf(tb *flow.Table) error {
	if pt.prog == nil {
		return nil
	}
	return pt.prog.SetConf(xdp.Conf{NRules: pt.nRules(tb), Isolation: tb.Isolation, DefaultQueue: tb.DefaultQueue, DropAll: tb.DropAll, VXLANPort: tb.VXLANPort()})
}

func (pt *port) installStatic() error {
	tb := pt.table.Load()
	for i, r := range tb.Slots {
		if err := pt.prog.SetRule(i, r); err != nil {
			return pt.e.env.Config.Errorf(fmt.Sprintf("%s.rx.flows[%d]", pt.p.Path(), i), "%v", err)
		}
	}
	return pt.writeConf(tb)
}

// allocID picks an unused flow id (1..MaxFlowID), skipping configured ones; recycled ids are
// reused first through the lowest-free search.
func (e *Engine) allocID() (uint32, error) {
	for tries := 0; tries < config.MaxFlowID; tries++ {
		id := e.nextID
		e.nextID++
		if e.nextID > config.MaxFlowID {
			e.nextID = 1
		}
		if !e.static[id] && e.flowIDs[id] == nil {
			return id, nil
		}
	}
	return 0, fmt.Errorf("no free flow id: %w", engine.ErrNoSpaceAvailable)
}

// AddRxFlows installs dynamic RX flows on a port while traffic runs: each is compiled,
// checked against the port's flow class, written into a free rule slot of the XDP program's
// map and only then made visible (see xdp.Program.SetRule), so other flows keep steering.
func (e *Engine) AddRxFlows(portID int, flows []config.Flow) ([]uint32, error) {
	ids := make([]uint32, len(flows))
	pt := e.byID[portID]
	if pt == nil || pt.prog == nil {
		return ids, fmt.Errorf("port %d has no xdp RX queues to steer to: %w", portID, engine.ErrInvalidParameter)
	}
	if e.closed.Load() {
		return ids, engine.ErrNotReady
	}
	e.flowMu.Lock()
	defer e.flowMu.Unlock()
	pt.mu.Lock()
	defer pt.mu.Unlock()
	for i := range flows {
		f := flows[i]
		r, err := flow.Compile(nil, fmt.Sprintf("port %d flow %d (%q)", portID, i, f.Name), &f, pt.rxQueueIDs(), pt.flexItems())
		if err != nil {
			return ids, fmt.Errorf("%v: %w", err, engine.ErrInvalidParameter)
		}
		old := pt.table.Load()
		tb := *old
		tb.Slots = append([]*flow.Rule(nil), old.Slots...)
		slot, err := pt.slots.Free()
		if err != nil {
			return ids, fmt.Errorf("port %d: %w: %w", portID, err, engine.ErrNoSpaceAvailable)
		}
		for len(tb.Slots) <= slot {
			tb.Slots = append(tb.Slots, nil)
		}
		tb.Slots[slot] = r
		if err := checkTable(&tb); err != nil {
			return ids, fmt.Errorf("port %d flow %d (%q): %v: %w", portID, i, f.Name, err, engine.ErrInvalidParameter)
		}
		id, err := e.allocID()
		if err != nil {
			return ids, err
		}
		r.FlowID = id
		if err := pt.prog.SetRule(slot, r); err != nil {
			return ids, err
		}
		if err := pt.writeConf(&tb); err != nil {
			pt.prog.ClearRule(slot)
			return ids, err
		}
		pt.table.Store(&tb)
		pt.slots.Take(slot, id)
		e.flowIDs[id] = pt
		ids[i] = id
	}
	return ids, nil
}

// DeleteFlow removes a dynamic flow.
func (e *Engine) DeleteFlow(id uint32) error {
	e.flowMu.Lock()
	defer e.flowMu.Unlock()
	if e.static[id] {
		return fmt.Errorf("flow %d is a configured (static) flow and cannot be deleted: %w", id, engine.ErrInvalidParameter)
	}
	pt := e.flowIDs[id]
	if pt == nil {
		return fmt.Errorf("no dynamic flow %d: %w", id, engine.ErrInvalidParameter)
	}
	pt.mu.Lock()
	defer pt.mu.Unlock()
	slot, _ := pt.slots.Slot(id)
	if err := pt.prog.ClearRule(slot); err != nil {
		return err
	}
	old := pt.table.Load()
	tb := *old
	tb.Slots = append([]*flow.Rule(nil), old.Slots...)
	tb.Slots[slot] = nil
	tb.Slots = tb.Slots[:pt.nRules(&tb)]
	if err := pt.writeConf(&tb); err != nil {
		return err
	}
	pt.table.Store(&tb)
	pt.slots.Release(id)
	delete(e.flowIDs, id)
	return nil
}

// DropAll switches a port's drop-all mode.
func (e *Engine) DropAll(portID int, drop bool) error {
	pt := e.byID[portID]
	if pt == nil || pt.prog == nil {
		return fmt.Errorf("port %d has no xdp RX queues: %w", portID, engine.ErrInvalidParameter)
	}
	pt.mu.Lock()
	defer pt.mu.Unlock()
	old := pt.table.Load()
	tb := *old
	tb.DropAll = drop
	if err := pt.writeConf(&tb); err != nil {
		return err
	}
	pt.table.Store(&tb)
	return nil
}

// FlushQueue discards what a queue holds: bursts waiting for the application, and for a
// direct queue what its sockets have received.
func (e *Engine) FlushQueue(portID, queue int) (int, error) {
	pt := e.byID[portID]
	if pt == nil {
		return 0, fmt.Errorf("port %d is not an xdp port: %w", portID, engine.ErrInvalidParameter)
	}
	for _, r := range pt.rxqs() {
		if r.q.ID != queue || r.deleted.Load() {
			continue
		}
		n := r.q.Drain()
		if r.direct {
			for tries := 0; tries < 1024; tries++ {
				b, err := r.poll()
				if err != nil {
					break
				}
				n += b.Len()
				b.Free()
			}
		}
		r.q.Stats.Drop(engine.DropFiltered, n)
		return n, nil
	}
	return 0, fmt.Errorf("port %d has no rx queue %d: %w", portID, queue, engine.ErrInvalidParameter)
}
