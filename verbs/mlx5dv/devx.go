package mlx5dv

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/daqiri-go/daqiri/internal/iomem"
	"github.com/daqiri-go/daqiri/verbs"
	"github.com/daqiri-go/daqiri/verbs/internal/dv"
	"github.com/daqiri-go/daqiri/verbs/internal/uapi"
	"github.com/daqiri-go/daqiri/verbs/mlx5dv/internal/mlx5abi"
	"github.com/daqiri-go/daqiri/verbs/provider"
)

// ErrNotMLX5 is what every mlx5-only call returns (wrapped, naming the call, and with the
// kernel's errno where the kernel was asked) on a device whose driver is not mlx5, such as
// Soft-RoCE. mlx5/channel re-exports it as channel.ErrNotMLX5.
var ErrNotMLX5 = errors.New("device is not mlx5")

// MaxCommandSize bounds one PRM command input or output through DevX: an ioctl attribute's
// length is 16 bits (struct ib_uverbs_attr).
const MaxCommandSize = 0xffff

// DevX is an RDMA device opened for DevX: PRM commands and objects from user space through
// the mlx5 driver's ioctl methods (Linux drivers/infiniband/hw/mlx5/devx.c), with the user
// context made as rdma-core's mlx5dv_open_device(MLX5DV_CONTEXT_FLAGS_DEVX) makes it. On an
// mlx5 device the kernel stamps every command with the context's DevX uid and builds each
// object's destroy command itself, so closing the context (or the process) destroys what it
// made.
//
// On a device of another driver Open still opens the generic context (Context, AllocPD and
// everything else package verbs offers work), and every mlx5-only method is still asked of
// the kernel, which refuses it; the error wraps ErrNotMLX5, names the method and keeps the
// errno.
type DevX struct {
	ctx  *verbs.Context // nil in tests
	k    dv.Kernel      // the context's calls; tests record them instead
	mlx5 bool
	info Info
}

// Info is the mlx5 driver's answer to the user context request (struct
// mlx5_ib_alloc_ucontext_resp, rdma/mlx5-abi.h): UAR and BlueFlame layout, cache line,
// the minimum inline header the device needs, clock information.
type Info struct {
	QPTableSize   uint32
	BFRegSize     uint32 // bytes of one BlueFlame register (half a buffer pair)
	TotalBFRegs   uint32
	CacheLineSize uint32
	MaxSQDescSize uint16
	MaxRQDescSize uint16
	MaxSendWQEBB  uint32
	MaxRecvWR     uint32
	NumPorts      uint16
	CQEVersion    uint8
	// EthMinInline is the device's minimum inline mode for Ethernet send WQEs
	// (MLX5_USER_INLINE_MODE_* + 1 when set; 0 when the kernel did not report it).
	EthMinInline      uint8
	ClockInfoVersions uint8
	// CoreClockOffset is the page offset of the free-running clock in the clock mapping,
	// when HasCoreClockOffset.
	CoreClockOffset    uint64
	HasCoreClockOffset bool
	// RealTimeTS: CQE timestamps are in real-time format (nanoseconds since the epoch).
	RealTimeTS     bool
	LogUARSize     uint32
	NumUARsPerPage uint32
	NumDynBFRegs   uint32
}

// Open opens an RDMA device by name for DevX. On an mlx5 device it asks for a DevX user
// context (MLX5_IB_ALLOC_UCTX_DEVX, dynamic 4K UARs); on any other it opens the device's own
// provider so the generic parts stay usable (see DevX).
func Open(name string) (*DevX, error) {
	dev, err := verbs.LookupDevice(name)
	if err != nil {
		return nil, err
	}
	if dev.Driver != "mlx5" {
		// The device's own provider, wrapped to receive the context's calls; a driver
		// without one fails in verbs.OpenDevice as it would without DevX.
		var opts *verbs.Options
		w := &wrapped{}
		if w.inner = dv.BuiltinProvider(dev.Driver); w.inner != nil {
			opts = &verbs.Options{Provider: w}
		}
		c, err := verbs.OpenDevice(dev, opts)
		if err != nil {
			return nil, fmt.Errorf("mlx5dv: DevX on %s (driver %q): %w; its own provider: %w", dev.Name, dev.Driver, ErrNotMLX5, err)
		}
		return &DevX{ctx: c, k: w.k}, nil
	}
	p := &devxProvider{}
	c, err := verbs.OpenDevice(dev, &verbs.Options{Provider: p})
	if err != nil {
		return nil, fmt.Errorf("mlx5dv: DevX user context on %s (the device and its firmware must offer DevX): %w", dev.Name, err)
	}
	return &DevX{ctx: c, k: p.ctx.k, mlx5: true, info: p.ctx.info()}, nil
}

// Context is the generic verbs context (PDs, queries, the async event file).
func (d *DevX) Context() *verbs.Context { return d.ctx }

// IsMLX5 reports whether the device's driver is mlx5.
func (d *DevX) IsMLX5() bool { return d.mlx5 }

// Info is the mlx5 driver's answer to the DevX user context (zero on another driver).
func (d *DevX) Info() Info { return d.info }

