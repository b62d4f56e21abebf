package reorder

import (
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/cudart"
	"github.com/daqiri-go/daqiri/engine"
)

// kernelPTX is kernels/reorder.cu compiled by `make ptx` (nvcc, compute_75; see mk/gpu.mk).
//
//go:embed kernels/reorder.ptx
var kernelPTX []byte

// Slot table entries, as the kernels read them: one 64-bit word per output slot holding the
// payload's byte offset in the source region (upper 40 bits) and its length (lower 24 bits),
// or SlotMissing for a slot no packet filled (zero-filled by the kernel).
const (
	SlotMissing = ^uint64(0)
	slotLenBits = 24
	maxSlotOff  = 1<<(64-slotLenBits) - 1
	maxSlotLen  = 1<<slotLenBits - 1
)

// SlotWord packs a slot table entry: n payload bytes at byte off of the source region.
func SlotWord(off uint64, n int) uint64 { return off<<slotLenBits | uint64(n) }

// Kernels are the reorder kernels loaded on one GPU.
type Kernels struct {
	dev *cudart.Device
	mod *cudart.Module
	sms int // multiprocessors: enough blocks must remain to keep every one busy
}

// LoadKernels loads the reorder kernels on dev: ptx, or the embedded kernels/reorder.ptx when
// ptx is nil. The driver compiles the PTX for dev's architecture now.
func LoadKernels(dev *cudart.Device, ptx []byte) (*Kernels, error) {
	if ptx == nil {
		ptx = kernelPTX
	}
	sms, err := dev.Attribute(cudart.AttrMultiprocessorCount)
	if err != nil {
		return nil, fmt.Errorf("reorder: %w", err)
	}
	m, err := dev.LoadModule(ptx)
	if err != nil {
		return nil, fmt.Errorf("reorder: loading GPU kernels: %w", err)
	}
	return &Kernels{dev: dev, mod: m, sms: max(sms, 1)}, nil
}

// Close unloads the kernels.
func (k *Kernels) Close() error { return k.mod.Close() }

// Kernel is the kernel for one conversion (or the plain copy).
type Kernel struct {
	fn   *cudart.Function
	fnP  *cudart.Function // the same taking its slot table by value (nil: PTX without it)
	conv Conversion
	sms  int
}

// ParamSlots is the most slots whose table a launch can carry in the kernel's parameters
// (PARAM_SLOTS in reorder.cu): LaunchParams reads 8*ParamSlots bytes of table.
const ParamSlots = 1024

// kernelName is the kernel's symbol in reorder.cu.
func kernelName(c Conversion) string {
	if !c.Active() {
		return "reorder_copy"
	}
	return fmt.Sprintf("reorder_cvt_%s_%s", c.In, c.Out)
}

// Kernel looks up the kernel for conversion c.
func (k *Kernels) Kernel(c Conversion) (*Kernel, error) {
	fn, err := k.mod.Function(kernelName(c))
	if err != nil {
		return nil, fmt.Errorf("reorder: %w", err)
	}
	// A PTX given by the caller may predate the by-value kernels: then every launch reads its
	// table from memory.
	fnP, _ := k.mod.Function(kernelName(c) + "_p")
	return &Kernel{fn: fn, fnP: fnP, conv: c, sms: k.sms}, nil
}

// ParamTable reports whether LaunchParams is available (the loaded PTX has the kernel that
// takes its slot table by value).
func (k *Kernel) ParamTable() bool { return k.fnP != nil }

// maxSlotsPerBlock matches MAX_SPB in reorder.cu.
const maxSlotsPerBlock = 16

// shape picks the launch shape for slots output slots of outLen bytes on a GPU with sms
// multiprocessors: a block takes up to about 8 KiB of output (several small slots per block
// share one read of their slot words, which can be a PCIe round trip away) as long as at least
// four blocks per multiprocessor remain, with about 64 output bytes per thread, 64 to 256
// threads.
func shape(outLen, slots, sms int) (spb, threads uint32) {
	spb = uint32(min(max(8192/max(outLen, 1), 1), maxSlotsPerBlock, max(slots/(4*sms), 1)))
	threads = 64
	for threads < 256 && int(threads)*64 < outLen {
		threads *= 2
	}
	return spb, threads
}

