package model_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/daqiri-go/daqiri/mlx5/model"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// createUMEM registers npages fresh 4 KiB pages as a UMEM (CREATE_UMEM: umem, mtt) with the
// given uid and returns its id and the I/O address of its first byte.
func (r *ready) createUMEM(npages int, uid uint16) (uint32, uint64) {
	r.t.Helper()
	base := r.alloc(npages*4096, 4096)
	ub := prm.CreateUMEMIn.UMEM.Off
	b := in(prm.CmdOpCreateUMEM, 0, int(prm.UMEM.Mtt.At(ub+uint32(npages-1)*64).End()/8), prm.UMEM.NumOfMtt.At(ub), npages, prm.CreateUMEMIn.UID, int(uid))
	for i := range npages {
		prm.UMEM.Mtt.At(ub+uint32(i)*64).Set(b, base+uint64(i)*4096)
	}
	return uint32(get(r.mustCmd(b, 16), prm.CreateUMEMOut.UMEMID)), base
}

// umemCQIn is a CREATE_CQ of 64 CQEs whose ring is at off in UMEM id and whose doorbell
// record is at dbrOff in UMEM dbr.
func (r *ready) umemCQIn(id uint32, off uint64, dbr uint32, dbrOff uint64) []byte {
	q := prm.CQC
	b := r.cqIn(6, q.DbrUMEMValid, 1, q.DbrUMEMID, dbr, q.DbrAddr, dbrOff)
	prm.CreateCQIn.CQUMEMValid.Set(b, 1)
	prm.CreateCQIn.CQUMEMID.Set(b, uint64(id))
	prm.CreateCQIn.CQUMEMOffset.Set(b, off)
	return b
}

