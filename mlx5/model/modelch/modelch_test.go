package modelch_test

import (
	"errors"
	"testing"

	"github.com/daqiri-go/daqiri/hugepage"
	"github.com/daqiri-go/daqiri/mlx5/channel"
	"github.com/daqiri-go/daqiri/mlx5/model"
	"github.com/daqiri-go/daqiri/mlx5/model/modelch"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// TestObjectsLifeCycle opens a model function, creates a PD, a transport domain, registers
// memory and builds a CQ over it; destroys through the handles (twice is ErrClosed), a
// refused command is a *channel.CommandError with the PRM status, and Close releases what is
// left (the model then has no objects: a fresh PD number is reused).
func TestObjectsLifeCycle(t *testing.T) {
	dev := model.New(model.Config{})
	c, err := modelch.Open(dev, "model:0")
	if err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 16)
	pd, err := c.Create(prm.NewCmdIn(prm.CmdOpAllocPD, 0, 16), out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(prm.NewCmdIn(prm.CmdOpAllocTransportDomain, 0, 16), out); err != nil {
		t.Fatal(err)
	}
	mem, err := hugepage.Map(1<<16, false)
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	um, err := c.RegisterMemory(mem.Bytes(), channel.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	uar, err := c.AllocUAR()
	if err != nil {
		t.Fatal(err)
	}
	eqn, _ := c.EQN(0)
	base := prm.CreateCQIn.CQContext.Off
	in := prm.NewCmdIn(prm.CmdOpCreateCQ, 0, prm.CreateCQIn.PAS.ByteOff()+8)
	prm.CQC.LogCQSize.At(base).Set(in, 6)
	prm.CQC.UARPage.At(base).Set(in, uint64(uar.Index()))
	prm.CQC.CEQNOrApuElement.At(base).Set(in, uint64(eqn))
	prm.CQC.DbrAddr.At(base).Set(in, uint64(mem.Addr())+0x8000)
	prm.CreateCQIn.PAS.Set(in, uint64(mem.Addr()))
	cq, err := c.Create(in, out)
	if err != nil {
		t.Fatal(err)
	}
	if cq.ID() == 0 {
		t.Error("CQ number 0")
	}
	if err := cq.Destroy(); err != nil {
		t.Fatal(err)
	}
	if err := cq.Destroy(); !errors.Is(err, channel.ErrClosed) {
		t.Fatalf("second destroy: %v", err)
	}
	// A CQ over unregistered memory is refused with a status.
	prm.CreateCQIn.PAS.Set(in, 0x1000)
	_, err = c.Create(in, out)
	var ce *channel.CommandError
	if !errors.As(err, &ce) || ce.Status != uint8(prm.StatusBadParamErr) || ce.Name != "CREATE_CQ" {
		t.Fatalf("CQ over unmapped memory: %v", err)
	}
	if _, err := c.Create(prm.NewCmdIn(prm.CmdOpQueryHCACap, 0, 16), out); !errors.Is(err, channel.ErrUnsupported) {
		t.Fatalf("Create of a query: %v", err)
	}
	_ = pd
	_ = um
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Exec(prm.NewCmdIn(prm.CmdOpAllocPD, 0, 16), out); !errors.Is(err, channel.ErrClosed) {
		t.Fatalf("Exec after Close: %v", err)
	}
	if dev.DMA().Len() != 0 {
		t.Fatalf("%d DMA mappings left after Close", dev.DMA().Len())
	}
}
