package gpunetio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/mlx5/model"
	"github.com/daqiri-go/daqiri/mlx5/model/modelch"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// TestHeaderLayout: every struct field offset and DQG_ constant the header states equals the
// Go side's, and the header's CQE/WQE byte offsets are mlx5/prm's.
func TestHeaderLayout(t *testing.T) {
	src, err := os.ReadFile("kernels/daqiri_gpunetio.cuh")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]int{
		"dqg_queue": {"magic": DescMagic, "version": DescVersion, "rx_cq": DescRxCQ, "rx_cq_dbr": DescRxCQDBR, "rq": DescRQ,
			"rq_dbr": DescRQDBR, "rx_buf": DescRxBuf, "rx_cq_log": DescRxCQLog, "rq_log": DescRQLog, "stride_log": DescStrideLog,
			"strides_log": DescStridesLog, "rx_lkey": DescRxLKey, "flags": DescFlags, "tx_cq": DescTxCQ, "tx_cq_dbr": DescTxCQDBR,
			"sq": DescSQ, "sq_dbr": DescSQDBR, "uar": DescUAR, "tx_buf": DescTxBuf, "tx_cq_log": DescTxCQLog, "sq_log": DescSQLog,
			"sqn": DescSQN, "tx_lkey": DescTxLKey, "ctrl": DescCtrl, "tx_buf_size": DescTxBufSize, "rx_buf_size": DescRxBufSize},
		"dqg_ctrl": {"stop": CtrlStop, "heartbeat": CtrlHeartbeat, "exited": CtrlExited, "err": CtrlErr, "err_synd": CtrlErrSynd,
			"err_wqe": CtrlErrWQE, "err_op": CtrlErrOp, "running": CtrlRunning, "packets": CtrlPackets, "bytes": CtrlBytes,
			"rx_ci": CtrlRxCI, "rq_pi": CtrlRQPI, "tx_pi": CtrlTxPI, "tx_ci": CtrlTxCI, "uar": CtrlUAR, "batches": CtrlBatches},
		"dqg_sem": {"status": SemStatus, "count": SemCount, "bytes": SemBytes, "seq": SemSeq, "ts": SemTS},
	}
	// Fields are declared with their offsets in a trailing comment: "uint64_t a, b; // 8, 16".
	structRE := regexp.MustCompile(`(?m)^struct (dqg_\w+) \{\n((?:.*\n)*?)\};`)
	fieldRE := regexp.MustCompile(`^\s*uint(?:8|32|64)_t ([a-z_, ]+);\s*// ([0-9, ]+)$`)
	seen := map[string]int{}
	for _, m := range structRE.FindAllStringSubmatch(string(src), -1) {
		w, ok := want[m[1]]
		if !ok {
			continue
		}
		for _, line := range strings.Split(m[2], "\n") {
			f := fieldRE.FindStringSubmatch(line)
			if f == nil {
				continue
			}
			names, offs := strings.Split(f[1], ","), strings.Split(f[2], ",")
			if len(names) != len(offs) {
				t.Errorf("%s: %q: %d names, %d offsets", m[1], line, len(names), len(offs))
				continue
			}
			for i, n := range names {
				n = strings.TrimSpace(n)
				o, _ := strconv.Atoi(strings.TrimSpace(offs[i]))
				if g, ok := w[n]; !ok || g != o {
					t.Errorf("%s.%s at %d in the header, %d (known %v) in desc.go", m[1], n, o, g, ok)
				}
				seen[m[1]+"."+n]++
			}
		}
	}
	for s, w := range want {
		for n := range w {
			if seen[s+"."+n] != 1 {
				t.Errorf("%s.%s: declared %d times with an offset comment in the header", s, n, seen[s+"."+n])
			}
		}
	}
	defs := map[string]int{"DQG_DESC_SIZE": DescSize, "DQG_CTRL_SIZE": CtrlSize, "DQG_SEM_SIZE": SemSize, "DQG_SLOT_HEADER": SlotHeader,
		"DQG_FLAG_COMPRESSED": FlagCompressed, "DQG_FLAG_RX": FlagRx, "DQG_FLAG_TX": FlagTx, "DQG_ERR_RX_CQE": ErrRxCQE,
		"DQG_ERR_TX_CQE": ErrTxCQE, "DQG_ERR_BAD_CQE": ErrBadCQE, "DQG_ERR_TX_RING": ErrTxRing, "DQG_ERR_SEM_STUCK": ErrSemStuck,
		"DQG_SEM_FREE": SemFree, "DQG_SEM_READY": SemReady}
	for name, v := range defs {
		m := regexp.MustCompile(`(?m)^#define ` + name + ` (\d+)$`).FindStringSubmatch(string(src))
		if m == nil {
			t.Errorf("%s not defined in the header", name)
			continue
		}
		if g, _ := strconv.Atoi(m[1]); g != v {
			t.Errorf("%s = %d in the header, %d in desc.go", name, g, v)
		}
	}
	// The CQE, mini-CQE and WQE offsets the header's code uses, against prm.
	for _, c := range []struct {
		what string
		f    prm.Field
		off  uint32
	}{{"cqe wqe_id", prm.CQE64.WQEID, 2}, {"cqe byte_cnt", prm.CQE64.ByteCnt, 44}, {"cqe timestamp", prm.CQE64.Timestamp, 48},
		{"cqe sop_drop_qpn", prm.CQE64.SopDropQPN, 56}, {"cqe wqe_counter", prm.CQE64.WQECounter, 60}, {"cqe op_own", prm.CQE64.OpOwn, 63},
		{"err vendor", prm.ErrCQE.VendorErrSynd, 54}, {"err syndrome", prm.ErrCQE.Syndrome, 55},
		{"mini stridx", prm.MiniCQE.StrideIdx, 2}, {"mini byte_cnt", prm.MiniCQE.ByteCnt, 4},
		{"ctrl fm_ce_se", prm.WQECtrl.FmCeSe, 11}, {"eth inline_hdr_sz", prm.WQEEth.InlineHdrSz, 12},
		{"eth inline_hdr_start", prm.WQEEth.InlineHdrStart, 14}, {"data lkey", prm.WQEData.LKey, 4}, {"data addr", prm.WQEData.Addr, 8}} {
		if c.f.ByteOff() != int(c.off) {
			t.Errorf("%s: the header uses byte %d, prm has %d", c.what, c.off, c.f.ByteOff())
		}
	}
	if prm.WQECtrlCQUpdate != 8 || prm.WQEOpSend != 0x0a || prm.WQEOpEnhancedMPSW != 0x29 || prm.CQEOpRespSend != 2 ||
		prm.CQEOpReqErr != 13 || prm.CQEOpRespErr != 14 || prm.CQEOpInvalid != 15 || prm.CQEFormatCompressed != 3 {
		t.Error("a constant the header hard-codes differs from prm")
	}
}

