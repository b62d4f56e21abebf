package verbs

import (
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// DeviceInfo describes one RDMA device as sysfs shows it.
type DeviceInfo struct {
	// Name is the kernel's device name (rxe0, mlx5_0).
	Name string
	// Driver is the kernel driver that provides it ("rxe", "mlx5", …), or
	// "" when sysfs does not tell.
	Driver string
	// NodeType is the node_type text ("1: CA").
	NodeType string
	// NodeGUID is node_guid as printed by the kernel.
	NodeGUID string
	// Netdev is the Ethernet device a software device (rxe) sits on.
	Netdev string
	// PCI is the PCI address of the function behind a hardware device
	// ("0000:3b:00.0"), "" for a software device.
	PCI string
	// Netdevs are the Linux netdevs of that PCI function (its device/net
	// folder: enp59s0f0np0 for mlx5_0).
	Netdevs []string
	// UverbsDev is the verbs character device, e.g. /dev/infiniband/uverbs0;
	// "" when the device exposes none.
	UverbsDev string
	// ABIVersion is the uverbs ABI version of that character device.
	ABIVersion int
	// Ports lists the ports in ascending order.
	Ports []PortInfo
}

// PortInfo is one port as sysfs shows it.
type PortInfo struct {
	Num       int
	State     string // e.g. "4: ACTIVE"
	PhysState string // e.g. "5: LinkUp"
	LinkLayer string // "Ethernet" or "InfiniBand"
	// GIDs holds the populated GID table entries.
	GIDs []SysfsGID
}

// SysfsGID is one populated GID table entry read from sysfs.
type SysfsGID struct {
	Index  int
	GID    GID
	Type   string // "RoCE v2", "IB/RoCE v1"
	Netdev string
}

// Active reports whether the port state is ACTIVE.
func (p PortInfo) Active() bool { return strings.HasPrefix(p.State, "4:") }

// Devices lists the RDMA devices of this machine from /sys.
func Devices() ([]DeviceInfo, error) { return DevicesIn("/") }

// DevicesIn lists devices from a sysfs tree rooted at root (root/sys/class/
// infiniband and root/sys/class/infiniband_verbs); character device paths
// are reported under root/dev. It exists so that tests can use a fake tree.
func DevicesIn(root string) ([]DeviceInfo, error) {
	ibDir := filepath.Join(root, "sys/class/infiniband")
	ents, err := os.ReadDir(ibDir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("verbs: list RDMA devices: %w", err)
	}
	uverbs := uverbsByDevice(root)
	var out []DeviceInfo
	for _, e := range ents {
		d, err := readDevice(root, filepath.Join(ibDir, e.Name()), e.Name())
		if err != nil {
			return nil, err
		}
		if u, ok := uverbs[d.Name]; ok {
			d.UverbsDev, d.ABIVersion = u.path, u.abi
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// LookupDevice returns the named device, or the first one with a verbs
// character device when name is "".
func LookupDevice(name string) (DeviceInfo, error) { return lookupDeviceIn("/", name) }

func lookupDeviceIn(root, name string) (DeviceInfo, error) {
	devs, err := DevicesIn(root)
	if err != nil {
		return DeviceInfo{}, err
	}
	for _, d := range devs {
		if (name == "" && d.UverbsDev != "") || d.Name == name {
			return d, nil
		}
	}
	if name == "" {
		return DeviceInfo{}, fmt.Errorf("%w: none found under %s", ErrNoDevice, filepath.Join(root, "sys/class/infiniband"))
	}
	return DeviceInfo{}, fmt.Errorf("%w: %q", ErrNoDevice, name)
}

// isPCIAddress reports whether s is a full PCI address, domain:bus:device.function
// ("0000:3b:00.0").
func isPCIAddress(s string) bool {
	var dom, bus, dev, fn int
	n, err := fmt.Sscanf(s, "%4x:%2x:%2x.%1x", &dom, &bus, &dev, &fn)
	return err == nil && n == 4 && len(s) == 12
}

// LookupAddress finds the RDMA device an interface address names: the device's name
// (mlx5_0), the PCI address of its function (0000:3b:00.0, or 3b:00.0 in domain 0), or
// one of its netdevs (enp59s0f0np0; for rxe, the netdev it sits on).
func LookupAddress(addr string) (DeviceInfo, error) { return lookupAddressIn("/", addr) }

func lookupAddressIn(root, addr string) (DeviceInfo, error) {
	if addr == "" {
		return DeviceInfo{}, fmt.Errorf("%w: empty address", ErrNoDevice)
	}
	devs, err := DevicesIn(root)
	if err != nil {
		return DeviceInfo{}, err
	}
	pci := strings.ToLower(addr)
	if !isPCIAddress(pci) && isPCIAddress("0000:"+pci) {
		pci = "0000:" + pci
	}
	for _, d := range devs {
		if d.Name == addr || (d.PCI != "" && d.PCI == pci) || (d.Netdev != "" && d.Netdev == addr) {
			return d, nil
		}
		for _, n := range d.Netdevs {
			if n == addr {
				return d, nil
			}
		}
	}
	return DeviceInfo{}, fmt.Errorf("%w: no RDMA device is named %q, has that PCI address or sits on that netdev", ErrNoDevice, addr)
}

func readStr(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func readDevice(root, dir, name string) (DeviceInfo, error) {
	d := DeviceInfo{
		Name:     name,
		NodeType: readStr(filepath.Join(dir, "node_type")),
		NodeGUID: readStr(filepath.Join(dir, "node_guid")),
		Netdev:   readStr(filepath.Join(dir, "parent")),
	}
	d.Driver = driverOf(dir)
	if l, err := os.Readlink(filepath.Join(dir, "device")); err == nil && isPCIAddress(filepath.Base(l)) {
		d.PCI = filepath.Base(l)
		if nents, err := os.ReadDir(filepath.Join(dir, "device", "net")); err == nil {
			for _, n := range nents {
				d.Netdevs = append(d.Netdevs, n.Name())
			}
		}
	}
	portsDir := filepath.Join(dir, "ports")
	pents, err := os.ReadDir(portsDir)
	if err != nil && !os.IsNotExist(err) {
		return d, fmt.Errorf("verbs: read ports of %s: %w", name, err)
	}
	for _, pe := range pents {
		num, err := strconv.Atoi(pe.Name())
		if err != nil {
			continue
		}
		d.Ports = append(d.Ports, readPort(filepath.Join(portsDir, pe.Name()), num))
	}
	sort.Slice(d.Ports, func(i, j int) bool { return d.Ports[i].Num < d.Ports[j].Num })
	return d, nil
}

// driverOf names the kernel driver. A PCI-backed device links device/driver
// to its driver (mlx5_core → "mlx5"); rxe has no backing device but is the
// only in-tree driver with a "parent" attribute naming its netdev.
func driverOf(dir string) string {
	if l, err := os.Readlink(filepath.Join(dir, "device", "driver")); err == nil {
		return strings.TrimSuffix(filepath.Base(l), "_core")
	}
	if _, err := os.Stat(filepath.Join(dir, "parent")); err == nil {
		return "rxe"
	}
	return ""
}

func readPort(dir string, num int) PortInfo {
	p := PortInfo{
		Num:       num,
		State:     readStr(filepath.Join(dir, "state")),
		PhysState: readStr(filepath.Join(dir, "phys_state")),
		LinkLayer: readStr(filepath.Join(dir, "link_layer")),
	}
	gents, _ := os.ReadDir(filepath.Join(dir, "gids"))
	for _, ge := range gents {
		idx, err := strconv.Atoi(ge.Name())
		if err != nil {
			continue
		}
		g, err := ParseGID(readStr(filepath.Join(dir, "gids", ge.Name())))
		if err != nil || g.IsZero() {
			continue
		}
		p.GIDs = append(p.GIDs, SysfsGID{
			Index:  idx,
			GID:    g,
			Type:   readStr(filepath.Join(dir, "gid_attrs", "types", ge.Name())),
			Netdev: readStr(filepath.Join(dir, "gid_attrs", "ndevs", ge.Name())),
		})
	}
	sort.Slice(p.GIDs, func(i, j int) bool { return p.GIDs[i].Index < p.GIDs[j].Index })
	return p
}

type uverbsDev struct {
	path string
	abi  int
}

// uverbsByDevice maps ibdev names to their verbs character devices
// (/sys/class/infiniband_verbs/uverbsN/ibdev names the device; the node is
// /dev/infiniband/uverbsN).
func uverbsByDevice(root string) map[string]uverbsDev {
	m := map[string]uverbsDev{}
	dir := filepath.Join(root, "sys/class/infiniband_verbs")
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "uverbs") {
			continue
		}
		ib := readStr(filepath.Join(dir, e.Name(), "ibdev"))
		if ib == "" {
			continue
		}
		abi, _ := strconv.Atoi(readStr(filepath.Join(dir, e.Name(), "abi_version")))
		m[ib] = uverbsDev{path: filepath.Join(root, "dev/infiniband", e.Name()), abi: abi}
	}
	return m
}

// GID is a 128-bit RDMA global identifier; for RoCE it is an IPv6 address
// or an IPv4-mapped one (::ffff:a.b.c.d).
type GID [16]byte

// ParseGID parses the kernel's sysfs form (eight colon-separated groups of
// four hex digits) or any IPv6/IPv4 address text.
func ParseGID(s string) (GID, error) {
	var g GID
	if parts := strings.Split(s, ":"); len(parts) == 8 && len(s) == 39 {
		b, err := hex.DecodeString(strings.Join(parts, ""))
		if err == nil && len(b) == 16 {
			copy(g[:], b)
			return g, nil
		}
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return g, fmt.Errorf("verbs: %q is not a GID", s)
	}
	return GIDFromAddr(a), nil
}

// GIDFromAddr is the RoCE GID of an IP address: IPv4 becomes ::ffff:a.b.c.d.
func GIDFromAddr(a netip.Addr) GID {
	return GID(a.As16())
}

// Addr is the GID as an IP address (IPv4 when it is IPv4-mapped).
func (g GID) Addr() netip.Addr { return netip.AddrFrom16(g).Unmap() }

// IsZero reports an all-zero (unpopulated) GID.
func (g GID) IsZero() bool { return g == GID{} }

// String prints the sysfs form.
func (g GID) String() string {
	var sb strings.Builder
	for i := 0; i < 16; i += 2 {
		if i > 0 {
			sb.WriteByte(':')
		}
		fmt.Fprintf(&sb, "%02x%02x", g[i], g[i+1])
	}
	return sb.String()
}
