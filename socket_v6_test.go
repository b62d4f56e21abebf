package daqiri_test

import (
	"bytes"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/internal/testutil"
)

// TestSocketIPv6 moves random payloads from client to server over ::1 with udp://[::1]:port
// and tcp://[::1]:port endpoints, every one whole and in order.
func TestSocketIPv6(t *testing.T) {
	for _, proto := range []config.Protocol{config.ProtoUDP, config.ProtoTCP} {
		cfg := pairConfig(proto, 0, 2048, 16, 100)
		l, err := net.Listen("tcp6", "[::1]:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		for i := range cfg.Interfaces {
			sc := cfg.Interfaces[i].Socket
			if sc.Mode == config.ModeServer {
				sc.Local = config.Endpoint{Proto: proto, Host: "::1", Port: port}
			} else {
				sc.Remote = config.Endpoint{Proto: proto, Host: "::1", Port: port}
			}
			cfg.Interfaces[i].Address = "::1"
		}
		if got := cfg.Interfaces[0].Socket.Local.String(); got != string(proto)+"://[::1]:"+itoa(port) {
			t.Fatalf("endpoint written as %q", got)
		}
		s := mustOpen(t, cfg)
		payloads := randomPayloads(200, 1, 1400)
		sendAll(t, s, 1, payloads, 16)
		got := recvAll(t, s, 0, len(payloads), 10*time.Second)
		if len(got) != len(payloads) {
			t.Fatalf("%s over ::1: %d of %d", proto, len(got), len(payloads))
		}
		for i := range got {
			if !bytes.Equal(got[i], payloads[i]) {
				t.Fatalf("%s over ::1: payload %d differs", proto, i)
			}
		}
	}
}

func itoa(n int) string { return netip.AddrPortFrom(netip.IPv4Unspecified(), uint16(n)).String()[8:] }

// TestUDPServerRemoteAddr: a UDP server with remote_addr takes datagrams from that peer only;
// another sender's are dropped and counted as peer_filtered, exactly.
func TestUDPServerRemoteAddr(t *testing.T) {
	port := testutil.FreePort(t, "udp")
	cliPort := testutil.FreePort(t, "udp")
	cfg := pairConfig(config.ProtoUDP, port, 2048, 16, 100)
	cfg.Interfaces[0].Socket.Remote = config.Endpoint{Proto: config.ProtoUDP, Host: "127.0.0.1", Port: cliPort}
	cfg.Interfaces[1].Socket.Local = config.Endpoint{Proto: config.ProtoUDP, Host: "127.0.0.1", Port: cliPort}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s := mustOpen(t, cfg)
	rogue, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
	if err != nil {
		t.Fatal(err)
	}
	defer rogue.Close()
	const n, bad = 50, 37
	for i := 0; i < bad; i++ {
		if _, err := rogue.Write([]byte("rogue")); err != nil {
			t.Fatal(err)
		}
	}
	payloads := randomPayloads(n, 10, 100)
	sendAll(t, s, 1, payloads, 16)
	got := recvAll(t, s, 0, n, 10*time.Second)
	for _, g := range got {
		if string(g) == "rogue" {
			t.Fatal("a datagram from another peer was delivered")
		}
	}
	var filtered uint64
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if filtered = s.Stats().Ports[0].Rx[0].Drops["peer_filtered"]; filtered == bad {
			break
		}
	}
	if len(got) != n || filtered != bad {
		t.Fatalf("received %d of %d from the peer, %d of %d others counted peer_filtered", len(got), n, filtered, bad)
	}
}
