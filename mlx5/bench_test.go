package mlx5

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/internal/testutil/benchtest"
	"github.com/daqiri-go/daqiri/internal/testutil/enginetest"
	"github.com/daqiri-go/daqiri/mlx5/channel"
	"github.com/daqiri-go/daqiri/mlx5/prm"
	"github.com/daqiri-go/daqiri/swloop"
)

// The benchmarks measure the engine's own cost per packet, apart from the device's: a
// stand-in for the device on the benchmark's core writes the CQEs first (outside the timer),
// then the timed loop is the engine's poll → burst → application free → repost (RX), or post
// → doorbell for the stand-in to take and then the completion poll (TX; the stand-in runs
// outside the timer; BenchmarkTXModelFed has the model there instead).
// The software loopback engine moves the same packets in the same run for comparison.
// `make bench-mlx5` runs them; read the ns/pkt and Mpps columns (ns/op of the mlx5 benchmarks
// is meaningless: the benchmark timer stays stopped and the engine's part is timed by hand).
// Results in BENCHMARKS.md.
//
// Each benchmark pins its goroutine to one core (benchtest.Pin: the last core the process may
// use) for the whole run, as an engine's worker is pinned in real runs, so that the timed
// loop is neither moved between cores nor shares its thread; the model's and the engine's
// other goroutines run on the other cores. The collector is off during each benchmark
// (benchtest.StopGC, after a collection before the timer): these paths allocate nothing, and
// a collection triggered by the engine's other goroutines would land in the timed loop. The
// "gcs" metric counts the collections during the run (0 expected).

const benchRound = 4096 // packets per fill round, per queue

func benchRxConfig(queues int) *config.Config {
	return benchRxConfigKind(queues, config.KindHost, 2048)
}

// benchRxConfigKind is benchRxConfig with regions of kind and buffers of bufSize bytes.
func benchRxConfigKind(queues int, kind config.MemoryKind, bufSize int) *config.Config {
	c := &config.Config{Version: 1, StreamType: config.StreamRaw, LogLevel: "error", RxMetaBuffers: 32, TxMetaBuffers: 64}
	ifc := config.Interface{Name: "rx", Address: "model:0", RX: &config.RxConfig{}}
	for q := 0; q < queues; q++ {
		n := fmt.Sprintf("rx%d", q)
		c.MemoryRegions = append(c.MemoryRegions, config.MemoryRegion{Name: n, Kind: kind, Access: config.AccessLocal, NumBufs: 2 * benchRound, BufSize: bufSize})
		ifc.RX.Queues = append(ifc.RX.Queues, config.Queue{Name: n, ID: q, PollMode: config.PollDirect, MemoryRegions: []string{n}})
		if queues > 1 {
			ifc.RX.Flows = append(ifc.RX.Flows, config.Flow{Name: n, ID: q + 1, Actions: []config.Action{{Type: config.ActionQueue, Queues: []int{q}}},
				Match: config.Match{UDPDst: config.PortRange{Lo: uint16(5000 + q), Hi: uint16(5000 + q)}}})
		}
	}
	c.Interfaces = []config.Interface{ifc}
	return c
}

// BenchmarkRX is the engine's receive path per packet, the device's cost excluded: before the
// timer, a stand-in for the device (cqeWriter) writes a round of completions into the CQs as
// the model does (striding-RQ CQEs, or basic-layout compressed sessions of up to 64 with the
// stride index in the mini-CQEs), taking the WQEs the engine posted; the timed loop is the
// engine's poll → burst → application free → stride return and WQE repost → doorbell. The
// packet bytes are not written: the engine never reads them. BenchmarkRXModel is the same
// path fed by the model, end to end.
func BenchmarkRX(b *testing.B) {
	for _, size := range []int{64, 1500} {
		for _, queues := range []int{1, 4} {
			for _, comp := range []bool{true, false} {
				b.Run(fmt.Sprintf("size=%d/queues=%d/compression=%v", size, queues, comp), func(b *testing.B) {
					benchRXEngine(b, size, queues, comp)
				})
			}
		}
	}
}

