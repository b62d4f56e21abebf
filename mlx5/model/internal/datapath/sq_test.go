package datapath

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// portPair is two ports cabled back to back: a's SQ transmits, b receives into a cyclic RQ
// through a catch-all flow entry.
type portPair struct {
	a, b *env
	sq   *testSQ
	txcq *testCQ
	rxcq *testCQ
	rq   *testRQ
}

func newPair(t *testing.T, vlanStrip bool) *portPair {
	a, b := newEnv(t), newEnv(t)
	b.clock = a.clock
	b.nic.cfg.Clock = a.clock
	Cable(a.nic, b.nic)
	p := &portPair{a: a, b: b}
	p.txcq = a.newCQ(6, nil)
	p.sq = a.newSQ(p.txcq, 6, nil)
	p.rxcq = b.newCQ(6, nil)
	p.rq = b.newRQ(p.rxcq, 6, 2048, 0, 0)
	if vlanStrip {
		must(t, b.nic.ModifyRQ(p.rq.rqn, RQModify{CurrState: StateReady, NextState: StateReady, SetVLANStrip: true, VLANStrip: true}))
	}
	p.rq.post(64)
	b.direct(p.rq)
	return p
}

// step runs both ports until neither has work (bounded).
func (p *portPair) step() {
	for i := 0; i < 100; i++ {
		if p.a.nic.Step(64)+p.b.nic.Step(64) == 0 {
			return
		}
	}
}

// received returns the frames b's RQ got, from its CQEs, in order.
func (p *portPair) received(t *testing.T) ([][]byte, [][64]byte) {
	var fs [][]byte
	cqes := p.rxcq.poll()
	for _, c := range cqes {
		if prm.CQEOpcode(c[63]) != prm.CQEOpRespSend {
			t.Fatalf("RX CQE opcode %d", prm.CQEOpcode(c[63]))
		}
		idx := prm.CQE64.WQECounter.Get(c[:]) & 63
		n := prm.CQE64.ByteCnt.Get(c[:])
		fs = append(fs, append([]byte(nil), p.rq.mem[idx][:n]...))
	}
	return fs, cqes
}

