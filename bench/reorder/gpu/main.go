// Command gpu measures the GPU reorder kernels next to a device-to-device copy of the same
// bytes and, where given, next to upstream's kernel on the same inputs, in the same run on the
// same GPU: packets of -sizes bytes of payload sit in device memory 64 bytes into buffers of
// size+64 (as a GPUDirect engine leaves them), each with its 32-bit big-endian sequence number
// at byte 0; a random permutation maps them to slots, and one kernel launch assembles a whole
// batch (reorder and, for the conversions, convert network-order samples) into device memory.
//
//	bench/reorder/gpu [-sizes 1024,8192] [-batches 1024,4096,16384,65536] [-convs int16-fp32,...]
//	                  [-ptx file] [-upstream .carry/upstream/kernels.ptx] [-timing queued|launch] [-json file]
//	bench/reorder/gpu -variants variants.ptx -variants-base previous.ptx [-ptx file]   (variants.go)
//
// Our kernel reads its slot table from device memory ("dev") or from mapped pinned host
// memory ("map", a PCIe round trip per block, which plans used to do); "plan" is what a
// reorder plan does at that batch size: up to reorder.ParamSlots packets the table travels in
// the launch's parameters ("p"), beyond that it is copied from pinned memory to the device on
// a second stream that the kernel's stream waits for ("s"; the copies overlap earlier
// kernels, as in a plan that keeps the GPU busy). Upstream's kernel (packet_reorder_copy_payload_by_sequence_kernel,
// built from NVIDIA/daqiri's src/kernels.cu by bench/reorder/upstream.sh, which records the
// commit in ORIGIN beside the PTX) reads the same packets through a device array of their
// pointers and takes each sequence number from the packet, one block of 128 threads per
// packet, as upstream launches it; its H2D copy of that array and D2H copy of the batch
// number, which upstream's plan adds per batch, are not counted. At the smallest batch the
// two aggregates are compared byte for byte ("differ": bytes that differ).
//
// Timing: -timing queued (the default) holds each wave of launches behind a gate kernel until
// the whole wave is queued, so the events around it time the GPU alone; -timing launch times
// launches issued back to back by the CPU, where each launch's host-side cost (the same for
// every kernel: one cuLaunchKernel through package cudart) shows wherever it exceeds the
// kernel's GPU time.
//
// It prints one line per case: microseconds per batch of the copy, of a memset of the output
// bytes ("fill": merely writing the aggregate, the floor for widening conversions) and of
// each kernel, upstream's time over ours ("vs up", > 1 where ours is faster) and the traffic
// ratio: bytes moved through memory per second (input read + output written) over the copy's
// (read + write), the fair measure when the output is wider than the input.
//
// A second table runs whole GPU plans the way a session does: packets in host_pinned memory
// (where the socket or AF_XDP engines put them), the CPU placing each one, the GPU kernel
// reading the payloads over PCIe into device memory; compared with a host-to-device copy of
// the same bytes (-plan-batches 0 skips it). -plan-ppb sets its packets per batch,
// -plan-feeders runs several plans at once (each fed by its own goroutine, as engine workers
// of several queues), -plan-kernels null runs them with kernels that return at once (the
// feeding side's own rate), and each row says where the feeding thread's time went. -bound
// (bound.go) first times a batch's kernel reading host_pinned packets against the HtoD copy of
// the same bytes, and the CPU cost of one launch.
package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
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
	Kernel      string  `json:"kernel"`
	PacketBytes int     `json:"packet_bytes"`
	Batch       int     `json:"batch"`
	InBytes     int     `json:"in_bytes"`
	OutBytes    int     `json:"out_bytes"`
	Iters       int     `json:"iters"`
	Timing      string  `json:"timing"` // queued (GPU time only) or launch (back to back from the CPU)
	CopyMicros  float64 `json:"copy_us"`
	// A cuMemsetD8 of the aggregate's bytes: how long merely writing the output takes (the
	// floor for a conversion whose output is much wider than its input).
	FillMicros   float64 `json:"fill_us"`
	DevMicros    float64 `json:"us_device_table"`
	MappedMicros float64 `json:"us_mapped_table"`
	ParamMicros  float64 `json:"us_param_table,omitempty"` // table in the launch's parameters (batches ≤ reorder.ParamSlots)
	// How reorder plans pass the table at this batch size (param, or staged: copied to the
	// device on a second stream) and that time.
	PlanTable  string  `json:"plan_table"`
	PlanMicros float64 `json:"us_plan"`
	// Bytes moved through memory per second (input read + output written) over the copy's
	// (read + write of the same input bytes).
	DevTraffic  float64 `json:"traffic_device_table"`
	PlanTraffic float64 `json:"traffic_plan"`
	// Upstream's kernel on the same packets (0 when not run) and its time over ours.
	UpstreamMicros float64 `json:"us_upstream,omitempty"`
	VsUpstreamDev  float64 `json:"vs_upstream_device_table,omitempty"`
	VsUpstreamPlan float64 `json:"vs_upstream_plan,omitempty"`
	// Output bytes where upstream's aggregate differs from ours (checked at the smallest batch).
	Differ *int `json:"bytes_differ,omitempty"`
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
	upstream := flag.String("upstream", "", "PTX of upstream's kernels (bench/reorder/upstream.sh builds it, with ORIGIN beside it) to run on the same inputs")
	timing := flag.String("timing", "queued", "queued: GPU time of launches queued ahead; launch: launched back to back from the CPU")
	variants := flag.String("variants", "", "PTX of reorder.cu built with -DREORDER_VARIANTS: time the widening-kernel variants against -variants-base and -ptx, then exit")
	variantsBase := flag.String("variants-base", "", "PTX holding the previous kernels (variant 0), for -variants")
	planPPB := flag.String("plan-ppb", "1024", "packets per batch of the whole-plan runs (and -bound)")
	planFeeders := flag.String("plan-feeders", "1", "plans fed at once, each by its own goroutine on its own queue (whole-plan runs)")
	planKernels := flag.String("plan-kernels", "real", "kernels of the whole-plan runs: real, null (kernels that return at once: the feeding side alone), or both as real,null")
	bound := flag.Bool("bound", false, "measure a batch's kernel from host_pinned memory against the HtoD copy, and the CPU cost of a launch, per size and -plan-ppb (bound.go), before the plans")
	distinct := flag.Int("distinct", 0, "K > 0: time copy, memset and our kernels on one batch repeated, on K distinct batches in turn, and (with -l2-persist-mb) with the input in a persisting L2 window, then exit (distinct.go)")
	persistMB := flag.Int("l2-persist-mb", 0, "with -distinct: L2 set-aside for the persisting input window, MiB (0: skip that column)")
	flag.Parse()
	if *distinct > 0 {
		var ptx []byte
		if *ptxFile != "" {
			b, err := os.ReadFile(*ptxFile)
			if err != nil {
				fmt.Fprintln(os.Stderr, "bench/reorder/gpu:", err)
				os.Exit(1)
			}
			ptx = b
		}
		if err := runDistinct(*ptxFile, ptx, ints(*sizes), ints(*batches), convPairs(*convList), *distinct, *persistMB, *target); err != nil {
			fmt.Fprintln(os.Stderr, "bench/reorder/gpu:", err)
			os.Exit(1)
		}
		return
	}
	if *variants != "" {
		if err := runVariants(*variants, *variantsBase, *ptxFile, ints(*sizes), ints(*batches), *target); err != nil {
			fmt.Fprintln(os.Stderr, "bench/reorder/gpu:", err)
			os.Exit(1)
		}
		return
	}
	if *timing != "queued" && *timing != "launch" {
		fmt.Fprintf(os.Stderr, "bad -timing %q: want queued or launch\n", *timing)
		os.Exit(2)
	}
	if *kernels {
		if err := run(ints(*sizes), ints(*batches), convPairs(*convList), *ptxFile, *upstream, *jsonOut, *target, *timing == "queued"); err != nil {
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
	if *bound {
		if err := runBound(ints(*sizes), ints(*planPPB)); err != nil {
			fmt.Fprintln(os.Stderr, "bench/reorder/gpu:", err)
			os.Exit(1)
		}
	}
	if *planBatches > 0 {
		kinds := strings.Split(*planKernels, ",")
		for _, k := range kinds {
			if k != "real" && k != "null" {
				fmt.Fprintf(os.Stderr, "bad -plan-kernels %q: want real, null or real,null\n", *planKernels)
				os.Exit(2)
			}
		}
		if err := runPlans(ints(*sizes), *planBatches, *ptxFile, *jsonOut, ints(*planPPB), ints(*planFeeders), kinds); err != nil {
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

// conversions builds the conversion of each (input, output) pair, network byte order.
func conversions(pairs [][2]config.DataType) ([]reorder.Conversion, error) {
	var cs []reorder.Conversion
	for _, p := range pairs {
		c, err := reorder.NewConversion(&config.DataTypes{Input: p[0], Output: p[1], Endianness: config.EndianNetwork})
		if err != nil {
			return nil, err
		}
		cs = append(cs, c)
	}
	return cs, nil
}

func run(sizes, batches []int, pairs [][2]config.DataType, ptxFile, upstreamFile, jsonOut string, targetMB int, queued bool) error {
	var ptx []byte
	if ptxFile != "" {
		var err error
		if ptx, err = os.ReadFile(ptxFile); err != nil {
			return err
		}
	}
	d, dev, err := openGPU0()
	if err != nil {
		return err
	}
	defer dev.Close()
	name, _ := dev.Name()
	fmt.Printf("GPU 0: %s, driver CUDA %d.%d\n", name, d.Version()/1000, d.Version()%1000/10)
	rg, err := newRig(dev, ptx, queued)
	if err != nil {
		return err
	}
	defer rg.close()
	ks, s, tm := rg.ks, rg.s, rg.tm
	var up *upstreamKernel
	if upstreamFile != "" {
		if up, err = loadUpstream(dev, upstreamFile); err != nil {
			return err
		}
		defer up.mod.Close()
		fmt.Printf("upstream kernel: %s from %s (%s)\n", upstreamEntry, upstreamFile, up.origin)
	} else {
		fmt.Println("upstream kernel: not given (-upstream; bench/reorder/upstream.sh builds it): ours against the device copy only")
	}
	timing := "launch"
	if queued {
		timing = "queued"
	}

	type cv struct {
		name string
		c    reorder.Conversion
	}
	var convs []cv
	convs = append(convs, cv{"copy", reorder.Conversion{}})
	cs, err := conversions(pairs)
	if err != nil {
		return err
	}
	for i, p := range pairs {
		convs = append(convs, cv{fmt.Sprintf("%s->%s", p[0], p[1]), cs[i]})
	}
	maxSize, maxBatch, minBatch := 0, 0, batches[0]
	for _, z := range sizes {
		maxSize = max(maxSize, z)
	}
	for _, b := range batches {
		maxBatch = max(maxBatch, b)
		minBatch = min(minBatch, b)
	}
	maxOut := 0
	for _, c := range convs {
		maxOut = max(maxOut, c.c.OutputLen(maxSize))
	}
	srcLen := maxBatch * (maxSize + headroom)
	// Upstream's inputs (ptrs): a device array of packet pointers, in arrival order, and the
	// word its kernel writes the batch number to. tableStage: where plans stage larger slot
	// tables by a copy on a second stream.
	mems, free, err := allocAll(dev, srcLen, maxBatch*maxOut, 8*maxBatch, 8*maxBatch+8, 8*maxBatch)
	if err != nil {
		return err
	}
	defer free()
	src, out, tableDev, ptrs, tableStage := mems[0], mems[1], mems[2], mems[3], mems[4]
	batchID := ptrs.Ptr() + cudart.DevicePtr(8*maxBatch)
	tableHost, err := dev.AllocHostPinned(8 * maxBatch)
	if err != nil {
		return err
	}
	defer tableHost.Close()
	s2, err := dev.NewStream(true)
	if err != nil {
		return err
	}
	defer s2.Close()
	staged, err := dev.NewEvent(false, false)
	if err != nil {
		return err
	}
	defer staged.Close()

	var w *os.File
	if jsonOut != "" {
		if w, err = os.OpenFile(jsonOut, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644); err != nil {
			return err
		}
		defer w.Close()
	}
	fmt.Printf("timing: %s; us = microseconds per batch; vs upstream = upstream's time / ours; traffic = (input read + output written) per second / the copy's (read + write)\n", timingDoc(queued))
	fmt.Printf("%-14s %5s %6s %8s %8s %8s %8s %11s %8s %8s %8s %8s %8s %7s\n", "kernel", "pkt", "batch", "D2D us", "fill us", "dev us", "map us", "plan us",
		"upstr us", "vs up d", "vs up p", "traf dev", "traf pl", "differ")
	r := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	img := make([]byte, srcLen)
	paramTable := make([]byte, 8*reorder.ParamSlots)
	var minVs, minWide = 1e9, 1e9
	for _, size := range sizes {
		buf := size + headroom
		// Random samples, so that conversions see every kind of value.
		for i := 0; i+8 <= len(img); i += 8 {
			binary.LittleEndian.PutUint64(img[i:], r.Uint64())
		}
		for _, ppb := range batches {
			// Packets arrive in index order; packet perm[k] carries sequence number k
			// (big-endian, at byte 0), so it belongs in slot k: our slot table says so, and
			// upstream's kernel reads it from the packet.
			perm := r.Perm(ppb)
			tb := tableHost.Bytes()[:8*ppb]
			clear(paramTable)
			for k, p := range perm {
				binary.BigEndian.PutUint32(img[p*buf:], uint32(k))
				binary.LittleEndian.PutUint64(tb[8*k:], reorder.SlotWord(uint64(p*buf+headroom), size))
			}
			copy(paramTable, tb)
			pb := make([]byte, 8*ppb)
			for i := range ppb {
				binary.LittleEndian.PutUint64(pb[8*i:], uint64(src.Ptr())+uint64(i*buf))
			}
			err := errors.Join(dev.CopyHtoD(src.Ptr(), img[:ppb*buf]), dev.CopyHtoD(tableDev.Ptr(), tb), dev.CopyHtoD(ptrs.Ptr(), pb))
			if err != nil {
				return err
			}
			bytes := ppb * size
			iters := max(3, min(2000, targetMB<<20/bytes))
			cp := func(int) error { return dev.CopyDtoDAsync(out.Ptr(), src.Ptr(), bytes, s) }
			tc, err := tm.timeWarm(iters, cp)
			if err != nil {
				return err
			}
			for _, c := range convs {
				k, err := ks.Kernel(c.c)
				if err != nil {
					return err
				}
				outLen := c.c.OutputLen(size)
				outBytes := ppb * outLen
				res := result{Kernel: c.name, PacketBytes: size, Batch: ppb, InBytes: bytes, OutBytes: outBytes, Iters: iters, Timing: timing,
					CopyMicros: micros(tc, iters)}
				fill := func(int) error { return dev.MemsetAsync(out.Ptr(), 0, outBytes, s) }
				tf, err := tm.timeWarm(iters, fill)
				if err != nil {
					return err
				}
				res.FillMicros = micros(tf, iters)
				traffic := func(t time.Duration) float64 {
					return (float64(bytes+outBytes) / t.Seconds()) / (2 * float64(bytes) / tc.Seconds())
				}
				launches := []func(int) error{
					func(int) error { return k.Launch(s, tableDev.Ptr(), src.Ptr(), out.Ptr(), ppb, size) },
					func(int) error { return k.Launch(s, tableHost.DevicePtr(), src.Ptr(), out.Ptr(), ppb, size) },
				}
				// Plans stage larger tables in device memory by a copy on a second stream, which
				// the kernel's stream waits for.
				res.PlanTable = "staged"
				launches = append(launches, stagedLaunch(dev, k, s, s2, staged, tableStage, tb, src.Ptr(), out.Ptr(), ppb, size))
				if ppb <= reorder.ParamSlots && k.ParamTable() {
					res.PlanTable = "param"
					launches[2] = func(int) error { return k.LaunchParams(s, paramTable, src.Ptr(), out.Ptr(), ppb, size) }
				}
				var ours []time.Duration
				for _, launch := range launches {
					t, err := tm.timeWarm(iters, launch)
					if err != nil {
						return err
					}
					ours = append(ours, t)
				}
				res.DevMicros, res.MappedMicros = micros(ours[0], iters), micros(ours[1], iters)
				plan := ours[2]
				if res.PlanTable == "param" {
					res.ParamMicros = micros(plan, iters)
				}
				res.PlanMicros = micros(plan, iters)
				res.DevTraffic, res.PlanTraffic = traffic(ours[0]), traffic(plan)
				if c.c.In != "" && c.c.OutputLen(size) > size && size == 1024 && ppb == 16384 {
					minWide = min(minWide, res.DevTraffic, res.PlanTraffic)
				}
				diff := "-"
				if up != nil {
					ua := upstreamArgs{out: out.Ptr(), ptrs: ptrs.Ptr(), batchID: batchID, inLen: uint32(size), outLen: uint32(outLen), num: uint32(ppb),
						payloadOff: headroom, inType: upstreamType(c.c.In), outType: upstreamType(c.c.Out), stream: s}
					if ppb == minBatch {
						n, err := compare(dev, s, out.Ptr(), outBytes, func() error { return k.Launch(s, tableDev.Ptr(), src.Ptr(), out.Ptr(), ppb, size) },
							func() error { return up.launch(ua) })
						if err != nil {
							return err
						}
						res.Differ = &n
						diff = strconv.Itoa(n)
					}
					launch := func(int) error { return up.launch(ua) }
					tu, err := tm.timeWarm(iters, launch)
					if err != nil {
						return err
					}
					res.UpstreamMicros = micros(tu, iters)
					res.VsUpstreamDev, res.VsUpstreamPlan = tu.Seconds()/ours[0].Seconds(), tu.Seconds()/plan.Seconds()
					minVs = min(minVs, res.VsUpstreamDev, res.VsUpstreamPlan)
				}
				fmt.Printf("%-14s %5d %6d %8.1f %8.1f %8.1f %8.1f %11s %8s %8s %8s %8.3f %8.3f %7s\n", c.name, size, ppb, res.CopyMicros, res.FillMicros, res.DevMicros, res.MappedMicros,
					fmt.Sprintf("%.1f %s", res.PlanMicros, res.PlanTable[:1]), opt(res.UpstreamMicros, "%.1f"), opt(res.VsUpstreamDev, "%.2f"), opt(res.VsUpstreamPlan, "%.2f"),
					res.DevTraffic, res.PlanTraffic, diff)
				if w != nil {
					json.NewEncoder(w).Encode(res)
				}
			}
		}
	}
	if up != nil {
		fmt.Printf("slowest cell against upstream: %.2fx (ours faster where > 1)\n", minVs)
	}
	if minWide < 1e9 {
		fmt.Printf("widening conversions at 1024 B x 16384, lowest traffic ratio to the copy: %.3f\n", minWide)
	}
	return nil
}

func timingDoc(queued bool) string {
	if queued {
		return "queued (waves of launches held behind a gate kernel until all are queued: GPU time only)"
	}
	return "launch (back to back from the CPU: host launch cost shows where it exceeds the GPU's)"
}

func micros(t time.Duration, iters int) float64 { return t.Seconds() * 1e6 / float64(iters) }

// opt formats v, or "-" for 0 (not measured).
func opt(v float64, f string) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf(f, v)
}

// compare runs ours and then theirs into out and counts the bytes of the n-byte aggregates
// that differ.
func compare(dev *cudart.Device, s *cudart.Stream, out cudart.DevicePtr, n int, ours, theirs func() error) (int, error) {
	a, b := make([]byte, n), make([]byte, n)
	for _, x := range []struct {
		run func() error
		dst []byte
	}{{ours, a}, {theirs, b}} {
		if err := dev.MemsetAsync(out, 0xa5, n, s); err != nil {
			return 0, err
		}
		if err := x.run(); err != nil {
			return 0, err
		}
		if err := s.Synchronize(); err != nil {
			return 0, err
		}
		if err := dev.CopyDtoH(x.dst, out); err != nil {
			return 0, err
		}
	}
	diff := 0
	for i := range a {
		if a[i] != b[i] {
			diff++
		}
	}
	return diff, nil
}

type planResult struct {
	Kind        string  `json:"kind"` // "plan"
	Conversion  string  `json:"conversion"`
	Kernels     string  `json:"kernels"` // real, or null (kernels that return at once)
	PacketBytes int     `json:"packet_bytes"`
	Batch       int     `json:"batch"`
	Batches     int     `json:"batches"`
	Feeders     int     `json:"feeders"`
	PlanGBps    float64 `json:"plan_in_GBps"`
	HtoDGBps    float64 `json:"htod_GBps"`
	Ratio       float64 `json:"ratio"`
	Mpps        float64 `json:"mpps"`
	// Where each feeding thread's time went, per packet (averaged over the feeders).
	Sections sections `json:"sections"`
}

// runPlans measures whole GPU plans (host_pinned source, device output) fed by an
// engine-like loop, next to host-to-device copies of the same bytes (a batch's): per packet
// size, batch size (ppbs), conversion, kernels (real, or null: the feeding side alone) and
// number of plans fed at once.
func runPlans(sizes []int, batches int, ptxFile, jsonOut string, ppbs, feeders []int, kinds []string) error {
	var ptx []byte
	if ptxFile != "" {
		var err error
		if ptx, err = os.ReadFile(ptxFile); err != nil {
			return err
		}
	}
	d, dev, err := openGPU0()
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
	const inFlight = 4
	fmt.Printf("\nwhole GPU plans: host_pinned packets → device aggregates, %d batches per plan; feeding thread's ns/packet: produce (engine side), deliver (plan: place, tables, launches), wait (aggregates, GPU)\n", batches)
	fmt.Printf("%-11s %6s %5s %6s %3s %10s %10s %7s %8s %8s %8s %8s\n", "conversion", "pkt", "ppb", "kern", "thr", "plan GB/s", "HtoD GB/s", "ratio", "Mpkt/s", "prod ns", "deliv ns", "wait ns")
	for _, size := range sizes {
		for _, ppb := range ppbs {
			cr, err := dev.MeasureCopy(cudart.HostToDevice, ppb*size, 50)
			if err != nil {
				return err
			}
			for _, conv := range planConvs {
				dt, c, err := planConv(conv)
				if err != nil {
					return err
				}
				for _, kind := range kinds {
					kptx := ptx
					if kind == "null" {
						kptx = []byte(nullPTX)
					}
					for _, f := range feeders {
						res, err := planMany(d, dev, kptx, size, ppb, inFlight, batches, dt, c, f)
						if err != nil {
							return err
						}
						res.Conversion, res.Kernels = conv, kind
						res.HtoDGBps = cr.GBps()
						res.Ratio = res.PlanGBps / res.HtoDGBps
						fmt.Printf("%-11s %6d %5d %6s %3d %10.2f %10.2f %7.3f %8.2f %8.1f %8.1f %8.1f\n", conv, size, ppb, kind, f, res.PlanGBps, res.HtoDGBps, res.Ratio, res.Mpps,
							res.Sections.Produce, res.Sections.Deliver, res.Sections.Wait)
						if w != nil {
							json.NewEncoder(w).Encode(res)
						}
					}
				}
			}
		}
	}
	return nil
}

// planOnce runs one plan for batches batches and returns the time it took and where the
// feeding loop's time went (time.Now around each burst's sections: about 1 ns a packet).
func planOnce(d *cudart.Driver, dev *cudart.Device, ptx []byte, size, ppb, inFlight, batches int, dt *config.DataTypes, c reorder.Conversion) (res planResult, el time.Duration, sec sections, err error) {
	res = planResult{Kind: "plan", PacketBytes: size, Batch: ppb, Batches: batches}
	bufSize := size + headroom
	nbufs := (2*inFlight + 2) * ppb
	pin, err := d.AllocHostPinned(0, nbufs*bufSize)
	if err != nil {
		return res, 0, sec, err
	}
	src, err := engine.NewRegion(&config.MemoryRegion{Name: "src", Kind: config.KindHostPinned, NumBufs: nbufs, BufSize: bufSize}, pin)
	if err != nil {
		return res, 0, sec, err
	}
	defer src.Close()
	outLen := ppb * c.OutputLen(size)
	om, err := d.AllocDevice(0, (inFlight+4)*outLen)
	if err != nil {
		return res, 0, sec, err
	}
	out, err := engine.NewRegion(&config.MemoryRegion{Name: "out", Kind: config.KindDevice, NumBufs: inFlight + 4, BufSize: outLen}, om)
	if err != nil {
		return res, 0, sec, err
	}
	defer out.Close()
	meta, err := engine.NewMetaPool("rx", 64, 64, false)
	if err != nil {
		return res, 0, sec, err
	}
	port := &engine.Port{ID: 0, Name: "bench", Config: &config.Interface{Name: "bench"}}
	q, err := engine.NewRxQueue(port, 0, &config.Queue{Name: "q", BatchSize: 64}, []*engine.Region{src}, meta, 64)
	if err != nil {
		return res, 0, sec, err
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
		return res, 0, sec, err
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
	var prod, deliv, wait time.Duration
	t0 := time.Now()
	deadline := t0.Add(60 * time.Second)
	for b := 0; b < batches; b++ {
		base := uint32(b * ppb)
		for i := 0; i < ppb; {
			if time.Now().After(deadline) {
				return res, 0, sec, fmt.Errorf("whole plan: stuck at batch %d packet %d; stats %+v", b, i, plan.Stats())
			}
			tp := time.Now()
			burst, err := q.NewBurst()
			if err != nil {
				take(false)
				wait += time.Since(tp)
				continue
			}
			// The burst's buffers in one pool operation, as the socket and AF_XDP engines take
			// them; fewer when the GPU still holds packets: hand over what we have, then wait.
			k := src.GetBurst(idxs[:min(len(idxs), ppb-i)])
			if k == 0 {
				burst.Free()
				take(false)
				wait += time.Since(tp)
				continue
			}
			for _, idx := range idxs[:k] {
				binary.BigEndian.PutUint32(src.Buf(idx), base+uint32(perm[i]))
				burst.Append(uint64(idx)*uint64(src.BufSize), uint32(bufSize), 1, 0)
				i++
			}
			td := time.Now()
			q.Deliver(burst)
			te := time.Now()
			take(false)
			tw := time.Now()
			prod += td.Sub(tp)
			deliv += te.Sub(td)
			wait += tw.Sub(te)
		}
		// Keep at most inFlight batches queued on the GPU, as a receiver pacing itself would;
		// past that the plan drops packets for want of slot tables (counted no_packet_buffers).
		// Polling, as an engine worker does: a sleep would cost tens of microseconds a batch.
		tp := time.Now()
		for got < b-inFlight+1 && time.Now().Before(deadline) {
			take(false)
			runtime.Gosched()
		}
		wait += time.Since(tp)
	}
	tp := time.Now()
	for i := 0; i < 100000 && got < batches; i++ {
		take(false)
		time.Sleep(20 * time.Microsecond)
	}
	wait += time.Since(tp)
	el = time.Since(t0)
	if st := plan.Stats(); got != batches || st.Complete != uint64(batches) {
		return res, 0, sec, fmt.Errorf("whole plan: %d of %d aggregates; stats %+v", got, batches, st)
	}
	n := float64(batches * ppb)
	sec = sections{Produce: float64(prod.Nanoseconds()) / n, Deliver: float64(deliv.Nanoseconds()) / n, Wait: float64(wait.Nanoseconds()) / n}
	return res, el, sec, nil
}
