package rdmacm

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/verbs"
)

// TestSizes pins the struct sizes against the field lists of
// include/uapi/rdma/rdma_user_cm.h, summed with natural alignment.
func TestSizes(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"rdma_ucm_cmd_hdr", sizeofHdr, 4 + 2 + 2},
		{"rdma_ucm_create_id", sizeofCreateID, 8 + 8 + 2 + 1 + 5},
		{"rdma_ucm_destroy_id", sizeofDestroyID, 8 + 4 + 4},
		{"rdma_ucm_bind", sizeofBind, 4 + 2 + 2 + 128},
		{"rdma_ucm_resolve_addr", sizeofResolveAddr, 4 + 4 + 2 + 2 + 4 + 128 + 128},
		{"rdma_ucm_resolve_route", sizeofResolveRoute, 4 + 4},
		{"rdma_ucm_query", sizeofQuery, 8 + 4 + 4},
		{"rdma_ucm_query_addr_resp", sizeofQueryAddrResp, 8 + 1 + 1 + 2 + 2 + 2 + 128 + 128 + 4 + 4},
		{"rdma_ucm_conn_param", sizeofConnParam, 4 + 4 + 256 + 8*1},
		{"rdma_ucm_ud_param", sizeofUDParam, 4 + 4 + 32 + 256 + 1 + 7},
		{"rdma_ucm_connect", sizeofConnect, 272 + 4 + 4 + 8},
		{"rdma_ucm_listen", sizeofListen, 4 + 4},
		{"rdma_ucm_accept", sizeofAccept, 8 + 272 + 4 + 4 + 8},
		{"rdma_ucm_reject", sizeofReject, 4 + 1 + 1 + 2 + 256},
		{"rdma_ucm_init_qp_attr", sizeofInitQPAttr, 8 + 4 + 4},
		{"ib_uverbs_qp_attr", sizeofKernelQPAttr, verbs.SizeofKernelQPAttr},
		{"rdma_ucm_event_resp", sizeofEventResp, 8 + 4 + 4 + 4 + 304 + 4 + 8},
		{"rdma_ucm_set_option", sizeofSetOption, 8 + 4 + 4 + 4 + 4},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d bytes, the header says %d", c.name, c.got, c.want)
		}
	}
	if offsetEventECE != 328 || offsetEventParam != 20 || offsetConnParamValid != 271 {
		t.Errorf("event offsets param %d ece %d, conn_param.valid %d", offsetEventParam, offsetEventECE, offsetConnParamValid)
	}
}

func TestSockaddrRoundTrip(t *testing.T) {
	for range 200 {
		var a netip.Addr
		if rand.IntN(2) == 0 {
			a = netip.AddrFrom4([4]byte{byte(rand.Uint32()), byte(rand.Uint32()), byte(rand.Uint32()), byte(rand.Uint32())})
		} else {
			var b [16]byte
			for i := range b {
				b[i] = byte(rand.Uint32())
			}
			b[0] = 0x20 // not IPv4-mapped
			a = netip.AddrFrom16(b)
		}
		ap := netip.AddrPortFrom(a, uint16(rand.Uint32()))
		buf := make([]byte, sizeofSockaddrStore)
		n := encodeSockaddr(buf, ap)
		if (a.Is4() && n != sizeofSockaddrIn) || (a.Is6() && n != sizeofSockaddrIn6) {
			t.Fatalf("%v encoded in %d bytes", ap, n)
		}
		if got := decodeSockaddr(buf); got != ap {
			t.Fatalf("round trip %v → %v", ap, got)
		}
		// Network byte order for the port.
		if buf[2] != byte(ap.Port()>>8) || buf[3] != byte(ap.Port()) {
			t.Fatalf("port %d bytes %x", ap.Port(), buf[2:4])
		}
	}
	// An IPv4-mapped address travels as sockaddr_in.
	m := netip.AddrPortFrom(netip.AddrFrom16(netip.MustParseAddr("10.7.0.1").As16()), 7)
	buf := make([]byte, sizeofSockaddrStore)
	if n := encodeSockaddr(buf, m); n != sizeofSockaddrIn || decodeSockaddr(buf) != netip.MustParseAddrPort("10.7.0.1:7") {
		t.Errorf("IPv4-mapped %v: %d bytes, decodes to %v", m, n, decodeSockaddr(buf))
	}
	// Unknown families and short buffers decode to nothing.
	if decodeSockaddr([]byte{1}).IsValid() || decodeSockaddr(make([]byte, 128)).IsValid() {
		t.Error("garbage decoded to an address")
	}
}

