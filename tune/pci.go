package tune

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// PCI vendor ids (PCI-SIG assigned; the same numbers as in linux include/linux/pci_ids.h).
const (
	VendorMellanox = 0x15b3 // NVIDIA networking (ConnectX, BlueField)
	VendorNVIDIA   = 0x10de // NVIDIA GPUs
)

// Base class codes (upper byte of the 24-bit class code in sysfs "class").
const (
	classNetwork = 0x02
	classDisplay = 0x03
	classBridge  = 0x06
)

// bdfRe matches a sysfs PCI address: domain:bus:device.function.
var bdfRe = regexp.MustCompile(`^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$`)

// IsBDF reports whether s looks like a PCI address (0000:01:00.0).
func IsBDF(s string) bool { return bdfRe.MatchString(s) }

// NormalizeBDF turns the forms tools print (00000000:17:00.0 from nvidia-smi, upper case)
// into the sysfs form 0000:17:00.0. Anything else is returned unchanged.
func NormalizeBDF(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if !IsBDF(s) {
		if IsBDF("0000:" + s) { // bus:dev.fn without a domain
			return "0000:" + s
		}
		return s
	}
	dom, rest, _ := strings.Cut(s, ":")
	if len(dom) > 4 {
		if v, err := strconv.ParseUint(dom, 16, 32); err == nil && v <= 0xffff {
			dom = fmt.Sprintf("%04x", v)
		}
	}
	return dom + ":" + rest
}

// PCIDevice is one function under /sys/bus/pci/devices.
type PCIDevice struct {
	BDF      string   // 0000:01:00.0
	Vendor   uint16   // sysfs "vendor"
	Device   uint16   // sysfs "device"
	Class    uint32   // sysfs "class" (base<<16 | sub<<8 | prog-if)
	Dir      string   // resolved sysfs directory (under the System root)
	NUMANode int      // sysfs "numa_node"; -1 when the firmware does not say
	Driver   string   // bound driver name, "" when none
	NetDevs  []string // network interfaces (…/net/*)
	RDMADevs []string // RDMA devices (…/infiniband/*)
	VF       bool     // an SR-IOV virtual function (has a physfn link)
}

// BaseClass is the upper byte of the class code.
func (d *PCIDevice) BaseClass() int { return int(d.Class >> 16) }

// IsNVIDIANIC reports a ConnectX/BlueField network function (bridges of a BlueField are
// vendor 0x15b3 too, so the class is checked).
func (d *PCIDevice) IsNVIDIANIC() bool {
	return d.Vendor == VendorMellanox && d.BaseClass() == classNetwork
}

// IsNVIDIAGPU reports an NVIDIA display controller (VGA 0x0300 or 3D 0x0302 class).
func (d *PCIDevice) IsNVIDIAGPU() bool {
	return d.Vendor == VendorNVIDIA && d.BaseClass() == classDisplay
}

// Name is how findings name the device: its first netdev and RDMA device, then the address.
func (d *PCIDevice) Name() string {
	var parts []string
	if len(d.NetDevs) > 0 {
		parts = append(parts, d.NetDevs[0])
	}
	if len(d.RDMADevs) > 0 {
		parts = append(parts, d.RDMADevs[0])
	}
	parts = append(parts, d.BDF)
	return strings.Join(parts, " ")
}

// maxPCIDevices bounds the scan of /sys/bus/pci/devices.
const maxPCIDevices = 4096

// PCIDevices lists every PCI function, sorted by address. A machine without
// /sys/bus/pci/devices (some containers) has none; that is not an error.
func (s *System) PCIDevices() ([]PCIDevice, error) {
	base := s.path("/sys/bus/pci/devices")
	ents, err := os.ReadDir(base)
	if err != nil {
		if isNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	if len(ents) > maxPCIDevices {
		ents = ents[:maxPCIDevices]
	}
	var out []PCIDevice
	for _, e := range ents {
		if !IsBDF(e.Name()) {
			continue
		}
		d, err := s.pciDevice(e.Name())
		if err != nil {
			continue // a function that vanished or is unreadable is not ours to judge
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b PCIDevice) int { return strings.Compare(a.BDF, b.BDF) })
	return out, nil
}

// PCIDevice reads one function by address; os.ErrNotExist (wrapped) when it is absent.
func (s *System) PCIDevice(bdf string) (PCIDevice, error) {
	return s.pciDevice(NormalizeBDF(bdf))
}

func (s *System) pciDevice(bdf string) (PCIDevice, error) {
	link := filepath.Join(s.path("/sys/bus/pci/devices"), bdf)
	dir, err := filepath.EvalSymlinks(link)
	if err != nil {
		return PCIDevice{}, err
	}
	return pciDeviceAt(bdf, dir)
}

// pciDeviceAt reads one function's attributes from its (resolved) sysfs directory.
func pciDeviceAt(bdf, dir string) (PCIDevice, error) {
	d := PCIDevice{BDF: bdf, Dir: dir, NUMANode: -1}
	rd := func(name string) (uint64, error) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return 0, err
		}
		return strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(string(b)), "0x"), 16, 32)
	}
	v, err := rd("vendor")
	if err != nil {
		return d, fmt.Errorf("%s: vendor: %w", bdf, err)
	}
	d.Vendor = uint16(v)
	if v, err := rd("device"); err == nil {
		d.Device = uint16(v)
	}
	if v, err := rd("class"); err == nil {
		d.Class = uint32(v)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "numa_node")); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			d.NUMANode = n
		}
	}
	if t, err := os.Readlink(filepath.Join(dir, "driver")); err == nil {
		d.Driver = filepath.Base(t)
	}
	if _, err := os.Lstat(filepath.Join(dir, "physfn")); err == nil {
		d.VF = true
	}
	d.NetDevs = dirNames(filepath.Join(dir, "net"))
	d.RDMADevs = dirNames(filepath.Join(dir, "infiniband"))
	return d, nil
}

