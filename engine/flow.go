package engine

import (
	"net"

	"github.com/daqiri-go/daqiri/config"
)

// FlowEngine is implemented by engines that steer received packets with flow rules they can
// change while traffic runs (raw engines: xdp, later mlx5).
type FlowEngine interface {
	// AddRxFlows installs RX flows on a port, in order, and returns one allocated flow id per
	// flow (the configured Flow.ID is ignored). Packets matching a flow carry its id. When a
	// flow fails, the ones before it stay installed: ids holds their ids and zeros from the
	// failed one on, and the error says which failed and why.
	AddRxFlows(port int, flows []config.Flow) (ids []uint32, err error)
	// DeleteFlow removes a flow added with AddRxFlows. Static (configured) flows and unknown
	// ids are ErrInvalidParameter.
	DeleteFlow(id uint32) error
	// DropAll drops (drop = true) or again delivers (false) every packet the port's flows or
	// default queue would deliver; traffic for the kernel (flow isolation) is not affected.
	DropAll(port int, drop bool) error
}

// MACer is implemented by engines that know their ports' Ethernet addresses.
type MACer interface {
	MACAddr(port int) (net.HardwareAddr, error)
}

// QueueFlusher is implemented by engines that can discard what a receive queue holds.
type QueueFlusher interface {
	// FlushQueue frees every packet waiting on the queue (in the engine and in the ring to
	// the application) and returns how many there were.
	FlushQueue(port, queue int) (int, error)
}
