package reorder

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
)

// DefaultMaxInFlight is how many batches a plan assembles at once unless Options say
// otherwise: enough for packets of neighbouring batches to interleave, few enough that a lost
// batch does not hold many output buffers.
const DefaultMaxInFlight = 4

// MaxInFlightLimit bounds Options.MaxInFlight; windows are searched linearly per packet.
const MaxInFlightLimit = 64

// historyBits is how many recent batches a plan remembers as delivered, to tell a late
// packet from the first packet of a new batch.
const historyBits = 64

// Options tune a plan beyond its configuration.
type Options struct {
	// Timeout flushes a batch this long after its first packet arrived, complete or not
	// (flag FlagReorderTimeout). 0 never flushes by time: a batch is delivered when complete or
	// when newer batches need its place. The session uses the queue's timeout_us.
	Timeout time.Duration
	// MaxInFlight is how many batches are assembled at once (default DefaultMaxInFlight, at
	// most MaxInFlightLimit and at most the output region's num_bufs). A packet of a further
	// batch flushes the oldest incomplete one.
	MaxInFlight int
	// Kernels replaces the embedded PTX of the GPU kernels (for kernel development; nil uses
	// the committed kernels/reorder.ptx). Ignored by CPU plans.
	Kernels []byte
	// tableInMemory makes a GPU plan stage every slot table in device memory, never pass it
	// in the launch's parameters (tests of that path with small batches).
	tableInMemory bool
}

// Stats are a plan's counters since it started.
type Stats struct {
	Received     uint64 // packets handed to the plan (each is placed or dropped and counted)
	Packets      uint64 // source packets placed into delivered aggregates
	Aggregates   uint64 // aggregates handed to the application's ring (or lost there, see the queue)
	Complete     uint64 // aggregates with every slot filled
	Incomplete   uint64 // aggregates flushed by timeout or to make room (FlagReorderTimeout)
	Evicted      uint64 // of Incomplete: flushed because newer batches needed the room
	MissingSlots uint64 // zero-filled slots in delivered aggregates
	Duplicates   uint64 // packets dropped: their slot was already filled
	Late         uint64 // packets dropped: their batch was already delivered or is too old
	Malformed    uint64 // packets dropped: too short for the fields, not whole samples, or (gpu plans) outside the source region
	Resized      uint64 // packets whose payload length differed from their batch's (cut or zero-padded)
	NoBuffers    uint64 // packets dropped: no free output buffer to start their batch
	NoMetadata   uint64 // aggregates dropped for want of burst metadata
	// Dropped counts incomplete batches dropped whole under missing_action: drop (their
	// packets are counted under the queue's drop reason "incomplete"); they are not in
	// Aggregates or Incomplete.
	Dropped uint64
	// OutOfRange counts, for hardware plans (reorder_engine: hw), packets whose sequence
	// number no slot takes, dropped by the NIC; software plans place every sequence number.
	OutOfRange uint64
}

type statCounters struct {
	received,
	packets, aggregates, complete, incomplete, evicted, missing atomic.Uint64
	dups, late, malformed, resized, noBuffers, noMeta, dropped atomic.Uint64
}

func (c *statCounters) snapshot() Stats {
	return Stats{
		Received: c.received.Load(), Packets: c.packets.Load(), Aggregates: c.aggregates.Load(), Complete: c.complete.Load(),
		Incomplete: c.incomplete.Load(), Evicted: c.evicted.Load(), MissingSlots: c.missing.Load(),
		Duplicates: c.dups.Load(), Late: c.late.Load(), Malformed: c.malformed.Load(),
		Resized: c.resized.Load(), NoBuffers: c.noBuffers.Load(), NoMetadata: c.noMeta.Load(),
		Dropped: c.dropped.Load(),
	}
}

// window is one batch being assembled.
type window struct {
	open     bool
	u        uint64 // unwrapped batch number: key plus a multiple of the key space
	key      uint64 // batch id as the packets carry it
	outIdx   uint32 // output buffer
	present  []uint64
	count    int   // slots filled
	dups     int   // duplicates of this batch's slots dropped
	inLen    int   // payload bytes per slot, from the batch's first packet (whole samples)
	outLen   int   // bytes per output slot
	deadline int64 // service clock; 0: none
	ts       int64 // receive time of the first packet
	flow     uint32
	gpu      int    // GPU plans: descriptor set held by this window
	dst      []byte // CPU plans: the output buffer
}