// Close closes the context; the kernel destroys every object, UMEM, UAR and flow it still
// holds.
func (d *DevX) Close() error { return d.ctx.Close() }

// run issues an mlx5 method and turns a failure into an error naming it.
func (d *DevX) run(method string, call *uapi.Call) error {
	if err := d.k.Begin(); err != nil {
		return err
	}
	err := d.k.Do(call)
	if err == nil {
		return nil
	}
	werr := d.k.Wrap("ioctl "+method, err)
	if !d.mlx5 {
		return d.notMLX5("ioctl "+method, werr)
	}
	return werr
}

func (d *DevX) notMLX5(op string, kernel error) error {
	name, driver := d.k.Device()
	return &notMLX5Error{op: op, dev: name, driver: driver, kernel: kernel}
}

// notMLX5Error is an mlx5 method the kernel refused because the device is not mlx5: it
// matches ErrNotMLX5 and the kernel's error (a *verbs.Error with the errno).
type notMLX5Error struct {
	op, dev, driver string
	kernel          error
}

func (e *notMLX5Error) Error() string {
	k := e.kernel.Error()
	var ke *verbs.Error
	if errors.As(e.kernel, &ke) {
		k = fmt.Sprintf("%v (%s)", ke.Errno.Error(), dv.ErrnoName(ke.Errno))
	}
	return fmt.Sprintf("mlx5dv: %s on %s: %v (driver %q; the kernel: %s)", e.op, e.dev, ErrNotMLX5, e.driver, k)
}

func (e *notMLX5Error) Unwrap() []error { return []error{ErrNotMLX5, e.kernel} }

func (d *DevX) call(object, method uint16) *uapi.Call { return d.k.NewCall(object, method) }

func checkCmd(method string, in, out []byte) error {
	// The kernel wants at least the general command headers (16 bytes each way: devx.c's
	// UVERBS_ATTR_MIN_SIZE(MLX5_ST_SZ_BYTES(general_obj_in/out_cmd_hdr))).
	if len(in) < 16 || len(in) > MaxCommandSize || len(out) < 16 || len(out) > MaxCommandSize {
		return fmt.Errorf("mlx5dv: %s: command input of %d bytes and output of %d bytes; each must be 16 to %d bytes", method, len(in), len(out), MaxCommandSize)
	}
	return nil
}

// General runs a PRM command that creates no object (DEVX_OTHER): the kernel allows only
// general commands (queries of the device, devx.c devx_is_general_cmd). A command the
// firmware completed with a bad status fails with an error matching unix.EREMOTEIO, and
// out then holds the status and syndrome (kernels since 5.19 copy it out).
func (d *DevX) General(in, out []byte) error {
	const m = "DEVX_OTHER"
	if err := checkCmd(m, in, out); err != nil {
		return err
	}
	call := d.call(mlx5abi.MLX5ObjectDevX, mlx5abi.MLX5MethodDevXOther)
	call.In(mlx5abi.MLX5AttrDevXOtherCmdIn, in)
	call.Out(mlx5abi.MLX5AttrDevXOtherCmdOut, out)
	return d.run(m, call)
}

// DevXObj is a device object created by a PRM command through DevX (DEVX_OBJ_CREATE).
type DevXObj struct {
	d       *DevX
	handle  uint32
	mu      sync.Mutex
	closed  bool
	untrack func() // forgets it in the context: set when made
}

// CreateObj runs a PRM create command (CREATE_CQ, CREATE_TIR, ALLOC_PD, …) and returns the
// object; its id is in out where the PRM puts it. A firmware failure is as for General.
func (d *DevX) CreateObj(in, out []byte) (*DevXObj, error) {
	const m = "DEVX_OBJ_CREATE"
	if err := checkCmd(m, in, out); err != nil {
		return nil, err
	}
	call := d.call(mlx5abi.MLX5ObjectDevXObj, mlx5abi.MLX5MethodDevXObjCreate)
	h := call.NewIDR(mlx5abi.MLX5AttrDevXObjCreateHandle)
	call.In(mlx5abi.MLX5AttrDevXObjCreateCmdIn, in)
	call.Out(mlx5abi.MLX5AttrDevXObjCreateCmdOut, out)
	if err := d.run(m, call); err != nil {
		return nil, err
	}
	o := &DevXObj{d: d, handle: call.Handle(h)}
	o.untrack = d.k.Track(o.release)
	return o, nil
}

// Handle is the kernel handle (what CREATE_FLOW's DEST_DEVX names).
func (o *DevXObj) Handle() uint32 { return o.handle }

func (o *DevXObj) begin() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return fmt.Errorf("%w: DevX object %d", verbs.ErrClosed, o.handle)
	}
	return nil
}

// Modify runs a PRM modify command on the object (DEVX_OBJ_MODIFY).
func (o *DevXObj) Modify(in, out []byte) error {
	return o.objCmd("DEVX_OBJ_MODIFY", mlx5abi.MLX5MethodDevXObjModify, mlx5abi.MLX5AttrDevXObjModifyHandle, mlx5abi.MLX5AttrDevXObjModifyCmdIn, mlx5abi.MLX5AttrDevXObjModifyCmdOut, in, out)
}

