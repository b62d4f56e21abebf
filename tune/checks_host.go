package tune

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
)

// bootFix is how a kernel boot parameter is added on Debian/Ubuntu-style GRUB systems.
func bootFix(params string) string {
	return fmt.Sprintf("kernel boot line: add %s to GRUB_CMDLINE_LINUX in /etc/default/grub, then: sudo update-grub && sudo reboot", params)
}

// CheckCPUFreq checks that every online CPU's cpufreq governor is "performance" (upstream
// --check cpu-freq): a ramping governor adds latency to the first packets of every burst.
func (s *System) CheckCPUFreq() []Finding {
	const name = "cpu-freq"
	online, err := s.onlineCPUs()
	if err != nil {
		return []Finding{{Check: name, Subject: "cpus", Status: StatusSkip,
			Message: fmt.Sprintf("cannot read the online CPU list: %v", err)}}
	}
	byGov := map[string]CPUSet{}
	var missing, unreadable CPUSet
	available := ""
	for _, c := range online {
		dir := fmt.Sprintf("/sys/devices/system/cpu/cpu%d/cpufreq/", c)
		g, err := s.readString(dir + "scaling_governor")
		switch {
		case err == nil:
			byGov[g] = append(byGov[g], c)
			if available == "" {
				available, _ = s.readString(dir + "scaling_available_governors")
			}
		case isNotExist(err):
			missing = append(missing, c)
		default:
			unreadable = append(unreadable, c)
		}
	}
	subject := func(set CPUSet) string {
		return fmt.Sprintf("cpu %s (%d/%d online)", set, len(set), len(online))
	}
	if len(missing) == len(online) {
		return []Finding{{Check: name, Subject: subject(online), Status: StatusSkip, Measured: "no cpufreq",
			Message: "no CPU frequency scaling driver exposes scaling_governor (usual in VMs and where firmware controls the frequency); nothing to set"}}
	}
	var out []Finding
	govs := make([]string, 0, len(byGov))
	for g := range byGov {
		govs = append(govs, g)
	}
	slices.Sort(govs)
	for _, g := range govs {
		f := Finding{Check: name, Subject: subject(byGov[g]), Measured: g, Recommended: "performance"}
		if g == "performance" {
			f.Status = StatusOK
		} else {
			f.Status = StatusWarn
			f.Message = "a ramping governor delays the first packets of each burst; pin the clock to its maximum"
			f.Fix = fmt.Sprintf("echo performance | sudo tee /sys/devices/system/cpu/%s/cpufreq/scaling_governor", cpuGlob(byGov[g], online))
			if available != "" && !slices.Contains(strings.Fields(available), "performance") {
				f.Message = fmt.Sprintf("the cpufreq driver offers no 'performance' governor (available: %s); set the firmware power profile to maximum performance", available)
				f.Fix = ""
			}
		}
		out = append(out, f)
	}
	if len(missing) > 0 {
		out = append(out, Finding{Check: name, Subject: subject(missing), Status: StatusWarn, Measured: "no scaling_governor",
			Message: "some online CPUs have no cpufreq governor while others do; their frequency cannot be checked"})
	}
	if len(unreadable) > 0 {
		out = append(out, Finding{Check: name, Subject: subject(unreadable), Status: StatusSkip, Measured: "unreadable",
			Message: "scaling_governor could not be read on these CPUs (permission?)"})
	}
	return out
}

// cpuGlob names the sysfs directories of a CPU set for a shell: cpu5, cpu{0,1,2}, or cpu[0-9]*
// when the set is every online CPU.
func cpuGlob(c, online CPUSet) string {
	switch {
	case len(c) == len(online):
		return "cpu[0-9]*"
	case len(c) == 1:
		return "cpu" + strconv.Itoa(c[0])
	}
	parts := make([]string, len(c))
	for i, x := range c {
		parts[i] = strconv.Itoa(x)
	}
	return "cpu{" + strings.Join(parts, ",") + "}"
}

// suggestIsolated proposes worker CPUs to isolate when the boot line names none: the upper
// half of the online CPUs, keeping at least two for the kernel and housekeeping.
func suggestIsolated(online CPUSet) CPUSet {
	keep := max(2, len(online)/2)
	if len(online) <= keep {
		return nil
	}
	return online[keep:]
}

