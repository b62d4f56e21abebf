// Command gpu measures the GPU reorder kernels next to a device-to-device copy of the same
// bytes, in the same run on the same GPU: packets of -sizes bytes (payload) sit in device
// memory 64 bytes into buffers of size+64 (as a GPUDirect engine leaves them), a random
// permutation maps them to slots, and one kernel launch assembles a whole batch (reorder and,
// for the conversions, convert) into device memory. The slot table is read either from
// device memory or, as package reorder's plans do, from mapped pinned host memory.
//
//	bench/reorder/gpu [-sizes 1024,8192] [-batches 1024,4096,16384,65536] [-convs int16-fp32,...] [-ptx file] [-json file]
//
// A second table runs whole GPU plans the way a session does: packets in host_pinned memory
// (where the socket or AF_XDP engines put them), the CPU placing each one, the GPU kernel
// reading the payloads over PCIe into device memory; compared with a host-to-device copy of
// the same bytes (-plan-batches 0 skips it).
//
// It prints one line per case: copy GB/s, reorder GB/s of input, and ratios. "ratio" is
// reorder input bytes per second over copy bytes per second; "traffic ratio" compares the
// bytes each moves through memory (input read + output written, against read + write of the
// copy), which is the fair measure when the output is wider than the input.
package main

import (
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/cudart"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/reorder"
)

const headroom = 64 // payload offset in each source buffer

type result struct {
	Kernel        string  `json:"kernel"`
	Table         string  `json:"table"` // device or mapped
	PacketBytes   int     `json:"packet_bytes"`
	Batch         int     `json:"batch"`
	InBytes       int     `json:"in_bytes"`
	OutBytes      int     `json:"out_bytes"`
	Iters         int     `json:"iters"`
	CopyGBps      float64 `json:"copy_GBps"`
	ReorderGBps   float64 `json:"reorder_in_GBps"`
	Ratio         float64 `json:"ratio"`
	TrafficRatio  float64 `json:"traffic_ratio"`
	ReorderMicros float64 `json:"us_per_batch"`
	CopyMicros    float64 `json:"copy_us"`
}

func ints(s string) []int {
	var v []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "bad number %q\n", f)
			os.Exit(2)
		}
		v = append(v, n)
	}
	return v
}

func main() {
	sizes := flag.String("sizes", "1024,8192", "payload bytes per packet")
	batches := flag.String("batches", "1024,4096,16384,65536", "packets per batch")
	ptxFile := flag.String("ptx", "", "PTX file to load instead of the embedded kernels")
	jsonOut := flag.String("json", "", "also write results as JSON lines to this file")
	target := flag.Int("target-mb", 16384, "bytes per measurement, in MB (sets the iteration count)")
	planBatches := flag.Int("plan-batches", 200, "batches per whole-plan measurement (0: skip)")
	convList := flag.String("convs", "int16-fp32,int8-fp16,int16-bf16,int4-fp16,int32-fp16", "conversions to measure besides the copy, input-output (network byte order)")
	kernels := flag.Bool("kernels", true, "measure the kernels against the device copy (false: whole plans only)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole-plan runs to this file")
	flag.Parse()
	if *kernels {
		if err := run(ints(*sizes), ints(*batches), convPairs(*convList), *ptxFile, *jsonOut, *target); err != nil {
			fmt.Fprintln(os.Stderr, "bench/reorder/gpu:", err)
			os.Exit(1)
		}
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench/reorder/gpu:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if *planBatches > 0 {
		if err := runPlans(ints(*sizes), *planBatches, *ptxFile, *jsonOut); err != nil {
			fmt.Fprintln(os.Stderr, "bench/reorder/gpu:", err)
			os.Exit(1)
		}
	}
}

// convPairs parses -convs: comma-separated input-output type pairs, e.g. int4-fp16.
func convPairs(s string) [][2]config.DataType {
	var v [][2]config.DataType
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		in, out, ok := strings.Cut(f, "-")
		if !ok {
			fmt.Fprintf(os.Stderr, "bad conversion %q: want input-output, e.g. int4-fp16\n", f)
			os.Exit(2)
		}
		v = append(v, [2]config.DataType{config.DataType(in), config.DataType(out)})
	}
	return v
}

