// Command daqiri-mlx5model serves the ConnectX device model (package mlx5/model) as a PCI
// function to one vfio-user client, so that a QEMU guest sees a ConnectX-5 (15b3:1017) and
// its drivers (the kernel's mlx5_core, rdma-core's mlx5 VFIO provider) drive the model:
//
//	daqiri-mlx5model -socket PATH [-mac 02:00:00:00:00:01] [-log FILE] [-v] [-loopback | -bridge IFNAME]
//
// It listens on the unix socket PATH (a stale socket file there is replaced), prints
//
//	listening on PATH
//
// on standard output once QEMU may connect (`-device vfio-user-pci,socket=PATH`; guest RAM
// must be shared: `-object memory-backend-memfd,id=mem,size=…,share=on -machine
// memory-backend=mem`, see docs/MLX5-VFIO-USER.md), serves the first client until it
// disconnects or the process gets SIGTERM or SIGINT, and exits. The model runs free (its
// clock follows the host, its datapath on a goroutine of its own). Its port has no wire
// (the guest sees the link down) unless -loopback cables it to itself (what it sends it
// receives; link up) or -bridge connects it to the host netdev IFNAME through an AF_PACKET
// socket (CAP_NET_RAW; a tap or a veth end), so that guest traffic reaches the host.
//
// The log (FILE, or standard error) gets one line per command the model executed from its
// command queue:
//
//	cmd ENABLE_HCA(0x104) op_mod 0x0 status 0x0 OK syndrome 0x0
//	cmd unknown(0x7fe) op_mod 0x3 status 0x2 BAD_OP_ERR syndrome 0x…
//
// (opcode name as package prm spells it, "unknown" for opcodes it does not name, and the
// opcode; op_mod; the PRM status as number and name, so a failed command has "status 0x"
// followed by a non-zero digit; the model's syndrome; " delivery 0x…" when the entry could
// not be carried),
// and, with -v, a line per vfio-user session event and per message or access the server or
// the device refused ("vfio-user: …", "pcidev: …"). On exit it prints to standard output a
// summary: one line per opcode with its count and counts by status, the number of
// interrupts that reached no eventfd, and the port's traffic counters at exit
// (model.Counters; a TEARDOWN_HCA, which mlx5_core's unload sends, starts them over). The
// log also gets the counters after each command that finds them changed:
//
//	port counters: {RXPackets:… RXBytes:… TXPackets:… …}
//
// Exit status: 0 when the client disconnected or a signal ended the serving, 1 when the
// session failed (a message that could not be framed, a socket error), 2 for usage errors.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"

	"github.com/daqiri-go/daqiri/mlx5/model"
	"github.com/daqiri-go/daqiri/mlx5/model/pcidev"
	"github.com/daqiri-go/daqiri/mlx5/model/vfiouser"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// lineWriter serialises log lines from the server's and the model's goroutines.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, format+"\n", args...)
}

// counterLog remembers the port counters it last logged.
type counterLog struct {
	mu   sync.Mutex
	last model.Counters
}

// changed returns the log line for now, and whether it differs from the last one (the
// power-on zeros count as logged).
func (l *counterLog) changed(now model.Counters) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now == l.last {
		return "", false
	}
	l.last = now
	return fmt.Sprintf("port counters: %+v", now), true
}

