// Package netns creates throwaway network namespaces joined by veth pairs for tests, and
// runs code inside them. Everything it creates is removed by the test's cleanup.
package netns

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"testing"

	"github.com/daqiri-go/daqiri/internal/testutil"
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

// Require skips the test (fails it under CI) unless it runs as root on a kernel with network
// namespaces.
func Require(t testing.TB) {
	t.Helper()
	testutil.RequireNetns(t)
}

func suffix() string {
	b := make([]byte, 3)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// NewPair creates two namespaces and a veth pair between them with addresses 10.<x>.<y>.1 and
// .2 (MTU 9000, one queue each), both ends and loopback up and each side's neighbour entry for
// the other pinned, so that no ARP exchange can delay or drop the first packets. The test is
// skipped when not root; cleanup deletes all.
func NewPair(t testing.TB) *Pair {
	t.Helper()
	return NewPairWith(t, PairOptions{MTU: 9000})
}

// pinNeighbours adds a permanent ARP entry on each side for the other side's address.
func (p *Pair) pinNeighbours() error {
	for _, side := range []struct {
		ns      *NS
		link    string
		peer    netip.Addr
		peerMAC net.HardwareAddr
	}{{p.A, p.VethA, p.AddrB, p.MACB}, {p.B, p.VethB, p.AddrA, p.MACA}} {
		err := side.ns.Do(func() error {
			l, err := netlink.LinkByName(side.link)
			if err != nil {
				return err
			}
			return netlink.NeighSet(&netlink.Neigh{LinkIndex: l.Attrs().Index, Family: netlink.FAMILY_V4,
				State: netlink.NUD_PERMANENT, IP: side.peer.AsSlice(), HardwareAddr: side.peerMAC})
		})
		if err != nil {
			return fmt.Errorf("pin neighbour %v on %s: %w", side.peer, side.link, err)
		}
	}
	return nil
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
