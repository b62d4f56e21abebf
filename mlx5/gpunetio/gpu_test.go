package gpunetio

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/cudart"
	"github.com/daqiri-go/daqiri/internal/testutil/gputest"
	"github.com/daqiri-go/daqiri/mlx5/model"
	"github.com/daqiri-go/daqiri/mlx5/model/modelch"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// GPU tests: the kernels of kernels/gpunetio.cu on a GPU, the device model as the NIC
// (running freely in this process, reaching GPU memory through mlx5/model/gpudma). They skip
// without a GPU. DQG_PTX names a PTX file to load instead of the embedded one.

func gpuKernels(t testing.TB) (*cudart.Device, *Kernels) {
	t.Helper()
	dev := gputest.Device(t)
	var ptx []byte
	if p := os.Getenv("DQG_PTX"); p != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		ptx = b
	}
	k, err := LoadKernels(dev, ptx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	return dev, k
}

// runPort is a model port running freely (the kernel is asynchronous), its wire captured.
type runPort struct {
	dev    *model.Device
	ch     *modelch.Channel
	mu     sync.Mutex
	out    [][]byte
	cancel func()
	done   chan struct{}
}

func newRunPort(t *testing.T, n int) *runPort {
	t.Helper()
	dev := model.New(model.Config{MAC: modelch.MAC(n)})
	ch, err := modelch.Open(dev, fmt.Sprintf("model:%d", n))
	if err != nil {
		t.Fatal(err)
	}
	p := &runPort{dev: dev, ch: ch, done: make(chan struct{})}
	// A wire (the port's link is up); a Cable replaces it.
	dev.SetWire(func(f []byte) {
		p.mu.Lock()
		p.out = append(p.out, append([]byte(nil), f...))
		p.mu.Unlock()
	})
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go func() { defer close(p.done); dev.Run(ctx) }()
	t.Cleanup(func() {
		if err := ch.Close(); err != nil {
			t.Errorf("channel Close: %v", err)
		}
		cancel()
		<-p.done
	})
	return p
}

func (p *runPort) wire() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.out)
}

// receiver is a queue with the persistent receiver running on it.
type receiver struct {
	q        *Queue
	sem      *SemRing
	out      *cudart.DeviceMem
	s        *cudart.Stream
	batch    int
	slot     int
	stopped  bool
	received int
}

func startReceiver(t *testing.T, dev *cudart.Device, k *Kernels, ch *modelch.Channel, cfg Config, batch, slot int, stallAfter uint32, prep func(*Queue)) *receiver {
	t.Helper()
	alloc := CUDAAllocator{Dev: dev}
	q, err := Open(ch, cfg, alloc)
	if err != nil {
		t.Fatal(err)
	}
	if prep != nil {
		prep(q)
	}
	sem, err := NewSemRing(alloc, MemCPUGPU, 8)
	if err != nil {
		t.Fatal(err)
	}
	out, err := dev.AllocDevice(8 * batch * slot)
	if err != nil {
		t.Fatal(err)
	}
	s, err := dev.NewStream(true)
	if err != nil {
		t.Fatal(err)
	}
	r := &receiver{q: q, sem: sem, out: out, s: s, batch: batch, slot: slot}
	t.Cleanup(func() { r.close(t) })
	if err := k.LaunchReceiver(s, q, sem, uint64(out.Ptr()), uint32(batch), uint32(slot), stallAfter); err != nil {
		t.Fatal(err)
	}
	return r
}

// close is the teardown: stop the kernel, wait for its stream, then release the queue.
func (r *receiver) close(t *testing.T) {
	if r.stopped {
		return
	}
	r.stopped = true
	if err := r.q.Stop(10 * time.Second); err != nil {
		t.Errorf("Stop: %v", err)
		return // the kernel may still reach the memory: leak it rather than fault the GPU
	}
	if err := r.s.Synchronize(); err != nil {
		t.Errorf("kernel: %v", err)
	}
	if err := r.q.Close(); err != nil {
		t.Errorf("queue Close: %v", err)
	}
	r.s.Close()
	r.out.Close()
	r.sem.Close()
}

