package engine

import (
	"fmt"

	"github.com/daqiri-go/daqiri/config"
)

// Flags are a burst's flag bits (upstream's burst_flags).
type Flags uint32

// Burst flags, at upstream's bit positions.
const (
	FlagReordered      Flags = 1 << 28 // the burst is one reorder aggregate
	FlagReorderTimeout Flags = 1 << 29 // the aggregate was flushed by timeout, not complete
)

// Header sizes the raw header helpers write: Ethernet, IPv4 without options, UDP.
const (
	EthHeaderLen  = 14
	IPv4HeaderLen = 20
	UDPHeaderLen  = 8
	// UDPPayloadOffset is where SetUDPPayload writes on raw streams.
	UDPPayloadOffset = EthHeaderLen + IPv4HeaderLen + UDPHeaderLen
	// IPv6HeaderLen is the fixed IPv6 header; UDPPayloadOffset6 where the payload of an
	// Ethernet/IPv6/UDP frame starts.
	IPv6HeaderLen     = 40
	UDPPayloadOffset6 = EthHeaderLen + IPv6HeaderLen + UDPHeaderLen
)

type segment struct {
	region *Region
	off    []uint64 // byte offset of each packet's data in the region
	len    []uint32
}

// Burst is a batch of packets on one queue, with per-packet metadata. Bursts come from fixed
// metadata pools; packet data lives in memory regions outside the Go heap. A received burst
// belongs to the application until it frees it; a TX burst belongs to the application until
// Send succeeds.
//
// A Burst is not safe for concurrent use, not even on different packets: its methods keep
// burst-wide state (metadata stored only once something sets it, the last IPv4 header
// SetIPv4Header wrote), so one goroutine at a time fills, reads or frees it. Hand a burst to
// another goroutine through a channel or a queue, which orders the two sides' accesses.
type Burst struct {
	port, queue int
	n           int
	nsegs       int
	segs        [config.MaxSegments]segment
	flow        []uint32
	ts          []int64
	// lazy: flow[:n] and ts[:n] are not stored — every packet's flow id is 0 and its time is
	// lazyTS, whatever the arrays hold. TxQueue.NewBurst (times 0) and TakePackets (the
	// receive time) set it instead of writing both arrays for every packet (12 bytes a
	// packet each, twice per loopback burst); the readers (FlowID, RxTimestamp,
	// AnyTimestamp) answer from it, and everything that writes either array or hands it out
	// (SetFlowID, SetRxTimestamp, the Append and Grow family) first stores the values
	// (settle). Reset drops it. TestLazyMetaMatchesStored pins it to the stored form.
	lazy   bool
	lazyTS int64
	freed  []uint8 // per packet: bit s set once segment s went back to its region
	// partial: some segment went back on its own (FreeSegment, FreePackets), so freed has
	// bits set; without it freed[:n] is not read and its content does not matter (every
	// packet counts as not freed): Free returns every buffer without reading or writing it,
	// and the first FreeSegment or FreePackets clears it (settleFreed).
	partial bool
	// hash and hashed: the NIC's RSS hash per packet, for engines whose device reports one
	// (mlx5); empty for the others, so bursts of engines without hashes pay nothing.
	hash   []uint32
	hashed []bool
	conn   uint64
	flags  Flags
	raw    bool // raw Ethernet stream: header helpers write Ethernet/IPv4/UDP headers
	// view0 and mask0 are segment 0's region's bytes and BufSize-1 for a raw stream whose
	// buffers are a power of two the CPU can address (nil and 0 otherwise), set by Reset: the
	// header helpers find a packet's buffer from the burst alone, one dependent load fewer
	// per call than through the region, and need no test but the room to the buffer's end,
	// (o|mask0)+1-o, which is 1 byte when mask0 is 0.
	view0 []byte
	mask0 uint64
	// room1 is the buffer size when the burst has one segment and its region's buffers are
	// a power of two (0 otherwise), set by Reset: SetPacketLengths checks a length against
	// it without a dependent load through the region.
	room1 uint64
	// lim1, mask1 and size1, set by Reset, let SetPacketLen check a length without a call
	// or a load through the region: for a one-segment burst of power-of-two buffers lim1 is
	// the buffer size + 1 and mask1 the size - 1 (a packet at offset o has lim1 - o&mask1 - 1
	// bytes of room) and size1 is 0; for one segment of other buffers size1 is the buffer
	// size, lim1 the size + 1 and mask1 all ones (room + 1 = lim1 - o + o's buffer start, the
	// start from a float division by sizeF1 = size1); all zero for bursts of several segments,
	// which have no room for one length.
	lim1, mask1, size1 uint64
	sizeF1             float64
	tx                 bool
	meta               *MetaPool
	reorder            *ReorderInfo
	// txq is the queue whose NewBurst made the burst (nil for any other burst): Send finds
	// the queue from it instead of walking the port's queue set for the burst's ids.
	txq *TxQueue
	// ip4 is SetIPv4Header's last header (headers.go), kept across Reset: it depends only
	// on the call's arguments.
	ip4 ipv4Cache

	// Engine is for the engine that produced the burst (for example a TX completion token).
	Engine any
}

