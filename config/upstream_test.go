package config_test

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/daqiri-go/daqiri/config"
	"go.yaml.in/yaml/v3"
)

// upstreamEngines is the engine every interface of each upstream example resolves to; ""
// means the address is still a <placeholder>.
var upstreamEngines = map[string][]string{
	"daqiri_bench_raw_rx_multi_q.yaml":                       {""},
	"daqiri_bench_raw_rx_reorder_seq_batch.yaml":             {""},
	"daqiri_bench_raw_rx_reorder_seq_ppb.yaml":               {""},
	"daqiri_bench_raw_rx_spark_xhost.yaml":                   {"mlx5"},
	"daqiri_bench_raw_sw_loopback.yaml":                      {"loopback"},
	"daqiri_bench_raw_sw_loopback_reorder_seq_1024.yaml":     {"loopback"},
	"daqiri_bench_raw_tx_rx.yaml":                            {"", ""},
	"daqiri_bench_raw_tx_rx_4q.yaml":                         {"", ""},
	"daqiri_bench_raw_tx_rx_gre.yaml":                        {"", ""},
	"daqiri_bench_raw_tx_rx_hds.yaml":                        {"", ""},
	"daqiri_bench_raw_tx_rx_nvgre.yaml":                      {"", ""},
	"daqiri_bench_raw_tx_rx_pacing.yaml":                     {"", ""},
	"daqiri_bench_raw_tx_rx_reorder_quantize_seq_batch.yaml": {"", ""},
	"daqiri_bench_raw_tx_rx_reorder_seq_1024.yaml":           {"", ""},
	"daqiri_bench_raw_tx_rx_reorder_seq_1024_cpu.yaml":       {"", ""},
	"daqiri_bench_raw_tx_rx_spark.yaml":                      {"mlx5", "mlx5"},
	"daqiri_bench_raw_tx_rx_spark_mq.yaml":                   {"mlx5", "mlx5"},
	"daqiri_bench_raw_tx_rx_vlan.yaml":                       {"", ""},
	"daqiri_bench_raw_tx_rx_vxlan.yaml":                      {"", ""},
	"daqiri_bench_raw_tx_spark_xhost.yaml":                   {"mlx5"},
	"daqiri_bench_rdma_tx_rx.yaml":                           {"roce", "roce"},
	"daqiri_bench_rdma_tx_rx_spark.yaml":                     {"roce", "roce"},
	"daqiri_bench_rdma_tx_rx_spark_netns.yaml":               {"roce", "roce"},
	"daqiri_bench_rdma_tx_rx_spark_xhost.yaml":               {"roce", "roce"},
	"daqiri_bench_socket_tcp_tx_rx.yaml":                     {"socket", "socket"},
	"daqiri_bench_socket_tcp_tx_rx_spark_netns.yaml":         {"socket", "socket"},
	"daqiri_bench_socket_udp_tx_rx.yaml":                     {"socket", "socket"},
	"daqiri_bench_socket_udp_tx_rx_spark_netns.yaml":         {"socket", "socket"},
	"daqiri_example_dynamic_rx_flow.yaml":                    {"", ""},
	"daqiri_example_gds_write_sw_loopback.yaml":              {"loopback"},
	"daqiri_example_gds_write_tx_rx.yaml":                    {"", ""},
	"daqiri_example_pcap_writer_sw_loopback.yaml":            {"loopback"},
	"daqiri_example_pcap_writer_tx_rx.yaml":                  {"", ""},
}

// placeholderLine matches a `key: <value>` line of a template.
var placeholderLine = regexp.MustCompile(`^\s*(-\s+)?([a-z_0-9]+):\s*<[^>]*>\s*(#.*)?$`)

// daqiriLines returns the lines of the daqiri: section (1-based line → text).
func daqiriLines(t *testing.T, data []byte) map[int]string {
	t.Helper()
	out := map[int]string{}
	in := false
	for i, l := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(l, "daqiri:"):
			in = true
		case len(l) > 0 && l[0] != ' ' && l[0] != '#' && l[0] != '-':
			in = false
		}
		if in {
			out[i+1] = l
		}
	}
	return out
}

