package verbs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/daqiri-go/daqiri/verbs/internal/dv"
	"github.com/daqiri-go/daqiri/verbs/internal/uapi"
	"github.com/daqiri-go/daqiri/verbs/provider"
	"github.com/daqiri-go/daqiri/verbs/rxe"
)

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fakeSysfs builds the sysfs entries an rxe device and a PCI mlx5 device
// show (file names from drivers/infiniband/core/sysfs.c and rxe_verbs.c).
func fakeSysfs(t *testing.T) (string, GID) {
	root := t.TempDir()
	ib := filepath.Join(root, "sys/class/infiniband")
	rxe := filepath.Join(ib, "rxe0")
	write(t, filepath.Join(rxe, "node_type"), "1: CA")
	write(t, filepath.Join(rxe, "node_guid"), "74de:4bff:fed1:2104")
	write(t, filepath.Join(rxe, "parent"), "d0")
	p := filepath.Join(rxe, "ports/1")
	write(t, filepath.Join(p, "state"), "4: ACTIVE")
	write(t, filepath.Join(p, "phys_state"), "5: LinkUp")
	write(t, filepath.Join(p, "link_layer"), "Ethernet")
	addr := netip.AddrFrom4([4]byte{10, byte(rand.IntN(256)), byte(rand.IntN(256)), 1})
	v4 := GIDFromAddr(addr)
	write(t, filepath.Join(p, "gids/0"), "fe80:0000:0000:0000:74de:4bff:fed1:2104")
	write(t, filepath.Join(p, "gids/1"), v4.String())
	write(t, filepath.Join(p, "gids/2"), "0000:0000:0000:0000:0000:0000:0000:0000")
	for _, i := range []string{"0", "1"} {
		write(t, filepath.Join(p, "gid_attrs/types", i), "RoCE v2")
		write(t, filepath.Join(p, "gid_attrs/ndevs", i), "d0")
	}
	uv := filepath.Join(root, "sys/class/infiniband_verbs")
	write(t, filepath.Join(uv, "abi_version"), "6")
	write(t, filepath.Join(uv, "uverbs3/ibdev"), "rxe0")
	write(t, filepath.Join(uv, "uverbs3/abi_version"), "2")

	mlx := filepath.Join(ib, "mlx5_0")
	write(t, filepath.Join(mlx, "node_type"), "1: CA")
	write(t, filepath.Join(mlx, "ports/1/state"), "1: DOWN")
	drv := filepath.Join(root, "sys/bus/pci/drivers/mlx5_core")
	if err := os.MkdirAll(drv, 0o755); err != nil {
		t.Fatal(err)
	}
	// device is a link to the PCI function, as in sysfs.
	fn := filepath.Join(root, "sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0")
	if err := os.MkdirAll(filepath.Join(fn, "net/enp59s0f0np0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(fn, filepath.Join(mlx, "device")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(drv, filepath.Join(mlx, "device/driver")); err != nil {
		t.Fatal(err)
	}
	return root, v4
}

func TestDevicesFromSysfs(t *testing.T) {
	root, v4 := fakeSysfs(t)
	devs, err := DevicesIn(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 2 || devs[0].Name != "mlx5_0" || devs[1].Name != "rxe0" {
		t.Fatalf("devices %+v", devs)
	}
	m, r := devs[0], devs[1]
	if m.Driver != "mlx5" || m.UverbsDev != "" || len(m.Ports) != 1 || m.Ports[0].Active() {
		t.Errorf("mlx5_0 = %+v", m)
	}
	if r.Driver != "rxe" || r.Netdev != "d0" || r.UverbsDev != filepath.Join(root, "dev/infiniband/uverbs3") || r.ABIVersion != 2 {
		t.Errorf("rxe0 = %+v", r)
	}
	if len(r.Ports) != 1 || !r.Ports[0].Active() || r.Ports[0].LinkLayer != "Ethernet" {
		t.Fatalf("rxe0 ports %+v", r.Ports)
	}
	g := r.Ports[0].GIDs
	if len(g) != 2 || g[1].Index != 1 || g[1].GID != v4 || g[1].Type != "RoCE v2" || g[1].Netdev != "d0" {
		t.Fatalf("rxe0 GIDs %+v (the zero entry must be skipped)", g)
	}
	if m.PCI != "0000:3b:00.0" || len(m.Netdevs) != 1 || m.Netdevs[0] != "enp59s0f0np0" || r.PCI != "" {
		t.Errorf("PCI/netdevs: mlx5_0 %q %v, rxe0 %q", m.PCI, m.Netdevs, r.PCI)
	}
	for addr, want := range map[string]string{"mlx5_0": "mlx5_0", "0000:3b:00.0": "mlx5_0", "3b:00.0": "mlx5_0", "3B:00.0": "mlx5_0",
		"enp59s0f0np0": "mlx5_0", "rxe0": "rxe0", "d0": "rxe0"} {
		if d, err := lookupAddressIn(root, addr); err != nil || d.Name != want {
			t.Errorf("lookupAddress(%q) = %q, %v; want %s", addr, d.Name, err, want)
		}
	}
	for _, addr := range []string{"", "3b:00.1", "0000:3b:00", "eth9", "model:0"} {
		if d, err := lookupAddressIn(root, addr); !errors.Is(err, ErrNoDevice) {
			t.Errorf("lookupAddress(%q) = %q, %v; want ErrNoDevice", addr, d.Name, err)
		}
	}
	if d, err := lookupDeviceIn(root, ""); err != nil || d.Name != "rxe0" {
		t.Errorf(`lookup "" = %v, %v; want rxe0, the first with a verbs device`, d.Name, err)
	}
	if _, err := lookupDeviceIn(root, "nope9"); !errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), "nope9") {
		t.Errorf("lookup of a missing device = %v", err)
	}
	if devs, err := DevicesIn(t.TempDir()); err != nil || devs != nil {
		t.Errorf("empty tree: %v, %v", devs, err)
	}
	if _, err := lookupDeviceIn(t.TempDir(), ""); !errors.Is(err, ErrNoDevice) {
		t.Errorf("lookup in an empty tree = %v", err)
	}
	// mlx5 has no verbs device here and no built-in provider.
	if _, err := OpenDevice(m, nil); !errors.Is(err, ErrNoProvider) {
		t.Errorf("OpenDevice(mlx5 without provider) = %v, want ErrNoProvider", err)
	}
	// rxe's character device does not exist in the fake tree.
	if _, err := OpenDevice(r, nil); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("OpenDevice with a missing char device = %v, want ENOENT", err)
	}
}