// CheckCmdline checks the kernel boot line for core isolation (upstream --check cmdline):
// isolcpus keeps the scheduler off worker cores, rcu_nocbs moves RCU callbacks off them, and
// irqaffinity keeps device interrupts on the housekeeping cores.
func (s *System) CheckCmdline() []Finding {
	const name = "cmdline"
	params, _, err := s.cmdline()
	if err != nil {
		return []Finding{{Check: name, Subject: "/proc/cmdline", Status: StatusSkip, Message: fmt.Sprintf("cannot read the boot line: %v", err)}}
	}
	online, _ := s.onlineCPUs()
	iso, err := ParseCPUList(params["isolcpus"])
	if err != nil {
		iso = nil
	}
	target := iso
	if len(target) == 0 {
		target = suggestIsolated(online)
	}
	housekeeping := online.Minus(target)
	few := len(target) == 0
	fewMsg := fmt.Sprintf("only %d online CPUs: too few to isolate worker cores (daqiri workers will share cores with the kernel)", len(online))

	var out []Finding
	// isolcpus
	f := Finding{Check: name, Subject: "isolcpus"}
	if v, ok := params["isolcpus"]; ok && len(iso) > 0 {
		f.Status, f.Measured = StatusOK, "isolcpus="+v
		if s, err := s.readString("/sys/devices/system/cpu/isolated"); err == nil {
			if got, _ := ParseCPUList(s); got.String() != iso.String() {
				f.Status = StatusWarn
				f.Message = fmt.Sprintf("the kernel isolated %q, not what isolcpus= asks (%s)", s, iso)
			}
		}
	} else {
		f.Status, f.Measured = StatusWarn, "absent"
		if few {
			f.Message = fewMsg
		} else {
			f.Recommended = "isolcpus=" + target.String()
			f.Message = "worker cores share the scheduler with everything else; isolate the cores given as cpu_core in the daqiri YAML"
			f.Fix = bootFix(fmt.Sprintf("isolcpus=%s nohz_full=%s rcu_nocbs=%s irqaffinity=%s", target, target, target, housekeeping))
		}
	}
	out = append(out, f)

	// rcu_nocbs must cover the isolated cores.
	f = Finding{Check: name, Subject: "rcu_nocbs"}
	if v, ok := params["rcu_nocbs"]; ok {
		f.Measured = "rcu_nocbs=" + v
		nocb, err := ParseCPUList(v)
		switch {
		case v == "" || err != nil:
			// A bare rcu_nocbs (kernel ≥ 5.x) offloads callbacks of all CPUs; accept it.
			f.Status = StatusOK
		case len(target.Minus(nocb)) > 0:
			f.Status, f.Recommended = StatusWarn, "rcu_nocbs="+target.String()
			f.Message = fmt.Sprintf("isolated CPUs %s still run RCU callbacks", target.Minus(nocb))
			f.Fix = bootFix("rcu_nocbs=" + target.String())
		default:
			f.Status = StatusOK
		}
	} else {
		f.Status, f.Measured = StatusWarn, "absent"
		if few {
			f.Message = fewMsg
		} else {
			f.Recommended = "rcu_nocbs=" + target.String()
			f.Message = "RCU callbacks run on worker cores and interrupt polling"
			f.Fix = bootFix("rcu_nocbs=" + target.String())
		}
	}
	out = append(out, f)

	// irqaffinity must avoid the isolated cores.
	f = Finding{Check: name, Subject: "irqaffinity"}
	if v, ok := params["irqaffinity"]; ok {
		f.Measured = "irqaffinity=" + v
		irq, err := ParseCPUList(v)
		overlap := target.Minus(target.Minus(irq))
		switch {
		case err != nil:
			f.Status, f.Message = StatusWarn, err.Error()
		case len(overlap) > 0:
			f.Status, f.Recommended = StatusWarn, "irqaffinity="+housekeeping.String()
			f.Message = fmt.Sprintf("default IRQ affinity includes isolated CPUs %s", overlap)
			f.Fix = bootFix("irqaffinity=" + housekeeping.String())
		default:
			f.Status = StatusOK
		}
	} else {
		f.Status, f.Measured = StatusWarn, "absent"
		if few {
			f.Message = fewMsg
		} else {
			f.Recommended = "irqaffinity=" + housekeeping.String()
			f.Message = "device interrupts may land on worker cores"
			f.Fix = bootFix("irqaffinity=" + housekeeping.String())
		}
	}
	out = append(out, f)
	return out
}

