package sockio

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/daqiri-go/daqiri/internal/testutil"
)

var loopback = netip.MustParseAddrPort("127.0.0.1:0")

func openUDP(t *testing.T, remote netip.AddrPort, o Options) *UDP {
	t.Helper()
	testutil.RequireUDPSocketOption(t, "SO_RXQ_OVFL", unix.SO_RXQ_OVFL) // every UDP socket sets it
	u, err := ListenUDP(loopback, remote, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testutil.CloseOK(t, u) })
	return u
}

// recvAll receives until want bytes arrived (bounded), returning the messages.
func recvBytes(t *testing.T, u *UDP, b *RecvBatch, want int) []RecvMsg {
	t.Helper()
	var got []RecvMsg
	have := 0
	for tries := 0; have < want && tries < 50; tries++ {
		for i := range b.Msgs {
			b.Msgs[i].Buf = make([]byte, 65536)
		}
		n, err := u.Recv(b, len(b.Msgs), true)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range b.Msgs[:n] {
			got = append(got, m)
			have += m.N
		}
	}
	if have != want {
		t.Fatalf("received %d of %d bytes", have, want)
	}
	return got
}

// TestUDPBatch sends random datagrams with sendmmsg (some as GSO messages split by the kernel)
// and receives them with recvmmsg: every byte arrives in order, from the sender's address,
// with a kernel receive time no later than now; coalesced (GRO) receives report a segment
// size that splits them back.
func TestUDPBatch(t *testing.T) {
	for _, gro := range []bool{false, true} {
		rx := openUDP(t, netip.AddrPort{}, Options{Timestamps: true, GRO: gro, RecvBuf: 4 << 20})
		tx := openUDP(t, rx.LocalAddr(), Options{})
		r := rand.New(rand.NewPCG(rand.Uint64(), 1))
		var msgs []SendMsg
		var want [][]byte // datagrams as the receiver must see them
		for i := 0; i < 40; i++ {
			if r.IntN(3) == 0 {
				seg := 100 + r.IntN(1300)
				total := seg*(1+r.IntN(8)) + r.IntN(seg)
				p := testutil.RandBytes(total)
				// Two buffers per message: the kernel concatenates them before splitting.
				cut := r.IntN(total)
				msgs = append(msgs, SendMsg{Bufs: [][]byte{p[:cut], p[cut:]}, GSO: seg})
				for o := 0; o < total; o += seg {
					want = append(want, p[o:min(o+seg, total)])
				}
				continue
			}
			p := testutil.RandBytes(1 + r.IntN(8000))
			msgs = append(msgs, SendMsg{Bufs: [][]byte{p}})
			want = append(want, p)
		}
		sb := NewSendBatch(8, 12)
		n, err := tx.Send(sb, msgs)
		if err != nil || n != len(msgs) {
			t.Fatalf("sent %d of %d: %v", n, len(msgs), err)
		}
		var wantAll []byte
		for _, w := range want {
			wantAll = append(wantAll, w...)
		}
		var gotAll []byte
		var split [][]byte
		for _, m := range recvBytes(t, rx, NewRecvBatch(16), len(wantAll)) {
			if m.From != tx.LocalAddr() || m.Trunc {
				t.Fatalf("from %v (want %v), truncated %v", m.From, tx.LocalAddr(), m.Trunc)
			}
			if m.Stamp <= 0 || m.Stamp > time.Now().UnixNano() {
				t.Fatalf("receive time %d", m.Stamp)
			}
			if m.GSO != 0 && !gro {
				t.Fatalf("segment size %d without GRO", m.GSO)
			}
			d := m.Buf[:m.N]
			gotAll = append(gotAll, d...)
			seg := m.GSO
			if seg == 0 {
				seg = len(d)
			}
			for o := 0; o < len(d); o += seg {
				split = append(split, d[o:min(o+seg, len(d))])
			}
		}
		if !bytes.Equal(gotAll, wantAll) {
			t.Fatalf("GRO %v: bytes differ", gro)
		}
		if len(split) != len(want) {
			t.Fatalf("GRO %v: %d datagrams after splitting by segment size, sent %d", gro, len(split), len(want))
		}
		for i := range want {
			if !bytes.Equal(split[i], want[i]) {
				t.Fatalf("GRO %v: datagram %d differs", gro, i)
			}
		}
	}
}

