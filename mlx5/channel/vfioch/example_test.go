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

// A ConnectX bound to vfio-pci, driven with no kernel driver at all: OpenPCI takes the
// function's IOMMU group and BAR, Open brings the firmware up over the command queue. It
// needs root (or the group's /dev/vfio node), an IOMMU, and the NIC bound to vfio-pci
// (CheckBound says how when it is not).
func ExampleOpenPCI() {
	const bdf = "0000:3b:00.0"
	if err := vfioch.CheckBound(bdf); err != nil {
		fmt.Println(err)
		return
	}
	f, err := vfioch.OpenPCI(bdf)
	if err != nil {
		fmt.Println(err)
		return
	}
	ch, err := vfioch.Open(f, vfioch.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ch.Close()
	fmt.Println(ch.Name(), ch.MAC())
}
