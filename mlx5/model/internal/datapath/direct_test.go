package datapath

import (
	"bytes"
	"encoding/binary"
	"math/rand"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// directRig is two cabled ports as TestDirectMatchesInbox runs them: a transmits from host
// memory txMem (at txIOVA), b receives into one RQ through a catch-all entry; both are
// free-running, so a doorbell does a's Step in the ringing thread, and b's receive too.
type directRig struct {
	a, b   *env
	sq     *testSQ
	txcq   *testCQ
	rxcq   *testCQ
	rq     *testRQ
	txIOVA uint64
	txMem  []byte
	// txSeen holds the TX CQEs polled during a round (compareRigs takes the rest).
	txSeen [][64]byte
}

const directTXMem = 1 << 20

func newDirectRig(t *testing.T, striding bool, layout CompLayout, compress, txRules, direct bool) *directRig {
	a, b := newEnv(t), newEnv(t)
	b.clock = a.clock
	b.nic.cfg.Clock = a.clock
	a.clock.Set(1_000_000)
	Cable(a.nic, b.nic)
	r := &directRig{a: a, b: b}
	r.txcq = a.newCQ(10, nil)
	r.sq = a.newSQ(r.txcq, 10, nil)
	r.txIOVA, r.txMem = a.alloc(directTXMem)
	r.rxcq = b.newCQ(10, func(p *CQParams) {
		p.Compress, p.Layout, p.MiniFormat = compress, layout, MiniHash
	})
	if striding {
		r.rq = b.newRQ(r.rxcq, 5, 0, 256, 16)
		r.rxcq.strideSize = 256
	} else {
		r.rq = b.newRQ(r.rxcq, 7, 2048, 0, 0)
	}
	b.direct(r.rq)
	if txRules {
		// NIC TX: a VLAN push on UDP destination 7000 (a header action makes a new frame),
		// a drop on 7001, everything else to the wire.
		tt := a.id()
		must(t, a.nic.CreateFlowTable(FlowTableParams{Type: TableNICTX, ID: tt, LogSize: 2}))
		crit := make([]byte, matchParamBytes)
		prm.FTEMatchSetLyr24.UDPDport.Set(crit[prm.FTEMatchParam.OuterHeaders.ByteOff():], 0xffff)
		tg := a.id()
		must(t, a.nic.CreateFlowGroup(FlowGroupParams{Type: TableNICTX, Table: tt, ID: tg, End: 1, CriteriaEnable: 1 << 0, Criteria: crit}))
		for i, port := range []uint64{7000, 7001} {
			val := make([]byte, matchParamBytes)
			prm.FTEMatchSetLyr24.UDPDport.Set(val[prm.FTEMatchParam.OuterHeaders.ByteOff():], port)
			act := ActionAllow | ActionVLANPush
			if port == 7001 {
				act = ActionDrop
			}
			must(t, a.nic.SetFTE(FTEParams{Type: TableNICTX, Table: tt, Group: tg, Index: uint32(i), Action: act, PushVLAN: 0x81000009, Value: val}))
		}
		must(t, a.nic.SetRoot(TableNICTX, tt))
	}
	a.nic.noDirect = !direct
	a.nic.running.Add(1)
	b.nic.running.Add(1)
	return r
}

// directFrame is a random frame: UDP (valid checksums or one byte corrupted, destination
// 5000 or, for the TX rules, 7000/7001) or a frame of another EtherType.
func directFrame(rnd *rand.Rand) []byte {
	if rnd.Intn(12) == 0 {
		f := make([]byte, 14+rnd.Intn(200))
		rnd.Read(f)
		binary.BigEndian.PutUint16(f[12:], 0x88b5)
		return f
	}
	ports := []uint16{5000, 5000, 5000, 7000, 7001}
	f := udpFrame([4]byte{10, 0, byte(rnd.Intn(4)), 1}, [4]byte{10, 1, 0, byte(rnd.Intn(4))},
		uint16(4000+rnd.Intn(8)), ports[rnd.Intn(len(ports))], rnd.Intn(1400), byte(rnd.Intn(256)))
	if rnd.Intn(8) == 0 {
		f[14+rnd.Intn(len(f)-14)] ^= 0x5a
	}
	return f
}

// txLayout places frames in the rigs' TX memory and builds WQEs for them: at is the next free
// byte of txMem (wrapping).
type txLayout struct {
	rigs []*directRig
	at   int
}

// place copies b into every rig's TX memory at a random alignment and returns its IOVA.
func (l *txLayout) place(rnd *rand.Rand, b []byte) uint64 {
	l.at += rnd.Intn(64)
	if l.at+len(b) > directTXMem {
		l.at = rnd.Intn(64)
	}
	for _, r := range l.rigs {
		copy(r.txMem[l.at:], b)
	}
	iova := l.rigs[0].txIOVA + uint64(l.at)
	l.at += len(b)
	return iova
}

// randomWQE is one WQE of a random layout: an enhanced MPW of pointer and inline packets
// (checksum flags or not), or a SEND as one pointer segment, with inline headers, as a gather
// of several pointer segments, with VLAN insertion or checksum flags.
//
// plain WQEs are enhanced MPWs of pointer packets without checksum flags only: every packet
// may go direct.
func (l *txLayout) randomWQE(rnd *rand.Rand, plain bool) *wqe {
	fm := uint8(0)
	if rnd.Intn(3) == 0 {
		fm = prm.WQECtrlCQUpdate
	}
	var cs uint8
	if !plain && rnd.Intn(6) == 0 {
		cs = prm.WQEEthL3Csum | prm.WQEEthL4Csum
	}
	k := rnd.Intn(8)
	if plain {
		k = 0
	}
	switch {
	case k < 4:
		w := (&wqe{opcode: prm.WQEOpEnhancedMPSW, fm: fm}).eth(cs, nil)
		for range 1 + rnd.Intn(6) {
			f := directFrame(rnd)
			if !plain && len(f) <= 120 && rnd.Intn(3) == 0 {
				w.inl(f)
				continue
			}
			w.ptr(testLKey, l.place(rnd, f), len(f))
		}
		return w
	case k == 4:
		f := directFrame(rnd)
		return (&wqe{opcode: prm.WQEOpSend, fm: fm}).eth(cs, nil).ptr(testLKey, l.place(rnd, f), len(f))
	case k == 5:
		f := directFrame(rnd)
		h := min(len(f), 14+rnd.Intn(50))
		w := (&wqe{opcode: prm.WQEOpSend, fm: fm}).eth(cs, f[:h])
		if h < len(f) {
			w.ptr(testLKey, l.place(rnd, f[h:]), len(f)-h)
		}
		return w
	case k == 6:
		f := directFrame(rnd)
		w := (&wqe{opcode: prm.WQEOpSend, fm: fm}).eth(cs, nil)
		for len(f) > 0 {
			n := min(len(f), 64+rnd.Intn(400))
			w.ptr(testLKey, l.place(rnd, f[:n]), n)
			f = f[n:]
		}
		return w
	default:
		f := directFrame(rnd)
		return (&wqe{opcode: prm.WQEOpSend, fm: fm}).vlan(cs, uint16(rnd.Intn(4096))).ptr(testLKey, l.place(rnd, f), len(f))
	}
}

// drain steps both ports until neither has work (bounded).
func (r *directRig) drain() {
	for range 1000 {
		if r.a.nic.Step(64)+r.b.nic.Step(64) == 0 {
			return
		}
	}
}

// TestDirectMatchesInbox pins the one-copy cable path (deliverDirect) to the inbox path it
// short-cuts: two rigs get the same random WQEs in the same random TX layouts (enhanced MPW
// with pointer and inline packets, single-segment SENDs, inline headers, gathers, VLAN
// insertion, checksum offloads, NIC TX header actions and drops), one with the direct path,
// one without, round after round, each round in one of the situations that must fall back:
// none, the peer's lock held, the peer not free-running, frames waiting in the peer's inbox
// (up to a full one, with drops); some rounds send more than one peer Step takes. The RX
// CQEs (timestamps included: the manual clock moves only between rounds), the RX buffers,
// the TX CQEs, both ports' counters and completion events must be the same; the host
// memory is never written; and while a frame is received directly no TX CQE of the Step is
// visible yet.
func TestDirectMatchesInbox(t *testing.T) {
	split := 0 // rounds whose direct frames took more than one peer batch
	for _, c := range []struct {
		striding bool
		layout   CompLayout
		compress bool
		txRules  bool
	}{
		{false, LayoutBasic, false, false}, {false, LayoutBasic, true, true}, {true, LayoutBasic, false, true},
		{true, LayoutBasic, true, false}, {false, LayoutEnhanced, true, false}, {true, LayoutEnhanced, true, true},
	} {
		seed := time.Now().UnixNano()
		rnd := rand.New(rand.NewSource(seed))
		ref := newDirectRig(t, c.striding, c.layout, c.compress, c.txRules, false)
		dut := newDirectRig(t, c.striding, c.layout, c.compress, c.txRules, true)
		rigs := []*directRig{ref, dut}
		direct, txVisible := 0, 0
		dut.a.nic.directHook = func(f []byte) {
			direct++
			if dut.txcq.valid() {
				txVisible++
			}
		}
		l := &txLayout{rigs: rigs}
		for round := range 100 {
			situation := rnd.Intn(6)
			nw := 1 + rnd.Intn(10)
			big := round%10 == 9
			if big {
				nw = 90 // more than inlineBudget frames for the peer, mostly
				if rnd.Intn(2) == 0 {
					situation = 0
				}
			}
			allPlain := big && rnd.Intn(2) == 0
			ws := make([]*wqe, nw)
			for i := range ws {
				ws[i] = l.randomWQE(rnd, allPlain || big && rnd.Intn(20) != 0)
			}
			var inboxFrames [][]byte
			if situation == 3 {
				for range 1 + rnd.Intn(5) {
					inboxFrames = append(inboxFrames, directFrame(rnd))
				}
			}
			fill := situation == 4 && round%2 == 0 // a nearly full inbox: some frames dropped
			// Situation 0 rings twice with the clock moved between, no Step of the peer's
			// own between: two direct batches with their own timestamps.
			twice, move := situation == 0 && rnd.Intn(2) == 0, time.Duration(1+rnd.Intn(5000))
			post := rnd.Intn(100)
			before := append([]byte(nil), dut.txMem...)
			directBefore := direct
			for _, r := range rigs {
				r.rq.post(post)
				var db [8]byte
				binary.BigEndian.PutUint32(db[:], r.rxcq.ci&0xffffff)
				binary.BigEndian.PutUint32(db[4:], r.rxcq.cqn)
				r.b.nic.UARWrite(0, prm.UARCQDoorbell, db[:])
				for _, f := range inboxFrames {
					r.b.nic.Receive(f)
				}
				if fill {
					for k := 0; k < inboxLimit-5; k++ {
						r.b.nic.Receive(inboxFrames0(k))
					}
				}
				var last uint16
				for i, w := range ws {
					last = r.sq.post(w)
					if twice && i == len(ws)/2 {
						r.sq.doorbell(last)
						r.txSeen = append(r.txSeen, r.txcq.poll()...)
						r.a.clock.Advance(move)
					}
				}
				switch situation {
				case 1:
					r.b.nic.mu.Lock()
					r.sq.doorbell(last)
					r.b.nic.mu.Unlock()
				case 2:
					r.b.nic.running.Add(-1)
					r.sq.doorbell(last)
					r.b.nic.running.Add(1)
				default:
					r.sq.doorbell(last)
				}
				r.drain()
			}
			if situation >= 1 && situation <= 3 || fill {
				if direct != directBefore {
					t.Fatalf("seed %d round %d situation %d: %d frames delivered directly, want none", seed, round, situation, direct-directBefore)
				}
			}
			if direct-directBefore > inlineBudget {
				split++
			}
			if !bytes.Equal(before, dut.txMem) {
				t.Fatalf("seed %d round %d: the TX host memory was written", seed, round)
			}
			// Where one Step sends frames both ways (direct, then copied behind a frame
			// that could not go direct) the peer takes them in two batches, where the inbox
			// path takes them in one: a compressed session may then end at the first batch's
			// end. The CQEs the driver reads are the same; the rings as written are compared
			// where the CQ does not compress (TestDirectBatches compares compressed rings).
			compareRigs(t, ref, dut, seed, round, !c.compress)
			d := time.Duration(1 + rnd.Intn(5000))
			for _, r := range rigs {
				r.a.clock.Advance(d)
			}
		}
		if direct == 0 {
			t.Fatalf("seed %d: no frame took the direct path", seed)
		}
		if txVisible != 0 {
			t.Fatalf("seed %d: %d frames were received directly with a TX CQE of their Step already visible", seed, txVisible)
		}
		t.Logf("%+v: %d frames direct", c, direct)
	}
	if split == 0 {
		t.Fatal("no round delivered more than one peer batch directly")
	}
}

// inboxFrames0 is the k-th filler frame of a nearly full inbox.
func inboxFrames0(k int) []byte {
	return udpFrame([4]byte{10, 9, 0, 1}, [4]byte{10, 9, 0, 2}, uint16(k), 5000, 20, byte(k))
}

func compareRigs(t *testing.T, ref, dut *directRig, seed int64, round int, raw bool) {
	t.Helper()
	// The rings as written (compressed sessions and all), then as a driver reads them.
	if raw && !bytes.Equal(ref.rxcq.ring, dut.rxcq.ring) {
		for i := 0; i < len(ref.rxcq.ring); i += 64 {
			if !bytes.Equal(ref.rxcq.ring[i:i+64], dut.rxcq.ring[i:i+64]) {
				t.Logf("slot %d (ci %d):\ninbox  % x\ndirect % x", i/64, ref.rxcq.ci, ref.rxcq.ring[i:i+64], dut.rxcq.ring[i:i+64])
			}
		}
		t.Fatalf("seed %d round %d: the RX CQ rings differ", seed, round)
	}
	rc, dc := ref.rxcq.poll(), dut.rxcq.poll()
	if len(rc) != len(dc) {
		t.Fatalf("seed %d round %d: %d RX CQEs through the inbox, %d direct", seed, round, len(rc), len(dc))
	}
	for i := range rc {
		// A CQE written whole in one ring and as a mini-CQE in the other differs in the
		// ownership and validity bytes a driver does not read as data (as in
		// compressionCase).
		x, y := rc[i], dc[i]
		if !raw {
			x[62], y[62], x[63], y[63] = 0, 0, x[63]&0xf0, y[63]&0xf0
		}
		if x != y {
			t.Fatalf("seed %d round %d: RX CQE %d differs:\ninbox  % x\ndirect % x", seed, round, i, rc[i], dc[i])
		}
	}
	for i := range ref.rq.mem {
		if !bytes.Equal(ref.rq.mem[i], dut.rq.mem[i]) {
			t.Fatalf("seed %d round %d: RX buffer %d differs", seed, round, i)
		}
	}
	rt, dt := append(ref.txSeen, ref.txcq.poll()...), append(dut.txSeen, dut.txcq.poll()...)
	ref.txSeen, dut.txSeen = nil, nil
	if len(rt) != len(dt) {
		t.Fatalf("seed %d round %d: %d TX CQEs through the inbox, %d direct", seed, round, len(rt), len(dt))
	}
	for i := range rt {
		if rt[i] != dt[i] {
			t.Fatalf("seed %d round %d: TX CQE %d differs", seed, round, i)
		}
	}
	for _, p := range [][2]*env{{ref.a, dut.a}, {ref.b, dut.b}} {
		if a, b := p[0].nic.Counters(false), p[1].nic.Counters(false); a != b {
			t.Fatalf("seed %d round %d: counters differ:\ninbox  %+v\ndirect %+v", seed, round, a, b)
		}
		p[0].ev.mu.Lock()
		p[1].ev.mu.Lock()
		a, b := append([]uint32(nil), p[0].ev.comp...), append([]uint32(nil), p[1].ev.comp...)
		p[1].ev.mu.Unlock()
		p[0].ev.mu.Unlock()
		if len(a) != len(b) {
			t.Fatalf("seed %d round %d: %d completion events through the inbox, %d direct", seed, round, len(a), len(b))
		}
	}
}

// TestDirectBatches: frames one doorbell sends all direct are taken by the peer in batches of
// inlineBudget, as its own Steps take them from the inbox: compressed sessions break at the
// same frames and the CQ rings as written are the same, for both compression layouts.
func TestDirectBatches(t *testing.T) {
	for _, layout := range []CompLayout{LayoutBasic, LayoutEnhanced} {
		ref := newDirectRig(t, false, layout, true, false, false)
		dut := newDirectRig(t, false, layout, true, false, true)
		rigs := []*directRig{ref, dut}
		direct := 0
		dut.a.nic.directHook = func([]byte) { direct++ }
		l := &txLayout{rigs: rigs}
		rnd := rand.New(rand.NewSource(1))
		// One frame of another flow first, so that sessions of one flow do not start at
		// the batch boundary; then 299 frames of one flow, one size.
		frames := [][]byte{udpFrame([4]byte{10, 0, 0, 9}, [4]byte{10, 1, 0, 9}, 9, 5000, 100, 0)}
		for i := range 299 {
			frames = append(frames, udpFrame([4]byte{10, 0, 0, 1}, [4]byte{10, 1, 0, 1}, 4000, 5000, 100, byte(i)))
		}
		for _, r := range rigs {
			r.rq.post(400)
		}
		var ws []*wqe
		for i := 0; i < len(frames); i += 10 {
			w := (&wqe{opcode: prm.WQEOpEnhancedMPSW}).eth(0, nil)
			for _, f := range frames[i : i+10] {
				w.ptr(testLKey, l.place(rnd, f), len(f))
			}
			ws = append(ws, w)
		}
		for _, r := range rigs {
			var last uint16
			for _, w := range ws {
				last = r.sq.post(w)
			}
			r.sq.doorbell(last)
			r.drain()
		}
		if direct != len(frames) {
			t.Fatalf("layout %d: %d frames direct, want %d", layout, direct, len(frames))
		}
		compareRigs(t, ref, dut, 1, 0, true)
		if c := dut.b.nic.Counters(false); c.RXPackets != uint64(len(frames)) {
			t.Fatalf("layout %d: %d frames received, want %d", layout, c.RXPackets, len(frames))
		}
	}
}
