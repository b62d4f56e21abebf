package daqiri_test

import (
	"encoding/binary"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/internal/testutil"
)

// osThreads is the process's thread count (Threads: in /proc/self/status).
func osThreads(t *testing.T) int {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	t.Fatal("no Threads: line")
	return 0
}

// waitEvents waits (bounded) until the port's events satisfy ok.
func waitEvents(t *testing.T, s *daqiri.Session, port int, ok func(map[string]uint64) bool) map[string]uint64 {
	t.Helper()
	var ev map[string]uint64
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if ev = s.Stats().Ports[port].Events; ok(ev) {
			return ev
		}
	}
	t.Fatalf("port events %v never reached the expected state", ev)
	return nil
}

// TestTCPManyIdlePeers (issue 19 item 1): a peer opening many idle connections used to get a
// locked OS thread each, without limit, until Go's thread limit killed the process. Now the
// server's worker serves every connection through epoll: the thread count does not grow with
// peers, connections past max_connections (default 128, as upstream's backlog) are refused
// and counted, and once peers leave new ones are served again.
func TestTCPManyIdlePeers(t *testing.T) {
	const peers = 200
	port := testutil.FreePort(t, "tcp")
	cfg := pairConfig(config.ProtoTCP, port, 2048, 16, 0)
	cfg.Interfaces, cfg.MemoryRegions = cfg.Interfaces[:1], cfg.MemoryRegions[:2] // server only
	s := mustOpen(t, cfg)
	addr := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port)).String()
	before := osThreads(t)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < peers; i++ {
		c, err := net.DialTimeout("tcp4", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("peer %d: %v", i, err)
		}
		conns = append(conns, c)
	}
	ev := waitEvents(t, s, 0, func(ev map[string]uint64) bool {
		return ev["connections_accepted"]+ev["connections_refused_max_connections"] == peers
	})
	if ev["connections_accepted"] != config.MaxConnections || ev["connections_refused_max_connections"] != peers-config.MaxConnections {
		t.Fatalf("events %v: want %d accepted, %d refused", ev, config.MaxConnections, peers-config.MaxConnections)
	}
	if n := len(s.Conns(0)); n != config.MaxConnections {
		t.Fatalf("%d live connections, want %d", n, config.MaxConnections)
	}
	if after := osThreads(t); after > before+4 {
		t.Fatalf("threads grew from %d to %d with %d idle peers", before, after, peers)
	}
	// An accepted peer is served while the others idle; a refused one was closed.
	frame := append(binary.BigEndian.AppendUint32(nil, 5), "hello"...)
	served := 0
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err != nil && strings.Contains(err.Error(), "timeout") {
			if served == 0 {
				c.Write(frame)
			}
			served++
		}
	}
	if served != config.MaxConnections {
		t.Fatalf("%d connections open from the peers' side, want %d", served, config.MaxConnections)
	}
	b := waitBurst(t, s, 0, 5*time.Second)
	if string(b.Packet(0)) != "hello" {
		t.Fatalf("got %q", b.Packet(0))
	}
	b.Free()
	// Peers leave: their connections are closed and new peers are served.
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	for deadline := time.Now().Add(10 * time.Second); len(s.Conns(0)) != 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if n := len(s.Conns(0)); n != 0 {
		t.Fatalf("%d connections left after every peer closed", n)
	}
	c, err := net.DialTimeout("tcp4", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	conns = append(conns, c)
	waitEvents(t, s, 0, func(ev map[string]uint64) bool { return ev["connections_accepted"] == config.MaxConnections+1 })
	if after := osThreads(t); after > before+4 {
		t.Fatalf("threads grew from %d to %d", before, after)
	}
}

