package vfiouser_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/daqiri-go/daqiri/internal/testutil"
	"github.com/daqiri-go/daqiri/mlx5/model/vfiouser"
	"github.com/daqiri-go/daqiri/mlx5/model/vfiouser/vfiousertest"
)

// fakeDev is a device with a 4 KiB read/write BAR0, a 256-byte config space that is read
// only, 4 MSI-X vectors, and a "doorbell" at BAR0 offset 0x100: a write of {iova u64, vector
// u32} makes the device write the BAR's first 16 bytes to iova and raise vector.
type fakeDev struct {
	mu       sync.Mutex
	bar      [4096]byte
	cfg      [256]byte
	maps     map[uint64][]byte
	irqs     *vfiouser.IRQs
	resets   int
	attached bool
	detached int
	failMap  atomic.Bool
}

func newFake() *fakeDev {
	d := &fakeDev{maps: map[uint64][]byte{}}
	for i := range d.cfg {
		d.cfg[i] = byte(i)
	}
	return d
}

func (d *fakeDev) RegionInfo(i uint32) vfiouser.RegionInfo {
	switch i {
	case vfiouser.RegionBAR0:
		return vfiouser.RegionInfo{Size: 4096, Read: true, Write: true}
	case vfiouser.RegionConfig:
		return vfiouser.RegionInfo{Size: 256, Read: true}
	}
	return vfiouser.RegionInfo{}
}

func (d *fakeDev) ReadRegion(i uint32, off uint64, p []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch i {
	case vfiouser.RegionBAR0:
		copy(p, d.bar[off:])
	case vfiouser.RegionConfig:
		copy(p, d.cfg[off:])
	default:
		return fmt.Errorf("region %d", i)
	}
	return nil
}

func (d *fakeDev) WriteRegion(i uint32, off uint64, p []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if i != vfiouser.RegionBAR0 {
		return fmt.Errorf("region %d", i)
	}
	if off == 0x100 && len(p) == 12 {
		iova, vec := binary.NativeEndian.Uint64(p), binary.NativeEndian.Uint32(p[8:])
		for base, m := range d.maps {
			if iova >= base && iova+16 <= base+uint64(len(m)) {
				copy(m[iova-base:], d.bar[:16])
				d.irqs.Trigger(vfiouser.IRQMSIX, vec)
				return nil
			}
		}
		return fmt.Errorf("DMA fault at %#x: %w", iova, syscall.EFAULT)
	}
	copy(d.bar[off:], p)
	return nil
}

func (d *fakeDev) IRQInfo(i uint32) vfiouser.IRQInfo {
	if i == vfiouser.IRQMSIX {
		return vfiouser.IRQInfo{Count: 4, NoResize: true}
	}
	return vfiouser.IRQInfo{}
}

func (d *fakeDev) MapDMA(iova uint64, mem []byte, perm vfiouser.Perm) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.failMap.Load() {
		return errors.New("no")
	}
	d.maps[iova] = mem
	return nil
}

func (d *fakeDev) UnmapDMA(iova, size uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if m, ok := d.maps[iova]; !ok || uint64(len(m)) != size {
		return fmt.Errorf("no map %#x+%#x", iova, size)
	}
	delete(d.maps, iova)
	return nil
}

func (d *fakeDev) Reset() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.resets++
	d.bar = [4096]byte{}
	return nil
}

func (d *fakeDev) Attach(q *vfiouser.IRQs) { d.irqs, d.attached = q, true }
func (d *fakeDev) Detach()                 { d.detached++ }

func (d *fakeDev) window(iova uint64) []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.maps[iova]
}

func (d *fakeDev) resetCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.resets
}

func (d *fakeDev) nmaps() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.maps)
}

// openFDs counts the process's open descriptors.
func openFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

type session struct {
	c    *vfiousertest.Client
	dev  *fakeDev
	log  *testutil.SyncBuffer
	done chan error
}

// start serves a fake device on one end of a socket pair; cleanup closes the client and
// checks that the session ended, the device was detached and nothing leaked.
func start(t *testing.T, dev *fakeDev) *session {
	t.Helper()
	testutil.NoGoroutineLeak(t)
	fds0 := openFDs(t)
	srvEnd, cliEnd, err := vfiouser.Pair()
	if err != nil {
		t.Fatal(err)
	}
	log := &testutil.SyncBuffer{}
	srv := vfiouser.NewServer(dev, vfiouser.Options{Logf: func(f string, a ...any) { fmt.Fprintf(log, f+"\n", a...) }})
	s := &session{c: vfiousertest.New(cliEnd), dev: dev, log: log, done: make(chan error, 1)}
	go func() { s.done <- srv.ServeConn(context.Background(), srvEnd) }()
	t.Cleanup(func() {
		s.c.Close()
		<-s.done
		if dev.detached != 1 {
			t.Errorf("device detached %d times, want 1", dev.detached)
		}
		if n := dev.nmaps(); n != 0 {
			t.Errorf("%d DMA windows left in the device after the session", n)
		}
		if n := openFDs(t); n != fds0 {
			t.Errorf("%d descriptors open after the session, %d before", n, fds0)
		}
		if t.Failed() {
			t.Logf("server log:\n%s", log.String())
		}
	})
	return s
}

