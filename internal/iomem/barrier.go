//go:build amd64 || arm64

package iomem

// ToDevice makes the CPU's earlier stores to memory visible to a device before any later
// store (rdma-core udma_to_device_barrier): between WQEs and the doorbell record that
// publishes them, between an ownership bit and the doorbell register that tells the device.
// arm64: DMB OSHST, a store-store barrier over the outer-shareable domain, which the
// device's DMA observes. amd64: stores are not reordered with other stores (Intel SDM
// vol. 3A, "Memory Ordering in P6 and More Recent Processor Families"); only the compiler
// must keep the order, which the call does.
//
//go:noescape
func ToDevice()

// FromDevice orders the loads after it after the load that saw a device's valid bit
// (rdma-core udma_from_device_barrier): after a CQE's, EQE's or command slot's ownership, so
// that the rest of the entry is not read from before the device wrote it. arm64: DMB OSHLD
// (earlier loads complete before later loads and stores). amd64: loads are not reordered
// with other loads (the same SDM section); Linux's dma_rmb there is a compiler barrier, and
// the call is one. rdma-core's LFENCE is stronger than write-back DMA memory needs.
//
//go:noescape
func FromDevice()

// WCStart orders earlier stores, to memory and to uncached MMIO, before the stores to
// write-combining MMIO after it (rdma-core mmio_wc_start, defined as mmio_flush_writes):
// before the BlueFlame store, after the doorbell record. arm64: DSB ST. amd64: SFENCE, since
// write-combining stores are weakly ordered (Intel SDM vol. 3A, "Methods of Caching
// Available": WC).
//
//go:noescape
func WCStart()

// FlushWrites makes the stores to write-combining MMIO before it leave the CPU now, as bus
// writes of their own, not combined with later ones (rdma-core mmio_flush_writes): after the
// BlueFlame store, before the next one may go to the other half of the register. arm64:
// DSB ST. amd64: SFENCE.
//
//go:noescape
func FlushWrites()
