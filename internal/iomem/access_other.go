//go:build !amd64 && !arm64

package iomem

import "unsafe"

// Load32 reads the 4 bytes at p as one access where the compiler makes it one.
//
//go:noinline
func Load32(p *[4]byte) uint32 { return *(*uint32)(unsafe.Pointer(p)) }

// Load64 reads the 8 bytes at p.
//
//go:noinline
func Load64(p *[8]byte) uint64 { return *(*uint64)(unsafe.Pointer(p)) }

// Store32 writes v to the 4 bytes at p.
//
//go:noinline
func Store32(p *[4]byte, v uint32) { *(*uint32)(unsafe.Pointer(p)) = v }

// Store64 writes v to the 8 bytes at p.
//
//go:noinline
func Store64(p *[8]byte, v uint64) { *(*uint64)(unsafe.Pointer(p)) = v }
