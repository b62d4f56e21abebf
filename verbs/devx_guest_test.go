package verbs

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestGuestDevXOnRxe opens Soft-RoCE for DevX in the VM: the generic parts (the user
// context, queries, a PD and an MR, a CQ whose ring rxe maps through the device file) run
// for real; an mlx5 page offset is refused by the same mmap, and every
// mlx5-only method is asked of the kernel, which refuses it; each error wraps ErrNotMLX5
// (channel.ErrNotMLX5), names the method and keeps the kernel's errno.
func TestGuestDevXOnRxe(t *testing.T) {
	checkNoLeak(t)
	requireGuest(t)
	d, err := OpenDevX(guestDev)
	if err != nil {
		t.Fatalf("OpenDevX(%s): %v", guestDev, err)
	}
	defer func() {
		if err := d.Close(); err != nil {
			t.Errorf("DevX.Close: %v", err)
		}
	}()
	if d.IsMLX5() || d.Info() != (MLX5Info{}) {
		t.Fatalf("rxe reported as mlx5: %v %+v", d.IsMLX5(), d.Info())
	}
	c := d.Context()
	if da, err := c.QueryDevice(); err != nil || da.PhysPortCnt != 1 {
		t.Fatalf("QueryDevice through the DevX context: %+v %v", da, err)
	}
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatalf("AllocPD through the DevX context: %v", err)
	}
	buf := offHeap(t, 8192)
	mr, err := pd.RegMR(buf, AccessLocalWrite)
	if err != nil || mr.LKey == 0 {
		t.Fatalf("RegMR through the DevX context: %v", err)
	}
	// rxe's own mmap (its CQ ring, mapped by the rxe provider) works through the DevX
	// context: the device file's mmap runs for real where the driver offers pages.
	cq, err := c.CreateCQ(16, nil, 0)
	if err != nil {
		t.Fatalf("CreateCQ (rxe's mmapped ring) through the DevX context: %v", err)
	}
	defer func() {
		if err := cq.Close(); err != nil {
			t.Errorf("CQ.Close: %v", err)
		}
	}()
	memfd, err := unixMemfd("devx-dmabuf")
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(memfd)

	in, out := make([]byte, 64), make([]byte, 64)
	objIn := make([]byte, 64)
	calls := []struct {
		method string
		run    func() error
	}{
		{"DEVX_OTHER", func() error { return d.General(in, out) }},
		{"DEVX_OBJ_CREATE", func() error { _, err := d.CreateObj(objIn, out); return err }},
		{"DEVX_OBJ_MODIFY", func() error { return (&DevXObj{d: d, handle: 1}).Modify(in, out) }},
		{"DEVX_OBJ_QUERY", func() error { return (&DevXObj{d: d, handle: 1}).Query(in, out) }},
		{"DEVX_OBJ_DESTROY", func() error { return (&DevXObj{d: d, handle: 1}).Destroy() }},
		{"DEVX_UMEM_REG", func() error { _, err := d.RegUMEM(buf, AccessLocalWrite); return err }},
		{"DEVX_UMEM_REG", func() error { _, err := d.RegUMEMDMABuf(memfd, 0, 4096, AccessLocalWrite); return err }},
		{"DEVX_UMEM_DEREG", func() error { return (&UMEM{d: d, handle: 1}).Close() }},
		{"UAR_OBJ_ALLOC", func() error { _, err := d.AllocUAR(UARTypeBF); return err }},
		{"DEVX_QUERY_EQN", func() error { _, err := d.QueryEQN(0); return err }},
		{"DEVX_QUERY_UAR", func() error { _, err := d.QueryUAR(0); return err }},
		{"PD_QUERY", func() error { _, err := d.PDN(pd); return err }},
		{"FLOW_MATCHER_CREATE", func() error { _, err := d.CreateFlowMatcher(MatcherSpec{}); return err }},
		{"CREATE_FLOW", func() error { _, err := (&FlowMatcher{d: d, handle: 1}).CreateFlow(FlowSpec{Drop: true}); return err }},
		{"FLOW_ACTION_CREATE_PACKET_REFORMAT", func() error {
			_, err := d.CreatePacketReformat(ReformatL2ToL2Tunnel, FlowTableNICTX, make([]byte, 50))
			return err
		}},
		{"PP_OBJ_ALLOC", func() error { _, err := d.AllocPP(make([]byte, 48), false); return err }},
		{"mmap of mlx5 page", func() error { _, err := d.ClockInfo(); return err }},
	}
	for _, k := range calls {
		err := k.run()
		var kerr *Error
		switch {
		case err == nil:
			t.Errorf("%s succeeded on rxe", k.method)
		case !errors.Is(err, ErrNotMLX5) || !strings.Contains(err.Error(), k.method) || !errors.As(err, &kerr):
			t.Errorf("%s on rxe = %v; want ErrNotMLX5 naming the method with the kernel's errno", k.method, err)
		default:
			t.Logf("%s: %v", k.method, err)
		}
	}
	// The generic objects still work after the refusals, and close cleanly.
	if err := mr.Close(); err != nil {
		t.Error(err)
	}
	if err := pd.Close(); err != nil {
		t.Error(err)
	}
}

// TestGuestDevXNoDevice: a device that does not exist is ErrNoDevice, not ErrNotMLX5.
func TestGuestDevXNoDevice(t *testing.T) {
	requireGuest(t)
	if _, err := OpenDevX("mlx5_nonexistent"); !errors.Is(err, ErrNoDevice) {
		t.Errorf("OpenDevX of a missing device = %v, want ErrNoDevice", err)
	}
}