// TestBackToBack posts raw WQEs on one port and receives on the other: SEND with inline
// headers and a pointer segment, SEND with inline data segments, an enhanced multi-packet
// WQE of three packets (pointer and inline), a NOP, checksum offload and VLAN insertion;
// requester CQEs appear only for WQEs that ask for one, and the counters are exact.
func TestBackToBack(t *testing.T) {
	p := newPair(t, true)
	f1 := udpFrame([4]byte{10, 1, 0, 1}, [4]byte{10, 1, 0, 2}, 1000, 2000, 300, 1)
	f2 := udpFrame([4]byte{10, 1, 0, 1}, [4]byte{10, 1, 0, 2}, 1001, 2000, 20, 2)
	// Wrong checksums on the wire copy: the offload must fix them.
	bad := append([]byte(nil), f2...)
	bad[24], bad[25], bad[40], bad[41] = 0, 0, 0xde, 0xad
	var sent [][]byte

	i1 := p.sq.send(f1, 0, prm.WQECtrlCQUpdate)
	sent = append(sent, f1)
	// Headers inline, payload as an inline data segment, checksums offloaded, no CQE.
	w := (&wqe{opcode: prm.WQEOpSend}).eth(prm.WQEEthL3Csum|prm.WQEEthL4Csum, bad[:42]).inl(bad[42:])
	p.sq.doorbell(p.sq.post(w))
	sent = append(sent, f2)
	// eMPW: three packets, the middle one inline.
	var mpw [][]byte
	w = (&wqe{opcode: prm.WQEOpEnhancedMPSW, fm: prm.WQECtrlCQUpdate}).eth(0, nil)
	for k := 0; k < 3; k++ {
		f := udpFrame([4]byte{10, 1, 0, 1}, [4]byte{10, 1, 0, 2}, uint16(3000+k), 2000, 60+k*100, byte(10*k))
		mpw = append(mpw, f)
		if k == 1 {
			w.inl(f)
			continue
		}
		iova, mem := p.a.alloc(len(f))
		copy(mem, f)
		w.ptr(testLKey, iova, len(f))
	}
	i3 := p.sq.post(w)
	sent = append(sent, mpw...)
	i4 := p.sq.post(&wqe{opcode: prm.WQEOpNOP, fm: prm.WQECtrlCQUpdate})
	// VLAN insertion: the receiver strips the tag into the CQE.
	f5 := udpFrame([4]byte{10, 1, 0, 1}, [4]byte{10, 1, 0, 2}, 1002, 2000, 30, 5)
	iova, mem := p.a.alloc(len(f5))
	copy(mem, f5)
	w = (&wqe{opcode: prm.WQEOpSend, fm: prm.WQECtrlCQUpdate}).vlan(0, 0x2064).ptr(testLKey, iova, len(f5))
	i5 := p.sq.post(w)
	p.sq.doorbell(i5)
	sent = append(sent, f5)
	p.step()

	got, cqes := p.received(t)
	if len(got) != len(sent) {
		t.Fatalf("received %d frames, want %d", len(got), len(sent))
	}
	for k := range sent {
		if !bytes.Equal(got[k], sent[k]) {
			t.Fatalf("frame %d:\n got %x\nwant %x", k, got[k], sent[k])
		}
		if ok := prm.CQE64.HdsIPExt.Get(cqes[k][:]); ok != prm.CQEL2OK|prm.CQEL3OK|prm.CQEL4OK {
			t.Fatalf("frame %d: checksum bits %#x", k, ok)
		}
	}
	last := cqes[len(cqes)-1]
	if last[29]&1 == 0 || prm.CQE64.VLANInfo.Get(last[:]) != 0x2064 {
		t.Fatalf("VLAN not stripped into the CQE: %x", last[:])
	}
	tx := p.txcq.poll()
	wantIdx := []uint16{i1, i3, i4, i5}
	if len(tx) != len(wantIdx) {
		t.Fatalf("%d requester CQEs, want %d (one per WQE asking)", len(tx), len(wantIdx))
	}
	for k, c := range tx {
		if prm.CQEOpcode(c[63]) != prm.CQEOpReq || uint16(prm.CQE64.WQECounter.Get(c[:])) != wantIdx[k] ||
			uint32(prm.CQE64.SopDropQPN.Get(c[:]))&0xffffff != p.sq.sqn {
			t.Fatalf("requester CQE %d: %x", k, c[:])
		}
	}
	var bytesSent uint64
	for _, f := range sent {
		bytesSent += uint64(len(f))
	}
	ca, cb := p.a.nic.Counters(false), p.b.nic.Counters(false)
	if ca.TXPackets != uint64(len(sent)) || ca.TXBytes != bytesSent+4 || ca.TXErrors != 0 {
		t.Fatalf("sender counters %+v (want %d packets, %d bytes)", ca, len(sent), bytesSent+4)
	}
	if cb.RXPackets != uint64(len(sent)) || cb.RXBytes != bytesSent || cb.RXOutOfBuffer != 0 || cb.RXSteeringMiss != 0 {
		t.Fatalf("receiver counters %+v (want %d packets, %d bytes)", cb, len(sent), bytesSent)
	}
	q, err := p.a.nic.QuerySQ(p.sq.sqn)
	must(t, err)
	if q.Counter != p.sq.pc {
		t.Fatalf("SQ consumed %d basic blocks, posted %d", q.Counter, p.sq.pc)
	}
}

