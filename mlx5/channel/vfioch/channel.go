package vfioch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/daqiri-go/daqiri/mlx5/internal/live"
	"log/slog"
	"math/bits"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/daqiri-go/daqiri/mlx5/channel"
	"github.com/daqiri-go/daqiri/mlx5/prm"
	"github.com/daqiri-go/daqiri/vfio"
)

// Options tune the transport; the zero value is what rdma-core's mlx5_vfio.c uses.
type Options struct {
	// Name names the channel in messages; default "vfio:" + the function's PCI address, or
	// the function's name when it says vfio already ("vfio+model:1").
	Name string
	// Log receives warnings (no hugepages, missed interrupts) and the health failure;
	// default slog.Default().
	Log *slog.Logger
	// CommandTimeout bounds each command; default 60 s (mlx5_vfio.c MLX5_CMD_TIMEOUT_MSEC).
	CommandTimeout time.Duration
	// InitTimeout bounds the wait for the initializing bit to clear; default 120 s
	// (mlx5_vfio.h FW_PRE_INIT_TIMEOUT_MILI).
	InitTimeout time.Duration
	// PollInterval is how long a command waits for its completion event before reading the
	// ownership bit itself, and how often the event loop wakes without an interrupt;
	// default 10 ms.
	PollInterval time.Duration
	// HealthInterval is the period of the health checks; default 1 s (mlx5_vfio.h
	// POLL_HEALTH_INTERVAL). It must be longer than the device's health counter period.
	HealthInterval time.Duration
	// CommandSlots is how many command-queue entries the channel uses at once (at most
	// what the device has); default 8.
	CommandSlots int
	// MaxPages bounds the 4 KiB pages given to firmware; default 65536 (256 MiB).
	MaxPages int
	// OnFailure is called once, from the event loop, when health monitoring finds the
	// device failed; every later call on the channel returns the same error.
	OnFailure func(error)
}

