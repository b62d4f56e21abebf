package daqiri_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/internal/testutil"
)

// openLogged opens cfg with its log captured at the default level (warn): what a user sees.
func openLogged(t *testing.T, cfg *config.Config) (*daqiri.Session, *testutil.SyncBuffer) {
	t.Helper()
	var logs testutil.SyncBuffer
	s, err := daqiri.Open(context.Background(), cfg, daqiri.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	if err != nil {
		t.Fatal(err)
	}
	return s, &logs
}

// TestPlacementWarnings (issue 19 item 10): a cpu_core the machine lacks and a NUMA node it
// lacks are said at the default log level, naming the key; they used to open silently.
func TestPlacementWarnings(t *testing.T) {
	cfg := pairConfig(config.ProtoUDP, testutil.FreePort(t, "udp"), 2048, 16, 0)
	cfg.Interfaces[0].RX.Queues[0].CPUCore = "100000"
	cfg.MemoryRegions[0].Affinity = 1000
	s, logs := openLogged(t, cfg)
	s.Close()
	out := logs.String()
	for _, want := range []string{
		"level=WARN msg=\"worker not pinned: cpu_core is not a core this process may run on",
		"core=100000",
		"memory_regions[0].affinity: NUMA node 1000 does not exist on this machine",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

// mapped reports whether the address lies in one of the process's mappings.
func mapped(t *testing.T, addr uint64) bool {
	t.Helper()
	data, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		var lo, hi uint64
		if _, err := fmt.Sscanf(l, "%x-%x", &lo, &hi); err == nil && addr >= lo && addr < hi {
			return true
		}
	}
	return false
}

// TestRegionReleasedAfterLateFree (issue 19 item 12): Close with a burst still held reports
// it and keeps the memory mapped; freeing that burst afterwards releases the memory instead
// of leaving it mapped for the life of the process.
func TestRegionReleasedAfterLateFree(t *testing.T) {
	cfg := pairConfig(config.ProtoUDP, testutil.FreePort(t, "udp"), 2048, 16, 0)
	s, err := daqiri.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	cli, _ := s.Port("client")
	b, err := s.TxBurst(cli, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.SetUDPPayload(0, []byte{1}); err != nil {
		t.Fatal(err)
	}
	var addr uint64
	fmt.Sscanf(fmt.Sprintf("%p", &b.Packet(0)[0]), "0x%x", &addr)
	err = s.Close()
	if err == nil || !strings.Contains(err.Error(), "1 of 1024 buffers not returned") {
		t.Fatalf("Close with a burst held: %v", err)
	}
	if !mapped(t, addr) {
		t.Fatalf("region unmapped while a buffer is held")
	}
	b.Free()
	if mapped(t, addr) {
		t.Fatalf("region still mapped after its last buffer came back")
	}
	// Issue 30 item 7: a second Close after the burst was freed does not repeat the first
	// Close's count.
	if err := s.Close(); err != nil {
		t.Fatalf("second Close after the held burst was freed: %v", err)
	}
}

// TestSecondCloseCountsNow (issue 30 item 7): a second Close while buffers are still held
// reports what is held then (two bursts held at the first Close, one freed since), not the
// first Close's count.
func TestSecondCloseCountsNow(t *testing.T) {
	cfg := pairConfig(config.ProtoUDP, testutil.FreePort(t, "udp"), 2048, 16, 0)
	s, err := daqiri.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	cli, _ := s.Port("client")
	var bs [2]*daqiri.Burst
	for i := range bs {
		if bs[i], err = s.TxBurst(cli, 0, 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err == nil || !strings.Contains(err.Error(), "2 of 1024 buffers not returned") {
		t.Fatalf("Close with two bursts held: %v", err)
	}
	bs[0].Free()
	if err := s.Close(); err == nil || !strings.Contains(err.Error(), "1 of 1024 buffers not returned") || strings.Contains(err.Error(), "2 of") {
		t.Fatalf("second Close with one burst held: %v", err)
	}
	bs[1].Free()
	if err := s.Close(); err != nil {
		t.Fatalf("third Close with nothing held: %v", err)
	}
}
