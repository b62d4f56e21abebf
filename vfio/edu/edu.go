// Package edu is a user-space driver, on package vfio, for qemu's "edu"
// teaching device: identification and liveness registers, a factorial
// unit, an interrupt controller (INTx or MSI) and a DMA engine with a
// 4 KiB on-device buffer. The VM test harness (integration/vm) runs its
// tests against the device behind an emulated IOMMU; it doubles as the
// smallest complete example of a VFIO driver.
//
// Register map: qemu docs/specs/edu.rst; behaviour (the DMA engine starts
// 100 ms of virtual time after its command is written and masks addresses to
// 28 bits; interrupts go out as MSI once MSI is enabled) from qemu
// hw/misc/edu.c.
package edu

import (
	"errors"
	"fmt"
	"time"

	"github.com/daqiri-go/daqiri/vfio"
)

// PCI identity of the device.
const (
	VendorID = 0x1234
	DeviceID = 0x11e8
)

// BAR0 registers (edu.rst). Accesses below 0x80 must be 4 bytes wide; the
// DMA registers take 4 or 8.
const (
	RegID        = 0x00 // RO: 0xRRrr00ed, RR.rr the version
	RegLiveness  = 0x04 // RW: reads back the bitwise inverse of what was written
	RegFactorial = 0x08 // RW: write n, read n! once StatusComputing clears
	RegStatus    = 0x20 // RW: StatusComputing (RO), StatusIRQFactorial
	RegIRQStatus = 0x24 // RO: OR of the values that raised the interrupt
	RegIRQRaise  = 0x60 // WO: raise an interrupt with this value
	RegIRQAck    = 0x64 // WO: clear these bits of RegIRQStatus
	RegDMASource = 0x80 // RW, 64-bit
	RegDMADest   = 0x88 // RW, 64-bit
	RegDMACount  = 0x90 // RW, 64-bit
	RegDMACmd    = 0x98 // RW, 64-bit: DMAStart | DMAToHost | DMAIRQ

	StatusComputing    = 0x01
	StatusIRQFactorial = 0x80

	DMAStart  = 0x1 // start; reads 1 while the transfer runs
	DMAToHost = 0x2 // direction: device buffer → host memory (0: host → device)
	DMAIRQ    = 0x4 // raise IRQDMA when done

	IRQFactorial = 0x001 // interrupt status value of a finished factorial
	IRQDMA       = 0x100 // interrupt status value of a finished DMA

	// BufferAddr is the device-side address of the DMA buffer, BufferSize
	// its size.
	BufferAddr = 0x40000
	BufferSize = 4096
	// MaxTransfer bounds off+n of a transfer. qemu up to 7.x (Debian 12
	// ships 7.2) checks the transfer's end with a strict comparison and
	// aborts the whole VM (hw_error) on a transfer that touches the
	// buffer's last byte; later versions fixed the check. The driver keeps
	// every version alive.
	MaxTransfer = BufferSize - 1
	// DMAMask: the device drops address bits above 28 (256 MiB), so IOVAs
	// given to it must be below 1<<28.
	DMAMask = 1<<28 - 1

	idMagic = 0xed
)

// ErrDevice: the device misbehaved (wrong identity, a result that never
// came).
var ErrDevice = errors.New("edu: device error")

// Device is an open edu device.
type Device struct {
	pci    *vfio.PCI
	bar    *vfio.MMIO
	irq    *vfio.IRQ
	faults *vfio.FaultWatcher
}

// Open takes the edu device at bdf (bound to vfio-pci) with a container of
// its own, checks its identity, maps BAR0 and enables bus mastering. Where
// the kernel log is readable (root), IOMMU faults of the device are watched
// and turned into DMA errors.
func Open(bdf string) (*Device, error) {
	p, err := vfio.OpenPCI(bdf)
	if err != nil {
		return nil, err
	}
	d := &Device{pci: p}
	fail := func(err error) (*Device, error) { return nil, errors.Join(err, d.Close()) }
	id, err := p.Config32(vfio.PCIVendorID)
	if err != nil {
		return fail(err)
	}
	if id != DeviceID<<16|VendorID {
		return fail(fmt.Errorf("%w: %s is %04x:%04x, not the edu device %04x:%04x", ErrDevice, bdf, id&0xffff, id>>16, VendorID, DeviceID))
	}
	if d.bar, err = p.MapRegion(vfio.RegionBAR0); err != nil {
		return fail(err)
	}
	if d.bar.Len() < RegDMACmd+8 {
		return fail(fmt.Errorf("%w: BAR0 has %d bytes, want 1 MiB", ErrDevice, d.bar.Len()))
	}
	if v := d.bar.Read32(RegID); v&0xff != idMagic {
		return fail(fmt.Errorf("%w: identification register %#08x lacks the 0xed magic", ErrDevice, v))
	}
	if err := p.SetBusMaster(true); err != nil {
		return fail(err)
	}
	d.faults, _ = vfio.WatchFaults(bdf) // optional: needs root
	return d, nil
}

