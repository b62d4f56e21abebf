package mlx5

import (
	"errors"
	"fmt"
	"sync"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/flow"
	flowmlx5 "github.com/daqiri-go/daqiri/flow/mlx5"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// steering is a port's receive steering: flow/mlx5's compiled rules, or — while that backend
// is not built — one catch-all entry to the first queue.
type steering interface {
	Close() error
}

// flowSteer is flow/mlx5's steering with the port's rule slots.
type flowSteer struct {
	*flowmlx5.Steering
	mu    sync.Mutex
	slots *flow.Slots // run-time flows in the slots after the configured ones
}

// catchAll is the fallback: a direct TIR on the first RX queue and a root table whose one
// entry forwards every frame to it.
type catchAll struct {
	detach func() error
}

func (c *catchAll) Close() error {
	if c.detach != nil {
		return c.detach()
	}
	return nil
}

func (pt *port) rxQueueIDs() []int {
	ids := make([]int, len(pt.p.Rx))
	for i, q := range pt.p.Rx {
		ids[i] = q.ID
	}
	return ids
}

func (pt *port) openSteering() error {
	cfg := pt.e.env.Config
	params := flowmlx5.Params{TD: pt.td}
	for _, r := range pt.rxqs {
		params.RQNs = append(params.RQNs, r.rqn)
	}
	var flows []config.Flow
	if rx := pt.p.Config.RX; rx != nil {
		params.Isolation = rx.FlowIsolation
		flows = rx.Flows
		for i := range rx.Flows {
			r, err := flow.Compile(cfg, fmt.Sprintf("%s.rx.flows[%d]", pt.p.Path(), i), &rx.Flows[i], pt.rxQueueIDs(), rx.FlexItems)
			if err != nil {
				return err
			}
			params.Rules = append(params.Rules, r)
		}
	}
	if tx := pt.p.Config.TX; tx != nil {
		for i := range tx.Flows {
			r, err := flow.CompileTX(cfg, fmt.Sprintf("%s.tx.flows[%d]", pt.p.Path(), i), &tx.Flows[i])
			if err != nil {
				return err
			}
			params.TxRules = append(params.TxRules, r)
		}
	}
	s, err := flowmlx5.New(pt.ch, params)
	switch {
	case err == nil:
		pt.steer = &flowSteer{Steering: s, slots: flow.NewSlots(len(params.Rules), flowmlx5.MaxRules)}
		return nil
	case !errors.Is(err, errors.ErrUnsupported):
		return fmt.Errorf("%s: flows: %w", pt.p.Path(), err)
	}
	if len(pt.rxqs) == 0 {
		return fmt.Errorf("%s: TX flows need flow/mlx5, which this build does not have: %w", pt.p.Path(), engine.ErrNotSupported)
	}
	if len(flows) > 0 {
		pt.e.env.Log.Warn("mlx5: flow/mlx5 is not built yet: the port's flows are not installed; every frame goes to the first RX queue with flow id 0", "interface", pt.p.Name, "flows", len(flows))
	}
	return pt.catchAll()
}

// catchAll builds the fallback steering: TIR → the first RQ, a NIC RX table with one group
// without match criteria and one entry forwarding to the TIR, attached at the root.
func (pt *port) catchAll() error {
	tb := prm.CreateTIRIn.Ctx.Off
	in := prm.NewCmdIn(prm.CmdOpCreateTIR, 0, int(prm.CreateTIRIn.Ctx.End()/8))
	prm.TIRC.TransportDomain.At(tb).Set(in, uint64(pt.td))
	prm.TIRC.InlineRQN.At(tb).Set(in, uint64(pt.rxqs[0].rqn))
	tir, _, err := pt.create(in, 16)
	if err != nil {
		return err
	}
	fb := prm.CreateFlowTableIn.FlowTableContext.Off
	in = prm.NewCmdIn(prm.CmdOpCreateFlowTable, 0, int(prm.CreateFlowTableIn.FlowTableContext.End()/8))
	prm.CreateFlowTableIn.TableType.Set(in, prm.FlowTableNICRX)
	prm.FlowTableContext.LogSize.At(fb).Set(in, 1)
	ft, _, err := pt.create(in, 16)
	if err != nil {
		return err
	}
	in = prm.NewCmdIn(prm.CmdOpCreateFlowGroup, 0, int(prm.CreateFlowGroupIn.MatchCriteria.End()/8))
	prm.CreateFlowGroupIn.TableType.Set(in, prm.FlowTableNICRX)
	prm.CreateFlowGroupIn.TableID.Set(in, uint64(ft.ID()))
	fg, _, err := pt.create(in, 16)
	if err != nil {
		return err
	}
	cb := prm.SetFTEIn.FlowContext.Off
	fc := prm.FlowContext
	in = prm.NewCmdIn(prm.CmdOpSetFlowTableEntry, 0, int(fc.Destination.At(cb).End()/8))
	prm.SetFTEIn.TableType.Set(in, prm.FlowTableNICRX)
	prm.SetFTEIn.TableID.Set(in, uint64(ft.ID()))
	fc.GroupID.At(cb).Set(in, uint64(fg.ID()))
	fc.Action.At(cb).Set(in, prm.FlowActionFwdDest)
	fc.DestinationListSize.At(cb).Set(in, 1)
	prm.DestFormatStruct.DestinationType.At(cb+fc.Destination.Off).Set(in, prm.FlowDestTIR)
	prm.DestFormatStruct.DestinationID.At(cb+fc.Destination.Off).Set(in, uint64(tir.ID()))
	if _, _, err := pt.create(in, 16); err != nil {
		return err
	}
	detach, err := pt.ch.AttachRoot(ft.ID())
	if err != nil {
		return fmt.Errorf("%s: attach root table: %w", pt.p.Path(), err)
	}
	pt.steer = &catchAll{detach: detach}
	return nil
}

var _ engine.FlowEngine = (*Engine)(nil)

func (e *Engine) flowPort(portID int) (*port, *flowSteer, error) {
	pt := e.byID[portID]
	if pt == nil || pt.steer == nil || len(pt.rxqs) == 0 {
		return nil, nil, fmt.Errorf("port %d has no mlx5 RX queues to steer to: %w", portID, engine.ErrInvalidParameter)
	}
	fs, ok := pt.steer.(*flowSteer)
	if !ok {
		return nil, nil, fmt.Errorf("port %d: flows need flow/mlx5, which this build does not have yet: %w", portID, engine.ErrNotSupported)
	}
	return pt, fs, nil
}

// AddRxFlows implements engine.FlowEngine.
func (e *Engine) AddRxFlows(portID int, flows []config.Flow) ([]uint32, error) {
	ids := make([]uint32, len(flows))
	pt, fs, err := e.flowPort(portID)
	if err != nil {
		return ids, err
	}
	if e.closed.Load() {
		return ids, engine.ErrNotReady
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for i := range flows {
		f := flows[i]
		var flex []config.FlexItem
		if pt.p.Config.RX != nil {
			flex = pt.p.Config.RX.FlexItems
		}
		r, err := flow.Compile(nil, fmt.Sprintf("port %d flow %d (%q)", portID, i, f.Name), &f, pt.rxQueueIDs(), flex)
		if err != nil {
			return ids, fmt.Errorf("%v: %w", err, engine.ErrInvalidParameter)
		}
		if err := flowmlx5.Check(r); err != nil {
			return ids, fmt.Errorf("port %d flow %d (%q): %v: %w", portID, i, f.Name, err, engine.ErrInvalidParameter)
		}
		slot, err := fs.slots.Free()
		if err != nil {
			return ids, fmt.Errorf("port %d: %w: %w", portID, err, engine.ErrNoSpaceAvailable)
		}
		id := uint32(slot + 1<<20) // dynamic ids above the static ones' usual range
		r.FlowID = id
		if err := fs.Set(slot, r); err != nil {
			// The device's refusal (a *channel.CommandError with its status) stays in the
			// chain beside the engine's status.
			return ids, fmt.Errorf("port %d flow %d (%q): the device refused it: %w: %w", portID, i, f.Name, engine.ErrInvalidParameter, err)
		}
		fs.slots.Take(slot, id)
		ids[i] = id
	}
	return ids, nil
}

// DeleteFlow implements engine.FlowEngine.
func (e *Engine) DeleteFlow(id uint32) error {
	for _, pt := range e.ports {
		fs, ok := pt.steer.(*flowSteer)
		if !ok {
			continue
		}
		fs.mu.Lock()
		slot, ok := fs.slots.Slot(id)
		if ok {
			err := fs.Clear(slot)
			if err == nil {
				fs.slots.Release(id)
			}
			fs.mu.Unlock()
			return err
		}
		fs.mu.Unlock()
	}
	return fmt.Errorf("no dynamic flow %d: %w", id, engine.ErrInvalidParameter)
}

// DropAll implements engine.FlowEngine.
func (e *Engine) DropAll(portID int, drop bool) error {
	_, fs, err := e.flowPort(portID)
	if err != nil {
		return err
	}
	return fs.SetDropAll(drop)
}
