package mlx5

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/internal/testutil/enginetest"
	"github.com/daqiri-go/daqiri/mlx5/model"
	"github.com/daqiri-go/daqiri/mlx5/model/modelch"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// pairConfig is two model ports cabled back to back: model:0 with one TX queue, model:1 with
// nrx RX queues. Each RX queue's region has rxBufs buffers of bufSize bytes (hds: a 64-byte
// header region first).
func pairConfig(nrx, rxBufs, bufSize int, hds bool) *config.Config {
	c := &config.Config{Version: 1, StreamType: config.StreamRaw, LogLevel: "error", RxMetaBuffers: 2048, TxMetaBuffers: 64}
	c.MemoryRegions = append(c.MemoryRegions, config.MemoryRegion{Name: "tx", Kind: config.KindHost, Access: config.AccessLocal, NumBufs: 1024, BufSize: 2048})
	tx := config.Interface{Name: "tx", Address: "model:0", TX: &config.TxConfig{Queues: []config.Queue{{Name: "t0", ID: 0, CPUCore: "0", BatchSize: 64, MemoryRegions: []string{"tx"}}}}}
	rx := config.Interface{Name: "rx", Address: "model:1", RX: &config.RxConfig{}}
	for i := 0; i < nrx; i++ {
		var regs []string
		if hds {
			n := fmt.Sprintf("rxh%d", i)
			c.MemoryRegions = append(c.MemoryRegions, config.MemoryRegion{Name: n, Kind: config.KindHost, Access: config.AccessLocal, NumBufs: rxBufs, BufSize: 64})
			regs = append(regs, n)
		}
		n := fmt.Sprintf("rx%d", i)
		c.MemoryRegions = append(c.MemoryRegions, config.MemoryRegion{Name: n, Kind: config.KindHost, Access: config.AccessLocal, NumBufs: rxBufs, BufSize: bufSize})
		regs = append(regs, n)
		rx.RX.Queues = append(rx.RX.Queues, config.Queue{Name: fmt.Sprintf("r%d", i), ID: i, CPUCore: "1", BatchSize: 32, MemoryRegions: regs})
	}
	c.Interfaces = []config.Interface{tx, rx}
	return c
}

