// Package devx is the command channel over DevX: a ConnectX function driven through the
// kernel's mlx5_ib driver with the typed DevX calls of package verbs/mlx5dv (no libibverbs,
// no cgo). The kernel stamps every command with the context's DevX uid, keeps the destroy
// command of every object it created (devx.c devx_obj_build_destroy_cmd) and destroys what
// is left when the context closes, so nothing outlives the process.
//
// How the channel's calls map to DevX:
//
//   - Exec: DEVX_OTHER, which the kernel allows for general commands only (queries of the
//     device and vport: devx.c devx_is_general_cmd). Modify and query an object through its
//     Object (DEVX_OBJ_MODIFY/QUERY), which the kernel checks against the object's handle.
//   - Create: DEVX_OBJ_CREATE; the object id is the dword at byte 8 of the output, where
//     every create's output has it (the kernel's devx_get_created_obj_id), except
//     SET_FLOW_TABLE_ENTRY, whose id is the input's flow_index.
//   - RegisterMemory: DEVX_UMEM_REG. AllocUAR: UAR_OBJ_ALLOC (BlueFlame, write-combining,
//     falling back to non-cached) and mmap. EQN: DEVX_QUERY_EQN.
//   - AttachRoot: a kernel flow rule that forwards every frame to the table: a flow matcher
//     with an empty mask and CREATE_FLOW with the table as DEST_DEVX (the way DPDK's mlx5
//     driver hangs its DevX tables under the kernel's steering).
//
// A command firmware refuses is a *channel.CommandError with the status and syndrome the
// kernel copied out (Linux 5.19 and later return EREMOTEIO with the output); older kernels
// give only an errno, which the error keeps. On a device whose driver is not mlx5, Open
// fails with channel.ErrNotMLX5; New accepts such a device so that each method's refusal
// can be seen (every one wraps channel.ErrNotMLX5 and names the kernel method).
package devx

import (
	"errors"
	"fmt"
	"github.com/daqiri-go/daqiri/mlx5/internal/live"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/daqiri-go/daqiri/mlx5/channel"
	"github.com/daqiri-go/daqiri/mlx5/prm"
	"github.com/daqiri-go/daqiri/verbs"
	"github.com/daqiri-go/daqiri/verbs/mlx5dv"
)

// Channel is one ConnectX function over DevX.
type Channel struct {
	name string
	dx   *mlx5dv.DevX // nil in tests
	k    kernel

	mu     sync.Mutex
	closed bool
	live   live.Set[releaser] // creation order; Close releases in reverse
	tables map[uint32]kobj    // NIC RX flow tables by id, for AttachRoot
}

var _ channel.Channel = (*Channel)(nil)

type releaser interface{ release() error }

// Open opens a ConnectX function for DevX. address is what an interface's address may say:
// the RDMA device's name (mlx5_0), the function's PCI address (0000:3b:00.0 or 3b:00.0) or
// one of its netdevs (verbs.LookupAddress). A device of another driver fails with an error
// wrapping channel.ErrNotMLX5.
func Open(address string) (*Channel, error) {
	dev, err := verbs.LookupAddress(address)
	if err != nil {
		return nil, fmt.Errorf("devx:%s: %w", address, err)
	}
	device := dev.Name
	d, err := mlx5dv.Open(device)
	if err != nil {
		return nil, fmt.Errorf("devx:%s: %w", device, err)
	}
	if !d.IsMLX5() {
		drv := d.Context().Device().Driver
		d.Close()
		return nil, fmt.Errorf("devx:%s: %w (its driver is %q)", device, channel.ErrNotMLX5, drv)
	}
	return New(d), nil
}

// New makes a channel of an opened DevX context, which the channel then owns (Close closes
// it).
func New(d *mlx5dv.DevX) *Channel {
	c := newChannel(verbsKernel{d})
	c.dx = d
	return c
}

func newChannel(k kernel) *Channel {
	return &Channel{name: "devx:" + k.device(), k: k, tables: map[uint32]kobj{}}
}

// DevX is the underlying context (for the mlx5 driver's answer: UAR and BlueFlame layout,
// eth_min_inline, clock information).
func (c *Channel) DevX() *mlx5dv.DevX { return c.dx }

// Name implements channel.Channel.
func (c *Channel) Name() string { return c.name }

func (c *Channel) begin() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("%s: %w", c.name, channel.ErrClosed)
	}
	return nil
}

func (c *Channel) track(r releaser) { c.live.Add(r) }

func (c *Channel) untrack(r releaser) { c.live.Remove(r) }