func TestGIDs(t *testing.T) {
	for range 100 {
		var g GID
		for i := range g {
			g[i] = byte(rand.Uint32())
		}
		p, err := ParseGID(g.String())
		if err != nil || p != g {
			t.Fatalf("ParseGID(%s) = %v, %v", g, p, err)
		}
		if a := g.Addr(); GIDFromAddr(a) != g && !a.Is4() {
			t.Fatalf("Addr round trip of %s", g)
		}
	}
	a := netip.AddrFrom4([4]byte{10, 7, 0, 1})
	g := GIDFromAddr(a)
	if g.String() != "0000:0000:0000:0000:0000:ffff:0a07:0001" || g.Addr() != a {
		t.Fatalf("GID of %v = %s (%v)", a, g, g.Addr())
	}
	if p, err := ParseGID("10.7.0.1"); err != nil || p != g {
		t.Fatalf("ParseGID(10.7.0.1) = %s, %v", p, err)
	}
	for _, bad := range []string{"", "zz", "0000:0000:0000:0000:0000:ffff:0a07", "1:2:3:4:5:6:7:8:9"} {
		if _, err := ParseGID(bad); err == nil {
			t.Errorf("ParseGID(%q) succeeded", bad)
		}
	}
	if !(GID{}).IsZero() || g.IsZero() {
		t.Error("IsZero")
	}
}

