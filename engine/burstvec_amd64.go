//go:build amd64 && !purego

package engine

import "golang.org/x/sys/cpu"

// hasVec gates the AVX2 forms of the per-packet loops (burstvec_amd64.s); x/sys/cpu reports
// AVX2 only when the OS saves the YMM registers. Set once at start-up, read only after.
var hasVec = cpu.X86.HasAVX2

//go:noescape
func idxToOffClearAVX2(off *uint64, idx *uint32, blocks int, sh uint)

//go:noescape
func offToIdxAVX2(dst *uint32, offs *uint64, blocks int, sh uint)

//go:noescape
func sumLensAVX2(lens *uint32, blocks int) int

//go:noescape
func fillLensAVX2(ls *uint32, offs *uint64, blocks int, mask, thr uint64, l uint32) int