func wantErrno(t *testing.T, what string, err error, no syscall.Errno) {
	t.Helper()
	if !errors.Is(err, no) {
		t.Errorf("%s: %v, want an error reply with %v", what, err, no)
	}
}

func TestNegotiation(t *testing.T) {
	s := start(t, newFake())
	// Nothing but VERSION first.
	_, err := s.c.DeviceInfo()
	wantErrno(t, "GET_INFO before VERSION", err, syscall.EINVAL)
	js, err := s.c.Version()
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Capabilities map[string]any `json:"capabilities"`
	}
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatalf("server capabilities %q: %v", js, err)
	}
	c := v.Capabilities
	if c["max_msg_fds"] != float64(16) || c["max_data_xfer_size"] != float64(1<<20) || c["pgsizes"] != float64(4096) || c["write_multiple"] != true {
		t.Errorf("capabilities %v", c)
	}
	if _, ok := c["migration"]; ok {
		t.Errorf("migration offered: %v", c)
	}
	_, err = s.c.Version()
	wantErrno(t, "second VERSION", err, syscall.EINVAL)
	info, err := s.c.DeviceInfo()
	if err != nil {
		t.Fatal(err)
	}
	if info != (vfiousertest.DeviceInfo{Flags: 3, NumRegions: 9, NumIRQs: 5}) {
		t.Errorf("device info %+v", info)
	}
	for i, want := range map[uint32]vfiousertest.RegionInfo{0: {Flags: 3, Size: 4096}, 1: {}, 6: {}, 7: {Flags: 1, Size: 256}, 8: {}} {
		got, err := s.c.RegionInfo(i)
		if err != nil || got != want {
			t.Errorf("region %d: %+v %v, want %+v", i, got, err, want)
		}
	}
	_, err = s.c.RegionInfo(9)
	wantErrno(t, "region 9", err, syscall.EINVAL)
	fl, n, err := s.c.IRQInfo(vfiouser.IRQMSIX)
	if err != nil || fl != 1|8 || n != 4 {
		t.Errorf("MSI-X info flags %#x count %d %v", fl, n, err)
	}
	fl, n, err = s.c.IRQInfo(vfiouser.IRQINTx)
	if err != nil || fl != 0 || n != 0 {
		t.Errorf("INTx info flags %#x count %d %v", fl, n, err)
	}
	_, _, err = s.c.IRQInfo(5)
	wantErrno(t, "irq index 5", err, syscall.EINVAL)
}