// ReorderInfo describes a reorder aggregate (upstream ReorderBurstInfo plus daqiri's gap
// report).
type ReorderInfo struct {
	BatchID          uint64 // the batch number the packets carry (without the epoch)
	Epoch            uint64 // cyclic_sequence plans: the epoch the packets carry; else 0
	SourcePackets    int    // packets that contributed
	PacketsPerBatch  int    // slots in the aggregate
	PayloadLen       int    // bytes per slot before conversion
	AggregateLen     int    // bytes of output
	Flags            Flags  // FlagReordered | FlagReorderTimeout
	Present          []byte // bitmap: bit k set when slot k was filled (LSB first)
	Missing          int    // slots not filled (zero-filled)
	Duplicates, Late int    // packets dropped as duplicates / as late for an emitted batch
}

// MissingSlots appends the slots of the aggregate that no packet filled (zero-filled in the
// output) to dst, in increasing order, and returns it: the missing-packet query of a
// delivered batch. Slot k holds the packet whose sequence number is k modulo
// PacketsPerBatch.
func (ri *ReorderInfo) MissingSlots(dst []int) []int {
	for k := 0; k < ri.PacketsPerBatch; k++ {
		if k/8 >= len(ri.Present) || ri.Present[k/8]&(1<<(k%8)) == 0 {
			dst = append(dst, k)
		}
	}
	return dst
}

// ensure gives the burst room for n packets of nsegs segments: afterwards flow, ts, freed and
// every used segment's offsets and lengths have at least cap(flow) ≥ n elements, the capacity
// Grow and NewBurst go by. Arrays grown one by one by append (AppendPackets, AppendSegments)
// can differ in capacity (append rounds each to its own size class), and TakePackets moves
// arrays between bursts, so every one is checked here, where a burst starts a new life.
func (b *Burst) ensure(n, nsegs int) {
	if c := cap(b.flow); c < n || cap(b.ts) < c || cap(b.freed) < c {
		if c < n {
			c = max(n, 2*c)
		}
		for s := range b.segs {
			b.segs[s].off = nil
			b.segs[s].len = nil
		}
		b.flow = make([]uint32, 0, c)
		b.ts = make([]int64, 0, c)
		b.freed = make([]uint8, 0, c)
	}
	for s := 0; s < nsegs; s++ {
		if cap(b.segs[s].off) < cap(b.flow) || cap(b.segs[s].len) < cap(b.flow) {
			b.segs[s].off = make([]uint64, 0, cap(b.flow))
			b.segs[s].len = make([]uint32, 0, cap(b.flow))
		}
	}
}

// Reset empties the burst and binds it to a port, queue and segment regions (for engines).
// A pointer field is written only when its value changes: every pointer store into a heap
// object goes through the write-barrier check, and a pool's bursts come back bound to the same
// regions, with no reorder info, engine token or queue, nearly every time (two Resets a burst
// on the loopback, a fixed cost every burst pays whole). TestResetMatchesPlainReset pins it to
// the plain assignments.
func (b *Burst) Reset(port, queue int, regions []*Region, raw bool, capacity int) {
	b.port, b.queue, b.n, b.conn, b.flags = port, queue, 0, 0, 0
	if b.reorder != nil {
		b.reorder = nil
	}
	if b.Engine != nil {
		b.Engine = nil
	}
	if b.txq != nil {
		b.txq = nil
	}
	b.partial, b.lazy = false, false
	b.hash, b.hashed = b.hash[:0], b.hashed[:0]
	b.raw = raw
	// Only Reset sets a segment's region, and it leaves those from nsegs on nil: the
	// segments past both the old and the new count need no look (a burst of one segment
	// would otherwise test all config.MaxSegments of them, twice a loopback burst).
	old := b.nsegs
	b.nsegs = len(regions)
	b.ensure(capacity, b.nsegs)
	for s, r := range regions {
		if b.segs[s].region != r {
			b.segs[s].region = r
		}
	}
	for s := len(regions); s < old; s++ {
		b.segs[s].region = nil
	}
	var view []byte
	var mask0, room1, lim1, mask1, size1 uint64
	var sizeF1 float64
	if r := b.segs[0].region; r != nil && r.shift >= 0 {
		if raw && r.buf != nil {
			view, mask0 = r.buf, uint64(r.BufSize-1)
		}
		if b.nsegs == 1 {
			room1 = uint64(r.BufSize)
			lim1, mask1 = uint64(r.BufSize)+1, uint64(r.BufSize-1)
		}
	} else if r != nil && b.nsegs == 1 && r.BufSize > 0 {
		// lim1 - o&mask1 = size + 1 - o; SetPacketLen adds o's buffer start (o / size × size).
		size1, sizeF1 = uint64(r.BufSize), float64(r.BufSize)
		lim1, mask1 = size1+1, ^uint64(0)
	}
	if !sameBytes(b.view0, view) {
		b.view0 = view
	}
	b.mask0, b.room1 = mask0, room1
	b.lim1, b.mask1, b.size1, b.sizeF1 = lim1, mask1, size1, sizeF1
}

// sameBytes reports whether a and b are the same slice: both nil or neither, same start,
// length and capacity.
func sameBytes(a, b []byte) bool {
	return (a == nil) == (b == nil) && len(a) == len(b) && cap(a) == cap(b) && (cap(a) == 0 || &a[:1][0] == &b[:1][0])
}

