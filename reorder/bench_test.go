package reorder

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
)

// Benchmarks (go test -bench . ./reorder); `make bench-reorder` runs the fuller comparison
// with memcpy in bench/reorder/cpu.

func BenchmarkConvert(b *testing.B) {
	src := make([]byte, 8192)
	for i := range src {
		src[i] = byte(i * 7)
	}
	dst := make([]byte, 16*8192)
	for _, in := range inTypes {
		for _, out := range outTypes {
			c, _ := NewConversion(&config.DataTypes{Input: in, Output: out, Endianness: config.EndianNetwork})
			b.Run(fmt.Sprintf("%s-%s", in, out), func(b *testing.B) {
				b.SetBytes(int64(len(src)))
				for b.Loop() {
					c.Convert(dst, src)
				}
			})
		}
	}
}

// BenchmarkConvertRandom16 is int16 → fp16/bf16 (table lookups) on random samples, which
// touch the whole 128 KiB table rather than the part BenchmarkConvert's pattern reaches.
func BenchmarkConvertRandom16(b *testing.B) {
	src := make([]byte, 8192)
	r := newRand()
	for i := range src {
		src[i] = byte(r.Uint32())
	}
	dst := make([]byte, 8192)
	for _, out := range []config.DataType{config.TypeFP16, config.TypeBF16} {
		c, _ := NewConversion(&config.DataTypes{Input: config.TypeInt16, Output: out, Endianness: config.EndianNetwork})
		b.Run(fmt.Sprintf("int16-%s", out), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				c.Convert(dst, src)
			}
		})
	}
}

// BenchmarkPlan measures the CPU plan per packet, engine share (taking buffers, writing the
// sequence number, building bursts) included; the engine cases measure that share alone (a
// queue whose bursts are freed as they arrive), and 64-byte payloads show the plan's fixed
// cost per packet.
func BenchmarkPlan(b *testing.B) {
	for _, size := range []int{64, 1024, 8192} {
		for _, dt := range []*config.DataTypes{nil, {Input: config.TypeInt16, Output: config.TypeFP32, Endianness: config.EndianNetwork}, {}} {
			name := fmt.Sprintf("%d/copy", size)
			if dt != nil {
				name = fmt.Sprintf("%d/%s-%s", size, dt.Input, dt.Output)
			}
			engineOnly := dt != nil && dt.Input == ""
			if engineOnly {
				name, dt = fmt.Sprintf("%d/engine", size), nil
			}
			b.Run(name, func(b *testing.B) {
				const ppb = 1024
				c, _ := NewConversion(dt)
				g := newRig(b, rigSpec{srcBufs: 2 * ppb, srcSize: 64 + size, outBufs: 4, outSize: ppb * c.OutputLen(size), meta: 64, batch: 64})
				rc := &config.Reorder{Name: "b", Type: config.ReorderCPU, PayloadByteOffset: 64, FlowIDs: []int{1}, DataTypes: dt,
					Method: config.ReorderMethod{Kind: config.MethodSeqPacketsPerBatch, Seq: config.BitField{Width: 32}, PacketsPerBatch: ppb}}
				if engineOnly {
					g.q.Intercept = func(b *engine.Burst) { b.Free() }
				} else {
					if _, err := g.svc.Add(g.q, rc, g.out, Options{MaxInFlight: 2}); err != nil {
						b.Fatal(err)
					}
					g.svc.Start()
				}
				perm := newRand().Perm(ppb)
				b.SetBytes(int64(size))
				seq := uint32(0)
				var burst *engine.Burst
				var bufs [64]uint32 // taken per burst, as the socket and AF_XDP engines do
				i, taken := 0, 0
				for b.Loop() {
					if burst == nil {
						burst, _ = g.q.NewBurst()
						taken = min(64, ppb-i)
						if !g.src.GetBulk(bufs[:taken]) {
							b.Fatal("source region exhausted")
						}
					}
					idx := bufs[burst.Len()]
					binary.BigEndian.PutUint32(g.src.Buf(idx), seq+uint32(perm[i]))
					burst.Append(uint64(idx)*uint64(g.src.BufSize), uint32(64+size), 1, 0)
					if burst.Len() == 64 || i == ppb-1 {
						g.q.Deliver(burst)
						burst = nil
					}
					if i++; i == ppb {
						i = 0
						seq += ppb
						for _, a := range g.drain() {
							a.Free()
						}
					}
				}
				if burst != nil {
					for _, idx := range bufs[burst.Len():taken] {
						g.src.Put(idx)
					}
					g.q.Deliver(burst)
				}
				g.svc.Flush()
				for _, a := range g.drain() {
					a.Free()
				}
			})
		}
	}
}
