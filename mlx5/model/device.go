package model

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/daqiri-go/daqiri/mlx5/model/internal/datapath"
	"github.com/daqiri-go/daqiri/mlx5/model/internal/dma"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// Config describes one simulated port. The zero value is a usable device (see the defaults
// on each field).
type Config struct {
	// MAC is the vport's permanent address (QUERY_NIC_VPORT_CONTEXT); default 02:00:00:00:00:01.
	MAC net.HardwareAddr
	// MTU is the vport's MTU as the vport context carries it (the hardware MTU: the kernel's
	// mlx5e adds the Ethernet header, a VLAN tag and the FCS to the netdev MTU); default 1522.
	MTU int
	// FWVersion is major, minor, subminor as the init segment and the health buffer report;
	// default 16.35.4030 (a ConnectX-5 firmware line; any value works for the drivers).
	FWVersion [3]uint16
	// BootPages and InitPages are what QUERY_PAGES answers for op_mod boot and init (the
	// pages firmware wants before and for INIT_HCA); defaults 32 and 64. Inferred: real
	// firmware's counts depend on the device and its configuration.
	BootPages, InitPages int32
	// InitializingReads is how many reads of the init segment's initializing word still
	// show the bit set after reset (the driver's wait for firmware); default 1, negative for 0.
	InitializingReads int
	// FreqKHz is the free-running timer's frequency (cmd_hca_cap device_frequency_khz);
	// default 1,000,000 (1 GHz; inferred — ConnectX-5/6 report 156250 to 1000000).
	FreqKHz uint32
	// Interrupt is called when an armed EQ gets an EQE, with the EQ's MSI-X vector (eqc
	// intr): the device's interrupt. It runs with the device's event lock held and must not
	// call back into the Device; nil for polling drivers.
	Interrupt func(vector uint16)
	// CommandLog, when set, is called after every command the firmware model completes
	// (command queue and Exec alike) with what was asked and answered: the per-command log
	// of a server that lets real drivers use the model. It runs without the device's locks
	// held.
	CommandLog func(CommandRecord)
	// Realtime makes the device clock follow the host's monotonic clock from New, for
	// free-running use; otherwise the clock moves only by Advance (deterministic mode).
	Realtime bool
	// TimerOnly makes the device a ConnectX without a real-time clock: cmd_hca_cap
	// rq_ts_format and sq_ts_format 0 (free-running timer only), so drivers stamp and wait in
	// internal-timer ticks.
	TimerOnly bool
}

func (c Config) withDefaults() Config {
	if len(c.MAC) == 0 {
		c.MAC = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x01}
	}
	if c.MTU == 0 {
		c.MTU = 1522
	}
	if c.FWVersion == [3]uint16{} {
		c.FWVersion = [3]uint16{16, 35, 4030}
	}
	if c.BootPages == 0 {
		c.BootPages = 32
	}
	if c.InitPages == 0 {
		c.InitPages = 64
	}
	if c.InitializingReads == 0 {
		c.InitializingReads = 1
	}
	if c.FreqKHz == 0 {
		c.FreqKHz = 1_000_000
	}
	return c
}

// hcaState is the function's life cycle as firmware tracks it.
type hcaState uint8

const (
	hcaDisabled    hcaState = iota // after reset / DISABLE_HCA
	hcaEnabled                     // ENABLE_HCA done, INIT_HCA not yet (or after TEARDOWN_HCA)
	hcaInitialized                 // INIT_HCA done
)

// Device is one simulated ConnectX port (one PCI function): BAR0, a DMA address space, the
// firmware's command interface and objects, and the datapath.
type Device struct {
	cfg   Config
	space *dma.Space
	clock *clock
	// nic is the datapath; TEARDOWN_HCA replaces it with an empty one (firmware forgets
	// every queue), so readers load it.
	nic atomic.Pointer[datapath.NIC]
	// wiring, replayed onto a new datapath: the cabled peer and the wire function.
	wireMu sync.Mutex
	peer   *Device
	wire   func([]byte)
	// swapped is closed when the datapath is replaced, so that Run moves to the new one.
	swapped chan struct{}

	// mu serialises the command interface and guards the control state below. Lock order:
	// mu, then the datapath's own lock, then evMu or keysMu (leaves).
	mu      sync.Mutex
	state   hcaState
	issi    uint16
	hostEnd uint8 // ACCESS_REG host endianness as the driver set it
	caps    map[prm.CapType]*capPages
	pages   pageBook
	mac     net.HardwareAddr
	mtu     uint16
	promisc [3]bool     // uc, mc, all
	lists   [3][]uint64 // the vport's UC, MC and VLAN lists as 64-bit entries
	objs    objects
	iseg    initSeg
	port    portState

	cmdLog cmdLog

	evMu  sync.Mutex
	eqs   map[uint32]*eq
	eqSeq uint64 // EQs created so far: each EQ's seq is its place in that count

	keysMu sync.RWMutex
	// keysGen counts changes of the MKEY and UMEM tables (under keysMu), for keys.Gen.
	keysGen atomic.Uint64
	mkeys   map[uint32]*mkey // by index (key >> 8)
	umems   map[uint32]*umem
}