// TxQueueOf is the TX queue whose NewBurst made the burst, nil for a burst made otherwise
// (received bursts, engines' own). Its ids are the burst's Port and Queue.
func (b *Burst) TxQueueOf() *TxQueue { return b.txq }

// Port is the port id of the burst.
func (b *Burst) Port() int { return b.port }

// Queue is the queue id of the burst.
func (b *Burst) Queue() int { return b.queue }

// Len is the number of packets.
func (b *Burst) Len() int { return b.n }

// NumSegments is the number of segments per packet (2 or more = header-data split).
func (b *Burst) NumSegments() int { return b.nsegs }

// Flags are the burst's flags.
func (b *Burst) Flags() Flags { return b.flags }

// SetFlags sets the burst's flags (for engines and reorder).
func (b *Burst) SetFlags(f Flags) { b.flags = f }

// ConnID is the socket/RDMA connection the burst belongs to (0 when none).
func (b *Burst) ConnID() uint64 { return b.conn }

// SetConnID selects the connection a TX burst goes to (socket and RDMA engines).
func (b *Burst) SetConnID(id uint64) { b.conn = id }

// IsTx reports whether the burst is a TX burst.
func (b *Burst) IsTx() bool { return b.tx }

// ReorderInfo returns the aggregate's description, or ErrInvalidParameter when the burst is
// not a reorder aggregate.
func (b *Burst) ReorderInfo() (*ReorderInfo, error) {
	if b.reorder == nil {
		return nil, fmt.Errorf("burst is not a reorder aggregate: %w", ErrInvalidParameter)
	}
	return b.reorder, nil
}

// SetReorderInfo marks the burst as a reorder aggregate (for the reorder service).
func (b *Burst) SetReorderInfo(ri *ReorderInfo) {
	b.reorder = ri
	if ri != nil {
		b.flags |= ri.Flags
	}
}

// Append adds a one-segment packet at byte off of segment 0's region, with its flow id and
// receive timestamp (0 = none), and returns its index (for engines).
func (b *Burst) Append(off uint64, length uint32, flowID uint32, tsNanos int64) int {
	b.settle()
	i := b.n
	s := &b.segs[0]
	s.off = append(s.off[:i], off)
	s.len = append(s.len[:i], length)
	b.flow = append(b.flow[:i], flowID)
	b.ts = append(b.ts[:i], tsNanos)
	b.freed = append(b.freed[:i], 0)
	b.n++
	return i
}

// Grow returns the arrays of packets Len() to Len()+k-1 of a one-segment burst — segment 0's
// offsets and lengths, flow ids and receive timestamps — for an engine to fill in one pass
// over its completions; Commit then makes the first n of them packets. Growing past the
// burst's capacity allocates (once per burst: the pool keeps the arrays). For engines.
func (b *Burst) Grow(k int) (offs []uint64, lens []uint32, flows []uint32, ts []int64) {
	b.settle() // the caller writes flows and times
	i := b.n
	if cap(b.flow) < i+k {
		b.grow1(i + k)
	}
	s := &b.segs[0]
	return s.off[i : i+k : i+k], s.len[i : i+k : i+k], b.flow[i : i+k : i+k], b.ts[i : i+k : i+k]
}

// grow1 moves a one-segment burst's arrays to a capacity of at least n, keeping its packets.
func (b *Burst) grow1(n int) {
	c := max(n, 2*cap(b.flow))
	s := &b.segs[0]
	s.off = append(make([]uint64, 0, c), s.off[:b.n]...)
	s.len = append(make([]uint32, 0, c), s.len[:b.n]...)
	b.flow = append(make([]uint32, 0, c), b.flow[:b.n]...)
	b.ts = append(make([]int64, 0, c), b.ts[:b.n]...)
	b.freed = append(make([]uint8, 0, c), b.freed[:b.n]...)
}

// Commit makes the first n entries that Grow returned packets (for engines).
func (b *Burst) Commit(n int) {
	b.settle() // (Grow did; a Commit without it keeps the stored form too)
	i := b.n
	j := i + n
	s := &b.segs[0]
	s.off, s.len = s.off[:j], s.len[:j]
	b.flow, b.ts = b.flow[:j], b.ts[:j]
	b.freed = b.freed[:j]
	clear(b.freed[i:j])
	b.n = j
}

// SegmentArrays is segment seg's offsets and lengths of every packet (for engines that read
// a burst in one pass, as a TX path does).
func (b *Burst) SegmentArrays(seg int) (offs []uint64, lens []uint32) {
	s := &b.segs[seg]
	return s.off[:b.n], s.len[:b.n]
}

// AppendSegments adds a packet with one (offset, length) per segment (for engines).
func (b *Burst) AppendSegments(offs []uint64, lens []uint32, flowID uint32, tsNanos int64) int {
	b.settle()
	i := b.n
	for s := 0; s < b.nsegs; s++ {
		b.segs[s].off = append(b.segs[s].off[:i], offs[s])
		b.segs[s].len = append(b.segs[s].len[:i], lens[s])
	}
	b.flow = append(b.flow[:i], flowID)
	b.ts = append(b.ts[:i], tsNanos)
	b.freed = append(b.freed[:i], 0)
	b.n++
	return i
}

