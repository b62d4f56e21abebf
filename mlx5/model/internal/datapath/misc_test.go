package datapath

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// TestFreeRunning runs two cabled ports in free-running mode (a goroutine each, NIC.Run):
// frames posted on one arrive at the other without the test stepping either.
func TestFreeRunning(t *testing.T) {
	p := newPair(t, false)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { p.a.nic.Run(ctx); done <- struct{}{} }()
	go func() { p.b.nic.Run(ctx); done <- struct{}{} }()
	const n = 20
	for i := 0; i < n; i++ {
		// Posting touches the SQ ring the running port reads: post all first, then ring
		// once, as a driver batches (the doorbell is the release).
		w := (&wqe{opcode: prm.WQEOpSend}).eth(0, nil).inl(udpFrame([4]byte{1, 1, 1, 1}, [4]byte{2, 2, 2, 2}, uint16(i), 9, 30, byte(i)))
		p.sq.post(w)
	}
	p.sq.doorbell(uint16(p.sq.pc - 1))
	deadline := time.Now().Add(10 * time.Second)
	for p.b.nic.Counters(false).RXPackets < n && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	<-done
	if c := p.b.nic.Counters(false); c.RXPackets != n {
		t.Fatalf("free-running: %d of %d frames arrived", c.RXPackets, n)
	}
	if got, _ := p.received(t); len(got) != n {
		t.Fatalf("%d CQEs", len(got))
	}
}

