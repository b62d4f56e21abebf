// Package vfiomodel puts the ConnectX device model (package model) behind the interfaces a
// VFIO driver uses for a real PCI function (vfioch.Function): BAR0 as a region of 32- and
// 64-bit register accesses in native byte order (what loads and stores on a vfio.MMIO give),
// a DMA address space with the container's calls and reported IOVA ranges, the PCI command
// register's bus-master bit, and MSI-X vector 0 as an eventfd-like counter that Wait blocks
// on. The transport in mlx5/channel/vfioch therefore runs the same code on the model as it
// would on a ConnectX bound to vfio-pci.
//
// It also injects the faults a driver must survive, at the place hardware would cause them:
// a command doorbell the device never acts on (command timeout), a command completed with a
// chosen status and syndrome, interrupts that never arrive, and a function that reads all
// ones (surprise removal). Firmware failures (Device.Fail) and page requests
// (Device.RequestPages) are the model's own.
//
// Only the model runs behind this package; vfio itself is verified on qemu's edu device.
package vfiomodel

import (
	"encoding/binary"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/daqiri-go/daqiri/mlx5/channel/vfioch"
	"github.com/daqiri-go/daqiri/mlx5/model"
	"github.com/daqiri-go/daqiri/mlx5/prm"
	"github.com/daqiri-go/daqiri/vfio"
)

// DefaultRanges are the IOVA ranges the adapter reports unless told otherwise: what an x86
// IOMMU reports through VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE, with the MSI window at
// 0xfee00000 cut out, up to 48 address bits.
func DefaultRanges() []vfio.IOVARange {
	return []vfio.IOVARange{{Start: 0, End: 0xfedfffff}, {Start: 0xfef00000, End: 1<<48 - 1}}
}

// Command is one command the model executed from the queue, as the adapter saw it complete.
type Command struct {
	Op       prm.CmdOp
	OpMod    uint16
	Status   prm.Status // the command's status (output byte 0)
	Delivery prm.DeliveryStatus
	Injected bool // the status was injected by FailCommand
}

// Function is one model device as a VFIO PCI function.
type Function struct {
	dev    *model.Device
	name   string
	ranges []vfio.IOVARange

	mu        sync.Mutex
	maps      map[uint64]uint64 // iova → size
	cmdqH     uint32
	cmdqL     uint32
	busMaster bool
	irq       *irq
	closed    bool
	leftOver  int
	cmds      []Command
	failOps   map[prm.CmdOp]*injected

	dropDoorbells  atomic.Bool
	dropInterrupts atomic.Bool
	allOnes        atomic.Bool
	droppedIRQs    atomic.Int64
}

// New creates a model device with cfg (its Interrupt, if any, is still called) and returns it
// as a function named name ("vfio+model:1"). ranges are the IOVA ranges it reports; nil
// means DefaultRanges.
func New(cfg model.Config, name string, ranges []vfio.IOVARange) *Function {
	f := &Function{name: name, ranges: ranges, maps: map[uint64]uint64{}, failOps: map[prm.CmdOp]*injected{}}
	if f.ranges == nil {
		f.ranges = DefaultRanges()
	}
	user := cfg.Interrupt
	cfg.Interrupt = func(v uint16) {
		f.raise(v)
		if user != nil {
			user(v)
		}
	}
	f.dev = model.New(cfg)
	return f
}

var _ vfioch.Function = (*Function)(nil)

// Open creates a model device with cfg behind a function named name and brings it up over
// the VFIO transport: what the engine calls for an interface address vfio+model:N. The
// channel owns the function (Channel.Close closes it).
func Open(cfg model.Config, name string, opts vfioch.Options) (*vfioch.Channel, *Function, error) {
	f := New(cfg, name, nil)
	if opts.Name == "" {
		opts.Name = name
	}
	ch, err := vfioch.Open(f, opts)
	if err != nil {
		return nil, nil, err
	}
	return ch, f, nil
}

// Device is the model behind the function (Fail, RequestPages, Cable, Run, Counters).
func (f *Function) Device() *model.Device { return f.dev }

// Name implements vfioch.Function.
func (f *Function) Name() string { return f.name }

// BAR0 implements vfioch.Function.
func (f *Function) BAR0() vfioch.Region { return &BAR{f} }

// DMA implements vfioch.Function.
func (f *Function) DMA() vfioch.DMA { return &DMA{f} }

// EnableBusMaster implements vfioch.Function: until it is called the device cannot read the
// command queue, so the command doorbell does nothing.
func (f *Function) EnableBusMaster() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return fmt.Errorf("vfiomodel %s: %w", f.name, vfio.ErrClosed)
	}
	f.busMaster = true
	return nil
}