// AppendPackets adds every packet of src at the same offsets and segment lengths, with flow
// id 0 and receive time tsNanos, and returns the bytes they hold (for engines that hand a TX
// burst's buffers on unchanged, as the loopback does: one copy per array instead of a call
// per packet). src must have as many segments as b.
func (b *Burst) AppendPackets(src *Burst, tsNanos int64) int {
	b.settle()
	i, n := b.n, src.n
	// append(x, make(...)...) extends in place (the compiler clears the new elements without
	// allocating the temporary).
	b.flow = append(b.flow[:i], make([]uint32, n)...)
	b.freed = append(b.freed[:i], make([]uint8, n)...)
	b.ts = append(b.ts[:i], make([]int64, n)...)
	total := 0
	for s := 0; s < b.nsegs; s++ {
		d, from := &b.segs[s], &src.segs[s]
		d.off = append(d.off[:i], from.off[:n]...)
		lens := from.len[:n]
		d.len = append(d.len[:i], lens...)
		if s == 0 {
			ts := b.ts[i:]
			ts = ts[:len(lens)]
			for k, l := range lens {
				ts[k] = tsNanos
				total += int(l)
			}
			continue
		}
		for _, l := range lens {
			total += int(l)
		}
	}
	if b.nsegs == 0 {
		ts := b.ts[i:]
		for k := range ts {
			ts[k] = tsNanos
		}
	}
	b.n += n
	return total
}

// TakePackets is AppendPackets for an empty burst b: instead of copying src's offsets and
// lengths it takes src's packet arrays and gives src its own (empty) ones, so a loopback
// hands a TX burst's packets to an RX burst at the cost of a few slice headers. The packets
// get flow id 0, receive time tsNanos and no freed segments, as with AppendPackets; src is
// left without packets (its caller returns its metadata). It returns the bytes the packets
// hold. When b is not empty or the two differ in segments it copies (AppendPackets). The
// arrays go between metadata pools, but each burst's set stays as Reset sized it for its
// segments, and a set never shrinks, so a warmed-up path allocates nothing. For engines.
func (b *Burst) TakePackets(src *Burst, tsNanos int64) int {
	if b.n != 0 || b.nsegs != src.nsegs || b.nsegs == 0 {
		total := b.AppendPackets(src, tsNanos)
		src.n = 0
		return total
	}
	n := src.n
	total := 0
	for s := 0; s < b.nsegs; s++ {
		d, from := &b.segs[s], &src.segs[s]
		d.off, from.off = from.off[:n], d.off[:0]
		d.len, from.len = from.len[:n], d.len[:0]
		total += sumLens(d.len)
	}
	b.flow, src.flow = src.flow[:n], b.flow[:0]
	b.ts, src.ts = src.ts[:n], b.ts[:0]
	b.freed, src.freed = src.freed[:n], b.freed[:0]
	// Flow ids 0 and every time tsNanos without writing them (lazy); no segment freed
	// without clearing freed (not partial).
	b.lazy, b.lazyTS, src.lazy = true, tsNanos, false
	b.partial = false
	b.n, src.n = n, 0
	return total
}

// settle stores the flow ids and times a lazy burst holds only as its flag (see lazy), before
// something writes either array or hands it out.
func (b *Burst) settle() {
	if b.lazy {
		b.lazy = false
		clear(b.flow[:b.n])
		fillTimes(b.ts[:b.n], b.lazyTS)
	}
}

// settleFreed makes freed[:n] say what it means before the first segment goes back on its
// own: all clear while the burst is not partial (see partial).
func (b *Burst) settleFreed() {
	if !b.partial {
		clear(b.freed[:b.n])
		b.partial = true
	}
}

// The per-packet conversions of a burst's start and end (NewBurst, Free, TakePackets) run
// over every packet of every burst. Written as plain loops they cost ~10 instructions per
// packet each: Go's shift by a variable count is a shift plus three instructions that make
// a count ≥ 64 give 0, and a loop of one store pays its increment, compare and branch per
// element. The GPU host runs this path at ~1.7× its time whenever its core's other hardware
// thread is busy (BENCHMARKS.md, issue 31 fourth round), so every instruction per packet
// counts twice there. These forms mask the count (a region's shift is < 64: buffers of
// < 2^63 bytes) and take four elements per step. Tests pin each to the plain loop.

// On amd64 with AVX2 the three loops below (and SetAllPacketLengths' check) run whole
// blocks of 8 packets as vector instructions (burstvec_amd64.s: about one instruction per
// packet instead of four to eight), the Go loops doing the rest; TestBurstVectorLoops pins
// the vector forms to the plain loops.

// indexesToOffsetsClear sets off[j] = idx[j] << sh (buffer indices to region offsets) and
// then idx[j] = 0 (NewBurst turns the index array into the length array, lengths zero) in one
// pass over the packets instead of a conversion and a clear; off must hold len(idx) elements.
func indexesToOffsetsClear(off []uint64, idx []uint32, sh uint) {
	sh &= 63
	off = off[:len(idx)]
	j := 0
	if hasVec && len(idx) >= 8 {
		j = len(idx) &^ 7
		idxToOffClearAVX2(&off[0], &idx[0], j>>3, sh)
	}
	indexesToOffsetsClearGo(off[j:], idx[j:], sh)
}