// BenchmarkRXModel is the receive path end to end on one core's worth of work: the model
// parses each frame, steers it, copies it into a stride and writes the CQEs (compressed),
// then the engine polls, delivers and reposts; both are timed (the wall time of the whole
// round over its packets), so this is the model's speed more than the engine's.
func BenchmarkRXModel(b *testing.B) {
	for _, size := range []int{64, 1500} {
		b.Run(fmt.Sprintf("size=%d/queues=1/compression=true", size), func(b *testing.B) {
			cfg := benchRxConfig(1)
			benchRXModel(b, cfg, enginetest.Ports(b, cfg), size, 1, true, true)
		})
	}
}

// benchRXEngine is BenchmarkRX's case: the engine alone over completions written before the
// timer.
func benchRXEngine(b *testing.B, size, queues int, comp bool) {
	benchtest.Pin(b)
	benchtest.StopGC(b)
	cfg := benchRxConfig(queues)
	ports := enginetest.Ports(b, cfg)
	e := openBench(b, cfg, ports, options{striding: -1, compression: comp})
	ws := make([]*cqeWriter, queues)
	for q := range ws {
		r := e.ports[0].rxqs[q]
		if !r.striding {
			b.Fatalf("queue %d is not striding", q)
		}
		ws[q] = &cqeWriter{r: r, comp: comp, flow: uint32(q + 1)}
	}
	rq := ports[0].Rx
	// fill writes n completions per queue (the device's part, not timed); take is the timed
	// part: poll → burst → free → repost until they are all delivered.
	fill := func(n int) {
		for _, w := range ws {
			if got := w.write(n, size-4); got != n {
				b.Fatalf("the CQ or RQ took %d of %d completions", got, n)
			}
		}
	}
	take := func(n int) int {
		got := 0
		for polls := 0; got < n*queues; polls++ {
			for _, q := range rq {
				bu, err := q.Poll()
				if err != nil {
					continue
				}
				got += bu.Len()
				bu.Free()
			}
			if polls > 64*n {
				b.Fatalf("%d of %d packets after %d polls", got, n*queues, polls)
			}
		}
		return got
	}
	// Untimed rounds first, enough for every burst of the metadata pool to be used once: each
	// grows its arrays to the queue's burst size the first time (the only allocations on this
	// path; the engine's worker reading the device's counters allocates now and then, and
	// counts in allocs/pkt).
	warm := 0
	for range 8 {
		fill(benchRound)
		warm += take(benchRound)
	}
	lay := newBenchLayout()
	if lay.on {
		// One more burst, to see the arrays the timed loop fills (the metadata pool hands
		// the burst freed last out first).
		fill(64)
		var bu *engine.Burst
		for polls := 0; bu == nil && polls < 64; polls++ {
			if x, err := rq[0].Poll(); err == nil {
				bu = x
			}
		}
		if bu == nil {
			b.Fatal("no burst for the layout probe")
		}
		warm += bu.Len() * queues
		for _, q := range rq[1:] {
			for got := 0; got < 64; {
				if x, err := q.Poll(); err == nil {
					got += x.Len()
					x.Free()
				}
			}
		}
		r := ws[0].r
		offs, lens := bu.SegmentArrays(0)
		lay.add("cq", r.cq)
		lay.add("rq", r.ring)
		lay.add("dbr", r.cqDBR)
		lay.add("offs", offs)
		lay.add("lens", lens)
		lay.field("flows", bu, "flow")
		lay.field("ts", bu, "ts")
		lay.field("freed", bu, "freed")
		lay.add("burst", bu)
		lay.add("rxq", r)
		lay.field("ret", r.gr, "ret")
		lay.add("consumed", r.consumed)
		lay.add("delivered", r.delivered)
		lay.add("slotGrp", r.slotGrp)
		lay.add("stats", &rq[0].Stats)
		lay.add("bufs", r.q.Regions[0].Memory().Bytes())
		bu.Free()
	}
	done := 0
	var spent time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	b.StopTimer() // the engine's part is timed by hand: StopTimer's memory statistics cost more than a round
	var allocs uint64
	ac := newAllocCounter()
	gc := benchtest.NewGC()
	gc0 := gc.Cycles()
	for done < b.N {
		n := min(benchRound, (b.N-done+queues-1)/queues)
		fill(n)
		m0 := ac.mallocs()
		t0 := time.Now()
		got := take(n)
		spent += time.Since(t0)
		allocs += ac.mallocs() - m0
		done += got
	}
	reportAllocs(b, allocs, done)
	report(b, spent, done)
	gc.Report(b, gc0)
	lay.report(b)
	for q, w := range ws {
		if s := ports[0].Rx[q].Stats.Snapshot(); s.Packets != uint64(w.written) || w.written != done/queues+warm/queues {
			b.Fatalf("queue %d delivered %d of %d packets: %+v", q, s.Packets, w.written, s)
		}
	}
}