// backend moves payloads: the CPU one copies as packets arrive, the GPU one gathers
// descriptors and runs a kernel per batch.
type backend interface {
	// start takes per-batch resources; false when none are left.
	start(w *window) bool
	// place puts packet i of b (payload = its bytes after the offset, n of them used) into
	// slot of w and takes ownership of the packet.
	place(w *window, slot int, b *engine.Burst, i int, payload []byte, n int)
	// finish zero-fills w's missing slots and delivers the aggregate described by info (now,
	// or when the GPU is done).
	finish(w *window, info *engine.ReorderInfo)
	// discard gives back w's resources and the packets it holds without delivering.
	discard(w *window)
	// close stops background work and frees the backend's resources.
	close() error
}

// Plan is one reorder configuration at work on one queue: it groups packets into batches by
// their batch number, places each packet's payload at the slot its sequence number names
// (converting samples on the way when asked to) and delivers every batch as one aggregate
// burst with a ReorderInfo.
//
// Compared with upstream: batches are keyed by batch number, not by arrival count, so
// several can be assembled at once; each aggregate reports which slots were filled, and
// missing slots are zero-filled, never stale; duplicates and late packets are dropped and
// counted; timeouts run from a batch's first packet and are enforced by the service's timer
// even when nobody polls; batch numbers may wrap around.
type Plan struct {
	log      *slog.Logger
	name     string
	cfg      config.Reorder
	q        *engine.RxQueue
	src      *engine.Region
	out      *engine.Region
	outRs    []*engine.Region
	conv     Conversion
	copyOnly bool // no conversion: payloads are copied
	gpu      bool
	be       backend
	g        *group

	seq, batch config.BitField
	byBatch    bool   // seq_batch_number: the batch field names the batch
	ppb        int    // slots per aggregate (a power of two)
	seqShift   uint   // seq_packets_per_batch: batch = seq >> seqShift
	keys       uint64 // distinct batch numbers (a power of two)
	lateSpan   uint64 // how far behind the newest batch a batch number counts as old rather than new
	offset     int
	maxIn      int // largest payload per slot: source buf_size - offset, whole samples
	timeout    int64
	flows      []uint32

	// State below is guarded by g.mu.
	windows   []window
	started   bool
	newest    uint64  // unwrapped number of the newest batch seen
	done      uint64  // bit i: batch newest-i was delivered
	lateSince int     // late packets since the previous aggregate
	received  uint64  // packets handed to add, published to st.received once per burst
	last      *window // the window the previous packet went to: consecutive packets mostly share one
	cacheOK   bool    // batch numbers are plentiful enough that an open window's number is unambiguous
	infos     []*engine.ReorderInfo

	// The per-packet path's constants, compiled from the configuration.
	seqR, batchR fieldReader
	// cyclic_sequence: the epoch field, placed above the batch number in the batch key.
	epoch          bool
	epochR         fieldReader
	batchBits      uint
	dropIncomplete bool // missing_action: drop
	minLen         int  // bytes a packet needs to hold its fields
	fastLen        int  // packets at least this long take addRun's fast path (fields read by 8-byte loads, some payload)
	wholeMask      int  // payload lengths with one of these bits set are not whole samples
	cpu            bool // a cpuBackend: payloads are placed without going through the interface
	// bulkFree: the service frees the plan's packets with the rest of each burst, in bulk
	// (every plan of the queue is a CPU plan); the plan frees none of them itself.
	bulkFree bool
	slowOnly bool // tests: every packet through add, to compare with the fast path

	st statCounters
}

// Name is the plan's configured name.
func (p *Plan) Name() string { return p.name }

// Port is the port id of the plan's queue.
func (p *Plan) Port() int { return p.q.Port.ID }

// Queue is the id of the queue the plan reads.
func (p *Plan) Queue() int { return p.q.ID }

// Output is the region the plan writes its aggregates into.
func (p *Plan) Output() *engine.Region { return p.out }

// GPU reports whether the plan runs on the GPU.
func (p *Plan) GPU() bool { return p.gpu }

// PacketsPerBatch is the number of slots per aggregate.
func (p *Plan) PacketsPerBatch() int { return p.ppb }

