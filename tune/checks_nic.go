package tune

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// noNIC is the finding for checks that need an NVIDIA NIC on a machine without one.
func noNIC(check string, err error) []Finding {
	msg := "no NVIDIA (Mellanox, vendor 0x15b3) network function under /sys/bus/pci/devices"
	if err != nil {
		msg = fmt.Sprintf("cannot list PCI devices: %v", err)
	}
	return []Finding{{Check: check, Subject: "NVIDIA NIC", Status: StatusSkip, Measured: "none", Message: msg}}
}

// capFinding turns an unreadable PCIe capability into a SKIP finding.
func capFinding(check string, d PCIDevice, err error) Finding {
	f := Finding{Check: check, Subject: d.Name(), Status: StatusSkip, Measured: "unreadable"}
	if errors.Is(err, ErrConfigTruncated) {
		f.Message = "reading the PCI Express capability needs root (sysfs shows unprivileged readers only the first 64 bytes of config space): run as root"
	} else {
		f.Message = fmt.Sprintf("cannot read the PCI Express capability: %v", err)
	}
	return f
}

// CheckMRRS checks the PCIe Max Read Request Size of each NVIDIA NIC (upstream --check
// mrrs): a NIC transmitting from host or GPU memory issues reads of at most MRRS bytes, and
// small reads cap the transmit rate well below line rate.
func (s *System) CheckMRRS() []Finding {
	const name = "mrrs"
	nics, err := s.NVIDIANICs()
	if len(nics) == 0 {
		return noNIC(name, err)
	}
	var out []Finding
	for _, d := range nics {
		if d.VF {
			out = append(out, Finding{Check: name, Subject: d.Name(), Status: StatusSkip, Measured: "virtual function",
				Message: "an SR-IOV virtual function's MRRS field is reserved; the physical function's setting applies"})
			continue
		}
		c, err := s.pcieCap(d)
		if err != nil {
			out = append(out, capFinding(name, d, err))
			continue
		}
		f := Finding{Check: name, Subject: d.Name(), Measured: fmt.Sprintf("%d B", c.MRRS()), Recommended: "4096 B"}
		if c.MRRS() == 4096 {
			f.Status = StatusOK
		} else {
			f.Status = StatusWarn
			f.Message = "small PCIe read requests limit transmit bandwidth; the setting is lost at reboot or device reset"
			f.Fix = fmt.Sprintf("sudo daqiri-tune set mrrs %s   (same as: sudo setpci -s %s CAP_EXP+8.w=5000:7000)", d.BDF, d.BDF)
		}
		out = append(out, f)
	}
	return out
}

// CheckMPS checks the PCIe Max Payload Size of each NVIDIA NIC (upstream --check mps). The
// largest usable MPS is the smallest that the NIC and every port above it support; a
// smaller setting than that wastes link bandwidth on TLP headers.
func (s *System) CheckMPS() []Finding {
	const name = "mps"
	nics, err := s.NVIDIANICs()
	if len(nics) == 0 {
		return noNIC(name, err)
	}
	var out []Finding
	for _, d := range nics {
		if d.VF {
			out = append(out, Finding{Check: name, Subject: d.Name(), Status: StatusSkip, Measured: "virtual function",
				Message: "an SR-IOV virtual function's MPS field is reserved; the physical function's setting applies"})
			continue
		}
		c, err := s.pcieCap(d)
		if err != nil {
			out = append(out, capFinding(name, d, err))
			continue
		}
		pathMax, limiter := c.MPSSupported(), ""
		for _, u := range s.upstream(d) {
			uc, err := s.pcieCap(u)
			if err != nil {
				continue // an unreadable bridge cannot lower the bound we know of
			}
			if m := uc.MPSSupported(); m < pathMax {
				pathMax, limiter = m, u.BDF
			}
		}
		f := Finding{Check: name, Subject: d.Name(), Measured: fmt.Sprintf("%d B", c.MPS()), Recommended: fmt.Sprintf("%d B", pathMax)}
		switch {
		case c.MPS() >= pathMax && limiter != "":
			f.Status = StatusOK
			f.Message = fmt.Sprintf("the NIC supports %d B but upstream port %s supports only %d B", c.MPSSupported(), limiter, pathMax)
		case c.MPS() >= pathMax:
			f.Status = StatusOK
			f.Message = "hardware maximum"
		default:
			f.Status = StatusWarn
			f.Message = fmt.Sprintf("the NIC and every port above it support %d B; a smaller payload size costs PCIe bandwidth", pathMax)
			if limiter != "" {
				f.Message = fmt.Sprintf("the NIC supports %d B and its path (limited by %s) %d B; a smaller payload size costs PCIe bandwidth", c.MPSSupported(), limiter, pathMax)
			}
			f.Fix = bootFix("pci=pcie_bus_safe") + "\nor raise the PCIe Max Payload Size in the firmware setup (MPS must match along the path; do not poke it with setpci)"
		}
		out = append(out, f)
	}
	return out
}

