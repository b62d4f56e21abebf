package integration

import (
	"bytes"
	"context"
	"encoding/binary"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/internal/testutil/regiontest"
	"github.com/daqiri-go/daqiri/reorder"
	"github.com/daqiri-go/daqiri/socket"
)

// TestReorderOverUDP sends datagrams whose sequence numbers are shuffled, partly dropped and
// partly duplicated over UDP on loopback into the socket engine, whose queue feeds a CPU
// reorder plan (int16 network order → fp32), and checks that every batch arrives as one
// aggregate with the right presence bitmap, the right samples in every slot sent and zeros in
// every slot not sent.
//
// The plan is attached at the engine level (socket engine + reorder service on its queue), so
// the test sees the service's statistics directly; TestReorderFromYAMLOverUDP in the root
// package opens the same kind of plan from YAML through daqiri.Open.
func TestReorderOverUDP(t *testing.T) {
	const (
		ppb      = 64
		batches  = 24
		samples  = 48 // int16 samples per datagram
		offset   = 8  // 32-bit sequence number, then 4 bytes of filler, then samples
		bufSize  = 2048
		inFlight = 4
	)
	lc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := lc.LocalAddr().(*net.UDPAddr).Port
	lc.Close()

	cfg := &config.Config{Version: 1, StreamType: config.StreamSocket, LogLevel: "error", RxMetaBuffers: 64, TxMetaBuffers: 8,
		MemoryRegions: []config.MemoryRegion{
			{Name: "rx", Kind: config.KindHost, Access: config.AccessLocal, NumBufs: 4096, BufSize: bufSize},
			{Name: "agg", Kind: config.KindHost, Access: config.AccessLocal, NumBufs: batches + inFlight, BufSize: ppb * (bufSize - offset) * 2},
		},
		Interfaces: []config.Interface{{Name: "rx", Address: "127.0.0.1",
			Socket: &config.SocketConfig{Mode: config.ModeServer, Local: config.Endpoint{Proto: config.ProtoUDP, Host: "127.0.0.1", Port: port}, RetryConnectS: 1},
			RX:     &config.RxConfig{Queues: []config.Queue{{Name: "q", ID: 0, CPUCore: "0", BatchSize: 32, TimeoutUs: 200, MemoryRegions: []string{"rx"}}}},
		}}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	src, out := regiontest.New(t, &cfg.MemoryRegions[0]), regiontest.New(t, &cfg.MemoryRegions[1])
	meta, err := engine.NewMetaPool("rx", 64, 32, false)
	if err != nil {
		t.Fatal(err)
	}
	p := &engine.Port{ID: 0, Name: "rx", Config: &cfg.Interfaces[0], Engine: config.EngineSocket}
	q, err := engine.NewRxQueue(p, 0, &cfg.Interfaces[0].RX.Queues[0], []*engine.Region{src}, meta, 64)
	if err != nil {
		t.Fatal(err)
	}
	p.Rx = []*engine.RxQueue{q}

	rc := &config.Reorder{Name: "udp", Type: config.ReorderCPU, MemoryRegion: "agg", PayloadByteOffset: offset,
		Method:    config.ReorderMethod{Kind: config.MethodSeqPacketsPerBatch, Seq: config.BitField{Offset: 0, Width: 32}, PacketsPerBatch: ppb},
		DataTypes: &config.DataTypes{Input: config.TypeInt16, Output: config.TypeFP32, Endianness: config.EndianNetwork}}
	svc := reorder.NewService(nil)
	// No timeout: whether a slow machine delivers a pair of batches within any given time
	// must not matter. Incomplete batches are flushed when newer ones need their place
	// (pairs are sent one after the other, so an evicted batch has nothing more to come) and,
	// at the end, by Flush once the plan has taken every datagram.
	plan, err := svc.Add(q, rc, out, reorder.Options{MaxInFlight: inFlight})
	if err != nil {
		t.Fatal(err)
	}
	svc.Start()
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	eng, err := socket.Open(context.Background(), &engine.Env{Config: cfg, Ports: []*engine.Port{p}, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	shutdown := func() {
		if closed {
			return
		}
		closed = true
		if err := eng.Close(); err != nil {
			t.Errorf("engine close: %v", err)
		}
		if err := svc.Close(); err != nil {
			t.Errorf("reorder close: %v", err)
		}
		q.Drain()
		if err := src.Close(); err != nil {
			t.Errorf("source region: %v", err)
		}
		if err := out.Close(); err != nil {
			t.Errorf("output region: %v", err)
		}
	}
	defer shutdown()

	// Traffic: batches in pairs, packets of a pair shuffled together; 10% of the packets
	// never sent, 3% sent twice. The first sequence number is random, so batch numbers
	// (seq / 64) start anywhere in the 2^26 range.
	r := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	first := r.Uint32() &^ (ppb - 1)
	type sent struct {
		present [ppb]bool
		body    [ppb][]byte
	}
	want := map[uint32]*sent{} // by batch id
	var dgrams [][]byte
	dups := 0
	for b := 0; b < batches; b += 2 {
		var group [][]byte
		for bb := b; bb < b+2; bb++ {
			base := first + uint32(bb*ppb)
			s := &sent{}
			want[base/ppb] = s
			for k := 0; k < ppb; k++ {
				if r.IntN(10) == 0 && k != 0 {
					continue
				}
				d := make([]byte, offset+2*samples)
				binary.BigEndian.PutUint32(d, base+uint32(k))
				for j := offset; j < len(d); j++ {
					d[j] = byte(r.Uint32())
				}
				s.present[k], s.body[k] = true, d[offset:]
				group = append(group, d)
				if r.IntN(33) == 0 {
					group = append(group, d)
					dups++
				}
			}
		}
		r.Shuffle(len(group), func(i, j int) { group[i], group[j] = group[j], group[i] })
		dgrams = append(dgrams, group...)
	}
	conn, err := net.Dial("udp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	got := map[uint32]bool{}
	check := func(b *engine.Burst) {
		defer b.Free()
		info, err := b.ReorderInfo()
		if err != nil {
			t.Fatalf("a non-aggregate burst of %d packets reached the application", b.Len())
		}
		s := want[uint32(info.BatchID)]
		if s == nil || got[uint32(info.BatchID)] {
			t.Fatalf("unexpected aggregate for batch %d", info.BatchID)
		}
		got[uint32(info.BatchID)] = true
		n := 0
		data := b.Packet(0)
		slot := 4 * samples
		for k := 0; k < ppb; k++ {
			bit := info.Present[k/8]>>(k%8)&1 == 1
			if bit != s.present[k] {
				t.Fatalf("batch %d slot %d: bitmap says %v, sent %v", info.BatchID, k, bit, s.present[k])
			}
			cell := data[k*slot : (k+1)*slot]
			if !s.present[k] {
				if !bytes.Equal(cell, make([]byte, slot)) {
					t.Fatalf("batch %d slot %d: missing slot not zero", info.BatchID, k)
				}
				continue
			}
			n++
			for j := 0; j < samples; j++ {
				v := int16(binary.BigEndian.Uint16(s.body[k][2*j:]))
				if g := binary.LittleEndian.Uint32(cell[4*j:]); g != math.Float32bits(float32(v)) {
					t.Fatalf("batch %d slot %d sample %d: %#x, want fp32(%d)", info.BatchID, k, j, g, v)
				}
			}
		}
		if info.SourcePackets != n || info.Missing != ppb-n || (n < ppb) != (info.Flags&engine.FlagReorderTimeout != 0) {
			t.Fatalf("batch %d: info %+v with %d slots sent", info.BatchID, info, n)
		}
	}
	// Send in bursts of 32, taking aggregates as they come so output buffers are recycled.
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; i < len(dgrams); i++ {
		if _, err := conn.Write(dgrams[i]); err != nil {
			t.Fatal(err)
		}
		if i%32 == 31 {
			for b, ok := q.Next(); ok; b, ok = q.Next() {
				check(b)
			}
			time.Sleep(200 * time.Microsecond) // let the receiver keep up: loopback drops nothing then
		}
	}
	for plan.Stats().Received < uint64(len(dgrams)) && time.Now().Before(deadline) {
		if b, ok := q.Next(); ok {
			check(b)
			continue
		}
		if q.Stats.Drops(engine.DropSocketOverflow) != 0 {
			break // reported below
		}
		time.Sleep(time.Millisecond)
	}
	svc.Flush()
	for b, ok := q.Next(); ok; b, ok = q.Next() {
		check(b)
	}
	st := q.Stats.Snapshot()
	if len(got) != batches {
		t.Fatalf("%d of %d batches arrived; queue stats %+v, plan %+v", len(got), batches, st, plan.Stats())
	}
	ps := plan.Stats()
	if st.Drops[engine.DropSocketOverflow.String()] != 0 {
		t.Fatalf("the kernel dropped datagrams (socket overflow): %+v", st)
	}
	// A copy can arrive after its batch completed: then it counts as late, not duplicate.
	if ps.Duplicates+ps.Late != uint64(dups) || st.Drops["duplicate"] != ps.Duplicates || st.Drops["late"] != ps.Late {
		t.Fatalf("%d copies sent twice; plan %+v, queue %+v", dups, ps, st)
	}
	shutdown()
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}
