package socket

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/internal/sockio"
	"github.com/daqiri-go/daqiri/internal/testutil"
	"github.com/daqiri-go/daqiri/internal/testutil/enginetest"
	"github.com/daqiri-go/daqiri/internal/testutil/regiontest"
)

// pair is a server (RX queue) and a client (TX queue) on one loopback port.
func pair(proto config.Protocol, port, bufSize int) *config.Config {
	ep := func(p int) config.Endpoint { return config.Endpoint{Proto: proto, Host: "127.0.0.1", Port: p} }
	mr := func(name string) config.MemoryRegion {
		return config.MemoryRegion{Name: name, Kind: config.KindHost, Access: config.AccessLocal, NumBufs: 256, BufSize: bufSize}
	}
	q := func(name, mr string) config.Queue {
		return config.Queue{Name: name, ID: 0, CPUCore: "0", BatchSize: 16, TimeoutUs: 0, MemoryRegions: []string{mr}}
	}
	return &config.Config{
		Version: 1, StreamType: config.StreamSocket, LogLevel: "error", RxMetaBuffers: 256, TxMetaBuffers: 64, // the test holds every burst it receives (up to one per packet) before freeing
		MemoryRegions: []config.MemoryRegion{mr("srv_rx"), mr("cli_tx")},
		Interfaces: []config.Interface{
			{Name: "server", Address: "127.0.0.1", Socket: &config.SocketConfig{Mode: config.ModeServer, Local: ep(port), RetryConnectS: 1},
				RX: &config.RxConfig{Queues: []config.Queue{q("srx", "srv_rx")}}},
			{Name: "client", Address: "127.0.0.1", Socket: &config.SocketConfig{Mode: config.ModeClient, Remote: ep(port), RetryConnectS: 1},
				TX: &config.TxConfig{Queues: []config.Queue{q("ctx", "cli_tx")}}},
		},
	}
}

