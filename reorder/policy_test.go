package reorder

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
)

// TestMissingActionDrop: under missing_action drop an incomplete batch, flushed by Flush
// (timeout) or evicted, is dropped whole and counted, never delivered; its late packets stay
// late; complete batches pass; every buffer comes back.
func TestMissingActionDrop(t *testing.T) {
	g := newRig(t, rigSpec{srcBufs: 256, srcSize: 64, outBufs: 4, outSize: 4 * 60, meta: 16, batch: 16})
	s := &scenario{ppb: 4, seqBits: 16, offset: 4, payload: 8, keys: 1 << 14}
	s.rc = config.Reorder{Name: "drop", Type: config.ReorderCPU, PayloadByteOffset: 4, FlowIDs: []int{1}, MissingAction: config.MissingDrop,
		Method: config.ReorderMethod{Kind: config.MethodSeqPacketsPerBatch, Seq: config.BitField{Width: 16}, PacketsPerBatch: 4}}
	p, err := g.svc.Add(g.q, &s.rc, g.out, Options{MaxInFlight: 2})
	if err != nil {
		t.Fatal(err)
	}
	g.svc.Start()
	g.send(s.pkts(10, 0, 1, 2, 3), 8) // complete
	g.send(s.pkts(11, 0, 2), 8)       // incomplete
	g.send(s.pkts(12, 1), 8)
	g.send(s.pkts(13, 3), 8) // evicts 11: dropped
	g.send(s.pkts(11, 1), 8) // late: 11 counts as done
	g.svc.Flush()            // 12 and 13 incomplete: dropped
	bs := g.drain()
	if len(bs) != 1 {
		t.Fatalf("%d aggregates, want only the complete batch 10", len(bs))
	}
	if i, _ := bs[0].ReorderInfo(); i.BatchID != 10 || i.Missing != 0 || len(i.MissingSlots(nil)) != 0 {
		t.Fatalf("aggregate %+v", i)
	}
	bs[0].Free()
	st := p.Stats()
	if st.Dropped != 3 || st.Aggregates != 1 || st.Incomplete != 0 || st.Late != 1 || st.Packets != 4 {
		t.Fatalf("stats %+v", st)
	}
	if n := g.q.Stats.Drops(engine.DropIncomplete); n != 4 {
		t.Fatalf("queue counted %d packets as incomplete, want 4 (2 + 1 + 1)", n)
	}
	if engine.DropIncomplete.String() != "incomplete" {
		t.Fatalf("reason label %q", engine.DropIncomplete)
	}
	g.checkReturned()
}

// TestMissingActionPassthrough: the default delivers incomplete batches zero-filled, and the
// missing-packet query names exactly the slots that did not arrive.
func TestMissingActionPassthrough(t *testing.T) {
	g, _, s := simple(t, 16, 2, 0, 4)
	s.rc.MissingAction = config.MissingPassthrough
	g.send(s.pkts(5, 0, 3, 4, 9, 15), 8)
	g.svc.Flush()
	bs := g.drain()
	if len(bs) != 1 {
		t.Fatalf("%d aggregates", len(bs))
	}
	info, _ := bs[0].ReorderInfo()
	got := fmt.Sprint(info.MissingSlots(nil))
	if got != "[1 2 5 6 7 8 10 11 12 13 14]" || info.Missing != 11 || info.Flags&engine.FlagReorderTimeout == 0 {
		t.Fatalf("missing slots %s, info %+v", got, info)
	}
	if d := bs[0].Packet(0); !bytes.Equal(d[1*8:2*8], make([]byte, 8)) || !bytes.Equal(d[3*8:4*8], payloadOf(5, 3)) {
		t.Fatalf("slots: %x", d)
	}
	bs[0].Free()
	g.checkReturned()
}

// cyclicScenario: a 4-bit sequence, 4 slots per batch (4 batch numbers), an 8-bit epoch in
// byte 2 of the header.
func cyclicScenario(t *testing.T, epoch bool) (*rig, *Plan, func(ep, seq int) pkt) {
	t.Helper()
	g := newRig(t, rigSpec{srcBufs: 256, srcSize: 64, outBufs: 8, outSize: 4 * 60, meta: 16, batch: 16})
	rc := config.Reorder{Name: "cyc", Type: config.ReorderCPU, PayloadByteOffset: 4, FlowIDs: []int{1},
		Method: config.ReorderMethod{Kind: config.MethodSeqPacketsPerBatch, Seq: config.BitField{Offset: 4, Width: 4}, PacketsPerBatch: 4}}
	if epoch {
		rc.Cyclic = &config.CyclicSequence{Epoch: config.BitField{Offset: 16, Width: 8}}
	}
	p, err := g.svc.Add(g.q, &rc, g.out, Options{MaxInFlight: 4})
	if err != nil {
		t.Fatal(err)
	}
	g.svc.Start()
	return g, p, func(ep, seq int) pkt {
		d := []byte{byte(seq & 15), 0, byte(ep), 0, byte(ep), byte(seq), 0xee, 0xee}
		return pkt{data: d, flow: 1}
	}
}

