package daqiri_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/hugepage"
	"github.com/daqiri-go/daqiri/internal/testutil"
)

// twoServers is a config with two UDP server ports (one rx queue each) and one client that
// sends to the first; a second client interface sends to the second.
func twoServers(t *testing.T, kind config.MemoryKind) *config.Config {
	p1, p2 := testutil.FreePort(t, "udp"), testutil.FreePort(t, "udp")
	ep := func(p int) config.Endpoint {
		return config.Endpoint{Proto: config.ProtoUDP, Host: "127.0.0.1", Port: p}
	}
	q := func(name, mr string) []config.Queue {
		return []config.Queue{{Name: name, ID: 0, CPUCore: "0", BatchSize: 8, MemoryRegions: []string{mr}}}
	}
	return &config.Config{Version: 1, StreamType: config.StreamSocket, LogLevel: "error", RxMetaBuffers: 32, TxMetaBuffers: 32,
		MemoryRegions: []config.MemoryRegion{{Name: "m", Kind: kind, Access: config.AccessLocal, NumBufs: 1024, BufSize: 2048}},
		Interfaces: []config.Interface{
			{Name: "a", Address: "127.0.0.1", Socket: &config.SocketConfig{Mode: config.ModeServer, Local: ep(p1), RetryConnectS: 1}, RX: &config.RxConfig{Queues: q("a", "m")}},
			{Name: "b", Address: "127.0.0.1", Socket: &config.SocketConfig{Mode: config.ModeServer, Local: ep(p2), RetryConnectS: 1}, RX: &config.RxConfig{Queues: q("b", "m")}},
			{Name: "ca", Address: "127.0.0.1", Socket: &config.SocketConfig{Mode: config.ModeClient, Remote: ep(p1), RetryConnectS: 1}, TX: &config.TxConfig{Queues: q("ca", "m")}},
			{Name: "cb", Address: "127.0.0.1", Socket: &config.SocketConfig{Mode: config.ModeClient, Remote: ep(p2), RetryConnectS: 1}, TX: &config.TxConfig{Queues: q("cb", "m")}},
		}}
}

// TestRxBurstAnyAndPort sends to two ports and collects with RxBurstAny (round-robin over
// ports); per-port and per-queue lookups and bad ids are checked too.
func TestRxBurstAnyAndPort(t *testing.T) {
	s := mustOpen(t, twoServers(t, config.KindHost))
	a, _ := s.Port("a")
	ca, _ := s.Port("ca")
	cb, _ := s.Port("cb")
	sendAll(t, s, ca, randomPayloads(40, 10, 100), 8)
	sendAll(t, s, cb, randomPayloads(40, 10, 100), 8)
	seen := map[int]int{}
	for deadline := time.Now().Add(10 * time.Second); seen[0]+seen[1] < 80 && time.Now().Before(deadline); {
		b, err := s.RxBurstAny()
		if errors.Is(err, daqiri.ErrNotReady) {
			time.Sleep(100 * time.Microsecond)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		seen[b.Port()] += b.Len()
		b.Free()
	}
	if seen[0] != 40 || seen[1] != 40 {
		t.Fatalf("per-port packets %v, want 40 each", seen)
	}
	if _, err := s.RxBurstPort(a); !errors.Is(err, daqiri.ErrNotReady) {
		t.Fatalf("empty port: %v", err)
	}
	if _, err := s.RxBurst(a, 7); !errors.Is(err, daqiri.ErrInvalidParameter) {
		t.Fatalf("unknown queue: %v", err)
	}
	if _, err := s.RxBurst(9, 0); !errors.Is(err, daqiri.ErrInvalidParameter) {
		t.Fatalf("unknown port: %v", err)
	}
	if _, err := s.RxBurstPort(ca); !errors.Is(err, daqiri.ErrInvalidParameter) {
		t.Fatalf("port without rx queues: %v", err)
	}
	if _, err := s.Port("nope"); !errors.Is(err, daqiri.ErrInvalidParameter) {
		t.Fatalf("unknown interface name: %v", err)
	}
	// A received burst cannot be sent.
	sendAll(t, s, ca, randomPayloads(1, 10, 10), 1)
	b := waitBurst(t, s, a, 5*time.Second)
	if err := s.Send(b); !errors.Is(err, daqiri.ErrInvalidParameter) {
		t.Fatalf("send of an rx burst: %v", err)
	}
	b.Free()
}

// TestTxExhaustion takes TX bursts until each pool runs out and checks the typed errors.
func TestTxExhaustion(t *testing.T) {
	cfg := twoServers(t, config.KindHost)
	cfg.TxMetaBuffers = 4
	s := mustOpen(t, cfg)
	ca, _ := s.Port("ca")
	var held []*daqiri.Burst
	defer func() {
		for _, b := range held {
			b.Free()
		}
	}()
	for len(held) < 4 {
		b, err := s.TxBurst(ca, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, b)
	}
	if _, err := s.TxBurst(ca, 0, 1); !errors.Is(err, daqiri.ErrNoFreeBurstBuffers) {
		t.Fatalf("metadata exhausted: %v", err)
	}
	held[0].Free()
	held = held[1:]
	// 1024 buffers shared by rx and tx queues; 4 are held: ask for more than remain.
	if _, err := s.TxBurst(ca, 0, 2000); !errors.Is(err, daqiri.ErrNoFreePacketBuffers) {
		t.Fatalf("buffers exhausted: %v", err)
	}
	if s.TxAvailable(ca, 0, 2000) || !s.TxAvailable(ca, 0, 10) {
		t.Fatal("TxAvailable disagrees")
	}
}

// TestHugeRegion opens a session whose region is hugepage-backed: without hugepages the error
// says how many to reserve; with them (root) traffic flows.
func TestHugeRegion(t *testing.T) {
	if _, err := os.Stat(testutil.NrHugepages); err != nil {
		testutil.Missing(t, "kernel without hugepages: %v", err)
	}
	in, err := hugepage.ReadInfo()
	if err != nil {
		t.Fatal(err)
	}
	need := hugepage.PagesFor(1024*2048, in.PageSize)
	if in.Available() < need {
		_, err := daqiri.Open(context.Background(), twoServers(t, config.KindHuge))
		if !errors.Is(err, hugepage.ErrNotEnough) || !strings.Contains(err.Error(), "nr_hugepages") || !strings.Contains(err.Error(), "memory_regions[0]") {
			t.Fatalf("want a hugepage error naming the region and the fix, got %v", err)
		}
		testutil.ReserveHugepages(t, need)
	}
	s := mustOpen(t, twoServers(t, config.KindHuge))
	if k := s.Region("m").Kind; k != config.KindHuge {
		t.Fatalf("region kind %s", k)
	}
	ca, _ := s.Port("ca")
	payloads := randomPayloads(100, 100, 1500)
	sendAll(t, s, ca, payloads, 8)
	if got := recvAll(t, s, 0, 100, 10*time.Second); len(got) != 100 {
		t.Fatalf("got %d", len(got))
	}
}
