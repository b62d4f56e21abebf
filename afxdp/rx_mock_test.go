package afxdp

import (
	"encoding/binary"
	"io"
	"log/slog"
	"testing"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/flow"
	"github.com/daqiri-go/daqiri/flow/xdp"
	"github.com/daqiri-go/daqiri/internal/testutil/regiontest"
	"github.com/daqiri-go/daqiri/xsk"
)

// The RX path over an xsk.Mock: the rings in ordinary memory, the test playing the kernel.
// No root, no netdev, no XDP program; the metadata the program would write is written by
// the mock in front of each frame.

type mockRx struct {
	r      *rxq
	s      *sock
	m      *xsk.Mock
	region *engine.Region
	meta   *engine.MetaPool
}

// newMockRx builds a port with one RX queue (poll_mode direct or indirect with batch_size
// batch) whose socket is a mock over a region of numBufs 2048-byte buffers, sized as
// openSock sizes a real one.
func newMockRx(tb testing.TB, direct bool, numBufs, batch int) *mockRx {
	tb.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	e := &Engine{env: &engine.Env{Log: log}, w: engine.NewWorkers(log)}
	rc := &config.MemoryRegion{Name: "rx_mem", Kind: config.KindHost, NumBufs: numBufs, BufSize: 2048}
	region := regiontest.New(tb, rc)
	meta, err := engine.NewMetaPool("rx", 64, max(batch, directMaxPkts), false)
	if err != nil {
		tb.Fatal(err)
	}
	p := &engine.Port{Name: "mock", Config: &config.Interface{Name: "mock", Address: "mock0"}, Engine: config.EngineXDP, Raw: true}
	qc := &config.Queue{Name: "q", BatchSize: batch, PollMode: config.PollIndirect}
	if direct {
		qc.PollMode = config.PollDirect
	}
	q, err := engine.NewRxQueue(p, 0, qc, []*engine.Region{region}, meta, 64)
	if err != nil {
		tb.Fatal(err)
	}
	p.Rx = []*engine.RxQueue{q}
	pt := &port{e: e, p: p}
	pt.table.Store(&flow.Table{})
	r := &rxq{pt: pt, q: q, region: region, direct: direct}
	pt.rxv.Store(&[]*rxq{r})
	fill := min(maxRingSize, pow2Floor(max(numBufs/2, 8)))
	x, m, err := xsk.NewMock(xsk.Options{Mem: region.Bytes(), ChunkSize: 2048, Unaligned: true, FillSize: fill, CompSize: 64, RxSize: fill})
	if err != nil {
		tb.Fatal(err)
	}
	s := newSock(pt, 0, x, region, true)
	s.owner = r
	r.socks = []*sock{s}
	pt.socks = []*sock{s}
	s.refill()
	if direct {
		q.Poll = r.poll
	}
	tb.Cleanup(func() {
		e.closed.Store(true)
		r.flushAll()
		q.Drain()
		s.close()
	})
	return &mockRx{r: r, s: s, m: m, region: region, meta: meta}
}

// metaFor is the metadata the XDP program writes for a frame steered to queue position q.
func metaFor(flowID uint32, q int) []byte {
	b := make([]byte, xdp.MetaLen)
	binary.NativeEndian.PutUint32(b[0:], flowID)
	b[4] = byte(q)
	binary.NativeEndian.PutUint16(b[6:], xdp.MetaMagic)
	return b
}

// udpFrame is an Ethernet/IPv4/UDP frame of size bytes.
func udpFrame(size int) []byte {
	f := make([]byte, size)
	copy(f[0:6], []byte{2, 0, 0, 0, 0, 2})
	copy(f[6:12], []byte{2, 0, 0, 0, 0, 1})
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	f[14] = 0x45
	binary.BigEndian.PutUint16(f[16:], uint16(size-14))
	f[23] = 17
	return f
}

func frames(n, size int) [][]byte {
	f := udpFrame(size)
	out := make([][]byte, n)
	for i := range out {
		out[i] = f
	}
	return out
}

// poll runs one RX poll of the queue as its application thread would: RxBurst of a direct
// queue, or one worker round and a take from the ring for an indirect one.
func (mr *mockRx) poll() (*engine.Burst, bool) {
	r := mr.r
	if r.direct {
		b, err := r.poll()
		return b, err == nil
	}
	now := r.pt.now()
	r.receive(mr.s, rxBatch, now, nil)
	r.flush(now, true, nil)
	return r.q.Next()
}

// TestMockRxDelivers checks lengths, bytes and flow ids through both poll modes, and that
// every buffer is either free, on the fill ring or held by the application.
func TestXDPMockRxDelivers(t *testing.T) {
	for _, direct := range []bool{true, false} {
		mr := newMockRx(t, direct, 1024, 32)
		fill0 := mr.m.FillLen()
		if fill0 != 512 {
			t.Fatalf("fill ring holds %d buffers, want 512", fill0)
		}
		f := udpFrame(100)
		f[99] = 0xAB
		for round := 0; round < 50; round++ {
			want := 1 + round%40
			if got := mr.m.Receive(metaFor(7, 0), frames(want, 100)...); got != want {
				t.Fatalf("mock received %d of %d", got, want)
			}
			seen := 0
			for seen < want {
				b, ok := mr.poll()
				if !ok {
					t.Fatalf("direct=%v round %d: %d of %d packets delivered", direct, round, seen, want)
				}
				for i := range b.Len() {
					if p := b.Packet(i); len(p) != 100 || p[12] != 0x08 || b.FlowID(i) != 7 {
						t.Fatalf("packet %d: %d bytes, flow %d", i, len(p), b.FlowID(i))
					}
				}
				seen += b.Len()
				b.Free()
			}
			if seen != want {
				t.Fatalf("direct=%v round %d: %d packets, want %d", direct, round, seen, want)
			}
			if _, ok := mr.poll(); ok {
				t.Fatal("a burst with nothing received")
			}
			if got := mr.region.Available() + mr.m.FillLen(); got != 1024 {
				t.Fatalf("direct=%v round %d: %d buffers free or on the fill ring, want 1024", direct, round, got)
			}
		}
		st := mr.r.q.Stats.Snapshot()
		if st.Dropped != 0 {
			t.Fatalf("drops %v", st.Drops)
		}
	}
}

