package afxdp

import (
	"errors"
	"fmt"
	"math/bits"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/hugepage"
	"github.com/daqiri-go/daqiri/xsk"
)

// sock is one AF_XDP socket, bound to one NIC queue, with its region as UMEM. Its fill and RX
// rings belong to the owning RX queue's worker, its TX and completion rings to the TX queue
// that sends through it.
type sock struct {
	pt     *port
	nicq   int
	x      *xsk.Socket
	region *engine.Region
	owner  *rxq
	// given[i] is set while buffer i of the region is the kernel's (fill ring, RX ring not
	// yet read, TX ring not yet completed), so Close can return them. Each index is written
	// only by the thread that currently owns that buffer.
	given    []bool
	fillIdx  []uint32
	fillAddr []uint64
	descs    []xsk.Desc
	short    bool // the last refill found fewer free buffers than fill-ring room
	shift    uint // log2 of the buffer size when it is a power of two, else 0
	touched  byte // sink of the metadata prefetch in receive
	last     xsk.Stats
	// Drops counted so far from the kernel's rx_dropped: for want of a buffer, and too large.
	nbDrops, truncDrops uint64
	// partial holds the first descriptors of a multi-buffer frame whose last one was not in
	// the batch read (it comes with the next).
	partial []xsk.Desc
	// umem is set when the socket's UMEM is the port's own staging memory (jumbo mode),
	// closed with the socket.
	umem bool
}

// index is the region buffer holding byte off (a shift, not a division, for power-of-two
// buffer sizes).
func (s *sock) index(off uint64) uint32 {
	if s.shift != 0 {
		return uint32(off >> s.shift)
	}
	return uint32(off / uint64(s.region.BufSize))
}

// refillMin is the fewest free fill-ring slots worth a refill.
const refillMin = 16

// openSock binds a socket to NIC queue k with region r as UMEM; users is how many RX sockets
// share the region (they split half of it between their fill rings, leaving the rest for
// bursts the application holds).
func (pt *port) openSock(k int, r *engine.Region, rx, tx bool, users int) (*sock, error) {
	fill := min(maxRingSize, pow2Floor(max(r.NumBufs/(2*max(users, 1)), 8)))
	o := xsk.Options{
		Ifindex: pt.ifindex, Queue: k, Mem: r.Bytes(), ChunkSize: r.BufSize,
		// Unaligned chunks for every buffer size: in aligned mode the kernel's copy-mode
		// allocator takes the buffer head indexed by the chunk (xp_aligned_extract_idx), a
		// cache miss per frame across the whole UMEM; in unaligned mode it reuses recently
		// freed heads from a stack. Measured on veth: xp_alloc from ~6 % to ~1 % of the
		// receiving softirq's core. The addresses are the same chunk offsets either way.
		Unaligned: true,
		FillSize:  fill, CompSize: 64, NeedWakeup: true, TxBudget: 256,
		MultiBuffer: pt.jumbo,
	}
	if rx {
		o.RxSize = fill
	} else {
		o.FillSize = 8 // unused, but the kernel binds no UMEM without one
	}
	if tx {
		o.TxSize, o.CompSize = txRingSize, txRingSize
	}
	x, err := xsk.Open(o)
	if errors.Is(err, xsk.ErrNoMultiBuffer) && xsk.PacketHeadroom+22+pt.mtu <= r.BufSize {
		// Before Linux 6.6 there is no XDP_USE_SG; frames at this MTU fit one chunk anyway,
		// so the socket works without it (the larger buffers are gathered into as before).
		pt.e.env.Log.Warn("xdp: the kernel has no multi-buffer AF_XDP (Linux 6.6+); frames at this MTU fit one chunk, binding without it",
			"interface", pt.p.Name, "queue", k, "mtu", pt.mtu, "err", err)
		o.MultiBuffer = false
		x, err = xsk.Open(o)
	}
	if err != nil {
		return nil, pt.e.env.Config.Errorf(pt.p.Path()+".address", "interface %s (%s) queue %d: %v", pt.p.Name, pt.p.Config.Address, k, err)
	}
	return newSock(pt, k, x, r, rx), nil
}

// newSock wraps a socket bound (or mocked) over region r.
func newSock(pt *port, k int, x *xsk.Socket, r *engine.Region, rx bool) *sock {
	s := &sock{pt: pt, nicq: k, x: x, region: r, given: make([]bool, r.NumBufs), descs: make([]xsk.Desc, rxBatch)}
	if r.BufSize&(r.BufSize-1) == 0 {
		s.shift = uint(bits.TrailingZeros(uint(r.BufSize)))
	}
	if rx {
		s.fillIdx = make([]uint32, rxBatch)
		s.fillAddr = make([]uint64, rxBatch)
	}
	return s
}

// refill tops the fill ring up from the region's free buffers. It reads the kernel's
// consumer index once, and puts buffers on the ring in runs of up to rxBatch; short records
// that the region had fewer free buffers than the ring had room for.
func (s *sock) refill() {
	free := s.x.FillFree()
	s.short = false
	bs := uint64(s.region.BufSize)
	for free >= refillMin {
		n := s.region.GetBurst(s.fillIdx[:min(free, len(s.fillIdx))])
		for i, idx := range s.fillIdx[:n] {
			s.given[idx] = true
			s.fillAddr[i] = uint64(idx) * bs
		}
		if n > 0 {
			s.x.Fill(s.fillAddr[:n])
		}
		if n < min(free, len(s.fillIdx)) {
			s.short = true
			return
		}
		free -= n
	}
}

// close closes the socket and returns every buffer the kernel held.
func (s *sock) close() {
	if s.x == nil {
		return
	}
	s.x.Close()
	s.x = nil
	for i, g := range s.given {
		if g {
			s.given[i] = false
			s.region.Put(uint32(i))
		}
	}
	if s.umem {
		if err := s.region.Close(); err != nil {
			s.pt.e.env.Log.Error("xdp: staging UMEM", "interface", s.pt.p.Name, "queue", s.nicq, "err", err)
		}
	}
}

// umemChunks is the size of a jumbo-mode staging UMEM in 4096-byte chunks (16 MiB).
const umemChunks = 4096

// openStagingSock binds a multi-buffer socket over a staging UMEM of its own (jumbo mode):
// frames arrive there in up to 4096-byte pieces and are gathered into the queue's buffers.
func (pt *port) openStagingSock(k int, rx, tx bool) (*sock, error) {
	mem, err := hugepage.Map(umemChunks*4096, false)
	if err != nil {
		return nil, pt.e.env.Config.Errorf(pt.p.Path(), "interface %s queue %d: staging UMEM: %v", pt.p.Name, k, err)
	}
	r, err := engine.NewRegion(&config.MemoryRegion{Name: fmt.Sprintf("%s/xdp-umem%d", pt.p.Name, k), Kind: config.KindHost, NumBufs: umemChunks, BufSize: 4096}, mem)
	if err != nil {
		mem.Close()
		return nil, err
	}
	s, err := pt.openSock(k, r, rx, tx, 1)
	if err != nil {
		r.Close()
		return nil, err
	}
	s.umem = true
	return s, nil
}
