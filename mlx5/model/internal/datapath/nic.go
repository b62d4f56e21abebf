package datapath

import (
	"context"
)

// NIC is one simulated port's datapath: its queues, steering and wire. The control side
// decodes and validates commands, then calls these methods; a method's *Error carries the
// PRM status and syndrome the command must return. Methods are safe for concurrent use.
type NIC struct {
	cfg Config
}

// New returns a port's datapath with no objects.
func New(cfg Config) *NIC {
	return &NIC{cfg: cfg}
}

func notImpl(what string) error {
	return errf(StatusBadOp, SyndromeNotImplemented, "%s not implemented in the model yet", what)
}

// CreateCQ makes a CQ. The control side allocates the number and checks sizes against caps.
func (n *NIC) CreateCQ(p CQParams) error { return notImpl("CreateCQ") }

// ModifyCQ changes a CQ's moderation (accepted, the model does not moderate).
func (n *NIC) ModifyCQ(cqn uint32, period, maxCount uint16) error { return notImpl("ModifyCQ") }

// QueryCQ reports a CQ.
func (n *NIC) QueryCQ(cqn uint32) (CQState, error) { return CQState{}, notImpl("QueryCQ") }

// DestroyCQ removes a CQ; a CQ still bound to a queue is busy.
func (n *NIC) DestroyCQ(cqn uint32) error { return notImpl("DestroyCQ") }

// CreateRQ makes an RQ on an existing CQ.
func (n *NIC) CreateRQ(p RQParams) error { return notImpl("CreateRQ") }

// ModifyRQ applies a state transition (RST→RDY, RDY→ERR, ERR→RST, RDY→RDY) and changes.
func (n *NIC) ModifyRQ(rqn uint32, m RQModify) error { return notImpl("ModifyRQ") }

// QueryRQ reports an RQ.
func (n *NIC) QueryRQ(rqn uint32) (RQStateInfo, error) { return RQStateInfo{}, notImpl("QueryRQ") }

// DestroyRQ removes an RQ; one referenced by a TIR or RQT is busy.
func (n *NIC) DestroyRQ(rqn uint32) error { return notImpl("DestroyRQ") }

// CreateSQ makes an SQ on an existing CQ and TIS.
func (n *NIC) CreateSQ(p SQParams) error { return notImpl("CreateSQ") }

// ModifySQ applies a state transition and changes.
func (n *NIC) ModifySQ(sqn uint32, m SQModify) error { return notImpl("ModifySQ") }

// QuerySQ reports an SQ.
func (n *NIC) QuerySQ(sqn uint32) (SQStateInfo, error) { return SQStateInfo{}, notImpl("QuerySQ") }

// DestroySQ removes an SQ.
func (n *NIC) DestroySQ(sqn uint32) error { return notImpl("DestroySQ") }

// CreateRQT makes an RQ table over existing RQs.
func (n *NIC) CreateRQT(p RQTParams) error { return notImpl("CreateRQT") }

// ModifyRQT replaces an RQ table's list.
func (n *NIC) ModifyRQT(rqtn uint32, rqns []uint32) error { return notImpl("ModifyRQT") }

// QueryRQT reports an RQ table.
func (n *NIC) QueryRQT(rqtn uint32) (RQTParams, error) { return RQTParams{}, notImpl("QueryRQT") }

// DestroyRQT removes an RQ table; one a TIR uses is busy.
func (n *NIC) DestroyRQT(rqtn uint32) error { return notImpl("DestroyRQT") }

// CreateTIR makes a TIR.
func (n *NIC) CreateTIR(p TIRParams) error { return notImpl("CreateTIR") }

// ModifyTIR replaces a TIR's parameters (MODIFY_TIR with its bitmask applied by the caller).
func (n *NIC) ModifyTIR(p TIRParams) error { return notImpl("ModifyTIR") }

// QueryTIR reports a TIR.
func (n *NIC) QueryTIR(tirn uint32) (TIRParams, error) { return TIRParams{}, notImpl("QueryTIR") }

// DestroyTIR removes a TIR; one a flow entry forwards to is busy.
func (n *NIC) DestroyTIR(tirn uint32) error { return notImpl("DestroyTIR") }

// CreateTIS makes a TIS.
func (n *NIC) CreateTIS(p TISParams) error { return notImpl("CreateTIS") }

// QueryTIS reports a TIS.
func (n *NIC) QueryTIS(tisn uint32) (TISParams, error) { return TISParams{}, notImpl("QueryTIS") }

// DestroyTIS removes a TIS; one an SQ uses is busy.
func (n *NIC) DestroyTIS(tisn uint32) error { return notImpl("DestroyTIS") }

