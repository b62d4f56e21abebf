// Package pcidev puts the ConnectX device model (package model) behind a PCI function that
// package vfiouser serves, so that a VM under QEMU's vfio-user-pci sees a ConnectX-5 on its
// PCI bus and the kernel's mlx5_core or rdma-core's mlx5 VFIO provider drive the model as
// they would a real board.
//
// The function has a PCI Express configuration space (config.go: ids, a 64-bit
// prefetchable BAR0, power management, MSI-X and PCI Express capabilities, BAR sizing and
// read-only fields as hardware has them), BAR0 with the model's registers (init segment,
// command doorbell, UAR pages) and the MSI-X table and PBA past them, MSI-X vectors fed by
// the model's interrupts (Config.Interrupt's vector is the MSI-X vector), DMA windows from
// the client mapped into the model's DMA space, and reset (VFIO_USER_DEVICE_RESET or a
// function-level reset through the PCI Express device control register) that replaces the
// model with one fresh from power-on.
//
// Every command the model executes from its command queue is recorded (opcode, op_mod,
// status, syndrome) and passed to Options.OnCommand, which is how a test or the
// daqiri-mlx5model tool sees what a real driver asked of the model.
package pcidev

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/daqiri-go/daqiri/mlx5/model"
	"github.com/daqiri-go/daqiri/mlx5/model/vfiouser"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// Options configure a Device.
type Options struct {
	// Model configures the model (MAC, firmware version, page counts...). Its Interrupt,
	// if set, is called too, after the MSI-X vector is signalled.
	Model model.Config
	// Run makes the device free-running while a client is attached: the model's clock
	// follows the host (Config.Realtime) and its datapath runs on a goroutine of its own
	// (Device.Run). Without it the model is deterministic and a test steps it.
	Run bool
	// Wire, with Run, connects each model's port while a client is attached: it is called
	// on a goroutine of its own with the model (a new one after every reset) and must
	// return when ctx ends, e.g. func(ctx, m) error { m.Cable(m); <-ctx.Done(); return nil }
	// for internal loopback or m.Bridge(ctx, ifname) for a host netdev. An error is logged.
	Wire func(ctx context.Context, m *model.Device) error
	// OnCommand receives each command the model executed from its command queue, from the
	// goroutine that rang the doorbell.
	OnCommand func(Command)
	// Logf receives notes on what the driver did that the device ignored (a doorbell
	// without bus mastering, an interrupt on a vector out of range); nil discards them.
	Logf func(format string, args ...any)
}

// Command is one command the model executed from the queue.
type Command struct {
	Op       prm.CmdOp
	OpMod    uint16
	Status   prm.Status
	Syndrome uint32
	Delivery prm.DeliveryStatus
}

// String is the command as one log line's worth: opcode name and number (an opcode
// package prm does not name is "unknown"), op_mod, status number and name, syndrome, and the
// delivery status when the entry could not be carried:
//
//	ENABLE_HCA(0x104) op_mod 0x0 status 0x0 OK syndrome 0x0
//	unknown(0x7fe) op_mod 0x3 status 0x2 BAD_OP_ERR syndrome 0x…
func (c Command) String() string {
	name := c.Op.String()
	if strings.HasPrefix(name, "CmdOp(") {
		name = "unknown"
	}
	s := fmt.Sprintf("%s(%#x) op_mod %#x status %#x %v syndrome %#x", name, uint16(c.Op), c.OpMod, uint8(c.Status), c.Status, c.Syndrome)
	if c.Delivery != 0 {
		s += fmt.Sprintf(" delivery %#x", uint8(c.Delivery))
	}
	return s
}

// Device is the model as a vfiouser.Device.
type Device struct {
	opts Options

	model     atomic.Pointer[model.Device]
	irqs      atomic.Pointer[vfiouser.IRQs]
	busMaster atomic.Bool
	lostIRQs  atomic.Int64

	mu      sync.Mutex // config space, windows, command records
	cfg     *configSpace
	maps    map[uint64]window // the client's windows
	runs    []run             // the model's mappings: windows joined
	cmds    []Command
	pending uint32 // queue entries rung but not yet completed
	resets  int

	runMu   sync.Mutex
	runStop context.CancelFunc // ends the run loop (Detach)
	runSwap context.CancelFunc // ends the current model's Run (reset)
	runDone chan struct{}
}