// take consumes ready batches, checking every packet against want(i); it returns how many
// packets it took.
func (r *receiver) take(t *testing.T, dev *cudart.Device, want func(i int) []byte) int {
	n := 0
	buf := make([]byte, r.batch*r.slot)
	for {
		b, ok := r.sem.Poll()
		if !ok {
			return n
		}
		if err := dev.CopyDtoH(buf, r.out.Ptr()+cudart.DevicePtr(b.Index*r.batch*r.slot)); err != nil {
			t.Fatal(err)
		}
		var total uint64
		for i := 0; i < b.Count; i++ {
			s := buf[i*r.slot:]
			l := int(le.Uint32(s[SlotLen:]))
			w := want(r.received)
			if l != len(w) || !bytes.Equal(s[SlotHeader:SlotHeader+l], w) {
				t.Fatalf("batch %d packet %d (packet %d overall): %d bytes, want %d; differ", b.Seq, i, r.received, l, len(w))
			}
			total += uint64(l)
			r.received++
		}
		if total != b.Bytes {
			t.Fatalf("batch %d: %d bytes in its slots, the entry says %d", b.Seq, total, b.Bytes)
		}
		r.sem.Release()
		n += b.Count
	}
}

var sizes = []int{60, 64, 128, 333, 1024, 1500, 2048}

