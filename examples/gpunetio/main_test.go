package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/internal/testutil/gputest"
)

// TestModelLoop runs the program on the device model: the transmitter kernel on model:0
// sends a GPU buffer as frames, the receiver kernel on model:1 takes every one, in order and
// intact. It needs an NVIDIA GPU.
func TestModelLoop(t *testing.T) {
	gputest.Device(t)
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sum, err := run(ctx, options{model: true, packets: 1024, size: 700, memType: "CPU_GPU", bufType: "GPU"}, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if sum.Received != 1024 || sum.Sent != 1024 || !sum.InOrder || sum.Bytes != 1024*700 || sum.Batches != 16 {
		t.Fatalf("%+v", sum)
	}
	t.Log(out.String())
}

// TestBadOptions: each bad option is named, before any GPU is needed.
func TestBadOptions(t *testing.T) {
	for _, c := range []struct {
		o    options
		want string
	}{
		{options{}, "--model or --address"},
		{options{model: true, address: "mlx5_0", packets: 64, size: 100}, "--model or --address"},
		{options{model: true, packets: 100, size: 100}, "--packets 100"},
		{options{model: true, packets: 64, size: 10}, "--size 10"},
		{options{model: true, packets: 64, size: 100, memType: "VRAM"}, "--mem-type"},
		{options{model: true, packets: 64, size: 100, bufType: "x"}, "--buf-mem-type"},
	} {
		_, err := run(context.Background(), c.o, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error naming %s", c.o, err, c.want)
		}
	}
}
