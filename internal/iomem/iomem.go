// Package iomem orders the CPU's accesses against a device's DMA and MMIO, and makes
// register accesses of an exact width.
//
// The barriers are rdma-core's (util/udma_barrier.h), one function per macro and named after
// it, since the mlx5 provider and mlx5_vfio.c say by these names where ordering is needed and
// which kind; the code that calls them cites the rdma-core place it follows. Each is an
// assembly function: the Go compiler neither inlines nor moves memory accesses across a call
// to one, so on amd64, where the hardware already orders what a barrier asks for, the call
// itself is the compiler barrier that rdma-core writes as asm volatile("" ::: "memory").
//
// Per architecture (rdma-core util/udma_barrier.h; Linux arch/arm64/include/asm/barrier.h
// defines dma_wmb, dma_rmb and wmb the same way on arm64):
//
//	                 rdma-core                  arm64       amd64
//	ToDevice         udma_to_device_barrier     DMB OSHST   compiler order
//	FromDevice       udma_from_device_barrier   DMB OSHLD   compiler order (rdma-core: LFENCE)
//	WCStart          mmio_wc_start              DSB ST      SFENCE
//	FlushWrites      mmio_flush_writes          DSB ST      SFENCE
//
// Other architectures get a sequentially consistent atomic operation, which orders normal
// memory only; the library is built and tested for amd64 and arm64.
//
// The accessors take array pointers, so that the caller's slice conversion
// ((*[8]byte)(b[off:])) checks the bounds; the store or load is then one instruction of that
// width, never an atomic read-modify-write (on amd64 atomic.StoreUint64 is an XCHG, which
// reads the register too) and never a store-release (arm64 STLR faults on an address that is
// not naturally aligned even in normal memory; plain loads and stores do not, and device
// registers are aligned by their offsets).
package iomem
