// Package channeltest is the conformance suite every mlx5 command channel passes: what the
// engine relies on whatever the transport (objects destroyed once through their handles,
// ErrClosed after Close, firmware refusals as *channel.CommandError, memory, doorbell pages
// and event queue numbers). Transports run it from their tests: the model transport always,
// DevX where a ConnectX is present.
package channeltest

import (
	"errors"
	"testing"

	"github.com/daqiri-go/daqiri/hugepage"
	"github.com/daqiri-go/daqiri/mlx5/channel"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// Run checks a fresh channel from open, which the suite closes.
func Run(t *testing.T, open func(t *testing.T) channel.Channel) {
	t.Run("Exec", func(t *testing.T) {
		c := open(t)
		defer c.Close()
		if c.Name() == "" {
			t.Error("empty Name")
		}
		out := make([]byte, 16+4096)
		in := prm.NewCmdIn(prm.CmdOpQueryHCACap, uint16(prm.CapTypeGeneral)<<1|prm.CapOpModCur, 16)
		if err := c.Exec(in, out); err != nil {
			t.Fatalf("QUERY_HCA_CAP(GENERAL, cur): %v", err)
		}
		if s := prm.CmdOut.Status.Get(out); s != 0 {
			t.Errorf("success with status %#x", s)
		}
		nonzero := false
		for _, b := range out[16:] {
			nonzero = nonzero || b != 0
		}
		if !nonzero {
			t.Error("QUERY_HCA_CAP returned an all-zero capability page")
		}
	})
	t.Run("Objects", func(t *testing.T) {
		c := open(t)
		defer c.Close()
		out := make([]byte, 16)
		a, err := c.Create(prm.NewCmdIn(prm.CmdOpAllocPD, 0, 16), out)
		if err != nil {
			t.Fatalf("ALLOC_PD: %v", err)
		}
		b, err := c.Create(prm.NewCmdIn(prm.CmdOpAllocPD, 0, 16), out)
		if err != nil {
			t.Fatalf("second ALLOC_PD: %v", err)
		}
		if a.ID() == b.ID() {
			t.Errorf("two PDs numbered %d", a.ID())
		}
		if uint32(prm.AllocPDOut.PD.Get(out)) != b.ID() {
			t.Errorf("ID %d, but the output says %d", b.ID(), prm.AllocPDOut.PD.Get(out))
		}
		if err := a.Destroy(); err != nil {
			t.Fatalf("Destroy: %v", err)
		}
		if err := a.Destroy(); !errors.Is(err, channel.ErrClosed) {
			t.Errorf("second Destroy = %v, want ErrClosed", err)
		}
		// b is left for Close.
	})
	t.Run("Refusal", func(t *testing.T) {
		c := open(t)
		defer c.Close()
		// A CQ of 2^31 entries is beyond every device's log_max_cq_sz.
		base := prm.CreateCQIn.CQContext.Off
		in := prm.NewCmdIn(prm.CmdOpCreateCQ, 0, prm.CreateCQIn.PAS.ByteOff()+8)
		prm.CQC.LogCQSize.At(base).Set(in, 31)
		_, err := c.Create(in, make([]byte, 16))
		var ce *channel.CommandError
		if !errors.As(err, &ce) || ce.Status == 0 || ce.Name != "CREATE_CQ" || ce.Opcode != uint16(prm.CmdOpCreateCQ) {
			t.Errorf("CREATE_CQ of 2^31 entries = %v, want a *channel.CommandError with a status", err)
		}
	})
	t.Run("MemoryUARAndEQN", func(t *testing.T) {
		c := open(t)
		defer c.Close()
		mem, err := hugepage.Map(1<<16, false)
		if err != nil {
			t.Fatal(err)
		}
		defer mem.Close()
		u, err := c.RegisterMemory(mem.Bytes(), channel.AccessLocalWrite)
		if err != nil {
			t.Fatalf("RegisterMemory: %v", err)
		}
		if err := u.Release(); err != nil {
			t.Errorf("UMEM Release: %v", err)
		}
		uar, err := c.AllocUAR()
		if err != nil {
			t.Fatalf("AllocUAR: %v", err)
		}
		uar2, err := c.AllocUAR()
		if err != nil {
			t.Fatalf("second AllocUAR: %v", err)
		}
		if uar.Index() == uar2.Index() {
			t.Errorf("two UARs with index %d", uar.Index())
		}
		if err := uar.Release(); err != nil {
			t.Errorf("UAR Release: %v", err)
		}
		if _, err := c.EQN(0); err != nil {
			t.Errorf("EQN(0): %v", err)
		}
		// mem must outlive the registration left to Close: register again and keep it.
		if _, err := c.RegisterMemory(mem.Bytes(), channel.AccessLocalWrite); err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatalf("Close with a UMEM and a UAR open: %v", err)
		}
	})
	t.Run("Closed", func(t *testing.T) {
		c := open(t)
		if err := c.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		// The contract leaves a second Close open: nil or ErrClosed, nothing else.
		if err := c.Close(); err != nil && !errors.Is(err, channel.ErrClosed) {
			t.Errorf("second Close: %v", err)
		}
		out := make([]byte, 16)
		if err := c.Exec(prm.NewCmdIn(prm.CmdOpQueryHCACap, 0, 16), make([]byte, 16+4096)); !errors.Is(err, channel.ErrClosed) {
			t.Errorf("Exec after Close = %v", err)
		}
		if _, err := c.Create(prm.NewCmdIn(prm.CmdOpAllocPD, 0, 16), out); !errors.Is(err, channel.ErrClosed) {
			t.Errorf("Create after Close = %v", err)
		}
	})
}