// cqeWriter stands in for the device on one striding RQ: it takes the WQEs the engine posted
// (the doorbell record's counter) and writes a completion per packet, one stride each, as
// the model's deliverStriding and writeBasicSession do (WQE index, first stride, strides and
// length in byte_cnt, flow tag, a real-time timestamp; compressed: a title CQE with the
// session's count and mini-CQE arrays of eight in the next slot and every eighth after it).
type cqeWriter struct {
	r       *rxq
	comp    bool
	flow    uint32
	wc      uint32 // WQEs the device finished
	strides int    // strides used in the current WQE
	pi      uint32 // CQE slots produced
	written int
	ts      uint64
	// want, when not nil, collects each packet's offset in the region, its length and its
	// receive time in the device's format, for tests.
	want []wantPkt
	// odd, when not nil, makes about one mini-CQE in eight of a compressed session something
	// other than one packet in one stride, each still using one stride: a filler (no packet,
	// counted in fillers) or a stride index past the WQE's (a packet the engine drops as
	// truncated, counted in bad); neither goes into want. For tests.
	odd          *rand.Rand
	fillers, bad int
}

type wantPkt struct {
	off uint64
	len uint32
	ts  uint64
}

// write produces up to n completions of length bytes and returns how many it wrote.
func (w *cqeWriter) write(n, length int) int {
	r := w.r
	size := uint32(1) << r.cqLog
	mask := size - 1
	done := 0
	for done < n {
		posted := binary.BigEndian.Uint32(r.dbr) & 0xffff
		ci := binary.BigEndian.Uint32(r.cqDBR) & 0xffffff
		if uint16(posted-w.wc) == 0 || size-(w.pi-ci)&0xffffff < maxSessionBench {
			break
		}
		// One session (or one CQE) within the current WQE.
		k := min(n-done, r.spw-w.strides)
		if w.comp {
			k = min(k, maxSessionBench)
		} else {
			k = 1
		}
		w.ts += 1 << 32 // one second a session: the real-time format's seconds word
		var t [64]byte
		binary.BigEndian.PutUint16(t[cqeWQEID:], uint16(w.wc))
		binary.BigEndian.PutUint32(t[cqeSopDropQPN:], w.flow)
		binary.BigEndian.PutUint64(t[cqeTimestamp:], w.ts)
		bc := uint32(1)<<prm.MPRQByteCntStrideShift | uint32(length)
		var kind [maxSessionBench]byte // 0: a packet; 1: a filler; 2: a stride index past the WQE's
		if w.odd != nil && k > 1 {
			for j := 0; j < k; j++ {
				switch w.odd.IntN(16) {
				case 0:
					kind[j] = 1
					w.fillers++
				case 1:
					if r.spw < 1<<16 {
						kind[j] = 2
						w.bad++
					}
				}
			}
		}
		if w.want != nil {
			g := uint64(r.slotGrp[w.wc&(1<<r.ringLog-1)])
			bs := uint64(r.q.Regions[0].BufSize)
			for j := 0; j < k; j++ {
				if kind[j] == 0 {
					w.want = append(w.want, wantPkt{(g*uint64(r.spw) + uint64(w.strides+j)) * bs, uint32(length), w.ts})
				}
			}
		}
		if k == 1 {
			binary.BigEndian.PutUint32(t[cqeByteCnt:], bc)
			binary.BigEndian.PutUint16(t[cqeWQECounter:], uint16(w.strides))
			w.store(w.pi, &t, prm.CQEOpRespSend<<4)
			w.pi++
		} else {
			for j := 0; j*prm.MiniCQEArraySize < k; j++ {
				at := w.pi + 1
				if j > 0 {
					at = w.pi + uint32(8*j)
				}
				s := r.cq[(at&mask)*64 : (at&mask)*64+64]
				for m := 0; m < prm.MiniCQEArraySize && j*prm.MiniCQEArraySize+m < k; m++ {
					mc := s[m*prm.MiniCQESize:]
					st, mbc := uint16(w.strides+j*prm.MiniCQEArraySize+m), bc
					switch kind[j*prm.MiniCQEArraySize+m] {
					case 1:
						mbc |= prm.MPRQByteCntFiller
					case 2:
						st = uint16(r.spw + w.odd.IntN(1<<16-r.spw))
					}
					binary.BigEndian.PutUint16(mc[miniStrideIdx:], st)
					binary.BigEndian.PutUint32(mc[miniByteCnt:], mbc)
				}
			}
			binary.BigEndian.PutUint32(t[cqeByteCnt:], uint32(k))
			binary.BigEndian.PutUint16(t[cqeWQECounter:], uint16(w.strides))
			w.store(w.pi, &t, prm.CQEOpRespSend<<4|prm.CQEFormatCompressed<<2)
			w.pi += uint32(k)
		}
		w.strides += k
		if w.strides == r.spw {
			w.wc++
			w.strides = 0
		}
		done += k
	}
	w.written += done
	return done
}

