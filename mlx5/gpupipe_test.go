package mlx5

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/cudart"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/internal/testutil/enginetest"
	"github.com/daqiri-go/daqiri/internal/testutil/regiontest"
	"github.com/daqiri-go/daqiri/reorder"
)

// BenchmarkGPUPipeline is the mlx5 → GPU pipeline with the model's cost excluded (issue 27):
// as BenchmarkRX, the model first fills a striding RQ over a host_pinned region with a round
// of packets (outside the timer); the timed loop is the engine's poll, the reorder service's
// intercept (what the engine's worker calls for a queue with plans: the GPU plan places each
// packet in its batch's slot table and launches one kernel per batch of 1024), and taking
// every aggregate the plan delivers once its kernel has written it into device memory. ns/pkt
// and Mpps are the whole round's (the drain of the round's last kernel included); feed-Mpps is
// up to the round's last packet handed to the plan (its last launch), which is what a stream
// that never pauses sees.
func BenchmarkGPUPipeline(b *testing.B) {
	dev := gpuDMABuf(b)
	for _, conv := range []string{"copy", "int16-fp32"} {
		for _, size := range []int{1024, 8192} {
			b.Run(fmt.Sprintf("conv=%s/size=%d", conv, size), func(b *testing.B) {
				var dt *config.DataTypes
				if conv != "copy" {
					dt = &config.DataTypes{Input: config.TypeInt16, Output: config.TypeFP32, Endianness: config.EndianNetwork}
				}
				benchPipeline(b, dev, size, dt)
			})
		}
	}
}

// BenchmarkPipelineCPU is BenchmarkGPUPipeline with a cpu plan over host memory (no GPU):
// the same loop, the plan copying or converting each payload with the CPU as it arrives.
func BenchmarkPipelineCPU(b *testing.B) {
	for _, conv := range []string{"copy", "int16-fp32"} {
		for _, size := range []int{1024, 8192} {
			b.Run(fmt.Sprintf("conv=%s/size=%d", conv, size), func(b *testing.B) {
				var dt *config.DataTypes
				if conv != "copy" {
					dt = &config.DataTypes{Input: config.TypeInt16, Output: config.TypeFP32, Endianness: config.EndianNetwork}
				}
				benchPipeline(b, nil, size, dt)
			})
		}
	}
}

// benchPipeline runs the pipeline with a gpu plan on dev (host_pinned packets, device
// aggregates), or with a cpu plan over host memory when dev is nil.
func benchPipeline(b *testing.B, dev *cudart.Device, size int, dt *config.DataTypes) {
	const ppb, inFlight = 1024, 4
	// udpFrame puts a 32-bit sequence number at byte 42 (the UDP payload's first word); the
	// samples follow it.
	const seqAt, payloadAt = 42, 46
	buf := 2048
	if size > 2048 {
		buf = 8192
	}
	kind, typ, outKind := config.KindHostPinned, config.ReorderGPU, config.KindDevice
	if dev == nil {
		kind, typ, outKind = config.KindHost, config.ReorderCPU, config.KindHost
	}
	cfg := benchRxConfigKind(1, kind, buf)
	var ports []*engine.Port
	if dev != nil {
		ports = enginetest.PortsMem(b, cfg, gpuAlloc(b, dev))
	} else {
		ports = enginetest.Ports(b, cfg)
	}
	e := openBench(b, cfg, ports, options{striding: -1, compression: true})
	md := modelOf(e, 0)
	q := ports[0].Rx[0]

	conv, err := reorder.NewConversion(dt)
	if err != nil {
		b.Fatal(err)
	}
	outLen := ppb * conv.OutputLen(conv.InputBytes(buf-payloadAt))
	const outBufs = 2*inFlight + 4
	orc := &config.MemoryRegion{Name: "out", Kind: outKind, NumBufs: outBufs, BufSize: outLen}
	var out *engine.Region
	if dev != nil {
		om, err := dev.AllocDevice(outBufs * outLen)
		if err != nil {
			b.Fatal(err)
		}
		out = regiontest.With(b, orc, om)
	} else {
		out = regiontest.New(b, orc)
	}
	svc := reorder.NewService(discard())
	rc := &config.Reorder{Name: "pipe", Type: typ, MemoryRegion: "out", PayloadByteOffset: payloadAt, DataTypes: dt,
		Method: config.ReorderMethod{Kind: config.MethodSeqPacketsPerBatch, Seq: config.BitField{Offset: seqAt * 8, Width: 32}, PacketsPerBatch: ppb}}
	plan, err := svc.Add(q, rc, out, reorder.Options{MaxInFlight: inFlight})
	if err != nil {
		b.Fatal(err)
	}
	svc.Start()
	b.Cleanup(func() {
		if err := svc.Close(); err != nil {
			b.Error(err)
		}
		q.Drain()
	})
	if q.Intercept == nil {
		b.Fatal("the reorder service set no Intercept on the queue")
	}

	frame := udpFrame(rand.New(rand.NewPCG(27, 2)), 0, size-4) // the model adds no FCS
	seq := uint32(0)
	done, total, batches := 0, uint64(0), 0
	var spent, feeding time.Duration
	b.ResetTimer()
	b.StopTimer()
	for done < b.N {
		// A round of benchRound packets: whole batches, every batch complete.
		for i := 0; i < benchRound; i += 256 {
			for j := 0; j < 256; j++ {
				binary.BigEndian.PutUint32(frame[seqAt:], seq)
				seq++
				md.Receive(frame)
			}
			total += 256
			for end := time.Now().Add(10 * time.Second); md.Counters().RXPackets < total; {
				if time.Now().After(end) {
					b.Fatalf("model wrote %d of %d packets: %+v", md.Counters().RXPackets, total, md.Counters())
				}
				time.Sleep(20 * time.Microsecond)
			}
		}
		want := benchRound / ppb
		fed, aggs := 0, 0
		t0 := time.Now()
		var tFed time.Time
		deadline := t0.Add(10 * time.Second)
		for polls := 0; aggs < want; polls++ {
			if polls&1023 == 1023 && time.Now().After(deadline) {
				b.Fatalf("round: %d of %d packets fed, %d of %d aggregates; plan %+v; queue drops %v", fed, benchRound, aggs, want, plan.Stats(), q.Stats.Snapshot())
			}
			bu, err := q.Poll()
			if err != nil {
				continue
			}
			if ri, err := bu.ReorderInfo(); err == nil {
				if ri.SourcePackets != ppb || ri.Missing != 0 {
					b.Fatalf("aggregate of batch %d: %d packets, %d missing", ri.BatchID, ri.SourcePackets, ri.Missing)
				}
				aggs++
				bu.Free()
				continue
			}
			fed += bu.Len()
			q.Intercept(bu) // as the engine's worker does for a queue with plans
			if fed == benchRound {
				tFed = time.Now()
			}
		}
		el := time.Since(t0)
		spent += el
		feeding += tFed.Sub(t0)
		done += benchRound
		batches += want
		// Untimed: let the engine repost the buffers the last kernels gave back.
		for i := 0; i < 8; i++ {
			if bu, err := q.Poll(); err == nil {
				b.Fatalf("unexpected burst of %d packets after the round", bu.Len())
			}
		}
	}
	report(b, spent, done)
	b.ReportMetric(float64(done)/feeding.Seconds()/1e6, "feed-Mpps")
	b.ReportMetric(float64(done)*float64(size)/spent.Seconds()/1e9, "GB/s")
	if st := plan.Stats(); st.Complete != uint64(batches) || st.Incomplete != 0 {
		b.Fatalf("plan: %+v, want %d complete batches", st, batches)
	}
	if c := md.Counters(); c.RXOutOfBuffer != 0 {
		b.Fatalf("the model dropped %d packets for lack of buffers", c.RXOutOfBuffer)
	}
}

