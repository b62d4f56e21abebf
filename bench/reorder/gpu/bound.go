package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/cudart"
	"github.com/daqiri-go/daqiri/reorder"
)

// nullPTX holds the plans' kernels for the copy and int16 → fp32 under their names and
// parameters, each returning at once: a plan loaded with it (-plan-kernels null) does all of
// its CPU work — placing packets, slot tables, launches, completions — while the GPU moves no
// bytes, so its packet rate is the feeding side's alone. Parameters past 4 KiB (the by-value
// slot tables) need PTX ISA 8.1.
const nullPTX = `.version 8.1
.target sm_75
.address_size 64

.visible .entry reorder_copy(.param .u64 t, .param .u64 s, .param .u64 o, .param .u32 l, .param .u32 n, .param .u32 k)
{
	ret;
}
.visible .entry reorder_copy_p(.param .align 8 .b8 t[8192], .param .u64 s, .param .u64 o, .param .u32 l, .param .u32 n, .param .u32 k)
{
	ret;
}
.visible .entry reorder_cvt_int16_fp32(.param .u64 t, .param .u64 s, .param .u64 o, .param .u32 l, .param .u32 b, .param .u32 n, .param .u32 k)
{
	ret;
}
.visible .entry reorder_cvt_int16_fp32_p(.param .align 8 .b8 t[8192], .param .u64 s, .param .u64 o, .param .u32 l, .param .u32 b, .param .u32 n, .param .u32 k)
{
	ret;
}
`

// planConvs are the conversions the whole-plan and -bound tables run.
var planConvs = []string{"copy", "int16-fp32"}

// planConv is the conversion named by one of planConvs (nil data types: the copy).
func planConv(name string) (*config.DataTypes, reorder.Conversion, error) {
	var dt *config.DataTypes
	if name != "copy" {
		dt = &config.DataTypes{Input: config.TypeInt16, Output: config.TypeFP32, Endianness: config.EndianNetwork}
	}
	c, err := reorder.NewConversion(dt)
	return dt, c, err
}

