package roce

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/integration/vm/guest"
	"github.com/daqiri-go/daqiri/internal/testutil/enginetest"
	"github.com/daqiri-go/daqiri/verbs"
)

// These guest tests look inside the engine (QP attributes, registration of
// device memory), so they open it on what enginetest builds instead of through
// a session.

// testEnv is what a session would give the engine for one RoCE interface
// with one RX and one TX queue.
func testEnv(t *testing.T, mode config.SocketMode, local netip.AddrPort) *engine.Env {
	t.Helper()
	mrs := []config.MemoryRegion{
		{Name: "rx", Kind: config.KindHost, Access: config.AccessLocal, NumBufs: 8, BufSize: 4096},
		{Name: "tx", Kind: config.KindHost, Access: config.AccessLocal | config.AccessRDMARead, NumBufs: 8, BufSize: 4096},
	}
	ifc := config.Interface{Name: "r" + string(mode), Address: local.Addr().String(),
		Socket: &config.SocketConfig{Mode: mode, Local: config.Endpoint{Proto: config.ProtoRoCE, Host: local.Addr().String(), Port: int(local.Port())}},
		RoCE:   &config.RoCEConfig{TransportMode: "RC"},
		RX:     &config.RxConfig{Queues: []config.Queue{{Name: "q", CPUCore: "0", BatchSize: 4, MemoryRegions: []string{"rx"}}}},
		TX:     &config.TxConfig{Queues: []config.Queue{{Name: "q", CPUCore: "0", BatchSize: 4, MemoryRegions: []string{"tx"}}}}}
	cfg := &config.Config{Version: 1, StreamType: config.StreamSocket, MemoryRegions: mrs, Interfaces: []config.Interface{ifc}}
	return &engine.Env{Config: cfg, Ports: enginetest.Ports(t, cfg), Log: slog.Default()}
}

func openEngine(t *testing.T, env *engine.Env) *Engine {
	t.Helper()
	e, err := Open(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	return e.(*Engine)
}

// TestGuestQPAttributes: a connection's QPs carry the short RNR timer (12
// by default, DAQIRI_RDMA_MIN_RNR_TIMER otherwise), the 67 ms ACK timeout,
// infinite RNR retries and READ resources.
func TestGuestQPAttributes(t *testing.T) {
	_, addr := guest.RxeAddr(t)
	for _, rnr := range []int{-1, rand.IntN(32)} {
		name := "default"
		if rnr >= 0 {
			name = "env " + strconv.Itoa(rnr)
			t.Setenv(EnvMinRNRTimer, strconv.Itoa(rnr))
		} else {
			t.Setenv(EnvMinRNRTimer, "")
			rnr = DefaultMinRNRTimer
		}
		t.Run(name, func(t *testing.T) {
			srvAddr := netip.AddrPortFrom(addr, uint16(20000+rand.IntN(20000)))
			srv := openEngine(t, testEnv(t, config.ModeServer, srvAddr))
			cli := openEngine(t, testEnv(t, config.ModeClient, netip.AddrPortFrom(addr, 0)))
			id, err := cli.Connect(0, srvAddr, 20*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			var sid uint64
			for deadline := time.Now().Add(20 * time.Second); sid == 0 && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				sid, _ = srv.ClaimServerConn(0)
			}
			for _, c := range []*conn{cli.conn(id), srv.conn(sid)} {
				if c == nil {
					t.Fatal("connection missing")
				}
				a, err := c.qp.Query(0)
				if err != nil {
					t.Fatal(err)
				}
				if a.State != verbs.QPStateRTS || int(a.MinRNRTimer) != rnr || a.Timeout != ackTimeout || a.RNRRetry != 7 || a.RetryCnt != 7 ||
					a.MaxDestRdAtomic == 0 || a.MaxRdAtomic == 0 || a.AccessFlags&verbs.AccessRemoteRead == 0 {
					t.Errorf("%s QP %d: state %v min RNR timer %d (want %d), timeout %d, retries %d/%d, READ resources %d/%d, access %#x",
						c.ep.cfg.Mode, c.qp.Num(), a.State, a.MinRNRTimer, rnr, a.Timeout, a.RetryCnt, a.RNRRetry, a.MaxRdAtomic, a.MaxDestRdAtomic, a.AccessFlags)
				}
			}
		})
	}
}

// dmabufMem stands in for GPU memory: no CPU view, exportable as a
// DMA-BUF (a memfd here, which rxe never gets to look at).
type dmabufMem struct{ exportErr error }

func (m *dmabufMem) Bytes() []byte { return nil }
func (m *dmabufMem) Addr() uintptr { return 0x7f0000000000 }
func (m *dmabufMem) Close() error  { return nil }
func (m *dmabufMem) DMABuf() (int, uint64, error) {
	if m.exportErr != nil {
		return -1, 0, m.exportErr
	}
	fd, err := unix.MemfdCreate("daqiri-fake-gpu", unix.MFD_CLOEXEC)
	return fd, 0, err
}

// TestGuestDeviceMemoryNeedsDMABuf: a device-memory region on rxe, whose
// driver has no DMA-BUF MRs, fails with an error that names the region,
// the device, the key path and what to use instead; nothing is left
// registered.
func TestGuestDeviceMemoryNeedsDMABuf(t *testing.T) {
	dev, _ := guest.RxeAddr(t)
	info, err := verbs.LookupDevice(dev)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{MemoryRegions: []config.MemoryRegion{{Name: "gpu_rx", Kind: config.KindDevice, NumBufs: 4, BufSize: 4096, Access: config.AccessLocal | config.AccessRDMAWrite}}}
	e := &Engine{env: &engine.Env{Config: cfg}, devs: map[string]*device{}}
	d, err := e.openDevice(info)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	const path = "interfaces[0].rx.queues[0].memory_regions"
	r, err := engine.NewRegion(&cfg.MemoryRegions[0], &dmabufMem{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.register(d, r, path)
	if !errors.Is(err, ErrNoDMABuf) || !errors.Is(err, engine.ErrNotSupported) {
		t.Fatalf("registering device memory on %s: %v, want ErrNoDMABuf", dev, err)
	}
	for _, w := range []string{path, "gpu_rx", dev, "driver rxe", "host_pinned"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
	t.Logf("device memory on %s: %v", dev, err)
	if len(d.mrs) != 0 {
		t.Errorf("%d MRs registered after the failure", len(d.mrs))
	}
	// Memory that cannot be exported at all says so.
	r2, _ := engine.NewRegion(&cfg.MemoryRegions[0], &dmabufMem{exportErr: errors.New("no DMA-BUF support in this GPU driver")})
	if _, err := e.register(d, r2, path); err == nil || !strings.Contains(err.Error(), "no DMA-BUF support in this GPU driver") {
		t.Errorf("unexportable device memory: %v", err)
	}
}
