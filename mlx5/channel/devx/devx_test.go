package devx

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/daqiri-go/daqiri/integration/vm/guest"
	"github.com/daqiri-go/daqiri/mlx5/channel"
	"github.com/daqiri-go/daqiri/mlx5/prm"
	"github.com/daqiri-go/daqiri/verbs"
	"github.com/daqiri-go/daqiri/verbs/mlx5dv"
)

// TestCommandErrors: a command the firmware failed (EREMOTEIO with the output copied out)
// becomes a *channel.CommandError with the output's status and syndrome and the input's
// opcode and op_mod; other kernel errors keep their errno and name the command.
func TestCommandErrors(t *testing.T) {
	c := &Channel{name: "devx:test"}
	in, out := make([]byte, 16), make([]byte, 16)
	prm.CmdIn.Opcode.Set(in, uint64(prm.CmdOpQueryHCACap))
	prm.CmdIn.OpMod.Set(in, 3)
	syn := rand.Uint32()
	prm.CmdOut.Status.Set(out, uint64(prm.StatusBadParamErr))
	prm.CmdOut.Syndrome.Set(out, uint64(syn))
	err := c.cmdErr(in, out, unix.EREMOTEIO)
	var ce *channel.CommandError
	if !errors.As(err, &ce) || ce.Opcode != uint16(prm.CmdOpQueryHCACap) || ce.OpMod != 3 || ce.Status != uint8(prm.StatusBadParamErr) || ce.Syndrome != syn || ce.Name != "QUERY_HCA_CAP" {
		t.Fatalf("firmware failure = %#v", err)
	}
	if !strings.Contains(err.Error(), "QUERY_HCA_CAP") || !strings.Contains(err.Error(), "BAD_PARAM") {
		t.Errorf("message %q lacks the command or the status", err)
	}
	ok := make([]byte, 16)
	if err := c.cmdErr(in, ok, nil); err != nil {
		t.Errorf("status 0 and no errno = %v", err)
	}
	err = c.cmdErr(in, ok, unix.EINVAL)
	if !errors.Is(err, unix.EINVAL) || errors.As(err, &ce) || !strings.Contains(err.Error(), "QUERY_HCA_CAP") {
		t.Errorf("kernel refusal = %v, want EINVAL naming the command", err)
	}
	// A short input or output names what it can.
	if err := c.cmdErr(nil, nil, unix.EINVAL); !errors.Is(err, unix.EINVAL) {
		t.Errorf("short buffers: %v", err)
	}
}

func TestOpenMissingDevice(t *testing.T) {
	if _, err := Open("mlx5_does_not_exist"); !errors.Is(err, verbs.ErrNoDevice) {
		t.Errorf("Open of a missing device = %v, want verbs.ErrNoDevice", err)
	}
}

// TestGuestChannelOnRxe runs the channel on Soft-RoCE in the VM (integration/vm): Open
// refuses it as not mlx5, and a channel made anyway over its DevX context fails every call
// with an error wrapping channel.ErrNotMLX5 that names the kernel method; Close still
// closes the context.
func TestGuestChannelOnRxe(t *testing.T) {
	dev, netdev, _ := guest.Rxe(t)
	for _, a := range []string{dev, netdev} {
		if _, err := Open(a); !errors.Is(err, channel.ErrNotMLX5) || !strings.Contains(err.Error(), "rxe") {
			t.Errorf("Open(%s) = %v, want ErrNotMLX5 naming the driver", a, err)
		}
	}
	d, err := mlx5dv.Open(dev)
	if err != nil {
		t.Fatal(err)
	}
	c := New(d)
	if c.Name() != "devx:"+dev {
		t.Errorf("Name = %q", c.Name())
	}
	mem, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	in, out := make([]byte, 64), make([]byte, 64)
	prm.CmdIn.Opcode.Set(in, uint64(prm.CmdOpQueryHCACap))
	calls := []struct {
		method string
		run    func() error
	}{
		{"DEVX_OTHER", func() error { return c.Exec(in, out) }},
		{"DEVX_OBJ_CREATE", func() error { _, err := c.Create(in, out); return err }},
		{"DEVX_UMEM_REG", func() error { _, err := c.RegisterMemory(mem, channel.AccessLocalWrite); return err }},
		{"DEVX_UMEM_REG", func() error {
			fd, err := unix.MemfdCreate("dmabuf", unix.MFD_CLOEXEC)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			_, err = c.RegisterDMABuf(fd, 0, 4096, channel.AccessLocalWrite)
			return err
		}},
		{"PP_OBJ_ALLOC", func() error { _, err := c.AllocPacing(make([]byte, 48), false); return err }},
		{"UAR_OBJ_ALLOC", func() error { _, err := c.AllocUAR(); return err }},
		{"DEVX_QUERY_EQN", func() error { _, err := c.EQN(0); return err }},
	}
	for _, k := range calls {
		err := k.run()
		if !errors.Is(err, channel.ErrNotMLX5) || !strings.Contains(err.Error(), k.method) {
			t.Errorf("%s on rxe = %v, want channel.ErrNotMLX5 naming it", k.method, err)
		} else {
			t.Logf("%v", err)
		}
	}
	if _, err := c.AttachRoot(1); err == nil || !strings.Contains(err.Error(), "no NIC RX flow table 1") {
		t.Errorf("AttachRoot of an unknown table = %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := c.Exec(in, out); !errors.Is(err, channel.ErrClosed) {
		t.Errorf("Exec after Close = %v, want ErrClosed", err)
	}
}