// TestUDPDropCounter overflows a small receive buffer: the kernel's drop count (SO_MEMINFO)
// rises, and datagrams received afterwards carry the same cumulative count (SO_RXQ_OVFL).
func TestUDPDropCounter(t *testing.T) {
	rx := openUDP(t, netip.AddrPort{}, Options{RecvBuf: 16 << 10})
	tx := openUDP(t, rx.LocalAddr(), Options{})
	p := make([]byte, 1400)
	msgs := make([]SendMsg, 200)
	for i := range msgs {
		msgs[i] = SendMsg{Bufs: [][]byte{p}}
	}
	if n, err := tx.Send(NewSendBatch(64, 64), msgs); err != nil || n != len(msgs) {
		t.Fatalf("sent %d: %v", n, err)
	}
	drops, err := rx.Drops()
	if err != nil {
		t.Fatal(err)
	}
	if drops == 0 {
		t.Fatal("200 datagrams of 1400 bytes into a 16 KiB buffer: no drop counted")
	}
	// Drain what was queued, then send one more: the kernel stamps a datagram with the drop
	// count at the time it queues it, so this one carries the counter.
	b := NewRecvBatch(64)
	for tries := 0; tries < 20; tries++ {
		for i := range b.Msgs {
			b.Msgs[i].Buf = make([]byte, 2048)
		}
		if n, err := rx.Recv(b, len(b.Msgs), false); err != nil || n == 0 {
			break
		}
	}
	if _, err := tx.Send(NewSendBatch(1, 1), msgs[:1]); err != nil {
		t.Fatal(err)
	}
	b.Msgs[0].Buf = make([]byte, 2048)
	n, err := rx.Recv(b, 1, true)
	if err != nil || n != 1 {
		t.Fatalf("datagram after the drops: %d %v", n, err)
	}
	seen := b.HasOverflow
	now, _ := rx.Drops()
	if !seen || b.Overflow == 0 || b.Overflow != now {
		t.Fatalf("SO_RXQ_OVFL: seen %v, count %d; SO_MEMINFO drops %d", seen, b.Overflow, now)
	}
}

// TestUDPTruncated: a datagram larger than its buffer is cut and flagged; a receive with
// nothing queued returns 0 at once.
func TestUDPTruncated(t *testing.T) {
	rx := openUDP(t, netip.AddrPort{}, Options{PollTimeout: 10 * time.Millisecond})
	tx := openUDP(t, rx.LocalAddr(), Options{})
	b := NewRecvBatch(2)
	b.Msgs[0].Buf = make([]byte, 8)
	if n, err := rx.Recv(b, 1, false); n != 0 || err != nil {
		t.Fatalf("empty socket: %d %v", n, err)
	}
	if n, err := rx.Recv(b, 1, true); n != 0 || err != nil {
		t.Fatalf("empty socket after the poll timeout: %d %v", n, err)
	}
	if _, err := tx.Send(NewSendBatch(1, 1), []SendMsg{{Bufs: [][]byte{[]byte("0123456789abcdef")}}}); err != nil {
		t.Fatal(err)
	}
	n, err := rx.Recv(b, 1, true)
	if err != nil || n != 1 || !b.Msgs[0].Trunc || b.Msgs[0].N != 8 || string(b.Msgs[0].Buf) != "01234567" {
		t.Fatalf("%d %v %+v", n, err, b.Msgs[0])
	}
	if n, err := rx.Recv(b, 0, true); n != 0 || err != nil {
		t.Fatalf("k = 0: %d %v", n, err)
	}
}

// TestBadAddresses: endpoints of two IP versions on one socket are refused, as is a message
// with more buffers than the batch holds.
func TestBadAddresses(t *testing.T) {
	testutil.RequireUDPSocketOption(t, "SO_RXQ_OVFL", unix.SO_RXQ_OVFL)
	v6 := netip.MustParseAddrPort("[::1]:9")
	if _, err := ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), v6, Options{}); err == nil || !strings.Contains(err.Error(), "different IP versions") {
		t.Errorf("ListenUDP from IPv4 to IPv6: %v", err)
	}
	if _, err := DialTCP(netip.MustParseAddrPort("127.0.0.1:0"), v6, time.Second, Options{}); err == nil {
		t.Error("DialTCP from IPv4 to IPv6 accepted")
	}
	u := openUDP(t, netip.MustParseAddrPort("127.0.0.1:9"), Options{})
	if err := u.Connect(v6); err == nil || !strings.Contains(err.Error(), "does not fit an IPv4 socket") {
		t.Errorf("Connect of an IPv4 socket to IPv6: %v", err)
	}
	if _, err := u.Send(NewSendBatch(1, 1), []SendMsg{{Bufs: [][]byte{{1}, {2}}}}); err == nil {
		t.Error("message with 2 buffers in a 1-buffer batch accepted")
	}
}