// widening reports whether c writes at least 4 output bytes per input byte (int4 → fp16, bf16,
// fp32, fp64, int32; int8 → fp32, fp64, int32; int16 → fp64): those run wide_kernel in
// reorder.cu, one warp per slot.
func widening(c Conversion) bool { return c.Active() && c.OutBytes()*8 >= 4*c.InBits() }

// wideThreads is the block size of the widening kernels (at most WIDE_THREADS in reorder.cu,
// their launch bound). They are launched with one warp per slot: on an H200 at 1 KiB × 16384,
// 128-thread blocks came out 0.00–0.01 of the copy's traffic ahead of 256, and grids capped at
// 2–8 blocks per multiprocessor (the kernel's warps then walk the slots a grid apart) behind
// by 0.01–0.05 (bench/reorder/gpu -variants; bench/reorder/RESULTS.md).
const wideThreads = 128

// Launch queues on s (nil: the legacy default stream) the assembly of one aggregate of slots
// slots into out: slot k takes the payload that table entry k (in GPU-readable memory at
// table) names in the source region at src, converted, and is zero-filled past it; inLen is
// the payload bytes per slot (whole samples), so each output slot is
// Conversion.OutputLen(inLen) bytes.
func (k *Kernel) Launch(s *cudart.Stream, table, src, out cudart.DevicePtr, slots, inLen int) error {
	return k.launch(k.fn, s, cudart.Ptr(table), src, out, slots, inLen)
}

// LaunchParams is Launch with the slot table carried in the launch's parameters: table holds
// the words of slots ≤ ParamSlots slots (little-endian) and is 8*ParamSlots bytes long (the
// words past slots are not read). The driver copies it during the call, so table may be
// rewritten once LaunchParams returns. Drivers before CUDA 12.1 refuse the launch (parameters
// past 4 KiB); Launch then remains.
func (k *Kernel) LaunchParams(s *cudart.Stream, table []byte, src, out cudart.DevicePtr, slots, inLen int) error {
	if k.fnP == nil {
		return fmt.Errorf("reorder: the loaded GPU kernels take no slot table by value: %w", engine.ErrNotSupported)
	}
	if slots > ParamSlots || len(table) != 8*ParamSlots {
		return fmt.Errorf("reorder: by-value slot table of %d bytes for %d slots (at most %d slots, %d bytes): %w",
			len(table), slots, ParamSlots, 8*ParamSlots, engine.ErrInvalidParameter)
	}
	return k.launch(k.fnP, s, cudart.Bytes(table), src, out, slots, inLen)
}

