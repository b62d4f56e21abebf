// Package mlx5 is the raw Ethernet engine for ConnectX NICs (engine name mlx5; upstream's
// ibverbs engine on raw streams), written in Go against the PRM: every object is a PRM
// command sent through a channel.Channel (DevX over uverbs, VFIO, or the device model in
// process), and the datapath reads CQEs and writes WQEs and doorbells in memory it shares
// with the device. No libibverbs, no DPDK, no C.
//
// # Ports
//
// An interface whose address is `model:N` runs on port N of the ConnectX device model in this
// process: ports 0↔1, 2↔3, … are cabled back to back when both are configured, `loopback: hw`
// loops every model port's transmit into its own receive (upstream's hardware loopback), and
// `model:N@IFNAME` bridges port N to the Linux netdev IFNAME (AF_PACKET; root), and
// `vfio+model:N` drives model port N through the VFIO command-queue transport
// (mlx5/channel/vfioch over mlx5/model/vfiomodel) instead of the in-process Exec. Per port the
// engine creates a PD, a transport domain, a TIS, a UAR page, a Q counter (the NIC's
// out-of-buffer drops), one memory key per memory region (the region registered as a UMEM),
// and for each queue a CQ and an RQ or SQ. PCI addresses and RDMA device names need the DevX
// transport (mlx5/channel/devx over the kernel's mlx5_ib); that path has never run on a
// ConnectX (none is reachable from this project), and its timestamps lack the clock
// information page the model's init segment stands in for.
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
// packet in it. A queue naming 2–4 regions (header-data split) or whose region does not fit
// striding gets a cyclic RQ with one buffer of each region per WQE as a scatter list.
// CQE compression is on (basic layout; mini-CQEs carry checksum and stride index on striding
// RQs, hash and length on cyclic ones); DAQIRI_MLX5_CQE_COMPRESSION=0 turns it off.
// Hardware timestamps (the RQ in real-time format) are in b.RxTimestamp.
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
	"sync"
	"sync/atomic"
	"time"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/mlx5/channel"
	"github.com/daqiri-go/daqiri/mlx5/channel/devx"
	"github.com/daqiri-go/daqiri/mlx5/channel/modelch"
	"github.com/daqiri-go/daqiri/mlx5/channel/trace"
	"github.com/daqiri-go/daqiri/mlx5/channel/vfioch"
	"github.com/daqiri-go/daqiri/mlx5/model"
	"github.com/daqiri-go/daqiri/mlx5/model/vfiomodel"
)

// Engine serves a session's mlx5 ports.
type Engine struct {
	env    *engine.Env
	w      *engine.Workers
	ports  []*port
	byID   map[int]*port
	closed atomic.Bool
	opts   options

	// models are the model devices of this engine's model ports, by port number, and the
	// goroutines that run them.
	models    map[int]*model.Device
	vfs       map[int]*vfiomodel.Function // the VFIO functions of vfio+model:N ports
	runCancel context.CancelFunc
	runWG     sync.WaitGroup
}

