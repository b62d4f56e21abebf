//go:build !amd64 || purego

package datapath

// hasVecSum is false where csum16 has no vector form (other architectures, or the purego
// tag): the Go loop sums every byte, and sumWordsAVX2 is never called.
const hasVecSum = false

func sumWordsAVX2(b *byte, n int) uint32 { return 0 }

func copyStreamSumAVX2(dst, src []byte) (uint32, bool) { return 0, false }