func (k *Kernel) launch(fn *cudart.Function, s *cudart.Stream, table cudart.Arg, src, out cudart.DevicePtr, slots, inLen int) error {
	if slots <= 0 || slots > 1<<31-1 || inLen <= 0 || inLen > maxSlotLen || !k.conv.Whole(inLen) {
		return fmt.Errorf("reorder: kernel launch with %d slots of %d bytes: %w", slots, inLen, engine.ErrInvalidParameter)
	}
	// Sized by the wider of a slot's input and output, so that narrowing conversions (int32 →
	// fp16/bf16) also give each block at most about 8 KiB to read. From 8 KiB input slots on,
	// though, a narrowing block takes as many slots as its output length allows (2 of 8 KiB
	// rather than 1): half the blocks, so half the slot-table round trips, which a slot table
	// in mapped host memory makes slow (int32 → bf16/fp16 at 8 KiB × 4096 on an H100 with a
	// mapped table: 0.89–0.90 → 0.92 of the copy's traffic; at 1 KiB the same rule cost
	// 0.01–0.02, so smaller slots keep the input-sized shape).
	outLen := k.conv.OutputLen(inLen)
	if widening(k.conv) {
		// One warp per slot (spb unused).
		blocks := uint32((slots + wideThreads/32 - 1) / (wideThreads / 32))
		cfg := cudart.LaunchConfig{Grid: cudart.Dim3{X: blocks}, Block: cudart.Dim3{X: wideThreads}, Stream: s}
		big := uint32(0)
		if k.conv.Big {
			big = 1
		}
		return fn.Launch(cfg, table, cudart.Ptr(src), cudart.Ptr(out), cudart.U32(uint32(inLen)), cudart.U32(big), cudart.U32(uint32(slots)), cudart.U32(1))
	}
	spb, threads := shape(max(outLen, inLen), slots, k.sms)
	if outLen < inLen && inLen >= 8192 {
		spb, _ = shape(outLen, slots, k.sms)
	}
	blocks := (uint32(slots) + spb - 1) / spb
	cfg := cudart.LaunchConfig{Grid: cudart.Dim3{X: blocks}, Block: cudart.Dim3{X: threads}, Stream: s}
	n := cudart.U32(uint32(slots))
	if !k.conv.Active() {
		return fn.Launch(cfg, table, cudart.Ptr(src), cudart.Ptr(out), cudart.U32(uint32(inLen)), n, cudart.U32(spb))
	}
	big := uint32(0)
	if k.conv.Big {
		big = 1
	}
	return fn.Launch(cfg, table, cudart.Ptr(src), cudart.Ptr(out), cudart.U32(uint32(inLen)), cudart.U32(big), n, cudart.U32(spb))
}

// gpuBackend gathers a batch's slot table in pinned host memory as packets arrive, keeps
// the packets, and when the batch is done launches one kernel on the plan's stream; a
// goroutine waits for each kernel in turn, then frees the batch's packets and delivers the
// aggregate. Slot tables are a fixed set, one per batch in flight on the CPU or the GPU.
// The kernel never reads a table across PCIe (a round trip at the start of every block, which
// cost small batches half their GPU time and large ones up to a third): batches of up to
// ParamSlots packets pass their table in the launch's parameters; larger ones (and all where
// the driver refuses parameters past 4 KiB) have the copy engine stage it in device memory on
// a second stream, which overlaps the kernels of earlier batches, and the kernel's stream
// waits for that copy.
type gpuBackend struct {
	p       *Plan
	log     *slog.Logger
	dev     *cudart.Device
	kernels *Kernels
	kernel  *Kernel
	stream  *cudart.Stream
	tables  *cudart.HostMem
	params  bool           // launches carry the slot table (LaunchParams)
	staging *cudart.Stream // copies tables to the device (when !params)
	dtables *cudart.DeviceMem
	srcBase cudart.DevicePtr
	outBase cudart.DevicePtr
	sets    []gpuSet
	free    chan int    // indices of unused sets
	pending chan gpuJob // launched batches, in launch order
	done    chan struct{}
}

// gpuSet is one batch's slot table and the packets it holds.
type gpuSet struct {
	table  []byte           // CPU view: ppb words, little-endian
	param  []byte           // table and the rest of its 8*ParamSlots bytes, for LaunchParams
	dptr   cudart.DevicePtr // the table's copy in device memory
	staged *cudart.Event    // recorded on the staging stream after the copy
	held   []uint64         // source offsets of the packets to release after the kernel
	idx    []uint32         // scratch for releasing them in bulk
	ev     *cudart.Event
}

type gpuJob struct {
	set    int
	outIdx uint32
	info   *engine.ReorderInfo
	ts     int64
	flow   uint32
}

// gpuAddressable is implemented by host-pinned memory (cudart.HostMem).
type gpuAddressable interface{ DevicePtr() cudart.DevicePtr }

// gpuDevice is implemented by cudart's memory types: the GPU the memory belongs to.
type gpuDevice interface{ Device() *cudart.Device }

