package pcidev

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/daqiri-go/daqiri/internal/testutil"
	"github.com/daqiri-go/daqiri/mlx5/model"
	"github.com/daqiri-go/daqiri/mlx5/model/vfiouser"
	"github.com/daqiri-go/daqiri/mlx5/model/vfiouser/vfiousertest"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// serve starts a vfio-user session on d and returns the negotiated client; cleanup ends
// the session and checks that the device was left with no DMA windows.
func serve(t *testing.T, d *Device) (*vfiousertest.Client, *testutil.SyncBuffer) {
	t.Helper()
	testutil.NoGoroutineLeak(t)
	srvEnd, cliEnd, err := vfiouser.Pair()
	if err != nil {
		t.Fatal(err)
	}
	log := &testutil.SyncBuffer{}
	srv := vfiouser.NewServer(d, vfiouser.Options{Logf: func(f string, a ...any) { fmt.Fprintf(log, f+"\n", a...) }})
	done := make(chan error, 1)
	go func() { done <- srv.ServeConn(context.Background(), srvEnd) }()
	c := vfiousertest.New(cliEnd)
	t.Cleanup(func() {
		c.Close()
		if err := <-done; err != nil {
			t.Errorf("session: %v", err)
		}
		if n := d.Model().DMA().Len(); n != 0 {
			t.Errorf("%d DMA windows left in the model after the session", n)
		}
		if t.Failed() {
			t.Logf("server log:\n%s", log.String())
		}
	})
	if _, err := c.Version(); err != nil {
		t.Fatal(err)
	}
	return c, log
}

func cfg16(t *testing.T, c *vfiousertest.Client, off uint64) uint16 {
	t.Helper()
	b, err := c.Read(vfiouser.RegionConfig, off, 2)
	if err != nil {
		t.Fatal(err)
	}
	return binary.LittleEndian.Uint16(b)
}

func cfg32(t *testing.T, c *vfiousertest.Client, off uint64) uint32 {
	t.Helper()
	b, err := c.Read(vfiouser.RegionConfig, off, 4)
	if err != nil {
		t.Fatal(err)
	}
	return binary.LittleEndian.Uint32(b)
}

func setCfg(t *testing.T, c *vfiousertest.Client, off uint64, v []byte) {
	t.Helper()
	if err := c.Write(vfiouser.RegionConfig, off, v); err != nil {
		t.Fatal(err)
	}
}

func le32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
func le16(v uint16) []byte { return binary.LittleEndian.AppendUint16(nil, v) }

