package mlx5

import (
	"fmt"

	"github.com/daqiri-go/daqiri/mlx5/channel"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// Counts are the port's steering counters as the device keeps them (flow counters,
// QUERY_FLOW_COUNTER): what an engine reports as filtered drops and as frames handed on to
// the kernel, on hardware the same as on the model.
type Counts struct {
	// Dropped: frames a drop entry dropped (drop_all_traffic, drop rules).
	Dropped uint64
	// Missed: under flow isolation, frames no rule took (on a ConnectX they go on to the
	// kernel's tables; the model drops them as steering misses).
	Missed uint64
}

// openCounters allocates the drop counter, and the miss counter under isolation.
func (s *Steering) openCounters() error {
	alloc := func(what string) (channel.Object, error) {
		o, out, err := s.create(prm.NewCmdIn(prm.CmdOpAllocFlowCounter, 0, 16), outBytes(prm.AllocFlowCounterOut.FlowCounterID))
		if err != nil {
			return nil, fmt.Errorf("flow/mlx5: the %s flow counter: %w", what, err)
		}
		if id := uint32(prm.AllocFlowCounterOut.FlowCounterID.Get(out)); id != o.ID() {
			return nil, fmt.Errorf("flow/mlx5: ALLOC_FLOW_COUNTER gave %d, its object says %d", id, o.ID())
		}
		return o, nil
	}
	o, err := alloc("drop")
	if err != nil {
		return err
	}
	s.dropCounter, s.dropCtr = o.ID(), o
	if s.p.Isolation {
		if o, err = alloc("miss"); err != nil {
			return err
		}
		s.missCounter, s.missCtr = o.ID(), o
	}
	return nil
}

// installMiss puts the counting catch-all at the table's last index (isolation only): it
// counts a frame no rule took and forwards it to an empty table of the next level, which it
// misses just as it missed this one. The PRM lets an entry forward only to a higher level.
func (s *Steering) installMiss() error {
	idx := uint32(MaxRules * slotSpan)
	miss, err := s.createTableAt(prm.FlowTableNICRX, 0, tableLevel+1)
	if err != nil {
		return fmt.Errorf("flow/mlx5: the miss table: %w", err)
	}
	m := newMatch()
	g, err := s.createGroup(prm.FlowTableNICRX, s.table.ID(), idx, idx, m)
	if err != nil {
		return fmt.Errorf("flow/mlx5: the miss entry's group: %w", err)
	}
	s.objs = append(s.objs, g)
	e := &entry{table: s.table.ID(), typ: prm.FlowTableNICRX, index: idx, group: g.ID(), m: m,
		action: prm.FlowActionFwdDest, nextTable: miss.ID(), hasNextTable: true, counter: s.missCounter}
	o, err := s.ch.Create(e.bytes(), make([]byte, 16))
	if err != nil {
		return fmt.Errorf("flow/mlx5: the miss entry: %w", err)
	}
	s.missEntry = o
	return nil
}

// Counts reads the steering's flow counters.
func (s *Steering) Counts() (Counts, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Counts{}, ErrClosed
	}
	var c Counts
	var err error
	if s.dropCtr != nil {
		if c.Dropped, err = queryCounter(s.dropCtr); err != nil {
			return Counts{}, err
		}
	}
	if s.missCtr != nil {
		if c.Missed, err = queryCounter(s.missCtr); err != nil {
			return Counts{}, err
		}
	}
	return c, nil
}

// queryCounter reads a flow counter through its object (DevX runs QUERY_FLOW_COUNTER as
// an object query, not a general command).
func queryCounter(o channel.Object) (uint64, error) {
	in := prm.NewCmdIn(prm.CmdOpQueryFlowCounter, 0, 0x20)
	prm.QueryFlowCounterIn.FlowCounterID.Set(in, uint64(o.ID()))
	out := make([]byte, prm.QueryFlowCounterOut.FlowStatistics.End()/8)
	if err := o.Query(in, out); err != nil {
		return 0, fmt.Errorf("flow/mlx5: QUERY_FLOW_COUNTER %d: %w", o.ID(), err)
	}
	return prm.TrafficCounter.Packets.At(prm.QueryFlowCounterOut.FlowStatistics.Off).Get(out), nil
}
