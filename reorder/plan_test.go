package reorder

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
)

func TestReadField(t *testing.T) {
	r := newRand()
	for i := 0; i < 20000; i++ {
		p := make([]byte, r.IntN(12)+1)
		for j := range p {
			p[j] = byte(r.Uint32())
		}
		f := config.BitField{Width: r.IntN(32) + 1}
		if f.Width > len(p)*8 {
			f.Width = len(p) * 8
		}
		f.Offset = r.IntN(len(p)*8 - f.Width + 1)
		v, ok := readField(p, f)
		if !ok || uint64(v) != bigField(p, f) {
			t.Fatalf("readField(%x, %+v) = %#x, %v; math/big says %#x", p, f, v, ok, bigField(p, f))
		}
		w := uint64(r.Uint32()) & (1<<uint(f.Width) - 1)
		putField(p, f, w)
		if v, _ := readField(p, f); uint64(v) != w {
			t.Fatalf("after putField %#x: readField = %#x", w, v)
		}
	}
	// Bad input: fields that do not fit.
	for _, f := range []config.BitField{{Offset: 1, Width: 32}, {Offset: 0, Width: 0}, {Offset: 0, Width: 33}, {Offset: -1, Width: 8}, {Offset: 30, Width: 3}} {
		if _, ok := readField(make([]byte, 4), f); ok {
			t.Errorf("readField on 4 bytes accepted %+v", f)
		}
	}
}

// scenario is a random plan configuration and the traffic that goes with it.
type scenario struct {
	rc       config.Reorder
	conv     Conversion
	ppb      int
	keys     uint64 // distinct batch numbers
	seqBits  int
	offset   int
	payload  int // bytes per payload (whole samples)
	inFlight int
}

func randomScenario(r interface {
	IntN(int) int
	Uint32() uint32
}) scenario {
	var s scenario
	s.inFlight = r.IntN(4) + 1
	// Room for the fields: sequence number in bits [0,40), batch number in [40,80).
	s.offset = 10 + r.IntN(20)
	seq := config.BitField{Width: r.IntN(32) + 1}
	if r.IntN(2) == 0 {
		// seq_batch_number: at least 4×in-flight batch numbers so late packets are recognisable.
		bw := r.IntN(6) + 4
		seq.Width = max(seq.Width, bw)
		seq.Width = min(seq.Width, bw+8) // at most 256 slots
		s.ppb = 1 << (seq.Width - bw)
		s.keys = 1 << bw
		batch := config.BitField{Offset: 40 + r.IntN(40-bw+1), Width: bw}
		seq.Offset = r.IntN(40 - seq.Width + 1)
		s.rc.Method = config.ReorderMethod{Kind: config.MethodSeqBatchNumber, Seq: seq, Batch: batch}
	} else {
		seq.Width = max(seq.Width, 5)
		shift := r.IntN(min(seq.Width-4, 8) + 1) // keep ≥ 16 batch numbers, ≤ 256 slots
		s.ppb = 1 << shift
		s.keys = 1 << (seq.Width - shift)
		seq.Offset = r.IntN(40 - seq.Width + 1)
		s.rc.Method = config.ReorderMethod{Kind: config.MethodSeqPacketsPerBatch, Seq: seq, PacketsPerBatch: s.ppb}
	}
	s.seqBits = seq.Width
	s.rc.Name = "prop"
	s.rc.Type = config.ReorderCPU
	s.rc.PayloadByteOffset = s.offset
	s.rc.FlowIDs = []int{7}
	if k := r.IntN(len(inTypes)*len(outTypes) + 4); k < len(inTypes)*len(outTypes) {
		end := config.EndianHost
		if r.IntN(2) == 0 {
			end = config.EndianNetwork
		}
		s.rc.DataTypes = &config.DataTypes{Input: inTypes[k/len(outTypes)], Output: outTypes[k%len(outTypes)], Endianness: end}
	}
	s.conv, _ = NewConversion(s.rc.DataTypes)
	unit := 1
	if s.conv.Active() && s.conv.InBits() > 8 {
		unit = s.conv.InBits() / 8
	}
	s.payload = unit * (r.IntN(40) + 1)
	return s
}

