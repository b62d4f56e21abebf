// Package modelch is the in-process transport of package channel: the ConnectX device model
// (package model) driven the way a VFIO driver drives a real function, with DevX's object
// rules on top. Open brings the model function up in mlx5_vfio.c's order (ENABLE_HCA,
// ISSI 1, boot pages, the general capabilities, init pages, INIT_HCA) and creates one EQ
// for completions; Exec and Create hand PRM bytes to model.Device.Exec; every created object
// remembers the destroy command built from its create, as the kernel's devx.c does, so that
// Destroy and Close need nothing from the caller.
//
// Memory the engine registers is mapped into the model's DMA space at I/O address = its
// virtual address (the identity mapping DevX UMEMs and the PA keys the engine creates over
// them rely on), then registered with CREATE_UMEM over pages as large as the address and
// length allow. GPU memory comes as a DMA-BUF fd (RegisterDMABuf, as DevX's DEVX_UMEM_REG
// takes one): the channel's importer (mlx5/model/gpudma unless the Fabric gives another)
// resolves it to the CUDA allocation, which is mapped as a window — reached by the GPU's copy
// engine, since the model has no PCIe bus to write it over — at the allocation's device
// address, and registered the same way.
package modelch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/daqiri-go/daqiri/mlx5/internal/live"
	"math/bits"
	"sync"
	"unsafe"

	"github.com/daqiri-go/daqiri/hugepage"
	"github.com/daqiri-go/daqiri/mlx5/channel"
	"github.com/daqiri-go/daqiri/mlx5/model"
	"github.com/daqiri-go/daqiri/mlx5/model/gpudma"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// DMABufImporter resolves the DMA-BUF fds registered through a channel to memory the model
// reaches (gpudma.Importer for CUDA exports; tests give their own).
type DMABufImporter interface {
	Import(fd int, offset, length uint64) (gpudma.Buffer, error)
}

// Channel is one model function opened as a channel.Channel.
type Channel struct {
	dev  *model.Device
	name string

	mu     sync.Mutex
	closed bool
	// live holds every object, UMEM and UAR not yet released, in creation order.
	live  live.Set[releaser]
	pages *hugepage.Mem // firmware pages and the EQ ring, mapped at their addresses
	eqn   uint32
	// imp resolves DMA-BUF fds; own is the importer the channel made itself (nil until the
	// first RegisterDMABuf without one given), closed with the channel.
	imp DMABufImporter
	own *gpudma.Importer
}

type releaser interface{ release() error }

var _ channel.Channel = (*Channel)(nil)

// Open brings dev up and returns its channel, named name in messages ("model:1").
func Open(dev *model.Device, name string) (*Channel, error) {
	c := &Channel{dev: dev, name: name}
	if err := c.bringUp(); err != nil {
		c.unmapPages()
		return nil, fmt.Errorf("%s: bring-up: %w", name, err)
	}
	return c, nil
}

// Device is the model behind the channel (for wiring: Cable, SetWire, Run).
func (c *Channel) Device() *model.Device { return c.dev }

// Name implements channel.Channel.
func (c *Channel) Name() string { return c.name }

// exec runs a command and turns a bad status into a *channel.CommandError.
func (c *Channel) exec(in, out []byte) error {
	err := c.dev.Exec(in, out)
	var ce *model.CmdError
	if errors.As(err, &ce) {
		return &channel.CommandError{Opcode: uint16(ce.Op), OpMod: ce.OpMod, Status: uint8(ce.Status), Syndrome: ce.Syndrome, Name: ce.Op.String(), Detail: ce.Msg}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", c.name, err)
	}
	return nil
}