type window struct {
	mem  []byte
	perm model.DMAPerm
}

var _ vfiouser.Device = (*Device)(nil)

// New returns a function with a model fresh from power-on.
func New(opts Options) *Device {
	d := &Device{opts: opts, cfg: newConfig(), maps: map[uint64]window{}}
	d.model.Store(d.newModel())
	return d
}

func (d *Device) newModel() *model.Device {
	cfg := d.opts.Model
	user := cfg.Interrupt
	cfg.Interrupt = func(v uint16) {
		d.interrupt(v)
		if user != nil {
			user(v)
		}
	}
	if d.opts.Run {
		cfg.Realtime = true
	}
	return model.New(cfg)
}

func (d *Device) logf(format string, args ...any) {
	if d.opts.Logf != nil {
		d.opts.Logf(format, args...)
	}
}

// Model is the current model (a reset replaces it).
func (d *Device) Model() *model.Device { return d.model.Load() }

// Commands returns the commands executed so far, in order.
func (d *Device) Commands() []Command {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Command(nil), d.cmds...)
}

// Resets is how many resets (DEVICE_RESET or FLR) the function has had.
func (d *Device) Resets() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.resets
}

// LostInterrupts counts model interrupts that reached no eventfd (vector out of range,
// bus mastering off, or no session).
func (d *Device) LostInterrupts() int64 { return d.lostIRQs.Load() }

// Summary is the commands by opcode with counts per status, one line per opcode, in
// opcode order.
func (d *Device) Summary() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	type key struct {
		op prm.CmdOp
		st prm.Status
	}
	n := map[key]int{}
	ops := map[prm.CmdOp]bool{}
	for _, c := range d.cmds {
		n[key{c.Op, c.Status}]++
		ops[c.Op] = true
	}
	var list []prm.CmdOp
	for op := range ops {
		list = append(list, op)
	}
	sort.Slice(list, func(i, j int) bool { return list[i] < list[j] })
	var b strings.Builder
	for _, op := range list {
		var parts []string
		total := 0
		for k, c := range n {
			if k.op == op {
				parts = append(parts, fmt.Sprintf("%v %d", k.st, c))
				total += c
			}
		}
		sort.Strings(parts)
		fmt.Fprintf(&b, "%-32s 0x%04x %5d  %s\n", op, uint16(op), total, strings.Join(parts, ", "))
	}
	return b.String()
}

// interrupt is the model's interrupt: the vector's MSI-X eventfd. It runs with the model's
// event lock held, so it touches only atomics and the IRQs' own lock.
func (d *Device) interrupt(v uint16) {
	q := d.irqs.Load()
	if q == nil || !d.busMaster.Load() || v >= MSIXVectors {
		// An MSI-X message is a memory write: without bus mastering the function cannot
		// send it (PCI Local Bus 3.0 §6.8.3.1).
		d.lostIRQs.Add(1)
		return
	}
	q.Trigger(vfiouser.IRQMSIX, uint32(v))
}

// RegionInfo implements vfiouser.Device: BAR0 and the configuration space.
func (d *Device) RegionInfo(i uint32) vfiouser.RegionInfo {
	switch i {
	case vfiouser.RegionBAR0:
		return vfiouser.RegionInfo{Size: BAR0Size, Read: true, Write: true}
	case vfiouser.RegionConfig:
		return vfiouser.RegionInfo{Size: ConfigSize, Read: true, Write: true}
	}
	return vfiouser.RegionInfo{}
}

// IRQInfo implements vfiouser.Device as the kernel's vfio-pci counts a PCI Express
// function's interrupts (drivers/vfio/pci/vfio_pci_core.c vfio_pci_get_irq_count): MSI-X
// with its vectors (eventfd, no resize), no INTx (pin 0) and no MSI (no capability), one
// error and one request interrupt. The last two are never raised; QEMU registers eventfds
// for them (and warns without the error one).
func (d *Device) IRQInfo(i uint32) vfiouser.IRQInfo {
	switch i {
	case vfiouser.IRQMSIX:
		return vfiouser.IRQInfo{Count: MSIXVectors, NoResize: true}
	case vfiouser.IRQErr, vfiouser.IRQReq:
		return vfiouser.IRQInfo{Count: 1, NoResize: true}
	}
	return vfiouser.IRQInfo{}
}

