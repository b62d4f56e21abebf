package mlx5

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/internal/testutil/enginetest"
	"github.com/daqiri-go/daqiri/mlx5/channel"
	"github.com/daqiri-go/daqiri/mlx5/model/gpudma"
	"github.com/daqiri-go/daqiri/mlx5/model/modelch"
)

// Device memory on model ports (issue 27): a region of kind device has no host bytes; the
// engine registers it as a DMA-BUF, the model resolves the fd and writes the region through
// a window. Here the "GPU" is a fake — memory reachable only by copy, exported as a memfd
// that a fake importer resolves — so the whole path runs without a GPU (CI); gpu_test.go runs
// the same checks with cudart memory and the real importer on a GPU.

// fakeDev is device memory of a fake GPU: Bytes is nil, and its bytes are reached by copy.
type fakeDev struct {
	addr  uintptr
	store []byte
	mu    sync.Mutex
	ino   uint64 // the inode of the last fd DMABuf exported
	// data orders the model's copies into store with the test's reads of it: a real
	// device's DMA is ordered before its CQE by the hardware, which the race detector
	// cannot see for memory on the Go heap.
	data sync.Mutex
}

func (m *fakeDev) Bytes() []byte { return nil }
func (m *fakeDev) Addr() uintptr { return m.addr }
func (m *fakeDev) Close() error  { return nil }

// DMABuf exports the memory as a memfd the fake importer recognises by its inode.
func (m *fakeDev) DMABuf() (int, uint64, error) {
	fd, err := unix.MemfdCreate("fake-dmabuf", unix.MFD_CLOEXEC)
	if err != nil {
		return -1, 0, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, 0, err
	}
	m.mu.Lock()
	m.ino = st.Ino
	m.mu.Unlock()
	return fd, 0, nil
}

// read copies n bytes at device address a.
func (m *fakeDev) read(a uintptr, n int) []byte {
	off := a - m.addr
	m.data.Lock()
	defer m.data.Unlock()
	return append([]byte(nil), m.store[off:off+uintptr(n)]...)
}

// fakeGPU allocates fakeDev memory at addresses apart from host memory and resolves the
// fds it exported.
type fakeGPU struct {
	mu   sync.Mutex
	mems []*fakeDev
	imp  int // Import calls
}

func (g *fakeGPU) alloc(size int) *fakeDev {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := &fakeDev{addr: uintptr(0x6000_0000_0000 + len(g.mems)<<36), store: make([]byte, (size+65535)&^65535)}
	g.mems = append(g.mems, m)
	return m
}

func (g *fakeGPU) Import(fd int, offset, length uint64) (gpudma.Buffer, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return gpudma.Buffer{}, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.imp++
	for _, m := range g.mems {
		m.mu.Lock()
		ino := m.ino
		m.mu.Unlock()
		if ino == st.Ino {
			if offset+length > uint64(len(m.store)) {
				return gpudma.Buffer{}, fmt.Errorf("%d bytes at %#x outside the %d-byte buffer", length, offset, len(m.store))
			}
			return gpudma.Buffer{IOVA: uint64(m.addr) + offset, Size: length, Window: copyWindow{m.store[offset : offset+length], &m.data}, What: "fake GPU memory"}, nil
		}
	}
	return gpudma.Buffer{}, fmt.Errorf("fd %d is no buffer of the fake GPU", fd)
}

// copyWindow is memory the model reaches only by copy, each copy under the memory's lock.
type copyWindow struct {
	b  []byte
	mu *sync.Mutex
}

func (w copyWindow) ReadAt(p []byte, off uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	copy(p, w.b[off:])
	return nil
}

func (w copyWindow) WriteAt(p []byte, off uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	copy(w.b[off:], p)
	return nil
}

// devConfig is pairConfig with the RX queues' payload regions (the last region of each
// queue) of kind kind.
func devConfig(nrx, rxBufs, bufSize int, hds bool, kind config.MemoryKind) *config.Config {
	cfg := pairConfig(nrx, rxBufs, bufSize, hds)
	for i := range cfg.MemoryRegions {
		if strings.HasPrefix(cfg.MemoryRegions[i].Name, "rx") && !strings.HasPrefix(cfg.MemoryRegions[i].Name, "rxh") {
			cfg.MemoryRegions[i].Kind = kind
		}
	}
	return cfg
}

