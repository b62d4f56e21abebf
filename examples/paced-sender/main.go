// Command paced-sender sends UDP packets at a fixed packet rate, giving every packet its own
// send time (Session.SetPacketTxTime) instead of sleeping between sends: the engine holds
// each packet until its time, so the spacing does not depend on when the application's
// thread happens to run. It then reports how late the packets arrived against their send
// times.
//
//	paced-sender [--rate PPS] [--packets N] [--payload BYTES]
//	paced-sender --config FILE --tx-interface NAME [--rx-interface NAME] ...
//
// Without --config it runs on the software loopback (any machine, no root): what it sends
// comes back at once, stamped with the time it left. With --config, the TX interface may be
// a netdev (engine xdp: the packet is held in software until its time) or a ConnectX (engine
// mlx5: the NIC waits for the time, WAIT-on-time WQEs); --rx-interface names where the
// packets come back, if they do, to measure them.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"time"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
)

// options are the command line.
type options struct {
	config, txIface, rxIface string
	rate                     float64 // packets per second
	packets, payload         int
	// window is how far ahead of its send time a packet is handed to the engine. The engine
	// holds it until then; a burst never spans more than this.
	window time.Duration
}

// report is what a run measured.
type report struct {
	Sent, Received int
	// Early counts packets that arrived before their send time: none should.
	Early int
	// OutOfOrder counts packets that arrived before one sent earlier.
	OutOfOrder int
	// Lateness is arrival minus send time, per packet received, sorted.
	Lateness []time.Duration
}

func main() {
	o := options{}
	flag.StringVar(&o.config, "config", "", "a configuration (YAML); default: the software loopback")
	flag.StringVar(&o.txIface, "tx-interface", "lb", "the interface to send on (its first TX queue)")
	flag.StringVar(&o.rxIface, "rx-interface", "", "the interface the packets come back on, to measure them (default: the TX interface on the loopback, none with --config)")
	flag.Float64Var(&o.rate, "rate", 10000, "packets per second")
	flag.IntVar(&o.packets, "packets", 1000, "how many packets to send")
	flag.IntVar(&o.payload, "payload", 1000, "UDP payload bytes per packet")
	flag.DurationVar(&o.window, "window", time.Millisecond, "hand packets to the engine this long before their send time")
	flag.Parse()
	rep, err := run(context.Background(), o, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "paced-sender:", err)
		os.Exit(1)
	}
	if rep.Early > 0 {
		os.Exit(1)
	}
}

// loopbackConfig is the default: one interface on the software loopback.
func loopbackConfig() *config.Config {
	return &config.Config{
		Version: 1, StreamType: config.StreamRaw, Loopback: "sw", LogLevel: "warn",
		MemoryRegions: []config.MemoryRegion{
			{Name: "tx", Kind: config.KindHost, NumBufs: 1024, BufSize: 2048},
			{Name: "rx", Kind: config.KindHost, NumBufs: 1024, BufSize: 2048},
		},
		Interfaces: []config.Interface{{
			Name: "lb", Address: "loopback",
			TX: &config.TxConfig{Queues: []config.Queue{{Name: "tx", ID: 0, CPUCore: "0", BatchSize: 64, MemoryRegions: []string{"tx"}}}},
			RX: &config.RxConfig{Queues: []config.Queue{{Name: "rx", ID: 0, CPUCore: "0", BatchSize: 64, MemoryRegions: []string{"rx"}}}},
		}},
	}
}