func udpFrame(r *rand.Rand, i, n int) []byte {
	f := make([]byte, n)
	copy(f, []byte{0x02, 0xda, 0x51, 0, 0, 1, 0x02, 0xda, 0x51, 0, 0, 0, 0x08, 0x00})
	ip := f[14:]
	ip[0], ip[8], ip[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(ip[2:], uint16(n-14))
	copy(ip[12:], []byte{10, 0, 0, 1, 10, 0, 0, 2})
	binary.BigEndian.PutUint16(ip[10:], engine.IPv4Checksum(ip[:20]))
	u := ip[20:]
	binary.BigEndian.PutUint16(u[0:], uint16(1000+i%7))
	binary.BigEndian.PutUint16(u[2:], 4000)
	binary.BigEndian.PutUint16(u[4:], uint16(n-34))
	binary.BigEndian.PutUint32(u[8:], uint32(i)) // sequence number
	for j := 46; j < n; j++ {
		f[j] = byte(r.Uint32())
	}
	return f
}

// sendFrames sends frames through q in bursts of up to 64, retrying while the SQ or the pool
// is momentarily full (bounded).
func sendFrames(t *testing.T, e engine.Engine, q *engine.TxQueue, frames [][]byte, window int, received *atomic.Int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; i < len(frames); {
		if window > 0 && i-int(received.Load()) >= window {
			if time.Now().After(deadline) {
				t.Fatalf("receiver stuck at %d of %d sent", received.Load(), i)
			}
			time.Sleep(20 * time.Microsecond)
			continue
		}
		n := min(64, len(frames)-i)
		b, err := q.NewBurst(n)
		if err != nil {
			if time.Now().After(deadline) {
				t.Fatalf("no TX buffers after 10 s: %v", err)
			}
			time.Sleep(50 * time.Microsecond)
			continue
		}
		for j := 0; j < n; j++ {
			copy(b.SegmentBuffer(0, j), frames[i+j])
			b.SetPacketLengths(j, len(frames[i+j]))
		}
		for {
			err := e.Send(b)
			if err == nil {
				break
			}
			if engine.StatusOf(err) != engine.StatusOf(engine.ErrNotReady) || time.Now().After(deadline) {
				t.Fatalf("Send: %v", err)
			}
			time.Sleep(50 * time.Microsecond)
		}
		i += n
	}
}

// receiveAll takes bursts from every queue until total packets arrived or the deadline,
// checking each against the frame its sequence number names, and frees them.
func receiveAll(t *testing.T, qs []*engine.RxQueue, frames [][]byte, total int, deadline time.Duration, count *atomic.Int64) (got int, perQueue []int) {
	t.Helper()
	return receiveWith(t, qs, frames, total, deadline, count, func(b *engine.Burst, s, i int) []byte { return b.Segment(s, i) })
}

// receiveWith is receiveAll reading each segment with read (a copy back from GPU memory).
func receiveWith(t *testing.T, qs []*engine.RxQueue, frames [][]byte, total int, deadline time.Duration, count *atomic.Int64, read func(b *engine.Burst, s, i int) []byte) (got int, perQueue []int) {
	t.Helper()
	perQueue = make([]int, len(qs))
	end := time.Now().Add(deadline)
	for got < total && time.Now().Before(end) {
		idle := true
		for qi, q := range qs {
			b, ok := q.Next()
			if !ok {
				continue
			}
			idle = false
			for i := 0; i < b.Len(); i++ {
				var p []byte
				for s := 0; s < b.NumSegments(); s++ {
					p = append(p, read(b, s, i)...)
				}
				if len(p) < 46 {
					t.Fatalf("queue %d: %d-byte packet", qi, len(p))
				}
				seq := binary.BigEndian.Uint32(p[42:])
				if int(seq) >= len(frames) || !bytes.Equal(p, frames[seq]) {
					t.Fatalf("queue %d: packet %d (seq %d, %d bytes) differs from what was sent", qi, i, seq, len(p))
				}
				if _, err := b.RxTimestamp(i); err != nil {
					t.Fatalf("queue %d: no RX timestamp: %v", qi, err)
				}
			}
			got += b.Len()
			count.Add(int64(b.Len()))
			perQueue[qi] += b.Len()
			b.Free()
		}
		if idle {
			time.Sleep(100 * time.Microsecond)
		}
	}
	return got, perQueue
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func enginetestPorts(t *testing.T, cfg *config.Config) []*engine.Port {
	return enginetest.Ports(t, cfg)
}

// openPorts opens the engine on ports without a cleanup Close (the test closes it).
func openPorts(t *testing.T, cfg *config.Config, ports []*engine.Port) *Engine {
	t.Helper()
	e, err := open(context.Background(), &engine.Env{Config: cfg, Ports: ports, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, withModel(options{striding: -1, compression: true}))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func openTest(t *testing.T, cfg *config.Config, opts options) (*Engine, []*engine.Port) {
	t.Helper()
	ports := enginetest.Ports(t, cfg)
	e, err := open(context.Background(), &engine.Env{Config: cfg, Ports: ports, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, withModel(opts))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("engine Close: %v", err)
		}
	})
	return e, ports
}

// TestTwoPortsStriding sends random frames from model:0 to model:1 through the engine: the
// RX queue has a striding RQ (2048-byte strides, 2 WQEs of 512), CQE compression is on, and
// more frames than the RQ holds at once go through, so WQEs are reposted as the test frees
// packets. Every frame arrives intact, in place in the region, with a timestamp; counts are
// exact on both sides.
func TestTwoPortsStriding(t *testing.T) {
	for _, c := range []struct {
		comp    bool
		strides int
	}{{true, 0}, {false, 0}, {true, 1024}} {
		comp := c.comp
		t.Run(fmt.Sprintf("compression=%v/strides=%d", comp, c.strides), func(t *testing.T) {
			cfg := pairConfig(1, 4096, 2048, false)
			e, ports := openTest(t, cfg, options{striding: -1, compression: comp, strides: c.strides})
			if !e.ports[1].rxqs[0].striding {
				t.Fatal("RX queue did not get a striding RQ")
			}
			r := rand.New(rand.NewPCG(1, 2))
			const n = 5000
			frames := make([][]byte, n)
			for i := range frames {
				frames[i] = udpFrame(r, i, 60+r.IntN(1400))
			}
			done := make(chan struct{})
			var got int
			var count atomic.Int64
			go func() { defer close(done); got, _ = receiveAll(t, ports[1].Rx, frames, n, 20*time.Second, &count) }()
			sendFrames(t, e, ports[0].Tx[0], frames, 512, &count)
			<-done
			if got != n {
				e.ports[1].countOutOfBuffer()
				r := e.ports[1].rxqs[0]
				t.Logf("delivered %v consumed %v pc %d ci %d slotGrp %v pending %d", r.delivered, r.consumed, r.pc, r.ci, r.slotGrp, r.gr.Pending())
				t.Fatalf("received %d of %d; rx stats %+v; model:0 %+v; model:1 %+v", got, n, ports[1].Rx[0].Stats.Snapshot(), modelOf(e, 0).Counters(), modelOf(e, 1).Counters())
			}
			waitTx(t, ports[0].Tx[0], n)
		})
	}
}

// TestVFIOModelPorts runs the engine unchanged over the VFIO command-queue transport
// (vfio+model:0 → vfio+model:1): every frame arrives intact, with exact counts.
func TestVFIOModelPorts(t *testing.T) {
	cfg := pairConfig(1, 2048, 2048, false)
	cfg.Interfaces[0].Address, cfg.Interfaces[1].Address = "vfio+model:0", "vfio+model:1"
	e, ports := openTest(t, cfg, options{striding: -1, compression: true})
	if !strings.HasPrefix(e.ports[0].ch.Name(), "vfio+model:") {
		t.Fatalf("channel %s, want the VFIO transport", e.ports[0].ch.Name())
	}
	r := rand.New(rand.NewPCG(21, 22))
	const n = 3000
	frames := make([][]byte, n)
	for i := range frames {
		frames[i] = udpFrame(r, i, 60+r.IntN(1400))
	}
	done := make(chan struct{})
	var got int
	var count atomic.Int64
	go func() { defer close(done); got, _ = receiveAll(t, ports[1].Rx, frames, n, 20*time.Second, &count) }()
	sendFrames(t, e, ports[0].Tx[0], frames, 512, &count)
	<-done
	if got != n {
		t.Fatalf("received %d of %d", got, n)
	}
	waitTx(t, ports[0].Tx[0], n)
}

// waitTx waits (bounded) until the TX queue counted n packets sent.
func waitTx(t *testing.T, q *engine.TxQueue, n uint64) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); q.Stats.Packets.Load() < n && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	if s := q.Stats.Snapshot(); s.Packets != n || s.Dropped != 0 {
		t.Fatalf("TX stats %+v, want %d packets and no drops", s, n)
	}
}

