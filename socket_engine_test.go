package daqiri_test

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/internal/testutil"
	"golang.org/x/sys/unix"
)

func mustOpen(t *testing.T, cfg *config.Config) *daqiri.Session {
	t.Helper()
	s, err := daqiri.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

// waitBurst polls a queue until a burst arrives or the bound passes.
func waitBurst(t *testing.T, s *daqiri.Session, port int, bound time.Duration) *daqiri.Burst {
	t.Helper()
	for deadline := time.Now().Add(bound); time.Now().Before(deadline); {
		b, err := s.RxBurst(port, 0)
		if err == nil {
			return b
		}
		if !errors.Is(err, daqiri.ErrNotReady) {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Microsecond)
	}
	t.Fatalf("no burst on port %d within %v", port, bound)
	return nil
}

// TestSocketBatchAndTimeout checks that a partial batch is handed over after timeout_us and
// full batches at batch_size: 10 packets with batch_size 4 arrive as bursts of 4, 4 and 2.
func TestSocketBatchAndTimeout(t *testing.T) {
	cfg := pairConfig(config.ProtoUDP, testutil.FreePort(t, "udp"), 2048, 4, 50_000)
	s := mustOpen(t, cfg)
	sendAll(t, s, 1, randomPayloads(10, 10, 100), 10)
	var sizes []int
	total := 0
	for total < 10 {
		b := waitBurst(t, s, 0, 5*time.Second)
		sizes = append(sizes, b.Len())
		total += b.Len()
		b.Free()
	}
	if len(sizes) != 3 || sizes[0] != 4 || sizes[1] != 4 || sizes[2] != 2 {
		t.Fatalf("burst sizes %v, want [4 4 2]", sizes)
	}
}

// TestSocketTCPBackgroundConnect opens a TCP client before its server exists: Open returns,
// sends report ErrNotReady (the burst stays the caller's), and once a server appears the
// client connects by itself and traffic flows.
func TestSocketTCPBackgroundConnect(t *testing.T) {
	port := testutil.FreePort(t, "tcp")
	full := pairConfig(config.ProtoTCP, port, 2048, 8, 100)
	cliCfg := *full
	cliCfg.Interfaces = full.Interfaces[1:]
	cliCfg.MemoryRegions = full.MemoryRegions[2:]
	srvCfg := *full
	srvCfg.Interfaces = full.Interfaces[:1]
	srvCfg.MemoryRegions = full.MemoryRegions[:2]

	opened := make(chan *daqiri.Session, 1)
	go func() {
		s, err := daqiri.Open(context.Background(), &cliCfg)
		if err != nil {
			t.Error(err)
		}
		opened <- s
	}()
	var cli *daqiri.Session
	select {
	case cli = <-opened:
	case <-time.After(10 * time.Second):
		t.Fatal("Open blocked waiting for a TCP server")
	}
	if cli == nil {
		return
	}
	defer cli.Close()
	b, err := cli.TxBurst(0, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	b.SetUDPPayload(0, []byte("early"))
	if err := cli.Send(b); !errors.Is(err, daqiri.ErrNotReady) {
		t.Fatalf("send before connect: %v, want ErrNotReady", err)
	}
	b.Free()
	if _, err := cli.ConnID(0); !errors.Is(err, daqiri.ErrNotReady) {
		t.Fatalf("ConnID before connect: %v", err)
	}

	srv := mustOpen(t, &srvCfg)
	payloads := randomPayloads(20, 1, 2000)
	sendAll(t, cli, 0, payloads, 5) // retries while the client is still connecting
	got := recvAll(t, srv, 0, len(payloads), 10*time.Second)
	if len(got) != len(payloads) {
		t.Fatalf("server got %d of %d", len(got), len(payloads))
	}
	for i := range got {
		if string(got[i]) != string(payloads[i]) {
			t.Fatalf("message %d differs: TCP framing lost a boundary", i)
		}
	}
	cid, err := cli.ConnID(0)
	if err != nil {
		t.Fatal(err)
	}
	if p, _, tx, err := cli.ConnPortQueue(cid); err != nil || p != 0 || tx != 0 {
		t.Fatalf("ConnPortQueue = %d %d %v", p, tx, err)
	}
	if err := cli.SetSockopt(cid, unix.SOL_SOCKET, unix.SO_RCVBUF, binary.NativeEndian.AppendUint32(nil, 1<<20)); err != nil {
		t.Fatalf("setsockopt: %v", err)
	}
	if err := cli.SetSockopt(cid, unix.SOL_SOCKET, 9999, []byte{1, 0, 0, 0}); !errors.Is(err, daqiri.ErrGenericFailure) {
		t.Fatalf("bad option: %v, want ErrGenericFailure", err)
	}
	if err := cli.SetSockopt(cid+1000, unix.SOL_SOCKET, unix.SO_RCVBUF, []byte{1, 0, 0, 0}); !errors.Is(err, daqiri.ErrInvalidParameter) {
		t.Fatalf("unknown connection: %v", err)
	}
}

// TestSocketTCPPeerLoss: when the client goes away the server drops the connection, sends to
// it fail with ErrConnectFailure, and a new client is served.
func TestSocketTCPPeerLoss(t *testing.T) {
	port := testutil.FreePort(t, "tcp")
	full := pairConfig(config.ProtoTCP, port, 2048, 8, 100)
	srvCfg, cliCfg := *full, *full
	srvCfg.Interfaces, srvCfg.MemoryRegions = full.Interfaces[:1], full.MemoryRegions[:2]
	cliCfg.Interfaces, cliCfg.MemoryRegions = full.Interfaces[1:], full.MemoryRegions[2:]
	srv := mustOpen(t, &srvCfg)
	for round := 0; round < 2; round++ {
		cli, err := daqiri.Open(context.Background(), &cliCfg)
		if err != nil {
			t.Fatal(err)
		}
		sendAll(t, cli, 0, randomPayloads(3, 10, 20), 3)
		if got := recvAll(t, srv, 0, 3, 10*time.Second); len(got) != 3 {
			t.Fatalf("round %d: got %d", round, len(got))
		}
		conn, err := srv.ConnID(0)
		if err != nil {
			t.Fatal(err)
		}
		if err := cli.Close(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for len(srv.Conns(0)) != 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if n := len(srv.Conns(0)); n != 0 {
			t.Fatalf("server still has %d connections after the peer left", n)
		}
		b, _ := srv.TxBurst(0, 0, 1)
		b.SetUDPPayload(0, []byte("x"))
		b.SetConnID(conn)
		if err := srv.Send(b); !errors.Is(err, daqiri.ErrConnectFailure) {
			t.Fatalf("send to a lost peer: %v, want ErrConnectFailure", err)
		}
	}
}

// TestSocketBadInput covers oversized and truncated packets on both protocols.
func TestSocketBadInput(t *testing.T) {
	t.Run("udp", func(t *testing.T) {
		port := testutil.FreePort(t, "udp")
		cfg := pairConfig(config.ProtoUDP, port, 2048, 1, 0)
		cfg.MemoryRegions[3].BufSize = 65536 // client TX buffers big enough for the test
		cfg.MemoryRegions[3].NumBufs = 16
		s := mustOpen(t, cfg)
		b, _ := s.TxBurst(1, 0, 1)
		if err := b.SetPacketLengths(0, 65508); err != nil {
			t.Fatal(err)
		}
		if err := s.Send(b); !errors.Is(err, daqiri.ErrInvalidParameter) {
			t.Fatalf("oversized datagram: %v, want ErrInvalidParameter", err)
		}
		b.Free() // still ours after ErrInvalidParameter
		// A datagram bigger than the server's 2048-byte buffers is counted as truncated;
		// the next one is received normally.
		c, err := net.Dial("udp4", netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port)).String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write(make([]byte, 3000))
		c.Write([]byte("fine"))
		rb := waitBurst(t, s, 0, 5*time.Second)
		if string(rb.Packet(0)) != "fine" {
			t.Fatalf("got %q", rb.Packet(0))
		}
		rb.Free()
		if d := s.Stats().Ports[0].Rx[0].Drops["truncated"]; d != 1 {
			t.Fatalf("truncated drops = %d, want 1", d)
		}
	})
	t.Run("tcp", func(t *testing.T) {
		port := testutil.FreePort(t, "tcp")
		cfg := pairConfig(config.ProtoTCP, port, 2048, 1, 0)
		cfg.Interfaces, cfg.MemoryRegions = cfg.Interfaces[:1], cfg.MemoryRegions[:2] // server only
		s := mustOpen(t, cfg)
		c, err := net.Dial("tcp4", netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port)).String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		frame := func(p []byte) []byte { return append(binary.BigEndian.AppendUint32(nil, uint32(len(p))), p...) }
		// A frame length above max_payload_size (here the 2048-byte buffers) is a protocol
		// error: that connection is closed and counted; the others are served on (issue 19
		// item 4: the reader used to skip the announced length, up to 4 GiB, losing every
		// frame after it on a connection that stayed open).
		bad, err := net.Dial("tcp4", netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port)).String())
		if err != nil {
			t.Fatal(err)
		}
		defer bad.Close()
		bad.Write(frame(make([]byte, 100_000)))
		bad.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := bad.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("connection that announced a 100000-byte frame still open: read %d, %v", n, err)
		}
		c.Write(frame([]byte("after")))
		var got *daqiri.Burst
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
			if b, err := s.RxBurstPort(0); err == nil {
				got = b
				break
			}
			time.Sleep(time.Millisecond)
		}
		if got == nil || string(got.Packet(0)) != "after" {
			t.Fatal("frame on another connection was not received intact")
		}
		got.Free()
		if ev := s.Stats().Ports[0].Events; ev["connections_closed_frame_too_large"] != 1 || ev["connections_accepted"] != 2 {
			t.Fatalf("port events %v, want 1 connection closed for a frame too large, 2 accepted", ev)
		}
		if d := s.Stats().Ports[0].Rx[0].Dropped; d != 0 {
			t.Fatalf("drops %d: nothing was received of the oversized frame", d)
		}
		// A peer that dies in the middle of a frame leaves nothing behind.
		c.Write(frame(make([]byte, 1500))[:700])
		c.Close()
		deadline := time.Now().Add(5 * time.Second)
		for len(s.Conns(0)) != 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if n := len(s.Conns(0)); n != 0 {
			t.Fatalf("%d connections left after the peer died mid-frame", n)
		}
	})
}