// bringUp runs the function setup in rdma-core mlx5_vfio.c's order.
func (c *Channel) bringUp() error {
	const pageMem = 4 << 20
	m, err := hugepage.Map(pageMem, false)
	if err != nil {
		return err
	}
	c.pages = m
	if err := c.dev.DMA().Map(uint64(m.Addr()), m.Bytes(), model.DMARead|model.DMAWrite); err != nil {
		m.Close()
		c.pages = nil
		return err
	}
	next := uint64(m.Addr())
	alloc := func(n int) (uint64, error) {
		a := next
		next += uint64((n + 4095) &^ 4095)
		if next > uint64(m.Addr())+pageMem {
			return 0, errors.New("firmware wants more pages than the channel reserved")
		}
		return a, nil
	}
	out := make([]byte, 16)
	if err := c.exec(prm.NewCmdIn(prm.CmdOpEnableHCA, 0, 16), out); err != nil {
		return err
	}
	if err := c.exec(func() []byte {
		b := prm.NewCmdIn(prm.CmdOpSetISSI, 0, 16)
		prm.SetISSIIn.CurrentISSI.Set(b, 1)
		return b
	}(), out); err != nil {
		return err
	}
	give := func(opMod uint16) error {
		if err := c.exec(prm.NewCmdIn(prm.CmdOpQueryPages, opMod, 16), out); err != nil {
			return err
		}
		n := int(int32(uint32(prm.QueryPagesOut.NumPages.Get(out))))
		if n <= 0 {
			return nil
		}
		pas := prm.ManagePagesIn.PAS
		b := prm.NewCmdIn(prm.CmdOpManagePages, prm.ManagePagesGive, pas.ByteOff()+8*n)
		prm.ManagePagesIn.InputNumEntries.Set(b, uint64(n))
		for i := 0; i < n; i++ {
			p, err := alloc(4096)
			if err != nil {
				return err
			}
			pas.At(uint32(i)*64).Set(b, p)
		}
		return c.exec(b, make([]byte, 16))
	}
	if err := give(prm.QueryPagesBoot); err != nil {
		return err
	}
	reg := prm.NewCmdIn(prm.CmdOpAccessReg, prm.AccessRegWrite, 0x20)
	prm.AccessRegisterIn.RegisterID.Set(reg, prm.RegHostEndianness)
	if err := c.exec(reg, make([]byte, 0x20)); err != nil {
		return err
	}
	if err := give(prm.QueryPagesInit); err != nil {
		return err
	}
	if err := c.exec(prm.NewCmdIn(prm.CmdOpInitHCA, 0, 16), out); err != nil {
		return err
	}
	// One EQ for completion events (the engine polls CQs; the EQ is what CQ contexts name).
	uar, err := c.allocUARIndex()
	if err != nil {
		return err
	}
	const logEQ = 6
	ring, err := alloc(64 << logEQ)
	if err != nil {
		return err
	}
	for i := 0; i < 1<<logEQ; i++ {
		// Owner bit 1 in every EQE at first (kernel eq.c init_eq_buf).
		prm.EQE.Owner.Set(c.at(ring+uint64(i)*64, 64), 1)
	}
	base := prm.CreateEQIn.EQContextEntry.Off
	b := prm.NewCmdIn(prm.CmdOpCreateEQ, 0, prm.CreateEQIn.PAS.ByteOff()+8)
	prm.EQC.LogEQSize.At(base).Set(b, logEQ)
	prm.EQC.UARPage.At(base).Set(b, uint64(uar))
	prm.CreateEQIn.PAS.Set(b, ring)
	prm.CreateEQIn.EventBitmask.Set(b, 1<<prm.EventTypeComp|1<<prm.EventTypeCQError)
	if err := c.exec(b, out); err != nil {
		return err
	}
	c.eqn = uint32(prm.CreateEQOut.EQNumber.Get(out))
	return nil
}

// at is the channel's own page memory at I/O address a.
func (c *Channel) at(a uint64, n int) []byte {
	off := a - uint64(c.pages.Addr())
	return c.pages.Bytes()[off : off+uint64(n)]
}

