// Package dma is the device model's view of host memory: an I/O virtual address space in which
// the driver maps buffers (as a VFIO container maps them for a real device, or as UMEM
// registration pins them for DevX) and through which the model reads and writes, the way a
// device's DMA engine reaches memory through the IOMMU. An access outside every mapping is an
// error the model turns into what hardware would do (a completion with error, an event), never
// a panic.
//
// Besides host memory, a mapping can be a window: memory the host cannot address (GPU memory),
// which the model reaches by copy (Window; mlx5/model/gpudma copies through the GPU's copy
// engine). Slice refuses a window's bytes (ErrWindow); Gather, Read and Write copy through it,
// so a device's reads (TX gathers) and writes (RX scatters) reach it, and queues, which the
// datapath addresses in place, cannot live in it.
package dma

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// ErrFault is returned for an access that is not wholly inside one mapping: the IOMMU fault a
// real device would take.
var ErrFault = errors.New("dma: access outside the mapped I/O address space")

// Perm says what the device may do with a mapping.
type Perm uint8

// Perm bits, as VFIO_DMA_MAP_FLAG_READ/WRITE give them (device reads, device writes).
const (
	Read Perm = 1 << iota
	Write
)

// Window is memory the device reaches that the host cannot address: GPU memory, which the
// model reads and writes through the GPU's copy engine (mlx5/model/gpudma). Offsets are from
// the start of the window; an access is wholly inside it (Space checks).
type Window interface {
	// ReadAt copies len(p) bytes at off into p; the bytes are what the memory holds once
	// every earlier WriteAt has landed.
	ReadAt(p []byte, off uint64) error
	// WriteAt copies p to off and returns once the bytes are in the memory (visible to
	// anything that reads it afterwards, a kernel or a copy back).
	WriteAt(p []byte, off uint64) error
}

// ErrWindow is wrapped by Slice's error for bytes in a window: they have no host address, so
// the device reaches them only by copy (Gather, Write).
var ErrWindow = errors.New("dma: the bytes are in a window (device memory with no host address)")

type mapping struct {
	iova uint64
	mem  []byte // nil for a window
	win  Window
	size uint64
	perm Perm
}

func (m mapping) end() uint64 { return m.iova + m.size }

// Space is one I/O virtual address space. Its methods are safe for concurrent use; the bytes
// it hands out alias the mapped memory, as a device and its driver share it.
type Space struct {
	mu   sync.RWMutex
	maps []mapping // sorted by iova, never overlapping
	// gen counts the changes of maps (every Map, MapWindow and Unmap), so that a user may
	// keep a slice Slice gave while gen stays the same: the same call would give it again.
	gen atomic.Uint64
	// hints are indexes find returned, the one of index i in slot i%4: a device touches a
	// few buffers' mappings (an RSS spread's RQs, a ring) many times over, and checking those
	// first saves the binary search (most of a scatter's cost in the model's datapath
	// benchmark). Readers under the read lock share them, so they are atomic; any value is
	// safe, find checks an index before using it.
	hints [4]atomic.Int32
}

// Gen is the space's generation: it changes whenever a mapping is added or removed. A slice
// Slice returned is what the same call returns as long as Gen has not changed.
func (s *Space) Gen() uint64 { return s.gen.Load() }

// Map makes mem reachable at iova. mem must stay valid (not freed or unmapped by its owner)
// until Unmap; the space does not copy it.
func (s *Space) Map(iova uint64, mem []byte, perm Perm) error {
	if len(mem) == 0 {
		return fmt.Errorf("dma: map of zero bytes at %#x", iova)
	}
	end := iova + uint64(len(mem))
	if end < iova {
		return fmt.Errorf("dma: mapping at %#x of %d bytes wraps the address space", iova, len(mem))
	}
	return s.insert(mapping{iova: iova, mem: mem, size: uint64(len(mem)), perm: perm})
}

// MapWindow makes size bytes of w reachable at iova (device memory: the model's DMA copies
// through w). w must stay usable until Unmap.
func (s *Space) MapWindow(iova, size uint64, w Window, perm Perm) error {
	if size == 0 || w == nil {
		return fmt.Errorf("dma: window of %d bytes at %#x", size, iova)
	}
	if iova+size < iova {
		return fmt.Errorf("dma: window at %#x of %d bytes wraps the address space", iova, size)
	}
	return s.insert(mapping{iova: iova, win: w, size: size, perm: perm})
}

