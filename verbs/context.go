package verbs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/daqiri-go/daqiri/verbs/internal/dv"
	"github.com/daqiri-go/daqiri/verbs/internal/uapi"
	"github.com/daqiri-go/daqiri/verbs/provider"
)

// Options tune Open.
type Options struct {
	// Provider overrides the user-space driver chosen from the device's
	// kernel driver (for example an mlx5 provider living outside verbs/).
	Provider provider.Provider
}

// Context is an opened RDMA device: one uverbs file descriptor with its
// kernel user context, and the parent of every PD, CQ, QP, MR and AH made
// through it. Closing it releases everything it made.
type Context struct {
	dev      DeviceInfo
	fd       int
	prov     provider.Context
	driverID uint32

	numCompVectors int
	coreSupport    uint64
	asyncFD        int

	// closed is read on every datapath call, so it is atomic; mu guards
	// the maps and serialises Close.
	closed  atomic.Bool
	mu      sync.Mutex
	nextID  uint64
	objects map[uint64]any // user handle → *CQ / *QP, for event demultiplexing
	live    map[closer]struct{}
}

// closer is anything the context must release on Close.
type closer interface{ release() }

// Open opens an RDMA device by name ("" picks the first with a verbs
// character device), creates its kernel user context and an async event
// file. The device's kernel driver selects the provider unless opts names
// one.
func Open(name string, opts *Options) (*Context, error) {
	dev, err := LookupDevice(name)
	if err != nil {
		return nil, err
	}
	return OpenDevice(dev, opts)
}

// OpenDevice opens a device described by DeviceInfo (from Devices).
func OpenDevice(dev DeviceInfo, opts *Options) (*Context, error) {
	var p provider.Provider
	if opts != nil && opts.Provider != nil {
		p = opts.Provider
	} else if p = dv.BuiltinProvider(dev.Driver); p == nil {
		return nil, fmt.Errorf("%w: device %s has driver %q", ErrNoProvider, dev.Name, dev.Driver)
	}
	if dev.UverbsDev == "" {
		return nil, fmt.Errorf("%w: %s has no verbs character device (is ib_uverbs loaded?)", ErrNoDevice, dev.Name)
	}
	fd, err := unix.Open(dev.UverbsDev, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		var errno syscall.Errno
		if errors.As(err, &errno) {
			return nil, &Error{Op: "open " + dev.UverbsDev, Device: dev.Name, Errno: errno}
		}
		return nil, fmt.Errorf("verbs: open %s for %s: %w", dev.UverbsDev, dev.Name, err)
	}
	c := &Context{dev: dev, fd: fd, driverID: p.DriverID(), asyncFD: -1, objects: map[uint64]any{}, live: map[closer]struct{}{}}
	fail := func(e error) (*Context, error) {
		if c.asyncFD >= 0 {
			unix.Close(c.asyncFD)
		}
		unix.Close(fd)
		return nil, e
	}
	pc, err := p.NewContext(kernel{c})
	if err != nil {
		return fail(fmt.Errorf("verbs: %s provider for %s: %w", p.Name(), dev.Name, err))
	}
	c.prov = pc

	// GET_CONTEXT creates the kernel's ib_ucontext for this file.
	call := c.newCall(uapi.ObjectDevice, uapi.MethodGetContext)
	var ncv [4]byte
	var core [8]byte
	call.Out(uapi.AttrGetContextNumCompVectors, ncv[:])
	call.Out(uapi.AttrGetContextCoreSupport, core[:])
	drvOut := addUHW(call, pc)
	if err := call.Do(fd); err != nil {
		if errors.Is(err, syscall.EINVAL) {
			// The kernel checks the header's driver id against the device.
			return fail(fmt.Errorf("%w (is %s, driver id %d, the right provider for %s, driver %q?)",
				c.wrap("ioctl GET_CONTEXT", err), p.Name(), p.DriverID(), dev.Name, dev.Driver))
		}
		return fail(c.wrap("ioctl GET_CONTEXT", err))
	}
	c.numCompVectors = int(binary.NativeEndian.Uint32(ncv[:]))
	c.coreSupport = binary.NativeEndian.Uint64(core[:])
	if err := pc.Attach(drvOut); err != nil {
		return fail(fmt.Errorf("verbs: %s provider context for %s: %w", p.Name(), dev.Name, err))
	}

	// The async event file: the ioctl path does not create one with the
	// context (the legacy write GET_CONTEXT did). CQ and QP events go to it.
	call = c.newCall(uapi.ObjectAsyncEvent, uapi.MethodAsyncEventAlloc)
	i := call.NewFD(uapi.AttrAsyncEventAllocFD)
	if err := call.Do(fd); err != nil {
		return fail(c.wrap("ioctl ASYNC_EVENT_ALLOC", err))
	}
	c.asyncFD = call.FDOut(i)
	return c, nil
}

