package mlx5

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/internal/testutil/enginetest"
	"github.com/daqiri-go/daqiri/swloop"
)

// The benchmarks measure the engine's own cost per packet, apart from the model's: the model
// fills the CQs and stride buffers first (outside the timer), then the timed loop is the
// engine's poll → burst → application free → repost (RX), or post → doorbell for the model
// to take and then the completion poll (TX; the model's transmit runs outside the timer).
// The software loopback engine moves the same packets in the same run for comparison.
// `make bench-mlx5` runs them; read the ns/pkt and Mpps columns (ns/op of the mlx5 benchmarks
// is meaningless: the benchmark timer stays stopped and the engine's part is timed by hand).
// Results in BENCHMARKS.md.

const benchRound = 4096 // packets per fill round, per queue

func benchRxConfig(queues int) *config.Config {
	return benchRxConfigKind(queues, config.KindHost, 2048)
}

// benchRxConfigKind is benchRxConfig with regions of kind and buffers of bufSize bytes.
func benchRxConfigKind(queues int, kind config.MemoryKind, bufSize int) *config.Config {
	c := &config.Config{Version: 1, StreamType: config.StreamRaw, LogLevel: "error", RxMetaBuffers: 32, TxMetaBuffers: 64}
	ifc := config.Interface{Name: "rx", Address: "model:0", RX: &config.RxConfig{}}
	for q := 0; q < queues; q++ {
		n := fmt.Sprintf("rx%d", q)
		c.MemoryRegions = append(c.MemoryRegions, config.MemoryRegion{Name: n, Kind: kind, Access: config.AccessLocal, NumBufs: 2 * benchRound, BufSize: bufSize})
		ifc.RX.Queues = append(ifc.RX.Queues, config.Queue{Name: n, ID: q, PollMode: config.PollDirect, MemoryRegions: []string{n}})
		if queues > 1 {
			ifc.RX.Flows = append(ifc.RX.Flows, config.Flow{Name: n, ID: q + 1, Actions: []config.Action{{Type: config.ActionQueue, Queues: []int{q}}},
				Match: config.Match{UDPDst: config.PortRange{Lo: uint16(5000 + q), Hi: uint16(5000 + q)}}})
		}
	}
	c.Interfaces = []config.Interface{ifc}
	return c
}

// BenchmarkRX is the engine's receive path per packet: ns/op is ns per packet.
func BenchmarkRX(b *testing.B) {
	for _, size := range []int{64, 1500} {
		for _, queues := range []int{1, 4} {
			for _, comp := range []bool{true, false} {
				b.Run(fmt.Sprintf("size=%d/queues=%d/compression=%v", size, queues, comp), func(b *testing.B) {
					benchRX(b, size, queues, comp)
				})
			}
		}
	}
}

func benchRX(b *testing.B, size, queues int, comp bool) {
	cfg := benchRxConfig(queues)
	benchRXOn(b, cfg, enginetest.Ports(b, cfg), size, queues, comp)
}

// benchRXOn is benchRX on ports built from cfg (GPU regions in GPU benchmarks).
func benchRXOn(b *testing.B, cfg *config.Config, ports []*engine.Port, size, queues int, comp bool) {
	e := openBench(b, cfg, ports, options{striding: -1, compression: comp})
	dev := modelOf(e, 0)
	r := rand.New(rand.NewPCG(1, 2))
	frames := make([][]byte, queues)
	for q := range frames {
		frames[q] = udpFrame(r, q, size-4) // the model does not add an FCS; size is the wire frame less it
		frames[q][36], frames[q][37] = byte((5000+q)>>8), byte(5000+q)
	}
	rq := ports[0].Rx
	done, total := 0, uint64(0)
	var spent time.Duration
	b.ResetTimer()
	b.StopTimer() // the engine's part is timed by hand: StopTimer's memory statistics cost more than a round
	for done < b.N {
		// Fill: the model writes a round of packets per queue into the stride buffers and CQs.
		n := min(benchRound, (b.N-done+queues-1)/queues)
		// (in steps the model's input backlog holds).
		for q := 0; q < queues; q++ {
			for i := 0; i < n; i += 256 {
				k := min(256, n-i)
				for j := 0; j < k; j++ {
					dev.Receive(frames[q])
				}
				total += uint64(k)
				for end := time.Now().Add(10 * time.Second); dev.Counters().RXPackets < total; {
					if time.Now().After(end) {
						b.Fatalf("model wrote %d of %d packets: %+v", dev.Counters().RXPackets, total, dev.Counters())
					}
					time.Sleep(20 * time.Microsecond)
				}
			}
		}
		// Timed: poll → burst → free → repost.
		t0 := time.Now()
		got := 0
		for got < n*queues {
			for _, q := range rq {
				bu, err := q.Poll()
				if err != nil {
					continue
				}
				got += bu.Len()
				bu.Free()
			}
		}
		spent += time.Since(t0)
		done += got
	}
	report(b, spent, done)
	if c := dev.Counters(); c.RXOutOfBuffer != 0 {
		b.Fatalf("the model dropped %d packets for lack of buffers", c.RXOutOfBuffer)
	}
}