func (s *Space) insert(m mapping) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, _ := slices.BinarySearchFunc(s.maps, m.iova, byIOVA)
	if i > 0 {
		if p := s.maps[i-1]; p.end() > m.iova {
			return fmt.Errorf("dma: mapping at %#x overlaps the one at %#x", m.iova, p.iova)
		}
	}
	if i < len(s.maps) && s.maps[i].iova < m.end() {
		return fmt.Errorf("dma: mapping at %#x overlaps the one at %#x", m.iova, s.maps[i].iova)
	}
	s.maps = slices.Insert(s.maps, i, m)
	s.gen.Add(1)
	return nil
}

// Unmap removes the mapping that starts at iova.
func (s *Space) Unmap(iova uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, m := range s.maps {
		if m.iova == iova {
			s.maps = slices.Delete(s.maps, i, i+1)
			s.gen.Add(1)
			return nil
		}
	}
	return fmt.Errorf("dma: no mapping starts at %#x", iova)
}

// Slice returns the n bytes at iova, aliasing the mapped memory, if they lie within one
// mapping that allows perm.
func (s *Space) Slice(iova uint64, n int, perm Perm) ([]byte, error) {
	if n < 0 {
		return nil, fmt.Errorf("%w: negative length at %#x", ErrFault, iova)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	i := s.find(iova)
	if i < 0 {
		return nil, fmt.Errorf("%w: %d bytes at %#x", ErrFault, n, iova)
	}
	m := s.maps[i]
	off := iova - m.iova
	if off > m.size || uint64(n) > m.size-off {
		return nil, fmt.Errorf("%w: %d bytes at %#x", ErrFault, n, iova)
	}
	if m.perm&perm != perm {
		return nil, fmt.Errorf("%w: %d bytes at %#x: mapping at %#x does not allow %v", ErrFault, n, iova, m.iova, perm)
	}
	if m.win != nil {
		return nil, fmt.Errorf("%w: %d bytes at %#x: %w", ErrFault, n, iova, ErrWindow)
	}
	return m.mem[off : off+uint64(n) : off+uint64(n)], nil
}

// Window reports whether iova lies in a window (device memory) rather than host memory.
func (s *Space) Window(iova uint64) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	i := s.find(iova)
	return i >= 0 && iova-s.maps[i].iova < s.maps[i].size && s.maps[i].win != nil
}

// find returns the index of the mapping that starts at or below iova (the only one that can
// hold it: mappings do not overlap), -1 for none. Called with mu held.
func (s *Space) find(iova uint64) int {
	for k := range s.hints {
		// What the search below finds: the last mapping starting at or below iova.
		if h := int(s.hints[k].Load()); h < len(s.maps) && s.maps[h].iova <= iova && (h+1 == len(s.maps) || s.maps[h+1].iova > iova) {
			return h
		}
	}
	i := s.search(iova)
	if i >= 0 {
		s.hints[i%len(s.hints)].Store(int32(i))
	}
	return i
}

// search is find without the hints: the index of the last mapping starting at or below
// iova, -1 if none.
func (s *Space) search(iova uint64) int {
	i, found := slices.BinarySearchFunc(s.maps, iova, byIOVA)
	if !found {
		i--
	}
	return i
}

