// Command daqiri-capture receives packets through a daqiri configuration and records them:
// to a pcap or pcapng file (nanosecond timestamps, snaplen 262144, optional rotation; pcapng
// with an interface block per port and queue and the flow id of every packet), to raw files
// (one per packet) and/or to S3 (one object per burst, or per packet). It shows a live
// progress line (packets, bytes, drops, write rate) and prints a summary at the end. Ctrl-C
// (or SIGTERM) stops it cleanly: the bursts in hand are written, files are flushed and
// closed, uploads finish (or are abandoned after --s3-drain) and the summary is printed.
//
//	daqiri-capture --config rx.yaml --pcap out.pcap [--micro] [--snaplen N] [--rotate-mb N]
//	               [--pcapng out.pcapng]
//	               [--raw DIR [--raw-prefix P]] [--offset N]
//	               [--s3-bucket B --s3-region R [--s3-endpoint URL] [--s3-path-style]
//	                [--s3-prefix P] [--s3-mode burst|packet]]
//	               [--ports a,b] [--duration D] [--count N] [--quiet] [--json]
//
// tools/daqiri-capture/example.yaml is a configuration to start from (a UDP server on
// 127.0.0.1:5005). S3 credentials come from the AWS SDK's default chain (AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY, shared configuration files, ...).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/capture"
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/mlx5/model/modelch"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// options are the command line.
type options struct {
	config   string
	ports    string
	duration time.Duration
	count    uint64
	quiet    bool
	json     bool

	pcap     string
	pcapng   string
	micro    bool
	snaplen  int
	rotateMB float64
	linktype string

	raw       string
	rawPrefix string
	offset    int

	s3Bucket, s3Region, s3Endpoint, s3Prefix, s3Mode string
	s3PathStyle                                      bool
	s3Inflight                                       int
	s3StagedMB                                       int
	s3Drain                                          time.Duration
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("daqiri-capture", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.config, "config", "", "DAQIRI YAML configuration to receive with (required)")
	fs.StringVar(&o.ports, "ports", "", "comma-separated interface names to capture (default: every interface with RX queues)")
	fs.DurationVar(&o.duration, "duration", 0, "stop after this long (0: until Ctrl-C)")
	fs.Uint64Var(&o.count, "count", 0, "stop after this many packets (0: no limit); whole bursts are written, so a few more may be")
	fs.BoolVar(&o.quiet, "quiet", false, "no live progress line")
	fs.BoolVar(&o.json, "json", false, "print the summary as one JSON object")
	fs.StringVar(&o.pcap, "pcap", "", "append packets to this classic pcap file")
	fs.StringVar(&o.pcapng, "pcapng", "", "append packets to this pcapng file (an interface block per port/queue, ns timestamps, flow id and queue per packet)")
	fs.BoolVar(&o.micro, "micro", false, "microsecond pcap timestamps (default nanosecond)")
	fs.IntVar(&o.snaplen, "snaplen", 0, "pcap snapshot length (default 262144)")
	fs.Float64Var(&o.rotateMB, "rotate-mb", 0, "start a new pcap file (FILE.1.pcap, FILE.2.pcap, ...) before one would exceed this many MB (0: never)")
	fs.StringVar(&o.linktype, "linktype", "auto", "pcap link type: ethernet, raw (IP), user0, a number, or auto (ethernet for raw streams, user0 for socket payloads)")
	fs.StringVar(&o.raw, "raw", "", "write one file per packet into this directory (absolute path)")
	fs.StringVar(&o.rawPrefix, "raw-prefix", "pkt", "raw file name prefix")
	fs.IntVar(&o.offset, "offset", 0, "raw and S3: skip this many leading bytes of each packet (packet_data_offset; the header length writes only payloads)")
	fs.StringVar(&o.s3Bucket, "s3-bucket", "", "upload to this S3 bucket")
	fs.StringVar(&o.s3Region, "s3-region", "us-east-1", "S3 region")
	fs.StringVar(&o.s3Endpoint, "s3-endpoint", "", "S3 endpoint URL (an S3-compatible server)")
	fs.BoolVar(&o.s3PathStyle, "s3-path-style", false, "path-style S3 addressing (most S3-compatible servers)")
	fs.StringVar(&o.s3Prefix, "s3-prefix", "", "object key prefix (default capture-<start time>)")
	fs.StringVar(&o.s3Mode, "s3-mode", "burst", "burst: one object per burst (index + packets); packet: one object per packet")
	fs.IntVar(&o.s3Inflight, "s3-inflight", 8, "uploads in flight at most")
	fs.IntVar(&o.s3StagedMB, "s3-staged-mb", 1024, "MB staged for upload at most; bursts beyond it are not uploaded (counted)")
	fs.DurationVar(&o.s3Drain, "s3-drain", 30*time.Second, "at the end, wait this long for uploads in flight before abandoning them")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	switch {
	case o.config == "":
		return nil, errors.New("--config is required")
	case o.pcap == "" && o.pcapng == "" && o.raw == "" && o.s3Bucket == "":
		return nil, errors.New("nothing to write: give --pcap, --pcapng, --raw and/or --s3-bucket")
	case o.duration < 0 || o.offset < 0 || o.snaplen < 0 || o.rotateMB < 0 || o.s3Inflight <= 0 || o.s3StagedMB <= 0 || o.s3Drain < 0:
		return nil, errors.New("negative or zero value for a size, count or duration")
	case o.s3Mode != "burst" && o.s3Mode != "packet":
		return nil, fmt.Errorf("--s3-mode must be burst or packet, not %q", o.s3Mode)
	}
	// Bounds, checked before anything opens. NaN compares false with every bound, so it is
	// named first; a rotation size must come to at least one byte and fit int64.
	switch {
	case math.IsNaN(o.rotateMB) || o.rotateMB > maxRotateMB || (o.rotateMB > 0 && o.rotateMB*1e6 < 1):
		return nil, fmt.Errorf("--rotate-mb must be 0 (no rotation) or between 0.000001 and %d MB, got %v", maxRotateMB, o.rotateMB)
	case o.snaplen > capture.DefaultSnapLen:
		return nil, fmt.Errorf("--snaplen must be between 1 and %d (0: the default), got %d", capture.DefaultSnapLen, o.snaplen)
	case o.s3Inflight > maxS3Inflight:
		return nil, fmt.Errorf("--s3-inflight must be between 1 and %d, got %d", maxS3Inflight, o.s3Inflight)
	case o.s3StagedMB > maxS3StagedMB:
		return nil, fmt.Errorf("--s3-staged-mb must be between 1 and %d, got %d", maxS3StagedMB, o.s3StagedMB)
	}
	if _, err := linkType(o.linktype, config.StreamRaw); err != nil {
		return nil, err
	}
	return o, nil
}

