package integration

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/integration/netns"
)

// TestResolveIPv4MACOnVeth (issue 32 item 4): an engine xdp session on a veth whose
// neighbour entries are left to ARP resolves the peer's MAC through the kernel
// (Session.ResolveIPv4MAC, upstream resolve_ipv4_mac), and a UDP datagram sent as a raw frame
// to that MAC reaches the peer's kernel socket (a frame to any other unicast MAC is
// PACKET_OTHERHOST there and dropped); an address nobody holds fails after the timeout with
// an error naming it; bad input names what is wrong.
func TestResolveIPv4MACOnVeth(t *testing.T) {
	p := netns.NewPairWith(t, netns.PairOptions{ARP: true})
	tx := config.Interface{Name: "tx", Address: p.VethA, TX: &config.TxConfig{
		Queues: []config.Queue{{Name: "t0", ID: 0, CPUCore: "0", BatchSize: 8, MemoryRegions: []string{"tx0"}}}}}
	s := openXDP(t, p.A, rawConfig(tx))
	kern := listenUDP(t, p.B, netip.AddrPortFrom(p.AddrB, 8011))
	b4 := p.AddrB.As4()
	nobody := netip.AddrFrom4([4]byte{b4[0], b4[1], b4[2], 77})
	var mac []byte
	if err := p.A.Do(func() error {
		m, err := s.ResolveIPv4MAC(0, p.AddrB, 5*time.Second)
		if err != nil {
			return err
		}
		mac = m
		_, err = s.ResolveIPv4MAC(0, nobody, 1200*time.Millisecond)
		if err == nil || !strings.Contains(err.Error(), nobody.String()) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("resolve %v (nobody): %v, want a timeout error naming the address", nobody, err)
		} else {
			t.Logf("no answer: %v", err)
		}
		return nil
	}); err != nil {
		t.Fatalf("resolve %v: %v", p.AddrB, err)
	}
	if !bytes.Equal(mac, p.MACB) {
		t.Fatalf("resolved %v to %v, want the peer's %v", p.AddrB, mac, p.MACB)
	}
	for _, c := range []struct {
		port    int
		dst     netip.Addr
		timeout time.Duration
		want    string
		is      error
	}{
		{0, netip.MustParseAddr("2001:db8::1"), time.Second, "not an IPv4 address", daqiri.ErrInvalidParameter},
		{0, netip.MustParseAddr("224.0.0.9"), time.Second, "multicast", daqiri.ErrInvalidParameter},
		{0, p.AddrB, 0, "timeout 0s must be > 0", daqiri.ErrInvalidParameter},
		{3, p.AddrB, time.Second, "port 3 of 1", daqiri.ErrInvalidParameter},
	} {
		_, err := s.ResolveIPv4MAC(c.port, c.dst, c.timeout)
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, c.is) {
			t.Errorf("port %d, %v, timeout %v: %v, want %q (%v)", c.port, c.dst, c.timeout, err, c.want, c.is)
		}
	}
	pl := []byte("<tag:resolved>")
	sent := false
	for try := 0; try < 1000 && !sent; try++ {
		b, err := s.TxBurst(0, 0, 1)
		if err != nil {
			time.Sleep(time.Millisecond)
			continue
		}
		if err := b.SetEthHeader(0, mac, p.MACA); err != nil {
			t.Fatal(err)
		}
		b.SetIPv4Header(0, 8+len(pl), 17, p.AddrA, p.AddrB)
		b.SetUDPHeader(0, len(pl), 5555, 8011)
		b.SetUDPPayload(0, pl)
		if err := s.Send(b); err != nil {
			b.Free()
			time.Sleep(time.Millisecond)
			continue
		}
		sent = true
	}
	if !sent {
		t.Fatal("the frame was not sent in 1000 tries")
	}
	if got := kern.drain(2 * time.Second); len(got) != 1 || got[0] != "resolved" {
		t.Fatalf("peer's kernel socket got %q, want the one datagram sent to the resolved MAC", got)
	}
}

// TestResolveIPv4MACWithoutNetdev: a port with no kernel network interface (the software
// loopback engine here; model ports and VFIO-bound functions likewise) is told so, naming the
// port, with ErrNotSupported.
func TestResolveIPv4MACWithoutNetdev(t *testing.T) {
	cfg := rawConfig(config.Interface{Name: "lo0", Address: "0000:00:00.0", TX: &config.TxConfig{
		Queues: []config.Queue{{Name: "t0", ID: 0, CPUCore: "0", BatchSize: 8, MemoryRegions: []string{"tx0"}}}}})
	cfg.Loopback = "sw"
	s, err := daqiri.Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.ResolveIPv4MAC(0, netip.MustParseAddr("192.0.2.1"), time.Second)
	if err == nil || !errors.Is(err, daqiri.ErrNotSupported) || !strings.Contains(err.Error(), "lo0") || !strings.Contains(err.Error(), "no kernel network interface") {
		t.Fatalf("resolve on a software-loopback port: %v, want ErrNotSupported naming the port", err)
	}
}