// EnableMSIX implements vfioch.Function with one vector (vector 0; the model signals every
// EQ's interrupt there).
func (f *Function) EnableMSIX(vectors int) (vfioch.Interrupts, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if vectors != 1 {
		return nil, fmt.Errorf("vfiomodel %s: %d MSI-X vectors: %w: the adapter has vector 0 only", f.name, vectors, vfio.ErrInvalid)
	}
	if f.irq != nil && !f.irq.closed.Load() {
		return nil, fmt.Errorf("vfiomodel %s: MSI-X: %w", f.name, vfio.ErrInUse)
	}
	f.irq = &irq{kick: make(chan struct{}, 1)}
	return &IRQ{f.irq}, nil
}

// Close implements vfioch.Function: it removes the DMA mappings still present (as closing a
// container does) and counts them in LeftMapped.
func (f *Function) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	f.closed = true
	f.leftOver = len(f.maps)
	for iova := range f.maps {
		f.dev.DMA().Unmap(iova)
	}
	clear(f.maps)
	if f.irq != nil {
		f.irq.closed.Store(true)
	}
	return nil
}

// Reopen makes a closed function usable again, as a new container and device file for the
// same PCI function (a second driver, or the same one after a restart).
func (f *Function) Reopen() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed, f.leftOver, f.irq, f.busMaster = false, 0, nil, false
	f.cmdqH, f.cmdqL = 0, 0
}

// LeftMapped is how many DMA mappings the driver had not removed when it closed the
// function: a leak check.
func (f *Function) LeftMapped() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.leftOver
}

// Mapped is how many DMA mappings exist now.
func (f *Function) Mapped() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.maps)
}

// Commands returns the commands executed from the queue so far, in order.
func (f *Function) Commands() []Command {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Command(nil), f.cmds...)
}

// DropDoorbells makes the device ignore command doorbells (on) as a hung firmware would:
// every command posted meanwhile times out.
func (f *Function) DropDoorbells(on bool) { f.dropDoorbells.Store(on) }

// DropInterrupts makes MSI-X vector 0 never fire (on), as when the interrupt is lost.
func (f *Function) DropInterrupts(on bool) { f.dropInterrupts.Store(on) }

// DroppedInterrupts is how many interrupts DropInterrupts swallowed.
func (f *Function) DroppedInterrupts() int64 { return f.droppedIRQs.Load() }

// SurpriseRemove makes every BAR read return all ones and every write vanish (on), as a
// function that left the bus.
func (f *Function) SurpriseRemove(on bool) { f.allOnes.Store(on) }

// injected is what the device answers instead of running a command.
type injected struct {
	status   prm.Status
	syndrome uint32
	delivery prm.DeliveryStatus
	left     int // commands still to fail; 0: all of them
}

// FailCommand makes the device complete every later command with opcode op with status and
// syndrome instead of running it (status 0 stops the injection).
func (f *Function) FailCommand(op prm.CmdOp, status prm.Status, syndrome uint32) {
	f.inject(op, &injected{status: status, syndrome: syndrome}, status == prm.StatusOK)
}

// FailCommandN is FailCommand for the next n commands with opcode op only.
func (f *Function) FailCommandN(op prm.CmdOp, status prm.Status, syndrome uint32, n int) {
	f.inject(op, &injected{status: status, syndrome: syndrome, left: n}, n <= 0)
}

// FailDelivery makes the device refuse to carry every later command with opcode op, with the
// delivery status st (a bad token, mailbox chain or length); DeliveryOK stops it.
func (f *Function) FailDelivery(op prm.CmdOp, st prm.DeliveryStatus) {
	f.inject(op, &injected{delivery: st}, st == prm.DeliveryOK)
}

func (f *Function) inject(op prm.CmdOp, in *injected, stop bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if stop {
		delete(f.failOps, op)
		return
	}
	f.failOps[op] = in
}

// BAR is the function's BAR0 as a register region.
type BAR struct{ f *Function }

// Len implements vfioch.Region.
func (b *BAR) Len() int { return model.BAR0Size }

func (b *BAR) check(off, width int) {
	if off < 0 || off > model.BAR0Size-width || off%width != 0 {
		panic(fmt.Sprintf("vfiomodel: BAR0 access of %d bytes at %#x: outside the %#x-byte BAR or misaligned", width, off, model.BAR0Size))
	}
}

// Read32 implements vfioch.Region.
func (b *BAR) Read32(off int) uint32 {
	b.check(off, 4)
	if b.f.allOnes.Load() {
		return 0xffffffff
	}
	var p [4]byte
	b.f.dev.BAR0().ReadAt(p[:], int64(off))
	return binary.NativeEndian.Uint32(p[:])
}

