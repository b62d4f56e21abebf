package model

import (
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// What the kernel's mlx5_ib creates at probe and for a DevX user context, kept as numbers
// only: the model has no RDMA transport, so these objects carry no traffic. Linux 6.1
// drivers/infiniband/hw/mlx5: mlx5_ib_dev_res_init (main.c) allocates two XRC domains, an
// XRC SRQ and a basic SRQ (CREATE_RMP when ISSI is 1, srq_cmd.c create_srq_split) and fails
// the probe without the xrc capability; mlx5r_umr_resource_init (umr.c) creates the UMR QP
// and moves it to RTS; mlx5_ib_devx_create (devx.c) makes a user context (CREATE_UCTX) for
// every DevX ucontext, whose uid the kernel then stamps on that context's commands.

// Every create output of these kinds has the number at bits 0x48..0x60 and every destroy
// or QP state change input names it there (mlx5_ifc.h alloc_xrcd_out.xrcd,
// create_xrc_srq_out.xrc_srqn, create_rmp_out.rmpn, create_qp_out.qpn and the matching
// *_in fields); a user context's uid is the 16 bits at 0x50 (create_uctx_out.uid,
// destroy_uctx_in.uid).
var (
	ibObjNumOut = prm.IBObject.QPNOut
	ibObjNumIn  = prm.IBObject.QPNIn
	uctxUIDOut  = prm.IBObject.UctxUIDOut
	uctxUIDIn   = prm.IBObject.UctxUIDIn
)

// ibObjects are the numbers of those kinds. XRC SRQs and RMPs share one space: mlx5_ib keeps
// every SRQ in one table by number (srq_cmd.c), and two SRQs of one number made its probe
// cleanup warn (conformance run with ib.go's first version).
type ibObjects struct {
	uctxs, xrcds, srqs, qps idSpace
	srqOp                   map[uint32]prm.CmdOp // SRQ number → the command that made it
}

func newIBObjects() ibObjects {
	const n24 = 1 << 24
	return ibObjects{
		// uid 0 is the kernel's and MLX5_SHARED_RESOURCE_UID is reserved.
		uctxs: newIDs("user context", 1, prm.SharedResourceUID),
		xrcds: newIDs("XRC domain", 1, n24), srqs: newIDs("SRQ", 1, n24),
		qps: newIDs("QP", 1, n24), srqOp: map[uint32]prm.CmdOp{},
	}
}

// ibHandler maps those opcodes to their handlers.
func ibHandler(op prm.CmdOp) handler {
	o := func(d *Device) *ibObjects { return &d.objs.ib }
	switch op {
	case prm.CmdOpCreateUctx:
		return (*Device).createUctx
	case prm.CmdOpDestroyUctx:
		return (*Device).destroyUctx
	case prm.CmdOpAllocXRCD:
		return ibCreate(func(d *Device) *idSpace { return &o(d).xrcds }, prm.CmdHCACap.LogMaxXRCD)
	case prm.CmdOpDeallocXRCD:
		return ibDestroy(func(d *Device) *idSpace { return &o(d).xrcds })
	case prm.CmdOpCreateXRCSRQ, prm.CmdOpCreateRMP:
		return (*Device).createSRQ
	case prm.CmdOpDestroyXRCSRQ:
		return destroySRQ(prm.CmdOpCreateXRCSRQ)
	case prm.CmdOpDestroyRMP:
		return destroySRQ(prm.CmdOpCreateRMP)
	case prm.CmdOpQueryHCAVportPkey:
		return (*Device).queryPkey
	case prm.CmdOpCreateQP:
		return ibCreate(func(d *Device) *idSpace { return &o(d).qps }, prm.CmdHCACap.LogMaxQP)
	case prm.CmdOpDestroyQP:
		return ibDestroy(func(d *Device) *idSpace { return &o(d).qps })
	case prm.CmdOpRST2INITQP, prm.CmdOpINIT2RTRQP, prm.CmdOpRTR2RTSQP, prm.CmdOpRTS2RTSQP, prm.CmdOpSQERR2RTSQP,
		prm.CmdOp2ERRQP, prm.CmdOp2RSTQP, prm.CmdOpINIT2INITQP:
		return (*Device).modifyQP
	}
	return generalObjHandler(op)
}

// ibCreate allocates a number of a kind, at most 1 << the cap limit of them.
func ibCreate(space func(*Device) *idSpace, limit prm.Field) handler {
	return func(d *Device, c *cmd) error {
		if err := c.need(nil, ibObjNumOut); err != nil {
			return err
		}
		n, err := space(d).alloc(c.uid, d.capLimit(limit))
		if err != nil {
			return err
		}
		c.set(ibObjNumOut, uint64(n))
		return nil
	}
}

// ibDestroy frees a number its creator (or uid 0) names.
func ibDestroy(space func(*Device) *idSpace) handler {
	return func(d *Device, c *cmd) error {
		return d.dealloc(c, ibObjNumIn, space(d), nil)
	}
}

// modifyQP takes a state change of an existing QP: the model keeps no QP state (it moves
// no RDMA traffic), so the change is only checked for the number.
func (d *Device) modifyQP(c *cmd) error {
	if err := c.need(ins(ibObjNumIn)); err != nil {
		return err
	}
	if n := uint32(c.get(ibObjNumIn)); !d.objs.ib.qps.owns(n, c.uid) {
		return noObject("%v: QP %d does not exist", c.op, n)
	}
	return nil
}

// createUctx makes a user context: a uid the kernel stamps on the context's commands. The
// cap bits (RAW_TX, INTERNAL_DEV_RES) are accepted as the uctx_cap capability (0) allows:
// none.
func (d *Device) createUctx(c *cmd) error {
	if err := c.need(nil, uctxUIDOut); err != nil {
		return err
	}
	if c.uid != 0 {
		return badParam("CREATE_UCTX with uid %d: only the function's owner makes user contexts", c.uid)
	}
	n, err := d.objs.ib.uctxs.alloc(0, d.capLimit(prm.CmdHCACap.LogMaxUctx))
	if err != nil {
		return err
	}
	c.set(uctxUIDOut, uint64(n))
	return nil
}

func (d *Device) destroyUctx(c *cmd) error {
	return d.dealloc(c, uctxUIDIn, &d.objs.ib.uctxs, nil)
}

func (d *Device) createSRQ(c *cmd) error {
	if err := ibCreate(func(d *Device) *idSpace { return &d.objs.ib.srqs }, prm.CmdHCACap.LogMaxSRQ)(d, c); err != nil {
		return err
	}
	d.objs.ib.srqOp[uint32(ibObjNumOut.Get(c.out))] = c.op
	return nil
}

// destroySRQ frees an SRQ that create made (an RMP is not destroyed as an XRC SRQ).
func destroySRQ(create prm.CmdOp) handler {
	return func(d *Device, c *cmd) error {
		if err := c.need(ins(ibObjNumIn)); err != nil {
			return err
		}
		n := uint32(c.get(ibObjNumIn))
		if op, ok := d.objs.ib.srqOp[n]; ok && op != create {
			return noObject("%v: SRQ %d was made by %v", c.op, n, op)
		}
		if err := d.dealloc(c, ibObjNumIn, &d.objs.ib.srqs, nil); err != nil {
			return err
		}
		delete(d.objs.ib.srqOp, n)
		return nil
	}
}

// Fields of QUERY_HCA_VPORT_PKEY (mlx5_ifc.h query_hca_vport_pkey_in/out, struct pkey).
var (
	pkeyIndexIn = prm.IBObject.PkeyIndexIn
	pkeyOut0    = prm.IBObject.Pkey0Out
)

// queryPkey answers the P_Key table of an Ethernet port: the default key 0xffff at index 0,
// nothing else (ib_cache_setup_one asks for index 0 of the one entry mlx5_query_port_roce
// reports, through mlx5_query_hca_vport_pkey). Index 0xffff asks for the whole table, as many
// entries as the output holds.
func (d *Device) queryPkey(c *cmd) error {
	if err := c.need(ins(pkeyIndexIn), pkeyOut0); err != nil {
		return err
	}
	idx := c.get(pkeyIndexIn)
	n := (len(c.out) - pkeyOut0.ByteOff() + 2) / 4
	if idx != 0xffff {
		n = 1
	}
	for i := 0; i < n; i++ {
		key := uint64(0)
		if (idx == 0xffff && i == 0) || idx == 0 {
			key = 0xffff
		}
		c.set(pkeyOut0.At(uint32(32*i)), key)
	}
	return nil
}
