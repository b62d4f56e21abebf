package integration

import (
	"context"
	"errors"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/integration/netns"
)

func udpEndpoint(name string, mode config.SocketMode, local, remote netip.AddrPort, mr string, rx bool, rcvbuf int) config.Interface {
	ep := func(a netip.AddrPort) config.Endpoint {
		if !a.IsValid() {
			return config.Endpoint{}
		}
		return config.Endpoint{Proto: config.ProtoUDP, Host: a.Addr().String(), Port: int(a.Port())}
	}
	ifc := config.Interface{Name: name, Address: local.Addr().String(),
		Socket: &config.SocketConfig{Mode: mode, Local: ep(local), Remote: ep(remote), RetryConnectS: 1, RecvBufferBytes: rcvbuf}}
	q := config.Queue{Name: name + "_q", ID: 0, CPUCore: "0", BatchSize: 64, TimeoutUs: 100, MemoryRegions: []string{mr}}
	if rx {
		ifc.RX = &config.RxConfig{Queues: []config.Queue{q}}
	} else {
		ifc.TX = &config.TxConfig{Queues: []config.Queue{q}}
	}
	return ifc
}

func oneSided(ifc config.Interface, mr string, bufs, size int) *config.Config {
	return &config.Config{Version: 1, StreamType: config.StreamSocket, LogLevel: "error", RxMetaBuffers: 16, TxMetaBuffers: 16,
		MemoryRegions: []config.MemoryRegion{{Name: mr, Kind: config.KindHost, Access: config.AccessLocal, NumBufs: bufs, BufSize: size}},
		Interfaces:    []config.Interface{ifc}}
}

func openIn(t *testing.T, ns *netns.NS, cfg *config.Config) *daqiri.Session {
	t.Helper()
	var s *daqiri.Session
	if err := ns.Do(func() (err error) {
		s, err = daqiri.Open(context.Background(), cfg)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestUDPSlowConsumerAccounting sends 1,000,000 UDP packets across a namespace pair into a
// receiver whose application deliberately falls behind, and checks that every packet sent is
// either received or counted as dropped, and that no buffer is leaked.
func TestUDPSlowConsumerAccounting(t *testing.T) {
	p := netns.NewPair(t)
	const total = 1_000_000
	server := netip.AddrPortFrom(p.AddrB, 7001)
	rxCfg := oneSided(udpEndpoint("rx", config.ModeServer, server, netip.AddrPort{}, "rxmem", true, 1<<20), "rxmem", 512, 2048)
	txCfg := oneSided(udpEndpoint("tx", config.ModeClient, netip.AddrPort{}, server, "txmem", false, 0), "txmem", 1024, 2048)
	rxs := openIn(t, p.B, rxCfg)
	txs := openIn(t, p.A, txCfg)

	var received atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		bursts := 0
		for {
			b, err := rxs.RxBurst(0, 0)
			if errors.Is(err, daqiri.ErrNotReady) {
				select {
				case <-stop:
					return
				default:
				}
				time.Sleep(50 * time.Microsecond)
				continue
			}
			if err != nil {
				t.Error(err)
				return
			}
			received.Add(uint64(b.Len()))
			b.Free()
			// The slow part: every 50 bursts, stall long enough for the socket to overflow.
			if bursts++; bursts%50 == 0 {
				time.Sleep(2 * time.Millisecond)
			}
		}
	}()

	sent := 0
	deadline := time.Now().Add(60 * time.Second)
	for sent < total && time.Now().Before(deadline) {
		b, err := txs.TxBurst(0, 0, min(64, total-sent))
		if err != nil {
			time.Sleep(10 * time.Microsecond)
			continue
		}
		if err := b.SetAllPacketLengths(64); err != nil {
			t.Fatal(err)
		}
		n := b.Len()
		if err := txs.Send(b); err != nil {
			t.Fatalf("send: %v", err)
		}
		sent += n
	}
	if sent != total {
		t.Fatalf("sent only %d packets in time", sent)
	}
	// Let the receiver drain what the kernel still holds, then stop it and close.
	prev := received.Load()
	for quiet := 0; quiet < 10; {
		time.Sleep(20 * time.Millisecond)
		if n := received.Load(); n == prev {
			quiet++
		} else {
			prev, quiet = n, 0
		}
	}
	close(stop)
	<-done
	if err := txs.Close(); err != nil {
		t.Errorf("tx close: %v", err)
	}
	if err := rxs.Close(); err != nil {
		t.Errorf("rx close (leak?): %v", err)
	}
	txStats := txs.Stats().Ports[0].Tx[0]
	rxStats := rxs.Stats().Ports[0].Rx[0]
	if txStats.Packets != total {
		t.Fatalf("tx counted %d, want %d", txStats.Packets, total)
	}
	got := received.Load()
	t.Logf("sent %d, received %d, dropped %d %v", total, got, rxStats.Dropped, rxStats.Drops)
	if got+rxStats.Dropped != total {
		t.Fatalf("received %d + dropped %d = %d, want %d sent", got, rxStats.Dropped, got+rxStats.Dropped, total)
	}
	if rxStats.Dropped == 0 {
		t.Errorf("the slow consumer caused no drops; the test did not exercise overflow accounting")
	}
}
