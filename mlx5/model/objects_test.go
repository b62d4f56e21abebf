package model_test

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/daqiri-go/daqiri/mlx5/model"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// ready is a brought-up device with the objects every queue needs: a UAR, an EQ for
// completions, a PD and a transport domain. Its commands go through Exec (the DevX path);
// the command-queue path is covered by TestBringUpThroughCommandQueue.
type ready struct {
	*host
	uar, pd, td uint32
	eq          *eqRing
}

func newReady(t testing.TB, cfg model.Config) *ready { return newReadySize(t, cfg, 32<<20) }

func newReadySize(t testing.TB, cfg model.Config, memSize int) *ready {
	t.Helper()
	d := model.New(cfg)
	h := newHost(t, d, memSize)
	h.bringUp()
	r := &ready{host: h}
	r.uar = h.allocUAR()
	r.eq = h.createEQ(r.uar, 6, prm.EventTypeComp, prm.EventTypeCQError, prm.EventTypeCmd)
	r.pd = uint32(get(h.mustCmd(in(prm.CmdOpAllocPD, 0, 16), 16), prm.AllocPDOut.PD))
	r.td = uint32(get(h.mustCmd(in(prm.CmdOpAllocTransportDomain, 0, 16), 16), prm.AllocTransportDomainOut.TransportDomain))
	return r
}

// kv is a list of field, value pairs for in().
type kv = []any

// withCtx moves the fields of a context layout to the context's place in a command.
func withCtx(base uint32, pairs kv) kv {
	out := make(kv, 0, len(pairs))
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, pairs[i].(prm.Field).At(base), pairs[i+1])
	}
	return out
}

// cqIn is a CREATE_CQ of 1<<logSize CQEs in fresh pages, with extra cqc fields.
func (r *ready) cqIn(logSize int, extra ...any) []byte {
	base := prm.CreateCQIn.CQContext.Off
	bytes := 64 << logSize
	npages := (bytes + 4095) / 4096
	if logSize > 16 {
		npages = 1 // refused for its size before the pages are read
	}
	buf := r.alloc(npages*4096, 4096)
	dbr := r.alloc(64, 64)
	q := prm.CQC
	f := withCtx(base, append(kv{q.LogCQSize, logSize, q.UARPage, r.uar, q.CEQNOrApuElement, r.eq.n, q.DbrAddr, dbr}, extra...))
	b := in(prm.CmdOpCreateCQ, 0, prm.CreateCQIn.PAS.ByteOff()+8*npages, f...)
	for i := range npages {
		prm.CreateCQIn.PAS.At(uint32(i)*64).Set(b, buf+uint64(i)*4096)
	}
	return b
}

func (r *ready) createCQ(logSize int) uint32 {
	r.t.Helper()
	return uint32(get(r.mustCmd(r.cqIn(logSize), 16), prm.CreateCQOut.CQN))
}

// wqIn fills a create_rq_in or create_sq_in: ctx fields and the wq at ctx+wqOff.
func (r *ready) wqIn(op prm.CmdOp, ctxBase, wqOff uint32, logStride, logSize int, ctx kv, wq kv) []byte {
	bytes := 1 << (logStride + logSize)
	npages := (bytes + 4095) / 4096
	buf := r.alloc(npages*4096, 4096)
	dbr := r.alloc(64, 64)
	w := prm.WQ
	wqBase := ctxBase + wqOff
	f := append(withCtx(ctxBase, ctx), withCtx(wqBase, append(kv{w.WQType, prm.WQTypeCyclic, w.LogWQStride, logStride, w.LogWQSz, logSize, w.PD, r.pd, w.UARPage, r.uar, w.DbrAddr, dbr}, wq...))...)
	pas := w.PAS.At(wqBase)
	b := in(op, 0, pas.ByteOff()+8*npages, f...)
	for i := range npages {
		pas.At(uint32(i)*64).Set(b, buf+uint64(i)*4096)
	}
	return b
}

func (r *ready) rqIn(cqn uint32, ctx kv, wq kv) []byte {
	return r.wqIn(prm.CmdOpCreateRQ, prm.CreateRQIn.Ctx.Off, prm.RQC.WQ.Off, 4, 6, append(kv{prm.RQC.CQN, cqn}, ctx...), wq)
}

func (r *ready) createRQ(cqn uint32) uint32 {
	r.t.Helper()
	return uint32(get(r.mustCmd(r.rqIn(cqn, nil, nil), 16), prm.CreateRQOut.RQN))
}

func (r *ready) createTIS() uint32 {
	r.t.Helper()
	b := in(prm.CmdOpCreateTIS, 0, int(prm.CreateTISIn.Ctx.End()/8), prm.TISC.TransportDomain.At(prm.CreateTISIn.Ctx.Off), r.td)
	return uint32(get(r.mustCmd(b, 16), prm.CreateTISOut.TISN))
}

func (r *ready) sqIn(cqn, tisn uint32, ctx kv, wq kv) []byte {
	s := prm.SQC
	return r.wqIn(prm.CmdOpCreateSQ, prm.CreateSQIn.Ctx.Off, s.WQ.Off, 6, 6, append(kv{s.CQN, cqn, s.TISNum0, tisn, s.TISLstSz, 1}, ctx...), wq)
}

func (r *ready) modifyQueue(op prm.CmdOp, n uint32, cur, next int) error {
	var b []byte
	if op == prm.CmdOpModifyRQ {
		b = in(op, 0, int(prm.ModifyRQIn.Ctx.End()/8), prm.ModifyRQIn.RQN, n, prm.ModifyRQIn.RQState, cur, prm.RQC.State.At(prm.ModifyRQIn.Ctx.Off), next)
	} else {
		b = in(op, 0, int(prm.ModifySQIn.Ctx.End()/8), prm.ModifySQIn.SQN, n, prm.ModifySQIn.SQState, cur, prm.SQC.State.At(prm.ModifySQIn.Ctx.Off), next)
	}
	_, err := r.cmd(b, 16)
	return err
}

// TestSimpleObjects: ALLOC/DEALLOC of UAR, PD and transport domain (mlx5_ifc.h
// alloc_*_in/out), freeing twice is BAD_RES, a PD a key uses is busy.
func TestSimpleObjects(t *testing.T) {
	r := newReady(t, model.Config{})
	for _, c := range []struct {
		alloc, dealloc prm.CmdOp
		out, field     prm.Field
	}{
		{prm.CmdOpAllocUAR, prm.CmdOpDeallocUAR, prm.AllocUAROut.UAR, prm.DeallocUARIn.UAR},
		{prm.CmdOpAllocPD, prm.CmdOpDeallocPD, prm.AllocPDOut.PD, prm.DeallocPDIn.PD},
		{prm.CmdOpAllocTransportDomain, prm.CmdOpDeallocTransportDomain, prm.AllocTransportDomainOut.TransportDomain, prm.DeallocTransportDomainIn.TransportDomain},
	} {
		a := get(r.mustCmd(in(c.alloc, 0, 16), 16), c.out)
		b := get(r.mustCmd(in(c.alloc, 0, 16), 16), c.out)
		if a == b {
			t.Fatalf("%v gave %d twice", c.alloc, a)
		}
		r.mustCmd(in(c.dealloc, 0, 16, c.field, a), 16)
		r.wantStatus(in(c.dealloc, 0, 16, c.field, a), 16, prm.StatusBadResErr)
		r.mustCmd(in(c.dealloc, 0, 16, c.field, b), 16)
	}
	// A UAR goes even while a CQ rings its doorbells there (Linux frees a closing context's
	// objects in creation order, the UAR before its CQ); the CQ then goes too.
	uar := uint32(get(r.mustCmd(in(prm.CmdOpAllocUAR, 0, 16), 16), prm.AllocUAROut.UAR))
	cq := uint32(get(r.mustCmd(r.cqIn(4, prm.CQC.UARPage, uar), 16), prm.CreateCQOut.CQN))
	r.mustCmd(in(prm.CmdOpDeallocUAR, 0, 16, prm.DeallocUARIn.UAR, uar), 16)
	r.mustCmd(in(prm.CmdOpDestroyCQ, 0, 16, prm.DestroyCQIn.CQN, cq), 16)
	r.wantStatus(in(prm.CmdOpDeallocUAR, 0, 16, prm.DeallocUARIn.UAR, uar), 16, prm.StatusBadResErr)
	// A PD with a memory key is busy until the key goes.
	key := r.createMKeyPA(r.pd, r.base, uint64(len(r.mem)))
	r.wantStatus(in(prm.CmdOpDeallocPD, 0, 16, prm.DeallocPDIn.PD, r.pd), 16, prm.StatusResBusy)
	r.mustCmd(in(prm.CmdOpDestroyMKey, 0, 16, prm.DestroyMKeyIn.MKeyIndex, key>>8), 16)
	r.mustCmd(in(prm.CmdOpDeallocPD, 0, 16, prm.DeallocPDIn.PD, r.pd), 16)
	// Another uid cannot free what uid 0 allocated (kernel devx.c stamps uids).
	td := get(r.mustCmd(in(prm.CmdOpAllocTransportDomain, 0, 16), 16), prm.AllocTransportDomainOut.TransportDomain)
	r.wantStatus(in(prm.CmdOpDeallocTransportDomain, 0, 16, prm.DeallocTransportDomainIn.TransportDomain, td, prm.GeneralObjInCmdHdr.UID, 7), 16, prm.StatusBadResErr)
}

