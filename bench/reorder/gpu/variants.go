package main

// -variants: times the widening-conversion kernel variants of reorder.cu (built with
// -DREORDER_VARIANTS: entries reorder_w<R>v1l4e<EV>_<in>_<out>, R 8 and 16 by L2 eviction-hint
// mode WIDE_EV; several such PTX files may be given, comma-separated) with 128-thread blocks,
// one warp per slot, next to the previous kernel (variant 0: reorder_cvt_<in>_<out> of
// -variants-base, launched with the shape reorder used for it) and the kernels of -ptx as
// package reorder launches them, checks every variant's output byte for byte against variant
// 0's (random payload lengths, missing slots, a grid smaller than the slots), and prints the
// configuration whose worst traffic ratio to the device copy over the conversions is highest.

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/cudart"
	"github.com/daqiri-go/daqiri/reorder"
)

type variant struct {
	entry      string // kernel name without the conversion suffix; "" for the -ptx kernels through package reorder
	r, v, l    int
	ev         int // WIDE_EV: L2 eviction-hint mode
	threads    int
	perSM      int // blocks per multiprocessor (0: one warp per slot)
	base       bool
	display    string
	minTraffic float64
}

// oldShape is reorder's launch shape for convert_kernel (gpu.go shape()).
func oldShape(outLen, slots, sms int) (spb, threads uint32) {
	spb = uint32(min(max(8192/max(outLen, 1), 1), 16, max(slots/(4*sms), 1)))
	threads = 64
	for threads < 256 && int(threads)*64 < outLen {
		threads *= 2
	}
	return spb, threads
}

