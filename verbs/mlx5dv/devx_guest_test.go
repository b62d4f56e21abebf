package mlx5dv

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/daqiri-go/daqiri/integration/vm/guest"
	"github.com/daqiri-go/daqiri/internal/testutil"
	"github.com/daqiri-go/daqiri/verbs"
)

// The tests in this file need a kernel with rdma_rxe and the Soft-RoCE device the VM harness
// (integration/vm) creates; they run inside its guest and skip elsewhere.

// guestDevice is the harness's rxe device.
func guestDevice(t *testing.T) string {
	t.Helper()
	dev, _ := guest.RxeAddr(t)
	return dev
}

// offHeap maps n bytes of anonymous memory outside the Go heap, as MRs and UMEMs require.
func offHeap(t *testing.T, n int) []byte {
	t.Helper()
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatalf("mmap %d bytes: %v", n, err)
	}
	t.Cleanup(func() { unix.Munmap(b) })
	return b
}

// checkNoLeak records the kernel's object counts of dev and, at cleanup, checks they came
// back (cleanups run in reverse, so register it first).
func checkNoLeak(t *testing.T, dev string) {
	t.Helper()
	testutil.CountsUnchanged(t, "kernel", func(t testing.TB) map[string]uint64 {
		t.Helper()
		all, err := verbs.ResourceSummary()
		if err != nil {
			t.Fatalf("ResourceSummary: %v", err)
		}
		m, ok := all[dev]
		if !ok {
			t.Fatalf("ResourceSummary has no %s: %v", dev, all)
		}
		return m
	})
}

// TestGuestDevXOnRxe opens Soft-RoCE for DevX in the VM: the generic parts (the user
// context, queries, a PD and an MR, a CQ whose ring rxe maps through the device file) run
// for real; an mlx5 page offset is refused by the same mmap, and every
// mlx5-only method is asked of the kernel, which refuses it; each error wraps ErrNotMLX5
// (channel.ErrNotMLX5), names the method and keeps the kernel's errno.
func TestGuestDevXOnRxe(t *testing.T) {
	guestDev := guestDevice(t)
	checkNoLeak(t, guestDev)
	d, err := Open(guestDev)
	if err != nil {
		t.Fatalf("Open(%s): %v", guestDev, err)
	}
	defer func() {
		if err := d.Close(); err != nil {
			t.Errorf("DevX.Close: %v", err)
		}
	}()
	if d.IsMLX5() || d.Info() != (Info{}) {
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
	mr, err := pd.RegMR(buf, verbs.AccessLocalWrite)
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
	memfd, err := unix.MemfdCreate("devx-dmabuf", unix.MFD_CLOEXEC)
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
		{"DEVX_UMEM_REG", func() error { _, err := d.RegUMEM(buf, verbs.AccessLocalWrite); return err }},
		{"DEVX_UMEM_REG", func() error { _, err := d.RegUMEMDMABuf(memfd, 0, 4096, verbs.AccessLocalWrite); return err }},
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
		var kerr *verbs.Error
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
	guestDevice(t)
	if _, err := Open("mlx5_nonexistent"); !errors.Is(err, verbs.ErrNoDevice) {
		t.Errorf("Open of a missing device = %v, want ErrNoDevice", err)
	}
}
