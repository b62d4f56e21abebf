// Package mlx5 is the raw Ethernet engine for ConnectX NICs (engine name mlx5; upstream's
// ibverbs engine on raw streams), written in Go against the PRM: every object is a PRM
// command sent through a channel.Channel (DevX over uverbs, VFIO, or the device model in
// process), and the datapath reads CQEs and writes WQEs and doorbells in memory it shares
// with the device. No libibverbs, no DPDK, no C.
//
// # Ports
//
// An interface's address is a PCI address or an RDMA device name, opened through DevX
// (mlx5/channel/devx over the kernel's mlx5_ib); that path has run against NVIDIA's mlx5_ib
// in a VM with the device model as the PCI function, never on a ConnectX (none is reachable
// from this project). The engine knows nothing else: addresses a channel.Fabric claims get
// their channels from it (OpenWith; daqiri.WithMLX5Fabric). The ConnectX device model's
// fabric, mlx5/model/modelch.Fabric, gives `model:N` (the model in process), `model:N@IFNAME`
// (bridged to a netdev) and `vfio+model:N` (the model behind the VFIO command-queue
// transport); the tools and tests wire it in, the library does not link it. Per port the
// engine creates a PD, a transport domain, a TIS, a UAR page, a Q counter (the NIC's
// out-of-buffer drops), one memory key per memory region (the region registered as a UMEM:
// host, huge and host_pinned memory by address; device memory, which has no host address, as
// a DMA-BUF the memory exports, as upstream's ibverbs engine registers it with
// ibv_reg_dmabuf_mr — DEVX_UMEM_REG with the fd on DevX, the model resolving the fd on model
// ports), and for each queue a CQ and an RQ or SQ.
//
// What the engine needs from a device it asks of the device, as on hardware: the clock through
// the channel (channel.Clock: the kernel's clock information page on DevX; the init
// segment's timers read through BAR0 on VFIO and the model), drops through QUERY_Q_COUNTER
// (out of buffer), QUERY_VPORT_COUNTER (receive errors, the traffic Close waits to settle)
// and flow counters on the drop rules and on the isolation miss (frames passed to the
// kernel), and the physical port's discards where the transport can read them
// (channel.PortDiscards).
//
// # Receive
//
// A queue with one memory region whose buffer size is a power of two from 64 to 8192 bytes
// and that has at least 512 buffers gets a striding RQ (upstream's default: one stride per
// buffer, 512 strides per WQE, DAQIRI_MLX5_STRIDES sets another power of two up to 65536;
// DAQIRI_IBV_STRIDING=0 forces the cyclic RQ as upstream's variable does): each WQE is that
// many consecutive buffers of the region, a packet lands in the
// stride the CQE names and is handed to the application in place (zero copy), and a WQE is
// reposted once the NIC has consumed all its strides and the application has freed every
// packet in it (a freed buffer is counted against its WQE through the region's groups,
// engine.Region.TakeGroups, not returned through the region's pool). A queue naming 2–4 regions (header-data split) or whose region does not fit
// striding gets a cyclic RQ with one buffer of each region per WQE as a scatter list. So does
// a queue whose region other queues name too (a shared region, as upstream's DPDK engine
// shares one mempool among queues): a striding RQ owns every buffer of its region, while a
// cyclic RQ takes one buffer per WQE from the region's pool and gets it back when the
// application frees the packet, so the sharing queues draw from one pool; each sizes its ring
// by its share of the pool (shared.go).
// CQE compression is on (basic layout; mini-CQEs carry checksum and stride index on striding
// RQs, hash and length on cyclic ones); DAQIRI_MLX5_CQE_COMPRESSION=0 turns it off.
// Hardware timestamps are in b.RxTimestamp as Unix ns: the RQs stamp real time where the
// device can (cmd_hca_cap rq_ts_format), else the free-running timer, converted with the
// channel's timebase, renewed every second by the workers.
//
// # Transmit
//
// Each TX burst becomes enhanced multi-packet send WQEs of up to 32 packets (one pointer
// data segment per packet, no inline data: the SQ's minimal inline mode is none), or SEND
// WQEs with the first 18 bytes inline for header-data split packets; a completion is asked
// for every 16 WQEs and on the last WQE of every burst. The doorbell record is written after
// the WQEs, then the control segment's first 8 bytes go to the UAR's BlueFlame register,
// alternating its two halves, with rdma-core's barriers between the steps (internal/iomem).
package mlx5

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/mlx5/channel"
	"github.com/daqiri-go/daqiri/mlx5/channel/devx"
	"github.com/daqiri-go/daqiri/mlx5/channel/trace"
)

// Engine serves a session's mlx5 ports.
type Engine struct {
	env    *engine.Env
	w      *engine.Workers
	ports  []*port
	byID   map[int]*port
	closed atomic.Bool
	opts   options

	// stopFabric stops the devices of the fabric's ports (model ports), after every channel
	// is closed; nil without fabric ports.
	stopFabric func()
}