// hugepagePool is one hugepage size's reservation.
type hugepagePool struct {
	SizeKB int64
	Total  int64
	Free   int64
}

// hugepagePools reads /sys/kernel/mm/hugepages/hugepages-<size>kB/{nr,free}_hugepages.
func (s *System) hugepagePools() []hugepagePool {
	ents, err := os.ReadDir(s.path("/sys/kernel/mm/hugepages"))
	if err != nil {
		return nil
	}
	var out []hugepagePool
	for _, e := range ents {
		sz, ok := strings.CutPrefix(e.Name(), "hugepages-")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(sz, "kB"), 10, 64)
		if err != nil {
			continue
		}
		p := hugepagePool{SizeKB: kb}
		dir := "/sys/kernel/mm/hugepages/" + e.Name() + "/"
		p.Total, _ = s.readInt(dir + "nr_hugepages")
		p.Free, _ = s.readInt(dir + "free_hugepages")
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b hugepagePool) int { return int(a.SizeKB - b.SizeKB) })
	return out
}

// minHugeMiB is upstream tune_system.py's threshold (500 MB), rounded to a power of two.
const minHugeMiB = 512

func sizeName(kb int64) string {
	switch {
	case kb >= 1<<20 && kb%(1<<20) == 0:
		return fmt.Sprintf("%d GiB", kb>>20)
	case kb >= 1<<10 && kb%(1<<10) == 0:
		return fmt.Sprintf("%d MiB", kb>>10)
	}
	return fmt.Sprintf("%d kB", kb)
}

// CheckHugepages checks that hugepages of the default size are reserved (upstream --check
// hugepages). daqiri maps `kind: huge` regions with MAP_HUGETLB, which draws on the default
// size's pool, so that is the pool judged; other sizes are reported.
func (s *System) CheckHugepages() []Finding {
	const name = "hugepages"
	mi, err := s.meminfo()
	if err != nil {
		return []Finding{{Check: name, Status: StatusSkip, Message: fmt.Sprintf("cannot read /proc/meminfo: %v", err)}}
	}
	sizeKB, ok := mi["Hugepagesize"]
	if !ok || sizeKB <= 0 {
		return []Finding{{Check: name, Status: StatusSkip, Measured: "no Hugepagesize",
			Message: "the kernel has no hugetlb support; `kind: huge` memory regions cannot be used"}}
	}
	total, free, rsvd := mi["HugePages_Total"], mi["HugePages_Free"], mi["HugePages_Rsvd"]
	totalMiB := total * sizeKB >> 10
	f := Finding{Check: name, Subject: sizeName(sizeKB) + " pages (default size)",
		Measured:    fmt.Sprintf("%d × %s = %d MiB (%d free)", total, sizeName(sizeKB), totalMiB, free-rsvd),
		Recommended: fmt.Sprintf("≥ %d MiB", minHugeMiB)}
	need := (int64(minHugeMiB)<<10 + sizeKB - 1) / sizeKB
	pool := fmt.Sprintf("/sys/kernel/mm/hugepages/hugepages-%dkB/nr_hugepages", sizeKB)
	fix := fmt.Sprintf("echo %d | sudo tee %s\npersistent: echo vm.nr_hugepages=%d | sudo tee /etc/sysctl.d/90-daqiri-hugepages.conf (or boot line hugepages=%d)", need, pool, need, need)
	switch {
	case total == 0:
		f.Status, f.Fix = StatusWarn, fix
		f.Message = "no hugepages reserved: `kind: huge` memory regions will fail to allocate"
	case totalMiB < minHugeMiB:
		f.Status, f.Fix = StatusWarn, fix
		f.Message = "hugepages are reserved but fewer than daqiri's usual regions need; size them with `daqiri-tune check config FILE`"
	default:
		f.Status = StatusOK
	}
	out := []Finding{f}
	for _, p := range s.hugepagePools() {
		if p.SizeKB == sizeKB || p.Total == 0 {
			continue
		}
		out = append(out, Finding{Check: name, Subject: sizeName(p.SizeKB) + " pages", Status: StatusOK,
			Measured: fmt.Sprintf("%d × %s = %d MiB (%d free)", p.Total, sizeName(p.SizeKB), p.Total*p.SizeKB>>10, p.Free),
			Message:  "not the default size: MAP_HUGETLB regions do not use this pool"})
	}
	return out
}

