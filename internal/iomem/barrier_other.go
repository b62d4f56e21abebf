//go:build !amd64 && !arm64

package iomem

import "sync/atomic"

// fence is a sequentially consistent atomic operation on a variable of its own: it orders
// normal memory (Go memory model), which is all this fallback can promise; amd64 and arm64
// have the exact barriers.
func fence() {
	var v atomic.Uint32
	v.Add(1)
}

// ToDevice: rdma-core udma_to_device_barrier (see the amd64/arm64 definition).
func ToDevice() { fence() }

// FromDevice: rdma-core udma_from_device_barrier.
func FromDevice() { fence() }

// WCStart: rdma-core mmio_wc_start.
func WCStart() { fence() }

// FlushWrites: rdma-core mmio_flush_writes.
func FlushWrites() { fence() }