// TestConfigRefused: each bad key is named.
func TestConfigRefused(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{MemType: "VRAM"}, "gpunetio.mem_type"},
		{Config{BufMemType: "x"}, "gpunetio.buf_mem_type"},
		{Config{RxWQEs: 3}, "gpunetio.rx_wqes"},
		{Config{StridesPerWQE: 256}, "gpunetio.strides_per_wqe"},
		{Config{StrideSize: 100}, "gpunetio.stride_size"},
		{Config{TxWQEBBs: 10}, "gpunetio.tx_wqebbs"},
		{Config{RxCQLog: 40}, "gpunetio.rx_cq_log"},
		{Config{NoRx: true}, "no_rx and no tx_buf_size"},
	} {
		err := c.cfg.check()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error naming %s", c.cfg, err, c.want)
		}
	}
	if _, err := (CUDAAllocator{}).Alloc(MemGPUCPU, 4096); !errors.Is(err, ErrGPUCPU) {
		t.Errorf("GPU_CPU: %v", err)
	}
	if _, err := (HostAllocator{}).Alloc(MemGPU, 4096); err == nil {
		t.Error("host allocator gave GPU memory")
	}
	for s, w := range map[string]MemType{"gpu": MemGPU, "cpu_gpu": MemCPUGPU, "": MemCPUGPU, "CPU": MemCPU} {
		if g, err := ParseMemType(s); g != w || err != nil {
			t.Errorf("ParseMemType(%q) = %v, %v", s, g, err)
		}
	}
}

// modelPort is one model function with its channel, stepped by the test.
type modelPort struct {
	dev *model.Device
	ch  *modelch.Channel
	mu  sync.Mutex
	out [][]byte
}

