package daqiri

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/mlx5/model/modelch"
)

// hwReorderConfig is model:0 sending to model:1, whose flow 1 (UDP destination 5000) feeds a
// reorder_engine: hw plan of ppb slots of slot bytes: the payload after the 42-byte
// Ethernet/IPv4/UDP header, whose first 32 bits are the sequence number (bit 336).
func hwReorderConfig(ppb, slot int) *config.Config {
	return &config.Config{Version: 1, StreamType: config.StreamRaw, LogLevel: "error", RxMetaBuffers: 256, TxMetaBuffers: 64,
		MemoryRegions: []config.MemoryRegion{
			{Name: "tx", Kind: config.KindHost, NumBufs: 1024, BufSize: 2048},
			{Name: "rx", Kind: config.KindHost, NumBufs: 1024, BufSize: 2048},
			{Name: "out", Kind: config.KindHost, NumBufs: 4, BufSize: ppb * slot},
		},
		Interfaces: []config.Interface{
			{Name: "t", Address: "model:0", TX: &config.TxConfig{Queues: []config.Queue{{Name: "t", ID: 0, CPUCore: "0", BatchSize: 64, MemoryRegions: []string{"tx"}}}}},
			{Name: "r", Address: "model:1", RX: &config.RxConfig{
				FlowIsolation: true,
				Queues:        []config.Queue{{Name: "q", ID: 0, CPUCore: "1", BatchSize: 64, MemoryRegions: []string{"rx"}}},
				Flows: []config.Flow{{Name: "seq", ID: 1, Actions: []config.Action{{Type: config.ActionQueue, Queues: []int{0}}},
					Match: config.Match{UDPDst: config.PortRange{Lo: 5000, Hi: 5000}}}},
				Reorders: []config.Reorder{{Name: "hw", Type: config.ReorderCPU, Engine: config.ReorderEngineHW, CyclicSequence: true,
					MemoryRegion: "out", PayloadByteOffset: 42, FlowIDs: []int{1},
					Method: config.ReorderMethod{Kind: config.MethodSeqPacketsPerBatch, Seq: config.BitField{Offset: 42 * 8, Width: 32}, PacketsPerBatch: ppb}}},
			}},
		},
	}
}

// seqPayload is a slot's payload: the sequence number, then random bytes.
func seqPayload(r *rand.Rand, seq uint32, n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(r.Uint32())
	}
	binary.BigEndian.PutUint32(p, seq)
	return p
}

// udpTo1 is an IPv4/UDP frame from model:0 to model:1's UDP port 5000.
func udpTo1(payload []byte) []byte {
	f := make([]byte, 42+len(payload))
	copy(f[0:], modelch.MAC(1))
	copy(f[6:], modelch.MAC(0))
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:34]
	ip[0], ip[8], ip[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(ip[2:], uint16(len(f)-14))
	copy(ip[12:], []byte{10, 0, 0, 1, 10, 0, 0, 2})
	binary.BigEndian.PutUint16(ip[10:], engine.IPv4Checksum(ip))
	binary.BigEndian.PutUint16(f[34:], 4000)
	binary.BigEndian.PutUint16(f[36:], 5000)
	binary.BigEndian.PutUint16(f[38:], uint16(len(f)-34))
	copy(f[42:], payload)
	return f
}

// sendFrames sends frames from the port's queue 0, 32 at a time (waiting, bounded, for TX
// room).
func sendFrames(t *testing.T, s *Session, port int, frames [][]byte) {
	t.Helper()
	for i := 0; i < len(frames); {
		n := min(32, len(frames)-i)
		var b *Burst
		var err error
		for try := 0; ; try++ {
			if b, err = s.TxBurst(port, 0, n); err == nil {
				break
			}
			if try > 20000 {
				t.Fatalf("port %d: no TX burst: %v", port, err)
			}
			time.Sleep(50 * time.Microsecond)
		}
		for j := 0; j < n; j++ {
			if err := b.SetPacketLengths(j, len(frames[i+j])); err != nil {
				t.Fatal(err)
			}
			copy(b.Packet(j), frames[i+j])
		}
		if err := s.Send(b); err != nil {
			t.Fatalf("port %d: Send: %v", port, err)
		}
		i += n
	}
}