// maxSessionBench is the model's longest basic-layout session (datapath maxSession).
const maxSessionBench = 64

// store writes CQE t into slot i with the owner bit of its lap, op_own last.
func (w *cqeWriter) store(i uint32, t *[64]byte, opOwn byte) {
	r := w.r
	s := r.cq[(i&(1<<r.cqLog-1))*64:]
	copy(s[:63], t[:63])
	s[63] = opOwn | byte(i>>r.cqLog)&prm.CQEOwnerMask
}

// benchRXOn is the model-fed receive benchmark on ports built from cfg (GPU regions in GPU
// benchmarks), the engine's part timed.
func benchRXOn(b *testing.B, cfg *config.Config, ports []*engine.Port, size, queues int, comp bool) {
	benchRXModel(b, cfg, ports, size, queues, comp, false)
}

// benchRXModel: the model writes a round of packets, then the engine takes them; the engine's
// part is timed, or with endToEnd the whole round (the model's writing too).
func benchRXModel(b *testing.B, cfg *config.Config, ports []*engine.Port, size, queues int, comp, endToEnd bool) {
	benchtest.Pin(b)
	benchtest.StopGC(b)
	e := openBench(b, cfg, ports, options{striding: -1, compression: comp})
	dev := modelOf(e, 0)
	r := rand.New(rand.NewPCG(1, 2))
	frames := make([][]byte, queues)
	for q := range frames {
		frames[q] = udpFrame(r, q, size-4) // the model does not add an FCS; size is the wire frame less it
		frames[q][36], frames[q][37] = byte((5000+q)>>8), byte(5000+q)
	}
	rq := ports[0].Rx
	done, total := 0, uint64(0)
	var spent time.Duration
	b.ResetTimer()
	b.StopTimer() // the engine's part is timed by hand: StopTimer's memory statistics cost more than a round
	for done < b.N {
		// Fill: the model writes a round of packets per queue into the stride buffers and CQs.
		n := min(benchRound, (b.N-done+queues-1)/queues)
		tf := time.Now()
		// (in steps the model's input backlog holds).
		for q := 0; q < queues; q++ {
			for i := 0; i < n; i += 256 {
				k := min(256, n-i)
				for j := 0; j < k; j++ {
					dev.Receive(frames[q])
				}
				total += uint64(k)
				for end := time.Now().Add(10 * time.Second); dev.Counters().RXPackets < total; {
					if time.Now().After(end) {
						b.Fatalf("model wrote %d of %d packets: %+v", dev.Counters().RXPackets, total, dev.Counters())
					}
					time.Sleep(20 * time.Microsecond)
				}
			}
		}
		// Timed: poll → burst → free → repost.
		t0 := time.Now()
		got := 0
		for got < n*queues {
			for _, q := range rq {
				bu, err := q.Poll()
				if err != nil {
					continue
				}
				got += bu.Len()
				bu.Free()
			}
		}
		spent += time.Since(t0)
		if endToEnd {
			spent += t0.Sub(tf)
		}
		done += got
	}
	report(b, spent, done)
	if c := dev.Counters(); c.RXOutOfBuffer != 0 {
		b.Fatalf("the model dropped %d packets for lack of buffers", c.RXOutOfBuffer)
	}
}

