package afpacket

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/daqiri-go/daqiri/integration/netns"
)

// TestBurstWhileNotReading: a peer sends a burst of full-size frames while the bridge is not
// reading (a descheduled model process); every frame is there when it reads again and the
// kernel counted no drop. With the default receive buffer (about 60 such frames) the CI run
// of the mlx5 conformance test lost the tail of a 256-frame burst this way.
func TestBurstWhileNotReading(t *testing.T) {
	netns.Require(t)
	pair := netns.NewPairWith(t, netns.PairOptions{MTU: 1500})
	var rx, tx *Socket
	if err := pair.A.Do(func() (err error) { rx, err = Open(pair.VethA); return }); err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	if err := pair.B.Do(func() (err error) { tx, err = Open(pair.VethB); return }); err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	if _, err := rx.Drops(); err != nil { // reset the count of what arrived before the test
		t.Fatal(err)
	}

	const frames = 2000
	frame := make([]byte, 1514)
	copy(frame, []byte{0x02, 0, 0, 0, 0, 0x0a, 0x02, 0, 0, 0, 0, 0x0b}) // locally administered MACs
	binary.BigEndian.PutUint16(frame[12:], 0x88b5)                      // IEEE local experimental EtherType
	for i := range frames {
		binary.BigEndian.PutUint32(frame[14:], uint32(i))
		if err := tx.Send(frame); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
	}
	buf := make([]byte, 1<<16)
	got := 0
	next := uint32(0)
	deadline := time.Now().Add(10 * time.Second)
	for got < frames && time.Now().Before(deadline) {
		n, err := rx.Recv(buf, 200*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if n != len(frame) || binary.BigEndian.Uint16(buf[12:]) != 0x88b5 {
			continue // something of the kernel's own (IPv6 neighbour discovery)
		}
		if seq := binary.BigEndian.Uint32(buf[14:]); seq != next {
			t.Fatalf("frame %d arrived where %d was due", seq, next)
		}
		next++
		got++
	}
	drops, err := rx.Drops()
	if err != nil {
		t.Fatal(err)
	}
	if got != frames || drops != 0 {
		t.Fatalf("received %d of %d frames, the kernel dropped %d for the socket", got, frames, drops)
	}
}

// TestCompletesOffloadedChecksums: UDP datagrams and a TCP SYN that the peer's stack sends
// over a veth with checksum offload on (the veth default) reach the bridge's socket with
// correct checksums. A plain packet socket on the same veth sees the same frames with the
// partial sum the kernel left for a NIC, which shows the offload was on.
func TestCompletesOffloadedChecksums(t *testing.T) {
	netns.Require(t)
	pair := netns.NewPairWith(t, netns.PairOptions{MTU: 1500})
	var rx *Socket
	raw := -1
	if err := pair.A.Do(func() (err error) {
		if rx, err = Open(pair.VethA); err != nil {
			return err
		}
		ifi, err := net.InterfaceByName(pair.VethA)
		if err != nil {
			return err
		}
		if raw, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_IP))); err != nil {
			return err
		}
		return unix.Bind(raw, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_IP), Ifindex: ifi.Index})
	}); err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	defer unix.Close(raw)

	const port = 9
	sizes := []int{1, 2, 3, 100, 1401, 1472} // odd and even lengths; 1472 fills the MTU
	if err := pair.B.Do(func() error {
		// Unconnected, so that A's port-unreachable answers do not fail the next write.
		c, err := net.ListenUDP("udp4", nil)
		if err != nil {
			return err
		}
		defer c.Close()
		for i, n := range sizes {
			p := make([]byte, n)
			for j := range p {
				p[j] = byte(i*31 + j)
			}
			if _, err := c.WriteToUDP(p, &net.UDPAddr{IP: pair.AddrA.AsSlice(), Port: port}); err != nil {
				return err
			}
		}
		// A TCP SYN: nothing listens, so A's stack answers with a reset and Dial fails.
		d := net.Dialer{Timeout: 2 * time.Second}
		if tc, err := d.Dial("tcp4", net.JoinHostPort(pair.AddrA.String(), "9")); err == nil {
			tc.Close()
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	want := len(sizes) + 1
	check := func(what string, recv func([]byte) (int, error)) (good, bad int) {
		buf := make([]byte, 1<<16)
		for seen := 0; seen < want; {
			n, err := recv(buf)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if n == 0 {
				t.Fatalf("%s: %d of %d frames from the peer arrived", what, seen, want)
			}
			ok, mine := l4ChecksumOK(buf[:n], pair.AddrB)
			if !mine {
				continue
			}
			seen++
			if ok {
				good++
			} else {
				bad++
			}
		}
		return good, bad
	}
	good, bad := check("bridge socket", func(b []byte) (int, error) { return rx.Recv(b, 2*time.Second) })
	if bad != 0 || good != want {
		t.Errorf("bridge socket: %d frames with a correct checksum, %d with a wrong one; want all %d correct", good, bad, want)
	}
	rawGood, rawBad := check("plain packet socket", func(b []byte) (int, error) {
		pfd := []unix.PollFd{{Fd: int32(raw), Events: unix.POLLIN}}
		if n, err := unix.Poll(pfd, 2000); err != nil || n == 0 {
			return 0, err
		}
		n, _, err := unix.Recvfrom(raw, b, 0)
		return n, err
	})
	if rawBad == 0 {
		t.Errorf("a plain packet socket saw %d correct and no partial checksums: checksum offload seems off on the veth, the test proves nothing", rawGood)
	}
}

// l4ChecksumOK reports whether f is an IPv4 UDP or TCP frame from src (mine) and whether its
// transport checksum verifies (RFC 768, RFC 793: the one's-complement sum over the pseudo
// header and the segment is 0xffff).
func l4ChecksumOK(f []byte, src netip.Addr) (ok, mine bool) {
	if len(f) < 34 || binary.BigEndian.Uint16(f[12:]) != 0x0800 {
		return false, false
	}
	ip := f[14:]
	ihl := int(ip[0]&0xf) * 4
	total := int(binary.BigEndian.Uint16(ip[2:]))
	proto := ip[9]
	if netip.AddrFrom4([4]byte(ip[12:16])) != src || (proto != 6 && proto != 17) || total > len(ip) || ihl > total {
		return false, false
	}
	seg := ip[ihl:total]
	var sum uint32
	add := func(b []byte) {
		for i := 0; i+1 < len(b); i += 2 {
			sum += uint32(binary.BigEndian.Uint16(b[i:]))
		}
		if len(b)%2 == 1 {
			sum += uint32(b[len(b)-1]) << 8
		}
	}
	add(ip[12:20])
	sum += uint32(proto) + uint32(len(seg))
	add(seg)
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return sum == 0xffff, true
}

// TestComplete: Complete stores the folded, complemented sum where offset says, writes 0 as
// 0xffff, and leaves a frame alone when start or offset point outside it.
func TestComplete(t *testing.T) {
	// The RFC 1071 example: bytes 00 01 f2 03 f4 f5 f6 f7 sum to 0xddf2; with a 2-byte field
	// of 0 in front, the checksum is ^0xddf2 = 0x220d.
	f := []byte{0xaa, 0, 0, 0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7}
	Complete(f, 1, 0)
	if got := binary.BigEndian.Uint16(f[1:]); got != 0x220d {
		t.Errorf("checksum %#04x, want 0x220d", got)
	}
	if f[0] != 0xaa {
		t.Error("a byte before start changed")
	}
	// A sum of 0xffff complements to 0, which goes out as 0xffff.
	z := []byte{0, 0, 0xff, 0xff}
	Complete(z, 0, 0)
	if got := binary.BigEndian.Uint16(z); got != 0xffff {
		t.Errorf("zero checksum stored as %#04x, want 0xffff", got)
	}
	// An odd length pads the last byte with a zero.
	o := []byte{0, 0, 0x12}
	Complete(o, 0, 0)
	if got := binary.BigEndian.Uint16(o); got != ^uint16(0x1200) {
		t.Errorf("odd length: %#04x, want %#04x", got, ^uint16(0x1200))
	}
	for _, c := range [][2]int{{-1, 0}, {0, -1}, {3, 0}, {0, 3}, {10, 10}} {
		g := []byte{1, 2, 3, 4}
		Complete(g, c[0], c[1])
		if !bytes.Equal(g, []byte{1, 2, 3, 4}) {
			t.Errorf("start %d offset %d outside a 4-byte frame changed it to % x", c[0], c[1], g)
		}
	}
}

// TestReportsGSO: a TCP stream from the peer over a veth with TSO on (its default) reaches
// the socket in frames larger than the MTU, each reported with its segment size; every frame
// that fits the MTU is reported as ordinary or with a segment size no larger than it.
func TestReportsGSO(t *testing.T) {
	netns.Require(t)
	pair := netns.NewPairWith(t, netns.PairOptions{MTU: 1500})
	var rx *Socket
	var lis net.Listener
	if err := pair.A.Do(func() (err error) {
		if rx, err = Open(pair.VethA); err != nil {
			return err
		}
		lis, err = net.Listen("tcp4", net.JoinHostPort(pair.AddrA.String(), "7002"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	defer lis.Close()
	go func() {
		c, err := lis.Accept()
		if err == nil {
			io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	sent := make(chan error, 1)
	go func() {
		sent <- pair.B.Do(func() error {
			c, err := net.DialTimeout("tcp4", net.JoinHostPort(pair.AddrA.String(), "7002"), 5*time.Second)
			if err != nil {
				return err
			}
			defer c.Close()
			_, err = c.Write(make([]byte, 1<<20))
			return err
		})
	}()
	buf := make([]byte, 1<<16)
	gso := 0
	for deadline := time.Now().Add(10 * time.Second); gso == 0 && time.Now().Before(deadline); {
		n, mss, err := rx.RecvGSO(buf, 200*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if n > 1514 && (mss <= 0 || mss > 1460) {
			t.Fatalf("a %d-byte frame reported with segment size %d", n, mss)
		}
		if n <= 1514 && mss > 1460 {
			t.Fatalf("a %d-byte frame reported with segment size %d", n, mss)
		}
		if n > 1514 {
			gso++
		}
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if gso == 0 {
		t.Fatal("no frame larger than the MTU arrived: TSO seems off on the veth, the test proves nothing")
	}
}
