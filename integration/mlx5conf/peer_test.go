package mlx5conf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// The veth's far end as a host on the wire. The host gives vb (the end server B is bridged
// to) the address peerAddr in the test's namespace, so that the namespace's own stack talks
// to the guest's mlx5e on function A through server A's bridge, with the veth's checksum
// offload on (its default): the peer's UDP and TCP frames reach the bridge with the partial
// checksum the kernel leaves to a NIC. The peer runs a small UDP service the guest drives:
//
//	"echo …"  the datagram comes back as it is;
//	"ping"    the peer sends pingCount ICMP echo requests to the sender and answers with
//	          how many replies came ("ping 4/4");
//	"frames"  the peer answers with the testpmd frames (txonly's addresses, 198.18.0.1 →
//	          198.18.0.2 UDP) it saw on vb since the last "frames": "frames IN OUT", IN
//	          arriving from A's side, OUT sent by server B.
const (
	guestAddr = "10.213.0.1" // the guest's mlx5e on function A
	peerAddr  = "10.213.0.2" // vb in the namespace
	peerPort  = 7007
	pingCount = 4
)

// peer is the running service.
type peer struct {
	conn    *net.UDPConn
	raw     int
	mu      sync.Mutex
	in, out uint64 // testpmd frames since the last "frames"
	inAll   uint64
	outAll  uint64
	done    chan struct{}
	ns      netns.NsHandle
}