// report gives the engine's time per packet and packets per second of one core.
func report(b *testing.B, spent time.Duration, packets int) {
	ns := float64(spent.Nanoseconds()) / float64(packets)
	b.ReportMetric(ns, "ns/pkt")
	b.ReportMetric(1e3/ns, "Mpps")
}

func openBench(b testing.TB, cfg *config.Config, ports []*engine.Port, opts options) *Engine {
	b.Helper()
	e, err := open(b.Context(), &engine.Env{Config: cfg, Ports: ports, Log: discard()}, withModel(opts))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	return e
}

// BenchmarkTX is the engine's transmit path per packet, the device's cost excluded. Timed:
// send (the checks, eMPW WQEs of 32 packets written straight into the SQ, the doorbell record
// and the BlueFlame store, one per burst of 64) and, after the device has taken the round
// with the timer stopped, the completion poll that reads the CQEs and frees the bursts. The
// device is sqWriter, a stand-in on the benchmark's core, as cqeWriter is for BenchmarkRX: it
// reads and checks the WQEs and writes the CQEs as the model does, between the timed parts
// (the BlueFlame stores go to heldUAR, which only counts them). So the engine's cost is timed
// alone, and not the SQ's and CQ's cache lines moving between the benchmark's core and the
// model's, which a device's DMA does not cause the same way: BenchmarkTXModelFed is that form
// (the model, on its own goroutine, sends the round between the timed parts), kept beside it.
// Filling the bursts (the application's work) is not timed: the burst path benchmark in the
// root package has it.
func BenchmarkTX(b *testing.B) {
	for _, size := range []int{64, 1500} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) { benchTX(b, size, true) })
	}
}

// BenchmarkTXModelFed is BenchmarkTX with the model as the device between the timed sections
// (BenchmarkTX's form until 2026-11-29): the model's goroutine, on another core, reads the
// WQEs and writes the CQEs, so the engine's next pass over those SQ lines and its read of the
// CQEs move cache lines between cores, which a device's DMA does not do the same way.
func BenchmarkTXModelFed(b *testing.B) {
	for _, size := range []int{64, 1500} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) { benchTX(b, size, false) })
	}
}

