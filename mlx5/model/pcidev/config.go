package pcidev

import (
	"encoding/binary"

	"github.com/daqiri-go/daqiri/mlx5/model"
)

// PCI identity of a ConnectX-5 function: vendor Mellanox (0x15b3) and device 0x1017 are the
// ids the kernel's mlx5_core (main.c mlx5_core_pci_table, "ConnectX-5") and rdma-core's
// mlx5 provider match; class 0x020000 is an Ethernet controller (PCI Code and ID Assignment
// spec). The subsystem id is the model's choice (boards differ); drivers do not match on it.
const (
	VendorID    = 0x15b3
	DeviceID    = 0x1017
	ClassCode   = 0x020000
	SubsystemID = 0x0007
	Revision    = 0x00
)

// Geometry of the function. BAR0 is 32 MiB as on a ConnectX-5 (the model's own registers
// use its first model.BAR0Size bytes); it grows in powers of two should the model's BAR ever
// need the room. The MSI-X table and PBA sit in BAR0's last two 4 KiB pages, which the model
// does not decode.
//
// What this relies on: QEMU's vfio-pci emulates the MSI-X table itself (hw/vfio/pci.c
// vfio_msix_setup puts msix_init's table over the BAR at the table offset, so the guest's
// table accesses never reach the server) and turns vectors into SET_IRQS eventfds; QEMU's
// vfio-user client forwards reads of the PBA to the server (hw/vfio-user/pci.c
// vfio_user_pba_read), which answers from the pending bits of masked vectors.
const (
	MSIXVectors = 64
	ConfigSize  = 4096 // PCI Express configuration space
)

// BAR0Size is BAR0's length.
var BAR0Size = func() uint64 {
	n := uint64(32 << 20)
	for n < uint64(model.BAR0Size)+2*4096 {
		n *= 2
	}
	return n
}()

// MSIXTableOffset and MSIXPBAOffset are where the MSI-X structures lie in BAR0.
var (
	MSIXTableOffset = BAR0Size - 2*4096
	MSIXPBAOffset   = BAR0Size - 4096
)

// Standard header registers and capability positions (PCI Local Bus 3.0 §6.1; capability
// ids from the PCI Code and ID Assignment spec, as linux/pci_regs.h names them).
const (
	regVendor    = 0x00
	regCommand   = 0x04
	regStatus    = 0x06
	regRevision  = 0x08
	regCacheLine = 0x0c
	regHeader    = 0x0e
	regBAR0      = 0x10
	regBAR1      = 0x14
	regSubVendor = 0x2c
	regROM       = 0x30
	regCapPtr    = 0x34
	regIntLine   = 0x3c
	regIntPin    = 0x3d

	cmdIO          = 1 << 0
	cmdMemory      = 1 << 1
	cmdBusMaster   = 1 << 2
	cmdParity      = 1 << 6
	cmdSERR        = 1 << 8
	cmdINTxDisable = 1 << 10
	statusCapList  = 1 << 4

	capIDPM   = 0x01
	capIDExp  = 0x10
	capIDMSIX = 0x11

	capPM   = 0x40 // 8 bytes
	capMSIX = 0x48 // 12 bytes
	capExp  = 0x60 // 60 bytes (version 2)

	// PCI Express capability registers (PCIe base spec §7.5.3; linux/pci_regs.h PCI_EXP_*).
	expFlags   = capExp + 0x02
	expDevCap  = capExp + 0x04
	expDevCtl  = capExp + 0x08
	expDevSta  = capExp + 0x0a
	expLnkCap  = capExp + 0x0c
	expLnkCtl  = capExp + 0x10
	expLnkSta  = capExp + 0x12
	expDevCap2 = capExp + 0x24
	expDevCtl2 = capExp + 0x28
	expLnkCap2 = capExp + 0x2c
	expLnkCtl2 = capExp + 0x30

	devCtlFLR = 1 << 15 // PCI_EXP_DEVCTL_BCR_FLR: initiate function-level reset
)

// configSpace is the function's configuration space: the register image, which bits a
// write may change, and which bits are write-one-to-clear.
type configSpace struct {
	b     [ConfigSize]byte
	wmask [ConfigSize]byte
	w1c   [ConfigSize]byte
}

func (c *configSpace) put16(off int, v uint16) { binary.LittleEndian.PutUint16(c.b[off:], v) }
func (c *configSpace) put32(off int, v uint32) { binary.LittleEndian.PutUint32(c.b[off:], v) }
func (c *configSpace) mask16(off int, v uint16) {
	binary.LittleEndian.PutUint16(c.wmask[off:], v)
}
func (c *configSpace) mask32(off int, v uint32) {
	binary.LittleEndian.PutUint32(c.wmask[off:], v)
}
func (c *configSpace) get16(off int) uint16 { return binary.LittleEndian.Uint16(c.b[off:]) }

