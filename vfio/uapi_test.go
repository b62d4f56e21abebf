package vfio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// le builds an expected little-endian byte layout from (width, value) pairs.
// The ABI is the CPU's native order; the tests run on little-endian x86-64
// and arm64.
func le(fields ...uint64) []byte {
	var b []byte
	for i := 0; i < len(fields); i += 2 {
		switch fields[i] {
		case 2:
			b = binary.LittleEndian.AppendUint16(b, uint16(fields[i+1]))
		case 4:
			b = binary.LittleEndian.AppendUint32(b, uint32(fields[i+1]))
		case 8:
			b = binary.LittleEndian.AppendUint64(b, fields[i+1])
		default:
			panic("width")
		}
	}
	return b
}

func TestIoctlNumbers(t *testing.T) {
	// _IO(';', 100+n): type in bits 8-15, number in bits 0-7, no size or
	// direction bits (vfio.h).
	for _, c := range []struct {
		name string
		got  uintptr
		want uintptr
	}{
		{"VFIO_GET_API_VERSION", ioctlGetAPIVersion, 0x3b64},
		{"VFIO_CHECK_EXTENSION", ioctlCheckExtension, 0x3b65},
		{"VFIO_SET_IOMMU", ioctlSetIOMMU, 0x3b66},
		{"VFIO_GROUP_GET_STATUS", ioctlGroupGetStatus, 0x3b67},
		{"VFIO_GROUP_SET_CONTAINER", ioctlGroupSetContainer, 0x3b68},
		{"VFIO_GROUP_UNSET_CONTAINER", ioctlGroupUnsetContainer, 0x3b69},
		{"VFIO_GROUP_GET_DEVICE_FD", ioctlGroupGetDeviceFD, 0x3b6a},
		{"VFIO_DEVICE_GET_INFO", ioctlDeviceGetInfo, 0x3b6b},
		{"VFIO_DEVICE_GET_REGION_INFO", ioctlDeviceGetRegionInfo, 0x3b6c},
		{"VFIO_DEVICE_GET_IRQ_INFO", ioctlDeviceGetIRQInfo, 0x3b6d},
		{"VFIO_DEVICE_SET_IRQS", ioctlDeviceSetIRQs, 0x3b6e},
		{"VFIO_DEVICE_RESET", ioctlDeviceReset, 0x3b6f},
		{"VFIO_IOMMU_GET_INFO", ioctlIOMMUGetInfo, 0x3b70},
		{"VFIO_IOMMU_MAP_DMA", ioctlIOMMUMapDMA, 0x3b71},
		{"VFIO_IOMMU_UNMAP_DMA", ioctlIOMMUUnmapDMA, 0x3b72},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.name, c.got, c.want)
		}
	}
}

func TestEncodeDMAMap(t *testing.T) {
	for range 20 {
		vaddr, iova, size := rand.Uint64(), rand.Uint64(), rand.Uint64()
		flags := rand.Uint32N(4)
		got := encodeDMAMap(vaddr, iova, size, flags)
		want := le(4, sizeDMAMap, 4, uint64(flags), 8, vaddr, 8, iova, 8, size)
		if !bytes.Equal(got, want) {
			t.Fatalf("encodeDMAMap:\n got %x\nwant %x", got, want)
		}
	}
	got := encodeDMAUnmap(0x1000, 0x2000)
	if want := le(4, sizeDMAUnmap, 4, 0, 8, 0x1000, 8, 0x2000); !bytes.Equal(got, want) {
		t.Errorf("encodeDMAUnmap:\n got %x\nwant %x", got, want)
	}
}

func TestEncodeIRQSet(t *testing.T) {
	fds := []int{int(rand.Int32N(1000)), -1, int(rand.Int32N(1000))}
	got := encodeIRQSet(irqSetDataEventFD|irqSetActionTrigger, IRQIndexMSIX, 2, 3, eventfdData(fds))
	want := le(4, 20+12, 4, 0x24, 4, IRQIndexMSIX, 4, 2, 4, 3, 4, uint64(fds[0]), 4, 0xffffffff, 4, uint64(fds[2]))
	if !bytes.Equal(got, want) {
		t.Errorf("encodeIRQSet(eventfds):\n got %x\nwant %x", got, want)
	}
	// Disabling an index: DATA_NONE|ACTION_TRIGGER, count 0, no data.
	got = encodeIRQSet(irqSetDataNone|irqSetActionTrigger, IRQIndexINTx, 0, 0, nil)
	if want := le(4, 20, 4, 0x21, 4, 0, 4, 0, 4, 0); !bytes.Equal(got, want) {
		t.Errorf("encodeIRQSet(disable):\n got %x\nwant %x", got, want)
	}
	if irqSetActionUnmask|irqSetDataNone != 0x11 || irqSetActionMask != 0x8 || irqSetDataBool != 0x2 {
		t.Error("VFIO_IRQ_SET_* flag values differ from vfio.h")
	}
}