// startPeer gives vb its address in the namespace nsName and starts the service there;
// cleanup stops it.
func startPeer(t *testing.T, nsName, vb string) *peer {
	t.Helper()
	ns, err := netns.GetFromName(nsName)
	if err != nil {
		t.Fatalf("namespace %s: %v", nsName, err)
	}
	p := &peer{raw: -1, done: make(chan struct{}), ns: ns}
	err = p.inNS(func() error {
		ifi, err := net.InterfaceByName(vb)
		if err != nil {
			return err
		}
		// The address through netlink's ioctl-free path would need the netlink package
		// here; the ip tool does it.
		if out, err := runIP("-n", nsName, "addr", "add", peerAddr+"/24", "dev", vb); err != nil {
			return fmt.Errorf("ip addr add: %v %s", err, out)
		}
		if p.conn, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(peerAddr), Port: peerPort}); err != nil {
			return err
		}
		// ETH_P_ALL: only such taps see what the netdev sends (dev_queue_xmit_nit), here
		// server B's frames.
		if p.raw, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL))); err != nil {
			return err
		}
		return unix.Bind(p.raw, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index})
	})
	if err != nil {
		ns.Close()
		t.Fatalf("the veth peer: %v", err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.serve() }()
	go func() { defer wg.Done(); p.count() }()
	t.Cleanup(func() {
		close(p.done)
		p.conn.Close()
		wg.Wait()
		unix.Close(p.raw)
		ns.Close()
	})
	return p
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// inNS runs fn on a thread in the peer's namespace; the thread is discarded after.
func (p *peer) inNS(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := netns.Set(p.ns); err != nil {
			errc <- err
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// serve answers the guest's datagrams until the connection closes.
func (p *peer) serve() {
	buf := make([]byte, 65536)
	for {
		n, from, err := p.conn.ReadFromUDP(buf)
		if err != nil {
			return
		}
		msg := buf[:n]
		var reply []byte
		switch {
		case strings.HasPrefix(string(msg), "echo"):
			reply = msg
		case string(msg) == "ping":
			var got int
			err := p.inNS(func() (err error) {
				got, err = pingICMP(from.AddrPort().Addr().Unmap(), pingCount, 2*time.Second)
				return err
			})
			reply = fmt.Appendf(nil, "ping %d/%d", got, pingCount)
			if err != nil {
				reply = fmt.Appendf(reply, " %v", err)
			}
		case string(msg) == "frames":
			p.mu.Lock()
			reply = fmt.Appendf(nil, "frames %d %d", p.in, p.out)
			p.in, p.out = 0, 0
			p.mu.Unlock()
		default:
			continue
		}
		p.conn.WriteToUDP(reply, from)
	}
}

// count counts testpmd's frames on vb until the peer stops.
func (p *peer) count() {
	buf := make([]byte, 65536)
	for {
		select {
		case <-p.done:
			return
		default:
		}
		pfd := []unix.PollFd{{Fd: int32(p.raw), Events: unix.POLLIN}}
		if n, err := unix.Poll(pfd, 100); err != nil || n == 0 {
			continue
		}
		n, from, err := unix.Recvfrom(p.raw, buf, unix.MSG_DONTWAIT)
		if err != nil || !isTestpmdFrame(buf[:n]) {
			continue
		}
		outgoing := false
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
			outgoing = true
		}
		p.mu.Lock()
		if outgoing {
			p.out++
			p.outAll++
		} else {
			p.in++
			p.inAll++
		}
		p.mu.Unlock()
	}
}

// totals is what the peer counted over the whole run.
func (p *peer) totals() (in, out uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inAll, p.outAll
}

// isTestpmdFrame reports whether f is an IPv4 UDP frame from testpmd's txonly engine, whose
// frames its io forwarding then passes on unchanged: 198.18.0.1 → 198.18.0.2 (app/test-pmd
// txonly.c, the RFC 2544 benchmarking range), UDP.
func isTestpmdFrame(f []byte) bool {
	if len(f) < 34 || binary.BigEndian.Uint16(f[12:]) != 0x0800 || f[23] != 17 {
		return false
	}
	return netip.AddrFrom4([4]byte(f[26:30])) == netip.MustParseAddr("198.18.0.1") &&
		netip.AddrFrom4([4]byte(f[30:34])) == netip.MustParseAddr("198.18.0.2")
}

// pingICMP sends count ICMP echo requests to dst through a raw socket, one at a time, and
// returns how many were answered within timeout each. The raw socket belongs to the calling
// thread's namespace.
func pingICMP(dst netip.Addr, count int, timeout time.Duration) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_ICMP)
	if err != nil {
		return 0, fmt.Errorf("ICMP socket: %w", err)
	}
	defer unix.Close(fd)
	sa := &unix.SockaddrInet4{Addr: dst.As4()}
	id := uint16(time.Now().UnixNano())
	got := 0
	buf := make([]byte, 1500)
	for seq := 1; seq <= count; seq++ {
		req := make([]byte, 64)
		req[0] = 8 // echo request
		binary.BigEndian.PutUint16(req[4:], id)
		binary.BigEndian.PutUint16(req[6:], uint16(seq))
		for i := 8; i < len(req); i++ {
			req[i] = byte(i)
		}
		binary.BigEndian.PutUint16(req[2:], inetChecksum(req))
		if err := unix.Sendto(fd, req, 0, sa); err != nil {
			return got, fmt.Errorf("echo request %d to %v: %w", seq, dst, err)
		}
		for end := time.Now().Add(timeout); time.Now().Before(end); {
			pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, err := unix.Poll(pfd, int(time.Until(end)/time.Millisecond)+1)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil || n == 0 {
				break
			}
			k, _, err := unix.Recvfrom(fd, buf, 0)
			if err != nil || k < 28 {
				continue
			}
			ihl := int(buf[0]&0xf) * 4
			r := buf[ihl:k]
			if len(r) >= 8 && r[0] == 0 && binary.BigEndian.Uint16(r[4:]) == id && binary.BigEndian.Uint16(r[6:]) == uint16(seq) &&
				netip.AddrFrom4([4]byte(buf[12:16])) == dst {
				got++
				break
			}
		}
	}
	return got, nil
}

// inetChecksum is the Internet checksum of b (RFC 1071).
func inetChecksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// runIP runs the ip tool.
func runIP(args ...string) (string, error) {
	out, err := exec.Command("ip", args...).CombinedOutput()
	return string(out), err
}
