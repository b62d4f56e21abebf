//go:build !amd64 || purego

package engine

// hasVec is false where there are no vector loops (other architectures, or the purego tag):
// the Go loops of burst.go do every packet, and the functions below are never called.
const hasVec = false

func idxToOffClearAVX2(off *uint64, idx *uint32, blocks int, sh uint)                   {}
func offToIdxAVX2(dst *uint32, offs *uint64, blocks int, sh uint)                       {}
func sumLensAVX2(lens *uint32, blocks int) int                                          { return 0 }
func fillLensAVX2(ls *uint32, offs *uint64, blocks int, mask, thr uint64, l uint32) int { return 0 }
