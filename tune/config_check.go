package tune

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/daqiri-go/daqiri/config"
)

// ethHeader is the Ethernet header a buffer holds in front of the IP packet; the MTU counts
// from the IP header on (the FCS is not stored in buffers).
const ethHeader = 14

// CheckConfig checks a DAQIRI configuration against this machine (`check config FILE`):
// every cpu_core exists and is isolated, hugepages cover the `huge` regions, interfaces exist
// with an MTU that fits the frames their buffers imply, and the GPU ordinals of `device` and
// `host_pinned` regions exist and support the kind.
func (s *System) CheckConfig(cfg *config.Config) []Finding {
	var out []Finding
	out = append(out, s.configCores(cfg)...)
	out = append(out, s.configHugepages(cfg)...)
	out = append(out, s.configInterfaces(cfg)...)
	out = append(out, s.configGPUs(cfg)...)
	return out
}

const cfgCheck = "config"

// queueRef is one queue of the configuration with where it lives.
type queueRef struct {
	iface, dir string
	q          *config.Queue
}

func (r queueRef) name() string { return fmt.Sprintf("%s %s queue %s", r.iface, r.dir, r.q.Name) }

func queues(cfg *config.Config) []queueRef {
	var out []queueRef
	for i := range cfg.Interfaces {
		ifc := &cfg.Interfaces[i]
		if ifc.RX != nil {
			for j := range ifc.RX.Queues {
				out = append(out, queueRef{ifc.Name, "rx", &ifc.RX.Queues[j]})
			}
		}
		if ifc.TX != nil {
			for j := range ifc.TX.Queues {
				out = append(out, queueRef{ifc.Name, "tx", &ifc.TX.Queues[j]})
			}
		}
	}
	return out
}

func (s *System) configCores(cfg *config.Config) []Finding {
	online, err := s.onlineCPUs()
	if err != nil {
		return []Finding{{Check: cfgCheck, Subject: "cpu cores", Status: StatusSkip, Message: fmt.Sprintf("cannot read the online CPU list: %v", err)}}
	}
	iso, isoFrom, _ := s.isolatedCPUs()
	var out []Finding
	m := Finding{Check: cfgCheck, Subject: "master_core", Measured: fmt.Sprint(cfg.MasterCore)}
	if online.Has(cfg.MasterCore) {
		m.Status = StatusOK
	} else {
		m.Status, m.Recommended = StatusFail, "one of "+online.String()
		m.Message = fmt.Sprintf("CPU %d is not online on this machine (online: %s)", cfg.MasterCore, online)
	}
	out = append(out, m)
	used := map[int]string{}
	var notIso CPUSet
	for _, r := range queues(cfg) {
		if r.q.CPUCore == "" {
			continue // unpinned worker: nothing to check
		}
		f := Finding{Check: cfgCheck, Subject: r.name() + " cpu_core", Measured: r.q.CPUCore}
		c, ok := r.q.Core()
		switch {
		case !ok:
			f.Status = StatusFail
			f.Message = fmt.Sprintf("cpu_core %q is not a CPU number", r.q.CPUCore)
		case !online.Has(c):
			f.Status, f.Recommended = StatusFail, "an online, isolated CPU"
			f.Message = fmt.Sprintf("CPU %d does not exist or is offline (online: %s)", c, online)
		case !iso.Has(c):
			f.Status, f.Recommended = StatusWarn, "isolated"
			f.Measured = fmt.Sprintf("%d (not isolated)", c)
			isoText := iso.String()
			if isoText == "" {
				isoText = "none"
			}
			f.Message = fmt.Sprintf("the worker polling this queue shares CPU %d with other tasks (isolated CPUs per %s: %s)", c, isoFrom, isoText)
			notIso = append(notIso, c)
		default:
			f.Status = StatusOK
			f.Measured = fmt.Sprintf("%d (isolated)", c)
		}
		if ok && online.Has(c) {
			if other, dup := used[c]; dup {
				f.Status = max(f.Status, StatusWarn)
				f.Message = strings.TrimSpace(f.Message + fmt.Sprintf(" CPU %d also runs %s: two busy-polling workers on one core halve each other's rate.", c, other))
			}
			used[c] = r.name()
		}
		out = append(out, f)
	}
	if len(notIso) > 0 {
		want, _ := ParseCPUList(iso.String() + "," + CPUSet(notIso).String())
		fix := bootFix(fmt.Sprintf("isolcpus=%s nohz_full=%s rcu_nocbs=%s", want, want, want))
		for i := range out {
			if out[i].Status == StatusWarn && strings.HasSuffix(out[i].Measured, "(not isolated)") {
				out[i].Fix = fix
			}
		}
	}
	return out
}