// TestWaitOnTime: a WAIT WQE with opmod time holds the SQ until the clock reaches its value
// (DPDK mlx5_tx.h mlx5_tx_schedule_send with wait_on_time); the SEND behind it goes then.
func TestWaitOnTime(t *testing.T) {
	p := newPair(t, false)
	p.a.clock.Set(1_000_000)
	seg := make([]byte, prm.WQEWaitSize)
	binary.BigEndian.PutUint32(seg[prm.WaitOperationOff:], prm.WaitCondCyclicSmaller)
	binary.BigEndian.PutUint64(seg[prm.WaitValueOff:], 1_500_000)
	binary.BigEndian.PutUint64(seg[prm.WaitMaskOff:], ^uint64(0))
	w := &wqe{opcode: prm.WQEOpWait, opmod: prm.WaitOpModTime, body: seg}
	p.sq.post(w)
	f := udpFrame([4]byte{10, 1, 0, 1}, [4]byte{10, 1, 0, 2}, 1, 2, 10, 0)
	p.sq.send(f, 0, 0)
	p.step()
	if got, _ := p.received(t); len(got) != 0 {
		t.Fatal("frame sent before its time")
	}
	if !p.a.nic.Pending() {
		t.Fatal("the waiting SQ is not pending")
	}
	p.a.clock.Advance(400 * time.Microsecond)
	p.step()
	if got, _ := p.received(t); len(got) != 0 {
		t.Fatal("frame sent 100 µs early")
	}
	p.a.clock.Advance(100 * time.Microsecond)
	p.step()
	if got, _ := p.received(t); len(got) != 1 {
		t.Fatalf("%d frames after the time", len(got))
	}
}

// TestPacing: an SQ with a rate limit of 8 Mb/s sends a 1000-byte frame per millisecond;
// with the clock stopped only the first goes.
func TestPacing(t *testing.T) {
	a := newEnv(t)
	must(t, a.nic.SetPacing(PacingParams{Index: 3, RateKbps: 8000}))
	b := newEnv(t)
	Cable(a.nic, b.nic)
	cq := a.newCQ(6, nil)
	sq := a.newSQ(cq, 6, func(p *SQParams) { p.RateIndex = 3 })
	for k := 0; k < 5; k++ {
		sq.send(udpFrame([4]byte{1, 1, 1, 1}, [4]byte{2, 2, 2, 2}, 1, 2, 1000-42, 0), 0, 0)
	}
	a.nic.Step(100)
	if c := a.nic.Counters(false); c.TXPackets != 1 {
		t.Fatalf("%d frames sent at time 0, want 1", c.TXPackets)
	}
	for k := 2; k <= 5; k++ {
		a.clock.Advance(time.Millisecond)
		a.nic.Step(100)
		if c := a.nic.Counters(false); c.TXPackets != uint64(k) {
			t.Fatalf("after %d ms: %d frames, want %d", k-1, c.TXPackets, k)
		}
	}
}

// TestMalformedWQE: each malformed WQE completes with an error CQE carrying the PRM
// syndrome, the SQ goes to the error state, the WQEs behind it are flushed (kernel
// en/reporter_tx.c; MLX5.md: a zero-length data segment takes a real SQ into error), and
// ERR → RST → RDY brings it back.
func TestMalformedWQE(t *testing.T) {
	f := udpFrame([4]byte{10, 1, 0, 1}, [4]byte{10, 1, 0, 2}, 1, 2, 100, 0)
	cases := []struct {
		name string
		w    func(s *testSQ) *wqe
		synd uint8
	}{
		{"zero-length data segment", func(s *testSQ) *wqe {
			return (&wqe{opcode: prm.WQEOpSend}).eth(0, f[:18]).ptr(testLKey, 0x10000, 0)
		}, prm.CQESyndLocalLength},
		{"bad lkey", func(s *testSQ) *wqe {
			return (&wqe{opcode: prm.WQEOpSend}).eth(0, f[:18]).ptr(0x999, 0x10000, 64)
		}, prm.CQESyndLocalProt},
		{"address outside the key", func(s *testSQ) *wqe {
			return (&wqe{opcode: prm.WQEOpSend}).eth(0, f[:18]).ptr(testLKey, 0xdead0000, 64)
		}, prm.CQESyndLocalProt},
		{"unknown opcode", func(s *testSQ) *wqe { return &wqe{opcode: 0x33} }, prm.CQESyndLocalQPOp},
		{"inline headers beyond the WQE", func(s *testSQ) *wqe {
			w := (&wqe{opcode: prm.WQEOpSend}).eth(0, nil)
			prm.WQEEth.InlineHdrSz.Set(w.body, 200)
			return w
		}, prm.CQESyndLocalLength},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			cq := e.newCQ(6, nil)
			s := e.newSQ(cq, 6, nil)
			idx := s.post(c.w(s))
			s.send(f, 0, prm.WQECtrlCQUpdate) // behind it: flushed
			e.nic.Step(10)
			got := cq.poll()
			if len(got) != 2 {
				t.Fatalf("%d CQEs, want error + flush", len(got))
			}
			if prm.CQEOpcode(got[0][63]) != prm.CQEOpReqErr || uint8(prm.ErrCQE.Syndrome.Get(got[0][:])) != c.synd ||
				uint16(prm.ErrCQE.WQECounter.Get(got[0][:])) != idx {
				t.Fatalf("error CQE %x, want syndrome %#x for WQE %d", got[0][:], c.synd, idx)
			}
			if prm.CQEOpcode(got[1][63]) != prm.CQEOpReqErr || prm.ErrCQE.Syndrome.Get(got[1][:]) != prm.CQESyndWRFlush {
				t.Fatalf("second CQE is not a flush: %x", got[1][:])
			}
			q, err := e.nic.QuerySQ(s.sqn)
			must(t, err)
			if q.Params.State != StateError {
				t.Fatalf("SQ state %d, want error", q.Params.State)
			}
			if err := e.nic.ModifySQ(s.sqn, SQModify{CurrState: StateError, NextState: StateReady}); err == nil {
				t.Fatal("ERR → RDY accepted")
			} else if de, ok := err.(*Error); !ok || de.Status != StatusBadResState {
				t.Fatalf("ERR → RDY: %v", err)
			}
			must(t, e.nic.ModifySQ(s.sqn, SQModify{CurrState: StateError, NextState: StateReset}))
			must(t, e.nic.ModifySQ(s.sqn, SQModify{CurrState: StateReset, NextState: StateReady}))
			if c := e.nic.Counters(false); c.TXErrors != 1 || c.TXPackets != 0 {
				t.Fatalf("counters %+v", c)
			}
		})
	}
}