// TestCyclicSequenceEpoch: the sequence wraps every 16 packets. Without an epoch a late
// packet of the previous cycle lands in the new cycle's batch; with one it never does — it is
// late when its batch was delivered, or gets its own aggregate of its own epoch. A burst in
// which the sequence wraps mid-batch (the sender restarted its cycle in the middle of a
// batch) yields two aggregates, one per epoch, never one mixed batch.
func TestCyclicSequenceEpoch(t *testing.T) {
	describe := func(bs []*engine.Burst) string {
		var out []string
		for _, b := range bs {
			i, _ := b.ReorderInfo()
			d := b.Packet(0)
			var slots []string
			for k := 0; k < 4; k++ {
				if i.Present[0]&(1<<k) != 0 {
					slots = append(slots, fmt.Sprintf("%d:e%d", k, d[k*4]))
				}
			}
			out = append(out, fmt.Sprintf("e%d/b%d[%s]", i.Epoch, i.BatchID, strings.Join(slots, " ")))
			b.Free()
		}
		return strings.Join(out, " ")
	}
	run := func(epoch bool) (string, Stats) {
		g, p, mk := cyclicScenario(t, epoch)
		var cycle0 []pkt
		for seq := 0; seq < 16; seq++ {
			if seq != 9 { // batch 2 of epoch 0 waits for its slot 1
				cycle0 = append(cycle0, mk(0, seq))
			}
		}
		g.send(cycle0, 16)
		g.send([]pkt{mk(1, 0), mk(1, 1)}, 8) // epoch 1 starts: batch 0
		g.send([]pkt{mk(0, 9)}, 8)           // the late packet of epoch 0 (batch 2)
		g.send([]pkt{mk(1, 2), mk(1, 3)}, 8)
		g.svc.Flush()
		res := describe(g.drain())
		g.checkReturned()
		return res, p.Stats()
	}
	without, _ := run(false)
	with, st := run(true)
	// Batches 0, 1, 3 of epoch 0 are complete at once; batch 2 of epoch 0 is evicted when the
	// fifth batch starts (four in flight) or flushed later.
	t.Logf("without epoch: %s", without)
	t.Logf("with epoch:    %s", with)
	if !strings.Contains(without, "b2[1:e0]") {
		t.Fatalf("without an epoch the late packet was expected to start a wrong batch 2 of the new cycle: %s", without)
	}
	const want = "e0/b0[0:e0 1:e0 2:e0 3:e0] e0/b1[0:e0 1:e0 2:e0 3:e0] e0/b3[0:e0 1:e0 2:e0 3:e0] e0/b2[0:e0 1:e0 2:e0 3:e0] e1/b0[0:e1 1:e1 2:e1 3:e1]"
	if with != want || st.Late != 0 || st.Complete != 5 {
		t.Fatalf("with an epoch:\n got %s\nwant %s\n(stats %+v)", with, want, st)
	}

	// The sequence restarts in the middle of a batch: seq 4, 5 of epoch 3, then seq 6, 7
	// of epoch 4 — the same batch number in two cycles.
	g, _, mk := cyclicScenario(t, true)
	g.send([]pkt{mk(3, 4), mk(3, 5), mk(4, 6), mk(4, 7)}, 8)
	g.svc.Flush()
	if got := describe(g.drain()); got != "e3/b1[0:e3 1:e3] e4/b1[2:e4 3:e4]" {
		t.Fatalf("wrap mid-batch: %s", got)
	}
	g.checkReturned()
}

// TestPolicyBadInput: plans refuse an unknown missing_action and epochs that do not fit.
func TestPolicyBadInput(t *testing.T) {
	g := newRig(t, rigSpec{srcBufs: 16, srcSize: 64, outBufs: 2, outSize: 4 * 60})
	base := config.Reorder{Name: "bad", Type: config.ReorderCPU, PayloadByteOffset: 4, FlowIDs: []int{1},
		Method: config.ReorderMethod{Kind: config.MethodSeqPacketsPerBatch, Seq: config.BitField{Width: 30}, PacketsPerBatch: 4}}
	for _, c := range []struct {
		mod  func(*config.Reorder)
		want string
	}{
		{func(r *config.Reorder) { r.MissingAction = "keep" }, `unknown missing_action "keep"`},
		{func(r *config.Reorder) {
			r.Cyclic = &config.CyclicSequence{Epoch: config.BitField{Offset: 40, Width: 0}}
		}, "cyclic_sequence epoch field at bit 40, 0 bits wide"},
		{func(r *config.Reorder) {
			r.Cyclic = &config.CyclicSequence{Epoch: config.BitField{Offset: 40, Width: 8}}
		}, "8 epoch bits and 28 batch-number bits make a 36-bit batch key"},
		// Issue 30 item 6: the epoch inside the 30 sequence bits (0..29).
		{func(r *config.Reorder) {
			r.Method.PacketsPerBatch = 1 << 26
			r.Cyclic = &config.CyclicSequence{Epoch: config.BitField{Offset: 24, Width: 4}}
		}, "cyclic_sequence epoch bits 24..27 overlap the sequence or batch number bits"},
	} {
		rc := base
		c.mod(&rc)
		if _, err := g.svc.Add(g.q, &rc, g.out, Options{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", rc, err, c.want)
		}
	}
}
