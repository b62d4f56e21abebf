package rxe

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/daqiri-go/daqiri/verbs/provider"
)

// fakeKernel stands in for the uverbs fd: it hands out rings laid out as the
// kernel's rxe_queue_init does, and records doorbells.
type fakeKernel struct {
	rings     map[int64][]byte
	unmapped  int
	doorbells []uint32
	bellErr   error
}

func newFakeKernel() *fakeKernel { return &fakeKernel{rings: map[int64][]byte{}} }

// ring builds an rxe ring of slots entries (a power of two) of elem bytes
// and returns the create reply's mminfo for it.
func (k *fakeKernel) ring(slots, elem int) []byte {
	log2 := 0
	for 1<<log2 < elem {
		log2++
	}
	size := queueHdrSize + slots<<log2
	b := make([]byte, (size+4095)&^4095)
	binary.LittleEndian.PutUint32(b[offLog2ElemSize:], uint32(log2))
	binary.LittleEndian.PutUint32(b[offIndexMask:], uint32(slots-1))
	off := int64(4096 * (1 + len(k.rings)))
	k.rings[off] = b
	mi := make([]byte, sizeofMmapInfo)
	binary.LittleEndian.PutUint64(mi, uint64(off))
	binary.LittleEndian.PutUint32(mi[8:], uint32(len(b)))
	return mi
}

func (k *fakeKernel) Mmap(offset int64, length int) ([]byte, error) {
	b, ok := k.rings[offset]
	if !ok || length > len(b) {
		return nil, fmt.Errorf("fake: no ring at %#x of %d bytes", offset, length)
	}
	return b[:length:length], nil
}

func (k *fakeKernel) Munmap([]byte) error { k.unmapped++; return nil }

func (k *fakeKernel) PostSendDoorbell(h uint32) error {
	k.doorbells = append(k.doorbells, h)
	return k.bellErr
}

func newQP(t *testing.T, k *fakeKernel, typ provider.QPType, cap provider.QPCap, slots int) *qp {
	t.Helper()
	pc, err := Provider{}.NewContext(k)
	if err != nil {
		t.Fatal(err)
	}
	pq, err := pc.NewQP(provider.QPRequest{Type: typ, Cap: cap})
	if err != nil {
		t.Fatal(err)
	}
	if pq.DriverIn() != nil || pq.DriverOutLen() != sizeofCreateQPResp {
		t.Fatalf("QP request: in %v, out %d", pq.DriverIn(), pq.DriverOutLen())
	}
	inl := int(cap.MaxInlineData)
	if s := int(cap.MaxSendSGE) * sizeofSGE; s > inl {
		inl = s
	}
	out := append(k.ring(slots, sizeofRecvWQE+int(cap.MaxRecvSGE)*sizeofSGE), k.ring(slots, sizeofSendWQE+inl)...)
	if err := pq.Attach(provider.QPInfo{Handle: 0x55, QPN: 17, Type: typ, Cap: cap}, out); err != nil {
		t.Fatal(err)
	}
	return pq.(*qp)
}

var testCap = provider.QPCap{MaxSendWR: 7, MaxRecvWR: 7, MaxSendSGE: 3, MaxRecvSGE: 2, MaxInlineData: 64}

