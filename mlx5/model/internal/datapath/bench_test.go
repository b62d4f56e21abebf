package datapath

import (
	"testing"

	"github.com/daqiri-go/daqiri/flow"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// BenchmarkReceive measures a frame through RX steering (one catch-all entry), a direct
// TIR, a cyclic RQ and its CQE, with the driver side reposting and polling.
func BenchmarkReceive(b *testing.B) {
	e := newEnv(b)
	c := e.newCQ(10, nil)
	r := e.newRQ(c, 10, 2048, 0, 0)
	r.post(1 << 10)
	e.direct(r)
	f := udpFrame([4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1, 2, 64-42, 0)
	b.SetBytes(int64(len(f)))
	for i := 0; i < b.N; i++ {
		e.nic.Receive(f)
		e.nic.Step(1)
		if i%256 == 255 {
			r.post(len(c.poll()))
		}
	}
}

// BenchmarkSend measures one 64-byte SEND WQE (inline headers, no CQE) onto a cable.
func BenchmarkSend(b *testing.B) {
	a, z := newEnv(b), newEnv(b)
	Cable(a.nic, z.nic)
	cq := a.newCQ(10, nil)
	s := a.newSQ(cq, 10, nil)
	f := udpFrame([4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1, 2, 64-42, 0)
	w := (&wqe{opcode: 0x0a}).eth(0, f)
	b.SetBytes(int64(len(f)))
	for i := 0; i < b.N; i++ {
		s.doorbell(s.post(w))
		a.nic.Step(1)
		z.nic.inMu.Lock()
		z.nic.spare = append(z.nic.spare, z.nic.inbox...)
		z.nic.inbox = z.nic.inbox[:0]
		z.nic.inLen.Store(0)
		z.nic.inMu.Unlock()
	}
}

// BenchmarkCable is the two-port run of daqiri-bench's mlx5/testdata/two_port.yaml on the
// datapath alone: port A sends 1064-byte UDP frames (four 4-tuples, 1000-byte payloads) in
// enhanced MPW WQEs of 16 packets, one doorbell per 64; port B, cabled to it, steers them by
// UDP destination port to an indirect TIR whose Toeplitz hash spreads them over four cyclic
// RQs, writes them and their CQEs (compressed, hash mini-CQEs); the driver side polls
// every CQ and reposts the WQEs after each burst. One op is one packet, through both ports.
func BenchmarkCable(b *testing.B) {
	a, z := newEnv(b), newEnv(b)
	Cable(a.nic, z.nic)
	txcq := a.newCQ(10, nil)
	s := a.newSQ(txcq, 12, nil)
	const payload, perWQE, burst = 1000, 16, 64
	var frames []uint64
	var flen int
	for i := 0; i < 4; i++ {
		f := udpFrame([4]byte{10, 0, byte(i), 1}, [4]byte{10, 1, 0, byte(1 + i)}, uint16(4000+i), 5000, payload, byte(i))
		copy(f[0:6], []byte{0x02, 0xda, 0x51, 0, 0, 1})
		iova, mem := a.alloc(len(f))
		copy(mem, f)
		frames, flen = append(frames, iova), len(f)
	}
	var rqs []*testRQ
	var cqs []*testCQ
	var rqns []uint32
	for i := 0; i < 4; i++ {
		c := z.newCQ(11, func(p *CQParams) { p.Compress, p.MiniFormat = true, MiniHash })
		r := z.newRQ(c, 10, 2048, 0, 0)
		r.post(1 << 10)
		rqs, cqs, rqns = append(rqs, r), append(cqs, c), append(rqns, r.rqn)
	}
	rqtn := z.id()
	must(b, z.nic.CreateRQT(RQTParams{RQTN: rqtn, RQNs: rqns}))
	tirn := z.id()
	must(b, z.nic.CreateTIR(TIRParams{TIRN: tirn, Indirect: true, RQT: rqtn, HashFn: 2, Key: flow.DefaultRSSKey,
		Outer: HashFields{UDP: true, Selected: HashSrcIP | HashDstIP | HashL4SPort | HashL4DPort}}))
	// The root table: one group matching ip_protocol and udp_dport, one entry for 5000.
	crit := make([]byte, matchParamBytes)
	l := prm.FTEMatchSetLyr24
	l.IPProtocol.Set(crit, 0xff)
	l.UDPDport.Set(crit, 0xffff)
	val := make([]byte, matchParamBytes)
	l.IPProtocol.Set(val, protoUDP)
	l.UDPDport.Set(val, 5000)
	ft, g := z.id(), z.id()
	must(b, z.nic.CreateFlowTable(FlowTableParams{Type: TableNICRX, ID: ft, LogSize: 4}))
	must(b, z.nic.CreateFlowGroup(FlowGroupParams{Type: TableNICRX, Table: ft, ID: g, Start: 0, End: 0, CriteriaEnable: 1, Criteria: crit}))
	must(b, z.nic.SetFTE(FTEParams{Type: TableNICRX, Table: ft, Group: g, Index: 0, Action: ActionFwdDest, FlowTag: 10,
		Dests: []Dest{{Type: DestTIR, ID: tirn}}, Value: val}))
	must(b, z.nic.SetRoot(TableNICRX, ft))
	// The WQEs of a burst, built once: the same frames every burst.
	var wqes []*wqe
	for w := 0; w < burst/perWQE; w++ {
		q := (&wqe{opcode: prm.WQEOpEnhancedMPSW, fm: prm.WQECtrlCQUpdate}).eth(0, nil)
		for k := 0; k < perWQE; k++ {
			q.ptr(testLKey, frames[(w*perWQE+k)%len(frames)], flen)
		}
		wqes = append(wqes, q)
	}
	b.SetBytes(int64(flen))
	b.ResetTimer()
	got := 0
	for sent := 0; sent < b.N; sent += burst {
		var idx uint16
		for _, q := range wqes {
			idx = s.post(q)
		}
		s.doorbell(idx)
		for a.nic.Step(1024) > 0 {
		}
		for z.nic.Step(1024) > 0 {
		}
		txcq.poll()
		for i, c := range cqs {
			k := len(c.poll())
			rqs[i].post(k)
			got += k
		}
	}
	b.StopTimer()
	if want := (b.N + burst - 1) / burst * burst; got != want {
		b.Fatalf("%d packets received of %d sent (counters %+v)", got, want, z.nic.Counters(false))
	}
}