// createMKeyPA makes a physical-address key over [start, start+n) with local read/write and
// returns the key (index << 8 | variant 0x5a).
func (r *ready) createMKeyPA(pd uint32, start, n uint64) uint32 {
	r.t.Helper()
	base := prm.CreateMKeyIn.MemoryKeyMKeyEntry.Off
	k := prm.MKC
	b := in(prm.CmdOpCreateMKey, 0, prm.CreateMKeyIn.KlmPASMtt.ByteOff(), withCtx(base, kv{
		k.AccessMode10, prm.MKeyAccessPA, k.Lr, 1, k.Lw, 1, k.PD, pd, k.QPN, 0xffffff,
		k.MKey70, 0x5a, k.StartAddr, start, k.Len, n})...)
	idx := uint32(get(r.mustCmd(b, 16), prm.CreateMKeyOut.MKeyIndex))
	return idx<<8 | 0x5a
}

// TestMKeyAndUMEM: CREATE/QUERY/DESTROY_MKEY in PA and MTT modes (mlx5_ifc.h mkc,
// klm_pas_mtt), CREATE/DESTROY_UMEM (umem, mtt), and their errors.
func TestMKeyAndUMEM(t *testing.T) {
	r := newReady(t, model.Config{})
	key := r.createMKeyPA(r.pd, r.base+0x1000, 0x2000)
	out := r.mustCmd(in(prm.CmdOpQueryMKey, 0, 16, prm.QueryMKeyIn.MKeyIndex, key>>8), int(prm.QueryMKeyOut.MemoryKeyMKeyEntry.End()/8))
	qb := prm.QueryMKeyOut.MemoryKeyMKeyEntry.Off
	if get(out, prm.MKC.StartAddr.At(qb)) != r.base+0x1000 || get(out, prm.MKC.Len.At(qb)) != 0x2000 {
		t.Fatal("QUERY_MKEY does not return the context")
	}
	base := prm.CreateMKeyIn.MemoryKeyMKeyEntry.Off
	k := prm.MKC
	// MTT mode over two pages.
	p0, p1 := r.alloc(4096, 4096), r.alloc(4096, 4096)
	mtt := in(prm.CmdOpCreateMKey, 0, prm.CreateMKeyIn.KlmPASMtt.ByteOff()+16, withCtx(base, kv{
		k.AccessMode10, prm.MKeyAccessMTT, k.Lr, 1, k.PD, r.pd, k.StartAddr, 0x10000, k.Len, 0x2000,
		k.LogPageSize, 12, k.TranslationsOctwordSize, 1})...)
	setMTT(mtt, 0, p0)
	setMTT(mtt, 1, p1)
	r.mustCmd(mtt, 16)
	// Errors: unknown PD, unmapped MTT page, KLM mode (UMEM-backed keys: umem_test.go).
	r.wantStatus(in(prm.CmdOpCreateMKey, 0, prm.CreateMKeyIn.KlmPASMtt.ByteOff(), withCtx(base, kv{k.PD, 999})...), 16, prm.StatusBadResErr)
	setMTT(mtt, 1, 0x7000_0000)
	r.wantStatus(mtt, 16, prm.StatusBadParamErr)
	r.wantStatus(in(prm.CmdOpCreateMKey, 0, prm.CreateMKeyIn.KlmPASMtt.ByteOff(), withCtx(base, kv{k.PD, r.pd, k.AccessMode10, prm.MKeyAccessKLMs})...), 16, prm.StatusBadParamErr)
	r.mustCmd(in(prm.CmdOpDestroyMKey, 0, 16, prm.DestroyMKeyIn.MKeyIndex, key>>8), 16)
	r.wantStatus(in(prm.CmdOpDestroyMKey, 0, 16, prm.DestroyMKeyIn.MKeyIndex, key>>8), 16, prm.StatusBadResErr)
	r.wantStatus(in(prm.CmdOpQueryMKey, 0, 16, prm.QueryMKeyIn.MKeyIndex, key>>8), 0x100, prm.StatusBadResErr)

	// UMEM of two pages.
	ub := prm.CreateUMEMIn.UMEM.Off
	u := in(prm.CmdOpCreateUMEM, 0, int(prm.UMEM.Mtt.At(ub+64).End()/8), prm.UMEM.NumOfMtt.At(ub), 2,
		prm.UMEM.Mtt.At(ub), p0, prm.UMEM.Mtt.At(ub+64), p1)
	id := get(r.mustCmd(u, 16), prm.CreateUMEMOut.UMEMID)
	r.mustCmd(in(prm.CmdOpDestroyUMEM, 0, 16, prm.DestroyUMEMIn.UMEMID, id), 16)
	r.wantStatus(in(prm.CmdOpDestroyUMEM, 0, 16, prm.DestroyUMEMIn.UMEMID, id), 16, prm.StatusBadResErr)
	prm.UMEM.Mtt.At(ub+64).Set(u, p1+0x100) // not page aligned
	r.wantStatus(u, 16, prm.StatusBadParamErr)
	r.wantStatus(in(prm.CmdOpCreateUMEM, 0, int(prm.UMEM.Mtt.At(ub).End()/8), prm.UMEM.NumOfMtt.At(ub), 2), 16, prm.StatusBadInpLenErr)
}

// TestEQObject: CREATE/QUERY/DESTROY_EQ (mlx5_ifc.h eqc, event_bitmask), size and vector
// limits, unknown UAR, and an EQ with a CQ on it is busy.
func TestEQObject(t *testing.T) {
	r := newReady(t, model.Config{})
	eq := r.createEQ(r.uar, 5, prm.EventTypePortChange)
	out := r.mustCmd(in(prm.CmdOpQueryEQ, 0, 16, prm.QueryEQIn.EQNumber, eq.n), int(prm.QueryEQOut.EventBitmask.End()/8))
	qb := prm.QueryEQOut.EQContextEntry.Off
	if get(out, prm.EQC.LogEQSize.At(qb)) != 5 || get(out, prm.QueryEQOut.EventBitmask) != 1<<prm.EventTypePortChange {
		t.Fatal("QUERY_EQ does not return the context and bitmask")
	}
	base := prm.CreateEQIn.EQContextEntry.Off
	eqIn := func(extra ...any) []byte {
		return in(prm.CmdOpCreateEQ, 0, prm.CreateEQIn.PAS.ByteOff()+8, append(withCtx(base, kv{prm.EQC.LogEQSize, 2, prm.EQC.UARPage, r.uar}),
			append(kv{prm.CreateEQIn.PAS, r.alloc(4096, 4096)}, extra...)...)...)
	}
	r.wantStatus(eqIn(prm.EQC.LogEQSize.At(base), 23), 16, prm.StatusBadParamErr)
	r.wantStatus(eqIn(prm.EQC.UARPage.At(base), 200), 16, prm.StatusBadResErr)
	r.wantStatus(eqIn(prm.EQC.Intr.At(base), 64), 16, prm.StatusBadParamErr)
	r.wantStatus(eqIn(prm.CreateEQIn.PAS, 0x7000_0000), 16, prm.StatusBadParamErr)
	// The ready EQ carries a CQ: busy until the CQ goes.
	cq := r.createCQ(6)
	r.wantStatus(in(prm.CmdOpDestroyEQ, 0, 16, prm.DestroyEQIn.EQNumber, r.eq.n), 16, prm.StatusResBusy)
	r.mustCmd(in(prm.CmdOpDestroyCQ, 0, 16, prm.DestroyCQIn.CQN, cq), 16)
	r.mustCmd(in(prm.CmdOpDestroyEQ, 0, 16, prm.DestroyEQIn.EQNumber, r.eq.n), 16)
	r.mustCmd(in(prm.CmdOpDestroyEQ, 0, 16, prm.DestroyEQIn.EQNumber, eq.n), 16)
	r.wantStatus(in(prm.CmdOpDestroyEQ, 0, 16, prm.DestroyEQIn.EQNumber, eq.n), 16, prm.StatusBadResErr)
}