// frame builds the packet for batch number key (unwrapped), slot k.
func (s *scenario) frame(key uint64, slot int, payload []byte) []byte {
	p := make([]byte, s.offset+len(payload))
	for j := 0; j < s.offset; j++ {
		p[j] = byte(j*31 + 7) // header filler the plan must ignore
	}
	seq := (key*uint64(s.ppb) + uint64(slot)) & (1<<uint(s.seqBits) - 1)
	putField(p, s.rc.Method.Seq, seq)
	if s.rc.Method.Kind == config.MethodSeqBatchNumber {
		putField(p, s.rc.Method.Batch, key&(s.keys-1))
	}
	copy(p[s.offset:], payload)
	return p
}

// parse recovers the unwrapped batch number (at most keys-1 after base) and slot of a frame
// the test built.
func (s *scenario) parse(p []byte, base uint64) (uint64, int) {
	seq := bigField(p, s.rc.Method.Seq)
	slot := int(seq) & (s.ppb - 1)
	var key uint64
	if s.rc.Method.Kind == config.MethodSeqBatchNumber {
		key = bigField(p, s.rc.Method.Batch)
	} else {
		key = seq / uint64(s.ppb)
	}
	return base + (key-base)&(s.keys-1), slot
}

// expected is what one batch should become.
type expected struct {
	key     uint64 // batch id as reported
	present []bool
	dups    int
	data    [][]byte // converted payload per slot, nil when missing
}

// TestPlanProperties sends random batches through random plans: batch numbers that wrap
// around, packets shuffled across up to MaxInFlight neighbouring batches, lost and duplicated
// packets, every conversion in both byte orders; and checks each aggregate's flags, batch id,
// bitmap, counts and bytes against a model, and that every buffer comes back.
func TestPlanProperties(t *testing.T) {
	r := newRand()
	for trial := 0; trial < 60; trial++ {
		s := randomScenario(r)
		name := fmt.Sprintf("%d/%s/ppb%d/keys%d/w%d", trial, s.rc.Method.Kind, s.ppb, s.keys, s.inFlight)
		if dt := s.rc.DataTypes; dt != nil {
			name += fmt.Sprintf("/%s-%s-%s", dt.Input, dt.Output, dt.Endianness)
		}
		t.Run(name, func(t *testing.T) {
			outLen := s.conv.OutputLen(s.payload)
			g := newRig(t, rigSpec{srcBufs: 4096, srcSize: s.offset + s.payload + r.IntN(8),
				outBufs: 2*s.inFlight + 1, outSize: s.ppb * s.conv.OutputLen(s.conv.InputBytes(s.offset+s.payload+8)),
				meta: 64, batch: 32})
			if g.out.BufSize < s.ppb*outLen {
				t.Fatalf("rig: output buffers too small")
			}
			p, err := g.svc.Add(g.q, &s.rc, g.out, Options{MaxInFlight: s.inFlight})
			if err != nil {
				t.Fatal(err)
			}
			g.svc.Start()

			// Batches in groups of inFlight; packets shuffled within a group, so at most
			// inFlight batches are ever open and no batch is evicted while it still has
			// packets to come.
			nBatches := int(s.keys) + 3 + r.IntN(8) // more than one round: batch numbers wrap
			nBatches = min(nBatches, 4096/max(s.ppb, 1)/2+2)
			start := uint64(r.Uint32())
			want := map[uint64]*expected{}
			var order []uint64
			totalDups, totalLost, totalLate, totalSent := 0, 0, 0, 0
			seen := map[uint64]bool{}
			delivered := 0
			// check matches each aggregate with the batch it came from and frees it.
			check := func(got []*engine.Burst) {
				t.Helper()
				for _, b := range got {
					info, err := b.ReorderInfo()
					if err != nil {
						t.Fatal(err)
					}
					// Batch ids repeat after a wrap; match by id and bitmap among unseen batches.
					var e *expected
					var key uint64
					for _, k := range order {
						c := want[k]
						if !seen[k] && c.key == info.BatchID && bitmapEqual(info.Present, c.present) {
							e, key = c, k
							break
						}
					}
					if e == nil {
						t.Fatalf("aggregate with batch id %d and bitmap %x matches no batch sent", info.BatchID, info.Present)
					}
					seen[key] = true
					delivered++
					checkAggregate(t, b, info, e, s.ppb, outLen, s.payload)
					b.Free()
				}
			}
			for b0 := 0; b0 < nBatches; b0 += s.inFlight {
				var group []pkt
				for b := b0; b < min(b0+s.inFlight, nBatches); b++ {
					key := start + uint64(b)
					e := &expected{key: key & (s.keys - 1), present: make([]bool, s.ppb), data: make([][]byte, s.ppb)}
					// Some batches lose everything but one packet; most lose a few.
					lossRate := []int{0, 0, 10, 50}[r.IntN(4)]
					for slot := 0; slot < s.ppb; slot++ {
						payload := make([]byte, s.payload)
						for j := range payload {
							payload[j] = byte(r.Uint32())
						}
						copies := 1
						if r.IntN(100) < lossRate && slot != s.ppb-1 {
							copies = 0
							totalLost++
						} else if r.IntN(10) == 0 {
							copies = 2
							e.dups++
							totalDups++
						}
						if copies > 0 {
							e.present[slot] = true
							e.data[slot] = refEncode(refSamples(payload, s.conv.In, s.conv.Big), s.conv.Out)
							if !s.conv.Active() {
								e.data[slot] = payload
							}
						}
						for c := 0; c < copies; c++ {
							group = append(group, pkt{data: s.frame(key, slot, payload), flow: 7})
						}
					}
					want[key] = e
					order = append(order, key)
				}
				r.Shuffle(len(group), func(i, j int) { group[i], group[j] = group[j], group[i] })
				totalSent += len(group)
				// Model: a copy is a duplicate while its batch is incomplete, and late once the
				// batch is complete (delivered the moment its last slot arrived).
				filled := map[uint64]map[int]bool{}
				for _, gp := range group {
					key, slot := s.parse(gp.data, start+uint64(b0))
					f := filled[key]
					if f == nil {
						f = map[int]bool{}
						filled[key] = f
					}
					switch {
					case len(f) == s.ppb:
						want[key].dups--
						totalDups--
						totalLate++
					case f[slot]:
					default:
						f[slot] = true
					}
				}
				g.send(group, r.IntN(32)+1)
				check(g.drain())
			}
			g.svc.Flush()
			check(g.drain())
			if delivered != nBatches {
				t.Fatalf("%d aggregates for %d batches", delivered, nBatches)
			}
			st := p.Stats()
			if st.Duplicates != uint64(totalDups) || st.Late != uint64(totalLate) || st.Malformed != 0 || st.NoBuffers != 0 {
				t.Fatalf("stats %+v; want %d duplicates, %d late and nothing else dropped", st, totalDups, totalLate)
			}
			if st.Received != uint64(totalSent) {
				t.Fatalf("stats %+v; want %d packets received", st, totalSent)
			}
			if st.MissingSlots != uint64(totalLost) || st.Aggregates != uint64(nBatches) {
				t.Fatalf("stats %+v; want %d missing slots in %d aggregates", st, totalLost, nBatches)
			}
			if d := g.q.Stats.Drops(engine.DropDuplicate); d != uint64(totalDups) {
				t.Fatalf("queue drop reason duplicate = %d, want %d", d, totalDups)
			}
			g.checkReturned()
		})
	}
}

