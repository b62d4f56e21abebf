package edu

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/daqiri-go/daqiri/vfio"
)

// TestCheckDMA covers the argument checks that keep qemu alive; they run
// before the device is touched, so they need none.
func TestCheckDMA(t *testing.T) {
	var d Device
	for _, c := range []struct {
		dir    Direction
		iova   uint64
		off, n int
		ok     bool
	}{
		{ToDevice, 0x1000, 0, MaxTransfer, true},
		{ToHost, 0x1000, MaxTransfer - 1, 1, true},
		{ToHost, 0x1000, 0, BufferSize, false}, // touches the last byte: qemu 7 aborts
		{ToDevice, 0x1000, MaxTransfer, 1, false},
		{ToDevice, 0x1000, -1, 1, false},
		{ToDevice, 0x1000, 0, 0, false},
		{ToDevice, 0x1000, 0, -5, false},
		{ToDevice, DMAMask - 15, 0, 16, true},
		{ToDevice, DMAMask - 15, 0, 17, false},
		{ToDevice, ^uint64(0), 0, 16, false},
		{Direction(2), 0x1000, 0, 16, false},
	} {
		err := d.checkDMA(c.dir, c.iova, c.off, c.n)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, vfio.ErrInvalid)) {
			t.Errorf("checkDMA(%v, %#x, %d, %d) = %v, want ok=%v", c.dir, c.iova, c.off, c.n, err, c.ok)
		}
	}
	// Random input: never a transfer outside the buffer accepted.
	for range 1000 {
		off, n := rand.IntN(2*BufferSize)-BufferSize/2, rand.IntN(2*BufferSize)-BufferSize/2
		if d.checkDMA(ToDevice, 0x1000, off, n) == nil && (off < 0 || n <= 0 || off+n > MaxTransfer) {
			t.Fatalf("accepted off %d n %d", off, n)
		}
	}
}

func TestDirectionString(t *testing.T) {
	if ToDevice.String() != "host→device" || ToHost.String() != "device→host" {
		t.Errorf("%v %v", ToDevice, ToHost)
	}
}