// TestCQObject: CREATE/QUERY/MODIFY/DESTROY_CQ (mlx5_ifc.h cqc, create_cq_in) and what
// firmware refuses: sizes beyond log_max_cq_sz, 128-byte CQEs (not modelled), an unknown EQ
// or UAR, unmapped or missing pages, and destroying a CQ a queue uses.
func TestCQObject(t *testing.T) {
	r := newReady(t, model.Config{})
	q := prm.CQC
	out := r.mustCmd(r.cqIn(6, q.CQECompEn, 1, q.MiniCQEResFormat, prm.MiniCQEFormatCsumStrIdx, q.CQECompressionLayout, prm.CQECompLayoutEnhanced), 16)
	cq := uint32(get(out, prm.CreateCQOut.CQN))
	qo := r.mustCmd(in(prm.CmdOpQueryCQ, 0, 16, prm.QueryCQIn.CQN, cq), int(prm.QueryCQOut.CQContext.End()/8))
	qb := prm.QueryCQOut.CQContext.Off
	if get(qo, q.LogCQSize.At(qb)) != 6 || get(qo, q.CEQNOrApuElement.At(qb)) != uint64(r.eq.n) ||
		get(qo, q.CQECompEn.At(qb)) != 1 || get(qo, q.MiniCQEResFormat.At(qb)) != prm.MiniCQEFormatCsumStrIdx ||
		get(qo, q.CQECompressionLayout.At(qb)) != prm.CQECompLayoutEnhanced || get(qo, q.UARPage.At(qb)) != uint64(r.uar) {
		t.Fatal("QUERY_CQ does not report the context")
	}
	mb := prm.ModifyCQIn.CQContext.Off
	r.mustCmd(in(prm.CmdOpModifyCQ, 0, int(prm.ModifyCQIn.CQContext.End()/8), prm.ModifyCQIn.CQN, cq,
		prm.ModifyCQIn.ModifyFieldSelectResizeFieldSelect, prm.CQModifyPeriod|prm.CQModifyCount,
		q.CQPeriod.At(mb), 16, q.CQMaxCount.At(mb), 32), 16)
	r.wantStatus(in(prm.CmdOpModifyCQ, 1, int(prm.ModifyCQIn.CQContext.End()/8), prm.ModifyCQIn.CQN, cq), 16, prm.StatusBadParamErr)

	base := prm.CreateCQIn.CQContext.Off
	r.wantStatus(r.cqIn(23), 16, prm.StatusBadParamErr)
	r.wantStatus(r.cqIn(6, q.CQESz, 1), 16, prm.StatusBadParamErr)
	r.wantStatus(r.cqIn(6, q.CEQNOrApuElement, 77), 16, prm.StatusBadResErr)
	r.wantStatus(r.cqIn(6, q.UARPage, 99), 16, prm.StatusBadResErr)
	r.wantStatus(r.cqIn(6, q.DbrAddr, 0x7000_0000), 16, prm.StatusBadParamErr)
	bad := r.cqIn(6)
	prm.CreateCQIn.PAS.Set(bad, 0x7000_0000)
	r.wantStatus(bad, 16, prm.StatusBadParamErr)
	r.wantStatus(r.cqIn(7)[:prm.CreateCQIn.PAS.ByteOff()+8], 16, prm.StatusBadInpLenErr) // 2 pages, 1 given
	r.wantStatus(r.cqIn(6)[:base/8+8], 16, prm.StatusBadInpLenErr)

	// A CQ with an RQ on it cannot go; after the RQ it can, once.
	rq := r.createRQ(cq)
	_, err := r.cmd(in(prm.CmdOpDestroyCQ, 0, 16, prm.DestroyCQIn.CQN, cq), 16)
	if err == nil {
		t.Fatal("DESTROY_CQ of a CQ an RQ uses succeeded")
	}
	r.mustCmd(in(prm.CmdOpDestroyRQ, 0, 16, prm.DestroyRQIn.RQN, rq), 16)
	r.mustCmd(in(prm.CmdOpDestroyCQ, 0, 16, prm.DestroyCQIn.CQN, cq), 16)
	r.wantStatus(in(prm.CmdOpDestroyCQ, 0, 16, prm.DestroyCQIn.CQN, cq), 16, prm.StatusBadResErr)
	r.wantStatus(in(prm.CmdOpQueryCQ, 0, 16, prm.QueryCQIn.CQN, cq), 0x300, prm.StatusBadResErr)
}

// TestRQObject: CREATE/MODIFY/QUERY/DESTROY_RQ, cyclic and striding (mlx5_ifc.h rqc, wq:
// log_wqe_num_of_strides and log_wqe_stride_size over the bases 9 and 6 of DPDK mlx5_devx.c),
// the RST→RDY→ERR→RST state machine (MLX5_RQC_STATE_*) and the errors.
func TestRQObject(t *testing.T) {
	r := newReady(t, model.Config{})
	cq := r.createCQ(8)
	rq := r.createRQ(cq)
	w := prm.WQ
	striding := get(r.mustCmd(r.rqIn(cq, nil, kv{w.WQType, prm.WQTypeCyclicStriding, w.LogWQENumOfStrides, 0, w.LogWQEStrideSize, 5}), 16), prm.CreateRQOut.RQN)

	query := func(n uint32) []byte {
		return r.mustCmd(in(prm.CmdOpQueryRQ, 0, 16, prm.QueryRQIn.RQN, n), int(prm.QueryRQOut.RQContext.End()/8))
	}
	qb := prm.QueryRQOut.RQContext.Off
	if o := query(rq); get(o, prm.RQC.State.At(qb)) != prm.RQStateRST || get(o, prm.RQC.CQN.At(qb)) != uint64(cq) {
		t.Fatal("QUERY_RQ after create")
	}
	if o := query(uint32(striding)); get(o, w.WQType.At(qb+prm.RQC.WQ.Off)) != prm.WQTypeCyclicStriding {
		t.Fatal("QUERY_RQ of the striding RQ")
	}
	if err := r.modifyQueue(prm.CmdOpModifyRQ, rq, prm.RQStateRST, prm.RQStateERR); err == nil {
		t.Fatal("RST→ERR accepted")
	}
	if err := r.modifyQueue(prm.CmdOpModifyRQ, rq, prm.RQStateRST, prm.RQStateRST); err != nil {
		t.Fatalf("MODIFY_RQ RST→RST (mlx5_ib's raw-packet QP RESET→INIT): %v", err)
	}
	if o := query(rq); get(o, prm.RQC.State.At(qb)) != prm.RQStateRST {
		t.Fatal("RST→RST left the RQ out of reset")
	}
	for _, s := range [][2]int{{prm.RQStateRST, prm.RQStateRDY}, {prm.RQStateRDY, prm.RQStateERR}, {prm.RQStateERR, prm.RQStateRST}, {prm.RQStateRST, prm.RQStateRDY}} {
		if err := r.modifyQueue(prm.CmdOpModifyRQ, rq, s[0], s[1]); err != nil {
			t.Fatalf("%d→%d: %v", s[0], s[1], err)
		}
	}
	if get(query(rq), prm.RQC.State.At(qb)) != prm.RQStateRDY {
		t.Fatal("RQ not ready after RST→RDY")
	}
	// A stale current state is refused by the datapath.
	if err := r.modifyQueue(prm.CmdOpModifyRQ, rq, prm.RQStateRST, prm.RQStateRDY); err == nil {
		t.Fatal("modify with a wrong current state accepted")
	}

	r.wantStatus(r.rqIn(cq, kv{prm.RQC.State, prm.RQStateRDY}, nil), 16, prm.StatusBadParamErr)
	r.wantStatus(r.rqIn(999, nil, nil), 16, prm.StatusBadResErr)
	r.wantStatus(r.rqIn(cq, nil, kv{w.PD, 999}), 16, prm.StatusBadResErr)
	r.wantStatus(r.rqIn(cq, nil, kv{w.WQType, 5}), 16, prm.StatusBadParamErr)
	r.wantStatus(r.rqIn(cq, nil, kv{w.WQType, prm.WQTypeCyclicStriding, w.LogWQENumOfStrides, 8}), 16, prm.StatusBadParamErr)
	r.wantStatus(r.rqIn(cq, nil, kv{w.LogWQSz, 17}), 16, prm.StatusBadParamErr)
	r.wantStatus(r.rqIn(cq, nil, kv{w.DbrAddr, r.base + 4}), 16, prm.StatusBadParamErr)
	r.wantStatus(r.rqIn(cq, kv{prm.RQC.MemRQType, 1}, nil), 16, prm.StatusBadParamErr)
	// Issue 32: SHAMPO is not modelled (its cap is 0), so an RQ asking for it is refused.
	r.wantStatus(r.rqIn(cq, nil, kv{w.WQType, prm.WQTypeCyclicStriding, w.LogWQENumOfStrides, 0, w.LogWQEStrideSize, 5, w.ShampoEnable, 1}), 16, prm.StatusBadParamErr)

	r.mustCmd(in(prm.CmdOpDestroyRQ, 0, 16, prm.DestroyRQIn.RQN, rq), 16)
	r.wantStatus(in(prm.CmdOpDestroyRQ, 0, 16, prm.DestroyRQIn.RQN, rq), 16, prm.StatusBadResErr)
	r.wantStatus(in(prm.CmdOpQueryRQ, 0, 16, prm.QueryRQIn.RQN, rq), 0x200, prm.StatusBadResErr)
}