func (c *Channel) allocUARIndex() (uint32, error) {
	out := make([]byte, 16)
	if err := c.exec(prm.NewCmdIn(prm.CmdOpAllocUAR, 0, 16), out); err != nil {
		return 0, err
	}
	return uint32(prm.AllocUAROut.UAR.Get(out)), nil
}

func (c *Channel) unmapPages() {
	if c.pages != nil {
		c.dev.DMA().Unmap(uint64(c.pages.Addr()))
		c.pages.Close()
		c.pages = nil
	}
}

// Exec implements channel.Channel.
func (c *Channel) Exec(in, out []byte) error {
	if c.isClosed() {
		return channel.ErrClosed
	}
	return c.exec(in, out)
}

func (c *Channel) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// Create implements channel.Channel.
func (c *Channel) Create(in, out []byte) (channel.Object, error) {
	if c.isClosed() {
		return nil, channel.ErrClosed
	}
	if len(in) < 8 {
		return nil, fmt.Errorf("%s: create command of %d bytes: %w", c.name, len(in), channel.ErrUnsupported)
	}
	if !prm.Destroyable(in) {
		op := prm.CmdOp(prm.CmdIn.Opcode.Get(in))
		return nil, fmt.Errorf("%s: %v creates no object the channel can destroy: %w", c.name, op, channel.ErrUnsupported)
	}
	if err := c.exec(in, out); err != nil {
		return nil, err
	}
	o := &object{c: c}
	id, destroy, _ := prm.DestroyCommand(in, out)
	o.id = id
	o.destroy = destroy
	c.track(o)
	return o, nil
}

func (c *Channel) track(r releaser) { c.live.Add(r) }

// untrack forgets r; it reports whether r was still live.
func (c *Channel) untrack(r releaser) bool { return c.live.Remove(r) }

type object struct {
	c       *Channel
	id      uint32
	destroy []byte
}

func (o *object) ID() uint32 { return o.id }

func (o *object) Modify(in, out []byte) error { return o.c.Exec(in, out) }

func (o *object) Query(in, out []byte) error { return o.c.Exec(in, out) }

func (o *object) Destroy() error {
	if !o.c.untrack(o) {
		return channel.ErrClosed
	}
	return o.release()
}

func (o *object) release() error { return o.c.exec(o.destroy, make([]byte, 16)) }

// RegisterMemory implements channel.Channel: mem is mapped at its own address and registered
// with CREATE_UMEM.
func (c *Channel) RegisterMemory(mem []byte, access channel.Access) (channel.UMEM, error) {
	if c.isClosed() {
		return nil, channel.ErrClosed
	}
	if len(mem) == 0 {
		return nil, fmt.Errorf("%s: register of zero bytes", c.name)
	}
	addr := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(mem))))
	perm := model.DMARead
	if access&(channel.AccessLocalWrite|channel.AccessRemoteWrite) != 0 {
		perm |= model.DMAWrite
	}
	if err := c.dev.DMA().Map(addr, mem, perm); err != nil {
		return nil, fmt.Errorf("%s: %w", c.name, err)
	}
	um, err := c.createUMEM(addr, uint64(len(mem)))
	if err != nil {
		c.dev.DMA().Unmap(addr)
		return nil, err
	}
	c.track(um)
	return um, nil
}

