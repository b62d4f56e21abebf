package tune

import (
	"fmt"
	"strings"
	"testing"
)

// want is an expected finding: check, a substring of the subject, status, and the exact
// measured value ("*" accepts any).
type want struct {
	check, subject string
	status         Status
	measured       string
}

// assertFindings checks that the findings are exactly the expected ones, in order.
func assertFindings(t *testing.T, got []Finding, wants []want) {
	t.Helper()
	if len(got) != len(wants) {
		var b strings.Builder
		for _, f := range got {
			fmt.Fprintf(&b, "\n  %s | %s | %s | %s", f.Check, f.Subject, f.Status, f.Measured)
		}
		t.Fatalf("got %d findings, want %d:%s", len(got), len(wants), b.String())
	}
	for i, w := range wants {
		f := got[i]
		if f.Check != w.check || !strings.Contains(f.Subject, w.subject) || f.Status != w.status ||
			(w.measured != "*" && f.Measured != w.measured) {
			t.Errorf("finding %d = {%s | %s | %s | %q}, want {%s | ~%s | %s | %q}", i, f.Check, f.Subject, f.Status, f.Measured,
				w.check, w.subject, w.status, w.measured)
		}
		if f.Status == StatusWarn || f.Status == StatusFail {
			if f.Message == "" {
				t.Errorf("finding %d (%s %s) is %s without a message", i, f.Check, f.Subject, f.Status)
			}
		}
	}
}

// The three fixture boxes, every check, every finding.

func TestIGXAllChecks(t *testing.T) {
	s := fixtureSystem(t, "igx")
	got, err := s.Run("all")
	if err != nil {
		t.Fatal(err)
	}
	assertFindings(t, got, []want{
		{"cpu-freq", "cpu 4-11", StatusOK, "performance"},
		{"cpu-freq", "cpu 0-3", StatusWarn, "schedutil"},
		{"mrrs", "enP5p4s0f0np0 mlx5_0 0005:04:00.0", StatusWarn, "512 B"},
		{"mrrs", "enP5p4s0f1np1 mlx5_1 0005:04:00.1", StatusOK, "4096 B"},
		{"mps", "0005:04:00.0", StatusWarn, "256 B"},
		{"mps", "0005:04:00.1", StatusOK, "512 B"},
		{"hugepages", "2 MiB pages (default size)", StatusOK, "1024 × 2 MiB = 2048 MiB (1024 free)"},
		{"numa", "system", StatusOK, "1 NUMA node"},
		{"gpu-clock", "GPU0 0005:03:00.0 (NVIDIA RTX 6000 Ada Generation) SM", StatusWarn, "210 MHz"},
		{"gpu-clock", "GPU0 0005:03:00.0 (NVIDIA RTX 6000 Ada Generation) memory", StatusOK, "10001 MHz"},
		{"bar1-size", "GPU0 0005:03:00.0", StatusWarn, "256 MiB"},
		{"topo", "GPU0 0005:03:00.0", StatusOK, "PIX to enP5p4s0f0np0 mlx5_0 0005:04:00.0"},
		{"schematic", "PCIe tree", StatusOK, "9 devices under 2 root complexes"},
		{"schematic", "GPU0 0005:03:00.0", StatusOK, "PIX to enP5p4s0f0np0 mlx5_0 0005:04:00.0"},
		{"cmdline", "isolcpus", StatusOK, "isolcpus=4-7"},
		{"cmdline", "rcu_nocbs", StatusOK, "rcu_nocbs=4-7"},
		{"cmdline", "irqaffinity", StatusWarn, "absent"},
		{"mtu", "enP5p4s0f0np0 0005:04:00.0", StatusWarn, "1500"},
		{"mtu", "enP5p4s0f1np1 0005:04:00.1", StatusOK, "9000"},
		{"gpudirect", "GPU0 0005:03:00.0", StatusOK, "supported (dma-buf too)"},
		{"peermem", "nvidia_peermem", StatusOK, "loaded"},
	})
	byKey := map[string]Finding{}
	for _, f := range got {
		byKey[f.Check+" "+f.Subject] = f
	}
	// The fixes are exact commands for the measured problem.
	fixes := map[string]string{
		"cpu-freq cpu 0-3 (4/12 online)":                                  "echo performance | sudo tee /sys/devices/system/cpu/cpu{0,1,2,3}/cpufreq/scaling_governor",
		"mrrs enP5p4s0f0np0 mlx5_0 0005:04:00.0":                          "sudo daqiri-tune set mrrs 0005:04:00.0",
		"mps enP5p4s0f0np0 mlx5_0 0005:04:00.0":                           "pci=pcie_bus_safe",
		"cmdline irqaffinity":                                             "irqaffinity=0-3,8-11",
		"mtu enP5p4s0f0np0 0005:04:00.0":                                  "sudo ip link set dev enP5p4s0f0np0 mtu 9000",
		"bar1-size GPU0 0005:03:00.0 (NVIDIA RTX 6000 Ada Generation)":    "Resizable BAR",
		"gpu-clock GPU0 0005:03:00.0 (NVIDIA RTX 6000 Ada Generation) SM": "sudo nvidia-smi -i 0005:03:00.0 -pm 1 && sudo nvidia-smi -i 0005:03:00.0 --lock-gpu-clocks=3105,3105",
	}
	for key, fix := range fixes {
		f, ok := byKey[key]
		if !ok {
			t.Errorf("no finding %q", key)
			continue
		}
		if !strings.Contains(f.Fix, fix) {
			t.Errorf("%s: fix %q does not contain %q", key, f.Fix, fix)
		}
	}
	if f := byKey["cmdline irqaffinity"]; f.Recommended != "irqaffinity=0-3,8-11" {
		t.Errorf("irqaffinity recommended %q, want the non-isolated CPUs 0-3,8-11", f.Recommended)
	}
}