// Query runs a PRM query command on the object (DEVX_OBJ_QUERY).
func (o *DevXObj) Query(in, out []byte) error {
	return o.objCmd("DEVX_OBJ_QUERY", mlx5abi.MLX5MethodDevXObjQuery, mlx5abi.MLX5AttrDevXObjQueryHandle, mlx5abi.MLX5AttrDevXObjQueryCmdIn, mlx5abi.MLX5AttrDevXObjQueryCmdOut, in, out)
}

func (o *DevXObj) objCmd(m string, method, hAttr, inAttr, outAttr uint16, in, out []byte) error {
	if err := checkCmd(m, in, out); err != nil {
		return err
	}
	if err := o.begin(); err != nil {
		return err
	}
	call := o.d.call(mlx5abi.MLX5ObjectDevXObj, method)
	call.IDR(hAttr, o.handle)
	call.In(inAttr, in)
	call.Out(outAttr, out)
	return o.d.run(m, call)
}

// Destroy destroys the object with the destroy command the kernel built from the create.
// A second Destroy returns verbs.ErrClosed.
func (o *DevXObj) Destroy() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return fmt.Errorf("%w: DevX object %d", verbs.ErrClosed, o.handle)
	}
	call := o.d.call(mlx5abi.MLX5ObjectDevXObj, mlx5abi.MLX5MethodDevXObjDestroy)
	call.IDR(mlx5abi.MLX5AttrDevXObjDestroyHandle, o.handle)
	if err := o.d.run("DEVX_OBJ_DESTROY", call); err != nil {
		return err
	}
	o.closed = true
	o.untrack()
	return nil
}

func (o *DevXObj) release() {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
}

// UMEM is memory registered for the device through DevX (DEVX_UMEM_REG): queue and key
// contexts name it by ID.
type UMEM struct {
	d      *DevX
	handle uint32
	// ID is the UMEM id the PRM contexts name (wq_umem_id, dbr_umem_id, …).
	ID      uint32
	Addr    uint64
	Length  uint64
	mu      sync.Mutex
	closed  bool
	untrack func() // forgets it in the context: set when made
}

// RegUMEM registers mem (memory outside the Go heap that stays mapped while the UMEM lives).
func (d *DevX) RegUMEM(mem []byte, access verbs.Access) (*UMEM, error) {
	if len(mem) == 0 {
		return nil, fmt.Errorf("mlx5dv: DEVX_UMEM_REG: empty memory")
	}
	return d.regUMEM(uint64(uintptr(unsafe.Pointer(unsafe.SliceData(mem)))), uint64(len(mem)), -1, access)
}

// RegUMEMDMABuf registers length bytes at offset of a DMA-BUF (GPU memory exported by its
// driver): the kernel reads the ADDR attribute as the offset into the buffer when a DMA-BUF
// fd is given (devx.c devx_umem_get).
func (d *DevX) RegUMEMDMABuf(fd int, offset, length uint64, access verbs.Access) (*UMEM, error) {
	if fd < 0 || length == 0 {
		return nil, fmt.Errorf("mlx5dv: DEVX_UMEM_REG: DMA-BUF fd %d, length %d", fd, length)
	}
	return d.regUMEM(offset, length, fd, access)
}

func (d *DevX) regUMEM(addr, length uint64, fd int, access verbs.Access) (*UMEM, error) {
	var id [4]byte
	call := d.call(mlx5abi.MLX5ObjectDevXUMEM, mlx5abi.MLX5MethodDevXUMEMReg)
	h := call.NewIDR(mlx5abi.MLX5AttrDevXUMEMRegHandle)
	call.U64(mlx5abi.MLX5AttrDevXUMEMRegAddr, addr)
	call.U64(mlx5abi.MLX5AttrDevXUMEMRegLen, length)
	call.U64(mlx5abi.MLX5AttrDevXUMEMRegAccess, uint64(access))
	call.Out(mlx5abi.MLX5AttrDevXUMEMRegOutID, id[:])
	if fd >= 0 {
		call.FD(mlx5abi.MLX5AttrDevXUMEMRegDMABufFD, fd)
	}
	if err := d.run("DEVX_UMEM_REG", call); err != nil {
		return nil, err
	}
	u := &UMEM{d: d, handle: call.Handle(h), ID: binary.NativeEndian.Uint32(id[:]), Addr: addr, Length: length}
	u.untrack = d.k.Track(u.release)
	return u, nil
}

// Close deregisters the memory.
func (u *UMEM) Close() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return nil
	}
	call := u.d.call(mlx5abi.MLX5ObjectDevXUMEM, mlx5abi.MLX5MethodDevXUMEMDereg)
	call.IDR(mlx5abi.MLX5AttrDevXUMEMDeregHandle, u.handle)
	if err := u.d.run("DEVX_UMEM_DEREG", call); err != nil {
		return err
	}
	u.closed = true
	u.untrack()
	return nil
}

func (u *UMEM) release() {
	u.mu.Lock()
	u.closed = true
	u.mu.Unlock()
}

// UARType is the kind of doorbell page (enum mlx5_ib_uapi_uar_alloc_type).
type UARType uint32