func newGPUBackend(p *Plan, opt Options) (backend, error) {
	fail := func(format string, args ...any) (backend, error) {
		return nil, fmt.Errorf("reorder plan %s: "+format, append([]any{p.name}, args...)...)
	}
	if p.src.Kind == config.KindDevice || !p.src.CPU() {
		// The CPU reads each packet's sequence and batch numbers to place it; packets in
		// device memory would need a GPU pass for that first.
		return fail("a gpu plan reads sequence numbers with the CPU: its queue's region %s must be host_pinned (device memory sources are not supported yet)", p.src.Name)
	}
	srcMem, ok := p.src.Memory().(gpuAddressable)
	if !ok {
		return fail("source region %s is %s memory, which the GPU cannot read: use host_pinned", p.src.Name, p.src.Kind)
	}
	var outBase cudart.DevicePtr
	switch m := p.out.Memory().(type) {
	case *cudart.DeviceMem:
		outBase = m.Ptr()
	case gpuAddressable:
		outBase = m.DevicePtr()
	default:
		return fail("output region %s is %s memory, which the GPU cannot write: use device or host_pinned", p.out.Name, p.out.Kind)
	}
	if uint64(p.src.NumBufs)*uint64(p.src.BufSize) > maxSlotOff || p.src.BufSize > maxSlotLen {
		return fail("source region %s is too large for the kernels' slot tables (2^40 bytes, 2^24-byte buffers)", p.src.Name)
	}
	owner, ok := p.out.Memory().(gpuDevice)
	if !ok {
		return fail("output region %s was not allocated through CUDA", p.out.Name)
	}
	// A Device of our own: its reference keeps the context alive as long as the plan.
	dev, err := owner.Device().Driver().Device(owner.Device().Ordinal())
	if err != nil {
		return fail("%v", err)
	}
	b := &gpuBackend{p: p, log: p.log, dev: dev, srcBase: srcMem.DevicePtr(), outBase: outBase, done: make(chan struct{})}
	ok = false
	defer func() {
		if !ok {
			b.release()
		}
	}()
	if b.kernels, err = LoadKernels(dev, opt.Kernels); err != nil {
		return fail("%v", err)
	}
	if b.kernel, err = b.kernels.Kernel(p.conv); err != nil {
		return fail("%v", err)
	}
	if b.stream, err = dev.NewStream(true); err != nil {
		return fail("%v", err)
	}
	// One set per batch being assembled, plus as many again for batches on the GPU: a plan
	// that outruns its GPU drops packets (no_packet_buffers) instead of queueing without end.
	n := 2 * len(p.windows)
	tableBytes := 8 * p.ppb
	b.params = p.ppb <= ParamSlots && b.kernel.ParamTable() && !opt.tableInMemory
	stride := tableBytes
	if b.params {
		stride = 8 * ParamSlots // a launch reads a whole parameter's worth
	}
	if b.tables, err = dev.AllocHostPinned(n * stride); err != nil {
		return fail("%v", err)
	}
	if b.staging, err = dev.NewStream(true); err != nil {
		return fail("%v", err)
	}
	if b.dtables, err = dev.AllocDevice(n * tableBytes); err != nil {
		return fail("%v", err)
	}
	b.sets = make([]gpuSet, n)
	b.free = make(chan int, n)
	b.pending = make(chan gpuJob, n)
	for i := range b.sets {
		s := &b.sets[i]
		s.table = b.tables.Bytes()[i*stride : i*stride+tableBytes]
		s.dptr = b.dtables.Ptr() + cudart.DevicePtr(i*tableBytes)
		if b.params {
			s.param = b.tables.Bytes()[i*stride : (i+1)*stride]
		}
		s.held = make([]uint64, 0, p.ppb)
		s.idx = make([]uint32, 0, p.ppb)
		if s.ev, err = dev.NewEvent(false, true); err != nil {
			return fail("%v", err)
		}
		if s.staged, err = dev.NewEvent(false, false); err != nil {
			return fail("%v", err)
		}
		b.free <- i
	}
	go b.complete()
	ok = true
	return b, nil
}

func (b *gpuBackend) start(w *window) bool {
	select {
	case k := <-b.free:
		w.gpu = k
		b.sets[k].held = b.sets[k].held[:0]
		return true
	default:
		return false
	}
}