// indexesToOffsetsClearGo is indexesToOffsetsClear in Go, four packets a step; sh < 64.
func indexesToOffsetsClearGo(off []uint64, idx []uint32, sh uint) {
	sh &= 63
	off = off[:len(idx)]
	j := 0
	for ; j+4 <= len(idx); j += 4 {
		i4, o4 := (*[4]uint32)(idx[j:j+4]), (*[4]uint64)(off[j:j+4])
		a, b, c, d := i4[0], i4[1], i4[2], i4[3]
		*i4 = [4]uint32{}
		o4[0] = uint64(a) << sh
		o4[1] = uint64(b) << sh
		o4[2] = uint64(c) << sh
		o4[3] = uint64(d) << sh
	}
	for ; j < len(idx); j++ {
		o := uint64(idx[j]) << sh
		idx[j] = 0
		off[j] = o
	}
}

// offsetsToIndexes sets dst[j] = offs[j] >> sh (region offsets to buffer indices); dst
// must hold len(offs) elements.
func offsetsToIndexes(dst []uint32, offs []uint64, sh uint) {
	sh &= 63
	dst = dst[:len(offs)]
	j := 0
	if hasVec && len(offs) >= 8 {
		j = len(offs) &^ 7
		offToIdxAVX2(&dst[0], &offs[0], j>>3, sh)
	}
	offsetsToIndexesGo(dst[j:], offs[j:], sh)
}

// offsetsToIndexesGo is offsetsToIndexes in Go, four packets a step.
func offsetsToIndexesGo(dst []uint32, offs []uint64, sh uint) {
	sh &= 63
	dst = dst[:len(offs)]
	j := 0
	for ; j+4 <= len(offs); j += 4 {
		o4, d4 := (*[4]uint64)(offs[j:j+4]), (*[4]uint32)(dst[j:j+4])
		d4[0] = uint32(o4[0] >> sh)
		d4[1] = uint32(o4[1] >> sh)
		d4[2] = uint32(o4[2] >> sh)
		d4[3] = uint32(o4[3] >> sh)
	}
	for ; j < len(offs); j++ {
		dst[j] = uint32(offs[j] >> sh)
	}
}

// fillTimes sets every element of ts to v.
func fillTimes(ts []int64, v int64) {
	j := 0
	for ; j+4 <= len(ts); j += 4 {
		t4 := (*[4]int64)(ts[j : j+4])
		t4[0], t4[1], t4[2], t4[3] = v, v, v, v
	}
	for ; j < len(ts); j++ {
		ts[j] = v
	}
}

// sumLens is the sum of lens.
func sumLens(lens []uint32) int {
	if hasVec && len(lens) >= 8 {
		j := len(lens) &^ 7
		return sumLensAVX2(&lens[0], j>>3) + sumLensGo(lens[j:])
	}
	return sumLensGo(lens)
}

// sumLensGo is sumLens in Go, four at a time into two sums (one chain of dependent adds per
// packet would bound the loop at an add's latency).
func sumLensGo(lens []uint32) int {
	var a, c int
	for len(lens) >= 4 {
		a += int(lens[0]) + int(lens[2])
		c += int(lens[1]) + int(lens[3])
		lens = lens[4:]
	}
	for _, l := range lens {
		a += int(l)
	}
	return a + c
}

// AnyTimestamp reports whether some packet carries a timestamp: on a TX burst, a send time
// set with SetPacketTxTime (for engines, which then send packet by packet).
func (b *Burst) AnyTimestamp() bool {
	if b.lazy {
		// A TX burst as NewBurst made it, no send time set since (lazyTS 0), or one
		// TakePackets gave a receive time.
		return b.lazyTS != 0 && b.n > 0
	}
	// Every time or'ed together without a branch per packet: a TX burst almost never has one.
	var x int64
	ts := b.ts[:b.n]
	for len(ts) >= 4 {
		x |= ts[0] | ts[1] | ts[2] | ts[3]
		ts = ts[4:]
	}
	for _, t := range ts {
		x |= t
	}
	return x != 0
}

// Cap is how many packets the burst can hold without growing.
func (b *Burst) Cap() int { return cap(b.flow) }

func (b *Burst) valid(seg, i int) bool { return i >= 0 && i < b.n && seg >= 0 && seg < b.nsegs }

// Packet is segment 0 of packet i: the whole packet unless the queue splits headers and
// data. It is nil for device memory (use SegmentAddr) and for a bad index.
func (b *Burst) Packet(i int) []byte { return b.Segment(0, i) }

// Segment is segment seg of packet i (nil for device memory or a bad index).
func (b *Burst) Segment(seg, i int) []byte {
	if !b.valid(seg, i) {
		return nil
	}
	s := &b.segs[seg]
	if s.region == nil || s.region.buf == nil {
		return nil
	}
	o := s.off[i]
	return s.region.buf[o : o+uint64(s.len[i]) : o+uint64(s.len[i])]
}

// SegmentBuffer is the whole buffer behind segment seg of packet i from the packet's first
// byte to the end of its buffer: the room a TX packet can be written into.
func (b *Burst) SegmentBuffer(seg, i int) []byte {
	if !b.valid(seg, i) {
		return nil
	}
	s := &b.segs[seg]
	if s.region == nil || s.region.buf == nil {
		return nil
	}
	o := s.off[i]
	end := s.region.bufStart(o) + uint64(s.region.BufSize)
	return s.region.buf[o:end:end]
}