// benchTX is BenchmarkTX's case; standIn: the device is sqWriter on the benchmark's core,
// else the model.
func benchTX(b *testing.B, size int, standIn bool) {
	benchtest.Pin(b)
	benchtest.StopGC(b)
	e, tq, t, held := openTXBench(b)
	dev := modelOf(e, 0)
	sw := newSQWriter(t)
	r := rand.New(rand.NewPCG(3, 4))
	f := udpFrame(r, 0, size-4)
	const round = 64 * 64
	bursts := make([]*engine.Burst, 0, round/64)
	done, total := 0, uint64(0)
	var spent time.Duration
	lay := newBenchLayout()
	b.ReportAllocs()
	b.ResetTimer()
	b.StopTimer()
	var allocs uint64
	ac := newAllocCounter()
	gc := benchtest.NewGC()
	gc0 := gc.Cycles()
	for done < b.N {
		bursts = bursts[:0]
		for i := 0; i < round; i += 64 {
			bu, err := tq.NewBurst(64)
			if err != nil {
				b.Fatal(err)
			}
			for j := 0; j < 64; j++ {
				copy(bu.SegmentBuffer(0, j), f)
				bu.SetPacketLengths(j, len(f))
			}
			bursts = append(bursts, bu)
		}
		if lay.on && len(lay.names) == 0 {
			offs, lens := bursts[0].SegmentArrays(0)
			lay.add("sq", t.ring)
			lay.add("cq", t.cq)
			lay.add("dbr", t.cqDBR)
			lay.add("offs", offs)
			lay.add("lens", lens)
			lay.add("burst", bursts[0])
			lay.add("txq", t)
			lay.add("stats", &tq.Stats)
			lay.add("bufs", tq.Regions[0].Memory().Bytes())
		}
		m0 := ac.mallocs()
		t0 := time.Now()
		for _, bu := range bursts {
			if err := t.send(bu); err != nil {
				b.Fatal(err)
			}
		}
		spent += time.Since(t0)
		allocs += ac.mallocs() - m0
		total += round
		if held.n != len(bursts) {
			b.Fatalf("%d doorbells for %d bursts", held.n, len(bursts))
		}
		if standIn {
			// The device's part, untimed, on this core.
			held.n = 0
			if err := sw.run(); err != nil {
				b.Fatal(err)
			}
			if uint64(sw.packets) != total {
				b.Fatalf("the stand-in took %d of %d packets", sw.packets, total)
			}
		} else {
			held.release()
			for end := time.Now().Add(10 * time.Second); dev.Counters().TXPackets < total; {
				if time.Now().After(end) {
					b.Fatalf("model sent %d of %d", dev.Counters().TXPackets, total)
				}
				time.Sleep(20 * time.Microsecond)
			}
		}
		// The last CQE is written after the last frame: wait for it untimed, so that the
		// timed poll below only reads. Every burst's last WQE asks for a completion and a
		// burst of 64 is two WQEs, below signalEvery: one CQE per burst.
		last := t.ci + uint32(len(bursts)) - 1
		for end := time.Now().Add(10 * time.Second); !prm.CQESoftwareOwned(t.cq[(last&(1<<t.cqLog-1))*64+63], last, t.cqLog); {
			if time.Now().After(end) {
				b.Fatalf("the model wrote %d of %d TX completions", tq.Stats.Packets.Load(), total)
			}
			time.Sleep(20 * time.Microsecond)
		}
		m0 = ac.mallocs()
		t0 = time.Now()
		for tries := 0; tq.Stats.Packets.Load() < total && tries < 1000; tries++ {
			t.complete()
		}
		spent += time.Since(t0)
		allocs += ac.mallocs() - m0
		if tq.Stats.Packets.Load() != total {
			b.Fatalf("%d of %d completed", tq.Stats.Packets.Load(), total)
		}
		done += round
	}
	reportAllocs(b, allocs, done)
	report(b, spent, done)
	gc.Report(b, gc0)
	lay.add("pend", t.pend[:cap(t.pend)])
	lay.report(b)
}

// openTXBench opens BenchmarkTX's engine (one TX queue, bursts of 64, 8192 buffers of 2 KiB)
// without its completion worker, its BlueFlame stores held (heldUAR).
func openTXBench(tb testing.TB) (*Engine, *engine.TxQueue, *txq, *heldUAR) {
	c := &config.Config{Version: 1, StreamType: config.StreamRaw, LogLevel: "error", RxMetaBuffers: 64, TxMetaBuffers: 256}
	c.MemoryRegions = []config.MemoryRegion{{Name: "tx", Kind: config.KindHost, Access: config.AccessLocal, NumBufs: 8192, BufSize: 2048}}
	c.Interfaces = []config.Interface{{Name: "tx", Address: "model:0", TX: &config.TxConfig{Queues: []config.Queue{{Name: "t", ID: 0, CPUCore: "0", BatchSize: 64, MemoryRegions: []string{"tx"}}}}}}
	ports := enginetest.Ports(tb, c)
	e := openBench(tb, c, ports, options{striding: -1, compression: true})
	e.w.Stop() // no completion worker: the caller polls
	held := &heldUAR{UAR: e.ports[0].uar}
	e.ports[0].uar = held
	tb.Cleanup(func() { e.ports[0].uar = held.UAR })
	return e, ports[0].Tx[0], e.ports[0].txqs[0], held
}