func (s *System) configHugepages(cfg *config.Config) []Finding {
	var regions []config.MemoryRegion
	for _, r := range cfg.MemoryRegions {
		if r.Kind == config.KindHuge {
			regions = append(regions, r)
		}
	}
	if len(regions) == 0 {
		return nil
	}
	mi, err := s.meminfo()
	sizeKB := mi["Hugepagesize"]
	if err != nil || sizeKB <= 0 {
		msg := "the kernel reports no Hugepagesize: hugetlb is not available"
		if err != nil {
			msg = fmt.Sprintf("cannot read /proc/meminfo: %v", err)
		}
		return []Finding{{Check: cfgCheck, Subject: "hugepages", Status: StatusFail, Message: msg}}
	}
	page := sizeKB << 10
	var need int64
	var parts []string
	for _, r := range regions {
		bytes := int64(r.NumBufs) * int64(r.BufSize)
		pages := (bytes + page - 1) / page
		need += pages
		parts = append(parts, fmt.Sprintf("%s: %d × %d B → %d pages", r.Name, r.NumBufs, r.BufSize, pages))
	}
	total, free, rsvd := mi["HugePages_Total"], mi["HugePages_Free"], mi["HugePages_Rsvd"]
	avail := max(free-rsvd, 0)
	f := Finding{Check: cfgCheck, Subject: fmt.Sprintf("hugepages (%s pages)", sizeName(sizeKB)),
		Measured:    fmt.Sprintf("%d reserved, %d available", total, avail),
		Recommended: fmt.Sprintf("≥ %d available", need),
		Message:     strings.Join(parts, "; ")}
	pool := fmt.Sprintf("/sys/kernel/mm/hugepages/hugepages-%dkB/nr_hugepages", sizeKB)
	want := need + (total - avail) // keep what others already use
	switch {
	case need <= avail:
		f.Status = StatusOK
	case need <= total:
		f.Status = StatusWarn
		f.Message += fmt.Sprintf("; enough are reserved but only %d are free now (another process holds the rest)", avail)
		f.Fix = fmt.Sprintf("echo %d | sudo tee %s", want, pool)
	default:
		f.Status = StatusFail
		f.Message += "; the `huge` regions cannot be allocated"
		f.Fix = fmt.Sprintf("echo %d | sudo tee %s", want, pool)
	}
	out := []Finding{f}
	if nodes, err := s.numaNodes(); err == nil && len(nodes) > 0 {
		for _, r := range regions {
			if !slices.Contains(nodes, r.Affinity) {
				out = append(out, Finding{Check: cfgCheck, Subject: "memory region " + r.Name + " affinity", Status: StatusWarn,
					Measured: fmt.Sprint(r.Affinity), Recommended: fmt.Sprintf("a NUMA node of %v", nodes),
					Message: fmt.Sprintf("affinity of a `huge` region is a NUMA node, and node %d does not exist", r.Affinity)})
			}
		}
	}
	return out
}

// queueFrame is the largest frame a queue's buffers hold: the sum of its segments' buf_size.
func queueFrame(cfg *config.Config, q *config.Queue) int {
	n := 0
	for _, name := range q.MemoryRegions {
		for _, r := range cfg.MemoryRegions {
			if r.Name == name {
				n += r.BufSize
			}
		}
	}
	return n
}

func (s *System) configInterfaces(cfg *config.Config) []Finding {
	var out []Finding
	for i := range cfg.Interfaces {
		ifc := &cfg.Interfaces[i]
		subj := "interface " + ifc.Name
		addr := strings.TrimSpace(ifc.Address)
		if cfg.StreamType == config.StreamSocket || ifc.Socket != nil {
			continue // socket endpoints are IP addresses the kernel routes; nothing local to check
		}
		if cfg.Loopback == "sw" || addr == "loopback" {
			continue
		}
		if _, err := netip.ParseAddr(addr); err == nil {
			continue
		}
		f := Finding{Check: cfgCheck, Subject: subj + " (" + addr + ")"}
		var netdevs []string
		if IsBDF(addr) || IsBDF(NormalizeBDF(addr)) {
			d, err := s.PCIDevice(addr)
			if err != nil {
				f.Status, f.Measured = StatusFail, "missing"
				f.Message = fmt.Sprintf("no PCI device %s on this machine", NormalizeBDF(addr))
				f.Fix = "list NICs: ls /sys/bus/pci/devices/*/net/ ; set `address:` to one of them"
				out = append(out, f)
				continue
			}
			f.Status, f.Measured = StatusOK, "present: "+d.Name()
			if !d.IsNVIDIANIC() {
				f.Message = fmt.Sprintf("not an NVIDIA NIC (vendor 0x%04x): only the xdp engine can drive it", d.Vendor)
			}
			netdevs = d.NetDevs
		} else {
			if !s.exists("/sys/class/net/" + addr) {
				f.Status, f.Measured = StatusFail, "missing"
				f.Message = fmt.Sprintf("no network interface %q on this machine", addr)
				f.Fix = "list interfaces: ip -br link ; set `address:` to one of them or to a PCI address"
				out = append(out, f)
				continue
			}
			f.Status, f.Measured = StatusOK, "present"
			netdevs = []string{addr}
		}
		out = append(out, f)

		frame, qname := 0, ""
		for _, r := range queues(cfg) {
			if r.iface != ifc.Name {
				continue
			}
			if n := queueFrame(cfg, r.q); n > frame {
				frame, qname = n, r.name()
			}
		}
		if frame == 0 || len(netdevs) == 0 {
			continue
		}
		need := max(frame-ethHeader, 0)
		mtu, err := s.readInt("/sys/class/net/" + netdevs[0] + "/mtu")
		m := Finding{Check: cfgCheck, Subject: subj + " mtu (" + netdevs[0] + ")", Recommended: fmt.Sprintf("≥ %d", need)}
		switch {
		case err != nil:
			m.Status, m.Message = StatusSkip, fmt.Sprintf("cannot read MTU: %v", err)
		case int(mtu) >= need:
			m.Status, m.Measured = StatusOK, fmt.Sprint(mtu)
		default:
			m.Status, m.Measured = StatusFail, fmt.Sprint(mtu)
			m.Message = fmt.Sprintf("%s holds frames of up to %d B (buf_size), but MTU %d passes frames of at most %d B: larger packets are dropped", qname, frame, mtu, mtu+ethHeader)
			m.Fix = fmt.Sprintf("sudo ip link set dev %s mtu %d", netdevs[0], max(need, 9000))
		}
		out = append(out, m)
	}
	return out
}

