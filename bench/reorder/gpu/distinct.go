package main

// -distinct K: where the time of the widening conversions goes against the reference copy.
// The main table repeats one batch: the copy's input and output (2 × 16 MiB at 1 KiB × 16384)
// stay in the H200's L2 from one repetition to the next, while a 4× widening writes 64 MiB and
// so reads its input from HBM every time. This mode times, per cell, the copy, a memset of the
// conversion's output (a kernel with no input at all) and our kernel three ways:
//
//   same      one batch repeated, as the main table;
//   distinct  K batches in turn, each with its own input and output, so that nothing a
//             repetition touches is in L2 from the one before (a stream of new batches, as
//             in the pipeline);
//   persist   one batch repeated with its input in a persisting L2 window (a set-aside of
//             -l2-persist-mb, SetAccessPolicyWindow on the stream): what pinning the input
//             in L2 between repetitions buys.
//
// Traffic ratios are (input read + output written) per second over the copy's (read + write),
// each against the copy timed the same way.

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/cudart"
	"github.com/daqiri-go/daqiri/reorder"
)

func runDistinct(ptxFile string, ptx []byte, sizes, batches []int, pairs [][2]config.DataType, k, persistMB, targetMB int) error {
	_, dev, err := openGPU0()
	if err != nil {
		return err
	}
	defer dev.Close()
	l2, _ := dev.Attribute(cudart.AttrL2CacheSize)
	maxPersist, _ := dev.Attribute(cudart.AttrMaxPersistingL2CacheSize)
	maxWindow, _ := dev.Attribute(cudart.AttrMaxAccessPolicyWindowSize)
	name, _ := dev.Name()
	fmt.Printf("GPU 0: %s; L2 %d KiB, persisting set-aside up to %d KiB, access window up to %d KiB; kernels %s\n",
		name, l2>>10, maxPersist>>10, maxWindow>>10, map[bool]string{true: "embedded", false: ptxFile}[ptx == nil])
	rg, err := newRig(dev, ptx, true)
	if err != nil {
		return err
	}
	defer rg.close()
	ks, s, tm := rg.ks, rg.s, rg.tm

	fmt.Printf("us per batch (queued timing, GPU time only); traffic = bytes read + written per second / the copy's timed the same way; distinct = %d batches in turn\n", k)
	fmt.Printf("%-12s %5s %6s | %7s %7s %7s | %7s %7s %7s | %7s %7s %7s | %6s %6s %6s | %6s\n", "kernel", "pkt", "batch",
		"copy", "copy", "copy", "fill", "fill", "fill", "ours", "ours", "ours", "traf", "traf", "traf", "fill")
	fmt.Printf("%-12s %5s %6s | %7s %7s %7s | %7s %7s %7s | %7s %7s %7s | %6s %6s %6s | %6s\n", "", "", "",
		"same", "dist", "persist", "same", "dist", "persist", "same", "dist", "persist", "same", "dist", "persist", "same")
	r := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	convs, err := conversions(pairs)
	if err != nil {
		return err
	}
	for _, size := range sizes {
		for _, ppb := range batches {
			buf := size + headroom
			inLen := ppb * buf
			maxOut := 0
			for _, c := range convs {
				maxOut = max(maxOut, ppb*c.OutputLen(size))
			}
			if err := distinctCell(dev, ks, s, tm, r, size, ppb, buf, inLen, maxOut, pairs, convs, k, persistMB<<20, maxWindow, targetMB); err != nil {
				return err
			}
		}
	}
	return nil
}

