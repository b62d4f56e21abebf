package verbs

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/daqiri-go/daqiri/internal/testutil"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"
)

// pair is two QPs of one type on one context, each with its own CQ, wired
// to each other through the guest's address.
type pair struct {
	c        *Context
	pd       *PD
	cq       [2]*CQ
	qp       [2]*QP
	gidIndex uint8
}

func newPair(t *testing.T, c *Context, typ QPType, ch *CompChannel) *pair {
	t.Helper()
	p := &pair{c: c, gidIndex: guestGIDIndex(t, c)}
	var err error
	if p.pd, err = c.AllocPD(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testutil.CloseOK(t, p.pd) })
	for i := range 2 {
		if p.cq[i], err = c.CreateCQ(16, ch, 0); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { testutil.CloseOK(t, p.cq[i]) })
	}
	for i := range 2 {
		p.qp[i], err = p.pd.CreateQP(QPInit{Type: typ, SendCQ: p.cq[i], RecvCQ: p.cq[i],
			Cap: QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 2, MaxRecvSGE: 2, MaxInlineData: 64}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { testutil.CloseOK(t, p.qp[i]) })
		if p.qp[i].Num() == 0 || p.qp[i].Cap().MaxSendWR < 8 || p.qp[i].Cap().MaxInlineData < 64 {
			t.Fatalf("QP %d: num %d cap %+v", i, p.qp[i].Num(), p.qp[i].Cap())
		}
	}
	return p
}

// connect walks both QPs RESET→INIT→RTR→RTS, checking each state with Query.
func (p *pair) connect(t *testing.T, access Access) {
	t.Helper()
	const qkey = 0x11111111
	psn := [2]uint32{rand.Uint32() & 0xffffff, rand.Uint32() & 0xffffff}
	expect := func(qp *QP, s QPState) {
		t.Helper()
		a, err := qp.Query(QPAttrState)
		if err != nil {
			t.Fatal(err)
		}
		if a.State != s {
			t.Fatalf("QP %d in %v, want %v", qp.Num(), a.State, s)
		}
	}
	for i, qp := range p.qp {
		expect(qp, QPStateReset)
		if err := qp.ToInit(guestPort, access, qkey); err != nil {
			t.Fatal(err)
		}
		expect(qp, QPStateInit)
		_ = i
	}
	for i, qp := range p.qp {
		peer := p.qp[1-i]
		if err := qp.ToRTR(guestPort, Remote{QPN: peer.Num(), PSN: psn[1-i], GID: GIDFromAddr(guestAddr), SGIDIndex: p.gidIndex, MTU: MTU1024}); err != nil {
			t.Fatal(err)
		}
		expect(qp, QPStateRTR)
	}
	for i, qp := range p.qp {
		if err := qp.ToRTS(psn[i]); err != nil {
			t.Fatal(err)
		}
		expect(qp, QPStateRTS)
		a, err := qp.Query(0)
		if err != nil {
			t.Fatal(err)
		}
		if qp.Type() != QPTypeUD && (a.DestQPN != p.qp[1-i].Num() || a.SQPSN != psn[i] || a.RQPSN != psn[1-i] || a.PathMTU != MTU1024 || a.AH.DGID != GIDFromAddr(guestAddr)) {
			t.Fatalf("QP %d attributes after RTS: %+v", qp.Num(), a)
		}
	}
}

// poll waits (bounded) for want completions on cq.
func poll(t *testing.T, cq *CQ, want int) []WorkCompletion {
	t.Helper()
	var got []WorkCompletion
	wc := make([]WorkCompletion, 4)
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; len(got) < want; i++ {
		n, err := cq.Poll(wc)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, wc[:n]...)
		if n == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("CQ %d: %d of %d completions after 10 s: %+v", cq.Handle(), len(got), want, got)
			}
			time.Sleep(time.Millisecond)
		}
	}
	return got
}