// createUMEM registers the n bytes mapped at addr with CREATE_UMEM.
func (c *Channel) createUMEM(addr, size uint64) (*umemH, error) {
	// Pages as large as both the address and the length allow (at least the 4 KiB adapter
	// page: the device addresses memory in pages; mlx5_ifc.h umem log_page_size counts from
	// the adapter page shift).
	shift := min(bits.TrailingZeros64(addr), bits.TrailingZeros64(size), 30)
	if shift < prm.AdapterPageShift {
		return nil, fmt.Errorf("%s: memory at %#x of %d bytes is not in whole 4 KiB pages", c.name, addr, size)
	}
	n := int(size >> shift)
	base := prm.CreateUMEMIn.UMEM.Off
	u := prm.UMEM
	in := prm.NewCmdIn(prm.CmdOpCreateUMEM, 0, int(u.Mtt.At(base).ByteOff())+8*n)
	u.LogPageSize.At(base).Set(in, uint64(shift-prm.AdapterPageShift))
	u.NumOfMtt.At(base).Set(in, uint64(n))
	for i := 0; i < n; i++ {
		binary.BigEndian.PutUint64(in[u.Mtt.At(base).ByteOff()+8*i:], addr+uint64(i)<<shift)
	}
	out := make([]byte, 16)
	if err := c.exec(in, out); err != nil {
		return nil, err
	}
	return &umemH{c: c, id: uint32(prm.CreateUMEMOut.UMEMID.Get(out)), addr: addr}, nil
}

var _ channel.DMABufRegistrar = (*Channel)(nil)

// RegisterDMABuf implements channel.DMABufRegistrar: the importer resolves length bytes at
// offset of DMA-BUF fd to the allocation it exports, which is mapped as a window at its
// device address and registered with CREATE_UMEM. An fd the importer refuses (not a DMA-BUF,
// an allocation freed, a range outside the buffer) fails as CREATE_UMEM with BAD_PARAM, the
// status a device gives for memory it cannot reach. The fd is not kept: the caller may close
// it once the call returns, as after DEVX_UMEM_REG.
func (c *Channel) RegisterDMABuf(fd int, offset, length uint64, access channel.Access) (channel.UMEM, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, channel.ErrClosed
	}
	imp := c.imp
	if imp == nil {
		c.own = gpudma.New()
		c.imp, imp = c.own, c.own
	}
	c.mu.Unlock()
	refuse := func(format string, args ...any) error {
		return &channel.CommandError{Opcode: uint16(prm.CmdOpCreateUMEM), Status: uint8(prm.StatusBadParamErr),
			Syndrome: uint32(model.SyndromeBadMemory), Name: prm.CmdOpCreateUMEM.String(), Detail: fmt.Sprintf(format, args...)}
	}
	buf, err := imp.Import(fd, offset, length)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.name, refuse("%v", err))
	}
	perm := model.DMARead
	if access&(channel.AccessLocalWrite|channel.AccessRemoteWrite) != 0 {
		perm |= model.DMAWrite
	}
	if err := c.dev.DMA().MapWindow(buf.IOVA, buf.Size, buf.Window, perm); err != nil {
		return nil, fmt.Errorf("%s: %w", c.name, refuse("DMA-BUF fd %d (%s): %v", fd, buf.What, err))
	}
	um, err := c.createUMEM(buf.IOVA, buf.Size)
	if err != nil {
		c.dev.DMA().Unmap(buf.IOVA)
		return nil, fmt.Errorf("DMA-BUF fd %d (%s): %w", fd, buf.What, err)
	}
	c.track(um)
	return um, nil
}

type umemH struct {
	c    *Channel
	id   uint32
	addr uint64
}

func (u *umemH) ID() uint32 { return u.id }

func (u *umemH) Release() error {
	if !u.c.untrack(u) {
		return channel.ErrClosed
	}
	return u.release()
}

func (u *umemH) release() error {
	in := prm.NewCmdIn(prm.CmdOpDestroyUMEM, 0, 16)
	prm.DestroyUMEMIn.UMEMID.Set(in, uint64(u.id))
	err := u.c.exec(in, make([]byte, 16))
	// The mapping goes even when firmware refused: the memory's owner frees it next.
	return errors.Join(err, u.c.dev.DMA().Unmap(u.addr))
}

// AllocUAR implements channel.Channel: ALLOC_UAR, and the page in BAR0.
func (c *Channel) AllocUAR() (channel.UAR, error) {
	if c.isClosed() {
		return nil, channel.ErrClosed
	}
	idx, err := c.allocUARIndex()
	if err != nil {
		return nil, err
	}
	u := &uarH{c: c, idx: idx}
	c.track(u)
	return u, nil
}

