package main

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/daqiri-go/daqiri/config"
)

// TestReorderFields (issue 32 item 6): the sender fills the sequence and batch fields a
// reorder plan reads when they are not the 32-bit word at the payload start — upstream's
// seq_batch_number example reads a 10-bit sequence at bit 128 and a 2-bit batch number at
// bit 144 — leaving the bits around them alone.
func TestReorderFields(t *testing.T) {
	cfg, err := config.LoadFile("../../config/testdata/upstream/daqiri_bench_raw_tx_rx_reorder_quantize_seq_batch.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fs := reorderFields(cfg, 64)
	want := []seqField{{128, 10, 1}, {144, 2, 256}}
	if len(fs) != 2 || fs[0] != want[0] || fs[1] != want[1] {
		t.Fatalf("fields %+v, want %+v", fs, want)
	}
	// The 32-bit word at the payload start is the counter the sender writes anyway.
	c1024, err := config.LoadFile("../../config/testdata/upstream/daqiri_bench_raw_tx_rx_reorder_seq_1024.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if fs := reorderFields(c1024, 64); len(fs) != 0 {
		t.Errorf("seq at byte 64: fields %+v, want none", fs)
	}
	for _, n := range []uint64{0, 1, 255, 256, 1023, 1024, 70000} {
		p := bytes.Repeat([]byte{0xff}, 64)
		for _, f := range want {
			f.put(p, n)
		}
		seq := binary.BigEndian.Uint16(p[16:]) >> 6
		batch := p[18] >> 6
		if uint64(seq) != n%1024 || uint64(batch) != (n/256)%4 {
			t.Errorf("counter %d: seq %d batch %d, want %d and %d", n, seq, batch, n%1024, (n/256)%4)
		}
		if p[17]&0x3f != 0x3f || p[18]&0x3f != 0x3f || p[15] != 0xff || p[19] != 0xff {
			t.Errorf("counter %d: bits outside the fields changed: % x", n, p[15:20])
		}
	}
}

// TestRuntimeFlowsNothingToAdd: --runtime-flows on a file whose RX interfaces all have
// static flows is an error saying so, not a silent run.
func TestRuntimeFlowsNothingToAdd(t *testing.T) {
	var out, errb bytes.Buffer
	rc := run([]string{"--config", "../../config/testdata/upstream/daqiri_bench_raw_tx_rx.yaml", "--model-ports", "auto", "--duration", "50ms", "--quiet", "--runtime-flows"}, &out, &errb)
	if rc == 0 || !strings.Contains(errb.String(), "--runtime-flows") || !strings.Contains(errb.String(), "nothing to add") {
		t.Fatalf("rc %d, %s; want an error saying there is nothing to add", rc, errb.String())
	}
}