// deviceRoundTrip sends frames from model:0 to model:1, whose RX payload regions come from
// alloc, and checks every packet byte for byte with read; it returns the engine.
func deviceRoundTrip(t *testing.T, cfg *config.Config, opts options, alloc func(rc *config.MemoryRegion) engine.Memory, read func(b *engine.Burst, s, i int) []byte, n int) *Engine {
	t.Helper()
	ports := enginetest.PortsMem(t, cfg, alloc)
	e, err := open(context.Background(), &engine.Env{Config: cfg, Ports: ports, Log: discard()}, withModel(opts))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("engine Close: %v", err)
		}
	})
	r := rand.New(rand.NewPCG(27, uint64(n)))
	frames := make([][]byte, n)
	for i := range frames {
		frames[i] = udpFrame(r, i, 60+r.IntN(1400))
	}
	var count atomic.Int64
	done := make(chan int)
	go func() {
		got, _ := receiveWith(t, ports[1].Rx, frames, len(frames), 30*time.Second, &count, read)
		done <- got
	}()
	sendFrames(t, e, ports[0].Tx[0], frames, 256, &count)
	if got := <-done; got != len(frames) {
		t.Fatalf("received %d of %d frames", got, len(frames))
	}
	return e
}

// TestDeviceRegionThroughWindow: a striding RQ into a device region, and header-data split
// with the payload in a device region, on model ports with a fake GPU: the engine exports
// each device region as a DMA-BUF, the model resolves it and writes through the window;
// every packet read back (by copy) equals what was sent.
func TestDeviceRegionThroughWindow(t *testing.T) {
	for _, hds := range []bool{false, true} {
		t.Run(fmt.Sprintf("hds=%v", hds), func(t *testing.T) {
			g := &fakeGPU{}
			cfg := devConfig(1, 1024, 2048, hds, config.KindDevice)
			var dev *fakeDev
			alloc := func(rc *config.MemoryRegion) engine.Memory {
				if rc.Kind != config.KindDevice {
					return nil
				}
				dev = g.alloc(rc.NumBufs * rc.BufSize)
				return dev
			}
			read := func(b *engine.Burst, s, i int) []byte {
				if b.SegmentRegion(s).Kind == config.KindDevice {
					return dev.read(b.SegmentAddr(s, i), b.SegmentLen(s, i))
				}
				return b.Segment(s, i)
			}
			e := deviceRoundTrip(t, cfg, options{striding: -1, compression: true, fabric: &modelch.Fabric{DMABuf: g}}, alloc, read, 3000)
			if got := e.ports[1].rxqs[0].striding; got == hds {
				t.Fatalf("striding RQ %v with hds=%v", got, hds)
			}
			if g.imp != 1 {
				t.Fatalf("%d DMA-BUF imports, want 1 (the RX device region)", g.imp)
			}
		})
	}
}

// TestDeviceRegionRefused: a device region whose DMA-BUF the model cannot resolve fails
// Open with the region's name, the PRM status and the importer's reason.
func TestDeviceRegionRefused(t *testing.T) {
	g := &fakeGPU{}
	cfg := devConfig(1, 1024, 2048, false, config.KindDevice)
	other := &fakeGPU{}
	ports := enginetest.PortsMem(t, cfg, func(rc *config.MemoryRegion) engine.Memory {
		if rc.Kind == config.KindDevice {
			return other.alloc(rc.NumBufs * rc.BufSize) // exported where g does not know it
		}
		return nil
	})
	_, err := open(context.Background(), &engine.Env{Config: cfg, Ports: ports, Log: discard()}, withModel(options{striding: -1, fabric: &modelch.Fabric{DMABuf: g}}))
	var ce *channel.CommandError
	if !errors.As(err, &ce) || ce.Status != 0x3 || !strings.Contains(err.Error(), "rx0") || !strings.Contains(err.Error(), "CREATE_UMEM") || !strings.Contains(err.Error(), "no buffer of the fake GPU") {
		t.Fatalf("Open with an unresolvable DMA-BUF: %v", err)
	}
	t.Logf("refused: %v", err)
}

// TestDMABufNotOne: the real importer refuses an fd that is not a DMA-BUF (a memfd) before
// it needs a GPU, as CREATE_UMEM with BAD_PARAM naming the fd; nothing stays registered.
func TestDMABufNotOne(t *testing.T) {
	cfg := devConfig(1, 1024, 2048, false, config.KindDevice)
	g := &fakeGPU{}
	ports := enginetest.PortsMem(t, cfg, func(rc *config.MemoryRegion) engine.Memory {
		if rc.Kind == config.KindDevice {
			return g.alloc(rc.NumBufs * rc.BufSize)
		}
		return nil
	})
	_, err := open(context.Background(), &engine.Env{Config: cfg, Ports: ports, Log: discard()}, withModel(options{striding: -1}))
	var ce *channel.CommandError
	if !errors.As(err, &ce) || ce.Status != 0x3 || !strings.Contains(err.Error(), "is not a DMA-BUF") || !strings.Contains(err.Error(), "memory region rx0") {
		t.Fatalf("Open with a memfd as DMA-BUF: %v", err)
	}
	t.Logf("refused: %v", err)
}
