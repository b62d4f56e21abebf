package engine

import (
	"errors"
	"fmt"
	"math/bits"
	"sync/atomic"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/internal/ring"
)

// Memory is the backing store of a region: host memory the CPU can address (Bytes non-nil) or
// device memory known only by its address.
type Memory interface {
	Bytes() []byte // the CPU view; nil for device memory
	Addr() uintptr // address of the first byte (virtual address, or GPU address for device)
	Close() error
}

// Region is a configured memory region: NumBufs buffers of BufSize bytes, handed out through a
// lock-free pool. Buffer i occupies bytes [i*BufSize, (i+1)*BufSize).
type Region struct {
	Name    string
	Kind    config.MemoryKind
	BufSize int
	NumBufs int

	mem  Memory
	buf  []byte
	pool *ring.Pool
	// front caches free buffers in front of pool for the bulk gets and puts of whichever
	// thread builds a TX burst or frees a burst (see ring.Front): a bulk get from the pool
	// walks a dependent load per buffer, from the cache it is a copy. Close seals it.
	front *ring.Front
	// shift is log2(BufSize) when BufSize is a power of two, else -1: the offset → buffer
	// index division runs several times per packet, and a 64-bit divide costs tens of cycles.
	shift int8
	// refs counts owners of a buffer when one receive buffer holds several packets (UDP GRO);
	// nil until EnableSharing.
	refs []atomic.Int32
	// groups, when one queue owns the region in groups (TakeGroups), takes every returned
	// buffer instead of the pool.
	groups *Groups
	// closing: Close was called with buffers outstanding; the buffer that brings the pool
	// back to full unmaps the memory (once, guarded by unmapped).
	closing  atomic.Bool
	unmapped atomic.Bool
}

// NewRegion carves mem into the region's buffers. mem must hold NumBufs*BufSize bytes.
func NewRegion(rc *config.MemoryRegion, mem Memory) (*Region, error) {
	r := &Region{Name: rc.Name, Kind: rc.Kind, BufSize: rc.BufSize, NumBufs: rc.NumBufs, mem: mem, shift: -1}
	if rc.BufSize > 0 && rc.BufSize&(rc.BufSize-1) == 0 {
		r.shift = int8(bits.TrailingZeros(uint(rc.BufSize)))
	}
	// config.CheckMemoryRegion bounds both; a caller that skipped it must not get a product
	// that wrapped around (a short region whose Packet slices past its end).
	if hi, lo := bits.Mul64(uint64(rc.NumBufs), uint64(rc.BufSize)); rc.NumBufs <= 0 || rc.BufSize <= 0 || hi != 0 || lo > config.MaxRegionBytes {
		return nil, fmt.Errorf("memory region %s: num_bufs × buf_size = %d × %d: both must be > 0 and the product ≤ %d", rc.Name, rc.NumBufs, rc.BufSize, int64(config.MaxRegionBytes))
	}
	if b := mem.Bytes(); b != nil {
		if len(b) < rc.NumBufs*rc.BufSize {
			return nil, fmt.Errorf("memory region %s: %d bytes mapped, %d needed", rc.Name, len(b), rc.NumBufs*rc.BufSize)
		}
		r.buf = b[:rc.NumBufs*rc.BufSize]
	}
	p, err := ring.NewPool(rc.NumBufs)
	if err != nil {
		return nil, fmt.Errorf("memory region %s: %w", rc.Name, err)
	}
	r.pool = p
	// Half the buffers at most, 512 at most: room for several bursts of a large batch. A
	// region of fewer than 4 buffers gets a front without a cache (every call to the pool),
	// so that every region has one and the calls through it stay small enough to inline.
	size := min(rc.NumBufs/2, 512)
	if size < 2 {
		size = 0
	}
	if r.front, err = p.NewFront(size); err != nil {
		return nil, fmt.Errorf("memory region %s: %w", rc.Name, err)
	}
	return r, nil
}

// bufIndex is the index of the buffer that holds byte off of the region.
func (r *Region) bufIndex(off uint64) uint64 {
	if r.shift >= 0 {
		return off >> uint(r.shift)
	}
	return off / uint64(r.BufSize)
}

// bufStart is the offset of the start of the buffer that holds byte off.
func (r *Region) bufStart(off uint64) uint64 {
	if r.shift >= 0 {
		return off &^ (1<<uint(r.shift) - 1)
	}
	return off - off%uint64(r.BufSize)
}

// room is how many bytes the buffer that holds byte off has from off to its end.
func (r *Region) room(off uint64) int {
	if r.shift >= 0 {
		return r.BufSize - int(off&uint64(r.BufSize-1))
	}
	return r.BufSize - int(off%uint64(r.BufSize))
}

// Memory is the region's backing store.
func (r *Region) Memory() Memory { return r.mem }

// CPU reports whether the CPU can address the region's bytes.
func (r *Region) CPU() bool { return r.buf != nil }

// Bytes is the whole region (nil for device memory).
func (r *Region) Bytes() []byte { return r.buf }

// Buf is buffer idx (nil for device memory).
func (r *Region) Buf(idx uint32) []byte {
	if r.buf == nil {
		return nil
	}
	o := int(idx) * r.BufSize
	return r.buf[o : o+r.BufSize : o+r.BufSize]
}

// Addr is the address of byte off of the region.
func (r *Region) Addr(off uint64) uintptr { return r.mem.Addr() + uintptr(off) }

