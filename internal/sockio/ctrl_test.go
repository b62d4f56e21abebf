package sockio

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"golang.org/x/sys/unix"
)

// cmsg appends one control message as the kernel lays it out (struct cmsghdr: a size_t
// length, then int level and type; data padded to the size of a long: linux
// include/linux/socket.h).
func cmsg(b []byte, level, typ int32, data []byte) []byte {
	h := make([]byte, unix.SizeofCmsghdr)
	binary.NativeEndian.PutUint64(h, uint64(unix.CmsgLen(len(data))))
	binary.NativeEndian.PutUint32(h[8:], uint32(level))
	binary.NativeEndian.PutUint32(h[12:], uint32(typ))
	b = append(append(b, h...), data...)
	for len(b)%unix.SizeofPtr != 0 {
		b = append(b, 0)
	}
	return b
}

func u32(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }

func timespec(sec, nsec int64) []byte {
	return binary.NativeEndian.AppendUint64(binary.NativeEndian.AppendUint64(nil, uint64(sec)), uint64(nsec))
}

// TestParseCtrl feeds the parser the three control messages a datagram can carry (drop
// counter, receive time, GRO segment size) in random order and with unrelated ones between
// them, and checks each value lands in its field.
func TestParseCtrl(t *testing.T) {
	if unix.SizeofCmsghdr != 16 {
		t.Skipf("cmsg layout of this test is LP64's; this platform's header is %d bytes", unix.SizeofCmsghdr)
	}
	r := rand.New(rand.NewPCG(rand.Uint64(), 11))
	for n := 0; n < 1000; n++ {
		drops, gso := r.Uint32(), int32(1+r.IntN(65000))
		sec, nsec := int64(r.Uint32()), int64(r.IntN(1e9))
		type part struct {
			level, typ int32
			data       []byte
		}
		parts := []part{
			{unix.SOL_SOCKET, unix.SO_RXQ_OVFL, u32(drops)},
			{unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS, timespec(sec, nsec)},
			{unix.SOL_UDP, unix.UDP_GRO, u32(uint32(gso))},
			{unix.SOL_IP, unix.IP_TTL, u32(64)}, // not one of ours: skipped
		}
		r.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
		keep := r.IntN(16) // which of the parts this datagram carries
		var c []byte
		want := struct {
			drops uint32
			has   bool
			stamp int64
			gso   int
		}{}
		for i, p := range parts {
			if keep&(1<<i) == 0 {
				continue
			}
			c = cmsg(c, p.level, p.typ, p.data)
			switch p.typ {
			case unix.SO_RXQ_OVFL:
				want.drops, want.has = drops, true
			case unix.SCM_TIMESTAMPNS:
				want.stamp = sec*1e9 + nsec
			case unix.UDP_GRO:
				if p.level == unix.SOL_UDP {
					want.gso = int(gso)
				}
			}
		}
		b := NewRecvBatch(1)
		m := &b.Msgs[0]
		b.parseCtrl(m, c)
		if b.HasOverflow != want.has || b.Overflow != want.drops || m.Stamp != want.stamp || m.GSO != want.gso {
			t.Fatalf("parts %b: overflow %v/%d stamp %d gso %d, want %v/%d %d %d", keep, b.HasOverflow, b.Overflow, m.Stamp, m.GSO, want.has, want.drops, want.stamp, want.gso)
		}
	}
}

// TestParseCtrlMalformed: a length shorter than the header, one running past the buffer, data
// too short for its type and plain garbage end the walk or are skipped, never read out of
// bounds, and leave the fields untouched.
func TestParseCtrlMalformed(t *testing.T) {
	if unix.SizeofCmsghdr != 16 {
		t.Skipf("cmsg layout of this test is LP64's; this platform's header is %d bytes", unix.SizeofCmsghdr)
	}
	good := cmsg(nil, unix.SOL_SOCKET, unix.SO_RXQ_OVFL, u32(7))
	short := append([]byte(nil), good...)
	binary.NativeEndian.PutUint64(short, 8) // shorter than the header
	long := append([]byte(nil), good...)
	binary.NativeEndian.PutUint64(long, 4096) // past the end
	for name, c := range map[string][]byte{
		"empty":             nil,
		"header cut":        good[:unix.SizeofCmsghdr-1],
		"length too short":  short,
		"length too long":   long,
		"data cut":          good[:unix.SizeofCmsghdr+2],
		"timestamp 8 bytes": cmsg(nil, unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS, u32(1)),
		"gro 1 byte":        cmsg(nil, unix.SOL_UDP, unix.UDP_GRO, []byte{9}),
	} {
		b := NewRecvBatch(1)
		b.parseCtrl(&b.Msgs[0], c)
		if b.HasOverflow || b.Msgs[0].Stamp != 0 || b.Msgs[0].GSO != 0 {
			t.Errorf("%s: parsed %+v overflow %v", name, b.Msgs[0], b.HasOverflow)
		}
	}
	// A good message after a bad one is not reached; before it, it is.
	b := NewRecvBatch(1)
	b.parseCtrl(&b.Msgs[0], append(append([]byte(nil), good...), long...))
	if !b.HasOverflow || b.Overflow != 7 {
		t.Errorf("good message before a bad one: overflow %v %d", b.HasOverflow, b.Overflow)
	}
	r := rand.New(rand.NewPCG(rand.Uint64(), 12))
	for n := 0; n < 10000; n++ {
		c := make([]byte, r.IntN(200))
		for i := range c {
			c[i] = byte(r.Uint32())
		}
		if r.IntN(2) == 0 && len(c) >= 8 {
			binary.NativeEndian.PutUint64(c, uint64(r.IntN(len(c)+8)))
		}
		b := NewRecvBatch(1)
		b.parseCtrl(&b.Msgs[0], c) // must not panic
	}
}
