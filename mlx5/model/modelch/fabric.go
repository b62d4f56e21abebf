package modelch

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/mlx5/channel"
	"github.com/daqiri-go/daqiri/mlx5/channel/vfioch"
	"github.com/daqiri-go/daqiri/mlx5/model"
	"github.com/daqiri-go/daqiri/mlx5/model/vfiomodel"
)

// Fabric gives the mlx5 engine the device model's ports (channel.Fabric): `model:N` opens
// port N of a model in this process through Channel, `vfio+model:N` through the VFIO
// command-queue transport (vfioch over vfiomodel), and `model:N@IFNAME` bridges the port to
// the Linux netdev IFNAME (AF_PACKET; root). Ports 0↔1, 2↔3, … are cabled back to back when
// both are opened; FabricOptions.HWLoopback loops every port into itself instead.
//
// A Fabric is wired in by the program (daqiri.WithMLX5Fabric); the engine itself links no
// model. One Fabric value serves one Open at a time; after Open, Device gives tests and tools
// the model behind a port.
type Fabric struct {
	// TimerOnly makes every model stamp only its free-running timer, as a device without
	// a real-time clock (cmd_hca_cap rq_ts_format and sq_ts_format 0).
	TimerOnly bool
	// DMABuf resolves the DMA-BUF fds registered on the ports (GPU memory); nil gives each
	// channel its own gpudma.Importer (CUDA exports).
	DMABuf DMABufImporter

	mu   sync.Mutex
	devs map[int]*model.Device
}

var _ channel.Fabric = (*Fabric)(nil)

// Address is a parsed model port address.
type Address struct {
	VFIO   bool   // vfio+model:N
	Port   int    // the model port number
	Bridge string // model:N@IFNAME: the netdev the port is bridged to
}

// ParseAddress parses model:N, model:N@IFNAME and vfio+model:N.
func ParseAddress(s string) (Address, error) {
	vfio := false
	if rest, ok := strings.CutPrefix(s, "vfio+"); ok && strings.HasPrefix(rest, "model:") {
		s, vfio = rest, true
	}
	rest, ok := strings.CutPrefix(s, "model:")
	if !ok {
		return Address{}, fmt.Errorf("%q is not a model port (model:N, model:N@IFNAME, vfio+model:N)", s)
	}
	num, bridge, hasBridge := strings.Cut(rest, "@")
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 || n > 1023 {
		return Address{}, fmt.Errorf("model port %q is not a number from 0 to 1023", num)
	}
	if hasBridge && !config.IsNetdevName(bridge) {
		return Address{}, fmt.Errorf("model:%d@%q: not a Linux netdev name", n, bridge)
	}
	return Address{VFIO: vfio, Port: n, Bridge: bridge}, nil
}

// Claims implements channel.Fabric.
func (f *Fabric) Claims(address string) bool {
	return strings.HasPrefix(address, "model:") || strings.HasPrefix(address, "vfio+model:")
}

// MAC is model port n's address: 02:da:51:00:00:nn (locally administered).
func MAC(n int) net.HardwareAddr {
	return net.HardwareAddr{0x02, 0xda, 0x51, 0, byte(n >> 8), byte(n)}
}

// Device is the model behind port n of the last Open, or nil.
func (f *Fabric) Device(n int) *model.Device {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.devs[n]
}

// Open implements channel.Fabric.
func (f *Fabric) Open(ctx context.Context, ports []channel.FabricPort, opts channel.FabricOptions) (_ []channel.Channel, _ func(), err error) {
	addrs := make([]Address, len(ports))
	devs := map[int]*model.Device{}
	vfs := map[int]*vfiomodel.Function{}
	for i, p := range ports {
		a, err := ParseAddress(p.Address)
		if err != nil {
			return nil, nil, &channel.FabricError{Port: i, Err: err}
		}
		if _, dup := devs[a.Port]; dup {
			return nil, nil, &channel.FabricError{Port: i, Err: fmt.Errorf("model port %d is used by two interfaces", a.Port)}
		}
		if a.Bridge != "" {
			if _, err := net.InterfaceByName(a.Bridge); err != nil {
				return nil, nil, &channel.FabricError{Port: i, Err: fmt.Errorf("bridge model port %d to %s: %v", a.Port, a.Bridge, err)}
			}
		}
		addrs[i] = a
		mc := model.Config{MAC: MAC(a.Port), Realtime: true, TimerOnly: f.TimerOnly}
		if a.VFIO {
			// The model behind a VFIO-shaped function (BAR region, IOVA map, MSI-X), for the
			// command-queue transport; the device itself is cabled and run as any model port.
			fn := vfiomodel.New(mc, "vfio+model:"+strconv.Itoa(a.Port), nil)
			vfs[a.Port] = fn
			devs[a.Port] = fn.Device()
			continue
		}
		devs[a.Port] = model.New(mc)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	stop := func() {
		cancel()
		wg.Wait()
	}
	var chans []channel.Channel
	defer func() {
		if err != nil {
			for _, c := range chans {
				c.Close()
			}
			stop()
		}
	}()
	for _, a := range addrs {
		dev := devs[a.Port]
		switch {
		case opts.HWLoopback:
			dev.Cable(dev)
		case a.Bridge != "":
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := dev.Bridge(runCtx, a.Bridge); err != nil && runCtx.Err() == nil && opts.Log != nil {
					opts.Log.Error("mlx5 model bridge stopped", "port", a.Port, "netdev", a.Bridge, "err", err)
				}
			}()
		default:
			if peer := devs[a.Port^1]; peer != nil && a.Port&1 == 0 {
				dev.Cable(peer)
			}
		}
	}
	for i, a := range addrs {
		var ch channel.Channel
		var err error
		if a.VFIO {
			ch, err = vfioch.Open(vfs[a.Port], vfioch.Options{Name: ports[i].Address, Log: opts.Log})
		} else {
			var mc *Channel
			mc, err = Open(devs[a.Port], ports[i].Address)
			if err == nil {
				mc.imp = f.DMABuf
				ch = mc
			}
		}
		if err != nil {
			return nil, nil, &channel.FabricError{Port: i, Err: err}
		}
		chans = append(chans, ch)
	}
	for _, dev := range devs {
		wg.Add(1)
		go func() { defer wg.Done(); dev.Run(runCtx) }()
	}
	f.mu.Lock()
	f.devs = devs
	f.mu.Unlock()
	return chans, stop, nil
}
