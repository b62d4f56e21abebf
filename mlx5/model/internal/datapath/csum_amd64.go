//go:build amd64 && !purego

package datapath

import "golang.org/x/sys/cpu"

// hasVecSum gates the AVX2 form of csum16's bulk (csum_amd64.s); x/sys/cpu reports AVX2 only
// when the OS saves the YMM registers. Set once at start-up, read only after.
var hasVecSum = cpu.X86.HasAVX2

// sumWordsAVX2 is the sum, as an integer, of the little-endian 16-bit words of the n bytes at
// b (an odd last byte counts as a word of its own value), n at most vecSumMax (the lanes'
// 32-bit counts cannot overflow then).
//
//go:noescape
func sumWordsAVX2(b *byte, n int) uint32

// copyStreamSumAVX2 is copyStream(dst, src) that also returns sumWordsAVX2 of src, for a dst
// on a 32-byte boundary and len(src) = len(dst) at most vecSumMax; ok false: dst is not
// aligned, nothing was written.
//
//go:noescape
func copyStreamSumAVX2(dst, src []byte) (sum uint32, ok bool)
