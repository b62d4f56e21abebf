package daqiri_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/internal/testutil"
)

// pairConfig is a server (rx+tx) and a client (rx+tx) on loopback.
func pairConfig(proto config.Protocol, port, bufSize, batch, timeoutUs int) *config.Config {
	q := func(name string, core string, mr string, rx bool) config.Queue {
		qc := config.Queue{Name: name, ID: 0, CPUCore: core, BatchSize: batch, MemoryRegions: []string{mr}}
		if rx {
			qc.TimeoutUs = timeoutUs
		}
		return qc
	}
	ep := func(host string, p int) config.Endpoint { return config.Endpoint{Proto: proto, Host: host, Port: p} }
	mr := func(name string) config.MemoryRegion {
		return config.MemoryRegion{Name: name, Kind: config.KindHost, Access: config.AccessLocal, NumBufs: 1024, BufSize: bufSize}
	}
	return &config.Config{
		Version: 1, StreamType: config.StreamSocket, LogLevel: "warn",
		RxMetaBuffers: 64, TxMetaBuffers: 64,
		MemoryRegions: []config.MemoryRegion{mr("srv_rx"), mr("srv_tx"), mr("cli_rx"), mr("cli_tx")},
		Interfaces: []config.Interface{
			{Name: "server", Address: "127.0.0.1",
				Socket: &config.SocketConfig{Mode: config.ModeServer, Local: ep("127.0.0.1", port), RetryConnectS: 1},
				RX:     &config.RxConfig{Queues: []config.Queue{q("srx", "0", "srv_rx", true)}},
				TX:     &config.TxConfig{Queues: []config.Queue{q("stx", "0", "srv_tx", false)}}},
			{Name: "client", Address: "127.0.0.1",
				Socket: &config.SocketConfig{Mode: config.ModeClient, Remote: ep("127.0.0.1", port), RetryConnectS: 1},
				RX:     &config.RxConfig{Queues: []config.Queue{q("crx", "1", "cli_rx", true)}},
				TX:     &config.TxConfig{Queues: []config.Queue{q("ctx", "1", "cli_tx", false)}}},
		},
	}
}

// sendAll sends payloads from port as bursts of up to batch packets, retrying while the
// engine is not ready (TCP connecting) or out of buffers.
func sendAll(t *testing.T, s *daqiri.Session, port int, payloads [][]byte, batch int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; i < len(payloads); {
		if time.Now().After(deadline) {
			t.Fatalf("sending timed out at packet %d", i)
		}
		n := min(batch, len(payloads)-i)
		b, err := s.TxBurst(port, 0, n)
		if err != nil {
			if errors.Is(err, daqiri.ErrNoFreePacketBuffers) || errors.Is(err, daqiri.ErrNoFreeBurstBuffers) {
				time.Sleep(time.Millisecond)
				continue
			}
			t.Fatal(err)
		}
		for k := 0; k < n; k++ {
			if err := b.SetUDPPayload(k, payloads[i+k]); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Send(b); err != nil {
			b.Free()
			if errors.Is(err, daqiri.ErrNotReady) {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			t.Fatal(err)
		}
		i += n
	}
}

// recvAll collects n packets from port (copying them), or fails after the timeout.
func recvAll(t *testing.T, s *daqiri.Session, port, n int, timeout time.Duration) [][]byte {
	t.Helper()
	var got [][]byte
	deadline := time.Now().Add(timeout)
	for len(got) < n && time.Now().Before(deadline) {
		b, err := s.RxBurst(port, 0)
		if errors.Is(err, daqiri.ErrNotReady) {
			time.Sleep(100 * time.Microsecond)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < b.Len(); i++ {
			got = append(got, bytes.Clone(b.Packet(i)))
			if _, err := b.RxTimestamp(i); err != nil {
				t.Errorf("packet without a receive timestamp: %v", err)
			}
		}
		b.Free()
	}
	return got
}

func randomPayloads(n, lo, hi int) [][]byte {
	ps := make([][]byte, n)
	for i := range ps {
		p := make([]byte, lo+rand.IntN(hi-lo+1))
		for j := range p {
			p[j] = byte(rand.Uint32())
		}
		if len(p) >= 4 {
			binary.BigEndian.PutUint32(p, uint32(i))
		}
		ps[i] = p
	}
	return ps
}

func TestSocketRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		proto   config.Protocol
		bufSize int
		lo, hi  int
		odd     int // with lo == hi: every odd-th payload gets another random length
	}{
		{config.ProtoUDP, 2048, 4, 1500, 0},
		{config.ProtoUDP, 65536, 8000, 8000, 0}, // GRO-sized receive buffers, GSO-sized sends
		{config.ProtoTCP, 9000, 1, 9000, 0},
		{config.ProtoTCP, 65536, 1, 65536, 0}, // frames larger than the staging buffer, mixed with small ones
		// Runs of equal large frames, read several per call into their own buffers, broken
		// now and then by one of another length (issue 18).
		{config.ProtoTCP, 65536, 64000, 64000, 37},
	} {
		t.Run(fmt.Sprintf("%s-%d-%d", tc.proto, tc.bufSize, tc.lo), func(t *testing.T) {
			port := testutil.FreePort(t, string(tc.proto))
			cfg := pairConfig(tc.proto, port, tc.bufSize, 32, 200)
			s, err := daqiri.Open(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := s.Close(); err != nil {
					t.Errorf("close: %v", err)
				}
			}()
			srv, _ := s.Port("server")
			cli, _ := s.Port("client")
			payloads := randomPayloads(2000, tc.lo, tc.hi)
			for i := tc.odd - 1; tc.odd > 0 && i < len(payloads); i += tc.odd {
				payloads[i] = randomPayloads(1, 1, tc.bufSize)[0]
			}
			if tc.proto == config.ProtoUDP && tc.bufSize == 65536 {
				// Equal sizes let the client coalesce runs into GSO sends.
				for i := range payloads {
					payloads[i] = payloads[i][:8000]
				}
			}
			done := make(chan [][]byte)
			go func() { done <- recvAll(t, s, srv, len(payloads), 20*time.Second) }()
			sendAll(t, s, cli, payloads, 32)
			got := <-done
			if len(got) != len(payloads) {
				st := s.Stats()
				t.Fatalf("received %d of %d packets; stats %+v", len(got), len(payloads), st)
			}
			for i := range got {
				if !bytes.Equal(got[i], payloads[i]) {
					t.Fatalf("packet %d differs (len %d vs %d)", i, len(got[i]), len(payloads[i]))
				}
			}
			// The server replies to the client (UDP: to the learned peer; TCP: on the accepted
			// connection) and the client receives.
			reply := randomPayloads(50, 1, 1000)
			go func() { done <- recvAll(t, s, cli, len(reply), 10*time.Second) }()
			sendAll(t, s, srv, reply, 8)
			got = <-done
			if len(got) != len(reply) {
				t.Fatalf("client received %d of %d replies", len(got), len(reply))
			}
			for i := range got {
				if !bytes.Equal(got[i], reply[i]) {
					t.Fatalf("reply %d differs", i)
				}
			}
		})
	}
}
