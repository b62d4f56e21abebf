package devx

import (
	"fmt"

	"github.com/daqiri-go/daqiri/mlx5/channel"
)

var _ channel.Clock = (*Channel)(nil)

// Timebase implements channel.Clock from the kernel's clock information page: the
// free-running timer converts as mlx5dv_ts_to_ns does (the page's nsec is the PTP hardware
// clock's time, which mlx5_core starts from ktime_get_real), and real-time stamps are Unix
// time as they are (offset 0: mlx5_core sets the real-time clock from the host's
// CLOCK_REALTIME through MTUTC, and PTP daemons steer it from there; a clock steered to TAI
// instead reads 37 s ahead, as it does for every user of the PHC).
func (c *Channel) Timebase() (channel.Timebase, error) {
	if err := c.begin(); err != nil {
		return channel.Timebase{}, err
	}
	ci, err := c.k.ClockInfo()
	if err != nil {
		return channel.Timebase{}, fmt.Errorf("%s: clock information page: %w", c.name, err)
	}
	return channel.Timebase{Timer: channel.TimerScale{
		Nsec: ci.Nsec, Cycles: ci.Cycles, Frac: ci.Frac, Mask: ci.Mask, Mult: ci.Mult, Shift: ci.Shift,
	}}, nil
}