// newCall starts an ioctl call for this context's driver.
func (c *Context) newCall(object, method uint16) *uapi.Call {
	return uapi.NewCall(c.driverID, object, method)
}

// addUHW attaches a provider request's driver data to a call and returns the
// buffer the kernel will fill with the driver's reply.
func addUHW(call *uapi.Call, r provider.Request) []byte {
	if in := r.DriverIn(); len(in) > 0 {
		call.In(uapi.AttrUHWIn, in)
	}
	n := r.DriverOutLen()
	if n == 0 {
		return nil
	}
	out := make([]byte, n)
	call.Out(uapi.AttrUHWOut, out)
	return out
}

// Device describes the opened device.
func (c *Context) Device() DeviceInfo { return c.dev }

// NumCompVectors is the number of completion vectors (interrupt lines) the
// device offers; a CQ's compVector must be below it.
func (c *Context) NumCompVectors() int { return c.numCompVectors }

// FD is the uverbs file descriptor (for diagnostics; do not close it).
func (c *Context) FD() int { return c.fd }

func (c *Context) begin() error {
	if c.closed.Load() {
		return fmt.Errorf("%w: context of %s", ErrClosed, c.dev.Name)
	}
	return nil
}

func (c *Context) track(o closer) {
	c.mu.Lock()
	c.live[o] = struct{}{}
	c.mu.Unlock()
}

func (c *Context) untrack(o closer) {
	c.mu.Lock()
	delete(c.live, o)
	c.mu.Unlock()
}

// register assigns a user handle the kernel echoes in events.
func (c *Context) register(o any) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextID++
	c.objects[c.nextID] = o
	return c.nextID
}

func (c *Context) unregister(id uint64) {
	c.mu.Lock()
	delete(c.objects, id)
	c.mu.Unlock()
}

func (c *Context) lookup(id uint64) any {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.objects[id]
}

// Close releases every object made through the context and the context
// itself. Closing the uverbs file makes the kernel destroy all its objects,
// so this also recovers from objects whose own Close failed.
func (c *Context) Close() error {
	c.mu.Lock()
	if c.closed.Load() {
		c.mu.Unlock()
		return nil
	}
	c.closed.Store(true)
	live := make([]closer, 0, len(c.live))
	for o := range c.live {
		live = append(live, o)
	}
	c.live = map[closer]struct{}{}
	c.mu.Unlock()
	for _, o := range live {
		o.release()
	}
	var first error
	if c.asyncFD >= 0 {
		if err := unix.Close(c.asyncFD); err != nil {
			first = c.wrap("close async event fd", err)
		}
	}
	if err := unix.Close(c.fd); err != nil && first == nil {
		first = c.wrap("close", err)
	}
	if err := c.prov.Close(); err != nil && first == nil {
		first = err
	}
	return first
}

// destroy runs a one-attribute destroy method (PD, MR, AH).
func (c *Context) destroy(object, method, attr uint16, handle uint32, op string) error {
	call := c.newCall(object, method)
	call.IDR(attr, handle)
	return c.wrap(op, call.Do(c.fd))
}

// write runs a legacy write() command.
func (c *Context) write(op string, w *uapi.Write) ([]byte, error) {
	resp, err := w.Do(c.fd)
	return resp, c.wrap(op, err)
}

// kernel lends the provider the context's fd. It also implements dv.Kernel, the surface
// driver packages beside verbs (verbs/mlx5dv) issue their driver's methods through; its
// exported methods are not part of verbs' API (the type is unexported and dv internal).
type kernel struct{ c *Context }

var _ dv.Kernel = kernel{}

func (k kernel) Device() (name, driver string) { return k.c.dev.Name, k.c.dev.Driver }

func (k kernel) Begin() error { return k.c.begin() }

