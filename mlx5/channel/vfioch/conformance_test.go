package vfioch_test

import (
	"testing"

	"github.com/daqiri-go/daqiri/mlx5/channel"
	"github.com/daqiri-go/daqiri/mlx5/channel/channeltest"
	"github.com/daqiri-go/daqiri/mlx5/channel/vfioch"
	"github.com/daqiri-go/daqiri/mlx5/model"
	"github.com/daqiri-go/daqiri/mlx5/model/vfiomodel"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// TestConformance runs the suite every channel passes on the VFIO transport over the model;
// after each channel's Close no DMA mapping may be left.
func TestConformance(t *testing.T) {
	channeltest.Run(t, func(t *testing.T) channel.Channel {
		f := vfiomodel.New(model.Config{Realtime: true}, "vfio+model:0", nil)
		c, err := vfioch.Open(f, testOpts())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if n := f.LeftMapped(); n != 0 {
				t.Errorf("%d DMA mappings left after Close", n)
			}
			checkCommands(t, f, refusedBySuite...)
		})
		return c
	})
}

// refusedBySuite are the commands the suite sends to be refused.
var refusedBySuite = []prm.CmdOp{prm.CmdOpCreateCQ}
