// Package netns creates throwaway network namespaces joined by veth pairs for tests, and
// runs code inside them. Everything it creates is removed by the test's cleanup.
package netns

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// NS is a named network namespace.
type NS struct {
	Name   string
	handle netns.NsHandle
}

// Do runs fn on an OS thread inside the namespace and waits for it. Sockets fn creates belong
// to the namespace; so do sessions opened by fn (their engines remember where they were
// opened). The thread is discarded afterwards.
func (n *NS) Do(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// Never unlocked: the runtime then ends the thread instead of reusing it in a
		// foreign namespace.
		if err := netns.Set(n.handle); err != nil {
			errc <- fmt.Errorf("enter namespace %s: %w", n.Name, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// Pair is two namespaces joined by a veth pair: A's end has AddrA, B's end AddrB (a /24).
type Pair struct {
	A, B         *NS
	VethA, VethB string
	AddrA, AddrB netip.Addr
	MACA, MACB   net.HardwareAddr
}

// Require skips the test unless it runs as root on a kernel with network namespaces.
func Require(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_NET_ADMIN) to create network namespaces and veth pairs")
	}
	if _, err := os.Stat("/proc/self/ns/net"); err != nil {
		t.Skip("kernel without network namespaces")
	}
}

func suffix() string {
	b := make([]byte, 3)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// NewPair creates two namespaces and a veth pair between them with addresses 10.<x>.<y>.1 and
// .2, both ends and loopback up. The test is skipped when not root; cleanup deletes all.
func NewPair(t testing.TB) *Pair {
	t.Helper()
	Require(t)
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
	err = p.A.Do(func() error {
		la := netlink.NewLinkAttrs()
		la.Name = p.VethA
		la.MTU = 9000
		veth := &netlink.Veth{LinkAttrs: la, PeerName: p.VethB, PeerNamespace: netlink.NsFd(p.B.handle)}
		if err := netlink.LinkAdd(veth); err != nil {
			return fmt.Errorf("add veth %s/%s: %w", p.VethA, p.VethB, err)
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
			if err := netlink.LinkSetMTU(l, 9000); err != nil {
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
	return p
}

func newNS(t testing.TB, name string) (*NS, error) {
	done := make(chan struct{})
	var h netns.NsHandle
	var err error
	go func() {
		defer close(done)
		runtime.LockOSThread()
		// NewNamed moves this thread into the new namespace; the thread is discarded.
		h, err = netns.NewNamed(name)
	}()
	<-done
	if err != nil {
		return nil, fmt.Errorf("create namespace %s: %w", name, err)
	}
	ns := &NS{Name: name, handle: h}
	t.Cleanup(func() {
		h.Close()
		if err := netns.DeleteNamed(name); err != nil {
			t.Errorf("delete namespace %s: %v", name, err)
		}
	})
	return ns, nil
}
