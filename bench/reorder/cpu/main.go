// Command cpu measures a CPU reorder plan next to memcpy of the same bytes, on this machine,
// in one run. Packets of -sizes payload bytes (after a 64-byte header holding a big-endian
// 32-bit sequence number) are handed to the plan in bursts of 64, in a random order within
// each batch of -batch packets, the way an engine's worker would; the plan copies (or
// converts) each payload into its slot. The reference copies the same payload bytes, from the
// same source buffers in the same order, to the same output slots with Go's copy (memmove).
//
//	bench/reorder/cpu [-sizes 1024,8192] [-batch 1024] [-batches 200] [-repeats 3] [-json file]
//
// Three loops run alternately -repeats times (the best of each counts, which keeps other
// load on a shared machine from favouring either): the plan fed by an engine-like loop; the
// same engine-like loop into a queue whose consumer frees every packet at once (the engine's
// own share: taking buffers in bulk per burst as the socket and AF_XDP engines do, writing
// headers, building and freeing bursts); and memcpy.
// "ratio" is reorder payload bytes per second over memcpy's with the engine's share included;
// "plan ratio" leaves the engine's share out (reorder time = first loop − second loop).
package main

import (
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/hugepage"
	"github.com/daqiri-go/daqiri/reorder"
)

const header = 64

type result struct {
	Conversion  string  `json:"conversion"`
	PacketBytes int     `json:"packet_bytes"`
	Batch       int     `json:"batch"`
	Packets     int     `json:"packets"`
	ReorderGBps float64 `json:"reorder_in_GBps"`
	PlanGBps    float64 `json:"plan_only_GBps"`
	MemcpyGBps  float64 `json:"memcpy_GBps"`
	Ratio       float64 `json:"ratio"`
	PlanRatio   float64 `json:"plan_ratio"`
	NsPerPacket float64 `json:"ns_per_packet"`
	EngineNs    float64 `json:"engine_ns_per_packet"`
}

func main() {
	sizes := flag.String("sizes", "1024,8192", "payload bytes per packet")
	batch := flag.Int("batch", 1024, "packets per batch")
	batches := flag.Int("batches", 100, "batches per measurement")
	repeats := flag.Int("repeats", 5, "measurements per case (best is reported)")
	jsonOut := flag.String("json", "", "also write results as JSON lines to this file")
	convs := flag.String("conversions", "copy,int16-fp32,int8-fp16,int16-bf16,int4-fp16,int32-fp16", "cases: copy or in-out")
	flag.Parse()
	var w *os.File
	if *jsonOut != "" {
		var err error
		if w, err = os.Create(*jsonOut); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer w.Close()
	}
	fmt.Printf("%-14s %6s %6s %12s %12s %12s %7s %10s %8s %8s\n", "conversion", "pkt", "batch", "reorder GB/s", "plan GB/s", "memcpy GB/s", "ratio", "plan ratio", "ns/pkt", "eng ns")
	for _, sz := range strings.Split(*sizes, ",") {
		size, err := strconv.Atoi(sz)
		if err != nil || size <= 0 {
			fmt.Fprintln(os.Stderr, "bad size", sz)
			os.Exit(2)
		}
		for _, cs := range strings.Split(*convs, ",") {
			res, err := measure(cs, size, *batch, *batches, *repeats)
			if err != nil {
				fmt.Fprintln(os.Stderr, "bench/reorder/cpu:", err)
				os.Exit(1)
			}
			fmt.Printf("%-14s %6d %6d %12.2f %12.2f %12.2f %7.3f %10.3f %8.1f %8.1f\n", res.Conversion, size, *batch, res.ReorderGBps, res.PlanGBps, res.MemcpyGBps, res.Ratio, res.PlanRatio, res.NsPerPacket, res.EngineNs)
			if w != nil {
				json.NewEncoder(w).Encode(res)
			}
		}
	}
}

func region(name string, n, size int) (*engine.Region, error) {
	mem, err := hugepage.Map(n*size, false)
	if err != nil {
		return nil, err
	}
	return engine.NewRegion(&config.MemoryRegion{Name: name, Kind: config.KindHost, NumBufs: n, BufSize: size}, mem)
}