func TestConnParamRoundTrip(t *testing.T) {
	for range 100 {
		pd := make([]byte, rand.IntN(MaxAcceptPrivateData+1))
		for i := range pd {
			pd[i] = byte(rand.Uint32())
		}
		p := ConnParam{PrivateData: pd, ResponderResources: uint8(rand.Uint32()), InitiatorDepth: uint8(rand.Uint32()),
			FlowControl: rand.IntN(2) == 0, RetryCount: uint8(rand.IntN(8)), RNRRetryCount: uint8(rand.IntN(8)),
			SRQ: rand.IntN(2) == 0, QPNum: rand.Uint32() & 0xffffff, QKey: rand.Uint32()}
		b := make([]byte, sizeofConnParam)
		if err := p.encode(b, MaxAcceptPrivateData); err != nil {
			t.Fatal(err)
		}
		if b[offsetConnParamValid] != 1 {
			t.Fatal("valid byte not set")
		}
		q := decodeConnParam(b)
		if len(pd) == 0 {
			q.PrivateData = pd
		}
		if !bytes.Equal(q.PrivateData, p.PrivateData) || q.QPNum != p.QPNum || q.QKey != p.QKey || q.ResponderResources != p.ResponderResources ||
			q.InitiatorDepth != p.InitiatorDepth || q.FlowControl != p.FlowControl || q.RetryCount != p.RetryCount ||
			q.RNRRetryCount != p.RNRRetryCount || q.SRQ != p.SRQ {
			t.Fatalf("round trip %+v → %+v", p, q)
		}
	}
}

func TestConnParamRejectsBadInput(t *testing.T) {
	b := make([]byte, sizeofConnParam)
	p := ConnParam{PrivateData: make([]byte, MaxConnectPrivateData+1)}
	if err := p.encode(b, MaxConnectPrivateData); err == nil || !strings.Contains(err.Error(), "at most 56") {
		t.Errorf("57 bytes of connect private data: %v", err)
	}
	p = ConnParam{RetryCount: 8}
	if err := p.encode(b, MaxConnectPrivateData); err == nil {
		t.Error("retry count 8 accepted")
	}
	p = ConnParam{RNRRetryCount: 9}
	if err := p.encode(b, MaxConnectPrivateData); err == nil {
		t.Error("RNR retry count 9 accepted")
	}
	for _, d := range []time.Duration{0, -time.Second, 2 * time.Hour} {
		if _, err := timeoutMS(d); err == nil {
			t.Errorf("timeout %v accepted", d)
		}
	}
	if ms, err := timeoutMS(1500 * time.Microsecond); err != nil || ms != 2 {
		t.Errorf("1.5 ms → %d ms, %v (want rounded up to 2)", ms, err)
	}
}

func TestEventErrors(t *testing.T) {
	if err := (Event{Type: EventEstablished}).Err(); err != nil {
		t.Errorf("ESTABLISHED: %v", err)
	}
	err := (Event{Type: EventAddrError, Status: -int32(syscall.ETIMEDOUT)}).Err()
	if !errors.Is(err, syscall.ETIMEDOUT) || !strings.Contains(err.Error(), "ADDR_ERROR") {
		t.Errorf("ADDR_ERROR/-ETIMEDOUT: %v", err)
	}
	err = (Event{Type: EventRejected, Status: 8}).Err()
	if !errors.Is(err, syscall.ECONNREFUSED) || !strings.Contains(err.Error(), "nothing listens") {
		t.Errorf("REJECTED/8: %v", err)
	}
	if !errors.Is((Event{Type: EventDeviceRemoval}).Err(), syscall.ENODEV) {
		t.Error("DEVICE_REMOVAL does not unwrap to ENODEV")
	}
	if EventTimewaitExit.String() != "TIMEWAIT_EXIT" || EventType(99).String() != "EventType(99)" {
		t.Error("event names")
	}
	e := &Error{Op: "write BIND(10.9.9.9:1)", Errno: syscall.EADDRNOTAVAIL}
	if !errors.Is(e, syscall.EADDRNOTAVAIL) || !strings.Contains(e.Error(), "no local interface") {
		t.Errorf("bind error: %v", e)
	}
	if !errors.Is(&Error{Errno: syscall.ENOSYS}, ErrNotSupported) {
		t.Error("ENOSYS is not ErrNotSupported")
	}
}

