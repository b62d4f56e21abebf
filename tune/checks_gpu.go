package tune

import (
	"fmt"
	"strings"
)

// sparkGuidance is what integrated-GPU platforms (DGX Spark / GB10, Orin) are told instead
// of discrete-GPU warnings.
const sparkGuidance = "integrated GPU (unified memory, e.g. GB10 / DGX Spark): use `kind: host_pinned` memory regions for GPU data; BAR1, nvidia-peermem and PCIe switch topology do not apply"

// gpuView is one GPU as the checks see it: driver facts and, when sysfs shows it, its PCI
// function.
type gpuView struct {
	GPU
	PCI      *PCIDevice
	HasFacts bool // the driver (NVML / CUDA / nvidia-smi) reported this GPU
}

// subject names a GPU in findings.
func (g gpuView) subject() string {
	s := fmt.Sprintf("GPU%d", g.Index)
	if !g.HasFacts {
		s = "GPU"
	}
	if g.BusID != "" {
		s += " " + g.BusID
	}
	if g.Name != "" {
		s += " (" + g.Name + ")"
	}
	return s
}

// gpus merges driver facts with the NVIDIA display functions in sysfs. The second result
// explains an empty list or missing facts.
func (s *System) gpus() ([]gpuView, string) {
	facts, err := s.gpuFacts()
	devs, _ := s.nvidiaGPUDevices()
	byBus := map[string]int{}
	var out []gpuView
	for _, g := range facts.GPUs {
		v := gpuView{GPU: g, HasFacts: true}
		for i := range devs {
			if devs[i].BDF == g.BusID {
				v.PCI = &devs[i]
			}
		}
		byBus[g.BusID] = len(out)
		out = append(out, v)
	}
	for i := range devs {
		if _, ok := byBus[devs[i].BDF]; ok {
			continue
		}
		g := NewGPU()
		g.BusID = devs[i].BDF
		g.Name = fmt.Sprintf("NVIDIA device 0x%04x", devs[i].Device)
		if integratedName(g.Name) {
			g.Integrated = Yes
		}
		out = append(out, gpuView{GPU: g, PCI: &devs[i]})
	}
	why := facts.Note
	if err != nil {
		why = "GPU facts: " + err.Error()
	}
	if len(out) == 0 {
		msg := "no NVIDIA display controller under /sys/bus/pci/devices and no GPU reported by the driver"
		if why != "" {
			msg += " (" + why + ")"
		}
		why = msg
	}
	return out, why
}

// noGPU is the finding for GPU checks on a machine without an NVIDIA GPU: not a failure,
// since daqiri works with host memory alone.
func noGPU(check, why string) []Finding {
	return []Finding{{Check: check, Subject: "NVIDIA GPU", Status: StatusSkip, Measured: "no NVIDIA GPU", Message: why}}
}

// noFacts is the finding for a GPU sysfs shows but no driver library described.
func noFacts(check string, g gpuView, why string) Finding {
	msg := "the NVIDIA driver did not describe this GPU (NVML, CUDA and nvidia-smi unavailable or failed)"
	if why != "" {
		msg += ": " + why
	}
	return Finding{Check: check, Subject: g.subject(), Status: StatusSkip, Measured: "no driver facts", Message: msg}
}

// smTolerance and memTolerance are upstream's margins: a boost clock set as the maximum
// may not read back exactly, and nvidia-smi may report memory 1 MHz under its maximum.
const (
	smToleranceMHz  = 500
	memToleranceMHz = 1
)