func wantWC(t *testing.T, wc WorkCompletion, id uint64, op WCOpcode, n int) {
	t.Helper()
	if err := wc.Err(); err != nil {
		t.Fatal(err)
	}
	if wc.ID != id || wc.Opcode != op || (n >= 0 && wc.ByteLen != uint32(n)) {
		t.Fatalf("completion %+v, want id %#x opcode %v length %d", wc, id, op, n)
	}
}

func TestGuestQPStateWalk(t *testing.T) {
	checkNoLeak(t)
	c := openGuest(t)
	for _, typ := range []QPType{QPTypeRC, QPTypeUC, QPTypeUD} {
		t.Run(typ.String(), func(t *testing.T) {
			p := newPair(t, c, typ, nil)
			p.connect(t, AccessLocalWrite|AccessRemoteWrite|AccessRemoteRead)
		})
	}
}

func TestGuestSendRecv(t *testing.T) {
	checkNoLeak(t)
	c := openGuest(t)
	for _, typ := range []QPType{QPTypeRC, QPTypeUC} {
		t.Run(typ.String(), func(t *testing.T) {
			p := newPair(t, c, typ, nil)
			p.connect(t, AccessLocalWrite|AccessRemoteWrite|AccessRemoteRead)
			const size = 8192
			mem := offHeap(t, 2*size)
			mr, err := p.pd.RegMR(mem, AccessLocalWrite|AccessRemoteWrite|AccessRemoteRead)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { testutil.CloseOK(t, mr) })
			src, dst := mem[:size], mem[size:]
			send := func(op WROpcode, n int, imm uint32) {
				t.Helper()
				for i := range src[:n] {
					src[i] = byte(rand.Uint32())
				}
				clear(dst)
				id := rand.Uint64()
				if op == WRSend || op == WRSendWithImm || op == WRRDMAWriteWithImm {
					rsge, _ := mr.Slice(size, size)
					if _, err := p.qp[1].PostRecv(RecvWR{ID: id ^ 1, SGL: []SGE{rsge}}); err != nil {
						t.Fatal(err)
					}
				}
				// Two SGEs: the payload split at a random point.
				cut := uint64(rand.IntN(n + 1))
				s1, _ := mr.Slice(0, cut)
				s2, _ := mr.Slice(cut, uint64(n)-cut)
				wr := SendWR{ID: id, Opcode: op, Flags: SendSignaled, SGL: []SGE{s1, s2}, Imm: imm,
					RemoteAddr: mr.Addr + size, RKey: mr.RKey}
				if k, err := p.qp[0].PostSend(wr); err != nil || k != 1 {
					t.Fatalf("PostSend(%v) = %d, %v", op, k, err)
				}
				wcOp := map[WROpcode]WCOpcode{WRSend: WCSend, WRSendWithImm: WCSend, WRRDMAWrite: WCRDMAWrite, WRRDMAWriteWithImm: WCRDMAWrite}[op]
				wantWC(t, poll(t, p.cq[0], 1)[0], id, wcOp, n)
				if op != WRRDMAWrite {
					rc := poll(t, p.cq[1], 1)[0]
					rop := WCRecv
					if op == WRRDMAWriteWithImm {
						rop = WCRecvRDMAWithImm
					}
					wantWC(t, rc, id^1, rop, n)
					if rc.QPNum != p.qp[1].Num() {
						t.Errorf("receive completion on QP %d, want %d", rc.QPNum, p.qp[1].Num())
					}
					if imm != 0 && (rc.Flags&WCFlagWithImm == 0 || rc.Imm != imm) {
						t.Errorf("receive completion imm %#x flags %#x, want %#x", rc.Imm, rc.Flags, imm)
					}
				}
				if !bytes.Equal(dst[:n], src[:n]) {
					t.Fatalf("%v of %d bytes: payload differs", op, n)
				}
			}
			for range 3 {
				send(WRSend, 1+rand.IntN(size), 0)
			}
			send(WRSendWithImm, 1+rand.IntN(size), rand.Uint32()|1)
			send(WRRDMAWrite, 1+rand.IntN(size), 0)
			send(WRRDMAWriteWithImm, 1+rand.IntN(size), rand.Uint32()|1)

			// Inline send: no MR on the send side.
			msg := []byte(fmt.Sprintf("inline %x", rand.Uint64()))
			rsge, _ := mr.Slice(size, size)
			if _, err := p.qp[1].PostRecv(RecvWR{ID: 7, SGL: []SGE{rsge}}); err != nil {
				t.Fatal(err)
			}
			if _, err := p.qp[0].PostSend(SendWR{ID: 8, Opcode: WRSend, Flags: SendSignaled, Inline: msg}); err != nil {
				t.Fatal(err)
			}
			wantWC(t, poll(t, p.cq[0], 1)[0], 8, WCSend, len(msg))
			wantWC(t, poll(t, p.cq[1], 1)[0], 7, WCRecv, len(msg))
			if !bytes.Equal(dst[:len(msg)], msg) {
				t.Fatalf("inline payload %q, want %q", dst[:len(msg)], msg)
			}

			if typ == QPTypeRC {
				// RDMA READ pulls the peer's bytes into ours.
				n := 1 + rand.IntN(size)
				for i := range dst[:n] {
					dst[i] = byte(rand.Uint32())
				}
				clear(src)
				lsge, _ := mr.Slice(0, uint64(n))
				if _, err := p.qp[0].PostSend(SendWR{ID: 9, Opcode: WRRDMARead, Flags: SendSignaled, SGL: []SGE{lsge}, RemoteAddr: mr.Addr + size, RKey: mr.RKey}); err != nil {
					t.Fatal(err)
				}
				wantWC(t, poll(t, p.cq[0], 1)[0], 9, WCRDMARead, n)
				if !bytes.Equal(src[:n], dst[:n]) {
					t.Fatalf("RDMA READ of %d bytes: payload differs", n)
				}
			} else {
				// UC has no READ: refused before it reaches the queue.
				lsge, _ := mr.Slice(0, 8)
				if _, err := p.qp[0].PostSend(SendWR{Opcode: WRRDMARead, SGL: []SGE{lsge}, RKey: mr.RKey}); !errors.Is(err, ErrInvalidWR) {
					t.Fatalf("RDMA READ on UC = %v, want ErrInvalidWR", err)
				}
			}
		})
	}
}