// TestDecodeEvent feeds the decoder kernel-shaped replies.
func TestDecodeEvent(t *testing.T) {
	ch := &Channel{fd: -1, ids: map[uint64]*ID{}}
	lis := &ID{ch: ch, ps: PSTCP, qpType: verbs.QPTypeRC}
	ch.register(lis)
	pd := make([]byte, 56)
	for i := range pd {
		pd[i] = byte(rand.Uint32())
	}
	r := make([]byte, sizeofEventResp)
	ne.PutUint64(r[0:], lis.uid)
	ne.PutUint32(r[8:], 77) // the new context's handle
	ne.PutUint32(r[12:], uint32(EventConnectRequest))
	(&ConnParam{PrivateData: pd, QPNum: 0x1234, ResponderResources: 1, InitiatorDepth: 1}).encode(r[offsetEventParam:], MaxPrivateData)
	ne.PutUint32(r[offsetEventECE:], 0x15b3)
	ev, ok, err := ch.decodeEvent(r)
	if err != nil || !ok {
		t.Fatalf("decode: %v %v", ok, err)
	}
	if ev.Listen != lis || ev.ID == nil || ev.ID.handle != 77 || ev.ID.uid == 0 || ev.ID.uid == lis.uid || ev.ID.qpType != verbs.QPTypeRC ||
		!bytes.Equal(ev.Conn.PrivateData, pd) || ev.Conn.QPNum != 0x1234 || ev.ECE.VendorID != 0x15b3 {
		t.Fatalf("connect request decoded as %+v", ev)
	}
	if ch.lookup(ev.ID.uid) != ev.ID {
		t.Error("the new ID is not registered for its events")
	}
	// An event for an ID nobody knows is skipped.
	ne.PutUint64(r[0:], 9999)
	ne.PutUint32(r[12:], uint32(EventDisconnected))
	if _, ok, err := ch.decodeEvent(r); ok || err != nil {
		t.Errorf("unknown uid: ok %v err %v", ok, err)
	}
	ne.PutUint64(r[0:], lis.uid)
	ne.PutUint32(r[16:], uint32(0xffffff92)) // -110 = -ETIMEDOUT
	ne.PutUint32(r[12:], uint32(EventUnreachable))
	ev, ok, _ = ch.decodeEvent(r)
	if !ok || ev.ID != lis || !errors.Is(ev.Err(), syscall.ETIMEDOUT) {
		t.Errorf("unreachable decoded as %+v (%v)", ev, ev.Err())
	}
}

func TestClosedChannel(t *testing.T) {
	ch := &Channel{fd: -1, ids: map[uint64]*ID{}}
	ch.closed.Store(true)
	if _, err := ch.CreateID(PSTCP, verbs.QPTypeRC); !errors.Is(err, ErrClosed) {
		t.Errorf("CreateID on a closed channel: %v", err)
	}
	if _, err := ch.NextEvent(0); !errors.Is(err, ErrClosed) {
		t.Errorf("NextEvent on a closed channel: %v", err)
	}
	ch2 := &Channel{fd: -1, ids: map[uint64]*ID{}}
	if _, err := ch2.CreateID(PortSpace(5), verbs.QPTypeRC); err == nil {
		t.Error("unknown port space accepted")
	}
	if _, err := ch2.CreateID(PSIB, verbs.QPTypeRawPacket); err == nil {
		t.Error("port space IB with a raw packet QP accepted")
	}
}
