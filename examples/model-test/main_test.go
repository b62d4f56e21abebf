package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/mlx5/model/modelch"
)

// testConfig is the application's own configuration with the NIC replaced by model:1, plus
// one interface the test sends from: model:0, which the engine cables to model:1. Nothing
// else changes: the same flow and isolation are programmed into the model's steering the
// way they would be into the NIC's.
func testConfig() *config.Config {
	cfg := appConfig("model:1", 5000)
	cfg.MemoryRegions = append(cfg.MemoryRegions, config.MemoryRegion{Name: "feed", Kind: config.KindHost, NumBufs: 512, BufSize: 2048})
	cfg.Interfaces = append(cfg.Interfaces, config.Interface{
		Name: "feeder", Address: "model:0",
		TX: &config.TxConfig{Queues: []config.Queue{{Name: "feed", ID: 0, CPUCore: "0", BatchSize: 32, MemoryRegions: []string{"feed"}}}},
	})
	return cfg
}

// frame is one UDP frame to dport carrying seq.
type frame struct {
	dport uint16
	seq   uint32
}

// feed sends frames from the feeder interface, in order.
func feed(t *testing.T, s *daqiri.Session, frames []frame) {
	t.Helper()
	port, err := s.Port("feeder")
	if err != nil {
		t.Fatal(err)
	}
	for len(frames) > 0 {
		b, err := s.TxBurst(port, 0, min(len(frames), 32))
		if err != nil {
			t.Fatal(err)
		}
		for i := range b.Len() {
			p := make([]byte, 64)
			binary.BigEndian.PutUint32(p, frames[i].seq)
			b.SetEthHeader(i, net.HardwareAddr{0x02, 0, 0, 0, 0, 0x02}, net.HardwareAddr{0x02, 0, 0, 0, 0, 0x01})
			b.SetIPv4Header(i, 8+len(p), 17, netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"))
			b.SetUDPHeader(i, len(p), 4000, frames[i].dport)
			if err := b.SetUDPPayload(i, p); err != nil {
				t.Fatal(err)
			}
		}
		n := b.Len()
		if err := s.Send(b); err != nil {
			b.Free()
			t.Fatal(err)
		}
		frames = frames[n:]
	}
}

// TestCheckerOnModel feeds the application a stream with a gap, interleaved with traffic to
// another port that the NIC's flow and isolation must keep away, and checks what the
// checker reports. The last frame of the stream is sent after all the others, through the
// same queues, so once it has arrived anything that leaked would have too.
func TestCheckerOnModel(t *testing.T) {
	s, err := daqiri.Open(context.Background(), testConfig(), daqiri.WithMLX5Fabric(&modelch.Fabric{}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var frames []frame
	for seq := uint32(0); seq <= 100; seq++ {
		if seq >= 40 && seq < 45 {
			continue // lost on the way
		}
		frames = append(frames, frame{5000, seq})
		if seq%10 == 0 {
			frames = append(frames, frame{6000, seq}) // someone else's traffic
		}
	}
	feed(t, s, frames)

	sensor, _ := s.Port("sensor")
	var c Checker
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c.Run(ctx, s, sensor, 96)
	var out bytes.Buffer
	c.Report(&out)
	if c.Packets != 96 || !slices.Equal(c.Gaps, []Gap{{40, 45}}) || c.OutOfOrder != 0 || c.Foreign != 0 {
		t.Fatalf("checker: %+v\n%s", c, out.String())
	}
	if want := "96 packets, 1 gaps, 0 out of order, 0 not of the stream\n  missing 40..44\n"; out.String() != want {
		t.Fatalf("report %q, want %q", out.String(), want)
	}
	// The engine counted what the application was given; nothing was dropped on the way.
	rx, _ := s.Stats().Totals()
	if rx.Packets != 96 || rx.Dropped != 0 {
		t.Fatalf("RX counters: %d packets, %d dropped", rx.Packets, rx.Dropped)
	}
}

// TestCheckerUnit checks the checker's bookkeeping alone, without an engine.
func TestCheckerUnit(t *testing.T) {
	var c Checker
	for _, seq := range []uint32{5, 6, 9, 7, 10} {
		c.addSeq(seq)
	}
	if c.Packets != 5 || !slices.Equal(c.Gaps, []Gap{{7, 9}}) || c.OutOfOrder != 1 {
		t.Fatalf("%+v", c)
	}
}
