package verbs

import (
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/daqiri-go/daqiri/verbs/internal/uapi"
	"github.com/daqiri-go/daqiri/verbs/provider"
)

// QPState is enum ib_qp_state.
type QPState uint8

// QP states.
const (
	QPStateReset QPState = 0
	QPStateInit  QPState = 1
	QPStateRTR   QPState = 2
	QPStateRTS   QPState = 3
	QPStateSQD   QPState = 4
	QPStateSQE   QPState = 5
	QPStateErr   QPState = 6
)

func (s QPState) String() string {
	switch s {
	case QPStateReset:
		return "RESET"
	case QPStateInit:
		return "INIT"
	case QPStateRTR:
		return "RTR"
	case QPStateRTS:
		return "RTS"
	case QPStateSQD:
		return "SQD"
	case QPStateSQE:
		return "SQE"
	case QPStateErr:
		return "ERR"
	}
	return fmt.Sprintf("QPState(%d)", uint8(s))
}

// QPAttrMask selects the QPAttr fields a Modify or Query uses (enum
// ib_qp_attr_mask).
type QPAttrMask uint32

// QP attribute mask bits.
const (
	QPAttrState            QPAttrMask = 1 << 0
	QPAttrCurState         QPAttrMask = 1 << 1
	QPAttrEnSQDAsyncNotify QPAttrMask = 1 << 2
	QPAttrAccessFlags      QPAttrMask = 1 << 3
	QPAttrPKeyIndex        QPAttrMask = 1 << 4
	QPAttrPort             QPAttrMask = 1 << 5
	QPAttrQKey             QPAttrMask = 1 << 6
	QPAttrAV               QPAttrMask = 1 << 7
	QPAttrPathMTU          QPAttrMask = 1 << 8
	QPAttrTimeout          QPAttrMask = 1 << 9
	QPAttrRetryCnt         QPAttrMask = 1 << 10
	QPAttrRNRRetry         QPAttrMask = 1 << 11
	QPAttrRQPSN            QPAttrMask = 1 << 12
	QPAttrMaxQPRdAtomic    QPAttrMask = 1 << 13
	QPAttrAltPath          QPAttrMask = 1 << 14
	QPAttrMinRNRTimer      QPAttrMask = 1 << 15
	QPAttrSQPSN            QPAttrMask = 1 << 16
	QPAttrMaxDestRdAtomic  QPAttrMask = 1 << 17
	QPAttrPathMigState     QPAttrMask = 1 << 18
	QPAttrCap              QPAttrMask = 1 << 19
	QPAttrDestQPN          QPAttrMask = 1 << 20
)

// AHAttr is an address vector: where a QP (RC/UC) or a UD send goes. RoCE
// needs IsGlobal with the destination GID and the local GID index.
type AHAttr struct {
	DGID         GID
	FlowLabel    uint32
	SGIDIndex    uint8
	HopLimit     uint8
	TrafficClass uint8
	IsGlobal     bool
	DLID         uint16
	SL           uint8
	SrcPathBits  uint8
	StaticRate   uint8
	Port         uint8
}

func (a *AHAttr) dest() uapi.QPDest {
	d := uapi.QPDest{DGID: a.DGID, FlowLabel: a.FlowLabel, DLID: a.DLID, SGIDIndex: a.SGIDIndex,
		HopLimit: a.HopLimit, TrafficClass: a.TrafficClass, SL: a.SL, SrcPathBits: a.SrcPathBits,
		StaticRate: a.StaticRate, PortNum: a.Port}
	if a.IsGlobal {
		d.IsGlobal = 1
	}
	return d
}

func ahFromDest(d *uapi.QPDest) AHAttr {
	return AHAttr{DGID: d.DGID, FlowLabel: d.FlowLabel, DLID: d.DLID, SGIDIndex: d.SGIDIndex,
		HopLimit: d.HopLimit, TrafficClass: d.TrafficClass, SL: d.SL, SrcPathBits: d.SrcPathBits,
		StaticRate: d.StaticRate, IsGlobal: d.IsGlobal != 0, Port: d.PortNum}
}