func (b *gpuBackend) place(w *window, slot int, burst *engine.Burst, i int, _ []byte, n int) {
	s := &b.sets[w.gpu]
	off := burst.SegmentOffset(0, i)
	binary.LittleEndian.PutUint64(s.table[8*slot:], SlotWord(off+uint64(b.p.offset), n))
	s.held = append(s.held, off)
}

func (b *gpuBackend) finish(w *window, info *engine.ReorderInfo) {
	s := &b.sets[w.gpu]
	p := b.p
	for slot := 0; slot < p.ppb; slot++ {
		if w.present[slot>>6]&(1<<(slot&63)) == 0 {
			binary.LittleEndian.PutUint64(s.table[8*slot:], SlotMissing)
		}
	}
	out := b.outBase + cudart.DevicePtr(uint64(w.outIdx)*uint64(p.out.BufSize))
	var err error
	if b.params {
		if err = b.kernel.LaunchParams(b.stream, s.param, b.srcBase, out, p.ppb, w.inLen); err != nil {
			// Parameters past 4 KiB need CUDA 12.1: from now on, tables staged in device memory.
			b.log.Warn("reorder: GPU launch with the slot table in its parameters refused; staging tables in device memory from now on",
				"plan", p.name, "err", err)
			b.params = false
		}
	}
	if !b.params {
		err = b.dev.CopyHtoDAsync(s.dptr, s.table, b.staging)
		if err == nil {
			err = s.staged.Record(b.staging)
		}
		if err == nil {
			err = b.stream.WaitEvent(s.staged)
		}
		if err == nil {
			err = b.kernel.Launch(b.stream, s.dptr, b.srcBase, out, p.ppb, w.inLen)
		}
	}
	if err == nil {
		err = s.ev.Record(b.stream)
	}
	if err != nil {
		b.log.Error("reorder: GPU launch failed; aggregate dropped", "plan", p.name, "err", err)
		p.q.Stats.Drop(engine.DropOther, info.SourcePackets)
		b.releaseSet(w.gpu)
		p.out.Put(w.outIdx)
		return
	}
	// Never blocks: there are as many job slots as sets, and this batch holds one.
	b.pending <- gpuJob{set: w.gpu, outIdx: w.outIdx, info: info, ts: w.ts, flow: w.flow}
}

// complete waits for each launched batch in order, then frees its packets and delivers it.
func (b *gpuBackend) complete() {
	defer close(b.done)
	for j := range b.pending {
		err := b.sets[j.set].ev.Synchronize()
		b.releaseSet(j.set)
		if err != nil {
			b.log.Error("reorder: GPU kernel failed; aggregate dropped", "plan", b.p.name, "err", err)
			b.p.q.Stats.Drop(engine.DropOther, j.info.SourcePackets)
			b.p.out.Put(j.outIdx)
			continue
		}
		b.p.deliver(j.outIdx, j.info, j.ts, j.flow)
	}
}

// releaseSet frees a set's packets and returns the set.
func (b *gpuBackend) releaseSet(k int) {
	s := &b.sets[k]
	// In bulk: per packet, each release would contend with the engine taking buffers from
	// the same pool.
	s.idx = b.p.src.ReleaseBulk(s.held, s.idx)
	s.held = s.held[:0]
	b.free <- k
}

func (b *gpuBackend) discard(w *window) {
	b.releaseSet(w.gpu)
	b.p.out.Put(w.outIdx)
}

func (b *gpuBackend) close() error {
	close(b.pending)
	<-b.done
	return b.release()
}

// release frees the CUDA resources (also after a failed construction).
func (b *gpuBackend) release() error {
	var errs []error
	for i := range b.sets {
		for _, e := range []*cudart.Event{b.sets[i].ev, b.sets[i].staged} {
			if e != nil {
				errs = append(errs, e.Close())
			}
		}
	}
	if b.tables != nil {
		errs = append(errs, b.tables.Close())
	}
	if b.dtables != nil {
		errs = append(errs, b.dtables.Close())
	}
	for _, st := range []*cudart.Stream{b.stream, b.staging} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	if b.kernels != nil {
		errs = append(errs, b.kernels.Close())
	}
	errs = append(errs, b.dev.Close())
	return errors.Join(errs...)
}