// UAR types: BF is mapped write-combining (BlueFlame), NC non-cached.
const (
	UARTypeBF UARType = mlx5abi.MLX5UARAllocTypeBF
	UARTypeNC UARType = mlx5abi.MLX5UARAllocTypeNC
)

// UARPage is a dynamically allocated doorbell page, mapped into this process.
type UARPage struct {
	d      *DevX
	handle uint32
	// PageID is the UAR index that SQ, CQ and EQ contexts name (uar_page).
	PageID  uint32
	Type    UARType
	mem     []byte
	mu      sync.Mutex
	closed  bool
	untrack func() // forgets it in the context: set when made
}

// AllocUAR allocates a doorbell page (UAR_OBJ_ALLOC) and maps it at the offset the kernel
// returns (rdma-core's mlx5 dynamic UAR path).
func (d *DevX) AllocUAR(t UARType) (*UARPage, error) {
	var off [8]byte
	var length, page [4]byte
	call := d.call(mlx5abi.MLX5ObjectUAR, mlx5abi.MLX5MethodUARObjAlloc)
	h := call.NewIDR(mlx5abi.MLX5AttrUARObjAllocHandle)
	call.U64(mlx5abi.MLX5AttrUARObjAllocType, uint64(t))
	call.Out(mlx5abi.MLX5AttrUARObjAllocMmapOffset, off[:])
	call.Out(mlx5abi.MLX5AttrUARObjAllocMmapLength, length[:])
	call.Out(mlx5abi.MLX5AttrUARObjAllocPageID, page[:])
	if err := d.run("UAR_OBJ_ALLOC", call); err != nil {
		return nil, err
	}
	u := &UARPage{d: d, handle: call.Handle(h), PageID: binary.NativeEndian.Uint32(page[:]), Type: t}
	mem, err := d.mmap(int64(binary.NativeEndian.Uint64(off[:])), int(binary.NativeEndian.Uint32(length[:])), unix.PROT_WRITE)
	if err != nil {
		if derr := u.destroy(); derr != nil {
			err = fmt.Errorf("%w (and destroying the UAR: %v)", err, derr)
		}
		return nil, err
	}
	u.mem = mem
	u.untrack = d.k.Track(u.release)
	return u, nil
}

// mmap maps the device file; a failure on another driver wraps ErrNotMLX5.
func (d *DevX) mmap(off int64, length int, prot int) ([]byte, error) {
	if length <= 0 {
		name, _ := d.k.Device()
		return nil, fmt.Errorf("mlx5dv: mmap of %d bytes at %#x on %s", length, off, name)
	}
	b, err := d.k.MmapProt(off, length, prot)
	if err != nil {
		werr := d.k.Wrap(fmt.Sprintf("mmap(%#x, %d)", off, length), err)
		if !d.mlx5 {
			return nil, d.notMLX5(fmt.Sprintf("mmap of mlx5 page %#x", off), werr)
		}
		return nil, werr
	}
	return b, nil
}

func (u *UARPage) destroy() error {
	call := u.d.call(mlx5abi.MLX5ObjectUAR, mlx5abi.MLX5MethodUARObjDestroy)
	call.IDR(mlx5abi.MLX5AttrUARObjDestroyHandle, u.handle)
	return u.d.run("UAR_OBJ_DESTROY", call)
}

// Write64 stores v big-endian at byte offset off of the page as one 64-bit store (the
// doorbell register, BlueFlame). off must be 8-byte aligned and inside the page.
func (u *UARPage) Write64(off uint32, v uint64) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	iomem.Store64((*[8]byte)(u.word(off, 8)), binary.NativeEndian.Uint64(b[:]))
}

// Write32 stores v big-endian at off as one 32-bit store.
func (u *UARPage) Write32(off uint32, v uint32) {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	iomem.Store32((*[4]byte)(u.word(off, 4)), binary.NativeEndian.Uint32(b[:]))
}

func (u *UARPage) word(off uint32, n uint32) []byte {
	if off%n != 0 || uint64(off)+uint64(n) > uint64(len(u.mem)) {
		panic(fmt.Sprintf("mlx5dv: UAR page %d: %d-byte store at offset %#x outside the %d-byte page or unaligned", u.PageID, n, off, len(u.mem)))
	}
	return u.mem[off : off+n]
}

// Close unmaps and frees the page.
func (u *UARPage) Close() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return nil
	}
	if err := unix.Munmap(u.mem); err != nil {
		return u.d.k.Wrap("munmap UAR", err)
	}
	u.mem = nil
	if err := u.destroy(); err != nil {
		return err
	}
	u.closed = true
	u.untrack()
	return nil
}

func (u *UARPage) release() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.mem != nil {
		unix.Munmap(u.mem)
		u.mem = nil
	}
	u.closed = true
}

