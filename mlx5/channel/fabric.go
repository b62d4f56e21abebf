package channel

import (
	"context"
	"log/slog"
)

// Fabric gives channels for interface addresses that name no kernel or PCI device: the
// ConnectX device model's ports (mlx5/model/modelch.Fabric), or a user's own test double.
// The mlx5 engine knows nothing of what is behind them; programs that want model ports wire
// a Fabric in (daqiri.WithMLX5Fabric), so that a program that does not links no model.
type Fabric interface {
	// Claims reports whether address ("model:1", "vfio+model:0@veth0") is the fabric's. A
	// claimed address that the fabric then refuses is an error, never handed to DevX.
	Claims(address string) bool
	// Open opens the channels of ports together, since a fabric may cable its ports to
	// each other, and returns them in the order of ports. The devices run until the
	// returned stop is called, which the engine does after closing every channel.
	Open(ctx context.Context, ports []FabricPort, opts FabricOptions) (chans []Channel, stop func(), err error)
}

// FabricPort is one interface the engine wants a channel for.
type FabricPort struct {
	Name    string // the interface's name, for messages
	Path    string // its config key path (interfaces[0]), for errors
	Address string
}

// FabricOptions are what the session's config says about all ports together.
type FabricOptions struct {
	// HWLoopback is upstream's `loopback: hw`: every port's transmit comes back to its own
	// receive.
	HWLoopback bool
	Log        *slog.Logger
}

// FabricError is a fabric's refusal of one port, for the engine to report at its key path.
type FabricError struct {
	Port int // the index in the ports passed to Open
	Err  error
}

// Error implements error.
func (e *FabricError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *FabricError) Unwrap() error { return e.Err }