func TestErrorTyping(t *testing.T) {
	c := &Context{dev: DeviceInfo{Name: "rxe9"}}
	e := c.wrap("ioctl QP_CREATE", syscall.EOPNOTSUPP)
	var ve *Error
	if !errors.As(e, &ve) || ve.Errno != syscall.EOPNOTSUPP || !errors.Is(e, ErrNotSupported) || !errors.Is(e, unix.EOPNOTSUPP) || errors.Is(e, ErrBusy) {
		t.Fatalf("EOPNOTSUPP wrapped as %#v", e)
	}
	if !strings.Contains(e.Error(), "QP_CREATE") || !strings.Contains(e.Error(), "rxe9") || !strings.Contains(e.Error(), "EOPNOTSUPP") {
		t.Errorf("message %q lacks the op, device or errno", e)
	}
	if e := c.wrap("x", syscall.EPROTONOSUPPORT); !errors.Is(e, ErrNotSupported) {
		t.Error("EPROTONOSUPPORT is not ErrNotSupported")
	}
	if e := c.wrap("x", syscall.EBUSY); !errors.Is(e, ErrBusy) || errors.Is(e, ErrNotSupported) {
		t.Error("EBUSY is not ErrBusy")
	}
	if e := c.wrap("x", syscall.EINVAL); errors.Is(e, ErrNotSupported) || errors.Is(e, ErrBusy) || !errors.Is(e, syscall.EINVAL) {
		t.Error("EINVAL matches the wrong sentinels")
	}
	other := errors.New("boom")
	if e := c.wrap("x", other); !errors.Is(e, other) || errors.As(e, &ve) {
		t.Errorf("a non-errno error wrapped as %#v", e)
	}
	if c.wrap("x", nil) != nil {
		t.Error("wrap(nil) != nil")
	}
}

func TestEnumStrings(t *testing.T) {
	if PortActive.String() != "ACTIVE" || QPStateRTS.String() != "RTS" || EventCQErr.String() != "CQ_ERR" ||
		GIDTypeRoCEv2.String() != "RoCEv2" || WCSuccess.String() != "SUCCESS" || QPTypeUC.String() != "UC" ||
		MTU1024.Bytes() != 1024 || MTU4096.Bytes() != 4096 || MTU(9).Bytes() != 0 {
		t.Fatal("enum names or MTU sizes are wrong")
	}
	if !strings.Contains(QPState(42).String(), "42") || !strings.Contains(EventType(99).String(), "99") {
		t.Fatal("unknown enum values do not print their number")
	}
}