// QPAttr holds QP attributes for Modify and Query; the mask says which are
// meaningful.
type QPAttr struct {
	State           QPState
	CurState        QPState
	PathMTU         MTU
	QKey            uint32
	RQPSN           uint32
	SQPSN           uint32
	DestQPN         uint32
	AccessFlags     Access
	PKeyIndex       uint16
	Port            uint8
	AH              AHAttr
	MaxRdAtomic     uint8
	MaxDestRdAtomic uint8
	MinRNRTimer     uint8
	Timeout         uint8
	RetryCnt        uint8
	RNRRetry        uint8
	// Cap and SQDraining, SignalAll are reported by Query.
	Cap        QPCap
	SQDraining bool
	SignalAll  bool
}

// QPInit describes a QP to create.
type QPInit struct {
	Type   QPType
	SendCQ *CQ
	RecvCQ *CQ
	Cap    QPCap
	// SignalAll makes every send work request produce a completion, not
	// only those with SendSignaled.
	SignalAll bool
}

// QP is a queue pair.
type QP struct {
	pd     *PD
	handle uint32
	userID uint64
	num    uint32
	typ    QPType
	cap    QPCap
	prov   provider.QP

	// state and closed are read on every post, so they are atomic; mu
	// serialises Close.
	state  atomic.Uint32
	closed atomic.Bool
	mu     sync.Mutex
}

// CreateQP creates a queue pair in the PD.
func (pd *PD) CreateQP(init QPInit) (*QP, error) {
	if err := pd.begin(); err != nil {
		return nil, err
	}
	if init.SendCQ == nil || init.RecvCQ == nil {
		return nil, fmt.Errorf("verbs: a QP needs a send CQ and a receive CQ")
	}
	c := pd.ctx
	if init.SendCQ.ctx != c || init.RecvCQ.ctx != c {
		return nil, fmt.Errorf("verbs: the QP's CQs belong to another context")
	}
	pqp, err := c.prov.NewQP(provider.QPRequest{Type: init.Type, Cap: init.Cap})
	if err != nil {
		return nil, fmt.Errorf("verbs: provider QP on %s: %w", c.dev.Name, err)
	}
	qp := &QP{pd: pd, typ: init.Type, prov: pqp}
	qp.userID = c.register(qp)

	capIn := uapi.QPCap(init.Cap)
	var capOut uapi.QPCap
	var qpn [4]byte
	call := c.newCall(uapi.ObjectQP, uapi.MethodQPCreate)
	h := call.NewIDR(uapi.AttrCreateQPHandle)
	call.IDR(uapi.AttrCreateQPPDHandle, pd.handle)
	call.IDR(uapi.AttrCreateQPSendCQHandle, init.SendCQ.handle)
	call.IDR(uapi.AttrCreateQPRecvCQHandle, init.RecvCQ.handle)
	call.U64(uapi.AttrCreateQPUserHandle, qp.userID)
	call.In(uapi.AttrCreateQPCap, uapi.Bytes(&capIn))
	call.U64(uapi.AttrCreateQPType, uint64(init.Type))
	if init.SignalAll {
		call.U64(uapi.AttrCreateQPFlags, uapi.QPCreateSQSigAll)
	}
	call.Out(uapi.AttrCreateQPRespCap, uapi.Bytes(&capOut))
	call.Out(uapi.AttrCreateQPRespQPNum, qpn[:])
	drvOut := addUHW(call, pqp)
	if err := call.Do(c.fd); err != nil {
		c.unregister(qp.userID)
		_ = pqp.Release()
		return nil, c.wrap(fmt.Sprintf("ioctl QP_CREATE(%v)", init.Type), err)
	}
	qp.handle = call.Handle(h)
	qp.num = binary.NativeEndian.Uint32(qpn[:])
	qp.cap = QPCap(capOut)
	if err := pqp.Attach(provider.QPInfo{Handle: qp.handle, QPN: qp.num, Type: init.Type, Cap: qp.cap}, drvOut); err != nil {
		_ = qp.destroyKernel()
		c.unregister(qp.userID)
		return nil, fmt.Errorf("verbs: provider QP on %s: %w", c.dev.Name, err)
	}
	c.track(qp)
	return qp, nil
}

