package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, defaultConfig, 0o644)
	var out, errb bytes.Buffer
	if rc := run([]string{"--validate", good}, &out, &errb); rc != 0 || !strings.Contains(out.String(), "valid") {
		t.Fatalf("valid config: rc %d, out %q, err %q", rc, out.String(), errb.String())
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, bytes.Replace(defaultConfig, []byte("batch_size: 256"), []byte("batch_size: 0"), 1), 0o644)
	out.Reset()
	errb.Reset()
	rc := run([]string{"--validate", bad}, &out, &errb)
	msg := errb.String()
	if rc != 1 || !strings.Contains(msg, "bad.yaml:") || !strings.Contains(msg, "interfaces[0].rx.queues[0].batch_size") {
		t.Fatalf("broken config: rc %d, stderr %q", rc, msg)
	}
	if rc := run([]string{"--validate", filepath.Join(dir, "missing.yaml")}, &out, &errb); rc != 1 {
		t.Fatalf("missing file: rc %d", rc)
	}
	if rc := run([]string{"--mode", "sideways"}, &out, &errb); rc != 2 {
		t.Fatalf("bad flag value: rc %d", rc)
	}
}

// TestFlagBounds (issue 30 item 5): a negative payload, a negative, NaN or infinite rate
// and a negative linger are refused (exit 2) while parsing, before any configuration is read
// or anything opens (the configuration named does not exist: reading it would exit 1); the
// bench section's payload_size, rate_gbps and window are held to the same bounds.
func TestFlagBounds(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--payload", "-5"}, "--payload must be between 0 (the default) and 1073741824 bytes, got -5"},
		{[]string{"--payload", "2000000000"}, "--payload must be between 0"},
		{[]string{"--rate", "-1"}, "--rate must be a number of Gb/s between 0 (uncapped) and 100000, got -1"},
		{[]string{"--rate", "NaN"}, "got NaN"},
		{[]string{"--rate", "+Inf"}, "got +Inf"},
		{[]string{"--metrics-linger", "-1s"}, "--metrics-linger must be ≥ 0"},
	} {
		var out, errb bytes.Buffer
		if rc := run(append(c.args, "--config", missing), &out, &errb); rc != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: rc %d, stderr %q; want 2 and %q", c.args, rc, errb.String(), c.want)
		}
	}
	for _, c := range []struct{ old, new, want string }{
		{"payload_size: 8000", "payload_size: 8000\n  rate_gbps: .nan", "bench.rate_gbps must be a number of Gb/s between 0 (uncapped) and 100000, got NaN"},
		{"payload_size: 8000", "payload_size: -5", "bench.payload_size must be between 0"},
		{"window: 4096", "window: -1", "bench.window must be ≥ 0"},
	} {
		p := filepath.Join(t.TempDir(), "c.yaml")
		os.WriteFile(p, bytes.Replace(defaultConfig, []byte(c.old), []byte(c.new), 1), 0o644)
		var out, errb bytes.Buffer
		if rc := run([]string{"--config", p, "--duration", "1ms", "--quiet"}, &out, &errb); rc != 1 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%q: rc %d, stderr %q; want 1 and %q", c.new, rc, errb.String(), c.want)
		}
	}
}

