package reorder

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/cudart"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/internal/testutil/gputest"
)

// The tests in this file need an NVIDIA GPU and driver; elsewhere they skip. `make gpu-test`
// builds them into bin/gpu/reorder.test. DAQIRI_REORDER_PTX names a PTX file to load instead
// of the embedded kernels (for kernel development).

func testPTX(t testing.TB) []byte {
	p := os.Getenv("DAQIRI_REORDER_PTX")
	if p == "" {
		return nil
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGPUKernelsMatchCPU runs every kernel (the copy and all 20 conversions, both byte
// orders) on random payloads at random alignments, with missing slots and short payloads,
// and compares each aggregate bit for bit with the CPU conversion, including the zero fill
// and the bytes after the aggregate (which must stay untouched).
func TestGPUKernelsMatchCPU(t *testing.T) {
	dev := gputest.Device(t)
	ks, err := LoadKernels(dev, testPTX(t))
	if err != nil {
		t.Fatal(err)
	}
	defer ks.Close()
	const srcSize, outSize = 4 << 20, 16 << 20
	src, err := dev.AllocHostPinned(srcSize)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	table, err := dev.AllocHostPinned(8 * 32768)
	if err != nil {
		t.Fatal(err)
	}
	defer table.Close()
	out, err := dev.AllocDevice(outSize)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	r := newRand()
	for j := range src.Bytes() {
		src.Bytes()[j] = byte(r.Uint32())
	}
	convs := []Conversion{{}}
	for _, in := range inTypes {
		for _, o := range outTypes {
			for _, end := range []config.Endianness{config.EndianHost, config.EndianNetwork} {
				c, err := NewConversion(&config.DataTypes{Input: in, Output: o, Endianness: end})
				if err != nil {
					t.Fatal(err)
				}
				convs = append(convs, c)
			}
		}
	}
	host := make([]byte, outSize)
	for _, c := range convs {
		k, err := ks.Kernel(c)
		if err != nil {
			t.Fatal(err)
		}
		for trial := 0; trial < 6; trial++ {
			unit := 1
			if c.Active() && c.InBits() > 8 {
				unit = c.InBits() / 8
			}
			inLen := unit * (1 + r.IntN([]int{40, 600, 3000}[trial%3]))
			slots := 1 + r.IntN(300)
			if trial%3 == 0 {
				slots = 2000 + r.IntN(30000) // many small slots: several per block
			}
			outLen := c.OutputLen(inLen)
			for slots*outLen+64 > outSize {
				slots /= 2
			}
			dstOff := r.IntN(17) // misaligned outputs too
			want := make([]byte, slots*outLen)
			tb := table.Bytes()
			for s := 0; s < slots; s++ {
				if r.IntN(5) == 0 {
					binary.LittleEndian.PutUint64(tb[8*s:], SlotMissing)
					continue
				}
				n := unit * (1 + r.IntN(inLen/unit))
				off := uint64(r.IntN(srcSize - n - 8))
				binary.LittleEndian.PutUint64(tb[8*s:], SlotWord(off, n))
				c.Convert(want[s*outLen:], src.Bytes()[off:off+uint64(n)])
			}
			// The table in mapped memory, and (up to ParamSlots slots) in the launch's
			// parameters: the same aggregate either way.
			launches := []struct {
				how string
				run func() error
			}{{"table in memory", func() error {
				return k.Launch(nil, table.DevicePtr(), src.DevicePtr(), out.Ptr()+cudart.DevicePtr(dstOff), slots, inLen)
			}}}
			if slots <= ParamSlots {
				if !k.ParamTable() {
					t.Fatalf("%s: the kernels have no by-value table variant (%s_p)", kernelName(c), kernelName(c))
				}
				launches = append(launches, struct {
					how string
					run func() error
				}{"table in parameters", func() error {
					return k.LaunchParams(nil, tb[:8*ParamSlots], src.DevicePtr(), out.Ptr()+cudart.DevicePtr(dstOff), slots, inLen)
				}})
			}
			for _, l := range launches {
				if err := dev.Memset(out.Ptr(), 0xa5, outSize); err != nil {
					t.Fatal(err)
				}
				if err := l.run(); err != nil {
					t.Fatalf("%s, %s: %v", kernelName(c), l.how, err)
				}
				if err := dev.Synchronize(); err != nil {
					t.Fatal(err)
				}
				got := host[:dstOff+slots*outLen+16]
				if err := dev.CopyDtoH(got, out.Ptr()); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got[dstOff:dstOff+slots*outLen], want) {
					for s := 0; s < slots; s++ {
						g, w := got[dstOff+s*outLen:dstOff+(s+1)*outLen], want[s*outLen:(s+1)*outLen]
						if !bytes.Equal(g, w) {
							t.Fatalf("%s, %s: slot %d of %d (in %d bytes, out offset %d):\n gpu %x\n cpu %x", kernelName(c), l.how, s, slots, inLen, dstOff, g, w)
						}
					}
				}
				if !bytes.Equal(got[:dstOff], bytes.Repeat([]byte{0xa5}, dstOff)) || !bytes.Equal(got[dstOff+slots*outLen:], bytes.Repeat([]byte{0xa5}, 16)) {
					t.Fatalf("%s, %s: wrote outside its aggregate", kernelName(c), l.how)
				}
			}
		}
	}
	k0, err := ks.Kernel(Conversion{})
	if err != nil {
		t.Fatal(err)
	}
	if err := k0.Launch(nil, table.DevicePtr(), src.DevicePtr(), out.Ptr(), 0, 16); err == nil {
		t.Fatal("a launch with no slots was accepted")
	}
}

// LaunchParams refuses, before any driver call, kernels without the by-value variant, more
// than ParamSlots slots and a table that is not exactly 8*ParamSlots bytes.
func TestLaunchParamsRefusals(t *testing.T) {
	table := make([]byte, 8*ParamSlots)
	if err := (&Kernel{}).LaunchParams(nil, table, 0, 0, 1, 16); !errors.Is(err, engine.ErrNotSupported) {
		t.Fatalf("no by-value kernel: %v", err)
	}
	k := &Kernel{fnP: &cudart.Function{}}
	for _, c := range []struct {
		table []byte
		slots int
	}{{table, ParamSlots + 1}, {table[:8], 1}, {make([]byte, 8*ParamSlots+8), 1}, {table, 0}} {
		if err := k.LaunchParams(nil, c.table, 0, 0, c.slots, 16); !errors.Is(err, engine.ErrInvalidParameter) {
			t.Fatalf("%d slots, %d-byte table: %v", c.slots, len(c.table), err)
		}
	}
}

func TestLaunchShape(t *testing.T) {
	for _, c := range []struct{ outLen, slots, sms int }{
		{1024, 65536, 132}, {1024, 1024, 132}, {8192, 65536, 132}, {16, 100000, 132}, {100000, 4, 1}, {1, 1, 1},
	} {
		spb, th := shape(c.outLen, c.slots, c.sms)
		blocks := (c.slots + int(spb) - 1) / int(spb)
		if spb < 1 || spb > maxSlotsPerBlock || (th != 64 && th != 128 && th != 256) {
			t.Errorf("shape(%v) = %d slots per block, %d threads", c, spb, th)
		}
		if spb > 1 && blocks < 4*c.sms {
			t.Errorf("shape(%v): %d blocks for %d multiprocessors", c, blocks, c.sms)
		}
		if spb > 1 && int(spb)*c.outLen > 8192 {
			t.Errorf("shape(%v): %d slots of %d bytes per block", c, spb, c.outLen)
		}
	}
	if SlotWord(5, 7) != 5<<24|7 || SlotWord(maxSlotOff-1, maxSlotLen) == SlotMissing {
		t.Fatal("slot words")
	}
}

// gpuRig is a rig whose source region is host_pinned and whose output region is device
// memory, both from CUDA.
func gpuRig(t *testing.T, dev *cudart.Device, s rigSpec, outKind config.MemoryKind) *rig {
	t.Helper()
	g := &rig{t: t, metaN: s.meta}
	pin, err := dev.Driver().AllocHostPinned(dev.Ordinal(), s.srcBufs*s.srcSize)
	if err != nil {
		t.Fatal(err)
	}
	g.src, err = engine.NewRegion(&config.MemoryRegion{Name: "src", Kind: config.KindHostPinned, NumBufs: s.srcBufs, BufSize: s.srcSize}, pin)
	if err != nil {
		t.Fatal(err)
	}
	var outMem engine.Memory
	if outKind == config.KindDevice {
		outMem, err = dev.Driver().AllocDevice(dev.Ordinal(), s.outBufs*s.outSize)
	} else {
		outMem, err = dev.Driver().AllocHostPinned(dev.Ordinal(), s.outBufs*s.outSize)
	}
	if err != nil {
		t.Fatal(err)
	}
	g.out, err = engine.NewRegion(&config.MemoryRegion{Name: "out", Kind: outKind, NumBufs: s.outBufs, BufSize: s.outSize}, outMem)
	if err != nil {
		t.Fatal(err)
	}
	g.meta, err = engine.NewMetaPool("rx", s.meta, s.batch, false)
	if err != nil {
		t.Fatal(err)
	}
	port := &engine.Port{ID: 0, Name: "p0", Config: &config.Interface{Name: "p0"}}
	qc := &config.Queue{Name: "q0", ID: 0, BatchSize: s.batch, MemoryRegions: []string{"src"}}
	g.q, err = engine.NewRxQueue(port, 0, qc, []*engine.Region{g.src}, g.meta, s.meta)
	if err != nil {
		t.Fatal(err)
	}
	port.Rx = []*engine.RxQueue{g.q}
	g.svc = NewService(nil)
	t.Cleanup(func() {
		if err := g.svc.Close(); err != nil {
			t.Errorf("service close: %v", err)
		}
		g.q.Drain()
		if err := g.src.Close(); err != nil {
			t.Error(err)
		}
		if err := g.out.Close(); err != nil {
			t.Error(err)
		}
	})
	return g
}

// next waits (boundedly) for the next burst: GPU aggregates arrive from the completion
// goroutine once their kernel is done.
func (g *rig) next() *engine.Burst {
	g.t.Helper()
	for i := 0; i < 20000; i++ {
		if b, ok := g.q.Next(); ok {
			return b
		}
		time.Sleep(100 * time.Microsecond)
	}
	g.t.Fatal("no aggregate within 2 s")
	return nil
}

// TestGPUPlanMatchesCPUPlan feeds identical random traffic (shuffled, lossy, duplicated,
// wrapping batch numbers, every conversion) to a cpu plan and to a gpu plan and checks that
// every aggregate is the same: info, bitmap and every byte (device output copied back).
func TestGPUPlanMatchesCPUPlan(t *testing.T) {
	dev := gputest.Device(t)
	r := newRand()
	for trial := 0; trial < 24; trial++ {
		s := randomScenario(r)
		outKind := config.KindDevice
		if trial%4 == 3 {
			outKind = config.KindHostPinned
		}
		name := fmt.Sprintf("%d/ppb%d/%s/table-in-memory=%v", trial, s.ppb, kernelName(s.conv), trial%2 == 1)
		t.Run(name, func(t *testing.T) {
			spec := rigSpec{srcBufs: 4096, srcSize: s.offset + s.payload + r.IntN(8), outBufs: 2*s.inFlight + 1, meta: 64, batch: 32}
			spec.outSize = s.ppb * s.conv.OutputLen(s.conv.InputBytes(spec.srcSize-s.offset))
			cg := newRig(t, spec)
			gg := gpuRig(t, dev, spec, outKind)
			rc := s.rc
			if trial%3 == 1 {
				// Incomplete batches dropped whole: both plans drop the same ones.
				rc.MissingAction = config.MissingDrop
				s.rc.MissingAction = config.MissingDrop
			}
			cp, err := cg.svc.Add(cg.q, &rc, cg.out, Options{MaxInFlight: s.inFlight})
			if err != nil {
				t.Fatal(err)
			}
			grc := s.rc
			grc.Type = config.ReorderGPU
			// Batches here are ≤ ParamSlots packets: half the trials stage their tables in
			// device memory, as larger batches do, instead of the launch's parameters.
			gp, err := gg.svc.Add(gg.q, &grc, gg.out, Options{MaxInFlight: s.inFlight, Kernels: testPTX(t), tableInMemory: trial%2 == 1})
			if err != nil {
				t.Fatal(err)
			}
			cg.svc.Start()
			gg.svc.Start()
			nBatches := min(int(s.keys)+3, 2048/s.ppb+2)
			start := uint64(r.Uint32())
			host := make([]byte, gg.out.BufSize)
			compare := func() {
				for _, cb := range cg.drain() {
					gb := gg.next()
					ci, _ := cb.ReorderInfo()
					gi, err := gb.ReorderInfo()
					if err != nil {
						t.Fatal(err)
					}
					if fmt.Sprint(*ci) != fmt.Sprint(*gi) || cb.Flags() != gb.Flags() || cb.PacketLen(0) != gb.PacketLen(0) {
						t.Fatalf("info differs:\n cpu %+v\n gpu %+v", ci, gi)
					}
					n := gb.PacketLen(0)
					got := gb.Packet(0)
					if got == nil {
						got = host[:n]
						if err := dev.CopyDtoH(got, cudart.DevicePtr(gb.SegmentAddr(0, 0))); err != nil {
							t.Fatal(err)
						}
					}
					if want := cb.Packet(0); !bytes.Equal(got, want) {
						t.Fatalf("batch %d: GPU aggregate differs from CPU's", ci.BatchID)
					}
					cb.Free()
					gb.Free()
				}
			}
			for b0 := 0; b0 < nBatches; b0 += s.inFlight {
				var group []pkt
				for b := b0; b < min(b0+s.inFlight, nBatches); b++ {
					for slot := 0; slot < s.ppb; slot++ {
						if r.IntN(8) == 0 && slot != 0 {
							continue
						}
						n := s.payload
						if r.IntN(10) == 0 && s.conv.InputBytes(s.payload/2) > 0 {
							n = s.conv.InputBytes(s.payload / 2) // shorter: zero-padded on both sides
						}
						payload := make([]byte, n)
						for j := range payload {
							payload[j] = byte(r.Uint32())
						}
						p := pkt{data: s.frame(start+uint64(b), slot, payload), flow: 7}
						group = append(group, p)
						if r.IntN(12) == 0 {
							group = append(group, p)
						}
					}
				}
				r.Shuffle(len(group), func(i, j int) { group[i], group[j] = group[j], group[i] })
				bs := r.IntN(32) + 1
				cg.send(group, bs)
				gg.send(group, bs)
				compare()
			}
			cg.svc.Flush()
			gg.svc.Flush()
			compare()
			if cs, gs := cp.Stats(), gp.Stats(); cs != gs {
				t.Fatalf("stats differ:\n cpu %+v\n gpu %+v", cs, gs)
			}
			if b, ok := gg.q.Next(); ok {
				t.Fatalf("GPU plan delivered an extra burst (%d packets)", b.Len())
			}
			cg.checkReturned()
			for i := 0; i < 1000 && gg.src.Available() != gg.src.NumBufs; i++ {
				time.Sleep(time.Millisecond)
			}
			gg.checkReturned()
		})
	}
}

// TestGPUPlanRejectsUnusableRegions: a gpu plan needs GPU-readable source and GPU-writable
// output memory.
func TestGPUPlanRejectsUnusableRegions(t *testing.T) {
	g := newRig(t, rigSpec{srcBufs: 4, srcSize: 64, outBufs: 2, outSize: 1024})
	rc := config.Reorder{Name: "g", Type: config.ReorderGPU, PayloadByteOffset: 4, FlowIDs: []int{1},
		Method: config.ReorderMethod{Kind: config.MethodSeqPacketsPerBatch, Seq: config.BitField{Width: 8}, PacketsPerBatch: 4}}
	if _, err := g.svc.Add(g.q, &rc, g.out, Options{}); err == nil {
		t.Fatal("gpu plan over plain host memory accepted")
	}
}