// TestSQObject: CREATE/MODIFY/QUERY/DESTROY_SQ and TIS (mlx5_ifc.h sqc, tisc), with a pacing
// index (SET_RATE_LIMIT, qos caps) and the errors.
func TestSQObject(t *testing.T) {
	r := newReady(t, model.Config{})
	cq := r.createCQ(6)
	tis := r.createTIS()
	to := r.mustCmd(in(prm.CmdOpQueryTIS, 0, 16, prm.QueryTISIn.TISN, tis), int(prm.QueryTISOut.TISContext.End()/8))
	if get(to, prm.TISC.TransportDomain.At(prm.QueryTISOut.TISContext.Off)) != uint64(r.td) {
		t.Fatal("QUERY_TIS")
	}
	s := prm.SQC
	// Pacing index 3 at 10 Mb/s.
	pp := func(idx, rate int) []byte {
		return in(prm.CmdOpSetPPRateLimit, 0, int(prm.SetPPRateLimitIn.Ctx.End()/8), prm.SetPPRateLimitIn.RateLimitIndex, idx,
			prm.SetPPRateLimitContext.RateLimit.At(prm.SetPPRateLimitIn.Ctx.Off), rate)
	}
	r.wantStatus(r.sqIn(cq, tis, kv{s.PacketPacingRateLimitIndex, 3}, nil), 16, prm.StatusBadResErr)
	r.mustCmd(pp(3, 10_000), 16)
	r.wantStatus(pp(0, 10_000), 16, prm.StatusBadParamErr)
	r.wantStatus(pp(128, 10_000), 16, prm.StatusBadParamErr)
	r.wantStatus(pp(4, 200_000_000), 16, prm.StatusBadParamErr)
	sq := uint32(get(r.mustCmd(r.sqIn(cq, tis, kv{s.PacketPacingRateLimitIndex, 3, s.AllowMultiPktSendWQE, 1}, nil), 16), prm.CreateSQOut.SQN))
	// RST→RST, as mlx5_ib's raw-packet QP RESET→INIT sends it (Linux ≥ 5.9), is taken and
	// changes nothing; RST→ERR is not a transition.
	if err := r.modifyQueue(prm.CmdOpModifySQ, sq, prm.SQStateRST, prm.SQStateRST); err != nil {
		t.Fatalf("MODIFY_SQ RST→RST: %v", err)
	}
	if err := r.modifyQueue(prm.CmdOpModifySQ, sq, prm.SQStateRST, prm.SQStateERR); err == nil {
		t.Fatal("MODIFY_SQ RST→ERR accepted")
	}
	if err := r.modifyQueue(prm.CmdOpModifySQ, sq, prm.SQStateRST, prm.SQStateRDY); err != nil {
		t.Fatal(err)
	}
	so := r.mustCmd(in(prm.CmdOpQuerySQ, 0, 16, prm.QuerySQIn.SQN, sq), int(prm.QuerySQOut.SQContext.End()/8))
	qb := prm.QuerySQOut.SQContext.Off
	if get(so, s.State.At(qb)) != prm.SQStateRDY || get(so, s.TISNum0.At(qb)) != uint64(tis) ||
		get(so, s.PacketPacingRateLimitIndex.At(qb)) != 3 || get(so, s.AllowMultiPktSendWQE.At(qb)) != 1 {
		t.Fatal("QUERY_SQ does not report the context")
	}
	w := prm.WQ
	r.wantStatus(r.sqIn(cq, 999, nil, nil), 16, prm.StatusBadResErr)
	r.wantStatus(r.sqIn(999, tis, nil, nil), 16, prm.StatusBadResErr)
	r.wantStatus(r.sqIn(cq, tis, nil, kv{w.LogWQStride, 5}), 16, prm.StatusBadParamErr)
	r.wantStatus(r.sqIn(cq, tis, nil, kv{w.UARPage, 200}), 16, prm.StatusBadResErr)
	r.wantStatus(r.sqIn(cq, tis, kv{s.MinWQEInlineMode, 4}, nil), 16, prm.StatusBadParamErr)
	r.wantStatus(r.sqIn(cq, tis, kv{s.TISLstSz, 2}, nil), 16, prm.StatusBadParamErr)
	// The TIS an SQ uses is busy; the SQ goes, then the TIS.
	if _, err := r.cmd(in(prm.CmdOpDestroyTIS, 0, 16, prm.DestroyTISIn.TISN, tis), 16); err == nil {
		t.Fatal("DESTROY_TIS of a TIS an SQ uses succeeded")
	}
	r.mustCmd(in(prm.CmdOpDestroySQ, 0, 16, prm.DestroySQIn.SQN, sq), 16)
	r.wantStatus(in(prm.CmdOpDestroySQ, 0, 16, prm.DestroySQIn.SQN, sq), 16, prm.StatusBadResErr)
	r.mustCmd(in(prm.CmdOpDestroyTIS, 0, 16, prm.DestroyTISIn.TISN, tis), 16)
	b := in(prm.CmdOpCreateTIS, 0, int(prm.CreateTISIn.Ctx.End()/8), prm.TISC.TransportDomain.At(prm.CreateTISIn.Ctx.Off), 999)
	r.wantStatus(b, 16, prm.StatusBadResErr)
}

// rqtIn is a CREATE_RQT (or the context of MODIFY_RQT) over rqns.
func rqtIn(op prm.CmdOp, ctx prm.Field, maxSize int, rqns []uint32, extra ...any) []byte {
	base := ctx.Off
	t := prm.RQTC
	n := int(t.RQNum.At(base+uint32(max(len(rqns), 1)-1)*32).End() / 8)
	b := in(op, 0, n, append(kv{t.RQTMaxSize.At(base), maxSize, t.RQTActualSize.At(base), len(rqns)}, extra...)...)
	for i, q := range rqns {
		prm.RQNum.RQNum.At(base+t.RQNum.Off+uint32(i)*32).Set(b, uint64(q))
	}
	return b
}