func (k kernel) NewCall(object, method uint16) *uapi.Call { return k.c.newCall(object, method) }

func (k kernel) Do(call *uapi.Call) error { return call.Do(k.c.fd) }

func (k kernel) Wrap(op string, err error) error { return k.c.wrap(op, err) }

func (k kernel) MmapProt(offset int64, length, prot int) ([]byte, error) {
	return unix.Mmap(k.c.fd, offset, length, prot, unix.MAP_SHARED)
}

// released is a driver package's object in the context's live set.
type released struct{ f func() }

func (r *released) release() { r.f() }

func (k kernel) Track(release func()) func() {
	r := &released{release}
	k.c.track(r)
	return func() { k.c.untrack(r) }
}

func (k kernel) PD(pd any) (uint32, error) {
	p, ok := pd.(*PD)
	if !ok || p == nil {
		return 0, fmt.Errorf("verbs: %T is not a PD", pd)
	}
	if err := p.begin(); err != nil {
		return 0, err
	}
	return p.handle, nil
}

func (k kernel) Mmap(offset int64, length int) ([]byte, error) {
	b, err := unix.Mmap(k.c.fd, offset, length, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, k.c.wrap("mmap", err)
	}
	return b, nil
}

func (k kernel) Munmap(b []byte) error { return k.c.wrap("munmap", unix.Munmap(b)) }

func (k kernel) PostSendDoorbell(qpHandle uint32) error {
	req := uapi.PostSend{QPHandle: qpHandle, WQESize: uapi.SizeofUverbsSendWR}
	_, err := k.c.write("write POST_SEND", &uapi.Write{
		Command: uapi.CmdPostSend,
		Req:     uapi.Bytes(&req),
		RespLen: int(unsafe.Sizeof(uapi.PostSendResp{})),
	})
	return err
}

// ---- queries ----

// DeviceAttr is the device's capabilities (QUERY_DEVICE).
type DeviceAttr struct {
	FWVer           uint64
	NodeGUID        uint64
	SysImageGUID    uint64
	MaxMRSize       uint64
	PageSizeCap     uint64
	VendorID        uint32
	VendorPartID    uint32
	HWVer           uint32
	MaxQP           uint32
	MaxQPWR         uint32
	DeviceCapFlags  uint32
	MaxSGE          uint32
	MaxSGERd        uint32
	MaxCQ           uint32
	MaxCQE          uint32
	MaxMR           uint32
	MaxPD           uint32
	MaxQPRdAtom     uint32
	MaxQPInitRdAtom uint32
	MaxAH           uint32
	MaxSRQ          uint32
	MaxSRQWR        uint32
	MaxSRQSGE       uint32
	MaxPKeys        uint16
	PhysPortCnt     uint8
}

// QueryDevice reads the device's capabilities.
func (c *Context) QueryDevice() (DeviceAttr, error) {
	if err := c.begin(); err != nil {
		return DeviceAttr{}, err
	}
	var req uapi.RespOnly
	resp, err := c.write("write QUERY_DEVICE", &uapi.Write{
		Command: uapi.CmdQueryDevice,
		Req:     uapi.Bytes(&req),
		RespLen: int(unsafe.Sizeof(uapi.QueryDeviceResp{})),
	})
	if err != nil {
		return DeviceAttr{}, err
	}
	var r uapi.QueryDeviceResp
	copy(uapi.Bytes(&r), resp)
	return DeviceAttr{
		FWVer: r.FWVer, NodeGUID: beSwap(r.NodeGUID), SysImageGUID: beSwap(r.SysImageGUID),
		MaxMRSize: r.MaxMRSize, PageSizeCap: r.PageSizeCap,
		VendorID: r.VendorID, VendorPartID: r.VendorPartID, HWVer: r.HWVer,
		MaxQP: r.MaxQP, MaxQPWR: r.MaxQPWR, DeviceCapFlags: r.DeviceCapFlags,
		MaxSGE: r.MaxSGE, MaxSGERd: r.MaxSGERd, MaxCQ: r.MaxCQ, MaxCQE: r.MaxCQE,
		MaxMR: r.MaxMR, MaxPD: r.MaxPD, MaxQPRdAtom: r.MaxQPRdAtom, MaxQPInitRdAtom: r.MaxQPInitRdAtom,
		MaxAH: r.MaxAH, MaxSRQ: r.MaxSRQ, MaxSRQWR: r.MaxSRQWR, MaxSRQSGE: r.MaxSRQSGE,
		MaxPKeys: r.MaxPKeys, PhysPortCnt: r.PhysPortCnt,
	}, nil
}