func run(ctx context.Context, o options, out io.Writer) (*report, error) {
	if o.rate <= 0 || o.packets <= 0 || o.payload < 8 || o.window <= 0 {
		return nil, fmt.Errorf("--rate %v, --packets %d, --payload %d, --window %v: each must be positive, the payload at least 8 bytes (it carries the sequence number)", o.rate, o.packets, o.payload, o.window)
	}
	cfg := loopbackConfig()
	if o.config != "" {
		var err error
		if cfg, err = config.LoadFile(o.config); err != nil {
			return nil, err
		}
	} else if o.rxIface == "" {
		o.rxIface = o.txIface
	}
	s, err := daqiri.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	txPort, err := s.Port(o.txIface)
	if err != nil || len(s.TxQueueIDs(txPort)) == 0 {
		return nil, fmt.Errorf("--tx-interface %q: not an interface with a TX queue (%v)", o.txIface, err)
	}
	rxPort := -1
	if o.rxIface != "" {
		if rxPort, err = s.Port(o.rxIface); err != nil || len(s.RxQueueIDs(rxPort)) == 0 {
			return nil, fmt.Errorf("--rx-interface %q: not an interface with an RX queue (%v)", o.rxIface, err)
		}
	}

	// Send times: packet i leaves at start + i/rate. The first leaves a little after now,
	// so that it too is handed over ahead of its time.
	start := time.Now().Add(o.window)
	at := func(i int) time.Time { return start.Add(time.Duration(float64(i) / o.rate * float64(time.Second))) }
	rep := &report{}
	rx := &receiver{at: at, rep: rep, last: -1}
	txq := s.TxQueueIDs(txPort)[0]
	for i := 0; i < o.packets; {
		// The packets due within the window go out in one burst; a burst waits in the
		// engine until its last packet's time, so it never spans more than the window.
		n := 0
		for i+n < o.packets && n < 64 && at(i+n).Before(time.Now().Add(o.window)) {
			n++
		}
		if n == 0 {
			if rxPort >= 0 {
				rx.poll(s, rxPort)
			}
			time.Sleep(min(time.Until(at(i).Add(-o.window)), o.window))
			continue
		}
		b, err := s.TxBurst(txPort, txq, n)
		if err != nil {
			if errors.Is(err, daqiri.ErrNoFreePacketBuffers) || errors.Is(err, daqiri.ErrNoFreeBurstBuffers) {
				if rxPort >= 0 {
					rx.poll(s, rxPort) // free what came back
				}
				time.Sleep(50 * time.Microsecond)
				continue
			}
			return rep, err
		}
		for k := range b.Len() {
			if err := fill(b, k, i+k, o.payload); err != nil {
				b.Free()
				return rep, err
			}
			if err := s.SetPacketTxTime(b, k, at(i+k)); err != nil {
				b.Free()
				return rep, fmt.Errorf("packet %d: %w (this engine has no timed send)", i+k, err)
			}
		}
		n = b.Len() // the burst is the engine's once sent
		if err := s.Send(b); err != nil {
			b.Free()
			return rep, fmt.Errorf("sending packets %d..%d: %w", i, i+n-1, err)
		}
		i += n
		rep.Sent = i
		if rxPort >= 0 {
			rx.poll(s, rxPort)
		}
	}
	if rxPort >= 0 {
		for deadline := time.Now().Add(2 * time.Second); rep.Received+rx.dropped < rep.Sent && time.Now().Before(deadline); {
			if !rx.poll(s, rxPort) {
				time.Sleep(100 * time.Microsecond)
			}
		}
	}
	slices.Sort(rep.Lateness)
	fmt.Fprintf(out, "sent %d packets at %.0f packets/s (%v apart)\n", rep.Sent, o.rate, time.Duration(float64(time.Second)/o.rate))
	if rxPort < 0 {
		return rep, nil
	}
	fmt.Fprintf(out, "received %d: %d before their send time, %d out of order\n", rep.Received, rep.Early, rep.OutOfOrder)
	if len(rep.Lateness) > 0 {
		q := func(p float64) time.Duration {
			return rep.Lateness[min(len(rep.Lateness)-1, int(p*float64(len(rep.Lateness))))]
		}
		fmt.Fprintf(out, "after their send time: median %v, 99th percentile %v, max %v\n", q(0.5), q(0.99), rep.Lateness[len(rep.Lateness)-1])
	}
	return rep, nil
}

// fill writes packet k of b: Ethernet, IPv4 and UDP headers and a payload whose first 8
// bytes are the sequence number seq.
func fill(b *daqiri.Burst, k, seq, payload int) error {
	p := make([]byte, payload)
	for j := range 8 {
		p[j] = byte(uint64(seq) >> (56 - 8*j))
	}
	return errors.Join(
		b.SetEthHeader(k, net.HardwareAddr{0x02, 0, 0, 0, 0, 0x02}, net.HardwareAddr{0x02, 0, 0, 0, 0, 0x01}),
		b.SetIPv4Header(k, 8+payload, 17, netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")),
		b.SetUDPHeader(k, payload, 4000, 5000),
		b.SetUDPPayload(k, p),
	)
}

// receiver measures packets as they come back.
type receiver struct {
	at      func(int) time.Time
	rep     *report
	last    int
	dropped int
}

// poll takes one burst if there is one and reports whether there was.
func (r *receiver) poll(s *daqiri.Session, port int) bool {
	b, err := s.RxBurstPort(port)
	if err != nil {
		return false
	}
	defer b.Free()
	for i := range b.Len() {
		p := b.Packet(i)
		if len(p) < 42+8 {
			continue // not one of ours
		}
		var seq int
		for _, c := range p[42:50] {
			seq = seq<<8 | int(c)
		}
		ts, err := b.RxTimestamp(i)
		if err != nil {
			continue
		}
		r.rep.Received++
		late := time.Unix(0, ts).Sub(r.at(seq))
		if late < 0 {
			r.rep.Early++
		}
		if seq < r.last {
			r.rep.OutOfOrder++
		}
		r.last = max(r.last, seq)
		r.rep.Lateness = append(r.rep.Lateness, late)
	}
	return true
}