// cmdErr turns a DevX failure of command in into the channel's error: a *CommandError when
// the device completed it with a bad status (the output then says which), else the kernel's
// error annotated with the command.
func (c *Channel) cmdErr(in, out []byte, err error) error {
	var op, opMod uint16
	if len(in) >= 8 {
		op, opMod = uint16(prm.CmdIn.Opcode.Get(in)), uint16(prm.CmdIn.OpMod.Get(in))
	}
	status := uint8(0)
	if len(out) >= 8 {
		status = uint8(prm.CmdOut.Status.Get(out))
	}
	if status != 0 && (err == nil || errors.Is(err, unix.EREMOTEIO)) {
		ce := &channel.CommandError{Opcode: op, OpMod: opMod, Status: status, Syndrome: uint32(prm.CmdOut.Syndrome.Get(out)),
			Name: prm.CmdOp(op).String(), Detail: fmt.Sprintf("%s: %s", c.name, prm.Status(status))}
		return ce
	}
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %v (op_mod %#x): %w", c.name, prm.CmdOp(op), opMod, err)
}

// Exec implements channel.Channel (DEVX_OTHER). The kernel refuses with EINVAL a command
// it does not count as general (devx.c devx_is_general_cmd: queries of the device and vport,
// NOP, …; not MODIFY_NIC_VPORT_CONTEXT or SET_PP_RATE_LIMIT, which the kernel driver owns or
// offers otherwise): that error also matches channel.ErrUnsupported, so an engine can tell
// "not through DevX" from a firmware refusal.
func (c *Channel) Exec(in, out []byte) error {
	if err := c.begin(); err != nil {
		return err
	}
	err := c.k.General(in, out)
	if errors.Is(err, unix.EINVAL) && len(in) >= 8 && len(out) >= 8 && prm.CmdOut.Status.Get(out) == 0 {
		return fmt.Errorf("%s: %v: the kernel runs only general commands through DevX (devx.c devx_is_general_cmd): %w (%w)",
			c.name, prm.CmdOp(prm.CmdIn.Opcode.Get(in)), channel.ErrUnsupported, err)
	}
	return c.cmdErr(in, out, err)
}

// Create implements channel.Channel (DEVX_OBJ_CREATE).
func (c *Channel) Create(in, out []byte) (channel.Object, error) {
	if err := c.begin(); err != nil {
		return nil, err
	}
	o, err := c.k.CreateObj(in, out)
	if err != nil {
		return nil, c.cmdErr(in, out, err)
	}
	if err := c.cmdErr(in, out, nil); err != nil {
		o.Destroy()
		return nil, err
	}
	op := prm.CmdOp(prm.CmdIn.Opcode.Get(in))
	var id uint32
	if op == prm.CmdOpSetFlowTableEntry {
		id = uint32(prm.SetFTEIn.FlowIndex.Get(in))
	} else {
		id = uint32(prm.GeneralObjOutCmdHdr.ObjID.Get(out))
	}
	obj := &object{c: c, o: o, id: id, op: op}
	if op == prm.CmdOpCreateFlowTable && prm.CreateFlowTableIn.TableType.Get(in) == prm.FlowTableNICRX {
		c.mu.Lock()
		c.tables[id] = o
		c.mu.Unlock()
		obj.table = true
	}
	c.track(obj)
	return obj, nil
}

type object struct {
	c     *Channel
	o     kobj
	id    uint32
	op    prm.CmdOp
	table bool
	mu    sync.Mutex
	gone  bool
}

func (o *object) ID() uint32 { return o.id }

func (o *object) Modify(in, out []byte) error {
	if err := o.c.begin(); err != nil {
		return err
	}
	return o.c.cmdErr(in, out, o.o.Modify(in, out))
}

func (o *object) Query(in, out []byte) error {
	if err := o.c.begin(); err != nil {
		return err
	}
	return o.c.cmdErr(in, out, o.o.Query(in, out))
}

func (o *object) Destroy() error {
	o.mu.Lock()
	gone := o.gone
	o.mu.Unlock()
	if gone {
		return fmt.Errorf("%s: %v object %d: %w", o.c.name, o.op, o.id, channel.ErrClosed)
	}
	if err := o.release(); err != nil {
		return err
	}
	o.c.untrack(o)
	return nil
}

func (o *object) release() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.gone {
		return nil
	}
	if err := o.o.Destroy(); err != nil && !errors.Is(err, verbs.ErrClosed) {
		return fmt.Errorf("%s: destroying %v object %d: %w", o.c.name, o.op, o.id, err)
	}
	o.gone = true
	if o.table {
		o.c.mu.Lock()
		delete(o.c.tables, o.id)
		o.c.mu.Unlock()
	}
	return nil
}

// RegisterMemory implements channel.Channel (DEVX_UMEM_REG).
func (c *Channel) RegisterMemory(mem []byte, access channel.Access) (channel.UMEM, error) {
	if err := c.begin(); err != nil {
		return nil, err
	}
	u, err := c.k.RegUMEM(mem, verbs.Access(access))
	if err != nil {
		return nil, fmt.Errorf("%s: register %d bytes: %w", c.name, len(mem), err)
	}
	h := &umem{c: c, u: u}
	c.track(h)
	return h, nil
}