func TestConfigSpace(t *testing.T) {
	d := New(Options{})
	c, _ := serve(t, d)
	for _, r := range []struct {
		name string
		idx  uint32
		want vfiousertest.RegionInfo
	}{{"BAR0", 0, vfiousertest.RegionInfo{Flags: 3, Size: BAR0Size}}, {"BAR1", 1, vfiousertest.RegionInfo{}}, {"ROM", 6, vfiousertest.RegionInfo{}}, {"config", 7, vfiousertest.RegionInfo{Flags: 3, Size: 4096}}} {
		if got, err := c.RegionInfo(r.idx); err != nil || got != r.want {
			t.Errorf("%s region: %+v %v, want %+v", r.name, got, err, r.want)
		}
	}
	if BAR0Size != 32<<20 {
		t.Errorf("BAR0 is %#x bytes, want 32 MiB", BAR0Size)
	}
	if v, dv := cfg16(t, c, 0), cfg16(t, c, 2); v != 0x15b3 || dv != 0x1017 {
		t.Errorf("ids %04x:%04x", v, dv)
	}
	if cl := cfg32(t, c, 8) >> 8; cl != 0x020000 {
		t.Errorf("class %06x", cl)
	}
	if sv, sd := cfg16(t, c, 0x2c), cfg16(t, c, 0x2e); sv != 0x15b3 || sd != SubsystemID {
		t.Errorf("subsystem %04x:%04x", sv, sd)
	}
	if st := cfg16(t, c, 6); st&statusCapList == 0 {
		t.Errorf("status %#x without the capability list bit", st)
	}
	// BAR sizing (PCI Local Bus 3.0 §6.2.5.1): all ones in, the size mask out, with the
	// type bits (64-bit, prefetchable) kept.
	if v := cfg32(t, c, 0x10); v != 0xc {
		t.Errorf("BAR0 at power-on %#x, want 0xc", v)
	}
	setCfg(t, c, 0x10, le32(0xffffffff))
	setCfg(t, c, 0x14, le32(0xffffffff))
	lo, hi := cfg32(t, c, 0x10), cfg32(t, c, 0x14)
	size := ^(uint64(hi)<<32 | uint64(lo&^0xf)) + 1
	if lo&0xf != 0xc || size != BAR0Size {
		t.Errorf("BAR0 sizing read %#x %#x: size %#x flags %#x", hi, lo, size, lo&0xf)
	}
	setCfg(t, c, 0x10, le32(0xe0000000))
	setCfg(t, c, 0x14, le32(0x00000038))
	if lo, hi := cfg32(t, c, 0x10), cfg32(t, c, 0x14); lo != 0xe000000c || hi != 0x38 {
		t.Errorf("BAR0 after programming %#x %#x", hi, lo)
	}
	setCfg(t, c, 0x10, le32(0x01234567)) // low bits below the size are not writable
	if lo := cfg32(t, c, 0x10); lo != 0x0000000c {
		t.Errorf("BAR0 after an unaligned base %#x, want 0xc", lo)
	}
	for _, off := range []uint64{0x18, 0x1c, 0x20, 0x24, 0x30} {
		setCfg(t, c, off, le32(0xffffffff))
		if v := cfg32(t, c, off); v != 0 {
			t.Errorf("unimplemented BAR/ROM at %#x reads %#x after all ones", off, v)
		}
	}
	// Read-only fields stay.
	setCfg(t, c, 0, le32(0xdeadbeef))
	setCfg(t, c, 8, le32(0xffffffff))
	setCfg(t, c, 0x2c, le32(0))
	setCfg(t, c, 0x3c, le16(0xff0b))
	if cfg32(t, c, 0) != 0x101715b3 || cfg32(t, c, 8) != 0x02000000 || cfg16(t, c, 0x2e) != SubsystemID {
		t.Error("a read-only id or class changed")
	}
	if l, p := cfg16(t, c, 0x3c)&0xff, cfg16(t, c, 0x3c)>>8; l != 0x0b || p != 0 {
		t.Errorf("interrupt line %#x pin %#x, want 0x0b and 0", l, p)
	}
	// The command register takes its defined bits only; bus mastering follows it.
	setCfg(t, c, 4, le16(0xffff))
	if cmd := cfg16(t, c, 4); cmd != 0x0547 || !d.busMaster.Load() {
		t.Errorf("command %#x after all ones (want 0x547), bus master %v", cmd, d.busMaster.Load())
	}
	setCfg(t, c, 4, le16(cmdMemory))
	if d.busMaster.Load() {
		t.Error("bus master still on after clearing it")
	}
	// The capability list: PM, MSI-X, PCI Express, each in the header-free area, no loop.
	var ids []byte
	seen := map[uint64]bool{}
	for p := uint64(cfg16(t, c, 0x34) & 0xfc); p != 0; {
		if p < 0x40 || p > 0xfc || seen[p] {
			t.Fatalf("capability pointer %#x out of range or looping", p)
		}
		seen[p] = true
		h := cfg16(t, c, p)
		ids = append(ids, byte(h))
		p = uint64(h>>8) & 0xfc
	}
	if string(ids) != string([]byte{capIDPM, capIDMSIX, capIDExp}) {
		t.Errorf("capabilities %x, want PM, MSI-X, PCIe", ids)
	}
	if ext := cfg32(t, c, 0x100); ext != 0 {
		t.Errorf("extended capability header %#x, want none", ext)
	}
	// MSI-X: 64 vectors, table and PBA in BAR0 past the model's registers.
	ctl, tbl, pba := cfg16(t, c, capMSIX+2), cfg32(t, c, capMSIX+4), cfg32(t, c, capMSIX+8)
	if ctl&0x7ff != MSIXVectors-1 || tbl&7 != 0 || pba&7 != 0 {
		t.Errorf("MSI-X control %#x table %#x pba %#x", ctl, tbl, pba)
	}
	if uint64(tbl) < uint64(model.BAR0Size) || uint64(tbl)+MSIXVectors*16 > uint64(pba) || uint64(pba)+MSIXVectors/8 > BAR0Size {
		t.Errorf("MSI-X table %#x / PBA %#x overlap the model's %#x bytes or leave BAR0", tbl, pba, model.BAR0Size)
	}
	setCfg(t, c, capMSIX+2, le16(0xffff))
	if v := cfg16(t, c, capMSIX+2); v != 0xc000|(MSIXVectors-1) {
		t.Errorf("MSI-X control after all ones %#x", v)
	}
	setCfg(t, c, capMSIX+4, le32(0))
	if cfg32(t, c, capMSIX+4) != tbl {
		t.Error("MSI-X table offset is writable")
	}
	// PCI Express: endpoint, version 2, FLR capable, link Gen3 x16.
	if f := cfg16(t, c, expFlags); f != 2 {
		t.Errorf("PCIe flags %#x", f)
	}
	if dc := cfg32(t, c, expDevCap); dc&(1<<28) == 0 {
		t.Errorf("device capabilities %#x without FLR", dc)
	}
	if ls := cfg16(t, c, expLnkSta); ls&0xf != 3 || ls>>4&0x3f != 16 {
		t.Errorf("link status %#x, want 8 GT/s x16", ls)
	}
	setCfg(t, c, expDevCtl, le16(0x5000))
	if v := cfg16(t, c, expDevCtl); v != 0x5000 {
		t.Errorf("device control %#x after writing 0x5000", v)
	}
	setCfg(t, c, expLnkSta, le16(0))
	if cfg16(t, c, expLnkSta) == 0 {
		t.Error("link status is writable")
	}
	// Writes of odd sizes and at odd offsets work as byte writes.
	setCfg(t, c, 0x0d, []byte{0x40})
	if v := cfg16(t, c, 0x0c); v != 0 {
		t.Errorf("latency timer/cache line %#x: the latency timer is read-only zero here", v)
	}
	// Outside the space.
	_, err := c.Read(vfiouser.RegionConfig, 4094, 4)
	if !errors.Is(err, syscall.EINVAL) {
		t.Errorf("read past the config space: %v", err)
	}
}

