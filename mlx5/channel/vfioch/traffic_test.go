package vfioch_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/daqiri-go/daqiri/hugepage"
	"github.com/daqiri-go/daqiri/mlx5/channel"
	"github.com/daqiri-go/daqiri/mlx5/channel/vfioch"
	"github.com/daqiri-go/daqiri/mlx5/model"
	"github.com/daqiri-go/daqiri/mlx5/model/vfiomodel"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// in is a command of n bytes with field, value pairs set.
func in(op prm.CmdOp, n int, kv ...any) []byte {
	b := make([]byte, n)
	prm.CmdIn.Opcode.Set(b, uint64(op))
	for i := 0; i+1 < len(kv); i += 2 {
		var v uint64
		switch x := kv[i+1].(type) {
		case int:
			v = uint64(x)
		case uint32:
			v = uint64(x)
		case uint64:
			v = x
		default:
			panic(fmt.Sprintf("value %T", x))
		}
		if !kv[i].(prm.Field).Set(b, v) {
			panic(fmt.Sprintf("%v beyond %d bytes", kv[i], n))
		}
	}
	return b
}

// tport is one model port driven through the VFIO transport: host memory registered with
// the channel (mapped at its address), a PD, a transport domain, a UAR and a PA key over the
// memory.
type tport struct {
	t    *testing.T
	ch   *vfioch.Channel
	f    *vfiomodel.Function
	mem  []byte
	base uint64
	next uint64
	pd   uint32
	td   uint32
	uar  channel.UAR
	eqn  uint32
	lkey uint32
}