// TestTCPMaxConnectionsConfigured: socket_config.max_connections sets the cap.
func TestTCPMaxConnectionsConfigured(t *testing.T) {
	port := testutil.FreePort(t, "tcp")
	cfg := pairConfig(config.ProtoTCP, port, 2048, 16, 0)
	cfg.Interfaces, cfg.MemoryRegions = cfg.Interfaces[:1], cfg.MemoryRegions[:2]
	cfg.Interfaces[0].Socket.MaxConnections = 3
	s := mustOpen(t, cfg)
	addr := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port)).String()
	for i := 0; i < 5; i++ {
		c, err := net.DialTimeout("tcp4", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	ev := waitEvents(t, s, 0, func(ev map[string]uint64) bool {
		return ev["connections_accepted"]+ev["connections_refused_max_connections"] == 5
	})
	if ev["connections_accepted"] != 3 || ev["connections_refused_max_connections"] != 2 {
		t.Fatalf("events %v, want 3 accepted and 2 refused", ev)
	}
}

// TestTCPStallResumes: when the application holds every buffer, the server stops reading;
// frames already in its staging buffer are delivered once buffers come back, although the
// socket has nothing more to wake the worker with.
func TestTCPStallResumes(t *testing.T) {
	const frames = 64
	s, c := tcpServer(t, 2048, 1, 0, func(cfg *config.Config) { cfg.MemoryRegions[0].NumBufs = 8 })
	var stream []byte
	for i := 0; i < frames; i++ {
		stream = binary.BigEndian.AppendUint32(stream, 4)
		stream = binary.BigEndian.AppendUint32(stream, uint32(i))
	}
	if _, err := c.Write(stream); err != nil { // one write: all frames staged at once
		t.Fatal(err)
	}
	var held []*daqiri.Burst
	for len(held) < 8 {
		held = append(held, waitBurst(t, s, 0, 5*time.Second))
	}
	for _, b := range held {
		b.Free()
	}
	for i := 8; i < frames; i++ {
		b := waitBurst(t, s, 0, 5*time.Second)
		if got := binary.BigEndian.Uint32(b.Packet(0)); got != uint32(i) {
			t.Fatalf("frame %d carries %d", i, got)
		}
		b.Free()
	}
}

// TestTCPMetadataStallResumes: when the application holds every burst's metadata while
// buffers are still free, frames the server has already read (several per call, issue 18)
// wait for metadata instead of being dropped, and arrive whole and in order once the
// application frees its bursts.
func TestTCPMetadataStallResumes(t *testing.T) {
	const frames, size, meta = 200, 8192, 4
	s, c := tcpServer(t, 9000, 1, 0, func(cfg *config.Config) { cfg.RxMetaBuffers = meta })
	go c.Write(numberedFrames(frames, size)) // the server may read it only as bursts are freed
	var held []*daqiri.Burst
	for len(held) < meta {
		held = append(held, waitBurst(t, s, 0, 5*time.Second))
	}
	next := 0
	check := func(b *daqiri.Burst) {
		for i := 0; i < b.Len(); i++ {
			p := b.Packet(i)
			if len(p) != size || binary.BigEndian.Uint32(p) != uint32(next) || p[size-1] != byte(next) {
				t.Fatalf("packet %d: %d bytes carrying %d, want frame %d", next, len(p), binary.BigEndian.Uint32(p), next)
			}
			next++
		}
		b.Free()
	}
	for _, b := range held {
		check(b)
	}
	for next < frames {
		check(waitBurst(t, s, 0, 5*time.Second))
	}
	rx, _ := s.Stats().Totals()
	if rx.Dropped != 0 {
		t.Fatalf("%d frames dropped", rx.Dropped)
	}
}

// TestTCPBurstBytes: a receive burst of large frames is handed over once it holds 256 KiB,
// long before batch_size frames or its timeout, so that the application returns their
// buffers to the pool while they are still in the cache (issue 18).
func TestTCPBurstBytes(t *testing.T) {
	const frames, size = 40, 64000
	s, c := tcpServer(t, 65536, 256, 500000, nil)
	go c.Write(numberedFrames(frames, size))
	most := (256<<10)/size + 1
	for next := 0; next < frames; {
		b := waitBurst(t, s, 0, 5*time.Second)
		if b.Len() > most {
			t.Fatalf("a burst of %d frames of %d bytes, want at most %d", b.Len(), size, most)
		}
		for i := 0; i < b.Len(); i++ {
			if got := binary.BigEndian.Uint32(b.Packet(i)); got != uint32(next) {
				t.Fatalf("frame %d carries %d", next, got)
			}
			next++
		}
		b.Free()
	}
}

// tcpServer opens a session whose one TCP server (pairConfig's first interface and its two
// regions, with buffers of bufSize; tweak, if set, adjusts the configuration first) listens
// on a free loopback port, and dials it. The connection closes with the test.
func tcpServer(t *testing.T, bufSize, batch, timeoutUs int, tweak func(*config.Config)) (*daqiri.Session, net.Conn) {
	t.Helper()
	port := testutil.FreePort(t, "tcp")
	cfg := pairConfig(config.ProtoTCP, port, bufSize, batch, timeoutUs)
	cfg.Interfaces, cfg.MemoryRegions = cfg.Interfaces[:1], cfg.MemoryRegions[:2]
	if tweak != nil {
		tweak(cfg)
	}
	s := mustOpen(t, cfg)
	c, err := net.DialTimeout("tcp4", netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port)).String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return s, c
}

