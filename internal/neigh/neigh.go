// Package neigh finds the Ethernet address that IPv4 frames to a destination leave a Linux
// network interface for: the kernel's neighbour table (netlink RTM_GETROUTE, RTM_GETNEIGH,
// and RTM_NEWNEIGH with NTF_USE to make the kernel run ARP), or an ARP request sent on the
// interface itself when the kernel cannot resolve there (no IPv4 address on it). Raw engines
// build whole frames in user space, so nothing else fills the destination MAC in for them.
//
// Everything runs in the network namespace of the calling thread.
package neigh

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Result is a resolved next hop.
type Result struct {
	MAC     net.HardwareAddr
	NextHop netip.Addr // the destination, or the gateway of an off-link route
	Via     string     // "neighbour table" or "arp"
}

// poll is how often the neighbour entry is read while the kernel resolves it: the kernel's
// ARP retransmit time is 1 s (net.ipv4.neigh.*.retrans_time_ms), a reply on a link takes
// microseconds, so 10 ms keeps the wait short without spinning.
const poll = 10 * time.Millisecond

// CheckIPv4 refuses destinations that have no single next hop to resolve.
func CheckIPv4(dst netip.Addr) error {
	switch {
	case !dst.IsValid():
		return errors.New("no destination address")
	case !dst.Is4():
		return fmt.Errorf("%v is not an IPv4 address", dst)
	case dst.IsUnspecified(), dst == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return fmt.Errorf("%v is not a unicast address", dst)
	case dst.IsMulticast():
		// A multicast MAC is derived from the group (RFC 1112 §6.4), never resolved.
		return fmt.Errorf("%v is a multicast group: its MAC is 01:00:5e plus the low 23 bits, not resolved", dst)
	case dst.IsLoopback():
		return fmt.Errorf("%v is a loopback address: it never leaves the host on a NIC", dst)
	}
	return nil
}

// Resolve finds the MAC for dst on interface ifname before ctx ends. When the interface has an
// IPv4 address the kernel resolves: the route to dst constrained to the interface names the
// next hop (dst on-link, else the gateway); a confirmed neighbour entry answers at once, a
// stale one is refreshed first, and otherwise the kernel runs ARP while Resolve waits. An
// interface without an IPv4 address cannot ARP in the kernel; Resolve then sends ARP requests
// on it itself (see ARP). The error of a wait that runs out names the address and interface.
func Resolve(ctx context.Context, ifname string, dst netip.Addr) (Result, error) {
	if err := CheckIPv4(dst); err != nil {
		return Result{}, err
	}
	l, err := netlink.LinkByName(ifname)
	if err != nil {
		return Result{}, fmt.Errorf("interface %q: %w", ifname, err)
	}
	a := l.Attrs()
	if a.Flags&net.FlagUp == 0 {
		return Result{}, fmt.Errorf("interface %s is down: it cannot resolve %v", ifname, dst)
	}
	addrs, err := netlink.AddrList(l, netlink.FAMILY_V4)
	if err != nil {
		return Result{}, fmt.Errorf("IPv4 addresses of %s: %w", ifname, err)
	}
	if len(addrs) == 0 {
		mac, err := ARP(ctx, ifname, netip.IPv4Unspecified(), dst)
		return Result{MAC: mac, NextHop: dst, Via: "arp"}, err
	}
	hop := dst
	routes, err := netlink.RouteGetWithOptions(dst.AsSlice(), &netlink.RouteGetOptions{OifIndex: a.Index})
	if err != nil {
		return Result{}, fmt.Errorf("no route to %v through %s: %w", dst, ifname, err)
	}
	if len(routes) > 0 && routes[0].Gw != nil {
		if gw, ok := netip.AddrFromSlice(routes[0].Gw.To4()); ok {
			hop = gw
		}
	}
	mac, err := kernel(ctx, a.Index, ifname, hop)
	if err != nil && hop != dst {
		err = fmt.Errorf("gateway %v of the route to %v: %w", hop, dst, err)
	}
	return Result{MAC: mac, NextHop: hop, Via: "neighbour table"}, err
}