// QueryEQN returns the event queue number of completion vector (DEVX_QUERY_EQN): what a
// CQ context names in c_eqn.
func (d *DevX) QueryEQN(vector uint32) (uint32, error) {
	var eqn [4]byte
	call := d.call(mlx5abi.MLX5ObjectDevX, mlx5abi.MLX5MethodDevXQueryEQN)
	// A PTR_IN of type u32: the kernel refuses a longer attribute with EINVAL (devx.c
	// MLX5_IB_METHOD_DEVX_QUERY_EQN; uverbs_ioctl.c uverbs_process_attr), which the first
	// run against mlx5_ib showed when this passed 8 bytes.
	call.U32(mlx5abi.MLX5AttrDevXQueryEQNUserVec, vector)
	call.Out(mlx5abi.MLX5AttrDevXQueryEQNDevEQN, eqn[:])
	if err := d.run(fmt.Sprintf("DEVX_QUERY_EQN(vector %d)", vector), call); err != nil {
		return 0, err
	}
	return binary.NativeEndian.Uint32(eqn[:]), nil
}

// QueryUAR returns the device UAR index of the context's static UAR userIdx
// (DEVX_QUERY_UAR).
func (d *DevX) QueryUAR(userIdx uint32) (uint32, error) {
	var idx [4]byte
	call := d.call(mlx5abi.MLX5ObjectDevX, mlx5abi.MLX5MethodDevXQueryUAR)
	call.U32(mlx5abi.MLX5AttrDevXQueryUARUserIdx, userIdx) // PTR_IN u32, as QUERY_EQN's vector
	call.Out(mlx5abi.MLX5AttrDevXQueryUARDevIdx, idx[:])
	if err := d.run(fmt.Sprintf("DEVX_QUERY_UAR(%d)", userIdx), call); err != nil {
		return 0, err
	}
	return binary.NativeEndian.Uint32(idx[:]), nil
}

// PDN returns the device's number for a PD made through the verbs context (MLX5 PD_QUERY):
// what PRM contexts (MKEY, QP) name as pd.
func (d *DevX) PDN(pd *verbs.PD) (uint32, error) {
	h, err := d.k.PD(pd)
	if err != nil {
		return 0, err
	}
	var pdn [4]byte
	call := d.call(uapi.ObjectPD, mlx5abi.MLX5MethodPDQuery)
	call.IDR(mlx5abi.MLX5AttrQueryPDHandle, h)
	call.Out(mlx5abi.MLX5AttrQueryPDRespPDN, pdn[:])
	if err := d.run("PD_QUERY", call); err != nil {
		return 0, err
	}
	return binary.NativeEndian.Uint32(pdn[:]), nil
}

// ClockInfo reads the kernel's clock information page (MLX5_IB_MMAP_CLOCK_INFO, mapped
// read-only): what converts the free-running counter in CQE timestamps to nanoseconds.
func (d *DevX) ClockInfo() (ClockInfo, error) {
	if err := d.k.Begin(); err != nil {
		return ClockInfo{}, err
	}
	page := unix.Getpagesize()
	b, err := d.mmap(int64(mlx5abi.MLX5MmapClockInfo<<mlx5abi.MLX5MmapCmdShift)*int64(page), page, unix.PROT_READ)
	if err != nil {
		return ClockInfo{}, err
	}
	defer unix.Munmap(b)
	var ci mlx5abi.MLX5ClockInfo
	raw := uapi.Bytes(&ci)
	// The kernel updates the page under a sequence count in sign (odd while writing);
	// bounded retries, as rdma-core's mlx5dv_get_clock_info.
	sign := (*uint32)(unsafe.Pointer(&b[0]))
	for range 1000 {
		s := atomic.LoadUint32(sign)
		if s&1 != 0 {
			continue
		}
		copy(raw, b)
		if atomic.LoadUint32(sign) == s {
			return ClockInfo{Nsec: ci.Nsec, Cycles: ci.Cycles, Frac: ci.Frac, Mult: ci.Mult, Shift: ci.Shift, Mask: ci.Mask, OverflowPeriod: ci.OverflowPeriod}, nil
		}
	}
	name, _ := d.k.Device()
	return ClockInfo{}, fmt.Errorf("mlx5dv: clock info page of %s kept changing", name)
}

// ClockInfo converts the device's free-running counter to nanoseconds: ns = Nsec +
// ((cycles - Cycles) & Mask) * Mult >> Shift (struct mlx5_ib_clock_info).
type ClockInfo struct {
	Nsec, Cycles, Frac, Mask, OverflowPeriod uint64
	Mult, Shift                              uint32
}

// ---- steering: the kernel's flow matcher and CREATE_FLOW ----

// FlowTableType is enum mlx5_ib_uapi_flow_table_type.
type FlowTableType uint8

// Flow table types.
const (
	FlowTableNICRX FlowTableType = mlx5abi.MLX5FlowTableTypeNICRX
	FlowTableNICTX FlowTableType = mlx5abi.MLX5FlowTableTypeNICTX
)

// MatchParamsSize is the size of a match mask or value: the PRM's fte_match_param (0x1000
// bits in mlx5_ifc.h), which is what mlx5_ib copies both into (struct mlx5_flow_spec,
// include/linux/mlx5/fs.h). The ioctl attributes accept up to sizeof(struct
// mlx5_ib_match_params), 0x280 bytes, but Linux 6.1's CREATE_FLOW copies the value's whole
// length into the 0x200-byte spec (fs.c _create_raw_flow_rule): a longer value overflows it,
// which a FORTIFY_SOURCE kernel turns into a BUG in the middle of the ioctl (seen in the mlx5
// conformance VM). So masks and values go out as exactly one fte_match_param.
const MatchParamsSize = 0x200

