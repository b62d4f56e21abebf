package integration

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
)

// TestReorderUpstreamLoopbackExample opens upstream's daqiri_bench_raw_sw_loopback_reorder
// example (raw stream, software loopback, a cpu plan of 1024 packets per batch with a 32-bit
// sequence number at byte 64) through daqiri.Open, shrunk to host memory, sends batches of
// frames with shuffled and partly dropped sequence numbers through TX, and checks that each
// batch comes back through RxBurst as one aggregate with the right bitmap and bytes: the
// whole path from YAML through the session's reorder hook.
func TestReorderUpstreamLoopbackExample(t *testing.T) {
	cfg, err := config.LoadFile("../config/testdata/upstream/daqiri_bench_raw_sw_loopback_reorder_seq_1024.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for i := range cfg.MemoryRegions {
		mr := &cfg.MemoryRegions[i]
		mr.Kind = config.KindHost // the example asks for hugepages; the test needs none
		if mr.NumBufs > 4096 {
			mr.NumBufs = 4096
		} else {
			mr.NumBufs = 4
		}
	}
	cfg.LogLevel = "error"
	cfg.MemoryRegions[2].NumBufs = 8
	// No timeout: whether this machine sends a batch within 1 ms must not matter. Incomplete
	// batches wait for FlushReorder (or for newer batches needing their place).
	cfg.Interfaces[0].RX.Queues[0].TimeoutUs = 0
	s, err := daqiri.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	port, err := s.Port("loopback_ports")
	if err != nil {
		t.Fatal(err)
	}
	const (
		ppb     = 1024
		hdr     = 64
		payload = 1000
		batches = 5
	)
	r := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	first := r.Uint32() &^ (ppb - 1)
	body := func(seq uint32, j int) byte { return byte(seq*131 + uint32(j)*7) }
	sent := make([][]bool, batches)
	got := map[uint32]bool{}
	check := func(b *daqiri.Burst) {
		defer b.Free()
		info, err := b.ReorderInfo()
		if err != nil {
			t.Fatalf("a burst that is not an aggregate: %v", err)
		}
		k := int(uint32(info.BatchID) - first/ppb)
		if k < 0 || k >= batches || got[uint32(k)] {
			t.Fatalf("unexpected aggregate for batch %d", info.BatchID)
		}
		got[uint32(k)] = true
		if info.PayloadLen != payload || info.AggregateLen != ppb*payload {
			t.Fatalf("batch %d: %+v", k, info)
		}
		data := b.Packet(0)
		missing := 0
		for slot := 0; slot < ppb; slot++ {
			cell := data[slot*payload : (slot+1)*payload]
			if bit := info.Present[slot/8]>>(slot%8)&1 == 1; bit != sent[k][slot] {
				t.Fatalf("batch %d slot %d: bitmap %v, sent %v", k, slot, bit, sent[k][slot])
			}
			if !sent[k][slot] {
				missing++
				if !bytes.Equal(cell, make([]byte, payload)) {
					t.Fatalf("batch %d slot %d: missing slot not zero-filled", k, slot)
				}
				continue
			}
			seq := first + uint32(k*ppb+slot)
			if binary.BigEndian.Uint32(cell) != seq {
				t.Fatalf("batch %d slot %d holds sequence number %d", k, slot, binary.BigEndian.Uint32(cell))
			}
			for j := 4; j < payload; j++ {
				if cell[j] != body(seq, j) {
					t.Fatalf("batch %d slot %d byte %d: %#x, want %#x", k, slot, j, cell[j], body(seq, j))
				}
			}
		}
		complete := missing == 0
		if info.Missing != missing || (b.Flags()&daqiri.FlagReorderTimeout == 0) != complete {
			t.Fatalf("batch %d: info %+v, %d missing", k, info, missing)
		}
	}
	poll := func() {
		for i := 0; i < 1000; i++ {
			b, err := s.RxBurst(port, 0)
			if errors.Is(err, daqiri.ErrNotReady) {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			check(b)
		}
	}
	total := 0
	for k := 0; k < batches; k++ {
		sent[k] = make([]bool, ppb)
		var seqs []uint32
		for _, p := range r.Perm(ppb) {
			if k%2 == 1 && r.IntN(20) == 0 {
				continue // odd batches lose about 5%
			}
			sent[k][p] = true
			seqs = append(seqs, first+uint32(k*ppb+p))
			total++
		}
		for len(seqs) > 0 {
			n := min(len(seqs), 256)
			tb, err := s.TxBurst(port, 0, n)
			if err != nil {
				t.Fatal(err)
			}
			for i, seq := range seqs[:n] {
				buf := tb.SegmentBuffer(0, i)
				clear(buf[:hdr])
				binary.BigEndian.PutUint32(buf[hdr:], seq)
				for j := 4; j < payload; j++ {
					buf[hdr+j] = body(seq, j)
				}
				if err := tb.SetPacketLengths(i, hdr+payload); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Send(tb); err != nil {
				t.Fatal(err)
			}
			seqs = seqs[n:]
		}
		poll()
	}
	// Loopback delivers in Send's thread, so every packet has reached the plan by now.
	if st, _ := s.ReorderStats(port, "rx_reorder_seq_1024"); st.Received != uint64(total) {
		t.Fatalf("plan received %d of %d packets", st.Received, total)
	}
	if err := s.FlushReorder(); err != nil {
		t.Fatal(err)
	}
	poll()
	if len(got) != batches {
		st, _ := s.ReorderStats(port, "rx_reorder_seq_1024")
		t.Fatalf("%d of %d batches arrived; plan %+v", len(got), batches, st)
	}
	st, err := s.ReorderStats(port, "rx_reorder_seq_1024")
	if err != nil || st.Duplicates+st.Late+st.Malformed+st.NoBuffers+st.NoMetadata != 0 {
		t.Fatalf("plan stats %+v, %v", st, err)
	}
}
