package daqiri

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"testing"

	"github.com/daqiri-go/daqiri/internal/testutil/benchtest"
)

// BenchmarkLoopbackBurstPath is the whole burst path with no I/O: the software loopback
// engine, 64-byte frames, TX burst get → fill headers → send → RX burst → free, the loop an
// application runs. It reports ns per packet and allocations per packet (must be 0: nothing on
// this path may touch the Go heap). `make bench-burst` runs it. The benchmark goroutine is
// pinned to one core for the run (benchtest.Pin), as an application pins the thread that runs
// this loop; the collector is off during the benchmark (benchtest.StopGC) and "gcs" counts
// the collections during the loop (0 expected: nothing allocates). "ctl-ratio" is a control taken
// before and after each run (benchtest.ReportControl, the larger of the two): ≈ 0.7 when the
// run met the GPU host's fast speed at both ends, ≥ 1.0 when it met the slow one (another
// hardware thread busy on the core), which come and go with time for the same binary.
func BenchmarkLoopbackBurstPath(b *testing.B) {
	for _, fill := range []string{"lengths", "headers", "template", "lengths-all", "template-all"} {
		for _, batch := range []int{1, 16, 64} {
			b.Run(fill+"/batch"+strconv.Itoa(batch), func(b *testing.B) { burstPath(b, batch, fill) })
		}
	}
}

// burstPath runs the loop; "lengths" sets only each frame's length, which leaves the engine's
// own cost; "headers" writes Ethernet, IPv4 (with checksum) and UDP headers into every frame
// with the three helpers as a sender would; "template" writes the same bytes from a header
// prepared once (SetUDPv4Header). Lengths are set packet by packet with SetPacketLen (until
// 2026-11-28 SetPacketLengths(i, 64), the same check and store through a variadic call). The
// "-all" cases do the same work with the burst-wide calls a sender of one flow's
// equal-length frames would make: SetAllPacketLengths(64), and SetAllUDPv4Headers before it
// for "template-all".
func burstPath(b *testing.B, batch int, fill string) {
	benchtest.Pin(b)
	benchtest.StopGC(b)
	{
		{
			cfg := loopbackConfig(1, false)
			for i := range cfg.MemoryRegions {
				cfg.MemoryRegions[i].NumBufs = 1024
				cfg.MemoryRegions[i].BufSize = 128
			}
			cfg.Interfaces[0].TX.Queues[0].BatchSize = batch
			cfg.Interfaces[0].RX.Queues[0].BatchSize = batch
			s, err := Open(context.Background(), cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			dst := net.HardwareAddr{2, 0, 0, 0, 0, 2}
			src4, dst4 := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
			tmpl, err := NewUDPv4Header(dst, nil, src4, dst4, 4096, 4097)
			if err != nil {
				b.Fatal(err)
			}
			loop := newBurstLoop(s, tmpl, cfg.Interfaces[0].RX.Queues[0].ID, batch, fill)
			b.ReportAllocs()
			gc := benchtest.NewGC()
			gc0 := gc.Cycles()
			ctl0 := benchtest.Control()
			b.ResetTimer()
			packets := 0
			for b.Loop() {
				packets += loop.cycle(b)
			}
			b.StopTimer()
			if packets > 0 {
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(packets), "ns/pkt")
				b.ReportMetric(float64(packets)/b.Elapsed().Seconds()/1e6, "Mpps")
			}
			gc.Report(b, gc0)
			benchtest.ReportControl(b, ctl0)
		}
	}
}

// burstLoop is one turn of the burst benchmarks' loop (BenchmarkLoopbackBurstPath and the
// lab's): a TX burst of batch packets filled as fill says, sent, then the RX burst taken and
// freed. The fill is decoded once, so a turn costs what an application's loop costs.
type burstLoop struct {
	s                               *Session
	tmpl                            *UDPv4Header
	rxq, batch                      int
	dst                             net.HardwareAddr
	src4, dst4                      netip.Addr
	headers, template, all, allTmpl bool
}

// burstPayload is the UDP payload of the benchmarks' 64-byte frames.
const burstPayload = 64 - 14 - 20 - 8

func newBurstLoop(s *Session, tmpl *UDPv4Header, rxq, batch int, fill string) *burstLoop {
	return &burstLoop{
		s: s, tmpl: tmpl, rxq: rxq, batch: batch,
		dst:  net.HardwareAddr{2, 0, 0, 0, 0, 2},
		src4: netip.MustParseAddr("10.0.0.1"), dst4: netip.MustParseAddr("10.0.0.2"),
		headers: fill == "headers", template: fill == "template",
		all: fill == "lengths-all" || fill == "template-all", allTmpl: fill == "template-all",
	}
}

// cycle runs one turn and returns the packets received.
func (l *burstLoop) cycle(b *testing.B) int {
	t, err := l.s.TxBurst(0, 0, l.batch)
	if err != nil {
		b.Fatal(err)
	}
	if l.all {
		if l.allTmpl {
			if err := t.SetAllUDPv4Headers(l.tmpl, burstPayload); err != nil {
				b.Fatal(err)
			}
		}
		if err := t.SetAllPacketLengths(64); err != nil {
			b.Fatal(err)
		}
	} else if !l.headers && !l.template {
		// Lengths only: the loop an application that sets lengths runs, without the other
		// fills' tests per packet (until 2026-11-29 it shared the loop below, whose calls
		// for the other fills kept the burst and the index out of registers).
		for i := range t.Len() {
			t.SetPacketLen(i, 64)
		}
	} else if l.template {
		// Each header form runs its own loop, as an application's would (until 2026-11-29
		// the two shared one with a test of the form per packet), with its arguments in
		// locals rather than loaded through l after every call.
		tmpl := l.tmpl
		for i := range t.Len() {
			t.SetUDPv4Header(i, tmpl, burstPayload)
			t.SetPacketLen(i, 64)
		}
	} else {
		dst, src4, dst4 := l.dst, l.src4, l.dst4
		for i := range t.Len() {
			t.SetEthHeader(i, dst, nil)
			t.SetIPv4Header(i, 8+burstPayload, 17, src4, dst4)
			t.SetUDPHeader(i, burstPayload, 4096, 4097)
			t.SetPacketLen(i, 64)
		}
	}
	if err := l.s.Send(t); err != nil {
		b.Fatal(err)
	}
	r, err := l.s.RxBurst(0, l.rxq)
	if err != nil {
		b.Fatal(err)
	}
	n := r.Len()
	r.Free()
	return n
}