// Upper bounds of the size flags: a rotation size of 1 PB (far past any file system's
// comfort, well inside int64 bytes), 1024 uploads in flight, 1 TiB staged (the MB count is
// shifted into bytes, and past 2^43 that would overflow).
const (
	maxRotateMB   = 1_000_000_000
	maxS3Inflight = 1024
	maxS3StagedMB = 1 << 20
)

// linkType resolves --linktype for a stream type.
func linkType(s string, stream config.StreamType) (layers.LinkType, error) {
	switch strings.ToLower(s) {
	case "auto":
		if stream == config.StreamRaw {
			return layers.LinkTypeEthernet, nil
		}
		return linkTypeUser0, nil
	case "ethernet":
		return layers.LinkTypeEthernet, nil
	case "raw", "ip":
		return layers.LinkTypeRaw, nil
	case "user0":
		return linkTypeUser0, nil
	}
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("--linktype %q: want ethernet, raw, user0, auto or a link-type number from 1 to 65535", s)
	}
	return layers.LinkType(n), nil
}

// linkTypeUser0 is LINKTYPE_USER0 (147), reserved for private use: socket streams deliver
// application payloads with no link-layer header.
const linkTypeUser0 = layers.LinkType(147)

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "daqiri-capture:", err)
		return 2
	}
	cfg, err := config.LoadFile(o.config)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	s, err := daqiri.Open(ctx, cfg, daqiri.WithMLX5Fabric(&modelch.Fabric{}))
	if err != nil {
		fmt.Fprintln(stderr, "daqiri-capture:", err)
		return 1
	}
	c, err := newCapturer(ctx, s, o, stderr)
	if err != nil {
		s.Close()
		fmt.Fprintln(stderr, "daqiri-capture:", err)
		return 1
	}
	var names []string
	for _, p := range c.ports {
		names = append(names, s.PortName(p))
	}
	fmt.Fprintf(stderr, "daqiri-capture: capturing %s (Ctrl-C to stop)\n", strings.Join(names, ", "))
	c.loop(ctx)
	sum := c.finish()
	if err := s.Close(); err != nil {
		sum.Errors = append(sum.Errors, "close: "+err.Error())
	}
	sum.fillDrops(s)
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(sum)
	} else {
		sum.print(stdout)
	}
	if len(sum.Errors) > 0 {
		return 1
	}
	return 0
}