func TestBufAlignment(t *testing.T) {
	for n := 1; n < 100; n++ {
		b := newBuf(n)
		if len(b) != n || uintptr(unsafe.Pointer(&b[0]))%8 != 0 {
			t.Fatalf("newBuf(%d): len %d, address %p", n, len(b), &b[0])
		}
	}
}

func TestDecodeInfos(t *testing.T) {
	gs := decodeGroupStatus(le(4, 8, 4, 3))
	if !gs.Viable || !gs.ContainerSet {
		t.Errorf("group status flags 3: %+v", gs)
	}
	if gs := decodeGroupStatus(le(4, 8, 4, 0)); gs.Viable || gs.ContainerSet {
		t.Errorf("group status flags 0: %+v", gs)
	}
	di := decodeDeviceInfo(le(4, 24, 4, DeviceFlagPCI|DeviceFlagReset, 4, 9, 4, 5, 4, 0, 4, 0))
	if !di.PCI() || !di.CanReset() || di.NumRegions != 9 || di.NumIRQs != 5 {
		t.Errorf("device info: %+v", di)
	}
	ri := decodeRegionInfo(le(4, 32, 4, RegionFlagRead|RegionFlagWrite|RegionFlagMmap, 4, 0, 4, 0, 8, 1<<20, 8, 0))
	if ri.Size != 1<<20 || !ri.Readable() || !ri.Writable() || !ri.Mappable() || ri.Sparse != nil || ri.HasType {
		t.Errorf("region info: %+v", ri)
	}
}

func TestDecodeRegionCaps(t *testing.T) {
	// A region info with a sparse-mmap capability (two areas) at 32 and a
	// type capability after it, as VFIO lays out a BAR holding an MSI-X
	// table.
	b := le(4, 96, 4, RegionFlagRead|RegionFlagMmap|RegionFlagCaps, 4, 2, 4, 32, 8, 0x4000, 8, 2<<40)
	b = append(b, le(2, regionCapSparseMmap, 2, 1, 4, 80, 4, 2, 4, 0, 8, 0, 8, 0x1000, 8, 0x3000, 8, 0x1000)...)
	b = append(b, le(2, regionCapType, 2, 1, 4, 0, 4, 0x80008086, 4, 1)...)
	r := decodeRegionInfo(b)
	if len(r.Sparse) != 2 || r.Sparse[0] != (Area{0, 0x1000}) || r.Sparse[1] != (Area{0x3000, 0x1000}) {
		t.Errorf("sparse areas %+v", r.Sparse)
	}
	if !r.HasType || r.Type != 0x80008086 || r.Subtype != 1 {
		t.Errorf("type cap: %v %#x %#x", r.HasType, r.Type, r.Subtype)
	}
	if r.Offset != 2<<40 || r.Index != 2 {
		t.Errorf("offset %#x index %d", r.Offset, r.Index)
	}
}

func TestDecodeIOMMUInfo(t *testing.T) {
	// Page sizes, then an IOVA-range capability (two ranges) and a
	// DMA-avail capability.
	b := le(4, 80, 4, iommuInfoPgsizes|iommuInfoCaps, 8, 0x40201000, 4, 24, 4, 0)
	b = append(b, le(2, iommuCapIOVARange, 2, 1, 4, 72, 4, 2, 4, 0, 8, 0, 8, 0xfedfffff, 8, 0xfef00000, 8, 0x7fffffffff)...)
	b = append(b, le(2, iommuCapDMAAvail, 2, 1, 4, 0, 4, 65535)...)
	info := decodeIOMMUInfo(b)
	if info.PageSizes != 0x40201000 || info.MinPageSize() != 4096 {
		t.Errorf("page sizes %#x (min %#x)", info.PageSizes, info.MinPageSize())
	}
	want := []IOVARange{{0, 0xfedfffff}, {0xfef00000, 0x7fffffffff}}
	if fmt.Sprint(info.IOVARanges) != fmt.Sprint(want) {
		t.Errorf("IOVA ranges %x, want %x", info.IOVARanges, want)
	}
	if info.DMAAvail != 65535 {
		t.Errorf("DMA avail %d", info.DMAAvail)
	}
	if info := decodeIOMMUInfo(le(4, 24, 4, 0, 8, 0xfff, 4, 0, 4, 0)); info.PageSizes != 0 || info.DMAAvail != -1 {
		t.Errorf("without flags: %+v", info)
	}
}