// TestSessionReopenAndCloseUnderTraffic opens and closes a session several times while a
// sender and a receiver keep going, and checks that every buffer comes back (Close reports
// leaks) and that no goroutine is left behind.
func TestSessionReopenAndCloseUnderTraffic(t *testing.T) {
	base := runtime.NumGoroutine()
	port := testutil.FreePort(t, "udp")
	for round := 0; round < 3; round++ {
		s, err := daqiri.Open(context.Background(), pairConfig(config.ProtoUDP, port, 2048, 16, 100))
		if err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		done := make(chan struct{}, 2)
		go func() {
			defer func() { done <- struct{}{} }()
			for {
				select {
				case <-stop:
					return
				default:
				}
				b, err := s.TxBurst(1, 0, 16)
				if err != nil {
					runtime.Gosched()
					continue
				}
				b.SetAllPacketLengths(1000)
				if s.Send(b) != nil {
					b.Free()
				}
			}
		}()
		go func() {
			defer func() { done <- struct{}{} }()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if b, err := s.RxBurstAny(); err == nil {
					b.Free()
				} else {
					runtime.Gosched()
				}
			}
		}()
		time.Sleep(100 * time.Millisecond)
		// Close while both run; they stop on their own once the session refuses calls.
		closeErr := make(chan error, 1)
		go func() { closeErr <- s.Close() }()
		time.Sleep(20 * time.Millisecond)
		close(stop)
		<-done
		<-done
		if err := <-closeErr; err != nil {
			t.Fatalf("round %d: close under traffic: %v", round, err)
		}
		if _, err := s.TxBurst(1, 0, 1); !errors.Is(err, daqiri.ErrNotReady) {
			t.Fatalf("TxBurst after Close: %v", err)
		}
		rx := s.Stats().Ports[0].Rx[0]
		if rx.Packets == 0 {
			t.Fatalf("round %d: no traffic flowed", round)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines left behind:\n%s", n-base, buf[:runtime.Stack(buf, true)])
	}
}