// SegmentAddr is the address of segment seg of packet i (a GPU address for device memory);
// 0 for a bad index.
func (b *Burst) SegmentAddr(seg, i int) uintptr {
	if !b.valid(seg, i) {
		return 0
	}
	s := &b.segs[seg]
	return s.region.Addr(s.off[i])
}

// SegmentOffset is the byte offset of segment seg of packet i in its region (for engines).
func (b *Burst) SegmentOffset(seg, i int) uint64 { return b.segs[seg].off[i] }

// SegmentRegion is the region segment seg's buffers come from.
func (b *Burst) SegmentRegion(seg int) *Region {
	if seg < 0 || seg >= b.nsegs {
		return nil
	}
	return b.segs[seg].region
}

// PacketLen is the logical length of packet i: the sum over its segments.
func (b *Burst) PacketLen(i int) int {
	if i < 0 || i >= b.n {
		return 0
	}
	t := 0
	for s := 0; s < b.nsegs; s++ {
		t += int(b.segs[s].len[i])
	}
	return t
}

// SegmentLen is the length of segment seg of packet i.
func (b *Burst) SegmentLen(seg, i int) int {
	if !b.valid(seg, i) {
		return 0
	}
	return int(b.segs[seg].len[i])
}

// TotalBytes is the sum of all packet lengths.
func (b *Burst) TotalBytes() int {
	t := 0
	for s := 0; s < b.nsegs; s++ {
		t += sumLens(b.segs[s].len[:b.n])
	}
	return t
}

// FlowID is the id of the flow rule packet i matched (0 when none).
func (b *Burst) FlowID(i int) uint32 {
	if i < 0 || i >= b.n || b.lazy {
		return 0
	}
	return b.flow[i]
}

// SetFlowID records packet i's flow id (for engines).
func (b *Burst) SetFlowID(i int, id uint32) {
	b.settle()
	b.flow[i] = id
}

// RSSHash is packet i's receive-side-scaling hash as the NIC computed it (Toeplitz over the
// fields its TIR selects; flow.Tuple.Hash gives the same for the same key), and whether the
// device reported one: false for engines without hardware RSS, for packets steered to a
// single queue (no hashing TIR), and where the completion had no room for it (mlx5: a
// compressed completion on a striding RQ carries the stride index instead).
func (b *Burst) RSSHash(i int) (uint32, bool) {
	if i < 0 || i >= len(b.hashed) || !b.hashed[i] {
		return 0, false
	}
	return b.hash[i], true
}

// SetRSSHash records packet i's RSS hash (for engines).
func (b *Burst) SetRSSHash(i int, h uint32) {
	if i < 0 || i >= b.n {
		return
	}
	for len(b.hashed) < b.n {
		b.hash = append(b.hash, 0)
		b.hashed = append(b.hashed, false)
	}
	b.hash[i], b.hashed[i] = h, true
}

// RxTimestamp is packet i's receive time: nanoseconds since 1970-01-01 00:00:00 UTC on
// CLOCK_REALTIME, the clock phc2sys keeps in step with a PTP grandmaster (upstream's
// "PTP-epoch nanoseconds"; PTP's own TAI timescale is CLOCK_TAI, ahead by the kernel's TAI
// offset). Every engine uses that clock; what instant it marks depends on the source:
//
//   - socket, UDP: the kernel's receive timestamp (SO_TIMESTAMPNS), when the datagram
//     reached the socket;
//   - socket, TCP: when the message's last byte was read and framed;
//   - xdp: when the worker took the packet's batch off the AF_XDP RX ring (one reading per
//     batch; veth and copy mode give no NIC time);
//   - loopback: when the TX packet came back (after its scheduled send time, if any);
//   - roce: when the receive completion was polled;
//   - reorder aggregates: the first source packet's time.
//
// ErrNotSupported when the burst carries none (one built by hand).
func (b *Burst) RxTimestamp(i int) (int64, error) {
	if i < 0 || i >= b.n {
		return 0, fmt.Errorf("packet %d of %d: %w", i, b.n, ErrInvalidParameter)
	}
	t := b.lazyTS
	if !b.lazy {
		t = b.ts[i]
	}
	if t == 0 {
		return 0, ErrNotSupported
	}
	return t, nil
}

// SetRxTimestamp records packet i's receive time (for engines).
func (b *Burst) SetRxTimestamp(i int, ns int64) {
	b.settle()
	b.ts[i] = ns
}

// SetPacketLengths sets packet i's segment lengths, one per segment.
func (b *Burst) SetPacketLengths(i int, lens ...int) error {
	// The one-segment case of power-of-two buffers first, without the loop, the error
	// formatting and a load through the region (room1); anything else, errors included,
	// takes the general path. (It cannot be inlined into the caller's loop: any call left in
	// the function, even the general path's, costs more than the compiler's inlining budget.)
	if len(lens) == 1 && b.room1 != 0 && uint(i) < uint(b.n) {
		s := &b.segs[0]
		if uint(lens[0]) <= uint(b.room1-s.off[i]&(b.room1-1)) {
			s.len[i] = uint32(lens[0])
			return nil
		}
	}
	return b.setPacketLengths(i, lens)
}