func measure(conv string, size, ppb, batches, repeats int) (result, error) {
	res := result{Conversion: conv, PacketBytes: size, Batch: ppb, Packets: ppb * batches}
	var dt *config.DataTypes
	if conv != "copy" {
		in, out, ok := strings.Cut(conv, "-")
		if !ok {
			return res, fmt.Errorf("conversion %q: want copy or in-out", conv)
		}
		dt = &config.DataTypes{Input: config.DataType(in), Output: config.DataType(out), Endianness: config.EndianNetwork}
	}
	c, err := reorder.NewConversion(dt)
	if err != nil {
		return res, err
	}
	outLen := c.OutputLen(size)
	src, err := region("src", 4*ppb, header+size)
	if err != nil {
		return res, err
	}
	defer src.Close()
	out, err := region("out", 4, ppb*max(outLen, size)) // the memcpy reference writes size-byte slots
	if err != nil {
		return res, err
	}
	defer out.Close()
	for i := range src.Bytes() {
		src.Bytes()[i] = byte(i * 7)
	}
	meta, err := engine.NewMetaPool("rx", 64, 64, false)
	if err != nil {
		return res, err
	}
	port := &engine.Port{ID: 0, Name: "bench", Config: &config.Interface{Name: "bench"}}
	q, err := engine.NewRxQueue(port, 0, &config.Queue{Name: "q", BatchSize: 64}, []*engine.Region{src}, meta, 64)
	if err != nil {
		return res, err
	}
	port.Rx = []*engine.RxQueue{q}
	// The engine's share alone: the same loop into a queue whose consumer frees at once.
	bare, err := engine.NewRxQueue(port, 1, &config.Queue{Name: "bare", ID: 1, BatchSize: 64}, []*engine.Region{src}, meta, 64)
	if err != nil {
		return res, err
	}
	bare.Intercept = func(b *engine.Burst) { b.Free() }
	svc := reorder.NewService(nil)
	defer svc.Close()
	rc := &config.Reorder{Name: "bench", Type: config.ReorderCPU, PayloadByteOffset: header, FlowIDs: []int{1}, DataTypes: dt,
		Method: config.ReorderMethod{Kind: config.MethodSeqPacketsPerBatch, Seq: config.BitField{Offset: 0, Width: 32}, PacketsPerBatch: ppb}}
	plan, err := svc.Add(q, rc, out, reorder.Options{MaxInFlight: 2})
	if err != nil {
		return res, err
	}
	svc.Start()

	r := rand.New(rand.NewPCG(1, 2))
	perm := r.Perm(ppb)
	trace := make([]uint32, 0, ppb*batches) // source buffers in the order the plan saw them
	seq := uint32(0)
	var bufs [64]uint32
	reorderRun := func(record bool, q *engine.RxQueue) (time.Duration, error) {
		t0 := time.Now()
		for b := 0; b < batches; b++ {
			base := seq
			for i := 0; i < ppb; {
				burst, err := q.NewBurst()
				if err != nil {
					return 0, err
				}
				// Buffers for the burst in one pool operation, as the socket and AF_XDP
				// engines take them.
				n := min(64, ppb-i)
				if !src.GetBulk(bufs[:n]) {
					return 0, fmt.Errorf("source region exhausted")
				}
				for _, idx := range bufs[:n] {
					if record {
						trace = append(trace, idx)
					}
					// The engine's share of the work: the packet's header.
					binary.BigEndian.PutUint32(src.Buf(idx), base+uint32(perm[i]))
					burst.Append(uint64(idx)*uint64(src.BufSize), uint32(header+size), 1, 0)
					i++
				}
				q.Deliver(burst)
			}
			seq += uint32(ppb)
			for {
				agg, ok := q.Next()
				if !ok {
					break
				}
				agg.Free()
			}
		}
		return time.Since(t0), nil
	}
	memcpyRun := func() time.Duration {
		dst := out.Buf(0)
		t0 := time.Now()
		for b := 0; b < batches; b++ {
			for i := 0; i < ppb; i++ {
				idx := trace[b*ppb+i]
				slot := perm[i]
				copy(dst[slot*size:(slot+1)*size], src.Buf(idx)[header:header+size])
			}
		}
		return time.Since(t0)
	}
	if _, err := reorderRun(true, q); err != nil { // warm-up, and the trace of buffers for memcpy
		return res, err
	}
	memcpyRun()
	tr, te, tm := time.Duration(1<<62), time.Duration(1<<62), time.Duration(1<<62)
	for i := 0; i < repeats; i++ {
		d, err := reorderRun(false, q)
		if err != nil {
			return res, err
		}
		tr = min(tr, d)
		if d, err = reorderRun(false, bare); err != nil {
			return res, err
		}
		te = min(te, d)
		tm = min(tm, memcpyRun())
	}
	if st := plan.Stats(); st.Complete != uint64(batches*(repeats+1)) || st.Duplicates+st.Late+st.Malformed+st.NoBuffers+st.NoMetadata != 0 {
		return res, fmt.Errorf("plan did not deliver every batch complete: %+v", st)
	}
	bytes := float64(ppb * batches * size)
	res.ReorderGBps = bytes / tr.Seconds() / 1e9
	res.MemcpyGBps = bytes / tm.Seconds() / 1e9
	res.Ratio = res.ReorderGBps / res.MemcpyGBps
	if tr > te {
		res.PlanGBps = bytes / (tr - te).Seconds() / 1e9
		res.PlanRatio = res.PlanGBps / res.MemcpyGBps
	}
	res.NsPerPacket = float64(tr.Nanoseconds()) / float64(ppb*batches)
	res.EngineNs = float64(te.Nanoseconds()) / float64(ppb*batches)
	return res, nil
}