// TestIPv6 moves UDP datagrams (addressed and connected, with their source address and
// receive time) and a TCP stream over ::1.
func TestIPv6(t *testing.T) {
	testutil.RequireUDPSocketOption(t, "SO_RXQ_OVFL", unix.SO_RXQ_OVFL)
	o := Options{PollTimeout: 50 * time.Millisecond, Timestamps: true}
	open6 := func() *UDP {
		u, err := ListenUDP(netip.MustParseAddrPort("[::1]:0"), netip.AddrPort{}, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { testutil.CloseOK(t, u) })
		return u
	}
	rx, tx := open6(), open6()
	to := rx.LocalAddr()
	if !to.Addr().Is6() || to.Port() == 0 {
		t.Fatalf("bound to %v", to)
	}
	sb := NewSendBatch(4, 1)
	var msgs []SendMsg
	for i := 0; i < 4; i++ {
		msgs = append(msgs, SendMsg{Bufs: [][]byte{[]byte(fmt.Sprintf("six-%d", i))}, To: to})
	}
	if n, err := tx.Send(sb, msgs); n != 4 || err != nil {
		t.Fatalf("send: %d %v", n, err)
	}
	b := NewRecvBatch(4)
	got := 0
	for tries := 0; got < 4 && tries < 100; tries++ {
		for i := range b.Msgs {
			b.Msgs[i].Buf = make([]byte, 64)
		}
		n, err := rx.Recv(b, 4-got, true)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			m := b.Msgs[i]
			if string(m.Buf[:m.N]) != fmt.Sprintf("six-%d", got) || m.From != tx.LocalAddr() || m.Stamp <= 0 {
				t.Fatalf("datagram %d: %q from %v (sender %v), stamp %d", got, m.Buf[:m.N], m.From, tx.LocalAddr(), m.Stamp)
			}
			got++
		}
	}
	if got != 4 {
		t.Fatalf("%d of 4 datagrams over ::1", got)
	}
	if _, sc := tcpPair(t, netip.MustParseAddrPort("[::1]:0")); !sc.RemoteAddr().Addr().Is6() {
		t.Fatalf("accepted from %v", sc.RemoteAddr())
	}
}

// TestTCP connects, writes scattered buffers and reads them back whole and scattered, then
// sees the peer's close as io.EOF; dialling a closed port fails.
func TestTCP(t *testing.T) {
	o := Options{PollTimeout: 50 * time.Millisecond}
	l, err := ListenTCP(loopback, 4, o)
	if err != nil {
		t.Fatal(err)
	}
	defer testutil.CloseOK(t, l)
	if _, _, err := l.Accept(); !errors.Is(err, ErrTimeout) {
		t.Fatalf("Accept with nobody dialling: %v", err)
	}
	c, err := DialTCP(netip.AddrPort{}, l.LocalAddr(), time.Second, o)
	if err != nil {
		t.Fatal(err)
	}
	defer testutil.CloseOK(t, c)
	s, from, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer testutil.CloseOK(t, s)
	if from != c.LocalAddr() || s.RemoteAddr() != c.LocalAddr() {
		t.Fatalf("accepted from %v / %v, dialled from %v", from, s.RemoteAddr(), c.LocalAddr())
	}
	if _, err := s.Read(make([]byte, 4)); !errors.Is(err, ErrTimeout) {
		t.Fatalf("Read with nothing sent: %v", err)
	}
	r := rand.New(rand.NewPCG(rand.Uint64(), 2))
	var bufs [][]byte
	var all []byte
	for i := 0; i < 1+r.IntN(6); i++ {
		p := testutil.RandBytes(r.IntN(100000))
		bufs = append(bufs, p)
		all = append(all, p...)
	}
	errc := make(chan error, 1)
	go func() {
		n, err := c.Writev(bufs)
		if err == nil && n != len(all) {
			err = errors.New("short write")
		}
		errc <- err
	}()
	got := make([]byte, len(all))
	cut := len(all) / 3
	if err := s.ReadFull(got[:cut], func() bool { return true }); err != nil {
		t.Fatal(err)
	}
	for off := cut; off < len(all); {
		n, err := s.Readv(got[off:min(off+1000, len(all))], got[min(off+1000, len(all)):])
		if err != nil {
			t.Fatalf("Readv at %d of %d: %v", off, len(all), err)
		}
		off += n
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, all) {
		t.Fatal("bytes differ")
	}
	if err := c.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("Read after the peer's shutdown: %v", err)
	}
	port := l.LocalAddr()
	l.Close()
	if _, err := DialTCP(netip.AddrPort{}, port, time.Second, o); err == nil {
		t.Fatal("dialled a closed port")
	}
}

