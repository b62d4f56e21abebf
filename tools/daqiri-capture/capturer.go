package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/capture"
	"github.com/daqiri-go/daqiri/capture/gds"
	"github.com/daqiri-go/daqiri/capture/s3"
	"github.com/daqiri-go/daqiri/cudart"
	"github.com/daqiri-go/daqiri/internal/tty"
)

// capturer owns the session's receive loop and the writers.
type capturer struct {
	s      *daqiri.Session
	o      *options
	stderr io.Writer
	line   *tty.Progress
	ports  []int

	pcap   *capture.PcapWriter
	pcapng *capture.PcapngWriter
	raw    *capture.RawWriter
	s3w    *s3.Writer
	prefix string
	dev    capture.DeviceIO
	closer func() error // releases dev

	pending []*s3.Upload
	sum     summary
	start   time.Time
	stopped string
}

func newCapturer(ctx context.Context, s *daqiri.Session, o *options, stderr io.Writer) (_ *capturer, err error) {
	c := &capturer{s: s, o: o, stderr: stderr, line: tty.NewProgress(stderr)}
	defer func() {
		if err != nil {
			c.closeWriters()
		}
	}()
	want := map[string]bool{}
	for _, n := range strings.Split(o.ports, ",") {
		if n = strings.TrimSpace(n); n != "" {
			want[n] = true
		}
	}
	for p := 0; p < s.NumPorts(); p++ {
		name := s.PortName(p)
		if len(want) > 0 {
			if !want[name] {
				continue
			}
			delete(want, name)
			if s.NumRxQueues(p) == 0 {
				return nil, fmt.Errorf("--ports: interface %s has no RX queues to capture", name)
			}
		}
		if s.NumRxQueues(p) > 0 {
			c.ports = append(c.ports, p)
		}
	}
	for n := range want {
		return nil, fmt.Errorf("--ports: no interface named %q in %s", n, o.config)
	}
	if len(c.ports) == 0 {
		return nil, fmt.Errorf("%s has no interface with RX queues", o.config)
	}
	if err := c.openDevice(); err != nil {
		return nil, err
	}
	if o.pcap != "" {
		lt, _ := linkType(o.linktype, s.Config().StreamType)
		c.pcap, err = capture.OpenPcap(o.pcap, capture.PcapOptions{Microseconds: o.micro, SnapLen: o.snaplen, LinkType: lt,
			RotateBytes: int64(o.rotateMB * 1e6), Device: c.dev})
		if err != nil {
			return nil, err
		}
		c.sum.Pcap = &outputSummary{Where: o.pcap}
	}
	if o.pcapng != "" {
		lt, _ := linkType(o.linktype, s.Config().StreamType)
		names := map[int]string{}
		for i, ifc := range s.Config().Interfaces {
			names[i] = ifc.Name
		}
		c.pcapng, err = capture.OpenPcapng(o.pcapng, capture.PcapngOptions{SnapLen: o.snaplen, LinkType: lt,
			RotateBytes: int64(o.rotateMB * 1e6), PortNames: names, Device: c.dev})
		if err != nil {
			return nil, err
		}
		c.sum.Pcapng = &outputSummary{Where: o.pcapng}
	}
	if o.raw != "" {
		c.raw, err = capture.NewRawWriter(capture.RawOptions{Dir: o.raw, Prefix: o.rawPrefix, Offset: o.offset, Device: c.dev})
		if err != nil {
			return nil, err
		}
		c.sum.Raw = &outputSummary{Where: o.raw}
	}
	if o.s3Bucket != "" {
		c.s3w, err = s3.New(ctx, s3.Config{Bucket: o.s3Bucket, Region: o.s3Region, Endpoint: o.s3Endpoint, PathStyle: o.s3PathStyle,
			MaxInflight: o.s3Inflight, MaxStagedBytes: int64(o.s3StagedMB) << 20, Device: c.dev})
		if err != nil {
			return nil, err
		}
		c.prefix = o.s3Prefix
		if c.prefix == "" {
			c.prefix = "capture-" + time.Now().UTC().Format("20060102T150405.000000000Z")
		}
		c.sum.S3 = &outputSummary{Where: "s3://" + o.s3Bucket + "/" + c.prefix}
	}
	return c, nil
}

