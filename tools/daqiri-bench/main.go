// Command daqiri-bench sends and receives packets through a daqiri configuration and reports
// rates, packet counts and drops. With no arguments it runs an embedded default (UDP over
// loopback, 8000-byte payloads) for 10 seconds.
//
//	daqiri-bench [--config FILE] [--duration 10s] [--mode both|tx|rx] [--payload N]
//	             [--rate GBPS] [--window PACKETS] [--json]
//	             [--metrics-addr HOST:PORT [--metrics-linger DURATION]] [--plot FILE.svg]
//	             [--cpuprofile FILE] [--trace FILE]
//	daqiri-bench --validate FILE
package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"syscall"
	"time"

	"github.com/daqiri-go/daqiri/config"
)

//go:embed default.yaml
var defaultConfig []byte

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// options are the command line.
type options struct {
	config   string
	validate string
	duration time.Duration
	mode     string
	payload  int
	rateGbps float64
	window   optInt
	json     bool
	quiet    bool

	metricsAddr   string
	metricsLinger time.Duration
	modelPorts    string
	metrics       *metricsServer // set by run when metricsAddr is
	plotFile      string
	plot          *plotter // set by run when plotFile is
	runtimeFlows  bool
	cpuProfile    string
	traceFile     string
}

// optInt is an integer flag that knows whether it was given (its help shows no default:
// the default depends on the configuration).
type optInt struct {
	v   int
	set bool
}

func (o *optInt) String() string {
	if o == nil || !o.set {
		return ""
	}
	return strconv.Itoa(o.v)
}

func (o *optInt) Set(s string) error {
	v, err := strconv.Atoi(s)
	if err != nil {
		return errors.New("not an integer")
	}
	if v < 0 {
		return errors.New("must be ≥ 0")
	}
	o.v, o.set = v, true
	return nil
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("daqiri-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.config, "config", "", "DAQIRI YAML configuration (default: the embedded UDP loopback config)")
	fs.StringVar(&o.validate, "validate", "", "load and check a configuration without opening anything; exit 0 if valid, 1 if not")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "how long to send")
	fs.StringVar(&o.mode, "mode", "both", "which queues to drive: both, tx (send only) or rx (receive only)")
	fs.IntVar(&o.payload, "payload", 0, "payload bytes per packet (default: from the config's bench section, else 8000)")
	fs.Float64Var(&o.rateGbps, "rate", 0, "cap the send rate at this many Gb/s of payload (0 = as fast as possible)")
	fs.Var(&o.window, "window", fmt.Sprintf("with --mode both: at most this many `packets` sent but not yet received; 0 = no limit (default: the config's bench.window, else %d)", defaultWindow))
	fs.BoolVar(&o.json, "json", false, "print one JSON object with the results at the end instead of the table")
	fs.BoolVar(&o.quiet, "quiet", false, "no live progress line")
	fs.StringVar(&o.metricsAddr, "metrics-addr", "", "serve the counters in Prometheus text format at http://HOST:PORT/metrics (port 0: any free one)")
	fs.DurationVar(&o.metricsLinger, "metrics-linger", 0, "with --metrics-addr: keep serving the final counters this long after the results (Ctrl-C ends it)")
	fs.StringVar(&o.modelPorts, "model-ports", "", "run a raw configuration written for ConnectX NICs on the ConnectX device model: `auto` (raw interfaces in order on model:0, model:1, ...; 0↔1 are cabled) or KEY=N[@IFNAME],... with KEY an interface name or address; device/host_pinned regions stay GPU memory on a GPU host (the model writes them) and become host memory elsewhere, and tunnel placeholders get test values")
	fs.BoolVar(&o.runtimeFlows, "runtime-flows", false, "add RX flows once the session is open, as upstream's dynamic_rx_flow example application does: on each raw RX interface with flow_isolation and no rx.flows, one flow matching the bench_tx entries' UDP ports that spreads over all its RX queues (RSS)")
	fs.StringVar(&o.plotFile, "plot", "", "write TX/RX Gb/s and drops over time per interface to this SVG `file` (opens in a browser)")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the run (open, send/receive, close) to this `file` for go tool pprof")
	fs.StringVar(&o.traceFile, "trace", "", "write a Go execution trace of the run (open, send/receive, close) to this `file` for go tool trace: where goroutines wait, park and wake, and where the CPUs sit idle")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	switch o.mode {
	case "both", "tx", "rx":
	default:
		return nil, fmt.Errorf("--mode must be both, tx or rx, not %q", o.mode)
	}
	if o.duration <= 0 {
		return nil, fmt.Errorf("--duration must be positive")
	}
	if o.metricsLinger < 0 {
		return nil, fmt.Errorf("--metrics-linger must be ≥ 0, got %v", o.metricsLinger)
	}
	if err := checkPayload("--payload", o.payload); err != nil {
		return nil, err
	}
	if err := checkRate("--rate", o.rateGbps); err != nil {
		return nil, err
	}
	return o, nil
}