func TestSparkAllChecks(t *testing.T) {
	s := fixtureSystem(t, "spark")
	got, err := s.Run("all")
	if err != nil {
		t.Fatal(err)
	}
	assertFindings(t, got, []want{
		{"cpu-freq", "cpu 0-19 (20/20 online)", StatusOK, "performance"},
		{"mrrs", "0000:01:00.0", StatusOK, "4096 B"},
		{"mrrs", "0000:01:00.1", StatusOK, "4096 B"},
		{"mrrs", "enP2p1s0f0np0 roceP2p1s0f0 0002:01:00.0", StatusWarn, "512 B"},
		{"mrrs", "0002:01:00.1", StatusWarn, "512 B"},
		{"mps", "0000:01:00.0", StatusOK, "512 B"},
		{"mps", "0000:01:00.1", StatusOK, "512 B"},
		{"mps", "0002:01:00.0", StatusOK, "256 B"}, // limited by the root port, not a warning
		{"mps", "0002:01:00.1", StatusOK, "256 B"},
		{"hugepages", "2 MiB pages", StatusWarn, "0 × 2 MiB = 0 MiB (0 free)"},
		{"numa", "system", StatusOK, "1 NUMA node"},
		{"gpu-clock", "GPU0 000f:01:00.0 (NVIDIA GB10) SM", StatusOK, "2800 MHz"},
		{"gpu-clock", "GPU0 000f:01:00.0 (NVIDIA GB10) memory", StatusSkip, "N/A"},
		{"bar1-size", "NVIDIA GB10", StatusSkip, "integrated GPU"},
		{"topo", "NVIDIA GB10", StatusSkip, "integrated GPU"},
		{"schematic", "PCIe tree", StatusOK, "8 devices under 3 root complexes"},
		{"schematic", "NVIDIA GB10", StatusSkip, "integrated GPU"},
		{"cmdline", "isolcpus", StatusOK, "isolcpus=16-19"},
		{"cmdline", "rcu_nocbs", StatusOK, "rcu_nocbs=16-19"},
		{"cmdline", "irqaffinity", StatusOK, "irqaffinity=0-15"},
		{"mtu", "enp1s0f0np0", StatusOK, "9000"},
		{"mtu", "enp1s0f1np1", StatusWarn, "1500"},
		{"mtu", "enP2p1s0f0np0", StatusWarn, "1500"},
		{"mtu", "enP2p1s0f1np1", StatusOK, "9000"},
		{"gpudirect", "NVIDIA GB10", StatusOK, "integrated GPU"},
		{"peermem", "nvidia_peermem", StatusOK, "not loaded (not needed)"},
	})
	// Spark guidance instead of discrete-GPU warnings.
	for _, f := range got {
		switch f.Check {
		case "bar1-size", "topo", "gpudirect", "peermem", "schematic":
			if f.Subject == "PCIe tree" {
				continue
			}
			if !strings.Contains(f.Message, "host_pinned") {
				t.Errorf("%s on the integrated GB10 lacks the host_pinned guidance: %q", f.Check, f.Message)
			}
		case "mps":
			if strings.HasPrefix(f.Subject, "enP2") && !strings.Contains(f.Message, "0002:00:00.0") {
				t.Errorf("mps of a root-port-limited NIC should name the limiting port: %q", f.Message)
			}
		}
	}
}

