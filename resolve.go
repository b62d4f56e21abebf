package daqiri

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/internal/neigh"
)

// ResolveIPv4MAC is the Ethernet address that frames to IPv4 destination dst leave raw port
// port for (upstream resolve_ipv4_mac): the destination's MAC when it is on-link, the
// gateway's when the port's route to it is off-link. A raw engine writes whole frames, so
// the kernel's routing and ARP never see them; this is the bridge. Through the kernel's
// neighbour table when the port's network interface has an IPv4 address (a confirmed entry
// answers at once, a stale one is refreshed, a missing one makes the kernel send ARP); with
// no IPv4 address there, ARP requests sent on the interface itself (from 0.0.0.0, an ARP
// probe). It waits up to timeout and fails naming the address when nothing answers.
//
// It is a one-shot lookup, as upstream's: nothing is cached or refreshed afterwards. It runs
// in the calling thread's network namespace. Ports need a kernel network interface: engine
// xdp's netdev, or engine mlx5 on a PCI function whose kernel driver has one; a port without
// one (an mlx5 function bound to VFIO, model ports) gets ErrNotSupported — set the frame's
// destination MAC explicitly there. If the port also has RX queues, keep ARP replies on the
// kernel path (rx flow_isolation, as upstream advises).
func (s *Session) ResolveIPv4MAC(port int, dst netip.Addr, timeout time.Duration) (net.HardwareAddr, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	p, err := s.port(port)
	if err != nil {
		return nil, err
	}
	if err := neigh.CheckIPv4(dst); err != nil {
		return nil, fmt.Errorf("resolve_ipv4_mac on port %d (%s): %v: %w", port, p.Name, err, ErrInvalidParameter)
	}
	if timeout <= 0 {
		return nil, fmt.Errorf("resolve_ipv4_mac %v on port %d (%s): timeout %v must be > 0: %w", dst, port, p.Name, timeout, ErrInvalidParameter)
	}
	if !p.Raw {
		return nil, fmt.Errorf("resolve_ipv4_mac on port %d (%s): engine %s is not a raw Ethernet engine (its kernel sockets resolve addresses themselves): %w", port, p.Name, p.Engine, ErrNotSupported)
	}
	ifname, err := portNetdev(p.Config, p.Engine)
	if err != nil {
		return nil, fmt.Errorf("resolve_ipv4_mac %v on port %d (%s): %v: %w", dst, port, p.Name, err, ErrNotSupported)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	r, err := neigh.Resolve(ctx, ifname, dst)
	if err != nil {
		return nil, fmt.Errorf("resolve_ipv4_mac %v on port %d (%s, %s) within %v: %w", dst, port, p.Name, ifname, timeout, err)
	}
	return r.MAC, nil
}

// portNetdev is the kernel network interface a raw port sends on.
func portNetdev(ifc *config.Interface, eng string) (string, error) {
	switch eng {
	case config.EngineXDP:
		return ifc.Address, nil
	case config.EngineMLX5:
		if strings.HasPrefix(ifc.Address, "model:") {
			return "", fmt.Errorf("address %s is a model port, which has no kernel network interface", ifc.Address)
		}
		names := neigh.PCINetdevs(ifc.Address)
		switch len(names) {
		case 0:
			return "", fmt.Errorf("PCI function %s has no kernel network interface (bound to VFIO, or no mlx5_core netdev)", ifc.Address)
		case 1:
			return names[0], nil
		default:
			return "", fmt.Errorf("PCI function %s has several network interfaces (%s); which one sends is not known", ifc.Address, strings.Join(names, ", "))
		}
	}
	return "", fmt.Errorf("engine %s has no kernel network interface", eng)
}
