package hugepage

import (
	"errors"
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
	if in.PageSize != 2<<20 || in.Total != 64 || in.Free != 60 || in.Available() != 56 {
		t.Fatalf("got %+v", in)
	}
	os.WriteFile(p, []byte("MemTotal: 1 kB\n"), 0o644)
	if _, err := readInfo(p); err == nil {
		t.Fatal("meminfo without Hugepagesize accepted")
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