// Stats snapshots the plan's counters.
func (p *Plan) Stats() Stats { return p.st.snapshot() }

// newPlan checks a configuration against its queue and output region and compiles it.
func newPlan(rc *config.Reorder, q *engine.RxQueue, out *engine.Region, opt Options) (*Plan, error) {
	name := rc.Name
	if name == "" {
		name = "(unnamed)"
	}
	fail := func(format string, args ...any) (*Plan, error) {
		return nil, fmt.Errorf("reorder plan %s: "+format, append([]any{name}, args...)...)
	}
	if q == nil || out == nil {
		return fail("needs a queue and an output region")
	}
	if len(q.Regions) != 1 {
		return fail("queue %s has %d memory regions; reordering needs exactly one (no header-data split)", q.Path(), len(q.Regions))
	}
	p := &Plan{name: name, cfg: *rc, q: q, src: q.Regions[0], out: out, outRs: []*engine.Region{out}, offset: rc.PayloadByteOffset}
	conv, err := NewConversion(rc.DataTypes)
	if err != nil {
		return fail("%v", err)
	}
	p.conv, p.copyOnly = conv, !conv.Active()
	if conv.InBits() > 8 {
		p.wholeMask = conv.InBits()/8 - 1 // int16, int32: whole samples are whole 2 or 4 bytes
	}
	m := rc.Method
	width := func(f config.BitField, what string) error {
		if f.Width < 1 || f.Width > 32 || f.Offset < 0 {
			return fmt.Errorf("%s field at bit %d, %d bits wide: want 1..32 bits at a bit offset ≥ 0", what, f.Offset, f.Width)
		}
		return nil
	}
	if err := width(m.Seq, "sequence_number"); err != nil {
		return fail("%v", err)
	}
	p.seq = m.Seq
	p.seqR = newFieldReader(m.Seq)
	p.minLen = p.seqR.need
	switch m.Kind {
	case config.MethodSeqBatchNumber:
		if err := width(m.Batch, "batch_number"); err != nil {
			return fail("%v", err)
		}
		if m.Batch.Width > m.Seq.Width {
			return fail("batch_number (%d bits) is wider than sequence_number (%d bits)", m.Batch.Width, m.Seq.Width)
		}
		p.byBatch, p.batch = true, m.Batch
		p.batchR = newFieldReader(m.Batch)
		p.minLen = max(p.minLen, p.batchR.need)
		p.ppb = 1 << (m.Seq.Width - m.Batch.Width)
		if m.PacketsPerBatch != 0 && m.PacketsPerBatch != p.ppb {
			return fail("packets_per_batch %d disagrees with 2^%d / 2^%d", m.PacketsPerBatch, m.Seq.Width, m.Batch.Width)
		}
		p.keys = 1 << m.Batch.Width
	case config.MethodSeqPacketsPerBatch:
		n := m.PacketsPerBatch
		if n <= 0 || n&(n-1) != 0 || int64(n) > int64(1)<<m.Seq.Width {
			return fail("packets_per_batch %d must be a power of two that divides 2^%d", n, m.Seq.Width)
		}
		p.ppb = n
		p.seqShift = uint(bits.TrailingZeros(uint(n)))
		p.keys = uint64(1) << (uint(m.Seq.Width) - p.seqShift)
	default:
		return fail("unknown method %q", m.Kind)
	}
	p.batchBits = uint(bits.TrailingZeros64(p.keys))
	if c := rc.Cyclic; c != nil {
		// The epoch widens the batch key, so batch numbers unwrap over 2^(batch+epoch bits)
		// batches: a late packet of the previous cycle has a key far behind the new cycle's.
		if err := width(c.Epoch, "cyclic_sequence epoch"); err != nil {
			return fail("%v", err)
		}
		if int(p.batchBits)+c.Epoch.Width > 32 {
			return fail("%d epoch bits and %d batch-number bits make a %d-bit batch key; at most 32", c.Epoch.Width, p.batchBits, int(p.batchBits)+c.Epoch.Width)
		}
		// As config's validator: an epoch sharing bits with the sequence (or batch) number
		// changes within a cycle.
		if c.Epoch.Overlaps(m.Seq) || (m.Kind == config.MethodSeqBatchNumber && c.Epoch.Overlaps(m.Batch)) {
			return fail("cyclic_sequence epoch bits %d..%d overlap the sequence or batch number bits", c.Epoch.Offset, c.Epoch.Offset+c.Epoch.Width-1)
		}
		p.epoch, p.epochR = true, newFieldReader(c.Epoch)
		p.minLen = max(p.minLen, p.epochR.need)
		p.keys <<= uint(c.Epoch.Width)
	}
	switch rc.MissingAction {
	case "", config.MissingPassthrough:
	case config.MissingDrop:
		p.dropIncomplete = true
	default:
		return fail("unknown missing_action %q (valid: drop, passthrough)", rc.MissingAction)
	}
	p.lateSpan = (p.keys - 1) / 2
	p.fastLen = max(p.minLen, p.seqR.first+8, p.offset+1)
	if p.byBatch {
		p.fastLen = max(p.fastLen, p.batchR.first+8)
	}
	if p.epoch {
		p.fastLen = max(p.fastLen, p.epochR.first+8)
	}
	if p.offset < 0 || p.offset >= p.src.BufSize {
		return fail("payload_byte_offset %d must be smaller than the source region's buf_size %d", p.offset, p.src.BufSize)
	}
	p.maxIn = conv.InputBytes(p.src.BufSize - p.offset)
	if p.maxIn == 0 {
		return fail("a %d-byte source buffer minus the %d-byte offset holds no whole sample", p.src.BufSize, p.offset)
	}
	if need := int64(p.ppb) * int64(conv.OutputLen(p.maxIn)); need > int64(out.BufSize) {
		return fail("output region %s has buf_size %d; a batch can need %d (%d slots × %d bytes)", out.Name, out.BufSize, need, p.ppb, conv.OutputLen(p.maxIn))
	}
	w := opt.MaxInFlight
	if w == 0 {
		w = DefaultMaxInFlight
	}
	if w < 1 || w > MaxInFlightLimit {
		return fail("max in-flight batches %d: want 1..%d", w, MaxInFlightLimit)
	}
	w = min(w, out.NumBufs)
	if opt.Timeout < 0 {
		return fail("negative timeout %v", opt.Timeout)
	}
	p.timeout = int64(opt.Timeout)
	p.windows = make([]window, w)
	// With at least four batch numbers per batch in flight every open window lies within the
	// span where numbers unwrap unambiguously, so a packet with an open window's number
	// belongs to it and the lookup can be skipped.
	p.cacheOK = p.keys >= 4*uint64(w)
	words := (p.ppb + 63) / 64
	for k := range p.windows {
		p.windows[k].present = make([]uint64, words)
	}
	p.infos = make([]*engine.ReorderInfo, out.NumBufs)
	for _, id := range rc.FlowIDs {
		p.flows = append(p.flows, uint32(id))
	}
	return p, nil
}

