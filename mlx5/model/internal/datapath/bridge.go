package datapath

import (
	"context"
	"time"

	"github.com/daqiri-go/daqiri/mlx5/prm"
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

// GSOConn is a PacketConn that says when a received frame is a TCP or UDP packet its sender
// left whole for the NIC to segment (afpacket.Socket.RecvGSO): mss is the segment size, 0
// for an ordinary frame.
type GSOConn interface {
	PacketConn
	RecvGSO(buf []byte, timeout time.Duration) (n, mss int, err error)
}

// Bridge connects a port to a netdev until ctx ends: what the port transmits is sent on c,
// and what c receives the port receives. A frame c reports as unsegmented (GSOConn) arrives
// as the segments a NIC would have put on the wire, with the headers and checksums each
// needs (the LSO path's segmentation); one that cannot be segmented (tunnelled, not TCP or
// UDP) is dropped, as no wire would carry it. It returns ctx's end or c's receive error;
// the port's wire is disconnected when it returns.
func Bridge(ctx context.Context, n *NIC, c PacketConn) error {
	n.SetWire(connWire{c})
	defer n.SetWire(nil)
	buf := make([]byte, 65536)
	gc, segments := c.(GSOConn)
	for ctx.Err() == nil {
		var k, mss int
		var err error
		if segments {
			k, mss, err = gc.RecvGSO(buf, 50*time.Millisecond)
		} else {
			k, err = c.Recv(buf, 50*time.Millisecond)
		}
		if err != nil {
			return err
		}
		switch {
		case k == 0:
		case mss > 0:
			segs, werr := segment(buf[:k], mss, prm.WQEEthL3Csum|prm.WQEEthL4Csum)
			if werr != nil {
				continue
			}
			for _, s := range segs {
				n.Receive(s)
			}
		default:
			n.Receive(buf[:k])
		}
	}
	return ctx.Err()
}