// CheckGPUClock checks that each GPU's SM and memory clocks run at their maximum (upstream
// --check gpu-clocks): an idle-clocked GPU adds latency when packets start to arrive.
func (s *System) CheckGPUClock() []Finding {
	const name = "gpu-clock"
	gpus, why := s.gpus()
	if len(gpus) == 0 {
		return noGPU(name, why)
	}
	var out []Finding
	for _, g := range gpus {
		if !g.HasFacts {
			out = append(out, noFacts(name, g, why))
			continue
		}
		sel := g.BusID
		if sel == "" {
			sel = fmt.Sprint(g.Index)
		}
		sm := Finding{Check: name, Subject: g.subject() + " SM"}
		switch {
		case g.SMClockMaxMHz < 0:
			sm.Status, sm.Measured = StatusSkip, "N/A"
			sm.Message = "the driver reports no maximum SM clock for this GPU"
		case g.SMClockMHz < 0:
			sm.Status, sm.Measured = StatusWarn, "N/A"
			sm.Message = fmt.Sprintf("maximum SM clock is %d MHz but the current one is not reported", g.SMClockMaxMHz)
		default:
			sm.Measured = fmt.Sprintf("%d MHz", g.SMClockMHz)
			sm.Recommended = fmt.Sprintf("%d MHz (within %d)", g.SMClockMaxMHz, smToleranceMHz)
			if g.SMClockMaxMHz-g.SMClockMHz > smToleranceMHz {
				sm.Status = StatusWarn
				sm.Message = "the SM clock idles low and ramps up only under load"
				sm.Fix = fmt.Sprintf("sudo nvidia-smi -i %s -pm 1 && sudo nvidia-smi -i %s --lock-gpu-clocks=%d,%d", sel, sel, g.SMClockMaxMHz, g.SMClockMaxMHz)
			} else {
				sm.Status = StatusOK
			}
		}
		mem := Finding{Check: name, Subject: g.subject() + " memory"}
		switch {
		case g.MemClockMaxMHz < 0:
			mem.Status, mem.Measured = StatusSkip, "N/A"
			mem.Message = "the driver reports no maximum memory clock for this GPU"
			if g.Integrated == Yes {
				mem.Message = "integrated GPU: memory is the CPU's, with no separate GPU memory clock"
			}
		case g.MemClockMHz < 0:
			mem.Status, mem.Measured = StatusWarn, "N/A"
			mem.Message = fmt.Sprintf("maximum memory clock is %d MHz but the current one is not reported", g.MemClockMaxMHz)
		default:
			mem.Measured = fmt.Sprintf("%d MHz", g.MemClockMHz)
			mem.Recommended = fmt.Sprintf("%d MHz", g.MemClockMaxMHz)
			if g.MemClockMaxMHz-g.MemClockMHz > memToleranceMHz {
				mem.Status = StatusWarn
				mem.Message = "the memory clock is below its maximum"
				mem.Fix = fmt.Sprintf("sudo nvidia-smi -i %s -pm 1 && sudo nvidia-smi -i %s --lock-memory-clocks=%d,%d", sel, sel, g.MemClockMaxMHz, g.MemClockMaxMHz)
			} else {
				mem.Status = StatusOK
			}
		}
		out = append(out, sm, mem)
	}
	return out
}

// BAR1 thresholds (upstream tune_system.py): a BAR1 of 1 GiB or less means Resizable BAR is
// off; the RTX PRO 6000 Blackwell Server Edition needs ≥ 32 GiB for it to count as on.
const (
	bar1MinMiB          = 1024
	bar1BlackwellMinMiB = 32768
)

// CheckBAR1 checks each discrete GPU's BAR1 aperture (upstream --check bar1-size): the NIC
// reaches GPU memory through BAR1, so it bounds how much `kind: device` memory can be
// registered for GPUDirect RDMA.
func (s *System) CheckBAR1() []Finding {
	const name = "bar1-size"
	gpus, why := s.gpus()
	if len(gpus) == 0 {
		return noGPU(name, why)
	}
	var out []Finding
	for _, g := range gpus {
		f := Finding{Check: name, Subject: g.subject()}
		if g.Integrated == Yes {
			f.Status, f.Measured, f.Message = StatusSkip, "integrated GPU", sparkGuidance
			out = append(out, f)
			continue
		}
		mib, from := g.BAR1MiB, "driver"
		if mib < 0 && g.PCI != nil {
			// No driver answer: the size of PCI BAR1 itself (sysfs resource line 1) is the
			// same aperture.
			if sizes, err := barSizes(*g.PCI); err == nil && len(sizes) > 1 && sizes[1] > 0 {
				mib, from = int64(sizes[1]>>20), "sysfs resource"
			}
		}
		if mib < 0 {
			f.Status, f.Measured = StatusSkip, "unknown"
			f.Message = "neither the driver nor sysfs reports the BAR1 size"
			if !g.HasFacts && why != "" {
				f.Message += ": " + why
			}
			out = append(out, f)
			continue
		}
		f.Measured = fmt.Sprintf("%d MiB", mib)
		if from != "driver" {
			f.Measured += " (" + from + ")"
		}
		floor := int64(bar1MinMiB)
		f.Recommended = fmt.Sprintf("> %d MiB", bar1MinMiB)
		if strings.Contains(g.Name, "Blackwell Server Edition") {
			floor = bar1BlackwellMinMiB
			f.Recommended = fmt.Sprintf("≥ %d MiB", bar1BlackwellMinMiB)
		}
		ok := mib > floor || (floor == bar1BlackwellMinMiB && mib >= floor)
		if ok {
			f.Status = StatusOK
		} else {
			f.Status = StatusWarn
			f.Message = "a small BAR1 limits how much GPU memory the NIC can reach (Resizable BAR is off)"
			f.Fix = "firmware setup: enable Above 4G Decoding and Resizable BAR, then reboot"
		}
		out = append(out, f)
	}
	return out
}