type umem struct {
	c *Channel
	u kumem
}

func (u *umem) ID() uint32 { return u.u.id() }

func (u *umem) Release() error {
	if err := u.release(); err != nil {
		return err
	}
	u.c.untrack(u)
	return nil
}

func (u *umem) release() error { return u.u.Close() }

// AllocUAR implements channel.Channel (UAR_OBJ_ALLOC and mmap).
func (c *Channel) AllocUAR() (channel.UAR, error) {
	if err := c.begin(); err != nil {
		return nil, err
	}
	p, err := c.k.AllocUAR(mlx5dv.UARTypeBF)
	if err != nil && !errors.Is(err, channel.ErrNotMLX5) {
		// Functions without BlueFlame offer non-cached pages only (rdma-core falls back
		// the same way).
		var err2 error
		if p, err2 = c.k.AllocUAR(mlx5dv.UARTypeNC); err2 != nil {
			return nil, fmt.Errorf("%s: UAR: %w (non-cached: %v)", c.name, err, err2)
		}
		err = nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: UAR: %w", c.name, err)
	}
	u := &uar{c: c, p: p}
	c.track(u)
	return u, nil
}

type uar struct {
	c *Channel
	p kuar
}

func (u *uar) Index() uint32                { return u.p.index() }
func (u *uar) Write64(off uint32, v uint64) { u.p.Write64(off, v) }
func (u *uar) Write32(off uint32, v uint32) { u.p.Write32(off, v) }

func (u *uar) Release() error {
	if err := u.release(); err != nil {
		return err
	}
	u.c.untrack(u)
	return nil
}

func (u *uar) release() error { return u.p.Close() }

// EQN implements channel.Channel (DEVX_QUERY_EQN).
func (c *Channel) EQN(vector int) (uint32, error) {
	if err := c.begin(); err != nil {
		return 0, err
	}
	if vector < 0 {
		return 0, fmt.Errorf("%s: completion vector %d", c.name, vector)
	}
	eqn, err := c.k.QueryEQN(uint32(vector))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", c.name, err)
	}
	return eqn, nil
}

// AttachRoot implements channel.Channel: a match-all kernel flow rule into the table.
func (c *Channel) AttachRoot(table uint32) (func() error, error) {
	if err := c.begin(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	t, ok := c.tables[table]
	c.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%s: AttachRoot: no NIC RX flow table %d was created through this channel", c.name, table)
	}
	rel, err := c.k.RootRule(t)
	if err != nil {
		return nil, fmt.Errorf("%s: AttachRoot(table %d): %w", c.name, table, err)
	}
	a := &attach{c: c, rel: rel}
	c.track(a)
	return a.detach, nil
}

type attach struct {
	c    *Channel
	rel  func() error
	once sync.Once
	err  error
}

func (a *attach) detach() error {
	if err := a.release(); err != nil {
		return err
	}
	a.c.untrack(a)
	return nil
}

func (a *attach) release() error {
	a.once.Do(func() { a.err = a.rel() })
	return a.err
}

// Close implements channel.Channel: everything still open is released newest first, then
// the context is closed (which makes the kernel destroy anything a failed release left).
func (c *Channel) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	var errs []error
	for _, r := range c.live.Take() {
		if err := r.release(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := c.k.Close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

var _ channel.Pacer = (*Channel)(nil)

// AllocPacing implements channel.Pacer (PP_OBJ_ALLOC).
func (c *Channel) AllocPacing(ctx []byte, dedicated bool) (channel.Pacing, error) {
	if err := c.begin(); err != nil {
		return nil, err
	}
	p, err := c.k.AllocPP(ctx, dedicated)
	if err != nil {
		return nil, fmt.Errorf("%s: pacing index: %w", c.name, err)
	}
	h := &pacing{c: c, p: p}
	c.track(h)
	return h, nil
}

type pacing struct {
	c *Channel
	p kpp
}

func (p *pacing) Index() uint16 { return p.p.index() }

func (p *pacing) Release() error {
	if err := p.release(); err != nil {
		return err
	}
	p.c.untrack(p)
	return nil
}

func (p *pacing) release() error { return p.p.Close() }

var _ channel.DMABufRegistrar = (*Channel)(nil)

// RegisterDMABuf implements channel.DMABufRegistrar (DEVX_UMEM_REG with a DMA-BUF fd).
func (c *Channel) RegisterDMABuf(fd int, offset, length uint64, access channel.Access) (channel.UMEM, error) {
	if err := c.begin(); err != nil {
		return nil, err
	}
	u, err := c.k.RegUMEMDMABuf(fd, offset, length, verbs.Access(access))
	if err != nil {
		return nil, fmt.Errorf("%s: register %d bytes of DMA-BUF fd %d at %#x: %w", c.name, length, fd, offset, err)
	}
	h := &umem{c: c, u: u}
	c.track(h)
	return h, nil
}