// report gives the engine's time per packet and packets per second of one core.
func report(b *testing.B, spent time.Duration, packets int) {
	ns := float64(spent.Nanoseconds()) / float64(packets)
	b.ReportMetric(ns, "ns/pkt")
	b.ReportMetric(1e3/ns, "Mpps")
}

func openBench(b *testing.B, cfg *config.Config, ports []*engine.Port, opts options) *Engine {
	b.Helper()
	e, err := open(b.Context(), &engine.Env{Config: cfg, Ports: ports, Log: discard()}, withModel(opts))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	return e
}

// BenchmarkTX is the engine's transmit path per packet: building eMPW WQEs and ringing the
// doorbell (timed), the model sending (not timed), then reading the completions and freeing
// the bursts (timed).
func BenchmarkTX(b *testing.B) {
	for _, size := range []int{64, 1500} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			c := &config.Config{Version: 1, StreamType: config.StreamRaw, LogLevel: "error", RxMetaBuffers: 64, TxMetaBuffers: 256}
			c.MemoryRegions = []config.MemoryRegion{{Name: "tx", Kind: config.KindHost, Access: config.AccessLocal, NumBufs: 8192, BufSize: 2048}}
			c.Interfaces = []config.Interface{{Name: "tx", Address: "model:0", TX: &config.TxConfig{Queues: []config.Queue{{Name: "t", ID: 0, CPUCore: "0", BatchSize: 64, MemoryRegions: []string{"tx"}}}}}}
			ports := enginetest.Ports(b, c)
			e := openBench(b, c, ports, options{striding: -1, compression: true})
			e.w.Stop() // no completion worker: the benchmark polls
			tq := ports[0].Tx[0]
			t := e.ports[0].txqs[0]
			dev := modelOf(e, 0)
			r := rand.New(rand.NewPCG(3, 4))
			f := udpFrame(r, 0, size-4)
			const round = 64 * 64
			bursts := make([]*engine.Burst, 0, round/64)
			done, total := 0, uint64(0)
			var spent time.Duration
			b.ResetTimer()
			b.StopTimer()
			for done < b.N {
				bursts = bursts[:0]
				for i := 0; i < round; i += 64 {
					bu, err := tq.NewBurst(64)
					if err != nil {
						b.Fatal(err)
					}
					for j := 0; j < 64; j++ {
						copy(bu.SegmentBuffer(0, j), f)
						bu.SetPacketLengths(j, len(f))
					}
					bursts = append(bursts, bu)
				}
				t0 := time.Now()
				for _, bu := range bursts {
					if err := t.send(bu); err != nil {
						b.Fatal(err)
					}
				}
				spent += time.Since(t0)
				total += round
				for end := time.Now().Add(10 * time.Second); dev.Counters().TXPackets < total; {
					if time.Now().After(end) {
						b.Fatalf("model sent %d of %d", dev.Counters().TXPackets, total)
					}
					time.Sleep(20 * time.Microsecond)
				}
				time.Sleep(200 * time.Microsecond) // the last CQE is written after the frame
				t0 = time.Now()
				for tries := 0; tq.Stats.Packets.Load() < total && tries < 1000; tries++ {
					t.complete()
				}
				spent += time.Since(t0)
				if tq.Stats.Packets.Load() != total {
					b.Fatalf("%d of %d completed", tq.Stats.Packets.Load(), total)
				}
				done += round
			}
			report(b, spent, done)
		})
	}
}

// BenchmarkSWLoop moves the same packets through the software loopback engine: a TX burst of
// 64 is sent (handed to RX without a copy), received and freed. ns/op is ns per packet.
func BenchmarkSWLoop(b *testing.B) {
	for _, size := range []int{64, 1500} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			c := &config.Config{Version: 1, StreamType: config.StreamRaw, Loopback: "sw", LogLevel: "error", RxMetaBuffers: 64, TxMetaBuffers: 64}
			c.MemoryRegions = []config.MemoryRegion{{Name: "m", Kind: config.KindHost, Access: config.AccessLocal, NumBufs: 4096, BufSize: 2048}}
			c.Interfaces = []config.Interface{{Name: "lb", Address: "loopback",
				TX: &config.TxConfig{Queues: []config.Queue{{Name: "t", ID: 0, CPUCore: "0", BatchSize: 64, MemoryRegions: []string{"m"}}}},
				RX: &config.RxConfig{Queues: []config.Queue{{Name: "r", ID: 0, CPUCore: "0", BatchSize: 64, MemoryRegions: []string{"m"}}}}}}
			e, ports := enginetest.Open(b, c, swloop.Open)
			tq, rq := ports[0].Tx[0], ports[0].Rx[0]
			r := rand.New(rand.NewPCG(5, 6))
			f := udpFrame(r, 0, size-4)
			b.ResetTimer()
			t0 := time.Now()
			done := 0
			for ; done < b.N; done += 64 {
				bu, err := tq.NewBurst(64)
				if err != nil {
					b.Fatal(err)
				}
				for j := 0; j < 64; j++ {
					copy(bu.SegmentBuffer(0, j), f)
					bu.SetPacketLengths(j, len(f))
				}
				if err := e.Send(bu); err != nil {
					b.Fatal(err)
				}
				rb, ok := rq.Next()
				if !ok {
					b.Fatal("nothing looped back")
				}
				rb.Free()
			}
			report(b, time.Since(t0), done)
		})
	}
}