// TestUpstreamExamplesOpen opens every upstream example: socket and software-loopback ones
// run here; every other one fails with an error that names what is missing and where.
func TestUpstreamExamplesOpen(t *testing.T) {
	files, _ := filepathGlob("config/testdata/upstream/*.yaml")
	if len(files) != 33 {
		t.Fatalf("found %d upstream examples, want 33", len(files))
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(f[strings.LastIndex(f, "/")+1:], ".yaml"), func(t *testing.T) {
			cfg, err := config.LoadFile(f)
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			s, err := daqiri.Open(context.Background(), cfg)
			if err == nil {
				// Only what needs no special hardware may open here: sockets on loopback and
				// the software loopback engine.
				for i := range cfg.Interfaces {
					if e, _ := cfg.ResolveEngine(i); e != config.EngineSocket && e != config.EngineLoopback {
						t.Errorf("interface %d (engine %s) opened on this machine", i, e)
					}
				}
				s.Close()
				return
			}
			msg := err.Error()
			if !strings.Contains(msg, ".yaml:") && !strings.Contains(msg, "interfaces[") && !strings.Contains(msg, "memory_regions[") {
				t.Errorf("error does not point at the config: %v", err)
			}
			for _, want := range []string{"placeholder", "engine", "memory kind", "roce", "CUDA", "GPU", "address", "hugepages"} {
				if strings.Contains(msg, want) {
					return
				}
			}
			t.Errorf("error does not name the feature or engine: %v", err)
		})
	}
}

func filepathGlob(p string) ([]string, error) { return filepath.Glob(p) }