// MatcherSpec describes a flow matcher: which fields rules match (Mask, an fte_match_param
// of at most MatchParamsSize bytes, zero-padded; all zero matches every frame), which of its
// parts are enabled (CriteriaEnable, the PRM's match_criteria_enable bits), the priority and
// the table type.
type MatcherSpec struct {
	Mask           []byte
	CriteriaEnable uint8
	Priority       uint16
	Table          FlowTableType
}

// FlowMatcher is a kernel flow matcher (MLX5_IB_OBJECT_FLOW_MATCHER).
type FlowMatcher struct {
	d       *DevX
	handle  uint32
	mu      sync.Mutex
	closed  bool
	untrack func() // forgets it in the context: set when made
}

func matchParams(what string, b []byte) ([]byte, error) {
	if len(b) > MatchParamsSize {
		return nil, fmt.Errorf("mlx5dv: flow %s of %d bytes exceeds the %d-byte fte_match_param", what, len(b), MatchParamsSize)
	}
	p := make([]byte, MatchParamsSize)
	copy(p, b)
	return p, nil
}

// CreateFlowMatcher creates a matcher that flows are added under.
func (d *DevX) CreateFlowMatcher(s MatcherSpec) (*FlowMatcher, error) {
	mask, err := matchParams("matcher mask", s.Mask)
	if err != nil {
		return nil, err
	}
	var prio [2]byte
	binary.NativeEndian.PutUint16(prio[:], s.Priority)
	call := d.call(mlx5abi.MLX5ObjectFlowMatcher, mlx5abi.MLX5MethodFlowMatcherCreate)
	h := call.NewIDR(mlx5abi.MLX5AttrFlowMatcherCreateHandle)
	call.In(mlx5abi.MLX5AttrFlowMatcherMatchMask, mask)
	call.Enum(mlx5abi.MLX5AttrFlowMatcherFlowType, mlx5abi.MLX5FlowTypeNormal, prio[:])
	call.In(mlx5abi.MLX5AttrFlowMatcherMatchCriteria, []byte{s.CriteriaEnable})
	call.U64(mlx5abi.MLX5AttrFlowMatcherFTType, uint64(s.Table))
	if err := d.run("FLOW_MATCHER_CREATE", call); err != nil {
		return nil, err
	}
	m := &FlowMatcher{d: d, handle: call.Handle(h)}
	m.untrack = d.k.Track(m.release)
	return m, nil
}

// Close destroys the matcher; the kernel refuses while flows use it.
func (m *FlowMatcher) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	call := m.d.call(mlx5abi.MLX5ObjectFlowMatcher, mlx5abi.MLX5MethodFlowMatcherDestroy)
	call.IDR(mlx5abi.MLX5AttrFlowMatcherDestroyHandle, m.handle)
	if err := m.d.run("FLOW_MATCHER_DESTROY", call); err != nil {
		return err
	}
	m.closed = true
	m.untrack()
	return nil
}

func (m *FlowMatcher) release() {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
}

// FlowSpec is one flow rule under a matcher: the match value and what happens to a
// matching frame — forwarded to Dest (a DevX TIR or flow table) or dropped, tagged with Tag
// (the CQE's flow tag) when HasTag, through Actions (packet reformat contexts).
type FlowSpec struct {
	Value   []byte
	Dest    *DevXObj
	Drop    bool
	Tag     uint32
	HasTag  bool
	Actions []*FlowAction
}

// Flow is a kernel flow rule (CREATE_FLOW).
type Flow struct {
	d       *DevX
	handle  uint32
	mu      sync.Mutex
	closed  bool
	untrack func() // forgets it in the context: set when made
}

// CreateFlow adds a rule under the matcher.
func (m *FlowMatcher) CreateFlow(s FlowSpec) (*Flow, error) {
	if s.Drop == (s.Dest != nil) {
		return nil, fmt.Errorf("mlx5dv: CREATE_FLOW needs exactly one of a destination and drop (dest %v, drop %v)", s.Dest != nil, s.Drop)
	}
	value, err := matchParams("match value", s.Value)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("%w: flow matcher %d", verbs.ErrClosed, m.handle)
	}
	d := m.d
	call := d.call(uapi.ObjectFlow, mlx5abi.MLX5MethodCreateFlow)
	h := call.NewIDR(mlx5abi.MLX5AttrCreateFlowHandle)
	call.In(mlx5abi.MLX5AttrCreateFlowMatchValue, value)
	call.IDR(mlx5abi.MLX5AttrCreateFlowMatcher, m.handle)
	if s.Dest != nil {
		call.IDR(mlx5abi.MLX5AttrCreateFlowDestDevX, s.Dest.handle)
	}
	if len(s.Actions) > 0 {
		hs := make([]uint32, len(s.Actions))
		for i, a := range s.Actions {
			hs[i] = a.handle
		}
		call.Handles(mlx5abi.MLX5AttrCreateFlowArrFlowActions, hs)
	}
	if s.HasTag {
		call.U32(mlx5abi.MLX5AttrCreateFlowTag, s.Tag)
	}
	if s.Drop {
		call.U64(mlx5abi.MLX5AttrCreateFlowFlags, mlx5abi.MLX5CreateFlowFlagsDrop)
	}
	if err := d.run("CREATE_FLOW", call); err != nil {
		return nil, err
	}
	f := &Flow{d: d, handle: call.Handle(h)}
	f.untrack = d.k.Track(f.release)
	return f, nil
}

