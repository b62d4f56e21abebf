// Package vfio drives PCI devices from user space through Linux VFIO, in
// pure Go: containers and groups with the Type1v2 IOMMU, device file
// descriptors, region and interrupt information, register access through
// mmap'd BARs, configuration space through pread/pwrite, DMA mappings of
// off-heap memory (anonymous or hugepage mmaps) at chosen IOVAs, interrupts
// (INTx, MSI, MSI-X) delivered through eventfds, bus mastering and reset.
//
// The usual sequence, bundled by OpenPCI:
//
//	c, _ := vfio.OpenContainer()            // /dev/vfio/vfio, API 0, Type1v2 available
//	g, _ := vfio.OpenGroup(n)               // /dev/vfio/<n>, n from IOMMUGroupOf(bdf)
//	_ = c.AddGroup(g)                       // SET_CONTAINER, then SET_IOMMU(Type1v2)
//	d, _ := g.OpenDevice("0000:00:01.0")    // GET_DEVICE_FD
//	bar, _ := d.MapRegion(vfio.RegionBAR0)  // registers
//	_ = d.SetBusMaster(true)                // let it DMA
//	_ = c.MapDMA(mem, iova, vfio.DeviceReadWrite)
//	irq, _ := d.EnableIRQ(vfio.IRQIndexMSI, 1)
//	n, err := irq.Wait(0, time.Second)
//	c.Close()                               // devices, groups, mappings, container
//
// The device must be bound to vfio-pci first (driver_override and
// drivers_probe in sysfs), and every device of its IOMMU group must be bound
// to vfio-pci or to no driver.
//
// Errors are *Error values naming the operation and the object; errors.Is
// matches them against this package's sentinels (ErrInUse, ErrNotFound,
// ErrNotMapped, ErrTimeout, …) and against the underlying errno.
//
// Facts: ioctl numbers and structure layouts come from linux
// include/uapi/linux/vfio.h; PCI configuration registers from the PCI spec
// (linux include/uapi/linux/pci_regs.h). unsafe is confined to this package:
// ioctl arguments are byte buffers encoded field by field (uapi.go), and
// register access goes through MMIO.
//
// This package uses the legacy container/group interface, which every
// kernel since 3.6 offers. The newer iommufd interface (/dev/iommu with
// per-device cdevs /dev/vfio/devices/vfioN, kernel 6.2 and later) is the
// alternative to add later: it replaces Container and Group with an IOAS and
// device binding, but keeps the device ioctls (regions, interrupts, reset)
// this package already speaks.
package vfio
