package daqiri

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/cudart"
	"github.com/daqiri-go/daqiri/engine"
)

// fakeEngine stands in for a raw engine: the test delivers bursts into its ports' queues the
// way an engine worker would.
type fakeEngine struct{ ports []*engine.Port }

func (f *fakeEngine) Send(*engine.Burst) error { return ErrNotSupported }
func (f *fakeEngine) Close() error             { return nil }

// withFakeLoopback is an Open option that routes the software-loopback engine name to a fake.
func withFakeLoopback() (*fakeEngine, Option) {
	f := &fakeEngine{}
	return f, withEngine(config.EngineLoopback, func(_ context.Context, env *engine.Env) (engine.Engine, error) {
		f.ports = env.Ports
		return f, nil
	})
}

// rawReorderConfig: one raw port, one queue, flows 10 and 20 to it, plan "a" (cpu, 8 slots,
// 16-bit sequence number at byte 14, int16 → fp32 in network order) on flow 10 and plan "b"
// (raw copy, 4 slots) on flow 20.
func rawReorderConfig() *config.Config {
	flow := func(id int) config.Flow {
		return config.Flow{Name: "f", ID: id, Actions: []config.Action{{Type: config.ActionQueue, Queues: []int{0}}},
			Match: config.Match{UDPSrc: config.PortRange{Lo: uint16(id), Hi: uint16(id)}, UDPDst: config.PortRange{Lo: uint16(id), Hi: uint16(id)}}}
	}
	seq := config.BitField{Offset: 14 * 8, Width: 16}
	return &config.Config{Version: 1, StreamType: config.StreamRaw, Loopback: "sw", LogLevel: "error", RxMetaBuffers: 32, TxMetaBuffers: 8,
		MemoryRegions: []config.MemoryRegion{
			{Name: "rx", Kind: config.KindHost, NumBufs: 64, BufSize: 128},
			{Name: "out", Kind: config.KindHost, NumBufs: 8, BufSize: 8 * 2 * 112},
		},
		Interfaces: []config.Interface{{Name: "lb", Address: "lo", RX: &config.RxConfig{
			Queues: []config.Queue{{Name: "q", ID: 0, CPUCore: "0", BatchSize: 16, MemoryRegions: []string{"rx"}}},
			Flows:  []config.Flow{flow(10), flow(20)},
			Reorders: []config.Reorder{
				{Name: "a", Type: config.ReorderCPU, MemoryRegion: "out", PayloadByteOffset: 16, FlowIDs: []int{10},
					Method:    config.ReorderMethod{Kind: config.MethodSeqPacketsPerBatch, Seq: seq, PacketsPerBatch: 8},
					DataTypes: &config.DataTypes{Input: config.TypeInt16, Output: config.TypeFP32, Endianness: config.EndianNetwork}},
				{Name: "b", Type: config.ReorderCPU, MemoryRegion: "out", PayloadByteOffset: 16, FlowIDs: []int{20},
					Method: config.ReorderMethod{Kind: config.MethodSeqPacketsPerBatch, Seq: seq, PacketsPerBatch: 4}},
			},
		}}},
	}
}