// TestShortRunJSON runs the embedded default briefly and checks the JSON result's fields and
// its accounting.
func TestShortRunJSON(t *testing.T) {
	var out, errb bytes.Buffer
	if rc := run([]string{"--duration", "300ms", "--json"}, &out, &errb); rc != 0 {
		t.Fatalf("rc %d: %s", rc, errb.String())
	}
	var res map[string]any
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s", err, out.String())
	}
	for _, k := range []string{"tx_packets", "rx_packets", "dropped_packets", "tx_gbps", "rx_gbps"} {
		if _, ok := res[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	tx, rx, dr := res["tx_packets"].(float64), res["rx_packets"].(float64), res["dropped_packets"].(float64)
	if tx == 0 || rx+dr != tx {
		t.Fatalf("tx %v, rx %v, dropped %v: packets unaccounted for", tx, rx, dr)
	}
}

// TestCPUProfile: --cpuprofile writes a profile of the run (a gzipped protobuf, which starts
// with the gzip magic), and a file that cannot be created fails the run before it starts.
func TestCPUProfile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "cpu.prof")
	var out, errb bytes.Buffer
	if rc := run([]string{"--duration", "200ms", "--json", "--cpuprofile", f}, &out, &errb); rc != 0 {
		t.Fatalf("rc %d: %s", rc, errb.String())
	}
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("%s: %d bytes, not a gzipped profile", f, len(b))
	}
	errb.Reset()
	bad := filepath.Join(t.TempDir(), "no-such-dir", "cpu.prof")
	if rc := run([]string{"--duration", "200ms", "--cpuprofile", bad}, &out, &errb); rc != 1 || !strings.Contains(errb.String(), "--cpuprofile") {
		t.Fatalf("cpuprofile %s: rc %d, stderr %q; want 1 and a message naming --cpuprofile", bad, rc, errb.String())
	}
}

// TestTrace: --trace writes a Go execution trace of the run (it starts with the trace format's
// header, "go 1." and the version), and a file that cannot be created fails the run before it
// starts.
func TestTrace(t *testing.T) {
	f := filepath.Join(t.TempDir(), "run.trace")
	var out, errb bytes.Buffer
	if rc := run([]string{"--duration", "200ms", "--json", "--trace", f}, &out, &errb); rc != 0 {
		t.Fatalf("rc %d: %s", rc, errb.String())
	}
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 64 || !bytes.HasPrefix(b, []byte("go 1.")) {
		t.Fatalf("%s: %d bytes starting %q, not a Go execution trace", f, len(b), b[:min(len(b), 16)])
	}
	errb.Reset()
	bad := filepath.Join(t.TempDir(), "no-such-dir", "run.trace")
	if rc := run([]string{"--duration", "200ms", "--trace", bad}, &out, &errb); rc != 1 || !strings.Contains(errb.String(), "--trace") {
		t.Fatalf("trace %s: rc %d, stderr %q; want 1 and a message naming --trace", bad, rc, errb.String())
	}
}

// TestWindowHelp (issue 19 item 17): --window's help names its real default and no "-1".
func TestWindowHelp(t *testing.T) {
	var out, errb bytes.Buffer
	if rc := run([]string{"-h"}, &out, &errb); rc != 0 {
		t.Fatalf("rc %d", rc)
	}
	h := errb.String()
	i := strings.Index(h, "-window")
	if i < 0 {
		t.Fatalf("no -window in the help:\n%s", h)
	}
	w := h[i:]
	if j := strings.Index(w[1:], "\n  -"); j > 0 {
		w = w[:j+1]
	}
	if strings.Contains(w, "-1") || !strings.Contains(w, "else 4096") || !strings.Contains(w, "0 = no limit") {
		t.Fatalf("window help: %q", w)
	}
	if rc := run([]string{"--window", "-3"}, &out, &errb); rc != 2 {
		t.Fatalf("negative window: rc %d", rc)
	}
}

// TestSocketBurst: socket TX bursts keep batch_size packets while they fit 1 MiB (8000-byte
// messages: 64), and fewer, never none, when they do not (64000-byte messages: 16).
func TestSocketBurst(t *testing.T) {
	for _, c := range []struct{ batch, frame, want int }{
		{64, 8000, 64}, {64, 64000, 16}, {64, 1 << 20, 1}, {64, 2 << 20, 1}, {1, 100, 1}, {256, 1000, 256}, {64, 0, 64},
	} {
		if got := socketBurst(c.batch, c.frame); got != c.want {
			t.Errorf("socketBurst(%d, %d) = %d, want %d", c.batch, c.frame, got, c.want)
		}
	}
}