func (o Options) withDefaults(fn Function) Options {
	if o.Name == "" {
		o.Name = fn.Name()
		if !strings.HasPrefix(o.Name, "vfio") { // a PCI address
			o.Name = "vfio:" + o.Name
		}
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.CommandTimeout <= 0 {
		o.CommandTimeout = 60 * time.Second
	}
	if o.InitTimeout <= 0 {
		o.InitTimeout = 120 * time.Second
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 10 * time.Millisecond
	}
	if o.HealthInterval <= 0 {
		o.HealthInterval = time.Second
	}
	if o.CommandSlots <= 0 {
		o.CommandSlots = 8
	}
	if o.MaxPages <= 0 {
		o.MaxPages = 65536
	}
	return o
}

// Stats count what the transport did, for tests and diagnostics.
type Stats struct {
	Commands       int // commands the device completed (any status)
	ByEvent        int // of those, seen through the completion event
	ByPolling      int // seen by reading the ownership bit
	RetiredSlots   int // slots given up after a timeout
	PageRequests   int // page-request EQEs
	PageErrors     int // page requests that could not be served
	PagesGiven     int
	PagesReclaimed int
}

type statsBox struct {
	mu sync.Mutex
	s  Stats
}

func (b *statsBox) add(f func(*Stats)) {
	b.mu.Lock()
	f(&b.s)
	b.mu.Unlock()
}

// Channel is one ConnectX function driven over VFIO: a channel.Channel.
type Channel struct {
	fn   Function
	bar  Region
	opts Options
	name string
	log  *slog.Logger
	mem  *dmaMem
	q    *cmdq
	eq   *asyncEQ
	irq  Interrupts
	// hw serialises the command doorbell with EQ drains (the device writes EQEs while
	// handling a doorbell).
	hw sync.Mutex

	events      atomic.Bool  // commands wait for completion events
	polling     atomic.Bool  // interrupts are lost: the event loop polls the EQ
	missed      atomic.Int32 // commands in a row completed without their event
	tearingDown atomic.Bool

	stop, loopDone, pageDone chan struct{}
	pageKick                 chan struct{}
	pageMu                   sync.Mutex
	pageWant                 int64
	pages                    *pagePool

	failOnce sync.Once
	failErr  atomic.Pointer[error]
	failed   chan struct{}

	healthMu    sync.Mutex
	healthPolls int
	lastHealth  time.Time
	lastCount   uint32
	misses      int

	stats   statsBox
	caps    []byte // general capabilities, current
	mac     net.HardwareAddr
	mtu     int
	cqEQ    uint32 // the EQ completion queues name
	cqEQUAR uint32
	cqEQOK  bool
	// how far bring-up got: the function enabled, initialized
	enabled, initialized bool

	mu       sync.Mutex
	closed   bool
	inflight int           // API calls admitted and not yet returned
	drained  chan struct{} // closed when inflight drops to 0 during Close
	live     live.Set[releaser]
}

type releaser interface{ release() error }

var _ channel.Channel = (*Channel)(nil)

func (c *Channel) now() time.Time             { return time.Now() }
func (c *Channel) sinceHealth() time.Duration { return time.Since(c.lastHealth) }

// Open brings fn up as firmware expects it (rdma-core mlx5_vfio.c mlx5_vfio_setup_function
// and the kernel's mlx5_function_setup): the command interface, the wait for the
// initializing bit, ENABLE_HCA, ISSI, boot pages, host endianness, capabilities, init pages,
// INIT_HCA, the vport context, then the async EQ on MSI-X vector 0 and an EQ for completion
// queues. On success the channel owns fn and closes it with Close; on failure fn is closed
// and everything mapped is released.
func Open(fn Function, opts Options) (*Channel, error) {
	opts = opts.withDefaults(fn)
	c := &Channel{fn: fn, bar: fn.BAR0(), opts: opts, name: opts.Name, log: opts.Log, failed: make(chan struct{}),
		pages: &pagePool{given: map[uint64]bool{}, limit: opts.MaxPages}}
	if err := c.bringUp(); err != nil {
		err = fmt.Errorf("%s: bring-up: %w", c.name, err)
		return nil, errors.Join(err, c.shutdown())
	}
	return c, nil
}

func (c *Channel) bringUp() error {
	if c.bar.Len() < 2*prm.UARPageSize {
		return fmt.Errorf("%w: BAR0 of %d bytes has no room for the init segment", ErrUnsupportedDevice, c.bar.Len())
	}
	mem, err := newDMAMem(c.fn.DMA(), c.log)
	if err != nil {
		return err
	}
	c.mem = mem
	if err := c.initCmdq(); err != nil {
		return err
	}
	if err := c.waitInitializing(); err != nil {
		return err
	}
	out := make([]byte, 16)
	if err := c.run(prm.NewCmdIn(prm.CmdOpEnableHCA, 0, 16), out); err != nil {
		return err
	}
	c.enabled = true
	// ISSI: 1 when firmware offers it (mlx5_vfio.c mlx5_vfio_set_issi).
	qo := make([]byte, prm.QueryISSIOut.SupportedISSIDw0.End()/8)
	if err := c.run(prm.NewCmdIn(prm.CmdOpQueryISSI, 0, 16), qo); err != nil {
		return err
	}
	if prm.QueryISSIOut.SupportedISSIDw0.Get(qo)&2 == 0 {
		return fmt.Errorf("%w: firmware does not offer ISSI 1 (supported %#x)", ErrUnsupportedDevice, prm.QueryISSIOut.SupportedISSIDw0.Get(qo))
	}
	si := prm.NewCmdIn(prm.CmdOpSetISSI, 0, 16)
	prm.SetISSIIn.CurrentISSI.Set(si, 1)
	if err := c.run(si, out); err != nil {
		return err
	}
	if err := c.startupPages(prm.QueryPagesBoot); err != nil {
		return err
	}
	// Host endianness (driver.h MLX5_REG_HOST_ENDIANNESS; mlx5_vfio.c
	// mlx5_vfio_set_hca_ctrl): 0 for a little-endian host.
	reg := prm.NewCmdIn(prm.CmdOpAccessReg, prm.AccessRegWrite, 0x20)
	prm.AccessRegisterIn.RegisterID.Set(reg, prm.RegHostEndianness)
	if binary.NativeEndian.Uint16([]byte{0, 1}) == 1 {
		reg[prm.AccessRegisterIn.RegisterData.ByteOff()] = 0x80
	}
	if err := c.run(reg, make([]byte, 0x20)); err != nil {
		return err
	}
	if err := c.setCaps(); err != nil {
		return err
	}
	if err := c.startupPages(prm.QueryPagesInit); err != nil {
		return err
	}
	if err := c.run(prm.NewCmdIn(prm.CmdOpInitHCA, 0, 16), out); err != nil {
		return err
	}
	c.initialized = true
	if err := c.queryVport(); err != nil {
		return err
	}
	if err := c.createAsyncEQ(); err != nil {
		return err
	}
	return c.createCQEQ()
}

// waitInitializing waits for firmware to clear the initializing bit (init segment word
// 0x1fc bit 31; mlx5_vfio.c wait_fw_init polls it every FW_INIT_WAIT_MS).
func (c *Channel) waitInitializing() error {
	deadline := time.Now().Add(c.opts.InitTimeout)
	for i := 0; ; i++ {
		raw := c.bar.Read32(regInitializing)
		if raw == 0xffffffff {
			return fmt.Errorf("%w: the init segment reads all ones while waiting for firmware to initialize", ErrDeviceFailed)
		}
		if c.rd(regInitializing)>>31 == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: firmware still initializing after %v", ErrCommandTimeout, c.opts.InitTimeout)
		}
		time.Sleep(min(time.Duration(i+1)*100*time.Microsecond, 2*time.Millisecond))
	}
}