// Num is the QP number peers address.
func (qp *QP) Num() uint32 { return qp.num }

// Type is the QP's transport.
func (qp *QP) Type() QPType { return qp.typ }

// Cap is what the kernel granted (at least what was asked for).
func (qp *QP) Cap() QPCap { return qp.cap }

// Handle is the kernel handle (for diagnostics).
func (qp *QP) Handle() uint32 { return qp.handle }

// PD is the protection domain of the QP.
func (qp *QP) PD() *PD { return qp.pd }

// State is the state of the last successful Modify (or Query).
func (qp *QP) State() QPState {
	return QPState(qp.state.Load())
}

func (qp *QP) begin() error {
	if qp.closed.Load() {
		return fmt.Errorf("%w: QP %d", ErrClosed, qp.num)
	}
	return qp.pd.ctx.begin()
}

// Modify changes the attributes mask selects; the kernel checks the state
// transition and the attributes it requires (EINVAL otherwise).
func (qp *QP) Modify(attr *QPAttr, mask QPAttrMask) error {
	if err := qp.begin(); err != nil {
		return err
	}
	req := uapi.ModifyQP{
		Dest: attr.AH.dest(), QPHandle: qp.handle, AttrMask: uint32(mask),
		QKey: attr.QKey, RQPSN: attr.RQPSN, SQPSN: attr.SQPSN, DestQPNum: attr.DestQPN,
		QPAccessFlags: uint32(attr.AccessFlags), PKeyIndex: attr.PKeyIndex,
		QPState: uint8(attr.State), CurQPState: uint8(attr.CurState), PathMTU: uint8(attr.PathMTU),
		MaxRdAtomic: attr.MaxRdAtomic, MaxDestRdAtomic: attr.MaxDestRdAtomic,
		MinRNRTimer: attr.MinRNRTimer, PortNum: attr.Port, Timeout: attr.Timeout,
		RetryCnt: attr.RetryCnt, RNRRetry: attr.RNRRetry,
	}
	op := "write MODIFY_QP"
	if mask&QPAttrState != 0 {
		op = fmt.Sprintf("write MODIFY_QP(QP %d %v→%v)", qp.num, qp.State(), attr.State)
	}
	if _, err := qp.pd.ctx.write(op, &uapi.Write{Command: uapi.CmdModifyQP, Req: uapi.Bytes(&req)}); err != nil {
		return err
	}
	if mask&QPAttrState != 0 {
		qp.state.Store(uint32(attr.State))
	}
	return nil
}

// Query reads the QP's attributes (mask is a hint of what is wanted; the
// kernel fills everything it has).
func (qp *QP) Query(mask QPAttrMask) (QPAttr, error) {
	if err := qp.begin(); err != nil {
		return QPAttr{}, err
	}
	req := uapi.QueryQP{QPHandle: qp.handle, AttrMask: uint32(mask)}
	resp, err := qp.pd.ctx.write("write QUERY_QP", &uapi.Write{
		Command: uapi.CmdQueryQP, Req: uapi.Bytes(&req), RespLen: int(unsafe.Sizeof(uapi.QueryQPResp{})),
	})
	if err != nil {
		return QPAttr{}, err
	}
	var r uapi.QueryQPResp
	copy(uapi.Bytes(&r), resp)
	a := QPAttr{
		State: QPState(r.QPState), CurState: QPState(r.CurQPState), PathMTU: MTU(r.PathMTU),
		QKey: r.QKey, RQPSN: r.RQPSN, SQPSN: r.SQPSN, DestQPN: r.DestQPNum,
		AccessFlags: Access(r.QPAccessFlags), PKeyIndex: r.PKeyIndex, Port: r.PortNum,
		AH: ahFromDest(&r.Dest), MaxRdAtomic: r.MaxRdAtomic, MaxDestRdAtomic: r.MaxDestRdAtomic,
		MinRNRTimer: r.MinRNRTimer, Timeout: r.Timeout, RetryCnt: r.RetryCnt, RNRRetry: r.RNRRetry,
		Cap:        QPCap{MaxSendWR: r.MaxSendWR, MaxRecvWR: r.MaxRecvWR, MaxSendSGE: r.MaxSendSGE, MaxRecvSGE: r.MaxRecvSGE, MaxInlineData: r.MaxInlineData},
		SQDraining: r.SQDraining != 0, SignalAll: r.SQSigAll != 0,
	}
	qp.state.Store(uint32(a.State))
	return a, nil
}