// packetBytes is packet i of b given its region's bytes (nil: the CPU cannot read them),
// what b.Packet(i) gives with fewer checks.
func packetBytes(b *engine.Burst, buf []byte, i int) []byte {
	if buf == nil {
		return nil
	}
	o := b.SegmentOffset(0, i)
	e := o + uint64(b.SegmentLen(0, i))
	return buf[o:e:e]
}

// addRun takes packets lo..hi-1 of b (which the plan now owns); buf is the bytes of b's
// region (nil when the CPU cannot read them).
//
// A CPU plan places the common packet itself: long enough for 8-byte field loads, whole
// samples, of the batch the previous packet went to, payload as long as the batch's, slot
// not yet filled. Everything else goes through add, which handles every case; both give the
// same result for the packets the fast path takes.
func (p *Plan) addRun(b *engine.Burst, lo, hi int, buf []byte, now int64) {
	p.received += uint64(hi - lo)
	if !p.cpu || !p.cacheOK || buf == nil || p.slowOnly {
		for i := lo; i < hi; i++ {
			p.add(b, i, packetBytes(b, buf, i), now)
		}
		return
	}
	slotMask := p.ppb - 1
	for i := lo; i < hi; i++ {
		// The packet is bytes [o, o+l) of buf. Every slot of a batch holds w.inLen bytes, a
		// whole number of samples, so a packet with that payload is whole and fills its slot
		// exactly: nothing to cut, pad or clear.
		o, l := int(b.SegmentOffset(0, i)), b.SegmentLen(0, i)
		if w := p.last; l >= p.fastLen && w != nil && w.open && l-p.offset == w.inLen && o <= len(buf)-l {
			// The shift counts are below 64: masking them spares the compiler's checks.
			seq := uint32(binary.BigEndian.Uint64(buf[o+p.seqR.first:])>>(p.seqR.shift&63)) & p.seqR.mask
			key := uint32(uint64(seq) >> (p.seqShift & 63))
			if p.byBatch {
				key = uint32(binary.BigEndian.Uint64(buf[o+p.batchR.first:])>>(p.batchR.shift&63)) & p.batchR.mask
			}
			if p.epoch {
				ep := uint32(binary.BigEndian.Uint64(buf[o+p.epochR.first:])>>(p.epochR.shift&63)) & p.epochR.mask
				key |= uint32(uint64(ep) << (p.batchBits & 63))
			}
			slot := int(seq) & slotMask
			word, bit := slot>>6, uint64(1)<<(slot&63)
			if w.key == uint64(key) && w.present[word]&bit == 0 {
				w.present[word] |= bit
				w.count++
				dst := w.dst[slot*w.outLen:][:w.outLen]
				if p.copyOnly {
					copy(dst, buf[o+p.offset:o+l])
				} else {
					p.conv.convert(dst, buf[o+p.offset:o+l])
				}
				if !p.bulkFree {
					b.FreePacket(i)
				}
				if w.count == p.ppb {
					p.emit(w, false, false)
				}
				continue
			}
		}
		p.add(b, i, packetBytes(b, buf, i), now)
	}
}