// TestEncapAndTunnelMatch: a NIC TX flow entry reformats frames into VXLAN (packet
// reformat L2 to L2 tunnel with the outer headers as data; the device fixes the outer
// lengths); the receiver's steering matches the VNI in misc parameters and the inner
// destination port in inner headers, and tags the flow.
func TestEncapAndTunnelMatch(t *testing.T) {
	p := newPair(t, false)
	// Receiver: replace the catch-all root with a VNI + inner port match.
	b := p.b
	tirn := b.id()
	must(t, b.nic.CreateTIR(TIRParams{TIRN: tirn, InlineRQ: p.rq.rqn}))
	ft, g := b.id(), b.id()
	must(t, b.nic.CreateFlowTable(FlowTableParams{Type: TableNICRX, ID: ft, LogSize: 2}))
	crit := make([]byte, matchParamBytes)
	misc := crit[prm.FTEMatchParam.MiscParameters.ByteOff():]
	inner := crit[prm.FTEMatchParam.InnerHeaders.ByteOff():]
	prm.FTEMatchSetMisc.VXLANVNI.Set(misc, 0xffffff)
	prm.FTEMatchSetLyr24.UDPDport.Set(inner, 0xffff)
	must(t, b.nic.CreateFlowGroup(FlowGroupParams{Type: TableNICRX, Table: ft, ID: g, End: 0, CriteriaEnable: 1<<1 | 1<<2, Criteria: crit}))
	val := make([]byte, matchParamBytes)
	prm.FTEMatchSetMisc.VXLANVNI.Set(val[prm.FTEMatchParam.MiscParameters.ByteOff():], 0x4242)
	prm.FTEMatchSetLyr24.UDPDport.Set(val[prm.FTEMatchParam.InnerHeaders.ByteOff():], 5555)
	must(t, b.nic.SetFTE(FTEParams{Type: TableNICRX, Table: ft, Group: g, Action: ActionFwdDest, FlowTag: 0xbeef, Dests: []Dest{{DestTIR, tirn}}, Value: val}))
	must(t, b.nic.SetRoot(TableNICRX, ft))

	// Sender: NIC TX root with one entry reformatting everything and allowing it.
	a := p.a
	hdr := udpFrame([4]byte{192, 168, 0, 1}, [4]byte{192, 168, 0, 2}, 49152, vxlanPort, 8, 0)
	vx := hdr[42:]
	clear(vx)
	vx[0] = 0x08
	binary.BigEndian.PutUint32(vx[4:], 0x4242<<8)
	rid := a.id()
	must(t, a.nic.AllocReformat(ReformatParams{ID: rid, Type: 2, Data: hdr}))
	tt, tg := a.id(), a.id()
	must(t, a.nic.CreateFlowTable(FlowTableParams{Type: TableNICTX, ID: tt, LogSize: 1}))
	must(t, a.nic.CreateFlowGroup(FlowGroupParams{Type: TableNICTX, Table: tt, ID: tg}))
	must(t, a.nic.SetFTE(FTEParams{Type: TableNICTX, Table: tt, Group: tg, Action: ActionAllow | ActionReformat, Reformat: rid}))
	must(t, a.nic.SetRoot(TableNICTX, tt))
	if err := a.nic.DeallocReformat(rid); err == nil {
		t.Fatal("reformat context in use was deallocated")
	}

	payload := udpFrame([4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1, 5555, 40, 9)
	p.sq.send(payload, 0, 0)
	other := udpFrame([4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1, 5556, 40, 9)
	p.sq.send(other, 0, 0)
	p.step()
	got, cqes := p.received(t)
	if len(got) != 1 {
		t.Fatalf("%d frames matched, want 1", len(got))
	}
	f := got[0]
	if len(f) != len(hdr)+len(payload) || string(f[len(hdr):]) != string(payload) {
		t.Fatalf("encapsulated frame %x", f)
	}
	h := parseL2(f, 0)
	if int(binary.BigEndian.Uint16(f[16:])) != len(f)-14 || !l3OK(f, &h) {
		t.Fatal("outer IPv4 length/checksum not fixed")
	}
	if tag := prm.CQE64.SopDropQPN.Get(cqes[0][:]) & 0xffffff; tag != 0xbeef || cqes[0][0]&1 == 0 {
		t.Fatalf("flow tag %#x, tunneled bit %d", tag, cqes[0][0]&1)
	}
	if c := b.nic.Counters(false); c.RXSteeringMiss != 1 {
		t.Fatalf("receiver counters %+v, want the other VNI frame missed", c)
	}
}

// TestTimestamps: an RQ stamps CQEs in its timestamp format: free-running ticks, or real
// time as seconds << 32 | nanoseconds (rdma-core and DPDK mlx5_txpp.c read it so).
func TestTimestamps(t *testing.T) {
	for _, rt := range []bool{false, true} {
		e := newEnv(t)
		e.clock.Set(5*1e9 + 123)
		c := e.newCQ(3, nil)
		e.rqMod = func(p *RQParams) {
			if rt {
				p.TSFormat = TSRealTime
			}
		}
		r := e.newRQ(c, 3, 256, 0, 0)
		r.post(8)
		e.direct(r)
		e.nic.Receive(udpFrame([4]byte{1, 1, 1, 1}, [4]byte{2, 2, 2, 2}, 1, 2, 10, 0))
		e.nic.Step(1)
		got := c.poll()
		want := uint64(5*1e9 + 123)
		if rt {
			want = 5<<32 | 123
		}
		if len(got) != 1 || prm.CQE64.Timestamp.Get(got[0][:]) != want {
			t.Fatalf("real time %v: timestamp %#x, want %#x", rt, prm.CQE64.Timestamp.Get(got[0][:]), want)
		}
	}
}

// TestObjectErrors: the datapath's own checks answer with PRM statuses and its syndromes,
// never a panic: duplicates, unknown references, objects in use, illegal transitions.
func TestObjectErrors(t *testing.T) {
	e := newEnv(t)
	c := e.newCQ(3, nil)
	r := e.newRQ(c, 3, 256, 0, 0)
	status := func(err error, st uint8, syn uint32, what string) {
		t.Helper()
		de, ok := err.(*Error)
		if !ok || de.Status != st || de.Syndrome != syn {
			t.Fatalf("%s: %v, want status %#x syndrome %#x", what, err, st, syn)
		}
	}
	status(e.nic.CreateCQ(c.p), StatusBadParam, SyndromeDuplicateID, "duplicate CQ")
	status(e.nic.DestroyCQ(c.cqn), StatusBadResState, SyndromeInUse, "destroy CQ with an RQ")
	status(e.nic.CreateRQ(RQParams{RQN: 999, CQN: 12345}), StatusBadParam, SyndromeUnknownID, "RQ on a missing CQ")
	status(e.nic.ModifyRQ(r.rqn, RQModify{CurrState: StateReset, NextState: StateReady}), StatusBadResState, SyndromeBadState, "wrong current state")
	status(e.nic.ModifyRQ(r.rqn, RQModify{CurrState: StateReady, NextState: 7}), StatusBadResState, SyndromeBadState, "unknown next state")
	status(e.nic.CreateTIR(TIRParams{TIRN: 1, Indirect: true, RQT: 77}), StatusBadParam, SyndromeUnknownID, "TIR on a missing RQT")
	must(t, e.nic.CreateRQT(RQTParams{RQTN: 5, RQNs: []uint32{r.rqn}}))
	status(e.nic.CreateRQT(RQTParams{RQTN: 6}), StatusBadParam, SyndromeBadSize, "empty RQT")
	status(e.nic.DestroyRQ(r.rqn), StatusBadResState, SyndromeInUse, "destroy RQ in an RQT")
	must(t, e.nic.CreateTIR(TIRParams{TIRN: 1, Indirect: true, RQT: 5, HashFn: 2}))
	status(e.nic.DestroyRQT(5), StatusBadResState, SyndromeInUse, "destroy RQT with a TIR")
	must(t, e.nic.CreateFlowTable(FlowTableParams{Type: TableNICRX, ID: 1, LogSize: 2}))
	status(e.nic.CreateFlowGroup(FlowGroupParams{Type: TableNICRX, Table: 1, ID: 1, Start: 2, End: 9}), StatusBadParam, SyndromeBadIndex, "group beyond the table")
	must(t, e.nic.CreateFlowGroup(FlowGroupParams{Type: TableNICRX, Table: 1, ID: 1, Start: 0, End: 1}))
	status(e.nic.CreateFlowGroup(FlowGroupParams{Type: TableNICRX, Table: 1, ID: 2, Start: 1, End: 2}), StatusBadParam, SyndromeBadIndex, "overlapping group")
	status(e.nic.SetFTE(FTEParams{Type: TableNICRX, Table: 1, Group: 1, Index: 3, Action: ActionDrop}), StatusBadParam, SyndromeBadIndex, "entry outside its group")
	status(e.nic.SetFTE(FTEParams{Type: TableNICRX, Table: 1, Group: 1, Action: ActionFwdDest, Dests: []Dest{{DestTIR, 99}}}), StatusBadParam, SyndromeBadDest, "forward to a missing TIR")
	status(e.nic.SetFTE(FTEParams{Type: TableNICRX, Table: 1, Group: 1, Action: ActionDrop | ActionFwdDest}), StatusBadParam, SyndromeBadDest, "drop and forward")
	must(t, e.nic.SetFTE(FTEParams{Type: TableNICRX, Table: 1, Group: 1, Action: ActionFwdDest, Dests: []Dest{{DestTIR, 1}}}))
	status(e.nic.SetFTE(FTEParams{Type: TableNICRX, Table: 1, Group: 1, Index: 1, Action: ActionDrop}), StatusBadParam, SyndromeDuplicateID, "same match twice in a group")
	status(e.nic.DestroyTIR(1), StatusBadResState, SyndromeInUse, "destroy TIR an entry forwards to")
	status(e.nic.DestroyFlowGroup(TableNICRX, 1, 1), StatusBadResState, SyndromeInUse, "destroy group with entries")
	status(e.nic.CreateFlowTable(FlowTableParams{Type: TableNICRX, ID: 2, MissAction: 1, MissTable: 1}), StatusBadParam, SyndromeBadTable, "miss to a table not deeper")
	status(e.nic.CreateSQ(SQParams{SQN: 1, CQN: c.cqn, TISN: 404}), StatusBadParam, SyndromeUnknownID, "SQ on a missing TIS")
	status(e.nic.SetPacing(PacingParams{Index: 0, RateKbps: 1}), StatusBadParam, SyndromeBadIndex, "pacing index 0")
	must(t, e.nic.DeleteFTE(TableNICRX, 1, 0))
	must(t, e.nic.DestroyFlowGroup(TableNICRX, 1, 1))
	must(t, e.nic.DestroyFlowTable(TableNICRX, 1))
	must(t, e.nic.DestroyTIR(1))
	must(t, e.nic.DestroyRQT(5))
	must(t, e.nic.DestroyRQ(r.rqn))
	must(t, e.nic.DestroyCQ(c.cqn))
}
