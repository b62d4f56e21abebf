//go:build !amd64 || purego

package datapath

import "unsafe"

// canStream is false where there are no streaming stores in this package (other
// architectures, or the purego tag): every write is Go's copy and needs no fence.
const canStream = false

// copyStream is copy here (never called by dmaWriter; tests call it on every build).
func copyStream(dst, src *byte, n int) {
	copy(unsafe.Slice(dst, n), unsafe.Slice(src, n))
}

// storeFence has nothing to order here.
func storeFence() {}