// PostSend queues send work requests and rings the doorbell. It returns how
// many were queued; when that is fewer than len(wrs) the error says why
// wrs[n] was refused (ErrQueueFull, ErrInvalidWR, …).
func (qp *QP) PostSend(wrs ...SendWR) (int, error) {
	if err := qp.begin(); err != nil {
		return 0, err
	}
	if s := qp.State(); s < QPStateRTS || s > QPStateSQE {
		// C10-29: the send queue takes work in RTS, SQD and SQE only.
		return 0, &Error{Op: fmt.Sprintf("post send on QP %d in state %v", qp.num, s), Device: qp.pd.ctx.dev.Name, Errno: syscall.EINVAL}
	}
	return qp.prov.PostSend(wrs)
}

// PostRecv queues receive work requests; same contract as PostSend. A QP in
// RESET takes none (C10-97.2.1).
func (qp *QP) PostRecv(wrs ...RecvWR) (int, error) {
	if err := qp.begin(); err != nil {
		return 0, err
	}
	if s := qp.State(); s == QPStateReset {
		return 0, &Error{Op: fmt.Sprintf("post receive on QP %d in state %v", qp.num, s), Device: qp.pd.ctx.dev.Name, Errno: syscall.EINVAL}
	}
	return qp.prov.PostRecv(wrs)
}

func (qp *QP) destroyKernel() error {
	var resp uapi.DestroyQPResp
	call := qp.pd.ctx.newCall(uapi.ObjectQP, uapi.MethodQPDestroy)
	call.IDR(uapi.AttrDestroyQPHandle, qp.handle)
	call.Out(uapi.AttrDestroyQPResp, uapi.Bytes(&resp))
	return qp.pd.ctx.wrap("ioctl QP_DESTROY", call.Do(qp.pd.ctx.fd))
}

// Close destroys the QP.
func (qp *QP) Close() error {
	qp.mu.Lock()
	defer qp.mu.Unlock()
	if qp.closed.Load() {
		return nil
	}
	if err := qp.pd.ctx.begin(); err != nil {
		return err
	}
	if err := qp.destroyKernel(); err != nil {
		return err
	}
	qp.closed.Store(true)
	qp.pd.ctx.untrack(qp)
	qp.pd.ctx.unregister(qp.userID)
	return qp.prov.Release()
}

func (qp *QP) release() {
	qp.mu.Lock()
	defer qp.mu.Unlock()
	if !qp.closed.Load() {
		qp.closed.Store(true)
		_ = qp.prov.Release()
	}
}

// ---- state transitions for connected QPs ----

// ToInit moves a RESET QP to INIT on port with the given remote access
// (RC/UC) or qkey (UD; access is ignored).
func (qp *QP) ToInit(port uint8, access Access, qkey uint32) error {
	a := QPAttr{State: QPStateInit, Port: port, PKeyIndex: 0}
	mask := QPAttrState | QPAttrPKeyIndex | QPAttrPort
	switch qp.typ {
	case QPTypeUD:
		a.QKey = qkey
		mask |= QPAttrQKey
	case QPTypeRawPacket:
		mask = QPAttrState | QPAttrPort
	default:
		a.AccessFlags = access
		mask |= QPAttrAccessFlags
	}
	return qp.Modify(&a, mask)
}

// Remote names the peer of a connected (RC/UC) QP.
type Remote struct {
	QPN uint32
	PSN uint32 // the peer's initial send PSN = our receive PSN
	GID GID
	// SGIDIndex is our GID table index to send from (RoCE: the entry
	// holding our IP address).
	SGIDIndex uint8
	MTU       MTU
}

