// Package hugepage maps packet-buffer memory outside the Go heap: anonymous pages (kind host)
// or hugepages (kind huge, MAP_HUGETLB). The garbage collector never moves or frees this
// memory, so its addresses can be handed to the kernel and to devices.
package hugepage

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrNotEnough is returned (wrapped) when the system has too few free hugepages.
var ErrNotEnough = errors.New("not enough free hugepages")

// ErrNoMemory is returned (wrapped) when a host mapping is larger than the memory the system
// has available (MemAvailable): the mapping is populated at once, and populating more than
// that gets the process killed for memory instead of an error.
var ErrNoMemory = errors.New("not enough available memory")

// Mem is one mapping. Its bytes stay valid until Close.
type Mem struct {
	b    []byte
	huge bool
	page int
}

// Bytes is the mapped memory.
func (m *Mem) Bytes() []byte { return m.b }

// Addr is the virtual address of the first byte; it stays fixed until Close.
func (m *Mem) Addr() uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(m.b))) }

// Huge reports whether the mapping is hugepage-backed.
func (m *Mem) Huge() bool { return m.huge }

// PageSize is the size of the pages backing the mapping.
func (m *Mem) PageSize() int { return m.page }

// Close unmaps the memory; the bytes must not be used afterwards.
func (m *Mem) Close() error {
	if m.b == nil {
		return nil
	}
	err := unix.Munmap(m.b)
	m.b = nil
	return err
}

// Info is the system's default hugepage pool, from /proc/meminfo.
type Info struct {
	PageSize int // bytes per hugepage (Hugepagesize)
	Total    int // HugePages_Total
	Free     int // HugePages_Free
	Reserved int // HugePages_Rsvd: promised to mappings but not yet faulted in

	// MemAvailable is the memory, in bytes, the kernel estimates new allocations can get
	// without swapping (MemAvailable; 0 when the kernel does not report it).
	MemAvailable int
}

// Available is the number of hugepages a new mapping can still get.
func (i Info) Available() int { return i.Free - i.Reserved }

// ReadInfo reads the default hugepage pool's state.
func ReadInfo() (Info, error) { return readInfo("/proc/meminfo") }

func readInfo(path string) (Info, error) {
	f, err := os.Open(path)
	if err != nil {
		return Info{}, err
	}
	defer f.Close()
	var in Info
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			continue
		}
		n, err := strconv.Atoi(fields[0])
		if err != nil {
			continue
		}
		switch k {
		case "Hugepagesize":
			in.PageSize = n * 1024 // reported in kB
		case "HugePages_Total":
			in.Total = n
		case "HugePages_Free":
			in.Free = n
		case "HugePages_Rsvd":
			in.Reserved = n
		case "MemAvailable":
			in.MemAvailable = n * 1024 // reported in kB
		}
	}
	if in.PageSize == 0 {
		return in, fmt.Errorf("%s: no Hugepagesize line (kernel without hugetlbfs?)", path)
	}
	return in, sc.Err()
}

// PMDSize is what one page-table entry a level above the last maps with base pages of
// pageSize bytes (a table is one page of 8-byte entries): the kernel's default hugepage size
// on x86-64 and arm64, where HPAGE_SHIFT is PMD_SHIFT. 2 MiB with 4 KiB pages, 32 MiB with
// 16 KiB, 512 MiB with the 64 KiB pages some arm64 kernels use.
func PMDSize(pageSize int) int { return pageSize * (pageSize / 8) }

// PagesFor is how many hugepages of the given size size bytes need.
func PagesFor(size, pageSize int) int { return (size + pageSize - 1) / pageSize }

// Map maps size bytes of anonymous memory, populated up front so the data path never takes a
// page fault. With huge, the memory comes from the default hugepage pool; when the pool is too
// small the error wraps ErrNotEnough and says how many pages to reserve and how.
func Map(size int, huge bool) (*Mem, error) { return MapOnNode(size, huge, -1) }

