package vfio

import (
	"errors"
	"fmt"
)

// PCI configuration space registers (PCI Local Bus spec; names as in linux
// include/uapi/linux/pci_regs.h).
const (
	PCIVendorID      = 0x00 // u16
	PCIDeviceID      = 0x02 // u16
	PCICommand       = 0x04 // u16
	PCIStatus        = 0x06 // u16
	PCIRevisionID    = 0x08 // u8
	PCIClassCode     = 0x09 // 3 bytes: prog-if, subclass, class
	PCICapabilityPtr = 0x34 // u8, valid when PCIStatus has PCIStatusCapList
	PCIInterruptPin  = 0x3d // u8, 0: no INTx

	PCICommandMemory       = 0x0002 // respond to memory space accesses
	PCICommandMaster       = 0x0004 // bus master: the device may DMA
	PCICommandINTxDisable  = 0x0400
	PCIStatusCapList       = 0x0010
	PCIStatusINTx          = 0x0008 // INTx asserted
	PCIStatusMasterAbort   = 0x2000 // received master abort
	PCIStatusSignaledAbort = 0x0800

	PCICapIDMSI  = 0x05
	PCICapIDExp  = 0x10
	PCICapIDMSIX = 0x11
)

// ReadConfig reads len(p) bytes of PCI configuration space at off.
func (d *Device) ReadConfig(off int, p []byte) error {
	if off < 0 {
		return invalid("read config", d.name, "negative offset %d", off)
	}
	return d.ReadRegion(RegionConfig, uint64(off), p)
}

// WriteConfig writes p into PCI configuration space at off. vfio-pci
// virtualises parts of it (BARs, MSI capability) and filters the rest.
func (d *Device) WriteConfig(off int, p []byte) error {
	if off < 0 {
		return invalid("write config", d.name, "negative offset %d", off)
	}
	return d.WriteRegion(RegionConfig, uint64(off), p)
}

// Config8 reads one byte of configuration space.
func (d *Device) Config8(off int) (uint8, error) {
	var b [1]byte
	err := d.ReadConfig(off, b[:])
	return b[0], err
}

// Config16 reads a little-endian u16 of configuration space (PCI is
// little-endian whatever the CPU).
func (d *Device) Config16(off int) (uint16, error) {
	var b [2]byte
	err := d.ReadConfig(off, b[:])
	return uint16(b[0]) | uint16(b[1])<<8, err
}

// Config32 reads a little-endian u32 of configuration space.
func (d *Device) Config32(off int) (uint32, error) {
	var b [4]byte
	err := d.ReadConfig(off, b[:])
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24, err
}

// SetConfig16 writes a little-endian u16 of configuration space.
func (d *Device) SetConfig16(off int, v uint16) error {
	return d.WriteConfig(off, []byte{byte(v), byte(v >> 8)})
}

// SetBusMaster turns PCI bus mastering (the device's permission to DMA) and
// memory-space decoding on, or bus mastering off.
func (d *Device) SetBusMaster(on bool) error {
	cmd, err := d.Config16(PCICommand)
	if err != nil {
		return err
	}
	if on {
		cmd |= PCICommandMaster | PCICommandMemory
	} else {
		cmd &^= PCICommandMaster
	}
	if err := d.SetConfig16(PCICommand, cmd); err != nil {
		return err
	}
	got, err := d.Config16(PCICommand)
	if err != nil {
		return err
	}
	if (got&PCICommandMaster != 0) != on {
		return opErr("set bus master", d.name, fmt.Errorf("the command register reads %#04x after writing %#04x", got, cmd))
	}
	return nil
}

// PCICap is one entry of the PCI capability list.
type PCICap struct {
	ID     uint8
	Offset int
}

// PCICapabilities walks the standard capability list (bounded: at most 48
// entries fit in the 256-byte header space, and each must lie in it).
func (d *Device) PCICapabilities() ([]PCICap, error) {
	st, err := d.Config16(PCIStatus)
	if err != nil {
		return nil, err
	}
	if st&PCIStatusCapList == 0 {
		return nil, nil
	}
	p, err := d.Config8(PCICapabilityPtr)
	if err != nil {
		return nil, err
	}
	var caps []PCICap
	for off := int(p) &^ 3; off != 0 && len(caps) < 48; {
		if off < 0x40 || off > 0xfc {
			return caps, opErr("PCI capability list", d.name, fmt.Errorf("pointer %#x outside the capability area", off))
		}
		var b [2]byte
		if err := d.ReadConfig(off, b[:]); err != nil {
			return caps, err
		}
		caps = append(caps, PCICap{ID: b[0], Offset: off})
		off = int(b[1]) &^ 3
	}
	return caps, nil
}

// PCI bundles what one PCI device needs under VFIO: a container of its own,
// the device's group, and the device. Close releases all three.
type PCI struct {
	Container *Container
	Group     *Group
	*Device
}

// OpenPCI opens the PCI device at bdf (0000:00:01.0), which must be bound to
// vfio-pci: a new container, the device's IOMMU group attached with the
// Type1v2 IOMMU, and the device.
func OpenPCI(bdf string) (*PCI, error) {
	n, err := IOMMUGroupOf(bdf)
	if err != nil {
		return nil, err
	}
	c, err := OpenContainer()
	if err != nil {
		return nil, err
	}
	g, err := OpenGroup(n)
	if err != nil {
		return nil, errors.Join(err, c.Close())
	}
	if err := c.AddGroup(g); err != nil {
		return nil, errors.Join(err, g.Close(), c.Close())
	}
	dev, err := g.OpenDevice(bdf)
	if err != nil {
		return nil, errors.Join(err, c.Close())
	}
	if !dev.Info().PCI() {
		return nil, errors.Join(opErr("open PCI device", bdf, fmt.Errorf("%w: not a vfio-pci device (flags %#x)", ErrUnsupported, dev.Info().Flags)), c.Close())
	}
	return &PCI{Container: c, Group: g, Device: dev}, nil
}

// Close closes the device, its group and the container.
func (p *PCI) Close() error {
	return p.Container.Close()
}
