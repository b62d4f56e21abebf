package roce

import (
	"errors"
	"fmt"
	"os"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/cudart"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/verbs"
)

// device is one opened RDMA device with the engine's protection domain and
// the memory regions registered on it. Connections on the device share
// them.
type device struct {
	info verbs.DeviceInfo
	ctx  *verbs.Context
	pd   *verbs.PD
	attr verbs.DeviceAttr
	mrs  map[*engine.Region]*mr
}

// mr is a region's registration on one device.
type mr struct {
	region *engine.Region
	mr     *verbs.MR
	access config.Access
	dmabuf int // the DMA-BUF fd behind a device-memory MR, -1 otherwise
}

func (e *Engine) openDevice(info verbs.DeviceInfo) (*device, error) {
	if d := e.devs[info.Name]; d != nil {
		return d, nil
	}
	ctx, err := verbs.OpenDevice(info, nil)
	if err != nil {
		return nil, err
	}
	d := &device{info: info, ctx: ctx, mrs: map[*engine.Region]*mr{}}
	if d.attr, err = ctx.QueryDevice(); err != nil {
		ctx.Close()
		return nil, err
	}
	if d.pd, err = ctx.AllocPD(); err != nil {
		ctx.Close()
		return nil, err
	}
	e.devs[info.Name] = d
	return d, nil
}

func (d *device) close() error {
	var errs []error
	for _, m := range d.mrs {
		errs = append(errs, m.mr.Close())
		if m.dmabuf >= 0 {
			errs = append(errs, os.NewFile(uintptr(m.dmabuf), "dmabuf").Close())
		}
	}
	d.mrs = nil
	errs = append(errs, d.pd.Close(), d.ctx.Close())
	return errors.Join(errs...)
}

// verbsAccess is the registration access of a region: local write always
// (receives and READ targets are written by the device), remote access as
// the configuration grants it. Remote write needs local write (IB spec
// C10-10.1).
func verbsAccess(a config.Access) verbs.Access {
	v := verbs.AccessLocalWrite
	if a&config.AccessRDMAWrite != 0 {
		v |= verbs.AccessRemoteWrite
	}
	if a&config.AccessRDMARead != 0 {
		v |= verbs.AccessRemoteRead
	}
	return v
}

// DMABufMemory is device memory that can be exported as a DMA-BUF, the way
// GPU memory is registered with a NIC (ibv_reg_dmabuf_mr). cudart device
// allocations are handled directly; other allocators may implement this.
type DMABufMemory interface {
	engine.Memory
	// DMABuf returns a new DMA-BUF fd for the memory (the caller closes it)
	// and the offset of Addr() within it.
	DMABuf() (fd int, offset uint64, err error)
}

// register makes r usable by QPs of the device. path is the key path of the
// queue's memory_regions entry, for errors.
func (e *Engine) register(d *device, r *engine.Region, path string) (*mr, error) {
	if m := d.mrs[r]; m != nil {
		return m, nil
	}
	cfg := e.env.Config
	acc := regionAccess(cfg, r.Name)
	size := uint64(r.NumBufs) * uint64(r.BufSize)
	m := &mr{region: r, access: acc, dmabuf: -1}
	var err error
	if b := r.Bytes(); b != nil {
		m.mr, err = d.pd.RegMRAddr(uint64(r.Addr(0)), size, uint64(r.Addr(0)), verbsAccess(acc))
		if err != nil {
			return nil, cfg.Errorf(path, "memory region %s (%s, %d bytes): registering it with %s: %v", r.Name, r.Kind, size, d.info.Name, err)
		}
	} else {
		fd, off, xerr := exportDMABuf(r.Memory(), size)
		if xerr != nil {
			return nil, cfg.Errorf(path, "memory region %s is %s memory: exporting it as a DMA-BUF for %s failed: %v", r.Name, r.Kind, d.info.Name, xerr)
		}
		m.mr, err = d.pd.RegDMABufMR(fd, off, size, uint64(r.Addr(0)), verbsAccess(acc))
		if err != nil {
			os.NewFile(uintptr(fd), "dmabuf").Close()
			if errors.Is(err, verbs.ErrNotSupported) {
				return nil, &causeError{cfg.Errorf(path, "memory region %s is %s memory, which %s (driver %s) cannot register: %v: %v; use kind host_pinned (GPU-visible host memory) or a device whose driver supports DMA-BUF MRs (mlx5)",
					r.Name, r.Kind, d.info.Name, d.info.Driver, ErrNoDMABuf, err), ErrNoDMABuf}
			}
			return nil, cfg.Errorf(path, "memory region %s (%s): DMA-BUF registration with %s: %v", r.Name, r.Kind, d.info.Name, err)
		}
		m.dmabuf = fd
	}
	d.mrs[r] = m
	return m, nil
}

// exportDMABuf gets a DMA-BUF fd for device memory.
func exportDMABuf(mem engine.Memory, size uint64) (int, uint64, error) {
	switch m := mem.(type) {
	case DMABufMemory:
		return m.DMABuf()
	case *cudart.DeviceMem:
		fd, err := m.Device().ExportDMABuf(m.Ptr(), m.Size())
		return fd, 0, err
	}
	return -1, 0, fmt.Errorf("%T is neither host memory nor exportable as a DMA-BUF", mem)
}

// regionAccess is the configured access of a region (local only when the
// configuration does not list it, which cannot happen for allocated ones).
func regionAccess(cfg *config.Config, name string) config.Access {
	for _, m := range cfg.MemoryRegions {
		if m.Name == name {
			return m.Access
		}
	}
	return config.AccessLocal
}

func (m *mr) local() LocalMR {
	return LocalMR{Name: m.region.Name, Addr: m.mr.Addr, Length: m.mr.Length, LKey: m.mr.LKey, RKey: m.mr.RKey,
		RemoteWrite: m.access&config.AccessRDMAWrite != 0, RemoteRead: m.access&config.AccessRDMARead != 0}
}

// causeError is a configuration error (message and position) that also
// matches a sentinel with errors.Is.
type causeError struct {
	err   *config.Error
	cause error
}

func (e *causeError) Error() string   { return e.err.Error() }
func (e *causeError) Unwrap() []error { return []error{e.err, e.cause} }