// Close deletes the rule.
func (f *Flow) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	call := f.d.call(uapi.ObjectFlow, mlx5abi.MLX5MethodDestroyFlow)
	call.IDR(mlx5abi.MLX5AttrDestroyFlowHandle, f.handle)
	if err := f.d.run("DESTROY_FLOW", call); err != nil {
		return err
	}
	f.closed = true
	f.untrack()
	return nil
}

func (f *Flow) release() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
}

// PacketReformatType is enum mlx5_ib_uapi_flow_action_packet_reformat_type.
type PacketReformatType uint8

// Packet reformat types: decapsulation (tunnel to L2) and encapsulation (L2 to tunnel).
const (
	ReformatL2TunnelToL2 PacketReformatType = mlx5abi.MLX5PacketReformatL2TunnelToL2
	ReformatL2ToL2Tunnel PacketReformatType = mlx5abi.MLX5PacketReformatL2ToL2Tunnel
	ReformatL3TunnelToL2 PacketReformatType = mlx5abi.MLX5PacketReformatL3TunnelToL2
	ReformatL2ToL3Tunnel PacketReformatType = mlx5abi.MLX5PacketReformatL2ToL3Tunnel
)

// FlowAction is a kernel flow action (a packet reformat context) that flows name.
type FlowAction struct {
	d       *DevX
	handle  uint32
	mu      sync.Mutex
	closed  bool
	untrack func() // forgets it in the context: set when made
}

// CreatePacketReformat creates a reformat context of type t for tables of type table; data
// is the header to push for encapsulations (none for decapsulation).
func (d *DevX) CreatePacketReformat(t PacketReformatType, table FlowTableType, data []byte) (*FlowAction, error) {
	if len(data) > MaxCommandSize {
		return nil, fmt.Errorf("mlx5dv: packet reformat data of %d bytes", len(data))
	}
	call := d.call(uapi.ObjectFlowAction, mlx5abi.MLX5MethodFlowActionCreatePacketReformat)
	h := call.NewIDR(mlx5abi.MLX5AttrCreatePacketReformatHandle)
	call.U64(mlx5abi.MLX5AttrCreatePacketReformatType, uint64(t))
	call.U64(mlx5abi.MLX5AttrCreatePacketReformatFTType, uint64(table))
	if len(data) > 0 {
		call.In(mlx5abi.MLX5AttrCreatePacketReformatDataBuf, data)
	}
	if err := d.run("FLOW_ACTION_CREATE_PACKET_REFORMAT", call); err != nil {
		return nil, err
	}
	a := &FlowAction{d: d, handle: call.Handle(h)}
	a.untrack = d.k.Track(a.release)
	return a, nil
}

// Close destroys the action (core FLOW_ACTION_DESTROY).
func (a *FlowAction) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil
	}
	call := a.d.call(uapi.ObjectFlowAction, mlx5abi.MethodFlowActionDestroy)
	call.IDR(mlx5abi.AttrDestroyFlowActionHandle, a.handle)
	if err := a.d.run("FLOW_ACTION_DESTROY", call); err != nil {
		return err
	}
	a.closed = true
	a.untrack()
	return nil
}

func (a *FlowAction) release() {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
}

// PP is a packet pacing index (MLX5_IB_OBJECT_PP): SQ contexts name Index to pace at the
// rate the context set.
type PP struct {
	d       *DevX
	handle  uint32
	Index   uint16
	mu      sync.Mutex
	closed  bool
	untrack func() // forgets it in the context: set when made
}

// AllocPP allocates a pacing index for ctx (a PRM set_pp_rate_limit_context); dedicated
// asks for an index of its own even when another user has the same rate.
func (d *DevX) AllocPP(ctx []byte, dedicated bool) (*PP, error) {
	if len(ctx) == 0 || len(ctx) > MaxCommandSize {
		return nil, fmt.Errorf("mlx5dv: PP_OBJ_ALLOC: rate limit context of %d bytes", len(ctx))
	}
	var flags uint64
	if dedicated {
		flags = mlx5abi.MLX5PPAllocFlagsDedicatedIndex
	}
	var idx [2]byte
	call := d.call(mlx5abi.MLX5ObjectPP, mlx5abi.MLX5MethodPPObjAlloc)
	h := call.NewIDR(mlx5abi.MLX5AttrPPObjAllocHandle)
	call.In(mlx5abi.MLX5AttrPPObjAllocCtx, ctx)
	call.U64(mlx5abi.MLX5AttrPPObjAllocFlags, flags)
	call.Out(mlx5abi.MLX5AttrPPObjAllocIndex, idx[:])
	if err := d.run("PP_OBJ_ALLOC", call); err != nil {
		return nil, err
	}
	p := &PP{d: d, handle: call.Handle(h), Index: binary.NativeEndian.Uint16(idx[:])}
	p.untrack = d.k.Track(p.release)
	return p, nil
}