// openDevice prepares device-memory access when a captured queue receives into GPU memory:
// cuFile for raw files (GPUDirect Storage), device-to-host copies for pcap and S3.
func (c *capturer) openDevice() error {
	var dev *cudart.Device
	for _, p := range c.ports {
		for _, q := range c.s.Ports()[p].Rx {
			for _, r := range q.Regions {
				if r.CPU() {
					continue
				}
				if d, ok := r.Memory().(interface{ Device() *cudart.Device }); ok && dev == nil {
					dev = d.Device()
				}
			}
		}
	}
	if dev == nil {
		return nil
	}
	drv, err := gds.Open(dev)
	if err == nil {
		c.dev, c.closer = drv, drv.Close
		fmt.Fprintf(c.stderr, "daqiri-capture: device-memory segments through cuFile (%s mode, %s)\n", drv.Mode(), drv.Library())
		return nil
	}
	if c.o.raw != "" {
		return fmt.Errorf("raw files from device memory need GPUDirect Storage: %w", err)
	}
	// pcap and S3 only need the bytes in host memory.
	c.dev = copyOnly{dev}
	return nil
}

// copyOnly reads device memory with cuMemcpyDtoH; it cannot write files from it.
type copyOnly struct{ dev *cudart.Device }

func (d copyOnly) CopyToHost(dst []byte, src uintptr) error {
	return d.dev.CopyDtoH(dst, cudart.DevicePtr(src))
}

func (d copyOnly) OpenFile(*os.File) (capture.DeviceFile, error) {
	return nil, fmt.Errorf("no cuFile library for device-memory file writes: %w", daqiri.ErrNotSupported)
}

// loop receives and writes until ctx ends, the duration or count is reached, or a write
// fails fatally.
func (c *capturer) loop(ctx context.Context) {
	c.start = time.Now()
	var deadline time.Time
	if c.o.duration > 0 {
		deadline = c.start.Add(c.o.duration)
	}
	nextTick := c.start.Add(time.Second)
	var lastBytes int64
	lastTick := c.start
	idle := 0
	for c.stopped == "" {
		got := false
		for _, p := range c.ports {
			b, err := c.s.RxBurstPort(p)
			if err != nil {
				if !errors.Is(err, daqiri.ErrNotReady) {
					c.fail("receive: " + err.Error())
				}
				continue
			}
			got = true
			c.write(b, time.Now())
			b.Free()
		}
		now := time.Now()
		switch {
		case ctx.Err() != nil:
			c.stopped = "interrupted"
		case !deadline.IsZero() && now.After(deadline):
			c.stopped = "duration"
		case c.o.count > 0 && c.sum.Packets >= c.o.count:
			c.stopped = "count"
		}
		if !now.Before(nextTick) {
			c.collectUploads(false)
			if !c.o.quiet && !c.o.json {
				w := c.written()
				rate := float64(w-lastBytes) / now.Sub(lastTick).Seconds() / 1e6
				c.progress(now, rate)
				lastBytes, lastTick = w, now
			}
			nextTick = now.Add(time.Second)
		}
		if got {
			idle = 0
			continue
		}
		// Back off when idle so a polling loop does not starve the engine's workers on a
		// small machine.
		if idle++; idle < 64 {
			runtime.Gosched()
		} else {
			time.Sleep(50 * time.Microsecond)
		}
	}
	// Bursts already queued to the application were received: write them too.
	for _, p := range c.ports {
		for i := 0; i < 1<<20; i++ {
			b, err := c.s.RxBurstPort(p)
			if err != nil {
				break
			}
			c.write(b, time.Now())
			b.Free()
		}
	}
	c.line.Done()
}

func (c *capturer) fail(msg string) {
	c.sum.Errors = append(c.sum.Errors, msg)
	c.stopped = "error"
}

// written is the bytes written so far by the file outputs and staged for S3.
func (c *capturer) written() int64 {
	var n int64
	for _, o := range []*outputSummary{c.sum.Pcap, c.sum.Pcapng, c.sum.Raw} {
		if o != nil {
			n += o.Bytes
		}
	}
	if c.sum.S3 != nil {
		n += c.sum.S3.Bytes
	}
	return n
}

func (c *capturer) progress(now time.Time, mbps float64) {
	var dropped uint64
	for _, p := range c.s.Stats().Ports {
		for _, q := range p.Rx {
			dropped += q.Dropped
		}
	}
	line := fmt.Sprintf("%7.1fs  %d pkts  %.1f MB  dropped %d  write %.1f MB/s", now.Sub(c.start).Seconds(), c.sum.Packets, float64(c.sum.Bytes)/1e6, dropped, mbps)
	if c.s3w != nil {
		line += fmt.Sprintf("  s3 %d up %d failed %.1f MB staged", c.sum.S3.Written, c.sum.S3.Failed, float64(c.s3w.Staged())/1e6)
	}
	c.line.Update(line)
}

