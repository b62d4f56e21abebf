// Package rxe is the user-space half of Soft-RoCE (the kernel's rdma_rxe
// driver) for the verbs package: it maps the send, receive and completion
// rings the kernel allocates, writes work requests into them, rings the
// doorbell (a POST_SEND command with no work requests, which makes the
// kernel run the QP's requester) and polls completions.
//
// Facts: ring layout and ownership from drivers/infiniband/sw/rxe/
// rxe_queue.h and rxe_queue.c; work queue entry and mmap-info layouts from
// include/uapi/rdma/rdma_user_rxe.h; how the kernel consumes user WQEs and
// fills user CQEs from rxe_req.c, rxe_resp.c and rxe_comp.c (Linux 6.1).
// rdma-core's providers/rxe was read to confirm the protocol.
package rxe

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/daqiri-go/daqiri/verbs/provider"
)

// Provider is the rxe user-space driver. Its zero value is ready to use.
type Provider struct{}

// Name implements provider.Provider.
func (Provider) Name() string { return "rxe" }

// DriverID implements provider.Provider: RDMA_DRIVER_RXE.
func (Provider) DriverID() uint32 { return 14 }

// NewContext implements provider.Provider.
func (Provider) NewContext(k provider.Kernel) (provider.Context, error) {
	if k == nil {
		return nil, fmt.Errorf("rxe: nil kernel")
	}
	return &context{k: k}, nil
}

type context struct{ k provider.Kernel }

// rxe's GET_CONTEXT carries no driver data.
func (c *context) DriverIn() []byte      { return nil }
func (c *context) DriverOutLen() int     { return 0 }
func (c *context) Attach(_ []byte) error { return nil }
func (c *context) Close() error          { return nil }

func (c *context) NewCQ(cqe int) (provider.CQ, error) {
	if cqe <= 0 {
		return nil, fmt.Errorf("rxe: CQ depth %d must be positive", cqe)
	}
	return &cq{k: c.k}, nil
}

func (c *context) NewQP(req provider.QPRequest) (provider.QP, error) {
	switch req.Type {
	case provider.QPTypeRC, provider.QPTypeUC, provider.QPTypeUD:
	default:
		// Let the kernel refuse it with its own errno; the provider has
		// nothing to map for types rxe does not implement.
	}
	return &qp{k: c.k, typ: req.Type}, nil
}

func (c *context) NewAH() (provider.AHState, error) { return &ah{}, nil }

// mmapInfo is struct mminfo: where and how much to mmap on the device fd.
type mmapInfo struct {
	offset uint64
	size   uint32
}

const sizeofMmapInfo = 16

func decodeMmapInfo(b []byte) mmapInfo {
	return mmapInfo{offset: binary.LittleEndian.Uint64(b[0:]), size: binary.LittleEndian.Uint32(b[8:])}
}

func mapQueue(k provider.Kernel, mi mmapInfo, what string) (*queue, error) {
	if mi.size == 0 || mi.offset > 1<<62 {
		return nil, fmt.Errorf("rxe: kernel returned an unusable %s mapping (offset %#x, size %d)", what, mi.offset, mi.size)
	}
	b, err := k.Mmap(int64(mi.offset), int(mi.size))
	if err != nil {
		return nil, fmt.Errorf("rxe: mmap %s ring (offset %#x, %d bytes): %w", what, mi.offset, mi.size, err)
	}
	q, err := newQueue(b)
	if err != nil {
		_ = k.Munmap(b)
		return nil, err
	}
	return q, nil
}

// ---- completion queue ----

// struct rxe_create_cq_resp is one mminfo.
const sizeofCreateCQResp = sizeofMmapInfo

type cq struct {
	k  provider.Kernel
	mu sync.Mutex
	q  *queue
}

func (c *cq) DriverIn() []byte  { return nil }
func (c *cq) DriverOutLen() int { return sizeofCreateCQResp }

