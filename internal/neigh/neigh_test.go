package neigh

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/integration/netns"
	"github.com/vishvananda/netlink"
)

func TestCheckIPv4(t *testing.T) {
	for _, c := range []struct {
		addr netip.Addr
		want string
	}{
		{netip.Addr{}, "no destination"},
		{netip.MustParseAddr("2001:db8::1"), "not an IPv4"},
		{netip.MustParseAddr("0.0.0.0"), "not a unicast"},
		{netip.MustParseAddr("255.255.255.255"), "not a unicast"},
		{netip.MustParseAddr("239.1.2.3"), "multicast"},
		{netip.MustParseAddr("127.0.0.1"), "loopback"},
	} {
		err := CheckIPv4(c.addr)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error saying %q", c.addr, err, c.want)
		}
	}
	if err := CheckIPv4(netip.MustParseAddr("192.0.2.1")); err != nil {
		t.Errorf("192.0.2.1: %v", err)
	}
}

func TestARPPackets(t *testing.T) {
	mac := net.HardwareAddr{2, 1, 2, 3, 4, 5}
	src, dst := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	req := arpRequest(mac, src, dst)
	want := []byte{0, 1, 8, 0, 6, 4, 0, 1, 2, 1, 2, 3, 4, 5, 192, 0, 2, 1, 0, 0, 0, 0, 0, 0, 192, 0, 2, 2}
	if !bytes.Equal(req, want) {
		t.Fatalf("request % x, want % x", req, want)
	}
	if _, ok := arpAnswer(req, dst); ok {
		t.Error("a request was taken for an answer")
	}
	peer := net.HardwareAddr{2, 9, 9, 9, 9, 9}
	reply := append([]byte{0, 1, 8, 0, 6, 4, 0, 2}, peer...)
	reply = append(append(append(reply, 192, 0, 2, 2), mac...), 192, 0, 2, 1)
	if m, ok := arpAnswer(reply, dst); !ok || !bytes.Equal(m, peer) {
		t.Errorf("reply from %v: %v %v, want %v", dst, m, ok, peer)
	}
	if _, ok := arpAnswer(reply, src); ok {
		t.Error("a reply from another address was taken")
	}
	if _, ok := arpAnswer(reply[:27], dst); ok {
		t.Error("a short packet was taken")
	}
}

// TestResolveOnVeth (issue 32 item 4): on a veth pair whose neighbour entries are left to
// ARP, the kernel path resolves the peer (and a gateway's off-link destination to the
// gateway's MAC); an address nobody holds ends in an error naming it; with no IPv4 address on
// the interface, ARP requests sent on the interface itself resolve the peer.
func TestResolveOnVeth(t *testing.T) {
	p := netns.NewPairWith(t, netns.PairOptions{ARP: true})
	b4 := p.AddrB.As4()
	nobody := netip.AddrFrom4([4]byte{b4[0], b4[1], b4[2], 3})
	err := p.A.Do(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if n, _ := lookup(mustIndex(t, p.VethA), p.AddrB); n != nil && n.State&(netlink.NUD_REACHABLE|netlink.NUD_STALE|netlink.NUD_PERMANENT) != 0 {
			t.Errorf("neighbour entry for %v before resolving: %+v (the pair pinned it?)", p.AddrB, n)
		}
		r, err := Resolve(ctx, p.VethA, p.AddrB)
		if err != nil {
			t.Errorf("resolve %v: %v", p.AddrB, err)
		} else if !bytes.Equal(r.MAC, p.MACB) || r.NextHop != p.AddrB || r.Via != "neighbour table" {
			t.Errorf("resolve %v: %+v, want %v via the neighbour table", p.AddrB, r, p.MACB)
		}
		// Off-link: the route's gateway is resolved.
		_, off, _ := net.ParseCIDR("198.51.100.0/24")
		if err := netlink.RouteAdd(&netlink.Route{LinkIndex: mustIndex(t, p.VethA), Dst: off, Gw: p.AddrB.AsSlice()}); err != nil {
			return err
		}
		r, err = Resolve(ctx, p.VethA, netip.MustParseAddr("198.51.100.7"))
		if err != nil || !bytes.Equal(r.MAC, p.MACB) || r.NextHop != p.AddrB {
			t.Errorf("resolve 198.51.100.7 via %v: %+v %v, want %v", p.AddrB, r, err, p.MACB)
		}
		// No answer.
		short, cancel2 := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel2()
		_, err = Resolve(short, p.VethA, nobody)
		if err == nil || !strings.Contains(err.Error(), nobody.String()) || !strings.Contains(err.Error(), p.VethA) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("resolve %v (nobody): %v, want a deadline error naming the address and %s", nobody, err, p.VethA)
		}
		// Without an IPv4 address the kernel cannot ARP there: the request goes out on the
		// interface from 0.0.0.0 (a probe), which the peer's kernel answers.
		l, err := netlink.LinkByName(p.VethA)
		if err != nil {
			return err
		}
		addrs, err := netlink.AddrList(l, netlink.FAMILY_V4)
		if err != nil {
			return err
		}
		for _, a := range addrs {
			if err := netlink.AddrDel(l, &a); err != nil {
				return err
			}
		}
		r, err = Resolve(ctx, p.VethA, p.AddrB)
		if err != nil || !bytes.Equal(r.MAC, p.MACB) || r.Via != "arp" {
			t.Errorf("resolve %v without an address on %s: %+v %v, want %v by ARP", p.AddrB, p.VethA, r, err, p.MACB)
		}
		short3, cancel3 := context.WithTimeout(context.Background(), 700*time.Millisecond)
		defer cancel3()
		_, err = Resolve(short3, p.VethA, nobody)
		if err == nil || !strings.Contains(err.Error(), "no ARP answer for "+nobody.String()+" on "+p.VethA) {
			t.Errorf("ARP for %v (nobody): %v, want an error naming the address", nobody, err)
		}
		if _, err := Resolve(ctx, "dq-no-such-if", p.AddrB); err == nil || !strings.Contains(err.Error(), "dq-no-such-if") {
			t.Errorf("missing interface: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func mustIndex(t *testing.T, name string) int {
	t.Helper()
	l, err := netlink.LinkByName(name)
	if err != nil {
		t.Fatalf("interface %s: %v", name, err)
	}
	return l.Attrs().Index
}
