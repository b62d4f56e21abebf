// Command model-test is a small application, a sequence checker for a sensor stream, written
// to be tested without its NIC: main_test.go opens the same configuration with the address
// model:1 (a port of the ConnectX device model, in process) instead of the NIC's, and feeds it
// from model:0, cabled to it. The test exercises what the application relies on the NIC for —
// the flow that steers the stream to its queue, flow isolation that keeps everything else
// out — through the same mlx5 engine that drives the NIC, as any user, in CI.
//
//	model-test --address 0000:3b:00.0 [--port 5000] [--duration 10s]
//
// The stream: UDP datagrams to --port whose payload starts with a big-endian 32-bit sequence
// number. The checker counts packets and reports every gap (numbers that never came) and
// every packet that came out of order.
package main

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/mlx5/model/modelch"
)

// appConfig is the application's configuration for the NIC at address: one RX queue, a flow
// that steers UDP port udpPort to it, flow isolation (other traffic goes to the kernel or is
// dropped by the NIC, never to this queue).
func appConfig(address string, udpPort uint16) *config.Config {
	return &config.Config{
		Version: 1, StreamType: config.StreamRaw, LogLevel: "warn",
		MemoryRegions: []config.MemoryRegion{{Name: "rx", Kind: config.KindHost, NumBufs: 2048, BufSize: 2048}},
		Interfaces: []config.Interface{{
			Name: "sensor", Address: address,
			RX: &config.RxConfig{
				FlowIsolation: true,
				Queues:        []config.Queue{{Name: "stream", ID: 0, CPUCore: "0", BatchSize: 64, MemoryRegions: []string{"rx"}}},
				Flows: []config.Flow{{Name: "stream", ID: 7,
					Actions: []config.Action{{Type: config.ActionQueue, Queues: []int{0}}},
					Match:   config.Match{UDPDst: config.PortRange{Lo: udpPort, Hi: udpPort}}}},
			},
		}},
	}
}

// Gap is a run of sequence numbers that never arrived: [From, To).
type Gap struct{ From, To uint32 }

// Checker follows one stream's sequence numbers.
type Checker struct {
	Packets    int
	Gaps       []Gap
	OutOfOrder int
	// Foreign counts packets on the queue that were not the stream's (another flow id, or
	// too short): with the flow and isolation in place, none.
	Foreign int
	next    uint32
	started bool
}

// flowID is the id of the configuration's stream flow, which its packets carry.
const flowID = 7

// Add takes one burst's packets.
func (c *Checker) Add(b *daqiri.Burst) {
	for i := range b.Len() {
		p := b.Packet(i)
		if b.FlowID(i) != flowID || len(p) < 42+4 {
			c.Foreign++
			continue
		}
		c.addSeq(binary.BigEndian.Uint32(p[42:]))
	}
}

// addSeq takes one packet's sequence number.
func (c *Checker) addSeq(seq uint32) {
	c.Packets++
	switch {
	case !c.started || seq == c.next:
	case seq > c.next:
		c.Gaps = append(c.Gaps, Gap{c.next, seq})
	default:
		c.OutOfOrder++
		return
	}
	c.started, c.next = true, seq+1
}

// Run takes bursts from port's first RX queue until ctx ends or want packets of the stream
// (0: no limit) have come.
func (c *Checker) Run(ctx context.Context, s *daqiri.Session, port, want int) {
	q := s.RxQueueIDs(port)[0]
	for ctx.Err() == nil && (want == 0 || c.Packets < want) {
		b, err := s.RxBurst(port, q)
		if err != nil {
			time.Sleep(50 * time.Microsecond) // ErrNotReady: nothing yet
			continue
		}
		c.Add(b)
		b.Free()
	}
}

// Report prints what the checker saw.
func (c *Checker) Report(w io.Writer) {
	fmt.Fprintf(w, "%d packets, %d gaps, %d out of order, %d not of the stream\n", c.Packets, len(c.Gaps), c.OutOfOrder, c.Foreign)
	for _, g := range c.Gaps {
		fmt.Fprintf(w, "  missing %d..%d\n", g.From, g.To-1)
	}
}

func main() {
	address := flag.String("address", "", "the NIC: a PCI address or RDMA device name (model:N for the device model)")
	port := flag.Uint("port", 5000, "the stream's UDP destination port")
	duration := flag.Duration("duration", 10*time.Second, "how long to check")
	flag.Parse()
	if *address == "" || *port == 0 || *port > 65535 {
		fmt.Fprintln(os.Stderr, "model-test: --address is required and --port must be 1..65535")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *duration)
	defer cancel()
	// A production build opens the NIC alone; model:N addresses need the device model's
	// fabric, which this example wires in so that it also runs without one.
	var opts []daqiri.Option
	if strings.HasPrefix(*address, "model:") {
		opts = append(opts, daqiri.WithMLX5Fabric(&modelch.Fabric{}))
	}
	s, err := daqiri.Open(ctx, appConfig(*address, uint16(*port)), opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "model-test:", err)
		os.Exit(1)
	}
	defer s.Close()
	var c Checker
	c.Run(ctx, s, 0, 0)
	c.Report(os.Stdout)
}
