package xsk

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestFrameAddr(t *testing.T) {
	if got := FrameAddr(4096 + 256); got != 4352 {
		t.Fatalf("aligned address %d", got)
	}
	if got := FrameAddr(3000 | 256<<48); got != 3256 {
		t.Fatalf("unaligned address %d", got)
	}
}

// TestOpenBadInput checks the errors Open gives before touching the kernel.
func TestOpenBadInput(t *testing.T) {
	mem, err := unix.Mmap(-1, 0, 1<<16, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	ok := Options{Ifindex: 1, Mem: mem, ChunkSize: 2048, FillSize: 8, CompSize: 8, RxSize: 8}
	for _, c := range []struct {
		mod  func(o *Options)
		want string
	}{
		{func(o *Options) { o.Mem = nil }, "no UMEM"},
		{func(o *Options) { o.Mem = mem[1:] }, "page-aligned"},
		{func(o *Options) { o.ChunkSize = 1024 }, "below the kernel minimum"},
		{func(o *Options) { o.ChunkSize = 3000 }, "power of two"},
		{func(o *Options) { o.RxSize = 6 }, "not a power of two"},
		{func(o *Options) { o.RxSize, o.TxSize = 0, 0 }, "RX or a TX ring"},
		{func(o *Options) { o.CompSize = 0 }, "fill and a completion ring"},
	} {
		o := ok
		c.mod(&o)
		if _, err := Open(o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
}

func TestGetChannelsBadName(t *testing.T) {
	if _, err := GetChannels(strings.Repeat("x", 20)); err == nil {
		t.Fatal("accepted a 20-character interface name")
	}
}
