package gpudma

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestImportNotADMABuf: fds that are no DMA-BUF (a memfd, a pipe, a closed fd) are refused
// before the importer needs a GPU, naming the fd and what it is.
func TestImportNotADMABuf(t *testing.T) {
	mfd, err := unix.MemfdCreate("x", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(mfd)
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	im := New()
	defer im.Close()
	for _, c := range []struct {
		fd   int
		want string
	}{{mfd, "is not a DMA-BUF (it is /memfd:x"}, {p[0], "is not a DMA-BUF (it is pipe:"}, {-1, "not a file descriptor"}, {1 << 20, "no such file"}} {
		_, err := im.Import(c.fd, 0, 4096)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Import(fd %d): %v, want %q", c.fd, err, c.want)
		}
	}
	if isBuf, _, _, err := Describe(mfd); isBuf || err != nil {
		t.Errorf("Describe(memfd) = %v, %v", isBuf, err)
	}
}