func TestPostSendWritesWQE(t *testing.T) {
	k := newFakeKernel()
	p := newQP(t, k, provider.QPTypeRC, testCap, 8)
	le := binary.LittleEndian
	for round := range 20 { // wraps the 8-slot ring
		wr := provider.SendWR{
			ID: rand.Uint64(), Opcode: provider.WRRDMAWriteWithImm, Flags: provider.SendSignaled,
			Imm: rand.Uint32(), RemoteAddr: rand.Uint64(), RKey: rand.Uint32(),
		}
		total := uint64(0)
		for range 1 + rand.IntN(3) {
			s := provider.SGE{Addr: rand.Uint64(), Length: rand.Uint32N(1 << 20), LKey: rand.Uint32()}
			wr.SGL = append(wr.SGL, s)
			total += uint64(s.Length)
		}
		prod := p.sq.prod.Load()
		if n, err := p.PostSend([]provider.SendWR{wr}); n != 1 || err != nil {
			t.Fatalf("round %d: PostSend = %d, %v", round, n, err)
		}
		if got := p.sq.prod.Load(); got != (prod+1)&p.sq.mask {
			t.Fatalf("producer %d after posting at %d", got, prod)
		}
		b := p.sq.slot(prod)
		if le.Uint64(b[swqeOffWRID:]) != wr.ID || le.Uint32(b[swqeOffOpcode:]) != uint32(wr.Opcode) ||
			le.Uint32(b[swqeOffSendFlags:]) != uint32(wr.Flags) || binary.BigEndian.Uint32(b[swqeOffImm:]) != wr.Imm ||
			le.Uint64(b[swqeOffRemoteAddr:]) != wr.RemoteAddr || le.Uint32(b[swqeOffRDMARKey:]) != wr.RKey ||
			le.Uint64(b[swqeOffIOVA:]) != wr.RemoteAddr {
			t.Fatalf("round %d: WQE header % x", round, b[:sizeofSendWQE])
		}
		d := b[swqeOffDMA:]
		if le.Uint32(d[dmaOffLength:]) != uint32(total) || le.Uint32(d[dmaOffResid:]) != uint32(total) || le.Uint32(d[dmaOffNumSGE:]) != uint32(len(wr.SGL)) {
			t.Fatalf("round %d: dma info % x", round, d[:24])
		}
		for i, s := range wr.SGL {
			e := b[swqeOffData+i*sizeofSGE:]
			if le.Uint64(e) != s.Addr || le.Uint32(e[8:]) != s.Length || le.Uint32(e[12:]) != s.LKey {
				t.Fatalf("round %d: SGE %d = % x", round, i, e[:16])
			}
		}
		// The kernel consumes it.
		p.sq.cons.Store(p.sq.next(p.sq.cons.Load()))
	}
	if len(k.doorbells) != 20 || k.doorbells[0] != 0x55 {
		t.Fatalf("doorbells %v, want 20 for handle 0x55", k.doorbells)
	}
}

func TestPostSendInlineUDAndFull(t *testing.T) {
	k := newFakeKernel()
	p := newQP(t, k, provider.QPTypeUD, testCap, 4)
	a := &ah{}
	out := make([]byte, 8)
	binary.LittleEndian.PutUint32(out, 0x1234)
	if err := a.Attach(9, out); err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, 1+rand.IntN(64))
	for i := range payload {
		payload[i] = byte(rand.Uint32())
	}
	wr := provider.SendWR{ID: 1, Opcode: provider.WRSend, Inline: payload, AH: fakeAH{a}, RemoteQPN: 0xabcdef, RemoteQKey: 0x11111111}
	// Three fit in a 4-slot ring; the fourth finds it full.
	n, err := p.PostSend([]provider.SendWR{wr, wr, wr, wr})
	if n != 3 || !errors.Is(err, provider.ErrQueueFull) {
		t.Fatalf("PostSend of 4 into 3 free slots = %d, %v", n, err)
	}
	if len(k.doorbells) != 1 {
		t.Fatalf("%d doorbells for one batch", len(k.doorbells))
	}
	le := binary.LittleEndian
	b := p.sq.slot(0)
	if le.Uint32(b[swqeOffSendFlags:])&uint32(provider.SendInline) == 0 ||
		le.Uint32(b[swqeOffUDQPN:]) != 0xabcdef || le.Uint32(b[swqeOffUDQKey:]) != 0x11111111 || le.Uint32(b[swqeOffUDAHNum:]) != 0x1234 ||
		le.Uint32(b[swqeOffDMA+dmaOffLength:]) != uint32(len(payload)) || le.Uint32(b[swqeOffDMA+dmaOffNumSGE:]) != 0 ||
		!bytes.Equal(b[swqeOffData:swqeOffData+len(payload)], payload) {
		t.Fatalf("UD inline WQE % x", b[:swqeOffData+len(payload)])
	}
	// Bad work requests are refused before touching the ring.
	prod := p.sq.prod.Load()
	p.sq.cons.Store(prod) // drain
	bad := []provider.SendWR{
		{Opcode: provider.WRSend, Inline: payload},                                         // UD without AH
		{Opcode: provider.WRRDMAWrite, SGL: []provider.SGE{{}}, AH: fakeAH{a}},             // WRITE on UD
		{Opcode: provider.WRSend, Inline: make([]byte, 65), AH: fakeAH{a}},                 // inline too long
		{Opcode: provider.WRSend, SGL: make([]provider.SGE, 4), AH: fakeAH{a}},             // too many SGEs
		{Opcode: provider.WRSend, Inline: payload, SGL: []provider.SGE{{}}, AH: fakeAH{a}}, // both
		{Opcode: provider.WROpcode(99), AH: fakeAH{a}},                                     // unknown opcode
	}
	for i, w := range bad {
		if n, err := p.PostSend([]provider.SendWR{w}); n != 0 || !errors.Is(err, provider.ErrInvalidWR) {
			t.Errorf("bad WR %d: PostSend = %d, %v; want ErrInvalidWR", i, n, err)
		}
	}
	if p.sq.prod.Load() != prod || len(k.doorbells) != 1 {
		t.Fatal("refused work requests moved the producer or rang the doorbell")
	}
	if err := p.Release(); err != nil || k.unmapped != 2 {
		t.Fatalf("Release = %v, %d unmapped", err, k.unmapped)
	}
	if _, err := p.PostSend([]provider.SendWR{wr}); err == nil {
		t.Fatal("PostSend after Release succeeded")
	}
}