// SetPacketLen sets the length of packet i of a one-segment burst: SetPacketLengths(i, l)
// in a form the compiler inlines into the caller's per-packet loop (a variadic method with a
// general path cannot be). The checks are the same: a bad index, a burst of several segments
// (which needs one length per segment) and a length beyond the packet's buffer are refused
// with an error wrapping ErrInvalidParameter that names the packet and the length.
// (Inlining cost 80, the whole budget, with Go 1.26: `go build -gcflags=-m=2 ./engine`.)
func (b *Burst) SetPacketLen(i, l int) error {
	var lim uint64 // room + 1; 0 when the burst does not have exactly one segment
	if uint(i) < uint(b.n) {
		o := b.segs[0].off[i]
		lim = b.lim1 - o&b.mask1
		if int64(b.mask1) < 0 {
			// Buffers not a power of two (mask1 all ones, the only negative mask: the test
			// reuses the mask's load): add o's buffer start, o / size1 × size1. The
			// quotient comes from a float division, which leaves the integer registers alone
			// (an integer division ties AX and DX down, and the compiler then moves registers
			// around them on every packet of the caller's loop, this branch taken or not). It
			// is exact: o and size1 are integers below 2^53, so the division rounds to the
			// integer quotient only when it is one, and truncation gives the quotient whenever
			// o + size1 < 2^53 (a region holds at most config.MaxRegionBytes = 2^46 bytes).
			// TestSetPacketLenFloatRoom pins it to the integer division.
			lim += uint64(int64(float64(int64(o))/b.sizeF1)) * b.size1
		}
		if uint64(l) < lim {
			b.segs[0].len[i] = uint32(l)
			return nil
		}
	}
	// A value, not a call (a call costs more than the inlining budget): the message is
	// formatted only if the caller prints it.
	return &packetLenError{i: i, n: b.n, l: l, lim: lim}
}

// packetLenError is SetPacketLen's refusal of length l for packet i of a burst of n packets;
// lim is the packet's room + 1 (0 for an index out of range or a burst of several segments).
type packetLenError struct {
	i, n, l int
	lim     uint64
}

// Error says what was refused, in SetPacketLengths' terms.
func (e *packetLenError) Error() string {
	switch {
	case e.i < 0 || e.i >= e.n:
		return fmt.Sprintf("packet %d of %d: %v", e.i, e.n, ErrInvalidParameter)
	case e.lim == 0:
		return fmt.Sprintf("packet %d: one length for a burst of several segments (SetPacketLengths takes one per segment): %v", e.i, ErrInvalidParameter)
	}
	return fmt.Sprintf("packet %d: length %d exceeds the %d bytes from the packet's start to the end of its buffer: %v", e.i, e.l, e.lim-1, ErrInvalidParameter)
}

// Unwrap makes the refusal match ErrInvalidParameter (errors.Is), as SetPacketLengths' do.
func (e *packetLenError) Unwrap() error { return ErrInvalidParameter }

func (b *Burst) setPacketLengths(i int, lens []int) error {
	if i < 0 || i >= b.n || len(lens) != b.nsegs {
		return fmt.Errorf("packet %d of %d with %d lengths for %d segments: %w", i, b.n, len(lens), b.nsegs, ErrInvalidParameter)
	}
	for s, l := range lens {
		if err := b.setLen(s, i, l); err != nil {
			return err
		}
	}
	return nil
}

// SetAllPacketLengths sets the same segment lengths on every packet. A packet whose buffer
// is too small stops it with an error naming the packet (the packets before it have their
// lengths set).
func (b *Burst) SetAllPacketLengths(lens ...int) error {
	if len(lens) == 1 && b.room1 != 0 {
		// One segment of power-of-two buffers: one pass over locals (stores through b would
		// make the compiler reload b's fields for every packet). l fits the packet at offset
		// o when l < lim1 - o&mask1, that is o&mask1 < lim1 - l. A packet that does not fit
		// gets SetPacketLengths' error.
		l := lens[0]
		s := &b.segs[0]
		offs := s.off[:b.n]
		ls := s.len[:len(offs)]
		if uint64(l) >= b.lim1 {
			if len(offs) == 0 {
				return nil
			}
			return b.SetPacketLengths(0, lens...)
		}
		thr, mask := b.lim1-uint64(l), b.mask1
		k := 0
		if hasVec && len(offs) >= 8 {
			// Whole blocks of 8 that fit; the loop below finds the packet that stopped it.
			k = 8 * fillLensAVX2(&ls[0], &offs[0], len(offs)>>3, mask, thr, uint32(l))
		}
		for ; k < len(offs); k++ {
			if offs[k]&mask >= thr {
				return b.SetPacketLengths(k, lens...)
			}
			ls[k] = uint32(l)
		}
		return nil
	}
	for i := 0; i < b.n; i++ {
		if err := b.SetPacketLengths(i, lens...); err != nil {
			return err
		}
	}
	return nil
}

