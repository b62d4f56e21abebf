package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// TestPacedLoopback sends on the software loopback (no root, no NIC): every packet comes
// back, in order, and none before its send time (the engine stamps each with the time it
// let it go; how late they are depends on the machine's load, so it is only reported).
func TestPacedLoopback(t *testing.T) {
	var out bytes.Buffer
	rep, err := run(context.Background(), options{txIface: "lb", rate: 20000, packets: 300, payload: 200, window: time.Millisecond}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Sent != 300 || rep.Received != 300 || rep.Early != 0 || rep.OutOfOrder != 0 || len(rep.Lateness) != 300 {
		t.Fatalf("sent %d received %d early %d out of order %d\n%s", rep.Sent, rep.Received, rep.Early, rep.OutOfOrder, out.String())
	}
	if !strings.Contains(out.String(), "received 300: 0 before their send time, 0 out of order") {
		t.Fatalf("output %q", out.String())
	}
	t.Log(strings.TrimSpace(out.String()))
}

// TestPacedConfigFile runs from a YAML file (the loopback configuration written out) with no
// interface to measure on: it sends and reports only that.
func TestPacedConfigFile(t *testing.T) {
	data, err := yaml.Marshal(loopbackConfig())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "lb.yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep, err := run(context.Background(), options{config: path, txIface: "lb", rate: 50000, packets: 100, payload: 64, window: time.Millisecond}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Sent != 100 || rep.Received != 0 || strings.Contains(out.String(), "received") {
		t.Fatalf("sent %d received %d: %q", rep.Sent, rep.Received, out.String())
	}
}

// TestPacedOptions: bad values are refused before anything opens, naming the flag.
func TestPacedOptions(t *testing.T) {
	good := options{txIface: "lb", rate: 1000, packets: 10, payload: 100, window: time.Millisecond}
	for _, c := range []struct {
		edit func(*options)
		want string
	}{
		{func(o *options) { o.rate = 0 }, "--rate 0"},
		{func(o *options) { o.payload = 4 }, "at least 8 bytes"},
		{func(o *options) { o.txIface = "eth9" }, `--tx-interface "eth9"`},
		{func(o *options) { o.rxIface = "nope" }, `--rx-interface "nope"`},
		{func(o *options) { o.config = "/nonexistent.yaml" }, "nonexistent.yaml"},
	} {
		o := good
		c.edit(&o)
		if _, err := run(context.Background(), o, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error containing %q", o, err, c.want)
		}
	}
}