// beSwap reads a big-endian u64 that was loaded in native (little-endian)
// order.
func beSwap(v uint64) uint64 {
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], v)
	return binary.BigEndian.Uint64(b[:])
}

// PortState is enum ib_port_state.
type PortState uint8

// Port states.
const (
	PortNop         PortState = 0
	PortDown        PortState = 1
	PortInit        PortState = 2
	PortArmed       PortState = 3
	PortActive      PortState = 4
	PortActiveDefer PortState = 5
)

func (s PortState) String() string {
	switch s {
	case PortNop:
		return "NOP"
	case PortDown:
		return "DOWN"
	case PortInit:
		return "INIT"
	case PortArmed:
		return "ARMED"
	case PortActive:
		return "ACTIVE"
	case PortActiveDefer:
		return "ACTIVE_DEFER"
	}
	return fmt.Sprintf("PortState(%d)", uint8(s))
}

// MTU is enum ib_mtu: 1 = 256 bytes … 5 = 4096 bytes.
type MTU uint8

// Path MTUs.
const (
	MTU256  MTU = 1
	MTU512  MTU = 2
	MTU1024 MTU = 3
	MTU2048 MTU = 4
	MTU4096 MTU = 5
)

// Bytes is the MTU in bytes (0 for an invalid value).
func (m MTU) Bytes() int {
	if m < MTU256 || m > MTU4096 {
		return 0
	}
	return 128 << m
}

// LinkLayer is the port's link layer.
type LinkLayer uint8

// Link layers (IB_LINK_LAYER_*).
const (
	LinkLayerUnspecified LinkLayer = 0
	LinkLayerInfiniBand  LinkLayer = 1
	LinkLayerEthernet    LinkLayer = 2
)

// PortAttr is one port's state (QUERY_PORT).
type PortAttr struct {
	State         PortState
	MaxMTU        MTU
	ActiveMTU     MTU
	GIDTblLen     uint32
	PortCapFlags  uint32
	PortCapFlags2 uint16
	MaxMsgSz      uint32
	PKeyTblLen    uint16
	LID           uint16
	SMLID         uint16
	LMC           uint8
	MaxVLNum      uint8
	SMSL          uint8
	ActiveWidth   uint8
	ActiveSpeed   uint8
	PhysState     uint8
	LinkLayer     LinkLayer
	Flags         uint8
}

// QueryPort reads a port's attributes (ports are numbered from 1).
func (c *Context) QueryPort(port uint8) (PortAttr, error) {
	if err := c.begin(); err != nil {
		return PortAttr{}, err
	}
	var r uapi.QueryPortRespEx
	call := c.newCall(uapi.ObjectDevice, uapi.MethodQueryPort)
	call.U64(uapi.AttrQueryPortPortNum, uint64(port))
	call.Out(uapi.AttrQueryPortResp, uapi.Bytes(&r))
	if err := call.Do(c.fd); err != nil {
		return PortAttr{}, c.wrap(fmt.Sprintf("ioctl QUERY_PORT(port %d)", port), err)
	}
	return PortAttr{
		State: PortState(r.State), MaxMTU: MTU(r.MaxMTU), ActiveMTU: MTU(r.ActiveMTU),
		GIDTblLen: r.GIDTblLen, PortCapFlags: r.PortCapFlags, PortCapFlags2: r.PortCapFlags2,
		MaxMsgSz: r.MaxMsgSz, PKeyTblLen: r.PKeyTblLen, LID: r.LID, SMLID: r.SMLID,
		LMC: r.LMC, MaxVLNum: r.MaxVLNum, SMSL: r.SMSL, ActiveWidth: r.ActiveWidth,
		ActiveSpeed: r.ActiveSpeed, PhysState: r.PhysState, LinkLayer: LinkLayer(r.LinkLayer), Flags: r.Flags,
	}, nil
}

// GIDType is enum ib_uverbs_gid_type.
type GIDType uint32

// GID types.
const (
	GIDTypeIB     GIDType = 0
	GIDTypeRoCEv1 GIDType = 1
	GIDTypeRoCEv2 GIDType = 2
)