// Close frees the index.
func (p *PP) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	call := p.d.call(mlx5abi.MLX5ObjectPP, mlx5abi.MLX5MethodPPObjDestroy)
	call.IDR(mlx5abi.MLX5AttrPPObjDestroyHandle, p.handle)
	if err := p.d.run("PP_OBJ_DESTROY", call); err != nil {
		return err
	}
	p.closed = true
	p.untrack()
	return nil
}

func (p *PP) release() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
}

// ---- the provider half of a DevX context ----

// devxProvider opens an mlx5 device with a DevX user context and no datapath of its own:
// DevX users create queues with PRM commands.
type devxProvider struct{ ctx *devxContext }

func (p *devxProvider) Name() string     { return "mlx5-devx" }
func (p *devxProvider) DriverID() uint32 { return mlx5abi.DriverMLX5 }
func (p *devxProvider) NewContext(k provider.Kernel) (provider.Context, error) {
	dk, ok := k.(dv.Kernel)
	if !ok {
		return nil, fmt.Errorf("mlx5dv: verbs lent a %T, not its context's ioctl surface", k)
	}
	p.ctx = &devxContext{k: dk}
	return p.ctx, nil
}

type devxContext struct {
	k    dv.Kernel
	resp mlx5abi.MLX5AllocUcontextResp
}

// DriverIn is struct mlx5_ib_alloc_ucontext_req_v2 as rdma-core's mlx5 provider fills it for
// a DevX context with dynamic UARs: the DEVX flag, CQE version 1, 4K and dynamic UAR
// library capabilities; static BlueFlame registers are not needed (UAR_OBJ_ALLOC).
func (c *devxContext) DriverIn() []byte {
	req := mlx5abi.MLX5AllocUcontextReqV2{
		TotalNumBfregs: 4, // one UAR's worth: the kernel rounds up to a UAR and ignores it with DYN_UAR
		Flags:          mlx5abi.MLX5AllocUctxDevX,
		MaxCQEVersion:  1,
		LibCaps:        mlx5abi.MLX5LibCap4KUAR | mlx5abi.MLX5LibCapDynUAR,
	}
	return append([]byte(nil), uapi.Bytes(&req)...)
}

func (c *devxContext) DriverOutLen() int { return int(unsafe.Sizeof(mlx5abi.MLX5AllocUcontextResp{})) }

func (c *devxContext) Attach(out []byte) error {
	copy(uapi.Bytes(&c.resp), out)
	return nil
}

func (c *devxContext) info() Info {
	r := &c.resp
	return Info{
		QPTableSize: r.QPTabSize, BFRegSize: r.BfRegSize, TotalBFRegs: r.TotBfregs, CacheLineSize: r.CacheLineSize,
		MaxSQDescSize: r.MaxSQDescSz, MaxRQDescSize: r.MaxRQDescSz, MaxSendWQEBB: r.MaxSendWQEBB, MaxRecvWR: r.MaxRecvWR,
		NumPorts: r.NumPorts, CQEVersion: r.CQEVersion, EthMinInline: r.EthMinInline, ClockInfoVersions: r.ClockInfoVersions,
		CoreClockOffset: r.HCACoreClockOffset, HasCoreClockOffset: r.CompMask&mlx5abi.MLX5RespMaskCoreClockOffset != 0,
		RealTimeTS: r.CompMask&mlx5abi.MLX5RespMaskRealTimeTS != 0,
		LogUARSize: r.LogUARSize, NumUARsPerPage: r.NumUARsPerPage, NumDynBFRegs: r.NumDynBfregs,
	}
}

var errDevXQueues = fmt.Errorf("%w: a DevX context makes its queues with PRM commands (mlx5dv.DevX)", verbs.ErrNotSupported)

func (c *devxContext) NewCQ(int) (provider.CQ, error)                { return nil, errDevXQueues }
func (c *devxContext) NewQP(provider.QPRequest) (provider.QP, error) { return nil, errDevXQueues }
func (c *devxContext) NewAH() (provider.AHState, error)              { return nil, errDevXQueues }
func (c *devxContext) Close() error                                  { return nil }

// wrapped is a device's own provider (rxe's on Soft-RoCE) with the context's calls kept, so
// that the mlx5 methods can be asked of a device of another driver and refused by its
// kernel.
type wrapped struct {
	inner provider.Provider
	k     dv.Kernel
}

func (w *wrapped) Name() string     { return w.inner.Name() }
func (w *wrapped) DriverID() uint32 { return w.inner.DriverID() }
func (w *wrapped) NewContext(k provider.Kernel) (provider.Context, error) {
	dk, ok := k.(dv.Kernel)
	if !ok {
		return nil, fmt.Errorf("mlx5dv: verbs lent a %T, not its context's ioctl surface", k)
	}
	w.k = dk
	return w.inner.NewContext(k)
}
