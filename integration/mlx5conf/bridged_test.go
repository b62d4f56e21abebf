package mlx5conf

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Part (b2): the kernel's mlx5e on a bridged function talks to a host on the wire: the
// veth's far end, which the host test gives the address peerAddr and a small UDP service
// (peer_test.go). The peer's frames leave its stack with checksum offload on, so they reach
// the model's bridge with partial checksums that the bridge must finish, as a NIC sees
// finished frames on the wire; the guest's stack would count them in InCsumErrors and drop
// them otherwise.
var bridgedStages = []string{
	"netdev A up",          // function A's mlx5e netdev with guestAddr, carrier on
	"ping to peer",         // pingCount ICMP echo requests from the guest, all answered
	"UDP to peer and back", // datagrams of several sizes echoed by the peer, intact
	"ping from peer",       // the peer's pingCount echo requests, all answered by the guest
	"no checksum errors",   // the guest's Udp InCsumErrors did not grow
}

// Bounds of part (b2).
const (
	carrierWait = 10 * time.Second
	peerWait    = 3 * time.Second // one UDP answer from the peer
)

// udpEchoSizes are the echoed datagrams' payload sizes: odd and even, up to a full frame.
var udpEchoSizes = []int{8, 101, 1000, 1472}

// runBridged runs part (b2) on the function with MAC macPortA.
func runBridged(t *testing.T, s *stageSet, devs []string) {
	var a string
	for end := time.Now().Add(netdevWait); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		if a = deviceWithMAC(devs, macPortA); a != "" {
			break
		}
	}
	if a == "" {
		s.fail("netdev A up", "no mlx5e netdev with MAC "+macPortA)
		return
	}
	nd := netdevOf(a)
	for _, args := range [][]string{{"addr", "replace", guestAddr + "/24", "dev", nd}, {"link", "set", nd, "up"}} {
		if out, err, done := runBounded(10*time.Second, "ip", args...); !done || err != nil {
			s.fail("netdev A up", fmt.Sprintf("ip %s: %v %s", strings.Join(args, " "), err, out))
			return
		}
	}
	carrier := ""
	for end := time.Now().Add(carrierWait); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if carrier, _ = readTrim("/sys/class/net/" + nd + "/carrier"); carrier == "1" {
			break
		}
	}
	if carrier != "1" {
		s.fail("netdev A up", fmt.Sprintf("%s has no carrier after %v", nd, carrierWait))
		return
	}
	s.ok("netdev A up", fmt.Sprintf("%s %s/24", nd, guestAddr))
	csumBefore, csumErr := udpInCsumErrors()

	peer := netip.MustParseAddr(peerAddr)
	if got, err := pingICMP(peer, pingCount, 2*time.Second); err != nil || got != pingCount {
		s.fail("ping to peer", fmt.Sprintf("%d/%d answered (%v)", got, pingCount, err))
	} else {
		s.ok("ping to peer", fmt.Sprintf("%d/%d", got, pingCount))
	}

	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(guestAddr)})
	if err != nil {
		s.fail("UDP to peer and back", err.Error())
		return
	}
	defer conn.Close()
	dst := &net.UDPAddr{IP: net.ParseIP(peerAddr), Port: peerPort}
	var bad []string
	for i, n := range udpEchoSizes {
		msg := []byte(fmt.Sprintf("echo %d ", i))
		for len(msg) < n {
			msg = append(msg, byte('a'+(len(msg)*7+i)%26))
		}
		reply, err := askPeer(conn, dst, msg, peerWait)
		if err != nil || !bytes.Equal(reply, msg) {
			bad = append(bad, fmt.Sprintf("%d bytes: %d back, %v", len(msg), len(reply), err))
		}
	}
	if len(bad) > 0 {
		s.fail("UDP to peer and back", strings.Join(bad, "; "))
	} else {
		s.ok("UDP to peer and back", fmt.Sprintf("%d datagrams of %v bytes", len(udpEchoSizes), udpEchoSizes))
	}

	reply, err := askPeer(conn, dst, []byte("ping"), pingCount*2*time.Second+peerWait)
	if want := fmt.Sprintf("ping %d/%d", pingCount, pingCount); err != nil || string(reply) != want {
		s.fail("ping from peer", fmt.Sprintf("peer says %q (%v)", reply, err))
	} else {
		s.ok("ping from peer", want)
	}

	csumAfter, err := udpInCsumErrors()
	switch {
	case csumErr != nil || err != nil:
		s.fail("no checksum errors", fmt.Sprintf("/proc/net/snmp: %v %v", csumErr, err))
	case csumAfter != csumBefore:
		s.fail("no checksum errors", fmt.Sprintf("Udp InCsumErrors %d → %d", csumBefore, csumAfter))
	case !s.has("UDP to peer and back"):
		s.fail("no checksum errors", "no UDP came back to count")
	default:
		s.ok("no checksum errors", fmt.Sprintf("Udp InCsumErrors %d", csumAfter))
	}
}

// askPeer sends msg to the peer's service and returns its answer, waiting at most wait.
func askPeer(conn *net.UDPConn, dst *net.UDPAddr, msg []byte, wait time.Duration) ([]byte, error) {
	if _, err := conn.WriteToUDP(msg, dst); err != nil {
		return nil, err
	}
	buf := make([]byte, 65536)
	conn.SetReadDeadline(time.Now().Add(wait))
	for {
		n, from, err := conn.ReadFromUDP(buf)
		if err != nil {
			return nil, err
		}
		if from.IP.Equal(dst.IP) && from.Port == dst.Port {
			return buf[:n], nil
		}
	}
}

// udpInCsumErrors reads the stack's count of UDP datagrams dropped for a bad checksum.
func udpInCsumErrors() (uint64, error) {
	b, err := os.ReadFile("/proc/net/snmp")
	if err != nil {
		return 0, err
	}
	var names []string
	for _, l := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(l, "Udp: ")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if names == nil {
			names = f
			continue
		}
		for i, n := range names {
			if n == "InCsumErrors" && i < len(f) {
				return strconv.ParseUint(f[i], 10, 64)
			}
		}
	}
	return 0, fmt.Errorf("no Udp InCsumErrors in /proc/net/snmp")
}