func newModelPort(t *testing.T, n int) *modelPort {
	t.Helper()
	// Deterministic clock: equal timestamps let the model compress CQEs.
	dev := model.New(model.Config{MAC: modelch.MAC(n)})
	ch, err := modelch.Open(dev, fmt.Sprintf("model:%d", n))
	if err != nil {
		t.Fatal(err)
	}
	p := &modelPort{dev: dev, ch: ch}
	dev.SetWire(func(f []byte) {
		p.mu.Lock()
		p.out = append(p.out, append([]byte(nil), f...))
		p.mu.Unlock()
	})
	t.Cleanup(func() {
		if err := ch.Close(); err != nil {
			t.Errorf("channel Close: %v", err)
		}
	})
	return p
}

func (p *modelPort) step() {
	for range 10000 {
		if p.dev.Step(256) == 0 {
			return
		}
	}
}

func frame(i, n int) []byte {
	f := make([]byte, n)
	copy(f, modelch.MAC(0))
	copy(f[6:], modelch.MAC(9))
	binary.BigEndian.PutUint16(f[12:], 0x88b5) // local experimental ethertype
	for j := 14; j < n; j++ {
		f[j] = byte(i*7 + j)
	}
	binary.BigEndian.PutUint32(f[14:], uint32(i))
	return f
}

// TestReceiveThroughModel runs the header's receive algorithm (the Go port) on a MemCPU queue
// with the model as the NIC: frames of several sizes, over several laps of the WQEs (so
// every WQE is re-posted) and of the CQ, arrive in order and byte for byte, with and without
// CQE compression.
func TestReceiveThroughModel(t *testing.T) {
	for _, comp := range []bool{false, true} {
		t.Run(fmt.Sprintf("compressed=%v", comp), func(t *testing.T) {
			p := newModelPort(t, 0)
			q, err := Open(p.ch, Config{MemType: MemCPU, BufMemType: MemCPU, RxWQEs: 2, StridesPerWQE: 512, StrideSize: 256, CQECompression: comp}, HostAllocator{})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := q.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			}()
			r := newRef(q)
			s := r.rxInit()
			const total, chunk = 3000, 300
			got := 0
			sizes := []int{60, 64, 200, 256, 700} // 700 takes 3 strides of 256
			for sent := 0; sent < total; sent += chunk {
				for i := sent; i < sent+chunk; i++ {
					p.dev.Receive(frame(i, sizes[i%len(sizes)]))
				}
				p.step()
				for round := 0; got < sent+chunk && round < 1000; round++ {
					pk, n := r.rxPoll(s, 64)
					if n < 0 {
						t.Fatalf("poll: error CQE op %d synd %#x", s.errOp, s.errSynd)
					}
					for _, k := range pk {
						want := frame(got, sizes[got%len(sizes)])
						if b := r.mem(k.addr, int(k.len)); !bytes.Equal(b, want) {
							t.Fatalf("packet %d: %d bytes differ from the %d sent", got, k.len, len(want))
						}
						got++
					}
					r.rxRepost(s)
					if n == 0 {
						p.step()
					}
				}
			}
			if got != total {
				t.Fatalf("received %d of %d (model counters %+v)", got, total, p.dev.Counters())
			}
			if comp != (s.sessions > 0) {
				t.Errorf("compression %v but %d compressed sessions read", comp, s.sessions)
			}
			t.Logf("%d packets, %d WQEs consumed, %d compressed sessions", got, s.wqCI, s.sessions)
			if s.wqCI < 4 {
				t.Errorf("only %d WQEs consumed: the test did not lap the RQ", s.wqCI)
			}
		})
	}
}