func TestGuestUDSend(t *testing.T) {
	checkNoLeak(t)
	c := openGuest(t)
	p := newPair(t, c, QPTypeUD, nil)
	p.connect(t, 0)
	ah, err := p.pd.CreateAH(AHAttr{DGID: GIDFromAddr(guestAddr), SGIDIndex: p.gidIndex, HopLimit: 64, IsGlobal: true, Port: guestPort})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testutil.CloseOK(t, ah) })
	const grh = 40 // UD receives start with the 40-byte GRH slot
	mem := offHeap(t, 4096)
	mr, err := p.pd.RegMR(mem, AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testutil.CloseOK(t, mr) })
	n := 1 + rand.IntN(512)
	for i := range mem[:n] {
		mem[i] = byte(rand.Uint32())
	}
	rsge, _ := mr.Slice(1024, grh+1024)
	if _, err := p.qp[1].PostRecv(RecvWR{ID: 21, SGL: []SGE{rsge}}); err != nil {
		t.Fatal(err)
	}
	ssge, _ := mr.Slice(0, uint64(n))
	if _, err := p.qp[0].PostSend(SendWR{ID: 22, Opcode: WRSend, Flags: SendSignaled, SGL: []SGE{ssge}, AH: ah, RemoteQPN: p.qp[1].Num(), RemoteQKey: 0x11111111}); err != nil {
		t.Fatal(err)
	}
	wantWC(t, poll(t, p.cq[0], 1)[0], 22, WCSend, n)
	rc := poll(t, p.cq[1], 1)[0]
	wantWC(t, rc, 21, WCRecv, grh+n)
	if rc.SrcQP != p.qp[0].Num() || rc.Flags&WCFlagGRH == 0 {
		t.Errorf("UD receive completion %+v: want source QP %d and a GRH", rc, p.qp[0].Num())
	}
	if !bytes.Equal(mem[1024+grh:1024+grh+n], mem[:n]) {
		t.Fatal("UD payload differs")
	}
	// A UD send without an AH is refused by the provider.
	if _, err := p.qp[0].PostSend(SendWR{Opcode: WRSend, SGL: []SGE{ssge}}); !errors.Is(err, ErrInvalidWR) {
		t.Errorf("UD send without AH = %v, want ErrInvalidWR", err)
	}
}