type uarH struct {
	c   *Channel
	idx uint32
}

func (u *uarH) Index() uint32 { return u.idx }

func (u *uarH) Write64(off uint32, v uint64) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	u.c.dev.BAR0().WriteAt(b[:], int64(u.idx)*prm.UARPageSize+int64(off))
}

func (u *uarH) Write32(off uint32, v uint32) {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	u.c.dev.BAR0().WriteAt(b[:], int64(u.idx)*prm.UARPageSize+int64(off))
}

func (u *uarH) Release() error {
	if !u.c.untrack(u) {
		return channel.ErrClosed
	}
	return u.release()
}

func (u *uarH) release() error {
	in := prm.NewCmdIn(prm.CmdOpDeallocUAR, 0, 16)
	prm.DeallocUARIn.UAR.Set(in, uint64(u.idx))
	return u.c.exec(in, make([]byte, 16))
}

// EQN implements channel.Channel: every vector is the channel's one completion EQ.
func (c *Channel) EQN(vector int) (uint32, error) {
	if c.isClosed() {
		return 0, channel.ErrClosed
	}
	if vector < 0 {
		return 0, fmt.Errorf("%s: completion vector %d", c.name, vector)
	}
	return c.eqn, nil
}

// AttachRoot implements channel.Channel with SET_FLOW_TABLE_ROOT on the NIC RX table type.
func (c *Channel) AttachRoot(table uint32) (func() error, error) {
	if c.isClosed() {
		return nil, channel.ErrClosed
	}
	// Detaching is op_mod 1 without a table id: the kernel's fs_cmd.c mlx5_cmd_update_root_ft
	// disconnects the root so when the last table of the namespace goes.
	set := func(id uint32, opMod uint16) error {
		in := prm.NewCmdIn(prm.CmdOpSetFlowTableRoot, opMod, 0x40)
		prm.SetFlowTableRootIn.TableType.Set(in, prm.FlowTableNICRX)
		prm.SetFlowTableRootIn.TableID.Set(in, uint64(id))
		return c.exec(in, make([]byte, 16))
	}
	if err := set(table, 0); err != nil {
		return nil, err
	}
	var once sync.Once
	return func() error {
		var err error
		once.Do(func() { err = set(0, 1) })
		return err
	}, nil
}

// Close implements channel.Channel: everything still live is released newest first, then
// the function is torn down and disabled and the channel's pages unmapped.
func (c *Channel) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return channel.ErrClosed
	}
	c.closed = true
	c.mu.Unlock()
	var errs []error
	for _, r := range c.live.Take() {
		if err := r.release(); err != nil {
			errs = append(errs, err)
		}
	}
	td := prm.NewCmdIn(prm.CmdOpTeardownHCA, 0, 16)
	prm.TeardownHCAIn.Profile.Set(td, prm.TeardownGraceful)
	if err := c.exec(td, make([]byte, 16)); err != nil {
		errs = append(errs, err)
	}
	c.unmapPages()
	if c.own != nil {
		// After every UMEM: no window is mapped any more.
		if err := c.own.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

var _ channel.Clock = (*Channel)(nil)

// Timebase implements channel.Clock from the model's init segment read through its BAR0, as
// the VFIO transport reads a real function's.
func (c *Channel) Timebase() (channel.Timebase, error) {
	if c.isClosed() {
		return channel.Timebase{}, channel.ErrClosed
	}
	bar := c.dev.BAR0()
	return channel.InitSegTimebase(c, func(off int) uint32 {
		var b [4]byte
		if _, err := bar.ReadAt(b[:], int64(off)); err != nil {
			return 0
		}
		return binary.BigEndian.Uint32(b[:])
	})
}