// runBound measures, per packet size and batch size, the pieces of a GPU plan apart from its
// feeding thread: the GPU time of one batch's kernel reading its packets from host_pinned
// memory (its slot table passed as a plan passes it: in the parameters up to
// reorder.ParamSlots packets, else staged on a second stream), next to the copy engine's
// host-to-device copy of the same bytes, both queued behind the gate (GPU time only); and the
// CPU cost of one launch as a plan makes it, back to back with the null kernels (the GPU
// idles, so the time is the launch's host side).
func runBound(sizes, ppbs []int) error {
	_, dev, err := openGPU0()
	if err != nil {
		return err
	}
	defer dev.Close()
	rg, err := newRig(dev, nil, true)
	if err != nil {
		return err
	}
	defer rg.close()
	nk, err := reorder.LoadKernels(dev, []byte(nullPTX))
	if err != nil {
		return err
	}
	defer nk.Close()
	s, tm := rg.s, rg.tm
	maxSize, maxPPB := 0, 0
	for _, z := range sizes {
		maxSize = max(maxSize, z)
	}
	for _, n := range ppbs {
		maxPPB = max(maxPPB, n)
	}
	pin, err := dev.AllocHostPinned(maxPPB * (maxSize + headroom))
	if err != nil {
		return err
	}
	defer pin.Close()
	tableHost, err := dev.AllocHostPinned(8 * maxPPB)
	if err != nil {
		return err
	}
	defer tableHost.Close()
	mems, free, err := allocAll(dev, maxPPB*2*maxSize, 8*maxPPB)
	if err != nil {
		return err
	}
	defer free()
	out, tableDev := mems[0], mems[1]
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
	r := rand.New(rand.NewPCG(27, 27))
	for i := 0; i+8 <= len(pin.Bytes()); i += 8 {
		binary.LittleEndian.PutUint64(pin.Bytes()[i:], r.Uint64())
	}
	param := make([]byte, 8*reorder.ParamSlots)
	fmt.Printf("\nbound: one batch's kernel reading host_pinned packets (GPU time, queued) against the HtoD copy of the same bytes; launch = CPU time of one plan launch, null kernel, back to back\n")
	fmt.Printf("%-11s %5s %5s %5s %9s %9s %8s %9s %9s %10s\n", "conversion", "pkt", "ppb", "table", "kern us", "HtoD us", "kern/HtoD", "kern GB/s", "kern Mpkt", "launch us")
	for _, size := range sizes {
		buf := size + headroom
		for _, ppb := range ppbs {
			perm := r.Perm(ppb)
			tb := tableHost.Bytes()[:8*ppb]
			for k, p := range perm {
				binary.LittleEndian.PutUint64(tb[8*k:], reorder.SlotWord(uint64(p*buf+headroom), size))
			}
			clear(param)
			copy(param, tb)
			if err := dev.CopyHtoD(tableDev.Ptr(), tb); err != nil {
				return err
			}
			iters := max(20, min(500, (256<<20)/(ppb*size)))
			htod := func(int) error { return dev.CopyHtoDAsync(out.Ptr(), pin.Bytes()[:ppb*size], s) }
			th, err := tm.timeWarm(iters, htod)
			if err != nil {
				return err
			}
			for _, name := range planConvs {
				_, c, err := planConv(name)
				if err != nil {
					return err
				}
				k, err := rg.ks.Kernel(c)
				if err != nil {
					return err
				}
				kn, err := nk.Kernel(c)
				if err != nil {
					return err
				}
				// As gpuBackend.finish launches.
				how := "param"
				launch := func(k *reorder.Kernel) func(int) error {
					if ppb <= reorder.ParamSlots && k.ParamTable() {
						return func(int) error { return k.LaunchParams(s, param, pin.DevicePtr(), out.Ptr(), ppb, size) }
					}
					how = "staged"
					return stagedLaunch(dev, k, s, s2, staged, tableDev, tb, pin.DevicePtr(), out.Ptr(), ppb, size)
				}
				tk, err := tm.timeWarm(iters, launch(k))
				if err != nil {
					return err
				}
				// Host side of a launch: the null kernel, back to back, then a wait for them.
				ln := launch(kn)
				const calls = 2000
				if err := errors.Join(ln(0), s.Synchronize()); err != nil {
					return err
				}
				t0 := time.Now()
				for i := range calls {
					if err := ln(i); err != nil {
						return errors.Join(err, s.Synchronize())
					}
				}
				tl := time.Since(t0)
				if err := s.Synchronize(); err != nil {
					return err
				}
				ku, hu := micros(tk, iters), micros(th, iters)
				fmt.Printf("%-11s %5d %5d %5s %9.1f %9.1f %8.3f %9.2f %9.2f %10.2f\n", name, size, ppb, how, ku, hu, hu/ku,
					float64(ppb*size)/ku/1e3, float64(ppb)/ku, micros(tl, calls))
			}
		}
	}
	return nil
}

// sections is where a feeding thread's time went, in nanoseconds per packet.
type sections struct {
	Produce float64 `json:"produce_ns"` // taking buffers and a burst, writing sequence numbers (the engine's part)
	Deliver float64 `json:"deliver_ns"` // the queue's Deliver: the plan placing packets, slot tables, launches
	Wait    float64 `json:"wait_ns"`    // taking aggregates, and waiting for the GPU when inFlight batches are queued
}

// planMany runs feeders plans at once, each on its own queue, source region and goroutine (as
// engine workers of several queues would), on the same GPU: rates over the slowest's time.
func planMany(d *cudart.Driver, dev *cudart.Device, ptx []byte, size, ppb, inFlight, batches int, dt *config.DataTypes, c reorder.Conversion, feeders int) (planResult, error) {
	type one struct {
		res planResult
		el  time.Duration
		sec sections
		err error
	}
	ch := make(chan one, feeders)
	for range feeders {
		go func() {
			res, el, sec, err := planOnce(d, dev, ptx, size, ppb, inFlight, batches, dt, c)
			ch <- one{res, el, sec, err}
		}()
	}
	var res planResult
	var slowest time.Duration
	var errs []error
	var sum sections
	for range feeders {
		o := <-ch
		errs = append(errs, o.err)
		res = o.res
		slowest = max(slowest, o.el)
		sum.Produce += o.sec.Produce / float64(feeders)
		sum.Deliver += o.sec.Deliver / float64(feeders)
		sum.Wait += o.sec.Wait / float64(feeders)
	}
	if err := errors.Join(errs...); err != nil {
		return res, err
	}
	pkts := float64(feeders * batches * ppb)
	res.Feeders = feeders
	res.PlanGBps = pkts * float64(size) / slowest.Seconds() / 1e9
	res.Mpps = pkts / slowest.Seconds() / 1e6
	res.Sections = sum
	return res, nil
}