type fakeAH struct{ a *ah }

func (f fakeAH) Handle() uint32          { return 9 }
func (f fakeAH) State() provider.AHState { return f.a }

func TestPostRecv(t *testing.T) {
	k := newFakeKernel()
	p := newQP(t, k, provider.QPTypeRC, testCap, 8)
	le := binary.LittleEndian
	for i := range 7 {
		wr := provider.RecvWR{ID: rand.Uint64(), SGL: []provider.SGE{{Addr: rand.Uint64(), Length: 100, LKey: 3}, {Addr: 5, Length: 23, LKey: 4}}}
		if n, err := p.PostRecv([]provider.RecvWR{wr}); n != 1 || err != nil {
			t.Fatalf("PostRecv %d = %d, %v", i, n, err)
		}
		b := p.rq.slot(uint32(i))
		if le.Uint64(b[rwqeOffWRID:]) != wr.ID || le.Uint32(b[rwqeOffDMA+dmaOffLength:]) != 123 ||
			le.Uint32(b[rwqeOffDMA+dmaOffResid:]) != 123 || le.Uint32(b[rwqeOffDMA+dmaOffNumSGE:]) != 2 ||
			le.Uint64(b[rwqeOffSGE:]) != wr.SGL[0].Addr || le.Uint32(b[rwqeOffSGE+sizeofSGE+12:]) != 4 {
			t.Fatalf("receive WQE % x", b[:rwqeOffSGE+2*sizeofSGE])
		}
	}
	if n, err := p.PostRecv([]provider.RecvWR{{}}); n != 0 || !errors.Is(err, provider.ErrQueueFull) {
		t.Fatalf("PostRecv into a full ring = %d, %v", n, err)
	}
	p.rq.cons.Store(3)
	if n, err := p.PostRecv([]provider.RecvWR{{SGL: make([]provider.SGE, 3)}}); n != 0 || !errors.Is(err, provider.ErrInvalidWR) {
		t.Fatalf("PostRecv with 3 SGEs on a 2-SGE QP = %d, %v", n, err)
	}
	if len(k.doorbells) != 0 {
		t.Fatal("receives rang the send doorbell")
	}
}