// BenchmarkRXTouch is BenchmarkRX's loop (one queue, host memory, 1 KiB and 8 KiB frames) with
// the CPU reading each packet's 32-bit sequence number before the free, as a reorder plan
// does first; touch=false is the plain loop in the same run. The difference is what the
// first read of packets the model wrote (from another core, before the timer) costs.
func BenchmarkRXTouch(b *testing.B) {
	for _, size := range []int{1024, 8192} {
		for _, touch := range []bool{false, true} {
			b.Run(fmt.Sprintf("size=%d/touch=%v", size, touch), func(b *testing.B) {
				buf := 2048
				if size > 2048 {
					buf = 8192
				}
				cfg := benchRxConfigKind(1, config.KindHost, buf)
				ports := enginetest.Ports(b, cfg)
				e := openBench(b, cfg, ports, options{striding: -1, compression: true})
				md := modelOf(e, 0)
				q := ports[0].Rx[0]
				frame := udpFrame(rand.New(rand.NewPCG(27, 3)), 0, size-4)
				done, total, sum := 0, uint64(0), uint32(0)
				var spent time.Duration
				b.ResetTimer()
				b.StopTimer()
				for done < b.N {
					for i := 0; i < benchRound; i += 256 {
						for j := 0; j < 256; j++ {
							binary.BigEndian.PutUint32(frame[42:], uint32(total)+uint32(j))
							md.Receive(frame)
						}
						total += 256
						for end := time.Now().Add(10 * time.Second); md.Counters().RXPackets < total; {
							if time.Now().After(end) {
								b.Fatalf("model wrote %d of %d packets", md.Counters().RXPackets, total)
							}
							time.Sleep(20 * time.Microsecond)
						}
					}
					t0 := time.Now()
					got := 0
					for polls := 0; got < benchRound; polls++ {
						if polls > 1<<24 {
							b.Fatalf("%d of %d packets polled", got, benchRound)
						}
						bu, err := q.Poll()
						if err != nil {
							continue
						}
						if touch {
							for i := 0; i < bu.Len(); i++ {
								sum += binary.BigEndian.Uint32(bu.Packet(i)[42:])
							}
						}
						got += bu.Len()
						bu.Free()
					}
					spent += time.Since(t0)
					done += got
				}
				report(b, spent, done)
				if touch && sum == 0 && done > 1 {
					b.Fatal("read no sequence numbers")
				}
			})
		}
	}
}
