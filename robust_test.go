package daqiri_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
)

// syncBuffer is a log sink that workers may write to concurrently.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// openLogged opens cfg with its log captured at the default level (warn): what a user sees.
func openLogged(t *testing.T, cfg *config.Config) (*daqiri.Session, *syncBuffer) {
	t.Helper()
	var logs syncBuffer
	s, err := daqiri.Open(context.Background(), cfg, daqiri.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	if err != nil {
		t.Fatal(err)
	}
	return s, &logs
}

// TestPlacementWarnings (issue 19 item 10): a cpu_core the machine lacks and a NUMA node it
// lacks are said at the default log level, naming the key; they used to open silently.
func TestPlacementWarnings(t *testing.T) {
	cfg := pairConfig(config.ProtoUDP, freePort(t, "udp"), 2048, 16, 0)
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
