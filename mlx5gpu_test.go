package daqiri

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/cudart"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/internal/testutil/gputest"
	"github.com/daqiri-go/daqiri/mlx5/model/modelch"
)

// TestGPUReorderFedByMLX5 (issue 27): the GPU reorder plan fed by the mlx5 engine. Two pairs
// of model ports carry the same packets in the same order: model:0 → model:1, whose queue
// feeds a cpu plan, and model:2 → model:3, whose queue feeds a gpu plan with its output in
// device memory. The RX regions are host_pinned (the model writes them; a gpu plan reads its
// sources' sequence numbers with the CPU, so device-memory sources are not supported by the
// plan yet). Every aggregate of the gpu plan, copied back from the GPU, equals the cpu plan's
// aggregate of the same batch — info, presence bitmap and every byte — complete batches and
// batches missing a slot alike. The model stands in for the ConnectX; no NIC wrote GPU memory.
func TestGPUReorderFedByMLX5(t *testing.T) {
	dev := gputest.Device(t)
	const ppb, payload, batches = 32, 512, 48
	seq := config.BitField{Offset: 42 * 8, Width: 16}
	plan := func(name string, typ config.ReorderType, out string, flow int) config.Reorder {
		return config.Reorder{Name: name, Type: typ, MemoryRegion: out, PayloadByteOffset: 44, FlowIDs: []int{flow},
			Method:    config.ReorderMethod{Kind: config.MethodSeqPacketsPerBatch, Seq: seq, PacketsPerBatch: ppb},
			DataTypes: &config.DataTypes{Input: config.TypeInt16, Output: config.TypeFP32, Endianness: config.EndianNetwork}}
	}
	// Flow ids are unique across interfaces: 1 on r1, 2 on r3.
	flow := func(id int) config.Flow {
		return config.Flow{Name: "f", ID: id, Actions: []config.Action{{Type: config.ActionQueue, Queues: []int{0}}},
			Match: config.Match{UDPDst: config.PortRange{Lo: 5000, Hi: 5000}}}
	}
	txIfc := func(name, addr, region string) config.Interface {
		return config.Interface{Name: name, Address: addr, TX: &config.TxConfig{Queues: []config.Queue{{Name: "t", ID: 0, CPUCore: "0", BatchSize: 64, MemoryRegions: []string{region}}}}}
	}
	rxIfc := func(name, addr, region string, r config.Reorder) config.Interface {
		return config.Interface{Name: name, Address: addr, RX: &config.RxConfig{
			Queues:   []config.Queue{{Name: "q", ID: 0, CPUCore: "1", BatchSize: 64, MemoryRegions: []string{region}}},
			Flows:    []config.Flow{flow(r.FlowIDs[0])},
			Reorders: []config.Reorder{r}}}
	}
	cfg := &config.Config{Version: 1, StreamType: config.StreamRaw, LogLevel: "error", RxMetaBuffers: 256, TxMetaBuffers: 64,
		MemoryRegions: []config.MemoryRegion{
			{Name: "tx0", Kind: config.KindHost, NumBufs: 1024, BufSize: 2048},
			{Name: "tx2", Kind: config.KindHost, NumBufs: 1024, BufSize: 2048},
			{Name: "rx1", Kind: config.KindHostPinned, NumBufs: 4096, BufSize: 2048},
			{Name: "rx3", Kind: config.KindHostPinned, NumBufs: 4096, BufSize: 2048},
			{Name: "out1", Kind: config.KindHost, NumBufs: 64, BufSize: ppb * (2048 - 44) * 2},
			{Name: "out3", Kind: config.KindDevice, NumBufs: 64, BufSize: ppb * (2048 - 44) * 2},
		},
		Interfaces: []config.Interface{
			txIfc("t0", "model:0", "tx0"), rxIfc("r1", "model:1", "rx1", plan("cpu", config.ReorderCPU, "out1", 1)),
			txIfc("t2", "model:2", "tx2"), rxIfc("r3", "model:3", "rx3", plan("gpu", config.ReorderGPU, "out3", 2)),
		},
	}
	s := openModelSession(t, cfg)
	r := rand.New(rand.NewPCG(27, 1024))
	frame := func(dst int, sq uint16, body []byte) []byte {
		f := make([]byte, 44+len(body))
		copy(f[0:], modelch.MAC(dst))
		copy(f[6:], modelch.MAC(dst-1))
		binary.BigEndian.PutUint16(f[12:], 0x0800)
		ip := f[14:34]
		ip[0], ip[8], ip[9] = 0x45, 64, 17
		binary.BigEndian.PutUint16(ip[2:], uint16(len(f)-14))
		copy(ip[12:], []byte{10, 0, 0, 1, 10, 0, 0, 2})
		binary.BigEndian.PutUint16(ip[10:], engine.IPv4Checksum(ip))
		binary.BigEndian.PutUint16(f[34:], 4000)
		binary.BigEndian.PutUint16(f[36:], 5000)
		binary.BigEndian.PutUint16(f[38:], uint16(len(f)-34))
		binary.BigEndian.PutUint16(f[42:], sq)
		copy(f[44:], body)
		return f
	}
	type agg struct {
		info string
		data []byte
	}
	got := [2]map[uint64]agg{{}, {}}
	collect := func() {
		for side, port := range []int{1, 3} {
			for {
				b, err := s.RxBurst(port, 0)
				if errors.Is(err, ErrNotReady) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				ri, err := b.ReorderInfo()
				if err != nil {
					t.Fatalf("port %d delivered a burst that is no aggregate: %v", port, err)
				}
				n := b.PacketLen(0)
				d := b.Packet(0)
				if d == nil {
					d = make([]byte, n)
					if err := dev.CopyDtoH(d, cudart.DevicePtr(b.SegmentAddr(0, 0))); err != nil {
						t.Fatal(err)
					}
				} else {
					d = append([]byte(nil), d...)
				}
				if _, dup := got[side][ri.BatchID]; dup {
					t.Fatalf("port %d: batch %d twice", port, ri.BatchID)
				}
				got[side][ri.BatchID] = agg{fmt.Sprintf("%+v flags %v", *ri, b.Flags()), d}
				b.Free()
			}
		}
	}
	sent := 0
	for bt := 0; bt < batches; bt++ {
		var frames [][]byte
		for slot := 0; slot < ppb; slot++ {
			if bt%5 == 4 && slot == 3 {
				continue // a batch missing a slot: flushed at the end
			}
			body := make([]byte, payload)
			for j := range body {
				body[j] = byte(r.Uint32())
			}
			frames = append(frames, frame(1, uint16(bt*ppb+slot), body))
		}
		r.Shuffle(len(frames), func(i, j int) { frames[i], frames[j] = frames[j], frames[i] })
		other := make([][]byte, len(frames))
		for i, f := range frames {
			g := append([]byte(nil), f...)
			copy(g[0:], modelch.MAC(3))
			copy(g[6:], modelch.MAC(2))
			other[i] = g
		}
		sendFrames(t, s, 0, frames)
		sendFrames(t, s, 2, other)
		sent += len(frames)
		// A complete batch is emitted as its last packet arrives: wait for it on both
		// sides before the next (bounded), so that the output regions never run dry.
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Microsecond) {
			collect()
			_, c := got[0][uint64(bt)]
			_, g := got[1][uint64(bt)]
			if bt%5 == 4 || c && g {
				break
			}
		}
	}
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		collect()
		if len(got[0]) >= batches-batches/5 && len(got[1]) >= batches-batches/5 {
			break
		}
	}
	if err := s.FlushReorder(); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end) && (len(got[0]) < batches || len(got[1]) < batches); time.Sleep(time.Millisecond) {
		collect()
	}
	if len(got[0]) != batches || len(got[1]) != batches {
		t.Fatalf("aggregates: cpu plan %d, gpu plan %d, want %d each (%d packets sent to each)", len(got[0]), len(got[1]), batches, sent)
	}
	incomplete := 0
	for id, c := range got[0] {
		g := got[1][id]
		if c.info != g.info {
			t.Fatalf("batch %d: info differs:\n cpu %s\n gpu %s", id, c.info, g.info)
		}
		if !bytes.Equal(c.data, g.data) {
			t.Fatalf("batch %d: the gpu plan's aggregate differs from the cpu plan's", id)
		}
		if bytes.Contains([]byte(c.info), []byte("Missing:1 ")) {
			incomplete++
		}
	}
	if incomplete != batches/5 {
		t.Fatalf("%d batches missing a slot, want %d", incomplete, batches/5)
	}
	st, _ := s.ReorderStats(3, "gpu")
	t.Logf("%d batches (%d missing a slot) from %d packets per plan equal byte for byte; gpu plan %+v", batches, incomplete, sent, st)
}

// TestGPUHWReorderSession (issue 32): reorder_engine: hw with its output region in GPU
// memory. The model (standing in for the ConnectX; no NIC wrote GPU memory) writes each
// packet's payload through the flow's slot rule straight into its slot of a device buffer;
// every aggregate is copied back and compared byte for byte, with the out-of-range and
// duplicate packets of the second batch counted and placed nowhere (TestHWReorderSession's
// checks, in device memory).
func TestGPUHWReorderSession(t *testing.T) {
	dev := gputest.Device(t)
	const ppb, slot = 1024, 128
	cfg := hwReorderConfig(ppb, slot)
	for i := range cfg.MemoryRegions {
		if cfg.MemoryRegions[i].Name == "out" {
			cfg.MemoryRegions[i].Kind = config.KindDevice
		}
	}
	hwReorderRun(t, cfg, ppb, slot, 3, func(b *Burst) []byte {
		if b.Packet(0) != nil {
			t.Fatal("the aggregate of a device region has a CPU view")
		}
		d := make([]byte, b.PacketLen(0))
		if err := dev.CopyDtoH(d, cudart.DevicePtr(b.SegmentAddr(0, 0))); err != nil {
			t.Fatal(err)
		}
		return d
	})
}