// PCI is the device's VFIO handle (container, group, device).
func (d *Device) PCI() *vfio.PCI { return d.pci }

// BAR is the register window.
func (d *Device) BAR() *vfio.MMIO { return d.bar }

// Version returns the major and minor version from the identification
// register.
func (d *Device) Version() (major, minor uint8) {
	v := d.bar.Read32(RegID)
	return uint8(v >> 24), uint8(v >> 16)
}

// Liveness writes v to the liveness register and returns what it reads back
// (^v on a live device).
func (d *Device) Liveness(v uint32) uint32 {
	d.bar.Write32(RegLiveness, v)
	return d.bar.Read32(RegLiveness)
}

// Factorial has the device compute n! (modulo 2^32) and waits, polling the
// status register, at most timeout for it.
func (d *Device) Factorial(n uint32, timeout time.Duration) (uint32, error) {
	if err := d.waitStatusClear(StatusComputing, timeout); err != nil {
		return 0, fmt.Errorf("edu: the factorial unit is busy: %w", err)
	}
	d.bar.Write32(RegFactorial, n)
	if err := d.waitStatusClear(StatusComputing, timeout); err != nil {
		return 0, fmt.Errorf("edu: factorial of %d: %w", n, err)
	}
	return d.bar.Read32(RegFactorial), nil
}

// SetFactorialIRQ makes the device raise IRQFactorial when a factorial is
// done.
func (d *Device) SetFactorialIRQ(on bool) {
	var v uint32
	if on {
		v = StatusIRQFactorial
	}
	d.bar.Write32(RegStatus, v)
}

// Status reads the status register.
func (d *Device) Status() uint32 { return d.bar.Read32(RegStatus) }

func (d *Device) waitStatusClear(bit uint32, timeout time.Duration) error {
	return poll(timeout, func() bool { return d.bar.Read32(RegStatus)&bit == 0 })
}

// poll calls done until it reports true or timeout passes, sleeping a
// little longer each round (the device works on its own thread or timer).
func poll(timeout time.Duration, done func() bool) error {
	deadline := time.Now().Add(timeout)
	sleep := 10 * time.Microsecond
	for {
		if done() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: no completion within %v", vfio.ErrTimeout, timeout)
		}
		time.Sleep(sleep)
		sleep = min(2*sleep, 5*time.Millisecond)
	}
}

// EnableIRQ enables the device's interrupt as MSI (msi true) or INTx, with
// one eventfd. The device raises it for RegIRQRaise writes, finished
// factorials (SetFactorialIRQ) and DMAs started with DMAIRQ.
func (d *Device) EnableIRQ(msi bool) (*vfio.IRQ, error) {
	if d.irq != nil {
		return nil, fmt.Errorf("edu: interrupt already enabled")
	}
	index := vfio.IRQIndexINTx
	if msi {
		index = vfio.IRQIndexMSI
	}
	q, err := d.pci.EnableIRQ(index, 1)
	if err != nil {
		return nil, err
	}
	d.irq = q
	return q, nil
}

// DisableIRQ disables the interrupt enabled by EnableIRQ.
func (d *Device) DisableIRQ() error {
	if d.irq == nil {
		return nil
	}
	err := d.irq.Close()
	d.irq = nil
	return err
}

// RaiseIRQ has the device raise an interrupt with value v.
func (d *Device) RaiseIRQ(v uint32) { d.bar.Write32(RegIRQRaise, v) }

// IRQStatus reads which values raised the pending interrupt.
func (d *Device) IRQStatus() uint32 { return d.bar.Read32(RegIRQStatus) }

// AckIRQ clears v from the interrupt status; with INTx the line drops once
// the status is zero, and the automasked VFIO line must then be unmasked.
func (d *Device) AckIRQ(v uint32) error {
	d.bar.Write32(RegIRQAck, v)
	if d.irq != nil && d.irq.Info().Automasked() {
		return d.irq.Unmask()
	}
	return nil
}

// Direction of a DMA transfer.
type Direction int

// Directions.
const (
	ToDevice Direction = iota // host memory → device buffer
	ToHost                    // device buffer → host memory
)

func (dir Direction) String() string {
	if dir == ToHost {
		return "device→host"
	}
	return "host→device"
}