func (s *System) configGPUs(cfg *config.Config) []Finding {
	var regions []config.MemoryRegion
	for _, r := range cfg.MemoryRegions {
		if r.Kind == config.KindDevice || r.Kind == config.KindHostPinned {
			regions = append(regions, r)
		}
	}
	if len(regions) == 0 {
		return nil
	}
	gpus, why := s.gpus()
	// CUDA ordinals: the driver's numbering when it answered, else sysfs order.
	byOrdinal := map[int]gpuView{}
	for i, g := range gpus {
		if g.HasFacts {
			byOrdinal[g.Index] = g
		} else if _, taken := byOrdinal[i]; !taken {
			byOrdinal[i] = g
		}
	}
	var out []Finding
	deviceBytes := map[int]int64{}
	for _, r := range regions {
		f := Finding{Check: cfgCheck, Subject: fmt.Sprintf("memory region %s (%s) GPU", r.Name, r.Kind), Measured: fmt.Sprintf("affinity %d", r.Affinity)}
		g, ok := byOrdinal[r.Affinity]
		switch {
		case len(gpus) == 0:
			f.Status, f.Recommended = StatusFail, "a machine with an NVIDIA GPU, or kind: host / huge"
			f.Message = "no NVIDIA GPU on this machine"
			if why != "" {
				f.Message += " (" + why + ")"
			}
		case !ok:
			f.Status, f.Recommended = StatusFail, fmt.Sprintf("affinity 0..%d", len(gpus)-1)
			f.Message = fmt.Sprintf("GPU ordinal %d does not exist: this machine has %d NVIDIA GPU(s)", r.Affinity, len(gpus))
		case r.Kind == config.KindDevice && g.Integrated == Yes:
			f.Status, f.Recommended = StatusFail, "kind: host_pinned"
			f.Message = "GPU " + g.subject() + " is integrated: the NIC cannot register its device memory (no peermem, no dma-buf); " + sparkGuidance
		case r.Kind == config.KindDevice && g.GPUDirectRDMA == No:
			f.Status, f.Recommended = StatusWarn, "kind: host_pinned"
			f.Message = g.subject() + " reports no GPUDirect RDMA support: NIC engines cannot DMA into its memory"
		default:
			f.Status = StatusOK
			f.Measured += " → " + g.subject()
		}
		if ok && r.Kind == config.KindDevice {
			deviceBytes[r.Affinity] += int64(r.NumBufs) * int64(r.BufSize)
		}
		out = append(out, f)
	}
	ords := make([]int, 0, len(deviceBytes))
	for ord := range deviceBytes {
		ords = append(ords, ord)
	}
	slices.Sort(ords)
	for _, ord := range ords {
		bytes, g := deviceBytes[ord], byOrdinal[ord]
		if g.Integrated == Yes || g.BAR1MiB <= 0 {
			continue
		}
		if bytes>>20 > g.BAR1MiB {
			out = append(out, Finding{Check: cfgCheck, Subject: fmt.Sprintf("GPU %d BAR1", ord), Status: StatusWarn,
				Measured: fmt.Sprintf("%d MiB of device regions", bytes>>20), Recommended: fmt.Sprintf("≤ BAR1 %d MiB", g.BAR1MiB),
				Message: "registered device memory is mapped through BAR1; more than it holds cannot be registered at once",
				Fix:     "firmware setup: enable Above 4G Decoding and Resizable BAR, or shrink the device regions"})
		}
	}
	return out
}