// summary is what a run did.
type summary struct {
	Seconds float64           `json:"seconds"`
	Packets uint64            `json:"packets"`
	Bytes   uint64            `json:"bytes"`
	Bursts  uint64            `json:"bursts"`
	Dropped uint64            `json:"dropped_packets"`
	Drops   map[string]uint64 `json:"drops,omitempty"`
	Pcap    *outputSummary    `json:"pcap,omitempty"`
	Pcapng  *outputSummary    `json:"pcapng,omitempty"`
	Raw     *outputSummary    `json:"raw,omitempty"`
	S3      *outputSummary    `json:"s3,omitempty"`
	Errors  []string          `json:"errors,omitempty"`
	Stopped string            `json:"stopped"` // why: interrupted, duration, count, error
}

// outputSummary is one output's tally.
type outputSummary struct {
	Where   string   `json:"where"`
	Files   []string `json:"files,omitempty"`
	Written int      `json:"written"` // packets (pcap, raw) or objects (S3)
	Failed  int      `json:"failed"`
	Skipped int      `json:"skipped,omitempty"` // S3: packets not staged (staging full)
	Bytes   int64    `json:"bytes"`
}

func (s *summary) fillDrops(sess *daqiri.Session) {
	st := sess.Stats()
	for _, p := range st.Ports {
		for _, q := range p.Rx {
			s.Dropped += q.Dropped
			for k, v := range q.Drops {
				if s.Drops == nil {
					s.Drops = map[string]uint64{}
				}
				s.Drops[k] += v
			}
		}
	}
}

func (s *summary) print(w io.Writer) {
	rate := func(n uint64) float64 {
		if s.Seconds <= 0 {
			return 0
		}
		return float64(n) / s.Seconds
	}
	fmt.Fprintf(w, "\ncaptured %d packets, %d bytes in %d bursts over %.2f s (%.3f Mpps, %.3f Gb/s); stopped: %s\n",
		s.Packets, s.Bytes, s.Bursts, s.Seconds, rate(s.Packets)/1e6, rate(s.Bytes)*8/1e9, s.Stopped)
	fmt.Fprintf(w, "dropped  %d packets%s\n", s.Dropped, reasons(s.Drops))
	for _, out := range []struct {
		name string
		o    *outputSummary
		unit string
	}{{"pcap", s.Pcap, "records"}, {"pcapng", s.Pcapng, "packets"}, {"raw", s.Raw, "files"}, {"s3", s.S3, "objects"}} {
		if out.o == nil {
			continue
		}
		fmt.Fprintf(w, "%-8s %s: %d %s, %d bytes written, %d failed", out.name, out.o.Where, out.o.Written, out.unit, out.o.Bytes, out.o.Failed)
		if out.o.Skipped > 0 {
			fmt.Fprintf(w, ", %d packets skipped (staging full)", out.o.Skipped)
		}
		fmt.Fprintln(w)
		for _, f := range out.o.Files {
			fmt.Fprintf(w, "         %s\n", f)
		}
	}
	for _, e := range s.Errors {
		fmt.Fprintf(w, "error    %s\n", e)
	}
}

func reasons(m map[string]uint64) string {
	if len(m) == 0 {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(" (")
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", k, m[k])
	}
	b.WriteString(")")
	return b.String()
}