// TestUMEMQueuesAndKeys: a CQ, an RQ and an SQ whose rings and doorbell records live in a
// UMEM (cq_umem_*, wq_umem_*, dbr_umem_*; DPDK mlx5_prm.h) and an MKEY over a second UMEM
// (mkey_umem_*) receive a frame end to end — the CQE lands in the UMEM's pages, the frame
// in the key's — and the firmware-like checks refuse unknown and foreign UMEMs, ranges past
// the UMEM, misaligned offsets, and destroying a UMEM in use.
func TestUMEMQueuesAndKeys(t *testing.T) {
	r := newReady(t, model.Config{})
	qid, qbase := r.createUMEM(4, 0) // CQ ring page 0, RQ ring page 1, SQ ring page 2, doorbells page 3
	did, dbase := r.createUMEM(2, 0) // packet buffers, through a key

	cqIn := r.umemCQIn(qid, 0, qid, 0x3000)
	cqn := uint32(get(r.mustCmd(cqIn, 16), prm.CreateCQOut.CQN))
	for i := range 64 {
		prm.CQE64.OpOwn.Set(r.at(qbase+uint64(i)*64, 64), uint64(prm.CQEOpInvalid)<<4|1)
	}
	w := prm.WQ
	rqIn := r.rqIn(cqn, nil, kv{w.WQUMEMValid, 1, w.WQUMEMID, qid, w.WQUMEMOffset, 0x1000, w.DbrUMEMValid, 1, w.DbrUMEMID, qid, w.DbrAddr, 0x3040})
	rq := uint32(get(r.mustCmd(rqIn, 16), prm.CreateRQOut.RQN))
	if err := r.modifyQueue(prm.CmdOpModifyRQ, rq, prm.RQStateRST, prm.RQStateRDY); err != nil {
		t.Fatal(err)
	}
	sqIn := r.sqIn(cqn, r.createTIS(), nil, kv{w.WQUMEMValid, 1, w.WQUMEMID, qid, w.WQUMEMOffset, 0x2000, w.DbrUMEMValid, 1, w.DbrUMEMID, qid, w.DbrAddr, 0x3080})
	sq := uint32(get(r.mustCmd(sqIn, 16), prm.CreateSQOut.SQN))

	// A key over the data UMEM at virtual address 0x7000_0000, from offset 0x100 of the UMEM.
	const va = 0x7000_0000
	mb := prm.CreateMKeyIn.MemoryKeyMKeyEntry.Off
	k := prm.MKC
	mkIn := func(off, length uint64, mode int, umem uint32) []byte {
		return in(prm.CmdOpCreateMKey, 0, prm.CreateMKeyIn.KlmPASMtt.ByteOff(), append(withCtx(mb, kv{
			k.AccessMode10, mode, k.Lr, 1, k.Lw, 1, k.PD, r.pd, k.QPN, 0xffffff, k.MKey70, 0x11,
			k.StartAddr, uint64(va), k.Len, length}), prm.CreateMKeyIn.MKeyUMEMValid, 1, prm.CreateMKeyIn.MKeyUMEMID, umem, prm.CreateMKeyIn.MKeyUMEMOffset, off)...)
	}
	key := uint32(get(r.mustCmd(mkIn(0x100, 0x1f00, prm.MKeyAccessMTT, did), 16), prm.CreateMKeyOut.MKeyIndex))<<8 | 0x11

	// One receive WQE: 1 KiB at va+0xec0 (data UMEM offset 0xfc0): the frame crosses into
	// the UMEM's second page, which follows the first in I/O address space.
	seg := r.at(qbase+0x1000, 16)
	prm.WQEData.ByteCount.Set(seg, 1024)
	prm.WQEData.LKey.Set(seg, uint64(key))
	prm.WQEData.Addr.Set(seg, va+0xec0)
	binary.BigEndian.PutUint32(r.at(qbase+0x3040+4*prm.RcvDBR, 4), 1)
	tir := get(r.mustCmd(in(prm.CmdOpCreateTIR, 0, int(prm.CreateTIRIn.Ctx.End()/8),
		prm.TIRC.TransportDomain.At(prm.CreateTIRIn.Ctx.Off), r.td, prm.TIRC.InlineRQN.At(prm.CreateTIRIn.Ctx.Off), rq), 16), prm.CreateTIROut.TIRN)
	fb := prm.CreateFlowTableIn.FlowTableContext.Off
	ft := get(r.mustCmd(in(prm.CmdOpCreateFlowTable, 0, int(prm.CreateFlowTableIn.FlowTableContext.End()/8), prm.FlowTableContext.LogSize.At(fb), 1), 16), prm.CreateFlowTableOut.TableID)
	fg := get(r.mustCmd(in(prm.CmdOpCreateFlowGroup, 0, int(prm.CreateFlowGroupIn.MatchCriteria.End()/8), prm.CreateFlowGroupIn.TableID, ft), 16), prm.CreateFlowGroupOut.GroupID)
	cb := prm.SetFTEIn.FlowContext.Off
	fc := prm.FlowContext
	r.mustCmd(in(prm.CmdOpSetFlowTableEntry, 0, int(fc.Destination.At(cb).End()/8), prm.SetFTEIn.TableID, ft,
		fc.GroupID.At(cb), fg, fc.Action.At(cb), prm.FlowActionFwdDest, fc.DestinationListSize.At(cb), 1,
		prm.DestFormatStruct.DestinationType.At(cb+fc.Destination.Off), prm.FlowDestTIR, prm.DestFormatStruct.DestinationID.At(cb+fc.Destination.Off), tir), 16)
	r.mustCmd(in(prm.CmdOpSetFlowTableRoot, 0, 0x40, prm.SetFlowTableRootIn.TableID, ft), 16)

	frame := make([]byte, 100)
	copy(frame, []byte{0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x88, 0xb5})
	for i := 14; i < len(frame); i++ {
		frame[i] = byte(i * 7)
	}
	r.d.Receive(frame)
	for i := 0; r.d.Step(64) > 0; i++ {
		if i == 100 {
			t.Fatal("device still busy after 100 steps")
		}
	}
	e := r.at(qbase, 64) // the CQ's first CQE, in the UMEM's first page
	if op := prm.CQE64.OpOwn.Get(e) >> 4; op != prm.CQEOpRespSend || prm.CQE64.ByteCnt.Get(e) != uint64(len(frame)) {
		t.Fatalf("CQE in the UMEM: opcode %d, %d bytes; want %d, %d", op, prm.CQE64.ByteCnt.Get(e), prm.CQEOpRespSend, len(frame))
	}
	if got := r.at(dbase+0xfc0, len(frame)); !bytes.Equal(got, frame) {
		t.Fatal("the frame is not where the UMEM key puts va+0xec0")
	}

	// Errors.
	status := func(what string, b []byte, want prm.Status) {
		t.Helper()
		t.Log(what)
		r.wantStatus(b, 16, want)
	}
	status("CQ on an unknown UMEM", r.umemCQIn(999, 0, qid, 0x3100), prm.StatusBadResErr)
	status("CQ doorbell in an unknown UMEM", r.umemCQIn(qid, 0, 999, 0x3100), prm.StatusBadResErr)
	status("CQ ring past the UMEM", r.umemCQIn(qid, 0x3040, qid, 0x3100), prm.StatusBadParamErr)
	status("CQ ring offset not 64-byte aligned", r.umemCQIn(qid, 0x20, qid, 0x3100), prm.StatusBadParamErr)
	status("CQ doorbell past the UMEM", r.umemCQIn(qid, 0, qid, 0x4000), prm.StatusBadParamErr)
	status("CQ doorbell not 8-byte aligned", r.umemCQIn(qid, 0, qid, 0x3104), prm.StatusBadParamErr)
	status("RQ ring past the UMEM", r.rqIn(cqn, nil, kv{w.WQUMEMValid, 1, w.WQUMEMID, qid, w.WQUMEMOffset, 0x3e00}), prm.StatusBadParamErr)
	status("SQ on an unknown UMEM", r.sqIn(cqn, r.createTIS(), nil, kv{w.WQUMEMValid, 1, w.WQUMEMID, 12345}), prm.StatusBadResErr)
	status("key past the UMEM", mkIn(0x100, 0x2000, prm.MKeyAccessMTT, did), prm.StatusBadParamErr)
	status("key over a UMEM in PA mode", mkIn(0, 0x100, prm.MKeyAccessPA, did), prm.StatusBadParamErr)
	status("key over an unknown UMEM", mkIn(0, 0x100, prm.MKeyAccessMTT, 777), prm.StatusBadResErr)
	foreign, _ := r.createUMEM(1, 7)
	cq7 := r.umemCQIn(foreign, 0, qid, 0x3100)
	prm.CreateCQIn.UID.Set(cq7, 9)
	status("CQ of uid 9 on uid 7's UMEM", cq7, prm.StatusBadResErr)

	// A UMEM in use is busy until its users are gone; then it can be destroyed.
	destroyUMEM := func(id uint32) []byte { return in(prm.CmdOpDestroyUMEM, 0, 16, prm.DestroyUMEMIn.UMEMID, id) }
	status("destroying a UMEM under queues", destroyUMEM(qid), prm.StatusResBusy)
	status("destroying a UMEM under a key", destroyUMEM(did), prm.StatusResBusy)
	r.mustCmd(in(prm.CmdOpDestroyMKey, 0, 16, prm.DestroyMKeyIn.MKeyIndex, key>>8), 16)
	r.mustCmd(destroyUMEM(did), 16)
	r.mustCmd(in(prm.CmdOpDestroySQ, 0, 16, prm.DestroySQIn.SQN, sq), 16)
	status("destroying a UMEM under an RQ and a CQ", destroyUMEM(qid), prm.StatusResBusy)
	tmp, _ := r.createUMEM(2, 0)
	tcq := uint32(get(r.mustCmd(r.umemCQIn(tmp, 0, tmp, 0x1000), 16), prm.CreateCQOut.CQN))
	status("destroying a UMEM under a CQ", destroyUMEM(tmp), prm.StatusResBusy)
	r.mustCmd(in(prm.CmdOpDestroyCQ, 0, 16, prm.DestroyCQIn.CQN, tcq), 16)
	r.mustCmd(destroyUMEM(tmp), 16)
}
