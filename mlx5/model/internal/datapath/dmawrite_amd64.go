//go:build amd64 && !purego && !race

package datapath

// canStream: SSE2, which every amd64 CPU has, is all copyStream needs.
const canStream = true

// copyStream copies src to dst (of the same length) with non-temporal stores for the 16-byte aligned
// part of dst (MOVNTDQ, MOVNTI), ordinary stores for the unaligned head and the last bytes
// (dmawrite_amd64.s). dst and src must not overlap; ordering: see dmaWriter.
//
//go:noescape
func copyStream(dst, src []byte)

// storeFence is SFENCE.
//
//go:noescape
func storeFence()
