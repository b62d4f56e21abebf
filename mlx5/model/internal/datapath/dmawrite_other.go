//go:build !amd64 || purego

package datapath

// canStream is false where there are no streaming stores in this package (other
// architectures, or the purego tag): every write is Go's copy and needs no fence.
const canStream = false

// copyStream is copy here (never called by dmaWriter; tests call it on every build).
func copyStream(dst, src []byte) { copy(dst, src) }

// storeFence has nothing to order here.
func storeFence() {}