// TestSendThroughModel: the header's send path (Go port) builds SEND WQEs in a MemCPU SQ; the
// doorbell goes to the shadow UAR word, the relay forwards it, and the model's wire carries
// every frame byte for byte; the completions come back on the TX CQ.
func TestSendThroughModel(t *testing.T) {
	p := newModelPort(t, 1)
	q, err := Open(p.ch, Config{MemType: MemCPU, BufMemType: MemCPU, NoRx: true, TxWQEBBs: 64, TxBufSize: 1 << 20}, HostAllocator{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	r := newRef(q)
	tx := &refTx{}
	buf := q.TxBuf().Bytes()
	const n, size = 500, 300
	for i := 0; i < n; i++ {
		copy(buf[i*size:], frame(i, size))
	}
	sent := 0
	for round := 0; sent < n && round < 10000; round++ {
		burst := 0
		for sent < n && burst < 16 {
			rc := r.txSend(tx, q.TxBuf().DevAddr()+uint64(sent*size), size, burst == 15 || sent == n-1)
			if rc == -1 {
				break
			}
			sent++
			burst++
		}
		if burst > 0 {
			before := q.Doorbells()
			r.txRing(tx)
			for w := 0; q.Doorbells() == before && w < 100000; w++ {
				time.Sleep(10 * time.Microsecond)
			}
		}
		p.step()
		if r.txPoll(tx) < 0 {
			t.Fatalf("send completion error: syndrome %#x", tx.errSynd)
		}
	}
	for w := 0; tx.ci != tx.pi && w < 1000; w++ {
		p.step()
		r.txPoll(tx)
	}
	if tx.ci != tx.pi {
		t.Fatalf("completed %d of %d WQEs", tx.ci, tx.pi)
	}
	if d := q.DoorbellPath(); !strings.Contains(d, "relayed by the CPU") || !strings.Contains(d, "CU_MEMHOSTREGISTER_IOMEMORY") {
		t.Errorf("DoorbellPath: %s", d)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.out) != n {
		t.Fatalf("wire carried %d frames, want %d", len(p.out), n)
	}
	for i, f := range p.out {
		if !bytes.Equal(f, frame(i, size)) {
			t.Fatalf("frame %d differs", i)
		}
	}
}

// TestErrorCQE: a WQE whose key the device refuses completes with an error CQE, which the
// receive path reports with its syndrome, and the queue closes cleanly.
func TestErrorCQE(t *testing.T) {
	p := newModelPort(t, 0)
	q, err := Open(p.ch, Config{MemType: MemCPU, BufMemType: MemCPU, RxWQEs: 2, StrideSize: 256}, HostAllocator{})
	if err != nil {
		t.Fatal(err)
	}
	binary.BigEndian.PutUint32(q.RQWQE(0)[16+4:], 0xdead00) // a key no MKEY has
	r := newRef(q)
	s := r.rxInit()
	p.dev.Receive(frame(0, 100))
	p.step()
	_, n := r.rxPoll(s, 8)
	if n != -1 {
		t.Fatalf("poll = %d, want the error CQE", n)
	}
	// What the kernel writes to the control block, and how the CPU reports it.
	b := q.Control().Bytes()
	le.PutUint32(b[CtrlErrSynd:], s.errSynd)
	le.PutUint32(b[CtrlErrWQE:], s.errWQE)
	le.PutUint32(b[CtrlErrOp:], s.errOp)
	le.PutUint32(b[CtrlErr:], ErrRxCQE)
	err = q.KernelErr()
	var ke *KernelError
	if !errors.As(err, &ke) || ke.Opcode != prm.CQEOpRespErr || ke.Syndrome == 0 {
		t.Fatalf("KernelErr = %v", err)
	}
	t.Log(err)
	if err := q.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// TestWatchdogOverrun: a kernel that stops polling (running, heartbeat frozen) is reported by
// the watchdog; with a CQ smaller than the strides, the frames that keep coming overrun it,
// and the report says so (QUERY_CQ status CQ_OVERFLOW).
func TestWatchdogOverrun(t *testing.T) {
	p := newModelPort(t, 0)
	q, err := Open(p.ch, Config{MemType: MemCPU, BufMemType: MemCPU, RxWQEs: 2, StrideSize: 256, RxCQLog: 5}, HostAllocator{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	b := q.Control().Bytes()
	le.PutUint32(b[CtrlRunning:], 1)
	le.PutUint32(b[CtrlHeartbeat:], 7)
	w := q.NewWatchdog(0)
	for i := 0; i < 100; i++ {
		p.dev.Receive(frame(i, 100))
	}
	p.step()
	err = w.Check()
	if !errors.Is(err, ErrStalled) || !strings.Contains(err.Error(), "CQ overrun") {
		t.Fatalf("watchdog: %v", err)
	}
	t.Log(err)
	// A kernel that exited is not stalled; Stop returns at once.
	le.PutUint32(b[CtrlExited:], 1)
	if err := w.Check(); err != nil {
		t.Errorf("exited kernel: %v", err)
	}
	if err := q.Stop(time.Second); err != nil {
		t.Errorf("Stop: %v", err)
	}
}

// TestStopTimeout: a kernel that never leaves its loop makes Stop fail naming it.
func TestStopTimeout(t *testing.T) {
	p := newModelPort(t, 0)
	q, err := Open(p.ch, Config{MemType: MemCPU, BufMemType: MemCPU, RxWQEs: 1, StrideSize: 64}, HostAllocator{})
	if err != nil {
		t.Fatal(err)
	}
	b := q.Control().Bytes()
	le.PutUint32(b[CtrlRunning:], 1)
	if err := q.Stop(time.Millisecond); !errors.Is(err, ErrKernelRunning) {
		t.Fatalf("Stop = %v", err)
	}
	// Close refuses while the kernel runs (freeing its GPU memory would wait for it), and
	// works once it has exited.
	if err := q.Close(); !errors.Is(err, ErrKernelRunning) {
		t.Fatalf("Close under a running kernel = %v", err)
	}
	le.PutUint32(b[CtrlExited:], 1)
	if err := q.Close(); err != nil {
		t.Fatalf("Close after exit: %v", err)
	}
}

// TestSemRing: entries the "kernel" marks ready come out in order with their fields, and
// only once released are they free again.
func TestSemRing(t *testing.T) {
	s, err := NewSemRing(HostAllocator{}, MemCPU, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := NewSemRing(HostAllocator{}, MemCPU, 3); err == nil {
		t.Error("3 entries accepted")
	}
	b := s.m.Bytes()
	publish := func(i int, count uint32, seq uint64) {
		e := b[i*SemSize:]
		le.PutUint32(e[SemCount:], count)
		le.PutUint64(e[SemSeq:], seq)
		le.PutUint32(e[SemStatus:], SemReady)
	}
	if _, ok := s.Poll(); ok {
		t.Fatal("empty ring polled an entry")
	}
	for i := 0; i < 6; i++ {
		publish(i%4, uint32(10+i), uint64(i))
		bt, ok := s.Poll()
		if !ok || bt.Count != 10+i || bt.Seq != uint64(i) || bt.Index != i%4 {
			t.Fatalf("entry %d: %+v %v", i, bt, ok)
		}
		if le.Uint32(b[(i%4)*SemSize:]) != SemReady {
			t.Fatal("polled entry freed before Release")
		}
		s.Release()
		if le.Uint32(b[(i%4)*SemSize:]) != SemFree {
			t.Fatal("released entry not free")
		}
	}
}

// TestProducedCQDecodes: the completions the GPU benchmark pre-produces (plain, and compressed
// sessions of 64) decode with the header's algorithm (Go port) to one packet per CQE with the
// stride address, length and flow tag they were written with — the same check the benchmark
// kernel makes on the GPU.
func TestProducedCQDecodes(t *testing.T) {
	const log, size = 10, 1024
	for _, comp := range []bool{false, true} {
		cq := produceCQ(log, size, comp)
		d := make([]byte, DescSize)
		le.PutUint64(d[DescRxCQ:], 1<<20)
		le.PutUint32(d[DescRxCQLog:], log)
		le.PutUint32(d[DescRQLog:], 7)
		le.PutUint32(d[DescStridesLog:], 9)
		le.PutUint32(d[DescStrideLog:], 10)
		le.PutUint64(d[DescRxBuf:], 1<<40)
		le.PutUint64(d[DescRxCQDBR:], 1<<20+uint64(len(cq)))
		mem := append(cq, make([]byte, 8)...)
		r := &refQueue{d: d, mem: func(a uint64, n int) []byte { return mem[a-1<<20 : a-1<<20+uint64(n)] }}
		s := r.rxInit()
		got := 0
		for round := 0; got < 1<<log && round < 1<<log; round++ {
			pk, n := r.rxPoll(s, 32)
			if n <= 0 {
				t.Fatalf("compressed=%v: poll %d after %d packets", comp, n, got)
			}
			for _, p := range pk {
				if want := uint64(1<<40) + uint64(got)<<10; p.addr != want || p.len != size || p.tag != 7 {
					t.Fatalf("compressed=%v packet %d: %+v, want address %#x", comp, got, p, want)
				}
				got++
			}
		}
		if got != 1<<log || (comp && s.sessions != 1<<log/64) || s.wqCI != 1<<log/512 {
			t.Errorf("compressed=%v: %d packets, %d sessions, %d WQEs consumed", comp, got, s.sessions, s.wqCI)
		}
	}
}
