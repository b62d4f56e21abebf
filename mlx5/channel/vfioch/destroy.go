package vfioch

import "github.com/daqiri-go/daqiri/mlx5/prm"

// destroySpec says how to destroy what a create command made: the destroy opcode, where the
// create's output holds the id and where the destroy's input takes it (mlx5_ifc.h *_out and
// destroy/dealloc *_in layouts, paired as the kernel's devx.c devx_obj_build_destroy_cmd
// pairs them).
type destroySpec struct {
	op         prm.CmdOp
	outID      prm.Field
	inID       prm.Field
	tableType  bool // the destroy names the table type (and table) as the create did
	byFlowIdx  bool // SET_FLOW_TABLE_ENTRY: the id is the input's flow_index
	groupTable bool // DESTROY_FLOW_GROUP names the table id too
}

func destroyFor(op prm.CmdOp) (destroySpec, bool) {
	switch op {
	case prm.CmdOpCreateMKey:
		return destroySpec{op: prm.CmdOpDestroyMKey, outID: prm.CreateMKeyOut.MKeyIndex, inID: prm.DestroyMKeyIn.MKeyIndex}, true
	case prm.CmdOpCreateCQ:
		return destroySpec{op: prm.CmdOpDestroyCQ, outID: prm.CreateCQOut.CQN, inID: prm.DestroyCQIn.CQN}, true
	case prm.CmdOpCreateRQ:
		return destroySpec{op: prm.CmdOpDestroyRQ, outID: prm.CreateRQOut.RQN, inID: prm.DestroyRQIn.RQN}, true
	case prm.CmdOpCreateSQ:
		return destroySpec{op: prm.CmdOpDestroySQ, outID: prm.CreateSQOut.SQN, inID: prm.DestroySQIn.SQN}, true
	case prm.CmdOpCreateTIR:
		return destroySpec{op: prm.CmdOpDestroyTIR, outID: prm.CreateTIROut.TIRN, inID: prm.DestroyTIRIn.TIRN}, true
	case prm.CmdOpCreateTIS:
		return destroySpec{op: prm.CmdOpDestroyTIS, outID: prm.CreateTISOut.TISN, inID: prm.DestroyTISIn.TISN}, true
	case prm.CmdOpCreateRQT:
		return destroySpec{op: prm.CmdOpDestroyRQT, outID: prm.CreateRQTOut.RQTN, inID: prm.DestroyRQTIn.RQTN}, true
	case prm.CmdOpAllocPD:
		return destroySpec{op: prm.CmdOpDeallocPD, outID: prm.AllocPDOut.PD, inID: prm.DeallocPDIn.PD}, true
	case prm.CmdOpAllocTransportDomain:
		return destroySpec{op: prm.CmdOpDeallocTransportDomain, outID: prm.AllocTransportDomainOut.TransportDomain, inID: prm.DeallocTransportDomainIn.TransportDomain}, true
	case prm.CmdOpAllocQCounter:
		return destroySpec{op: prm.CmdOpDeallocQCounter, outID: prm.AllocQCounterOut.CounterSetID, inID: prm.DeallocQCounterIn.CounterSetID}, true
	case prm.CmdOpAllocFlowCounter:
		return destroySpec{op: prm.CmdOpDeallocFlowCounter, outID: prm.AllocFlowCounterOut.FlowCounterID, inID: prm.DeallocFlowCounterIn.FlowCounterID}, true
	case prm.CmdOpAllocPacketReformatContext:
		return destroySpec{op: prm.CmdOpDeallocPacketReformatContext, outID: prm.AllocPacketReformatContextOut.PacketReformatID, inID: prm.DeallocPacketReformatContextIn.PacketReformatID}, true
	case prm.CmdOpCreateFlowTable:
		return destroySpec{op: prm.CmdOpDestroyFlowTable, outID: prm.CreateFlowTableOut.TableID, inID: prm.DestroyFlowTableIn.TableID, tableType: true}, true
	case prm.CmdOpCreateFlowGroup:
		return destroySpec{op: prm.CmdOpDestroyFlowGroup, outID: prm.CreateFlowGroupOut.GroupID, inID: prm.DestroyFlowGroupIn.GroupID, groupTable: true}, true
	case prm.CmdOpSetFlowTableEntry:
		return destroySpec{op: prm.CmdOpDeleteFlowTableEntry, byFlowIdx: true}, true
	}
	return destroySpec{}, false
}

// buildDestroy returns the created object's id and the command that destroys it; the uid of
// the create is carried over.
func buildDestroy(in, out []byte) (uint32, []byte) {
	d, _ := destroyFor(prm.CmdOp(prm.CmdIn.Opcode.Get(in)))
	var id uint32
	var b []byte
	switch {
	case d.byFlowIdx:
		id = uint32(prm.SetFTEIn.FlowIndex.Get(in))
		b = cmdIn(d.op, 0, int(prm.DeleteFTEIn.FlowIndex.End()/8))
		prm.DeleteFTEIn.TableType.Set(b, prm.SetFTEIn.TableType.Get(in))
		prm.DeleteFTEIn.TableID.Set(b, prm.SetFTEIn.TableID.Get(in))
		prm.DeleteFTEIn.FlowIndex.Set(b, uint64(id))
	case d.groupTable:
		id = uint32(d.outID.Get(out))
		b = cmdIn(d.op, 0, int(d.inID.End()/8))
		prm.DestroyFlowGroupIn.TableType.Set(b, prm.CreateFlowGroupIn.TableType.Get(in))
		prm.DestroyFlowGroupIn.TableID.Set(b, prm.CreateFlowGroupIn.TableID.Get(in))
		d.inID.Set(b, uint64(id))
	case d.tableType:
		id = uint32(d.outID.Get(out))
		b = cmdIn(d.op, 0, int(d.inID.End()/8))
		prm.DestroyFlowTableIn.TableType.Set(b, prm.CreateFlowTableIn.TableType.Get(in))
		d.inID.Set(b, uint64(id))
	default:
		id = uint32(d.outID.Get(out))
		b = cmdIn(d.op, 0, max(16, int(d.inID.End()/8)))
		d.inID.Set(b, uint64(id))
	}
	prm.GeneralObjInCmdHdr.UID.Set(b, prm.GeneralObjInCmdHdr.UID.Get(in))
	return id, b
}
