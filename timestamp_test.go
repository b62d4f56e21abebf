package daqiri_test

import (
	"errors"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/internal/testutil"
)

// checkStamps requires every packet of b to carry a receive time in CLOCK_REALTIME
// nanoseconds since the Unix epoch, between lo and hi (read from the same clock around the
// exchange), not decreasing within the burst.
func checkStamps(t *testing.T, what string, b *daqiri.Burst, lo, hi int64) {
	t.Helper()
	prev := int64(0)
	for i := 0; i < b.Len(); i++ {
		ts, err := b.RxTimestamp(i)
		if err != nil {
			t.Fatalf("%s packet %d: %v", what, i, err)
		}
		if ts < lo || ts > hi || ts < prev {
			t.Fatalf("%s packet %d: receive time %d (%v) outside [%d, %d] or before the previous packet's %d", what, i, ts, time.Unix(0, ts), lo, hi, prev)
		}
		prev = ts
	}
}

// TestRxTimestampClock checks what b.RxTimestamp means on the engines that run without
// privileges — loopback, socket UDP (kernel SO_TIMESTAMPNS) and socket TCP (time the message
// was framed) — all CLOCK_REALTIME ns since 1970-01-01 UTC, bracketed by time.Now() read
// before sending and after receiving. The xdp engine is checked by the veth tests in
// integration/netns (TestXDPJumbo), roce inside the VM.
func TestRxTimestampClock(t *testing.T) {
	for _, proto := range []config.Protocol{config.ProtoUDP, config.ProtoTCP} {
		s := mustOpen(t, pairConfig(proto, testutil.FreePort(t, string(proto)), 2048, 8, 100))
		payloads := randomPayloads(8, 10, 100)
		lo := time.Now().UnixNano()
		sendAll(t, s, 1, payloads, 8)
		got := 0
		for deadline := time.Now().Add(10 * time.Second); got < len(payloads) && time.Now().Before(deadline); {
			b, err := s.RxBurst(0, 0)
			if errors.Is(err, daqiri.ErrNotReady) {
				time.Sleep(100 * time.Microsecond)
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			checkStamps(t, string(proto), b, lo, time.Now().UnixNano())
			got += b.Len()
			b.Free()
		}
		if got != len(payloads) {
			t.Fatalf("%s: %d of %d packets", proto, got, len(payloads))
		}
	}

	c := &config.Config{Version: 1, StreamType: config.StreamRaw, Loopback: "sw", LogLevel: "error", RxMetaBuffers: 8, TxMetaBuffers: 8,
		MemoryRegions: []config.MemoryRegion{
			{Name: "tx", Kind: config.KindHost, Access: config.AccessLocal, NumBufs: 64, BufSize: 256},
			{Name: "rx", Kind: config.KindHost, Access: config.AccessLocal, NumBufs: 64, BufSize: 256}},
		Interfaces: []config.Interface{{Name: "lb", Address: "loopback",
			RX: &config.RxConfig{Queues: []config.Queue{{Name: "r", ID: 0, CPUCore: "0", BatchSize: 16, MemoryRegions: []string{"rx"}}}},
			TX: &config.TxConfig{Queues: []config.Queue{{Name: "t", ID: 0, CPUCore: "0", BatchSize: 16, MemoryRegions: []string{"tx"}}}}}}}
	s := mustOpen(t, c)
	b, err := s.TxBurst(0, 0, 4)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		b.SetPacketLengths(i, 60)
	}
	at := time.Now().Add(20 * time.Millisecond)
	if err := s.SetPacketTxTime(b, 3, at); err != nil {
		t.Fatal(err)
	}
	lo := time.Now().UnixNano()
	if err := s.Send(b); err != nil {
		t.Fatal(err)
	}
	rb := waitBurst(t, s, 0, 10*time.Second)
	checkStamps(t, "loopback", rb, lo, time.Now().UnixNano())
	// The timed packet came back no earlier than its send time.
	if ts, _ := rb.RxTimestamp(3); ts < at.UnixNano() {
		t.Fatalf("timed packet received at %d, before its send time %d", ts, at.UnixNano())
	}
	rb.Free()
}
