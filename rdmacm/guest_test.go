package rdmacm

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/daqiri-go/daqiri/integration/vm/guest"
	"github.com/daqiri-go/daqiri/internal/testutil"
	"github.com/daqiri-go/daqiri/verbs"
)

// The tests in this file need the VM harness's guest (rdma_ucm loaded,
// Soft-RoCE rxe0 on d0 with an IPv4 address); elsewhere they skip.

var (
	guestDev  string
	guestAddr netip.Addr
)

func requireGuest(t testing.TB) {
	t.Helper()
	guestDev, guestAddr = guest.RxeAddr(t)
}

func resources(t testing.TB) map[string]uint64 {
	t.Helper()
	all, err := verbs.ResourceSummary()
	if err != nil {
		t.Fatal(err)
	}
	return all[guestDev]
}

// checkNoLeak compares the kernel's object counts at cleanup with those at the start
// (register it before anything else, cleanups run in reverse).
func checkNoLeak(t *testing.T) {
	t.Helper()
	testutil.CountsUnchanged(t, "kernel", resources, "cm_id", "qp", "cq", "mr", "pd", "ctx")
}

func openCh(t *testing.T) *Channel {
	t.Helper()
	ch, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ch.Close(); err != nil {
			t.Error(err)
		}
	})
	return ch
}

// expect reads the next event from ch (bounded) and checks its type and ID.
func expect(t *testing.T, ch *Channel, typ EventType, id *ID) Event {
	t.Helper()
	ev, err := ch.NextEvent(20 * time.Second)
	if err != nil {
		t.Fatalf("waiting for %v: %v", typ, err)
	}
	if ev.Type != typ || (id != nil && ev.ID != id) {
		t.Fatalf("got %v (status %d, id %v), want %v on %v", ev.Type, ev.Status, ev.ID, typ, id)
	}
	return ev
}

func TestGuestBindAndQuery(t *testing.T) {
	requireGuest(t)
	checkNoLeak(t)
	ch := openCh(t)
	id, err := ch.CreateID(PSTCP, verbs.QPTypeRC)
	if err != nil {
		t.Fatal(err)
	}
	port := uint16(testutil.RandPort())
	if err := id.Bind(netip.AddrPortFrom(guestAddr, port)); err != nil {
		t.Fatal(err)
	}
	ai, err := id.QueryAddr()
	if err != nil {
		t.Fatal(err)
	}
	if ai.Src != netip.AddrPortFrom(guestAddr, port) || ai.Port != 1 || ai.NodeGUID == "" || ai.DeviceIndex < 0 {
		t.Errorf("QueryAddr = %+v", ai)
	}
	dev, p, err := id.Device()
	if err != nil || dev.Name != guestDev || p != 1 {
		t.Errorf("Device = %s port %d, %v; want %s port 1", dev.Name, p, err, guestDev)
	}
	// A second ID cannot take the same address and port.
	id2, err := ch.CreateID(PSTCP, verbs.QPTypeRC)
	if err != nil {
		t.Fatal(err)
	}
	if err := id2.Bind(netip.AddrPortFrom(guestAddr, port)); !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("second bind to %v:%d = %v, want EADDRINUSE", guestAddr, port, err)
	}
	for _, i := range []*ID{id, id2} {
		if _, err := i.Destroy(); err != nil {
			t.Fatal(err)
		}
	}
	if err := id.Bind(netip.AddrPortFrom(guestAddr, port)); !errors.Is(err, ErrClosed) {
		t.Errorf("Bind after Destroy = %v, want ErrClosed", err)
	}
}

func TestGuestBindUnknownAddress(t *testing.T) {
	requireGuest(t)
	checkNoLeak(t)
	ch := openCh(t)
	id, err := ch.CreateID(PSTCP, verbs.QPTypeRC)
	if err != nil {
		t.Fatal(err)
	}
	defer id.Destroy()
	bad := netip.MustParseAddrPort("10.7.0.77:4791") // in d0's subnet, but no interface has it
	err = id.Bind(bad)
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, syscall.EADDRNOTAVAIL) {
		t.Fatalf("Bind(%v) = %v, want EADDRNOTAVAIL", bad, err)
	}
	t.Logf("Bind(%v): %v", bad, err)
}

