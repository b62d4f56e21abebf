package main

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/cudart"
)

// --model-ports runs a configuration written for ConnectX NICs — upstream's example files,
// whose interface addresses are PCI addresses or <placeholders> — on the in-process ConnectX
// device model (engine mlx5, addresses model:N; ports 0↔1, 2↔3, … are cabled back to back).
//
// The flag's value is "auto" or a comma-separated list of KEY=N:
//   - auto: the raw interfaces, in file order, get model ports 0, 1, 2, …; upstream's
//     TX/RX examples name the TX interface first, so TX on model:0 reaches RX on model:1
//     over the model's cable (the same PCI address on both interfaces means a looped NIC
//     port there; the model gives each interface its own port, cabled to the other).
//   - KEY=N: the interface named KEY, or every interface whose address is KEY (a PCI address
//     as written, without quotes), gets model:N; a KEY may end in @IFNAME to bridge the port
//     to a Linux netdev (model:N@IFNAME).
//
// It also makes the file openable on the model: placeholder values of the mapped interfaces'
// tunnel fields get fixed documentation values, the same on every interface so that an
// encap on one port and the decap on its peer agree — outer_eth_src 02:00:00:00:00:0a,
// outer_eth_dst 02:00:00:00:00:0b, outer_ipv4_src 192.0.2.1, outer_ipv4_dst 192.0.2.2
// (TEST-NET-1, RFC 5737) — and a queue's cpu_core placeholder becomes core 0.
//
// Software loopback (loopback: sw) becomes the NIC's loopback (hw) with the loopback
// interfaces on model ports.
//
// GPU memory: on a host without a GPU, memory regions of kind device or host_pinned become
// host memory and GPU reorder plans become CPU plans. On a GPU host (gpus > 0) they stay GPU
// memory: the model writes device regions through the GPU's copy engine after resolving their
// DMA-BUF (mlx5/model/gpudma) and host_pinned regions with the CPU, so that the RX queues and
// the GPU reorder plans run on GPU memory as on a ConnectX — with the model standing in for
// the NIC. Exceptions: a device region that only TX queues use becomes host_pinned, since
// the benchmark's sender writes its packets with the CPU (upstream's fills them on the GPU);
// a device region that feeds a gpu reorder plan becomes host_pinned, since the plan reads
// sequence numbers with the CPU (package reorder: device-memory sources are not supported
// yet); and a region whose affinity names a GPU the host lacks becomes host memory. Each change is
// listed on stderr ("model-ports: ..."), so nobody mistakes what ran.
func applyModelPorts(cfg *config.Config, spec string) ([]string, error) {
	return applyModelPortsGPU(cfg, spec, 0)
}

