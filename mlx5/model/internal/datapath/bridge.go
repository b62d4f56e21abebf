package datapath

import (
	"context"
	"time"
)

// PacketConn is a link to a netdev that carries whole Ethernet frames (afpacket.Socket).
// Recv returns 0 and no error when its timeout passes without a frame.
type PacketConn interface {
	Send(frame []byte) error
	Recv(buf []byte, timeout time.Duration) (int, error)
}

type connWire struct{ c PacketConn }

// Transmit implements Wire. A send error (the netdev went away) loses the frame, as a
// frame on a cut cable is lost.
func (w connWire) Transmit(frame []byte) { _ = w.c.Send(frame) }

// Bridge connects a port to a netdev until ctx ends: what the port transmits is sent on c,
// and what c receives the port receives. It returns ctx's end or c's receive error; the
// port's wire is disconnected when it returns.
func Bridge(ctx context.Context, n *NIC, c PacketConn) error {
	n.SetWire(connWire{c})
	defer n.SetWire(nil)
	buf := make([]byte, 65536)
	for ctx.Err() == nil {
		k, err := c.Recv(buf, 50*time.Millisecond)
		if err != nil {
			return err
		}
		if k > 0 {
			n.Receive(buf[:k])
		}
	}
	return ctx.Err()
}