// maxSocketPath is the longest unix socket path: sun_path's 108 bytes less the NUL.
const maxSocketPath = 107

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("daqiri-mlx5model", flag.ContinueOnError)
	fs.SetOutput(stderr)
	socket := fs.String("socket", "", "unix socket path to serve vfio-user on (required)")
	mac := fs.String("mac", "02:00:00:00:00:01", "the port's permanent MAC address")
	logFile := fs.String("log", "", "write the command log here instead of standard error")
	verbose := fs.Bool("v", false, "also log vfio-user session events and refused messages")
	loopback := fs.Bool("loopback", false, "cable the port to itself (link up, what it sends it receives)")
	bridge := fs.String("bridge", "", "connect the port to this host netdev (AF_PACKET; needs CAP_NET_RAW)")
	timerOnly := fs.Bool("timer-only", false, "a device without a real-time clock: it stamps CQEs with its free-running timer only (cmd_hca_cap rq_ts_format 0)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: daqiri-mlx5model -socket PATH [-mac MAC] [-log FILE] [-v] [-loopback | -bridge IFNAME] [-timer-only]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *socket == "" || fs.NArg() != 0 {
		fmt.Fprintln(stderr, "daqiri-mlx5model: -socket PATH is required and nothing else is taken")
		fs.Usage()
		return 2
	}
	// sun_path holds 108 bytes with the terminating NUL (Linux unix(7)); a longer path
	// failed only at bind, as "invalid argument", after the statistics were printed.
	if len(*socket) > maxSocketPath {
		fmt.Fprintf(stderr, "daqiri-mlx5model: -socket: the path is %d bytes; a unix socket path holds at most %d\n", len(*socket), maxSocketPath)
		return 2
	}
	if *loopback && *bridge != "" {
		fmt.Fprintln(stderr, "daqiri-mlx5model: -loopback and -bridge are two wires for one port; give one")
		return 2
	}
	if *bridge != "" {
		if _, err := net.InterfaceByName(*bridge); err != nil {
			fmt.Fprintf(stderr, "daqiri-mlx5model: -bridge %s: %v\n", *bridge, err)
			return 2
		}
	}
	hw, err := net.ParseMAC(*mac)
	if err != nil || len(hw) != 6 {
		fmt.Fprintf(stderr, "daqiri-mlx5model: -mac %q: want a 6-byte Ethernet address such as 02:00:00:00:00:01\n", *mac)
		return 2
	}
	// A port's permanent address is a unicast one: the group bit (bit 0 of the first byte)
	// marks multicast and broadcast addresses, which no port may send from.
	if hw[0]&1 != 0 || slices.Equal(hw, net.HardwareAddr{0, 0, 0, 0, 0, 0}) {
		fmt.Fprintf(stderr, "daqiri-mlx5model: -mac %s: a port's address must be unicast and not all zeros (the first byte's lowest bit is the multicast bit)\n", hw)
		return 2
	}
	var logw io.Writer = stderr
	if *logFile != "" {
		f, err := os.OpenFile(*logFile, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			fmt.Fprintf(stderr, "daqiri-mlx5model: -log: %v\n", err)
			return 2
		}
		defer f.Close()
		logw = f
	}
	lw := &lineWriter{w: logw}
	var notes func(string, ...any)
	if *verbose {
		notes = lw.printf
	}
	var wire func(context.Context, *model.Device) error
	switch {
	case *loopback:
		wire = func(ctx context.Context, m *model.Device) error {
			m.Cable(m)
			<-ctx.Done()
			return nil
		}
	case *bridge != "":
		wire = func(ctx context.Context, m *model.Device) error { return m.Bridge(ctx, *bridge) }
	}
	// The port's counters start over at every TEARDOWN_HCA (and reset), so the summary at
	// exit often shows none of a run's traffic; the log gets them after each command that
	// finds them changed since the last such line.
	var counters counterLog
	var dev *pcidev.Device
	dev = pcidev.New(pcidev.Options{
		Model: model.Config{MAC: hw, TimerOnly: *timerOnly},
		Run:   true,
		Wire:  wire,
		OnCommand: func(c pcidev.Command) {
			lw.printf("cmd %v", c)
			if line, ok := counters.changed(dev.Model().Counters()); ok {
				lw.printf("%s", line)
			}
		},
		Logf: notes,
	})
	srv := vfiouser.NewServer(dev, vfiouser.Options{Logf: notes})
	err = srv.ListenAndServe(ctx, *socket, func() { fmt.Fprintf(stdout, "listening on %s\n", *socket) })
	fmt.Fprintf(stdout, "commands by opcode (name, opcode, count, by status):\n%s", dev.Summary())
	fmt.Fprintf(stdout, "interrupts that reached no eventfd: %d\n", dev.LostInterrupts())
	fmt.Fprintf(stdout, "port counters: %+v\n", dev.Model().Counters())
	if err != nil {
		fmt.Fprintf(stderr, "daqiri-mlx5model: %v\n", err)
		return 1
	}
	return 0
}