// ToRTR moves an INIT QP to ready-to-receive from remote. UD QPs need no
// remote (pass the zero value).
func (qp *QP) ToRTR(port uint8, r Remote) error {
	a := QPAttr{State: QPStateRTR}
	mask := QPAttrState
	if qp.typ == QPTypeRC || qp.typ == QPTypeUC {
		a.PathMTU, a.DestQPN, a.RQPSN = r.MTU, r.QPN, r.PSN
		a.AH = AHAttr{DGID: r.GID, SGIDIndex: r.SGIDIndex, HopLimit: 64, IsGlobal: true, Port: port}
		mask |= QPAttrAV | QPAttrPathMTU | QPAttrDestQPN | QPAttrRQPSN
		if qp.typ == QPTypeRC {
			a.MaxDestRdAtomic, a.MinRNRTimer = 1, 12
			mask |= QPAttrMaxDestRdAtomic | QPAttrMinRNRTimer
		}
	}
	return qp.Modify(&a, mask)
}

// ToRTS moves an RTR QP to ready-to-send starting at sendPSN.
func (qp *QP) ToRTS(sendPSN uint32) error {
	a := QPAttr{State: QPStateRTS, SQPSN: sendPSN}
	mask := QPAttrState | QPAttrSQPSN
	if qp.typ == QPTypeRC {
		a.Timeout, a.RetryCnt, a.RNRRetry, a.MaxRdAtomic = 14, 7, 7, 1
		mask |= QPAttrTimeout | QPAttrRetryCnt | QPAttrRNRRetry | QPAttrMaxQPRdAtomic
	}
	return qp.Modify(&a, mask)
}

// SizeofKernelQPAttr is the size of struct ib_uverbs_qp_attr.
const SizeofKernelQPAttr = 144

// QPAttrFromKernel decodes a struct ib_uverbs_qp_attr (the attribute set
// rdma_cm's INIT_QP_ATTR returns for a connection's next state) into the
// attributes and mask Modify takes.
func QPAttrFromKernel(b []byte) (QPAttr, QPAttrMask, error) {
	var k uapi.QPAttr
	if len(b) < int(unsafe.Sizeof(k)) {
		return QPAttr{}, 0, fmt.Errorf("verbs: ib_uverbs_qp_attr needs %d bytes, got %d", unsafe.Sizeof(k), len(b))
	}
	copy(uapi.Bytes(&k), b)
	ah := k.AHAttr
	a := QPAttr{
		State: QPState(k.QPState), CurState: QPState(k.CurQPState), PathMTU: MTU(k.PathMTU),
		QKey: k.QKey, RQPSN: k.RQPSN, SQPSN: k.SQPSN, DestQPN: k.DestQPNum,
		AccessFlags: Access(k.QPAccessFlags), PKeyIndex: k.PKeyIndex, Port: k.PortNum,
		AH: AHAttr{DGID: ah.DGID, FlowLabel: ah.FlowLabel, SGIDIndex: ah.SGIDIndex, HopLimit: ah.HopLimit,
			TrafficClass: ah.TrafficClass, IsGlobal: ah.IsGlobal != 0, DLID: ah.DLID, SL: ah.SL,
			SrcPathBits: ah.SrcPathBits, StaticRate: ah.StaticRate, Port: ah.PortNum},
		MaxRdAtomic: k.MaxRdAtomic, MaxDestRdAtomic: k.MaxDestRdAtomic, MinRNRTimer: k.MinRNRTimer,
		Timeout: k.Timeout, RetryCnt: k.RetryCnt, RNRRetry: k.RNRRetry,
		Cap:        QPCap{MaxSendWR: k.MaxSendWR, MaxRecvWR: k.MaxRecvWR, MaxSendSGE: k.MaxSendSGE, MaxRecvSGE: k.MaxRecvSGE, MaxInlineData: k.MaxInlineData},
		SQDraining: k.SQDraining != 0,
	}
	return a, QPAttrMask(k.QPAttrMask), nil
}