// TestPartialWQEWaits: a WQE whose basic blocks run past the doorbell record's send counter
// is not posted yet; the SQ waits for the doorbell that covers it instead of reading past
// the counter.
func TestPartialWQEWaits(t *testing.T) {
	p := newPair(t, false)
	f := udpFrame([4]byte{10, 1, 0, 1}, [4]byte{10, 1, 0, 2}, 1, 2, 100, 0)
	idx := p.sq.post((&wqe{opcode: prm.WQEOpSend, fm: prm.WQECtrlCQUpdate}).eth(0, f[:18]).inl(f[18:])) // 3 basic blocks
	binary.BigEndian.PutUint32(p.sq.dbr[4:], 1)
	var db [8]byte
	binary.BigEndian.PutUint32(db[4:], p.sq.sqn<<8)
	p.a.nic.UARWrite(0, prm.UARBlueFlame, db[:])
	p.step()
	if c := p.a.nic.Counters(false); c.TXPackets != 0 || c.TXErrors != 0 {
		t.Fatalf("a partly posted WQE was processed: %+v", c)
	}
	p.sq.doorbell(idx)
	p.step()
	if got, _ := p.received(t); len(got) != 1 || !bytes.Equal(got[0], f) {
		t.Fatalf("after the full doorbell: %d frames", len(got))
	}
}

// TestSQWithoutTIS: an SQ created with no TIS (tis_lst_sz 0, as mlx5e's ICOSQ is, en_main.c
// mlx5e_open_icosq) completes NOPs — the kernel posts one to trigger its NAPI — and refuses a
// send with a local QP operation error, as it has no transport to send on.
func TestSQWithoutTIS(t *testing.T) {
	e := newEnv(t)
	cq := e.newCQ(6, nil)
	s := e.newSQ(cq, 6, func(p *SQParams) { p.TISN = 0 })
	nop := s.post(&wqe{opcode: prm.WQEOpNOP, fm: prm.WQECtrlCQUpdate})
	f := udpFrame([4]byte{10, 1, 0, 1}, [4]byte{10, 1, 0, 2}, 1, 2, 100, 0)
	send := s.post((&wqe{opcode: prm.WQEOpSend, fm: prm.WQECtrlCQUpdate}).eth(0, f[:18]).inl(f[18:]))
	s.doorbell(send)
	e.nic.Step(10)
	got := cq.poll()
	if len(got) != 2 {
		t.Fatalf("%d CQEs, want the NOP's and the send's error", len(got))
	}
	if prm.CQEOpcode(got[0][63]) != prm.CQEOpReq || uint16(prm.CQE64.WQECounter.Get(got[0][:])) != nop {
		t.Fatalf("NOP CQE %x", got[0][:])
	}
	if prm.CQEOpcode(got[1][63]) != prm.CQEOpReqErr || uint8(prm.ErrCQE.Syndrome.Get(got[1][:])) != prm.CQESyndLocalQPOp ||
		uint16(prm.ErrCQE.WQECounter.Get(got[1][:])) != send {
		t.Fatalf("send on an SQ without a TIS: CQE %x, want a local QP operation error", got[1][:])
	}
	if c := e.nic.Counters(false); c.TXPackets != 0 {
		t.Fatalf("counters %+v: a frame left an SQ without a TIS", c)
	}
}