// add takes packet i of b (which the plan now owns); pkt is its bytes (nil when the CPU
// cannot read them). The caller counts it as received.
func (p *Plan) add(b *engine.Burst, i int, pkt []byte, now int64) {
	n := len(pkt) - p.offset
	if len(pkt) < p.minLen || n <= 0 || n&p.wholeMask != 0 {
		p.drop(b, i, engine.DropMalformed, &p.st.malformed)
		return
	}
	seq := p.seqR.read(pkt)
	var key uint32
	if p.byBatch {
		key = p.batchR.read(pkt)
	} else {
		key = seq >> p.seqShift
	}
	if p.epoch {
		key |= uint32(uint64(p.epochR.read(pkt)) << p.batchBits)
	}
	if p.gpu && b.SegmentRegion(0) != p.src {
		// The kernels address payloads relative to the plan's source region; a packet in
		// another region (a loopback engine hands over its TX buffers) cannot be placed.
		p.drop(b, i, engine.DropOther, &p.st.malformed)
		return
	}
	slot := int(seq) & (p.ppb - 1)
	w := p.last
	if w == nil || !w.open || w.key != uint64(key) || !p.cacheOK {
		if w = p.window(uint64(key), now, n, b.FlowID(i), b, i); w == nil {
			return // dropped and counted by window
		}
		p.last = w
	}
	word, bit := slot>>6, uint64(1)<<(slot&63)
	if w.present[word]&bit != 0 {
		w.dups++
		p.drop(b, i, engine.DropDuplicate, &p.st.dups)
		return
	}
	if n != w.inLen {
		p.st.resized.Add(1)
		n = min(n, w.inLen)
	}
	w.present[word] |= bit
	w.count++
	if p.cpu {
		// cpuBackend.place without the interface call.
		dst := w.dst[slot*w.outLen:][:w.outLen]
		src := pkt[p.offset:][:n]
		var k int
		if p.copyOnly {
			k = copy(dst, src)
		} else {
			k = p.conv.convert(dst, src)
		}
		if k < len(dst) {
			clear(dst[k:])
		}
		if !p.bulkFree {
			b.FreePacket(i)
		}
	} else {
		p.be.place(w, slot, b, i, pkt[p.offset:], n)
	}
	if w.count == p.ppb {
		p.emit(w, false, false)
	}
}

func (p *Plan) drop(b *engine.Burst, i int, r engine.DropReason, c *atomic.Uint64) {
	c.Add(1)
	p.q.Stats.Drop(r, 1)
	if !p.bulkFree {
		b.FreePacket(i)
	}
}