// NodeExists reports whether NUMA node n is online on this machine (a single-node machine
// without NUMA support has node 0 only).
func NodeExists(n int) bool {
	if n < 0 {
		return false
	}
	if _, err := os.Stat("/sys/devices/system/node"); err != nil {
		return n == 0
	}
	_, err := os.Stat("/sys/devices/system/node/node" + strconv.Itoa(n))
	return err == nil
}

// Memory policy constants (linux include/uapi/linux/mempolicy.h).
const (
	mpolPreferred = 1
)

// MapOnNode is Map with the pages preferably placed on NUMA node node (node < 0: no
// preference). The preference is set with mbind(MPOL_PREFERRED) before the first touch, so
// the pages are allocated there when the node has them and elsewhere rather than failing
// when it does not. A node that does not exist is an error.
func MapOnNode(size int, huge bool, node int) (*Mem, error) {
	if node >= 0 && (!NodeExists(node) || node >= 1024) {
		return nil, fmt.Errorf("hugepage: NUMA node %d does not exist on this machine", node)
	}
	if size <= 0 {
		return nil, fmt.Errorf("hugepage: size %d must be > 0", size)
	}
	flags := unix.MAP_PRIVATE | unix.MAP_ANONYMOUS | unix.MAP_POPULATE
	page := os.Getpagesize()
	if huge {
		in, err := ReadInfo()
		if err != nil {
			return nil, fmt.Errorf("hugepage: %w", err)
		}
		page = in.PageSize
		need := PagesFor(size, page)
		if need > in.Available() {
			return nil, fmt.Errorf("%w: need %d pages of %d kB for %d bytes, %d available (%d total); reserve more with: echo %d > /proc/sys/vm/nr_hugepages",
				ErrNotEnough, need, page/1024, size, max(in.Available(), 0), in.Total, in.Total+need-max(in.Available(), 0))
		}
		size = need * page
		flags |= unix.MAP_HUGETLB
	} else {
		size = (size + page - 1) / page * page
		// Checked here rather than left to mmap: with overcommit the mapping succeeds and
		// populating it gets the process killed. The kernel's own estimate is the bound (a
		// kernel without hugetlbfs still reports it; without MemAvailable nothing is checked).
		if in, _ := ReadInfo(); in.MemAvailable > 0 && size > in.MemAvailable {
			return nil, fmt.Errorf("%w: %d bytes asked, %d available (MemAvailable in /proc/meminfo)", ErrNoMemory, size, in.MemAvailable)
		}
	}
	if node >= 0 {
		flags &^= unix.MAP_POPULATE // populated below, once the policy is set
	}
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, flags)
	if err == nil && node >= 0 {
		var mask [1024 / 64]uint64
		mask[node/64] |= 1 << (node % 64)
		_, _, errno := unix.Syscall6(unix.SYS_MBIND, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)),
			mpolPreferred, uintptr(unsafe.Pointer(&mask[0])), uintptr(len(mask)*64+1), 0)
		// ENOSYS: a kernel without NUMA (CONFIG_NUMA off, as some embedded arm64 kernels
		// are; or qemu-user, which does not pass mbind on) has one node, so there is no
		// preference to set; node was checked to exist above.
		if errno != 0 && errno != unix.ENOSYS {
			unix.Munmap(b)
			return nil, fmt.Errorf("hugepage: mbind to NUMA node %d: %w", node, errno)
		}
		// Touch every page now, as MAP_POPULATE would have: the data path takes no faults.
		for off := 0; off < len(b); off += page {
			b[off] = 0
		}
	}
	if err != nil {
		if huge && errors.Is(err, unix.ENOMEM) {
			return nil, fmt.Errorf("%w: mmap of %d bytes with MAP_HUGETLB: %v; reserve more with /proc/sys/vm/nr_hugepages", ErrNotEnough, size, err)
		}
		return nil, fmt.Errorf("hugepage: mmap %d bytes: %w", size, err)
	}
	return &Mem{b: b, huge: huge, page: page}, nil
}