// ReadRegion implements vfiouser.Device.
func (d *Device) ReadRegion(i uint32, off uint64, p []byte) error {
	switch i {
	case vfiouser.RegionConfig:
		d.mu.Lock()
		copy(p, d.cfg.b[off:])
		d.mu.Unlock()
		return nil
	case vfiouser.RegionBAR0:
		return d.readBAR(off, p)
	}
	return fmt.Errorf("pcidev: read of region %d: %w", i, syscall.EINVAL)
}

// WriteRegion implements vfiouser.Device.
func (d *Device) WriteRegion(i uint32, off uint64, p []byte) error {
	switch i {
	case vfiouser.RegionConfig:
		return d.writeConfig(int(off), p)
	case vfiouser.RegionBAR0:
		return d.writeBAR(off, p)
	}
	return fmt.Errorf("pcidev: write of region %d: %w", i, syscall.EINVAL)
}

func (d *Device) writeConfig(off int, p []byte) error {
	d.mu.Lock()
	d.cfg.write(off, p)
	d.busMaster.Store(d.cfg.get16(regCommand)&cmdBusMaster != 0)
	flr := covers(off, len(p), expDevCtl+1) && p[expDevCtl+1-off]&(devCtlFLR>>8) != 0
	d.mu.Unlock()
	if flr {
		// Function-level reset (PCIe base spec §6.6.2): the function returns to its
		// power-on state, configuration space included.
		return d.Reset()
	}
	return nil
}

// region of BAR0 an access falls in.
func (d *Device) readBAR(off uint64, p []byte) error {
	end := off + uint64(len(p))
	switch {
	case end <= uint64(model.BAR0Size):
		_, err := d.Model().BAR0().ReadAt(p, int64(off))
		return err
	case off >= MSIXPBAOffset && end <= MSIXPBAOffset+MSIXVectors/8:
		// The PBA: bit n of the array is vector n's pending bit (§6.8.2.10).
		clear(p)
		if q := d.irqs.Load(); q != nil {
			for i := range p {
				for b := range 8 {
					if q.Pending(vfiouser.IRQMSIX, uint32((off-MSIXPBAOffset+uint64(i))*8+uint64(b))) {
						p[i] |= 1 << b
					}
				}
			}
		}
		return nil
	case off >= uint64(model.BAR0Size):
		clear(p) // not decoded: reads as zero
		return nil
	}
	return fmt.Errorf("pcidev: BAR0 read of %d bytes at %#x crosses the end of the model's registers: %w", len(p), off, syscall.EINVAL)
}

func (d *Device) writeBAR(off uint64, p []byte) error {
	end := off + uint64(len(p))
	switch {
	case end <= uint64(model.BAR0Size):
	case off >= uint64(model.BAR0Size):
		d.logf("pcidev: BAR0 write of %d bytes at %#x: not decoded, ignored", len(p), off)
		return nil
	default:
		return fmt.Errorf("pcidev: BAR0 write of %d bytes at %#x crosses the end of the model's registers: %w", len(p), off, syscall.EINVAL)
	}
	db := uint64(prm.InitSeg.CmdDbell.ByteOff())
	if off <= db && db+4 <= end {
		return d.doorbell(off, p)
	}
	_, err := d.Model().BAR0().WriteAt(p, int64(off))
	return err
}

