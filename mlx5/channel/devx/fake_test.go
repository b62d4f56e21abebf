package devx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/daqiri-go/daqiri/mlx5/channel"
	"github.com/daqiri-go/daqiri/mlx5/prm"
	"github.com/daqiri-go/daqiri/verbs"
	"github.com/daqiri-go/daqiri/verbs/mlx5dv"
)

// fakeKernel answers as the mlx5_ib driver would: general commands only through General
// (others EINVAL), firmware refusals as EREMOTEIO with the status in the output, object ids
// in the output's third dword. It logs every release.
type fakeKernel struct {
	log     []string
	nextID  uint32
	bfFails error
	closed  bool
	clock   mlx5dv.ClockInfo
}

func (k *fakeKernel) ClockInfo() (mlx5dv.ClockInfo, error) { return k.clock, nil }

func (k *fakeKernel) device() string { return "mlx5_9" }

func (k *fakeKernel) General(in, out []byte) error {
	switch prm.CmdOp(prm.CmdIn.Opcode.Get(in)) {
	case prm.CmdOpQueryHCACap, prm.CmdOpQueryNICVportContext:
		if prm.CmdIn.OpMod.Get(in) == 0x7f {
			prm.CmdOut.Status.Set(out, uint64(prm.StatusBadParamErr))
			prm.CmdOut.Syndrome.Set(out, 0x1234)
			return unix.EREMOTEIO
		}
		return nil
	}
	return unix.EINVAL
}

func (k *fakeKernel) CreateObj(in, out []byte) (kobj, error) {
	k.nextID++
	binary.BigEndian.PutUint32(out[8:], k.nextID)
	return &fakeKObj{k: k, name: fmt.Sprintf("%v %d", prm.CmdOp(prm.CmdIn.Opcode.Get(in)), k.nextID)}, nil
}

type fakeKObj struct {
	k    *fakeKernel
	name string
	gone bool
}

func (o *fakeKObj) Modify(in, out []byte) error { return nil }
func (o *fakeKObj) Query(in, out []byte) error  { return nil }
func (o *fakeKObj) Destroy() error {
	if o.gone {
		return verbs.ErrClosed
	}
	o.gone = true
	o.k.log = append(o.k.log, "destroy "+o.name)
	return nil
}

type fakeRes struct {
	k    *fakeKernel
	name string
	n    uint32
}

func (r fakeRes) id() uint32                            { return r.n }
func (r fakeRes) index() uint32                         { return r.n }
func (r fakeRes) Write64(uint32, uint64)                {}
func (r fakeRes) Write32(uint32, uint32)                {}
func (r fakeRes) Close() error                          { r.k.log = append(r.k.log, "release "+r.name); return nil }
func (r fakePP) index() uint16                          { return uint16(r.n) }
func (k *fakeKernel) QueryEQN(v uint32) (uint32, error) { return 20 + v, nil }

type fakePP struct{ fakeRes }

func (k *fakeKernel) RegUMEM(mem []byte, _ verbs.Access) (kumem, error) {
	return fakeRes{k, "umem", uint32(len(mem))}, nil
}
func (k *fakeKernel) RegUMEMDMABuf(fd int, _, n uint64, _ verbs.Access) (kumem, error) {
	return fakeRes{k, "dmabuf umem", uint32(n)}, nil
}
func (k *fakeKernel) AllocUAR(t mlx5dv.UARType) (kuar, error) {
	if t == mlx5dv.UARTypeBF && k.bfFails != nil {
		return nil, k.bfFails
	}
	return fakeRes{k, fmt.Sprintf("uar type %d", t), 5 + uint32(t)}, nil
}
func (k *fakeKernel) RootRule(table kobj) (func() error, error) {
	name := table.(*fakeKObj).name
	k.log = append(k.log, "root rule to "+name)
	return func() error { k.log = append(k.log, "root rule removed"); return nil }, nil
}
func (k *fakeKernel) AllocPP(ctx []byte, _ bool) (kpp, error) {
	return fakePP{fakeRes{k, "pp", 3}}, nil
}
func (k *fakeKernel) Close() error {
	k.closed = true
	k.log = append(k.log, "context closed")
	return nil
}

func in(op prm.CmdOp, opMod uint16, n int) []byte {
	b := make([]byte, n)
	prm.CmdIn.Opcode.Set(b, uint64(op))
	prm.CmdIn.OpMod.Set(b, uint64(opMod))
	return b
}

func TestExecErrors(t *testing.T) {
	c := newChannel(&fakeKernel{})
	out := make([]byte, 64)
	if err := c.Exec(in(prm.CmdOpQueryHCACap, 1, 16), out); err != nil {
		t.Fatal(err)
	}
	err := c.Exec(in(prm.CmdOpModifyNICVportContext, 0, 64), make([]byte, 16))
	if !errors.Is(err, channel.ErrUnsupported) || !errors.Is(err, unix.EINVAL) || !strings.Contains(err.Error(), "MODIFY_NIC_VPORT_CONTEXT") {
		t.Errorf("a non-general command = %v, want ErrUnsupported with EINVAL naming it", err)
	}
	err = c.Exec(in(prm.CmdOpQueryHCACap, 0x7f, 16), make([]byte, 16))
	var ce *channel.CommandError
	if !errors.As(err, &ce) || ce.Status != uint8(prm.StatusBadParamErr) || ce.Syndrome != 0x1234 || ce.OpMod != 0x7f || errors.Is(err, channel.ErrUnsupported) {
		t.Errorf("a firmware refusal = %v, want *CommandError BAD_PARAM 0x1234", err)
	}
}