func TestInterruptsAndPBA(t *testing.T) {
	d := New(Options{})
	c, _ := serve(t, d)
	e5, _ := c.NewEventfd()
	e6, _ := c.NewEventfd()
	if err := c.SetEventfds(vfiouser.IRQMSIX, 5, e5, e6); err != nil {
		t.Fatal(err)
	}
	for idx, want := range map[uint32][2]uint32{vfiouser.IRQINTx: {0, 0}, vfiouser.IRQMSI: {0, 0}, vfiouser.IRQMSIX: {1 | 8, MSIXVectors}, vfiouser.IRQErr: {1 | 8, 1}, vfiouser.IRQReq: {1 | 8, 1}} {
		flags, n, err := c.IRQInfo(idx)
		if err != nil || flags != want[0] || n != want[1] {
			t.Errorf("interrupt index %d: flags %#x count %d %v, want %#x %d", idx, flags, n, err, want[0], want[1])
		}
	}
	eErr, _ := c.NewEventfd()
	if err := c.SetEventfds(vfiouser.IRQErr, 0, eErr); err != nil {
		t.Errorf("error interrupt eventfd: %v", err)
	}
	// Without bus mastering the function cannot send MSI-X messages.
	d.interrupt(5)
	if e5.Count() != 0 || d.LostInterrupts() != 1 {
		t.Errorf("an interrupt went out with bus mastering off (lost %d)", d.LostInterrupts())
	}
	setCfg(t, c, 4, le16(cmdMemory|cmdBusMaster))
	d.interrupt(5)
	d.interrupt(6)
	d.interrupt(6)
	d.interrupt(MSIXVectors) // out of range: lost
	if a, b := e5.Count(), e6.Count(); a != 1 || b != 2 || d.LostInterrupts() != 2 {
		t.Errorf("vector 5 fired %d, vector 6 %d, lost %d; want 1, 2, 2", a, b, d.LostInterrupts())
	}
	// All 64 vectors in runs of 16 descriptors, as QEMU sends them (max_msg_fds 16), then
	// each vector fires its own eventfd.
	var all []*vfiousertest.Eventfd
	for range MSIXVectors {
		e, err := c.NewEventfd()
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, e)
	}
	for start := 0; start < MSIXVectors; start += 16 {
		if err := c.SetEventfds(vfiouser.IRQMSIX, uint32(start), all[start:start+16]...); err != nil {
			t.Fatal(err)
		}
	}
	for v := range uint16(MSIXVectors) {
		d.interrupt(v)
	}
	for v, e := range all {
		if n := e.Count(); n != 1 {
			t.Errorf("vector %d fired %d times, want 1", v, n)
		}
	}
	e5, e6 = all[5], all[6]
	// A masked vector shows in the PBA read through BAR0.
	if err := c.SetIRQs(vfiousertest.DataNone|vfiousertest.ActionMask, vfiouser.IRQMSIX, 6, 1, nil); err != nil {
		t.Fatal(err)
	}
	d.interrupt(6)
	pba, err := c.Read(0, MSIXPBAOffset, 8)
	if err != nil || binary.LittleEndian.Uint64(pba) != 1<<6 || e6.Count() != 0 {
		t.Errorf("PBA %x %v, want bit 6", pba, err)
	}
	if err := c.SetIRQs(vfiousertest.DataNone|vfiousertest.ActionUnmask, vfiouser.IRQMSIX, 6, 1, nil); err != nil {
		t.Fatal(err)
	}
	if pba, _ := c.Read(0, MSIXPBAOffset, 8); binary.LittleEndian.Uint64(pba) != 0 || e6.Count() != 1 {
		t.Errorf("after unmask: PBA %x", pba)
	}
	// The rest of BAR0 past the model reads as zero and ignores writes.
	if err := c.Write(0, MSIXTableOffset, []byte{1, 2, 3, 4}); err != nil {
		t.Error(err)
	}
	if b, err := c.Read(0, MSIXTableOffset, 4); err != nil || string(b) != "\x00\x00\x00\x00" {
		t.Errorf("MSI-X table area %x %v", b, err)
	}
	// An access that straddles the model's end is refused.
	if _, err := c.Read(0, uint64(model.BAR0Size)-4, 8); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("straddling read: %v", err)
	}
}