// Available is the number of free buffers (a snapshot; exact while no other thread takes or
// returns buffers).
func (r *Region) Available() int { return r.front.Available() }

// Get takes a free buffer.
func (r *Region) Get() (uint32, bool) { return r.front.Get() }

// GetBulk takes len(dst) buffers or none.
func (r *Region) GetBulk(dst []uint32) bool { return r.front.GetBulk(dst) }

// GetBurst takes up to len(dst) buffers and returns how many.
func (r *Region) GetBurst(dst []uint32) int { return r.front.GetBurst(dst) }

// Put returns a buffer that has a single owner.
func (r *Region) Put(idx uint32) {
	if r.refs != nil {
		r.refs[idx].Store(0)
	}
	if r.groups != nil {
		r.groups.put1(idx)
		return
	}
	r.pool.Put(idx)
	r.returned()
}

// EnableSharing lets one buffer hold several packets (see Share). Call before traffic starts.
func (r *Region) EnableSharing() {
	if r.refs == nil {
		r.refs = make([]atomic.Int32, r.NumBufs)
	}
}

// Share records that buffer idx now has n owners (packets); each release drops one and the
// last returns the buffer to the pool.
func (r *Region) Share(idx uint32, n int32) { r.refs[idx].Store(n) }

// Release drops one owner of the buffer containing byte off; the last owner returns it.
func (r *Region) Release(off uint64) { r.release(off) }

// ReleaseBulk is Release for every offset in offs, returning the buffers whose last owner
// that was to the pool in one operation (a consumer freeing a whole batch then costs the
// pool's head one compare-and-swap instead of one per packet, which matters when an engine
// thread takes buffers from the same pool at the same time). scratch holds the buffer indices
// on the way; with capacity len(offs) it needs no allocation. It returns scratch.
func (r *Region) ReleaseBulk(offs []uint64, scratch []uint32) []uint32 {
	scratch = scratch[:0]
	for _, off := range offs {
		if idx, last := r.dropOwner(off); last {
			scratch = append(scratch, idx)
		}
	}
	r.putBulk(scratch)
	return scratch
}

// release drops one owner of the buffer containing byte off.
func (r *Region) release(off uint64) {
	if idx, last := r.dropOwner(off); last {
		if r.groups != nil {
			r.groups.put1(idx)
			return
		}
		r.pool.Put(idx)
		r.returned()
	}
}

// putBulk returns buffers with a single owner each.
func (r *Region) putBulk(idx []uint32) {
	if r.groups != nil {
		r.groups.putIndexes(idx)
		return
	}
	r.front.PutBulk(idx)
	r.returned()
}

// returned runs after buffers went back to the pool: once a closed region has every buffer
// back, its memory is released. Buffers in the front cache do not count as back; Close seals
// the cache (into the pool) before it counts, and after that every buffer returns to the
// pool itself.
func (r *Region) returned() {
	if r.closing.Load() && r.pool.Available() == r.NumBufs {
		r.unmap()
	}
}

// unmap releases the backing memory once.
func (r *Region) unmap() error {
	if r.unmapped.Swap(true) {
		return nil
	}
	return r.mem.Close()
}

// Unmapped reports whether the region's memory has been released (Close, or the last
// outstanding buffer coming back after Close).
func (r *Region) Unmapped() bool { return r.unmapped.Load() }

// dropOwner drops one owner of the buffer containing byte off and reports the buffer and
// whether that was its last owner (always, for a region without sharing).
func (r *Region) dropOwner(off uint64) (idx uint32, last bool) {
	idx = uint32(r.bufIndex(off))
	if r.refs != nil {
		if n := r.refs[idx].Add(-1); n > 0 {
			return idx, false
		}
		r.refs[idx].Store(0)
	}
	return idx, true
}

// Close releases the backing memory. While buffers are outstanding it cannot, because
// unmapping memory that an application still reads would crash it: the memory then stays
// mapped until the last of them is returned, which releases it, and the error says how many
// buffers were not returned.
func (r *Region) Close() error {
	r.closing.Store(true) // before counting: a buffer returned meanwhile sees it
	r.front.Seal()        // the cached buffers into the pool, and every later return too
	if err := r.Outstanding(); err != nil {
		return err
	}
	return r.unmap()
}

// ErrBuffersOutstanding is matched (errors.Is) by the error Close and Outstanding return
// while buffers of a closed region are still held.
var ErrBuffersOutstanding = errors.New("buffers not returned")

// outstandingError says how many buffers of a region are still held.
type outstandingError struct {
	region     string
	out, total int
}

func (e *outstandingError) Error() string {
	return fmt.Sprintf("memory region %s: %d of %d buffers not returned; the memory is released when the last of them is freed", e.region, e.out, e.total)
}

func (e *outstandingError) Is(target error) bool { return target == ErrBuffersOutstanding }

// Outstanding is, for a region Close was called on, the error naming the buffers still
// held as of now; nil once the last of them came back (the memory is then released). A
// second Session.Close asks it again instead of repeating the first Close's count.
func (r *Region) Outstanding() error {
	if !r.closing.Load() || r.unmapped.Load() {
		return nil
	}
	out := r.NumBufs - r.pool.Available()
	if r.groups != nil {
		// A group goes to the pool whole once its last buffer is back: count what the
		// application holds, not the groups' other buffers.
		if n, ok := r.groups.outstanding(); ok {
			out = n
		}
	}
	if out != 0 {
		return &outstandingError{region: r.Name, out: out, total: r.NumBufs}
	}
	return nil
}