// kernel waits for the kernel's neighbour entry of hop on the interface to be confirmed,
// asking the kernel to resolve it (again) while it is missing, stale or failed.
func kernel(ctx context.Context, ifindex int, ifname string, hop netip.Addr) (net.HardwareAddr, error) {
	const confirmed = netlink.NUD_REACHABLE | netlink.NUD_PERMANENT | netlink.NUD_NOARP
	asked := time.Time{}
	for {
		n, err := lookup(ifindex, hop)
		if err != nil {
			return nil, fmt.Errorf("neighbour table of %s: %w", ifname, err)
		}
		if n != nil && n.State&confirmed != 0 && len(n.HardwareAddr) == 6 {
			return n.HardwareAddr, nil
		}
		// Missing, incomplete, stale (refreshed before use), failed (asked again): NTF_USE
		// makes the kernel's neigh_add call neigh_event_send, which starts ARP for an entry
		// that is not resolving and does nothing to one that is (Linux net/core/neighbour.c).
		// Asking again each retransmit period restarts a failed entry.
		if asked.IsZero() || time.Since(asked) >= time.Second {
			err := netlink.NeighSet(&netlink.Neigh{LinkIndex: ifindex, Family: netlink.FAMILY_V4, IP: hop.AsSlice(), Flags: netlink.NTF_USE})
			if err != nil {
				return nil, fmt.Errorf("ask the kernel to resolve %v on %s (RTM_NEWNEIGH NTF_USE): %w", hop, ifname, err)
			}
			asked = time.Now()
		}
		state := "no entry"
		if n != nil {
			state = stateName(n.State)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("no ARP answer for %v on %s (neighbour entry %s): %w", hop, ifname, state, ctx.Err())
		case <-time.After(poll):
		}
	}
}

// lookup is the interface's neighbour entry for ip (RTM_GETNEIGH dump of the link), or nil.
func lookup(ifindex int, ip netip.Addr) (*netlink.Neigh, error) {
	ns, err := netlink.NeighList(ifindex, netlink.FAMILY_V4)
	if err != nil {
		return nil, err
	}
	for i := range ns {
		if a, ok := netip.AddrFromSlice(ns[i].IP.To4()); ok && a == ip {
			return &ns[i], nil
		}
	}
	return nil, nil
}

func stateName(s int) string {
	for _, n := range []struct {
		bit  int
		name string
	}{{netlink.NUD_INCOMPLETE, "incomplete"}, {netlink.NUD_REACHABLE, "reachable"}, {netlink.NUD_STALE, "stale"},
		{netlink.NUD_DELAY, "delay"}, {netlink.NUD_PROBE, "probe"}, {netlink.NUD_FAILED, "failed"},
		{netlink.NUD_NOARP, "noarp"}, {netlink.NUD_PERMANENT, "permanent"}} {
		if s&n.bit != 0 {
			return n.name
		}
	}
	return "none"
}

