package netns

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"testing"

	"github.com/daqiri-go/daqiri/internal/testutil"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// PairOptions shape a veth pair.
type PairOptions struct {
	// Queues is the number of RX and TX queues of each veth end (default 1). A veth spreads
	// received frames over its RX queues by the sender's TX queue choice, so AF_XDP engines
	// need one queue per socket they bind.
	Queues int
	// MTU of both ends (default 1500: native XDP on veth needs frames that fit a page).
	MTU int
	// ARP leaves the neighbour entries to ARP instead of pinning each side's entry for the
	// other (tests of address resolution).
	ARP bool
}

// NewPairWith is NewPair with a chosen queue count and MTU.
func NewPairWith(t testing.TB, o PairOptions) *Pair {
	t.Helper()
	Require(t)
	if o.Queues <= 0 {
		o.Queues = 1
	}
	if o.MTU <= 0 {
		o.MTU = 1500
	}
	id := suffix()
	p := &Pair{VethA: "dqa" + id, VethB: "dqb" + id}
	var err error
	if p.A, err = newNS(t, "daqiri-"+id+"-a"); err != nil {
		t.Fatal(err)
	}
	if p.B, err = newNS(t, "daqiri-"+id+"-b"); err != nil {
		t.Fatal(err)
	}
	var rb [2]byte
	rand.Read(rb[:])
	p.AddrA = netip.AddrFrom4([4]byte{10, 100 + rb[0]%100, rb[1], 1})
	p.AddrB = netip.AddrFrom4([4]byte{10, 100 + rb[0]%100, rb[1], 2})
	// No IPv6 on these links: its neighbour discovery would add frames the tests did not send.
	for _, ns := range []*NS{p.A, p.B} {
		if err := ns.Do(disableIPv6); err != nil {
			t.Fatal(err)
		}
	}
	err = p.A.Do(func() error {
		la := netlink.NewLinkAttrs()
		la.Name = p.VethA
		la.MTU = o.MTU
		la.NumRxQueues, la.NumTxQueues = o.Queues, o.Queues
		veth := &netlink.Veth{LinkAttrs: la, PeerName: p.VethB, PeerNamespace: netlink.NsFd(p.B.handle)}
		veth.PeerNumRxQueues, veth.PeerNumTxQueues = uint32(o.Queues), uint32(o.Queues)
		if err := netlink.LinkAdd(veth); err != nil {
			return fmt.Errorf("add veth %s/%s with %d queues: %w", p.VethA, p.VethB, o.Queues, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, side := range []struct {
		ns   *NS
		name string
		addr netip.Addr
		mac  *net.HardwareAddr
	}{{p.A, p.VethA, p.AddrA, &p.MACA}, {p.B, p.VethB, p.AddrB, &p.MACB}} {
		err := side.ns.Do(func() error {
			l, err := netlink.LinkByName(side.name)
			if err != nil {
				return err
			}
			if err := netlink.LinkSetMTU(l, o.MTU); err != nil {
				return err
			}
			a, _ := netlink.ParseAddr(netip.PrefixFrom(side.addr, 24).String())
			if err := netlink.AddrAdd(l, a); err != nil {
				return fmt.Errorf("address %v on %s: %w", side.addr, side.name, err)
			}
			if err := netlink.LinkSetUp(l); err != nil {
				return err
			}
			*side.mac = l.Attrs().HardwareAddr
			lo, err := netlink.LinkByName("lo")
			if err != nil {
				return err
			}
			return netlink.LinkSetUp(lo)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if o.ARP {
		return p
	}
	if err := p.pinNeighbours(); err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) {
			testutil.Lacks(t, "netlink neighbour entries (RTM_NEWNEIGH)", err) // qemu-user does not translate them
		}
		t.Fatal(err)
	}
	return p
}

// Python is Debian's interpreter, where python3-scapy installs (a python3 earlier on PATH,
// such as a pyenv shim, may lack it).
const Python = "/usr/bin/python3"

// RequireScapy skips the test (fails it under CI) unless Debian's python3-scapy is
// importable.
func RequireScapy(t testing.TB) {
	t.Helper()
	out, err := exec.Command(Python, "-c", "import scapy.all").CombinedOutput()
	if err != nil {
		testutil.Missing(t, "needs python3-scapy (apt-get install python3-scapy; CI installs it from .ci/apt.d/xdp.txt): %v %s", err, bytes.TrimSpace(out))
	}
}

// Run runs a program inside the namespace (ip netns exec) with stdin, returning its output.
func (n *NS) Run(stdin []byte, name string, args ...string) ([]byte, error) {
	cmd := exec.Command("ip", append([]string{"netns", "exec", n.Name, name}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

// Scapy runs a Python script with scapy imported (from scapy.all import *) in the namespace.
func (n *NS) Scapy(script string) ([]byte, error) {
	out, err := n.Run([]byte("from scapy.all import *\nconf.verb = 0\n"+script), Python, "-")
	if err != nil {
		return out, fmt.Errorf("scapy in %s: %w: %s", n.Name, err, out)
	}
	return out, nil
}

func disableIPv6() error {
	for _, k := range []string{"all", "default"} {
		if err := os.WriteFile("/proc/sys/net/ipv6/conf/"+k+"/disable_ipv6", []byte("1"), 0); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("disable IPv6: %w", err)
		}
	}
	return nil
}

// RunIn runs a program in the namespace (ip netns exec) without input.
func RunIn(n *NS, name string, args ...string) ([]byte, error) { return n.Run(nil, name, args...) }
