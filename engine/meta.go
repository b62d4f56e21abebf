package engine

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/daqiri-go/daqiri/internal/ring"
)

// MetaPool is a fixed set of burst metadata blocks (upstream rx_meta_buffers /
// tx_meta_buffers). Bursts grow their packet arrays to the largest batch they carry once and
// keep them, so a warmed-up pool never allocates.
type MetaPool struct {
	// hot is the burst returned last, taken first: a queue whose application frees each
	// burst before the next is filled (a poll loop) reuses one burst, whose arrays are still
	// in the core's cache, instead of cycling through every burst of the FIFO ring (a
	// receive queue's 32 bursts of 1024 packets are ~800 KiB of arrays, more than a core's
	// L2). DPDK's mempool cache is LIFO for the same reason. A burst is in hot or in r,
	// never both.
	hot   atomic.Pointer[Burst]
	r     *ring.Ring[*Burst]
	n     int
	tx    bool
	name  string
	empty uint64
	// stalls counts puts that waited for a preempted taker (see put).
	stalls atomic.Uint64
}

// NewMetaPool makes n bursts, each ready for capacity packets.
func NewMetaPool(name string, n, capacity int, tx bool) (*MetaPool, error) {
	r, err := ring.New[*Burst](n, ring.MPMC)
	if err != nil {
		return nil, fmt.Errorf("%s metadata pool: %w", name, err)
	}
	m := &MetaPool{r: r, n: n, tx: tx, name: name}
	for i := 0; i < n; i++ {
		b := &Burst{tx: tx}
		b.ensure(capacity, 1)
		r.Enqueue(b)
	}
	return m, nil
}

// Size is the number of bursts the pool owns.
func (m *MetaPool) Size() int { return m.n }

// Available is the number of bursts in the pool (a snapshot).
func (m *MetaPool) Available() int {
	n := m.r.Len()
	if m.hot.Load() != nil {
		n++
	}
	return n
}

// Get takes a burst, reset for the given port, queue and segment regions; ErrNoFreeBurstBuffers
// when none is left.
func (m *MetaPool) Get(port, queue int, regions []*Region, raw bool, capacity int) (*Burst, error) {
	b := m.hot.Swap(nil)
	ok := b != nil
	if !ok {
		b, ok = m.r.Dequeue()
	}
	// Bursts counted in the ring but not handed out: the next one's returner was preempted
	// before marking its slot full (see package ring). It runs again soon; wait a little
	// rather than report an exhaustion that is not there (callers drop packets on it).
	for i := 0; !ok && i < 64 && m.r.Len() > 0; i++ {
		runtime.Gosched()
		b, ok = m.r.Dequeue()
	}
	if !ok {
		// A burst returned since the first look went to hot when hot was empty.
		if b = m.hot.Swap(nil); b == nil {
			return nil, ErrNoFreeBurstBuffers
		}
	}
	b.Reset(port, queue, regions, raw, capacity)
	b.meta = m
	return b, nil
}

// put returns a burst. The pool never holds more than its own bursts, so a full ring here
// is not an overflow: it is a goroutine that was preempted while taking a burst from the
// slot this one goes to, a lap of the ring ago, and has not marked the slot free yet (see
// package ring). The slot frees as soon as that goroutine runs again, so put waits for it;
// only a slot still taken after a second means something else (a burst freed twice, whose
// extra copy fills the ring), and that panics rather than losing a burst.
func (m *MetaPool) put(b *Burst) {
	if m.hot.Load() == nil && m.hot.CompareAndSwap(nil, b) {
		return
	}
	if m.r.Enqueue(b) {
		return
	}
	m.stalls.Add(1)
	deadline := time.Now().Add(time.Second)
	for i := 0; !m.r.Enqueue(b); i++ {
		if i < 64 {
			runtime.Gosched()
			continue
		}
		if time.Now().After(deadline) {
			panic(fmt.Sprintf("engine: %s metadata pool: no free slot for a returned burst after 1 s (a burst freed twice?)", m.name))
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// Stalls counts returns that found their slot still being emptied by a preempted goroutine
// and had to wait (diagnostics; see put).
func (m *MetaPool) Stalls() uint64 { return m.stalls.Load() }