// Bounds of --payload and --rate (and of the bench section's payload_size and rate_gbps).
// maxPayload is the largest message any engine carries (config.MaxSocketPayload, a TCP
// frame); maxRateGbps is far above any NIC (100 Tb/s) and keeps the pacing interval
// arithmetic finite.
const (
	maxPayload  = config.MaxSocketPayload
	maxRateGbps = 100_000
)

// checkPayload refuses a payload size the engines could not send (0 means the default).
func checkPayload(name string, v int) error {
	if v < 0 || v > maxPayload {
		return fmt.Errorf("%s must be between 0 (the default) and %d bytes, got %d", name, maxPayload, v)
	}
	return nil
}

// checkRate refuses a rate that is not a finite number in 0..maxRateGbps: NaN compares
// false with everything, so an unchecked NaN or a negative rate ran uncapped.
func checkRate(name string, v float64) error {
	if math.IsNaN(v) || v < 0 || v > maxRateGbps {
		return fmt.Errorf("%s must be a number of Gb/s between 0 (uncapped) and %d, got %v", name, maxRateGbps, v)
	}
	return nil
}

func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "daqiri-bench:", err)
		return 2
	}
	if o.validate != "" {
		cfg, err := config.LoadFile(o.validate)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		for _, w := range cfg.Warnings {
			fmt.Fprintln(stderr, "warning:", w)
		}
		fmt.Fprintf(stdout, "%s: valid\n", o.validate)
		return 0
	}
	var cfg *config.Config
	if o.config == "" {
		cfg, err = config.Parse(defaultConfig, "default.yaml")
	} else {
		cfg, err = config.LoadFile(o.config)
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if o.modelPorts != "" {
		notes, err := applyModelPortsGPU(cfg, o.modelPorts, gpuCount())
		if err != nil {
			fmt.Fprintln(stderr, "daqiri-bench:", err)
			return 1
		}
		for _, n := range notes {
			fmt.Fprintln(stderr, "model-ports:", n)
		}
	}
	if o.plotFile != "" {
		if o.plot, err = newPlotter(o.plotFile, o.duration); err != nil {
			fmt.Fprintln(stderr, "daqiri-bench:", err)
			return 1
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.metrics, err = startMetrics(o, stderr); err != nil {
		fmt.Fprintln(stderr, "daqiri-bench:", err)
		return 1
	}
	defer o.metrics.stop()
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			fmt.Fprintln(stderr, "daqiri-bench: --cpuprofile:", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(stderr, "daqiri-bench: --cpuprofile:", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	if o.traceFile != "" {
		f, err := os.Create(o.traceFile)
		if err != nil {
			fmt.Fprintln(stderr, "daqiri-bench: --trace:", err)
			return 1
		}
		defer f.Close()
		if err := trace.Start(f); err != nil {
			fmt.Fprintln(stderr, "daqiri-bench: --trace:", err)
			return 1
		}
		defer trace.Stop()
	}
	res, err := bench(ctx, cfg, o, stderr)
	if err != nil {
		o.plot.discard()
		fmt.Fprintln(stderr, "daqiri-bench:", err)
		return 1
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(res)
	} else {
		res.table(stdout)
	}
	if err := o.plot.close(plotTitle(o, res)); err != nil {
		fmt.Fprintln(stderr, "daqiri-bench:", err)
		return 1
	}
	o.metrics.wait(ctx, stderr)
	return 0
}
