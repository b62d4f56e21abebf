// Command gpu-hds receives UDP packets with header-data split: the NIC writes each packet's
// first 64 bytes (the headers) into host memory, where the CPU reads them, and the rest (the
// payload) straight into GPU memory, where a kernel would process it without a copy
// (GPUDirect RDMA). It is upstream DAQIRI's daqiri_bench_raw_tx_rx_hds.yaml as a Go
// program.
//
//	gpu-hds --address 0000:3b:00.0 [--packets N]      a ConnectX (mlx5 over DevX), payloads in GPU memory
//	gpu-hds --config hds.yaml [--interface rx_port]   any HDS configuration
//	gpu-hds --model [--payload-kind host|host_pinned] the ConnectX device model, with its own sender
//
// With --model the program also sends: model:0 is cabled to model:1 in this process, so it
// runs without a NIC and without root; the model writes with the CPU, so the payload region
// is host memory (runs anywhere) or host_pinned memory (page-locked, mapped into the GPU:
// needs a GPU, and then every payload is read back through its GPU address to show the GPU
// sees it).
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"time"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/cudart"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/mlx5/model/modelch"
)

// hdrSize is the header area: Ethernet, IPv4 and UDP headers (42 bytes) padded to 64, the
// header region's buffer size, as upstream's HDS configuration has it.
const hdrSize = 64

// hdsConfig is the receive side: one queue whose WQEs scatter each packet over a 64-byte
// header buffer (host) and a payload buffer (payloadKind), fed by a flow on UDP port 4096.
func hdsConfig(address string, payloadKind config.MemoryKind) *config.Config {
	return &config.Config{
		Version: 1, StreamType: config.StreamRaw, LogLevel: "warn",
		MemoryRegions: []config.MemoryRegion{
			{Name: "hdr", Kind: config.KindHost, NumBufs: 4096, BufSize: hdrSize},
			{Name: "payload", Kind: payloadKind, NumBufs: 4096, BufSize: 2048},
		},
		Interfaces: []config.Interface{{
			Name: "rx_port", Address: address,
			RX: &config.RxConfig{
				FlowIsolation: true,
				Queues:        []config.Queue{{Name: "hds", ID: 0, CPUCore: "0", BatchSize: 256, MemoryRegions: []string{"hdr", "payload"}}},
				Flows: []config.Flow{{Name: "data", ID: 1,
					Actions: []config.Action{{Type: config.ActionQueue, Queues: []int{0}}},
					Match:   config.Match{UDPDst: config.PortRange{Lo: 4096, Hi: 4096}}}},
			},
		}},
	}
}

// modelConfig adds a sender on model:0, cabled to the receiver on model:1.
func modelConfig(payloadKind config.MemoryKind) *config.Config {
	c := hdsConfig("model:1", payloadKind)
	c.MemoryRegions = append(c.MemoryRegions, config.MemoryRegion{Name: "tx", Kind: config.KindHost, NumBufs: 1024, BufSize: 2048})
	c.Interfaces = append([]config.Interface{{
		Name: "tx_port", Address: "model:0",
		TX: &config.TxConfig{Queues: []config.Queue{{Name: "tx", ID: 0, CPUCore: "0", BatchSize: 64, MemoryRegions: []string{"tx"}}}},
	}}, c.Interfaces...)
	return c
}

// options are the command line.
type options struct {
	config, iface, address string
	model                  bool
	payloadKind            string
	packets                int
	payloadLen             int
	duration               time.Duration
}

// summary is what a run received.
type summary struct {
	Packets      int
	HeaderBytes  int
	PayloadBytes int
	PayloadKind  config.MemoryKind
	// GPUChecked counts payloads read back through their GPU address (--model with
	// host_pinned); Mismatched counts those that did not hold what was sent.
	GPUChecked, Mismatched int
	// BadHeaders counts packets whose header segment was not an IPv4/UDP header to 4096.
	BadHeaders int
}