// host drives the function as mlx5_core would, through vfio-user only: guest memory is a
// memfd mapped with DMA_MAP, registers are REGION_READ/WRITE of BAR0 (big-endian as the
// device defines them), the command queue lives in guest memory (kernel cmd.c layout,
// through package prm).
type host struct {
	t     *testing.T
	c     *vfiousertest.Client
	mem   *vfiousertest.Mem
	iova  uint64
	next  uint64
	cmdq  uint64
	token uint8
}

const hostIOVA = 0x8000_0000

func newHost(t *testing.T, c *vfiousertest.Client, size int) *host {
	m, err := c.NewMem(size)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Map(m, 0, hostIOVA, uint64(size)); err != nil {
		t.Fatal(err)
	}
	return &host{t: t, c: c, mem: m, iova: hostIOVA}
}

func (h *host) alloc(n, align int) uint64 {
	off := (h.next + uint64(align) - 1) &^ (uint64(align) - 1)
	if off+uint64(n) > uint64(len(h.mem.B)) {
		h.t.Fatalf("host memory exhausted")
	}
	h.next = off + uint64(n)
	return h.iova + off
}

func (h *host) at(iova uint64, n int) []byte { return h.mem.B[iova-h.iova : iova-h.iova+uint64(n)] }

func (h *host) r32(off uint64) uint32 {
	h.t.Helper()
	b, err := h.c.Read(0, off, 4)
	if err != nil {
		h.t.Fatal(err)
	}
	return binary.BigEndian.Uint32(b)
}