// doorbell forwards a command doorbell to the model and records the commands it completed.
// Without bus mastering the function cannot fetch the queue, so the doorbell does nothing
// (as vfiomodel does).
func (d *Device) doorbell(off uint64, p []byte) error {
	m := d.Model()
	if !d.busMaster.Load() {
		d.logf("pcidev: command doorbell with bus mastering off: ignored (the driver must set the command register's bus-master bit)")
		return nil
	}
	dbOff := uint64(prm.InitSeg.CmdDbell.ByteOff()) - off
	mask := binary.BigEndian.Uint32(p[dbOff:])
	var regs [8]byte
	m.BAR0().ReadAt(regs[:], int64(prm.InitSeg.CmdqAddrH.ByteOff()))
	lo := binary.BigEndian.Uint32(regs[4:])
	base := uint64(binary.BigEndian.Uint32(regs[:]))<<32 | uint64(lo&^0xfff)
	stride := uint64(1) << (lo & 0xf)
	if _, err := m.BAR0().WriteAt(p, int64(off)); err != nil {
		return err
	}
	d.mu.Lock()
	d.pending |= mask
	pend := d.pending
	d.mu.Unlock()
	var done []Command
	e := prm.CmdQueueEntry
	for i := range 32 {
		if pend&(1<<i) == 0 {
			continue
		}
		ent, err := m.DMA().Slice(base+uint64(i)*stride, 64, model.DMARead)
		if err != nil {
			d.mu.Lock()
			d.pending &^= 1 << i
			d.mu.Unlock()
			d.logf("pcidev: command queue entry %d at %#x is not mapped: %v", i, base+uint64(i)*stride, err)
			continue
		}
		if e.Ownership.Get(ent) == prm.CmdOwnerHW {
			continue // still the device's: looked at again at the next doorbell
		}
		in := ent[e.CommandInputInlineData.ByteOff():]
		out := ent[e.CommandOutputInlineData.ByteOff():]
		if st := e.Status.Get(ent); st != 0 {
			d.logf("pcidev: command queue entry %d at %#x not carried (delivery status %#x): % x", i, base+uint64(i)*stride, st, ent)
		}
		done = append(done, Command{
			Op: prm.CmdOp(prm.CmdIn.Opcode.Get(in)), OpMod: uint16(prm.CmdIn.OpMod.Get(in)),
			Status: prm.Status(prm.CmdOut.Status.Get(out)), Syndrome: uint32(prm.CmdOut.Syndrome.Get(out)),
			Delivery: prm.DeliveryStatus(e.Status.Get(ent)),
		})
		d.mu.Lock()
		d.pending &^= 1 << i
		d.mu.Unlock()
	}
	d.mu.Lock()
	d.cmds = append(d.cmds, done...)
	d.mu.Unlock()
	if d.opts.OnCommand != nil {
		for _, c := range done {
			d.opts.OnCommand(c)
		}
	}
	return nil
}

// MapDMA implements vfiouser.Device: the window becomes part of the model's DMA space,
// joined with its neighbours when they follow each other both in I/O address space and in
// memory. The model hands out each buffer (a ring, a page list's pages) as one slice of one
// mapping, while QEMU behind a virtual IOMMU maps a guest buffer page by page; windows of
// guest pages that are adjacent in guest RAM are adjacent in the server's mapping of it
// (vfiouser.Contiguous), so the model sees the buffer whole, as a device behind an IOMMU
// would.
func (d *Device) MapDMA(iova uint64, mem []byte, perm vfiouser.Perm) error {
	var p model.DMAPerm
	if perm&vfiouser.PermRead != 0 {
		p |= model.DMARead
	}
	if perm&vfiouser.PermWrite != 0 {
		p |= model.DMAWrite
	}
	end := iova + uint64(len(mem))
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.maps[iova]; ok || len(mem) == 0 || end < iova {
		return fmt.Errorf("pcidev: DMA window %#x+%#x: %w", iova, len(mem), syscall.EEXIST)
	}
	prev, next := -1, -1
	for i, r := range d.runs {
		switch {
		case r.iova < end && iova < r.end():
			return fmt.Errorf("pcidev: DMA window %#x+%#x overlaps %#x+%#x: %w", iova, len(mem), r.iova, len(r.mem), syscall.EEXIST)
		case r.end() == iova && r.perm == p && vfiouser.Contiguous(r.mem, mem):
			prev = i
		case r.iova == end && r.perm == p && vfiouser.Contiguous(mem, r.mem):
			next = i
		}
	}
	sp := d.Model().DMA()
	n := run{iova: iova, mem: mem, perm: p}
	var gone []int
	if prev >= 0 {
		r := d.runs[prev]
		sp.Unmap(r.iova)
		n = run{iova: r.iova, mem: vfiouser.Join(r.mem, n.mem), perm: p}
		gone = append(gone, prev)
	}
	if next >= 0 {
		r := d.runs[next]
		sp.Unmap(r.iova)
		n.mem = vfiouser.Join(n.mem, r.mem)
		gone = append(gone, next)
	}
	if err := sp.Map(n.iova, n.mem, p); err != nil {
		return fmt.Errorf("pcidev: %v: %w", err, syscall.EEXIST)
	}
	d.runs = deleteRuns(d.runs, gone)
	d.runs = append(d.runs, n)
	d.maps[iova] = window{mem: mem, perm: p}
	return nil
}

