package model

import (
	"context"
	"fmt"
	"time"

	"github.com/daqiri-go/daqiri/mlx5/model/internal/datapath/afpacket"
)

// Bridge connects the port to the Linux netdev ifname through an AF_PACKET socket until ctx
// ends: what the port transmits goes out on the netdev, and what arrives there the port
// receives, so real peers (tshark, the kernel's stack, another engine) exchange frames with
// the model. It needs CAP_NET_RAW and runs in the caller's network namespace. The port is
// left unwired when it returns; the error is ctx's or the socket's.
func (d *Device) Bridge(ctx context.Context, ifname string) error {
	s, err := afpacket.Open(ifname)
	if err != nil {
		return fmt.Errorf("mlx5 model: bridge to %s: %w", ifname, err)
	}
	defer s.Close()
	d.SetWire(func(frame []byte) { _ = s.Send(frame) }) // a lost frame is a cut cable's
	defer d.SetWire(nil)
	buf := make([]byte, 1<<16)
	for ctx.Err() == nil {
		n, err := s.Recv(buf, 50*time.Millisecond)
		if err != nil {
			return fmt.Errorf("mlx5 model: bridge to %s: %w", ifname, err)
		}
		if n > 0 {
			d.Receive(buf[:n])
		}
	}
	return ctx.Err()
}