func TestVersionRefused(t *testing.T) {
	for name, p := range map[string][]byte{
		"short":           {0, 0},
		"no NUL":          append([]byte{0, 0, 0, 0}, `{}`...),
		"not JSON":        append([]byte{0, 0, 0, 0}, "capabilities\x00"...),
		"caps not object": append([]byte{0, 0, 0, 0}, `{"capabilities":3}`+"\x00"...),
		"bad type":        append([]byte{0, 0, 0, 0}, `{"capabilities":{"max_msg_fds":"x"}}`+"\x00"...),
		"NUL inside":      append([]byte{0, 0, 0, 0}, "{}\x00{}\x00"...),
		"major 1":         {1, 0, 0, 0},
	} {
		t.Run(name, func(t *testing.T) {
			s := start(t, newFake())
			_, err := s.c.Call(vfiouser.CmdVersion, p)
			var re *vfiousertest.ReplyError
			if !errors.As(err, &re) {
				t.Fatalf("VERSION %q: %v, want an error reply", p, err)
			}
			// A good VERSION still works afterwards: nothing was half-applied.
			if _, err := s.c.Version(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestRegions(t *testing.T) {
	s := start(t, newFake())
	if _, err := s.c.Version(); err != nil {
		t.Fatal(err)
	}
	data := testutil.RandBytes(64)
	if err := s.c.Write(0, 0x40, data); err != nil {
		t.Fatal(err)
	}
	got, err := s.c.Read(0, 0x40, 64)
	if err != nil || string(got) != string(data) {
		t.Fatalf("read back %x %v, want %x", got, err, data)
	}
	cfg, err := s.c.Read(vfiouser.RegionConfig, 0xfc, 4)
	if err != nil || string(cfg) != "\xfc\xfd\xfe\xff" {
		t.Errorf("config read %x %v", cfg, err)
	}
	// Posted writes come before a later read (messages are handled in order).
	for i := range 10 {
		if err := s.c.WritePosted(0, uint64(0x200+i), []byte{byte(i + 1)}); err != nil {
			t.Fatal(err)
		}
	}
	got, err = s.c.Read(0, 0x200, 10)
	if err != nil || string(got) != "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a" {
		t.Errorf("after posted writes: %x %v", got, err)
	}
	// REGION_WRITE_MULTI: two writes, then one bad one refuses the whole message.
	multi := func(ws ...[3]uint64) []byte {
		p := binary.NativeEndian.AppendUint64(nil, uint64(len(ws)))
		for _, w := range ws {
			e := make([]byte, 24)
			binary.NativeEndian.PutUint64(e, w[0])
			binary.NativeEndian.PutUint32(e[8:], 0)
			binary.NativeEndian.PutUint32(e[12:], uint32(w[1]))
			binary.NativeEndian.PutUint64(e[16:], w[2])
			p = append(p, e...)
		}
		return p
	}
	if _, err := s.c.Call(vfiouser.CmdRegionWriteMulti, multi([3]uint64{0x300, 4, 0xa1a2a3a4}, [3]uint64{0x308, 8, 0x0102030405060708})); err != nil {
		t.Fatal(err)
	}
	got, _ = s.c.Read(0, 0x300, 16)
	if binary.NativeEndian.Uint32(got) != 0xa1a2a3a4 || binary.NativeEndian.Uint64(got[8:]) != 0x0102030405060708 {
		t.Errorf("after WRITE_MULTI: %x", got)
	}
	_, err = s.c.Call(vfiouser.CmdRegionWriteMulti, multi([3]uint64{0x400, 4, 1}, [3]uint64{0x400, 9, 1}))
	wantErrno(t, "WRITE_MULTI with a 9-byte write", err, syscall.EINVAL)
	if got, _ := s.c.Read(0, 0x400, 4); string(got) != "\x00\x00\x00\x00" {
		t.Errorf("a refused WRITE_MULTI applied a write: %x", got)
	}
	// Bad accesses.
	_, err = s.c.Read(0, 4090, 8)
	wantErrno(t, "read past the end", err, syscall.EINVAL)
	_, err = s.c.Read(0, 1<<63, 8)
	wantErrno(t, "read far past the end", err, syscall.EINVAL)
	_, err = s.c.Read(1, 0, 4)
	wantErrno(t, "read of an absent BAR", err, syscall.EINVAL)
	_, err = s.c.Read(0, 0, 0)
	wantErrno(t, "read of 0 bytes", err, syscall.EINVAL)
	_, err = s.c.Read(0, 0, 2<<20)
	wantErrno(t, "read over max_data_xfer_size", err, syscall.E2BIG)
	err = s.c.Write(vfiouser.RegionConfig, 0, []byte{1})
	wantErrno(t, "write to a read-only region", err, syscall.EPERM)
	p := vfiousertest.WritePayload(0, 0, []byte{1, 2, 3})
	binary.NativeEndian.PutUint32(p[12:], 5) // count says 5, 3 bytes follow
	_, err = s.c.Call(vfiouser.CmdRegionWrite, p)
	wantErrno(t, "write count mismatch", err, syscall.EINVAL)
	_, err = s.c.Call(vfiouser.CmdRegionRead, make([]byte, 12))
	wantErrno(t, "short read request", err, syscall.EINVAL)
	// Reset reaches the device.
	if err := s.c.Reset(); err != nil || s.dev.resetCount() != 1 {
		t.Errorf("reset: %v, device resets %d", err, s.dev.resetCount())
	}
	_, err = s.c.Call(vfiouser.CmdDeviceReset, []byte{0})
	wantErrno(t, "reset with a payload", err, syscall.EINVAL)
}

func TestDMA(t *testing.T) {
	s := start(t, newFake())
	if _, err := s.c.Version(); err != nil {
		t.Fatal(err)
	}
	m, err := s.c.NewMem(64 << 10)
	if err != nil {
		t.Fatal(err)
	}
	// Two windows from one memfd, as QEMU maps guest RAM in sections of one backend.
	if err := s.c.Map(m, 0, 0x100000, 32<<10); err != nil {
		t.Fatal(err)
	}
	if err := s.c.Map(m, 32<<10, 0x200000, 32<<10); err != nil {
		t.Fatal(err)
	}
	if s.dev.nmaps() != 2 {
		t.Fatalf("device has %d windows, want 2", s.dev.nmaps())
	}
	pattern := testutil.RandBytes(16)
	if err := s.c.Write(0, 0, pattern); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		iova uint64
		off  int
	}{{0x100000, 0}, {0x107ff0, 0x7ff0}, {0x200010, 32<<10 + 0x10}} {
		db := binary.NativeEndian.AppendUint32(binary.NativeEndian.AppendUint64(nil, c.iova), 0)
		if err := s.c.Write(0, 0x100, db); err != nil {
			t.Fatalf("doorbell for %#x: %v", c.iova, err)
		}
		if got := m.B[c.off : c.off+16]; string(got) != string(pattern) {
			t.Errorf("device write to %#x: client memory at %#x has %x, want %x", c.iova, c.off, got, pattern)
		}
	}
	// A DMA outside every window is the device's error, carried as its errno.
	db := binary.NativeEndian.AppendUint32(binary.NativeEndian.AppendUint64(nil, 0x300000), 0)
	wantErrno(t, "device DMA fault", s.c.Write(0, 0x100, db), syscall.EFAULT)

	bad := []struct {
		name  string
		p     []byte
		fds   bool
		errno syscall.Errno
	}{
		{"overlap", vfiousertest.DMAMapPayload(3, 0, 0x104000, 0x1000), true, syscall.EEXIST},
		{"unaligned iova", vfiousertest.DMAMapPayload(3, 0, 0x400800, 0x1000), true, syscall.EINVAL},
		{"unaligned size", vfiousertest.DMAMapPayload(3, 0, 0x400000, 0x800), true, syscall.EINVAL},
		{"zero size", vfiousertest.DMAMapPayload(3, 0, 0x400000, 0), true, syscall.EINVAL},
		{"no permission", vfiousertest.DMAMapPayload(0, 0, 0x400000, 0x1000), true, syscall.EINVAL},
		{"unknown flag", vfiousertest.DMAMapPayload(7, 0, 0x400000, 0x1000), true, syscall.EINVAL},
		{"wraps", vfiousertest.DMAMapPayload(3, 0, 1<<64-0x1000, 0x2000), true, syscall.EINVAL},
		{"past the file end", vfiousertest.DMAMapPayload(3, 60<<10, 0x400000, 0x2000), true, syscall.EINVAL},
		{"unaligned offset", vfiousertest.DMAMapPayload(3, 0x800, 0x400000, 0x1000), true, syscall.EINVAL},
		{"short", vfiousertest.DMAMapPayload(3, 0, 0x400000, 0x1000)[:24], true, syscall.EINVAL},
		{"offset without fd", vfiousertest.DMAMapPayload(3, 0x1000, 0x400000, 0x1000), false, syscall.EINVAL},
	}
	for _, b := range bad {
		var fds []int
		if b.fds {
			fds = []int{m.FD}
		}
		_, err := s.c.Call(vfiouser.CmdDMAMap, b.p, fds...)
		wantErrno(t, "DMA_MAP "+b.name, err, b.errno)
	}
	// Two descriptors for one window.
	_, err = s.c.Call(vfiouser.CmdDMAMap, vfiousertest.DMAMapPayload(3, 0, 0x400000, 0x1000), m.FD, m.FD)
	wantErrno(t, "DMA_MAP with two descriptors", err, syscall.EINVAL)
	// The device refusing a window.
	s.dev.failMap.Store(true)
	err = s.c.Map(m, 0, 0x400000, 0x1000)
	wantErrno(t, "DMA_MAP the device refuses", err, syscall.EINVAL)
	s.dev.failMap.Store(false)
	// A window without a descriptor is recorded (unmappable later) but not given to the device.
	if _, err := s.c.Call(vfiouser.CmdDMAMap, vfiousertest.DMAMapPayload(1, 0, 0x500000, 0x1000)); err != nil {
		t.Fatal(err)
	}
	if s.dev.nmaps() != 2 {
		t.Errorf("device has %d windows after a descriptor-less map, want 2", s.dev.nmaps())
	}
	if err := s.c.Unmap(0x500000, 0x1000); err != nil {
		t.Error(err)
	}
	// Unmap: whole windows only.
	wantErrno(t, "unmap half a window", s.c.Unmap(0x100000, 0x4000), syscall.EINVAL)
	// A range with no window is no error (linux type1; QEMU's vIOMMU unmaps empty ranges).
	if err := s.c.Unmap(0x600000, 0x1000); err != nil {
		t.Errorf("unmap of nothing: %v", err)
	}
	stale := s.dev.window(0x100000)
	if err := s.c.Unmap(0x100000, 32<<10); err != nil {
		t.Fatal(err)
	}
	// A device goroutine still holding the unmapped window must not fault the server:
	// the memory stays mapped in the server until the session ends.
	stale[0] = 0x5a
	if m.B[0] != 0x5a {
		t.Error("a write through the stale window did not reach the client's memory")
	}
	if err := s.c.Unmap(0x100000, 32<<10); err != nil {
		t.Errorf("unmap twice: %v", err)
	}
	if s.dev.nmaps() != 1 {
		t.Errorf("device has %d windows, want 1", s.dev.nmaps())
	}
	// A range over several windows removes them all; one that splits a window is refused.
	if err := s.c.Map(m, 0, 0x700000, 4096); err != nil {
		t.Fatal(err)
	}
	if err := s.c.Map(m, 4096, 0x702000, 4096); err != nil {
		t.Fatal(err)
	}
	wantErrno(t, "unmap splitting a window", s.c.Unmap(0x700000, 0x2800), syscall.EINVAL)
	if err := s.c.Unmap(0x600000, 0x200000); err != nil || s.dev.nmaps() != 1 {
		t.Errorf("unmap of a range with two windows: %v, %d windows left (want 1)", err, s.dev.nmaps())
	}
	// A range up to the top of the 64-bit space (QEMU's intel-iommu sends one) is whole;
	// one past it wraps.
	if err := s.c.Map(m, 0, 0xfffff000_00000000, 4096); err != nil {
		t.Fatal(err)
	}
	toTop := ^uint64(0) - 0xfef00000 + 1 // bytes from 0xfef00000 to 2^64
	wantErrno(t, "unmap wrapping past 2^64", s.c.Unmap(0xfef00000, toTop+0x1000), syscall.EINVAL)
	if err := s.c.Unmap(0xfef00000, toTop); err != nil || s.dev.nmaps() != 1 {
		t.Errorf("unmap of [0xfef00000, 2^64): %v, %d windows left (want 1)", err, s.dev.nmaps())
	}
	// The second window stays mapped: the session's end must remove it.
}

func TestUnmapAll(t *testing.T) {
	s := start(t, newFake())
	if _, err := s.c.Version(); err != nil {
		t.Fatal(err)
	}
	m, err := s.c.NewMem(16 << 10)
	if err != nil {
		t.Fatal(err)
	}
	for i := range uint64(4) {
		if err := s.c.Map(m, i*4096, 0x10000+i*0x10000, 4096); err != nil {
			t.Fatal(err)
		}
	}
	p := make([]byte, 24)
	binary.NativeEndian.PutUint32(p, 24)
	binary.NativeEndian.PutUint32(p[4:], 2) // VFIO_DMA_UNMAP_FLAG_ALL
	binary.NativeEndian.PutUint64(p[8:], 0x10000)
	binary.NativeEndian.PutUint32(p[4:], 3) // ALL with the dirty bitmap: refused
	_, err = s.c.Call(vfiouser.CmdDMAUnmap, p)
	wantErrno(t, "unmap all with a bitmap", err, syscall.EINVAL)
	binary.NativeEndian.PutUint32(p[4:], 2)
	if _, err := s.c.Call(vfiouser.CmdDMAUnmap, p); err != nil {
		t.Fatal(err)
	}
	if s.dev.nmaps() != 0 {
		t.Errorf("%d windows after unmap all", s.dev.nmaps())
	}
	if !strings.Contains(s.log.String(), "wants 0 and 0") {
		t.Error("an unmap-all with an address is not noted in the log")
	}
	binary.NativeEndian.PutUint32(p[4:], 1) // dirty bitmap
	_, err = s.c.Call(vfiouser.CmdDMAUnmap, p)
	wantErrno(t, "unmap with a dirty bitmap", err, syscall.ENOTSUP)
}

func TestInterrupts(t *testing.T) {
	s := start(t, newFake())
	if _, err := s.c.Version(); err != nil {
		t.Fatal(err)
	}
	var e [4]*vfiousertest.Eventfd
	for i := range e {
		var err error
		if e[i], err = s.c.NewEventfd(); err != nil {
			t.Fatal(err)
		}
	}
	q := s.dev.irqs
	if q.Trigger(vfiouser.IRQMSIX, 1) {
		t.Error("a vector without an eventfd fired")
	}
	// QEMU sets vectors in runs: 0-1 with eventfds, then 3.
	if err := s.c.SetEventfds(vfiouser.IRQMSIX, 0, e[0], e[1]); err != nil {
		t.Fatal(err)
	}
	if err := s.c.SetEventfds(vfiouser.IRQMSIX, 3, e[3]); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		q.Trigger(vfiouser.IRQMSIX, 1)
	}
	q.Trigger(vfiouser.IRQMSIX, 3)
	if a, b, c := e[0].Count(), e[1].Count(), e[3].Count(); a != 0 || b != 3 || c != 1 {
		t.Errorf("eventfd counts %d %d %d, want 0 3 1", a, b, c)
	}
	// A device doorbell raising vector 0 from inside a region write.
	m, _ := s.c.NewMem(4096)
	if err := s.c.Map(m, 0, 0x1000, 4096); err != nil {
		t.Fatal(err)
	}
	db := binary.NativeEndian.AppendUint32(binary.NativeEndian.AppendUint64(nil, 0x1000), 0)
	if err := s.c.Write(0, 0x100, db); err != nil {
		t.Fatal(err)
	}
	if n := e[0].Count(); n != 1 {
		t.Errorf("vector 0 after the doorbell: %d, want 1", n)
	}
	// Mask: a trigger becomes pending, unmask delivers it once.
	if err := s.c.SetIRQs(vfiousertest.DataNone|vfiousertest.ActionMask, vfiouser.IRQMSIX, 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	q.Trigger(vfiouser.IRQMSIX, 1)
	q.Trigger(vfiouser.IRQMSIX, 1)
	if n := e[1].Count(); n != 0 || !q.Pending(vfiouser.IRQMSIX, 1) {
		t.Errorf("masked vector fired %d times, pending %v", n, q.Pending(vfiouser.IRQMSIX, 1))
	}
	if err := s.c.SetIRQs(vfiousertest.DataBool|vfiousertest.ActionUnmask, vfiouser.IRQMSIX, 0, 2, []byte{0, 1}); err != nil {
		t.Fatal(err)
	}
	if n := e[1].Count(); n != 1 || q.Pending(vfiouser.IRQMSIX, 1) {
		t.Errorf("unmask delivered %d, pending %v; want 1, false", n, q.Pending(vfiouser.IRQMSIX, 1))
	}
	// A client-raised trigger.
	if err := s.c.SetIRQs(vfiousertest.DataNone|vfiousertest.ActionTrigger, vfiouser.IRQMSIX, 3, 1, nil); err != nil {
		t.Fatal(err)
	}
	if n := e[3].Count(); n != 1 {
		t.Errorf("client trigger: %d", n)
	}
	// De-assign vector 3 (DATA_EVENTFD without descriptors), then disable the index.
	if err := s.c.SetIRQs(vfiousertest.DataEventfd|vfiousertest.ActionTrigger, vfiouser.IRQMSIX, 3, 1, nil); err != nil {
		t.Fatal(err)
	}
	if q.Assigned(vfiouser.IRQMSIX, 3) || !q.Assigned(vfiouser.IRQMSIX, 0) {
		t.Error("de-assign changed the wrong vectors")
	}
	if err := s.c.SetIRQs(vfiousertest.DataNone|vfiousertest.ActionTrigger, vfiouser.IRQMSIX, 0, 0, nil); err != nil {
		t.Fatal(err)
	}
	if q.Trigger(vfiouser.IRQMSIX, 0) || q.Assigned(vfiouser.IRQMSIX, 1) {
		t.Error("vectors still live after disabling the index")
	}
	// Refused: descriptors and counts that do not match, bad flags, ranges, non-eventfds.
	fds0 := openFDs(t)
	for _, c := range []struct {
		name  string
		p     []byte
		fds   []int
		errno syscall.Errno
	}{
		{"2 fds for 1 vector", vfiousertest.SetIRQsPayload(vfiousertest.DataEventfd|vfiousertest.ActionTrigger, 2, 0, 1, nil), []int{e[0].FD, e[1].FD}, syscall.EINVAL},
		{"1 fd for 2 vectors", vfiousertest.SetIRQsPayload(vfiousertest.DataEventfd|vfiousertest.ActionTrigger, 2, 0, 2, nil), []int{e[0].FD}, syscall.EINVAL},
		{"past the last vector", vfiousertest.SetIRQsPayload(vfiousertest.DataEventfd|vfiousertest.ActionTrigger, 2, 3, 2, nil), []int{e[0].FD, e[1].FD}, syscall.EINVAL},
		{"index without vectors", vfiousertest.SetIRQsPayload(vfiousertest.DataEventfd|vfiousertest.ActionTrigger, 0, 0, 1, nil), []int{e[0].FD}, syscall.EINVAL},
		{"not an eventfd", vfiousertest.SetIRQsPayload(vfiousertest.DataEventfd|vfiousertest.ActionTrigger, 2, 0, 1, nil), []int{m.FD}, syscall.EINVAL},
		{"two data types", vfiousertest.SetIRQsPayload(vfiousertest.DataNone|vfiousertest.DataBool|vfiousertest.ActionTrigger, 2, 0, 1, []byte{1}), nil, syscall.EINVAL},
		{"no action", vfiousertest.SetIRQsPayload(vfiousertest.DataNone, 2, 0, 1, nil), nil, syscall.EINVAL},
		{"bool count mismatch", vfiousertest.SetIRQsPayload(vfiousertest.DataBool|vfiousertest.ActionMask, 2, 0, 2, []byte{1}), nil, syscall.EINVAL},
		{"eventfd for mask", vfiousertest.SetIRQsPayload(vfiousertest.DataEventfd|vfiousertest.ActionMask, 2, 0, 1, nil), []int{e[0].FD}, syscall.ENOTSUP},
		{"index 5", vfiousertest.SetIRQsPayload(vfiousertest.DataNone|vfiousertest.ActionTrigger, 5, 0, 1, nil), nil, syscall.EINVAL},
		{"short", vfiousertest.SetIRQsPayload(vfiousertest.DataNone|vfiousertest.ActionTrigger, 2, 0, 1, nil)[:16], nil, syscall.EINVAL},
	} {
		_, err := s.c.Call(vfiouser.CmdDeviceSetIRQs, c.p, c.fds...)
		wantErrno(t, "SET_IRQS "+c.name, err, c.errno)
	}
	if n := openFDs(t); n != fds0 {
		t.Errorf("refused SET_IRQS left %d descriptors open (%d before)", n, fds0)
	}
	// The session keeps the last assignment until it ends; the end closes it.
	if err := s.c.SetEventfds(vfiouser.IRQMSIX, 2, e[2]); err != nil {
		t.Fatal(err)
	}
}

func TestMalformed(t *testing.T) {
	s := start(t, newFake())
	if _, err := s.c.Version(); err != nil {
		t.Fatal(err)
	}
	call := func(cmd vfiouser.Command, flags uint32, p []byte, fds ...int) error {
		id, err := s.c.Send(cmd, flags, p, fds...)
		if err != nil {
			return err
		}
		h, _, err := s.c.Recv()
		if err != nil {
			return err
		}
		if h.ID != id || h.Flags&vfiouser.FlagError == 0 {
			return fmt.Errorf("reply id %d flags %#x", h.ID, h.Flags)
		}
		return syscall.Errno(h.Error)
	}
	wantErrno(t, "unknown command", call(99, 0, nil), syscall.ENOSYS)
	wantErrno(t, "migration command", call(vfiouser.CmdMigDataRead, 0, nil), syscall.ENOTSUP)
	wantErrno(t, "DMA_READ from the client", call(vfiouser.CmdDMARead, 0, make([]byte, 16)), syscall.EINVAL)
	wantErrno(t, "Error flag in a command", call(vfiouser.CmdDeviceGetInfo, vfiouser.FlagError, make([]byte, 16)), syscall.EINVAL)
	wantErrno(t, "unknown flag bit", call(vfiouser.CmdDeviceGetInfo, 0x100, make([]byte, 16)), syscall.EINVAL)
	wantErrno(t, "message type 2", call(vfiouser.CmdDeviceGetInfo, 2, make([]byte, 16)), syscall.EINVAL)
	wantErrno(t, "GET_INFO with argsz 8", call(vfiouser.CmdDeviceGetInfo, 0, []byte{8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}), syscall.EINVAL)
	e, _ := s.c.NewEventfd()
	fds0 := openFDs(t)
	wantErrno(t, "descriptor with GET_INFO", call(vfiouser.CmdDeviceGetInfo, 0, make([]byte, 16), e.FD), syscall.EINVAL)
	if n := openFDs(t); n != fds0 {
		t.Errorf("the descriptor sent with GET_INFO was kept: %d open, %d before", n, fds0)
	}
	// Oversized: refused, its payload skipped, and the stream stays in step.
	big := make([]byte, 2<<20)
	wantErrno(t, "oversized message", call(vfiouser.CmdRegionWrite, 0, big), syscall.E2BIG)
	// A reply from the client is ignored; a No_reply command that fails gets no reply.
	if _, err := s.c.Send(vfiouser.CmdDeviceGetInfo, vfiouser.TypeReply, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.c.Send(vfiouser.CmdRegionWrite, vfiouser.FlagNoReply, vfiousertest.WritePayload(0, 8192, []byte{1})); err != nil {
		t.Fatal(err)
	}
	if _, err := s.c.DeviceInfo(); err != nil {
		t.Fatalf("the session is out of step after malformed messages: %v", err)
	}
	for _, want := range []string{"unknown command 99", "unknown flag bits", "over the", "came with 1 file descriptors", "unexpected reply", "outside region 0"} {
		if !strings.Contains(s.log.String(), want) {
			t.Errorf("the log does not say %q", want)
		}
	}
}

// A header cut short, or a payload cut short, ends the session with an error naming it.
func TestTruncated(t *testing.T) {
	for name, c := range map[string]struct {
		b    []byte
		want string
	}{
		"header":    {[]byte{1, 0, 4, 0, 32, 0, 0, 0, 0, 0}, "truncated header"},
		"payload":   {append(vfiouser.Header{ID: 1, Command: vfiouser.CmdDeviceGetInfo, Size: 32}.Append(nil), 1, 2, 3), "truncated message"},
		"size < 16": {vfiouser.Header{ID: 1, Command: vfiouser.CmdVersion, Size: 8}.Append(nil), "smaller than the 16-byte header"},
		// Issue 30 item 7: the end of stream inside an oversized (refused, skipped) payload
		// is a truncated message, not a clean disconnect.
		"oversized payload": {append(vfiouser.Header{ID: 1, Command: vfiouser.CmdDeviceGetInfo, Size: 1 << 30}.Append(nil), 1, 2, 3), "truncated message: the client closed the socket after 3 bytes of a refused"},
		"no message":        {nil, ""},
	} {
		t.Run(name, func(t *testing.T) {
			testutil.NoGoroutineLeak(t)
			dev := newFake()
			srvEnd, cliEnd, err := vfiouser.Pair()
			if err != nil {
				t.Fatal(err)
			}
			srv := vfiouser.NewServer(dev, vfiouser.Options{})
			done := make(chan error, 1)
			go func() { done <- srv.ServeConn(context.Background(), srvEnd) }()
			cl := vfiousertest.New(cliEnd)
			if len(c.b) > 0 {
				if err := cl.SendRaw(c.b); err != nil {
					t.Fatal(err)
				}
			}
			cl.Close()
			err = <-done
			if c.want == "" && err != nil {
				t.Errorf("clean disconnect: %v", err)
			}
			if c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Errorf("session ended with %v, want %q", err, c.want)
			}
			if dev.detached != 1 {
				t.Errorf("detached %d times", dev.detached)
			}
		})
	}
}

// Cancelling the context ends a session and ListenAndServe cleanly.
func TestListenAndServe(t *testing.T) {
	testutil.NoGoroutineLeak(t)
	path := t.TempDir() + "/s"
	dev := newFake()
	srv := vfiouser.NewServer(dev, vfiouser.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- srv.ListenAndServe(ctx, path, func() { close(ready) }) }()
	<-ready
	c, err := dialUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	cl := vfiousertest.New(c)
	defer cl.Close()
	if _, err := cl.Version(); err != nil {
		t.Fatal(err)
	}
	m, _ := cl.NewMem(8192)
	if err := cl.Map(m, 0, 0x2000, 8192); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("ListenAndServe after cancel: %v", err)
	}
	if dev.detached != 1 || dev.nmaps() != 0 {
		t.Errorf("after cancel: detached %d, %d windows", dev.detached, dev.nmaps())
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("socket file left behind: %v", err)
	}
}

func dialUnix(path string) (*net.UnixConn, error) {
	return net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
}

// More descriptors than max_msg_fds in one message: the ancillary data is cut short, so the
// message cannot be trusted; the session ends and every descriptor that did arrive is
// closed.
func TestTooManyFDs(t *testing.T) {
	s := start(t, newFake())
	if _, err := s.c.Version(); err != nil {
		t.Fatal(err)
	}
	var fds []int
	for range 17 {
		e, err := s.c.NewEventfd()
		if err != nil {
			t.Fatal(err)
		}
		fds = append(fds, e.FD)
	}
	if _, err := s.c.Send(vfiouser.CmdDeviceSetIRQs, 0, vfiousertest.SetIRQsPayload(vfiousertest.DataEventfd|vfiousertest.ActionTrigger, 2, 0, 17, nil), fds...); err != nil {
		t.Fatal(err)
	}
	if err := <-s.done; err == nil || !strings.Contains(err.Error(), "more than 16 file descriptors") {
		t.Errorf("session ended with %v", err)
	}
	s.done <- nil // for the cleanup
}

func countMaps(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// Behind a virtual IOMMU QEMU maps and unmaps small windows of guest RAM all the time, each
// with a new descriptor of the same memfd: the server maps the file once, so the churn does
// not pile up mappings (the kernel's vm.max_map_count is 65530).
func TestDMAChurn(t *testing.T) {
	s := start(t, newFake())
	if _, err := s.c.Version(); err != nil {
		t.Fatal(err)
	}
	m, err := s.c.NewMem(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.c.Map(m, 0, 0x1000, 4096); err != nil {
		t.Fatal(err)
	}
	before := countMaps(t)
	for i := range uint64(2000) {
		off := (i * 7 % 256) * 4096
		iova := 0x10000000 + i*0x1000
		if err := s.c.Map(m, off, iova, 4096); err != nil {
			t.Fatal(err)
		}
		// The window is the right part of the file.
		m.B[off] = byte(i)
		if w := s.dev.window(iova); len(w) != 4096 || w[0] != byte(i) {
			t.Fatalf("window %d: %d bytes, first %#x, want %#x", i, len(w), w[0], byte(i))
		}
		if err := s.c.Unmap(iova, 4096); err != nil {
			t.Fatal(err)
		}
	}
	if after := countMaps(t); after > before+2 {
		t.Errorf("the process has %d mappings after 2000 map/unmap cycles, %d before", after, before)
	}
	// A descriptor that is not a regular file cannot be mapped safely.
	e, _ := s.c.NewEventfd()
	_, err = s.c.Call(vfiouser.CmdDMAMap, vfiousertest.DMAMapPayload(3, 0, 0x200000, 4096), e.FD)
	wantErrno(t, "DMA_MAP of an eventfd", err, syscall.EINVAL)
	// A read-only descriptor of another file gives read-only windows only.
	m2, err := s.c.NewMem(8192)
	if err != nil {
		t.Fatal(err)
	}
	ro, err := os.Open(fmt.Sprintf("/proc/self/fd/%d", m2.FD))
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	_, err = s.c.Call(vfiouser.CmdDMAMap, vfiousertest.DMAMapPayload(3, 0, 0x300000, 4096), int(ro.Fd()))
	wantErrno(t, "writable window of a read-only descriptor", err, syscall.EACCES)
	if _, err := s.c.Call(vfiouser.CmdDMAMap, vfiousertest.DMAMapPayload(1, 4096, 0x300000, 4096), int(ro.Fd())); err != nil {
		t.Errorf("read-only window of a read-only descriptor: %v", err)
	}
	m2.B[4096] = 0x77
	if w := s.dev.window(0x300000); len(w) != 4096 || w[0] != 0x77 {
		t.Error("the read-only window does not show the client's memory")
	}
}

func TestContiguousJoin(t *testing.T) {
	buf := make([]byte, 64)
	a, b, c := buf[0:16], buf[16:32], buf[40:48]
	if !vfiouser.Contiguous(a, b) || vfiouser.Contiguous(b, a) || vfiouser.Contiguous(b, c) || vfiouser.Contiguous(a, nil) {
		t.Error("Contiguous is wrong")
	}
	j := vfiouser.Join(a, b)
	if len(j) != 32 || &j[0] != &buf[0] || &j[31] != &buf[31] {
		t.Errorf("Join: %d bytes", len(j))
	}
	if vfiouser.Join(b, c) != nil {
		t.Error("Join of separate slices")
	}
}