func TestX86AllChecks(t *testing.T) {
	s := fixtureSystem(t, "x86")
	got, err := s.Run("all")
	if err != nil {
		t.Fatal(err)
	}
	assertFindings(t, got, []want{
		{"cpu-freq", "cpu 0-7 (8/8 online)", StatusWarn, "powersave"},
		{"mrrs", "NVIDIA NIC", StatusSkip, "none"},
		{"mps", "NVIDIA NIC", StatusSkip, "none"},
		{"hugepages", "2 MiB pages", StatusWarn, "0 × 2 MiB = 0 MiB (0 free)"},
		{"numa", "system", StatusOK, "2 NUMA nodes"},
		{"gpu-clock", "NVIDIA GPU", StatusSkip, "no NVIDIA GPU"},
		{"bar1-size", "NVIDIA GPU", StatusSkip, "no NVIDIA GPU"},
		{"topo", "NVIDIA GPU", StatusSkip, "no NVIDIA GPU"},
		{"schematic", "PCIe tree", StatusOK, "3 devices under 1 root complex"},
		{"schematic", "NVIDIA GPU", StatusSkip, "no NVIDIA GPU"},
		{"cmdline", "isolcpus", StatusWarn, "absent"},
		{"cmdline", "rcu_nocbs", StatusWarn, "absent"},
		{"cmdline", "irqaffinity", StatusWarn, "absent"},
		{"mtu", "NVIDIA NIC", StatusSkip, "none"},
		{"gpudirect", "NVIDIA GPU", StatusSkip, "no NVIDIA GPU"},
		{"peermem", "NVIDIA GPU", StatusSkip, "no NVIDIA GPU"},
	})
	if w := Worst(got); w == StatusFail {
		t.Errorf("a plain box without NVIDIA hardware must not FAIL, got worst %s", w)
	}
	for _, f := range got {
		if f.Check == "cpu-freq" && f.Fix != "echo performance | sudo tee /sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor" {
			t.Errorf("cpu-freq fix for all CPUs = %q", f.Fix)
		}
		if f.Check == "cmdline" && f.Subject == "isolcpus" && f.Recommended != "isolcpus=4-7" {
			t.Errorf("suggested isolcpus = %q, want the upper half 4-7", f.Recommended)
		}
	}
}