// TestCapChainMalformed feeds chains a buggy or hostile kernel could return:
// loops, offsets past the end, truncated bodies. The walk must end.
func TestCapChainMalformed(t *testing.T) {
	for _, c := range []struct {
		name  string
		b     []byte
		first uint32
		max   int
	}{
		{"self loop", append(le(4, 16, 4, 0), le(2, 1, 2, 1, 4, 8)...), 8, 1},
		{"backwards", append(le(4, 16, 4, 0), le(2, 1, 2, 1, 4, 4)...), 8, 1},
		{"past the end", le(4, 8, 4, 0), 64, 0},
		{"inside the header", le(4, 16, 4, 0, 4, 0, 4, 0), 4, 0},
	} {
		n := 0
		capChain(c.b, c.first, func(uint16, uint16, []byte) { n++ })
		if n > c.max {
			t.Errorf("%s: %d capabilities visited, at most %d expected", c.name, n, c.max)
		}
	}
	// A random buffer never makes it loop or panic.
	for range 200 {
		b := make([]byte, 8+rand.IntN(120))
		for i := range b {
			b[i] = byte(rand.Uint32())
		}
		capChain(b, rand.Uint32N(uint32(len(b)+16)), func(uint16, uint16, []byte) {})
		decodeRegionInfo(append(le(4, 32, 4, RegionFlagCaps, 4, 0, 4, 32, 8, 0, 8, 0), b...))
		decodeIOMMUInfo(append(le(4, 24, 4, iommuInfoCaps, 8, 0, 4, 24, 4, 0), b...))
	}
}

func TestErrorMatching(t *testing.T) {
	for _, c := range []struct {
		errno    unix.Errno
		sentinel error
	}{
		{unix.EBUSY, ErrInUse}, {unix.ENOENT, ErrNotFound}, {unix.ENODEV, ErrNotFound},
		{unix.EACCES, ErrPermission}, {unix.EPERM, ErrPermission}, {unix.ENOTTY, ErrUnsupported},
		{unix.EINVAL, ErrInvalid}, {unix.EEXIST, ErrExists},
	} {
		err := opErr("VFIO_X", "/dev/vfio/3", c.errno)
		if !errors.Is(err, c.sentinel) || !errors.Is(err, c.errno) {
			t.Errorf("%v: errors.Is(%v) false", err, c.sentinel)
		}
		if errors.Is(err, ErrTimeout) {
			t.Errorf("%v matches ErrTimeout", err)
		}
		if !strings.Contains(err.Error(), "VFIO_X /dev/vfio/3") {
			t.Errorf("message %q names neither the operation nor the object", err)
		}
	}
	err := invalid("map", "c", "size %d", 3)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "size 3") {
		t.Errorf("invalid(): %v", err)
	}
	if opErr("x", "y", nil) != nil {
		t.Error("opErr(nil) is not nil")
	}
}