// TestEnhancedMPWWithoutAllowBit: an SQ whose context leaves allow_multi_pkt_send_wqe clear
// still takes enhanced MPW WQEs, as Linux's mlx5e sends them on such SQs (the bit is for
// the older MPW).
func TestEnhancedMPWWithoutAllowBit(t *testing.T) {
	e := newEnv(t)
	cq := e.newCQ(6, nil)
	s := e.newSQ(cq, 6, func(p *SQParams) { p.AllowMPW = false })
	f := udpFrame([4]byte{10, 1, 0, 1}, [4]byte{10, 1, 0, 2}, 3000, 2000, 60, 7)
	idx := s.post((&wqe{opcode: prm.WQEOpEnhancedMPSW, fm: prm.WQECtrlCQUpdate}).eth(0, nil).inl(f).inl(f))
	s.doorbell(idx)
	e.nic.Step(10)
	got := cq.poll()
	if len(got) != 1 || prm.CQEOpcode(got[0][63]) != prm.CQEOpReq {
		t.Fatalf("CQEs %x, want one requester completion", got)
	}
	if c := e.nic.Counters(false); c.TXPackets != 2 || c.TXErrors != 0 {
		t.Fatalf("counters %+v, want 2 frames sent", c)
	}
}

// TestDoorbellStepsInline: while a Run goroutine steps the port (free-running mode), an SQ
// doorbell does the Step's work in the ringing thread: the frame is on the wire and the TX
// CQE written when UARWrite returns, with no Step call and no wake-up of the port's
// goroutine. With a Step in progress (the port's lock held) the doorbell only records itself
// and wakes the goroutine, and without a Run goroutine (deterministic mode) nothing happens
// before a Step.
func TestDoorbellStepsInline(t *testing.T) {
	f := udpFrame([4]byte{10, 1, 0, 1}, [4]byte{10, 1, 0, 2}, 1, 2, 300, 7)

	// Deterministic mode: the doorbell waits for a Step.
	p := newPair(t, false)
	p.sq.send(f, 0, prm.WQECtrlCQUpdate)
	if c := p.a.nic.Counters(false); c.TXPackets != 0 {
		t.Fatalf("deterministic mode: the doorbell transmitted before a Step: %+v", c)
	}
	if got := len(p.txcq.poll()); got != 0 {
		t.Fatalf("deterministic mode: %d TX CQEs before a Step", got)
	}
	p.step()
	if got, _ := p.received(t); len(got) != 1 || !bytes.Equal(got[0], f) {
		t.Fatalf("deterministic mode, after the Step: %d frames", len(got))
	}

	// Free-running: the ringing thread transmits.
	p = newPair(t, false)
	p.a.nic.running.Add(1)
	p.sq.send(f, 0, prm.WQECtrlCQUpdate)
	if c := p.a.nic.Counters(false); c.TXPackets != 1 {
		t.Fatalf("free-running: the doorbell did not transmit in the ringing thread: %+v", c)
	}
	if got := len(p.txcq.poll()); got != 1 {
		t.Fatalf("free-running: %d TX CQEs after the doorbell, want 1", got)
	}
	select {
	case <-p.a.nic.kick:
		t.Fatal("free-running: the doorbell woke the port's goroutine although nothing was left")
	default:
	}
	select {
	case <-p.b.nic.kick: // the peer got a frame: it is woken
	default:
		t.Fatal("free-running: the cabled peer was not woken for the frame")
	}
	p.step()
	if got, _ := p.received(t); len(got) != 1 || !bytes.Equal(got[0], f) {
		t.Fatalf("free-running: %d frames received", len(got))
	}

	// A Step in progress: the doorbell is left to the port's goroutine.
	p.a.nic.mu.Lock()
	p.sq.send(f, 0, prm.WQECtrlCQUpdate)
	p.a.nic.mu.Unlock()
	if c := p.a.nic.Counters(false); c.TXPackets != 1 {
		t.Fatalf("with the port's lock held the doorbell transmitted: %+v", c)
	}
	select {
	case <-p.a.nic.kick:
	default:
		t.Fatal("with the port's lock held the doorbell did not wake the port's goroutine")
	}
	p.step()
	if c := p.a.nic.Counters(false); c.TXPackets != 2 {
		t.Fatalf("after the Step: %+v", c)
	}
	if got, _ := p.received(t); len(got) != 1 || !bytes.Equal(got[0], f) {
		t.Fatalf("after the Step: %d frames received", len(got))
	}
}