func (c *cq) Attach(_ uint32, _ int, out []byte) error {
	if len(out) < sizeofCreateCQResp {
		return fmt.Errorf("rxe: create CQ reply of %d bytes, want %d", len(out), sizeofCreateCQResp)
	}
	q, err := mapQueue(c.k, decodeMmapInfo(out), "completion")
	if err != nil {
		return err
	}
	if q.elemSize() < sizeofUverbsWC {
		_ = c.k.Munmap(q.buf)
		return fmt.Errorf("rxe: CQ slot of %d bytes cannot hold a %d-byte completion", q.elemSize(), sizeofUverbsWC)
	}
	c.q = q
	return nil
}

// Layout of struct ib_uverbs_wc (include/uapi/rdma/ib_user_verbs.h), the
// format rxe uses for user CQs.
const (
	sizeofUverbsWC   = 48
	wcOffWRID        = 0
	wcOffStatus      = 8
	wcOffOpcode      = 12
	wcOffVendorErr   = 16
	wcOffByteLen     = 20
	wcOffImm         = 24
	wcOffQPNum       = 28
	wcOffSrcQP       = 32
	wcOffFlags       = 36
	wcOffPKeyIndex   = 40
	wcOffSLID        = 42
	wcOffSL          = 44
	wcOffDLIDPathBit = 45
	wcOffPortNum     = 46
)

func decodeWC(b []byte, wc *provider.WorkCompletion) {
	le := binary.LittleEndian
	*wc = provider.WorkCompletion{
		ID:           le.Uint64(b[wcOffWRID:]),
		Status:       provider.WCStatus(le.Uint32(b[wcOffStatus:])),
		Opcode:       provider.WCOpcode(le.Uint32(b[wcOffOpcode:])),
		VendorErr:    le.Uint32(b[wcOffVendorErr:]),
		ByteLen:      le.Uint32(b[wcOffByteLen:]),
		QPNum:        le.Uint32(b[wcOffQPNum:]),
		SrcQP:        le.Uint32(b[wcOffSrcQP:]),
		Flags:        provider.WCFlags(le.Uint32(b[wcOffFlags:])),
		PKeyIndex:    le.Uint16(b[wcOffPKeyIndex:]),
		SLID:         le.Uint16(b[wcOffSLID:]),
		SL:           b[wcOffSL],
		DLIDPathBits: b[wcOffDLIDPathBit],
		Port:         b[wcOffPortNum],
	}
	if wc.Flags&provider.WCFlagWithImm != 0 {
		// imm_data is __be32 as it travelled on the wire.
		wc.Imm = binary.BigEndian.Uint32(b[wcOffImm:])
	} else {
		wc.Imm = le.Uint32(b[wcOffImm:])
	}
}

func (c *cq) Poll(wc []provider.WorkCompletion) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.q == nil {
		return 0, fmt.Errorf("rxe: poll on a CQ without a mapped ring")
	}
	q := c.q
	cons := q.cons.Load() & q.mask // ours
	prod := q.prod.Load() & q.mask // kernel's; the load orders the slot reads after it
	n := 0
	for n < len(wc) && cons != prod {
		decodeWC(q.slot(cons), &wc[n])
		cons = q.next(cons)
		n++
	}
	if n > 0 {
		// Hand the slots back only after they were copied out.
		q.cons.Store(cons)
	}
	return n, nil
}

func (c *cq) Release() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.q == nil {
		return nil
	}
	err := c.k.Munmap(c.q.buf)
	c.q = nil
	return err
}

// ---- queue pair ----

// struct rxe_create_qp_resp: rq_mi then sq_mi.
const sizeofCreateQPResp = 2 * sizeofMmapInfo