// tcpPair is a connected client and the server's accepted connection, listening on local;
// both close with the test.
func tcpPair(t *testing.T, local netip.AddrPort) (client, server *TCPConn) {
	t.Helper()
	o := Options{PollTimeout: 50 * time.Millisecond}
	l, err := ListenTCP(local, 4, o)
	if err != nil {
		t.Fatal(err)
	}
	defer testutil.CloseOK(t, l)
	c, err := DialTCP(netip.AddrPort{}, l.LocalAddr(), time.Second, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s, _, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return c, s
}

// TestRecvLowat: with SO_RCVLOWAT at n the poller stays quiet while fewer bytes are queued
// (its wait runs out), reports the socket once n are, a read without waiting takes what is
// queued even below n, and the peer's close wakes it whatever is queued.
func TestRecvLowat(t *testing.T) {
	c, s := tcpPair(t, loopback)
	p, err := NewPoller(4)
	if err != nil {
		t.Fatal(err)
	}
	defer testutil.CloseOK(t, p)
	if err := p.Add(s.FD(), 7); err != nil {
		t.Fatal(err)
	}
	const lowat = 64 << 10
	if err := s.SetRecvLowat(lowat); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(rand.Uint64(), 3))
	first := testutil.RandBytes(1 + r.IntN(lowat/2))
	if _, err := c.Writev([][]byte{first}); err != nil {
		t.Fatal(err)
	}
	evs := make([]PollEvent, 4)
	// Loopback delivers within the write; the bytes are queued before the wait starts.
	const d = 300 * time.Microsecond
	start := time.Now()
	if n, err := p.Wait(evs, d); err != nil || n != 0 {
		t.Fatalf("Wait with %d of %d bytes queued: %d events, %v", len(first), lowat, n, err)
	}
	if took := time.Since(start); took < d {
		t.Fatalf("Wait(%v) returned after %v", d, took)
	}
	rest := testutil.RandBytes(lowat - len(first) + r.IntN(1000))
	if _, err := c.Writev([][]byte{rest}); err != nil {
		t.Fatal(err)
	}
	if n, err := p.Wait(evs, 5*time.Second); err != nil || n != 1 || evs[0].Token != 7 {
		t.Fatalf("Wait with %d of %d bytes queued: %d events %v, %v", len(first)+len(rest), lowat, n, evs[:n], err)
	}
	want := append(append([]byte(nil), first...), rest...)
	got := make([]byte, len(want))
	for off := 0; off < len(want); {
		n, err := s.ReadNow([][]byte{got[off:]})
		if err != nil {
			t.Fatalf("ReadNow at %d of %d: %v", off, len(want), err)
		}
		off += n
	}
	if !bytes.Equal(got, want) {
		t.Fatal("bytes differ")
	}
	// A few bytes below the mark, then the peer closes: readable at once, bytes then EOF.
	tail := testutil.RandBytes(1 + r.IntN(100))
	if _, err := c.Writev([][]byte{tail}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.ReadNow([][]byte{got[:len(tail)+10]}); err != nil || !bytes.Equal(got[:n], tail) {
		t.Fatalf("ReadNow below the mark: %d bytes, %v", n, err)
	}
	if err := c.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if n, err := p.Wait(evs, 5*time.Second); err != nil || n != 1 {
		t.Fatalf("Wait after the peer's shutdown: %d events, %v", n, err)
	}
	if _, err := s.ReadNow([][]byte{got[:1]}); err != io.EOF {
		t.Fatalf("ReadNow after the peer's shutdown: %v", err)
	}
}

// TestPollerWaits: both ways of waiting (epoll_pwait2, and epoll_wait where that is refused)
// run out no sooner than asked (a sub-millisecond wait included) and report a socket that
// becomes readable.
func TestPollerWaits(t *testing.T) {
	for _, old := range []bool{false, true} {
		c, s := tcpPair(t, loopback)
		p, err := NewPoller(4)
		if err != nil {
			t.Fatal(err)
		}
		p.noPwait2 = old
		if err := p.Add(s.FD(), 3); err != nil {
			t.Fatal(err)
		}
		evs := make([]PollEvent, 4)
		for _, d := range []time.Duration{0, 200 * time.Microsecond, 1500 * time.Microsecond} {
			start := time.Now()
			if n, err := p.Wait(evs, d); err != nil || n != 0 {
				t.Fatalf("epoll_wait only %v: Wait(%v) on a quiet socket: %d events, %v", old, d, n, err)
			}
			if took := time.Since(start); took < d {
				t.Fatalf("epoll_wait only %v: Wait(%v) returned after %v", old, d, took)
			}
		}
		if _, err := c.Writev([][]byte{{1}}); err != nil {
			t.Fatal(err)
		}
		if n, err := p.Wait(evs, 5*time.Second); err != nil || n != 1 || evs[0].Token != 3 {
			t.Fatalf("epoll_wait only %v: Wait on a readable socket: %d events %v, %v", old, n, evs[:n], err)
		}
		testutil.CloseOK(t, p)
	}
}
