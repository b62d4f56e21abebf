package model_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/mlx5/model"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// port is a brought-up device with a key over all of its host memory, as a driver sets one
// up for its buffers (PA mode; mlx5_ifc.h mkc).
type port struct {
	*ready
	lkey uint32
}

func newPort(t *testing.T) *port {
	r := newReady(t, model.Config{})
	return &port{ready: r, lkey: r.createMKeyPA(r.pd, r.base, uint64(len(r.mem)))}
}

// cqRing is a CQ the test polls: 64-byte CQEs, valid when the owner bit (op_own bit 0)
// equals the lap parity of the consumer index (rdma-core cq.c, kernel en_rx.c).
type cqRing struct {
	p       *port
	n       uint32
	buf     uint64
	logSize uint
	ci      uint32
	in      []byte // the CREATE_CQ input
}

func (p *port) newCQ(logSize uint) *cqRing {
	p.t.Helper()
	b := p.cqIn(int(logSize))
	c := &cqRing{p: p, logSize: logSize, buf: prm.CreateCQIn.PAS.Get(b), in: b}
	// Hardware-owned at first: owner bit 1 and opcode invalid, as drivers initialise the ring.
	for i := 0; i < 1<<logSize; i++ {
		prm.CQE64.OpOwn.Set(p.at(c.buf+uint64(i)*64, 64), uint64(prm.CQEOpInvalid)<<4|1)
	}
	c.n = uint32(get(p.mustCmd(b, 16), prm.CreateCQOut.CQN))
	return c
}

func (c *cqRing) poll() []byte {
	e := c.p.at(c.buf+uint64(c.ci&(1<<c.logSize-1))*64, 64)
	own := prm.CQE64.OpOwn.Get(e)
	if own>>4 == prm.CQEOpInvalid || own&1 != uint64(c.ci>>c.logSize&1) {
		return nil
	}
	c.ci++
	return e
}