func (h *host) w32(off uint64, v uint32) {
	h.t.Helper()
	if err := h.c.Write(0, off, binary.BigEndian.AppendUint32(nil, v)); err != nil {
		h.t.Fatal(err)
	}
}

// setup is mlx5_cmd_init: the queue page's address, then the wait for firmware.
func (h *host) setup() {
	h.t.Helper()
	if h.cmdq == 0 {
		h.cmdq = h.alloc(4096, 4096)
	}
	h.w32(0x10, uint32(h.cmdq>>32))
	h.w32(0x14, uint32(h.cmdq))
	for i := 0; h.r32(0x1fc)>>31 != 0; i++ {
		if i == 10 {
			h.t.Fatal("initializing bit still set after 10 reads")
		}
	}
}

// post writes a command into entry 0 with mailboxes for what exceeds the 16 inline bytes
// and rings its doorbell; it returns the entry.
func (h *host) post(in []byte, outLen int) ([]byte, [][]byte) {
	h.token++
	q := prm.CmdQueueEntry
	ent := h.at(h.cmdq, 64)
	clear(ent)
	q.Type.Set(ent, prm.CmdQueueEntryTypePCIe)
	q.InputLength.Set(ent, uint64(len(in)))
	q.OutputLength.Set(ent, uint64(outLen))
	q.Token.Set(ent, uint64(h.token))
	copy(ent[q.CommandInputInlineData.ByteOff():][:16], in)
	boxes := func(n int) []uint64 {
		var bs []uint64
		for i := 0; i*512 < n; i++ {
			bs = append(bs, h.alloc(576, 1024))
		}
		for i, a := range bs {
			box := h.at(a, 576)
			clear(box)
			prm.CmdIfBox.BlockNumber.Set(box, uint64(i))
			prm.CmdIfBox.Token.Set(box, uint64(h.token))
			if i+1 < len(bs) {
				prm.CmdIfBox.NextPointerHi.Set(box, bs[i+1]>>32)
				prm.CmdIfBox.NextPointerLo.Set(box, bs[i+1]>>10)
			}
		}
		return bs
	}
	inB, outB := boxes(len(in)-16), boxes(outLen-16)
	if len(inB) > 0 {
		q.InputMailboxPointerHi.Set(ent, inB[0]>>32)
		q.InputMailboxPointerLo.Set(ent, inB[0]>>9)
		rest := in[16:]
		for _, b := range inB {
			rest = rest[copy(h.at(b, 512), rest):]
		}
	}
	if len(outB) > 0 {
		q.OutputMailboxPointerHi.Set(ent, outB[0]>>32)
		q.OutputMailboxPointerLo.Set(ent, outB[0]>>9)
	}
	q.Ownership.Set(ent, prm.CmdOwnerHW)
	h.w32(0x18, 1)
	var out [][]byte
	for _, b := range outB {
		out = append(out, h.at(b, 512))
	}
	return ent, out
}

// cmd runs one command and returns its output and status.
func (h *host) cmd(in []byte, outLen int) ([]byte, prm.Status) {
	h.t.Helper()
	ent, boxes := h.post(in, outLen)
	q := prm.CmdQueueEntry
	if q.Ownership.Get(ent) != prm.CmdOwnerSW {
		h.t.Fatalf("%v: entry still owned by the device after the doorbell", prm.CmdOp(prm.CmdIn.Opcode.Get(in)))
	}
	if st := q.Status.Get(ent); st != 0 {
		h.t.Fatalf("delivery status %#x", st)
	}
	out := append([]byte(nil), ent[q.CommandOutputInlineData.ByteOff():][:16]...)
	for _, b := range boxes {
		out = append(out, b...)
	}
	out = out[:outLen]
	return out, prm.Status(prm.CmdOut.Status.Get(out))
}