// DMA copies n bytes between the host memory at iova and the device buffer
// at offset off, and waits (at most timeout) for the device to finish,
// polling its command register — or, with an interrupt enabled, for the
// IRQDMA interrupt, which it acknowledges.
//
// Bad input is refused before the device is touched: off and n must lie in
// the buffer (off+n ≤ MaxTransfer), iova below the device's 28-bit mask, and the whole range
// must be mapped in the container with the permission the direction needs
// (errors wrap vfio.ErrInvalid or vfio.ErrNotMapped). A DMA that the IOMMU
// blocked anyway is reported as an error wrapping vfio.ErrIOMMUFault when
// the kernel log is readable and the fault was logged by the time the
// transfer completed: an Arm SMMUv3 logs its event from the event queue's
// threaded interrupt handler, which may run after the device's completion
// (CheckFaults sees it later).
func (d *Device) DMA(dir Direction, iova uint64, off, n int, timeout time.Duration) error {
	if err := d.checkDMA(dir, iova, off, n); err != nil {
		return err
	}
	perm := vfio.DeviceRead
	if dir == ToHost {
		perm = vfio.DeviceWrite
	}
	if err := d.pci.Container.CheckMapped(iova, uint64(n), perm); err != nil {
		return fmt.Errorf("edu: DMA %s at iova %#x: %w", dir, iova, err)
	}
	return d.dma(dir, iova, off, n, timeout)
}

// checkDMA validates what the device itself cannot survive: qemu's edu
// model aborts the whole VM on a transfer outside its buffer (MaxTransfer).
func (d *Device) checkDMA(dir Direction, iova uint64, off, n int) error {
	switch {
	case dir != ToDevice && dir != ToHost:
		return fmt.Errorf("edu: %w: direction %d", vfio.ErrInvalid, dir)
	case n <= 0 || off < 0 || off > MaxTransfer || n > MaxTransfer-off:
		return fmt.Errorf("edu: %w: %d bytes at buffer offset %d: transfers must end within the first %d bytes of the buffer", vfio.ErrInvalid, n, off, MaxTransfer)
	case iova > DMAMask || uint64(n) > DMAMask+1-iova:
		return fmt.Errorf("edu: %w: iova range [%#x, +%d) beyond the device's 28-bit DMA mask", vfio.ErrInvalid, iova, n)
	}
	return nil
}

// dma programs and waits for one transfer without checking the IOVA against
// the container's mappings (tests use it to provoke IOMMU faults).
func (d *Device) dma(dir Direction, iova uint64, off, n int, timeout time.Duration) error {
	if err := d.checkDMA(dir, iova, off, n); err != nil {
		return err
	}
	if d.bar.Read64(RegDMACmd)&DMAStart != 0 {
		return fmt.Errorf("edu: %w: a DMA is still running", vfio.ErrInUse)
	}
	if d.faults != nil {
		d.faults.Faults() // forget faults from before this transfer
	}
	cmd := uint64(DMAStart)
	if dir == ToHost {
		cmd |= DMAToHost
		d.bar.Write64(RegDMASource, BufferAddr+uint64(off))
		d.bar.Write64(RegDMADest, iova)
	} else {
		d.bar.Write64(RegDMASource, iova)
		d.bar.Write64(RegDMADest, BufferAddr+uint64(off))
	}
	d.bar.Write64(RegDMACount, uint64(n))
	if d.irq != nil {
		cmd |= DMAIRQ
	}
	d.bar.Write64(RegDMACmd, cmd)

	what := fmt.Sprintf("DMA %s of %d bytes at iova %#x", dir, n, iova)
	if d.irq != nil {
		if _, err := d.irq.Wait(0, timeout); err != nil {
			return fmt.Errorf("edu: %s: %w", what, err)
		}
		if st := d.IRQStatus(); st&IRQDMA == 0 {
			return fmt.Errorf("edu: %s: %w: interrupt with status %#x, not the DMA's %#x", what, ErrDevice, st, IRQDMA)
		}
		if err := d.AckIRQ(IRQDMA); err != nil {
			return err
		}
	}
	if err := poll(timeout, func() bool { return d.bar.Read64(RegDMACmd)&DMAStart == 0 }); err != nil {
		return fmt.Errorf("edu: %s: %w", what, err)
	}
	if d.faults != nil {
		if err := d.faults.Check(); err != nil {
			return fmt.Errorf("edu: %s: %w", what, err)
		}
	}
	return nil
}

// CheckFaults returns an error wrapping vfio.ErrIOMMUFault when the kernel
// logged IOMMU faults of the device since the last transfer or check; nil
// when none were logged or the log is not readable.
func (d *Device) CheckFaults() error {
	if d.faults == nil {
		return nil
	}
	return d.faults.Check()
}

// Close disables interrupts, stops watching faults and releases the device.
func (d *Device) Close() error {
	var errs []error
	if d.faults != nil {
		errs = append(errs, d.faults.Close())
	}
	errs = append(errs, d.DisableIRQ(), d.pci.Close())
	return errors.Join(errs...)
}
