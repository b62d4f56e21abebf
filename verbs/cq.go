package verbs

import (
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/daqiri-go/daqiri/verbs/internal/uapi"
	"github.com/daqiri-go/daqiri/verbs/provider"
)

// CompChannel delivers "a completion arrived" notifications of the CQs
// attached to it, for blocking waits instead of busy polling.
type CompChannel struct {
	ctx    *Context
	fd     int
	mu     sync.Mutex
	closed bool
}

// CreateCompChannel creates a completion channel.
func (c *Context) CreateCompChannel() (*CompChannel, error) {
	if err := c.begin(); err != nil {
		return nil, err
	}
	var req uapi.RespOnly
	resp, err := c.write("write CREATE_COMP_CHANNEL", &uapi.Write{
		Command: uapi.CmdCreateCompChannel,
		Req:     uapi.Bytes(&req),
		RespLen: int(unsafe.Sizeof(uapi.CreateCompChannelResp{})),
	})
	if err != nil {
		return nil, err
	}
	ch := &CompChannel{ctx: c, fd: int(int32(binary.NativeEndian.Uint32(resp)))}
	unix.CloseOnExec(ch.fd)
	c.track(ch)
	return ch, nil
}

// FD is the channel's file descriptor: readable when an event is pending
// (for epoll); consume events with Wait.
func (ch *CompChannel) FD() int { return ch.fd }

// Wait blocks up to timeout (negative: indefinitely) for the next
// notification and returns the CQ it is for, or ErrTimeout. A CQ notifies
// once per ReqNotify; re-arm it before polling it empty.
func (ch *CompChannel) Wait(timeout time.Duration) (*CQ, error) {
	ch.mu.Lock()
	closed := ch.closed
	ch.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("%w: completion channel", ErrClosed)
	}
	var d uapi.CompEventDesc
	if err := readEvent(ch.fd, uapi.Bytes(&d), timeout); err != nil {
		return nil, ch.ctx.wrapEvent("read completion event", err)
	}
	cq, _ := ch.ctx.lookup(d.CQHandle).(*CQ)
	if cq == nil {
		return nil, fmt.Errorf("verbs: completion event for unknown CQ user handle %d on %s", d.CQHandle, ch.ctx.dev.Name)
	}
	cq.compEvents.Add(1)
	return cq, nil
}

// Close closes the channel. The kernel keeps it alive while CQs use it.
func (ch *CompChannel) Close() error {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.closed {
		return nil
	}
	ch.closed = true
	ch.ctx.untrack(ch)
	return ch.ctx.wrap("close completion channel", unix.Close(ch.fd))
}

func (ch *CompChannel) release() {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if !ch.closed {
		ch.closed = true
		unix.Close(ch.fd)
	}
}

// CQ is a completion queue.
type CQ struct {
	ctx     *Context
	handle  uint32
	userID  uint64
	cqe     int
	prov    provider.CQ
	channel *CompChannel

	compEvents atomic.Uint64

	// closed is read on every poll, so it is atomic; mu serialises Close.
	closed atomic.Bool
	mu     sync.Mutex
}

