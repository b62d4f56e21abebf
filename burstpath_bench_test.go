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
			const payload = 64 - 14 - 20 - 8
			tmpl, err := NewUDPv4Header(dst, nil, src4, dst4, 4096, 4097)
			if err != nil {
				b.Fatal(err)
			}
			headers, template := fill == "headers", fill == "template"
			all, allTemplate := fill == "lengths-all" || fill == "template-all", fill == "template-all"
			rxq := cfg.Interfaces[0].RX.Queues[0].ID
			b.ReportAllocs()
			gc := benchtest.NewGC()
			gc0 := gc.Cycles()
			ctl0 := benchtest.Control()
			b.ResetTimer()
			packets := 0
			for b.Loop() {
				t, err := s.TxBurst(0, 0, batch)
				if err != nil {
					b.Fatal(err)
				}
				if all {
					if allTemplate {
						if err := t.SetAllUDPv4Headers(tmpl, payload); err != nil {
							b.Fatal(err)
						}
					}
					if err := t.SetAllPacketLengths(64); err != nil {
						b.Fatal(err)
					}
				} else {
					for i := range t.Len() {
						switch {
						case headers:
							t.SetEthHeader(i, dst, nil)
							t.SetIPv4Header(i, 8+payload, 17, src4, dst4)
							t.SetUDPHeader(i, payload, 4096, 4097)
						case template:
							t.SetUDPv4Header(i, tmpl, payload)
						}
						t.SetPacketLen(i, 64)
					}
				}
				if err := s.Send(t); err != nil {
					b.Fatal(err)
				}
				r, err := s.RxBurst(0, rxq)
				if err != nil {
					b.Fatal(err)
				}
				packets += r.Len()
				r.Free()
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
