package iomem_test

import (
	"encoding/binary"
	"testing"

	"github.com/daqiri-go/daqiri/internal/iomem"
)

// TestAccessors: each store writes exactly its bytes in the CPU's order and each load reads
// them back, at every alignment (plain accesses; an atomic at an unaligned address faults on
// arm64), with the bytes around untouched; the barriers return.
func TestAccessors(t *testing.T) {
	backing := make([]byte, 32)
	for skew := range 8 {
		clear(backing)
		b := backing[8+skew:]
		iomem.Store64((*[8]byte)(b), 0x0102030405060708)
		if got := binary.NativeEndian.Uint64(b); got != 0x0102030405060708 || backing[7+skew] != 0 || backing[16+skew] != 0 {
			t.Errorf("skew %d: Store64 left %x", skew, backing)
		}
		if got := iomem.Load64((*[8]byte)(b)); got != 0x0102030405060708 {
			t.Errorf("skew %d: Load64 = %#x", skew, got)
		}
		iomem.Store32((*[4]byte)(b), 0xa1b2c3d4)
		if got := binary.NativeEndian.Uint32(b); got != 0xa1b2c3d4 || binary.NativeEndian.Uint32(b[4:]) != uint32(0x0102030405060708>>32) {
			t.Errorf("skew %d: Store32 left %x", skew, backing)
		}
		if got := iomem.Load32((*[4]byte)(b)); got != 0xa1b2c3d4 {
			t.Errorf("skew %d: Load32 = %#x", skew, got)
		}
	}
	iomem.ToDevice()
	iomem.FromDevice()
	iomem.WCStart()
	iomem.FlushWrites()
}
