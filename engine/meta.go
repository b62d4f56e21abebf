package engine

import (
	"fmt"

	"github.com/daqiri-go/daqiri/ring"
)

// MetaPool is a fixed set of burst metadata blocks (upstream rx_meta_buffers /
// tx_meta_buffers). Bursts grow their packet arrays to the largest batch they carry once and
// keep them, so a warmed-up pool never allocates.
type MetaPool struct {
	r     *ring.Ring[*Burst]
	n     int
	tx    bool
	name  string
	empty uint64
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
func (m *MetaPool) Available() int { return m.r.Len() }

// Get takes a burst, reset for the given port, queue and segment regions; ErrNoFreeBurstBuffers
// when none is left.
func (m *MetaPool) Get(port, queue int, regions []*Region, raw bool, capacity int) (*Burst, error) {
	b, ok := m.r.Dequeue()
	if !ok {
		return nil, ErrNoFreeBurstBuffers
	}
	b.Reset(port, queue, regions, raw, capacity)
	b.meta = m
	return b, nil
}

func (m *MetaPool) put(b *Burst) {
	if !m.r.Enqueue(b) {
		panic("engine: metadata pool overflow: a burst was freed twice")
	}
}