// TestHWReorderSession (issue 32): reorder_engine: hw through daqiri.Open and RxBurst on model
// ports. Batches of 1,024 packets sent in a random order arrive as one aggregate each whose
// slot k holds, byte for byte, the payload of the packet with sequence number k — placed by
// the NIC (the model) through the flex parser's sample of the sequence field and one steering
// rule per slot; the session runs no reorder service, so no CPU or GPU step moved a byte. In
// the second batch, 7 packets with sequence numbers past the batch and 5 duplicates (sent
// after their originals, before the batch's last packet) are counted — plan and queue — and
// never placed: every aggregate still matches exactly.
func TestHWReorderSession(t *testing.T) {
	const ppb, slot = 1024, 128
	hwReorderRun(t, hwReorderConfig(ppb, slot), ppb, slot, 3, func(b *Burst) []byte { return b.Packet(0) })
}

// hwReorderRun sends batches of ppb shuffled packets of slot-byte payloads through cfg (as
// hwReorderConfig builds it), with 7 out-of-range and 5 duplicate packets in the second
// batch, and checks every aggregate, read by read, byte for byte, and the plan's and the
// queue's counts.
func hwReorderRun(t *testing.T, cfg *config.Config, ppb, slot, batches int, read func(*Burst) []byte) {
	t.Helper()
	const oor, dups = 7, 5
	s := openModelSession(t, cfg)
	if s.reorder != nil {
		t.Fatal("the session runs a software reorder service for a hardware plan")
	}
	r := rand.New(rand.NewPCG(32, 290))
	send := func(frames [][]byte) { sendFrames(t, s, 0, frames) }
	for bt := 0; bt < batches; bt++ {
		want := make([][]byte, ppb)
		order := r.Perm(ppb)
		frames := make([][]byte, 0, ppb+oor+dups)
		for _, k := range order {
			want[k] = seqPayload(r, uint32(k), slot)
			frames = append(frames, udpTo1(want[k]))
		}
		if bt == 1 {
			// Out of range anywhere; each duplicate right after its original (and so before
			// the batch's last packet), with other bytes that must not land anywhere.
			for i := range oor {
				at := r.IntN(len(frames))
				f := udpTo1(seqPayload(r, uint32(ppb+r.IntN(1<<20)+i), slot))
				frames = append(frames[:at], append([][]byte{f}, frames[at:]...)...)
			}
			for i := range dups {
				at := 10 + 100*i
				k := binary.BigEndian.Uint32(frames[at][42:])
				if k >= uint32(ppb) {
					at++
					k = binary.BigEndian.Uint32(frames[at][42:])
				}
				f := udpTo1(seqPayload(r, k, slot))
				frames = append(frames[:at+1], append([][]byte{f}, frames[at+1:]...)...)
			}
		}
		send(frames)
		b := waitAggregate(t, s, fmt.Sprintf("batch %d", bt))
		ri, err := b.ReorderInfo()
		if err != nil {
			t.Fatalf("batch %d: the burst is no aggregate: %v", bt, err)
		}
		if ri.BatchID != uint64(bt) || ri.SourcePackets != ppb || ri.PacketsPerBatch != ppb || ri.Missing != 0 ||
			ri.PayloadLen != slot || ri.AggregateLen != ppb*slot || b.Flags()&FlagReorderTimeout != 0 || b.FlowID(0) != 1 {
			t.Fatalf("batch %d: info %+v flags %v flow %d", bt, *ri, b.Flags(), b.FlowID(0))
		}
		d := read(b)
		if len(d) != ppb*slot {
			t.Fatalf("batch %d: aggregate of %d bytes, want %d", bt, len(d), ppb*slot)
		}
		for k := range ppb {
			if !bytes.Equal(d[k*slot:(k+1)*slot], want[k]) {
				t.Fatalf("batch %d: slot %d differs from the payload of packet %d", bt, k, k)
			}
		}
		b.Free()
	}
	st, err := s.ReorderStats(1, "hw")
	if err != nil {
		t.Fatal(err)
	}
	if st.Packets != uint64(batches*ppb) || st.Aggregates != uint64(batches) || st.Complete != uint64(batches) || st.Incomplete != 0 ||
		st.OutOfRange != oor || st.Duplicates != dups || st.Malformed != 0 || st.Received != uint64(batches*ppb+oor+dups) {
		t.Fatalf("plan stats %+v: want %d packets in %d complete aggregates, %d out of range, %d duplicates", st, batches*ppb, batches, oor, dups)
	}
	q := s.Stats().Ports[1].Rx[0]
	if q.Drops["out_of_range"] != oor || q.Drops["duplicate"] != dups || q.Packets != uint64(batches) {
		t.Fatalf("queue stats: %d aggregates, drops %v; want %d, out_of_range %d, duplicate %d", q.Packets, q.Drops, batches, oor, dups)
	}
	t.Logf("%d batches of %d packets placed in order by the NIC; %d out of range and %d duplicates counted, none placed", batches, ppb, oor, dups)
}