func (t GIDType) String() string {
	switch t {
	case GIDTypeIB:
		return "IB"
	case GIDTypeRoCEv1:
		return "RoCEv1"
	case GIDTypeRoCEv2:
		return "RoCEv2"
	}
	return fmt.Sprintf("GIDType(%d)", uint32(t))
}

// GIDEntry is one populated GID table entry (QUERY_GID_ENTRY/TABLE).
type GIDEntry struct {
	GID           GID
	Index         uint32
	Port          uint32
	Type          GIDType
	NetdevIfindex uint32
}

func gidEntry(e *uapi.GIDEntry) GIDEntry {
	return GIDEntry{GID: e.GID, Index: e.GIDIndex, Port: e.PortNum, Type: GIDType(e.GIDType), NetdevIfindex: e.NetdevIfindex}
}

// QueryGID reads one GID table entry. An empty slot fails with ENODATA.
func (c *Context) QueryGID(port uint8, index uint32) (GIDEntry, error) {
	if err := c.begin(); err != nil {
		return GIDEntry{}, err
	}
	var e uapi.GIDEntry
	call := c.newCall(uapi.ObjectDevice, uapi.MethodQueryGIDEntry)
	call.U64(uapi.AttrQueryGIDEntryPort, uint64(port))
	call.U64(uapi.AttrQueryGIDEntryGIDIndex, uint64(index))
	call.U64(uapi.AttrQueryGIDEntryFlags, 0)
	call.Out(uapi.AttrQueryGIDEntryRespEntry, uapi.Bytes(&e))
	if err := call.Do(c.fd); err != nil {
		return GIDEntry{}, c.wrap(fmt.Sprintf("ioctl QUERY_GID_ENTRY(port %d, index %d)", port, index), err)
	}
	return gidEntry(&e), nil
}

// GIDTable reads every populated GID entry of every port.
func (c *Context) GIDTable() ([]GIDEntry, error) {
	if err := c.begin(); err != nil {
		return nil, err
	}
	// Size the buffer from the ports' table lengths.
	max := 0
	for _, p := range c.dev.Ports {
		a, err := c.QueryPort(uint8(p.Num))
		if err != nil {
			return nil, err
		}
		max += int(a.GIDTblLen)
	}
	if max == 0 {
		max = 1
	}
	const entrySize = int(unsafe.Sizeof(uapi.GIDEntry{}))
	if max*entrySize > 0xffff {
		max = 0xffff / entrySize
	}
	entries := make([]uapi.GIDEntry, max)
	var num [8]byte
	call := c.newCall(uapi.ObjectDevice, uapi.MethodQueryGIDTable)
	call.U64(uapi.AttrQueryGIDTableEntrySize, uint64(entrySize))
	call.Out(uapi.AttrQueryGIDTableRespEntries, unsafe.Slice((*byte)(unsafe.Pointer(&entries[0])), max*entrySize))
	call.Out(uapi.AttrQueryGIDTableRespNumEntries, num[:])
	if err := call.Do(c.fd); err != nil {
		return nil, c.wrap("ioctl QUERY_GID_TABLE", err)
	}
	n := binary.NativeEndian.Uint64(num[:])
	if n > uint64(max) {
		return nil, fmt.Errorf("verbs: QUERY_GID_TABLE on %s reported %d entries for a buffer of %d", c.dev.Name, n, max)
	}
	out := make([]GIDEntry, n)
	for i := range out {
		out[i] = gidEntry(&entries[i])
	}
	return out, nil
}

// ---- async events ----

// EventType is enum ib_event_type.
type EventType uint32

// Async event types.
const (
	EventCQErr            EventType = 0
	EventQPFatal          EventType = 1
	EventQPReqErr         EventType = 2
	EventQPAccessErr      EventType = 3
	EventCommEst          EventType = 4
	EventSQDrained        EventType = 5
	EventPathMig          EventType = 6
	EventPathMigErr       EventType = 7
	EventDeviceFatal      EventType = 8
	EventPortActive       EventType = 9
	EventPortErr          EventType = 10
	EventLIDChange        EventType = 11
	EventPKeyChange       EventType = 12
	EventSMChange         EventType = 13
	EventSRQErr           EventType = 14
	EventSRQLimitReached  EventType = 15
	EventQPLastWQEReached EventType = 16
	EventClientReregister EventType = 17
	EventGIDChange        EventType = 18
	EventWQFatal          EventType = 19
)