// CreateCQ creates a completion queue of at least cqe entries. ch (may be
// nil) receives its notifications; compVector picks the completion vector
// (below NumCompVectors).
func (c *Context) CreateCQ(cqe int, ch *CompChannel, compVector int) (*CQ, error) {
	if err := c.begin(); err != nil {
		return nil, err
	}
	if cqe <= 0 || cqe > 1<<31-1 {
		return nil, fmt.Errorf("verbs: CQ depth %d is out of range", cqe)
	}
	if compVector < 0 {
		return nil, fmt.Errorf("verbs: completion vector %d is negative", compVector)
	}
	pcq, err := c.prov.NewCQ(cqe)
	if err != nil {
		return nil, fmt.Errorf("verbs: provider CQ on %s: %w", c.dev.Name, err)
	}
	cq := &CQ{ctx: c, prov: pcq, channel: ch}
	cq.userID = c.register(cq)

	var respCQE [4]byte
	call := c.newCall(uapi.ObjectCQ, uapi.MethodCQCreate)
	h := call.NewIDR(uapi.AttrCreateCQHandle)
	call.U32(uapi.AttrCreateCQCQE, uint32(cqe))
	call.U64(uapi.AttrCreateCQUserHandle, cq.userID)
	if ch != nil {
		call.FD(uapi.AttrCreateCQCompChannel, ch.fd)
	}
	call.U32(uapi.AttrCreateCQCompVector, uint32(compVector))
	call.Out(uapi.AttrCreateCQRespCQE, respCQE[:])
	drvOut := addUHW(call, pcq)
	if err := call.Do(c.fd); err != nil {
		c.unregister(cq.userID)
		_ = pcq.Release()
		return nil, c.wrap("ioctl CQ_CREATE", err)
	}
	cq.handle = call.Handle(h)
	cq.cqe = int(binary.NativeEndian.Uint32(respCQE[:]))
	if err := pcq.Attach(cq.handle, cq.cqe, drvOut); err != nil {
		_ = cq.destroyKernel()
		c.unregister(cq.userID)
		return nil, fmt.Errorf("verbs: provider CQ on %s: %w", c.dev.Name, err)
	}
	c.track(cq)
	return cq, nil
}

// CQE is the depth the kernel granted (at least what was asked for).
func (cq *CQ) CQE() int { return cq.cqe }

// Handle is the kernel handle (for diagnostics).
func (cq *CQ) Handle() uint32 { return cq.handle }

// Channel is the completion channel the CQ notifies, or nil.
func (cq *CQ) Channel() *CompChannel { return cq.channel }

func (cq *CQ) begin() error {
	if cq.closed.Load() {
		return fmt.Errorf("%w: CQ %d", ErrClosed, cq.handle)
	}
	return cq.ctx.begin()
}

// Poll moves up to len(wc) completions into wc and returns how many.
func (cq *CQ) Poll(wc []WorkCompletion) (int, error) {
	if err := cq.begin(); err != nil {
		return 0, err
	}
	return cq.prov.Poll(wc)
}

// ReqNotify arms the CQ: the next completion (or, with solicitedOnly, the
// next solicited one) raises one event on its completion channel.
func (cq *CQ) ReqNotify(solicitedOnly bool) error {
	if err := cq.begin(); err != nil {
		return err
	}
	req := uapi.ReqNotifyCQ{CQHandle: cq.handle}
	if solicitedOnly {
		req.SolicitedOnly = 1
	}
	_, err := cq.ctx.write("write REQ_NOTIFY_CQ", &uapi.Write{Command: uapi.CmdReqNotifyCQ, Req: uapi.Bytes(&req)})
	return err
}

// CompEvents counts the channel notifications delivered for this CQ.
func (cq *CQ) CompEvents() uint64 {
	return cq.compEvents.Load()
}

func (cq *CQ) destroyKernel() error {
	var resp uapi.DestroyCQResp
	call := cq.ctx.newCall(uapi.ObjectCQ, uapi.MethodCQDestroy)
	call.IDR(uapi.AttrDestroyCQHandle, cq.handle)
	call.Out(uapi.AttrDestroyCQResp, uapi.Bytes(&resp))
	return cq.ctx.wrap("ioctl CQ_DESTROY", call.Do(cq.ctx.fd))
}

// Close destroys the CQ. The kernel refuses (EBUSY) while a QP uses it.
func (cq *CQ) Close() error {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if cq.closed.Load() {
		return nil
	}
	if err := cq.ctx.begin(); err != nil {
		return err
	}
	if err := cq.destroyKernel(); err != nil {
		return err
	}
	cq.closed.Store(true)
	cq.ctx.untrack(cq)
	cq.ctx.unregister(cq.userID)
	return cq.prov.Release()
}

func (cq *CQ) release() {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if !cq.closed.Load() {
		cq.closed.Store(true)
		_ = cq.prov.Release()
	}
}
