package tune

import (
	"fmt"
	"strings"
)

// Check is one named check.
type Check struct {
	Name string                  // as typed after `daqiri-tune check`
	Help string                  // one line for usage text
	Run  func(*System) []Finding // never nil findings for a check that ran
}

// Checks lists every machine check in the order `check all` runs them (upstream's order).
var Checks = []Check{
	{"cpu-freq", "CPU frequency governor of every online CPU is 'performance'", (*System).CheckCPUFreq},
	{"mrrs", "PCIe Max Read Request Size of NVIDIA NICs is 4096 B", (*System).CheckMRRS},
	{"mps", "PCIe Max Payload Size of NVIDIA NICs is the largest the path supports", (*System).CheckMPS},
	{"hugepages", "hugepages of the default size are reserved (≥ 512 MiB)", (*System).CheckHugepages},
	{"numa", "NUMA placement of NICs, GPUs and isolated cores", (*System).CheckNUMA},
	{"gpu-clock", "GPU SM and memory clocks run at their maximum", (*System).CheckGPUClock},
	{"bar1-size", "GPU BAR1 aperture is large (Resizable BAR on)", (*System).CheckBAR1},
	{"topo", "each discrete GPU shares a PCIe switch (PIX/PXB) with an NVIDIA NIC", (*System).CheckTopo},
	{"schematic", "PCIe tree as an SVG picture (--schematic-output FILE) and each GPU's path to NICs and NVMe", (*System).CheckSchematic},
	{"cmdline", "kernel boot line isolates worker cores (isolcpus, rcu_nocbs, irqaffinity)", (*System).CheckCmdline},
	{"mtu", "MTU of NVIDIA NIC interfaces allows jumbo frames", (*System).CheckMTU},
	{"gpudirect", "GPUs support GPUDirect RDMA (or are integrated: use host_pinned)", (*System).CheckGPUDirect},
	{"peermem", "nvidia-peermem is loaded, or a DMA-BUF / integrated-GPU path makes it unnecessary", (*System).CheckPeermem},
}

// aliases are upstream spellings accepted as well.
var aliases = map[string]string{"gpu-clocks": "gpu-clock"}

// CheckNames returns the names accepted by Run, "all" first.
func CheckNames() []string {
	names := []string{"all"}
	for _, c := range Checks {
		names = append(names, c.Name)
	}
	return names
}

// Run runs the named check, or every check for "all".
func (s *System) Run(name string) ([]Finding, error) {
	if a, ok := aliases[name]; ok {
		name = a
	}
	var out []Finding
	for _, c := range Checks {
		if name == "all" || name == c.Name {
			out = append(out, c.Run(s)...)
			if name != "all" {
				return out, nil
			}
		}
	}
	if name != "all" {
		return nil, fmt.Errorf("unknown check %q; known checks: %s, config FILE", name, strings.Join(CheckNames(), ", "))
	}
	return out, nil
}