func TestBringUp(t *testing.T) {
	var seenMu sync.Mutex
	var seen []Command
	var notes testutil.SyncBuffer
	d := New(Options{
		Model:     model.Config{FWVersion: [3]uint16{16, 35, 2000}},
		OnCommand: func(c Command) { seenMu.Lock(); seen = append(seen, c); seenMu.Unlock() },
		Logf:      func(f string, a ...any) { fmt.Fprintf(&notes, f+"\n", a...) },
	})
	c, _ := serve(t, d)
	h := newHost(t, c, 1<<20)
	// Firmware version and command interface revision from the init segment (device.h
	// struct mlx5_init_seg: fw_rev = minor<<16 | major, then cmdif_rev<<16 | subminor).
	if v := h.r32(0); v != 35<<16|16 {
		t.Errorf("fw_rev %#x, want 16.35", v)
	}
	if v := h.r32(4); v>>16 != prm.CmdIfRev || v&0xffff != 2000 {
		t.Errorf("cmdif_rev_fw_sub %#x", v)
	}
	h.setup()
	// Fault: without bus mastering the doorbell is not acted on (the entry stays the
	// device's and nothing is recorded).
	ent, _ := h.post(prm.NewCmdIn(prm.CmdOpEnableHCA, 0, 16), 16)
	if prm.CmdQueueEntry.Ownership.Get(ent) != prm.CmdOwnerHW || len(d.Commands()) != 0 {
		t.Fatal("a doorbell was served with bus mastering off")
	}
	setCfg(t, c, 4, le16(cmdMemory|cmdBusMaster))
	if _, st := h.cmd(prm.NewCmdIn(prm.CmdOpEnableHCA, 0, 16), 16); st != prm.StatusOK {
		t.Fatalf("ENABLE_HCA: %v", st)
	}
	// The entry the doorbell left behind was completed too, at the next doorbell.
	out, st := h.cmd(prm.NewCmdIn(prm.CmdOpQueryISSI, 0, 16), 0x70)
	if st != prm.StatusOK || prm.QueryISSIOut.SupportedISSIDw0.Get(out)&2 == 0 {
		t.Fatalf("QUERY_ISSI: %v, supported %#x", st, prm.QueryISSIOut.SupportedISSIDw0.Get(out))
	}
	set := prm.NewCmdIn(prm.CmdOpSetISSI, 0, 16)
	prm.SetISSIIn.CurrentISSI.Set(set, 1)
	if _, st := h.cmd(set, 16); st != prm.StatusOK {
		t.Fatalf("SET_ISSI: %v", st)
	}
	// An opcode the model does not know: BAD_OP, recorded with its op_mod.
	if _, st := h.cmd(prm.NewCmdIn(0x7fe, 3, 16), 16); st != prm.StatusBadOpErr {
		t.Errorf("opcode 0x7fe: %v, want BAD_OP", st)
	}
	want := []string{"ENABLE_HCA(0x104) op_mod 0x0 status 0x0 OK syndrome 0x0", "QUERY_ISSI(0x10a) op_mod 0x0 status 0x0 OK", "SET_ISSI(0x10b) op_mod 0x0 status 0x0 OK", "unknown(0x7fe) op_mod 0x3 status 0x2 BAD_OP_ERR syndrome"}
	got := d.Commands()
	seenMu.Lock()
	nseen := len(seen)
	seenMu.Unlock()
	if len(got) != len(want) || nseen != len(got) {
		t.Fatalf("commands %v (OnCommand saw %d), want %d", got, nseen, len(want))
	}
	for i, w := range want {
		if !strings.Contains(got[i].String(), w) {
			t.Errorf("command %d: %q, want %q", i, got[i], w)
		}
	}
	sum := d.Summary()
	if !strings.Contains(sum, "ENABLE_HCA") || !strings.Contains(sum, "BAD_OP_ERR 1") {
		t.Errorf("summary:\n%s", sum)
	}
	// Fault: the queue's address outside every DMA window: the doorbell completes nothing
	// and the device says why in its log.
	h.w32(0x10, 0x7)
	h.w32(0x18, 1)
	if n := len(d.Commands()); n != 4 || !strings.Contains(notes.String(), "not mapped") {
		t.Errorf("doorbell on an unmapped queue: %d commands, notes %q", n, notes.String())
	}
	h.w32(0x10, uint32(h.cmdq>>32))

	// Reset (DEVICE_RESET): a fresh model (initializing again, no ENABLE_HCA), bus
	// mastering off, the DMA window still there.
	if err := c.Reset(); err != nil {
		t.Fatal(err)
	}
	if d.Resets() != 1 || cfg16(t, c, 4)&cmdBusMaster != 0 || d.Model().DMA().Len() != 1 {
		t.Errorf("after reset: %d resets, command %#x, %d windows", d.Resets(), cfg16(t, c, 4), d.Model().DMA().Len())
	}
	if h.r32(0x1fc)>>31 != 1 {
		t.Error("initializing bit clear right after reset")
	}
	h.setup()
	setCfg(t, c, 4, le16(cmdMemory|cmdBusMaster))
	// The fresh firmware has forgotten ENABLE_HCA.
	if _, st := h.cmd(prm.NewCmdIn(prm.CmdOpQueryISSI, 0, 16), 0x70); st != prm.StatusBadSysStateErr {
		t.Errorf("QUERY_ISSI right after reset: %v, want BAD_SYS_STATE", st)
	}
	if _, st := h.cmd(prm.NewCmdIn(prm.CmdOpEnableHCA, 0, 16), 16); st != prm.StatusOK {
		t.Errorf("ENABLE_HCA after reset: %v", st)
	}
	// Function-level reset through device control.
	setCfg(t, c, expDevCtl, le16(devCtlFLR|0x2000))
	if d.Resets() != 2 || cfg16(t, c, expDevCtl)&devCtlFLR != 0 || cfg16(t, c, 4) != 0 {
		t.Errorf("after FLR: %d resets, devctl %#x, command %#x", d.Resets(), cfg16(t, c, expDevCtl), cfg16(t, c, 4))
	}
}

