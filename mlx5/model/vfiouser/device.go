package vfiouser

// Device is what the server serves: a PCI function's regions, interrupts, DMA and reset.
// The server calls its methods from one goroutine at a time, in the order the client's
// messages arrive; the device may call IRQs.Trigger from any goroutine.
type Device interface {
	// RegionInfo describes region index (RegionBAR0 … RegionVGA); Size 0 means the
	// region does not exist (an unimplemented BAR, no ROM, no VGA).
	RegionInfo(index uint32) RegionInfo
	// ReadRegion fills p from region index at off. The server has checked that the
	// range lies inside the region and that the region is readable.
	ReadRegion(index uint32, off uint64, p []byte) error
	// WriteRegion writes p to region index at off (checked as for ReadRegion).
	WriteRegion(index uint32, off uint64, p []byte) error
	// IRQInfo describes interrupt index (IRQINTx … IRQReq); Count 0 means none.
	IRQInfo(index uint32) IRQInfo
	// MapDMA makes client memory mem reachable for the device's DMA at iova. mem stays
	// valid until the session ends, also after UnmapDMA (the server unmaps it from its
	// address space only after Detach), so a late access cannot fault the process.
	MapDMA(iova uint64, mem []byte, perm Perm) error
	// UnmapDMA removes the mapping of size bytes at iova that MapDMA made.
	UnmapDMA(iova, size uint64) error
	// Reset resets the function (VFIO_USER_DEVICE_RESET, or what a function-level reset
	// does).
	Reset() error
	// Attach is called when a client's session starts; irqs is how the device signals
	// its interrupts for that session.
	Attach(irqs *IRQs)
	// Detach is called when the session ends, before the server closes the interrupt
	// eventfds and unmaps client memory: the device must stop every DMA and Trigger
	// before it returns. Device state is otherwise kept (vfio-user.rst "Client
	// Disconnection").
	Detach()
}

// RegionInfo is what VFIO_USER_DEVICE_GET_REGION_INFO reports for a region. Regions are
// accessed with REGION_READ/REGION_WRITE messages only: the server offers no mmap of its
// own memory.
type RegionInfo struct {
	Size        uint64
	Read, Write bool
}

// IRQInfo is what VFIO_USER_DEVICE_GET_IRQ_INFO reports for an interrupt index. Indexes
// with vectors support eventfd signalling (VFIO_IRQ_INFO_EVENTFD) and the MASK and UNMASK
// actions of SET_IRQS; the flags below are the other linux/vfio.h bits to report.
type IRQInfo struct {
	Count uint32
	// Maskable reports VFIO_IRQ_INFO_MASKABLE, AutoMasked VFIO_IRQ_INFO_AUTOMASKED
	// (INTx-style), NoResize VFIO_IRQ_INFO_NORESIZE (vectors are set up as one set; the
	// kernel's vfio-pci says so for MSI and MSI-X).
	Maskable, AutoMasked, NoResize bool
}

// Perm is what the device may do with a DMA mapping (VFIO_DMA_MAP_FLAG_READ/WRITE).
type Perm uint8

// Perm bits.
const (
	PermRead  Perm = dmaFlagRead
	PermWrite Perm = dmaFlagWrite
)