// Write32 implements vfioch.Region.
func (b *BAR) Write32(off int, v uint32) {
	b.check(off, 4)
	var p [4]byte
	binary.NativeEndian.PutUint32(p[:], v)
	b.f.write(off, p[:])
}

// Write64 implements vfioch.Region.
func (b *BAR) Write64(off int, v uint64) {
	b.check(off, 8)
	var p [8]byte
	binary.NativeEndian.PutUint64(p[:], v)
	b.f.write(off, p[:])
}

func (f *Function) write(off int, p []byte) {
	if f.allOnes.Load() {
		return
	}
	switch off {
	case prm.InitSeg.CmdqAddrH.ByteOff():
		f.mu.Lock()
		f.cmdqH = binary.BigEndian.Uint32(p)
		f.mu.Unlock()
	case prm.InitSeg.CmdqAddrLSz.ByteOff():
		f.mu.Lock()
		f.cmdqL = binary.BigEndian.Uint32(p) &^ 0xfff
		f.mu.Unlock()
	case prm.InitSeg.CmdDbell.ByteOff():
		f.doorbell(binary.BigEndian.Uint32(p))
		return
	}
	f.dev.BAR0().WriteAt(p, int64(off))
}

// doorbell hands the doorbell to the model, minus the entries whose commands fail by
// injection, and records what completed.
func (f *Function) doorbell(mask uint32) {
	f.mu.Lock()
	bm := f.busMaster
	base := uint64(f.cmdqH)<<32 | uint64(f.cmdqL)
	fails := len(f.failOps) > 0
	f.mu.Unlock()
	if !bm || f.dropDoorbells.Load() {
		return
	}
	type seen struct {
		ent      []byte
		injected bool
	}
	var ents []seen
	e := prm.CmdQueueEntry
	for i := range 32 {
		if mask&(1<<i) == 0 {
			continue
		}
		ent, err := f.dev.DMA().Slice(base+uint64(i)*64, 64, model.DMARead|model.DMAWrite)
		if err != nil || e.Ownership.Get(ent) != prm.CmdOwnerHW {
			continue
		}
		s := seen{ent: ent}
		if fails {
			op := prm.CmdOp(prm.CmdIn.Opcode.Get(ent[e.CommandInputInlineData.ByteOff():]))
			f.mu.Lock()
			st, ok := f.failOps[op]
			if ok && st.left > 0 {
				if st.left--; st.left == 0 {
					delete(f.failOps, op)
				}
			}
			f.mu.Unlock()
			if ok {
				// Completed by "firmware" with the injected status (or not carried, with
				// the injected delivery status): the output header in the entry,
				// ownership back, no effect.
				out := ent[e.CommandOutputInlineData.ByteOff():][:16]
				clear(out)
				prm.CmdOut.Status.Set(out, uint64(st.status))
				prm.CmdOut.Syndrome.Set(out, uint64(st.syndrome))
				e.Status.Set(ent, uint64(st.delivery))
				s.injected = true
				mask &^= 1 << i
			}
		}
		ents = append(ents, s)
	}
	if mask != 0 {
		f.dev.BAR0().WriteAt(binary.BigEndian.AppendUint32(nil, mask), int64(prm.InitSeg.CmdDbell.ByteOff()))
	}
	f.mu.Lock()
	for _, s := range ents {
		in := s.ent[e.CommandInputInlineData.ByteOff():]
		out := s.ent[e.CommandOutputInlineData.ByteOff():]
		if s.injected {
			e.Ownership.Set(s.ent, prm.CmdOwnerSW)
		}
		f.cmds = append(f.cmds, Command{Op: prm.CmdOp(prm.CmdIn.Opcode.Get(in)), OpMod: uint16(prm.CmdIn.OpMod.Get(in)),
			Status: prm.Status(prm.CmdOut.Status.Get(out)), Delivery: prm.DeliveryStatus(e.Status.Get(s.ent)), Injected: s.injected})
	}
	f.mu.Unlock()
}

// DMA is the function's IOMMU address space.
type DMA struct{ f *Function }

// IOMMUInfo implements vfioch.DMA: 4 KiB, 2 MiB and 1 GiB pages and the adapter's ranges.
func (d *DMA) IOMMUInfo() (vfio.IOMMUInfo, error) {
	return vfio.IOMMUInfo{PageSizes: 1<<12 | 1<<21 | 1<<30, IOVARanges: append([]vfio.IOVARange(nil), d.f.ranges...), DMAAvail: 65535}, nil
}