func dirNames(dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	slices.Sort(out)
	return out
}

// NVIDIANICs lists ConnectX/BlueField network functions.
func (s *System) NVIDIANICs() ([]PCIDevice, error) {
	all, err := s.PCIDevices()
	var out []PCIDevice
	for _, d := range all {
		if d.IsNVIDIANIC() {
			out = append(out, d)
		}
	}
	return out, err
}

// nvidiaGPUDevices lists NVIDIA display controllers visible in sysfs.
func (s *System) nvidiaGPUDevices() ([]PCIDevice, error) {
	all, err := s.PCIDevices()
	var out []PCIDevice
	for _, d := range all {
		if d.IsNVIDIAGPU() {
			out = append(out, d)
		}
	}
	return out, err
}

// upstream returns the PCI functions above d, nearest first (its bridge, that bridge's
// bridge, ... up to the root port), from the sysfs directory chain.
func (s *System) upstream(d PCIDevice) []PCIDevice {
	var out []PCIDevice
	dir := filepath.Dir(d.Dir)
	for i := 0; i < 32 && IsBDF(filepath.Base(dir)); i++ {
		u, err := s.pciDevice(filepath.Base(dir))
		if err != nil {
			// Not listed under /sys/bus/pci/devices: read it in place.
			u = PCIDevice{BDF: filepath.Base(dir), Dir: dir, NUMANode: -1}
		}
		out = append(out, u)
		dir = filepath.Dir(dir)
	}
	return out
}

// Config space layout: linux include/uapi/linux/pci_regs.h (PCI_STATUS, PCI_CAPABILITY_LIST,
// PCI_CAP_ID_EXP, PCI_EXP_DEVCAP, PCI_EXP_DEVCTL, PCI_EXP_LNKSTA), itself following the PCI
// Local Bus and PCI Express Base specifications.
const (
	cfgStatus        = 0x06   // PCI_STATUS, 16 bits
	cfgStatusCapList = 0x0010 // PCI_STATUS_CAP_LIST: a capability list is present
	cfgCapPtr        = 0x34   // PCI_CAPABILITY_LIST: offset of the first capability
	cfgStdHeader     = 64     // PCI_STD_HEADER_SIZEOF: what non-root readers of sysfs get
	cfgSpaceSize     = 256    // PCI_CFG_SPACE_SIZE: the legacy capability list lives here

	capIDExp = 0x10 // PCI_CAP_ID_EXP: PCI Express capability

	expFlags  = 0x02 // PCI_EXP_FLAGS: version and device/port type (bits 7:4)
	expDevCap = 0x04 // PCI_EXP_DEVCAP: bits 2:0 Max_Payload_Size Supported
	expDevCtl = 0x08 // PCI_EXP_DEVCTL: bits 7:5 Max_Payload_Size, bits 14:12 Max_Read_Request_Size
	expLnkCap = 0x0c // PCI_EXP_LNKCAP: bits 3:0 max speed, 9:4 max width
	expLnkSta = 0x12 // PCI_EXP_LNKSTA: bits 3:0 current speed, 9:4 negotiated width

	devCapPayload  = 0x0007 // PCI_EXP_DEVCAP_PAYLOAD
	devCtlPayload  = 0x00e0 // PCI_EXP_DEVCTL_PAYLOAD
	devCtlReadRq   = 0x7000 // PCI_EXP_DEVCTL_READRQ
	devCtlRead4096 = 0x5000 // PCI_EXP_DEVCTL_READRQ_4096B
)

// PCIe port types from PCI_EXP_FLAGS_TYPE.
const (
	expTypeEndpoint   = 0x0
	expTypeRootPort   = 0x4
	expTypeUpstream   = 0x5
	expTypeDownstream = 0x6
)

// ErrConfigTruncated says the config space file showed only the standard 64-byte header:
// Linux lets unprivileged readers see no more, and the capabilities live beyond it.
var ErrConfigTruncated = errors.New("PCI config space is readable only up to the 64-byte standard header (reading the PCI Express capability needs root)")