// TestHotOffsets checks the byte offsets the datapath reads CQEs with against prm's layouts
// (which the prm layout test checks against rdma-core's and the kernel's headers).
func TestHotOffsets(t *testing.T) {
	for _, c := range []struct {
		name string
		got  int
		f    prm.Field
	}{
		{"wqe_id", cqeWQEID, prm.CQE64.WQEID}, {"rss_hash_result", cqeRSSHash, prm.CQE64.RSSHashResult}, {"rss_hash_type", cqeRSSHashType, prm.CQE64.RSSHashType},
		{"byte_cnt", cqeByteCnt, prm.CQE64.ByteCnt}, {"timestamp", cqeTimestamp, prm.CQE64.Timestamp},
		{"sop_drop_qpn", cqeSopDropQPN, prm.CQE64.SopDropQPN}, {"wqe_counter", cqeWQECounter, prm.CQE64.WQECounter},
		{"mini rx_hash_result", miniHash, prm.MiniCQE.RxHashResult}, {"mini stridx", miniStrideIdx, prm.MiniCQE.StrideIdx},
		{"mini byte_cnt", miniByteCnt, prm.MiniCQE.ByteCnt},
		{"dseg byte_count", dsegByteCount, prm.WQEData.ByteCount}, {"dseg lkey", dsegLKey, prm.WQEData.LKey},
		{"dseg addr", dsegAddr, prm.WQEData.Addr},
		{"ctrl opmod_idx_opcode", ctrlOpModIdxOpcode, prm.WQECtrl.OpModIdxOpcode}, {"ctrl qpn_ds", ctrlQPNDS, prm.WQECtrl.QPNDS},
		{"ctrl fm_ce_se", ctrlFmCeSe, prm.WQECtrl.FmCeSe},
	} {
		if c.got != c.f.ByteOff() {
			t.Errorf("%s at byte %d, prm says %d", c.name, c.got, c.f.ByteOff())
		}
	}
}

