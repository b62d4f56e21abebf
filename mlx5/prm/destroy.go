package prm

// NewCmdIn returns a zeroed command input of n bytes with the command header's opcode and
// op_mod set (a buffer shorter than the header gets what fits: tests build short ones on
// purpose).
func NewCmdIn(op CmdOp, opMod uint16, n int) []byte {
	b := make([]byte, n)
	CmdIn.Opcode.Set(b, uint64(op))
	CmdIn.OpMod.Set(b, uint64(opMod))
	return b
}

// destroyOf says how to destroy what a create command made: the destroy opcode, where the
// create's output holds the id and where the destroy's input takes it (mlx5_ifc.h *_out and
// destroy/dealloc *_in layouts, paired as the kernel's devx.c devx_obj_build_destroy_cmd
// pairs them).
type destroyOf struct {
	op         CmdOp
	outID      Field
	inID       Field
	flowTable  bool // DESTROY_FLOW_TABLE names the table type as the create did
	flowGroup  bool // DESTROY_FLOW_GROUP names the table type and table id too
	flowEntry  bool // SET_FLOW_TABLE_ENTRY: the id is the input's flow_index
	generalObj bool // DESTROY_GENERAL_OBJECT names the object type as the create did
}

func destroyFor(op CmdOp) (destroyOf, bool) {
	switch op {
	case CmdOpCreateMKey:
		return destroyOf{op: CmdOpDestroyMKey, outID: CreateMKeyOut.MKeyIndex, inID: DestroyMKeyIn.MKeyIndex}, true
	case CmdOpCreateCQ:
		return destroyOf{op: CmdOpDestroyCQ, outID: CreateCQOut.CQN, inID: DestroyCQIn.CQN}, true
	case CmdOpCreateRQ:
		return destroyOf{op: CmdOpDestroyRQ, outID: CreateRQOut.RQN, inID: DestroyRQIn.RQN}, true
	case CmdOpCreateSQ:
		return destroyOf{op: CmdOpDestroySQ, outID: CreateSQOut.SQN, inID: DestroySQIn.SQN}, true
	case CmdOpCreateTIR:
		return destroyOf{op: CmdOpDestroyTIR, outID: CreateTIROut.TIRN, inID: DestroyTIRIn.TIRN}, true
	case CmdOpCreateTIS:
		return destroyOf{op: CmdOpDestroyTIS, outID: CreateTISOut.TISN, inID: DestroyTISIn.TISN}, true
	case CmdOpCreateRQT:
		return destroyOf{op: CmdOpDestroyRQT, outID: CreateRQTOut.RQTN, inID: DestroyRQTIn.RQTN}, true
	case CmdOpAllocPD:
		return destroyOf{op: CmdOpDeallocPD, outID: AllocPDOut.PD, inID: DeallocPDIn.PD}, true
	case CmdOpAllocTransportDomain:
		return destroyOf{op: CmdOpDeallocTransportDomain, outID: AllocTransportDomainOut.TransportDomain, inID: DeallocTransportDomainIn.TransportDomain}, true
	case CmdOpAllocQCounter:
		return destroyOf{op: CmdOpDeallocQCounter, outID: AllocQCounterOut.CounterSetID, inID: DeallocQCounterIn.CounterSetID}, true
	case CmdOpAllocFlowCounter:
		return destroyOf{op: CmdOpDeallocFlowCounter, outID: AllocFlowCounterOut.FlowCounterID, inID: DeallocFlowCounterIn.FlowCounterID}, true
	case CmdOpAllocPacketReformatContext:
		return destroyOf{op: CmdOpDeallocPacketReformatContext, outID: AllocPacketReformatContextOut.PacketReformatID, inID: DeallocPacketReformatContextIn.PacketReformatID}, true
	case CmdOpCreateFlowTable:
		return destroyOf{op: CmdOpDestroyFlowTable, outID: CreateFlowTableOut.TableID, inID: DestroyFlowTableIn.TableID, flowTable: true}, true
	case CmdOpCreateFlowGroup:
		return destroyOf{op: CmdOpDestroyFlowGroup, outID: CreateFlowGroupOut.GroupID, inID: DestroyFlowGroupIn.GroupID, flowGroup: true}, true
	case CmdOpSetFlowTableEntry:
		return destroyOf{op: CmdOpDeleteFlowTableEntry, flowEntry: true}, true
	case CmdOpCreateGeneralObject:
		return destroyOf{op: CmdOpDestroyGeneralObject, outID: GeneralObjOutCmdHdr.ObjID, inID: GeneralObjInCmdHdr.ObjID, generalObj: true}, true
	}
	return destroyOf{}, false
}

// Destroyable reports whether the command in creates an object that DestroyCommand can undo.
func Destroyable(in []byte) bool {
	_, ok := destroyFor(CmdOp(CmdIn.Opcode.Get(in)))
	return ok
}

// DestroyCommand returns the id of the object that the create command in made (out is its
// output) and the command that destroys it, with the create's uid — what the kernel builds
// for a DevX object (devx.c devx_obj_build_destroy_cmd), so that every transport destroys
// objects the same way. ok is false for a command that creates nothing destroyable.
func DestroyCommand(in, out []byte) (id uint32, destroy []byte, ok bool) {
	d, ok := destroyFor(CmdOp(CmdIn.Opcode.Get(in)))
	if !ok {
		return 0, nil, false
	}
	switch {
	case d.flowEntry:
		id = uint32(SetFTEIn.FlowIndex.Get(in))
		destroy = NewCmdIn(d.op, 0, int(DeleteFTEIn.FlowIndex.End()/8))
		DeleteFTEIn.TableType.Set(destroy, SetFTEIn.TableType.Get(in))
		DeleteFTEIn.TableID.Set(destroy, SetFTEIn.TableID.Get(in))
		DeleteFTEIn.FlowIndex.Set(destroy, uint64(id))
	case d.flowGroup:
		id = uint32(d.outID.Get(out))
		destroy = NewCmdIn(d.op, 0, int(d.inID.End()/8))
		DestroyFlowGroupIn.TableType.Set(destroy, CreateFlowGroupIn.TableType.Get(in))
		DestroyFlowGroupIn.TableID.Set(destroy, CreateFlowGroupIn.TableID.Get(in))
		d.inID.Set(destroy, uint64(id))
	case d.generalObj:
		id = uint32(d.outID.Get(out))
		destroy = NewCmdIn(d.op, 0, int(GeneralObjInCmdHdr.LogObjRange.End()+7)/8)
		GeneralObjInCmdHdr.ObjType.Set(destroy, GeneralObjInCmdHdr.ObjType.Get(in))
		d.inID.Set(destroy, uint64(id))
	case d.flowTable:
		id = uint32(d.outID.Get(out))
		destroy = NewCmdIn(d.op, 0, int(d.inID.End()/8))
		DestroyFlowTableIn.TableType.Set(destroy, CreateFlowTableIn.TableType.Get(in))
		d.inID.Set(destroy, uint64(id))
	default:
		id = uint32(d.outID.Get(out))
		destroy = NewCmdIn(d.op, 0, max(16, int(d.inID.End()/8)))
		d.inID.Set(destroy, uint64(id))
	}
	GeneralObjInCmdHdr.UID.Set(destroy, GeneralObjInCmdHdr.UID.Get(in))
	return id, destroy, true
}