// MapDMA implements vfioch.DMA with the checks VFIO_IOMMU_MAP_DMA makes: page alignment,
// the IOVA inside a usable range, no overlap.
func (d *DMA) MapDMA(mem []byte, iova uint64, perm vfio.Perm) error {
	f := d.f
	f.mu.Lock()
	defer f.mu.Unlock()
	page := uint64(os.Getpagesize())
	size := uint64(len(mem))
	switch {
	case f.closed:
		return fmt.Errorf("vfiomodel %s: map DMA: %w", f.name, vfio.ErrClosed)
	case size == 0 || size%page != 0 || iova%page != 0:
		return fmt.Errorf("vfiomodel %s: map DMA of %#x bytes at iova %#x: %w: not whole pages", f.name, size, iova, vfio.ErrInvalid)
	case perm == 0 || perm&^vfio.DeviceReadWrite != 0:
		return fmt.Errorf("vfiomodel %s: map DMA: %w: permission %#x", f.name, vfio.ErrInvalid, uint32(perm))
	}
	ok := false
	for _, r := range f.ranges {
		if iova >= r.Start && iova+size-1 <= r.End && iova+size-1 >= iova {
			ok = true
		}
	}
	if !ok {
		return fmt.Errorf("vfiomodel %s: map DMA at iova %#x of %#x bytes: %w: outside the IOVA ranges %v", f.name, iova, size, vfio.ErrInvalid, f.ranges)
	}
	var p model.DMAPerm
	if perm&vfio.DeviceRead != 0 {
		p |= model.DMARead
	}
	if perm&vfio.DeviceWrite != 0 {
		p |= model.DMAWrite
	}
	if err := f.dev.DMA().Map(iova, mem, p); err != nil {
		return fmt.Errorf("vfiomodel %s: %w: %v", f.name, vfio.ErrExists, err)
	}
	f.maps[iova] = size
	return nil
}

// UnmapDMA implements vfioch.DMA.
func (d *DMA) UnmapDMA(iova, size uint64) error {
	f := d.f
	f.mu.Lock()
	defer f.mu.Unlock()
	got, ok := f.maps[iova]
	switch {
	case !ok:
		return fmt.Errorf("vfiomodel %s: unmap DMA: %w: no mapping starts at iova %#x", f.name, vfio.ErrNotMapped, iova)
	case got != size:
		return fmt.Errorf("vfiomodel %s: unmap DMA: %w: the mapping at iova %#x has size %#x, not %#x", f.name, vfio.ErrInvalid, iova, got, size)
	}
	delete(f.maps, iova)
	return f.dev.DMA().Unmap(iova)
}

// irq is MSI-X vector 0: a counter the model's interrupt adds to, as the kernel adds to an
// eventfd.
type irq struct {
	mu     sync.Mutex
	count  uint64
	kick   chan struct{}
	closed atomic.Bool
}

// raise is the model's interrupt (called with the model's event lock held: it only counts).
func (f *Function) raise(uint16) {
	f.mu.Lock()
	q := f.irq
	f.mu.Unlock()
	if q == nil || q.closed.Load() {
		return
	}
	if f.dropInterrupts.Load() {
		f.droppedIRQs.Add(1)
		return
	}
	q.mu.Lock()
	q.count++
	q.mu.Unlock()
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

// IRQ is the enabled MSI-X vector.
type IRQ struct{ q *irq }

// Wait implements vfioch.Interrupts.
func (i *IRQ) Wait(vector int, timeout time.Duration) (uint64, error) {
	if vector != 0 {
		return 0, fmt.Errorf("vfiomodel: wait for interrupt: %w: vector %d, 1 enabled", vfio.ErrInvalid, vector)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	for range 1000 { // each pass takes the counter or waits for the next kick or the timer
		if i.q.closed.Load() {
			return 0, fmt.Errorf("vfiomodel: wait for interrupt: %w", vfio.ErrClosed)
		}
		i.q.mu.Lock()
		n := i.q.count
		i.q.count = 0
		i.q.mu.Unlock()
		if n > 0 {
			return n, nil
		}
		select {
		case <-i.q.kick:
		case <-t.C:
			return 0, fmt.Errorf("vfiomodel: wait for interrupt vector 0: %w: no interrupt within %v", vfio.ErrTimeout, timeout)
		}
	}
	return 0, fmt.Errorf("vfiomodel: wait for interrupt vector 0: %w", vfio.ErrTimeout)
}

// Close implements vfioch.Interrupts.
func (i *IRQ) Close() error {
	i.q.closed.Store(true)
	return nil
}