// TestRQTAndTIR: CREATE/MODIFY/QUERY/DESTROY_RQT (rqtc) and TIR (tirc: direct, and indirect
// with the Toeplitz key and field selectors), their references and errors.
func TestRQTAndTIR(t *testing.T) {
	r := newReady(t, model.Config{})
	cq := r.createCQ(6)
	rqs := []uint32{r.createRQ(cq), r.createRQ(cq), r.createRQ(cq)}
	rqt := uint32(get(r.mustCmd(rqtIn(prm.CmdOpCreateRQT, prm.CreateRQTIn.RQTContext, 4, rqs[:2]), 16), prm.CreateRQTOut.RQTN))
	r.mustCmd(rqtIn(prm.CmdOpModifyRQT, prm.ModifyRQTIn.Ctx, 4, rqs, prm.ModifyRQTIn.RQTN, rqt, prm.ModifyRQTIn.Bitmask, 1), 16)
	qo := r.mustCmd(in(prm.CmdOpQueryRQT, 0, 16, prm.QueryRQTIn.RQTN, rqt), 0x200)
	qb := prm.QueryRQTOut.RQTContext.Off
	if n := get(qo, prm.RQTC.RQTActualSize.At(qb)); n != 3 {
		t.Fatalf("QUERY_RQT: %d entries", n)
	}
	for i, q := range rqs {
		if got := get(qo, prm.RQNum.RQNum.At(qb+prm.RQTC.RQNum.Off+uint32(i)*32)); got != uint64(q) {
			t.Fatalf("QUERY_RQT entry %d: %d, want %d", i, got, q)
		}
	}
	if m := get(qo, prm.RQTC.RQTMaxSize.At(qb)); m != 4 {
		t.Fatalf("QUERY_RQT: rqt_max_size %d, want the 4 it was created with", m)
	}
	// MODIFY_RQT as en/rqt.c mlx5e_rqt_redirect sends it: rqt_max_size left 0, the size limit
	// the one of CREATE_RQT; a different non-zero one, or more entries than it, are refused.
	r.mustCmd(rqtIn(prm.CmdOpModifyRQT, prm.ModifyRQTIn.Ctx, 0, rqs[:1], prm.ModifyRQTIn.RQTN, rqt, prm.ModifyRQTIn.Bitmask, 1), 16)
	if n := get(r.mustCmd(in(prm.CmdOpQueryRQT, 0, 16, prm.QueryRQTIn.RQTN, rqt), 0x200), prm.RQTC.RQTActualSize.At(qb)); n != 1 {
		t.Fatalf("MODIFY_RQT without rqt_max_size: %d entries, want 1", n)
	}
	r.wantStatus(rqtIn(prm.CmdOpModifyRQT, prm.ModifyRQTIn.Ctx, 8, rqs, prm.ModifyRQTIn.RQTN, rqt, prm.ModifyRQTIn.Bitmask, 1), 16, prm.StatusBadParamErr)
	r.wantStatus(rqtIn(prm.CmdOpModifyRQT, prm.ModifyRQTIn.Ctx, 0, append(append([]uint32{}, rqs...), rqs...), prm.ModifyRQTIn.RQTN, rqt, prm.ModifyRQTIn.Bitmask, 1), 16, prm.StatusBadParamErr)
	r.wantStatus(rqtIn(prm.CmdOpCreateRQT, prm.CreateRQTIn.RQTContext, 4, []uint32{rqs[0], 999}), 16, prm.StatusBadResErr)
	r.wantStatus(rqtIn(prm.CmdOpCreateRQT, prm.CreateRQTIn.RQTContext, 2, rqs), 16, prm.StatusBadParamErr)
	r.wantStatus(rqtIn(prm.CmdOpCreateRQT, prm.CreateRQTIn.RQTContext, 1<<13, rqs), 16, prm.StatusBadParamErr)

	tb := prm.CreateTIRIn.Ctx.Off
	tc := prm.TIRC
	key := []byte{0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
		0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
		0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa} // Microsoft's RSS verification key
	tirIn := func(extra ...any) []byte {
		b := in(prm.CmdOpCreateTIR, 0, int(prm.CreateTIRIn.Ctx.End()/8), withCtx(tb, append(kv{tc.TransportDomain, r.td}, extra...))...)
		return b
	}
	direct := get(r.mustCmd(tirIn(tc.InlineRQN, rqs[0]), 16), prm.CreateTIROut.TIRN)
	ind := tirIn(tc.DispType, prm.TIRDispIndirect, tc.IndirectTable, rqt, tc.RXHashFn, prm.RXHashFnToeplitz)
	copy(ind[(tb+tc.RXHashToeplitzKey.Off)/8:], key)
	sel := tb + tc.RXHashFieldSelectorOuter.Off
	prm.RXHashFieldSelect.SelectedFields.At(sel).Set(ind, prm.HashFieldSrcIP|prm.HashFieldDstIP|prm.HashFieldL4SPort|prm.HashFieldL4DPort)
	prm.RXHashFieldSelect.L4ProtType.At(sel).Set(ind, prm.L4ProtUDP)
	indirect := get(r.mustCmd(ind, 16), prm.CreateTIROut.TIRN)
	to := r.mustCmd(in(prm.CmdOpQueryTIR, 0, 16, prm.QueryTIRIn.TIRN, indirect), int(prm.QueryTIROut.TIRContext.End()/8))
	ob := prm.QueryTIROut.TIRContext.Off
	if got := to[(ob+tc.RXHashToeplitzKey.Off)/8 : (ob+tc.RXHashToeplitzKey.Off)/8+40]; string(got) != string(key) {
		t.Fatalf("QUERY_TIR key % x", got)
	}
	if get(to, prm.RXHashFieldSelect.L4ProtType.At(ob+tc.RXHashFieldSelectorOuter.Off)) != prm.L4ProtUDP ||
		get(to, tc.IndirectTable.At(ob)) != uint64(rqt) || get(to, tc.DispType.At(ob)) != prm.TIRDispIndirect {
		t.Fatal("QUERY_TIR does not report the context")
	}
	// MODIFY_TIR: a new key and selector (bitmask bit 2, hash) in a context that holds only
	// the hash fields, as en/tir.c builds it; read back with the dispatch, the RQT and the
	// transport domain unchanged.
	mb := prm.ModifyTIRIn.Ctx.Off
	mod := in(prm.CmdOpModifyTIR, 0, int(prm.ModifyTIRIn.Ctx.End()/8), append(kv{prm.ModifyTIRIn.TIRN, indirect, prm.ModifyTIRIn.Bitmask, 1 << 2},
		withCtx(mb, kv{tc.RXHashFn, prm.RXHashFnToeplitz})...)...)
	key2 := bytes.Repeat([]byte{0xa5}, 40)
	copy(mod[(mb+tc.RXHashToeplitzKey.Off)/8:], key2)
	prm.RXHashFieldSelect.SelectedFields.At(mb+tc.RXHashFieldSelectorOuter.Off).Set(mod, prm.HashFieldSrcIP|prm.HashFieldDstIP)
	r.mustCmd(mod, 16)
	to = r.mustCmd(in(prm.CmdOpQueryTIR, 0, 16, prm.QueryTIRIn.TIRN, indirect), int(prm.QueryTIROut.TIRContext.End()/8))
	if got := to[(ob+tc.RXHashToeplitzKey.Off)/8 : (ob+tc.RXHashToeplitzKey.Off)/8+40]; !bytes.Equal(got, key2) ||
		get(to, prm.RXHashFieldSelect.SelectedFields.At(ob+tc.RXHashFieldSelectorOuter.Off)) != prm.HashFieldSrcIP|prm.HashFieldDstIP {
		t.Fatal("MODIFY_TIR did not take")
	}
	if get(to, tc.IndirectTable.At(ob)) != uint64(rqt) || get(to, tc.DispType.At(ob)) != prm.TIRDispIndirect ||
		get(to, tc.TransportDomain.At(ob)) != uint64(r.td) {
		t.Fatal("MODIFY_TIR hash changed fields outside the hash")
	}
	// self_lb_en alone with an otherwise empty context (en_common.c mlx5e_refresh_tirs), on
	// both TIRs: only self_lb_block changes.
	for _, tir := range []uint64{indirect, direct} {
		r.mustCmd(in(prm.CmdOpModifyTIR, 0, int(prm.ModifyTIRIn.Ctx.End()/8), prm.ModifyTIRIn.TIRN, tir,
			prm.ModifyTIRIn.Bitmask, 1<<4, tc.SelfLBBlock.At(mb), 3), 16)
		q := r.mustCmd(in(prm.CmdOpQueryTIR, 0, 16, prm.QueryTIRIn.TIRN, tir), int(prm.QueryTIROut.TIRContext.End()/8))
		if get(q, tc.SelfLBBlock.At(ob)) != 3 || get(q, tc.TransportDomain.At(ob)) != uint64(r.td) {
			t.Fatalf("MODIFY_TIR self_lb_en on TIR %d: self_lb_block %d, td %d", tir, get(q, tc.SelfLBBlock.At(ob)), get(q, tc.TransportDomain.At(ob)))
		}
	}
	if get(r.mustCmd(in(prm.CmdOpQueryTIR, 0, 16, prm.QueryTIRIn.TIRN, direct), int(prm.QueryTIROut.TIRContext.End()/8)), tc.InlineRQN.At(ob)) != uint64(rqs[0]) {
		t.Fatal("MODIFY_TIR self_lb_en changed the direct TIR's RQ")
	}
	modTIR := func(tir, mask uint64, extra ...any) []byte {
		return in(prm.CmdOpModifyTIR, 0, int(prm.ModifyTIRIn.Ctx.End()/8), append(kv{prm.ModifyTIRIn.TIRN, tir, prm.ModifyTIRIn.Bitmask, mask}, extra...)...)
	}
	r.wantStatus(modTIR(indirect, 1<<1), 16, prm.StatusBadParamErr)                                    // an unknown bitmask bit
	r.wantStatus(modTIR(direct, 1<<2), 16, prm.StatusBadParamErr)                                      // hash on a direct TIR
	r.wantStatus(modTIR(indirect, 1<<0, prm.TIRCPacketMergeMask.At(mb), 1), 16, prm.StatusBadParamErr) // LRO on
	r.mustCmd(modTIR(indirect, 1<<0), 16)                                                              // LRO off
	r.wantStatus(in(prm.CmdOpModifyTIR, 0, int(prm.ModifyTIRIn.Ctx.End()/8), prm.ModifyTIRIn.TIRN, 999, prm.ModifyTIRIn.Bitmask, 4), 16, prm.StatusBadResErr)
	r.wantStatus(tirIn(tc.InlineRQN, 999), 16, prm.StatusBadResErr)
	r.wantStatus(tirIn(tc.DispType, prm.TIRDispIndirect, tc.IndirectTable, 999), 16, prm.StatusBadResErr)
	r.wantStatus(tirIn(tc.DispType, 2), 16, prm.StatusBadParamErr)
	r.wantStatus(tirIn(tc.InlineRQN, rqs[0], tc.TransportDomain, 999), 16, prm.StatusBadResErr)
	// Transport domain 0 is none: a TIR in no domain is taken (DPDK's drop queue's TIR, made
	// before DPDK has a domain), reports 0, and leaves every domain free to go.
	nodom := get(r.mustCmd(tirIn(tc.InlineRQN, rqs[0], tc.TransportDomain, 0), 16), prm.CreateTIROut.TIRN)
	if q := r.mustCmd(in(prm.CmdOpQueryTIR, 0, 16, prm.QueryTIRIn.TIRN, nodom), int(prm.QueryTIROut.TIRContext.End()/8)); get(q, tc.TransportDomain.At(ob)) != 0 {
		t.Fatalf("QUERY_TIR of a TIR made with transport domain 0 reports %d", get(q, tc.TransportDomain.At(ob)))
	}
	r.mustCmd(in(prm.CmdOpDestroyTIR, 0, 16, prm.DestroyTIRIn.TIRN, nodom), 16)
	// The RQT a TIR uses is busy; TIRs go, then the RQT, then the TD is free.
	if _, err := r.cmd(in(prm.CmdOpDestroyRQT, 0, 16, prm.DestroyRQTIn.RQTN, rqt), 16); err == nil {
		t.Fatal("DESTROY_RQT under a TIR succeeded")
	}
	r.mustCmd(in(prm.CmdOpDestroyTIR, 0, 16, prm.DestroyTIRIn.TIRN, indirect), 16)
	r.mustCmd(in(prm.CmdOpDestroyTIR, 0, 16, prm.DestroyTIRIn.TIRN, direct), 16)
	r.wantStatus(in(prm.CmdOpDestroyTIR, 0, 16, prm.DestroyTIRIn.TIRN, direct), 16, prm.StatusBadResErr)
	r.mustCmd(in(prm.CmdOpDestroyRQT, 0, 16, prm.DestroyRQTIn.RQTN, rqt), 16)
	r.mustCmd(in(prm.CmdOpDeallocTransportDomain, 0, 16, prm.DeallocTransportDomainIn.TransportDomain, r.td), 16)
}