// TestTwoPortsBackToBack cables two model devices and moves frames posted as raw SEND
// WQEs (control segment, Ethernet segment with 18 inline header bytes as mlx5e and DPDK
// send them, a pointer data segment; rdma-core mlx5dv.h layouts) through BAR0's UAR
// doorbells, from A's SQ to B's RQ via B's root flow table and a direct TIR. Counters,
// CQEs and the bytes in B's buffers are checked exactly, and frames beyond the posted
// receive WQEs are counted as out of buffer.
func TestTwoPortsBackToBack(t *testing.T) {
	a, b := newPort(t), newPort(t)
	vportState := func(p *port) uint64 {
		return get(p.mustCmd(in(prm.CmdOpQueryVportState, 0, 16), 16), prm.QueryVportStateOut.State)
	}
	if vportState(a) != prm.VportStateDown {
		t.Fatal("an unwired port reports its vport up")
	}
	a.d.Cable(b.d)
	if vportState(a) != prm.VportStateUp || vportState(b) != prm.VportStateUp {
		t.Fatal("cabled ports report their vports down")
	}

	// B: RQ of 16-byte WQEs (one data segment each), TIR, root table forwarding all to it.
	rxCQ := b.newCQ(6)
	qc := get(b.mustCmd(in(prm.CmdOpAllocQCounter, 0, 16), 16), prm.AllocQCounterOut.CounterSetID)
	rqIn := b.rqIn(rxCQ.n, kv{prm.RQC.CounterSetID, qc}, nil)
	wb := prm.CreateRQIn.Ctx.Off + prm.RQC.WQ.Off
	rqRing := prm.WQ.PAS.At(wb).Get(rqIn)
	rqDBR := prm.WQ.DbrAddr.At(wb).Get(rqIn)
	rq := uint32(get(b.mustCmd(rqIn, 16), prm.CreateRQOut.RQN))
	if err := b.modifyQueue(prm.CmdOpModifyRQ, rq, prm.RQStateRST, prm.RQStateRDY); err != nil {
		t.Fatal(err)
	}
	tir := get(b.mustCmd(in(prm.CmdOpCreateTIR, 0, int(prm.CreateTIRIn.Ctx.End()/8),
		prm.TIRC.TransportDomain.At(prm.CreateTIRIn.Ctx.Off), b.td, prm.TIRC.InlineRQN.At(prm.CreateTIRIn.Ctx.Off), rq), 16), prm.CreateTIROut.TIRN)
	fb := prm.CreateFlowTableIn.FlowTableContext.Off
	ft := get(b.mustCmd(in(prm.CmdOpCreateFlowTable, 0, int(prm.CreateFlowTableIn.FlowTableContext.End()/8), prm.FlowTableContext.LogSize.At(fb), 2), 16), prm.CreateFlowTableOut.TableID)
	fg := get(b.mustCmd(in(prm.CmdOpCreateFlowGroup, 0, int(prm.CreateFlowGroupIn.MatchCriteria.End()/8), prm.CreateFlowGroupIn.TableID, ft), 16), prm.CreateFlowGroupOut.GroupID)
	cb := prm.SetFTEIn.FlowContext.Off
	fc := prm.FlowContext
	fte := in(prm.CmdOpSetFlowTableEntry, 0, int(fc.Destination.At(cb).End()/8), prm.SetFTEIn.TableID, ft,
		fc.GroupID.At(cb), fg, fc.Action.At(cb), prm.FlowActionFwdDest, fc.FlowTag.At(cb), 0xbeef, fc.DestinationListSize.At(cb), 1,
		prm.DestFormatStruct.DestinationType.At(cb+fc.Destination.Off), prm.FlowDestTIR, prm.DestFormatStruct.DestinationID.At(cb+fc.Destination.Off), tir)
	b.mustCmd(fte, 16)
	b.mustCmd(in(prm.CmdOpSetFlowTableRoot, 0, 0x40, prm.SetFlowTableRootIn.TableID, ft), 16)

	const posted, sent = 8, 10
	bufs := make([]uint64, posted)
	for i := range bufs {
		bufs[i] = b.alloc(2048, 64)
		seg := b.at(rqRing+uint64(i)*16, 16)
		prm.WQEData.ByteCount.Set(seg, 2048)
		prm.WQEData.LKey.Set(seg, uint64(b.lkey))
		prm.WQEData.Addr.Set(seg, bufs[i])
	}
	binary.BigEndian.PutUint32(b.at(rqDBR+4*prm.RcvDBR, 4), posted)

	// Arm B's RX CQ (kernel cq.h mlx5_cq_arm: the arm word in the doorbell record, then
	// sn<<28 | cmd | ci and the CQ number as one 64-bit store at the UAR's CQ doorbell), so
	// that its first CQE raises one completion EQE.
	arm := uint32(prm.CQDBReqNot) | rxCQ.ci&0xffffff
	binary.BigEndian.PutUint32(b.at(prm.CQC.DbrAddr.At(prm.CreateCQIn.CQContext.Off).Get(rxCQ.in)+4*prm.CQDBRArm, 4), arm)
	var db [8]byte
	binary.BigEndian.PutUint32(db[:], arm)
	binary.BigEndian.PutUint32(db[4:], rxCQ.n)
	if _, err := b.d.BAR0().WriteAt(db[:], int64(b.uar)<<12+prm.UARCQDoorbell); err != nil {
		t.Fatal(err)
	}

	// A: TX CQ, TIS, SQ (RST→RDY).
	txCQ := a.newCQ(6)
	tis := a.createTIS()
	sqIn := a.sqIn(txCQ.n, tis, nil, nil)
	sb := prm.CreateSQIn.Ctx.Off + prm.SQC.WQ.Off
	sqRing := prm.WQ.PAS.At(sb).Get(sqIn)
	sqDBR := prm.WQ.DbrAddr.At(sb).Get(sqIn)
	sq := uint32(get(a.mustCmd(sqIn, 16), prm.CreateSQOut.SQN))
	if err := a.modifyQueue(prm.CmdOpModifySQ, sq, prm.SQStateRST, prm.SQStateRDY); err != nil {
		t.Fatal(err)
	}

	// Frames of different sizes; every other WQE asks for a completion.
	var frames [][]byte
	var txBytes uint64
	for i := range sent {
		f := make([]byte, 60+i*97)
		copy(f, []byte{0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x88, 0xb5})
		for j := 14; j < len(f); j++ {
			f[j] = byte(i*31 + j)
		}
		frames = append(frames, f)
		txBytes += uint64(len(f))
		const inline = 18
		payload := a.alloc(len(f)-inline, 64)
		copy(a.at(payload, len(f)-inline), f[inline:])
		w := a.at(sqRing+uint64(i)*64, 64)
		clear(w)
		prm.WQECtrl.OpModIdxOpcode.Set(w, uint64(i)<<8|prm.WQEOpSend)
		prm.WQECtrl.QPNDS.Set(w, uint64(sq)<<8|4) // ctrl + eth (2 units with the inline headers) + data
		if i%2 == 1 {
			prm.WQECtrl.FmCeSe.Set(w, prm.WQECtrlCQUpdate)
		}
		eth := w[16:]
		prm.WQEEth.InlineHdrSz.Set(eth, inline)
		copy(eth[14:], f[:inline])
		data := w[48:]
		prm.WQEData.ByteCount.Set(data, uint64(len(f)-inline))
		prm.WQEData.LKey.Set(data, uint64(a.lkey))
		prm.WQEData.Addr.Set(data, payload)
	}
	// Doorbell record (send counter, word 1), then the control segment's first 8 bytes to
	// the BlueFlame register of the SQ's UAR page (rdma-core qp.c, kernel en_tx.c).
	binary.BigEndian.PutUint32(a.at(sqDBR+4*prm.SndDBR, 4), sent)
	ctrl := a.at(sqRing+uint64(sent-1)*64, 8)
	if _, err := a.d.BAR0().WriteAt(ctrl, int64(a.uar)<<12+prm.UARBlueFlame); err != nil {
		t.Fatal(err)
	}
	for i := 0; a.d.Step(64)+b.d.Step(64) > 0; i++ {
		if i == 1000 {
			t.Fatal("ports still busy after 1000 steps")
		}
	}

	ca, cb2 := a.d.Counters(), b.d.Counters()
	if ca.TXPackets != sent || ca.TXBytes != txBytes {
		t.Errorf("A TX %d packets %d bytes, want %d and %d", ca.TXPackets, ca.TXBytes, sent, txBytes)
	}
	var rxBytes uint64
	for _, f := range frames[:posted] {
		rxBytes += uint64(len(f))
	}
	if cb2.RXPackets != posted || cb2.RXBytes != rxBytes || cb2.RXOutOfBuffer != sent-posted {
		t.Errorf("B RX %d packets %d bytes, %d out of buffer; want %d, %d, %d", cb2.RXPackets, cb2.RXBytes, cb2.RXOutOfBuffer, posted, rxBytes, sent-posted)
	}
	// QUERY_VPORT_COUNTER shows the same traffic (all of it as unicast).
	vc := func(p *port) []byte {
		return p.mustCmd(in(prm.CmdOpQueryVportCounter, 0, int(prm.QueryVportCounterIn.Clear.End()/8)+4), int(prm.QueryVportCounterOut.TransmittedEthUnicast.End()/8))
	}
	ao, bo := vc(a), vc(b)
	tc, vo := prm.TrafficCounter, prm.QueryVportCounterOut
	if get(ao, tc.Packets.At(vo.TransmittedEthUnicast.Off)) != sent || get(ao, tc.Octets.At(vo.TransmittedEthUnicast.Off)) != txBytes ||
		get(bo, tc.Packets.At(vo.ReceivedEthUnicast.Off)) != posted || get(bo, tc.Octets.At(vo.ReceivedEthUnicast.Off)) != rxBytes {
		t.Error("QUERY_VPORT_COUNTER disagrees with the traffic")
	}
	// The RQ's Q counter set counted the same drops (QUERY_Q_COUNTER out_of_buffer).
	qo := b.mustCmd(in(prm.CmdOpQueryQCounter, 0, 0x20, prm.QueryQCounterIn.CounterSetID, qc), int(prm.QueryQCounterOut.OutOfBuffer.End()/8))
	if oob := get(qo, prm.QueryQCounterOut.OutOfBuffer); oob != sent-posted {
		t.Errorf("Q counter out_of_buffer %d, want %d", oob, sent-posted)
	}
	// Requester CQEs only for the WQEs that asked, with their WQE counters.
	var reqs []string
	for e := txCQ.poll(); e != nil; e = txCQ.poll() {
		reqs = append(reqs, fmt.Sprintf("%d/%d", prm.CQE64.OpOwn.Get(e)>>4, prm.CQE64.WQECounter.Get(e)))
	}
	if want := "[0/1 0/3 0/5 0/7 0/9]"; fmt.Sprint(reqs) != want {
		t.Errorf("requester CQEs (opcode/wqe counter) %v, want %s", reqs, want)
	}
	// Responder CQEs, one per received frame, with the byte count and flow tag; the frame
	// is in the WQE's buffer.
	for i := range posted {
		e := rxCQ.poll()
		if e == nil {
			t.Fatalf("responder CQE %d missing", i)
		}
		if op := prm.CQE64.OpOwn.Get(e) >> 4; op != prm.CQEOpRespSend {
			t.Fatalf("CQE %d opcode %d", i, op)
		}
		n := int(prm.CQE64.ByteCnt.Get(e))
		if n != len(frames[i]) || prm.CQE64.WQECounter.Get(e) != uint64(i) {
			t.Fatalf("CQE %d: %d bytes for WQE %d; want %d bytes, WQE %d", i, n, prm.CQE64.WQECounter.Get(e), len(frames[i]), i)
		}
		if tag := prm.CQE64.SopDropQPN.Get(e) & 0xffffff; tag != 0xbeef {
			t.Fatalf("CQE %d flow tag %#x", i, tag)
		}
		if got := b.at(bufs[i], n); !bytes.Equal(got, frames[i]) {
			t.Fatalf("frame %d differs in the receive buffer", i)
		}
	}
	if rxCQ.poll() != nil {
		t.Fatal("more responder CQEs than frames received")
	}
	// One completion EQE for the armed CQ, none for A's unarmed TX CQ.
	var comps []uint64
	for e := b.eq.next(); e != nil; e = b.eq.next() {
		if prm.EventType(get(e, prm.EQE.EventType)) == prm.EventTypeComp {
			comps = append(comps, get(prm.EQE.EventData.Slice(e), prm.CompEvent.CQNumber))
		}
	}
	if len(comps) != 1 || comps[0] != uint64(rxCQ.n) {
		t.Errorf("completion EQEs on B for CQs %v, want one for CQ %d", comps, rxCQ.n)
	}
	for e := a.eq.next(); e != nil; e = a.eq.next() {
		if prm.EventType(get(e, prm.EQE.EventType)) == prm.EventTypeComp {
			t.Error("completion EQE for A's unarmed CQ")
		}
	}
}