// A free-running device follows resets with its datapath goroutine and its wire, and stops
// both at the end of the session (the goroutine leak check in serve).
func TestRunFollowsReset(t *testing.T) {
	wired := make(chan *model.Device, 4)
	var ended atomic.Int32
	d := New(Options{Run: true, Wire: func(ctx context.Context, m *model.Device) error {
		m.Cable(m)
		wired <- m
		<-ctx.Done()
		ended.Add(1)
		return nil
	}})
	t.Cleanup(func() { // runs after serve's: the session has ended
		if n := ended.Load(); n != 2 {
			t.Errorf("%d wires ended, want 2 (the reset one and the session's)", n)
		}
	})
	c, _ := serve(t, d)
	first := <-wired
	if first != d.Model() {
		t.Error("the wire got another model than the device's")
	}
	if err := c.Reset(); err != nil {
		t.Fatal(err)
	}
	second := <-wired
	if second == first || second != d.Model() {
		t.Error("after reset the wire did not get the new model")
	}
	if _, err := c.DeviceInfo(); err != nil {
		t.Fatal(err)
	}
}

// Random writes of random sizes anywhere in the configuration space never change what must
// stay: ids, class, header type, the capability chain and its read-only contents, the
// MSI-X geometry, the BAR's type bits and the link status.
func TestConfigRandomWrites(t *testing.T) {
	d := New(Options{})
	ro := func() []byte {
		var b []byte
		for _, r := range [][2]int{{0, 4}, {8, 4}, {0x0e, 1}, {0x2c, 4}, {0x34, 1}, {0x3d, 1},
			{capPM, 4}, {capMSIX, 2}, {capMSIX + 4, 8}, {capExp, 8}, {expLnkCap, 4}, {expLnkSta, 2}, {0x100, 4}} {
			b = append(b, d.cfg.b[r[0]:r[0]+r[1]]...)
		}
		b = append(b, d.cfg.b[regBAR0]&0xf, byte(d.cfg.get16(capMSIX+2)&0x7ff))
		return b
	}
	d.mu.Lock()
	before := ro()
	d.mu.Unlock()
	rnd := testutil.RandBytes(3 * 4000)
	for i := range 4000 {
		n := []int{1, 2, 4, 8}[rnd[3*i]%4]
		off := int(binary.LittleEndian.Uint16(rnd[3*i+1:])) % (ConfigSize - n + 1)
		if covers(off, n, expDevCtl+1) {
			continue // FLR is a reset, tested on its own
		}
		if err := d.WriteRegion(vfiouser.RegionConfig, uint64(off), testutil.RandBytes(n)); err != nil {
			t.Fatal(err)
		}
	}
	d.mu.Lock()
	after := ro()
	d.mu.Unlock()
	if string(before) != string(after) {
		t.Errorf("read-only configuration changed under random writes:\n%x\n%x", before, after)
	}
}