// ErrNoPCIeCap says the function has no PCI Express capability.
var ErrNoPCIeCap = errors.New("no PCI Express capability in the capability list")

// PCIeCap is a decoded PCI Express capability.
type PCIeCap struct {
	Offset int    // offset of the capability in config space
	Type   int    // device/port type (PCI_EXP_FLAGS_TYPE)
	DevCap uint32 // Device Capabilities register
	DevCtl uint16 // Device Control register
	LnkCap uint32 // Link Capabilities register
	LnkSta uint16 // Link Status register
}

// MPSSupported is the largest payload the function supports, in bytes (128 << DevCap[2:0]).
func (c PCIeCap) MPSSupported() int { return 128 << (c.DevCap & devCapPayload) }

// MPS is the configured Max Payload Size in bytes (128 << DevCtl[7:5]).
func (c PCIeCap) MPS() int { return 128 << ((c.DevCtl & devCtlPayload) >> 5) }

// MRRS is the configured Max Read Request Size in bytes (128 << DevCtl[14:12]).
func (c PCIeCap) MRRS() int { return 128 << ((c.DevCtl & devCtlReadRq) >> 12) }

// LinkWidth is the negotiated link width (lanes).
func (c PCIeCap) LinkWidth() int { return int(c.LnkSta>>4) & 0x3f }

// LinkGen is the current link speed as a PCIe generation (1 = 2.5 GT/s ... 6 = 64 GT/s).
func (c PCIeCap) LinkGen() int { return int(c.LnkSta & 0xf) }

// ParsePCIeCap walks the capability list of a config space image to the PCI Express
// capability. The walk is bounded (at most 48 entries, the most that fit in 192 bytes) so a
// corrupt or cyclic list cannot loop.
func ParsePCIeCap(cfg []byte) (PCIeCap, error) {
	if len(cfg) < cfgStdHeader {
		return PCIeCap{}, fmt.Errorf("PCI config space is %d bytes, shorter than the 64-byte standard header", len(cfg))
	}
	if binary.LittleEndian.Uint16(cfg[cfgStatus:])&cfgStatusCapList == 0 {
		return PCIeCap{}, ErrNoPCIeCap
	}
	off := int(cfg[cfgCapPtr]) &^ 3
	seen := map[int]bool{}
	for i := 0; i < 48 && off >= cfgStdHeader; i++ {
		if off+2 > len(cfg) {
			if len(cfg) <= cfgStdHeader {
				return PCIeCap{}, ErrConfigTruncated
			}
			return PCIeCap{}, fmt.Errorf("capability at 0x%x lies past the %d bytes of config space read", off, len(cfg))
		}
		if seen[off] {
			return PCIeCap{}, fmt.Errorf("capability list loops back to 0x%x", off)
		}
		seen[off] = true
		if cfg[off] == capIDExp {
			if off+expLnkSta+2 > len(cfg) {
				return PCIeCap{}, fmt.Errorf("PCI Express capability at 0x%x is cut off at %d bytes", off, len(cfg))
			}
			le := binary.LittleEndian
			return PCIeCap{
				Offset: off,
				Type:   int(le.Uint16(cfg[off+expFlags:])>>4) & 0xf,
				DevCap: le.Uint32(cfg[off+expDevCap:]),
				DevCtl: le.Uint16(cfg[off+expDevCtl:]),
				LnkCap: le.Uint32(cfg[off+expLnkCap:]),
				LnkSta: le.Uint16(cfg[off+expLnkSta:]),
			}, nil
		}
		off = int(cfg[off+1]) &^ 3
	}
	return PCIeCap{}, ErrNoPCIeCap
}

// readConfig reads a function's config space (as much as the kernel lets us: 64 bytes for
// unprivileged readers, 256 or 4096 for root).
func readConfig(d PCIDevice) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(d.Dir, "config"))
	if err != nil {
		return nil, err
	}
	return b, nil
}

// pcieCap reads and decodes a function's PCI Express capability.
func (s *System) pcieCap(d PCIDevice) (PCIeCap, error) {
	b, err := readConfig(d)
	if err != nil {
		return PCIeCap{}, err
	}
	return ParsePCIeCap(b)
}

// barSizes reads the sizes in bytes of the memory regions in sysfs "resource" (one
// "start end flags" line per BAR, in BAR order; unused lines are all zero).
func barSizes(d PCIDevice) ([]uint64, error) {
	b, err := os.ReadFile(filepath.Join(d.Dir, "resource"))
	if err != nil {
		return nil, err
	}
	var out []uint64
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if i >= 17 { // 6 BARs, ROM, and the SR-IOV BARs at most
			break
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			out = append(out, 0)
			continue
		}
		start, err1 := strconv.ParseUint(strings.TrimPrefix(f[0], "0x"), 16, 64)
		end, err2 := strconv.ParseUint(strings.TrimPrefix(f[1], "0x"), 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			out = append(out, 0)
			continue
		}
		out = append(out, end-start+1)
	}
	return out, nil
}
