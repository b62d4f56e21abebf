package vfiouser

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

func newFile(fd int, name string) *os.File { return os.NewFile(uintptr(fd), name) }

// dmaMap is one DMA_MAP window the client gave.
type dmaMap struct {
	iova, size uint64
	perm       Perm
	mem        []byte // the window in client memory; nil when it came without a descriptor
}

// dmaTable is the session's DMA windows and the client memory mapped for them.
//
// Client memory is mapped once per backing file, whole, and each window is a slice of that
// mapping: QEMU sends a new descriptor of the same RAM file (a memfd) with every DMA_MAP,
// and behind a virtual IOMMU it maps and unmaps small windows all the time, so a mapping
// per window would pile up. The file mappings are unmapped only when the session ends,
// after the device has been detached: a window the client unmaps leaves the device at
// once, but a device goroutine still holding a slice of it touches valid memory (guest
// RAM) instead of faulting the whole server.
type dmaTable struct {
	maps  []dmaMap // sorted by iova, not overlapping
	files []*fileMap
}

// fileMap is one client file mapped whole.
type fileMap struct {
	dev, ino uint64
	mem      []byte
	writable bool
}

// mapFD returns the window of size bytes at offset of the client's descriptor fd (a memfd
// or a file of guest RAM: QEMU sends the RAM block's descriptor and the window's offset in
// it), mapping the file if this session has not yet. The descriptor is closed: the mapping
// keeps the memory.
func (t *dmaTable) mapFD(fd int, offset, size uint64, perm Perm) ([]byte, error) {
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, errf(syscall.EBADF, "DMA_MAP: fstat of the descriptor: %v", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		// A memfd, a tmpfs or hugetlbfs file are regular files; other descriptors cannot
		// be checked against their size, and touching a shared mapping past a file's end
		// is SIGBUS for the whole server.
		return nil, errf(syscall.EINVAL, "DMA_MAP: the descriptor is not a regular file (mode %#o)", st.Mode&unix.S_IFMT)
	}
	fsize := uint64(st.Size)
	if offset > fsize || size > fsize-offset {
		return nil, errf(syscall.EINVAL, "DMA_MAP: window %#x+%#x is past the end of the %#x-byte file", offset, size, fsize)
	}
	write := perm&PermWrite != 0
	for _, f := range t.files {
		if f.dev == uint64(st.Dev) && f.ino == st.Ino && offset+size <= uint64(len(f.mem)) && (f.writable || !write) {
			return f.mem[offset : offset+size : offset+size], nil
		}
	}
	if fsize > uint64(int(^uint(0)>>1)) {
		return nil, errf(syscall.EINVAL, "DMA_MAP: file of %#x bytes too large to map", fsize)
	}
	// Read/write when the descriptor allows it, so that later writable windows of the same
	// file share the mapping; the device's permissions are the window's, checked by the
	// device.
	m, err := unix.Mmap(fd, 0, int(fsize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	writable := err == nil
	if err != nil && !write {
		m, err = unix.Mmap(fd, 0, int(fsize), unix.PROT_READ, unix.MAP_SHARED)
	}
	if err != nil {
		return nil, errf(errnoOf(err), "DMA_MAP: mmap of the %#x-byte file: %v", fsize, err)
	}
	t.files = append(t.files, &fileMap{dev: uint64(st.Dev), ino: st.Ino, mem: m, writable: writable})
	return m[offset : offset+size : offset+size], nil
}

// find returns the index of the first window that ends after iova.
func (t *dmaTable) find(iova uint64) int {
	lo, hi := 0, len(t.maps)
	for lo < hi {
		m := (lo + hi) / 2
		if t.maps[m].iova+t.maps[m].size <= iova {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// overlaps reports the window that overlaps [iova, iova+size), if any.
func (t *dmaTable) overlaps(iova, size uint64) (dmaMap, bool) {
	i := t.find(iova)
	if i < len(t.maps) && t.maps[i].iova < iova+size {
		return t.maps[i], true
	}
	return dmaMap{}, false
}

func (t *dmaTable) insert(m dmaMap) {
	i := t.find(m.iova)
	t.maps = append(t.maps, dmaMap{})
	copy(t.maps[i+1:], t.maps[i:])
	t.maps[i] = m
}

// removeRange takes out the windows wholly inside [iova, iova+size) and returns them; a
// window that overlaps the range only in part is an error. Both follow linux
// vfio_dma_do_unmap (type1 v2): it refuses to split a mapping, and a range without any is
// no error. The spec asks for exact windows, but QEMU's virtual IOMMU unmaps its whole
// address space in power-of-two ranges when the guest switches it, empty or not.
func (t *dmaTable) removeRange(iova, size uint64) ([]dmaMap, error) {
	last := iova + size - 1 // the range may end at the top of the 64-bit space
	i := t.find(iova)
	j := i
	for j < len(t.maps) && t.maps[j].iova <= last {
		m := t.maps[j]
		if m.iova < iova || m.iova+m.size-1 > last {
			return nil, errf(syscall.EINVAL, "DMA_UNMAP of %#x+%#x would split the window %#x+%#x", iova, size, m.iova, m.size)
		}
		j++
	}
	out := append([]dmaMap(nil), t.maps[i:j]...)
	t.maps = append(t.maps[:i], t.maps[j:]...)
	return out, nil
}

// removeAll takes out every window.
func (t *dmaTable) removeAll() []dmaMap {
	out := t.maps
	t.maps = nil
	return out
}

// release unmaps all client memory; the table must be empty of live windows (removeAll).
func (t *dmaTable) release() {
	for _, f := range t.files {
		unix.Munmap(f.mem)
	}
	t.files = nil
}
