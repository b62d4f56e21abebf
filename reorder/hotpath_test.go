package reorder

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
)

// TestFastPathMatchesSlowPath feeds the same random traffic — shuffled batches, losses,
// duplicates, late packets, payloads cut short or too long, packets too short for the fields,
// every conversion — to two plans, one taking addRun's fast path and one sending every packet
// through add, and checks that both deliver the same aggregates (bytes and ReorderInfo) and
// count the same.
func TestFastPathMatchesSlowPath(t *testing.T) {
	r := newRand()
	for trial := 0; trial < 40; trial++ {
		s := randomScenario(r)
		t.Run(fmt.Sprint(trial), func(t *testing.T) {
			spec := rigSpec{srcBufs: 1024, srcSize: s.offset + s.payload + 16,
				outBufs: 2*s.inFlight + 1, outSize: s.ppb * s.conv.OutputLen(s.conv.InputBytes(s.offset+s.payload+16)), meta: 64, batch: 32}
			var rigs [2]*rig
			var plans [2]*Plan
			for k := range rigs {
				rigs[k] = newRig(t, spec)
				p, err := rigs[k].svc.Add(rigs[k].q, &s.rc, rigs[k].out, Options{MaxInFlight: s.inFlight})
				if err != nil {
					t.Fatal(err)
				}
				p.slowOnly = k == 1
				plans[k] = p
				rigs[k].svc.Start()
			}
			start := uint64(r.Uint32())
			nBatches := int(s.keys) + 3 + r.IntN(8)
			nBatches = min(nBatches, 1024/max(s.ppb, 1)/2+2)
			var traffic []pkt
			for b := 0; b < nBatches; b++ {
				for slot := 0; slot < s.ppb; slot++ {
					n := s.payload
					switch r.IntN(20) {
					case 0:
						n = r.IntN(s.payload + 16) // cut short, longer, odd or empty
					case 1:
						continue // lost
					}
					payload := make([]byte, n)
					for j := range payload {
						payload[j] = byte(r.Uint32())
					}
					f := s.frame(start+uint64(b), slot, payload)
					if r.IntN(50) == 0 {
						f = f[:r.IntN(len(f)+1)] // maybe too short for the fields
					}
					traffic = append(traffic, pkt{data: f, flow: 7})
					if r.IntN(15) == 0 {
						traffic = append(traffic, pkt{data: f, flow: 7})
					}
				}
			}
			// Shuffle within windows of a few batches: some packets arrive late.
			span := (s.inFlight + 1) * s.ppb
			for lo := 0; lo < len(traffic); lo += span {
				hi := min(lo+span, len(traffic))
				r.Shuffle(hi-lo, func(i, j int) { traffic[lo+i], traffic[lo+j] = traffic[lo+j], traffic[lo+i] })
			}
			for lo := 0; lo < len(traffic); {
				n := min(r.IntN(32)+1, len(traffic)-lo)
				var got [2][]*engine.Burst
				for k, g := range rigs {
					g.send(traffic[lo:lo+n], n)
					got[k] = g.drain()
				}
				lo += n
				if lo == len(traffic) {
					for k, g := range rigs {
						g.svc.Flush()
						got[k] = append(got[k], g.drain()...)
					}
				}
				if len(got[0]) != len(got[1]) {
					t.Fatalf("fast path delivered %d aggregates, slow path %d", len(got[0]), len(got[1]))
				}
				for j := range got[0] {
					a, b := got[0][j], got[1][j]
					ia, _ := a.ReorderInfo()
					ib, _ := b.ReorderInfo()
					if fmt.Sprintf("%+v", *ia) != fmt.Sprintf("%+v", *ib) || a.Flags() != b.Flags() {
						t.Fatalf("aggregate %d: fast %+v, slow %+v", j, *ia, *ib)
					}
					if !bytes.Equal(a.Packet(0), b.Packet(0)) {
						t.Fatalf("aggregate %d (batch %d): bytes differ", j, ia.BatchID)
					}
					a.Free()
					b.Free()
				}
			}
			if a, b := plans[0].Stats(), plans[1].Stats(); a != b {
				t.Fatalf("stats: fast %+v, slow %+v", a, b)
			} else if a.Packets == 0 {
				t.Fatalf("nothing placed: %+v", a)
			}
			for _, g := range rigs {
				g.checkReturned()
			}
		})
	}
}

// TestHotPathDoesNotAllocate: once every output buffer has been used, feeding a plan and
// taking its aggregates allocates nothing, for copies, conversions, and a queue whose
// packets are split between plans and passed through.
func TestHotPathDoesNotAllocate(t *testing.T) {
	const ppb = 64
	for _, dt := range []*config.DataTypes{nil,
		{Input: config.TypeInt16, Output: config.TypeFP32, Endianness: config.EndianNetwork},
		{Input: config.TypeInt4, Output: config.TypeBF16},
		{Input: config.TypeInt16, Output: config.TypeFP16}} {
		for _, routed := range []bool{false, true} {
			name := "copy"
			if dt != nil {
				name = fmt.Sprintf("%s-%s", dt.Input, dt.Output)
			}
			if routed {
				name += "/routed"
			}
			t.Run(name, func(t *testing.T) {
				c, _ := NewConversion(dt)
				g := newRig(t, rigSpec{srcBufs: 4 * ppb, srcSize: 64 + 256, outBufs: 4, outSize: ppb * c.OutputLen(256), meta: 64, batch: 32})
				rc := &config.Reorder{Name: "a", Type: config.ReorderCPU, PayloadByteOffset: 64, FlowIDs: []int{1}, DataTypes: dt,
					Method: config.ReorderMethod{Kind: config.MethodSeqPacketsPerBatch, Seq: config.BitField{Width: 32}, PacketsPerBatch: ppb}}
				if _, err := g.svc.Add(g.q, rc, g.out, Options{MaxInFlight: 2}); err != nil {
					t.Fatal(err)
				}
				if routed {
					rc2 := *rc
					rc2.Name, rc2.FlowIDs = "b", []int{2}
					if _, err := g.svc.Add(g.q, &rc2, g.out, Options{MaxInFlight: 1}); err != nil {
						t.Fatal(err)
					}
				}
				g.svc.Start()
				perm := newRand().Perm(ppb)
				seq := uint32(0)
				batch := func() {
					for i := 0; i < ppb; {
						b, err := g.q.NewBurst()
						if err != nil {
							t.Fatal(err)
						}
						for k := 0; k < 32 && i < ppb; k, i = k+1, i+1 {
							idx, _ := g.src.Get()
							binary.BigEndian.PutUint32(g.src.Buf(idx), seq+uint32(perm[i]))
							flow := uint32(1)
							if routed && k%8 == 7 {
								flow = 3 // no plan: passed through
							}
							b.Append(uint64(idx)*uint64(g.src.BufSize), 64+256, flow, 0)
						}
						g.q.Deliver(b)
					}
					seq += ppb
					for b, ok := g.q.Next(); ok; b, ok = g.q.Next() {
						b.Free()
					}
				}
				for range 8 {
					batch() // every output buffer and its ReorderInfo used once
				}
				if a := testing.AllocsPerRun(50, batch); a != 0 {
					t.Fatalf("%.1f allocations per batch of %d packets", a, ppb)
				}
				g.svc.Flush()
				for b, ok := g.q.Next(); ok; b, ok = g.q.Next() {
					b.Free()
				}
				g.checkReturned()
			})
		}
	}
}
