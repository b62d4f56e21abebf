package verbs

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/daqiri-go/daqiri/verbs/internal/uapi"
)

// PD is a protection domain: MRs, QPs and AHs made in one PD can be used
// together.
type PD struct {
	ctx    *Context
	handle uint32
	mu     sync.Mutex
	closed bool
}

// AllocPD allocates a protection domain.
func (c *Context) AllocPD() (*PD, error) {
	if err := c.begin(); err != nil {
		return nil, err
	}
	var req uapi.RespOnly
	resp, err := c.write("write ALLOC_PD", &uapi.Write{
		Command: uapi.CmdAllocPD,
		Req:     uapi.Bytes(&req),
		RespLen: int(unsafe.Sizeof(uapi.AllocPDResp{})),
	})
	if err != nil {
		return nil, err
	}
	var r uapi.AllocPDResp
	copy(uapi.Bytes(&r), resp)
	pd := &PD{ctx: c, handle: r.PDHandle}
	c.track(pd)
	return pd, nil
}

// Context is the context the PD belongs to.
func (pd *PD) Context() *Context { return pd.ctx }

// Handle is the kernel handle (for diagnostics).
func (pd *PD) Handle() uint32 { return pd.handle }

func (pd *PD) begin() error {
	pd.mu.Lock()
	closed := pd.closed
	pd.mu.Unlock()
	if closed {
		return fmt.Errorf("%w: PD %d", ErrClosed, pd.handle)
	}
	return pd.ctx.begin()
}

// Close deallocates the PD. The kernel refuses (EBUSY) while MRs, QPs or
// AHs of the PD exist.
func (pd *PD) Close() error {
	pd.mu.Lock()
	defer pd.mu.Unlock()
	if pd.closed {
		return nil
	}
	if err := pd.ctx.begin(); err != nil {
		return err
	}
	if err := pd.ctx.destroy(uapi.ObjectPD, uapi.MethodPDDestroy, uapi.AttrDestroyPDHandle, pd.handle, "ioctl PD_DESTROY"); err != nil {
		return err
	}
	pd.closed = true
	pd.ctx.untrack(pd)
	return nil
}

func (pd *PD) release() {
	pd.mu.Lock()
	pd.closed = true
	pd.mu.Unlock()
}

// Access is enum ib_uverbs_access_flags: what an MR (or a QP's remote
// peers) may do.
type Access uint32

// Access flags.
const (
	AccessLocalWrite   Access = 1 << 0
	AccessRemoteWrite  Access = 1 << 1
	AccessRemoteRead   Access = 1 << 2
	AccessRemoteAtomic Access = 1 << 3
	AccessMWBind       Access = 1 << 4
	AccessZeroBased    Access = 1 << 5
	AccessOnDemand     Access = 1 << 6
	AccessHugeTLB      Access = 1 << 7
	// AccessRelaxedOrdering is optional: kernels and devices that do not
	// support it ignore it.
	AccessRelaxedOrdering Access = 1 << 20
)

// MR is a registered memory region.
type MR struct {
	pd     *PD
	handle uint32
	// LKey names the region in local work requests (SGE.LKey).
	LKey uint32
	// RKey names it to remote peers (RDMA READ/WRITE, atomics).
	RKey uint32
	// Addr is the I/O virtual address the keys cover, Length its size.
	Addr   uint64
	Length uint64

	mu     sync.Mutex
	closed bool
}

// RegMR registers buf for access by the device. buf must stay mapped and
// must not move while the MR lives: use memory outside the Go heap (mmap'd
// anonymous or hugepage memory, see the hugepage package). The MR's I/O
// address is buf's address.
func (pd *PD) RegMR(buf []byte, access Access) (*MR, error) {
	a := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(buf))))
	return pd.RegMRAddr(a, uint64(len(buf)), a, access)
}