// applyModelPortsGPU is applyModelPorts on a host with gpus GPUs.
func applyModelPortsGPU(cfg *config.Config, spec string, gpus int) ([]string, error) {
	if cfg.StreamType != config.StreamRaw {
		return nil, fmt.Errorf("--model-ports: stream_type is %q; model ports serve raw streams", cfg.StreamType)
	}
	ports := map[int]string{} // interface index → address
	swLoop := cfg.Loopback == "sw"
	if spec == "auto" {
		n := 0
		for i, ifc := range cfg.Interfaces {
			if ifc.Address == "loopback" && !swLoop {
				continue
			}
			ports[i] = "model:" + strconv.Itoa(n)
			n++
		}
	} else {
		for _, kv := range strings.Split(spec, ",") {
			key, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
			port, bridge, _ := strings.Cut(val, "@")
			n, err := strconv.Atoi(port)
			if !ok || key == "" || err != nil || n < 0 || n > 9999 {
				return nil, fmt.Errorf("--model-ports: %q is not KEY=N or KEY=N@IFNAME (KEY: an interface name or address)", kv)
			}
			addr := "model:" + port
			if bridge != "" {
				addr += "@" + bridge
			}
			hit := false
			for i, ifc := range cfg.Interfaces {
				if ifc.Name == key || (ifc.Address != "" && ifc.Address == key) {
					ports[i], hit = addr, true
				}
			}
			if !hit {
				return nil, fmt.Errorf("--model-ports: no interface is named or addressed %q", key)
			}
		}
	}
	if len(ports) == 0 {
		return nil, fmt.Errorf("--model-ports: the configuration has no interface to put on a model port")
	}
	var notes []string
	for i := range cfg.Interfaces {
		addr, ok := ports[i]
		if !ok {
			continue
		}
		ifc := &cfg.Interfaces[i]
		was := ifc.Address
		if was == "" {
			was = "<placeholder>"
		}
		notes = append(notes, fmt.Sprintf("interface %s (%s) on %s", ifc.Name, was, addr))
		ifc.Address = addr
	}
	// Placeholders of the mapped interfaces: the address (now set) and tunnel fields.
	placeholder := func(p string) bool { return slices.Contains(cfg.Placeholders, p) }
	filled := map[string]bool{}
	for i := range cfg.Interfaces {
		if _, ok := ports[i]; !ok {
			continue
		}
		filled[fmt.Sprintf("interfaces[%d].address", i)] = true
		ifc := &cfg.Interfaces[i]
		// A queue's cpu_core placeholder (upstream's pcap writer example): core 0.
		for dir, qs := range map[string][]config.Queue{"rx": rxQueues(ifc), "tx": txQueues(ifc)} {
			for q := range qs {
				if p := fmt.Sprintf("interfaces[%d].%s.queues[%d].cpu_core", i, dir, q); placeholder(p) {
					qs[q].CPUCore = "0"
					filled[p] = true
					notes = append(notes, p+": placeholder set to core 0")
				}
			}
		}
		for dir, flows := range map[string][]config.Flow{"rx": rxFlows(ifc), "tx": txFlows(ifc)} {
			for j := range flows {
				for k := range flows[j].Actions {
					t := &flows[j].Actions[k].Tunnel
					base := fmt.Sprintf("interfaces[%d].%s.flows[%d].actions[%d].tunnel.", i, dir, j, k)
					for _, f := range []struct {
						key string
						set func()
					}{
						{"outer_eth_src", func() { t.OuterEthSrc = net.HardwareAddr{2, 0, 0, 0, 0, 0x0a} }},
						{"outer_eth_dst", func() { t.OuterEthDst = net.HardwareAddr{2, 0, 0, 0, 0, 0x0b} }},
						{"outer_ipv4_src", func() { t.OuterIPv4Src = netip.MustParseAddr("192.0.2.1") }},
						{"outer_ipv4_dst", func() { t.OuterIPv4Dst = netip.MustParseAddr("192.0.2.2") }},
					} {
						if placeholder(base + f.key) {
							f.set()
							filled[base+f.key] = true
							notes = append(notes, base+f.key+": placeholder set to the model's test value")
						}
					}
				}
			}
		}
	}
	cfg.Placeholders = slices.DeleteFunc(cfg.Placeholders, func(p string) bool { return filled[p] })
	if swLoop {
		// Upstream's software loopback hands TX bursts to the RX queues without a NIC; on
		// model ports the same file runs through the NIC's own loopback (loopback: hw, as
		// upstream's ibverbs engine offers it): each port's frames come back to it through
		// its steering, so the example exercises the queues a NIC would.
		cfg.Loopback = "hw"
		notes = append(notes, "loopback: sw becomes hw: each model port's TX comes back to its own RX queues through the NIC's loopback")
	}
	// What each region serves: RX queues, TX queues, reorder outputs, gpu plans' sources.
	rxUse, txUse, outUse, gpuSrc := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]string{}
	for _, ifc := range cfg.Interfaces {
		for _, q := range txQueues(&ifc) {
			for _, m := range q.MemoryRegions {
				txUse[m] = true
			}
		}
		if ifc.RX == nil {
			continue
		}
		for _, q := range ifc.RX.Queues {
			for _, m := range q.MemoryRegions {
				rxUse[m] = true
			}
		}
		for k := range ifc.RX.Reorders {
			r := &ifc.RX.Reorders[k]
			outUse[r.MemoryRegion] = true
			if r.Type != config.ReorderGPU {
				continue
			}
			if gpus == 0 {
				// Its regions become host memory below; the CPU plan builds the same
				// batches (package reorder: one plan, two backends).
				r.Type = config.ReorderCPU
				notes = append(notes, fmt.Sprintf("reorder plan %s of interface %s: reorder_type gpu becomes cpu (no GPU on this host: the same batches, copied by the CPU)", r.Name, ifc.Name))
				continue
			}
			for _, q := range ifc.RX.Queues {
				for _, m := range q.MemoryRegions {
					gpuSrc[m] = r.Name
				}
			}
		}
	}
	for i := range cfg.MemoryRegions {
		mr := &cfg.MemoryRegions[i]
		if mr.Kind != config.KindDevice && mr.Kind != config.KindHostPinned {
			continue
		}
		switch {
		case gpus == 0:
			notes = append(notes, fmt.Sprintf("memory region %s: kind %s becomes host (no GPU on this host)", mr.Name, mr.Kind))
			mr.Kind = config.KindHost
		case mr.Affinity >= gpus:
			notes = append(notes, fmt.Sprintf("memory region %s: kind %s on GPU %d becomes host (%d GPU(s) here)", mr.Name, mr.Kind, mr.Affinity, gpus))
			mr.Kind = config.KindHost
		case mr.Kind == config.KindDevice && gpuSrc[mr.Name] != "":
			notes = append(notes, fmt.Sprintf("memory region %s: kind device becomes host_pinned on GPU %d (it feeds gpu reorder plan %s, which reads sequence numbers with the CPU: device-memory sources are not supported by the plan yet)", mr.Name, mr.Affinity, gpuSrc[mr.Name]))
			mr.Kind = config.KindHostPinned
		case mr.Kind == config.KindDevice && txUse[mr.Name] && !rxUse[mr.Name] && !outUse[mr.Name]:
			notes = append(notes, fmt.Sprintf("memory region %s: kind device becomes host_pinned on GPU %d (TX only: the sender writes packets with the CPU)", mr.Name, mr.Affinity))
			mr.Kind = config.KindHostPinned
		default:
			notes = append(notes, fmt.Sprintf("memory region %s: %s memory on GPU %d, written by the device model (no NIC)", mr.Name, mr.Kind, mr.Affinity))
		}
	}
	return notes, nil
}

func rxFlows(ifc *config.Interface) []config.Flow {
	if ifc.RX == nil {
		return nil
	}
	return ifc.RX.Flows
}

func txFlows(ifc *config.Interface) []config.Flow {
	if ifc.TX == nil {
		return nil
	}
	return ifc.TX.Flows
}

func rxQueues(ifc *config.Interface) []config.Queue {
	if ifc.RX == nil {
		return nil
	}
	return ifc.RX.Queues
}

func txQueues(ifc *config.Interface) []config.Queue {
	if ifc.TX == nil {
		return nil
	}
	return ifc.TX.Queues
}

// gpuCount is the number of CUDA GPUs this process sees (0 without a driver or a GPU).
func gpuCount() int {
	d, err := cudart.Open()
	if err != nil {
		return 0
	}
	n, err := d.DeviceCount()
	if err != nil {
		return 0
	}
	return n
}
