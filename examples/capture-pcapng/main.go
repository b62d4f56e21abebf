// Command capture-pcapng writes what an interface receives to pcapng files that Wireshark
// and tshark read, starting a new file whenever the current one would grow past
// --rotate-bytes (capture.pcapng, capture.1.pcapng, capture.2.pcapng, ...).
//
//	capture-pcapng [--out capture.pcapng] [--rotate-bytes N] [--packets N] [--duration D]
//	capture-pcapng --config FILE --interface NAME ...
//
// Without --config it captures from the software loopback and feeds it itself (UDP frames
// of varying length with a sequence number), so it runs anywhere without root. With
// --config it captures every RX queue of the named interface of any raw configuration (a
// netdev over AF_XDP, a ConnectX, a model port); each queue gets its own interface block in
// the file, and every packet carries its flow id and queue as a comment.
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
	"github.com/daqiri-go/daqiri/capture"
	"github.com/daqiri-go/daqiri/config"
)

// options are the command line.
type options struct {
	config, iface, out string
	rotateBytes        int64
	packets            int
	duration           time.Duration
}

// result is what a run wrote.
type result struct {
	Packets int
	Files   []string
}

func main() {
	o := options{}
	flag.StringVar(&o.config, "config", "", "a raw configuration (YAML); default: the software loopback, fed by this program")
	flag.StringVar(&o.iface, "interface", "lb", "the interface whose RX queues to capture")
	flag.StringVar(&o.out, "out", "capture.pcapng", "the first file; later ones are <stem>.1.pcapng, <stem>.2.pcapng, ...")
	flag.Int64Var(&o.rotateBytes, "rotate-bytes", 100<<20, "start a new file before one would grow past this many bytes (0: never)")
	flag.IntVar(&o.packets, "packets", 0, "stop after this many packets (0: 10000 on the loopback, else until Ctrl-C or --duration)")
	flag.DurationVar(&o.duration, "duration", 0, "stop after this long (0: no limit)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if _, err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "capture-pcapng:", err)
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

func run(ctx context.Context, o options, out io.Writer) (*result, error) {
	if o.rotateBytes < 0 || o.packets < 0 {
		return nil, fmt.Errorf("--rotate-bytes %d, --packets %d: must not be negative", o.rotateBytes, o.packets)
	}
	cfg, feed := loopbackConfig(), true
	if o.config != "" {
		var err error
		if cfg, err = config.LoadFile(o.config); err != nil {
			return nil, err
		}
		if cfg.StreamType != config.StreamRaw {
			return nil, fmt.Errorf("%s: stream_type %s: this program captures Ethernet frames (raw streams)", o.config, cfg.StreamType)
		}
		feed = false
	}
	want := o.packets
	if want == 0 && feed {
		want = 10000
	}
	if o.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.duration)
		defer cancel()
	}
	s, err := daqiri.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	port, err := s.Port(o.iface)
	if err != nil || len(s.RxQueueIDs(port)) == 0 {
		return nil, fmt.Errorf("--interface %q: not an interface with RX queues (%v)", o.iface, err)
	}
	w, err := capture.OpenPcapng(o.out, capture.PcapngOptions{
		RotateBytes: o.rotateBytes,
		PortNames:   map[int]string{port: o.iface},
	})
	if err != nil {
		return nil, err
	}
	res := &result{}
	sent := 0
	for (want == 0 || res.Packets < want) && ctx.Err() == nil {
		if feed && sent < want {
			sent += send(s, port, sent, want-sent)
		}
		b, err := s.RxBurstPort(port)
		if err != nil {
			time.Sleep(50 * time.Microsecond) // ErrNotReady: nothing yet
			continue
		}
		st, err := w.Write(b)
		b.Free()
		if err != nil {
			w.Close()
			return res, err
		}
		res.Packets += st.Completed
	}
	if err := w.Close(); err != nil {
		return res, err
	}
	res.Files = w.Files()
	fmt.Fprintf(out, "captured %d packets in %d file(s):\n", res.Packets, len(res.Files))
	for _, f := range res.Files {
		if fi, err := os.Stat(f); err == nil {
			fmt.Fprintf(out, "  %s  %d bytes\n", f, fi.Size())
		}
	}
	if want > 0 && res.Packets < want {
		return res, fmt.Errorf("captured %d of %d packets before the time ran out", res.Packets, want)
	}
	return res, nil
}

// send feeds the loopback one burst of up to n UDP frames (sequence numbers from seq,
// lengths 64 to 1500 bytes) and returns how many it sent.
func send(s *daqiri.Session, port, seq, n int) int {
	b, err := s.TxBurst(port, s.TxQueueIDs(port)[0], min(n, 32))
	if err != nil {
		return 0 // no free buffers: the capture side frees them
	}
	k := b.Len()
	for i := range k {
		payload := make([]byte, 22+(seq+i)*37%1437)
		binary.BigEndian.PutUint64(payload, uint64(seq+i))
		err := errors.Join(
			b.SetEthHeader(i, net.HardwareAddr{0x02, 0, 0, 0, 0, 0x02}, net.HardwareAddr{0x02, 0, 0, 0, 0, 0x01}),
			b.SetIPv4Header(i, 8+len(payload), 17, netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")),
			b.SetUDPHeader(i, len(payload), 4000, 5000),
			b.SetUDPPayload(i, payload),
		)
		if err != nil {
			b.Free()
			return 0
		}
	}
	if s.Send(b) != nil {
		b.Free()
		return 0
	}
	return k
}
