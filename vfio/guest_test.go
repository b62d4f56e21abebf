package vfio

import (
	"errors"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/daqiri-go/daqiri/hugepage"
	"github.com/daqiri-go/daqiri/integration/vm/guest"
)

// The tests in this file run inside the VM of integration/vm, on the qemu
// edu device that the harness bound to vfio-pci behind an emulated Intel
// IOMMU. Device semantics (DMA, interrupts from the device) are tested in
// package edu; these test the VFIO calls themselves.

// openEdu opens the edu device with a fresh container and closes it all at
// the end of the test.
func openEdu(t *testing.T) (*PCI, string) {
	t.Helper()
	bdf, _ := guest.Edu(t)
	p, err := OpenPCI(bdf)
	if err != nil {
		t.Fatalf("OpenPCI(%s): %v", bdf, err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return p, bdf
}

// anonMem maps n bytes of anonymous memory outside the Go heap.
func anonMem(t *testing.T, n int) []byte {
	t.Helper()
	m, err := hugepage.Map(n, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m.Bytes()
}

// randomIOVA picks a page-aligned IOVA below 256 MiB (what the edu device
// can address), away from 0, for size bytes aligned to align, inside one of
// the container's usable IOVA ranges: the reserved windows differ by
// platform (x86's MSI window at 0xfee00000 lies above 256 MiB, but QEMU
// virt's GICv3 ITS doorbell reserves 0x8000000-0x80fffff behind the SMMUv3).
func randomIOVA(t *testing.T, c *Container, size, align uint64) uint64 {
	t.Helper()
	info, err := c.IOMMUInfo()
	if err != nil {
		t.Fatal(err)
	}
	for range 1000 {
		iova := (1 + rand.Uint64N((1<<28-size)/4096-1)) * 4096 &^ (align - 1)
		if iova == 0 {
			continue
		}
		for _, r := range info.IOVARanges {
			if iova >= r.Start && iova+size-1 <= r.End {
				return iova
			}
		}
		if len(info.IOVARanges) == 0 {
			return iova
		}
	}
	t.Fatalf("no IOVA for %d bytes below 256 MiB in the usable ranges %x", size, info.IOVARanges)
	return 0
}

func TestGuestContainer(t *testing.T) {
	guest.Require(t)
	c, err := OpenContainer()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, ext := range []Extension{Type1IOMMU, Type1v2IOMMU} {
		if ok, err := c.CheckExtension(ext); err != nil || !ok {
			t.Errorf("CheckExtension(%d) = %v, %v; want true", ext, ok, err)
		}
	}
	// Without a group there is no IOMMU yet.
	if _, err := c.IOMMUInfo(); !errors.Is(err, ErrInvalid) {
		t.Errorf("IOMMUInfo before a group: %v, want ErrInvalid", err)
	}
	mem := anonMem(t, 4096)
	if err := c.MapDMA(mem, 0x10000, DeviceReadWrite); !errors.Is(err, ErrInvalid) {
		t.Errorf("MapDMA before a group: %v, want ErrInvalid", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CheckExtension(Type1v2IOMMU); !errors.Is(err, ErrClosed) {
		t.Errorf("CheckExtension after Close: %v, want ErrClosed", err)
	}
}

func TestGuestGroupAndDevice(t *testing.T) {
	bdf, group := guest.Edu(t)
	if n, err := IOMMUGroupOf(bdf); err != nil || n != group {
		t.Fatalf("IOMMUGroupOf(%s) = %d, %v; the harness says %d", bdf, n, err, group)
	}
	c, err := OpenContainer()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	g, err := OpenGroup(group)
	if err != nil {
		t.Fatal(err)
	}
	st, err := g.Status()
	if err != nil || !st.Viable || st.ContainerSet {
		t.Fatalf("Status before AddGroup = %+v, %v; want viable, no container", st, err)
	}
	if _, err := g.OpenDevice(bdf); !errors.Is(err, ErrInvalid) {
		t.Errorf("OpenDevice before AddGroup: %v, want ErrInvalid", err)
	}
	if err := c.AddGroup(g); err != nil {
		t.Fatal(err)
	}
	if st, err := g.Status(); err != nil || !st.ContainerSet {
		t.Errorf("Status after AddGroup = %+v, %v", st, err)
	}
	if err := c.AddGroup(g); !errors.Is(err, ErrInUse) {
		t.Errorf("second AddGroup: %v, want ErrInUse", err)
	}

	info, err := c.IOMMUInfo()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("IOMMU: page sizes %#x, IOVA ranges %x, DMA mappings available %d", info.PageSizes, info.IOVARanges, info.DMAAvail)
	if info.MinPageSize() != 4096 {
		t.Errorf("smallest IOMMU page %#x, want 4 KiB", info.MinPageSize())
	}
	if len(info.IOVARanges) == 0 || info.IOVARanges[0].Start > 1<<20 {
		t.Errorf("IOVA ranges %x: want one starting low", info.IOVARanges)
	}
	if info.DMAAvail <= 0 {
		t.Errorf("DMA mappings available: %d", info.DMAAvail)
	}

	d, err := g.OpenDevice(bdf)
	if err != nil {
		t.Fatal(err)
	}
	di := d.Info()
	t.Logf("device %s: flags %#x, %d regions, %d IRQ indexes", bdf, di.Flags, di.NumRegions, di.NumIRQs)
	if !di.PCI() || di.NumRegions < RegionVGA+1 || di.NumIRQs < IRQIndexReq+1 {
		t.Errorf("device info %+v: want a vfio-pci device with 9+ regions and 5+ IRQ indexes", di)
	}

	bar0, err := d.RegionInfo(RegionBAR0)
	if err != nil {
		t.Fatal(err)
	}
	if bar0.Size != 1<<20 || !bar0.Readable() || !bar0.Writable() || !bar0.Mappable() {
		t.Errorf("BAR0 %+v: want 1 MiB, readable, writable, mappable", bar0)
	}
	if bar1, err := d.RegionInfo(RegionBAR1); err != nil || bar1.Size != 0 {
		t.Errorf("BAR1 %+v, %v: want an unimplemented (empty) region", bar1, err)
	}
	cfg, err := d.RegionInfo(RegionConfig)
	if err != nil || cfg.Size < 256 || !cfg.Readable() || !cfg.Writable() || cfg.Mappable() {
		t.Errorf("config region %+v, %v: want 256+ bytes, read/write, not mappable", cfg, err)
	}
	if cfg.Offset == bar0.Offset {
		t.Errorf("config and BAR0 share offset %#x", cfg.Offset)
	}

	ven, err1 := d.Config16(PCIVendorID)
	dev, err2 := d.Config16(PCIDeviceID)
	if err := errors.Join(err1, err2); err != nil || ven != 0x1234 || dev != 0x11e8 {
		t.Errorf("config space IDs %04x:%04x (%v), want 1234:11e8", ven, dev, err)
	}
	caps, err := d.PCICapabilities()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("PCI capabilities: %+v", caps)
	if !hasCap(caps, PCICapIDMSI) {
		t.Errorf("no MSI capability in %+v", caps)
	}

	intx, err := d.IRQInfo(IRQIndexINTx)
	if err != nil || intx.Count != 1 || !intx.EventFD() || !intx.Automasked() {
		t.Errorf("INTx info %+v, %v: want 1 vector, eventfd, automasked", intx, err)
	}
	if msi, err := d.IRQInfo(IRQIndexMSI); err != nil || msi.Count != 1 || !msi.EventFD() {
		t.Errorf("MSI info %+v, %v: want 1 vector with eventfd", msi, err)
	}
	if msix, err := d.IRQInfo(IRQIndexMSIX); err != nil || msix.Count != 0 {
		t.Errorf("MSI-X info %+v, %v: the edu device has none", msix, err)
	}

	bar, err := d.MapRegion(RegionBAR0)
	if err != nil {
		t.Fatal(err)
	}
	if bar.Len() != 1<<20 || bar.Read32(0)&0xff != 0xed {
		t.Errorf("BAR0 mapped: %d bytes, id %#x", bar.Len(), bar.Read32(0))
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := d.RegionInfo(RegionBAR0); !errors.Is(err, ErrClosed) {
		t.Errorf("RegionInfo after Close: %v, want ErrClosed", err)
	}
}

func hasCap(caps []PCICap, id uint8) bool {
	for _, c := range caps {
		if c.ID == id {
			return true
		}
	}
	return false
}

func TestGuestBadInput(t *testing.T) {
	p, bdf := openEdu(t)
	_, group := guest.Edu(t)
	t.Run("no such group", func(t *testing.T) {
		_, err := OpenGroup(group + 1000)
		if !errors.Is(err, ErrNotFound) || !errors.Is(err, unix.ENOENT) {
			t.Errorf("OpenGroup(%d): %v, want ErrNotFound", group+1000, err)
		}
		if _, err := OpenGroup(-1); !errors.Is(err, ErrInvalid) {
			t.Errorf("OpenGroup(-1): %v, want ErrInvalid", err)
		}
	})
	t.Run("group in use", func(t *testing.T) {
		_, err := OpenGroup(group)
		if !errors.Is(err, ErrInUse) || !errors.Is(err, unix.EBUSY) {
			t.Errorf("second OpenGroup(%d): %v, want ErrInUse", group, err)
		}
		if _, err := OpenPCI(bdf); !errors.Is(err, ErrInUse) {
			t.Errorf("second OpenPCI(%s): %v, want ErrInUse", bdf, err)
		}
	})
	t.Run("no such device", func(t *testing.T) {
		if _, err := p.Group.OpenDevice("0000:00:1f.7"); !errors.Is(err, ErrNotFound) {
			t.Errorf("OpenDevice of a device outside the group: %v, want ErrNotFound", err)
		}
		for _, name := range []string{"", "../x", "a\x00b"} {
			if _, err := p.Group.OpenDevice(name); !errors.Is(err, ErrInvalid) {
				t.Errorf("OpenDevice(%q): %v, want ErrInvalid", name, err)
			}
		}
		if _, err := IOMMUGroupOf("0000:7f:1f.7"); !errors.Is(err, ErrNotFound) {
			t.Errorf("IOMMUGroupOf(absent device): %v, want ErrNotFound", err)
		}
	})
	t.Run("regions", func(t *testing.T) {
		if _, err := p.RegionInfo(p.Info().NumRegions); !errors.Is(err, ErrInvalid) {
			t.Errorf("RegionInfo past the last: %v", err)
		}
		if err := p.ReadConfig(250, make([]byte, 16)); !errors.Is(err, ErrInvalid) {
			t.Errorf("config read past the end: %v", err)
		}
		if _, err := p.MapRegion(RegionConfig); !errors.Is(err, ErrUnsupported) {
			t.Errorf("MapRegion(config): %v, want ErrUnsupported", err)
		}
		if _, err := p.MapRegion(RegionBAR2); !errors.Is(err, ErrNotFound) {
			t.Errorf("MapRegion(absent BAR2): %v, want ErrNotFound", err)
		}
	})
	t.Run("dma", func(t *testing.T) {
		mem := anonMem(t, 3*4096)
		iova := randomIOVA(t, p.Container, 1<<20, 4096)
		for _, tc := range []struct {
			mem  []byte
			iova uint64
		}{{mem[1:4097], iova}, {mem[:4000], iova}, {mem[:4096], iova + 1}, {nil, iova}} {
			if err := p.Container.MapDMA(tc.mem, tc.iova, DeviceReadWrite); !errors.Is(err, ErrInvalid) {
				t.Errorf("MapDMA(%d bytes, iova %#x): %v, want ErrInvalid", len(tc.mem), tc.iova, err)
			}
		}
		if err := p.Container.MapDMA(mem[:4096], iova, 0); !errors.Is(err, ErrInvalid) {
			t.Errorf("MapDMA without permission: %v", err)
		}
		if err := p.Container.MapDMA(mem[:8192], iova, DeviceReadWrite); err != nil {
			t.Fatal(err)
		}
		if err := p.Container.MapDMA(mem[8192:], iova+4096, DeviceReadWrite); !errors.Is(err, ErrExists) {
			t.Errorf("overlapping MapDMA: %v, want ErrExists", err)
		}
		if err := p.Container.UnmapDMA(iova+4096, 4096); !errors.Is(err, ErrNotMapped) {
			t.Errorf("UnmapDMA inside a mapping: %v, want ErrNotMapped", err)
		}
		if err := p.Container.UnmapDMA(iova, 4096); !errors.Is(err, ErrInvalid) {
			t.Errorf("UnmapDMA with the wrong size: %v, want ErrInvalid", err)
		}
		if err := p.Container.UnmapDMA(iova, 8192); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("irqs", func(t *testing.T) {
		if _, err := p.EnableIRQ(IRQIndexMSIX, 1); !errors.Is(err, ErrUnsupported) {
			t.Errorf("EnableIRQ(MSI-X): %v, want ErrUnsupported", err)
		}
		if _, err := p.EnableIRQ(IRQIndexMSI, 2); !errors.Is(err, ErrInvalid) {
			t.Errorf("EnableIRQ(MSI, 2 vectors): %v, want ErrInvalid", err)
		}
		if _, err := p.EnableIRQ(99, 1); !errors.Is(err, ErrInvalid) {
			t.Errorf("EnableIRQ(99): %v, want ErrInvalid", err)
		}
		q, err := p.EnableIRQ(IRQIndexINTx, 1)
		if err != nil {
			t.Fatal(err)
		}
		// INTx and MSI exclude each other; the kernel says so.
		if _, err := p.EnableIRQ(IRQIndexMSI, 1); err == nil {
			t.Error("MSI enabled while INTx is")
		}
		if _, err := q.Wait(1, time.Millisecond); !errors.Is(err, ErrInvalid) {
			t.Errorf("Wait on vector 1 of 1: %v", err)
		}
		q.Close()
		if _, err := q.Wait(0, time.Millisecond); !errors.Is(err, ErrClosed) {
			t.Errorf("Wait after Close: %v, want ErrClosed", err)
		}
	})
}

func TestGuestDMAMappings(t *testing.T) {
	p, _ := openEdu(t)
	c := p.Container
	before, err := c.IOMMUInfo()
	if err != nil {
		t.Fatal(err)
	}
	type region struct {
		name string
		mem  []byte
	}
	regions := []region{{"anonymous", anonMem(t, 16*4096)}}
	if hp, err := hugepage.Map(2<<20, true); err == nil {
		t.Cleanup(func() { hp.Close() })
		regions = append(regions, region{"hugepage", hp.Bytes()})
	} else {
		t.Errorf("no hugepage for the test (the harness reserves some): %v", err)
	}
	var iovas []uint64
	for _, r := range regions {
		iova := randomIOVA(t, c, uint64(len(r.mem)), 1<<21)
		// Keep clear of earlier picks, with a gap on both sides: a mapping that ends where
		// another begins would make the "one byte past the end" check below cross into it
		// (seen once in ~100 runs, when the random picks landed 2 MiB apart).
		const gap = 1 << 21
		for _, m := range c.Mappings() {
			if iova < m.IOVA+m.Size+gap && m.IOVA < iova+uint64(len(r.mem))+gap {
				iova = m.IOVA + m.Size + gap
			}
		}
		if err := c.MapDMA(r.mem, iova, DeviceReadWrite); err != nil {
			t.Fatalf("%s: MapDMA at %#x: %v", r.name, iova, err)
		}
		iovas = append(iovas, iova)
		if err := c.CheckMapped(iova+uint64(len(r.mem))-1, 1, DeviceRead); err != nil {
			t.Errorf("%s: last byte not mapped: %v", r.name, err)
		}
		if err := c.CheckMapped(iova, uint64(len(r.mem))+1, DeviceRead); !errors.Is(err, ErrNotMapped) {
			t.Errorf("%s: one byte past the end: %v, want ErrNotMapped", r.name, err)
		}
	}
	ms := c.Mappings()
	if len(ms) != len(regions) {
		t.Fatalf("%d mappings, want %d", len(ms), len(regions))
	}
	for i := 1; i < len(ms); i++ {
		if ms[i-1].IOVA >= ms[i].IOVA {
			t.Errorf("mappings not sorted: %+v", ms)
		}
	}
	if after, err := c.IOMMUInfo(); err == nil && before.DMAAvail > 0 && after.DMAAvail > before.DMAAvail-len(regions) {
		t.Errorf("DMA mappings available %d → %d after %d mappings", before.DMAAvail, after.DMAAvail, len(regions))
	}
	for i, r := range regions {
		if err := c.UnmapDMA(iovas[i], uint64(len(r.mem))); err != nil {
			t.Errorf("%s: UnmapDMA: %v", r.name, err)
		}
	}
	// The same IOVA can be mapped again once free.
	if err := c.MapDMA(regions[0].mem, iovas[0], DeviceRead); err != nil {
		t.Errorf("MapDMA again at %#x: %v", iovas[0], err)
	}
	if err := c.CheckMapped(iovas[0], 4096, DeviceWrite); !errors.Is(err, ErrNotMapped) {
		t.Errorf("write check on a read-only mapping: %v, want ErrNotMapped", err)
	}
}

func TestGuestIRQLoopback(t *testing.T) {
	p, _ := openEdu(t)
	for _, index := range []int{IRQIndexINTx, IRQIndexMSI} {
		q, err := p.EnableIRQ(index, 1)
		if err != nil {
			t.Fatalf("EnableIRQ(%d): %v", index, err)
		}
		if n, err := q.Poll(0); err != nil || n != 0 {
			t.Errorf("index %d: Poll before any interrupt = %d, %v", index, n, err)
		}
		start := time.Now()
		if _, err := q.Wait(0, 20*time.Millisecond); !errors.Is(err, ErrTimeout) {
			t.Errorf("index %d: Wait with nothing pending: %v, want ErrTimeout", index, err)
		} else if time.Since(start) > 10*time.Second {
			t.Errorf("index %d: a 20 ms wait took %v", index, time.Since(start))
		}
		if err := q.Trigger(); err != nil {
			t.Fatalf("index %d: Trigger: %v", index, err)
		}
		if n, err := q.Wait(0, 5*time.Second); err != nil || n != 1 {
			t.Errorf("index %d: Wait after Trigger = %d, %v; want 1", index, n, err)
		}
		if index == IRQIndexINTx {
			if err := q.Unmask(); err != nil {
				t.Errorf("Unmask: %v", err)
			}
		}
		if err := q.Close(); err != nil {
			t.Errorf("index %d: Close: %v", index, err)
		}
	}
}

func TestGuestBusMasterAndReset(t *testing.T) {
	p, _ := openEdu(t)
	for _, on := range []bool{true, false, true} {
		if err := p.SetBusMaster(on); err != nil {
			t.Fatalf("SetBusMaster(%v): %v", on, err)
		}
		cmd, err := p.Config16(PCICommand)
		if err != nil || (cmd&PCICommandMaster != 0) != on {
			t.Errorf("SetBusMaster(%v): command register %#04x, %v", on, cmd, err)
		}
	}
	err := p.Reset()
	t.Logf("reset supported: %v; Reset: %v", p.Info().CanReset(), err)
	if p.Info().CanReset() && err != nil {
		t.Errorf("Reset on a device that offers it: %v", err)
	}
	if !p.Info().CanReset() && !errors.Is(err, ErrUnsupported) {
		t.Errorf("Reset without a reset method: %v, want ErrUnsupported", err)
	}
}

// TestGuestCleanClose checks that Close releases everything: the group can
// be opened again at once, and the device's interrupts and mappings start
// from nothing.
func TestGuestCleanClose(t *testing.T) {
	bdf, _ := guest.Edu(t)
	for i := range 3 {
		p, err := OpenPCI(bdf)
		if err != nil {
			t.Fatalf("round %d: OpenPCI: %v", i, err)
		}
		t.Cleanup(func() { p.Close() }) // after a failure below: the group stays usable for later tests
		mem := anonMem(t, 4096)
		if err := p.Container.MapDMA(mem, randomIOVA(t, p.Container, 4096, 4096), DeviceReadWrite); err != nil {
			t.Fatalf("round %d: MapDMA: %v", i, err)
		}
		if _, err := p.MapRegion(RegionBAR0); err != nil {
			t.Fatal(err)
		}
		if _, err := p.EnableIRQ(IRQIndexMSI, 1); err != nil {
			t.Fatalf("round %d: EnableIRQ: %v", i, err)
		}
		if err := p.Close(); err != nil {
			t.Fatalf("round %d: Close: %v", i, err)
		}
		if err := p.Close(); err != nil {
			t.Errorf("round %d: second Close: %v", i, err)
		}
	}
	if _, err := os.Stat(ContainerPath); err != nil {
		t.Error(err)
	}
}
