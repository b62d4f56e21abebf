package vfioch

import "github.com/daqiri-go/daqiri/mlx5/channel"

var _ channel.Clock = (*Channel)(nil)

// Timebase implements channel.Clock: the init segment's internal_timer and real_time read
// through BAR0, as a driver that owns the function must (no kernel keeps the clock here, so
// the real-time offset is measured, not assumed).
func (c *Channel) Timebase() (channel.Timebase, error) {
	if err := c.healthy("read the device's clock"); err != nil {
		return channel.Timebase{}, err
	}
	return channel.InitSegTimebase(c, c.rd)
}
