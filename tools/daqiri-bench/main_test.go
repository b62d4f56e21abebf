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