// startupPages gives firmware the pages QUERY_PAGES asks for (boot or init).
func (c *Channel) startupPages(opMod uint16) error {
	out := make([]byte, 16)
	in := prm.NewCmdIn(prm.CmdOpQueryPages, opMod, 16)
	if err := c.run(in, out); err != nil {
		return err
	}
	n := int32(uint32(prm.QueryPagesOut.NumPages.Get(out)))
	if n <= 0 {
		return nil
	}
	return c.givePages(int(n))
}

// setCaps reads the general capabilities (maximum and current), checks what this driver
// needs (umem_uid_0, as mlx5_vfio.c requires) and writes the current ones back with
// SET_HCA_CAP, as mlx5_vfio.c set_hca_cap does after adjusting them.
func (c *Channel) setCaps() error {
	qo := make([]byte, prm.QueryHCACapOut.Capability.End()/8)
	q := prm.NewCmdIn(prm.CmdOpQueryHCACap, uint16(prm.CapTypeGeneral)<<1|prm.CapOpModMax, int(prm.QueryHCACapIn.FunctionID.End()/8)+4)
	if err := c.run(q, qo); err != nil {
		return err
	}
	max := append([]byte(nil), prm.QueryHCACapOut.Capability.Slice(qo)...)
	if prm.CmdHCACap.UMEMUID0.Get(max) == 0 {
		return fmt.Errorf("%w: firmware lacks the umem_uid_0 capability that UMEMs of a VFIO driver need", ErrUnsupportedDevice)
	}
	prm.CmdIn.OpMod.Set(q, uint64(prm.CapTypeGeneral)<<1|prm.CapOpModCur)
	if err := c.run(q, qo); err != nil {
		return err
	}
	cur := prm.QueryHCACapOut.Capability.Slice(qo)
	si := prm.NewCmdIn(prm.CmdOpSetHCACap, uint16(prm.CapTypeGeneral)<<1, int(prm.SetHCACapIn.Capability.End()/8))
	copy(prm.SetHCACapIn.Capability.Slice(si), cur)
	if err := c.run(si, make([]byte, 16)); err != nil {
		return err
	}
	c.caps = append([]byte(nil), cur...)
	return nil
}