func TestGuestCompChannel(t *testing.T) {
	checkNoLeak(t)
	c := openGuest(t)
	ch, err := c.CreateCompChannel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testutil.CloseOK(t, ch) })
	p := newPair(t, c, QPTypeRC, ch)
	p.connect(t, AccessLocalWrite)
	// Nothing armed, nothing pending: the wait times out.
	if _, err := ch.Wait(50 * time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Fatalf("Wait on an idle channel = %v, want ErrTimeout", err)
	}
	for _, cq := range p.cq {
		if err := cq.ReqNotify(false); err != nil {
			t.Fatal(err)
		}
	}
	mem := offHeap(t, 4096)
	mr, err := p.pd.RegMR(mem, AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testutil.CloseOK(t, mr) })
	if _, err := p.qp[1].PostRecv(RecvWR{ID: 1, SGL: []SGE{mr.SGE()}}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.qp[0].PostSend(SendWR{ID: 2, Opcode: WRSend, Flags: SendSignaled, Inline: []byte("wake")}); err != nil {
		t.Fatal(err)
	}
	seen := map[*CQ]bool{}
	for range 2 {
		cq, err := ch.Wait(10 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		seen[cq] = true
	}
	if !seen[p.cq[0]] || !seen[p.cq[1]] || p.cq[0].CompEvents() != 1 {
		t.Fatalf("events for %v, want both CQs once", seen)
	}
	wantWC(t, poll(t, p.cq[0], 1)[0], 2, WCSend, 4)
	wantWC(t, poll(t, p.cq[1], 1)[0], 1, WCRecv, 4)
}

func TestGuestAsyncEventCQOverrun(t *testing.T) {
	checkNoLeak(t)
	c := openGuest(t)
	p := newPair(t, c, QPTypeRC, nil)
	// A CQ of one entry, never polled, overflows on the second completion
	// and the kernel raises CQ_ERR on the async event file.
	small, err := c.CreateCQ(1, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testutil.CloseOK(t, small) })
	qp, err := p.pd.CreateQP(QPInit{Type: QPTypeRC, SendCQ: small, RecvCQ: p.cq[1], Cap: QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1, MaxInlineData: 16}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testutil.CloseOK(t, qp) })
	p.qp[0].Close()
	p.qp[0] = qp
	p.connect(t, AccessLocalWrite)
	mem := offHeap(t, 4096)
	mr, err := p.pd.RegMR(mem, AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testutil.CloseOK(t, mr) })
	want := small.CQE() + 1
	for i := range want {
		if _, err := p.qp[1].PostRecv(RecvWR{ID: uint64(i), SGL: []SGE{mr.SGE()}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range want {
		if _, err := qp.PostSend(SendWR{ID: uint64(i), Opcode: WRSend, Flags: SendSignaled, Inline: []byte{byte(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	ev, err := c.NextAsyncEvent(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Type != EventCQErr || ev.CQ != small {
		t.Fatalf("async event %+v (%v), want CQ_ERR for the small CQ", ev, ev.Type)
	}
}

func TestGuestBadInput(t *testing.T) {
	checkNoLeak(t)
	c := openGuest(t)
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	defer testutil.CloseOK(t, pd)
	mem := offHeap(t, 4096)

	// A PD handle the kernel never issued.
	bogus := &PD{ctx: c, handle: pd.handle + 1000 + uint32(rand.IntN(1000))}
	if _, err := bogus.RegMR(mem, AccessLocalWrite); !isErrno(err) || !errors.Is(err, syscall.ENOENT) {
		t.Errorf("RegMR with a bad PD handle = %v, want the kernel's ENOENT", err)
	} else {
		t.Logf("RegMR with a bad PD handle: %v", err)
	}
	cq, err := c.CreateCQ(4, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer testutil.CloseOK(t, cq)
	if _, err := bogus.CreateQP(QPInit{Type: QPTypeRC, SendCQ: cq, RecvCQ: cq, Cap: QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}}); !isErrno(err) || !errors.Is(err, syscall.ENOENT) {
		t.Errorf("CreateQP with a bad PD handle = %v, want the kernel's ENOENT", err)
	} else {
		t.Logf("CreateQP with a bad PD handle: %v", err)
	}

	// Zero-length MR.
	if mr, err := pd.RegMR(mem[:0], AccessLocalWrite); err == nil {
		mr.Close()
		t.Error("zero-length RegMR succeeded")
	} else if !errors.Is(err, syscall.EINVAL) {
		t.Errorf("zero-length RegMR = %v, want EINVAL", err)
	}
	// Remote write without local write is refused by the core.
	if _, err := pd.RegMR(mem, AccessRemoteWrite); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("RegMR(remote write without local write) = %v, want EINVAL", err)
	}

	// QP state skips: RESET→RTS and RESET→RTR are not transitions.
	qp, err := pd.CreateQP(QPInit{Type: QPTypeRC, SendCQ: cq, RecvCQ: cq, Cap: QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer testutil.CloseOK(t, qp)
	if err := qp.ToRTS(1); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("RESET→RTS = %v, want EINVAL", err)
	}
	if err := qp.ToRTR(guestPort, Remote{QPN: qp.Num(), MTU: MTU1024}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("RESET→RTR = %v, want EINVAL", err)
	}
	if a, err := qp.Query(QPAttrState); err != nil || a.State != QPStateReset {
		t.Errorf("after refused transitions: %v %v, want RESET", a.State, err)
	}
	// INIT without the attributes INIT requires.
	if err := qp.Modify(&QPAttr{State: QPStateInit}, QPAttrState); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("RESET→INIT without port/access = %v, want EINVAL", err)
	}
	// Posting on a RESET QP.
	if _, err := qp.PostRecv(RecvWR{}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("PostRecv in RESET = %v, want EINVAL", err)
	}
	if _, err := qp.PostSend(SendWR{Opcode: WRSend}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("PostSend in RESET = %v, want EINVAL", err)
	}
	// A CQ in use by a QP cannot be destroyed.
	if err := cq.Close(); !errors.Is(err, ErrBusy) {
		t.Errorf("closing a CQ a QP uses = %v, want EBUSY", err)
	}

	// RAW_PACKET: rxe does not implement it.
	if _, err := pd.CreateQP(QPInit{Type: QPTypeRawPacket, SendCQ: cq, RecvCQ: cq, Cap: QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}}); !errors.Is(err, ErrNotSupported) {
		t.Errorf("RAW_PACKET QP on rxe = %v, want ErrNotSupported", err)
	} else {
		t.Logf("RAW_PACKET QP on rxe: %v", err)
	}
	// DMA-BUF MR: rxe in 6.1 has no DMA-BUF support; a memfd stands in for
	// the buffer (the kernel refuses before looking at it).
	fd, err := memfd()
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if _, err := pd.RegDMABufMR(fd, 0, 4096, 0, AccessLocalWrite); !errors.Is(err, ErrNotSupported) {
		t.Errorf("RegDMABufMR on rxe = %v, want ErrNotSupported", err)
	} else {
		t.Logf("RegDMABufMR on rxe: %v", err)
	}
	// CQ depth beyond the device's limit.
	da, err := c.QueryDevice()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateCQ(int(da.MaxCQE)+1, nil, 0); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("CreateCQ(max+1) = %v, want EINVAL", err)
	}
	if _, err := c.CreateCQ(1, nil, c.NumCompVectors()); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("CreateCQ on completion vector %d = %v, want EINVAL", c.NumCompVectors(), err)
	}
}

func isErrno(err error) bool {
	var e *Error
	var errno syscall.Errno
	return errors.As(err, &e) && errors.As(err, &errno)
}

func memfd() (int, error) {
	return unixMemfd("verbs-test")
}

// TestGuestContextCloseReleasesAll leaves objects open and relies on
// Context.Close (the kernel destroys what the file held).
func TestGuestContextCloseReleasesAll(t *testing.T) {
	checkNoLeak(t)
	requireGuest(t)
	c, err := Open(guestDev, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := newPairNoCleanup(t, c)
	_ = p
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AllocPD(); !errors.Is(err, ErrClosed) {
		t.Errorf("AllocPD after Close = %v, want ErrClosed", err)
	}
}

func newPairNoCleanup(t *testing.T, c *Context) []*QP {
	t.Helper()
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	mem := offHeap(t, 4096)
	if _, err := pd.RegMR(mem, AccessLocalWrite); err != nil {
		t.Fatal(err)
	}
	cq, err := c.CreateCQ(8, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var qps []*QP
	for range 2 {
		qp, err := pd.CreateQP(QPInit{Type: QPTypeRC, SendCQ: cq, RecvCQ: cq, Cap: QPCap{MaxSendWR: 2, MaxRecvWR: 2, MaxSendSGE: 1, MaxRecvSGE: 1}})
		if err != nil {
			t.Fatal(err)
		}
		qps = append(qps, qp)
	}
	return qps
}

func TestGuestAtomics(t *testing.T) {
	checkNoLeak(t)
	c := openGuest(t)
	p := newPair(t, c, QPTypeRC, nil)
	p.connect(t, AccessLocalWrite|AccessRemoteAtomic)
	mem := offHeap(t, 4096)
	mr, err := p.pd.RegMR(mem, AccessLocalWrite|AccessRemoteAtomic)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testutil.CloseOK(t, mr) })
	le := func(off int) uint64 {
		var v uint64
		for i := 7; i >= 0; i-- {
			v = v<<8 | uint64(mem[off+i])
		}
		return v
	}
	put := func(off int, v uint64) {
		for i := range 8 {
			mem[off+i] = byte(v >> (8 * i))
		}
	}
	const target, result = 2048, 0
	start, add := rand.Uint64(), rand.Uint64()
	put(target, start)
	res, _ := mr.Slice(result, 8)
	if _, err := p.qp[0].PostSend(SendWR{ID: 31, Opcode: WRAtomicFetchAdd, Flags: SendSignaled, SGL: []SGE{res},
		RemoteAddr: mr.Addr + target, RKey: mr.RKey, CompareAdd: add}); err != nil {
		t.Fatal(err)
	}
	wantWC(t, poll(t, p.cq[0], 1)[0], 31, WCFetchAdd, 8)
	if le(result) != start || le(target) != start+add {
		t.Fatalf("fetch-add: returned %#x (want %#x), target %#x (want %#x)", le(result), start, le(target), start+add)
	}
	swap := rand.Uint64()
	if _, err := p.qp[0].PostSend(SendWR{ID: 32, Opcode: WRAtomicCmpAndSwp, Flags: SendSignaled, SGL: []SGE{res},
		RemoteAddr: mr.Addr + target, RKey: mr.RKey, CompareAdd: start + add, Swap: swap}); err != nil {
		t.Fatal(err)
	}
	wantWC(t, poll(t, p.cq[0], 1)[0], 32, WCCompSwap, 8)
	if le(result) != start+add || le(target) != swap {
		t.Fatalf("compare-and-swap: returned %#x, target %#x (want %#x)", le(result), le(target), swap)
	}
	// A misaligned atomic never reaches the queue.
	if _, err := p.qp[0].PostSend(SendWR{Opcode: WRAtomicFetchAdd, SGL: []SGE{res}, RemoteAddr: mr.Addr + target + 1, RKey: mr.RKey}); !errors.Is(err, ErrInvalidWR) {
		t.Fatalf("misaligned atomic = %v, want ErrInvalidWR", err)
	}
}

// TestGuestManySends streams messages through small rings so that every
// queue wraps many times, checking each payload and completion order.
func TestGuestManySends(t *testing.T) {
	checkNoLeak(t)
	c := openGuest(t)
	p := newPair(t, c, QPTypeRC, nil)
	p.connect(t, AccessLocalWrite)
	const slot, slots, total = 4096, 8, 600
	mem := offHeap(t, 2*slots*slot)
	mr, err := p.pd.RegMR(mem, AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testutil.CloseOK(t, mr) })
	rx := func(i int) []byte { return mem[(slots+i%slots)*slot : (slots+i%slots+1)*slot] }
	tx := func(i int) []byte { return mem[(i%slots)*slot : (i%slots+1)*slot] }
	lengths := make([]int, total)
	posted, sent, recvd := 0, 0, 0
	wc := make([]WorkCompletion, slots)
	deadline := time.Now().Add(60 * time.Second)
	for recvd < total {
		if time.Now().After(deadline) {
			t.Fatalf("after 60 s: %d posted, %d sent, %d received of %d", posted, sent, recvd, total)
		}
		// Keep receives posted ahead of sends, at most one per free slot.
		for posted < total && posted-recvd < slots-1 {
			s, _ := mr.Slice(uint64((slots+posted%slots)*slot), slot)
			if _, err := p.qp[1].PostRecv(RecvWR{ID: uint64(posted), SGL: []SGE{s}}); err != nil {
				t.Fatal(err)
			}
			posted++
		}
		var batch []SendWR
		for sent+len(batch) < posted && sent+len(batch)-recvd < slots-1 && len(batch) < 4 {
			i := sent + len(batch)
			n := 1 + rand.IntN(slot)
			lengths[i] = n
			b := tx(i)
			for j := range n {
				b[j] = byte(i*7 + j)
			}
			s, _ := mr.Slice(uint64((i%slots)*slot), uint64(n))
			batch = append(batch, SendWR{ID: uint64(i), Opcode: WRSend, Flags: SendSignaled, SGL: []SGE{s}})
		}
		if len(batch) > 0 {
			n, err := p.qp[0].PostSend(batch...)
			if err != nil && !errors.Is(err, ErrQueueFull) {
				t.Fatal(err)
			}
			sent += n
		}
		n, err := p.cq[1].Poll(wc)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range wc[:n] {
			if w.ID != uint64(recvd) {
				t.Fatalf("receive completion %d arrived as number %d", w.ID, recvd)
			}
			wantWC(t, w, uint64(recvd), WCRecv, lengths[recvd])
			b := rx(recvd)
			for j := range lengths[recvd] {
				if b[j] != byte(recvd*7+j) {
					t.Fatalf("message %d byte %d = %#x, want %#x", recvd, j, b[j], byte(recvd*7+j))
				}
			}
			recvd++
		}
		// Drain send completions so the send ring and CQ never overflow.
		if _, err := p.cq[0].Poll(wc); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			time.Sleep(100 * time.Microsecond)
		}
	}
}