// Layout of struct rxe_send_wqe (rdma_user_rxe.h), 208 bytes before the
// SGE/inline area.
const (
	swqeOffWRID       = 0
	swqeOffOpcode     = 12
	swqeOffSendFlags  = 16
	swqeOffImm        = 20
	swqeOffWR         = 24 // union wr
	swqeOffRemoteAddr = 24 // wr.rdma.remote_addr / wr.atomic.remote_addr
	swqeOffRDMARKey   = 32 // wr.rdma.rkey
	swqeOffCmpAdd     = 32 // wr.atomic.compare_add
	swqeOffSwap       = 40 // wr.atomic.swap
	swqeOffAtomicRKey = 48 // wr.atomic.rkey
	swqeOffUDQPN      = 24 // wr.ud.remote_qpn
	swqeOffUDQKey     = 28 // wr.ud.remote_qkey
	swqeOffUDAHNum    = 36 // wr.ud.ah_num
	swqeOffStatus     = 144
	swqeOffState      = 148
	swqeOffIOVA       = 152
	swqeOffDMA        = 184 // struct rxe_dma_info
	swqeOffData       = 208 // dma.sge[] / dma.inline_data[]
	sizeofSendWQE     = 208

	// struct rxe_recv_wqe: wr_id, reserved, padding, then rxe_dma_info.
	rwqeOffWRID   = 0
	rwqeOffDMA    = 16
	rwqeOffSGE    = 40
	sizeofRecvWQE = 40

	// struct rxe_dma_info, relative to its start.
	dmaOffLength    = 0
	dmaOffResid     = 4
	dmaOffCurSGE    = 8
	dmaOffNumSGE    = 12
	dmaOffSGEOffset = 16

	sizeofSGE = 16
)

type qp struct {
	k   provider.Kernel
	typ provider.QPType

	handle uint32
	cap    provider.QPCap

	sqMu sync.Mutex
	sq   *queue
	rqMu sync.Mutex
	rq   *queue
}

func (p *qp) DriverIn() []byte  { return nil } // rxe refuses driver input on create QP
func (p *qp) DriverOutLen() int { return sizeofCreateQPResp }

func (p *qp) Attach(info provider.QPInfo, out []byte) error {
	if len(out) < sizeofCreateQPResp {
		return fmt.Errorf("rxe: create QP reply of %d bytes, want %d", len(out), sizeofCreateQPResp)
	}
	p.handle, p.cap, p.typ = info.Handle, info.Cap, info.Type
	rq, err := mapQueue(p.k, decodeMmapInfo(out[0:]), "receive")
	if err != nil {
		return err
	}
	sq, err := mapQueue(p.k, decodeMmapInfo(out[sizeofMmapInfo:]), "send")
	if err != nil {
		_ = p.k.Munmap(rq.buf)
		return err
	}
	if rq.elemSize() < sizeofRecvWQE+int(p.cap.MaxRecvSGE)*sizeofSGE ||
		sq.elemSize() < sizeofSendWQE+int(p.cap.MaxSendSGE)*sizeofSGE {
		_ = p.k.Munmap(rq.buf)
		_ = p.k.Munmap(sq.buf)
		return fmt.Errorf("rxe: QP slots (send %d, receive %d bytes) are too small for the granted SGE counts", sq.elemSize(), rq.elemSize())
	}
	p.rq, p.sq = rq, sq
	return nil
}

func (p *qp) Release() error {
	p.sqMu.Lock()
	p.rqMu.Lock()
	defer p.sqMu.Unlock()
	defer p.rqMu.Unlock()
	var first error
	for _, q := range []*queue{p.sq, p.rq} {
		if q != nil {
			if err := p.k.Munmap(q.buf); err != nil && first == nil {
				first = err
			}
		}
	}
	p.sq, p.rq = nil, nil
	return first
}

func putSGEs(dst []byte, sgl []provider.SGE) (total uint64) {
	le := binary.LittleEndian
	for i, s := range sgl {
		o := i * sizeofSGE
		le.PutUint64(dst[o:], s.Addr)
		le.PutUint32(dst[o+8:], s.Length)
		le.PutUint32(dst[o+12:], s.LKey)
		total += uint64(s.Length)
	}
	return total
}