// CreateFlowTable makes a flow table of a type (NIC RX or TX).
func (n *NIC) CreateFlowTable(p FlowTableParams) error { return notImpl("CreateFlowTable") }

// ModifyFlowTable changes a table's miss action (MODIFY_FLOW_TABLE).
func (n *NIC) ModifyFlowTable(p FlowTableParams) error { return notImpl("ModifyFlowTable") }

// QueryFlowTable reports a table.
func (n *NIC) QueryFlowTable(typ uint8, id uint32) (FlowTableParams, error) {
	return FlowTableParams{}, notImpl("QueryFlowTable")
}

// DestroyFlowTable removes a table; one with groups, the root, or a destination is busy.
func (n *NIC) DestroyFlowTable(typ uint8, id uint32) error { return notImpl("DestroyFlowTable") }

// SetRoot makes a table the root of its type (SET_FLOW_TABLE_ROOT).
func (n *NIC) SetRoot(typ uint8, id uint32) error { return notImpl("SetRoot") }

// CreateFlowGroup makes a group in a table.
func (n *NIC) CreateFlowGroup(p FlowGroupParams) error { return notImpl("CreateFlowGroup") }

// QueryFlowGroup reports a group.
func (n *NIC) QueryFlowGroup(typ uint8, table, id uint32) (FlowGroupParams, error) {
	return FlowGroupParams{}, notImpl("QueryFlowGroup")
}

// DestroyFlowGroup removes a group; one with entries is busy.
func (n *NIC) DestroyFlowGroup(typ uint8, table, id uint32) error {
	return notImpl("DestroyFlowGroup")
}

// SetFTE sets (creates or replaces) a flow table entry at an index of a group's range.
func (n *NIC) SetFTE(p FTEParams) error { return notImpl("SetFTE") }

// QueryFTE reports an entry.
func (n *NIC) QueryFTE(typ uint8, table, index uint32) (FTEParams, error) {
	return FTEParams{}, notImpl("QueryFTE")
}

// DeleteFTE removes an entry.
func (n *NIC) DeleteFTE(typ uint8, table, index uint32) error { return notImpl("DeleteFTE") }

// AllocFlowCounter makes a flow counter.
func (n *NIC) AllocFlowCounter(id uint32) error { return notImpl("AllocFlowCounter") }

// QueryFlowCounter reads (and optionally clears) a flow counter.
func (n *NIC) QueryFlowCounter(id uint32, clear bool) (FlowCounter, error) {
	return FlowCounter{}, notImpl("QueryFlowCounter")
}

// DeallocFlowCounter removes a flow counter; one an entry counts into is busy.
func (n *NIC) DeallocFlowCounter(id uint32) error { return notImpl("DeallocFlowCounter") }

// AllocReformat makes a packet reformat context.
func (n *NIC) AllocReformat(p ReformatParams) error { return notImpl("AllocReformat") }

// DeallocReformat removes a reformat context; one an entry uses is busy.
func (n *NIC) DeallocReformat(id uint32) error { return notImpl("DeallocReformat") }

// SetPacing sets a rate-limit index's rate (SET_PP_RATE_LIMIT); rate 0 clears it.
func (n *NIC) SetPacing(p PacingParams) error { return notImpl("SetPacing") }

// Counters reads the port's counters; clear zeroes them after reading.
func (n *NIC) Counters(clear bool) Counters { return Counters{} }

// UARWrite is a store to a UAR page of BAR0 at byte offset off (4 or 8 bytes, or a whole
// BlueFlame buffer), big-endian data as the driver wrote it: CQ arm doorbells (0x20), EQ
// doorbells (0x40, 0x48, forwarded to Events) and SQ doorbells/BlueFlame (0x800 and 0x900).
// A store the model does not decode is ignored, as writes to unused UAR space are.
func (n *NIC) UARWrite(uar uint32, off uint32, data []byte) {}

// SetWire connects the port's transmit side; nil drops what it sends.
func (n *NIC) SetWire(w Wire) {}

// Receive hands the port a frame from its wire. The frame is copied and processed on the
// next Step (or at once in free-running mode).
func (n *NIC) Receive(frame []byte) {}

// Step does the work pending now: SQ doorbells rung since the last Step and frames received
// are processed until none is left or budget units of work (a WQE, a frame) were done. It
// returns the units done; 0 means idle. Deterministic mode is calling only Step.
func (n *NIC) Step(budget int) int { return 0 }

// Run steps the port from a goroutine until ctx ends (free-running mode).
func (n *NIC) Run(ctx context.Context) {}

// Cable connects two ports back to back: each one's transmit is the other's receive.
// Cable(a, a) is a port's internal loopback.
func Cable(a, b *NIC) {}