func bitmapEqual(bm []byte, present []bool) bool {
	if len(bm) != (len(present)+7)/8 {
		return false
	}
	for k, p := range present {
		if (bm[k/8]>>(k%8)&1 == 1) != p {
			return false
		}
	}
	for k := len(present); k < len(bm)*8; k++ {
		if bm[k/8]>>(k%8)&1 == 1 {
			return false
		}
	}
	return true
}

func checkAggregate(t *testing.T, b *engine.Burst, info *engine.ReorderInfo, e *expected, ppb, outLen, payload int) {
	t.Helper()
	n := 0
	for _, p := range e.present {
		if p {
			n++
		}
	}
	wantFlags := engine.FlagReordered
	if n < ppb {
		wantFlags |= engine.FlagReorderTimeout
	}
	if b.Flags() != wantFlags || info.Flags != wantFlags {
		t.Fatalf("batch %d: flags %#x / info %#x, want %#x", e.key, b.Flags(), info.Flags, wantFlags)
	}
	if info.SourcePackets != n || info.Missing != ppb-n || info.PacketsPerBatch != ppb || info.Duplicates != e.dups {
		t.Fatalf("batch %d: info %+v; want %d packets, %d missing, %d duplicates", e.key, info, n, ppb-n, e.dups)
	}
	if info.PayloadLen != payload || info.AggregateLen != ppb*outLen {
		t.Fatalf("batch %d: payload %d aggregate %d, want %d and %d", e.key, info.PayloadLen, info.AggregateLen, payload, ppb*outLen)
	}
	if b.Len() != 1 || b.PacketLen(0) != ppb*outLen {
		t.Fatalf("batch %d: burst of %d packets, %d bytes", e.key, b.Len(), b.PacketLen(0))
	}
	data := b.Packet(0)
	zero := make([]byte, outLen)
	for slot := 0; slot < ppb; slot++ {
		got := data[slot*outLen : (slot+1)*outLen]
		want := e.data[slot]
		if want == nil {
			want = zero
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("batch %d slot %d: %x, want %x", e.key, slot, got, want)
		}
	}
}