// queryVport reads the vport context: the permanent MAC and the MTU.
func (c *Channel) queryVport() error {
	o := prm.QueryNICVportContextOut
	out := make([]byte, o.NICVportContext.End()/8)
	if err := c.run(prm.NewCmdIn(prm.CmdOpQueryNICVportContext, 0, 16), out); err != nil {
		return err
	}
	base := o.NICVportContext.Off
	v := prm.NICVportContext
	mac := v.PermanentAddress.Off + base
	c.mac = append(append(net.HardwareAddr(nil), prm.MACAddressLayout.MACAddrHi.At(mac).Slice(out)...), prm.MACAddressLayout.MACAddrLo.At(mac).Slice(out)...)
	c.mtu = int(v.MTU.At(base).Get(out))
	return nil
}

// createCQEQ creates the EQ that completion queues name (EQN): completion and CQ error
// events, no interrupt wanted by the engine, which polls its CQs. Its ring is in the
// firmware page pool's memory.
func (c *Channel) createCQEQ() error {
	uar, err := c.allocUARIndex()
	if err != nil {
		return err
	}
	const logEQ = 6
	ring, err := c.takeFree(1) // 64 EQEs of 64 bytes: one page
	if err != nil {
		return err
	}
	mem := c.pageBytes(ring[0]) // the channel's page now, not firmware's
	for i := 0; i < 1<<logEQ; i++ {
		prm.EQE.Owner.Set(mem[i*eqeSize:], 1)
	}
	base := prm.CreateEQIn.EQContextEntry.Off
	in := prm.NewCmdIn(prm.CmdOpCreateEQ, 0, prm.CreateEQIn.PAS.ByteOff()+8)
	prm.EQC.LogEQSize.At(base).Set(in, logEQ)
	prm.EQC.UARPage.At(base).Set(in, uint64(uar))
	prm.CreateEQIn.PAS.Set(in, ring[0])
	prm.CreateEQIn.EventBitmask.Set(in, 1<<prm.EventTypeComp|1<<prm.EventTypeCQError)
	out := make([]byte, 16)
	if err := c.run(in, out); err != nil {
		return err
	}
	c.cqEQ = uint32(prm.CreateEQOut.EQNumber.Get(out))
	c.cqEQUAR, c.cqEQOK = uar, true
	return nil
}

// pageBytes is the channel's memory at a page IOVA it mapped.
func (c *Channel) pageBytes(iova uint64) []byte {
	c.mem.mu.Lock()
	defer c.mem.mu.Unlock()
	for _, b := range c.mem.bufs {
		if iova >= b.iova && iova+4096 <= b.iova+uint64(len(b.b)) {
			o := iova - b.iova
			return b.b[o : o+4096 : o+4096]
		}
	}
	return nil
}

// Name implements channel.Channel.
func (c *Channel) Name() string { return c.name }

// MAC is the vport's permanent address; MTU its MTU (from QUERY_NIC_VPORT_CONTEXT).
func (c *Channel) MAC() net.HardwareAddr { return c.mac }

// MTU is the vport context's MTU.
func (c *Channel) MTU() int { return c.mtu }

// Stats returns the transport's counters.
func (c *Channel) Stats() Stats {
	c.stats.mu.Lock()
	defer c.stats.mu.Unlock()
	return c.stats.s
}

// Health is nil while the device is healthy, and the failure (wrapping ErrDeviceFailed)
// once health monitoring found it failed.
func (c *Channel) Health() error {
	if p := c.failErr.Load(); p != nil {
		return *p
	}
	return nil
}

// Failed is closed when the device fails.
func (c *Channel) Failed() <-chan struct{} { return c.failed }