var eventNames = [...]string{
	"CQ_ERR", "QP_FATAL", "QP_REQ_ERR", "QP_ACCESS_ERR", "COMM_EST", "SQ_DRAINED",
	"PATH_MIG", "PATH_MIG_ERR", "DEVICE_FATAL", "PORT_ACTIVE", "PORT_ERR", "LID_CHANGE",
	"PKEY_CHANGE", "SM_CHANGE", "SRQ_ERR", "SRQ_LIMIT_REACHED", "QP_LAST_WQE_REACHED",
	"CLIENT_REREGISTER", "GID_CHANGE", "WQ_FATAL",
}

func (t EventType) String() string {
	if int(t) < len(eventNames) {
		return eventNames[t]
	}
	return fmt.Sprintf("EventType(%d)", uint32(t))
}

// AsyncEvent is one asynchronous event of the device.
type AsyncEvent struct {
	Type EventType
	// CQ or QP is the object the event concerns, when it is one this
	// context made and still has open.
	CQ *CQ
	QP *QP
	// Port is set for port events.
	Port uint32
	// Element is the raw element word (user handle or port number).
	Element uint64
}

// AsyncFD is the async event file descriptor, for callers that multiplex it
// with epoll; read events with NextAsyncEvent.
func (c *Context) AsyncFD() int { return c.asyncFD }

// NextAsyncEvent waits up to timeout for the next async event (a negative
// timeout waits indefinitely). It returns ErrTimeout when none came.
func (c *Context) NextAsyncEvent(timeout time.Duration) (AsyncEvent, error) {
	if err := c.begin(); err != nil {
		return AsyncEvent{}, err
	}
	var d uapi.AsyncEventDesc
	if err := readEvent(c.asyncFD, uapi.Bytes(&d), timeout); err != nil {
		return AsyncEvent{}, c.wrapEvent("read async event", err)
	}
	ev := AsyncEvent{Type: EventType(d.EventType), Element: d.Element}
	switch ev.Type {
	case EventCQErr:
		ev.CQ, _ = c.lookup(d.Element).(*CQ)
	case EventPortActive, EventPortErr, EventLIDChange, EventPKeyChange, EventSMChange,
		EventClientReregister, EventGIDChange:
		ev.Port = uint32(d.Element)
	case EventDeviceFatal:
	case EventSRQErr, EventSRQLimitReached, EventWQFatal:
	default:
		ev.QP, _ = c.lookup(d.Element).(*QP)
	}
	return ev, nil
}

func (c *Context) wrapEvent(op string, err error) error {
	if err == ErrTimeout {
		return err
	}
	return c.wrap(op, err)
}

// readEvent reads one fixed-size record from an event fd, waiting at most
// timeout for it to become readable.
func readEvent(fd int, b []byte, timeout time.Duration) error {
	ms := -1
	if timeout >= 0 {
		ms = int((timeout + time.Millisecond - 1) / time.Millisecond)
	}
	deadline := time.Now().Add(timeout)
	for {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(pfd, ms)
		if err == unix.EINTR {
			if timeout >= 0 {
				left := time.Until(deadline)
				if left <= 0 {
					return ErrTimeout
				}
				ms = int((left + time.Millisecond - 1) / time.Millisecond)
			}
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return ErrTimeout
		}
		break
	}
	for {
		n, err := unix.Read(fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n != len(b) {
			return fmt.Errorf("short event read: %d of %d bytes", n, len(b))
		}
		return nil
	}
}

// FindGID returns the port's GID table entry of type typ that holds addr
// (for RoCE: the IPv4-mapped or IPv6 GID of a local interface address),
// whose index a connected QP or AH uses as its source GID.
func (c *Context) FindGID(port uint8, addr netip.Addr, typ GIDType) (GIDEntry, error) {
	tab, err := c.GIDTable()
	if err != nil {
		return GIDEntry{}, err
	}
	want := GIDFromAddr(addr)
	for _, e := range tab {
		if e.Port == uint32(port) && e.GID == want && e.Type == typ {
			return e, nil
		}
	}
	return GIDEntry{}, fmt.Errorf("verbs: %s port %d has no %v GID for %v", c.dev.Name, port, typ, addr)
}