// TestHWReorderRefused: an engine without hardware reorder refuses the key, naming it; so
// does the mlx5 engine for a plan its NIC cannot run (no free rule for a plan: checked by
// config), and config refuses a plan the flex parser cannot sample.
func TestHWReorderRefused(t *testing.T) {
	cfg := hwReorderConfig(64, 128)
	cfg.Loopback = "sw"
	_, err := Open(context.Background(), cfg, WithMLX5Fabric(&modelch.Fabric{}))
	if err == nil || !strings.Contains(err.Error(), "interfaces[1].rx.reorder_configs[0].reorder_engine: reorder_engine: hw needs engine mlx5") {
		t.Fatalf("engine loopback: %v, want a refusal naming reorder_engine", err)
	}
	cfg = hwReorderConfig(4096, 16)
	_, err = Open(context.Background(), cfg, WithMLX5Fabric(&modelch.Fabric{}))
	if err == nil || !strings.Contains(err.Error(), "interfaces[1].rx.reorder_configs[0].method.seq_packets_per_batch.packets_per_batch: 4096 slots") {
		t.Fatalf("4096 slots: %v, want a refusal naming packets_per_batch", err)
	}
	cfg = hwReorderConfig(64, 128)
	cfg.Interfaces[1].RX.Reorders[0].CyclicSequence = false
	_, err = Open(context.Background(), cfg, WithMLX5Fabric(&modelch.Fabric{}))
	if err == nil || !strings.Contains(err.Error(), "interfaces[1].rx.reorder_configs[0].cyclic_sequence: reorder_engine: hw requires cyclic_sequence: true") {
		t.Fatalf("no cyclic_sequence: %v, want a refusal naming cyclic_sequence", err)
	}
}

