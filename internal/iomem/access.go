//go:build amd64 || arm64

package iomem

// Load32 reads the 4 bytes at p in one 32-bit load, in the CPU's byte order.
//
//go:noescape
func Load32(p *[4]byte) uint32

// Load64 reads the 8 bytes at p in one 64-bit load, in the CPU's byte order.
//
//go:noescape
func Load64(p *[8]byte) uint64

// Store32 writes v to the 4 bytes at p in one 32-bit store, in the CPU's byte order.
//
//go:noescape
func Store32(p *[4]byte, v uint32)

// Store64 writes v to the 8 bytes at p in one 64-bit store, in the CPU's byte order.
//
//go:noescape
func Store64(p *[8]byte, v uint64)