func TestRunSingleChecksAndAliases(t *testing.T) {
	s := fixtureSystem(t, "igx")
	for _, c := range Checks {
		got, err := s.Run(c.Name)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if len(got) == 0 {
			t.Errorf("%s: no findings", c.Name)
		}
		for _, f := range got {
			if f.Check != c.Name {
				t.Errorf("check %s produced a finding for %s", c.Name, f.Check)
			}
		}
	}
	got, err := s.Run("gpu-clocks") // upstream's spelling
	if err != nil || len(got) != 2 || got[0].Check != "gpu-clock" {
		t.Errorf("gpu-clocks alias: %v %v", got, err)
	}
	if _, err := s.Run("bogus"); err == nil || !strings.Contains(err.Error(), "unknown check \"bogus\"") {
		t.Errorf("unknown check error = %v", err)
	}
}

// Without root, sysfs shows only 64 bytes of config space: MRRS/MPS must say so, not guess.
func TestMRRSUnprivilegedConfig(t *testing.T) {
	s := writableFixture(t, "igx")
	truncateConfig(t, s, "0005:04:00.0", cfgStdHeader)
	got := s.CheckMRRS()
	if got[0].Status != StatusSkip || !strings.Contains(got[0].Message, "needs root") {
		t.Errorf("truncated config: %+v", got[0])
	}
	if got[1].Status != StatusOK {
		t.Errorf("other port unaffected: %+v", got[1])
	}
	if m := s.CheckMPS(); m[0].Status != StatusSkip || !strings.Contains(m[0].Message, "run as root") {
		t.Errorf("mps on truncated config: %+v", m[0])
	}
}

func TestNoCPUFreqIsSkip(t *testing.T) {
	tr := newTree()
	tr.cpus("0-3", "", func(int) string { return "" }, "")
	s := buildSystem(t, tr, GPUFacts{})
	got := s.CheckCPUFreq()
	if len(got) != 1 || got[0].Status != StatusSkip || got[0].Measured != "no cpufreq" {
		t.Errorf("VM without cpufreq: %+v", got)
	}
	// A performance-less driver gets firmware advice instead of a command that would fail.
	tr = newTree()
	tr.cpus("0-1", "", func(int) string { return "powersave" }, "powersave")
	got = buildSystem(t, tr, GPUFacts{}).CheckCPUFreq()
	if got[0].Status != StatusWarn || got[0].Fix != "" || !strings.Contains(got[0].Message, "no 'performance' governor") {
		t.Errorf("driver without performance governor: %+v", got[0])
	}
}

func TestCmdlineConsistency(t *testing.T) {
	tr := newTree()
	tr.cpus("0-7", "4-7", func(int) string { return "performance" }, "performance")
	tr.file("/proc/cmdline", "root=/dev/sda1 isolcpus=managed_irq,domain,4-7 rcu_nocbs=4-5 irqaffinity=0-4 -- isolcpus=0\n")
	got := buildSystem(t, tr, GPUFacts{}).CheckCmdline()
	assertFindings(t, got, []want{
		{"cmdline", "isolcpus", StatusOK, "isolcpus=managed_irq,domain,4-7"},
		{"cmdline", "rcu_nocbs", StatusWarn, "rcu_nocbs=4-5"},
		{"cmdline", "irqaffinity", StatusWarn, "irqaffinity=0-4"},
	})
	if got[1].Recommended != "rcu_nocbs=4-7" || got[2].Recommended != "irqaffinity=0-3" {
		t.Errorf("recommendations: %q %q", got[1].Recommended, got[2].Recommended)
	}
}

