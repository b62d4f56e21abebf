package daqiri

import (
	"fmt"
	"os"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/hugepage"
)

// AppAlignDevice is the alignment of application GPU memory. Host memory is registered
// as an AF_XDP UMEM or an RDMA memory region, both of which take whole pages; hugepage
// memory must start on a hugepage; GPU memory on a 64 KiB GPU page, the unit GPUDirect
// (nvidia-peermem, DMA-BUF export) pins; AppAlignment gives each kind's.
const (
	AppAlignDevice = 64 << 10
)

// SizedMemory is memory that knows its length: device memory, which has no CPU view to
// measure, must implement it (cudart.DeviceMem does).
type SizedMemory interface {
	engine.Memory
	Size() int
}

// WithRegionMemory binds the memory region named region, which the configuration marks
// `owned: false`, to memory the application allocated: host memory (a []byte view, e.g.
// hugepage.Map(size, false)), hugepage memory (hugepage.Map(size, true)) or a CUDA allocation
// (cudart host-pinned or device memory). Open checks that it matches the region's kind,
// holds num_bufs × buf_size bytes and is aligned (AppAlignment), and never frees it: the
// application closes it after the session is closed.
func WithRegionMemory(region string, mem engine.Memory) Option {
	return func(o *options) {
		if o.appMem == nil {
			o.appMem = map[string]engine.Memory{}
		}
		o.appMem[region] = mem
	}
}

// AppAlignment is the alignment Open requires of application memory for a region of kind k.
func AppAlignment(k config.MemoryKind) int {
	switch k {
	case config.KindHuge:
		if in, err := hugepage.ReadInfo(); err == nil && in.PageSize > 0 {
			return in.PageSize
		}
		return hugepage.PMDSize(os.Getpagesize()) // the default size where meminfo says none
	case config.KindDevice:
		return AppAlignDevice
	}
	return os.Getpagesize()
}

// borrowed is application memory: the region uses it and never frees it.
type borrowed struct{ engine.Memory }

func (borrowed) Close() error { return nil }

// appMemory checks the application's memory for region rc (path is its key path).
func (s *Session) appMemory(rc *config.MemoryRegion, path string, mem engine.Memory) (engine.Memory, error) {
	bad := func(format string, args ...any) error {
		return s.cfg.Errorf(path+".owned", "application memory for region %s (%s, %d × %d bytes): %s: %w",
			rc.Name, rc.Kind, rc.NumBufs, rc.BufSize, fmt.Sprintf(format, args...), ErrInvalidParameter)
	}
	if mem == nil {
		return nil, bad("owned: false, but Open was given no memory for it (daqiri.WithRegionMemory(%q, mem))", rc.Name)
	}
	need := int64(rc.NumBufs) * int64(rc.BufSize)
	b := mem.Bytes()
	size := int64(len(b))
	switch rc.Kind {
	case config.KindHost, config.KindHuge, config.KindHostPinned:
		if b == nil {
			return nil, bad("kind %s needs memory the CPU can address (Bytes() is nil: device memory?)", rc.Kind)
		}
	case config.KindDevice:
		if b != nil {
			return nil, bad("kind device needs GPU device memory; this memory has a CPU view of %d bytes", len(b))
		}
		sm, ok := mem.(SizedMemory)
		if !ok {
			return nil, bad("device memory must report its size (a Size() int method, as cudart.DeviceMem has)")
		}
		size = int64(sm.Size())
	default:
		return nil, bad("unknown kind %q", rc.Kind)
	}
	if size < need {
		return nil, bad("%d bytes given, %d needed", size, need)
	}
	if a := AppAlignment(rc.Kind); mem.Addr() == 0 || mem.Addr()%uintptr(a) != 0 {
		return nil, bad("address %#x is not aligned to %d bytes", mem.Addr(), a)
	}
	return borrowed{mem}, nil
}