func (b *Burst) setLen(s, i, l int) error {
	r := b.segs[s].region
	room := r.room(b.segs[s].off[i])
	if l < 0 || l > room {
		return fmt.Errorf("segment %d of packet %d: length %d exceeds the %d-byte buffer of region %s: %w", s, i, l, room, r.Name, ErrInvalidParameter)
	}
	b.segs[s].len[i] = uint32(l)
	return nil
}

// SetLen sets one segment length (for engines; no checks).
func (b *Burst) SetLen(seg, i int, l uint32) { b.segs[seg].len[i] = l }

// FreePacket returns every segment of packet i to its region. Freeing twice is harmless.
func (b *Burst) FreePacket(i int) {
	if i < 0 || i >= b.n {
		return
	}
	for s := 0; s < b.nsegs; s++ {
		b.FreeSegment(s, i)
	}
}

// FreeSegment returns segment seg of packet i to its region (e.g. the header segment once it
// has been parsed, keeping the payload). Freeing twice is harmless.
func (b *Burst) FreeSegment(seg, i int) {
	if !b.valid(seg, i) {
		return
	}
	b.settleFreed()
	if b.freed[i]&(1<<seg) != 0 {
		return
	}
	b.freed[i] |= 1 << seg
	b.segs[seg].region.release(b.segs[seg].off[i])
}

// FreeAllSegment returns segment seg of every packet.
func (b *Burst) FreeAllSegment(seg int) {
	for i := 0; i < b.n; i++ {
		b.FreeSegment(seg, i)
	}
}

// FreeSegmentAndBurst returns segment seg of every packet and the burst's metadata, leaving
// the other segments owned by the caller (who keeps their addresses).
func (b *Burst) FreeSegmentAndBurst(seg int) {
	b.FreeAllSegment(seg)
	b.FreeMeta()
}

// FreePackets returns every not yet freed segment of every packet, keeping the metadata.
// Buffers go back to each region in bulk (one pool operation per 64 packets) unless the
// region shares buffers between packets.
func (b *Burst) FreePackets() {
	b.freePackets(true)
}

// freePackets is FreePackets; with mark false (Free, the burst's end) and nothing freed before
// (not partial), the freed flags are neither read nor set.
func (b *Burst) freePackets(mark bool) {
	if !mark && !b.partial {
		// The indexes go into the segment's own length array, dead once the burst ends, in
		// place of a scratch array on the stack: Go zeroes a local array on every call (256
		// bytes here, a fixed cost of every burst that a burst of one packet pays whole).
		// Chunks of 64 as before, so the region's pool sees the same operations.
		const chunk = 64
		for s := 0; s < b.nsegs; s++ {
			seg := &b.segs[s]
			r := seg.region
			if r.refs != nil || r.shift < 0 {
				b.settleFreed()
				b.freeSegmentMarked(s)
				continue
			}
			if r.groups != nil {
				// A queue owns the region in groups: counts per group, no indexes.
				r.groups.putOffsets(seg.off[:b.n])
				continue
			}
			sh := uint(r.shift)
			lens := seg.len[:b.n]
			for start := 0; start < b.n; start += chunk {
				offs := seg.off[start:min(start+chunk, b.n)]
				dst := lens[start : start+len(offs)]
				offsetsToIndexes(dst, offs, sh)
				r.putBulk(dst)
			}
		}
		return
	}
	b.settleFreed()
	for s := 0; s < b.nsegs; s++ {
		b.freeSegmentMarked(s)
	}
}

// freeSegmentMarked returns every not yet freed buffer of segment s, marking each freed.
func (b *Burst) freeSegmentMarked(s int) {
	var idx [64]uint32
	seg := &b.segs[s]
	r := seg.region
	if r.refs != nil {
		b.FreeAllSegment(s)
		return
	}
	bit := uint8(1) << s
	for start := 0; start < b.n; start += len(idx) {
		offs := seg.off[start:min(start+len(idx), b.n)]
		freed := b.freed[start : start+len(offs)]
		k := 0
		// k ≤ i < 64: idx[k&63] is in range without a bounds check.
		if r.shift >= 0 { // a shift instead of a division for power-of-two buffer sizes
			sh := uint(r.shift)
			for i, o := range offs {
				if f := freed[i]; f&bit == 0 {
					freed[i] = f | bit
					idx[k&63] = uint32(o >> sh)
					k++
				}
			}
		} else {
			bs := uint64(r.BufSize)
			for i, o := range offs {
				if f := freed[i]; f&bit == 0 {
					freed[i] = f | bit
					idx[k&63] = uint32(o / bs)
					k++
				}
			}
		}
		r.putBulk(idx[:k])
	}
}

// Free returns all packets and the burst's metadata. The burst must not be used afterwards.
func (b *Burst) Free() {
	b.freePackets(false)
	b.FreeMeta()
}

// FreeMeta returns only the metadata; packets not freed before stay owned by the caller
// through the addresses they kept (upstream free_rx_metadata / free_tx_metadata).
func (b *Burst) FreeMeta() {
	if b.meta != nil {
		m := b.meta
		b.meta = nil
		b.n = 0
		m.put(b)
	}
}

// Truncate keeps the first n packets, freeing the rest (for engines and reorder).
func (b *Burst) Truncate(n int) {
	for i := n; i < b.n; i++ {
		b.FreePacket(i)
	}
	if n < b.n {
		b.n = n
	}
}