// Topology classes other than PIX, and NUMA placement, on small synthetic machines.
func TestTopoClassesAndNUMA(t *testing.T) {
	gpu := func(parent, bdf string, numa int) dev {
		return dev{parent: parent, bdf: bdf, vendor: VendorNVIDIA, device: 0x2330, class: 0x030200, numa: numa,
			exp: &pcie{typ: expTypeEndpoint, mpsCap: 2, mps: 2, mrrs: 2, gen: 5, lns: 16}}
	}
	nic := func(parent, bdf string, numa int) dev {
		return dev{parent: parent, bdf: bdf, vendor: VendorMellanox, device: 0x1021, class: 0x020000, numa: numa,
			net: map[string]int{"ib" + strings.ReplaceAll(bdf[5:7], ":", ""): 9000},
			exp: &pcie{typ: expTypeEndpoint, mpsCap: 2, mps: 2, mrrs: 5, gen: 5, lns: 16}}
	}
	port := func(parent, bdf string, typ int) dev {
		return dev{parent: parent, bdf: bdf, vendor: 0x1000, device: 0xc030, class: 0x060400, numa: 0,
			exp: &pcie{typ: typ, mpsCap: 2, mps: 2, gen: 5, lns: 16}}
	}
	facts := func(buses ...string) GPUFacts {
		f := GPUFacts{Source: "test"}
		for i, b := range buses {
			g := NewGPU()
			g.Index, g.Name, g.BusID, g.Integrated = i, "NVIDIA H100", b, No
			f.GPUs = append(f.GPUs, g)
		}
		return f
	}
	cases := []struct {
		name  string
		devs  []dev
		gpus  []string
		nodes []string
		want  string
		stat  Status
	}{
		{
			name: "PXB: two switch levels",
			devs: func() []dev {
				rp := port("/sys/devices/pci0000:00", "0000:00:01.0", expTypeRootPort)
				u1 := port(rp.dir(), "0000:01:00.0", expTypeUpstream)
				da := port(u1.dir(), "0000:02:00.0", expTypeDownstream)
				db := port(u1.dir(), "0000:02:01.0", expTypeDownstream)
				u2 := port(da.dir(), "0000:03:00.0", expTypeUpstream)
				dc := port(u2.dir(), "0000:04:00.0", expTypeDownstream)
				return []dev{rp, u1, da, db, u2, dc, gpu(dc.dir(), "0000:05:00.0", 0), nic(db.dir(), "0000:06:00.0", 0)}
			}(),
			gpus: []string{"0000:05:00.0"}, nodes: []string{"0-3"}, want: "PXB", stat: StatusOK,
		},
		{
			name: "PHB: different root ports of one host bridge",
			devs: func() []dev {
				a := port("/sys/devices/pci0000:00", "0000:00:01.0", expTypeRootPort)
				b := port("/sys/devices/pci0000:00", "0000:00:02.0", expTypeRootPort)
				return []dev{a, b, gpu(a.dir(), "0000:01:00.0", 0), nic(b.dir(), "0000:02:00.0", 0)}
			}(),
			gpus: []string{"0000:01:00.0"}, nodes: []string{"0-3"}, want: "PHB", stat: StatusWarn,
		},
		{
			name: "NODE: host bridges of one NUMA node",
			devs: func() []dev {
				a := port("/sys/devices/pci0000:00", "0000:00:01.0", expTypeRootPort)
				b := port("/sys/devices/pci0000:40", "0000:40:01.0", expTypeRootPort)
				return []dev{a, b, gpu(a.dir(), "0000:01:00.0", 0), nic(b.dir(), "0000:41:00.0", 0)}
			}(),
			gpus: []string{"0000:01:00.0"}, nodes: []string{"0-3", "4-7"}, want: "NODE", stat: StatusWarn,
		},
		{
			name: "SYS: across NUMA nodes",
			devs: func() []dev {
				a := port("/sys/devices/pci0000:00", "0000:00:01.0", expTypeRootPort)
				b := port("/sys/devices/pci0000:80", "0000:80:01.0", expTypeRootPort)
				return []dev{a, b, gpu(a.dir(), "0000:01:00.0", 0), nic(b.dir(), "0000:81:00.0", 1)}
			}(),
			gpus: []string{"0000:01:00.0"}, nodes: []string{"0-3", "4-7"}, want: "SYS", stat: StatusWarn,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := newTree()
			tr.cpus("0-7", "2-3", func(int) string { return "performance" }, "performance")
			tr.nodes(c.nodes...)
			for _, d := range c.devs {
				tr.pci(d)
			}
			s := buildSystem(t, tr, facts(c.gpus...))
			got := s.CheckTopo()
			if len(got) != 1 || got[0].Status != c.stat || !strings.HasPrefix(got[0].Measured, c.want+" to ") {
				t.Fatalf("topo = %+v, want %s %s", got, c.stat, c.want)
			}
			if c.stat == StatusWarn && got[0].Fix == "" {
				t.Error("a far GPU↔NIC path needs a fix line")
			}
			if c.name == "SYS: across NUMA nodes" {
				numa := s.CheckNUMA()
				// system, the NIC (node 1 has no isolated CPU: 2-3 are on node 0), the GPU (no NIC on node 0).
				assertFindings(t, numa, []want{
					{"numa", "system", StatusOK, "2 NUMA nodes"},
					{"numa", "0000:81:00.0", StatusWarn, "node 1 (cpus 4-7)"},
					{"numa", "GPU 0000:01:00.0", StatusWarn, "node 0"},
				})
			}
		})
	}
}