// numberedFrames is a TCP stream of n length-prefixed frames of size bytes, frame i carrying
// i in its first four bytes and byte(i) in its last.
func numberedFrames(n, size int) []byte {
	var stream []byte
	for i := range n {
		stream = binary.BigEndian.AppendUint32(stream, uint32(size))
		p := make([]byte, size)
		binary.BigEndian.PutUint32(p, uint32(i))
		p[size-1] = byte(i)
		stream = append(stream, p...)
	}
	return stream
}

// TestTCPStreamTail: after a fast stream (reads of 256 KiB and more raise the connection's
// SO_RCVLOWAT, issue 18) a tail far below the mark still arrives: frames of random sizes,
// bursts of a few MiB written at once, each followed by a few small frames and a pause.
func TestTCPStreamTail(t *testing.T) {
	s, c := tcpServer(t, 65536, 64, 0, func(cfg *config.Config) { cfg.MemoryRegions[0].NumBufs = 1024 })
	r := rand.New(rand.NewPCG(rand.Uint64(), 5))
	next := 0
	for round := 0; round < 6; round++ {
		var stream []byte
		var sizes []int
		add := func(size int) {
			stream = binary.BigEndian.AppendUint32(stream, uint32(size))
			p := make([]byte, size)
			binary.BigEndian.PutUint32(p, uint32(next+len(sizes)))
			p[size-1] = byte(next + len(sizes))
			stream = append(stream, p...)
			sizes = append(sizes, size)
		}
		for len(stream) < 2<<20+r.IntN(2<<20) {
			add(4 + r.IntN(65536-4))
		}
		for k := 1 + r.IntN(3); k > 0; k-- {
			add(4 + r.IntN(200))
		}
		if _, err := c.Write(stream); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(sizes); {
			b := waitBurst(t, s, 0, 5*time.Second)
			for j := 0; j < b.Len(); j, i = j+1, i+1 {
				p := b.Packet(j)
				if i >= len(sizes) || len(p) != sizes[i] || binary.BigEndian.Uint32(p) != uint32(next+i) || p[len(p)-1] != byte(next+i) {
					t.Fatalf("round %d: packet %d of %d: %d bytes carrying %d", round, i, len(sizes), len(p), binary.BigEndian.Uint32(p))
				}
			}
			b.Free()
		}
		next += len(sizes)
		time.Sleep(time.Duration(r.IntN(3)) * time.Millisecond)
	}
	rx, _ := s.Stats().Totals()
	if rx.Dropped != 0 {
		t.Fatalf("%d frames dropped", rx.Dropped)
	}
}