// nla builds one netlink attribute (4-byte aligned).
func nla(typ uint16, v []byte) []byte {
	b := make([]byte, 4, 4+len(v)+3)
	binary.NativeEndian.PutUint16(b, uint16(4+len(v)))
	binary.NativeEndian.PutUint16(b[2:], typ)
	b = append(b, v...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func TestParseResSummary(t *testing.T) {
	want := map[string]uint64{}
	var entries []byte
	for _, n := range []string{"pd", "cq", "qp", "cm_id", "mr", "ctx", "srq"} {
		v := rand.Uint64N(1000)
		want[n] = v
		var cur [8]byte
		binary.NativeEndian.PutUint64(cur[:], v)
		ent := append(nla(nldevAttrResSummaryName, append([]byte(n), 0)), nla(nldevAttrResSummaryCurr, cur[:])...)
		entries = append(entries, nla(nldevAttrResSummaryEnt|0x8000, ent)...)
	}
	var idx [4]byte
	msg := append(nla(nldevAttrDevIndex, idx[:]), nla(nldevAttrDevName, []byte("rxe0\x00"))...)
	msg = append(msg, nla(nldevAttrResSummary|0x8000, entries)...)
	name, got := parseResSummary(msg)
	if name != "rxe0" || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("parsed %s %v, want rxe0 %v", name, got, want)
	}
	// Truncated input stops cleanly.
	for i := range len(msg) {
		parseResSummary(msg[:i])
	}
	hdr := make([]byte, 16)
	binary.NativeEndian.PutUint32(hdr, 16+uint32(len(msg)))
	msgs, err := parseNetlink(append(hdr, msg...))
	if err != nil || len(msgs) != 1 || len(msgs[0].data) != len(msg) {
		t.Fatalf("parseNetlink = %v, %v", msgs, err)
	}
	binary.NativeEndian.PutUint32(hdr, 1<<20)
	if _, err := parseNetlink(append(hdr, msg...)); err == nil {
		t.Fatal("a netlink length beyond the buffer was accepted")
	}
}

func TestQPAttrFromKernel(t *testing.T) {
	k := uapi.QPAttr{
		QPAttrMask: uint32(QPAttrState | QPAttrAV | QPAttrPathMTU | QPAttrDestQPN | QPAttrRQPSN),
		QPState:    uint32(QPStateRTR), PathMTU: uint32(MTU1024), RQPSN: rand.Uint32() & 0xffffff,
		DestQPNum: rand.Uint32() & 0xffffff, QPAccessFlags: uint32(AccessRemoteWrite),
		MaxDestRdAtomic: 1, MinRNRTimer: 12, PortNum: 1, PKeyIndex: 3,
	}
	k.AHAttr = uapi.AHAttr{SGIDIndex: 1, HopLimit: 64, IsGlobal: 1, PortNum: 1, FlowLabel: rand.Uint32() & 0xfffff}
	g := GIDFromAddr(netip.AddrFrom4([4]byte{10, 7, 0, byte(rand.IntN(256))}))
	k.AHAttr.DGID = g
	a, mask, err := QPAttrFromKernel(uapi.Bytes(&k))
	if err != nil {
		t.Fatal(err)
	}
	if mask != QPAttrMask(k.QPAttrMask) || a.State != QPStateRTR || a.PathMTU != MTU1024 || a.RQPSN != k.RQPSN ||
		a.DestQPN != k.DestQPNum || a.AccessFlags != AccessRemoteWrite || a.MaxDestRdAtomic != 1 || a.MinRNRTimer != 12 ||
		a.Port != 1 || a.PKeyIndex != 3 || a.AH.DGID != g || !a.AH.IsGlobal || a.AH.SGIDIndex != 1 || a.AH.HopLimit != 64 ||
		a.AH.FlowLabel != k.AHAttr.FlowLabel {
		t.Fatalf("decoded %+v mask %#x from %+v", a, mask, k)
	}
	if _, _, err := QPAttrFromKernel(make([]byte, SizeofKernelQPAttr-1)); err == nil {
		t.Fatal("a short ib_uverbs_qp_attr was accepted")
	}
}

// TestDriverKernel: what verbs lends driver packages (dv.Kernel, through the provider seam)
// keeps verbs' rules — an object tracked is released when the context closes unless it was
// forgotten first, a closed PD or context is ErrClosed, and errors name the device.
func TestDriverKernel(t *testing.T) {
	c := &Context{dev: DeviceInfo{Name: "fake0", Driver: "rxe"}, fd: -1, asyncFD: -1,
		objects: map[uint64]any{}, live: map[closer]struct{}{}}
	var k provider.Kernel = kernel{c}
	dk, ok := k.(dv.Kernel)
	if !ok {
		t.Fatal("verbs' provider.Kernel does not implement dv.Kernel")
	}
	pc, err := rxe.Provider{}.NewContext(k)
	if err != nil {
		t.Fatal(err)
	}
	c.prov = pc
	if name, driver := dk.Device(); name != "fake0" || driver != "rxe" {
		t.Errorf("Device() = %q, %q", name, driver)
	}
	pd := &PD{ctx: c, handle: 9}
	if h, err := dk.PD(pd); h != 9 || err != nil {
		t.Errorf("PD(open PD) = %d, %v", h, err)
	}
	if _, err := dk.PD(c); err == nil || !strings.Contains(err.Error(), "not a PD") {
		t.Errorf("PD(a Context) = %v, want an error saying it is not a PD", err)
	}
	pd.closed = true
	if _, err := dk.PD(pd); !errors.Is(err, ErrClosed) {
		t.Errorf("PD(closed PD) = %v, want ErrClosed", err)
	}
	if err := dk.Wrap("ioctl X", unix.EINVAL); !errors.Is(err, unix.EINVAL) || !strings.Contains(err.Error(), "fake0") {
		t.Errorf("Wrap = %v, want EINVAL naming fake0", err)
	}
	var kept, forgotten int
	dk.Track(func() { kept++ })
	dk.Track(func() { forgotten++ })()
	c.Close() // fd -1: the close errors are not what this checks
	if kept != 1 || forgotten != 0 {
		t.Errorf("on Close: tracked object released %d times, forgotten one %d times; want 1 and 0", kept, forgotten)
	}
	if err := dk.Begin(); !errors.Is(err, ErrClosed) {
		t.Errorf("Begin after Close = %v, want ErrClosed", err)
	}
}
