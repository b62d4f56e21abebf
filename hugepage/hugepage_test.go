package hugepage

import (
	"errors"
	"fmt"
	"golang.org/x/sys/unix"

	"github.com/daqiri-go/daqiri/internal/testutil"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadInfo(t *testing.T) {
	p := filepath.Join(t.TempDir(), "meminfo")
	os.WriteFile(p, []byte("MemTotal: 1 kB\nHugePages_Total:      64\nHugePages_Free:       60\nHugePages_Rsvd:        4\nHugepagesize:       2048 kB\n"), 0o644)
	in, err := readInfo(p)
	if err != nil {
		t.Fatal(err)
	}
	if in.PageSize != 2<<20 || in.Total != 64 || in.Free != 60 || in.Available() != 56 || in.MemAvailable != 0 {
		t.Fatalf("got %+v", in)
	}
	os.WriteFile(p, []byte("MemTotal: 1 kB\nMemAvailable: 3 kB\nHugepagesize: 2048 kB\n"), 0o644)
	if in, err := readInfo(p); err != nil || in.MemAvailable != 3072 {
		t.Fatalf("MemAvailable: got %+v, %v", in, err)
	}
	os.WriteFile(p, []byte("MemTotal: 1 kB\n"), 0o644)
	if _, err := readInfo(p); err == nil {
		t.Fatal("meminfo without Hugepagesize accepted")
	}
}

// TestMapBeyondAvailable: a host mapping larger than MemAvailable is refused with
// ErrNoMemory before mmap (issue 30 item 2): populating it would get the process killed.
func TestMapBeyondAvailable(t *testing.T) {
	in, _ := ReadInfo()
	if in.MemAvailable == 0 {
		testutil.Missing(t, "/proc/meminfo has no MemAvailable line (kernel before 3.14)")
	}
	_, err := Map(in.MemAvailable+1<<40, false)
	if !errors.Is(err, ErrNoMemory) || !strings.Contains(err.Error(), "MemAvailable") {
		t.Fatalf("want ErrNoMemory naming MemAvailable, got %v", err)
	}
}

func TestMapHost(t *testing.T) {
	m, err := Map(10000, false)
	if err != nil {
		t.Fatal(err)
	}
	b := m.Bytes()
	if len(b) < 10000 || len(b)%os.Getpagesize() != 0 {
		t.Fatalf("len %d", len(b))
	}
	b[0], b[len(b)-1] = 1, 2
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Map(0, false); err == nil {
		t.Fatal("size 0 accepted")
	}
}

// TestMapHuge needs root to reserve pages; the previous reservation is restored.
func TestMapHuge(t *testing.T) {
	testutil.ReserveHugepages(t, 4)
	in, err := ReadInfo()
	if err != nil {
		t.Fatal(err)
	}
	if in.Available() < 2 {
		testutil.Missing(t, "kernel granted only %d free hugepages", in.Available())
	}
	// Ask for more than can be had: the error must say how many pages to reserve.
	_, err = Map((in.Available()+3)*in.PageSize, true)
	if !errors.Is(err, ErrNotEnough) || !strings.Contains(err.Error(), "nr_hugepages") {
		t.Fatalf("want ErrNotEnough with the fix, got %v", err)
	}
	m, err := Map(in.PageSize+1, true)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if !m.Huge() || len(m.Bytes()) != 2*in.PageSize {
		t.Fatalf("huge=%v len=%d", m.Huge(), len(m.Bytes()))
	}
	m.Bytes()[len(m.Bytes())-1] = 7
}

// TestMapOnNode (issue 19 item 10): the region's NUMA node is applied as the mapping's memory
// policy (the kernel lists it in /proc/self/numa_maps as prefer:N); a node that does not
// exist is an error.
func TestMapOnNode(t *testing.T) {
	if err := testutil.ProbeSyscall(unix.SYS_MBIND); err != nil {
		testutil.Lacks(t, "mbind (the memory policy this test reads back)", err)
	}
	m, err := MapOnNode(1<<20, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	maps, err := os.ReadFile("/proc/self/numa_maps")
	if err != nil {
		t.Skipf("no /proc/self/numa_maps (kernel without NUMA support): %v", err)
	}
	prefix := fmt.Sprintf("%x ", m.Addr())
	var line string
	for _, l := range strings.Split(string(maps), "\n") {
		if strings.HasPrefix(l, prefix) {
			line = l
		}
	}
	if !strings.Contains(line, " prefer:0 ") && !strings.Contains(line, " prefer=relative:0 ") {
		t.Fatalf("mapping at %#x: numa_maps line %q, want policy prefer:0", m.Addr(), line)
	}
	if _, err := MapOnNode(4096, false, 4000); err == nil || !strings.Contains(err.Error(), "NUMA node 4000 does not exist") {
		t.Fatalf("node 4000: %v", err)
	}
}

// TestPMDSize: the default hugepage size for each arm64 granule (and x86-64's 4 KiB).
func TestPMDSize(t *testing.T) {
	for page, want := range map[int]int{4 << 10: 2 << 20, 16 << 10: 32 << 20, 64 << 10: 512 << 20} {
		if got := PMDSize(page); got != want {
			t.Errorf("PMDSize(%d) = %d, want %d", page, got, want)
		}
	}
}