func newTPort(t *testing.T) *tport {
	t.Helper()
	ch, f := open(t, model.Config{}, testOpts())
	m, err := hugepage.Map(8<<20, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	p := &tport{t: t, ch: ch, f: f, mem: m.Bytes(), base: uint64(uintptr(unsafe.Pointer(&m.Bytes()[0])))}
	p.next = p.base
	if _, err := ch.RegisterMemory(p.mem, channel.AccessLocalWrite); err != nil {
		t.Fatal(err)
	}
	p.pd = p.create(in(prm.CmdOpAllocPD, 16), prm.AllocPDOut.PD)
	p.td = p.create(in(prm.CmdOpAllocTransportDomain, 16), prm.AllocTransportDomainOut.TransportDomain)
	if p.uar, err = ch.AllocUAR(); err != nil {
		t.Fatal(err)
	}
	if p.eqn, err = ch.EQN(0); err != nil {
		t.Fatal(err)
	}
	base := prm.CreateMKeyIn.MemoryKeyMKeyEntry.Off
	k := prm.MKC
	idx := p.create(in(prm.CmdOpCreateMKey, prm.CreateMKeyIn.KlmPASMtt.ByteOff(),
		k.AccessMode10.At(base), prm.MKeyAccessPA, k.Lr.At(base), 1, k.Lw.At(base), 1, k.PD.At(base), p.pd,
		k.QPN.At(base), 0xffffff, k.MKey70.At(base), 0x5a, k.StartAddr.At(base), p.base, k.Len.At(base), uint64(len(p.mem))), prm.CreateMKeyOut.MKeyIndex)
	p.lkey = idx<<8 | 0x5a
	return p
}

func (p *tport) create(b []byte, id prm.Field) uint32 {
	p.t.Helper()
	out := make([]byte, 16)
	o, err := p.ch.Create(b, out)
	if err != nil {
		p.t.Fatal(err)
	}
	if uint32(id.Get(out)) != o.ID() {
		p.t.Fatalf("%v: id %d, output says %d", prm.CmdOp(prm.CmdIn.Opcode.Get(b)), o.ID(), id.Get(out))
	}
	return o.ID()
}

func (p *tport) alloc(n, align int) uint64 {
	a := (p.next + uint64(align) - 1) &^ uint64(align-1)
	p.next = a + uint64(n)
	if p.next > p.base+uint64(len(p.mem)) {
		p.t.Fatal("test memory exhausted")
	}
	return a
}

func (p *tport) at(a uint64, n int) []byte { return p.mem[a-p.base : a-p.base+uint64(n)] }

// cq creates a CQ of 64 CQEs owned by hardware at first.
func (p *tport) cq() (uint32, uint64) {
	ring := p.alloc(4096, 4096)
	for i := range 64 {
		prm.CQE64.OpOwn.Set(p.at(ring+uint64(i)*64, 64), uint64(prm.CQEOpInvalid)<<4|1)
	}
	base := prm.CreateCQIn.CQContext.Off
	q := prm.CQC
	b := in(prm.CmdOpCreateCQ, prm.CreateCQIn.PAS.ByteOff()+8, q.LogCQSize.At(base), 6, q.UARPage.At(base), p.uar.Index(),
		q.CEQNOrApuElement.At(base), p.eqn, q.DbrAddr.At(base), p.alloc(64, 64), prm.CreateCQIn.PAS, ring)
	return p.create(b, prm.CreateCQOut.CQN), ring
}

// wq fills a create_rq_in or create_sq_in with a cyclic WQ of 64 entries of 2^logStride
// bytes; it returns the command, the ring and the doorbell record.
func (p *tport) wq(op prm.CmdOp, ctx, wqOff uint32, logStride int, kv ...any) ([]byte, uint64, uint64) {
	ring := p.alloc(64<<logStride, 4096)
	dbr := p.alloc(64, 64)
	w := prm.WQ
	wb := ctx + wqOff
	n := (64<<logStride + 4095) / 4096
	kv = append(kv, w.WQType.At(wb), prm.WQTypeCyclic, w.LogWQStride.At(wb), logStride, w.LogWQSz.At(wb), 6, w.PD.At(wb), p.pd,
		w.UARPage.At(wb), p.uar.Index(), w.DbrAddr.At(wb), dbr)
	b := in(op, w.PAS.At(wb).ByteOff()+8*n, kv...)
	for i := range n {
		w.PAS.At(wb+uint32(i)*64).Set(b, ring+uint64(i)*4096)
	}
	return b, ring, dbr
}

func (p *tport) ready(op prm.CmdOp, n uint32) {
	p.t.Helper()
	var b []byte
	if op == prm.CmdOpModifyRQ {
		b = in(op, int(prm.ModifyRQIn.Ctx.End()/8), prm.ModifyRQIn.RQN, n, prm.ModifyRQIn.RQState, prm.RQStateRST, prm.RQC.State.At(prm.ModifyRQIn.Ctx.Off), prm.RQStateRDY)
	} else {
		b = in(op, int(prm.ModifySQIn.Ctx.End()/8), prm.ModifySQIn.SQN, n, prm.ModifySQIn.SQState, prm.SQStateRST, prm.SQC.State.At(prm.ModifySQIn.Ctx.Off), prm.SQStateRDY)
	}
	if err := p.ch.Exec(b, make([]byte, 16)); err != nil {
		p.t.Fatal(err)
	}
}

// TestTrafficBetweenTwoPorts moves frames from one model port to another, each driven over
// the VFIO transport: objects created through the command queue, the SQ's doorbell through
// the UAR in the VFIO-shaped BAR, memory reached through the DMA map. Counts and bytes are
// exact; then both channels close leaving nothing mapped.
func TestTrafficBetweenTwoPorts(t *testing.T) {
	a, b := newTPort(t), newTPort(t)
	a.f.Device().Cable(b.f.Device())

	// B: RQ, TIR, a root table forwarding everything to it.
	rxCQ, rxRing := b.cq()
	rqIn, rqRing, rqDBR := b.wq(prm.CmdOpCreateRQ, prm.CreateRQIn.Ctx.Off, prm.RQC.WQ.Off, 4, prm.RQC.CQN.At(prm.CreateRQIn.Ctx.Off), rxCQ)
	rq := b.create(rqIn, prm.CreateRQOut.RQN)
	b.ready(prm.CmdOpModifyRQ, rq)
	tc := prm.CreateTIRIn.Ctx.Off
	tir := b.create(in(prm.CmdOpCreateTIR, int(prm.CreateTIRIn.Ctx.End()/8), prm.TIRC.TransportDomain.At(tc), b.td, prm.TIRC.InlineRQN.At(tc), rq), prm.CreateTIROut.TIRN)
	fb := prm.CreateFlowTableIn.FlowTableContext.Off
	ft := b.create(in(prm.CmdOpCreateFlowTable, int(prm.CreateFlowTableIn.FlowTableContext.End()/8), prm.FlowTableContext.LogSize.At(fb), 2), prm.CreateFlowTableOut.TableID)
	fg := b.create(in(prm.CmdOpCreateFlowGroup, int(prm.CreateFlowGroupIn.MatchCriteria.End()/8), prm.CreateFlowGroupIn.TableID, ft), prm.CreateFlowGroupOut.GroupID)
	cb := prm.SetFTEIn.FlowContext.Off
	fc := prm.FlowContext
	d := cb + fc.Destination.Off
	if _, err := b.ch.Create(in(prm.CmdOpSetFlowTableEntry, int(fc.Destination.At(cb).End()/8), prm.SetFTEIn.TableID, ft,
		fc.GroupID.At(cb), fg, fc.Action.At(cb), prm.FlowActionFwdDest, fc.FlowTag.At(cb), 0xbeef, fc.DestinationListSize.At(cb), 1,
		prm.DestFormatStruct.DestinationType.At(d), prm.FlowDestTIR, prm.DestFormatStruct.DestinationID.At(d), tir), make([]byte, 16)); err != nil {
		t.Fatal(err)
	}
	detach, err := b.ch.AttachRoot(ft)
	if err != nil {
		t.Fatal(err)
	}

	const posted, sent = 48, 40
	bufs := make([]uint64, posted)
	for i := range bufs {
		bufs[i] = b.alloc(2048, 64)
		seg := b.at(rqRing+uint64(i)*16, 16)
		prm.WQEData.ByteCount.Set(seg, 2048)
		prm.WQEData.LKey.Set(seg, uint64(b.lkey))
		prm.WQEData.Addr.Set(seg, bufs[i])
	}
	binary.BigEndian.PutUint32(b.at(rqDBR+4*prm.RcvDBR, 4), posted)

	// A: TX CQ, TIS, SQ.
	txCQ, _ := a.cq()
	tis := a.create(in(prm.CmdOpCreateTIS, int(prm.CreateTISIn.Ctx.End()/8), prm.TISC.TransportDomain.At(prm.CreateTISIn.Ctx.Off), a.td), prm.CreateTISOut.TISN)
	sc := prm.CreateSQIn.Ctx.Off
	sqIn, sqRing, sqDBR := a.wq(prm.CmdOpCreateSQ, sc, prm.SQC.WQ.Off, 6, prm.SQC.CQN.At(sc), txCQ, prm.SQC.TISNum0.At(sc), tis, prm.SQC.TISLstSz.At(sc), 1)
	sq := a.create(sqIn, prm.CreateSQOut.SQN)
	a.ready(prm.CmdOpModifySQ, sq)

	r := rand.New(rand.NewPCG(3, 4))
	var frames [][]byte
	var txBytes uint64
	for i := range sent {
		f := make([]byte, 60+r.IntN(1400))
		copy(f, []byte{0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x88, 0xb5})
		for j := 14; j < len(f); j++ {
			f[j] = byte(r.Uint32())
		}
		frames = append(frames, f)
		txBytes += uint64(len(f))
		const inline = 18
		payload := a.alloc(len(f)-inline, 64)
		copy(a.at(payload, len(f)-inline), f[inline:])
		w := a.at(sqRing+uint64(i)*64, 64)
		clear(w)
		prm.WQECtrl.OpModIdxOpcode.Set(w, uint64(i)<<8|prm.WQEOpSend)
		prm.WQECtrl.QPNDS.Set(w, uint64(sq)<<8|4)
		eth := w[16:]
		prm.WQEEth.InlineHdrSz.Set(eth, inline)
		copy(eth[14:], f[:inline])
		data := w[48:]
		prm.WQEData.ByteCount.Set(data, uint64(len(f)-inline))
		prm.WQEData.LKey.Set(data, uint64(a.lkey))
		prm.WQEData.Addr.Set(data, payload)
	}
	// Doorbell record, then the control segment's first 8 bytes as one 64-bit store to the
	// BlueFlame register of the UAR page in BAR0 (rdma-core qp.c).
	binary.BigEndian.PutUint32(a.at(sqDBR+4*prm.SndDBR, 4), sent)
	a.uar.Write64(prm.UARBlueFlame, binary.BigEndian.Uint64(a.at(sqRing+uint64(sent-1)*64, 8)))
	for i := 0; a.f.Device().Step(64)+b.f.Device().Step(64) > 0; i++ {
		if i == 10000 {
			t.Fatal("ports still busy after 10000 steps")
		}
	}

	ca, cb2 := a.f.Device().Counters(), b.f.Device().Counters()
	if ca.TXPackets != sent || ca.TXBytes != txBytes || cb2.RXPackets != sent || cb2.RXBytes != txBytes || cb2.RXOutOfBuffer != 0 {
		t.Fatalf("A TX %d packets %d bytes, B RX %d packets %d bytes %d out of buffer; want %d and %d each way", ca.TXPackets, ca.TXBytes, cb2.RXPackets, cb2.RXBytes, cb2.RXOutOfBuffer, sent, txBytes)
	}
	for i := range sent {
		e := b.at(rxRing+uint64(i)*64, 64)
		if own := prm.CQE64.OpOwn.Get(e); own>>4 != prm.CQEOpRespSend || own&1 != 0 {
			t.Fatalf("CQE %d op_own %#x", i, own)
		}
		n := int(prm.CQE64.ByteCnt.Get(e))
		if n != len(frames[i]) || prm.CQE64.SopDropQPN.Get(e)&0xffffff != 0xbeef {
			t.Fatalf("CQE %d: %d bytes, flow tag %#x; want %d bytes, tag 0xbeef", i, n, prm.CQE64.SopDropQPN.Get(e)&0xffffff, len(frames[i]))
		}
		if !bytes.Equal(b.at(bufs[i], n), frames[i]) {
			t.Fatalf("frame %d differs in the receive buffer", i)
		}
	}
	t.Logf("%d frames, %d bytes from vfio+model A to B; A %d commands (%d by event), B %d commands", sent, txBytes, a.ch.Stats().Commands, a.ch.Stats().ByEvent, b.ch.Stats().Commands)
	if err := detach(); err != nil {
		t.Fatal(err)
	}
	// The other object kinds the engine and steering create, left for Close to destroy
	// through the commands built from their creates (each destroy checked by the model).
	b.create(in(prm.CmdOpAllocQCounter, 16), prm.AllocQCounterOut.CounterSetID)
	b.create(in(prm.CmdOpAllocFlowCounter, 16), prm.AllocFlowCounterOut.FlowCounterID)
	rb := prm.CreateRQTIn.RQTContext.Off
	rqt := in(prm.CmdOpCreateRQT, int(prm.RQTC.RQNum.At(rb).End()/8), prm.RQTC.RQTMaxSize.At(rb), 1, prm.RQTC.RQTActualSize.At(rb), 1)
	prm.RQNum.RQNum.At(rb+prm.RQTC.RQNum.Off).Set(rqt, uint64(rq))
	b.create(rqt, prm.CreateRQTOut.RQTN)
	closeClean(t, a.ch, a.f)
	closeClean(t, b.ch, b.f)
	checkCommands(t, a.f)
	checkCommands(t, b.f)
}

// TestFailureWithLiveQueues fails one port's firmware while both ports run free with a
// cable between them and queues open: that port's channel fails every call with the
// device's error and closes without commands and without leaving a mapping; the other port
// is untouched and closes clean.
func TestFailureWithLiveQueues(t *testing.T) {
	a, b := newTPort(t), newTPort(t)
	a.f.Device().Cable(b.f.Device())
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, p := range []*tport{a, b} {
		wg.Add(1)
		go func() { defer wg.Done(); p.f.Device().Run(ctx) }()
	}
	defer func() { cancel(); wg.Wait() }()
	for _, p := range []*tport{a, b} {
		cq, _ := p.cq()
		tis := p.create(in(prm.CmdOpCreateTIS, int(prm.CreateTISIn.Ctx.End()/8), prm.TISC.TransportDomain.At(prm.CreateTISIn.Ctx.Off), p.td), prm.CreateTISOut.TISN)
		sc := prm.CreateSQIn.Ctx.Off
		sqIn, _, _ := p.wq(prm.CmdOpCreateSQ, sc, prm.SQC.WQ.Off, 6, prm.SQC.CQN.At(sc), cq, prm.SQC.TISNum0.At(sc), tis, prm.SQC.TISLstSz.At(sc), 1)
		p.ready(prm.CmdOpModifySQ, p.create(sqIn, prm.CreateSQOut.SQN))
	}
	a.f.Device().Fail(prm.InitialSegHealthFWInternalErr)
	select {
	case <-a.ch.Failed():
	case <-time.After(hangGuard):
		t.Fatal("health monitoring did not notice the failure")
	}
	if err := a.ch.Exec(cmd(prm.CmdOpQueryVportState, 16), make([]byte, 16)); !errors.Is(err, vfioch.ErrDeviceFailed) || !strings.Contains(err.Error(), "QUERY_VPORT_STATE") {
		t.Errorf("command on the failed port: %v", err)
	}
	if err := a.ch.Close(); err != nil {
		t.Fatalf("close of the failed port: %v", err)
	}
	if n := a.f.LeftMapped(); n != 0 {
		t.Errorf("failed port: %d mappings left", n)
	}
	if err := b.ch.Exec(cmd(prm.CmdOpQueryVportState, 16), make([]byte, 16)); err != nil || b.ch.Health() != nil {
		t.Fatalf("the other port: %v, health %v", err, b.ch.Health())
	}
	closeClean(t, b.ch, b.f)
	checkCommands(t, b.f)
}