// nodeCPUs reads /sys/devices/system/node/node<n>/cpulist.
func (s *System) nodeCPUs(n int) CPUSet {
	v, err := s.readString(fmt.Sprintf("/sys/devices/system/node/node%d/cpulist", n))
	if err != nil {
		return nil
	}
	c, _ := ParseCPUList(v)
	return c
}

// CheckNUMA reports where NICs, GPUs and isolated cores sit on multi-node machines (upstream
// --check numa checks for libnuma; daqiri is pure Go and needs no libnuma, so this checks
// the placement itself): workers should run on the NIC's node, and a GPU receiving from a
// NIC should be on the same node.
func (s *System) CheckNUMA() []Finding {
	const name = "numa"
	nodes, err := s.numaNodes()
	if err != nil || len(nodes) == 0 {
		msg := "no /sys/devices/system/node: the kernel has no NUMA support"
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			msg = err.Error()
		}
		return []Finding{{Check: name, Status: StatusSkip, Message: msg}}
	}
	if len(nodes) == 1 {
		return []Finding{{Check: name, Subject: "system", Status: StatusOK, Measured: "1 NUMA node",
			Message: "single node: memory and device placement is not a concern"}}
	}
	nics, _ := s.NVIDIANICs()
	gpus, _ := s.nvidiaGPUDevices()
	iso, _, _ := s.isolatedCPUs()
	var out []Finding
	out = append(out, Finding{Check: name, Subject: "system", Status: StatusOK, Measured: fmt.Sprintf("%d NUMA nodes", len(nodes)),
		Message: "give `kind: huge` regions the NIC's node as affinity and choose cpu_core values from that node"})
	for _, d := range nics {
		if d.VF {
			continue
		}
		f := Finding{Check: name, Subject: d.Name()}
		if d.NUMANode < 0 {
			f.Status, f.Measured = StatusWarn, "node unknown (-1)"
			f.Message = "the firmware does not report this NIC's NUMA node; check the platform's ACPI _PXM / BIOS NUMA settings"
			out = append(out, f)
			continue
		}
		cpus := s.nodeCPUs(d.NUMANode)
		f.Measured = fmt.Sprintf("node %d (cpus %s)", d.NUMANode, cpus)
		f.Status = StatusOK
		if len(iso) > 0 {
			local := iso.Minus(iso.Minus(cpus))
			f.Recommended = fmt.Sprintf("cpu_core in %s", cpus)
			if len(local) == 0 {
				f.Status = StatusWarn
				f.Message = fmt.Sprintf("no isolated CPU (%s) is on this NIC's node: workers polling it cross the socket interconnect", iso)
			} else {
				f.Message = fmt.Sprintf("isolated CPUs on this node: %s", local)
			}
		}
		out = append(out, f)
	}
	for _, g := range gpus {
		if g.NUMANode < 0 || len(nics) == 0 {
			continue
		}
		same := false
		for _, n := range nics {
			if n.NUMANode == g.NUMANode {
				same = true
			}
		}
		f := Finding{Check: name, Subject: "GPU " + g.BDF, Measured: fmt.Sprintf("node %d", g.NUMANode), Status: StatusOK}
		if !same {
			f.Status = StatusWarn
			f.Message = "no NVIDIA NIC is on this GPU's NUMA node: GPUDirect traffic crosses the socket interconnect"
			f.Fix = "hardware: move the GPU or NIC into slots of one socket"
		}
		out = append(out, f)
	}
	return out
}