func distinctCell(dev *cudart.Device, ks *reorder.Kernels, s *cudart.Stream, tm *timer, r *rand.Rand, size, ppb, buf, inLen, maxOut int,
	pairs [][2]config.DataType, convs []reorder.Conversion, k, persist, maxWindow, targetMB int) error {
	mems, free, err := allocAll(dev, k*inLen, k*maxOut, 8*ppb)
	if err != nil {
		return err
	}
	defer free()
	src, out, table := mems[0], mems[1], mems[2]
	// Random payloads in every batch; one slot table (offsets from a batch's base) for all.
	img := make([]byte, k*inLen)
	for i := 0; i+8 <= len(img); i += 8 {
		binary.LittleEndian.PutUint64(img[i:], r.Uint64())
	}
	tb := make([]byte, 8*ppb)
	for slot, p := range r.Perm(ppb) {
		binary.LittleEndian.PutUint64(tb[8*slot:], reorder.SlotWord(uint64(p*buf+headroom), size))
	}
	if err := dev.CopyHtoD(src.Ptr(), img); err != nil {
		return err
	}
	if err := dev.CopyHtoD(table.Ptr(), tb); err != nil {
		return err
	}
	bytes := ppb * size
	iters := max(3*k, min(2000, targetMB<<20/bytes)/k*k)
	in := func(i int) cudart.DevicePtr { return src.Ptr() + cudart.DevicePtr(i*inLen) }
	outAt := func(i int) cudart.DevicePtr { return out.Ptr() + cudart.DevicePtr(i*maxOut) }
	// timeAll times fn the three ways: batch 0 repeated, the k batches in turn, batch 0 with
	// its input in a persisting window (the window is cleared again after).
	timeAll := func(fn func(i int) error) (same, dist, pers time.Duration, err error) {
		run := func(pick func(int) int) (time.Duration, error) {
			call := func(i int) error { return fn(pick(i)) }
			for i := range k { // warm: every batch touched once
				if err := call(i); err != nil {
					return 0, err
				}
			}
			return tm.time(iters, call)
		}
		if same, err = run(func(int) int { return 0 }); err != nil {
			return
		}
		if dist, err = run(func(i int) int { return i % k }); err != nil {
			return
		}
		if persist == 0 {
			return
		}
		n := min(inLen, maxWindow)
		if err = s.SetAccessPolicyWindow(in(0), n, 1, cudart.AccessPersisting, cudart.AccessStreaming); err != nil {
			return
		}
		pers, err = run(func(int) int { return 0 })
		if cerr := s.SetAccessPolicyWindow(0, 0, 0, cudart.AccessNormal, cudart.AccessNormal); err == nil {
			err = cerr
		}
		return
	}
	if persist > 0 {
		if err := dev.SetPersistingL2(persist); err != nil {
			return err
		}
		defer dev.SetPersistingL2(0)
	}
	cs, cd, cp, err := timeAll(func(i int) error { return dev.CopyDtoDAsync(outAt(i), in(i), bytes, s) })
	if err != nil {
		return err
	}
	us := func(t time.Duration) float64 { return micros(t, iters) }
	usOpt := func(t time.Duration) string { return opt(us(t), "%.1f") }
	fmt.Printf("%-12s %5d %6d | %7.1f %7.1f %7s |\n", "copy", size, ppb, us(cs), us(cd), usOpt(cp))
	for j, c := range convs {
		kern, err := ks.Kernel(c)
		if err != nil {
			return err
		}
		outBytes := ppb * c.OutputLen(size)
		fs, fd, fp, err := timeAll(func(i int) error { return dev.MemsetAsync(outAt(i), 0, outBytes, s) })
		if err != nil {
			return err
		}
		os_, od, op, err := timeAll(func(i int) error { return kern.Launch(s, table.Ptr(), in(i), outAt(i), ppb, size) })
		if err != nil {
			return err
		}
		traffic := func(t, copyT time.Duration) float64 {
			if t == 0 || copyT == 0 {
				return 0
			}
			return (float64(bytes+outBytes) / t.Seconds()) / (2 * float64(bytes) / copyT.Seconds())
		}
		// A memset's ratio counts only what it writes: what a kernel with nothing to read
		// would score.
		fillRatio := (float64(outBytes) / fs.Seconds()) / (2 * float64(bytes) / cs.Seconds())
		fmt.Printf("%-12s %5d %6d | %7s %7s %7s | %7.1f %7.1f %7s | %7.1f %7.1f %7s | %6.3f %6.3f %6s | %6.3f\n",
			fmt.Sprintf("%s->%s", pairs[j][0], pairs[j][1]), size, ppb, "", "", "", us(fs), us(fd), usOpt(fp), us(os_), us(od), usOpt(op),
			traffic(os_, cs), traffic(od, cd), opt(traffic(op, cp), "%.3f"), fillRatio)
	}
	return nil
}
