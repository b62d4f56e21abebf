package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/internal/testutil/gputest"
)

// TestModelHostMemory runs the program on the device model with the payload region in host
// memory (no GPU, no root): every packet's first 64 bytes arrive in the header region, the
// rest in the payload region.
func TestModelHostMemory(t *testing.T) {
	const n, payload = 300, 1000
	var out bytes.Buffer
	sum, err := run(context.Background(), options{iface: "rx_port", model: true, packets: n, payloadLen: payload, duration: time.Minute}, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if sum.Packets != n || sum.BadHeaders != 0 || sum.HeaderBytes != n*hdrSize || sum.PayloadBytes != n*payload || sum.PayloadKind != "host" {
		t.Fatalf("%+v, want %d packets of %d header and %d payload bytes", sum, n, hdrSize, payload)
	}
	if !strings.Contains(out.String(), "received 300 packets: 19200 header bytes in host memory, 300000 payload bytes in host memory") {
		t.Fatalf("output %q", out.String())
	}
}

// TestModelHostPinned puts the payloads in page-locked memory mapped into the GPU and reads
// every one back through its GPU address. It needs an NVIDIA GPU.
func TestModelHostPinned(t *testing.T) {
	gputest.Device(t)
	const n = 300
	var out bytes.Buffer
	sum, err := run(context.Background(), options{iface: "rx_port", model: true, payloadKind: "host_pinned", packets: n, payloadLen: 1500, duration: time.Minute}, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if sum.Packets != n || sum.GPUChecked != n || sum.Mismatched != 0 || sum.BadHeaders != 0 {
		t.Fatalf("%+v: want %d packets, each read back through the GPU unchanged", sum, n)
	}
	t.Log(strings.TrimSpace(out.String()))
}

// TestOptions: what the command line refuses, and the NIC configuration it builds.
func TestOptions(t *testing.T) {
	for _, c := range []struct {
		o    options
		want string
	}{
		{options{}, "say where to receive"},
		{options{model: true, payloadKind: "device"}, `--payload-kind must be host or host_pinned (the model writes with the CPU), not "device"`},
		{options{config: "x.yaml", model: true}, "cannot be combined"},
		{options{config: "/nonexistent/x.yaml"}, "x.yaml"},
		{options{address: "0000:3b:00.0", payloadKind: "gpu"}, `unknown memory kind "gpu"`},
	} {
		if _, err := buildConfig(c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error containing %q", c.o, err, c.want)
		}
	}
	cfg, err := buildConfig(options{address: "0000:3b:00.0"})
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := cfg.ResolveEngine(0); e != "mlx5" || cfg.Region("payload").Kind != "device" || cfg.Region("hdr").BufSize != hdrSize {
		t.Fatalf("NIC configuration: engine %s, payload %s, header buffers %d", e, cfg.Region("payload").Kind, cfg.Region("hdr").BufSize)
	}
}