// roundTrip sends random payloads of 1..maxLen bytes from the client and checks the server
// receives each one whole, in order, with its connection id. UDP has no flow control: a
// sender that outruns the receiving worker overflows the socket buffer and the kernel drops
// (counted, but then not delivered), so over UDP each burst is received before the next is
// sent; TCP streams all of them at once.
func roundTrip(t *testing.T, proto config.Protocol, maxLen int) {
	cfg := pair(proto, testutil.FreePort(t, string(proto)), maxLen)
	e, ports := enginetest.Open(t, cfg, Open)
	srv, cli := ports[0], ports[1]
	r := rand.New(rand.NewPCG(rand.Uint64(), 5))
	var sent, got [][]byte
	var conn uint64
	// take copies the packets of bursts and frees them at once (held bursts would exhaust the
	// receive metadata pool).
	take := func(bs []*engine.Burst) {
		for _, b := range bs {
			for i := 0; i < b.Len(); i++ {
				got = append(got, append([]byte(nil), b.Packet(i)...))
			}
			if conn == 0 {
				conn = b.ConnID()
			}
			if b.ConnID() != conn || conn == 0 {
				t.Fatalf("bursts from connections %d and %d", conn, b.ConnID())
			}
			b.Free()
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(sent) < 200 && time.Now().Before(deadline) {
		n := 1 + r.IntN(16)
		b, err := cli.Tx[0].NewBurst(n)
		if err != nil {
			t.Fatal(err)
		}
		var ps [][]byte
		for i := 0; i < n; i++ {
			p := testutil.RandBytes(1 + r.IntN(maxLen))
			if err := b.SetPacketLengths(i, len(p)); err != nil {
				t.Fatal(err)
			}
			copy(b.Packet(i), p)
			ps = append(ps, p)
		}
		err = e.Send(b)
		if errors.Is(err, engine.ErrNotReady) { // TCP still connecting in the background
			b.Free()
			time.Sleep(time.Millisecond)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, ps...)
		if proto == config.ProtoUDP {
			take(enginetest.Receive(t, srv.Rx[0], len(ps), 20*time.Second))
		}
	}
	if len(sent) < 200 {
		t.Fatalf("sent %d packets before the deadline", len(sent))
	}
	if proto != config.ProtoUDP {
		take(enginetest.Receive(t, srv.Rx[0], len(sent), 20*time.Second))
	}
	if len(got) != len(sent) {
		t.Fatalf("%s: received %d of %d packets", proto, len(got), len(sent))
	}
	for i := range sent {
		if !bytes.Equal(got[i], sent[i]) {
			t.Fatalf("%s: packet %d differs (%d bytes, sent %d)", proto, i, len(got[i]), len(sent[i]))
		}
	}
	st := srv.Rx[0].Stats.Snapshot()
	if st.Packets != uint64(len(sent)) || st.Dropped != 0 {
		t.Fatalf("%s: server counted %+v", proto, st)
	}
	if id, err := e.(*Engine).ConnID(0); err != nil || id != conn {
		t.Fatalf("ConnID(server) = %d, %v; bursts carried %d", id, err, conn)
	}
}

// TestUDPRoundTrip and TestTCPRoundTrip run the engine without a session: random packets
// from client to server over loopback, every one back whole, in order, counted, and every
// buffer in its region at the end.
func TestUDPRoundTrip(t *testing.T) {
	testutil.RequireUDPSocketOption(t, "SO_RXQ_OVFL", unix.SO_RXQ_OVFL) // sockio's UDP sockets set it
	roundTrip(t, config.ProtoUDP, 8000)
}
func TestTCPRoundTrip(t *testing.T) { roundTrip(t, config.ProtoTCP, 40000) }

// TestBadEndpoints: what the engine refuses at open, each error naming the problem.
func TestBadEndpoints(t *testing.T) {
	if a, err := parseAddr(config.Endpoint{}); err != nil || a.IsValid() {
		t.Fatalf("zero endpoint: %v %v", a, err)
	}
	if a, err := parseAddr(config.Endpoint{Proto: config.ProtoUDP, Host: "10.1.2.3", Port: 9}); err != nil || a != netip.MustParseAddrPort("10.1.2.3:9") {
		t.Fatalf("10.1.2.3:9: %v %v", a, err)
	}
	if _, err := parseAddr(config.Endpoint{Proto: config.ProtoUDP, Host: "example.org", Port: 9}); err == nil || !strings.Contains(err.Error(), "needs an IP address") {
		t.Fatalf("host name: %v", err)
	}
	if a, err := parseAddr(config.Endpoint{Proto: config.ProtoUDP, Host: "::1", Port: 9}); err != nil || a != netip.MustParseAddrPort("[::1]:9") {
		t.Fatalf("[::1]:9: %v %v", a, err)
	}
	cfg := pair(config.ProtoUDP, 9, 64)
	host := regiontest.Host(t, "h", 4, 64)
	dev, err := engine.NewRegion(&config.MemoryRegion{Name: "d", Kind: config.KindDevice, NumBufs: 4, BufSize: 64}, deviceMem{})
	if err != nil {
		t.Fatal(err)
	}
	if err := checkRegions(cfg, "interfaces[0].rx.queues[0]", []*engine.Region{host}); err != nil {
		t.Fatal(err)
	}
	if err := checkRegions(cfg, "q", []*engine.Region{host, host}); err == nil || !strings.Contains(err.Error(), "exactly one memory region") {
		t.Fatalf("two regions: %v", err)
	}
	if err := checkRegions(cfg, "q", []*engine.Region{dev}); err == nil || !strings.Contains(err.Error(), "CPU-addressable") {
		t.Fatalf("device memory: %v", err)
	}
}

// deviceMem stands in for GPU memory: an address, no bytes the CPU can touch.
type deviceMem struct{}

func (deviceMem) Bytes() []byte { return nil }
func (deviceMem) Addr() uintptr { return 1 << 40 }
func (deviceMem) Close() error  { return nil }

// TestPace: a serve that took streamLowat bytes or more raises the connection's SO_RCVLOWAT
// to streamLowat (and counts it on the endpoint, which then keeps its waits to lowatCheck);
// one that took less lowers it to 1 again.
func TestPace(t *testing.T) {
	o := sockio.Options{PollTimeout: 50 * time.Millisecond}
	l, err := sockio.ListenTCP(netip.MustParseAddrPort("127.0.0.1:0"), 1, o)
	if err != nil {
		t.Fatal(err)
	}
	defer testutil.CloseOK(t, l)
	c, err := sockio.DialTCP(netip.AddrPort{}, l.LocalAddr(), time.Second, o)
	if err != nil {
		t.Fatal(err)
	}
	defer testutil.CloseOK(t, c)
	s, _, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer testutil.CloseOK(t, s)
	ep := &endpoint{}
	rc := &rxConn{c: &conn{tcp: s}}
	mark := func() int {
		v, err := s.SockoptInt(unix.SOL_SOCKET, unix.SO_RCVLOWAT)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	r := rand.New(rand.NewPCG(rand.Uint64(), 4))
	for i, step := range []struct {
		n      uint64
		raised bool
	}{
		{uint64(r.IntN(streamLowat)), false},
		{streamLowat + uint64(r.IntN(1<<20)), true},
		{streamLowat, true},
		{uint64(r.IntN(streamLowat)), false},
		{streamLowat + uint64(r.IntN(1<<20)), true},
	} {
		before := time.Now()
		ep.pace(rc, step.n)
		want, count := 1, 0
		if step.raised {
			want, count = streamLowat, 1
			if rc.served.Before(before) {
				t.Fatalf("step %d: served %v, before the call at %v", i, rc.served, before)
			}
		}
		if rc.raised != step.raised || ep.raised != count || mark() != want {
			t.Fatalf("step %d (%d bytes): raised %v, endpoint count %d, SO_RCVLOWAT %d; want %v, %d, %d", i, step.n, rc.raised, ep.raised, mark(), step.raised, count, want)
		}
	}
}