// window finds or opens the batch for a packet with batch number key and payload length n.
// It returns nil after dropping and counting the packet (late, or no output buffer).
func (p *Plan) window(key uint64, now int64, n int, flow uint32, b *engine.Burst, i int) *window {
	mask := p.keys - 1
	var u uint64
	forward := false
	if !p.started {
		// Start far from zero so that unwrapped numbers of older batches never underflow; 1<<62
		// is a multiple of every key space (at most 2^32), so u keeps key's residue.
		u, forward = 1<<62+key, true
	} else {
		d := (key - p.newest) & mask
		switch {
		case d != 0 && d <= mask-p.lateSpan:
			u, forward = p.newest+d, true
		default:
			u = p.newest - ((p.keys - d) & mask)
		}
	}
	for k := range p.windows {
		if w := &p.windows[k]; w.open && w.u == u {
			return w
		}
	}
	if !forward {
		back := p.newest - u
		if back >= historyBits || p.done&(1<<back) != 0 {
			if p.lateSpan == 0 {
				// Two or fewer batch numbers: the batch with this number was delivered, so this
				// packet starts its next round.
				u, forward = p.newest+p.keys, true
			} else {
				p.lateSince++
				p.drop(b, i, engine.DropLate, &p.st.late)
				return nil
			}
		}
	}
	// A free window, or the oldest one's place.
	var free *window
	for k := range p.windows {
		if !p.windows[k].open {
			free = &p.windows[k]
			break
		}
	}
	if free == nil {
		ref := p.newest // ages are measured back from the newest batch, this one included
		if forward {
			ref = u
		}
		oldest := &p.windows[0]
		for k := range p.windows {
			if ref-p.windows[k].u > ref-oldest.u {
				oldest = &p.windows[k]
			}
		}
		if !forward && ref-u >= ref-oldest.u {
			// This batch would be the oldest in flight: it is too late to start.
			p.lateSince++
			p.drop(b, i, engine.DropLate, &p.st.late)
			return nil
		}
		p.emit(oldest, true, true)
		free = oldest
	}
	idx, ok := p.out.Get()
	if !ok {
		p.drop(b, i, engine.DropNoPacketBuffers, &p.st.noBuffers)
		return nil
	}
	w := free
	w.outIdx = idx
	if !p.be.start(w) {
		p.out.Put(idx)
		p.drop(b, i, engine.DropNoPacketBuffers, &p.st.noBuffers)
		return nil
	}
	if !p.started || forward {
		shift := u - p.newest
		if !p.started || shift >= historyBits {
			p.done = 0
		} else {
			p.done <<= shift
		}
		p.newest, p.started = u, true
	}
	w.open, w.u, w.key = true, u, key
	clear(w.present)
	w.count, w.dups = 0, 0
	w.inLen = min(n, p.maxIn)
	w.outLen = p.conv.OutputLen(w.inLen)
	w.deadline = 0
	if p.timeout > 0 {
		w.deadline = now + p.timeout
		p.g.armed(w.deadline)
	}
	w.ts, _ = b.RxTimestamp(i)
	w.flow = flow
	return w
}

// emit delivers w's aggregate; incomplete marks a flush before every slot was filled.
func (p *Plan) emit(w *window, incomplete, evicted bool) {
	missing := p.ppb - w.count
	if missing > 0 && p.dropIncomplete {
		// missing_action: drop — the whole batch goes, counted; it still counts as
		// delivered, so its late packets are told late.
		p.st.dropped.Add(1)
		p.q.Stats.Drop(engine.DropIncomplete, w.count)
		if back := p.newest - w.u; back < historyBits {
			p.done |= 1 << back
		}
		w.open = false
		p.be.discard(w)
		return
	}
	info := p.info(w.outIdx)
	info.BatchID = w.key & (1<<p.batchBits - 1)
	info.Epoch = w.key >> p.batchBits
	info.SourcePackets = w.count
	info.PacketsPerBatch = p.ppb
	info.PayloadLen = w.inLen
	info.AggregateLen = p.ppb * w.outLen
	info.Flags = engine.FlagReordered
	if incomplete || missing > 0 {
		info.Flags |= engine.FlagReorderTimeout
		p.st.incomplete.Add(1)
		if evicted {
			p.st.evicted.Add(1)
		}
	} else {
		p.st.complete.Add(1)
	}
	info.Missing = missing
	info.Duplicates = w.dups
	p.st.packets.Add(uint64(w.count))
	info.Late = p.lateSince
	p.lateSince = 0
	var tmp [8]byte
	for k, word := range w.present {
		binary.LittleEndian.PutUint64(tmp[:], word)
		copy(info.Present[8*k:], tmp[:])
	}
	p.st.missing.Add(uint64(missing))
	if back := p.newest - w.u; back < historyBits {
		p.done |= 1 << back
	}
	w.open = false
	p.be.finish(w, info)
}

