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
	mapping    []byte // what mmap returned (page-aligned; mem lies inside it)
}

// dmaTable is the session's DMA windows and the client memory mapped for them. Memory is
// unmapped from the process only when the session ends (release), after the device has
// been detached: a window the client unmaps is removed from the device at once, but a
// device goroutine still holding a slice of it must not fault the whole server.
type dmaTable struct {
	maps    []dmaMap // sorted by iova, not overlapping
	retired [][]byte // mappings of removed windows, unmapped at release
}

// mapFD maps size bytes at offset of the client's descriptor fd (a memfd or a file of guest
// RAM: QEMU sends the RAM block's descriptor and the window's offset in it). The descriptor
// is closed once mapped, as the mapping keeps the memory.
func mapFD(fd int, offset, size uint64, perm Perm) (mem, mapping []byte, err error) {
	defer unix.Close(fd)
	page := uint64(os.Getpagesize())
	if offset%page != 0 {
		return nil, nil, errf(syscall.EINVAL, "DMA_MAP: file offset %#x is not page-aligned", offset)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, nil, errf(syscall.EBADF, "DMA_MAP: fstat of the descriptor: %v", err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFREG && (offset > uint64(st.Size) || size > uint64(st.Size)-offset) {
		// Touching a shared mapping past the file's end is SIGBUS, so refuse it here.
		return nil, nil, errf(syscall.EINVAL, "DMA_MAP: window %#x+%#x is past the end of the %#x-byte file", offset, size, st.Size)
	}
	if size > uint64(int(^uint(0)>>1)) {
		return nil, nil, errf(syscall.EINVAL, "DMA_MAP: size %#x too large", size)
	}
	prot := 0
	if perm&PermRead != 0 {
		prot |= unix.PROT_READ
	}
	if perm&PermWrite != 0 {
		prot |= unix.PROT_WRITE | unix.PROT_READ
	}
	m, err := unix.Mmap(fd, int64(offset), int(size), prot, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, errf(errnoOf(err), "DMA_MAP: mmap of %#x bytes at offset %#x: %v", size, offset, err)
	}
	return m, m, nil
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
// window that overlaps the range only in part is an error (linux vfio_dma_do_unmap refuses
// to split a mapping too), as is a range with no window.
func (t *dmaTable) removeRange(iova, size uint64) ([]dmaMap, error) {
	end := iova + size
	i := t.find(iova)
	j := i
	for j < len(t.maps) && t.maps[j].iova < end {
		m := t.maps[j]
		if m.iova < iova || m.iova+m.size > end {
			return nil, errf(syscall.EINVAL, "DMA_UNMAP of %#x+%#x would split the window %#x+%#x", iova, size, m.iova, m.size)
		}
		j++
	}
	if i == j {
		return nil, errf(syscall.ENOENT, "DMA_UNMAP: no window in %#x+%#x", iova, size)
	}
	out := append([]dmaMap(nil), t.maps[i:j]...)
	t.maps = append(t.maps[:i], t.maps[j:]...)
	for _, m := range out {
		if m.mapping != nil {
			t.retired = append(t.retired, m.mapping)
		}
	}
	return out, nil
}

// removeAll takes out every window.
func (t *dmaTable) removeAll() []dmaMap {
	out := t.maps
	t.maps = nil
	for _, m := range out {
		if m.mapping != nil {
			t.retired = append(t.retired, m.mapping)
		}
	}
	return out
}

// release unmaps all client memory; the table must be empty of live windows (removeAll).
func (t *dmaTable) release() {
	for _, m := range t.retired {
		unix.Munmap(m)
	}
	t.retired = nil
}