// newConfig builds the power-on configuration space. Configuration registers are
// little-endian (PCI Local Bus 3.0 §6.1).
func newConfig() *configSpace {
	c := &configSpace{}
	c.put16(regVendor, VendorID)
	c.put16(regVendor+2, DeviceID)
	c.mask16(regCommand, cmdIO|cmdMemory|cmdBusMaster|cmdParity|cmdSERR|cmdINTxDisable)
	c.put16(regStatus, statusCapList)
	binary.LittleEndian.PutUint16(c.w1c[regStatus:], 0xf900) // error bits (§6.2.3)
	c.put32(regRevision, ClassCode<<8|Revision)
	c.wmask[regCacheLine] = 0xff
	c.b[regHeader] = 0x00 // type 0, single function
	// BAR0: 64-bit (type 10b in bits 2:1) prefetchable (bit 3) memory; the low size bits
	// read as zero, so writing all ones reads back the size mask (§6.2.5.1). BAR1 is its
	// upper half. BARs 2-5 and the expansion ROM are not implemented: read-only zero.
	c.put32(regBAR0, 0x4|0x8)
	c.mask32(regBAR0, uint32(^(BAR0Size-1))&^0xf)
	c.mask32(regBAR1, 0xffffffff)
	c.put16(regSubVendor, VendorID)
	c.put16(regSubVendor+2, SubsystemID)
	c.b[regCapPtr] = capPM
	c.wmask[regIntLine] = 0xff
	c.b[regIntPin] = 0 // no INTx: mlx5_core uses MSI-X only

	// Power management (PCI Bus Power Management 1.2): version 3, no PME; PMCSR's power
	// state is writable and No_Soft_Reset is set, so D3hot→D0 keeps the function's state.
	c.b[capPM], c.b[capPM+1] = capIDPM, capMSIX
	c.put16(capPM+2, 0x0003)
	c.put16(capPM+4, 1<<3)
	c.mask16(capPM+4, 0x0003)

	// MSI-X (PCI Local Bus 3.0 §6.8.2): table size N-1, enable and function mask writable,
	// table and PBA in BAR0 (BIR 0).
	c.b[capMSIX], c.b[capMSIX+1] = capIDMSIX, capExp
	c.put16(capMSIX+2, MSIXVectors-1)
	c.mask16(capMSIX+2, 0xc000)
	c.put32(capMSIX+4, uint32(MSIXTableOffset))
	c.put32(capMSIX+8, uint32(MSIXPBAOffset))

	// PCI Express capability, version 2, endpoint; values of a Gen3 x16 board (what a
	// ConnectX-5 reports; mlx5_core prints the link from here, pcie_print_link_status).
	c.b[capExp], c.b[capExp+1] = capIDExp, 0
	c.put16(expFlags, 0x0002) // version 2, device/port type 0 (PCI Express endpoint)
	// Device capabilities: max payload 256 bytes (1), extended tag (bit 5), role-based
	// error reporting (bit 15), function-level reset (bit 28).
	c.put32(expDevCap, 1|1<<5|1<<15|1<<28)
	// Device control: relaxed ordering (4), extended tag (8), no snoop (11), max read
	// request 512 bytes (2 in bits 14:12), max payload 128; all but the FLR bit writable.
	c.put16(expDevCtl, 1<<4|1<<8|1<<11|2<<12)
	c.mask16(expDevCtl, 0x7fff)
	binary.LittleEndian.PutUint16(c.w1c[expDevSta:], 0x000f)
	// Link: 8 GT/s (3) x16 capable and trained, common slot clock (status bit 12).
	c.put32(expLnkCap, 3|16<<4)
	c.mask16(expLnkCtl, 0x0fcb)
	c.put16(expLnkSta, 3|16<<4|1<<12)
	// Device capabilities 2: completion timeout ranges A-D and timeout disable.
	c.put32(expDevCap2, 0x1f)
	c.mask16(expDevCtl2, 0x005f)
	c.put32(expLnkCap2, 0x0e) // 2.5, 5 and 8 GT/s
	c.put16(expLnkCtl2, 3)
	c.mask16(expLnkCtl2, 0x0fff)
	// Extended capabilities: none (a zero header at 0x100 ends the list).
	return c
}

// write applies a write of p at off: writable bits take the new value, write-one-to-clear
// bits clear where p has ones, other bits keep theirs.
func (c *configSpace) write(off int, p []byte) {
	for i, v := range p {
		o := off + i
		m := c.wmask[o]
		c.b[o] = c.b[o]&^m | v&m
		c.b[o] &^= v & c.w1c[o]
	}
}

// covers reports whether a write of n bytes at off touches byte reg.
func covers(off, n, reg int) bool { return off <= reg && reg < off+n }