// New returns a device fresh from reset: the init segment shows the configured firmware
// version and command interface revision, the initializing bit is set, no command queue is
// configured and no pages are given.
func New(cfg Config) *Device {
	cfg = cfg.withDefaults()
	d := &Device{
		cfg:   cfg,
		space: &dma.Space{},
		clock: newClock(cfg.Realtime, cfg.FreqKHz),
		eqs:   map[uint32]*eq{},
		mkeys: map[uint32]*mkey{},
		umems: map[uint32]*umem{},

		swapped: make(chan struct{}),
	}
	d.reset()
	d.nic.Store(d.newNIC())
	return d
}

func (d *Device) newNIC() *datapath.NIC {
	return datapath.New(datapath.Config{Space: d.space, Keys: keys{d}, Events: events{d}, Clock: d.clock})
}

// dp is the current datapath.
func (d *Device) dp() *datapath.NIC { return d.nic.Load() }

// replaceNIC gives the port an empty datapath with the same wiring.
func (d *Device) replaceNIC() {
	d.nic.Store(d.newNIC())
	d.wireMu.Lock()
	peer, wire := d.peer, d.wire
	close(d.swapped)
	d.swapped = make(chan struct{})
	d.wireMu.Unlock()
	if peer != nil {
		datapath.Cable(d.dp(), peer.dp())
	}
	if wire != nil {
		d.dp().SetWire(wireFunc(wire))
	}
}

// reset puts the firmware state back to power-on.
func (d *Device) reset() {
	d.state = hcaDisabled
	d.issi = 0
	d.caps = defaultCaps(d.cfg)
	d.pages = pageBook{given: map[uint64]bool{}}
	d.mac = append(net.HardwareAddr(nil), d.cfg.MAC...)
	d.mtu = uint16(d.cfg.MTU)
	d.promisc = [3]bool{}
	d.lists = [3][]uint64{}
	d.objs = newObjects()
	d.iseg = initSeg{initializingReads: d.cfg.InitializingReads}
	d.port = newPortState(d.cfg)
}

// DMASpace is the device's I/O address space (an alias, so that drivers outside this module
// directory can hold and use it: the VFIO code of a later issue maps memory through it as
// through a container).
type DMASpace = dma.Space

// DMAWindow is memory the device reaches only by copy (GPU memory), mapped into the DMA
// space with MapWindow: the model's writes and reads go through it.
type DMAWindow = dma.Window

// DMAPerm says what the device may do with a mapping, as VFIO_DMA_MAP_FLAG_READ/WRITE say.
type DMAPerm = dma.Perm

// DMA permissions.
const (
	DMARead  DMAPerm = dma.Read
	DMAWrite DMAPerm = dma.Write
)

// DMA is the device's I/O address space: what a VFIO container gives a real device. The
// driver maps the memory it hands the device (command queue, mailboxes, pages, queues) at
// I/O virtual addresses here, and every address in a command or a WQE is one of those.
func (d *Device) DMA() *DMASpace { return d.space }

// Advance moves the device clock forward by dt in deterministic mode: the internal timer, the
// health counter and CQE timestamps follow it. In Realtime mode it adds to the host's clock.
func (d *Device) Advance(dt time.Duration) { d.clock.advance(dt) }

// Step does the datapath work pending now (SQ doorbells rung, frames received), at most
// budget units, and returns how many were done; 0 means idle. Deterministic tests call Step
// until it returns 0.
func (d *Device) Step(budget int) int { return d.dp().Step(budget) }

