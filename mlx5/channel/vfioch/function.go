package vfioch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/daqiri-go/daqiri/vfio"
)

// Region is a mapped BAR: register access of exact widths. Values are what a CPU load of the
// bytes gives (native byte order), as vfio.MMIO returns them; the transport converts to the
// device's big-endian registers itself, so the same code runs on any host.
type Region interface {
	Len() int
	Read32(off int) uint32
	Write32(off int, v uint32)
	Write64(off int, v uint64)
}

// DMA is the IOMMU address space the function's DMA goes through: its usable IOVA ranges and
// the mappings of host memory into it (vfio.Container).
type DMA interface {
	IOMMUInfo() (vfio.IOMMUInfo, error)
	MapDMA(mem []byte, iova uint64, perm vfio.Perm) error
	UnmapDMA(iova, size uint64) error
}

// Interrupts are MSI-X vectors delivered through eventfds (vfio.IRQ).
type Interrupts interface {
	// Wait blocks until vector fired or timeout passed (an error wrapping vfio.ErrTimeout);
	// it returns how many times the vector fired since the last Wait or Poll.
	Wait(vector int, timeout time.Duration) (uint64, error)
	Close() error
}

// Function is one PCI function as the transport drives it: BAR0, the DMA address space, the
// PCI command register and MSI-X. OpenPCI gives a real one over VFIO; package
// mlx5/model/vfiomodel gives the ConnectX model behind the same methods, so the code that
// touches the BAR is the code the model tests.
type Function interface {
	// Name is the function's address for messages ("0000:3b:00.0", "model:1").
	Name() string
	// BAR0 is the function's BAR0 mapping (init segment, UAR pages).
	BAR0() Region
	// DMA is the address space the function's DMA goes through.
	DMA() DMA
	// EnableBusMaster turns memory decoding and bus mastering on in the PCI command
	// register: without it the function cannot read the command queue.
	EnableBusMaster() error
	// EnableMSIX enables vectors MSI-X vectors, each with an eventfd.
	EnableMSIX(vectors int) (Interrupts, error)
	// Close releases the function (interrupts, the BAR mapping, DMA mappings, the device,
	// its group and container).
	Close() error
}

// The vfio types are the real implementations.
var (
	_ Region     = (*vfio.MMIO)(nil)
	_ DMA        = (*vfio.Container)(nil)
	_ Interrupts = (*vfio.IRQ)(nil)
)

// ErrNotBound is returned by OpenPCI for a PCI function not bound to vfio-pci.
var ErrNotBound = errors.New("vfioch: PCI function not bound to vfio-pci")

// pciFunction is a real PCI function under VFIO.
type pciFunction struct {
	p   *vfio.PCI
	bar *vfio.MMIO
}

// OpenPCI opens the PCI function bdf (0000:3b:00.0), which must be bound to vfio-pci: its own
// container, its IOMMU group and the device, with BAR0 mapped. A function bound to another
// driver (mlx5_core) gives an error wrapping ErrNotBound that says how to bind it.
func OpenPCI(bdf string) (Function, error) {
	if err := CheckBound(bdf); err != nil {
		return nil, err
	}
	p, err := vfio.OpenPCI(bdf)
	if err != nil {
		return nil, fmt.Errorf("vfioch: open %s: %w", bdf, err)
	}
	bar, err := p.MapRegion(vfio.RegionBAR0)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("vfioch: map BAR0 of %s: %w", bdf, err), p.Close())
	}
	return &pciFunction{p: p, bar: bar}, nil
}

// CheckBound reports whether the PCI function bdf is bound to vfio-pci, from sysfs; when it
// is not, the error says which driver has it and the commands that hand it to vfio-pci.
func CheckBound(bdf string) error {
	dev := filepath.Join("/sys/bus/pci/devices", bdf)
	if _, err := os.Stat(dev); err != nil {
		return fmt.Errorf("vfioch: PCI function %s: %w", bdf, err)
	}
	drv := "no driver"
	if l, err := os.Readlink(filepath.Join(dev, "driver")); err == nil {
		drv = filepath.Base(l)
	}
	if drv == "vfio-pci" {
		return nil
	}
	return fmt.Errorf("%w: %s is bound to %s; hand it to vfio-pci with: modprobe vfio-pci; "+
		"echo vfio-pci > %s/driver_override; echo %s > %s/driver/unbind; echo %s > /sys/bus/pci/drivers_probe",
		ErrNotBound, bdf, drv, dev, bdf, dev, bdf)
}

func (f *pciFunction) Name() string           { return f.p.Name() }
func (f *pciFunction) BAR0() Region           { return f.bar }
func (f *pciFunction) DMA() DMA               { return f.p.Container }
func (f *pciFunction) EnableBusMaster() error { return f.p.SetBusMaster(true) }
func (f *pciFunction) Close() error           { return f.p.Close() }

func (f *pciFunction) EnableMSIX(vectors int) (Interrupts, error) {
	return f.p.EnableIRQ(vfio.IRQIndexMSIX, vectors)
}