// TestSteeringObjects: flow tables, groups and entries (mlx5_ifc.h flow_table_context,
// create_flow_group_in, flow_context, dest_format_struct), flow counters, packet reformat
// contexts, and the errors firmware gives.
func TestSteeringObjects(t *testing.T) {
	r := newReady(t, model.Config{})
	cq := r.createCQ(6)
	rq := r.createRQ(cq)
	tir := get(r.mustCmd(in(prm.CmdOpCreateTIR, 0, int(prm.CreateTIRIn.Ctx.End()/8),
		prm.TIRC.TransportDomain.At(prm.CreateTIRIn.Ctx.Off), r.td, prm.TIRC.InlineRQN.At(prm.CreateTIRIn.Ctx.Off), rq), 16), prm.CreateTIROut.TIRN)
	fb := prm.CreateFlowTableIn.FlowTableContext.Off
	ftIn := func(extra ...any) []byte {
		return in(prm.CmdOpCreateFlowTable, 0, int(prm.CreateFlowTableIn.FlowTableContext.End()/8),
			append(kv{prm.CreateFlowTableIn.TableType, prm.FlowTableNICRX, prm.FlowTableContext.LogSize.At(fb), 4}, extra...)...)
	}
	ft := get(r.mustCmd(ftIn(), 16), prm.CreateFlowTableOut.TableID)
	r.mustCmd(in(prm.CmdOpSetFlowTableRoot, 0, int(prm.SetFlowTableRootIn.TableID.End()/8)+8, prm.SetFlowTableRootIn.TableID, ft), 16)
	fo := r.mustCmd(in(prm.CmdOpQueryFlowTable, 0, 0x40, prm.QueryFlowTableIn.TableID, ft), int(prm.QueryFlowTableOut.FlowTableContext.End()/8))
	if get(fo, prm.FlowTableContext.LogSize.At(prm.QueryFlowTableOut.FlowTableContext.Off)) != 4 {
		t.Fatal("QUERY_FLOW_TABLE")
	}
	r.wantStatus(ftIn(prm.CreateFlowTableIn.TableType, 4), 16, prm.StatusBadParamErr)
	r.wantStatus(ftIn(prm.FlowTableContext.LogSize.At(fb), 17), 16, prm.StatusBadParamErr)
	r.wantStatus(ftIn(prm.FlowTableContext.Level.At(fb), 64), 16, prm.StatusBadParamErr) // above max_ft_level 63
	r.wantStatus(ftIn(prm.FlowTableContext.TableMissAction.At(fb), prm.FlowTableMissFwd, prm.FlowTableContext.TableMissID.At(fb), 999), 16, prm.StatusBadResErr)

	// A group matching the outer destination UDP port.
	crit := prm.CreateFlowGroupIn.MatchCriteria.Off + prm.FTEMatchParam.OuterHeaders.Off
	fg := get(r.mustCmd(in(prm.CmdOpCreateFlowGroup, 0, int(prm.CreateFlowGroupIn.MatchCriteria.End()/8),
		prm.CreateFlowGroupIn.TableID, ft, prm.CreateFlowGroupIn.StartFlowIndex, 0, prm.CreateFlowGroupIn.EndFlowIndex, 7,
		prm.CreateFlowGroupIn.MatchCriteriaEnable, prm.MatchOuterHeaders, prm.FTEMatchSetLyr24.UDPDport.At(crit), 0xffff), 16), prm.CreateFlowGroupOut.GroupID)
	r.wantStatus(in(prm.CmdOpCreateFlowGroup, 0, int(prm.CreateFlowGroupIn.MatchCriteria.End()/8), prm.CreateFlowGroupIn.TableID, 999), 16, prm.StatusBadResErr)
	r.wantStatus(in(prm.CmdOpCreateFlowGroup, 0, int(prm.CreateFlowGroupIn.MatchCriteria.End()/8), prm.CreateFlowGroupIn.TableID, ft,
		prm.CreateFlowGroupIn.StartFlowIndex, 5, prm.CreateFlowGroupIn.EndFlowIndex, 4), 16, prm.StatusBadParamErr)

	counter := get(r.mustCmd(in(prm.CmdOpAllocFlowCounter, 0, 16), 16), prm.AllocFlowCounterOut.FlowCounterID)
	cb := prm.SetFTEIn.FlowContext.Off
	fc := prm.FlowContext
	fteIn := func(dests []uint64, extra ...any) []byte {
		// Entries packed 0x40 bits apart, as fs_cmd.c mlx5_cmd_set_fte sends them: the
		// kernel's input is set_fte_in plus 8 bytes per entry.
		n := int(fc.Destination.At(cb+uint32(len(dests)+1)*prm.DestEntryBits).Off / 8)
		b := in(prm.CmdOpSetFlowTableEntry, 0, n, append(kv{prm.SetFTEIn.TableID, ft, prm.SetFTEIn.FlowIndex, 2,
			fc.GroupID.At(cb), fg, fc.FlowTag.At(cb), 0x1234, fc.Action.At(cb), prm.FlowActionFwdDest | prm.FlowActionCount,
			fc.DestinationListSize.At(cb), len(dests), fc.FlowCounterListSize.At(cb), 1,
			prm.FTEMatchSetLyr24.UDPDport.At(cb + fc.MatchValue.Off), 4791}, extra...)...)
		for i, dst := range dests {
			db := cb + fc.Destination.Off + uint32(i)*prm.DestEntryBits
			prm.DestFormatStruct.DestinationType.At(db).Set(b, prm.FlowDestTIR)
			prm.DestFormatStruct.DestinationID.At(db).Set(b, dst)
		}
		prm.FlowCounterList.FlowCounterID.At(cb+fc.Destination.Off+uint32(len(dests))*prm.DestEntryBits).Set(b, counter)
		return b
	}
	r.mustCmd(fteIn([]uint64{tir}), 16)
	qo := r.mustCmd(in(prm.CmdOpQueryFlowTableEntry, 0, 0x40, prm.QueryFTEIn.TableID, ft, prm.QueryFTEIn.FlowIndex, 2), int(prm.QueryFTEOut.FlowContext.End()/8)+64)
	qb := prm.QueryFTEOut.FlowContext.Off
	if get(qo, fc.FlowTag.At(qb)) != 0x1234 || get(qo, prm.DestFormatStruct.DestinationID.At(qb+fc.Destination.Off)) != tir ||
		get(qo, prm.FTEMatchSetLyr24.UDPDport.At(qb+fc.MatchValue.Off)) != 4791 {
		t.Fatalf("QUERY_FLOW_TABLE_ENTRY does not report the entry: tag %#x dest %d port %d", get(qo, fc.FlowTag.At(qb)), get(qo, prm.DestFormatStruct.DestinationID.At(qb+fc.Destination.Off)), get(qo, prm.FTEMatchSetLyr24.UDPDport.At(qb+fc.MatchValue.Off)))
	}
	// Two destinations and the counter: the second TIR 8 bytes after the first, the counter
	// 8 bytes after it; QUERY reports them at the same places.
	tir2 := get(r.mustCmd(in(prm.CmdOpCreateTIR, 0, int(prm.CreateTIRIn.Ctx.End()/8), prm.TIRC.InlineRQN.At(prm.CreateTIRIn.Ctx.Off), rq,
		prm.TIRC.TransportDomain.At(prm.CreateTIRIn.Ctx.Off), r.td), 16), prm.CreateTIROut.TIRN)
	r.mustCmd(fteIn([]uint64{tir, tir2}, prm.SetFTEIn.FlowIndex, 4, prm.FTEMatchSetLyr24.UDPDport.At(cb+fc.MatchValue.Off), 4792), 16)
	qo = r.mustCmd(in(prm.CmdOpQueryFlowTableEntry, 0, 0x40, prm.QueryFTEIn.TableID, ft, prm.QueryFTEIn.FlowIndex, 4), int(prm.QueryFTEOut.FlowContext.End()/8)+64)
	d1 := qb + fc.Destination.Off + prm.DestEntryBits
	if get(qo, prm.DestFormatStruct.DestinationID.At(d1)) != tir2 || get(qo, prm.FlowCounterList.FlowCounterID.At(d1+prm.DestEntryBits)) != counter {
		t.Fatal("QUERY_FLOW_TABLE_ENTRY: the second destination or the counter is not 8 bytes after the one before")
	}
	r.mustCmd(in(prm.CmdOpDeleteFlowTableEntry, 0, 0x40, prm.DeleteFTEIn.TableID, ft, prm.DeleteFTEIn.FlowIndex, 4), 16)
	// extended_destination (per-destination reformat) is not modelled.
	r.wantStatus(fteIn([]uint64{tir}, prm.SetFTEIn.FlowIndex, 3, fc.ExtendedDestination.At(cb), 1), 16, prm.StatusBadParamErr)
	r.wantStatus(fteIn([]uint64{999}, prm.SetFTEIn.FlowIndex, 3), 16, prm.StatusBadResErr)
	r.wantStatus(fteIn(nil, prm.SetFTEIn.FlowIndex, 3), 16, prm.StatusBadParamErr)
	r.wantStatus(fteIn([]uint64{tir}, prm.SetFTEIn.FlowIndex, 3, fc.GroupID.At(cb), 999), 16, prm.StatusBadResErr)
	r.wantStatus(fteIn([]uint64{tir}, prm.SetFTEIn.TableType, 9), 16, prm.StatusBadParamErr)
	qc := r.mustCmd(in(prm.CmdOpQueryFlowCounter, 0, 0x20, prm.QueryFlowCounterIn.FlowCounterID, counter), int(prm.QueryFlowCounterOut.FlowStatistics.End()/8))
	if get(qc, prm.TrafficCounter.Packets.At(prm.QueryFlowCounterOut.FlowStatistics.Off)) != 0 {
		t.Fatal("a fresh flow counter counted packets")
	}

	// A group with an entry, a table with a group, are busy.
	if _, err := r.cmd(in(prm.CmdOpDestroyFlowGroup, 0, 0x40, prm.DestroyFlowGroupIn.TableID, ft, prm.DestroyFlowGroupIn.GroupID, fg), 16); err == nil {
		t.Fatal("DESTROY_FLOW_GROUP with an entry succeeded")
	}
	r.mustCmd(in(prm.CmdOpDeleteFlowTableEntry, 0, 0x40, prm.DeleteFTEIn.TableID, ft, prm.DeleteFTEIn.FlowIndex, 2), 16)
	r.mustCmd(in(prm.CmdOpDestroyFlowGroup, 0, 0x40, prm.DestroyFlowGroupIn.TableID, ft, prm.DestroyFlowGroupIn.GroupID, fg), 16)
	r.mustCmd(in(prm.CmdOpDeallocFlowCounter, 0, 16, prm.DeallocFlowCounterIn.FlowCounterID, counter), 16)
	r.wantStatus(in(prm.CmdOpDeallocFlowCounter, 0, 16, prm.DeallocFlowCounterIn.FlowCounterID, counter), 16, prm.StatusBadResErr)

	// Packet reformat: a 50-byte VXLAN header; size limits (max_encap_header_size) and types.
	rb := prm.AllocPacketReformatContextIn.PacketReformatContext.Off
	rc := prm.PacketReformatContextIn
	reformat := func(typ, size int) []byte {
		return in(prm.CmdOpAllocPacketReformatContext, 0, rc.ReformatData.At(rb).ByteOff()+size,
			rc.ReformatType.At(rb), typ, rc.ReformatDataSize.At(rb), size)
	}
	id := get(r.mustCmd(reformat(prm.ReformatL2ToVXLAN, 50), 16), prm.AllocPacketReformatContextOut.PacketReformatID)
	r.wantStatus(reformat(prm.ReformatL2ToVXLAN, 0), 16, prm.StatusBadParamErr)
	r.wantStatus(reformat(prm.ReformatL2ToVXLAN, 200), 16, prm.StatusBadParamErr)
	r.wantStatus(reformat(0x11, 16), 16, prm.StatusBadParamErr)
	r.wantStatus(reformat(prm.ReformatL2ToVXLAN, 50)[:rc.ReformatData.At(rb).ByteOff()+10], 16, prm.StatusBadInpLenErr)
	r.mustCmd(in(prm.CmdOpDeallocPacketReformatContext, 0, 16, prm.DeallocPacketReformatContextIn.PacketReformatID, id), 16)
	r.wantStatus(in(prm.CmdOpDeallocPacketReformatContext, 0, 16, prm.DeallocPacketReformatContextIn.PacketReformatID, id), 16, prm.StatusBadResErr)

	// The root table is busy until another table is the root.
	if _, err := r.cmd(in(prm.CmdOpDestroyFlowTable, 0, 0x40, prm.DestroyFlowTableIn.TableID, ft), 16); err == nil {
		t.Fatal("DESTROY_FLOW_TABLE of the root succeeded")
	}
	ft2 := get(r.mustCmd(ftIn(prm.FlowTableContext.Level.At(fb), 1), 16), prm.CreateFlowTableOut.TableID) // deeper: a miss goes down
	// MODIFY_FLOW_TABLE: the root's misses go to ft2 (modify_field_select miss table).
	mfb := prm.ModifyFlowTableIn.FlowTableContext.Off
	modFT := func(sel, action int, miss uint64) []byte {
		return in(prm.CmdOpModifyFlowTable, 0, int(prm.ModifyFlowTableIn.FlowTableContext.End()/8), prm.ModifyFlowTableIn.TableID, ft,
			prm.ModifyFlowTableIn.ModifyFieldSelect, sel, prm.FlowTableContext.TableMissAction.At(mfb), action, prm.FlowTableContext.TableMissID.At(mfb), miss)
	}
	r.mustCmd(modFT(prm.ModifyFlowTableMissTableID, prm.FlowTableMissFwd, ft2), 16)
	fo = r.mustCmd(in(prm.CmdOpQueryFlowTable, 0, 0x40, prm.QueryFlowTableIn.TableID, ft), int(prm.QueryFlowTableOut.FlowTableContext.End()/8))
	if qfb := prm.QueryFlowTableOut.FlowTableContext.Off; get(fo, prm.FlowTableContext.TableMissAction.At(qfb)) != prm.FlowTableMissFwd ||
		get(fo, prm.FlowTableContext.TableMissID.At(qfb)) != ft2 {
		t.Fatal("MODIFY_FLOW_TABLE did not take")
	}
	r.wantStatus(modFT(prm.ModifyFlowTableMissTableID, prm.FlowTableMissFwd, ft), 16, prm.StatusBadResErr)
	r.wantStatus(modFT(prm.ModifyFlowTableMissTableID, 7, 0), 16, prm.StatusBadParamErr)
	r.wantStatus(modFT(1<<15, prm.FlowTableMissDefault, 0), 16, prm.StatusBadParamErr)
	r.mustCmd(modFT(prm.ModifyFlowTableMissTableID, prm.FlowTableMissDefault, 0), 16)
	r.mustCmd(in(prm.CmdOpSetFlowTableRoot, 0, 0x40, prm.SetFlowTableRootIn.TableID, ft2), 16)
	r.mustCmd(in(prm.CmdOpDestroyFlowTable, 0, 0x40, prm.DestroyFlowTableIn.TableID, ft), 16)
	r.wantStatus(in(prm.CmdOpDestroyFlowTable, 0, 0x40, prm.DestroyFlowTableIn.TableID, ft), 16, prm.StatusBadResErr)

	// Q counters (out_of_buffer).
	qcn := get(r.mustCmd(in(prm.CmdOpAllocQCounter, 0, 16), 16), prm.AllocQCounterOut.CounterSetID)
	r.mustCmd(in(prm.CmdOpQueryQCounter, 0, 0x20, prm.QueryQCounterIn.CounterSetID, qcn), int(prm.QueryQCounterOut.OutOfBuffer.End()/8))
	r.mustCmd(in(prm.CmdOpDeallocQCounter, 0, 16, prm.DeallocQCounterIn.CounterSetID, qcn), 16)
	r.wantStatus(in(prm.CmdOpQueryQCounter, 0, 0x20, prm.QueryQCounterIn.CounterSetID, qcn), 0x100, prm.StatusBadResErr)
}