// Gather returns a copy of the n bytes at iova, which may run over several mappings that
// follow each other in I/O address space, each allowing perm: what a device reads through an
// IOMMU page by page. It serves reads only (a copy cannot take the device's writes); under
// QEMU's vfio-user client every IOMMU page is a mapping of its own, and a buffer the guest
// maps in one piece (an skb crossing a page) spans several.
func (s *Space) Gather(iova uint64, n int, perm Perm) ([]byte, error) {
	if n < 0 {
		return nil, fmt.Errorf("%w: %d bytes at %#x", ErrFault, n, iova)
	}
	out := make([]byte, n)
	at := 0
	err := s.walk(iova, uint64(n), perm, func(m mapping, off, k uint64) error {
		dst := out[at : at+int(k)]
		at += int(k)
		if m.win != nil {
			return m.win.ReadAt(dst, off)
		}
		copy(dst, m.mem[off:off+k])
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Check reports whether the n bytes at iova are mapped, with perm, by mappings that follow
// each other in I/O address space (what Gather could read), without copying them.
func (s *Space) Check(iova, n uint64, perm Perm) error {
	return s.walk(iova, n, perm, func(mapping, uint64, uint64) error { return nil })
}

// walk hands each mapped piece of the n bytes at iova to fn in order (its mapping, the offset
// in it, its length), or fails at the first byte that is not mapped with perm or at fn's
// first error.
func (s *Space) walk(iova, n uint64, perm Perm, fn func(m mapping, off, k uint64) error) error {
	if iova+n < iova {
		return fmt.Errorf("%w: %d bytes at %#x", ErrFault, n, iova)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for at, end := iova, iova+n; at < end; {
		i := s.find(at)
		if i < 0 {
			return fmt.Errorf("%w: %d bytes at %#x (nothing mapped at %#x)", ErrFault, n, iova, at)
		}
		m := s.maps[i]
		off := at - m.iova
		if off >= m.size {
			return fmt.Errorf("%w: %d bytes at %#x (nothing mapped at %#x)", ErrFault, n, iova, at)
		}
		if m.perm&perm != perm {
			return fmt.Errorf("%w: %d bytes at %#x: mapping at %#x does not allow %v", ErrFault, n, iova, m.iova, perm)
		}
		k := min(end-at, m.size-off)
		if err := fn(m, off, k); err != nil {
			return fmt.Errorf("%w: %d bytes at %#x: %v", ErrFault, n, iova, err)
		}
		at += k
	}
	return nil
}

// Read copies len(p) bytes at iova into p, from host memory or through a window; the bytes
// lie in one mapping.
func (s *Space) Read(iova uint64, p []byte) error {
	return s.one(iova, len(p), Read, func(m mapping, off uint64) error {
		if m.win != nil {
			return m.win.ReadAt(p, off)
		}
		copy(p, m.mem[off:])
		return nil
	})
}

// Write copies p to iova, into host memory or through a window (the device's DMA write: on
// return the bytes are in the memory); the bytes lie in one mapping.
func (s *Space) Write(iova uint64, p []byte) error {
	return s.one(iova, len(p), Write, func(m mapping, off uint64) error {
		if m.win != nil {
			return m.win.WriteAt(p, off)
		}
		copy(m.mem[off:], p)
		return nil
	})
}

// one runs fn on the mapping that holds all n bytes at iova with perm, outside the lock (a
// window's copy may take a while; the mapping's owner keeps it until Unmap, which the model
// orders after the last access as a device's DMA is ordered before its unmap).
func (s *Space) one(iova uint64, n int, perm Perm, fn func(m mapping, off uint64) error) error {
	s.mu.RLock()
	i := s.find(iova)
	var m mapping
	if i >= 0 {
		m = s.maps[i]
	}
	s.mu.RUnlock()
	if i < 0 {
		return fmt.Errorf("%w: %d bytes at %#x", ErrFault, n, iova)
	}
	off := iova - m.iova
	if n < 0 || off > m.size || uint64(n) > m.size-off {
		return fmt.Errorf("%w: %d bytes at %#x", ErrFault, n, iova)
	}
	if m.perm&perm != perm {
		return fmt.Errorf("%w: %d bytes at %#x: mapping at %#x does not allow %v", ErrFault, n, iova, m.iova, perm)
	}
	if err := fn(m, off); err != nil {
		return fmt.Errorf("%w: %d bytes at %#x: %v", ErrFault, n, iova, err)
	}
	return nil
}

// Len is the number of mappings, for leak checks.
func (s *Space) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.maps)
}

func (p Perm) String() string {
	switch p {
	case Read:
		return "read"
	case Write:
		return "write"
	case Read | Write:
		return "read/write"
	}
	return fmt.Sprintf("perm(%d)", uint8(p))
}

// byIOVA orders a mapping against an address by where the mapping starts, for binary searches
// of the sorted mappings.
func byIOVA(m mapping, iova uint64) int { return cmp.Compare(m.iova, iova) }
