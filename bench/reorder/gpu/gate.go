package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/daqiri-go/daqiri/cudart"
	"github.com/daqiri-go/daqiri/reorder"
)

// gatePTX is a kernel that holds its stream until the host writes a nonzero word at flag (in
// mapped pinned memory) or limit nanoseconds pass, when it writes 2 in the word after it. Queued in front of
// a wave of launches it lets the whole wave reach the GPU before any of it runs, so that the
// time between two events around the wave is the GPU's alone: the launches' host-side cost
// (the same for every kernel here: one cuLaunchKernel through package cudart) is left out.
// Hand-written PTX so that the benchmark needs no compiler.
const gatePTX = `.version 7.0
.target sm_70
.address_size 64

.visible .entry bench_gate(.param .u64 flag, .param .u64 limit)
{
	.reg .pred %p<3>;
	.reg .b32 %r<2>;
	.reg .b64 %rd<6>;
	ld.param.u64 %rd1, [flag];
	ld.param.u64 %rd2, [limit];
	mov.u64 %rd3, %globaltimer;
$L_wait:
	ld.relaxed.sys.global.u32 %r1, [%rd1];
	setp.ne.u32 %p1, %r1, 0;
	@%p1 bra $L_done;
	mov.u64 %rd4, %globaltimer;
	sub.u64 %rd5, %rd4, %rd3;
	setp.lt.u64 %p2, %rd5, %rd2;
	@%p2 bra $L_wait;
	mov.u32 %r1, 2;
	st.relaxed.sys.global.u32 [%rd1+4], %r1;
$L_done:
	ret;
}
`

// gateWave is how many launches queue behind the gate: well under what a stream accepts
// before cuLaunchKernel blocks (which with the gate closed would stall until its limit),
// launches carrying 8 KiB slot tables in their parameters included.
const gateWave = 32

// gateLimit bounds how long the gate holds its stream.
const gateLimit = 2 * time.Second

// timer times work on a stream, either as the CPU launches it (back to back: each launch's
// host-side cost shows wherever it exceeds the GPU's) or queued behind a gate (GPU time only).
type timer struct {
	s      *cudart.Stream
	mod    *cudart.Module
	gate   *cudart.Function
	flag   *cudart.HostMem
	queued bool
}

func newTimer(dev *cudart.Device, s *cudart.Stream, queued bool) (*timer, error) {
	t := &timer{s: s, queued: queued}
	if !queued {
		return t, nil
	}
	var err error
	if t.mod, err = dev.LoadModule([]byte(gatePTX)); err != nil {
		return nil, fmt.Errorf("gate kernel: %w", err)
	}
	if t.gate, err = t.mod.Function("bench_gate"); err != nil {
		t.mod.Close()
		return nil, err
	}
	if t.flag, err = dev.AllocHostPinned(4096); err != nil {
		t.mod.Close()
		return nil, err
	}
	return t, nil
}

// openGPU0 loads the driver and opens GPU 0, which every mode measures on.
func openGPU0() (*cudart.Driver, *cudart.Device, error) {
	d, err := cudart.Open()
	if err != nil {
		return nil, nil, err
	}
	dev, err := d.Device(0)
	return d, dev, err
}

// allocAll allocates one device buffer per size, all or none; free releases them.
func allocAll(dev *cudart.Device, sizes ...int) (mems []*cudart.DeviceMem, free func(), err error) {
	free = func() {
		for _, m := range mems {
			m.Close()
		}
	}
	for _, n := range sizes {
		m, err := dev.AllocDevice(n)
		if err != nil {
			free()
			return nil, nil, err
		}
		mems = append(mems, m)
	}
	return mems, free, nil
}

// rig is what every mode times with: the kernels, a non-blocking stream, and its timer.
type rig struct {
	ks *reorder.Kernels
	s  *cudart.Stream
	tm *timer
}

func newRig(dev *cudart.Device, ptx []byte, queued bool) (*rig, error) {
	ks, err := reorder.LoadKernels(dev, ptx)
	if err != nil {
		return nil, err
	}
	s, err := dev.NewStream(true)
	if err != nil {
		ks.Close()
		return nil, err
	}
	tm, err := newTimer(dev, s, queued)
	if err != nil {
		s.Close()
		ks.Close()
		return nil, err
	}
	return &rig{ks: ks, s: s, tm: tm}, nil
}

func (r *rig) close() error { return errors.Join(r.tm.close(), r.s.Close(), r.ks.Close()) }

func (t *timer) close() error {
	if t.mod == nil {
		return nil
	}
	return errors.Join(t.flag.Close(), t.mod.Close())
}

// timeWarm runs enqueue once untimed (first launches load code and fault pages in), then
// times iters rounds of it.
func (t *timer) timeWarm(iters int, enqueue func(int) error) (time.Duration, error) {
	if err := enqueue(0); err != nil {
		return 0, err
	}
	return t.time(iters, enqueue)
}

// time returns the GPU time of iters rounds of enqueue, each of which queues one round on t.s.
func (t *timer) time(iters int, enqueue func(int) error) (time.Duration, error) {
	if !t.queued {
		return t.s.Time(iters, enqueue)
	}
	dev := t.s.Device()
	start, err := dev.NewEvent(true, true)
	if err != nil {
		return 0, err
	}
	defer start.Close()
	end, err := dev.NewEvent(true, true)
	if err != nil {
		return 0, err
	}
	defer end.Close()
	fl, timedOut := t.flag.Bytes()[:4], t.flag.Bytes()[4:8]
	var total time.Duration
	for done := 0; done < iters; {
		n := min(gateWave, iters-done)
		binary.LittleEndian.PutUint32(fl, 0)
		binary.LittleEndian.PutUint32(timedOut, 0)
		cfg := cudart.LaunchConfig{Grid: cudart.Dim3{X: 1}, Block: cudart.Dim3{X: 1}, Stream: t.s}
		err := t.gate.Launch(cfg, cudart.Ptr(t.flag.DevicePtr()), cudart.U64(uint64(gateLimit)))
		if err == nil {
			err = start.Record(t.s)
		}
		for i := 0; i < n && err == nil; i++ {
			err = enqueue(done + i)
		}
		if err == nil {
			err = end.Record(t.s)
		}
		// Open the gate whatever happened, so that the stream drains.
		binary.LittleEndian.PutUint32(fl, 1)
		if err != nil {
			return 0, errors.Join(err, t.s.Synchronize())
		}
		if err := end.Synchronize(); err != nil {
			return 0, err
		}
		if binary.LittleEndian.Uint32(timedOut) != 0 {
			return 0, fmt.Errorf("gate: the GPU waited %v for a wave of %d launches to be queued", gateLimit, n)
		}
		d, err := end.Elapsed(start)
		if err != nil {
			return 0, err
		}
		total += d
		done += n
	}
	return total, nil
}

// stagedLaunch launches k as a plan does with a slot table too large for the kernel's
// parameters: the host table tb is copied into table on stream s2, and s waits for that copy
// (an event) before the kernel runs.
func stagedLaunch(dev *cudart.Device, k *reorder.Kernel, s, s2 *cudart.Stream, staged *cudart.Event,
	table *cudart.DeviceMem, tb []byte, src, out cudart.DevicePtr, ppb, size int) func(int) error {
	return func(int) error {
		err := dev.CopyHtoDAsync(table.Ptr(), tb, s2)
		if err == nil {
			err = staged.Record(s2)
		}
		if err == nil {
			err = s.WaitEvent(staged)
		}
		if err == nil {
			err = k.Launch(s, table.Ptr(), src, out, ppb, size)
		}
		return err
	}
}