// simple builds a rig with a seq_packets_per_batch plan: 16-bit sequence number at byte 0,
// payload from byte 4.
func simple(t *testing.T, ppb, inFlight int, timeout time.Duration, outBufs int) (*rig, *Plan, *scenario) {
	t.Helper()
	s := &scenario{ppb: ppb, seqBits: 16, offset: 4, payload: 8, keys: 1 << 16 / uint64(ppb)}
	s.rc = config.Reorder{Name: "simple", Type: config.ReorderCPU, PayloadByteOffset: 4, FlowIDs: []int{1},
		Method: config.ReorderMethod{Kind: config.MethodSeqPacketsPerBatch, Seq: config.BitField{Offset: 0, Width: 16}, PacketsPerBatch: ppb}}
	g := newRig(t, rigSpec{srcBufs: 256, srcSize: 64, outBufs: outBufs, outSize: ppb * 60, meta: 16, batch: 16})
	p, err := g.svc.Add(g.q, &s.rc, g.out, Options{MaxInFlight: inFlight, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	g.svc.Start()
	return g, p, s
}

func payloadOf(key uint64, slot int) []byte {
	return []byte{byte(key), byte(key >> 8), byte(slot), 0xaa, 0xbb, 0xcc, 0xdd, 0xee}
}

func (s *scenario) pkts(key uint64, slots ...int) []pkt {
	var ps []pkt
	for _, k := range slots {
		ps = append(ps, pkt{data: s.frame(key, k, payloadOf(key, k)), flow: 1})
	}
	return ps
}

func TestLateAndDuplicate(t *testing.T) {
	g, p, s := simple(t, 4, 2, 0, 4)
	g.send(s.pkts(10, 0, 1, 2, 2, 3), 8) // complete, with one duplicate
	g.send(s.pkts(10, 1), 8)             // late: batch 10 was delivered
	g.send(s.pkts(11, 0, 1, 2, 3), 8)
	g.send(s.pkts(11+s.keys-64, 0), 8) // late: 64 batches behind the newest
	g.send(s.pkts(9, 2), 8)            // older, but never seen: overtaken, so it starts
	bs := g.drain()
	if len(bs) != 2 {
		t.Fatalf("%d aggregates, want 2", len(bs))
	}
	i0, _ := bs[0].ReorderInfo()
	i1, _ := bs[1].ReorderInfo()
	if i0.BatchID != 10 || i0.Duplicates != 1 || i0.Missing != 0 || i0.Flags != engine.FlagReordered {
		t.Fatalf("first aggregate %+v", i0)
	}
	if i1.BatchID != 11 || i1.Late != 1 {
		t.Fatalf("second aggregate %+v: want batch 11 reporting the late packet before it", i1)
	}
	for _, b := range bs {
		b.Free()
	}
	g.svc.Flush()
	bs = g.drain()
	if len(bs) != 1 {
		t.Fatalf("%d aggregates after Flush, want batch 9", len(bs))
	}
	if i, _ := bs[0].ReorderInfo(); i.BatchID != 9 || i.Missing != 3 || i.Present[0] != 4 {
		t.Fatalf("batch 9: %+v", i)
	}
	bs[0].Free()
	st := p.Stats()
	if st.Late != 2 || st.Duplicates != 1 || g.q.Stats.Drops(engine.DropLate) != 2 || g.q.Stats.Drops(engine.DropDuplicate) != 1 {
		t.Fatalf("stats %+v, queue late %d dup %d", st, g.q.Stats.Drops(engine.DropLate), g.q.Stats.Drops(engine.DropDuplicate))
	}
	g.checkReturned()
}

// TestOutOfOrderBatches: an older batch that was never seen may still start while newer ones
// are in flight; once the window is full, a newer batch flushes the oldest.
func TestOutOfOrderBatchesAndEviction(t *testing.T) {
	g, p, s := simple(t, 4, 2, 0, 4)
	g.send(s.pkts(21, 0), 8)
	g.send(s.pkts(20, 3), 8) // older, new: opens
	g.send(s.pkts(22, 1), 8) // third batch with two in flight: 20 is flushed
	g.send(s.pkts(20, 0), 8) // late now
	bs := g.drain()
	if len(bs) != 1 {
		t.Fatalf("%d aggregates, want 1", len(bs))
	}
	info, _ := bs[0].ReorderInfo()
	if info.BatchID != 20 || info.Flags != engine.FlagReordered|engine.FlagReorderTimeout || info.Missing != 3 || info.Present[0] != 0x8 {
		t.Fatalf("evicted aggregate %+v", info)
	}
	bs[0].Free()
	g.svc.Flush()
	for _, b := range g.drain() {
		b.Free()
	}
	st := p.Stats()
	if st.Evicted != 1 || st.Late != 1 || st.Aggregates != 3 {
		t.Fatalf("stats %+v", st)
	}
	g.checkReturned()
}

// TestTimeoutFlushWithoutPolling: a partial batch is delivered by the service's timer with
// no further traffic and nobody polling in the meantime.
func TestTimeoutFlushWithoutPolling(t *testing.T) {
	g, _, s := simple(t, 8, 4, 2*time.Millisecond, 4)
	g.send(s.pkts(3, 5, 1), 8)
	var b *engine.Burst
	for i := 0; i < 5000 && b == nil; i++ { // up to 5 s: generous, not a timing assertion
		time.Sleep(time.Millisecond)
		b, _ = g.q.Next()
	}
	if b == nil {
		t.Fatal("no aggregate: the timer did not flush the partial batch")
	}
	info, _ := b.ReorderInfo()
	if info.Flags != engine.FlagReordered|engine.FlagReorderTimeout || info.Missing != 6 || info.Present[0] != 0x22 || info.BatchID != 3 {
		t.Fatalf("timed-out aggregate %+v", info)
	}
	data := b.Packet(0)
	if !bytes.Equal(data[5*8:6*8], payloadOf(3, 5)) || !bytes.Equal(data[0:8], make([]byte, 8)) {
		t.Fatalf("slots: %x", data)
	}
	b.Free()
	g.checkReturned()
}

func TestOutputExhaustionIsCounted(t *testing.T) {
	g, p, s := simple(t, 4, 4, 0, 1)
	g.send(s.pkts(1, 0), 8)
	g.send(s.pkts(2, 0, 1), 8) // no second output buffer
	if st := p.Stats(); st.NoBuffers != 2 || g.q.Stats.Drops(engine.DropNoPacketBuffers) != 2 {
		t.Fatalf("stats %+v", st)
	}
	g.send(s.pkts(1, 1, 2, 3), 8)
	bs := g.drain()
	if len(bs) != 1 {
		t.Fatalf("%d aggregates", len(bs))
	}
	bs[0].Free()
	g.checkReturned()
}

func TestMetadataExhaustionIsCounted(t *testing.T) {
	s := &scenario{ppb: 2, seqBits: 8, offset: 1, payload: 4, keys: 128}
	s.rc = config.Reorder{Name: "m", Type: config.ReorderCPU, PayloadByteOffset: 1, FlowIDs: []int{1},
		Method: config.ReorderMethod{Kind: config.MethodSeqPacketsPerBatch, Seq: config.BitField{Width: 8}, PacketsPerBatch: 2}}
	g := newRig(t, rigSpec{srcBufs: 8, srcSize: 16, outBufs: 2, outSize: 64, meta: 1, batch: 4})
	p, err := g.svc.Add(g.q, &s.rc, g.out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	g.svc.Start()
	g.send(s.pkts(0, 0, 1), 4) // the incoming burst holds the only metadata block
	if st := p.Stats(); st.NoMetadata != 1 || g.q.Stats.Drops(engine.DropNoBurstBuffers) != 2 {
		t.Fatalf("stats %+v, queue drops %d", st, g.q.Stats.Drops(engine.DropNoBurstBuffers))
	}
	g.checkReturned()
}

func TestMalformedAndResized(t *testing.T) {
	g, p, s := simple(t, 4, 2, 0, 4)
	g.send([]pkt{{data: []byte{0}, flow: 1}}, 8)          // too short for the sequence number
	g.send([]pkt{{data: s.frame(5, 0, nil), flow: 1}}, 8) // no payload
	g.send([]pkt{{data: s.frame(5, 0, []byte{1, 2, 3, 4, 5, 6, 7, 8}), flow: 1}}, 8)
	g.send([]pkt{{data: s.frame(5, 1, []byte{9, 9, 9}), flow: 1}}, 8)                // shorter: padded
	g.send([]pkt{{data: s.frame(5, 2, bytes.Repeat([]byte{7}, 12)), flow: 1}}, 8)    // longer: cut
	g.send([]pkt{{data: s.frame(5, 3, []byte{1, 1, 1, 1, 1, 1, 1, 1}), flow: 1}}, 8) //
	bs := g.drain()
	if len(bs) != 1 {
		t.Fatalf("%d aggregates", len(bs))
	}
	d := bs[0].Packet(0)
	if !bytes.Equal(d[8:16], []byte{9, 9, 9, 0, 0, 0, 0, 0}) || !bytes.Equal(d[16:24], bytes.Repeat([]byte{7}, 8)) {
		t.Fatalf("aggregate %x", d)
	}
	bs[0].Free()
	if st := p.Stats(); st.Malformed != 2 || st.Resized != 2 || g.q.Stats.Drops(engine.DropMalformed) != 2 {
		t.Fatalf("stats %+v", st)
	}
	g.checkReturned()

	// Payloads that are not whole samples are malformed.
	s2 := *s
	s2.rc.DataTypes = &config.DataTypes{Input: config.TypeInt16, Output: config.TypeFP32}
	g2 := newRig(t, rigSpec{srcBufs: 16, srcSize: 64, outBufs: 2, outSize: 4 * 120, meta: 8, batch: 8})
	p2, err := g2.svc.Add(g2.q, &s2.rc, g2.out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	g2.svc.Start()
	g2.send([]pkt{{data: s2.frame(1, 0, []byte{1, 2, 3}), flow: 1}}, 8)
	if st := p2.Stats(); st.Malformed != 1 {
		t.Fatalf("odd int16 payload: stats %+v", st)
	}
	g2.checkReturned()
}

// TestFewBatchNumbers: with one or two batch numbers nothing can be late; a batch number
// whose batch was delivered starts the next batch.
func TestFewBatchNumbers(t *testing.T) {
	for _, keysBits := range []int{0, 1} {
		t.Run(fmt.Sprint(1<<keysBits), func(t *testing.T) {
			ppb := 4
			s := &scenario{ppb: ppb, seqBits: 2 + keysBits, offset: 1, payload: 8, keys: 1 << keysBits}
			s.rc = config.Reorder{Name: "few", Type: config.ReorderCPU, PayloadByteOffset: 1, FlowIDs: []int{1},
				Method: config.ReorderMethod{Kind: config.MethodSeqPacketsPerBatch, Seq: config.BitField{Offset: 8 - s.seqBits, Width: s.seqBits}, PacketsPerBatch: ppb}}
			g := newRig(t, rigSpec{srcBufs: 64, srcSize: 16, outBufs: 4, outSize: ppb * 15, meta: 16, batch: 8})
			p, err := g.svc.Add(g.q, &s.rc, g.out, Options{MaxInFlight: 1})
			if err != nil {
				t.Fatal(err)
			}
			g.svc.Start()
			r := newRand()
			for key := uint64(0); key < 9; key++ {
				slots := r.Perm(ppb)
				g.send(s.pkts(key, slots...), 3)
				bs := g.drain()
				if len(bs) != 1 {
					t.Fatalf("batch %d: %d aggregates", key, len(bs))
				}
				info, _ := bs[0].ReorderInfo()
				if info.Missing != 0 || info.BatchID != key&(s.keys-1) {
					t.Fatalf("batch %d: %+v", key, info)
				}
				for k := 0; k < ppb; k++ {
					if got := bs[0].Packet(0)[k*8 : k*8+8]; !bytes.Equal(got, payloadOf(key, k)) {
						t.Fatalf("batch %d slot %d: %x", key, k, got)
					}
				}
				bs[0].Free()
			}
			if st := p.Stats(); st.Late != 0 || st.Complete != 9 {
				t.Fatalf("stats %+v", st)
			}
			g.checkReturned()
		})
	}
}

// TestRouting: two plans on one queue take their flows; other packets pass through as an
// ordinary burst, in order, with nothing lost.
func TestRouting(t *testing.T) {
	g := newRig(t, rigSpec{srcBufs: 64, srcSize: 64, outBufs: 4, outSize: 4 * 60, meta: 16, batch: 16})
	mk := func(name string, flow int) (*Plan, *scenario) {
		s := &scenario{ppb: 2, seqBits: 16, offset: 4, payload: 8, keys: 1 << 15}
		s.rc = config.Reorder{Name: name, Type: config.ReorderCPU, PayloadByteOffset: 4, FlowIDs: []int{flow},
			Method: config.ReorderMethod{Kind: config.MethodSeqPacketsPerBatch, Seq: config.BitField{Width: 16}, PacketsPerBatch: 2}}
		p, err := g.svc.Add(g.q, &s.rc, g.out, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return p, s
	}
	pa, sa := mk("a", 1)
	pb, sb := mk("b", 2)
	dup := sa.rc
	dup.Name = "c"
	if _, err := g.svc.Add(g.q, &dup, g.out, Options{}); err == nil || !strings.Contains(err.Error(), "flow id 1") {
		t.Fatalf("second plan for flow 1: %v", err)
	}
	g.svc.Start()
	var in []pkt
	for i, p := range append(sa.pkts(0, 1, 0), sb.pkts(0, 0, 1)...) {
		p.flow = uint32(1 + i/2)
		in = append(in, p, pkt{data: []byte{byte(i), 1, 2, 3}, flow: 3})
	}
	g.send(in, 16)
	bs := g.drain()
	if len(bs) != 3 {
		t.Fatalf("%d bursts, want 2 aggregates and 1 passed through", len(bs))
	}
	var pass *engine.Burst
	aggs := 0
	for _, b := range bs {
		if _, err := b.ReorderInfo(); errors.Is(err, engine.ErrInvalidParameter) {
			pass = b
		} else {
			aggs++
		}
	}
	if pass == nil || aggs != 2 || pass.Len() != 4 {
		t.Fatalf("passed-through burst %v, %d aggregates", pass, aggs)
	}
	for i := 0; i < 4; i++ {
		if d := pass.Packet(i); d[0] != byte(i) || pass.FlowID(i) != 3 {
			t.Fatalf("passed-through packet %d: %x flow %d", i, d, pass.FlowID(i))
		}
	}
	for _, b := range bs {
		b.Free()
	}
	if pa.Stats().Complete != 1 || pb.Stats().Complete != 1 {
		t.Fatalf("plan stats %+v %+v", pa.Stats(), pb.Stats())
	}
	g.checkReturned()
}

func TestCloseReturnsEverything(t *testing.T) {
	g, _, s := simple(t, 8, 4, time.Hour, 4)
	g.send(s.pkts(1, 0, 1), 8)
	g.send(s.pkts(2, 3), 8)
	if err := g.svc.Close(); err != nil {
		t.Fatal(err)
	}
	if d := g.q.Stats.Drops(engine.DropClosed); d != 3 {
		t.Fatalf("closed drops %d, want 3", d)
	}
	if g.q.Intercept != nil {
		t.Fatal("Intercept left installed")
	}
	g.checkReturned()
	if err := g.svc.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestPlanBadInput(t *testing.T) {
	g := newRig(t, rigSpec{srcBufs: 4, srcSize: 64, outBufs: 2, outSize: 256, meta: 4, batch: 4})
	base := config.Reorder{Name: "bad", Type: config.ReorderCPU, PayloadByteOffset: 4, FlowIDs: []int{1},
		Method: config.ReorderMethod{Kind: config.MethodSeqPacketsPerBatch, Seq: config.BitField{Width: 8}, PacketsPerBatch: 4}}
	for _, c := range []struct {
		name string
		mod  func(*config.Reorder)
		opt  Options
		want string
	}{
		{"output too small", func(r *config.Reorder) { r.Method.PacketsPerBatch = 8 }, Options{}, "buf_size"},
		{"ppb not a power of two", func(r *config.Reorder) { r.Method.PacketsPerBatch = 3 }, Options{}, "power of two"},
		{"ppb too large", func(r *config.Reorder) { r.Method.Seq.Width = 1 }, Options{}, "divides"},
		{"seq width 0", func(r *config.Reorder) { r.Method.Seq.Width = 0 }, Options{}, "1..32"},
		{"seq width 33", func(r *config.Reorder) { r.Method.Seq.Width = 33 }, Options{}, "1..32"},
		{"batch wider than seq", func(r *config.Reorder) {
			r.Method = config.ReorderMethod{Kind: config.MethodSeqBatchNumber, Seq: config.BitField{Width: 4}, Batch: config.BitField{Offset: 8, Width: 5}}
		}, Options{}, "wider"},
		{"ppb disagrees", func(r *config.Reorder) {
			r.Method = config.ReorderMethod{Kind: config.MethodSeqBatchNumber, Seq: config.BitField{Width: 4}, Batch: config.BitField{Offset: 8, Width: 2}, PacketsPerBatch: 8}
		}, Options{}, "disagrees"},
		{"unknown method", func(r *config.Reorder) { r.Method.Kind = "by_magic" }, Options{}, "unknown method"},
		{"offset past buffer", func(r *config.Reorder) { r.PayloadByteOffset = 64 }, Options{}, "payload_byte_offset"},
		{"negative offset", func(r *config.Reorder) { r.PayloadByteOffset = -1 }, Options{}, "payload_byte_offset"},
		{"bad data type", func(r *config.Reorder) { r.DataTypes = &config.DataTypes{Input: "int5", Output: config.TypeFP32} }, Options{}, "int5"},
		{"bad type", func(r *config.Reorder) { r.Type = "fpga" }, Options{}, "reorder_type"},
		{"in-flight", func(*config.Reorder) {}, Options{MaxInFlight: MaxInFlightLimit + 1}, "in-flight"},
		{"timeout", func(*config.Reorder) {}, Options{Timeout: -time.Second}, "timeout"},
	} {
		rc := base
		c.mod(&rc)
		if _, err := g.svc.Add(g.q, &rc, g.out, c.opt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one mentioning %q", c.name, err, c.want)
		}
	}
	if _, err := g.svc.Add(g.q, &base, nil, Options{}); err == nil {
		t.Error("nil output region accepted")
	}
	// A cpu plan cannot write into memory the CPU cannot address.
	dev, err := engine.NewRegion(&config.MemoryRegion{Name: "dev", Kind: config.KindDevice, NumBufs: 2, BufSize: 256}, gpuOnly{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.svc.Add(g.q, &base, dev, Options{}); err == nil || !strings.Contains(err.Error(), "device memory") {
		t.Errorf("cpu plan into device memory: %v", err)
	}
}

// gpuOnly stands in for device memory: no CPU view.
type gpuOnly struct{}

func (gpuOnly) Bytes() []byte { return nil }
func (gpuOnly) Addr() uintptr { return 0x7f0000000000 }
func (gpuOnly) Close() error  { return nil }

// TestOnePlanLeavesOtherFlows (issue 19 item 3): a queue with exactly one plan used to hand
// that plan every packet, whatever its flow. Packets of flows outside the plan's flow_ids
// reach the application as an ordinary burst, in order, none lost.
func TestOnePlanLeavesOtherFlows(t *testing.T) {
	g := newRig(t, rigSpec{srcBufs: 64, srcSize: 64, outBufs: 4, outSize: 4 * 60, meta: 16, batch: 16})
	s := &scenario{ppb: 2, seqBits: 16, offset: 4, payload: 8, keys: 1 << 15}
	s.rc = config.Reorder{Name: "a", Type: config.ReorderCPU, PayloadByteOffset: 4, FlowIDs: []int{1},
		Method: config.ReorderMethod{Kind: config.MethodSeqPacketsPerBatch, Seq: config.BitField{Width: 16}, PacketsPerBatch: 2}}
	p, err := g.svc.Add(g.q, &s.rc, g.out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	g.svc.Start()
	var in []pkt
	for i, q := range s.pkts(0, 0, 1) {
		q.flow = 1
		in = append(in, q, pkt{data: []byte{byte(i), 1, 2, 3, 4, 5, 6, 7}, flow: 5})
	}
	g.send(in, 16)
	bs := g.drain()
	var pass *engine.Burst
	aggs := 0
	for _, b := range bs {
		if _, err := b.ReorderInfo(); errors.Is(err, engine.ErrInvalidParameter) {
			pass = b
		} else {
			aggs++
		}
	}
	if pass == nil || aggs != 1 || pass.Len() != 2 {
		t.Fatalf("passed-through burst %v, %d aggregates; want 2 packets of flow 5 and 1 aggregate", pass, aggs)
	}
	for i := 0; i < 2; i++ {
		if d := pass.Packet(i); d[0] != byte(i) || pass.FlowID(i) != 5 {
			t.Fatalf("passed-through packet %d: %x flow %d", i, d, pass.FlowID(i))
		}
	}
	for _, b := range bs {
		b.Free()
	}
	if st := p.Stats(); st.Complete != 1 || st.Malformed != 0 {
		t.Fatalf("plan stats %+v", st)
	}
	g.checkReturned()
}
