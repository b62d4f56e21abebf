package afxdp

import (
	"github.com/daqiri-go/daqiri/engine"
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
	last     xsk.Stats
}

// openSock binds a socket to NIC queue k with region r as UMEM; users is how many RX sockets
// share the region (they split half of it between their fill rings, leaving the rest for
// bursts the application holds).
func (pt *port) openSock(k int, r *engine.Region, rx, tx bool, users int) (*sock, error) {
	fill := min(maxRingSize, pow2Floor(max(r.NumBufs/(2*max(users, 1)), 8)))
	o := xsk.Options{
		Ifindex: pt.ifindex, Queue: k, Mem: r.Bytes(), ChunkSize: r.BufSize,
		Unaligned: r.BufSize&(r.BufSize-1) != 0,
		FillSize:  fill, CompSize: 64, NeedWakeup: true, TxBudget: 256,
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
	if err != nil {
		return nil, pt.e.env.Config.Errorf(pt.p.Path()+".address", "interface %s (%s) queue %d: %v", pt.p.Name, pt.p.Config.Address, k, err)
	}
	return newSock(pt, k, x, r, rx), nil
}

// newSock wraps a socket bound (or mocked) over region r.
func newSock(pt *port, k int, x *xsk.Socket, r *engine.Region, rx bool) *sock {
	s := &sock{pt: pt, nicq: k, x: x, region: r, given: make([]bool, r.NumBufs), descs: make([]xsk.Desc, rxBatch)}
	if rx {
		s.fillIdx = make([]uint32, rxBatch)
		s.fillAddr = make([]uint64, rxBatch)
	}
	return s
}

// refill tops the fill ring up from the region's free buffers.
func (s *sock) refill() {
	for rounds := 0; rounds < 16; rounds++ {
		free := s.x.FillFree()
		if free < 16 {
			return
		}
		n := s.region.GetBurst(s.fillIdx[:min(free, len(s.fillIdx))])
		if n == 0 {
			return
		}
		bs := uint64(s.region.BufSize)
		for i, idx := range s.fillIdx[:n] {
			s.given[idx] = true
			s.fillAddr[i] = uint64(idx) * bs
		}
		s.x.Fill(s.fillAddr[:n])
		if n < len(s.fillIdx) {
			return
		}
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
}