// fail records the device's failure once: every waiting and later command returns it.
func (c *Channel) fail(err error) {
	c.failOnce.Do(func() {
		err = fmt.Errorf("%s: %w", c.name, err)
		c.failErr.Store(&err)
		close(c.failed)
		c.log.Error("mlx5 vfio: device failed; every queue and command of the channel fails from now on", "device", c.name, "err", err)
		if c.opts.OnFailure != nil {
			c.opts.OnFailure(err)
		}
	})
}

// enter admits a call of the channel's API, or refuses it with ErrClosed once Close began;
// Close waits for the calls admitted before it (their commands use the memory Close
// unmaps). Every successful enter is paired with leave.
func (c *Channel) enter() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return channel.ErrClosed
	}
	c.inflight++
	return nil
}

func (c *Channel) leave() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inflight--
	if c.inflight == 0 && c.drained != nil {
		close(c.drained)
		c.drained = nil
	}
}

// healthy is the device's failure, if any, as the error of operation op.
func (c *Channel) healthy(op string) error {
	if err := c.Health(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// Exec implements channel.Channel.
func (c *Channel) Exec(in, out []byte) error {
	if err := c.enter(); err != nil {
		return err
	}
	defer c.leave()
	return c.run(in, out) // names the command in its errors, the device's failure included
}

// Create implements channel.Channel: the command runs, and the object remembers the
// destroy command built from it (as devx.c devx_obj_build_destroy_cmd does).
func (c *Channel) Create(in, out []byte) (channel.Object, error) {
	if err := c.enter(); err != nil {
		return nil, err
	}
	defer c.leave()
	if len(in) < 8 {
		return nil, fmt.Errorf("%s: create command of %d bytes: %w", c.name, len(in), channel.ErrUnsupported)
	}
	op := prm.CmdOp(prm.CmdIn.Opcode.Get(in))
	if !prm.Destroyable(in) {
		return nil, fmt.Errorf("%s: %v creates no object the channel can destroy: %w", c.name, op, channel.ErrUnsupported)
	}
	if err := c.run(in, out); err != nil {
		return nil, err
	}
	id, destroy, _ := prm.DestroyCommand(in, out)
	o := &object{c: c, id: id, destroy: destroy}
	c.track(o)
	return o, nil
}

func (c *Channel) track(r releaser) { c.live.Add(r) }

func (c *Channel) untrack(r releaser) bool { return c.live.Remove(r) }

type object struct {
	c       *Channel
	id      uint32
	destroy []byte
}

func (o *object) ID() uint32                  { return o.id }
func (o *object) Modify(in, out []byte) error { return o.c.Exec(in, out) }
func (o *object) Query(in, out []byte) error  { return o.c.Exec(in, out) }
func (o *object) Destroy() error {
	if err := o.c.enter(); err != nil {
		return err
	}
	defer o.c.leave()
	if !o.c.untrack(o) {
		return channel.ErrClosed
	}
	return o.release()
}
func (o *object) release() error { return o.c.run(o.destroy, make([]byte, 16)) }

// RegisterMemory implements channel.Channel: mem is mapped through the IOMMU at I/O address
// = its virtual address (the engine's physical-address keys and PAS lists name memory by
// its address, as with DevX UMEMs), which must lie in the container's usable ranges, and
// registered with CREATE_UMEM over pages as large as address and length allow.
func (c *Channel) RegisterMemory(mem []byte, access channel.Access) (channel.UMEM, error) {
	if err := c.enter(); err != nil {
		return nil, err
	}
	defer c.leave()
	if err := c.healthy("register memory"); err != nil {
		return nil, err
	}
	if len(mem) == 0 {
		return nil, fmt.Errorf("%s: register of zero bytes", c.name)
	}
	addr := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(mem))))
	shift := min(bits.TrailingZeros64(addr), bits.TrailingZeros64(uint64(len(mem))), 30)
	if shift < prm.AdapterPageShift {
		return nil, fmt.Errorf("%s: memory at %#x of %d bytes is not in whole 4 KiB pages", c.name, addr, len(mem))
	}
	if !c.mem.inRanges(addr, uint64(len(mem))) {
		return nil, fmt.Errorf("%s: memory at %#x of %d bytes lies outside the IOMMU's usable IOVA ranges %v", c.name, addr, len(mem), c.mem.ranges)
	}
	perm := vfio.DeviceRead
	if access&(channel.AccessLocalWrite|channel.AccessRemoteWrite) != 0 {
		perm |= vfio.DeviceWrite
	}
	if err := c.fn.DMA().MapDMA(mem, addr, perm); err != nil {
		return nil, fmt.Errorf("%s: map memory for the device: %w", c.name, err)
	}
	n := len(mem) >> shift
	base := prm.CreateUMEMIn.UMEM.Off
	u := prm.UMEM
	in := prm.NewCmdIn(prm.CmdOpCreateUMEM, 0, int(u.Mtt.At(base).ByteOff())+8*n)
	u.LogPageSize.At(base).Set(in, uint64(shift-prm.AdapterPageShift))
	u.NumOfMtt.At(base).Set(in, uint64(n))
	for i := range n {
		binary.BigEndian.PutUint64(in[u.Mtt.At(base).ByteOff()+8*i:], addr+uint64(i)<<shift)
	}
	out := make([]byte, 16)
	if err := c.run(in, out); err != nil {
		return nil, errors.Join(err, c.fn.DMA().UnmapDMA(addr, uint64(len(mem))))
	}
	um := &umemH{c: c, id: uint32(prm.CreateUMEMOut.UMEMID.Get(out)), addr: addr, size: uint64(len(mem))}
	c.track(um)
	return um, nil
}