// TestObjectsRootAndClose: ids from the output (a flow entry's from its input), the root
// rule only for NIC RX tables this channel made, UAR fallback, and Close releasing newest
// first, then the context.
func TestObjectsRootAndClose(t *testing.T) {
	k := &fakeKernel{bfFails: unix.EINVAL}
	c := newChannel(k)
	if c.Name() != "devx:mlx5_9" {
		t.Errorf("Name %q", c.Name())
	}
	out := make([]byte, 16)
	pd, err := c.Create(in(prm.CmdOpAllocPD, 0, 16), out)
	if err != nil || pd.ID() != 1 {
		t.Fatalf("ALLOC_PD: %v id %v", err, pd)
	}
	rxIn := in(prm.CmdOpCreateFlowTable, 0, 64)
	prm.CreateFlowTableIn.TableType.Set(rxIn, prm.FlowTableNICRX)
	rx, err := c.Create(rxIn, out)
	if err != nil {
		t.Fatal(err)
	}
	txIn := in(prm.CmdOpCreateFlowTable, 0, 64)
	prm.CreateFlowTableIn.TableType.Set(txIn, prm.FlowTableNICTX)
	tx, err := c.Create(txIn, out)
	if err != nil {
		t.Fatal(err)
	}
	fte := in(prm.CmdOpSetFlowTableEntry, 0, prm.SetFTEIn.FlowIndex.ByteOff()+8)
	idx := rand.Uint32()
	prm.SetFTEIn.FlowIndex.Set(fte, uint64(idx))
	e, err := c.Create(fte, out)
	if err != nil || e.ID() != idx {
		t.Fatalf("SET_FLOW_TABLE_ENTRY id %v, want the flow_index %d (%v)", e, idx, err)
	}
	if _, err := c.AttachRoot(tx.ID()); err == nil || !strings.Contains(err.Error(), "no NIC RX flow table") {
		t.Errorf("AttachRoot of a TX table = %v", err)
	}
	if _, err := c.AttachRoot(999); err == nil {
		t.Error("AttachRoot of an unknown table succeeded")
	}
	detach, err := c.AttachRoot(rx.ID())
	if err != nil {
		t.Fatal(err)
	}
	if err := detach(); err != nil {
		t.Fatal(err)
	}
	if err := detach(); err != nil {
		t.Errorf("second detach: %v", err)
	}
	if _, err := c.AttachRoot(rx.ID()); err != nil {
		t.Fatal(err)
	}
	uar, err := c.AllocUAR()
	if err != nil || uar.Index() != 6 {
		t.Fatalf("AllocUAR with BlueFlame refused = %v %v, want the non-cached page", uar, err)
	}
	if _, err := c.RegisterMemory(make([]byte, 4096), channel.AccessLocalWrite); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RegisterDMABuf(3, 0, 8192, channel.AccessLocalWrite); err != nil {
		t.Fatal(err)
	}
	if p, err := c.AllocPacing(make([]byte, 48), false); err != nil || p.Index() != 3 {
		t.Fatalf("AllocPacing %v %v", p, err)
	}
	if eqn, err := c.EQN(2); err != nil || eqn != 22 {
		t.Errorf("EQN(2) = %d, %v", eqn, err)
	}
	if _, err := c.EQN(-1); err == nil {
		t.Error("EQN(-1) accepted")
	}
	if err := pd.Destroy(); err != nil {
		t.Fatal(err)
	}
	if err := pd.Destroy(); !errors.Is(err, channel.ErrClosed) {
		t.Errorf("second Destroy = %v", err)
	}
	k.log = nil
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	want := []string{"release pp", "release dmabuf umem", "release umem", "release uar type 1", "root rule removed",
		"destroy SET_FLOW_TABLE_ENTRY 4", "destroy CREATE_FLOW_TABLE 3", "destroy CREATE_FLOW_TABLE 2", "context closed"}
	if strings.Join(k.log, "; ") != strings.Join(want, "; ") {
		t.Errorf("Close released\n%s\nwant\n%s", strings.Join(k.log, "; "), strings.Join(want, "; "))
	}
	if _, err := c.AllocUAR(); !errors.Is(err, channel.ErrClosed) {
		t.Errorf("AllocUAR after Close = %v", err)
	}
	if err := rx.Destroy(); !errors.Is(err, channel.ErrClosed) {
		t.Errorf("Destroy after Close = %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}

	// A device that is not mlx5 gets no non-cached retry.
	k2 := &fakeKernel{bfFails: fmt.Errorf("x: %w", channel.ErrNotMLX5)}
	if _, err := newChannel(k2).AllocUAR(); !errors.Is(err, channel.ErrNotMLX5) {
		t.Errorf("AllocUAR on a non-mlx5 device = %v", err)
	}
}
