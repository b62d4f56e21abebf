package ring

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"

	"github.com/daqiri-go/daqiri/internal/osthread"
)

// Pool hands out indices 0..n-1 of equally sized buffers. It is a lock-free LIFO stack
// (Treiber) over an index-linked list: the head word packs a 32-bit modification tag with
// index+1, so one compare-and-swap pops or pushes, and a thread preempted mid-operation never
// blocks the others (unlike a ring, whose producers publish in order). LIFO also hands out
// the most recently used, cache-warm buffers first. Get and Put never block or allocate.
//
// The count of free indices lives in the list itself: every free index's link word holds,
// beside the next index, its depth (how many free indices it and those below it are), so the
// top's depth is the count. A separate counter would add a second atomic read-modify-write on
// the contended head line to every operation (with eight threads on distinct cores that
// halved the rate); the depth is written with the link, before the compare-and-swap that
// publishes it.
type Pool struct {
	head atomic.Uint64 // tag<<32 | (index+1); index+1 == 0 means empty
	// hintHead is the head value the last compare-and-swap installed, and hintNext and
	// hintDepth are tag<<32 | (the top's next index+1) and tag<<32 | (the top's depth): the
	// top's link word. All three are written after each compare-and-swap by the thread whose
	// CAS installed that tag. Get and Put take the head they expect from hintHead, not from
	// the head itself (hints.go says why that is faster, and why it is safe).
	hintHead  uint64
	hintNext  uint64
	hintDepth uint64
	// link is depth<<32 | (next index+1) for each free index. It is loaded with sync/atomic
	// and stored with StoreRelease64: the head's compare-and-swap that follows every
	// store is a full barrier already, so an exchange per link would only add its cost.
	link []uint64
	n    int
}

const none = 0

// NewPool returns a pool holding every index in [0, n).
func NewPool(n int) (*Pool, error) {
	if n <= 0 || n >= 1<<32-1 {
		return nil, fmt.Errorf("ring: pool size %d out of range 1..%d", n, uint32(1<<32-2))
	}
	p := &Pool{link: make([]uint64, n), n: n}
	for i := 0; i < n; i++ {
		// link i → i+1 (stored as index+1); index i has n-i free indices from it down.
		p.link[i] = uint64(n-i)<<32 | uint64(i+2)
	}
	p.link[n-1] = 1<<32 | none
	p.head.Store(1) // tag 0, index 0
	p.setHints(0, 1, p.link[0])
	return p, nil
}

// Size is the number of indices the pool owns.
func (p *Pool) Size() int { return p.n }

// Available is the number of indices currently in the pool: the top's depth, read between
// two loads of the head that agree (the snapshot of one moment).
func (p *Pool) Available() int {
	for {
		h := p.head.Load()
		d := p.depth(h)
		if p.head.Load() == h {
			return int(d)
		}
	}
}

// depth is the depth of head h's top index (0 when empty). Read without holding the head it
// may be stale; callers validate it with the head's compare-and-swap or a second load.
func (p *Pool) depth(h uint64) uint32 {
	if d := atomic.LoadUint64(&p.hintDepth); d>>32 == h>>32 {
		return uint32(d)
	}
	top := uint32(h)
	if top == none || int(top) > p.n {
		return 0
	}
	return uint32(atomic.LoadUint64(&p.link[top-1]) >> 32)
}

// Get takes one index; ok is false when the pool is empty.
func (p *Pool) Get() (idx uint32, ok bool) {
	// First try: the head the last operation installed, from its hints (hints.go). If the
	// head has moved since, the compare-and-swap fails and the loop below starts from the
	// head itself.
	h := atomic.LoadUint64(&p.hintHead)
	if x := atomic.LoadUint64(&p.hintNext); x>>32 == h>>32 && uint32(h) != none {
		tag := (h>>32 + 1) << 32
		if p.head.CompareAndSwap(h, tag|x&0xffffffff) {
			p.hintAfterPop(tag, uint32(x))
			return uint32(h) - 1, true
		}
	}
	for spins := 0; ; spins = backoff(spins) {
		h := p.head.Load()
		top := uint32(h)
		if top == none {
			return 0, false
		}
		nxt := p.next(h)
		tag := (h>>32 + 1) << 32
		if p.head.CompareAndSwap(h, tag|uint64(nxt)) {
			p.hintAfterPop(tag, nxt)
			return top - 1, true
		}
	}
}

