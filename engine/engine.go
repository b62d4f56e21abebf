package engine

import (
	"context"
	"log/slog"
	"sync"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/internal/osthread"
)

// Engine moves packets for a set of ports. Receive paths deliver bursts into the ports'
// RxQueues from the engine's own workers (or through RxQueue.Poll for direct queues).
type Engine interface {
	// Send transmits a TX burst. On success the engine owns the burst and frees it when the
	// packets are gone. Errors wrapping ErrNotReady or ErrInvalidParameter mean nothing was
	// sent and the caller still owns the burst; after any other error the engine has freed it
	// and counted what it could not send as dropped.
	Send(b *Burst) error
	// Close stops every worker, frees every burst the engine holds and releases its
	// resources. It is called once.
	Close() error
}

// TxChecker is implemented by engines whose TX capacity is more than free buffers.
type TxChecker interface {
	TxAvailable(q *TxQueue, n int) bool
}

// Env is what an engine is opened with.
type Env struct {
	Config *config.Config
	Ports  []*Port // the ports this engine serves
	Log    *slog.Logger
	// HWReorders are the reorder plans of these ports with reorder_engine: hw, for the
	// engine to run on its NIC; an engine without hardware reorder is never given any (the
	// session refuses the key first).
	HWReorders []*HWReorder
}

// Opener opens an engine for the ports in env.
type Opener func(ctx context.Context, env *Env) (Engine, error)

// Workers runs engine worker goroutines, each locked to an OS thread and pinned to its
// configured core when the machine has that core.
type Workers struct {
	wg   sync.WaitGroup
	stop chan struct{}
	once sync.Once
	Log  *slog.Logger
}

// NewWorkers returns an empty worker group.
func NewWorkers(log *slog.Logger) *Workers {
	if log == nil {
		log = slog.Default()
	}
	return &Workers{stop: make(chan struct{}), Log: log}
}

// Stopping is closed when Stop is called; workers return when they see it.
func (w *Workers) Stopping() <-chan struct{} { return w.stop }

// Stopped reports whether Stop was called (cheap enough for a poll loop).
func (w *Workers) Stopped() bool {
	select {
	case <-w.stop:
		return true
	default:
		return false
	}
}

// Go starts fn on a locked OS thread pinned to core (a config cpu_core string; "" = unpinned).
func (w *Workers) Go(name, core string, fn func()) {
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		q := config.Queue{CPUCore: core}
		c, ok := q.Core()
		if !ok {
			c = -1
		}
		pinned, err := osthread.LockAndPin(c)
		defer osthread.Unlock()
		switch {
		case err != nil:
			w.Log.Warn("worker not pinned", "worker", name, "core", core, "err", err)
		case ok && !pinned:
			w.Log.Warn("worker not pinned: cpu_core is not a core this process may run on; the worker runs on any core", "worker", name, "core", c, "allowed_cores", osthread.NumAllowed())
		}
		fn()
	}()
}

// Stop signals every worker and waits for them to return.
func (w *Workers) Stop() {
	w.once.Do(func() { close(w.stop) })
	w.wg.Wait()
}