// sqWriter stands in for the device on one SQ, as cqeWriter does on an RQ, on the benchmark's
// core between timed sections: it reads the WQEs the engine posted up to the doorbell
// record's send counter, checks each enhanced multi-packet WQE (opcode, index, data segments:
// the queue's key, an address inside its region, a frame length of 14 bytes to a buffer) and
// writes a requester CQE for each WQE that asks for one, as the model's runSQ and txCQE do. It
// copies no frame: that is the device's cost.
type sqWriter struct {
	t          *txq
	pc         uint32 // basic blocks consumed
	pi         uint32 // CQEs written
	packets    int
	base, size uint64
	bufSize    uint32
	lkey       uint32
	ts         uint64
	// seen, when not nil, collects each data segment's address and length, for tests.
	seen [][2]uint64
}

func newSQWriter(t *txq) *sqWriter {
	reg := t.q.Regions[0]
	return &sqWriter{t: t, base: uint64(reg.Addr(0)), size: uint64(reg.NumBufs * reg.BufSize), bufSize: uint32(reg.BufSize), lkey: t.lkeys[0]}
}

func (w *sqWriter) run() error {
	t := w.t
	prod := binary.BigEndian.Uint32(t.dbr) & 0xffff
	units := uint32(prm.SendWQEBB/16) << t.sqLog
	cqSize := uint32(1) << t.cqLog
	for n := 0; uint16(prod) != uint16(w.pc); n++ {
		if n > 1<<t.sqLog {
			return fmt.Errorf("stand-in: no end of the WQEs at %d (counter %d)", w.pc, prod)
		}
		start := w.pc
		c := t.ring[(start*4)&(units-1)*16:]
		ctrl := binary.BigEndian.Uint32(c[ctrlOpModIdxOpcode:])
		ds := int(prm.CtrlDS(binary.BigEndian.Uint32(c[ctrlQPNDS:])))
		if prm.CtrlOpcode(ctrl) != prm.WQEOpEnhancedMPSW || prm.CtrlIndex(ctrl) != uint16(start) || ds < 3 {
			return fmt.Errorf("stand-in: WQE %d: control %#x, %d segments", start, ctrl, ds)
		}
		for j := 2; j < ds; j++ {
			u := (start*4 + uint32(j)) & (units - 1)
			d := t.ring[u*16 : u*16+16]
			l, k, a := be32(d, dsegByteCount), be32(d, dsegLKey), binary.BigEndian.Uint64(d[dsegAddr:])
			if k != w.lkey || l < 14 || l > w.bufSize || a < w.base || a+uint64(l) > w.base+w.size {
				return fmt.Errorf("stand-in: WQE %d segment %d: %d bytes at %#x key %#x", start, j, l, a, k)
			}
			w.packets++
			if w.seen != nil {
				w.seen = append(w.seen, [2]uint64{a, uint64(l)})
			}
		}
		if c[ctrlFmCeSe]&prm.WQECtrlCEMask >= prm.WQECtrlCQUpdate {
			if ci := binary.BigEndian.Uint32(t.cqDBR) & 0xffffff; (w.pi-ci)&0xffffff >= cqSize {
				return fmt.Errorf("stand-in: the CQ is full (%d written, %d consumed)", w.pi, ci)
			}
			w.ts += 1 << 32
			s := t.cq[(w.pi&(cqSize-1))*64:][:64]
			clear(s[:63])
			binary.BigEndian.PutUint16(s[cqeWQECounter:], uint16(start))
			binary.BigEndian.PutUint32(s[cqeSopDropQPN:], uint32(prm.WQEOpEnhancedMPSW)<<24|t.sqn&0xffffff)
			binary.BigEndian.PutUint64(s[cqeTimestamp:], w.ts)
			s[63] = prm.CQEOpReq<<4 | byte(w.pi>>t.cqLog)&prm.CQEOwnerMask
			w.pi++
		}
		w.pc += uint32((ds*16 + 63) / 64)
	}
	return nil
}

