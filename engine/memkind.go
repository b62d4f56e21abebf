package engine

import "github.com/daqiri-go/daqiri/config"

// CheckCPUAddressable reports a clear configuration error when an engine that moves packets
// with the CPU or the kernel (socket, AF_XDP, AF_PACKET) is given a region the CPU cannot
// address. Device memory is reachable only by the GPU and by NICs that write GPU memory
// directly; such engines need host memory instead, and host_pinned is the kind that keeps
// packets visible to GPU kernels, so the error suggests it. path is the key path of the
// queue's memory_regions, for the error's position.
func CheckCPUAddressable(cfg *config.Config, path string, r *Region) error {
	if r == nil {
		return cfg.Errorf(path, "no memory region allocated for this queue")
	}
	if r.CPU() {
		return nil
	}
	return cfg.Errorf(path, "memory region %s is %s memory, which the CPU cannot address; this engine receives and sends through the CPU or the kernel: use kind host_pinned (page-locked host memory that GPU kernels can also read) or host/huge", r.Name, r.Kind)
}
