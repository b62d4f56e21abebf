package xsk

import (
	"errors"
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

// TestMockRings drives a mock's four rings from both sides.
func TestXDPMockRings(t *testing.T) {
	mem, err := unix.Mmap(-1, 0, 8*4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	for _, unaligned := range []bool{false, true} {
		s, m, err := NewMock(Options{Mem: mem, ChunkSize: 4096, Unaligned: unaligned, FillSize: 4, CompSize: 4, RxSize: 4, TxSize: 4})
		if err != nil {
			t.Fatal(err)
		}
		if n := s.Fill([]uint64{0, 4096, 8192, 12288, 16384}); n != 4 || s.FillFree() != 0 || m.FillLen() != 4 {
			t.Fatalf("filled %d, free %d, mock sees %d", n, s.FillFree(), m.FillLen())
		}
		meta := []byte{1, 2, 3, 4}
		if got := m.Receive(meta, []byte("abc"), []byte("defg")); got != 2 || m.RxLen() != 2 {
			t.Fatalf("received %d, RX ring %d", got, m.RxLen())
		}
		d := make([]Desc, 8)
		if n := s.Receive(d); n != 2 {
			t.Fatalf("took %d descriptors", n)
		}
		for i, want := range []string{"abc", "defg"} {
			off := FrameAddr(d[i].Addr)
			if off != uint64(i)*4096+PacketHeadroom || string(mem[off:off+uint64(d[i].Len)]) != want || mem[off-1] != 4 {
				t.Fatalf("unaligned %v descriptor %d: %+v", unaligned, i, d[i])
			}
		}
		if s.FillFree() != 2 {
			t.Fatalf("fill ring free %d after two receives", s.FillFree())
		}
		m.Receive(nil, []byte("x"), []byte("y"), []byte("z")) // two buffers left on the fill ring
		if st, _ := s.Stats(); st.RxFillRingEmpty != 1 {
			t.Fatalf("stats %+v", st)
		}
		if s.FillNeedsWakeup() || s.TxNeedsWakeup() {
			t.Fatal("need_wakeup set")
		}
		m.SetNeedWakeup(true, true)
		if !s.FillNeedsWakeup() || !s.TxNeedsWakeup() {
			t.Fatal("need_wakeup not set")
		}
		s.WakeupRx()
		if err := s.Kick(); err != nil {
			t.Fatal(err)
		}
		if n := s.Transmit([]Desc{{Addr: 100, Len: 60}, {Addr: 4196, Len: 70}}); n != 2 || s.TxOutstanding() != 2 {
			t.Fatalf("queued %d", n)
		}
		var sent []Desc
		if n := m.Transmit(0, &sent); n != 2 || sent[1].Len != 70 || s.TxOutstanding() != 0 {
			t.Fatalf("sent %d: %+v", n, sent)
		}
		c := make([]uint64, 4)
		if n := s.Complete(c); n != 2 || c[0] != 100 || c[1] != 4196 {
			t.Fatalf("completed %d: %v", n, c[:n])
		}
		if st, _ := s.Stats(); st.Wakeups != 2 || st.KickErrors != 0 {
			t.Fatalf("stats %+v", st)
		}
		s.Close()
	}
}

// TestMultiBufferErr: a multi-buffer bind refused with EINVAL before Linux 6.6 says that
// XDP_USE_SG needs 6.6 and names the running kernel; on 6.6+ and for other errors the
// kernel's error passes through unchanged.
func TestMultiBufferErr(t *testing.T) {
	for _, c := range []struct {
		err     error
		release string
		want    bool
	}{
		{unix.EINVAL, "5.15.148-tegra", true},
		{unix.EINVAL, "6.1.0-28-arm64", true},
		{unix.EINVAL, "6.6.0", false},
		{unix.EINVAL, "6.12.9-arm64", false},
		{unix.EINVAL, "7.0", false},
		{unix.EINVAL, "", true},
		{unix.EBUSY, "5.15.0", false},
	} {
		err := multiBufferErr(c.err, c.release)
		if got := errors.Is(err, ErrNoMultiBuffer); got != c.want {
			t.Errorf("multiBufferErr(%v, %q) = %v, want ErrNoMultiBuffer %v", c.err, c.release, err, c.want)
		}
		if !errors.Is(err, c.err) {
			t.Errorf("multiBufferErr(%v, %q) = %v lost the kernel's error", c.err, c.release, err)
		}
		if c.want && (!strings.Contains(err.Error(), "6.6") || !strings.Contains(err.Error(), c.release)) {
			t.Errorf("multiBufferErr(%v, %q) = %q: want the 6.6 requirement and the kernel release", c.err, c.release, err)
		}
	}
}