// TestGuestResolveUnreachable: an address with no route fails to resolve,
// either at once or with an ADDR_ERROR event (bounded by the timeout).
func TestGuestResolveUnreachable(t *testing.T) {
	requireGuest(t)
	checkNoLeak(t)
	ch := openCh(t)
	id, err := ch.CreateID(PSTCP, verbs.QPTypeRC)
	if err != nil {
		t.Fatal(err)
	}
	defer id.Destroy()
	// TEST-NET-1 (RFC 5737): the guest has no route there.
	dst := netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(1 + rand.IntN(250))}), 4791)
	err = id.ResolveAddr(netip.AddrPort{}, dst, 300*time.Millisecond)
	if err == nil {
		ev := expect(t, ch, EventAddrError, id)
		err = ev.Err()
		if err == nil {
			t.Fatal("ADDR_ERROR without an error")
		}
	}
	t.Logf("resolving %v: %v", dst, err)
	if err := id.ResolveAddr(netip.AddrPort{}, dst, 0); err == nil {
		t.Error("ResolveAddr with timeout 0 accepted")
	}
}

// end is one side of a test connection: an ID with a QP on the device the
// connection manager picked.
type end struct {
	id  *ID
	ctx *verbs.Context
	pd  *verbs.PD
	cq  *verbs.CQ
	qp  *verbs.QP
	buf []byte
	mr  *verbs.MR
}

func newEnd(t *testing.T, id *ID, typ verbs.QPType) *end {
	t.Helper()
	dev, _, err := id.Device()
	if err != nil {
		t.Fatal(err)
	}
	e := &end{id: id}
	if e.ctx, err = verbs.OpenDevice(dev, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.ctx.Close() })
	if e.pd, err = e.ctx.AllocPD(); err != nil {
		t.Fatal(err)
	}
	if e.cq, err = e.ctx.CreateCQ(32, nil, 0); err != nil {
		t.Fatal(err)
	}
	if e.qp, err = e.pd.CreateQP(verbs.QPInit{Type: typ, SendCQ: e.cq, RecvCQ: e.cq,
		Cap: verbs.QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 1, MaxRecvSGE: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := id.ModifyQP(e.qp, verbs.QPStateInit, nil); err != nil {
		t.Fatal(err)
	}
	e.buf, err = unix.Mmap(-1, 0, 8192, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(e.buf) })
	if e.mr, err = e.pd.RegMR(e.buf, verbs.AccessLocalWrite|verbs.AccessRemoteWrite|verbs.AccessRemoteRead); err != nil {
		t.Fatal(err)
	}
	return e
}