// TestStridesOption: DAQIRI_MLX5_STRIDES must be a power of two from 512 to 65536.
func TestStridesOption(t *testing.T) {
	for _, n := range []int{256, 1000, 1 << 17} {
		cfg := pairConfig(1, 1024, 2048, false)
		ports := enginetest.Ports(t, cfg)
		if _, err := open(context.Background(), &engine.Env{Config: cfg, Ports: ports, Log: discard()}, withModel(options{striding: -1, strides: n})); !errors.Is(err, engine.ErrInvalidParameter) {
			t.Errorf("%d strides per WQE: %v, want ErrInvalidParameter", n, err)
		}
	}
}

// withModel gives opts the device model's fabric when it has none: model:N ports in tests.
func withModel(opts options) options {
	if opts.fabric == nil {
		opts.fabric = &modelch.Fabric{}
	}
	return opts
}

// modelOf is the model behind port n of an engine opened with withModel.
func modelOf(e *Engine, n int) *model.Device {
	return e.opts.fabric.(*modelch.Fabric).Device(n)
}

// TestModelPortWithoutFabric: a model address in a program that wired no fabric (the engine
// alone, as an application that imports only the library) is refused with the key path and
// what to wire in, before anything opens.
func TestModelPortWithoutFabric(t *testing.T) {
	cfg := pairConfig(1, 1024, 2048, false)
	ports := enginetest.Ports(t, cfg)
	_, err := open(context.Background(), &engine.Env{Config: cfg, Ports: ports, Log: discard()}, options{striding: -1})
	if !errors.Is(err, engine.ErrNotSupported) || !strings.Contains(err.Error(), "interfaces[0].address") || !strings.Contains(err.Error(), "WithMLX5Fabric") {
		t.Fatalf("Open of model ports without a fabric: %v", err)
	}
}

// TestDevXAddressWithoutDevice: an RDMA device name that does not exist fails Open with the
// interface's key path and the DevX transport's reason; nothing leaks (the regions are
// checked at cleanup).
func TestDevXAddressWithoutDevice(t *testing.T) {
	cfg := pairConfig(1, 1024, 2048, false)
	cfg.Engine = "mlx5"
	cfg.Interfaces[1].Address = "mlx5_99"
	ports := enginetest.Ports(t, cfg)
	_, err := open(context.Background(), &engine.Env{Config: cfg, Ports: ports, Log: discard()}, withModel(options{striding: -1}))
	if err == nil || !strings.Contains(err.Error(), "interfaces[1].address") || !strings.Contains(err.Error(), "devx") {
		t.Fatalf("Open on a missing RDMA device: %v", err)
	}
}

// TestVFIOHealthFailure (issue 16): a device behind the VFIO transport whose health fails
// mid-run (fatal syndrome, frozen health counter: mlx5 health.c's checks, which the
// transport's monitor applies) fails every send on its port with an error naming the
// failure; the other port is unaffected, nothing hangs, and Close returns every buffer (the
// test helper checks the pools at cleanup).
func TestVFIOHealthFailure(t *testing.T) {
	cfg := pairConfig(1, 2048, 2048, false)
	cfg.Interfaces[0].Address, cfg.Interfaces[1].Address = "vfio+model:0", "vfio+model:1"
	e, ports := openTest(t, cfg, options{striding: -1, compression: true})
	r := rand.New(rand.NewPCG(31, 32))
	frames := make([][]byte, 200)
	for i := range frames {
		frames[i] = udpFrame(r, i, 60+r.IntN(1000))
	}
	var count atomic.Int64
	done := make(chan struct{})
	go func() { defer close(done); receiveAll(t, ports[1].Rx, frames, len(frames), 20*time.Second, &count) }()
	sendFrames(t, e, ports[0].Tx[0], frames, 128, &count)
	<-done
	// 0x1: a fatal firmware syndrome (device.h MLX5_HEALTH_SYNDR_FW_ERR).
	modelOf(e, 0).Fail(1)
	var err error
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		b, berr := ports[0].Tx[0].NewBurst(1)
		if berr != nil {
			continue
		}
		copy(b.SegmentBuffer(0, 0), frames[0])
		b.SetPacketLengths(0, len(frames[0]))
		if err = e.Send(b); err != nil {
			b.Free()
			break
		}
	}
	if !errors.Is(err, engine.ErrInternalError) || !strings.Contains(err.Error(), "device failed") {
		t.Fatalf("Send after the device failed: %v, want an internal error naming the failure", err)
	}
	t.Logf("send on the failed port: %v", err)
	if err := e.ports[1].failed(); err != nil {
		t.Fatalf("the healthy port reports a failure: %v", err)
	}
}