// CheckMTU checks the MTU of each NVIDIA NIC's network interface (upstream --check mtu):
// 8000-byte payloads, the usual daqiri packet, need jumbo frames.
func (s *System) CheckMTU() []Finding {
	const name = "mtu"
	nics, err := s.NVIDIANICs()
	if len(nics) == 0 {
		return noNIC(name, err)
	}
	var out []Finding
	for _, d := range nics {
		if len(d.NetDevs) == 0 {
			drv := d.Driver
			if drv == "" {
				drv = "none"
			}
			out = append(out, Finding{Check: name, Subject: d.Name(), Status: StatusSkip, Measured: "no netdev",
				Message: fmt.Sprintf("no network interface (driver: %s); MTU applies only to kernel netdevs", drv)})
			continue
		}
		for _, ifc := range d.NetDevs {
			mtu, err := s.readInt("/sys/class/net/" + ifc + "/mtu")
			if err != nil {
				mtu, err = readIntFile(filepath.Join(d.Dir, "net", ifc, "mtu"))
			}
			subj := ifc + " " + d.BDF
			if err != nil {
				out = append(out, Finding{Check: name, Subject: subj, Status: StatusSkip, Message: fmt.Sprintf("cannot read MTU: %v", err)})
				continue
			}
			f := Finding{Check: name, Subject: subj, Measured: strconv.FormatInt(mtu, 10), Recommended: "9000"}
			if mtu <= 1518 {
				f.Status = StatusWarn
				f.Message = "standard frames cap payloads near 1.5 kB; daqiri's 8 kB packets need jumbo frames (the switch or peer must allow them too)"
				f.Fix = fmt.Sprintf("sudo ip link set dev %s mtu 9000   (persist it in NetworkManager/netplan/systemd-networkd)", ifc)
			} else {
				f.Status = StatusOK
			}
			out = append(out, f)
		}
	}
	return out
}

// readIntFile reads a file holding one integer (a path already under the System root).
func readIntFile(p string) (int64, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 0, 64)
}

// PCIe distances as nvidia-smi topo -m names them, nearest first.
const (
	topoPIX  = "PIX"  // through at most one PCIe switch
	topoPXB  = "PXB"  // through several PCIe switches, not through the host bridge
	topoPHB  = "PHB"  // through a PCIe host bridge (same root complex)
	topoNODE = "NODE" // across host bridges within one NUMA node
	topoSYS  = "SYS"  // across NUMA nodes (the socket interconnect)
)

var topoRank = map[string]int{topoPIX: 0, topoPXB: 1, topoPHB: 2, topoNODE: 3, topoSYS: 4}

// PCIeDistance classifies the path between two functions from their sysfs directories
// (…/pci0000:00/<root port>/<switch ports>…/<function>).
func PCIeDistance(a, b PCIDevice) string {
	pa := strings.Split(filepath.Clean(a.Dir), string(filepath.Separator))
	pb := strings.Split(filepath.Clean(b.Dir), string(filepath.Separator))
	n := 0
	for n < len(pa)-1 && n < len(pb)-1 && pa[n] == pb[n] {
		n++
	}
	if n == 0 {
		return topoSYS
	}
	last := pa[n-1]
	switch {
	case IsBDF(last):
		// A bridge is the nearest common ancestor. Count the bridges strictly between it and
		// each end: one each (a switch's downstream ports) is a single switch.
		if len(pa)-1-n <= 1 && len(pb)-1-n <= 1 {
			return topoPIX
		}
		return topoPXB
	case strings.HasPrefix(last, "pci"):
		return topoPHB
	}
	if a.NUMANode == b.NUMANode {
		return topoNODE
	}
	return topoSYS
}