// options are the engine's tunables (environment, as upstream's DAQIRI_IBV_* variables).
type options struct {
	striding    int   // -1 auto, 0 off, 1 forced
	compression bool  // CQE compression
	rxCQLog     uint8 // tests: RX CQs of this log size instead of one CQE per posted buffer
	strides     int   // strides per striding-RQ WQE (0: stridesPerWQE)
	// fabric gives the channels of the addresses it claims (the device model's ports).
	fabric channel.Fabric
}

func optionsFromEnv() options {
	o := options{striding: -1, compression: true}
	switch os.Getenv("DAQIRI_IBV_STRIDING") {
	case "0":
		o.striding = 0
	case "1":
		o.striding = 1
	}
	if os.Getenv("DAQIRI_MLX5_CQE_COMPRESSION") == "0" {
		o.compression = false
	}
	if n, err := strconv.Atoi(os.Getenv("DAQIRI_MLX5_STRIDES")); err == nil {
		o.strides = n
	}
	return o
}

var _ engine.Engine = (*Engine)(nil)

// Open starts the mlx5 ports of env over DevX: each interface address is a PCI address or an
// RDMA device name.
func Open(ctx context.Context, env *engine.Env) (engine.Engine, error) {
	return open(ctx, env, optionsFromEnv())
}

// OpenWith is Open with a fabric that gives the channels of the addresses it claims (the
// device model's ports: mlx5/model/modelch.Fabric); other addresses go to DevX.
func OpenWith(f channel.Fabric) engine.Opener {
	return func(ctx context.Context, env *engine.Env) (engine.Engine, error) {
		o := optionsFromEnv()
		o.fabric = f
		return open(ctx, env, o)
	}
}

// modelAddress reports whether an address names a port of the device model, which a program
// without a fabric cannot open (for a clear error instead of DevX's "no such device").
func modelAddress(a string) bool {
	return strings.HasPrefix(a, "model:") || strings.HasPrefix(a, "vfio+model:")
}

func open(ctx context.Context, env *engine.Env, opts options) (*Engine, error) {
	switch s := opts.strides; {
	case s == 0:
		opts.strides = stridesPerWQE
	case s < stridesPerWQE || s > maxStridesPerWQE || s&(s-1) != 0:
		return nil, fmt.Errorf("DAQIRI_MLX5_STRIDES=%d: strides per WQE must be a power of two from %d to %d: %w", s, stridesPerWQE, maxStridesPerWQE, engine.ErrInvalidParameter)
	}
	e := &Engine{env: env, w: engine.NewWorkers(env.Log), byID: map[int]*port{}, opts: opts}
	addrErr := func(i int, err error) error {
		p := env.Ports[i]
		return env.Config.Errorf(p.Path()+".address", "interface %s: %w", p.Name, err)
	}
	var fports []channel.FabricPort
	var fidx []int
	for i, p := range env.Ports {
		a := p.Config.Address
		switch {
		case opts.fabric != nil && opts.fabric.Claims(a):
			fports = append(fports, channel.FabricPort{Name: p.Name, Path: p.Path(), Address: a})
			fidx = append(fidx, i)
		case modelAddress(a):
			return nil, addrErr(i, fmt.Errorf("%s is a port of the ConnectX device model, which this program does not link (open the session with daqiri.WithMLX5Fabric(&modelch.Fabric{}), as daqiri-bench does): %w", a, engine.ErrNotSupported))
		case a == "":
			return nil, addrErr(i, errors.New("empty address"))
		}
	}
	chans := make([]channel.Channel, len(env.Ports))
	// unused closes the channels no port took yet (an Open that failed half way).
	unused := func() {
		for i, c := range chans {
			if c != nil {
				c.Close()
				chans[i] = nil
			}
		}
	}
	if len(fports) > 0 {
		cs, stop, err := opts.fabric.Open(ctx, fports, channel.FabricOptions{HWLoopback: env.Config.Loopback == "hw", Log: env.Log})
		if err != nil {
			if fe := (*channel.FabricError)(nil); errors.As(err, &fe) && fe.Port >= 0 && fe.Port < len(fidx) {
				return nil, addrErr(fidx[fe.Port], fe.Err)
			}
			return nil, err
		}
		e.stopFabric = stop
		for j, c := range cs {
			chans[fidx[j]] = c
		}
	}
	for i, p := range env.Ports {
		base := chans[i]
		chans[i] = nil
		if base == nil {
			// A ConnectX through the kernel's mlx5_ib: DevX (never run on hardware yet).
			var err error
			if base, err = devx.Open(p.Config.Address); err != nil {
				unused()
				e.closePorts()
				e.shutdown()
				return nil, addrErr(i, err)
			}
		}
		// DAQIRI_MLX5_TRACE=path records every command from here on (mlx5/channel/trace).
		ch, err := trace.WrapEnv(base)
		if err != nil {
			base.Close()
			unused()
			e.closePorts()
			e.shutdown()
			return nil, err
		}
		pt, err := e.openPort(p, ch, base)
		if err != nil {
			unused()
			e.closePorts()
			e.shutdown()
			return nil, err
		}
		e.ports = append(e.ports, pt)
		e.byID[p.ID] = pt
	}
	for _, pt := range e.ports {
		pt.start()
	}
	return e, nil
}