// CheckTopo checks that each discrete GPU reaches an NVIDIA NIC through a PCIe switch (PIX
// or PXB in nvidia-smi topo -m terms) rather than through the CPU's host bridge or the
// socket interconnect (upstream --check topo). The path is read from sysfs.
func (s *System) CheckTopo() []Finding {
	const name = "topo"
	gpus, why := s.gpus()
	if len(gpus) == 0 {
		return noGPU(name, why)
	}
	nics, err := s.NVIDIANICs()
	if len(nics) == 0 {
		return noNIC(name, err)
	}
	var out []Finding
	for _, g := range gpus {
		f := Finding{Check: name, Subject: g.subject(), Recommended: "PIX or PXB"}
		switch {
		case g.Integrated == Yes:
			f.Status, f.Measured, f.Recommended, f.Message = StatusSkip, "integrated GPU", "", sparkGuidance
		case g.PCI == nil:
			f.Status, f.Measured = StatusSkip, "not in sysfs"
			f.Message = "the GPU's PCI function is not visible under /sys/bus/pci/devices (container or VM?)"
		default:
			best, bestNIC := "", ""
			for _, n := range nics {
				d := PCIeDistance(*g.PCI, n)
				if best == "" || topoRank[d] < topoRank[best] {
					best, bestNIC = d, n.Name()
				}
			}
			f.Measured = best + " to " + bestNIC
			if topoRank[best] <= topoRank[topoPXB] {
				f.Status = StatusOK
			} else {
				f.Status = StatusWarn
				f.Message = "GPUDirect traffic between this GPU and the nearest NVIDIA NIC crosses the CPU; peer-to-peer bandwidth suffers"
				f.Fix = "hardware: put the GPU and the NIC under one PCIe switch (slots of one riser/switch)"
			}
		}
		out = append(out, f)
	}
	return out
}

// CheckGPUDirect checks that each GPU supports GPUDirect RDMA (upstream --check gpudirect,
// CUDA attribute 116); integrated GPUs get the host_pinned guidance instead.
func (s *System) CheckGPUDirect() []Finding {
	const name = "gpudirect"
	gpus, why := s.gpus()
	if len(gpus) == 0 {
		return noGPU(name, why)
	}
	var out []Finding
	for _, g := range gpus {
		f := Finding{Check: name, Subject: g.subject()}
		switch {
		case g.Integrated == Yes:
			f.Status, f.Measured, f.Recommended, f.Message = StatusOK, "integrated GPU", "kind: host_pinned", sparkGuidance
		case g.GPUDirectRDMA == Yes:
			f.Status, f.Measured = StatusOK, "supported"
			if g.DMABuf == Yes {
				f.Measured += " (dma-buf too)"
			}
		case g.GPUDirectRDMA == No:
			f.Status, f.Measured, f.Recommended = StatusWarn, "not supported", "supported"
			f.Message = "the driver reports no GPUDirect RDMA for this GPU: `kind: device` regions cannot be NIC targets; use kind: host_pinned"
		default:
			f.Status, f.Measured = StatusSkip, "unknown"
			f.Message = "the CUDA driver (libcuda.so.1) could not be asked"
			if why != "" {
				f.Message += ": " + why
			}
		}
		out = append(out, f)
	}
	return out
}

// CheckPeermem checks that nvidia-peermem is loaded where it is needed (upstream --check
// peermem): integrated GPUs and systems with the DMA-BUF path do without it.
func (s *System) CheckPeermem() []Finding {
	const name = "peermem"
	gpus, why := s.gpus()
	if len(gpus) == 0 {
		return noGPU(name, why)
	}
	f := Finding{Check: name, Subject: "nvidia_peermem", Recommended: "loaded"}
	mods, err := s.modules()
	loaded := mods["nvidia_peermem"] || s.exists("/sys/module/nvidia_peermem")
	allIntegrated, dmabuf := true, s.exists("/dev/dma_heap/system")
	for _, g := range gpus {
		if g.Integrated != Yes {
			allIntegrated = false
		}
		if g.DMABuf == Yes {
			dmabuf = true
		}
	}
	switch {
	case loaded:
		f.Status, f.Measured = StatusOK, "loaded"
	case allIntegrated:
		f.Status, f.Measured, f.Recommended, f.Message = StatusOK, "not loaded (not needed)", "", sparkGuidance
	case dmabuf:
		f.Status, f.Measured, f.Recommended = StatusOK, "not loaded (DMA-BUF path available)", ""
		f.Message = "GPU memory can be registered with the NIC through dma-buf, which needs no nvidia-peermem"
	default:
		f.Status, f.Measured = StatusWarn, "not loaded"
		f.Message = "without nvidia-peermem or dma-buf the NIC cannot register `kind: device` GPU memory"
		if err != nil && !s.exists("/sys/module") {
			f.Message += fmt.Sprintf(" (module list unreadable: %v)", err)
		}
		f.Fix = "sudo modprobe nvidia-peermem && echo nvidia-peermem | sudo tee /etc/modules-load.d/nvidia-peermem.conf"
	}
	return []Finding{f}
}
