//go:build !amd64 || purego || race

package datapath

// canStream is false where there are no streaming stores in this package (other
// architectures, the purego tag, and race builds, where Go's copy lets the race detector see
// the RX buffers written): every write is Go's copy and needs no fence.
const canStream = false

// copyStream is copy here (never called by dmaWriter; tests call it on every build).
func copyStream(dst, src []byte) { copy(dst, src) }

// storeFence has nothing to order here.
func storeFence() {}