// GetBulk fills all of dst or takes nothing.
func (p *Pool) GetBulk(dst []uint32) bool {
	if len(dst) == 0 {
		return true
	}
	for spins := 0; ; spins = backoff(spins) {
		h := p.head.Load()
		cur := uint32(h)
		// Walk len(dst) nodes. A concurrent change can make this walk read a stale chain,
		// but then the head's tag has moved and the CAS below fails: nothing is taken.
		k := 0
		for ; k < len(dst) && cur != none && int(cur) <= p.n; k++ {
			dst[k] = cur - 1
			cur = uint32(atomic.LoadUint64(&p.link[cur-1]))
		}
		if k < len(dst) {
			if p.head.Load() == h {
				return false // genuinely too few
			}
			continue
		}
		if int(cur) > p.n {
			continue
		}
		if tag := (h>>32 + 1) << 32; p.head.CompareAndSwap(h, tag|uint64(cur)) {
			p.hintAfterPop(tag, cur)
			return true
		}
	}
}

// GetBurst takes up to len(dst) indices and returns how many.
func (p *Pool) GetBurst(dst []uint32) int {
	for spins := 0; ; spins = backoff(spins) {
		if len(dst) == 0 {
			return 0
		}
		h := p.head.Load()
		cur := uint32(h)
		k := 0
		for ; k < len(dst) && cur != none && int(cur) <= p.n; k++ {
			dst[k] = cur - 1
			cur = uint32(atomic.LoadUint64(&p.link[cur-1]))
		}
		if int(cur) > p.n {
			continue
		}
		if k == 0 {
			return 0
		}
		if tag := (h>>32 + 1) << 32; p.head.CompareAndSwap(h, tag|uint64(cur)) {
			p.hintAfterPop(tag, cur)
			return k
		}
	}
}

// Put returns one index. Returning an index that is already in the pool corrupts it; callers
// track ownership (bursts do, per packet and segment).
func (p *Pool) Put(idx uint32) {
	// First try from the hints, as in Get.
	h := atomic.LoadUint64(&p.hintHead)
	if d := atomic.LoadUint64(&p.hintDepth); d>>32 == h>>32 {
		l := (d+1)<<32 | h&0xffffffff
		StoreRelease64(&p.link[idx], l)
		tag := (h>>32 + 1) << 32
		if p.head.CompareAndSwap(h, tag|uint64(idx+1)) {
			p.setHints(tag, idx+1, l)
			return
		}
	}
	for spins := 0; ; spins = backoff(spins) {
		h := p.head.Load()
		l := uint64(p.depth(h)+1)<<32 | uint64(uint32(h))
		StoreRelease64(&p.link[idx], l)
		tag := (h>>32 + 1) << 32
		if p.head.CompareAndSwap(h, tag|uint64(idx+1)) {
			p.setHints(tag, idx+1, l)
			return
		}
	}
}

// PutBulk returns several indices with one compare-and-swap.
func (p *Pool) PutBulk(idx []uint32) {
	if len(idx) == 0 {
		return
	}
	k := uint32(len(idx))
	for spins := 0; ; spins = backoff(spins) {
		// Link the batch privately (the depths depend on the head this attempt splices
		// onto), then splice it on top.
		//
		// The links are release stores (plain MOVs on amd64, inlined): these indices are
		// this thread's until the compare-and-swap publishes them, and that CAS is a full
		// barrier the compiler and the CPU keep every earlier store ahead of. The only thread
		// that can read them meanwhile is a GetBulk walking from a stale head, whose own CAS
		// then fails and discards what it read.
		h := p.head.Load()
		d := p.depth(h)
		for i := uint32(0); i+1 < k; i++ {
			StoreRelease64(&p.link[idx[i]], uint64(d+k-i)<<32|uint64(idx[i+1]+1))
		}
		StoreRelease64(&p.link[idx[k-1]], uint64(d+1)<<32|uint64(uint32(h)))
		if tag := (h>>32 + 1) << 32; p.head.CompareAndSwap(h, tag|uint64(idx[0]+1)) {
			if k == 1 {
				p.setHints(tag, idx[0]+1, uint64(d+1)<<32|uint64(uint32(h)))
			} else {
				p.setHints(tag, idx[0]+1, uint64(d+k)<<32|uint64(idx[1]+1))
			}
			return
		}
	}
}

// backoff waits after a lost compare-and-swap on the head and returns the next wait: a
// random number of spin-wait hints between half and all of spins, which grows 1, 3, 7 … 1023.
// Threads that retry at once keep taking the head's line from the one whose CAS would succeed,
// and threads that back off by the same amounts collide again in step. With threads on
// distinct cores taking and returning buffers (H200 host, `daqiri-ringbench -run 'pool get'`,
// one run): 4 threads 2.2 M operations a second retrying at once, 7.6 backing off up to 63
// hints without jitter, 22.1 with this; 8 threads 1.6, 2.1 and 15.9.
func backoff(spins int) int {
	for range spins/2 + int(rand.Uint32()%uint32(spins/2+1)) {
		osthread.Pause()
	}
	return min(2*spins+1, 1023)
}
