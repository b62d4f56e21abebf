package edu

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/hugepage"
	"github.com/daqiri-go/daqiri/integration/vm/guest"
	"github.com/daqiri-go/daqiri/internal/testutil"
	"github.com/daqiri-go/daqiri/vfio"
)

// The tests in this file run inside the VM of integration/vm, on the edu
// device behind the emulated Intel IOMMU.

// Bounds for waits on the device. Generous: qemu runs under TCG on a
// loaded machine, and each DMA starts 100 ms (virtual time) after its
// command.
const (
	factorialTimeout = 10 * time.Second
	dmaTimeout       = 10 * time.Second
)

func open(t *testing.T) *Device {
	t.Helper()
	bdf, _ := guest.Edu(t)
	d, err := Open(bdf)
	if err != nil {
		t.Fatalf("Open(%s): %v", bdf, err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return d
}

// hostMem maps n bytes for DMA: hugepage-backed or anonymous.
func hostMem(t *testing.T, n int, huge bool) []byte {
	t.Helper()
	m, err := hugepage.Map(n, huge)
	if err != nil {
		t.Fatalf("map %d bytes (huge %v): %v", n, huge, err)
	}
	t.Cleanup(func() { m.Close() })
	return m.Bytes()
}

// mapAt maps mem at a random IOVA the device can reach, aligned to align, inside the usable
// ranges the kernel reports.
func mapAt(t *testing.T, d *Device, mem []byte, perm vfio.Perm, align uint64) uint64 {
	t.Helper()
	info, err := d.PCI().Container.IOMMUInfo()
	if err != nil {
		t.Fatal(err)
	}
	// usable: inside one of the ranges the kernel reports (arm64's SMMUv3 keeps 0x8000000 to
	// 0x80fffff for MSI doorbells: a mapping there is refused with EINVAL).
	usable := func(iova uint64) bool {
		if len(info.IOVARanges) == 0 {
			return true
		}
		for _, r := range info.IOVARanges {
			if iova >= r.Start && iova+uint64(len(mem))-1 <= r.End {
				return true
			}
		}
		return false
	}
	for range 64 {
		iova := (1 + mrand.Uint64N((DMAMask+1-uint64(len(mem)))/align-1)) * align
		if !usable(iova) {
			continue
		}
		err := d.PCI().Container.MapDMA(mem, iova, perm)
		if errors.Is(err, vfio.ErrExists) {
			continue // collided with an earlier mapping: pick again
		}
		if err != nil {
			t.Fatalf("MapDMA(%d bytes at %#x): %v", len(mem), iova, err)
		}
		return iova
	}
	t.Fatalf("no free usable IOVA found in 64 tries (usable ranges %x)", info.IOVARanges)
	return 0
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func TestEduIdentity(t *testing.T) {
	d := open(t)
	major, minor := d.Version()
	t.Logf("edu version %d.%d", major, minor)
	if major != 1 {
		t.Errorf("major version %d, want 1", major)
	}
	for range 32 {
		v := mrand.Uint32()
		if got := d.Liveness(v); got != ^v {
			t.Fatalf("liveness: wrote %#08x, read %#08x, want %#08x", v, got, ^v)
		}
	}
}

func factorial(n uint32) uint32 {
	r := uint32(1)
	for ; n > 1; n-- {
		r *= n
	}
	return r
}

func TestEduFactorial(t *testing.T) {
	d := open(t)
	if st := d.Status(); st&StatusComputing != 0 {
		t.Fatalf("status %#x: computing before any request", st)
	}
	ns := []uint32{0, 1, 12, 13, 20}
	for range 8 {
		ns = append(ns, mrand.Uint32N(40))
	}
	for _, n := range ns {
		got, err := d.Factorial(n, factorialTimeout)
		if err != nil {
			t.Fatal(err)
		}
		if want := factorial(n); got != want {
			t.Errorf("%d! = %d from the device, want %d (mod 2^32)", n, got, want)
		}
		if st := d.Status(); st&StatusComputing != 0 {
			t.Errorf("status %#x: still computing after the result was read", st)
		}
	}
	t.Run("interrupt", func(t *testing.T) {
		q, err := d.EnableIRQ(true)
		if err != nil {
			t.Fatal(err)
		}
		defer d.DisableIRQ()
		d.SetFactorialIRQ(true)
		defer d.SetFactorialIRQ(false)
		if st := d.Status(); st&StatusIRQFactorial == 0 {
			t.Errorf("status %#x: interrupt-on-factorial bit not set", st)
		}
		n := 5 + mrand.Uint32N(8)
		if got, err := d.Factorial(n, factorialTimeout); err != nil || got != factorial(n) {
			t.Fatalf("%d! = %d, %v", n, got, err)
		}
		if _, err := q.Wait(0, factorialTimeout); err != nil {
			t.Fatalf("no MSI after the factorial: %v", err)
		}
		if st := d.IRQStatus(); st&IRQFactorial == 0 {
			t.Errorf("interrupt status %#x, want the factorial bit %#x", st, IRQFactorial)
		}
		if err := d.AckIRQ(IRQFactorial); err != nil {
			t.Fatal(err)
		}
		if st := d.IRQStatus(); st != 0 {
			t.Errorf("interrupt status %#x after the acknowledgement", st)
		}
	})
}

// TestEduDMA round-trips fresh random bytes host → device → host through
// IOMMU-mapped memory, from anonymous and from hugepage memory.
func TestEduDMA(t *testing.T) {
	d := open(t)
	for _, huge := range []bool{false, true} {
		name := map[bool]string{false: "anonymous", true: "hugepage"}[huge]
		t.Run(name, func(t *testing.T) {
			size := 2 * BufferSize
			align := uint64(4096)
			if huge {
				size, align = 2<<20, 2<<20
			}
			mem := hostMem(t, size, huge)
			iova := mapAt(t, d, mem, vfio.DeviceReadWrite, align)
			defer d.PCI().Container.UnmapDMA(iova, uint64(len(mem)))
			src, dst := mem[:BufferSize], mem[len(mem)-BufferSize:]
			dstIOVA := iova + uint64(len(mem)-BufferSize)

			// The whole buffer, then a random piece at a random offset.
			cases := [][2]int{{0, MaxTransfer}}
			off := mrand.IntN(MaxTransfer)
			cases = append(cases, [2]int{off, 1 + mrand.IntN(MaxTransfer-off)})
			for _, c := range cases {
				off, n := c[0], c[1]
				want := randomBytes(n)
				copy(src, want)
				clear(dst)
				if err := d.DMA(ToDevice, iova, off, n, dmaTimeout); err != nil {
					t.Fatal(err)
				}
				if err := d.DMA(ToHost, dstIOVA, off, n, dmaTimeout); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(dst[:n], want) {
					t.Fatalf("%d bytes at buffer offset %d: the round trip changed them (first differing byte %d)", n, off, testutil.FirstDiff(dst[:n], want))
				}
			}
		})
	}
}

// TestEduDMAInterrupt checks that DMA completion arrives as an interrupt
// through the eventfd, as MSI and as INTx.
func TestEduDMAInterrupt(t *testing.T) {
	d := open(t)
	mem := hostMem(t, 2*BufferSize, false)
	iova := mapAt(t, d, mem, vfio.DeviceReadWrite, 4096)
	for _, msi := range []bool{true, false} {
		name := map[bool]string{true: "MSI", false: "INTx"}[msi]
		t.Run(name, func(t *testing.T) {
			q, err := d.EnableIRQ(msi)
			if err != nil {
				t.Fatal(err)
			}
			defer d.DisableIRQ()
			n := 1 + mrand.IntN(MaxTransfer)
			want := randomBytes(n)
			copy(mem, want)
			clear(mem[BufferSize:])
			// DMA waits for the interrupt (bounded), checks the status says
			// DMA and acknowledges it.
			if err := d.DMA(ToDevice, iova, 0, n, dmaTimeout); err != nil {
				t.Fatal(err)
			}
			if err := d.DMA(ToHost, iova+BufferSize, 0, n, dmaTimeout); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(mem[BufferSize:BufferSize+n], want) {
				t.Fatalf("%d bytes changed on the round trip", n)
			}
			if st := d.IRQStatus(); st != 0 {
				t.Errorf("interrupt status %#x left after two acknowledged DMAs", st)
			}
			if n, _ := q.Poll(0); n != 0 {
				t.Errorf("%d extra interrupts pending", n)
			}
			// An interrupt raised by hand arrives too.
			v := 1 + mrand.Uint32N(0xff)
			d.RaiseIRQ(v)
			if _, err := q.Wait(0, 5*time.Second); err != nil {
				t.Fatalf("raised %#x: %v", v, err)
			}
			if st := d.IRQStatus(); st != v {
				t.Errorf("interrupt status %#x, want %#x", st, v)
			}
			if err := d.AckIRQ(v); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestEduUnmappedIOVA checks that DMA outside the IOMMU mappings fails
// cleanly: refused up front by the driver, and — when the driver's check is
// bypassed — blocked by the IOMMU and reported as an error within a bounded
// wait, with no data reaching the device.
func TestEduUnmappedIOVA(t *testing.T) {
	d := open(t)
	c := d.PCI().Container
	good := hostMem(t, BufferSize, false)
	goodIOVA := mapAt(t, d, good, vfio.DeviceReadWrite, 4096)
	stale := hostMem(t, BufferSize, false)
	staleIOVA := mapAt(t, d, stale, vfio.DeviceReadWrite, 4096)

	// Fill the device buffer through the stale mapping while it is valid.
	first := randomBytes(MaxTransfer)
	copy(stale, first)
	if err := d.DMA(ToDevice, staleIOVA, 0, MaxTransfer, dmaTimeout); err != nil {
		t.Fatal(err)
	}
	if err := c.UnmapDMA(staleIOVA, BufferSize); err != nil {
		t.Fatal(err)
	}
	second := randomBytes(MaxTransfer)
	copy(stale, second) // the device must never see these

	t.Run("refused by the driver", func(t *testing.T) {
		for _, dir := range []Direction{ToDevice, ToHost} {
			err := d.DMA(dir, staleIOVA, 0, 64, dmaTimeout)
			if !errors.Is(err, vfio.ErrNotMapped) {
				t.Errorf("%v from an unmapped IOVA: %v, want ErrNotMapped", dir, err)
			}
		}
		// Straddling the end of a mapping.
		if err := d.DMA(ToDevice, goodIOVA+BufferSize-8, 0, 16, dmaTimeout); !errors.Is(err, vfio.ErrNotMapped) {
			t.Errorf("DMA over the end of a mapping: %v, want ErrNotMapped", err)
		}
		if d.BAR().Read64(RegDMACmd)&DMAStart != 0 {
			t.Error("the device was started by a refused DMA")
		}
	})

	t.Run("blocked by the IOMMU", func(t *testing.T) {
		start := time.Now()
		err := d.dma(ToDevice, staleIOVA, 0, MaxTransfer, dmaTimeout)
		// Under an SMMUv3 the fault may be logged after the completion: wait for it, bounded.
		for i := 0; err == nil && i < 100; i++ {
			time.Sleep(20 * time.Millisecond)
			if ferr := d.CheckFaults(); ferr != nil {
				err = fmt.Errorf("after the transfer: %w", ferr)
			}
		}
		t.Logf("DMA from the unmapped IOVA %#x: %v (after %v)", staleIOVA, err, time.Since(start).Round(time.Millisecond))
		if err == nil {
			t.Error("a DMA from an unmapped IOVA reported success")
		} else if !errors.Is(err, vfio.ErrIOMMUFault) && !errors.Is(err, vfio.ErrTimeout) {
			t.Errorf("error %v: want ErrIOMMUFault or ErrTimeout", err)
		}
		if d.BAR().Read64(RegDMACmd)&DMAStart != 0 {
			// Never finished: wait (bounded) so the next test finds it idle.
			poll(dmaTimeout, func() bool { return d.BAR().Read64(RegDMACmd)&DMAStart == 0 })
		}
		// What the device holds now, read back through a valid mapping.
		clear(good)
		if err := d.DMA(ToHost, goodIOVA, 0, MaxTransfer, dmaTimeout); err != nil {
			t.Fatalf("reading the device buffer back: %v", err)
		}
		got := good[:MaxTransfer]
		if n := commonBytes(got, second); n > MaxTransfer/8 {
			t.Errorf("%d of %d bytes of the unmapped memory reached the device", n, MaxTransfer)
		}
		if bytes.Equal(got, first) {
			t.Log("the blocked DMA left the device buffer unchanged")
		}
	})
}

// commonBytes counts positions where a and b agree (random data agrees in
// about 1/256 of them).
func commonBytes(a, b []byte) int {
	n := 0
	for i := range min(len(a), len(b)) {
		if a[i] == b[i] {
			n++
		}
	}
	return n
}

func TestEduBadInput(t *testing.T) {
	d := open(t)
	mem := hostMem(t, BufferSize, false)
	iova := mapAt(t, d, mem, vfio.DeviceReadWrite, 4096)
	for _, c := range []struct {
		name      string
		dir       Direction
		iova      uint64
		off, n    int
		wantError error
	}{
		{"past the device buffer", ToDevice, iova, BufferSize - 10, 11, vfio.ErrInvalid},
		{"the buffer's last byte (aborts qemu 7)", ToHost, iova, 0, BufferSize, vfio.ErrInvalid},
		{"negative offset", ToHost, iova, -1, 10, vfio.ErrInvalid},
		{"zero length", ToDevice, iova, 0, 0, vfio.ErrInvalid},
		{"beyond the 28-bit DMA mask", ToDevice, 1 << 28, 0, 16, vfio.ErrInvalid},
		{"bad direction", Direction(7), iova, 0, 16, vfio.ErrInvalid},
	} {
		if err := d.DMA(c.dir, c.iova, c.off, c.n, dmaTimeout); !errors.Is(err, c.wantError) {
			t.Errorf("%s: %v, want %v", c.name, err, c.wantError)
		}
	}
	// A read-only mapping cannot take a device write.
	ro := hostMem(t, BufferSize, false)
	roIOVA := mapAt(t, d, ro, vfio.DeviceRead, 4096)
	if err := d.DMA(ToHost, roIOVA, 0, 16, dmaTimeout); !errors.Is(err, vfio.ErrNotMapped) {
		t.Errorf("device write into a read-only mapping: %v, want ErrNotMapped", err)
	}
	bdf, _ := guest.Edu(t)
	if _, err := Open(bdf); !errors.Is(err, vfio.ErrInUse) {
		t.Errorf("second Open(%s): %v, want ErrInUse", bdf, err)
	}
	if _, err := Open("0000:00:1f.6"); !errors.Is(err, vfio.ErrNotFound) {
		t.Errorf("Open of an absent device: %v, want ErrNotFound", err)
	}
}
