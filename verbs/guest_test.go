package verbs

import (
	"errors"
	"math/rand/v2"
	"net/netip"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/daqiri-go/daqiri/integration/vm/guest"
	"github.com/daqiri-go/daqiri/internal/testutil"
)

// The tests in this file need a kernel with rdma_rxe and the Soft-RoCE
// device the VM harness (integration/vm) creates on a dummy netdev; they run
// inside its guest and skip elsewhere.

const guestPort = 1

// guestDev and guestAddr are the harness's rxe device and its netdev's IPv4
// address, set by requireGuest.
var (
	guestDev  string
	guestAddr netip.Addr
)

func requireGuest(t testing.TB) {
	t.Helper()
	guestDev, guestAddr = guest.RxeAddr(t)
}

// offHeap maps n bytes of anonymous memory outside the Go heap, as MRs
// require.
func offHeap(t *testing.T, n int) []byte {
	t.Helper()
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatalf("mmap %d bytes: %v", n, err)
	}
	t.Cleanup(func() { unix.Munmap(b) })
	return b
}

func openGuest(t *testing.T) *Context {
	t.Helper()
	requireGuest(t)
	c, err := Open(guestDev, nil)
	if err != nil {
		t.Fatalf("Open(%s): %v", guestDev, err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Context.Close: %v", err)
		}
	})
	return c
}

// guestGIDIndex finds the RoCE v2 GID holding the guest's address.
func guestGIDIndex(t *testing.T, c *Context) uint8 {
	t.Helper()
	e, err := c.FindGID(guestPort, guestAddr, GIDTypeRoCEv2)
	if err != nil {
		t.Fatal(err)
	}
	return uint8(e.Index)
}

func resources(t testing.TB) map[string]uint64 {
	t.Helper()
	requireGuest(t)
	all, err := ResourceSummary()
	if err != nil {
		t.Fatalf("ResourceSummary: %v", err)
	}
	m, ok := all[guestDev]
	if !ok {
		t.Fatalf("ResourceSummary has no %s: %v", guestDev, all)
	}
	return m
}

// checkNoLeak records the kernel's object counts and, at cleanup, checks they came back
// (cleanups run in reverse, so register it first).
func checkNoLeak(t *testing.T) {
	t.Helper()
	testutil.CountsUnchanged(t, "kernel", resources)
}

func TestGuestDevices(t *testing.T) {
	requireGuest(t)
	devs, err := Devices()
	if err != nil {
		t.Fatal(err)
	}
	var d *DeviceInfo
	for i := range devs {
		if devs[i].Name == guestDev {
			d = &devs[i]
		}
	}
	if d == nil {
		t.Fatalf("%s not among %+v", guestDev, devs)
	}
	if d.Driver != "rxe" || d.UverbsDev == "" || d.Netdev == "" || len(d.Ports) != 1 || !d.Ports[0].Active() {
		t.Fatalf("implausible %s: %+v", guestDev, *d)
	}
	found := false
	for _, g := range d.Ports[0].GIDs {
		found = found || (g.GID.Addr() == guestAddr && g.Type == "RoCE v2")
	}
	if !found {
		t.Fatalf("sysfs GID table of %s lacks %v as RoCE v2: %+v", guestDev, guestAddr, d.Ports[0].GIDs)
	}
}

func TestGuestQueries(t *testing.T) {
	c := openGuest(t)
	if c.NumCompVectors() < 1 {
		t.Errorf("NumCompVectors = %d", c.NumCompVectors())
	}
	da, err := c.QueryDevice()
	if err != nil {
		t.Fatal(err)
	}
	if da.PhysPortCnt != 1 || da.MaxQP == 0 || da.MaxCQE == 0 || da.MaxSGE == 0 || da.MaxMR == 0 || da.MaxPD == 0 || da.MaxQPWR == 0 {
		t.Errorf("implausible device attributes: %+v", da)
	}
	pa, err := c.QueryPort(guestPort)
	if err != nil {
		t.Fatal(err)
	}
	if pa.State != PortActive || pa.LinkLayer != LinkLayerEthernet || pa.GIDTblLen == 0 || pa.ActiveMTU.Bytes() < 256 || pa.MaxMTU < pa.ActiveMTU {
		t.Errorf("implausible port attributes: %+v", pa)
	}
	idx := guestGIDIndex(t, c)
	e, err := c.QueryGID(guestPort, uint32(idx))
	if err != nil {
		t.Fatal(err)
	}
	if e.GID != GIDFromAddr(guestAddr) || e.Type != GIDTypeRoCEv2 || e.NetdevIfindex == 0 {
		t.Errorf("QueryGID(%d) = %+v", idx, e)
	}
	// An index past the table is the kernel's error, typed.
	if _, err := c.QueryGID(guestPort, pa.GIDTblLen+5); err == nil {
		t.Error("QueryGID past the table succeeded")
	} else if _, ok := err.(*Error); !ok {
		t.Errorf("QueryGID past the table: %T %v, want *Error", err, err)
	}
	if _, err := c.QueryPort(9); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("QueryPort(9) = %v, want EINVAL", err)
	}
}

func TestGuestPDAndMR(t *testing.T) {
	checkNoLeak(t)
	base := resources(t)
	c := openGuest(t)
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	size := 4096 * (1 + rand.IntN(16))
	buf := offHeap(t, size)
	off := rand.IntN(100)
	mr, err := pd.RegMR(buf[off:], AccessLocalWrite|AccessRemoteWrite|AccessRemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	if mr.LKey == 0 || mr.RKey == 0 || mr.Length != uint64(size-off) {
		t.Errorf("MR keys %#x/%#x length %d", mr.LKey, mr.RKey, mr.Length)
	}
	mr2, err := pd.RegMR(buf, AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	if mr2.LKey == mr.LKey {
		t.Errorf("two MRs share lkey %#x", mr.LKey)
	}
	// The kernel counts what this test holds: one more context, PD and
	// two MRs than before.
	if now := resources(t); now["ctx"] != base["ctx"]+1 || now["pd"] != base["pd"]+1 || now["mr"] != base["mr"]+2 {
		t.Errorf("kernel counts %v while holding ctx+1 pd+1 mr+2 over %v", now, base)
	}
	// A PD with MRs is busy.
	if err := pd.Close(); !errors.Is(err, ErrBusy) || !errors.Is(err, syscall.EBUSY) {
		t.Errorf("PD.Close with live MRs = %v, want EBUSY", err)
	}
	for _, m := range []*MR{mr, mr2} {
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := pd.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := pd.RegMR(buf, AccessLocalWrite); !errors.Is(err, ErrClosed) {
		t.Errorf("RegMR on a closed PD = %v, want ErrClosed", err)
	}
}

func unixMemfd(name string) (int, error) { return unix.MemfdCreate(name, unix.MFD_CLOEXEC) }