// UnmapDMA implements vfiouser.Device: the window leaves the model's DMA space; what its
// run held on either side stays mapped.
func (d *Device) UnmapDMA(iova, size uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	w, ok := d.maps[iova]
	if !ok || uint64(len(w.mem)) != size {
		return fmt.Errorf("pcidev: no DMA window %#x+%#x: %w", iova, size, syscall.ENOENT)
	}
	delete(d.maps, iova)
	sp := d.Model().DMA()
	for i, r := range d.runs {
		if r.iova > iova || iova+size > r.end() {
			continue
		}
		if err := sp.Unmap(r.iova); err != nil {
			return fmt.Errorf("pcidev: unmap %#x: %w", r.iova, err)
		}
		d.runs = deleteRuns(d.runs, []int{i})
		if left := r.mem[:iova-r.iova]; len(left) > 0 {
			sp.Map(r.iova, left, r.perm)
			d.runs = append(d.runs, run{iova: r.iova, mem: left, perm: r.perm})
		}
		if right := r.mem[iova+size-r.iova:]; len(right) > 0 {
			sp.Map(iova+size, right, r.perm)
			d.runs = append(d.runs, run{iova: iova + size, mem: right, perm: r.perm})
		}
		return nil
	}
	return fmt.Errorf("pcidev: DMA window %#x+%#x is in no run: %w", iova, size, syscall.ENOENT)
}

// run is one mapping of the model's DMA space: windows joined.
type run struct {
	iova uint64
	mem  []byte
	perm model.DMAPerm
}

func (r run) end() uint64 { return r.iova + uint64(len(r.mem)) }

func deleteRuns(rs []run, idx []int) []run {
	out := rs[:0]
	for i, r := range rs {
		if !slices.Contains(idx, i) {
			out = append(out, r)
		}
	}
	return out
}

// DMARuns is how many mappings the model's DMA space has (joined windows).
func (d *Device) DMARuns() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.runs)
}

// Reset implements vfiouser.Device: a new model from power-on takes the old one's place
// (the model has no reset of its own), with the client's DMA windows mapped again (they
// are the IOMMU's, not the function's); the configuration space returns to power-on, bus
// mastering off.
func (d *Device) Reset() error {
	m := d.newModel()
	d.mu.Lock()
	for _, r := range d.runs {
		if err := m.DMA().Map(r.iova, r.mem, r.perm); err != nil {
			d.mu.Unlock()
			return fmt.Errorf("pcidev: reset: remapping %#x: %w", r.iova, err)
		}
	}
	d.cfg = newConfig()
	d.busMaster.Store(false)
	d.pending = 0
	d.resets++
	old := d.model.Swap(m)
	d.mu.Unlock()
	d.runMu.Lock()
	if d.runSwap != nil {
		d.runSwap() // the run loop moves to the new model
	}
	d.runMu.Unlock()
	_ = old
	return nil
}

// Attach implements vfiouser.Device.
func (d *Device) Attach(q *vfiouser.IRQs) {
	d.irqs.Store(q)
	if !d.opts.Run {
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	d.runMu.Lock()
	d.runStop, d.runDone = stop, done
	d.runMu.Unlock()
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			c, swap := context.WithCancel(ctx)
			d.runMu.Lock()
			d.runSwap = swap
			d.runMu.Unlock()
			m := d.Model()
			wired := make(chan struct{})
			go func() {
				defer close(wired)
				if d.opts.Wire == nil {
					return
				}
				if err := d.opts.Wire(c, m); err != nil && c.Err() == nil {
					d.logf("pcidev: the port's wire: %v", err)
				}
			}()
			m.Run(c)
			swap()
			<-wired
		}
	}()
}

// Detach implements vfiouser.Device: the datapath stops and interrupts go nowhere.
func (d *Device) Detach() {
	d.runMu.Lock()
	stop, done := d.runStop, d.runDone
	d.runStop, d.runDone, d.runSwap = nil, nil, nil
	d.runMu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
	d.irqs.Store(nil)
}