func TestCheckMapped(t *testing.T) {
	maps := []Mapping{
		{IOVA: 0x10000, Size: 0x2000, Perm: DeviceReadWrite},
		{IOVA: 0x12000, Size: 0x1000, Perm: DeviceRead}, // adjacent, read-only
		{IOVA: 0x20000, Size: 0x1000, Perm: DeviceWrite},
	}
	for _, c := range []struct {
		iova, n uint64
		perm    Perm
		ok      bool
	}{
		{0x10000, 0x2000, DeviceReadWrite, true},
		{0x11fff, 2, DeviceRead, true},       // straddles two adjacent mappings
		{0x11fff, 2, DeviceWrite, false},     // the second is read-only
		{0x10000, 0x3001, DeviceRead, false}, // one byte into the gap
		{0x0ffff, 2, DeviceRead, false},
		{0x20000, 0x1000, DeviceWrite, true},
		{0x20000, 0x1000, DeviceRead, false},
		{0x30000, 1, DeviceRead, false},
	} {
		err := checkMapped(maps, c.iova, c.n, c.perm)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrNotMapped)) {
			t.Errorf("checkMapped(%#x, %#x, %d) = %v, want ok=%v", c.iova, c.n, c.perm, err, c.ok)
		}
	}
	if err := checkMapped(maps, 0x10000, 0, DeviceRead); !errors.Is(err, ErrInvalid) {
		t.Errorf("empty range: %v", err)
	}
	if err := checkMapped(maps, ^uint64(0), 2, DeviceRead); !errors.Is(err, ErrInvalid) {
		t.Errorf("overflowing range: %v", err)
	}
}

func TestMMIOAccess(t *testing.T) {
	mem, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	m := &MMIO{mem: mem, region: RegionBAR0}
	v32, v64 := rand.Uint32(), rand.Uint64()
	m.Write32(0x04, v32)
	m.Write64(0x80, v64)
	if m.Read32(0x04) != v32 || binary.NativeEndian.Uint32(mem[4:]) != v32 {
		t.Errorf("Write32/Read32 at 4")
	}
	if m.Read64(0x80) != v64 || binary.NativeEndian.Uint64(mem[0x80:]) != v64 {
		t.Errorf("Write64/Read64 at 0x80")
	}
	if m.Len() != 4096 {
		t.Errorf("Len %d", m.Len())
	}
	for _, bad := range []struct {
		name string
		fn   func()
	}{
		{"misaligned 32", func() { m.Read32(2) }},
		{"misaligned 64", func() { m.Write64(4, 0) }},
		{"past the end", func() { m.Read32(4096) }},
		{"straddling the end", func() { m.Read64(4092) }},
		{"negative", func() { m.Write32(-4, 0) }},
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "MMIO access") {
					t.Errorf("%s: recovered %v, want an MMIO access panic", bad.name, r)
				}
			}()
			bad.fn()
		}()
	}
	if err := m.Unmap(); err != nil {
		t.Fatal(err)
	}
	if err := m.Unmap(); err != nil {
		t.Errorf("second Unmap: %v", err)
	}
}

func TestFaultMatch(t *testing.T) {
	w := &FaultWatcher{bdf: "0000:00:01.0", bus: "00:01.0"}
	for rec, want := range map[string]bool{
		"3,1234,5678,-;DMAR: [DMA Read NO_PASID] Request device [00:01.0] fault addr 0xfe91000 [fault reason 0x06] PTE Read access is not set\n": true,
		"3,1,2,-;DMAR: [DMA Write] Request device [00:01.0] fault addr 1000 [fault reason 05] PTE Write access is not set\n":                     true,
		"3,1,2,-;DMAR: [DMA Read NO_PASID] Request device [00:02.0] fault addr 0x1000 [fault reason 0x06]\n":                                     false,
		"3,1,2,-;AMD-Vi: Event logged [IO_PAGE_FAULT device=0000:00:01.0 domain=0x0002 address=0x1000 flags=0x0000]\n":                           true,
		"3,1,2,-;AMD-Vi: Event logged [IO_PAGE_FAULT device=00:01.0 domain=0x0002 address=0x1000 flags=0x0000]\n":                                true,
		"6,1,2,-;vfio-pci 0000:00:01.0: enabling device (0000 -> 0002)\n":                                                                        false,
		"no separator": false,
	} {
		if _, got := w.match(rec); got != want {
			t.Errorf("match(%q) = %v, want %v", rec, got, want)
		}
	}
	if _, err := WatchFaults("a/b"); !errors.Is(err, ErrInvalid) {
		t.Errorf("WatchFaults(a/b): %v", err)
	}
}