// validSend checks what the kernel would otherwise reject late, or not at
// all (an SGL longer than the slot would overrun into the next WQE).
func (p *qp) validSend(wr *provider.SendWR, slot int) error {
	if wr.Inline != nil {
		if len(wr.Inline) > int(p.cap.MaxInlineData) || sizeofSendWQE+len(wr.Inline) > slot {
			return fmt.Errorf("%w: %d bytes of inline data exceed the QP's %d", provider.ErrInvalidWR, len(wr.Inline), p.cap.MaxInlineData)
		}
		if len(wr.SGL) != 0 {
			return fmt.Errorf("%w: a work request carries either inline data or an SGL, not both", provider.ErrInvalidWR)
		}
	} else if len(wr.SGL) > int(p.cap.MaxSendSGE) {
		return fmt.Errorf("%w: %d SGEs exceed the QP's %d", provider.ErrInvalidWR, len(wr.SGL), p.cap.MaxSendSGE)
	}
	switch wr.Opcode {
	case provider.WRSend, provider.WRSendWithImm:
		if p.typ == provider.QPTypeUD {
			if wr.AH == nil {
				return fmt.Errorf("%w: a UD send needs an address handle", provider.ErrInvalidWR)
			}
			if _, ok := wr.AH.State().(*ah); !ok {
				return fmt.Errorf("%w: address handle was not created by the rxe provider", provider.ErrInvalidWR)
			}
		}
	case provider.WRRDMAWrite, provider.WRRDMAWriteWithImm:
		if p.typ == provider.QPTypeUD {
			return fmt.Errorf("%w: %v is not valid on a UD QP", provider.ErrInvalidWR, wr.Opcode)
		}
	case provider.WRRDMARead, provider.WRAtomicCmpAndSwp, provider.WRAtomicFetchAdd:
		if p.typ != provider.QPTypeRC {
			return fmt.Errorf("%w: %v needs an RC QP, this one is %v", provider.ErrInvalidWR, wr.Opcode, p.typ)
		}
		if wr.Opcode != provider.WRRDMARead && (wr.RemoteAddr&7 != 0 || len(wr.SGL) != 1 || wr.SGL[0].Length < 8) {
			return fmt.Errorf("%w: atomics need an 8-byte aligned remote address and one SGE of at least 8 bytes", provider.ErrInvalidWR)
		}
	default:
		return fmt.Errorf("%w: opcode %v is not supported by the rxe provider", provider.ErrInvalidWR, wr.Opcode)
	}
	return nil
}

func (p *qp) writeSendWQE(b []byte, wr *provider.SendWR) {
	le := binary.LittleEndian
	// Zero what the kernel reads, so nothing of an earlier WQE in this
	// slot survives (the unions overlap).
	clear(b[:sizeofSendWQE])
	flags := wr.Flags &^ provider.SendInline
	var length uint64
	numSGE := uint32(len(wr.SGL))
	if wr.Inline != nil {
		flags |= provider.SendInline
		copy(b[swqeOffData:], wr.Inline)
		length = uint64(len(wr.Inline))
		numSGE = 0
	} else {
		length = putSGEs(b[swqeOffData:], wr.SGL)
	}
	le.PutUint64(b[swqeOffWRID:], wr.ID)
	le.PutUint32(b[swqeOffOpcode:], uint32(wr.Opcode))
	le.PutUint32(b[swqeOffSendFlags:], uint32(flags))
	binary.BigEndian.PutUint32(b[swqeOffImm:], wr.Imm)
	switch wr.Opcode {
	case provider.WRRDMAWrite, provider.WRRDMAWriteWithImm, provider.WRRDMARead:
		le.PutUint64(b[swqeOffRemoteAddr:], wr.RemoteAddr)
		le.PutUint32(b[swqeOffRDMARKey:], wr.RKey)
		le.PutUint64(b[swqeOffIOVA:], wr.RemoteAddr)
	case provider.WRAtomicCmpAndSwp, provider.WRAtomicFetchAdd:
		le.PutUint64(b[swqeOffRemoteAddr:], wr.RemoteAddr)
		le.PutUint64(b[swqeOffCmpAdd:], wr.CompareAdd)
		le.PutUint64(b[swqeOffSwap:], wr.Swap)
		le.PutUint32(b[swqeOffAtomicRKey:], wr.RKey)
		le.PutUint64(b[swqeOffIOVA:], wr.RemoteAddr)
	case provider.WRSend, provider.WRSendWithImm:
		if p.typ == provider.QPTypeUD {
			le.PutUint32(b[swqeOffUDQPN:], wr.RemoteQPN)
			le.PutUint32(b[swqeOffUDQKey:], wr.RemoteQKey)
			le.PutUint32(b[swqeOffUDAHNum:], wr.AH.State().(*ah).num)
		}
	}
	d := b[swqeOffDMA:]
	le.PutUint32(d[dmaOffLength:], uint32(length))
	le.PutUint32(d[dmaOffResid:], uint32(length))
	le.PutUint32(d[dmaOffCurSGE:], 0)
	le.PutUint32(d[dmaOffNumSGE:], numSGE)
	le.PutUint32(d[dmaOffSGEOffset:], 0)
	// status, state (wqe_state_posted = 0), mask and the PSN fields stay
	// zero: the kernel fills them when it takes the WQE.
}