// Run steps the datapath from the calling goroutine until ctx ends (free-running mode),
// following the datapath across TEARDOWN_HCA.
func (d *Device) Run(ctx context.Context) {
	for ctx.Err() == nil {
		d.wireMu.Lock()
		swapped := d.swapped
		d.wireMu.Unlock()
		nic := d.dp()
		c, cancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-swapped:
				cancel()
			case <-c.Done():
			}
		}()
		nic.Run(c)
		cancel()
	}
}

// Cable connects d's port and o's back to back: each one's transmit is the other's
// receive. d.Cable(d) is the port's internal loopback.
func (d *Device) Cable(o *Device) {
	wasD, wasO := d.linkUp(), o.linkUp()
	d.wireMu.Lock()
	d.peer, d.wire = o, nil
	d.wireMu.Unlock()
	if o != d {
		o.wireMu.Lock()
		o.peer, o.wire = d, nil
		o.wireMu.Unlock()
	}
	datapath.Cable(d.dp(), o.dp())
	d.portChange(wasD, d.linkUp())
	if o != d {
		o.portChange(wasO, o.linkUp())
	}
}

// linkUp is the port's operational state (regs.go operUp) read under the device's lock.
func (d *Device) linkUp() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.operUp()
}

// Receive hands the port a frame from its wire (a test's traffic generator, a bridge).
func (d *Device) Receive(frame []byte) { d.dp().Receive(frame) }

// SetWire sends what the port transmits to w (nil drops it), for a wire other than a cable.
func (d *Device) SetWire(w func(frame []byte)) {
	was := d.linkUp()
	d.wireMu.Lock()
	d.peer, d.wire = nil, w
	d.wireMu.Unlock()
	if w == nil {
		d.dp().SetWire(nil)
	} else {
		d.dp().SetWire(wireFunc(w))
	}
	d.portChange(was, d.linkUp())
}

type wireFunc func([]byte)

// Transmit implements datapath.Wire.
func (w wireFunc) Transmit(frame []byte) { w(frame) }

// Counters are the port's traffic counters as the datapath keeps them.
type Counters = datapath.Counters

// Counters reads the port's counters.
func (d *Device) Counters() Counters { return d.dp().Counters(false) }

// clock is the device's time: deterministic (moved by Advance) or following the host.
type clock struct {
	realtime bool
	start    time.Time
	freqKHz  uint32
	// offset is what advance moved the free-running timer by (ns), and rtOffset what the
	// driver set or stepped the real-time clock by (MTUTC, ns), apart from the free-running
	// timer, which nothing sets. Atomics, not a mutex: every CQE reads the clock, from both
	// ports' goroutines and the driver's threads (a shared lock's cache line moved between
	// CPUs per CQE).
	offset   atomic.Int64
	rtOffset atomic.Int64
}

// setRealTime sets the real-time clock to t (ns in the PRM's sense: seconds*1e9+ns).
func (c *clock) setRealTime(t int64) {
	c.rtOffset.Store(t - int64(c.now()))
}

// stepRealTime moves the real-time clock by d.
func (c *clock) stepRealTime(d time.Duration) {
	c.rtOffset.Add(int64(d))
}

func newClock(realtime bool, freqKHz uint32) *clock {
	return &clock{realtime: realtime, start: time.Now(), freqKHz: freqKHz}
}

func (c *clock) advance(dt time.Duration) {
	c.offset.Add(int64(dt))
}

// now is the time since the device came out of reset.
func (c *clock) now() time.Duration {
	if c.realtime {
		return time.Since(c.start) + time.Duration(c.offset.Load())
	}
	return time.Duration(c.offset.Load())
}

// FreeRunning is the internal timer: ticks of the device frequency since reset.
func (c *clock) FreeRunning() uint64 {
	ns := uint64(c.now())
	return ns / 1000 * uint64(c.freqKHz) / 1000
}

// RealTime is the real-time clock in the PRM's format: seconds in the upper 32 bits and
// nanoseconds in the lower (DPDK mlx5_txpp.c and rdma-core read it so). The model's epoch is
// the device's reset.
func (c *clock) RealTime() uint64 {
	off := time.Duration(c.rtOffset.Load())
	ns := uint64(max(c.now()+off, 0))
	return ns/1e9<<32 | ns%1e9
}

// String names the device by its MAC.
func (d *Device) String() string { return fmt.Sprintf("mlx5 model %s", d.cfg.MAC) }