// TestLoopbackFreeRunning runs a Device in free-running mode (Device.Run in a goroutine)
// with its port in internal loopback (Device.Cable to itself): UDP frames posted on its SQ
// come back through its own flow table to its RQ. Bounded: at most 10 s of polling.
func TestLoopbackFreeRunning(t *testing.T) {
	if raceEnabled {
		// The device writes CQEs and frames into host memory from its goroutine while the
		// test polls them, unsynchronised as DMA is; the race detector rightly sees that.
		t.Skip("free-running DMA into polled memory is unsynchronised by design; run without -race")
	}
	p := newPort(t)
	p.d.Cable(p.d)
	rx := p.newRX()
	p.steerUDP(rx.rq, 7000, 0x11)
	tx := p.newTX()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.d.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	mac := net.HardwareAddr{2, 0, 0, 0, 0, 1}
	const n = 3
	for i := 0; i < n; i++ {
		tx.send(udp4(mac, mac, [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 1}, 9, 7000, []byte(fmt.Sprintf("loop-%d", i))), 0)
	}
	var got []string
	for deadline := time.Now().Add(10 * time.Second); len(got) < n && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		for e := rx.cq.poll(); e != nil; e = rx.cq.poll() {
			f := p.at(rx.bufs[prm.CQE64.WQECounter.Get(e)%64], int(prm.CQE64.ByteCnt.Get(e)))
			got = append(got, string(f[42:]))
		}
	}
	if fmt.Sprint(got) != "[loop-0 loop-1 loop-2]" {
		t.Fatalf("looped back %q", got)
	}
	if c := p.d.Counters(); c.TXPackets != n || c.RXPackets != n {
		t.Fatalf("counters %+v", c)
	}
}

