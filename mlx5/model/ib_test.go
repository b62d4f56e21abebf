package model_test

import (
	"testing"

	"github.com/daqiri-go/daqiri/mlx5/model"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// The objects of ib.go, at the places mlx5_ifc.h puts their numbers.
var (
	ibNumOut = prm.Field{Layout: "create_qp_out", Name: "qpn", Off: 0x48, Width: 24}
	ibNumIn  = prm.Field{Layout: "destroy_qp_in", Name: "qpn", Off: 0x48, Width: 24}
	uctxOut  = prm.Field{Layout: "create_uctx_out", Name: "uid", Off: 0x50, Width: 16}
	uctxIn   = prm.Field{Layout: "destroy_uctx_in", Name: "uid", Off: 0x50, Width: 16}
)

// TestIBProbeObjects replays what Linux 6.1's mlx5_ib creates at probe on an Ethernet port
// without RoCE (raw_eth_profile): the capabilities it gates on, two XRC domains, an XRC SRQ
// and an RMP (mlx5_ib_dev_res_init), the UMR QP moved to RTS (mlx5r_umr_resource_init), the
// whitelist user context (mlx5_ib_devx_init) and a DevX user context whose uid then owns
// what it creates; and the refusals: unknown numbers, another uid's objects, a user context
// made by a non-zero uid.
func TestIBProbeObjects(t *testing.T) {
	r := newReady(t, model.Config{})
	caps := r.mustCmd(in(prm.CmdOpQueryHCACap, uint16(prm.CapTypeGeneral)<<1|prm.CapOpModCur, 16), 16+4096)[16:]
	g := prm.CmdHCACap
	for _, f := range []prm.Field{g.XRC, g.LogMaxXRCD, g.LogMaxSRQ, g.LogMaxQP, g.LogMaxUctx, g.UmrModifyEntitySizeDisabled} {
		if f.Get(caps) == 0 {
			t.Errorf("capability %s is 0; mlx5_ib needs it", f.Name)
		}
	}
	const (
		createQP, destroyQP         = prm.CmdOp(0x500), prm.CmdOp(0x501)
		rst2init, init2rtr, rtr2rts = prm.CmdOp(0x502), prm.CmdOp(0x503), prm.CmdOp(0x504)
		toRST                       = prm.CmdOp(0x50a)
		createXRCSRQ, destroyXRCSRQ = prm.CmdOp(0x705), prm.CmdOp(0x706)
		allocXRCD, deallocXRCD      = prm.CmdOp(0x80e), prm.CmdOp(0x80f)
		createRMP, destroyRMP       = prm.CmdOp(0x90c), prm.CmdOp(0x90e)
	)
	mk := func(op prm.CmdOp, uid uint16) uint32 {
		return uint32(get(r.mustCmd(in(op, 0, 0x40, prm.GeneralObjInCmdHdr.UID, int(uid)), 16), ibNumOut))
	}
	x0, x1 := mk(allocXRCD, 0), mk(allocXRCD, 0)
	if x0 == x1 {
		t.Fatalf("two XRC domains numbered %d", x0)
	}
	srq, rmp, qp := mk(createXRCSRQ, 0), mk(createRMP, 0), mk(createQP, 0)
	// mlx5_ib keeps all SRQs in one table by number.
	if srq == rmp {
		t.Fatalf("an XRC SRQ and an RMP both numbered %d", srq)
	}
	r.wantStatus(in(destroyXRCSRQ, 0, 0x40, ibNumIn, rmp), 16, prm.StatusBadResErr)
	// The P_Key table of an Ethernet port: 0xffff at index 0 (one entry, or the whole table).
	pkey := func(i uint64, n int) []byte {
		return r.mustCmd(in(prm.CmdOp(0x765), 0, 16, prm.Field{Off: 0x70, Width: 16}, i), 16+4*n)
	}
	if out := pkey(0, 1); out[18] != 0xff || out[19] != 0xff {
		t.Errorf("P_Key 0 = % x", out[16:])
	}
	if out := pkey(0xffff, 4); out[18] != 0xff || out[19] != 0xff || out[22] != 0 || out[23] != 0 {
		t.Errorf("P_Key table = % x", out[16:])
	}
	if out := pkey(5, 1); out[18] != 0 || out[19] != 0 {
		t.Errorf("P_Key 5 = % x", out[16:])
	}
	for _, op := range []prm.CmdOp{rst2init, init2rtr, rtr2rts} {
		r.mustCmd(in(op, 0, 0x40, ibNumIn, qp), 16)
	}
	r.wantStatus(in(rst2init, 0, 0x40, ibNumIn, qp+100), 16, prm.StatusBadResErr)

	// A DevX user context: its uid owns its objects, and no other uid may touch them.
	uid := uint16(get(r.mustCmd(in(prm.CmdOpCreateUctx, 0, 0x40), 16), uctxOut))
	uid2 := uint16(get(r.mustCmd(in(prm.CmdOpCreateUctx, 0, 0x40), 16), uctxOut))
	if uid == 0 || uid == uid2 || uid == prm.SharedResourceUID {
		t.Fatalf("user contexts got uids %d and %d", uid, uid2)
	}
	r.wantStatus(in(prm.CmdOpCreateUctx, 0, 0x40, prm.GeneralObjInCmdHdr.UID, int(uid)), 16, prm.StatusBadParamErr)
	uqp := mk(createQP, uid)
	r.wantStatus(in(destroyQP, 0, 0x40, ibNumIn, uqp, prm.GeneralObjInCmdHdr.UID, int(uid2)), 16, prm.StatusBadResErr)
	r.wantStatus(in(init2rtr, 0, 0x40, ibNumIn, uqp, prm.GeneralObjInCmdHdr.UID, int(uid2)), 16, prm.StatusBadResErr)
	r.mustCmd(in(rst2init, 0, 0x40, ibNumIn, uqp, prm.GeneralObjInCmdHdr.UID, int(uid)), 16)
	r.mustCmd(in(destroyQP, 0, 0x40, ibNumIn, uqp, prm.GeneralObjInCmdHdr.UID, int(uid)), 16)
	r.mustCmd(in(prm.CmdOpDestroyUctx, 0, 0x40, uctxIn, int(uid)), 16)
	r.wantStatus(in(prm.CmdOpDestroyUctx, 0, 0x40, uctxIn, int(uid)), 16, prm.StatusBadResErr)
	r.mustCmd(in(prm.CmdOpDestroyUctx, 0, 0x40, uctxIn, int(uid2)), 16)

	// Teardown, as mlx5_ib's cleanup stages do it; a second destroy finds nothing.
	r.mustCmd(in(toRST, 0, 0x40, ibNumIn, qp), 16)
	for _, c := range []struct {
		op prm.CmdOp
		n  uint32
	}{{destroyQP, qp}, {destroyRMP, rmp}, {destroyXRCSRQ, srq}, {deallocXRCD, x1}, {deallocXRCD, x0}} {
		r.mustCmd(in(c.op, 0, 0x40, ibNumIn, c.n), 16)
		r.wantStatus(in(c.op, 0, 0x40, ibNumIn, c.n), 16, prm.StatusBadResErr)
	}
	// A short input names no object.
	r.wantStatus(in(destroyQP, 0, 8), 16, prm.StatusBadInpLenErr)
}