func main() {
	o := options{}
	flag.StringVar(&o.config, "config", "", "an HDS configuration (YAML) instead of the built-in one")
	flag.StringVar(&o.iface, "interface", "rx_port", "with --config: the interface to receive on (its first RX queue)")
	flag.StringVar(&o.address, "address", "", "the NIC for the built-in configuration: a PCI address or RDMA device name")
	flag.BoolVar(&o.model, "model", false, "run on the ConnectX device model (model:0 sends to model:1) instead of a NIC")
	flag.StringVar(&o.payloadKind, "payload-kind", "", "memory kind of the payload region: device (default with a NIC), host_pinned or host (default with --model)")
	flag.IntVar(&o.packets, "packets", 0, "stop after this many packets (0: 1000 with --model, else until Ctrl-C)")
	flag.IntVar(&o.payloadLen, "payload", 1000, "with --model: payload bytes per packet")
	flag.DurationVar(&o.duration, "timeout", 0, "stop after this long (0: no limit)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	sum, err := run(ctx, o, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gpu-hds:", err)
		os.Exit(1)
	}
	if sum.Mismatched > 0 || sum.BadHeaders > 0 {
		os.Exit(1)
	}
}

func run(ctx context.Context, o options, out io.Writer) (*summary, error) {
	cfg, err := buildConfig(o)
	if err != nil {
		return nil, err
	}
	if o.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.duration)
		defer cancel()
	}
	var opts []daqiri.Option
	if o.model {
		// The device model's ports come from its fabric, which only programs that want
		// them link.
		opts = append(opts, daqiri.WithMLX5Fabric(&modelch.Fabric{}))
	}
	s, err := daqiri.Open(ctx, cfg, opts...)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	rxPort, err := s.Port(o.iface)
	if err != nil {
		return nil, fmt.Errorf("interface %q: %w", o.iface, err)
	}
	rxq := s.RxQueueIDs(rxPort)
	if len(rxq) == 0 {
		return nil, fmt.Errorf("interface %q has no RX queue", o.iface)
	}
	want := o.packets
	if want == 0 && o.model {
		want = 1000
	}
	if o.model {
		txPort, _ := s.Port("tx_port")
		go send(ctx, s, txPort, want, o.payloadLen)
	}
	sum := &summary{PayloadKind: cfg.Region(cfg.Interfaces[rxPort].RX.Queues[0].MemoryRegions[1]).Kind}
	for want == 0 || sum.Packets < want {
		b, err := s.RxBurst(rxPort, rxq[0])
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			time.Sleep(50 * time.Microsecond) // ErrNotReady: nothing yet
			continue
		}
		if err := inspect(s, b, o.model, sum); err != nil {
			b.Free()
			return sum, err
		}
		b.Free()
	}
	fmt.Fprintf(out, "received %d packets: %d header bytes in host memory, %d payload bytes in %s memory\n",
		sum.Packets, sum.HeaderBytes, sum.PayloadBytes, sum.PayloadKind)
	if sum.GPUChecked > 0 {
		fmt.Fprintf(out, "read %d payloads back through their GPU addresses: %d differed from what was sent\n", sum.GPUChecked, sum.Mismatched)
	}
	if sum.BadHeaders > 0 {
		fmt.Fprintf(out, "%d packets without an IPv4/UDP header to port 4096 in their header segment\n", sum.BadHeaders)
	}
	if want > 0 && sum.Packets < want {
		return sum, fmt.Errorf("received %d of %d packets before the timeout", sum.Packets, want)
	}
	return sum, nil
}

func buildConfig(o options) (*config.Config, error) {
	kind := config.MemoryKind(o.payloadKind)
	switch {
	case o.config != "":
		if o.model || o.address != "" {
			return nil, errors.New("--config cannot be combined with --model or --address")
		}
		return config.LoadFile(o.config)
	case o.model:
		if kind == "" {
			kind = config.KindHost
		}
		if kind != config.KindHost && kind != config.KindHostPinned {
			return nil, fmt.Errorf("--model: --payload-kind must be host or host_pinned (the model writes with the CPU), not %q", kind)
		}
		return modelConfig(kind), nil
	case o.address != "":
		if kind == "" {
			kind = config.KindDevice
		}
		cfg := hdsConfig(o.address, kind)
		return cfg, cfg.Validate()
	}
	return nil, errors.New("say where to receive: --address PCI-ADDRESS, --config FILE or --model")
}