// TestStridingRQThroughCommands creates a cyclic striding RQ by command with
// log_wqe_num_of_strides 0 and log_wqe_stride_size 1 (512 strides of 128 bytes: the bases 9
// and 6 that DPDK's mlx5_devx.c and the kernel's en/params.c subtract), posts 32-byte
// multi-packet WQEs (mlx5dv.h struct mlx5_mprq_wqe: a next segment, then one data segment
// over the whole buffer) and receives frames from a cabled port: each CQE names the WQE
// (wqe_id), the first stride (wqe_counter) and the strides used (byte_cnt bits 29:16), and
// the frame sits at that stride in the buffer.
func TestStridingRQThroughCommands(t *testing.T) {
	a, b := newPort(t), newPort(t)
	a.d.Cable(b.d)
	rxCQ := b.newCQ(6)
	const strides, stride = 512, 128
	w := prm.WQ
	rqIn := b.wqIn(prm.CmdOpCreateRQ, prm.CreateRQIn.Ctx.Off, prm.RQC.WQ.Off, 5, 2, kv{prm.RQC.CQN, rxCQ.n},
		kv{w.WQType, prm.WQTypeCyclicStriding, w.LogWQENumOfStrides, 0, w.LogWQEStrideSize, 1})
	wb := prm.CreateRQIn.Ctx.Off + prm.RQC.WQ.Off
	ring, dbr := w.PAS.At(wb).Get(rqIn), w.DbrAddr.At(wb).Get(rqIn)
	rq := uint32(get(b.mustCmd(rqIn, 16), prm.CreateRQOut.RQN))
	var bufs []uint64
	for i := 0; i < 4; i++ {
		buf := b.alloc(strides*stride, 4096)
		seg := b.at(ring+uint64(i)*32+16, 16)
		prm.WQEData.ByteCount.Set(seg, strides*stride)
		prm.WQEData.LKey.Set(seg, uint64(b.lkey))
		prm.WQEData.Addr.Set(seg, buf)
		bufs = append(bufs, buf)
	}
	binary.BigEndian.PutUint32(b.at(dbr+4*prm.RcvDBR, 4), 4)
	if err := b.modifyQueue(prm.CmdOpModifyRQ, rq, prm.RQStateRST, prm.RQStateRDY); err != nil {
		t.Fatal(err)
	}
	b.steerUDP(rq, 7000, 1)
	tx := a.newTX()
	mac := net.HardwareAddr{2, 0, 0, 0, 0, 1}
	sizes := []int{100, 300, 60, 129}
	for i, n := range sizes {
		f := udp4(mac, mac, [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 9, 7000, bytes.Repeat([]byte{byte(i + 1)}, n-42))
		tx.send(f, 0)
	}
	for i := 0; a.d.Step(64)+b.d.Step(64) > 0; i++ {
		if i == 1000 {
			t.Fatal("ports still busy after 1000 steps")
		}
	}
	next := uint64(0)
	for i, n := range sizes {
		e := rxCQ.poll()
		if e == nil {
			t.Fatalf("CQE %d missing", i)
		}
		bc := prm.CQE64.ByteCnt.Get(e)
		used := (uint64(n) + stride - 1) / stride
		if wqe, first := prm.CQE64.WQEID.Get(e), prm.CQE64.WQECounter.Get(e); wqe != 0 || first != next ||
			bc&prm.MPRQByteCntLenMask != uint64(n) || bc&prm.MPRQByteCntStridesMask>>prm.MPRQByteCntStrideShift != used {
			t.Fatalf("CQE %d: wqe %d stride %d byte_cnt %#x; want wqe 0 stride %d, %d bytes in %d strides", i, wqe, first, bc, next, n, used)
		}
		if f := b.at(bufs[0]+next*stride, n); f[42] != byte(i+1) || f[n-1] != byte(i+1) {
			t.Fatalf("frame %d not at stride %d", i, next)
		}
		next += used
	}
}

// TestRSSThroughCommands builds an indirect TIR by command (Toeplitz, Microsoft's
// verification key as 10 big-endian dwords of rx_hash_toeplitz_key, outer IPv4+TCP
// selector with both addresses and ports) over an RQT of two RQs, sends the flows of
// Microsoft's published RSS verification vectors ("Verifying the RSS Hash Calculation") from
// a cabled port, and checks each CQE's hash (rss_hash_result) against the published value
// and its RQ against hash mod 2 through the RQT (one entry per RQ).
func TestRSSThroughCommands(t *testing.T) {
	a, b := newPort(t), newPort(t)
	a.d.Cable(b.d)
	rxs := []*rxQueue{b.newRX(), b.newRX()}
	rqt := uint32(get(b.mustCmd(rqtIn(prm.CmdOpCreateRQT, prm.CreateRQTIn.RQTContext, 2, []uint32{rxs[0].rq, rxs[1].rq}), 16), prm.CreateRQTOut.RQTN))
	tb := prm.CreateTIRIn.Ctx.Off
	tc := prm.TIRC
	tir := in(prm.CmdOpCreateTIR, 0, int(prm.CreateTIRIn.Ctx.End()/8), withCtx(tb, kv{tc.TransportDomain, b.td,
		tc.DispType, prm.TIRDispIndirect, tc.IndirectTable, rqt, tc.RXHashFn, prm.RXHashFnToeplitz})...)
	key := []byte{0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
		0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
		0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa}
	copy(tir[(tb+tc.RXHashToeplitzKey.Off)/8:], key)
	sel := tb + tc.RXHashFieldSelectorOuter.Off
	prm.RXHashFieldSelect.L3ProtType.At(sel).Set(tir, prm.L3ProtIPv4)
	prm.RXHashFieldSelect.L4ProtType.At(sel).Set(tir, prm.L4ProtTCP)
	prm.RXHashFieldSelect.SelectedFields.At(sel).Set(tir, prm.HashFieldSrcIP|prm.HashFieldDstIP|prm.HashFieldL4SPort|prm.HashFieldL4DPort)
	tirn := get(b.mustCmd(tir, 16), prm.CreateTIROut.TIRN)
	// Root table: one match-everything entry to the TIR.
	fb := prm.CreateFlowTableIn.FlowTableContext.Off
	ft := get(b.mustCmd(in(prm.CmdOpCreateFlowTable, 0, int(prm.CreateFlowTableIn.FlowTableContext.End()/8), prm.FlowTableContext.LogSize.At(fb), 1), 16), prm.CreateFlowTableOut.TableID)
	fg := get(b.mustCmd(in(prm.CmdOpCreateFlowGroup, 0, int(prm.CreateFlowGroupIn.MatchCriteria.End()/8), prm.CreateFlowGroupIn.TableID, ft), 16), prm.CreateFlowGroupOut.GroupID)
	cb := prm.SetFTEIn.FlowContext.Off
	fc := prm.FlowContext
	b.mustCmd(in(prm.CmdOpSetFlowTableEntry, 0, int(fc.Destination.At(cb).End()/8), prm.SetFTEIn.TableID, ft,
		fc.GroupID.At(cb), fg, fc.Action.At(cb), prm.FlowActionFwdDest, fc.DestinationListSize.At(cb), 1,
		prm.DestFormatStruct.DestinationType.At(cb+fc.Destination.Off), prm.FlowDestTIR,
		prm.DestFormatStruct.DestinationID.At(cb+fc.Destination.Off), tirn), 16)
	b.mustCmd(in(prm.CmdOpSetFlowTableRoot, 0, 0x40, prm.SetFlowTableRootIn.TableID, ft), 16)

	vectors := []struct {
		src, dst     [4]byte
		sport, dport uint16
		hash         uint32
	}{
		{[4]byte{66, 9, 149, 187}, [4]byte{161, 142, 100, 80}, 2794, 1766, 0x51ccc178},
		{[4]byte{199, 92, 111, 2}, [4]byte{65, 69, 140, 83}, 14230, 4739, 0xc626b0ea},
		{[4]byte{24, 19, 198, 95}, [4]byte{12, 22, 207, 184}, 12898, 38024, 0x5c2b394a},
		{[4]byte{38, 27, 205, 30}, [4]byte{209, 142, 163, 6}, 48228, 2217, 0xafc7327f},
		{[4]byte{153, 39, 163, 191}, [4]byte{202, 188, 127, 2}, 44251, 1303, 0x10e828a2},
	}
	tx := a.newTX()
	mac := net.HardwareAddr{2, 0, 0, 0, 0, 1}
	for _, v := range vectors {
		f := udp4(mac, mac, v.src, v.dst, v.sport, v.dport, make([]byte, 32))
		f[23] = 6 // TCP: the 8-byte UDP header becomes the first 8 bytes of a 20-byte TCP header
		f[46] = 5 << 4
		binary.BigEndian.PutUint16(f[16:], uint16(len(f)-14))
		tx.send(f, 0)
	}
	for i := 0; a.d.Step(64)+b.d.Step(64) > 0; i++ {
		if i == 1000 {
			t.Fatal("ports still busy after 1000 steps")
		}
	}
	var got [2][]uint32
	for q, r := range rxs {
		for e := r.cq.poll(); e != nil; e = r.cq.poll() {
			got[q] = append(got[q], uint32(prm.CQE64.RSSHashResult.Get(e)))
		}
	}
	var want [2][]uint32
	for _, v := range vectors {
		want[v.hash%2] = append(want[v.hash%2], v.hash)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("hashes per RQ %x, want %x (Microsoft's vectors, RQT entry = hash mod 2)", got, want)
	}
}