// TestDoorbellReceivesInline: in free-running mode an SQ doorbell that transmits inline also
// does the cabled peer's receive Step in the ringing thread when no Step of the peer is in
// progress, with the same CQEs and bytes as the peer's own Step; with the peer's lock held
// the frames wait in its inbox and its goroutine is woken, as before.
func TestDoorbellReceivesInline(t *testing.T) {
	var frames [][]byte
	for i := 0; i < 40; i++ {
		frames = append(frames, udpFrame([4]byte{10, 1, 0, 1}, [4]byte{10, 1, 0, 2}, uint16(1000+i), 2000, 60+37*i, byte(i)))
	}
	// The reference: deterministic mode, every frame received by the peer's Step.
	ref := newPair(t, false)
	for _, f := range frames {
		ref.sq.send(f, 0, prm.WQECtrlCQUpdate)
		ref.step()
	}
	want, wantCQEs := ref.received(t)
	if len(want) != len(frames) {
		t.Fatalf("reference: %d frames received, want %d", len(want), len(frames))
	}

	p := newPair(t, false)
	p.a.nic.running.Add(1)
	p.b.nic.running.Add(1)
	for i, f := range frames {
		p.sq.send(f, 0, prm.WQECtrlCQUpdate)
		// No Step: the doorbell transmitted and the peer received in this thread.
		got, cqes := p.received(t)
		if len(got) != 1 || !bytes.Equal(got[0], want[i]) || cqes[0] != wantCQEs[i] {
			t.Fatalf("frame %d: %d frames received inline, or bytes/CQE differ from the peer's own Step", i, len(got))
		}
		select {
		case <-p.b.nic.kick:
			t.Fatalf("frame %d: the peer's goroutine was woken although the doorbell received the frame", i)
		default:
		}
	}

	// A Step of the peer in progress: the frame waits for it, and the peer is woken.
	p.b.nic.mu.Lock()
	p.sq.send(frames[0], 0, prm.WQECtrlCQUpdate)
	p.b.nic.mu.Unlock()
	if got, _ := p.received(t); len(got) != 0 {
		t.Fatalf("with the peer's lock held %d frames were received", len(got))
	}
	select {
	case <-p.b.nic.kick:
	default:
		t.Fatal("with the peer's lock held the peer was not woken for the frame")
	}
	p.step()
	if got, _ := p.received(t); len(got) != 1 || !bytes.Equal(got[0], want[0]) {
		t.Fatalf("after the peer's Step: %d frames", len(got))
	}

	// The peer not free-running (deterministic): the frame waits for its Step.
	p.b.nic.running.Add(-1)
	p.sq.send(frames[1], 0, prm.WQECtrlCQUpdate)
	if got, _ := p.received(t); len(got) != 0 {
		t.Fatalf("peer not free-running: %d frames received without its Step", len(got))
	}
	p.step()
	if got, _ := p.received(t); len(got) != 1 || !bytes.Equal(got[0], want[1]) {
		t.Fatalf("peer not free-running, after its Step: %d frames", len(got))
	}
}

