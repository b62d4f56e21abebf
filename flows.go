package daqiri

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
)

// FlowRule is an RX flow to add at run time: a match and actions as in the configuration's
// rx.flows (the last action a queue action). Its ID is ignored: the engine allocates one.
type FlowRule = config.Flow

// flowEngine returns the flow-capable engine of a port.
func (s *Session) flowEngine(port int) (engine.FlowEngine, error) {
	p, err := s.port(port)
	if err != nil {
		return nil, err
	}
	fe, ok := s.byPort[port].(engine.FlowEngine)
	if !ok {
		return nil, fmt.Errorf("port %d (%s) runs engine %s, which has no run-time flows: %w", port, p.Name, p.Engine, ErrNotSupported)
	}
	return fe, nil
}

// AddRxFlow installs one RX flow on a port while traffic runs and returns its flow id, which
// packets matching it carry (upstream add_rx_flow_async + poll_flow_op, done synchronously:
// the flow steers when AddRxFlow returns). Bad rules are ErrInvalidParameter; a full rule
// table or id space is ErrNoSpaceAvailable.
func (s *Session) AddRxFlow(port int, rule FlowRule) (uint32, error) {
	ids, err := s.AddRxFlows(port, []FlowRule{rule})
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// AddRxFlows installs several RX flows in order (upstream add_rx_flows_async). ids has one
// entry per rule; when a rule fails the ones before it stay installed, ids holds their ids and
// zeros from the failed one on, and the error names it.
func (s *Session) AddRxFlows(port int, rules []FlowRule) (ids []uint32, err error) {
	if err := s.enter(); err != nil {
		return make([]uint32, len(rules)), err
	}
	defer s.leave()
	fe, err := s.flowEngine(port)
	if err != nil {
		return make([]uint32, len(rules)), err
	}
	return fe.AddRxFlows(port, rules)
}

// DeleteFlow removes a flow added with AddRxFlow(s) (upstream delete_flow_async). Configured
// flows and unknown ids are ErrInvalidParameter.
func (s *Session) DeleteFlow(id uint32) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	var errs []error
	tried := map[engine.FlowEngine]bool{}
	for p := range s.ports {
		fe, ok := s.byPort[p].(engine.FlowEngine)
		if !ok || tried[fe] {
			continue
		}
		tried[fe] = true
		err := fe.DeleteFlow(id)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return fmt.Errorf("flow %d: no engine of this session has run-time flows: %w", id, ErrNotSupported)
	}
	return errors.Join(errs...)
}

// DropAllTraffic makes a port drop every packet its flows (or default queue) would deliver,
// counting them as dropped (reason filtered); traffic flow isolation gives to the kernel keeps
// going there (upstream drop_all_traffic, but per port).
func (s *Session) DropAllTraffic(port int) error { return s.dropAll(port, true) }

// AllowAllTraffic undoes DropAllTraffic (upstream allow_all_traffic).
func (s *Session) AllowAllTraffic(port int) error { return s.dropAll(port, false) }

func (s *Session) dropAll(port int, drop bool) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	fe, err := s.flowEngine(port)
	if err != nil {
		return err
	}
	return fe.DropAll(port, drop)
}

// FlushPortQueue discards every packet an RX queue holds and returns how many (upstream
// flush_port_queue). Flushed packets count as dropped (reason filtered).
func (s *Session) FlushPortQueue(port, queue int) (int, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.leave()
	q, err := s.rxQueue(port, queue)
	if err != nil {
		return 0, err
	}
	if f, ok := s.byPort[port].(engine.QueueFlusher); ok {
		return f.FlushQueue(port, queue)
	}
	n := q.Drain()
	q.Stats.Drop(engine.DropFiltered, n)
	return n, nil
}

// MACAddr is a port's Ethernet address (upstream get_mac_addr); ErrNotSupported for engines
// without one (sockets).
func (s *Session) MACAddr(port int) (net.HardwareAddr, error) {
	p, err := s.port(port)
	if err != nil {
		return nil, err
	}
	m, ok := s.byPort[port].(engine.MACer)
	if !ok {
		return nil, fmt.Errorf("port %d (%s) runs engine %s, which has no MAC address: %w", port, p.Name, p.Engine, ErrNotSupported)
	}
	return m.MACAddr(port)
}

// SetPacketTxTime asks for packet i of a TX burst to leave at t (upstream set_packet_tx_time).
// It is best effort on every engine here: the xdp and loopback engines hold the packet in
// software until t (CLOCK_REALTIME) and then send it with what follows; the accuracy is that
// of the sending thread's wake-up (tens of microseconds), not a NIC's launch time. Packets
// behind it in the burst wait for it. Engines without timed send return ErrNotSupported.
func (s *Session) SetPacketTxTime(b *Burst, i int, t time.Time) error {
	if b == nil {
		return ErrNullPtr
	}
	if !b.IsTx() || i < 0 || i >= b.Len() {
		return fmt.Errorf("packet %d of a %d-packet burst (tx %v): %w", i, b.Len(), b.IsTx(), ErrInvalidParameter)
	}
	p, err := s.port(b.Port())
	if err != nil {
		return err
	}
	switch p.Engine {
	case config.EngineXDP, config.EngineLoopback, config.EngineMLX5:
	default:
		return fmt.Errorf("port %d (%s) runs engine %s, which has no timed send: %w", p.ID, p.Name, p.Engine, ErrNotSupported)
	}
	// TX bursts carry no receive times: the per-packet timestamp slot holds the send time.
	b.SetRxTimestamp(i, t.UnixNano())
	return nil
}