// RegMRAddr registers length bytes at user address addr, reachable by the
// device at I/O virtual address iova (iova and addr must share their offset
// within a page). The memory must stay mapped while the MR lives.
func (pd *PD) RegMRAddr(addr, length, iova uint64, access Access) (*MR, error) {
	if err := pd.begin(); err != nil {
		return nil, err
	}
	req := uapi.RegMR{Start: addr, Length: length, HCAVA: iova, PDHandle: pd.handle, AccessFlags: uint32(access)}
	resp, err := pd.ctx.write("write REG_MR", &uapi.Write{
		Command: uapi.CmdRegMR,
		Req:     uapi.Bytes(&req),
		RespLen: int(unsafe.Sizeof(uapi.RegMRResp{})),
	})
	if err != nil {
		return nil, err
	}
	var r uapi.RegMRResp
	copy(uapi.Bytes(&r), resp)
	mr := &MR{pd: pd, handle: r.MRHandle, LKey: r.LKey, RKey: r.RKey, Addr: iova, Length: length}
	pd.ctx.track(mr)
	return mr, nil
}

// RegDMABufMR registers length bytes at offset of a DMA-BUF (fd), reachable
// at iova: the path for GPU memory exported by its driver. Providers whose
// kernel driver lacks DMA-BUF support fail with an error matching
// ErrNotSupported.
func (pd *PD) RegDMABufMR(fd int, offset, length, iova uint64, access Access) (*MR, error) {
	if err := pd.begin(); err != nil {
		return nil, err
	}
	var lkey, rkey [4]byte
	call := pd.ctx.newCall(uapi.ObjectMR, uapi.MethodRegDMABufMR)
	h := call.NewIDR(uapi.AttrRegDMABufMRHandle)
	call.IDR(uapi.AttrRegDMABufMRPDHandle, pd.handle)
	call.U64(uapi.AttrRegDMABufMROffset, offset)
	call.U64(uapi.AttrRegDMABufMRLength, length)
	call.U64(uapi.AttrRegDMABufMRIOVA, iova)
	call.U32(uapi.AttrRegDMABufMRFD, uint32(int32(fd)))
	call.U64(uapi.AttrRegDMABufMRAccessFlags, uint64(access))
	call.Out(uapi.AttrRegDMABufMRRespLKey, lkey[:])
	call.Out(uapi.AttrRegDMABufMRRespRKey, rkey[:])
	if err := call.Do(pd.ctx.fd); err != nil {
		err = pd.ctx.wrap("ioctl REG_DMABUF_MR", err)
		if e, ok := err.(*Error); ok && e.Is(ErrNotSupported) {
			return nil, fmt.Errorf("verbs: driver %q of %s cannot register DMA-BUF memory: %w", pd.ctx.dev.Driver, pd.ctx.dev.Name, err)
		}
		return nil, err
	}
	mr := &MR{pd: pd, handle: call.Handle(h), LKey: le32(lkey[:]), RKey: le32(rkey[:]), Addr: iova, Length: length}
	pd.ctx.track(mr)
	return mr, nil
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// PD is the protection domain of the MR.
func (mr *MR) PD() *PD { return mr.pd }

// SGE is a scatter/gather element covering the whole region.
func (mr *MR) SGE() SGE { return SGE{Addr: mr.Addr, Length: uint32(mr.Length), LKey: mr.LKey} }

// Slice is an SGE for length bytes at offset within the region.
func (mr *MR) Slice(offset, length uint64) (SGE, error) {
	if offset > mr.Length || length > mr.Length-offset || length > 1<<32-1 {
		return SGE{}, fmt.Errorf("verbs: range [%d, +%d) is outside the %d-byte MR", offset, length, mr.Length)
	}
	return SGE{Addr: mr.Addr + offset, Length: uint32(length), LKey: mr.LKey}, nil
}

// Close deregisters the MR.
func (mr *MR) Close() error {
	mr.mu.Lock()
	defer mr.mu.Unlock()
	if mr.closed {
		return nil
	}
	if err := mr.pd.ctx.begin(); err != nil {
		return err
	}
	if err := mr.pd.ctx.destroy(uapi.ObjectMR, uapi.MethodMRDestroy, uapi.AttrDestroyMRHandle, mr.handle, "ioctl MR_DESTROY"); err != nil {
		return err
	}
	mr.closed = true
	mr.pd.ctx.untrack(mr)
	return nil
}

func (mr *MR) release() {
	mr.mu.Lock()
	mr.closed = true
	mr.mu.Unlock()
}