// ARP sends ARP requests for dst on interface ifname from sender address src (0.0.0.0: an ARP
// probe, which Linux answers for its own addresses, RFC 5227 §2.1.1) and returns the first
// answer's sender MAC. It repeats the request every 200 ms until ctx ends.
func ARP(ctx context.Context, ifname string, src, dst netip.Addr) (net.HardwareAddr, error) {
	if err := CheckIPv4(dst); err != nil {
		return nil, err
	}
	if !src.Is4() {
		return nil, fmt.Errorf("ARP sender address %v is not IPv4", src)
	}
	l, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("interface %q: %w", ifname, err)
	}
	if len(l.HardwareAddr) != 6 {
		return nil, fmt.Errorf("interface %s has no Ethernet address: it cannot send ARP", ifname)
	}
	s, err := openARP(l.Index)
	if err != nil {
		return nil, fmt.Errorf("ARP socket on %s: %w", ifname, err)
	}
	defer s.close()
	req := arpRequest(l.HardwareAddr, src, dst)
	const resend = 200 * time.Millisecond
	for {
		if err := s.send(req); err != nil {
			return nil, fmt.Errorf("send ARP request for %v on %s: %w", dst, ifname, err)
		}
		until := time.Now().Add(resend)
		if d, ok := ctx.Deadline(); ok && d.Before(until) {
			until = d
		}
		for time.Now().Before(until) {
			b, err := s.recv(time.Until(until))
			if err != nil {
				return nil, fmt.Errorf("receive ARP on %s: %w", ifname, err)
			}
			if mac, ok := arpAnswer(b, dst); ok {
				return mac, nil
			}
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("no ARP answer for %v on %s: %w", dst, ifname, ctx.Err())
		}
	}
}

// ARP packet layout for Ethernet and IPv4 (RFC 826): htype 1, ptype 0x0800, hlen 6, plen 4,
// op (1 request, 2 reply), sender MAC and IP, target MAC and IP: 28 bytes.
func arpRequest(mac net.HardwareAddr, src, dst netip.Addr) []byte {
	b := make([]byte, 28)
	copy(b[0:8], []byte{0, 1, 8, 0, 6, 4, 0, 1})
	copy(b[8:14], mac)
	s4, d4 := src.As4(), dst.As4()
	copy(b[14:18], s4[:])
	copy(b[24:28], d4[:]) // target MAC stays zero: unknown
	return b
}

// arpAnswer reads an ARP packet: a reply from dst gives dst's MAC. Requests are ignored,
// our own included (a packet socket also sees what it sends).
func arpAnswer(b []byte, dst netip.Addr) (net.HardwareAddr, bool) {
	if len(b) < 28 || b[0] != 0 || b[1] != 1 || b[2] != 8 || b[3] != 0 || b[4] != 6 || b[5] != 4 {
		return nil, false
	}
	if a := netip.AddrFrom4([4]byte(b[14:18])); a != dst || b[7] != 2 {
		return nil, false
	}
	return append(net.HardwareAddr(nil), b[8:14]...), true
}

// PCINetdevs are the kernel network interfaces of PCI function bdf (sysfs
// /sys/bus/pci/devices/<bdf>/net/): none when no kernel driver with a netdev is bound (VFIO).
func PCINetdevs(bdf string) []string {
	ents, err := os.ReadDir(filepath.Join("/sys/bus/pci/devices", filepath.Base(bdf), "net"))
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// arpSock is a packet socket that sends and receives ARP on one interface.
type arpSock struct {
	fd      int
	ifindex int
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func openARP(ifindex int) (*arpSock, error) {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ARP)))
	if err != nil {
		return nil, err
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ARP), Ifindex: ifindex}); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &arpSock{fd: fd, ifindex: ifindex}, nil
}

func (s *arpSock) close() { unix.Close(s.fd) }

func (s *arpSock) send(b []byte) error {
	to := &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ARP), Ifindex: s.ifindex, Halen: 6}
	copy(to.Addr[:], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	return unix.Sendto(s.fd, b, 0, to)
}

// recv waits up to d for one packet; nil when none came.
func (s *arpSock) recv(d time.Duration) ([]byte, error) {
	ms := int(d / time.Millisecond)
	if ms <= 0 {
		ms = 1
	}
	fds := []unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, ms)
	if err != nil {
		if errors.Is(err, unix.EINTR) {
			return nil, nil
		}
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	b := make([]byte, 1500)
	m, _, err := unix.Recvfrom(s.fd, b, unix.MSG_DONTWAIT)
	if err != nil {
		if errors.Is(err, unix.EAGAIN) {
			return nil, nil
		}
		return nil, err
	}
	return b[:m], nil
}