// inspect reads one burst: segment 0 of each packet is its header area in host memory,
// segment 1 its payload in the payload region.
func inspect(s *daqiri.Session, b *daqiri.Burst, model bool, sum *summary) error {
	if b.NumSegments() != 2 {
		return fmt.Errorf("a burst with %d segments: the queue is not split into header and payload", b.NumSegments())
	}
	var gpu *gpuView
	if model {
		gpu = gpuViewOf(b.SegmentRegion(1))
	}
	for i := range b.Len() {
		hdr := b.Segment(0, i)
		sum.Packets++
		sum.HeaderBytes += len(hdr)
		sum.PayloadBytes += b.SegmentLen(1, i)
		if len(hdr) < 42 || binary.BigEndian.Uint16(hdr[12:]) != 0x0800 || hdr[23] != 17 || binary.BigEndian.Uint16(hdr[36:]) != 4096 {
			sum.BadHeaders++
			continue
		}
		if gpu == nil {
			continue
		}
		// What the GPU sees at the payload's address: copy it back and compare with the
		// pattern the sender wrote (the sequence number from the header area).
		got := make([]byte, b.SegmentLen(1, i))
		if err := gpu.read(got, b.SegmentAddr(1, i)); err != nil {
			return err
		}
		sum.GPUChecked++
		if !bytesAre(got, byte(binary.BigEndian.Uint32(hdr[42:]))) {
			sum.Mismatched++
		}
	}
	return nil
}

// gpuView reads a region's memory through the GPU: a host_pinned region through its device
// mapping, a device region at its GPU address.
type gpuView struct {
	dev  *cudart.Device
	base uintptr          // the region's CPU (host_pinned) or GPU (device) address
	ptr  cudart.DevicePtr // where base is for the GPU
}

// gpuViewOf is the GPU's view of a region, nil for memory the GPU does not map.
func gpuViewOf(r *engine.Region) *gpuView {
	switch m := r.Memory().(type) {
	case *cudart.HostMem:
		return &gpuView{dev: m.Device(), base: m.Addr(), ptr: m.DevicePtr()}
	case *cudart.DeviceMem:
		return &gpuView{dev: m.Device(), base: m.Addr(), ptr: m.Ptr()}
	}
	return nil
}

func (g *gpuView) read(dst []byte, addr uintptr) error {
	return g.dev.CopyDtoH(dst, g.ptr+cudart.DevicePtr(addr-g.base))
}

func bytesAre(p []byte, v byte) bool {
	for _, c := range p {
		if c != v {
			return false
		}
	}
	return true
}

// send transmits n packets from model:0: a 64-byte header area (Ethernet, IPv4, UDP to port
// 4096, then the sequence number) and a payload of payloadLen bytes, each byte the low byte
// of the sequence number.
func send(ctx context.Context, s *daqiri.Session, port, n, payloadLen int) {
	dst := net.HardwareAddr{0x02, 0, 0, 0, 0, 0x02}
	src := net.HardwareAddr{0x02, 0, 0, 0, 0, 0x01}
	body := make([]byte, hdrSize-42+payloadLen)
	for seq := 0; seq < n && ctx.Err() == nil; {
		b, err := s.TxBurst(port, 0, min(64, n-seq))
		if err != nil {
			time.Sleep(100 * time.Microsecond) // no free buffers yet
			continue
		}
		for i := range b.Len() {
			binary.BigEndian.PutUint32(body, uint32(seq+i))
			for k := hdrSize - 42; k < len(body); k++ {
				body[k] = byte(seq + i)
			}
			b.SetEthHeader(i, dst, src)
			b.SetIPv4Header(i, 8+len(body), 17, netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"))
			b.SetUDPHeader(i, len(body), 4000, 4096)
			b.SetUDPPayload(i, body)
		}
		if err := s.Send(b); err != nil {
			b.Free()
			time.Sleep(100 * time.Microsecond)
			continue
		}
		seq += b.Len()
	}
}