// TestSessionReorder opens a raw configuration with two plans on one queue, feeds it shuffled
// packets of both flows plus unrelated ones, and checks the aggregates, the passed-through
// burst, ReorderStats, FlushReorder and that Close gets every buffer back.
func TestSessionReorder(t *testing.T) {
	f, fake := withFakeLoopback()
	s, err := Open(context.Background(), rawReorderConfig(), fake)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	q := f.ports[0].Rx[0]
	if q.Intercept == nil {
		t.Fatal("reorder hook did not intercept the queue")
	}
	r := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	src := s.Region("rx")
	type p struct {
		flow uint32
		seq  uint16
		body []byte
	}
	var ps []p
	bodyA := map[int][]byte{}
	for k := 0; k < 8; k++ { // plan a: batch 3 (seqs 24..31), slot 5 lost
		if k != 5 {
			bodyA[k] = []byte{0x80, 0x00, byte(r.Uint32()), byte(r.Uint32())}
			ps = append(ps, p{10, uint16(24 + k), bodyA[k]})
		}
	}
	for k := 0; k < 4; k++ { // plan b: batch 0, complete
		ps = append(ps, p{20, uint16(k), []byte{byte(k), 1, 2, 3}})
	}
	ps = append(ps, p{30, 0, []byte("pass")}, p{30, 1, []byte("thru")})
	r.Shuffle(len(ps), func(i, j int) { ps[i], ps[j] = ps[j], ps[i] })
	b, err := q.NewBurst()
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range ps {
		idx, _ := src.Get()
		buf := src.Buf(idx)
		clear(buf[:16])
		binary.BigEndian.PutUint16(buf[14:], x.seq)
		copy(buf[16:], x.body)
		b.Append(uint64(idx)*uint64(src.BufSize), uint32(16+len(x.body)), x.flow, 0)
	}
	q.Deliver(b)

	var aggA, aggB, pass *Burst
	for i := 0; i < 2; i++ {
		b, err := s.RxBurst(0, 0)
		if err != nil {
			t.Fatalf("burst %d: %v", i, err)
		}
		info, err := b.ReorderInfo()
		switch {
		case err != nil:
			pass = b
		case info.PacketsPerBatch == 4:
			aggB = b
		default:
			aggA = b
		}
	}
	if aggB == nil || pass == nil {
		t.Fatalf("want plan b's aggregate and the passed-through packets first; got b=%v pass=%v a=%v", aggB, pass, aggA)
	}
	if pass.Len() != 2 || pass.FlowID(0) != 30 || pass.FlowID(1) != 30 {
		t.Fatalf("passed-through burst: %d packets", pass.Len())
	}
	if got := string(pass.Packet(0)[16:]) + string(pass.Packet(1)[16:]); got != "passthru" && got != "thrupass" {
		t.Fatalf("passed-through payloads %q", got)
	}
	pass.Free()
	bi, _ := aggB.ReorderInfo()
	if bi.BatchID != 0 || bi.Flags != FlagReordered || aggB.Flags()&FlagReordered == 0 {
		t.Fatalf("plan b aggregate %+v", bi)
	}
	for k := 0; k < 4; k++ {
		if got := aggB.Packet(0)[k*4 : k*4+4]; !bytes.Equal(got, []byte{byte(k), 1, 2, 3}) {
			t.Fatalf("plan b slot %d: %x", k, got)
		}
	}
	aggB.Free()
	if aggA != nil {
		t.Fatal("plan a delivered an incomplete batch without timeout or flush")
	}
	if err := s.FlushReorder(); err != nil {
		t.Fatal(err)
	}
	aggA, err = s.RxBurst(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	ai, _ := aggA.ReorderInfo()
	if ai.BatchID != 3 || ai.Missing != 1 || ai.Present[0] != 0xdf || ai.Flags != FlagReordered|FlagReorderTimeout || ai.AggregateLen != 8*8 {
		t.Fatalf("plan a aggregate %+v", ai)
	}
	d := aggA.Packet(0)
	// Slot k holds two big-endian int16 samples as fp32: −32768 (0xc7000000), then the random
	// one; slot 5 is zeros.
	for k := 0; k < 8; k++ {
		slot := d[k*8 : k*8+8]
		if k == 5 {
			if !bytes.Equal(slot, make([]byte, 8)) {
				t.Fatalf("missing slot not zero-filled: %x", slot)
			}
			continue
		}
		second := math.Float32bits(float32(int16(binary.BigEndian.Uint16(bodyA[k][2:]))))
		if binary.LittleEndian.Uint32(slot[0:]) != 0xc7000000 || binary.LittleEndian.Uint32(slot[4:]) != second {
			t.Fatalf("slot %d: %x", k, slot)
		}
	}
	aggA.Free()
	st, err := s.ReorderStats(0, "a")
	if err != nil || st.Packets != 7 || st.Incomplete != 1 || st.MissingSlots != 1 {
		t.Fatalf("ReorderStats(a) = %+v, %v", st, err)
	}
	if _, err := s.ReorderStats(0, "nope"); !errors.Is(err, ErrInvalidParameter) {
		t.Fatalf("unknown plan: %v", err)
	}
	if _, err := s.ReorderStats(7, "a"); !errors.Is(err, ErrInvalidParameter) {
		t.Fatalf("bad port: %v", err)
	}
}

// TestSessionReorderBadPlan: a plan that cannot work fails Open with the plan's key path,
// and nothing stays allocated.
func TestSessionReorderBadPlan(t *testing.T) {
	_, fake := withFakeLoopback()
	cfg := rawReorderConfig()
	cfg.MemoryRegions[1].Kind = config.KindHostPinned // needs a GPU
	_, err := Open(context.Background(), cfg, fake)
	if _, drvErr := cudart.Open(); drvErr == nil {
		t.Skip("a GPU is present: host_pinned allocates; the no-driver error cannot be checked here")
	}
	if err == nil || !strings.Contains(err.Error(), "needs an NVIDIA GPU and driver (libcuda.so.1)") {
		t.Fatalf("host_pinned without a driver: %v", err)
	}
}

func TestSessionWithoutReorder(t *testing.T) {
	_, fake := withFakeLoopback()
	cfg := rawReorderConfig()
	cfg.Interfaces[0].RX.Reorders = nil
	s, err := Open(context.Background(), cfg, fake)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.FlushReorder(); !errors.Is(err, ErrNotSupported) {
		t.Fatalf("FlushReorder without plans: %v", err)
	}
	if _, err := s.ReorderStats(0, "a"); !errors.Is(err, ErrInvalidParameter) {
		t.Fatalf("ReorderStats without plans: %v", err)
	}
}