type umemH struct {
	c          *Channel
	id         uint32
	addr, size uint64
}

func (u *umemH) ID() uint32 { return u.id }
func (u *umemH) Release() error {
	if err := u.c.enter(); err != nil {
		return err
	}
	defer u.c.leave()
	if !u.c.untrack(u) {
		return channel.ErrClosed
	}
	return u.release()
}
func (u *umemH) release() error {
	var err error
	if u.c.Health() == nil {
		in := prm.NewCmdIn(prm.CmdOpDestroyUMEM, 0, 16)
		prm.DestroyUMEMIn.UMEMID.Set(in, uint64(u.id))
		err = u.c.run(in, make([]byte, 16))
	}
	// The mapping goes even when firmware refused: the memory's owner frees it next.
	return errors.Join(err, u.c.fn.DMA().UnmapDMA(u.addr, u.size))
}

func (c *Channel) allocUARIndex() (uint32, error) {
	out := make([]byte, 16)
	if err := c.run(prm.NewCmdIn(prm.CmdOpAllocUAR, 0, 16), out); err != nil {
		return 0, err
	}
	idx := uint32(prm.AllocUAROut.UAR.Get(out))
	if int64(idx+1)*prm.UARPageSize > int64(c.bar.Len()) {
		return 0, errors.Join(fmt.Errorf("%s: ALLOC_UAR gave page %d, beyond the %d-byte BAR0", c.name, idx, c.bar.Len()), c.releaseUARIndex(idx))
	}
	return idx, nil
}

func (c *Channel) releaseUARIndex(idx uint32) error {
	in := prm.NewCmdIn(prm.CmdOpDeallocUAR, 0, 16)
	prm.DeallocUARIn.UAR.Set(in, uint64(idx))
	return c.run(in, make([]byte, 16))
}

