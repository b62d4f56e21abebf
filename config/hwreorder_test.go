package config_test

import (
	"strings"
	"testing"

	"github.com/daqiri-go/daqiri/config"
	"go.yaml.in/yaml/v3"
)

// hwBase is the raw base with its reorder plan on hardware reorder (upstream #290's keys).
var hwBase = strings.Replace(rawBase, "          reorder_type: cpu\n", "          reorder_type: cpu\n          reorder_engine: hw\n          cyclic_sequence: true\n", 1)

// TestHWReorderKeys: reorder_engine and the boolean cyclic_sequence decode, survive a round
// trip through Encode, and leave software plans as they were.
func TestHWReorderKeys(t *testing.T) {
	c, err := config.Parse([]byte(hwBase), "hw.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := c.Interfaces[0].RX.Reorders[0]
	if r.Engine != config.ReorderEngineHW || !r.CyclicSequence || r.Cyclic != nil {
		t.Fatalf("reorder_engine %q cyclic_sequence %v (map %v), want hw, true, no map", r.Engine, r.CyclicSequence, r.Cyclic)
	}
	out, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := config.Parse(out, "again.yaml")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if r2 := c2.Interfaces[0].RX.Reorders[0]; r2.Engine != r.Engine || r2.CyclicSequence != r.CyclicSequence {
		t.Fatalf("after a round trip: reorder_engine %q cyclic_sequence %v", r2.Engine, r2.CyclicSequence)
	}
	c, err = config.Parse([]byte(rawBase), "sw.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if r := c.Interfaces[0].RX.Reorders[0]; r.Engine != "" || r.CyclicSequence {
		t.Fatalf("software plan: reorder_engine %q cyclic_sequence %v", r.Engine, r.CyclicSequence)
	}
}

// TestBadHWReorder: what hardware reorder cannot do is refused naming the key.
func TestBadHWReorder(t *testing.T) {
	const p = "interfaces[0].rx.reorder_configs[0]"
	const m = p + ".method.seq_packets_per_batch"
	runBad(t, []badCase{
		{"reorder_engine fpga", hwBase, []string{"reorder_engine: hw", "reorder_engine: fpga #!"},
			[]string{p + ".reorder_engine: invalid reorder_engine \"fpga\" (valid: sw, hw)"}},
		{"no cyclic_sequence", hwBase, []string{"          cyclic_sequence: true\n", "", "        - name: r0\n", "        - name: r0 #!\n"},
			[]string{p + ".cyclic_sequence: reorder_engine: hw requires cyclic_sequence: true"}},
		{"cyclic_sequence false", hwBase, []string{"cyclic_sequence: true", "cyclic_sequence: false #!"},
			[]string{p + ".cyclic_sequence: reorder_engine: hw requires cyclic_sequence: true"}},
		{"cyclic_sequence not a bool", hwBase, []string{"cyclic_sequence: true", "cyclic_sequence: maybe #!"},
			[]string{p + ".cyclic_sequence: must be true or false"}},
		{"epoch form", hwBase, []string{"cyclic_sequence: true", "cyclic_sequence: {epoch: {bit_offset: 480, bit_width: 8}} #!"},
			[]string{p + ".cyclic_sequence: reorder_engine: hw matches only the sequence field, not an epoch"}},
		{"too many slots", hwBase, []string{"packets_per_batch: 1024", "packets_per_batch: 4096 #!", "batch_size: 1024", "batch_size: 4096", "buf_size: 2097152", "buf_size: 16777216"},
			[]string{m + ".packets_per_batch: 4096 slots: reorder_engine: hw installs one steering rule per slot, at most 2048"}},
		{"field in two words", hwBase, []string{"bit_offset: 512", "bit_offset: 516", "              sequence_number:\n", "              sequence_number: #!\n"},
			[]string{m + ".sequence_number: bits 516..547 span two 32-bit words"}},
		{"field in the Ethernet header", hwBase, []string{"bit_offset: 512", "bit_offset: 64 #!"},
			[]string{m + ".sequence_number.bit_offset: bit 64 lies in the Ethernet header"}},
		{"field past the sample range", hwBase, []string{"bit_offset: 512", "bit_offset: 2200 #!"},
			[]string{m + ".sequence_number.bit_offset: byte 275: the flex parser samples bytes 14..265"}},
		{"seq_batch_number", hwBase, []string{"          method:\n            seq_packets_per_batch:\n              sequence_number:\n                bit_offset: 512\n                bit_width: 32\n              packets_per_batch: 1024\n",
			"          method: #!\n            seq_batch_number:\n              sequence_number: {bit_offset: 128, bit_width: 10}\n              batch_number: {bit_offset: 144, bit_width: 2}\n"},
			[]string{p + ".method: reorder_engine: hw takes method seq_packets_per_batch"}},
		{"conversion", hwBase, []string{"          flow_ids: [10]\n", "          flow_ids: [10]\n          data_types: {input_type: int32, output_type: fp32} #!\n"},
			[]string{p + ".data_types: reorder_engine: hw places the received bytes as they are"}},
		{"two flows", hwBase, []string{"flow_ids: [10]", "flow_ids: [10, 11] #!", "            ids: [0, 1]\n", "            ids: [0]\n"},
			[]string{p + ".flow_ids: reorder_engine: hw takes one flow"}},
	})
}