// smmuRecords are /dev/kmsg records as Linux's arm-smmu-v3 driver logs an event
// (arm_smmu_evtq_thread, dev_info; the tab before each word is escaped as \x09):
// here an F_TRANSLATION (0x10) for StreamID sid at input address 0xfff00000.
func smmuRecords(seq int, sid uint32) []string {
	const meta = "\n SUBSYSTEM=platform\n DEVICE=+platform:arm-smmu-v3.0.auto\n"
	rec := func(text string) string {
		seq++
		return fmt.Sprintf("6,%d,1520351,-;arm-smmu-v3 arm-smmu-v3.0.auto: %s%s", seq, text, meta)
	}
	return []string{
		rec("event 0x10 received:"),
		rec(fmt.Sprintf(`\x090x%08x00000010`, sid)),
		rec(`\x090x0000020000000000`),
		rec(`\x090x00000000fff00000`),
		rec(`\x090x0000000000000000`),
	}
}

// TestFaultMatchSMMUv3: an SMMUv3 event is the device's when its StreamID is the
// device's requester ID (00:02.0: 0x10), reported once with the event's name and
// address; a newer kernel's client line is reported when the raw record was not.
func TestFaultMatchSMMUv3(t *testing.T) {
	w := &FaultWatcher{bdf: "0000:00:02.0", bus: "00:02.0", sid: requesterID("00:02.0")}
	if w.sid != 0x10 {
		t.Fatalf("requesterID(00:02.0) = %#x, want 0x10", w.sid)
	}
	feed := func(recs ...string) (got []string) {
		for _, r := range recs {
			if m, ok := w.match(r); ok {
				got = append(got, m)
			}
		}
		return got
	}
	got := feed(smmuRecords(100, 0x10)...)
	if len(got) != 1 || !strings.Contains(got[0], "F_TRANSLATION") || !strings.Contains(got[0], "StreamID 0x10") || !strings.Contains(got[0], "0xfff00000") {
		t.Errorf("an F_TRANSLATION of StreamID 0x10 gave %q, want one fault naming the event, StreamID and address", got)
	}
	if got := feed(smmuRecords(200, 0x18)...); len(got) != 0 {
		t.Errorf("another device's event (StreamID 0x18) gave %q", got)
	}
	// 6.15 and later: the raw record, then the decoded line naming the client.
	client := "3,300,1520400,-;arm-smmu-v3 arm-smmu-v3.0.auto: event: F_TRANSLATION client: 0000:00:02.0 sid: 0x10 ssid: 0x0 iova: 0xfff00000 ipa: 0x0\n"
	if got := feed(append(smmuRecords(300, 0x10), client)...); len(got) != 1 {
		t.Errorf("raw record and client line gave %d faults %q, want 1", len(got), got)
	}
	// A StreamID that is not the requester ID (a firmware mapping with an offset):
	// only the client line names the device.
	if got := feed(append(smmuRecords(400, 0x10010), strings.Replace(client, "sid: 0x10", "sid: 0x10010", 1))...); len(got) != 1 || !strings.Contains(got[0], "client: 0000:00:02.0") {
		t.Errorf("client line with a mapped StreamID gave %q, want it reported", got)
	}
	// Interleaved and cut-off records are not taken for a fault.
	recs := smmuRecords(500, 0x10)
	if got := feed(recs[0], recs[1], "6,9,9,-;arm-smmu-v3 arm-smmu-v3.0.auto: event 0x10 received:\n", recs[2], recs[3]); len(got) != 0 {
		t.Errorf("a record cut off by the next event's header gave %q", got)
	}
	for _, bus := range []string{"zz:00.0", "00:20.0", "00:00.8", ""} {
		if id := requesterID(bus); id != ^uint32(0) {
			t.Errorf("requesterID(%q) = %#x, want ^0", bus, id)
		}
	}
}

// TestNoVFIOHere checks the errors on a machine without VFIO (like the
// development host): they name the device node and match ErrNotFound.
func TestNoVFIOHere(t *testing.T) {
	if unix.Access(ContainerPath, unix.F_OK) == nil {
		t.Skip(ContainerPath + " exists here; the VM tests cover it")
	}
	_, err := OpenContainer()
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), ContainerPath) {
		t.Errorf("OpenContainer without VFIO: %v", err)
	}
	if _, err := OpenGroup(rand.IntN(100)); !errors.Is(err, ErrNotFound) {
		t.Errorf("OpenGroup without VFIO: %v", err)
	}
	if _, err := OpenPCI("0000:00:01.0"); err == nil {
		t.Error("OpenPCI without VFIO succeeded")
	}
}