// closePorts destroys the ports opened so far (an Open that failed half way).
func (e *Engine) closePorts() {
	for _, q := range e.ports {
		q.closeQueues()
		q.destroy()
	}
	e.ports = nil
}

// MACAddr implements engine.MACer.
func (e *Engine) MACAddr(portID int) (net.HardwareAddr, error) {
	pt := e.byID[portID]
	if pt == nil {
		return nil, fmt.Errorf("port %d is not an mlx5 port: %w", portID, engine.ErrInvalidParameter)
	}
	return append(net.HardwareAddr(nil), pt.mac...), nil
}

// Send implements engine.Engine.
func (e *Engine) Send(b *engine.Burst) error {
	if e.closed.Load() {
		return fmt.Errorf("mlx5 engine closed: %w", engine.ErrNotReady)
	}
	pt := e.byID[b.Port()]
	if pt == nil {
		return fmt.Errorf("port %d is not an mlx5 port: %w", b.Port(), engine.ErrInvalidParameter)
	}
	t := pt.txByID[b.Queue()]
	if t == nil {
		return fmt.Errorf("port %d has no tx queue %d: %w", b.Port(), b.Queue(), engine.ErrInvalidParameter)
	}
	if err := pt.failed(); err != nil {
		return err // the burst stays the caller's
	}
	return t.send(b)
}

// TxAvailable implements engine.TxChecker: room in the SQ and buffers in the regions.
func (e *Engine) TxAvailable(q *engine.TxQueue, n int) bool {
	pt := e.byID[q.Port.ID]
	if pt == nil || pt.txByID[q.ID] == nil {
		return false
	}
	return q.Available(n) && pt.txByID[q.ID].room(n)
}

// Close stops the workers, waits for sent packets to complete (bounded), returns every
// buffer the engine holds, and destroys every object in reverse order of creation.
func (e *Engine) Close() error {
	if e.closed.Swap(true) {
		return nil
	}
	e.w.Stop()
	// Everything posted is sent first, then what arrived is read (until the ports have been
	// quiet for the window below, at most 2 s), so that every packet sent is received or
	// counted before any object goes.
	for _, pt := range e.ports {
		for _, t := range pt.txqs {
			t.drain()
		}
	}
	// The quiet window is 50 ms, or ten times the longest this loop was kept off the CPU
	// between two rounds when that is longer: on a starved host the device's own thread (the
	// model's, or a VM's) starves too, and frames it holds would be cut off by a fixed window
	// (TestCloseUnderLoad lost a burst's worth on a loaded 2-core CI machine).
	quiet := now()
	var last uint64
	window, prev := int64(50*time.Millisecond), now()
	for end := now() + int64(2*time.Second); now() < end && now()-quiet < window; {
		if gap := now() - prev; 10*gap > window {
			window = min(10*gap, int64(time.Second))
		}
		prev = now()
		n := 0
		for _, pt := range e.ports {
			for _, r := range pt.rxqs {
				for !r.busy.CompareAndSwap(false, true) {
					runtime.Gosched()
				}
				n += r.poll(now(), 1<<16)
				if r.cur != nil && r.cur.Len() > 0 {
					r.deliver()
				}
				r.busy.Store(false)
			}
		}
		// A port may still hold frames in its input: quiet means the vport's traffic
		// counters stopped moving too.
		var sum uint64
		for _, pt := range e.ports {
			sum += pt.trafficSum()
		}
		if n > 0 || sum != last {
			quiet, last = now(), sum
		} else {
			time.Sleep(time.Millisecond)
			prev += int64(time.Millisecond) // the sleep asked for is no starvation
		}
	}
	for _, pt := range e.ports {
		pt.reconcile()
	}
	var errs []error
	for i := len(e.ports) - 1; i >= 0; i-- {
		if err := e.ports[i].close(); err != nil {
			errs = append(errs, err)
		}
	}
	e.shutdown()
	return errors.Join(errs...)
}

// shutdown stops the fabric's devices.
func (e *Engine) shutdown() {
	if e.stopFabric != nil {
		e.stopFabric()
		e.stopFabric = nil
	}
}

// now is the wall clock in ns, for burst timeouts.
func now() int64 { return time.Now().UnixNano() }

// backoff spins for 64 idle rounds, then sleeps, doubling from 1 µs up to 50 µs: a busy
// port never sleeps, an idle one costs little CPU. The worker is locked to its thread, so
// every park is a P hand-off to another thread and back (futex calls on both sides): the
// sleeps reach their cap in 7 rounds, not 50 (the two-port model run: about 10 % less CPU per
// packet, most of it system time), and there is no runtime.Gosched stage, whose 192 calls per
// idle episode cost that run a third of its futex time (issue 31: 0.57 of 1.69 s of a 4.9 s
// profile; none after).
func backoff(idle int) {
	if idle >= 64 {
		time.Sleep(time.Duration(min(1<<min(idle-64, 6), 50)) * time.Microsecond)
	}
}