// openModelSession opens cfg on the device model's ports and closes the session when the
// test ends, failing the test if Close reports an error.
func openModelSession(t *testing.T, cfg *config.Config) *Session {
	t.Helper()
	s, err := Open(context.Background(), cfg, WithMLX5Fabric(&modelch.Fabric{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// waitAggregate waits (at most 30 s) for the next burst of port 1's queue 0, where the "hw"
// plan delivers its aggregates; what names the wait in a failure.
func waitAggregate(t *testing.T, s *Session, what string) *Burst {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Microsecond) {
		b, err := s.RxBurst(1, 0)
		if err == nil {
			return b
		}
		if !errors.Is(err, ErrNotReady) {
			t.Fatalf("%s: %v", what, err)
		}
		if time.Now().After(end) {
			st, _ := s.ReorderStats(1, "hw")
			t.Fatalf("%s: no aggregate within 30 s (plan %+v)", what, st)
		}
	}
}

// TestHWReorderTimeout: a hardware batch missing slots when the queue's timeout_us has
// passed is ended as upstream ends it — the missing slots' RQs reset, then (passthrough)
// delivered with FlagReorderTimeout, its missing slots zero-filled and named by the presence
// bitmap, or (drop) dropped whole and counted — and the next batch, sent after, fills every
// slot again, the reset ones included, byte for byte.
//
// The timeout runs from the batch's first packet, so it also ends a batch whose frames are
// still arriving when the sender is slower than timeout_us (under -race or on a loaded CPU,
// sending 256 frames through the model can take longer than 300 ms). Whether that happened
// is known without trusting the plan: an attempt counts only when every frame of both
// batches had reached the model's receive port (its counters) before timeout_us had passed
// since the first was sent; otherwise its results are checked as far as they go and it is
// repeated in a fresh session with a 4 times longer timeout, a bounded number of times.
func TestHWReorderTimeout(t *testing.T) {
	for _, action := range []config.MissingAction{config.MissingPassthrough, config.MissingDrop} {
		t.Run(string(action), func(t *testing.T) {
			timeoutUs := 300000
			for attempt := 0; ; attempt++ {
				if hwReorderTimeoutAttempt(t, action, timeoutUs) {
					return
				}
				if attempt == 3 {
					t.Fatalf("the frames of a batch took longer than timeout_us to arrive in every attempt, the last with %d µs", timeoutUs)
				}
				t.Logf("a batch took longer than timeout_us %d to arrive; again with %d", timeoutUs, 4*timeoutUs)
				timeoutUs *= 4
			}
		})
	}
}

// hwReorderTimeoutAttempt is one run of TestHWReorderTimeout in its own session; false when
// a batch's frames took longer than timeout_us to arrive, so that the attempt proves
// nothing.
func hwReorderTimeoutAttempt(t *testing.T, action config.MissingAction, timeoutUs int) bool {
	t.Helper()
	const ppb, slot = 256, 64
	cfg := hwReorderConfig(ppb, slot)
	cfg.Interfaces[1].RX.Queues[0].TimeoutUs = timeoutUs // longer than sending a batch takes, so only the skipped slots miss
	cfg.Interfaces[1].RX.Reorders[0].MissingAction = action
	fab := &modelch.Fabric{}
	s, err := Open(context.Background(), cfg, WithMLX5Fabric(fab))
	if err != nil {
		t.Fatal(err)
	}
	var held []*Burst // freed before Close, also when a check fails
	defer func() {
		for _, b := range held {
			b.Free()
		}
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	r := rand.New(rand.NewPCG(32, 291))
	// arrived is how many frames model port 1 has taken in, whatever became of them.
	arrived := func() uint64 {
		c := fab.Device(1).Counters()
		return c.RXPackets + c.RXOutOfBuffer + c.RXSteeringMiss + c.RXDropRule + c.RXNotReady + c.RXErrors
	}
	// recv waits (bounded) for the next aggregate; nil when the plan dropped a batch.
	recv := func(dropped uint64) *Burst {
		for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Microsecond) {
			b, err := s.RxBurst(1, 0)
			if err == nil {
				held = append(held, b)
				return b
			}
			if !errors.Is(err, ErrNotReady) {
				t.Fatal(err)
			}
			if st, _ := s.ReorderStats(1, "hw"); st.Dropped > dropped {
				return nil
			}
		}
		t.Fatal("no aggregate and no dropped batch within 30 s")
		return nil
	}
	// batch sends one batch in a random order without the skipped slots and waits (bounded)
	// until the model has taken in every frame; it returns every slot's payload and whether
	// that took less than timeout_us from the first Send. The plan's clock for the timeout
	// starts when it reads the first frame's completion, after the first Send: when the last
	// frame has arrived before timeout_us has passed since that Send, the timeout cannot
	// have ended the batch before all its frames were placed.
	//
	// unarmed reports frames that found their slot RQ without a WQE (model out_of_buffer or
	// not ready): the plan posts the next batch's slots before it publishes a timed-out batch
	// (aggregate or drop), so a batch sent after that shows, arriving in time, finds them.
	batch := func(skip map[int]bool) (want [][]byte, inTime, unarmed bool) {
		want = make([][]byte, ppb)
		var frames [][]byte
		for _, k := range r.Perm(ppb) {
			want[k] = seqPayload(r, uint32(k), slot)
			if !skip[k] {
				frames = append(frames, udpTo1(want[k]))
			}
		}
		base := arrived()
		c0 := fab.Device(1).Counters()
		start := time.Now()
		sendFrames(t, s, 0, frames)
		for end := time.Now().Add(30 * time.Second); arrived()-base < uint64(len(frames)); time.Sleep(20 * time.Microsecond) {
			if time.Now().After(end) {
				t.Fatalf("model port 1 took in %d of %d frames within 30 s", arrived()-base, len(frames))
			}
		}
		inTime = time.Since(start) < time.Duration(timeoutUs)*time.Microsecond
		c := fab.Device(1).Counters()
		return want, inTime, c.RXOutOfBuffer+c.RXNotReady > c0.RXOutOfBuffer+c0.RXNotReady
	}
	// checkPresent: every slot the bitmap names holds its packet's payload, every other one
	// zeros.
	checkPresent := func(what string, b *Burst, ri *ReorderInfo, want [][]byte) {
		d := b.Packet(0)
		missing := map[int]bool{}
		for _, k := range ri.MissingSlots(nil) {
			missing[k] = true
		}
		for k := range ppb {
			w := want[k]
			if missing[k] {
				w = make([]byte, slot)
			}
			if !bytes.Equal(d[k*slot:(k+1)*slot], w) {
				t.Fatalf("%s: slot %d (missing %v) differs", what, k, missing[k])
			}
		}
	}
	skip := map[int]bool{3: true, 100: true, 255: true}
	want, inTime, _ := batch(skip)
	b := recv(0)
	st, _ := s.ReorderStats(1, "hw")
	if action == config.MissingDrop {
		if b != nil || st.Dropped == 0 || st.Aggregates != 0 {
			t.Fatalf("missing_action drop: burst %v, stats %+v; want the batch dropped and counted", b != nil, st)
		}
		d := s.Stats().Ports[1].Rx[0].Drops["incomplete"]
		if !inTime && (d < ppb-3 || st.Dropped != 1) {
			// Frames that came after the timeout start a batch of their own, which times
			// out too.
			return false
		}
		if st.Dropped != 1 || d != ppb-3 {
			t.Fatalf("%d batches dropped, drop reason incomplete %d; want 1 and %d", st.Dropped, d, ppb-3)
		}
	} else {
		if b == nil {
			t.Fatal("passthrough: no aggregate")
		}
		ri, _ := b.ReorderInfo()
		if ri.SourcePackets+ri.Missing != ppb || b.Flags()&FlagReorderTimeout == 0 || st.Incomplete == 0 {
			t.Fatalf("timed-out batch: info %+v flags %v stats %+v", *ri, b.Flags(), st)
		}
		m := ri.MissingSlots(nil)
		for k := range skip {
			if !slices.Contains(m, k) {
				t.Fatalf("missing slots %v: skipped slot %d is not among them", m, k)
			}
		}
		checkPresent("timed-out batch", b, ri, want)
		if !inTime && len(m) != 3 {
			return false
		}
		if len(m) != 3 || m[0] != 3 || m[1] != 100 || m[2] != 255 || ri.SourcePackets != ppb-3 || st.Incomplete != 1 {
			t.Fatalf("missing slots %v (info %+v, stats %+v), want [3 100 255] in one incomplete batch", m, *ri, st)
		}
	}
	want, inTime, unarmed := batch(nil)
	if inTime && unarmed {
		t.Fatal("a frame of the batch after the timeout found its slot RQ without a posted WQE: the slots were not re-armed when the timed-out batch was published")
	}
	if b = recv(st.Dropped); b == nil {
		if !inTime {
			return false
		}
		t.Fatal("the batch after the timeout was dropped")
	}
	ri, _ := b.ReorderInfo()
	checkPresent("batch after the timeout (reset slots: 3, 100, 255)", b, ri, want)
	if !inTime && b.Flags()&FlagReorderTimeout != 0 {
		return false
	}
	if ri.Missing != 0 || ri.SourcePackets != ppb || b.Flags()&FlagReorderTimeout != 0 {
		t.Fatalf("batch after the timeout: info %+v flags %v", *ri, b.Flags())
	}
	return true
}

// TestHWReorderWholeFrames: with payload_byte_offset 0 each slot RQ's WQE has one segment
// and a slot holds the whole frame: one batch of 64 frames of exactly one slot, shuffled,
// lands in order byte for byte.
func TestHWReorderWholeFrames(t *testing.T) {
	const ppb, slot = 64, 128
	cfg := hwReorderConfig(ppb, slot)
	cfg.Interfaces[1].RX.Reorders[0].PayloadByteOffset = 0
	s := openModelSession(t, cfg)
	r := rand.New(rand.NewPCG(32, 292))
	want := make([][]byte, ppb)
	var frames [][]byte
	for _, k := range r.Perm(ppb) {
		want[k] = udpTo1(seqPayload(r, uint32(k), slot-42))
		frames = append(frames, want[k])
	}
	sendFrames(t, s, 0, frames)
	b := waitAggregate(t, s, "whole frames")
	defer b.Free()
	ri, err := b.ReorderInfo()
	if err != nil || ri.SourcePackets != ppb || ri.PayloadLen != slot {
		t.Fatalf("info %+v, err %v", ri, err)
	}
	d := b.Packet(0)
	for k := range ppb {
		if !bytes.Equal(d[k*slot:(k+1)*slot], want[k]) {
			t.Fatalf("slot %d differs from frame %d", k, k)
		}
	}
}