// TestTeardownForgetsObjects: after TEARDOWN_HCA and a new INIT_HCA every old number is gone.
func TestTeardownForgetsObjects(t *testing.T) {
	r := newReady(t, model.Config{})
	cq := r.createCQ(6)
	r.mustCmd(in(prm.CmdOpTeardownHCA, 0, 16, prm.TeardownHCAIn.Profile, prm.TeardownForce), 16)
	r.mustCmd(in(prm.CmdOpInitHCA, 0, 16), 16)
	r.wantStatus(in(prm.CmdOpQueryCQ, 0, 16, prm.QueryCQIn.CQN, cq), 0x300, prm.StatusBadResErr)
	r.wantStatus(in(prm.CmdOpDeallocPD, 0, 16, prm.DeallocPDIn.PD, r.pd), 16, prm.StatusBadResErr)
}

// TestCapabilities: QUERY_HCA_CAP max and current pages for each modelled type, SET_HCA_CAP
// only before INIT_HCA and only within the maximum (mlx5_ifc.h cmd_hca_cap; the fields
// mlx5_core's handle_hca_cap sets).
func TestCapabilities(t *testing.T) {
	d := model.New(model.Config{})
	h := newHost(t, d, 1<<20)
	h.mustCmd(in(prm.CmdOpEnableHCA, 0, 16), 16)
	capLen := int(prm.QueryHCACapOut.Capability.End() / 8)
	for _, c := range []prm.CapType{prm.CapTypeGeneral, prm.CapTypeEthernetOffloads, prm.CapTypeFlowTable, prm.CapTypeQoS, prm.CapTypeAtomic, prm.CapTypeDevMem} {
		h.mustCmd(in(prm.CmdOpQueryHCACap, uint16(c)<<1|prm.CapOpModMax, 16), capLen)
		h.mustCmd(in(prm.CmdOpQueryHCACap, uint16(c)<<1|prm.CapOpModCur, 16), capLen)
	}
	// The atomic and device-memory pages are answered (user space asks for them whatever
	// the general page says) and are all zeros, as the general page's atomic and
	// device_memory bits 0 say.
	if h.capability(prm.CapTypeGeneral, prm.CmdHCACap.Atomic) != 0 || h.capability(prm.CapTypeGeneral, prm.CmdHCACap.DeviceMemory) != 0 {
		t.Fatal("the general page reports atomic or device_memory")
	}
	for _, c := range []prm.CapType{prm.CapTypeAtomic, prm.CapTypeDevMem} {
		out := h.mustCmd(in(prm.CmdOpQueryHCACap, uint16(c)<<1|prm.CapOpModCur, 16), capLen)
		if page := prm.QueryHCACapOut.Capability.Slice(out); !bytes.Equal(page, make([]byte, len(page))) {
			t.Fatalf("the %v capability page is not all zeros: % x", c, page)
		}
	}
	h.wantStatus(in(prm.CmdOpQueryHCACap, 0x3f<<1, 16), capLen, prm.StatusBadParamErr)
	h.wantStatus(in(prm.CmdOpQueryHCACap, 0, 16), capLen-1, prm.StatusBadOutpLenErr)
	if v := h.capability(prm.CapTypeQoS, prm.QoSCap.PacketPacing); v != 1 {
		t.Fatalf("packet_pacing cap %d", v)
	}
	set := func(f prm.Field, v int) []byte {
		return in(prm.CmdOpSetHCACap, uint16(prm.CapTypeGeneral)<<1, int(prm.SetHCACapIn.Capability.End()/8), f.At(prm.SetHCACapIn.Capability.Off), v)
	}
	// log_max_qp above its maximum (8: mlx5_ib's QPs, ib.go) is refused; cache_line_128byte
	// (a flag) takes.
	h.wantStatus(set(prm.CmdHCACap.LogMaxQP, 9), 16, prm.StatusBadParamErr)
	h.mustCmd(set(prm.CmdHCACap.CacheLine128byte, 1), 16)
	if h.capability(prm.CapTypeGeneral, prm.CmdHCACap.CacheLine128byte) != 1 {
		t.Fatal("SET_HCA_CAP cache_line_128byte did not take")
	}
	h.bringUpRest()
	h.wantStatus(set(prm.CmdHCACap.CacheLine128byte, 0), 16, prm.StatusBadSysStateErr)
}