func TestGPUWithoutDriverFacts(t *testing.T) {
	// sysfs shows an NVIDIA GPU but no driver library answered: skip with the reason, and
	// read BAR1 from the PCI resource file.
	tr := newTree()
	tr.cpus("0-3", "", func(int) string { return "" }, "")
	tr.pci(dev{parent: "/sys/devices/pci0000:00", bdf: "0000:17:00.0", vendor: VendorNVIDIA, device: 0x2330, class: 0x030200, numa: 0,
		resource: resourceLines(0x20000000000, 16*mib, 128*gib, 0, 32*mib)})
	s := buildSystem(t, tr, GPUFacts{Source: "none", Note: "NVML: libnvidia-ml.so.1 not found"})
	clk := s.CheckGPUClock()
	if len(clk) != 1 || clk[0].Status != StatusSkip || !strings.Contains(clk[0].Message, "libnvidia-ml.so.1 not found") {
		t.Errorf("gpu-clock without driver: %+v", clk)
	}
	bar := s.CheckBAR1()
	if len(bar) != 1 || bar[0].Status != StatusOK || bar[0].Measured != "131072 MiB (sysfs resource)" {
		t.Errorf("bar1 from sysfs: %+v", bar)
	}
	if p := s.CheckPeermem(); p[0].Status != StatusWarn || !strings.Contains(p[0].Fix, "modprobe nvidia-peermem") {
		t.Errorf("peermem on a discrete GPU without module or dma-buf: %+v", p)
	}
	tr.file("/dev/dma_heap/system", "")
	if p := buildSystem(t, tr, GPUFacts{}).CheckPeermem(); p[0].Status != StatusOK || !strings.Contains(p[0].Measured, "DMA-BUF") {
		t.Errorf("peermem with /dev/dma_heap/system: %+v", p)
	}
}

func TestBAR1Blackwell(t *testing.T) {
	g := NewGPU()
	g.Name, g.BusID, g.Integrated, g.BAR1MiB = "NVIDIA RTX PRO 6000 Blackwell Server Edition", "0000:3b:00.0", No, 16384
	s := buildSystem(t, newTree(), GPUFacts{GPUs: []GPU{g}})
	if b := s.CheckBAR1(); b[0].Status != StatusWarn || b[0].Recommended != "≥ 32768 MiB" {
		t.Errorf("Blackwell with 16 GiB BAR1: %+v", b[0])
	}
	g.BAR1MiB = 32768
	s = buildSystem(t, newTree(), GPUFacts{GPUs: []GPU{g}})
	if b := s.CheckBAR1(); b[0].Status != StatusOK {
		t.Errorf("Blackwell with 32 GiB BAR1: %+v", b[0])
	}
}