// toRTS walks the QP to RTR and RTS with the negotiated attributes and a
// short RNR timer.
func (e *end) toRTS(t *testing.T) {
	t.Helper()
	if err := e.id.ModifyQP(e.qp, verbs.QPStateRTR, func(a *verbs.QPAttr, m *verbs.QPAttrMask) {
		if *m&verbs.QPAttrMinRNRTimer != 0 {
			a.MinRNRTimer = 12
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := e.id.ModifyQP(e.qp, verbs.QPStateRTS, nil); err != nil {
		t.Fatal(err)
	}
}

func (e *end) close(t *testing.T) {
	t.Helper()
	for _, c := range []interface{ Close() error }{e.qp, e.mr, e.cq, e.pd} {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}
	if _, err := e.id.Destroy(); err != nil {
		t.Error(err)
	}
}

func poll1(t *testing.T, cq *verbs.CQ) verbs.WorkCompletion {
	t.Helper()
	wc := make([]verbs.WorkCompletion, 1)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		n, err := cq.Poll(wc)
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			if err := wc[0].Err(); err != nil {
				t.Fatal(err)
			}
			return wc[0]
		}
		time.Sleep(200 * time.Microsecond)
	}
	t.Fatal("no completion in 20 s")
	return verbs.WorkCompletion{}
}

// connectPair runs the whole handshake between a listener on srvCh and a
// client on cliCh, checking private data both ways, and returns both ends.
func connectPair(t *testing.T, srvCh, cliCh *Channel, ps PortSpace, typ verbs.QPType) (srv, cli *end, lis *ID) {
	t.Helper()
	var err error
	if lis, err = srvCh.CreateID(ps, typ); err != nil {
		t.Fatal(err)
	}
	addr := netip.AddrPortFrom(guestAddr, uint16(testutil.RandPort()))
	if err := lis.Bind(addr); err != nil {
		t.Fatal(err)
	}
	if err := lis.Listen(4); err != nil {
		t.Fatal(err)
	}
	cid, err := cliCh.CreateID(ps, typ)
	if err != nil {
		t.Fatal(err)
	}
	if err := cid.ResolveAddr(netip.AddrPortFrom(guestAddr, 0), addr, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	expect(t, cliCh, EventAddrResolved, cid)
	if err := cid.ResolveRoute(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	expect(t, cliCh, EventRouteResolved, cid)
	cli = newEnd(t, cid, typ)
	if err := cid.SetAckTimeout(14); typ == verbs.QPTypeRC && err != nil {
		t.Fatal(err)
	} else if typ != verbs.QPTypeRC && !errors.Is(err, syscall.EINVAL) {
		t.Errorf("SetAckTimeout on a %v ID = %v, want EINVAL (RC only)", typ, err)
	}
	req := testutil.RandBytes(MaxConnectPrivateData)
	rr := uint8(0)
	if typ == verbs.QPTypeRC {
		rr = 1
	}
	if err := cid.Connect(ConnParam{PrivateData: req, QPNum: cli.qp.Num(), ResponderResources: rr, InitiatorDepth: rr, RetryCount: 7, RNRRetryCount: 7}); err != nil {
		t.Fatal(err)
	}
	ev := expect(t, srvCh, EventConnectRequest, nil)
	if ev.Listen != lis || ev.ID == nil {
		t.Fatalf("connect request %+v", ev)
	}
	if !bytes.Equal(ev.Conn.PrivateData[:len(req)], req) || ev.Conn.QPNum != cli.qp.Num() {
		t.Fatalf("server saw private data %x qp %d, client sent %x qp %d", ev.Conn.PrivateData, ev.Conn.QPNum, req, cli.qp.Num())
	}
	srv = newEnd(t, ev.ID, typ)
	srv.toRTS(t)
	rep := testutil.RandBytes(MaxAcceptPrivateData)
	if err := ev.ID.Accept(ConnParam{PrivateData: rep, QPNum: srv.qp.Num(), ResponderResources: rr, InitiatorDepth: rr, RetryCount: 7, RNRRetryCount: 7}); err != nil {
		t.Fatal(err)
	}
	resp := expect(t, cliCh, EventConnectResponse, cid)
	if !bytes.Equal(resp.Conn.PrivateData[:len(rep)], rep) || resp.Conn.QPNum != srv.qp.Num() {
		t.Fatalf("client saw private data %x qp %d, server sent %x qp %d", resp.Conn.PrivateData, resp.Conn.QPNum, rep, srv.qp.Num())
	}
	cli.toRTS(t)
	if err := cid.EstablishActive(); err != nil {
		t.Fatal(err)
	}
	expect(t, srvCh, EventEstablished, srv.id)
	return srv, cli, lis
}

// exchange sends a random message each way and checks it arrived.
func exchange(t *testing.T, a, b *end) {
	t.Helper()
	for _, p := range [][2]*end{{a, b}, {b, a}} {
		from, to := p[0], p[1]
		n := 1 + rand.IntN(4096)
		copy(from.buf, testutil.RandBytes(n))
		clear(to.buf[4096:])
		rs, _ := to.mr.Slice(4096, 4096)
		if _, err := to.qp.PostRecv(verbs.RecvWR{ID: 2, SGL: []verbs.SGE{rs}}); err != nil {
			t.Fatal(err)
		}
		ss, _ := from.mr.Slice(0, uint64(n))
		if _, err := from.qp.PostSend(verbs.SendWR{ID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{ss}}); err != nil {
			t.Fatal(err)
		}
		poll1(t, from.cq)
		wc := poll1(t, to.cq)
		if wc.ByteLen != uint32(n) || !bytes.Equal(to.buf[4096:4096+n], from.buf[:n]) {
			t.Fatalf("%d-byte SEND arrived as %d bytes, equal %v", n, wc.ByteLen, bytes.Equal(to.buf[4096:4096+n], from.buf[:n]))
		}
	}
}

func TestGuestConnectAcceptDisconnect(t *testing.T) {
	requireGuest(t)
	for _, c := range []struct {
		ps  PortSpace
		typ verbs.QPType
	}{{PSTCP, verbs.QPTypeRC}, {PSIB, verbs.QPTypeUC}} {
		t.Run(c.typ.String(), func(t *testing.T) {
			checkNoLeak(t)
			srvCh, cliCh := openCh(t), openCh(t)
			srv, cli, lis := connectPair(t, srvCh, cliCh, c.ps, c.typ)
			exchange(t, srv, cli)
			a, err := srv.qp.Query(0)
			if err != nil {
				t.Fatal(err)
			}
			if c.typ == verbs.QPTypeRC && a.MinRNRTimer != 12 {
				t.Errorf("server QP min RNR timer %d, want 12", a.MinRNRTimer)
			}
			// The client disconnects: both sides hear of it.
			if err := cli.qp.Modify(&verbs.QPAttr{State: verbs.QPStateErr}, verbs.QPAttrState); err != nil {
				t.Fatal(err)
			}
			if err := cli.id.Disconnect(); err != nil {
				t.Fatal(err)
			}
			expect(t, srvCh, EventDisconnected, srv.id)
			// The kernel answers the peer's disconnect request only when
			// this side disconnects too (or destroys its ID).
			if err := srv.id.Disconnect(); err != nil {
				t.Fatal(err)
			}
			expect(t, cliCh, EventDisconnected, cli.id)
			srv.close(t)
			cli.close(t)
			if _, err := lis.Destroy(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestGuestPeerGone: destroying one side's ID (what the kernel does when a
// process dies) disconnects the other.
func TestGuestPeerGone(t *testing.T) {
	requireGuest(t)
	checkNoLeak(t)
	srvCh, cliCh := openCh(t), openCh(t)
	srv, cli, lis := connectPair(t, srvCh, cliCh, PSTCP, verbs.QPTypeRC)
	defer lis.Destroy()
	// Closing the client's channel destroys its IDs in the kernel.
	if err := cliCh.Close(); err != nil {
		t.Fatal(err)
	}
	expect(t, srvCh, EventDisconnected, srv.id)
	for _, c := range []interface{ Close() error }{cli.qp, cli.mr, cli.cq, cli.pd} {
		c.Close()
	}
	srv.close(t)
}

func TestGuestReject(t *testing.T) {
	requireGuest(t)
	checkNoLeak(t)
	srvCh, cliCh := openCh(t), openCh(t)
	lis, err := srvCh.CreateID(PSTCP, verbs.QPTypeRC)
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Destroy()
	addr := netip.AddrPortFrom(guestAddr, uint16(testutil.RandPort()))
	if err := lis.Bind(addr); err != nil {
		t.Fatal(err)
	}
	if err := lis.Listen(1); err != nil {
		t.Fatal(err)
	}
	cid, err := cliCh.CreateID(PSTCP, verbs.QPTypeRC)
	if err != nil {
		t.Fatal(err)
	}
	if err := cid.ResolveAddr(netip.AddrPort{}, addr, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	expect(t, cliCh, EventAddrResolved, cid)
	if err := cid.ResolveRoute(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	expect(t, cliCh, EventRouteResolved, cid)
	cli := newEnd(t, cid, verbs.QPTypeRC)
	if err := cid.Connect(ConnParam{QPNum: cli.qp.Num(), RetryCount: 7, RNRRetryCount: 7}); err != nil {
		t.Fatal(err)
	}
	ev := expect(t, srvCh, EventConnectRequest, nil)
	why := testutil.RandBytes(1 + rand.IntN(MaxRejectPrivateData))
	if err := ev.ID.Reject(why); err != nil {
		t.Fatal(err)
	}
	rej := expect(t, cliCh, EventRejected, cid)
	if !errors.Is(rej.Err(), syscall.ECONNREFUSED) || !bytes.Equal(rej.Conn.PrivateData[:len(why)], why) {
		t.Errorf("rejection %v with private data %x, want %x", rej.Err(), rej.Conn.PrivateData, why)
	}
	if _, err := ev.ID.Destroy(); err != nil {
		t.Fatal(err)
	}
	if err := ev.ID.Reject(nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Reject after Destroy = %v", err)
	}
	if err := ev.ID.Reject(make([]byte, MaxRejectPrivateData+1)); err == nil {
		t.Error("oversized reject private data accepted")
	}
	cli.close(t)
}

// TestGuestNoListener: a request to a port nobody listens on is rejected by
// the peer's connection manager.
func TestGuestNoListener(t *testing.T) {
	requireGuest(t)
	checkNoLeak(t)
	ch := openCh(t)
	cid, err := ch.CreateID(PSTCP, verbs.QPTypeRC)
	if err != nil {
		t.Fatal(err)
	}
	addr := netip.AddrPortFrom(guestAddr, uint16(testutil.RandPort()))
	if err := cid.ResolveAddr(netip.AddrPort{}, addr, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	expect(t, ch, EventAddrResolved, cid)
	if err := cid.ResolveRoute(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	expect(t, ch, EventRouteResolved, cid)
	cli := newEnd(t, cid, verbs.QPTypeRC)
	if err := cid.Connect(ConnParam{QPNum: cli.qp.Num(), RetryCount: 7, RNRRetryCount: 7}); err != nil {
		t.Fatal(err)
	}
	ev, err := ch.NextEvent(20 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if (ev.Type != EventRejected && ev.Type != EventUnreachable) || ev.Err() == nil {
		t.Fatalf("connecting to %v with no listener: %v (status %d)", addr, ev.Type, ev.Status)
	}
	t.Logf("connecting to %v with no listener: %v", addr, ev.Err())
	cli.close(t)
}

func TestGuestChannelCloseDestroysIDs(t *testing.T) {
	requireGuest(t)
	checkNoLeak(t)
	ch, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	base := resources(t)["cm_id"]
	n := 1 + rand.IntN(5)
	ids := make([]*ID, n)
	for i := range ids {
		if ids[i], err = ch.CreateID(PSTCP, verbs.QPTypeRC); err != nil {
			t.Fatal(err)
		}
		if err := ids[i].Bind(netip.AddrPortFrom(guestAddr, 0)); err != nil {
			t.Fatal(err)
		}
	}
	if got := resources(t)["cm_id"]; got != base+uint64(n) {
		t.Errorf("cm_id count %d with %d IDs open, %d before", got, n, base)
	}
	if err := ch.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ids[0].Destroy(); err != nil {
		t.Errorf("Destroy after the channel closed: %v", err)
	}
	if _, err := ch.NextEvent(0); !errors.Is(err, ErrClosed) {
		t.Errorf("NextEvent on a closed channel = %v", err)
	}
}