// TestCableBatch: the frames one Step transmits on a cable reach the peer's inbox in the
// order they were sent — in the port's cable buffers, handed over together when the Step
// ends, or copied in at once when a NIC TX header action made them anew (VLAN push on UDP
// port 7000 here) — and the peer is woken; a peer inbox with room for three frames takes the
// first three of ten and counts seven dropped.
func TestCableBatch(t *testing.T) {
	p := newPair(t, false)
	a, b := p.a, p.b
	tt, tg := a.id(), a.id()
	must(t, a.nic.CreateFlowTable(FlowTableParams{Type: TableNICTX, ID: tt, LogSize: 2}))
	crit := make([]byte, matchParamBytes)
	prm.FTEMatchSetLyr24.UDPDport.Set(crit[prm.FTEMatchParam.OuterHeaders.ByteOff():], 0xffff)
	must(t, a.nic.CreateFlowGroup(FlowGroupParams{Type: TableNICTX, Table: tt, ID: tg, End: 0, CriteriaEnable: 1 << 0, Criteria: crit}))
	val := make([]byte, matchParamBytes)
	prm.FTEMatchSetLyr24.UDPDport.Set(val[prm.FTEMatchParam.OuterHeaders.ByteOff():], 7000)
	must(t, a.nic.SetFTE(FTEParams{Type: TableNICTX, Table: tt, Group: tg, Action: ActionAllow | ActionVLANPush, PushVLAN: 0x81000009, Value: val}))
	must(t, a.nic.SetRoot(TableNICTX, tt))

	send := func(k int) [][]byte {
		var want [][]byte
		var last uint16
		for i := range k {
			port := uint16(5000)
			if i%3 == 1 {
				port = 7000
			}
			f := udpFrame([4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1, port, 100+i, byte(i))
			last = p.sq.post((&wqe{opcode: prm.WQEOpSend}).eth(0, f[:42]).inl(f[42:]))
			if port == 7000 {
				f = append(append(append([]byte(nil), f[:12]...), 0x81, 0, 0, 9), f[12:]...)
			}
			want = append(want, f)
		}
		p.sq.doorbell(last)
		return want
	}
	want := send(12)
	select {
	case <-b.nic.kick:
		t.Fatal("the peer was woken before the Step")
	default:
	}
	a.nic.Step(64)
	b.nic.inMu.Lock()
	got := append([][]byte(nil), b.nic.inbox...)
	b.nic.inMu.Unlock()
	if len(got) != len(want) {
		t.Fatalf("%d frames in the peer's inbox, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("inbox frame %d:\n got % x\nwant % x", i, got[i], want[i])
		}
	}
	select {
	case <-b.nic.kick:
	default:
		t.Fatal("the peer was not woken")
	}
	b.nic.Step(64)
	if c := b.nic.Counters(true); c.RXPackets != uint64(len(want)) {
		t.Fatalf("%d frames received, want %d", c.RXPackets, len(want))
	}

	// Room for three in the peer's inbox.
	b.nic.inMu.Lock()
	for len(b.nic.inbox) < inboxLimit-3 {
		b.nic.inbox = append(b.nic.inbox, []byte{0})
	}
	b.nic.inLen.Store(int32(len(b.nic.inbox)))
	b.nic.inMu.Unlock()
	want = send(10)
	a.nic.Step(64)
	b.nic.inMu.Lock()
	tail := append([][]byte(nil), b.nic.inbox[inboxLimit-3:]...)
	n := len(b.nic.inbox)
	b.nic.inMu.Unlock()
	if n != inboxLimit {
		t.Fatalf("inbox %d frames, want %d", n, inboxLimit)
	}
	for i := range tail {
		if !bytes.Equal(tail[i], want[i]) {
			t.Fatalf("frame %d of the full inbox:\n got % x\nwant % x", i, tail[i], want[i])
		}
	}
	if c := b.nic.Counters(false); c.RXInputDrops != 7 {
		t.Fatalf("%d frames dropped at the full inbox, want 7", c.RXInputDrops)
	}
}
