package channeltest_test

import (
	"testing"

	"github.com/daqiri-go/daqiri/mlx5/channel"
	"github.com/daqiri-go/daqiri/mlx5/channel/channeltest"
	"github.com/daqiri-go/daqiri/mlx5/channel/devx"
	"github.com/daqiri-go/daqiri/mlx5/channel/trace"
	"github.com/daqiri-go/daqiri/mlx5/model"
	"github.com/daqiri-go/daqiri/mlx5/model/modelch"
	"github.com/daqiri-go/daqiri/verbs"
)

func TestModel(t *testing.T) {
	channeltest.Run(t, func(t *testing.T) channel.Channel {
		c, err := modelch.Open(model.New(model.Config{}), "model:0")
		if err != nil {
			t.Fatal(err)
		}
		return c
	})
}

// TestTracedModel: the trace wrapper changes nothing the suite can see.
func TestTracedModel(t *testing.T) {
	channeltest.Run(t, func(t *testing.T) channel.Channel {
		c, err := modelch.Open(model.New(model.Config{}), "model:0")
		if err != nil {
			t.Fatal(err)
		}
		s := trace.NewSink(discard{})
		return trace.Wrap(c, s)
	})
}

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }

// TestDevX runs the suite on the first mlx5 RDMA device; without a ConnectX (every machine
// of this project) it skips, in CI too: no hardware, like a GPU test.
func TestDevX(t *testing.T) {
	devs, _ := verbs.Devices()
	name := ""
	for _, d := range devs {
		if d.Driver == "mlx5" && name == "" {
			name = d.Name
		}
	}
	if name == "" {
		t.Skip("no mlx5 RDMA device (ConnectX) on this machine")
	}
	channeltest.Run(t, func(t *testing.T) channel.Channel {
		c, err := devx.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		return c
	})
}