// heldUAR keeps the BlueFlame stores of a round (the last one, and how many) and hands the
// last to the device on release: BenchmarkTX's device runs only between timed sections.
type heldUAR struct {
	channel.UAR
	off uint32
	v   uint64
	n   int
}

func (h *heldUAR) Write64(off uint32, v uint64) { h.off, h.v, h.n = off, v, h.n+1 }

func (h *heldUAR) release() {
	if h.n > 0 {
		h.UAR.Write64(h.off, h.v)
	}
	h.n = 0
}

// allocCounter reads the process's heap allocations so far from runtime/metrics: unlike
// runtime.ReadMemStats it does not stop the world, whose flushing of every P's cache would
// leave the timed section that follows starting cold. The samples are allocated once (a
// Read into a fresh slice allocates, and would count itself).
type allocCounter struct{ s []metrics.Sample }

func newAllocCounter() *allocCounter {
	return &allocCounter{s: []metrics.Sample{{Name: "/gc/heap/allocs:objects"}, {Name: "/gc/heap/tiny/allocs:objects"}}}
}

func (c *allocCounter) mallocs() uint64 {
	metrics.Read(c.s)
	return c.s[0].Value.Uint64() + c.s[1].Value.Uint64()
}

// reportAllocs gives the heap allocations per packet counted over the timed sections (the
// benchmark timer stays stopped, so the framework's allocs/op reads 0 whatever happens). The
// count is the process's: another goroutine allocating meanwhile counts too (an upper bound).
func reportAllocs(b *testing.B, allocs uint64, packets int) {
	b.ReportMetric(float64(allocs)/float64(packets), "allocs/pkt")
}

// BenchmarkSWLoop moves the same packets through the software loopback engine: a TX burst of
// 64 is sent (handed to RX without a copy), received and freed. ns/op is ns per packet.
func BenchmarkSWLoop(b *testing.B) {
	for _, size := range []int{64, 1500} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			benchtest.Pin(b)
			benchtest.StopGC(b)
			c := &config.Config{Version: 1, StreamType: config.StreamRaw, Loopback: "sw", LogLevel: "error", RxMetaBuffers: 64, TxMetaBuffers: 64}
			c.MemoryRegions = []config.MemoryRegion{{Name: "m", Kind: config.KindHost, Access: config.AccessLocal, NumBufs: 4096, BufSize: 2048}}
			c.Interfaces = []config.Interface{{Name: "lb", Address: "loopback",
				TX: &config.TxConfig{Queues: []config.Queue{{Name: "t", ID: 0, CPUCore: "0", BatchSize: 64, MemoryRegions: []string{"m"}}}},
				RX: &config.RxConfig{Queues: []config.Queue{{Name: "r", ID: 0, CPUCore: "0", BatchSize: 64, MemoryRegions: []string{"m"}}}}}}
			e, ports := enginetest.Open(b, c, swloop.Open)
			tq, rq := ports[0].Tx[0], ports[0].Rx[0]
			r := rand.New(rand.NewPCG(5, 6))
			f := udpFrame(r, 0, size-4)
			b.ResetTimer()
			t0 := time.Now()
			done := 0
			for ; done < b.N; done += 64 {
				bu, err := tq.NewBurst(64)
				if err != nil {
					b.Fatal(err)
				}
				for j := 0; j < 64; j++ {
					copy(bu.SegmentBuffer(0, j), f)
					bu.SetPacketLengths(j, len(f))
				}
				if err := e.Send(bu); err != nil {
					b.Fatal(err)
				}
				rb, ok := rq.Next()
				if !ok {
					b.Fatal("nothing looped back")
				}
				rb.Free()
			}
			report(b, time.Since(t0), done)
		})
	}
}