func (p *qp) PostSend(wrs []provider.SendWR) (int, error) {
	p.sqMu.Lock()
	defer p.sqMu.Unlock()
	q := p.sq
	if q == nil {
		return 0, fmt.Errorf("rxe: post send on a QP without a mapped send queue")
	}
	prod := q.prod.Load() & q.mask // ours
	n := 0
	var err error
	for i := range wrs {
		if err = p.validSend(&wrs[i], q.elemSize()); err != nil {
			break
		}
		if q.next(prod) == q.cons.Load()&q.mask {
			err = provider.ErrQueueFull
			break
		}
		p.writeSendWQE(q.slot(prod), &wrs[i])
		prod = q.next(prod)
		n++
	}
	if n == 0 {
		return 0, err
	}
	// Publish the WQEs (the atomic store orders the slot writes before it),
	// then kick the kernel's requester.
	q.prod.Store(prod)
	if derr := p.k.PostSendDoorbell(p.handle); derr != nil {
		return n, fmt.Errorf("rxe: doorbell: %w", derr)
	}
	return n, err
}

func (p *qp) PostRecv(wrs []provider.RecvWR) (int, error) {
	p.rqMu.Lock()
	defer p.rqMu.Unlock()
	q := p.rq
	if q == nil {
		return 0, fmt.Errorf("rxe: post receive on a QP without a mapped receive queue")
	}
	le := binary.LittleEndian
	prod := q.prod.Load() & q.mask
	n := 0
	var err error
	for i := range wrs {
		wr := &wrs[i]
		if len(wr.SGL) > int(p.cap.MaxRecvSGE) {
			err = fmt.Errorf("%w: %d SGEs exceed the QP's %d receive SGEs", provider.ErrInvalidWR, len(wr.SGL), p.cap.MaxRecvSGE)
			break
		}
		if q.next(prod) == q.cons.Load()&q.mask {
			err = provider.ErrQueueFull
			break
		}
		b := q.slot(prod)
		clear(b[:sizeofRecvWQE])
		le.PutUint64(b[rwqeOffWRID:], wr.ID)
		length := putSGEs(b[rwqeOffSGE:], wr.SGL)
		d := b[rwqeOffDMA:]
		le.PutUint32(d[dmaOffLength:], uint32(length))
		le.PutUint32(d[dmaOffResid:], uint32(length))
		le.PutUint32(d[dmaOffNumSGE:], uint32(len(wr.SGL)))
		prod = q.next(prod)
		n++
	}
	if n > 0 {
		// The kernel's responder reads the producer index directly; no
		// doorbell is needed for receives.
		q.prod.Store(prod)
	}
	return n, err
}

// ---- address handle ----

// struct rxe_create_ah_resp: ah_num, reserved. Kernels since 5.11 return a
// non-zero ah_num that UD WQEs name; older ones are not supported here.
const sizeofCreateAHResp = 8

type ah struct{ num uint32 }

func (a *ah) DriverIn() []byte  { return nil }
func (a *ah) DriverOutLen() int { return sizeofCreateAHResp }
func (a *ah) Attach(_ uint32, out []byte) error {
	if len(out) < 4 {
		return fmt.Errorf("rxe: create AH reply of %d bytes, want %d", len(out), sizeofCreateAHResp)
	}
	a.num = binary.LittleEndian.Uint32(out)
	if a.num == 0 {
		return fmt.Errorf("rxe: kernel returned ah_num 0 (kernels before 5.11 need the address vector in every WQE, which this provider does not implement)")
	}
	return nil
}
