package tune

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrNotRoot says a change was refused because the process is not root.
var ErrNotRoot = errors.New("must run as root (effective uid 0): writing PCI config space needs CAP_SYS_ADMIN")

// ErrNotNVIDIANIC says a named device is not an NVIDIA network function.
var ErrNotNVIDIANIC = errors.New("not an NVIDIA NIC")

// ErrNoNVIDIANIC says the machine has no NVIDIA network function at all.
var ErrNoNVIDIANIC = errors.New("no NVIDIA NIC")

// resolveNIC turns a PCI address or interface name into its PCI function.
func (s *System) resolveNIC(name string) (PCIDevice, error) {
	if IsBDF(NormalizeBDF(name)) {
		d, err := s.PCIDevice(name)
		if err != nil {
			return d, fmt.Errorf("no PCI device %s: %w", NormalizeBDF(name), err)
		}
		return d, nil
	}
	if strings.ContainsAny(name, "/") || name == "" || name == "." || name == ".." {
		return PCIDevice{}, fmt.Errorf("%q is neither a PCI address nor an interface name", name)
	}
	link, err := filepath.EvalSymlinks(s.path("/sys/class/net/" + name + "/device"))
	if err != nil {
		if s.exists("/sys/class/net/" + name) {
			return PCIDevice{}, fmt.Errorf("interface %s has no device (virtual interface): %w", name, ErrNotNVIDIANIC)
		}
		return PCIDevice{}, fmt.Errorf("no network interface or PCI device named %q", name)
	}
	// The device link may name a bus device below the PCI function (virtio-net:
	// …/0000:00:03.0/virtio2); the nearest PCI address above it is the function.
	for dir, i := link, 0; i < 8 && dir != "/" && dir != "."; dir, i = filepath.Dir(dir), i+1 {
		if IsBDF(filepath.Base(dir)) {
			return s.PCIDevice(filepath.Base(dir))
		}
	}
	return PCIDevice{}, fmt.Errorf("interface %s is not on a PCI device: %w", name, ErrNotNVIDIANIC)
}

func (s *System) openConfig(path string) (ConfigFile, error) {
	if s.OpenConfig != nil {
		return s.OpenConfig(path)
	}
	return os.OpenFile(path, os.O_RDWR, 0)
}

// lockdown returns the kernel lockdown mode ("none", "integrity", "confidentiality") from
// /sys/kernel/security/lockdown, or "" when the file is absent.
func (s *System) lockdown() string {
	v, err := s.readString("/sys/kernel/security/lockdown")
	if err != nil {
		return ""
	}
	if i := strings.Index(v, "["); i >= 0 {
		if j := strings.Index(v[i:], "]"); j > 0 {
			return v[i+1 : i+j]
		}
	}
	return v
}

// SetMRRS sets the PCIe Max Read Request Size of NVIDIA NICs to 4096 B (upstream --set
// mrrs): it rewrites bits 14:12 of the Device Control register, keeping every other bit, and
// reads the register back, because under Secure Boot lockdown the write can be dropped
// without an error. targets are PCI addresses or interface names; none means every NVIDIA
// NIC. It refuses (returns an error, writes nothing) unless running as root, and when any
// target is not an NVIDIA NIC.
func (s *System) SetMRRS(targets []string) ([]Finding, error) {
	if uid := s.euid(); uid != 0 {
		return nil, fmt.Errorf("set mrrs: %w (running as uid %d); try: sudo daqiri-tune set mrrs", ErrNotRoot, uid)
	}
	var nics []PCIDevice
	if len(targets) == 0 {
		all, err := s.NVIDIANICs()
		if err != nil {
			return nil, fmt.Errorf("set mrrs: cannot list PCI devices: %w", err)
		}
		if len(all) == 0 {
			return nil, fmt.Errorf("set mrrs: %w: nothing under /sys/bus/pci/devices has vendor 0x15b3 (Mellanox) with a network class", ErrNoNVIDIANIC)
		}
		nics = all
	} else {
		for _, t := range targets {
			d, err := s.resolveNIC(t)
			if err != nil {
				return nil, fmt.Errorf("set mrrs: %w", err)
			}
			if !d.IsNVIDIANIC() {
				return nil, fmt.Errorf("set mrrs: refusing to write %s (%s): %w: vendor 0x%04x class 0x%06x, want vendor 0x15b3 with a network class",
					d.BDF, t, ErrNotNVIDIANIC, d.Vendor, d.Class)
			}
			nics = append(nics, d)
		}
	}
	var out []Finding
	for _, d := range nics {
		out = append(out, s.setMRRS(d))
	}
	return out, nil
}