func runVariants(varPTX, basePTX, finalPTX string, sizes, batches []int, targetMB int) error {
	_, dev, err := openGPU0()
	if err != nil {
		return err
	}
	defer dev.Close()
	sms, err := dev.Attribute(cudart.AttrMultiprocessorCount)
	if err != nil {
		return err
	}
	load := func(f string) (*cudart.Module, error) {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		return dev.LoadModule(b)
	}
	// varPTX may name several files (comma-separated), e.g. one per eviction-hint mode, so
	// that one the driver cannot load (a PTX instruction its JIT refuses) costs only its own
	// variants.
	var vms []*cudart.Module
	for _, f := range strings.Split(varPTX, ",") {
		m, err := load(f)
		if err != nil {
			fmt.Printf("variants: %s not loaded, its variants skipped: %v\n", f, err)
			continue
		}
		defer m.Close()
		vms = append(vms, m)
	}
	if len(vms) == 0 {
		return fmt.Errorf("variants: no variants PTX loaded from %q", varPTX)
	}
	vmFunc := func(name string) (*cudart.Function, error) {
		var err error
		for _, m := range vms {
			var fn *cudart.Function
			if fn, err = m.Function(name); err == nil {
				return fn, nil
			}
		}
		return nil, err
	}
	bm, err := load(basePTX)
	if err != nil {
		return fmt.Errorf("variant 0: %w", err)
	}
	defer bm.Close()
	fb, err := os.ReadFile(finalPTX)
	if err != nil {
		return err
	}
	rg, err := newRig(dev, fb, true)
	if err != nil {
		return err
	}
	defer rg.close()
	ks, s, tm := rg.ks, rg.s, rg.tm

	pairs := [][2]config.DataType{{"int4", "fp16"}, {"int4", "bf16"}, {"int8", "fp32"}, {"int16", "fp64"}, {"int4", "fp32"}}
	var vars []*variant
	vars = append(vars, &variant{base: true, display: "v0 (previous kernel)"}, &variant{display: "final (-ptx, package reorder)"})
	// V = 1, L = 4, one warp per slot (the committed shape); R 8 and 16 × the L2 eviction-hint
	// modes (WIDE_EV) the variants PTX has (a mode left out of it is skipped).
	for _, ev := range []int{0, 1, 2, 3, 4} {
		for _, r := range []int{8, 16} {
			for _, th := range []int{128} {
				e := fmt.Sprintf("reorder_w%dv1l4e%d", r, ev)
				if _, err := vmFunc(e + "_int4_fp16"); err != nil {
					continue
				}
				vars = append(vars, &variant{entry: e, r: r, v: 1, l: 4, ev: ev, threads: th,
					display: fmt.Sprintf("R=%d V=1 L=4 EV=%d threads=%d perSM=0", r, ev, th)})
			}
		}
	}
	for _, v := range vars {
		v.minTraffic = 1e9
	}
	maxSize, maxBatch := 0, 0
	for _, z := range sizes {
		maxSize = max(maxSize, z)
	}
	for _, b := range batches {
		maxBatch = max(maxBatch, b)
	}
	maxBatch = max(maxBatch, 1024)
	srcLen := maxBatch * (maxSize + headroom)
	mems, free, err := allocAll(dev, srcLen+65536, maxBatch*maxSize*16, 8*maxBatch)
	if err != nil {
		return err
	}
	defer free()
	src, out, table := mems[0], mems[1], mems[2]
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	img := make([]byte, srcLen)
	for i := 0; i+8 <= len(img); i += 8 {
		binary.LittleEndian.PutUint64(img[i:], rng.Uint64())
	}
	if err := dev.CopyHtoD(src.Ptr(), img); err != nil {
		return err
	}

	// launcher returns the launch of variant v for conversion c (nil: entry missing).
	launcher := func(v *variant, c reorder.Conversion, grid uint32, slots, size int) (func() error, error) {
		name := fmt.Sprintf("reorder_cvt_%s_%s", c.In, c.Out)
		big := cudart.U32(0)
		if c.Big {
			big = cudart.U32(1)
		}
		args := func() []cudart.Arg {
			return []cudart.Arg{cudart.Ptr(table.Ptr()), cudart.Ptr(src.Ptr()), cudart.Ptr(out.Ptr()), cudart.U32(uint32(size)), big, cudart.U32(uint32(slots))}
		}
		switch {
		case v.base:
			fn, err := bm.Function(name)
			if err != nil {
				return nil, err
			}
			outLen := c.OutputLen(size)
			spb, th := oldShape(max(outLen, size), slots, sms)
			cfg := cudart.LaunchConfig{Grid: cudart.Dim3{X: (uint32(slots) + spb - 1) / spb}, Block: cudart.Dim3{X: th}, Stream: s}
			a := append(args(), cudart.U32(spb))
			return func() error { return fn.Launch(cfg, a...) }, nil
		case v.entry == "":
			k, err := ks.Kernel(c)
			if err != nil {
				return nil, err
			}
			return func() error { return k.Launch(s, table.Ptr(), src.Ptr(), out.Ptr(), slots, size) }, nil
		}
		fn, err := vmFunc(fmt.Sprintf("%s_%s_%s", v.entry, c.In, c.Out))
		if err != nil {
			return nil, err
		}
		wpb := v.threads / 32
		blocks := (slots + wpb - 1) / wpb
		if v.perSM > 0 {
			blocks = min(blocks, v.perSM*sms)
		}
		if grid != 0 {
			blocks = int(grid)
		}
		cfg := cudart.LaunchConfig{Grid: cudart.Dim3{X: uint32(blocks)}, Block: cudart.Dim3{X: uint32(v.threads)}, Stream: s}
		a := append(args(), cudart.U32(1))
		return func() error { return fn.Launch(cfg, a...) }, nil
	}
	run := func(f func() error, n int) ([]byte, error) {
		if err := dev.MemsetAsync(out.Ptr(), 0xa5, n, s); err != nil {
			return nil, err
		}
		if err := f(); err != nil {
			return nil, err
		}
		if err := s.Synchronize(); err != nil {
			return nil, err
		}
		b := make([]byte, n)
		return b, dev.CopyDtoH(b, out.Ptr())
	}

	fmt.Printf("variants: %d configurations; checks at 1024 slots (random lengths, missing slots) against variant 0\n", len(vars))
	convs, err := conversions(pairs)
	if err != nil {
		return err
	}
	bad := map[*variant]bool{}
	for _, c := range convs {
		// Correctness: 1024 slots of size 1024 (payload lengths random, some missing, some
		// past the slot), each variant at its shape and at a grid of 3 blocks (warps walk).
		const size, slots = 1024, 1024
		tb := make([]byte, 8*slots)
		for k := range slots {
			p := rng.IntN(slots)
			n := size
			switch rng.IntN(6) {
			case 0:
				binary.LittleEndian.PutUint64(tb[8*k:], reorder.SlotMissing)
				continue
			case 1:
				n = rng.IntN(size + 1)
			case 2:
				n = size + 1 + rng.IntN(100)
			}
			off := p*(size+headroom) + headroom + rng.IntN(2)*rng.IntN(16)
			binary.LittleEndian.PutUint64(tb[8*k:], reorder.SlotWord(uint64(off), n))
		}
		if err := dev.CopyHtoD(table.Ptr(), tb); err != nil {
			return err
		}
		n := slots * c.OutputLen(size)
		f0, err := launcher(vars[0], c, 0, slots, size)
		if err != nil {
			return err
		}
		want, err := run(f0, n)
		if err != nil {
			return err
		}
		for _, v := range vars[1:] {
			for _, g := range []uint32{0, 3} {
				if v.entry == "" && g != 0 {
					continue
				}
				f, err := launcher(v, c, g, slots, size)
				if err != nil {
					return err
				}
				got, err := run(f, n)
				if err != nil {
					return fmt.Errorf("%s %s->%s: %w", v.display, c.In, c.Out, err)
				}
				diff := 0
				for i := range got {
					if got[i] != want[i] {
						diff++
					}
				}
				if diff != 0 {
					fmt.Printf("MISMATCH %s->%s %s grid=%d: %d bytes differ\n", c.In, c.Out, v.display, g, diff)
					bad[v] = true
				}
			}
		}
	}
	timeCell := func(c reorder.Conversion, size, batch int, vs []*variant) error {
		perm := rng.Perm(batch)
		tb := make([]byte, 8*batch)
		for k, p := range perm {
			binary.LittleEndian.PutUint64(tb[8*k:], reorder.SlotWord(uint64(p*(size+headroom)+headroom), size))
		}
		if err := dev.CopyHtoD(table.Ptr(), tb); err != nil {
			return err
		}
		bytes := batch * size
		iters := max(3, min(2000, targetMB<<20/bytes))
		cp := func(int) error { return dev.CopyDtoDAsync(out.Ptr(), src.Ptr(), bytes, s) }
		tc, err := tm.timeWarm(iters, cp)
		if err != nil {
			return err
		}
		outBytes := batch * c.OutputLen(size)
		fill := func(int) error { return dev.MemsetAsync(out.Ptr(), 0, outBytes, s) }
		tf, err := tm.timeWarm(iters, fill)
		if err != nil {
			return err
		}
		traffic := func(t time.Duration) float64 {
			return (float64(bytes+outBytes) / t.Seconds()) / (2 * float64(bytes) / tc.Seconds())
		}
		full := size == 1024 && batch == 16384
		type row struct {
			v  *variant
			us float64
			tr float64
		}
		var rows []row
		for _, v := range vs {
			f, err := launcher(v, c, 0, batch, size)
			if err != nil {
				return err
			}
			l := func(int) error { return f() }
			t, err := tm.timeWarm(iters, l)
			if err != nil {
				return err
			}
			us := micros(t, iters)
			tr := traffic(t)
			if full {
				v.minTraffic = min(v.minTraffic, tr)
			}
			rows = append(rows, row{v, us, tr})
		}
		v0 := rows[0].us
		sort.Slice(rows, func(i, j int) bool { return rows[i].us < rows[j].us })
		fmt.Printf("\n%s->%s %d B x %d: copy %.1f us, fill %.1f us\n", c.In, c.Out, size, batch, micros(tc, iters), micros(tf, iters))
		for i, r := range rows {
			if i < 12 || r.v.base || r.v.entry == "" {
				fmt.Printf("  %-40s %8.1f us  traffic %.3f  v0 time / this %.2f\n", r.v.display, r.us, r.tr, v0/r.us)
			}
		}
		return nil
	}
	for _, c := range convs {
		if err := timeCell(c, 1024, 16384, vars); err != nil {
			return err
		}
	}
	best := vars[0]
	for _, v := range vars {
		if !bad[v] && v.minTraffic > best.minTraffic {
			best = v
		}
	}
	fmt.Printf("\nworst traffic ratio over the conversions at 1024 B x 16384 (higher is better):\n")
	sorted := append([]*variant(nil), vars...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].minTraffic > sorted[j].minTraffic })
	for i, v := range sorted {
		if i < 15 || v.base || v.entry == "" {
			fmt.Printf("  %-40s %.3f%s\n", v.display, v.minTraffic, map[bool]string{true: "  MISMATCH", false: ""}[bad[v]])
		}
	}
	fmt.Printf("WINNER %s (worst traffic %.3f)\n", best.display, best.minTraffic)
	var top []*variant
	for _, v := range sorted {
		if v.entry != "" && !bad[v] && len(top) < 3 {
			top = append(top, v)
		}
	}
	others := append([]*variant{vars[0], vars[1]}, top...)
	for _, size := range sizes {
		for _, batch := range batches {
			if size == 1024 && batch == 16384 {
				continue
			}
			for _, c := range convs {
				if err := timeCell(c, size, batch, others); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