// AllocUAR implements channel.Channel: ALLOC_UAR, and the page in the BAR0 mapping.
func (c *Channel) AllocUAR() (channel.UAR, error) {
	if err := c.enter(); err != nil {
		return nil, err
	}
	defer c.leave()
	if err := c.healthy("alloc UAR"); err != nil {
		return nil, err
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
	u.c.wr64(int(u.idx)*prm.UARPageSize+int(off), v)
}
func (u *uarH) Write32(off uint32, v uint32) {
	u.c.wr(int(u.idx)*prm.UARPageSize+int(off), v)
}
func (u *uarH) Release() error {
	if err := u.c.enter(); err != nil {
		return err
	}
	defer u.c.leave()
	if !u.c.untrack(u) {
		return channel.ErrClosed
	}
	return u.release()
}
func (u *uarH) release() error { return u.c.releaseUARIndex(u.idx) }

// EQN implements channel.Channel: every vector is the channel's completion EQ.
func (c *Channel) EQN(vector int) (uint32, error) {
	if err := c.enter(); err != nil {
		return 0, err
	}
	defer c.leave()
	if err := c.healthy("EQN"); err != nil {
		return 0, err
	}
	if vector < 0 {
		return 0, fmt.Errorf("%s: completion vector %d", c.name, vector)
	}
	return c.cqEQ, nil
}

// AttachRoot implements channel.Channel with SET_FLOW_TABLE_ROOT on the NIC RX table type;
// detaching is op_mod 1 without a table id (kernel fs_cmd.c mlx5_cmd_update_root_ft
// disconnects the root so).
func (c *Channel) AttachRoot(table uint32) (func() error, error) {
	if err := c.enter(); err != nil {
		return nil, err
	}
	defer c.leave()
	if err := c.healthy("attach root"); err != nil {
		return nil, err
	}
	set := func(id uint32, opMod uint16) error {
		in := prm.NewCmdIn(prm.CmdOpSetFlowTableRoot, opMod, 0x40)
		prm.SetFlowTableRootIn.TableType.Set(in, prm.FlowTableNICRX)
		prm.SetFlowTableRootIn.TableID.Set(in, uint64(id))
		return c.run(in, make([]byte, 16))
	}
	if err := set(table, 0); err != nil {
		return nil, err
	}
	var once sync.Once
	return func() error {
		err := channel.ErrClosed
		once.Do(func() {
			if err = c.enter(); err == nil {
				err = set(0, 1)
				c.leave()
			}
		})
		return err
	}, nil
}

// Close implements channel.Channel: every object, UMEM and UAR still live is released newest
// first; then the EQs go, the function is torn down (fast, then graceful when fast fails),
// every page comes back from firmware, the function is disabled, and all DMA memory, the
// interrupt and the function are released. On a failed device no command is sent: only the
// host side is released.
func (c *Channel) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return channel.ErrClosed
	}
	c.closed = true
	var drained chan struct{}
	if c.inflight > 0 {
		c.drained = make(chan struct{})
		drained = c.drained
	}
	c.mu.Unlock()
	if drained != nil {
		// Calls already admitted finish first: each is bounded by the command timeout.
		t := time.NewTimer(c.opts.CommandTimeout + time.Second)
		select {
		case <-drained:
		case <-t.C:
			c.log.Warn("mlx5 vfio: closing while calls are still running", "device", c.name)
		}
		t.Stop()
	}
	var errs []error
	for _, r := range c.live.Take() {
		if c.Health() != nil {
			if u, ok := r.(*umemH); ok {
				errs = append(errs, u.release()) // only unmaps
			}
			continue
		}
		if err := r.release(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(append(errs, c.shutdown())...)
}

// shutdown tears the function down (when it came up far enough) and releases the host side.
func (c *Channel) shutdown() error {
	c.tearingDown.Store(true)
	var errs []error
	dead := func() bool { return c.Health() != nil || c.q == nil }
	if !dead() && c.cqEQOK {
		errs = append(errs, c.destroyEQ(c.cqEQ, c.cqEQUAR))
	}
	if c.eq != nil {
		// Commands go back to polling before the async EQ goes: DESTROY_EQ's own
		// completion has no EQ to be reported in.
		c.events.Store(false)
		if !dead() {
			errs = append(errs, c.destroyEQ(c.eq.n, c.eq.uar))
		}
	}
	if c.stop != nil {
		close(c.stop)
		<-c.loopDone
		<-c.pageDone
	}
	if c.enabled && !dead() {
		errs = append(errs, c.teardown())
	}
	if c.irq != nil {
		errs = append(errs, c.irq.Close())
	}
	if c.mem != nil {
		errs = append(errs, c.mem.closeAll())
	}
	errs = append(errs, c.fn.Close())
	return errors.Join(errs...)
}

func (c *Channel) destroyEQ(n, uar uint32) error {
	if c.Health() != nil {
		return nil
	}
	in := prm.NewCmdIn(prm.CmdOpDestroyEQ, 0, 16)
	prm.DestroyEQIn.EQNumber.Set(in, uint64(n))
	return errors.Join(c.run(in, make([]byte, 16)), c.releaseUARIndex(uar))
}

// teardown is TEARDOWN_HCA, fast when the device offers it (PREPARE_FAST_TEARDOWN, then the
// NIC interface set to disabled and polled for; mlx5_vfio.c mlx5_vfio_teardown_hca_fast),
// graceful otherwise or when fast fails; then every page back (MANAGE_PAGES take until
// firmware holds none) and DISABLE_HCA.
func (c *Channel) teardown() error {
	var errs []error
	fast := c.caps != nil && prm.CmdHCACap.FastTeardown.Get(c.caps) != 0
	done := !c.initialized // enabled only: nothing to tear down, pages to take back
	if fast && !done {
		err := c.teardownFast()
		if err == nil {
			done = true
		} else {
			c.log.Warn("mlx5 vfio: fast teardown failed; tearing down gracefully", "device", c.name, "err", err)
		}
	}
	if !done {
		in := prm.NewCmdIn(prm.CmdOpTeardownHCA, 0, 16)
		prm.TeardownHCAIn.Profile.Set(in, prm.TeardownGraceful)
		if err := c.run(in, make([]byte, 16)); err != nil {
			errs = append(errs, err)
		}
	}
	if err := c.reclaimPages(c.GivenPages() + 1); err != nil {
		errs = append(errs, err)
	}
	if n := c.GivenPages(); n != 0 {
		errs = append(errs, fmt.Errorf("%s: firmware kept %d pages after teardown", c.name, n))
	}
	if err := c.run(prm.NewCmdIn(prm.CmdOpDisableHCA, 0, 16), make([]byte, 16)); err != nil {
		errs = append(errs, err)
	}
	// The queue address goes with the NIC interface back to full, so that the next driver
	// finds the function as after reset.
	c.wr(regCmdqAddrH, 0)
	c.wr(regCmdqAddrLSz, 0)
	return errors.Join(errs...)
}

func (c *Channel) teardownFast() error {
	in := prm.NewCmdIn(prm.CmdOpTeardownHCA, 0, 16)
	prm.TeardownHCAIn.Profile.Set(in, prm.TeardownPrepareFast)
	out := make([]byte, 16)
	if err := c.run(in, out); err != nil {
		return err
	}
	// state 1: MLX5_TEARDOWN_HCA_OUT_FORCE_STATE_FAIL (mlx5_ifc.h).
	if st := prm.TeardownHCAOut.State.Get(out); st == 1 {
		return fmt.Errorf("TEARDOWN_HCA prepare-fast: firmware answered state fail")
	}
	l := c.rd(regCmdqAddrLSz)
	c.wr(regCmdqAddrLSz, l&^(7<<nicIfcShift)&^0xff|nicIfcDisabled<<nicIfcShift)
	deadline := time.Now().Add(3 * time.Second) // MLX5_FAST_TEARDOWN_WAIT_MS
	for c.rd(regCmdqAddrLSz)>>nicIfcShift&7 != nicIfcDisabled {
		if time.Now().After(deadline) {
			return fmt.Errorf("NIC interface still %d 3 s after fast teardown", c.rd(regCmdqAddrLSz)>>nicIfcShift&7)
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}
