package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/pcapgo"
)

// TestCaptureRotates captures 500 frames from the software loopback with 64 KiB files:
// several files, none past the limit, and every frame once, in order, across them, read
// back with gopacket's pcapng reader.
func TestCaptureRotates(t *testing.T) {
	const n, limit = 500, 64 << 10
	out := filepath.Join(t.TempDir(), "cap.pcapng")
	var log bytes.Buffer
	res, err := run(context.Background(), options{iface: "lb", out: out, rotateBytes: limit, packets: n, duration: time.Minute}, &log)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if res.Packets != n || len(res.Files) < 3 {
		t.Fatalf("%d packets in %d files, want %d in several\n%s", res.Packets, len(res.Files), n, log.String())
	}
	next := uint64(0)
	for i, path := range res.Files {
		if want := filepath.Join(filepath.Dir(out), "cap.pcapng"); i == 0 && path != want {
			t.Fatalf("first file %s, want %s", path, want)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > limit {
			t.Fatalf("%s: %d bytes, over the %d limit", path, fi.Size(), limit)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		r, err := pcapgo.NewNgReader(f, pcapgo.DefaultNgReaderOptions)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for k := 0; k <= n; k++ {
			data, ci, err := r.ReadPacketData()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: packet %d: %v", path, k, err)
			}
			if len(data) < 50 || ci.Length != len(data) {
				t.Fatalf("%s: packet %d: %d bytes of %d", path, k, len(data), ci.Length)
			}
			if seq := binary.BigEndian.Uint64(data[42:]); seq != next {
				t.Fatalf("%s: packet %d has sequence number %d, want %d", path, k, seq, next)
			}
			next++
		}
		f.Close()
	}
	if next != n {
		t.Fatalf("read %d packets back, wrote %d", next, n)
	}
	if !strings.Contains(log.String(), "captured 500 packets in") {
		t.Fatalf("output %q", log.String())
	}
}

// TestCaptureOptions: bad options are refused naming what is wrong.
func TestCaptureOptions(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		o    options
		want string
	}{
		{options{iface: "lb", out: filepath.Join(dir, "a.pcapng"), rotateBytes: -1}, "--rotate-bytes -1"},
		{options{iface: "eth9", out: filepath.Join(dir, "b.pcapng")}, `--interface "eth9"`},
		{options{iface: "lb", out: filepath.Join(dir, "no", "such", "dir.pcapng")}, "dir.pcapng"},
		{options{iface: "lb", config: filepath.Join(dir, "missing.yaml"), out: filepath.Join(dir, "c.pcapng")}, "missing.yaml"},
	} {
		if _, err := run(context.Background(), c.o, io.Discard); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error containing %q", c.o, err, c.want)
		}
	}
}
