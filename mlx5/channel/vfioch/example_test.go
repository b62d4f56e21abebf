package vfioch_test

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/daqiri-go/daqiri/mlx5/channel/vfioch"
	"github.com/daqiri-go/daqiri/mlx5/model"
	"github.com/daqiri-go/daqiri/mlx5/model/vfiomodel"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// The transport over the model, as the engine opens an interface vfio+model:0; for a
// ConnectX bound to vfio-pci, vfioch.OpenPCI("0000:3b:00.0") gives the Function instead.
func ExampleOpen() {
	f := vfiomodel.New(model.Config{Realtime: true}, "vfio+model:0", nil)
	ch, err := vfioch.Open(f, vfioch.Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		fmt.Println(err)
		return
	}
	in := make([]byte, 16)
	prm.CmdIn.Opcode.Set(in, uint64(prm.CmdOpQueryVportState))
	out := make([]byte, 16)
	err = ch.Exec(in, out)
	fmt.Println(ch.Name(), ch.MAC(), err, ch.GivenPages(), "pages with firmware")
	fmt.Println(ch.Close(), f.LeftMapped(), "mappings left")
	// Output:
	// vfio+model:0 02:00:00:00:00:01 <nil> 96 pages with firmware
	// <nil> 0 mappings left
}