func TestPollDecodesCompletions(t *testing.T) {
	k := newFakeKernel()
	pc, _ := Provider{}.NewContext(k)
	pcq, err := pc.NewCQ(3)
	if err != nil {
		t.Fatal(err)
	}
	if err := pcq.Attach(1, 3, k.ring(4, 64)); err != nil {
		t.Fatal(err)
	}
	c := pcq.(*cq)
	le := binary.LittleEndian
	var want []provider.WorkCompletion
	produce := func() {
		w := provider.WorkCompletion{
			ID: rand.Uint64(), Status: provider.WCStatus(rand.IntN(22)), Opcode: provider.WCRecv,
			VendorErr: rand.Uint32(), ByteLen: rand.Uint32(), Imm: rand.Uint32(), QPNum: rand.Uint32() & 0xffffff,
			SrcQP: rand.Uint32(), Flags: provider.WCFlagWithImm | provider.WCFlagGRH, PKeyIndex: uint16(rand.Uint32()),
			SLID: uint16(rand.Uint32()), SL: byte(rand.Uint32()), DLIDPathBits: byte(rand.Uint32()), Port: 1,
		}
		prod := c.q.prod.Load()
		b := c.q.slot(prod)
		le.PutUint64(b[wcOffWRID:], w.ID)
		le.PutUint32(b[wcOffStatus:], uint32(w.Status))
		le.PutUint32(b[wcOffOpcode:], uint32(w.Opcode))
		le.PutUint32(b[wcOffVendorErr:], w.VendorErr)
		le.PutUint32(b[wcOffByteLen:], w.ByteLen)
		binary.BigEndian.PutUint32(b[wcOffImm:], w.Imm)
		le.PutUint32(b[wcOffQPNum:], w.QPNum)
		le.PutUint32(b[wcOffSrcQP:], w.SrcQP)
		le.PutUint32(b[wcOffFlags:], uint32(w.Flags))
		le.PutUint16(b[wcOffPKeyIndex:], w.PKeyIndex)
		le.PutUint16(b[wcOffSLID:], w.SLID)
		b[wcOffSL], b[wcOffDLIDPathBit], b[wcOffPortNum] = w.SL, w.DLIDPathBits, w.Port
		c.q.prod.Store(c.q.next(prod))
		want = append(want, w)
	}
	wc := make([]provider.WorkCompletion, 2)
	for round := range 10 {
		k := 1 + rand.IntN(3)
		for range k {
			produce()
		}
		var got []provider.WorkCompletion
		for range 4 {
			n, err := pcq.Poll(wc)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, wc[:n]...)
		}
		if len(got) != len(want) {
			t.Fatalf("round %d: polled %d, want %d", round, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("round %d: completion %d = %+v, want %+v", round, i, got[i], want[i])
			}
		}
		want = want[:0]
		if c.q.cons.Load() != c.q.prod.Load() {
			t.Fatal("consumer index was not handed back")
		}
	}
}

func TestRejectsBadRings(t *testing.T) {
	k := newFakeKernel()
	pc, _ := Provider{}.NewContext(k)
	pcq, _ := pc.NewCQ(1)
	if err := pcq.Attach(1, 1, make([]byte, 4)); err == nil {
		t.Error("a short create CQ reply was accepted")
	}
	mi := k.ring(4, 64)
	binary.LittleEndian.PutUint32(k.rings[4096][offIndexMask:], 6) // not 2^n-1
	if err := pcq.Attach(1, 1, mi); err == nil {
		t.Error("a ring with index_mask 6 was accepted")
	}
	mi = k.ring(4, 16) // slots too small for a 48-byte completion
	if err := pcq.Attach(1, 1, mi); err == nil {
		t.Error("a CQ ring of 16-byte slots was accepted")
	}
	mi = k.ring(1<<10, 64)
	binary.LittleEndian.PutUint32(mi[8:], 4096) // mapping shorter than the ring
	if err := pcq.Attach(1, 1, mi); err == nil {
		t.Error("a ring larger than its mapping was accepted")
	}
	if _, err := pc.NewCQ(0); err == nil {
		t.Error("a CQ of depth 0 was accepted")
	}
	a := &ah{}
	if err := a.Attach(1, make([]byte, 8)); err == nil {
		t.Error("ah_num 0 was accepted")
	}
}