// TestMockRxWakeups checks that the fill-ring wakeup (recvfrom) is made only while the kernel
// asks for it.
func TestXDPMockRxWakeups(t *testing.T) {
	for _, direct := range []bool{true, false} {
		mr := newMockRx(t, direct, 1024, 32)
		for range 100 {
			mr.poll()
		}
		if st, _ := mr.s.x.Stats(); st.Wakeups != 0 {
			t.Fatalf("direct=%v: %d wakeups without need_wakeup", direct, st.Wakeups)
		}
		mr.m.SetNeedWakeup(true, false)
		mr.poll()
		if st, _ := mr.s.x.Stats(); st.Wakeups == 0 {
			t.Fatalf("direct=%v: no wakeup with need_wakeup set on the fill ring", direct)
		}
	}
}

// TestMockRxNoAllocs checks that a warmed-up RX poll, delivery and free allocate nothing.
func TestXDPMockRxNoAllocs(t *testing.T) {
	for _, direct := range []bool{true, false} {
		mr := newMockRx(t, direct, 4096, 64)
		fr := frames(64, 64)
		meta := metaFor(1, 0)
		cycle := func() {
			mr.m.Receive(meta, fr...)
			for {
				b, ok := mr.poll()
				if !ok {
					return
				}
				b.Free()
			}
		}
		cycle()
		if a := testing.AllocsPerRun(200, cycle); a != 0 {
			t.Fatalf("direct=%v: %.1f allocations per poll cycle", direct, a)
		}
	}
}

// benchRx measures the user-space cost per packet of the RX path: the mock posts burst
// frames, the queue's poller takes them, the application frees the bursts.
func benchRx(b *testing.B, direct bool, burst, size int) {
	mr := newMockRx(b, direct, 16384, 64)
	fr := frames(burst, size)
	meta := metaFor(1, 0)
	b.ReportAllocs()
	b.ResetTimer()
	pkts := 0
	for b.Loop() {
		mr.m.Receive(meta, fr...)
		for {
			bu, ok := mr.poll()
			if !ok {
				break
			}
			pkts += bu.Len()
			bu.Free()
		}
	}
	b.StopTimer()
	if pkts != b.N*burst {
		b.Fatalf("%d packets of %d", pkts, b.N*burst)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(pkts), "ns/pkt")
}

func BenchmarkRxDirect(b *testing.B) {
	b.Run("burst=64", func(b *testing.B) { benchRx(b, true, 64, 64) })
	b.Run("burst=8", func(b *testing.B) { benchRx(b, true, 8, 64) })
}

func BenchmarkRxIndirect(b *testing.B) {
	b.Run("burst=64", func(b *testing.B) { benchRx(b, false, 64, 64) })
	b.Run("burst=8", func(b *testing.B) { benchRx(b, false, 8, 64) })
}

// BenchmarkRxEmptyPoll is the cost of a poll that finds nothing.
func BenchmarkRxEmptyPoll(b *testing.B) {
	for _, direct := range []bool{true, false} {
		name := "indirect"
		if direct {
			name = "direct"
		}
		b.Run(name, func(b *testing.B) {
			mr := newMockRx(b, direct, 16384, 64)
			for b.Loop() {
				if _, ok := mr.poll(); ok {
					b.Fatal("burst from nothing")
				}
			}
		})
	}
}

// TestXDPMockDropAccounting replays the kernel's drop counters, including a snapshot taken
// between its two increments for a frame that found the fill ring empty (the fill-ring
// counter first, rx_dropped second): such frames must not show up as truncated.
func TestXDPMockDropAccounting(t *testing.T) {
	mr := newMockRx(t, true, 1024, 32)
	pt := mr.r.pt
	step := func(dropped, empty, full uint64) {
		mr.m.CountDrops(dropped, empty, full)
		pt.syncStats()
	}
	step(10, 11, 0) // ten frames dropped, the eleventh half-counted
	step(1, 0, 0)   // ... and completed in the next period
	step(3, 3, 2)
	step(2, 0, 0) // two frames too large for the chunk
	st := mr.r.q.Stats.Snapshot()
	if st.Drops["no_packet_buffers"] != 14 || st.Drops["truncated"] != 2 || st.Drops["rx_ring_full"] != 2 || st.Dropped != 18 {
		t.Fatalf("drops %v", st.Drops)
	}
}

// BenchmarkRxMockFloor is the mock's own share of the benchmarks above: the kernel side
// writing 64 frames, and taking the descriptors and refilling the same buffers with no
// engine in between.
func BenchmarkRxMockFloor(b *testing.B) {
	mr := newMockRx(b, true, 16384, 64)
	fr := frames(64, 64)
	meta := metaFor(1, 0)
	descs := make([]xsk.Desc, 64)
	addrs := make([]uint64, 64)
	x := mr.s.x
	for b.Loop() {
		mr.m.Receive(meta, fr...)
		n := x.Receive(descs)
		for i, d := range descs[:n] {
			addrs[i] = xsk.FrameAddr(d.Addr) &^ 2047
		}
		x.Fill(addrs[:n])
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*64), "ns/pkt")
}