// write records one burst in every output.
func (c *capturer) write(b *daqiri.Burst, recv time.Time) {
	c.sum.Bursts++
	c.sum.Packets += uint64(b.Len())
	c.sum.Bytes += uint64(b.TotalBytes())
	if c.pcap != nil {
		st, err := c.pcap.WriteAt(b, recv)
		c.tally(c.sum.Pcap, st, err, "pcap")
	}
	if c.pcapng != nil {
		st, err := c.pcapng.WriteAt(b, recv)
		c.tally(c.sum.Pcapng, st, err, "pcapng")
	}
	if c.raw != nil {
		st, err := c.raw.Write(b)
		c.tally(c.sum.Raw, st, err, "raw")
	}
	if c.s3w != nil {
		c.upload(b)
	}
}

func (c *capturer) tally(o *outputSummary, st capture.Status, err error, what string) {
	o.Written += st.Completed
	o.Failed += st.Failed
	o.Bytes += st.Bytes
	if err != nil {
		// A file that cannot be written (disk full, permissions) will not get better: stop
		// rather than drop silently.
		c.fail(what + ": " + err.Error())
	}
}

// upload stages b for S3. When staging is full it waits for the oldest upload to finish
// (bounded by that upload's own deadlines) and tries once more; if still full, the burst is
// not uploaded and counted as skipped.
func (c *capturer) upload(b *daqiri.Burst) {
	put := func() (*s3.Upload, error) {
		if c.o.s3Mode == "packet" {
			return c.s3w.WritePackets(b, c.prefix, c.o.offset)
		}
		return c.s3w.WriteBurst(b, c.prefix, c.o.offset)
	}
	u, err := put()
	if errors.Is(err, daqiri.ErrNoSpaceAvailable) && len(c.pending) > 0 {
		<-c.pending[0].Done()
		c.collectUploads(false)
		u, err = put()
	}
	if err != nil {
		if errors.Is(err, daqiri.ErrNoSpaceAvailable) {
			c.sum.S3.Skipped += b.Len()
			return
		}
		c.fail("s3: " + err.Error())
		return
	}
	c.pending = append(c.pending, u)
}

// collectUploads moves finished uploads into the summary; with all, it waits for every one.
func (c *capturer) collectUploads(all bool) {
	keep := c.pending[:0]
	for _, u := range c.pending {
		if all {
			<-u.Done()
		}
		st, err := u.Poll()
		if errors.Is(err, daqiri.ErrNotReady) {
			keep = append(keep, u)
			continue
		}
		c.sum.S3.Written += st.Completed
		c.sum.S3.Failed += st.Failed
		c.sum.S3.Bytes += st.Bytes
		if err != nil && len(c.sum.Errors) < 10 {
			c.sum.Errors = append(c.sum.Errors, "s3: "+err.Error())
		}
	}
	c.pending = keep
}

// finish closes the outputs (flushing files, draining uploads) and returns the summary.
func (c *capturer) finish() summary {
	c.sum.Seconds = time.Since(c.start).Seconds()
	c.sum.Stopped = c.stopped
	if c.s3w != nil {
		ctx, cancel := context.WithTimeout(context.Background(), c.o.s3Drain)
		if err := c.s3w.Close(ctx); err != nil {
			c.sum.Errors = append(c.sum.Errors, err.Error())
		}
		cancel()
		c.collectUploads(true)
		c.s3w = nil
	}
	c.closeWriters()
	return c.sum
}

func (c *capturer) closeWriters() {
	if c.pcap != nil {
		if err := c.pcap.Close(); err != nil {
			c.sum.Errors = append(c.sum.Errors, err.Error())
		}
		if c.sum.Pcap != nil {
			c.sum.Pcap.Files = c.pcap.Files()
		}
		c.pcap = nil
	}
	if c.pcapng != nil {
		if err := c.pcapng.Close(); err != nil {
			c.sum.Errors = append(c.sum.Errors, err.Error())
		}
		if c.sum.Pcapng != nil {
			c.sum.Pcapng.Files = c.pcapng.Files()
		}
		c.pcapng = nil
	}
	if c.raw != nil {
		c.raw.Close()
		c.raw = nil
	}
	if c.s3w != nil {
		c.s3w.Close(context.Background())
		c.s3w = nil
	}
	if c.closer != nil {
		c.closer()
		c.closer = nil
	}
}