// TestNoInvalidLKey: no MKEY index the model hands out makes MLX5_INVALID_LKEY (0x100:
// index 1, key byte 0), which ends a receive scatter list; the kernel's mlx5e puts its
// first MKEY, key byte 0, in every RQ entry.
func TestNoInvalidLKey(t *testing.T) {
	r := newReady(t, model.Config{})
	for i := 0; i < 8; i++ {
		if key := r.createMKeyPA(r.pd, r.base, 0x1000); key>>8 == prm.InvalidLKey>>8 {
			t.Fatalf("MKEY index %d handed out: with key byte 0 it is MLX5_INVALID_LKEY", key>>8)
		}
	}
}

// TestMKeySpanningPage: a key whose one MTT page is far larger than the registered bytes,
// as rdma-core's VFIO provider builds them (mlx5_vfio_reg_mr: one page sized to span the
// buffer, only the buffer mapped in the IOMMU), is accepted; the covered bytes must be
// mapped, the rest of the page need not be; log_page_size 31 is accepted, 32 is not.
func TestMKeySpanningPage(t *testing.T) {
	r := newReady(t, model.Config{})
	base := prm.CreateMKeyIn.MemoryKeyMKeyEntry.Off
	k := prm.MKC
	const page = uint64(1) << 20
	iova := uint64(0x40_0000_0000)                        // a 1 MiB page of I/O space, nothing else near
	start, n := uint64(0x7f12_3456_3000), uint64(0x10000) // VA of the buffer: offset 0x56000 in its page
	off := start & (page - 1)
	buf := make([]byte, n)
	if err := r.d.DMA().Map(iova+off, buf, model.DMARead|model.DMAWrite); err != nil {
		t.Fatal(err)
	}
	key := func(shift, pa uint64) []byte {
		b := in(prm.CmdOpCreateMKey, 0, prm.CreateMKeyIn.KlmPASMtt.ByteOff()+16, withCtx(base, kv{
			k.AccessMode10, prm.MKeyAccessMTT, k.Lr, 1, k.Lw, 1, k.PD, r.pd, k.StartAddr, start, k.Len, n,
			k.LogPageSize, shift, k.TranslationsOctwordSize, 1})...)
		setMTT(b, 0, pa|3) // rd_en, wr_en as drivers set them (MLX5_MTT_PRESENT)
		return b
	}
	r.mustCmd(key(20, iova), 16)
	// The covered bytes not mapped: refused.
	r.wantStatus(key(20, iova+page), 16, prm.StatusBadParamErr)
	// 2 GiB pages are what the provider's cap allows; 4 GiB is beyond the PRM's.
	big := uint64(1) << 31
	if err := r.d.DMA().Map(0x80_0000_0000+(start&(big-1)), make([]byte, n), model.DMARead|model.DMAWrite); err != nil {
		t.Fatal(err)
	}
	r.mustCmd(key(31, 0x80_0000_0000), 16)
	r.wantStatus(key(32, 0x80_0000_0000), 16, prm.StatusBadParamErr)
}

// setMTT writes entry i of CREATE_MKEY's translation list: a 64-bit mlx5_ifc_mtt, big-endian
// (the address in ptag_63_32 and ptag_31_8), as drivers write them.
func setMTT(in []byte, i int, pa uint64) {
	binary.BigEndian.PutUint64(in[prm.CreateMKeyIn.KlmPASMtt.ByteOff()+8*i:], pa)
}

// TestKeysDirect holds keys.Direct to keys.Translate: on random ranges in, across and
// outside a PA key, for reads and writes, Direct gives the very bytes Translate gives when
// that succeeds (host memory, one mapping) and fails where it fails; Gen moves when a key is
// created or destroyed or a mapping added, and stays for a command that changes neither.
func TestKeysDirect(t *testing.T) {
	r := newReady(t, model.Config{})
	key := r.createMKeyPA(r.pd, r.base+0x1000, 0x3000)
	k := model.DeviceKeys(r.d)
	rng := rand.New(rand.NewPCG(31, 5))
	ok := 0
	for range 5000 {
		addr := r.base + uint64(rng.IntN(0x5000))
		n := rng.IntN(0x1800)
		perm := []model.DMAPerm{model.DMARead, model.DMAWrite}[rng.IntN(2)]
		lkey := key
		if rng.IntN(10) == 0 {
			lkey ^= 1 // the wrong variant
		}
		tb, terr := k.Translate(lkey, addr, n, perm)
		db, derr := k.Direct(lkey, addr, n, perm)
		if (terr == nil) != (derr == nil) {
			t.Fatalf("%d bytes at %#x (%v): Translate error %v, Direct error %v", n, addr, perm, terr, derr)
		}
		if terr != nil {
			continue
		}
		ok++
		if len(tb) != len(db) || (n > 0 && &tb[0] != &db[0]) {
			t.Fatalf("%d bytes at %#x (%v): Direct gives other bytes than Translate", n, addr, perm)
		}
	}
	if ok < 500 {
		t.Fatalf("only %d of 5000 ranges translated: the test misses its key", ok)
	}
	g := k.Gen()
	r.mustCmd(in(prm.CmdOpQueryMKey, 0, 16, prm.QueryMKeyIn.MKeyIndex, key>>8), int(prm.QueryMKeyOut.MemoryKeyMKeyEntry.End()/8))
	if k.Gen() != g {
		t.Fatal("QUERY_MKEY moved Gen")
	}
	other := r.createMKeyPA(r.pd, r.base, 0x1000)
	if g2 := k.Gen(); g2 == g {
		t.Fatal("CREATE_MKEY did not move Gen")
	} else {
		g = g2
	}
	r.mustCmd(in(prm.CmdOpDestroyMKey, 0, 16, prm.DestroyMKeyIn.MKeyIndex, other>>8), 16)
	if g2 := k.Gen(); g2 == g {
		t.Fatal("DESTROY_MKEY did not move Gen")
	} else {
		g = g2
	}
	if err := r.d.DMA().Map(0x90_0000_0000, make([]byte, 4096), model.DMARead|model.DMAWrite); err != nil {
		t.Fatal(err)
	}
	if k.Gen() == g {
		t.Fatal("a DMA mapping did not move Gen")
	}
}

// TestKeysSpan holds keys.Span to keys.Direct: a PA key's span starts at the key's start
// and every random range of it (reads and writes) is the very bytes Direct gives; a range
// Direct refuses lies outside the span; the wrong variant and a destroyed key have none.
func TestKeysSpan(t *testing.T) {
	r := newReady(t, model.Config{})
	start, size := r.base+0x1040, uint64(0x2f00)
	key := r.createMKeyPA(r.pd, start, size)
	k := model.DeviceKeys(r.d)
	rng := rand.New(rand.NewPCG(31, 56))
	for _, perm := range []model.DMAPerm{model.DMARead, model.DMAWrite} {
		s, mem, ok := k.Span(key, perm)
		if !ok || s != start || uint64(len(mem)) != size {
			t.Fatalf("Span(%v) = %#x, %d bytes, %v; want %#x, %d bytes", perm, s, len(mem), ok, start, size)
		}
		if _, _, ok := k.Span(key^1, perm); ok {
			t.Fatalf("Span(%v) of the wrong variant succeeds", perm)
		}
		hits := 0
		for range 3000 {
			addr := r.base + uint64(rng.IntN(0x5000))
			n := rng.IntN(0x1800)
			db, derr := k.Direct(key, addr, n, perm)
			inside := addr >= start && addr-start <= size && uint64(n) <= size-(addr-start)
			if (derr == nil) != inside {
				t.Fatalf("%d bytes at %#x (%v): Direct error %v, inside the span %v", n, addr, perm, derr, inside)
			}
			if derr != nil {
				continue
			}
			hits++
			if sb := mem[addr-start:][:n]; len(sb) != len(db) || (n > 0 && &sb[0] != &db[0]) {
				t.Fatalf("%d bytes at %#x (%v): the span gives other bytes than Direct", n, addr, perm)
			}
		}
		if hits < 300 {
			t.Fatalf("only %d of 3000 ranges inside the key: the test misses it", hits)
		}
	}
	r.mustCmd(in(prm.CmdOpDestroyMKey, 0, 16, prm.DestroyMKeyIn.MKeyIndex, key>>8), 16)
	if _, _, ok := k.Span(key, model.DMARead); ok {
		t.Fatal("a destroyed key still has a span")
	}
}