func run(sizes, batches []int, pairs [][2]config.DataType, ptxFile, jsonOut string, targetMB int) error {
	var ptx []byte
	if ptxFile != "" {
		var err error
		if ptx, err = os.ReadFile(ptxFile); err != nil {
			return err
		}
	}
	d, err := cudart.Open()
	if err != nil {
		return err
	}
	dev, err := d.Device(0)
	if err != nil {
		return err
	}
	defer dev.Close()
	name, _ := dev.Name()
	fmt.Printf("GPU 0: %s, driver CUDA %d.%d\n", name, d.Version()/1000, d.Version()%1000/10)
	ks, err := reorder.LoadKernels(dev, ptx)
	if err != nil {
		return err
	}
	defer ks.Close()
	s, err := dev.NewStream(true)
	if err != nil {
		return err
	}
	defer s.Close()

	type cv struct {
		name string
		c    reorder.Conversion
	}
	var convs []cv
	convs = append(convs, cv{"copy", reorder.Conversion{}})
	for _, p := range pairs {
		c, err := reorder.NewConversion(&config.DataTypes{Input: p[0], Output: p[1], Endianness: config.EndianNetwork})
		if err != nil {
			return err
		}
		convs = append(convs, cv{fmt.Sprintf("%s->%s", p[0], p[1]), c})
	}
	maxSize, maxBatch := 0, 0
	for _, z := range sizes {
		maxSize = max(maxSize, z)
	}
	for _, b := range batches {
		maxBatch = max(maxBatch, b)
	}
	maxOut := 0
	for _, c := range convs {
		maxOut = max(maxOut, c.c.OutputLen(maxSize))
	}
	src, err := dev.AllocDevice(maxBatch * (maxSize + headroom))
	if err != nil {
		return err
	}
	defer src.Close()
	out, err := dev.AllocDevice(maxBatch * maxOut)
	if err != nil {
		return err
	}
	defer out.Close()
	if err := dev.Memset(src.Ptr(), 0x5a, maxBatch*(maxSize+headroom)); err != nil {
		return err
	}
	tableDev, err := dev.AllocDevice(8 * maxBatch)
	if err != nil {
		return err
	}
	defer tableDev.Close()
	tableHost, err := dev.AllocHostPinned(8 * maxBatch)
	if err != nil {
		return err
	}
	defer tableHost.Close()

	var w *os.File
	if jsonOut != "" {
		if w, err = os.OpenFile(jsonOut, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644); err != nil {
			return err
		}
		defer w.Close()
	}
	fmt.Printf("%-16s %-7s %6s %6s %10s %10s %12s %7s %8s\n", "kernel", "table", "pkt", "batch", "copy GB/s", "reord GB/s", "us/batch", "ratio", "traffic")
	r := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	for _, size := range sizes {
		buf := size + headroom
		for _, ppb := range batches {
			perm := r.Perm(ppb)
			tb := tableHost.Bytes()[:8*ppb]
			for k, p := range perm {
				binary.LittleEndian.PutUint64(tb[8*k:], reorder.SlotWord(uint64(p*buf+headroom), size))
			}
			if err := dev.CopyHtoD(tableDev.Ptr(), tb); err != nil {
				return err
			}
			bytes := ppb * size
			iters := max(3, min(2000, targetMB<<20/bytes))
			cp := func(int) error { return dev.CopyDtoDAsync(out.Ptr(), src.Ptr(), bytes, s) }
			if err := cp(0); err != nil {
				return err
			}
			tc, err := s.Time(iters, cp)
			if err != nil {
				return err
			}
			copyGBps := float64(bytes) * float64(iters) / tc.Seconds() / 1e9
			for _, c := range convs {
				k, err := ks.Kernel(c.c)
				if err != nil {
					return err
				}
				outBytes := ppb * c.c.OutputLen(size)
				for _, tk := range []struct {
					name string
					ptr  cudart.DevicePtr
				}{{"device", tableDev.Ptr()}, {"mapped", tableHost.DevicePtr()}} {
					launch := func(int) error { return k.Launch(s, tk.ptr, src.Ptr(), out.Ptr(), ppb, size) }
					if err := launch(0); err != nil {
						return err
					}
					tr, err := s.Time(iters, launch)
					if err != nil {
						return err
					}
					res := result{Kernel: c.name, Table: tk.name, PacketBytes: size, Batch: ppb, InBytes: bytes, OutBytes: outBytes, Iters: iters,
						CopyGBps: copyGBps, ReorderGBps: float64(bytes) * float64(iters) / tr.Seconds() / 1e9,
						ReorderMicros: float64(tr.Microseconds()) / float64(iters), CopyMicros: float64(tc.Microseconds()) / float64(iters)}
					res.Ratio = res.ReorderGBps / copyGBps
					res.TrafficRatio = (float64(bytes+outBytes) / tr.Seconds()) / (2 * float64(bytes) / tc.Seconds())
					fmt.Printf("%-16s %-7s %6d %6d %10.1f %10.1f %12.1f %7.3f %8.3f\n", c.name, tk.name, size, ppb, copyGBps, res.ReorderGBps, res.ReorderMicros, res.Ratio, res.TrafficRatio)
					if w != nil {
						json.NewEncoder(w).Encode(res)
					}
				}
			}
		}
	}
	return nil
}