func TestUpstreamExamples(t *testing.T) {
	files, err := filepath.Glob("testdata/upstream/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 33 || len(upstreamEngines) != 33 {
		t.Fatalf("expected 33 upstream examples and 33 expectations, have %d and %d", len(files), len(upstreamEngines))
	}
	for _, f := range files {
		base := filepath.Base(f)
		t.Run(strings.TrimSuffix(base, ".yaml"), func(t *testing.T) {
			want, ok := upstreamEngines[base]
			if !ok {
				t.Fatalf("no expectation for %s", base)
			}
			c, err := config.LoadFile(f)
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			if len(c.Interfaces) != len(want) {
				t.Fatalf("%d interfaces, want %d", len(c.Interfaces), len(want))
			}
			for i := range c.Interfaces {
				got, err := c.ResolveEngine(i)
				if err != nil || got != want[i] {
					t.Errorf("interface %d (%s): engine %q, %v; want %q", i, c.Interfaces[i].Name, got, err, want[i])
				}
			}
			// Every `key: <...>` line of the daqiri section is a placeholder, and nothing else is:
			// each recorded path must point at such a line, naming the same key.
			data, _ := os.ReadFile(f)
			lines := daqiriLines(t, data)
			wantLines := map[int]string{}
			for n, l := range lines {
				if m := placeholderLine.FindStringSubmatch(l); m != nil {
					wantLines[n] = m[2]
				}
			}
			gotLines := map[int]bool{}
			for _, p := range c.Placeholders {
				e := c.Errorf(p, "x")
				key := p[strings.LastIndex(p, ".")+1:]
				if wantLines[e.Line] != key {
					t.Errorf("placeholder %s points at line %d (%q), which is not a `%s: <...>` line", p, e.Line, lines[e.Line], key)
				}
				gotLines[e.Line] = true
			}
			for n, key := range wantLines {
				if !gotLines[n] {
					t.Errorf("line %d (%s: <...>) is not in Placeholders %v", n, key, c.Placeholders)
				}
			}
			if len(c.Placeholders) != len(wantLines) {
				t.Errorf("%d placeholders, want %d", len(c.Placeholders), len(wantLines))
			}
			// Application sections decode (loosely, into generic values) and are the file's other
			// top-level keys.
			var tops []string
			for _, l := range strings.Split(string(data), "\n") {
				if m := regexp.MustCompile(`^([a-z_]+):`).FindStringSubmatch(l); m != nil && m[1] != "daqiri" {
					tops = append(tops, m[1])
				}
			}
			if !slices.Equal(c.AppNames(), tops) {
				t.Errorf("AppNames %v, want %v", c.AppNames(), tops)
			}
			for _, name := range c.AppNames() {
				var v any
				if err := c.App(name, &v); err != nil || v == nil {
					t.Errorf("App(%s): %v, %v", name, v, err)
				}
			}
			// Round trip: the encoded configuration parses back to the same Config.
			out, err := yaml.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			c2, err := config.Parse(out, "roundtrip")
			if err != nil {
				t.Fatalf("re-parse of encoded config: %v\n%s", err, out)
			}
			if len(c2.Placeholders) != len(c.Placeholders) {
				t.Errorf("round trip: placeholders %v, want %v", c2.Placeholders, c.Placeholders)
			}
			if !sameConfig(c, c2) {
				t.Errorf("round trip changed the configuration:\n%s", out)
			}
		})
	}
}

// sameConfig compares the schema content of two configurations (not where they came from).
func sameConfig(a, b *config.Config) bool {
	x, y := *a, *b
	x.Placeholders, y.Placeholders = nil, nil
	x.Warnings, y.Warnings = nil, nil
	xa, _ := yaml.Marshal(&x)
	ya, _ := yaml.Marshal(&y)
	return string(xa) == string(ya) && reflect.DeepEqual(stripped(x), stripped(y))
}

// stripped drops the unexported source information by copying the exported fields.
func stripped(c config.Config) config.Config {
	return config.Config{
		Version: c.Version, MasterCore: c.MasterCore, StreamType: c.StreamType, Engine: c.Engine,
		Loopback: c.Loopback, Debug: c.Debug, LogLevel: c.LogLevel, TxMetaBuffers: c.TxMetaBuffers,
		RxMetaBuffers: c.RxMetaBuffers, MemoryRegions: c.MemoryRegions, Interfaces: c.Interfaces,
	}
}