// TestGPUReceive: frames sent to a model port arrive in the persistent receiver (rings in
// CPU_GPU memory, strides in GPU memory the model writes through the copy engine, CQE
// compression on), handed over in batches through the semaphore ring; every packet checked
// byte for byte, counts and bytes exact, several laps of the RQ and the CQ; then a clean
// teardown.
func TestGPUReceive(t *testing.T) {
	dev, k := gpuKernels(t)
	p := newRunPort(t, 0)
	const batch, total, chunk = 64, 8192, 512
	r := startReceiver(t, dev, k, p.ch, Config{MemType: MemCPUGPU, BufMemType: MemGPU, RxWQEs: 4, StridesPerWQE: 512, StrideSize: 2048, CQECompression: true}, batch, 2048+SlotHeader, 0, nil)
	want := func(i int) []byte { return frame(i, sizes[i%len(sizes)]) }
	w := r.q.NewWatchdog(5 * time.Second)
	var bytesSent uint64
	start := time.Now()
	for sent := 0; sent < total; sent += chunk {
		for i := sent; i < sent+chunk; i++ {
			f := want(i)
			bytesSent += uint64(len(f))
			p.dev.Receive(f)
		}
		for got := 0; r.received < sent+chunk; got++ {
			r.take(t, dev, want)
			if err := w.Check(); err != nil {
				t.Fatalf("after %d packets: %v", r.received, err)
			}
			if time.Since(start) > 2*time.Minute {
				t.Fatalf("received %d of %d (counters %+v, model %+v)", r.received, sent+chunk, r.q.Counters(), p.dev.Counters())
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
	el := time.Since(start)
	if err := r.q.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	c := r.q.Counters()
	if c.Packets != total || c.Bytes != bytesSent || c.Batches != total/batch {
		t.Errorf("kernel counted %d packets, %d bytes, %d batches; want %d, %d, %d", c.Packets, c.Bytes, c.Batches, total, bytesSent, total/batch)
	}
	if err := r.q.KernelErr(); err != nil {
		t.Error(err)
	}
	t.Logf("GPU receiver: %d packets (%d bytes) byte for byte in %d batches in %v through the model; RX CQ consumer %d, RQ producer %d at exit",
		r.received, bytesSent, c.Batches, el.Round(time.Millisecond), c.RxCI, c.RQPI)
	r.close(t)
}

// TestGPUTransmit: the transmitter kernel sends a GPU buffer as packets (SEND WQEs and
// enhanced multi-packet WQEs); the doorbells reach the model through the relay, and the
// model's wire carries every frame, byte for byte, in order.
func TestGPUTransmit(t *testing.T) {
	dev, k := gpuKernels(t)
	for _, mpw := range []uint32{1, 8} {
		t.Run(fmt.Sprintf("mpw=%d", mpw), func(t *testing.T) {
			p := newRunPort(t, 1)
			const n, size = 4096, 1024
			q, err := Open(p.ch, Config{MemType: MemCPUGPU, BufMemType: MemGPU, NoRx: true, TxWQEBBs: 256, TxBufSize: n * size}, CUDAAllocator{Dev: dev})
			if err != nil {
				t.Fatal(err)
			}
			img := make([]byte, n*size)
			for i := 0; i < n; i++ {
				copy(img[i*size:], frame(i, size))
			}
			if err := q.TxBuf().(DeviceMem).WriteAt(img, 0); err != nil {
				t.Fatal(err)
			}
			s, err := dev.NewStream(true)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			start := time.Now()
			if err := k.LaunchTransmitter(s, q, size, n, 32, mpw); err != nil {
				t.Fatal(err)
			}
			w := q.NewWatchdog(10 * time.Second)
			for !q.Counters().Exited {
				if err := w.Check(); err != nil {
					q.Stop(time.Second)
					t.Fatalf("%v (wire %d)", err, p.wire())
				}
				if time.Since(start) > 2*time.Minute {
					t.Fatalf("transmitter still running: %+v, wire %d", q.Counters(), p.wire())
				}
				time.Sleep(time.Millisecond)
			}
			if err := s.Synchronize(); err != nil {
				t.Fatal(err)
			}
			el := time.Since(start)
			if err := q.KernelErr(); err != nil {
				t.Fatal(err)
			}
			c := q.Counters()
			// Every frame is on the wire once its completion is (the model transmits before it
			// completes the WQE).
			for i := 0; p.wire() < n && i < 10000; i++ {
				time.Sleep(time.Millisecond)
			}
			p.mu.Lock()
			if len(p.out) != n {
				t.Errorf("wire carried %d frames, want %d", len(p.out), n)
			}
			for i, f := range p.out {
				if !bytes.Equal(f, frame(i, size)) {
					t.Fatalf("frame %d differs", i)
				}
			}
			p.mu.Unlock()
			if c.Packets != n || c.Bytes != n*size || c.TxCI != c.TxPI {
				t.Errorf("kernel counters %+v", c)
			}
			t.Logf("GPU transmitter (mpw %d): %d frames of %d bytes on the model's wire in %v, %d WQE basic blocks, %d doorbells relayed",
				mpw, len(p.out), size, el.Round(time.Millisecond), c.TxPI, q.Doorbells())
			if err := q.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
}

// TestGPULoop: the transmitter on model port 2 sends to port 3 over a cable, where the
// persistent receiver takes the frames: GPU memory → wire → GPU memory, no CPU on the data
// path but the model's, each frame checked.
func TestGPULoop(t *testing.T) {
	dev, k := gpuKernels(t)
	a, b := newRunPort(t, 2), newRunPort(t, 3)
	a.dev.Cable(b.dev)
	const n, size, batch = 2048, 512, 64
	r := startReceiver(t, dev, k, b.ch, Config{MemType: MemCPUGPU, BufMemType: MemGPU, RxWQEs: 8, StrideSize: 1024}, batch, 1024, 0, nil)
	q, err := Open(a.ch, Config{MemType: MemCPUGPU, BufMemType: MemGPU, NoRx: true, TxWQEBBs: 256, TxBufSize: n * size}, CUDAAllocator{Dev: dev})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	img := make([]byte, n*size)
	for i := 0; i < n; i++ {
		copy(img[i*size:], frame(i, size))
	}
	if err := q.TxBuf().(DeviceMem).WriteAt(img, 0); err != nil {
		t.Fatal(err)
	}
	s, err := dev.NewStream(true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := k.LaunchTransmitter(s, q, size, n, 16, 1); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	wr := r.q.NewWatchdog(10 * time.Second)
	for r.received < n {
		r.take(t, dev, func(i int) []byte { return frame(i, size) })
		if err := wr.Check(); err != nil {
			t.Fatal(err)
		}
		if err := q.KernelErr(); err != nil {
			t.Fatal(err)
		}
		if time.Since(start) > 2*time.Minute {
			t.Fatalf("received %d of %d; tx %+v rx %+v", r.received, n, q.Counters(), r.q.Counters())
		}
		time.Sleep(100 * time.Microsecond)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	t.Logf("GPU → model wire → GPU: %d frames of %d bytes in %v", r.received, size, time.Since(start).Round(time.Millisecond))
	// The receiver first: freeing the TX queue's GPU memory would wait for it.
	r.close(t)
}

// TestGPURingsInDeviceMemory: rings in GPU memory are registered as a DMA-BUF, which a
// ConnectX reaches peer to peer; the model reaches device memory only by copies, so its
// CREATE_CQ refuses the doorbell record there, naming it, and nothing is left behind.
func TestGPURingsInDeviceMemory(t *testing.T) {
	dev := gputest.Device(t)
	p := newRunPort(t, 0)
	_, err := Open(p.ch, Config{MemType: MemGPU, BufMemType: MemGPU, RxWQEs: 1, StrideSize: 64}, CUDAAllocator{Dev: dev})
	if err == nil || !strings.Contains(err.Error(), "CREATE_CQ") {
		t.Fatalf("Open with GPU rings on the model: %v", err)
	}
	t.Log(err)
	_, err = Open(p.ch, Config{MemType: MemGPUCPU, RxWQEs: 1, StrideSize: 64}, CUDAAllocator{Dev: dev})
	if !errors.Is(err, ErrGPUCPU) {
		t.Fatalf("GPU_CPU: %v", err)
	}
}

// TestGPUFaultErrorCQE: a WQE with a key the device refuses completes with an error CQE; the
// receiver stops and reports the syndrome; the CPU side reads it and tears down cleanly.
func TestGPUFaultErrorCQE(t *testing.T) {
	dev, k := gpuKernels(t)
	p := newRunPort(t, 0)
	// The WQE is corrupted before the kernel starts (the rings are CPU_GPU).
	r := startReceiver(t, dev, k, p.ch, Config{MemType: MemCPUGPU, BufMemType: MemGPU, RxWQEs: 2, StrideSize: 256}, 64, 512, 0, func(q *Queue) {
		binary.BigEndian.PutUint32(q.RQWQE(0)[16+4:], 0xdead00)
	})
	q := r.q
	p.dev.Receive(frame(0, 100))
	for i := 0; !q.Counters().Exited && i < 20000; i++ {
		time.Sleep(500 * time.Microsecond)
	}
	err := q.KernelErr()
	var ke *KernelError
	if !errors.As(err, &ke) || ke.Code != ErrRxCQE || ke.Opcode != prm.CQEOpRespErr || ke.Syndrome != 0x4 {
		t.Fatalf("kernel error = %v (counters %+v)", err, q.Counters())
	}
	t.Log(err)
	r.close(t)
}

// TestGPUFaultStall: a receiver that stops polling after 64 packets (the stall_after knob):
// the frames that keep coming fill the small CQ until it overruns; the watchdog reports the
// stopped heartbeat and the overrun; Stop still ends the kernel and the teardown is clean.
func TestGPUFaultStall(t *testing.T) {
	dev, k := gpuKernels(t)
	p := newRunPort(t, 0)
	r := startReceiver(t, dev, k, p.ch, Config{MemType: MemCPUGPU, BufMemType: MemGPU, RxWQEs: 4, StrideSize: 256, RxCQLog: 7}, 64, 512, 64, nil)
	want := func(i int) []byte { return frame(i, 100) }
	for i := 0; i < 64; i++ {
		p.dev.Receive(want(i))
	}
	for i := 0; r.received < 64 && i < 20000; i++ {
		r.take(t, dev, want)
		time.Sleep(500 * time.Microsecond)
	}
	if r.received != 64 {
		t.Fatalf("received %d before the stall", r.received)
	}
	for i := 64; i < 64+400; i++ {
		p.dev.Receive(want(i))
	}
	w := r.q.NewWatchdog(300 * time.Millisecond)
	var err error
	for i := 0; i < 2000; i++ {
		if err = w.Check(); err != nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !errors.Is(err, ErrStalled) || !strings.Contains(err.Error(), "CQ overrun") {
		t.Fatalf("watchdog: %v", err)
	}
	t.Log(err)
	r.close(t)
}

// TestGPUTeardownWhileRunning: the queue is torn down while the receiver runs and frames are
// arriving: Stop ends the kernel (it publishes its partial batch), then the queue is
// destroyed; no error anywhere, and the kernel's counts match what the batches held.
func TestGPUTeardownWhileRunning(t *testing.T) {
	dev, k := gpuKernels(t)
	p := newRunPort(t, 0)
	r := startReceiver(t, dev, k, p.ch, Config{MemType: MemCPUGPU, BufMemType: MemGPU, RxWQEs: 4, StrideSize: 512}, 64, 512, 0, nil)
	want := func(i int) []byte { return frame(i, 300) }
	for i := 0; i < 100; i++ {
		p.dev.Receive(want(i))
	}
	for i := 0; r.q.Counters().Packets < 100 && i < 20000; i++ {
		r.take(t, dev, want)
		time.Sleep(500 * time.Microsecond)
	}
	for i := 100; i < 200; i++ { // more in flight while it stops
		p.dev.Receive(want(i))
	}
	if err := r.q.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := r.s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	r.take(t, dev, want)
	c := r.q.Counters()
	if uint64(r.received) != c.Packets || !c.Exited {
		t.Errorf("batches held %d packets, the kernel counted %d (exited %v)", r.received, c.Packets, c.Exited)
	}
	r.stopped = true
	if err := r.q.Close(); err != nil {
		t.Fatal(err)
	}
	r.s.Close()
	r.out.Close()
	r.sem.Close()
	t.Logf("torn down while running: %d packets taken, kernel exited, queue closed", r.received)
}

// TestGPUBench measures the GPU side alone: the receive walk over CQs of pre-produced
// completions (plain and compressed) and the WQE build + doorbell, at 64 B, 1 KiB and 8 KiB,
// one block and a full GPU. DQG_BENCH=1 runs it; DQG_BENCH_OUT names a file for the table.
func TestGPUBench(t *testing.T) {
	if os.Getenv("DQG_BENCH") == "" {
		t.Skip("DQG_BENCH=1 runs the GPU-side benchmark")
	}
	dev, k := gpuKernels(t)
	sms, err := dev.Attribute(cudart.AttrMultiprocessorCount)
	if err != nil {
		t.Fatal(err)
	}
	name, _ := dev.Name()
	s, err := dev.NewStream(true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var report strings.Builder
	fmt.Fprintf(&report, "GPU: %s, %d SMs\n", name, sms)
	const cqLog = 16
	cqes := 1 << cqLog
	maxBlocks := sms * 8
	outMem, err := dev.AllocDevice(16 * maxBlocks)
	if err != nil {
		t.Fatal(err)
	}
	defer outMem.Close()
	cqMem, err := dev.AllocDevice(64 * cqes)
	if err != nil {
		t.Fatal(err)
	}
	defer cqMem.Close()
	descMem, err := dev.AllocDevice(DescSize * maxBlocks)
	if err != nil {
		t.Fatal(err)
	}
	defer descMem.Close()
	for _, size := range []int{64, 1024, 8192} {
		for _, comp := range []bool{false, true} {
			cq := produceCQ(cqLog, size, comp)
			if err := dev.CopyHtoD(cqMem.Ptr(), cq); err != nil {
				t.Fatal(err)
			}
			d := make([]byte, DescSize)
			le.PutUint64(d[DescRxCQ:], uint64(cqMem.Ptr()))
			le.PutUint32(d[DescRxCQLog:], cqLog)
			le.PutUint32(d[DescRQLog:], 7)
			le.PutUint32(d[DescStridesLog:], 9)
			le.PutUint32(d[DescStrideLog:], uint32(max(6, bitLen(size-1))))
			le.PutUint64(d[DescRxBuf:], 1<<40)
			all := bytes.Repeat(d, maxBlocks)
			if err := dev.CopyHtoD(descMem.Ptr(), all); err != nil {
				t.Fatal(err)
			}
			for _, blocks := range []int{1, sms, maxBlocks} {
				const iters = 5
				el, err := s.Time(iters, func(int) error {
					return k.BenchRx(s, uint64(descMem.Ptr()), blocks, uint32(cqes), uint64(outMem.Ptr()))
				})
				if err != nil {
					t.Fatal(err)
				}
				res := make([]byte, 16*blocks)
				if err := dev.CopyDtoH(res, outMem.Ptr()); err != nil {
					t.Fatal(err)
				}
				var pk uint64
				for b := 0; b < blocks; b++ {
					pk += le.Uint64(res[8*b:])
					if got := le.Uint64(res[8*b:]); got != uint64(cqes) {
						t.Fatalf("rx bench %d B compressed=%v block %d: %d packets, want %d", size, comp, b, got, cqes)
					}
					if got := le.Uint64(res[8*(blocks+b):]); got != uint64(cqes)*uint64(size) {
						t.Fatalf("rx bench block %d: %d bytes, want %d", b, got, uint64(cqes)*uint64(size))
					}
				}
				mpps := float64(pk) * iters / el.Seconds() / 1e6
				fmt.Fprintf(&report, "rx walk  %5d B compressed=%-5v blocks=%4d: %8.1f Mpps (%.2f Mpps/block)\n", size, comp, blocks, mpps, mpps/float64(blocks))
			}
		}
	}
	// Send: each block its own SQ ring (1024 basic blocks), doorbell record and UAR word in
	// GPU memory; no NIC consumes them.
	const sqLog = 10
	ringMem, err := dev.AllocDevice(maxBlocks * (64<<sqLog + 4096))
	if err != nil {
		t.Fatal(err)
	}
	defer ringMem.Close()
	bufMem, err := dev.AllocDevice(64 * 8192)
	if err != nil {
		t.Fatal(err)
	}
	defer bufMem.Close()
	img := make([]byte, 64*8192)
	for i := 0; i < 64; i++ {
		copy(img[i*8192:], frame(i, 64))
	}
	if err := dev.CopyHtoD(bufMem.Ptr(), img); err != nil {
		t.Fatal(err)
	}
	all := make([]byte, DescSize*maxBlocks)
	for b := 0; b < maxBlocks; b++ {
		d := all[b*DescSize:]
		base := uint64(ringMem.Ptr()) + uint64(b*(64<<sqLog+4096))
		le.PutUint64(d[DescSQ:], base)
		le.PutUint64(d[DescSQDBR:], base+64<<sqLog)
		le.PutUint64(d[DescUAR:], base+64<<sqLog+64)
		le.PutUint64(d[DescTxBuf:], uint64(bufMem.Ptr()))
		le.PutUint32(d[DescSQLog:], sqLog)
		le.PutUint32(d[DescSQN:], uint32(b+1))
		le.PutUint32(d[DescTxLKey:], 0x1234)
	}
	if err := dev.CopyHtoD(descMem.Ptr(), all); err != nil {
		t.Fatal(err)
	}
	const n = 1 << 16
	for _, size := range []int{64, 1024, 8192} {
		for _, mpw := range []uint32{1, 8} {
			for _, blocks := range []int{1, sms} {
				const iters = 3
				el, err := s.Time(iters, func(int) error {
					return k.BenchTx(s, uint64(descMem.Ptr()), blocks, n, uint32(size), 32, mpw, uint64(outMem.Ptr()))
				})
				if err != nil {
					t.Fatal(err)
				}
				res := make([]byte, 8*blocks)
				if err := dev.CopyDtoH(res, outMem.Ptr()); err != nil {
					t.Fatal(err)
				}
				for b := 0; b < blocks; b++ {
					if got := le.Uint64(res[8*b:]); got != n {
						t.Fatalf("tx bench block %d: %d packets posted, want %d", b, got, n)
					}
				}
				mpps := float64(n*blocks) * iters / el.Seconds() / 1e6
				fmt.Fprintf(&report, "tx build %5d B mpw=%d blocks=%4d: %8.1f Mpps (%.2f Mpps/block), doorbell every 32 packets\n", size, mpw, blocks, mpps, mpps/float64(blocks))
			}
		}
	}
	t.Log("\n" + report.String())
	if p := os.Getenv("DQG_BENCH_OUT"); p != "" {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
			os.WriteFile(p, []byte(report.String()), 0o644)
		}
	}
}

func bitLen(v int) int {
	n := 0
	for ; v > 0; v >>= 1 {
		n++
	}
	return n
}

// produceCQ writes one lap of software-owned receive completions of size-byte packets on a
// striding RQ (one stride each, 512 strides per WQE): plain CQEs, or compressed sessions of
// 64 (a title and eight arrays of eight stride-index mini-CQEs, basic layout).
func produceCQ(log, size int, comp bool) []byte {
	n := 1 << log
	cq := make([]byte, 64*n)
	be := binary.BigEndian
	bc := uint32(1)<<prm.MPRQByteCntStrideShift | uint32(size)
	if !comp {
		for i := 0; i < n; i++ {
			e := cq[i*64:]
			be.PutUint16(e[2:], uint16(i/512))
			be.PutUint32(e[44:], bc)
			be.PutUint64(e[48:], uint64(i))
			be.PutUint32(e[56:], 7)
			be.PutUint16(e[60:], uint16(i%512))
			e[63] = prm.CQEOpRespSend << 4
		}
		return cq
	}
	for i := 0; i < n; i += 64 {
		e := cq[i*64:]
		be.PutUint16(e[2:], uint16(i/512))
		be.PutUint32(e[44:], 64)
		be.PutUint64(e[48:], uint64(i))
		be.PutUint32(e[56:], 7)
		be.PutUint16(e[60:], uint16(i%512))
		e[63] = prm.CQEOpRespSend<<4 | prm.CQEFormatCompressed<<2
		for k := 0; k < 64; k++ {
			at := i + 1
			if k >= 8 {
				at = i + 8*(k/8)
			}
			m := cq[at*64+(k%8)*8:]
			be.PutUint16(m[2:], uint16((i+k)%512))
			be.PutUint32(m[4:], bc)
		}
	}
	return cq
}
