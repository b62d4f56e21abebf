package vfioch

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/daqiri-go/daqiri/hugepage"
	"github.com/daqiri-go/daqiri/vfio"
)

// chunkSize is the unit of the channel's own DMA memory: one 2 MiB hugepage (the default
// x86 hugepage size; the IOMMU can map it as one large page).
const chunkSize = 2 << 20

// errHugeTooLarge: the default hugepage is larger than a chunk.
var errHugeTooLarge = errors.New("the default hugepage size is larger than a 2 MiB chunk")

// minIOVA keeps the channel's IOVAs off the bottom of the space: 0 is the "no queue" value of
// the init segment's command-queue address, and rdma-core's mlx5_vfio.c starts its
// allocations above the first megabyte too.
const minIOVA = 1 << 20

// defaultRanges is used when the kernel reports no IOVA ranges (before Linux 5.4): the low
// 4 GiB minus the x86 MSI window (0xfee00000, which interrupt remapping reserves), as
// mlx5_vfio.c's fallback (MLX5_VFIO_IOVA_MIN1/MAX1) does.
func defaultRanges() []vfio.IOVARange { return []vfio.IOVARange{{Start: minIOVA, End: 0xfedfffff}} }

// dmaBuf is host memory mapped for the device at iova.
type dmaBuf struct {
	m    *hugepage.Mem
	iova uint64
	b    []byte
}

// dmaMem allocates the channel's DMA memory: host memory (hugepages first; 4 KiB pages
// when the hugepage pool has none left, logged once) mapped read/write at IOVAs taken in
// order from the container's usable ranges.
type dmaMem struct {
	dma DMA
	log *slog.Logger

	mu     sync.Mutex
	known  bool // the kernel reported the ranges
	ranges []vfio.IOVARange
	ri     int    // the range being used
	next   uint64 // the next free IOVA in it
	bufs   []*dmaBuf
	warned bool
}

func newDMAMem(d DMA, log *slog.Logger) (*dmaMem, error) {
	info, err := d.IOMMUInfo()
	if err != nil {
		return nil, err
	}
	m := &dmaMem{dma: d, log: log}
	for _, r := range info.IOVARanges {
		if r.End < minIOVA || r.End < r.Start {
			continue
		}
		m.ranges = append(m.ranges, vfio.IOVARange{Start: max(r.Start, minIOVA), End: r.End})
	}
	m.known = info.IOVARanges != nil
	if !m.known {
		m.ranges = defaultRanges()
	}
	if len(m.ranges) == 0 {
		return nil, fmt.Errorf("the IOMMU reports no usable IOVA range above %#x (ranges %v)", minIOVA, info.IOVARanges)
	}
	m.next = m.ranges[0].Start
	return m, nil
}

// inRanges reports whether [iova, iova+n) lies inside one usable range.
func (m *dmaMem) inRanges(iova, n uint64) bool {
	if !m.known {
		return true // nothing to check against
	}
	for _, r := range m.ranges {
		if iova >= r.Start && n > 0 && iova+n-1 <= r.End && iova+n-1 >= iova {
			return true
		}
	}
	return false
}

// takeIOVA reserves size bytes of IOVA space aligned to align.
func (m *dmaMem) takeIOVA(size, align uint64) (uint64, error) {
	for ; m.ri < len(m.ranges); m.ri++ {
		r := m.ranges[m.ri]
		a := (max(m.next, r.Start) + align - 1) &^ (align - 1)
		if a >= r.Start && a+size-1 <= r.End && a+size-1 >= a {
			m.next = a + size
			return a, nil
		}
		if m.ri+1 < len(m.ranges) {
			m.next = m.ranges[m.ri+1].Start
		}
	}
	return 0, fmt.Errorf("no IOVA space left for %d bytes in the usable ranges %v", size, m.ranges)
}

// alloc maps size bytes (rounded up to whole chunks) for the device.
func (m *dmaMem) alloc(size int, what string) (*dmaBuf, error) {
	size = (size + chunkSize - 1) &^ (chunkSize - 1)
	var mem *hugepage.Mem
	err := errHugeTooLarge
	if in, ierr := hugepage.ReadInfo(); ierr != nil || in.PageSize <= chunkSize {
		// Not with larger hugepages (512 MiB on 64 KiB-page arm64 kernels): each chunk would
		// take a whole one.
		mem, err = hugepage.Map(size, true)
	}
	if err != nil {
		m.mu.Lock()
		warn := !m.warned
		m.warned = true
		m.mu.Unlock()
		if warn {
			m.log.Warn("mlx5 vfio: no hugepages of 2 MiB or less for DMA memory; using base host pages (the IOMMU maps them one by one)", "what", what, "err", err)
		}
		if mem, err = hugepage.Map(size, false); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	size = len(mem.Bytes()) // whole pages: what MapDMA maps
	iova, err := m.takeIOVA(uint64(size), chunkSize)
	if err != nil {
		mem.Close()
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := m.dma.MapDMA(mem.Bytes(), iova, vfio.DeviceReadWrite); err != nil {
		mem.Close()
		return nil, fmt.Errorf("%s: map %d bytes at iova %#x: %w", what, size, iova, err)
	}
	b := &dmaBuf{m: mem, iova: iova, b: mem.Bytes()}
	m.bufs = append(m.bufs, b)
	return b, nil
}

// closeAll unmaps and frees every buffer.
func (m *dmaMem) closeAll() error {
	m.mu.Lock()
	bufs := m.bufs
	m.bufs = nil
	m.mu.Unlock()
	var errs []error
	for i := len(bufs) - 1; i >= 0; i-- {
		b := bufs[i]
		if err := m.dma.UnmapDMA(b.iova, uint64(len(b.b))); err != nil {
			errs = append(errs, err)
		}
		if err := b.m.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// blockPool hands out fixed-size, aligned blocks of one DMA buffer (command mailboxes).
type blockPool struct {
	mu   sync.Mutex
	buf  *dmaBuf
	off  int // where the pool starts in buf
	size int
	free []int // block offsets in buf
}

func newBlockPool(buf *dmaBuf, off, size int) *blockPool {
	p := &blockPool{buf: buf, off: off, size: size}
	for o := off; o+size <= len(buf.b); o += size {
		p.free = append(p.free, o)
	}
	return p
}

// get takes n blocks; nil when fewer are free.
func (p *blockPool) get(n int) []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n > len(p.free) {
		return nil
	}
	k := len(p.free) - n
	out := append([]int(nil), p.free[k:]...)
	p.free = p.free[:k]
	return out
}

func (p *blockPool) put(blocks []int) {
	p.mu.Lock()
	p.free = append(p.free, blocks...)
	p.mu.Unlock()
}

func (p *blockPool) bytes(off int) []byte { return p.buf.b[off : off+p.size : off+p.size] }

func (p *blockPool) iova(off int) uint64 { return p.buf.iova + uint64(off) }