// Page-sized windows of adjacent guest pages at adjacent I/O addresses (what QEMU sends
// behind a virtual IOMMU) are one buffer for the model; unmapping one page splits it, and
// windows adjacent in I/O address space but not in memory, or with other permissions, stay
// apart.
func TestDMAJoin(t *testing.T) {
	d := New(Options{})
	c, _ := serve(t, d)
	m, err := c.NewMem(64 << 10)
	if err != nil {
		t.Fatal(err)
	}
	const base = 0x40000000
	// Pages 0..3 of the file at base..base+16K, mapped out of order.
	for _, i := range []uint64{2, 0, 3, 1} {
		if err := c.Map(m, i*4096, base+i*4096, 4096); err != nil {
			t.Fatal(err)
		}
	}
	sp := d.Model().DMA()
	if n := d.DMARuns(); n != 1 || sp.Len() != 1 {
		t.Fatalf("4 adjacent pages: %d runs, %d model mappings; want 1", n, sp.Len())
	}
	copy(m.B, testutil.RandBytes(16384))
	buf, err := sp.Slice(base, 16384, model.DMARead|model.DMAWrite)
	if err != nil || string(buf) != string(m.B[:16384]) {
		t.Fatalf("one 16 KiB buffer over 4 windows: %v", err)
	}
	// Unmap page 1: pages 0 and 2..3 remain, a buffer across page 1 faults.
	if err := c.Unmap(base+4096, 4096); err != nil {
		t.Fatal(err)
	}
	if d.DMARuns() != 2 {
		t.Errorf("%d runs after unmapping the second page, want 2", d.DMARuns())
	}
	if _, err := sp.Slice(base, 8192, model.DMARead); err == nil {
		t.Error("a buffer across the unmapped page is still reachable")
	}
	m.B[8192] = ^m.B[8192]
	if b, err := sp.Slice(base+8192, 8192, model.DMARead); err != nil || string(b) != string(m.B[8192:16384]) {
		t.Errorf("pages 2..3 after the split: %v", err)
	}
	// Page 5 of the file at the next I/O address after page 3: adjacent in I/O address space
	// only.
	if err := c.Map(m, 5*4096, base+4*4096, 4096); err != nil {
		t.Fatal(err)
	}
	// Page 8 read-only in the gap at page 1: a different permission.
	if _, err := c.Call(vfiouser.CmdDMAMap, vfiousertest.DMAMapPayload(1, 8*4096, base+4096, 4096), m.FD); err != nil {
		t.Fatal(err)
	}
	if d.DMARuns() != 4 {
		t.Errorf("%d runs, want 4 (no joins across memory gaps or permissions)", d.DMARuns())
	}
	// Reset keeps the runs.
	if err := c.Reset(); err != nil {
		t.Fatal(err)
	}
	if n := d.Model().DMA().Len(); n != 4 {
		t.Errorf("%d model mappings after reset, want 4", n)
	}
}