// options are the engine's tunables (environment, as upstream's DAQIRI_IBV_* variables).
type options struct {
	striding    int   // -1 auto, 0 off, 1 forced
	compression bool  // CQE compression
	rxCQLog     uint8 // tests: RX CQs of this log size instead of one CQE per posted buffer
	freeRunning bool  // tests: stamp with the free-running timer as a device without real time
	strides     int   // strides per striding-RQ WQE (0: stridesPerWQE)
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

// Address is a parsed interface address of the mlx5 engine.
type Address struct {
	Model  bool   // a model port
	VFIO   bool   // vfio+model:N: the model port driven through the VFIO command-queue transport
	Port   int    // the model port number
	Bridge string // model:N@IFNAME: the netdev the port is bridged to
	Device string // a PCI address or RDMA device name (DevX)
}

// ParseAddress parses an mlx5 interface address: model:N, model:N@IFNAME, a PCI address or
// an RDMA device name.
func ParseAddress(s string) (Address, error) {
	vfio := false
	if rest, ok := strings.CutPrefix(s, "vfio+"); ok && strings.HasPrefix(rest, "model:") {
		s, vfio = rest, true
	}
	if rest, ok := strings.CutPrefix(s, "model:"); ok {
		num, bridge, hasBridge := strings.Cut(rest, "@")
		n, err := strconv.Atoi(num)
		if err != nil || n < 0 || n > 1023 {
			return Address{}, fmt.Errorf("model port %q is not a number from 0 to 1023", num)
		}
		if hasBridge && !config.IsNetdevName(bridge) {
			return Address{}, fmt.Errorf("model:%d@%q: not a Linux netdev name", n, bridge)
		}
		return Address{Model: true, VFIO: vfio, Port: n, Bridge: bridge}, nil
	}
	if s == "" {
		return Address{}, errors.New("empty address")
	}
	return Address{Device: s}, nil
}

// Open starts the mlx5 ports of env.
func Open(ctx context.Context, env *engine.Env) (engine.Engine, error) {
	return open(ctx, env, optionsFromEnv())
}

func open(ctx context.Context, env *engine.Env, opts options) (*Engine, error) {
	switch s := opts.strides; {
	case s == 0:
		opts.strides = stridesPerWQE
	case s < stridesPerWQE || s > maxStridesPerWQE || s&(s-1) != 0:
		return nil, fmt.Errorf("DAQIRI_MLX5_STRIDES=%d: strides per WQE must be a power of two from %d to %d: %w", s, stridesPerWQE, maxStridesPerWQE, engine.ErrInvalidParameter)
	}
	e := &Engine{env: env, w: engine.NewWorkers(env.Log), byID: map[int]*port{}, opts: opts, models: map[int]*model.Device{}, vfs: map[int]*vfiomodel.Function{}}
	addrs := make([]Address, len(env.Ports))
	for i, p := range env.Ports {
		a, err := ParseAddress(p.Config.Address)
		if err != nil {
			return nil, env.Config.Errorf(p.Path()+".address", "interface %s: %v", p.Name, err)
		}
		if !a.Model {
			addrs[i] = a
			continue
		}
		if _, dup := e.models[a.Port]; dup {
			return nil, env.Config.Errorf(p.Path()+".address", "interface %s: model port %d is used by two interfaces", p.Name, a.Port)
		}
		addrs[i] = a
		mc := model.Config{MAC: modelMAC(a.Port), Realtime: true}
		if a.VFIO {
			// The model behind a VFIO-shaped function (BAR region, IOVA map, MSI-X), for the
			// command-queue transport; the device itself is cabled and run as any model port.
			f := vfiomodel.New(mc, fmt.Sprintf("vfio+model:%d", a.Port), nil)
			e.vfs[a.Port] = f
			e.models[a.Port] = f.Device()
			continue
		}
		e.models[a.Port] = model.New(mc)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	e.runCancel = cancel
	hwLoop := env.Config.Loopback == "hw"
	for i, a := range addrs {
		if !a.Model {
			continue
		}
		dev := e.models[a.Port]
		switch {
		case hwLoop:
			dev.Cable(dev)
		case a.Bridge != "":
			if _, err := net.InterfaceByName(a.Bridge); err != nil {
				e.shutdown()
				return nil, env.Config.Errorf(env.Ports[i].Path()+".address", "interface %s: bridge model port %d to %s: %v", env.Ports[i].Name, a.Port, a.Bridge, err)
			}
			e.runWG.Add(1)
			go func() {
				defer e.runWG.Done()
				if err := dev.Bridge(runCtx, a.Bridge); err != nil && runCtx.Err() == nil {
					env.Log.Error("mlx5 model bridge stopped", "port", a.Port, "netdev", a.Bridge, "err", err)
				}
			}()
		default:
			if peer := e.models[a.Port^1]; peer != nil && a.Port&1 == 0 {
				dev.Cable(peer)
			}
		}
	}
	for i, p := range env.Ports {
		a := addrs[i]
		var base channel.Channel
		var err error
		switch {
		case a.VFIO:
			base, err = vfioch.Open(e.vfs[a.Port], vfioch.Options{Name: fmt.Sprintf("vfio+model:%d", a.Port), Log: env.Log})
		case a.Model:
			base, err = modelch.Open(e.models[a.Port], fmt.Sprintf("model:%d", a.Port))
		default:
			// A ConnectX through the kernel's mlx5_ib: DevX (never run on hardware yet).
			base, err = devx.Open(a.Device)
		}
		if err != nil {
			e.closePorts()
			e.shutdown()
			return nil, env.Config.Errorf(p.Path()+".address", "interface %s: %v", p.Name, err)
		}
		// DAQIRI_MLX5_TRACE=path records every command from here on (mlx5/channel/trace).
		ch, err := trace.WrapEnv(base)
		if err != nil {
			base.Close()
			e.closePorts()
			e.shutdown()
			return nil, err
		}
		var dev *model.Device
		if a.Model {
			dev = e.models[a.Port]
		}
		pt, err := e.openPort(p, ch, dev)
		if err == nil {
			if h, ok := base.(interface{ Health() error }); ok {
				pt.healthFn = h.Health
			}
		}
		if err != nil {
			e.closePorts()
			e.shutdown()
			return nil, err
		}
		e.ports = append(e.ports, pt)
		e.byID[p.ID] = pt
	}
	for _, dev := range e.models {
		e.runWG.Add(1)
		go func() { defer e.runWG.Done(); dev.Run(runCtx) }()
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

// modelMAC is model port n's address: 02:da:51:00:00:nn (locally administered).
func modelMAC(n int) net.HardwareAddr {
	return net.HardwareAddr{0x02, 0xda, 0x51, 0, byte(n >> 8), byte(n)}
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
	// quiet for 20 ms, at most a second), so that every packet sent is received or counted
	// before any object goes.
	for _, pt := range e.ports {
		for _, t := range pt.txqs {
			t.drain()
		}
	}
	quiet := now()
	var last uint64
	for end := now() + int64(2*time.Second); now() < end && now()-quiet < int64(50*time.Millisecond); {
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
		// A model port may still hold frames in its input: quiet means its counters
		// stopped moving too.
		var sum uint64
		for _, d := range e.models {
			c := d.Counters()
			sum += c.RXPackets + c.RXOutOfBuffer + c.RXSteeringMiss + c.RXDropRule + c.RXNotReady + c.RXErrors + c.TXPackets
		}
		if n > 0 || sum != last {
			quiet, last = now(), sum
		} else {
			time.Sleep(time.Millisecond)
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

// shutdown stops the model devices.
func (e *Engine) shutdown() {
	if e.runCancel != nil {
		e.runCancel()
	}
	e.runWG.Wait()
}

// now is the wall clock in ns, for burst timeouts.
func now() int64 { return time.Now().UnixNano() }

// backoff sleeps an idle worker a little longer each idle round, up to 50 µs: a busy port
// never sleeps, an idle one costs little CPU.
func backoff(idle int) {
	switch {
	case idle < 64:
	case idle < 256:
		runtime.Gosched()
	default:
		time.Sleep(time.Duration(min(idle-255, 50)) * time.Microsecond)
	}
}