func (s *System) setMRRS(d PCIDevice) Finding {
	f := Finding{Check: "set-mrrs", Subject: d.Name(), Recommended: "4096 B"}
	if d.VF {
		f.Status, f.Measured = StatusSkip, "virtual function"
		f.Message = "an SR-IOV virtual function's MRRS field is reserved; set it on the physical function"
		return f
	}
	path := filepath.Join(d.Dir, "config")
	cf, err := s.openConfig(path)
	if err != nil {
		f.Status, f.Message = StatusFail, fmt.Sprintf("cannot open %s for writing: %v", s.rel(path), err)
		return f
	}
	defer cf.Close()
	read := func() ([]byte, error) {
		b := make([]byte, cfgSpaceSize)
		n, err := cf.ReadAt(b, 0)
		if n == 0 && err != nil {
			return nil, err
		}
		return b[:n], nil
	}
	cfg, err := read()
	if err != nil {
		f.Status, f.Message = StatusFail, fmt.Sprintf("cannot read config space: %v", err)
		return f
	}
	c, err := ParsePCIeCap(cfg)
	if err != nil {
		f.Status, f.Message = StatusFail, fmt.Sprintf("cannot find the PCI Express capability: %v", err)
		return f
	}
	before := c.MRRS()
	f.Measured = fmt.Sprintf("%d B", before)
	if before == 4096 {
		f.Status, f.Message = StatusOK, "already 4096 B; nothing written"
		return f
	}
	val := c.DevCtl&^devCtlReadRq | devCtlRead4096
	var w [2]byte
	binary.LittleEndian.PutUint16(w[:], val)
	off := int64(c.Offset + expDevCtl)
	if _, err := cf.WriteAt(w[:], off); err != nil {
		f.Status = StatusFail
		f.Message = fmt.Sprintf("writing Device Control (0x%x) failed: %v", off, err)
		if errors.Is(err, os.ErrPermission) {
			f.Message += lockdownHint(s.lockdown())
		}
		return f
	}
	cfg, err = read()
	if err == nil {
		c, err = ParsePCIeCap(cfg)
	}
	if err != nil {
		f.Status, f.Message = StatusFail, fmt.Sprintf("wrote Device Control but cannot read it back: %v", err)
		return f
	}
	f.Measured = fmt.Sprintf("%d B → %d B", before, c.MRRS())
	switch {
	case c.MRRS() != 4096:
		f.Status = StatusFail
		f.Message = fmt.Sprintf("the write did not stick (Device Control reads 0x%04x, wrote 0x%04x): silent failure", c.DevCtl, val) + lockdownHint(s.lockdown())
	case c.DevCtl != val:
		f.Status = StatusWarn
		f.Message = fmt.Sprintf("MRRS is 4096 B but other Device Control bits changed too (0x%04x, wrote 0x%04x)", c.DevCtl, val)
	default:
		f.Status = StatusOK
		f.Message = "set; lost at reboot or device reset (re-run at boot, e.g. from a systemd unit)"
	}
	return f
}

func lockdownHint(mode string) string {
	switch mode {
	case "", "none":
		return "; the kernel may block config space writes (Secure Boot lockdown, or a platform that traps config writes)"
	}
	return fmt.Sprintf("; kernel lockdown is %q (Secure Boot), which blocks PCI config space writes from user space: disable Secure Boot or set MRRS in the firmware", mode)
}