// info is the ReorderInfo of output buffer idx. An aggregate owns its output buffer until
// the application frees it, so the info that travels with it is never shared.
func (p *Plan) info(idx uint32) *engine.ReorderInfo {
	ri := p.infos[idx]
	if ri == nil {
		ri = &engine.ReorderInfo{Present: make([]byte, (p.ppb+7)/8)}
		p.infos[idx] = ri
	}
	return ri
}

// deliver hands an aggregate in output buffer idx to the application.
func (p *Plan) deliver(idx uint32, info *engine.ReorderInfo, ts int64, flow uint32) {
	b, err := p.q.NewBurst()
	if err != nil {
		p.st.noMeta.Add(1)
		p.q.Stats.Drop(engine.DropNoBurstBuffers, info.SourcePackets)
		p.out.Put(idx)
		return
	}
	b.Reset(p.q.Port.ID, p.q.ID, p.outRs, p.q.Port.Raw, 1)
	b.Append(uint64(idx)*uint64(p.out.BufSize), uint32(info.AggregateLen), flow, ts)
	b.SetReorderInfo(info)
	p.st.aggregates.Add(1)
	p.q.DeliverDirect(b)
}

// expire flushes every batch whose deadline has passed (all: every open batch), oldest
// first.
func (p *Plan) expire(now int64, all bool) {
	for range p.windows {
		var w *window
		for k := range p.windows {
			c := &p.windows[k]
			due := all || (c.deadline != 0 && c.deadline <= now)
			if c.open && due && (w == nil || c.u-w.u > 1<<63) {
				w = c
			}
		}
		if w == nil {
			return
		}
		p.emit(w, true, false)
	}
}

// nextDeadline is the earliest deadline of an open batch (0: none).
func (p *Plan) nextDeadline() int64 {
	var d int64
	for k := range p.windows {
		if w := &p.windows[k]; w.open && w.deadline != 0 && (d == 0 || w.deadline < d) {
			d = w.deadline
		}
	}
	return d
}

// discard drops every batch still being assembled (at close), counting its packets.
func (p *Plan) discard() {
	for k := range p.windows {
		if w := &p.windows[k]; w.open {
			p.q.Stats.Drop(engine.DropClosed, w.count)
			w.open = false
			p.be.discard(w)
		}
	}
}

// cpuBackend converts or copies each payload into its slot as it arrives and frees the
// packet at once.
type cpuBackend struct{ p *Plan }

func (c *cpuBackend) start(w *window) bool {
	w.dst = c.p.out.Buf(w.outIdx)
	return true
}

func (c *cpuBackend) slotBytes(w *window, slot int) []byte {
	buf := c.p.out.Buf(w.outIdx)
	return buf[slot*w.outLen : (slot+1)*w.outLen]
}

func (c *cpuBackend) place(w *window, slot int, b *engine.Burst, i int, payload []byte, n int) {
	dst := c.slotBytes(w, slot)
	var k int
	if c.p.copyOnly {
		k = copy(dst, payload[:n])
	} else {
		k = c.p.conv.convert(dst, payload[:n])
	}
	if k < len(dst) {
		clear(dst[k:])
	}
	b.FreePacket(i)
}

func (c *cpuBackend) finish(w *window, info *engine.ReorderInfo) {
	if info.Missing > 0 {
		for slot := 0; slot < c.p.ppb; slot++ {
			if w.present[slot>>6]&(1<<(slot&63)) == 0 {
				clear(c.slotBytes(w, slot))
			}
		}
	}
	c.p.deliver(w.outIdx, info, w.ts, w.flow)
}

func (c *cpuBackend) discard(w *window) { c.p.out.Put(w.outIdx) }

func (c *cpuBackend) close() error { return nil }