type planResult struct {
	Kind        string  `json:"kind"` // "plan"
	Conversion  string  `json:"conversion"`
	PacketBytes int     `json:"packet_bytes"`
	Batch       int     `json:"batch"`
	Batches     int     `json:"batches"`
	PlanGBps    float64 `json:"plan_in_GBps"`
	HtoDGBps    float64 `json:"htod_GBps"`
	Ratio       float64 `json:"ratio"`
	Mpps        float64 `json:"mpps"`
}

// runPlans measures whole GPU plans (host_pinned source, device output) fed by an
// engine-like loop, next to host-to-device copies of the same bytes.
func runPlans(sizes []int, batches int, ptxFile, jsonOut string) error {
	var ptx []byte
	if ptxFile != "" {
		var err error
		if ptx, err = os.ReadFile(ptxFile); err != nil {
			return err
		}
	}
	d, err := cudart.Open()
	if err != nil {
		return err
	}
	dev, err := d.Device(0)
	if err != nil {
		return err
	}
	defer dev.Close()
	var w *os.File
	if jsonOut != "" {
		if w, err = os.OpenFile(jsonOut, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err != nil {
			return err
		}
		defer w.Close()
	}
	const ppb, inFlight = 1024, 4
	fmt.Printf("\nwhole GPU plans: host_pinned packets → device aggregates, %d packets per batch, %d batches\n", ppb, batches)
	fmt.Printf("%-14s %6s %12s %12s %7s %8s\n", "conversion", "pkt", "plan GB/s", "HtoD GB/s", "ratio", "Mpkt/s")
	for _, size := range sizes {
		for _, conv := range []string{"copy", "int16-fp32"} {
			var dt *config.DataTypes
			if conv != "copy" {
				dt = &config.DataTypes{Input: config.TypeInt16, Output: config.TypeFP32, Endianness: config.EndianNetwork}
			}
			c, err := reorder.NewConversion(dt)
			if err != nil {
				return err
			}
			res, err := planOnce(d, dev, ptx, size, ppb, inFlight, batches, dt, c)
			if err != nil {
				return err
			}
			res.Conversion = conv
			fmt.Printf("%-14s %6d %12.2f %12.2f %7.3f %8.2f\n", conv, size, res.PlanGBps, res.HtoDGBps, res.Ratio, res.Mpps)
			if w != nil {
				json.NewEncoder(w).Encode(res)
			}
		}
	}
	return nil
}

func planOnce(d *cudart.Driver, dev *cudart.Device, ptx []byte, size, ppb, inFlight, batches int, dt *config.DataTypes, c reorder.Conversion) (planResult, error) {
	res := planResult{Kind: "plan", PacketBytes: size, Batch: ppb, Batches: batches}
	bufSize := size + headroom
	nbufs := (2*inFlight + 2) * ppb
	pin, err := d.AllocHostPinned(0, nbufs*bufSize)
	if err != nil {
		return res, err
	}
	src, err := engine.NewRegion(&config.MemoryRegion{Name: "src", Kind: config.KindHostPinned, NumBufs: nbufs, BufSize: bufSize}, pin)
	if err != nil {
		return res, err
	}
	defer src.Close()
	outLen := ppb * c.OutputLen(size)
	om, err := d.AllocDevice(0, (inFlight+4)*outLen)
	if err != nil {
		return res, err
	}
	out, err := engine.NewRegion(&config.MemoryRegion{Name: "out", Kind: config.KindDevice, NumBufs: inFlight + 4, BufSize: outLen}, om)
	if err != nil {
		return res, err
	}
	defer out.Close()
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
	svc := reorder.NewService(nil)
	defer func() {
		svc.Close()
		q.Drain()
	}()
	rc := &config.Reorder{Name: "bench", Type: config.ReorderGPU, PayloadByteOffset: headroom, FlowIDs: []int{1}, DataTypes: dt,
		Method: config.ReorderMethod{Kind: config.MethodSeqPacketsPerBatch, Seq: config.BitField{Offset: 0, Width: 32}, PacketsPerBatch: ppb}}
	plan, err := svc.Add(q, rc, out, reorder.Options{MaxInFlight: inFlight, Kernels: ptx})
	if err != nil {
		return res, err
	}
	svc.Start()
	perm := rand.New(rand.NewPCG(1, 2)).Perm(ppb)
	idxs := make([]uint32, 64)
	got := 0
	take := func(block bool) {
		for i := 0; i < 100000; i++ {
			b, ok := q.Next()
			if ok {
				b.Free()
				got++
				continue
			}
			if !block {
				return
			}
			time.Sleep(20 * time.Microsecond)
		}
	}
	t0 := time.Now()
	deadline := t0.Add(60 * time.Second)
	for b := 0; b < batches; b++ {
		base := uint32(b * ppb)
		for i := 0; i < ppb; {
			if time.Now().After(deadline) {
				return res, fmt.Errorf("whole plan: stuck at batch %d packet %d; stats %+v", b, i, plan.Stats())
			}
			burst, err := q.NewBurst()
			if err != nil {
				take(false)
				continue
			}
			// The burst's buffers in one pool operation, as the socket and AF_XDP engines take
			// them; fewer when the GPU still holds packets: hand over what we have, then wait.
			k := src.GetBurst(idxs[:min(len(idxs), ppb-i)])
			if k == 0 {
				burst.Free()
				take(false)
				continue
			}
			for _, idx := range idxs[:k] {
				binary.BigEndian.PutUint32(src.Buf(idx), base+uint32(perm[i]))
				burst.Append(uint64(idx)*uint64(src.BufSize), uint32(bufSize), 1, 0)
				i++
			}
			q.Deliver(burst)
			take(false)
		}
		// Keep at most inFlight batches queued on the GPU, as a receiver pacing itself would;
		// past that the plan drops packets for want of slot tables (counted no_packet_buffers).
		// Polling, as an engine worker does: a sleep would cost tens of microseconds a batch.
		for got < b-inFlight+1 && time.Now().Before(deadline) {
			take(false)
			runtime.Gosched()
		}
	}
	for i := 0; i < 100000 && got < batches; i++ {
		take(false)
		time.Sleep(20 * time.Microsecond)
	}
	el := time.Since(t0)
	if st := plan.Stats(); got != batches || st.Complete != uint64(batches) {
		return res, fmt.Errorf("whole plan: %d of %d aggregates; stats %+v", got, batches, st)
	}
	cr, err := dev.MeasureCopy(cudart.HostToDevice, ppb*size, 50)
	if err != nil {
		return res, err
	}
	bytes := float64(batches * ppb * size)
	res.PlanGBps = bytes / el.Seconds() / 1e9
	res.HtoDGBps = cr.GBps()
	res.Ratio = res.PlanGBps / res.HtoDGBps
	res.Mpps = float64(batches*ppb) / el.Seconds() / 1e6
	return res, nil
}
