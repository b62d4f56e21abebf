package datapath

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// TestCopyStream holds the streaming copy (dmawrite_amd64.s; copy elsewhere) to Go's copy on
// random bytes of every length up to 300 and random lengths up to a 9000-byte jumbo frame,
// at every alignment of source and destination within a cache line: the destination range
// gets the source's bytes and the bytes before and after it stay as they were.
func TestCopyStream(t *testing.T) {
	r := rand.New(rand.NewPCG(71, 72))
	const guard = 80
	src := make([]byte, 9000+64)
	mem := make([]byte, guard+64+9000+guard)
	want := make([]byte, len(mem))
	check := func(n, da, sa int) {
		for i := range mem {
			mem[i] = byte(r.Uint32())
		}
		for i := range src {
			src[i] = byte(r.Uint32())
		}
		copy(want, mem)
		at := guard + da
		copy(want[at:at+n], src[sa:sa+n])
		copyStream(mem[at:at+n], src[sa:sa+n])
		if !bytes.Equal(mem, want) {
			for i := range mem {
				if mem[i] != want[i] {
					t.Fatalf("%d bytes to offset %d from offset %d: byte %d (destination from %d to %d) is %#x, want %#x",
						n, da, sa, i, at, at+n, mem[i], want[i])
				}
			}
		}
	}
	for n := 0; n <= 300; n++ {
		check(n, r.IntN(64), r.IntN(64))
	}
	for range 3000 {
		check(r.IntN(9001), r.IntN(64), r.IntN(64))
	}
	for da := range 64 {
		for _, n := range []int{255, 256, 1064, 9000} {
			check(n, da, r.IntN(64))
		}
	}
}

// TestDMAWriter checks dmaWriter.write against copy (shorter source or destination, either
// side of streamMin) and that it asks for a fence exactly when it streamed.
func TestDMAWriter(t *testing.T) {
	r := rand.New(rand.NewPCG(73, 74))
	for range 2000 {
		var w dmaWriter
		src := make([]byte, r.IntN(3000))
		for i := range src {
			src[i] = byte(r.Uint32())
		}
		dst := make([]byte, r.IntN(3000))
		for i := range dst {
			dst[i] = byte(r.Uint32())
		}
		want := append([]byte(nil), dst...)
		k := copy(want, src)
		if got := w.write(dst, src); got != k || !bytes.Equal(dst, want) {
			t.Fatalf("write of %d bytes into %d: %d copied (want %d), bytes equal %v", len(src), len(dst), got, k, bytes.Equal(dst, want))
		}
		if w.streamed != (canStream && k >= streamMin) {
			t.Fatalf("write of %d bytes: streamed %v", k, w.streamed)
		}
		w.publish()
		if w.streamed || w.fences != uint64(btoi(canStream && k >= streamMin)) {
			t.Fatalf("write of %d bytes: after publish streamed %v, %d fences", k, w.streamed, w.fences)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestRXWritesFenced runs frames into a striding RQ (buffers kept translated) and a cyclic
// RQ (scattered through key spans), several per Step: every frame's bytes land in the
// buffers, and each Step that streamed a frame has fenced once before its CQEs, with no
// streamed write left unfenced (without the fence in the CQE store, the driver on another
// CPU could see a CQE before its frame). Frames under streamMin stream nothing and fence
// nothing.
func TestRXWritesFenced(t *testing.T) {
	for _, striding := range []bool{true, false} {
		e := newEnv(t)
		if striding {
			e.nic.cfg.Keys = directKeys{keys{e.space}}
		}
		c := e.newCQ(10, nil)
		var q *testRQ
		if striding {
			q = e.newRQ(c, 4, 0, 2048, 8)
		} else {
			q = e.newRQ(c, 6, 2048, 0, 0)
			// One key over one region for all the WQEs' buffers, so that the scatter takes
			// the key's span.
			const lkey = 0x99
			iova, mem := e.alloc(64 * 2048)
			e.nic.cfg.Keys = &spanKeys{s: e.space, keys: map[uint32][2]uint64{lkey: {iova, 64 * 2048}},
				ro: map[uint32]bool{}, noSpan: map[uint32]bool{}}
			for i := range 64 {
				seg := q.ring[i*16:]
				prm.WQEData.LKey.Set(seg, lkey)
				prm.WQEData.Addr.Set(seg, iova+uint64(i*2048))
				q.mem[i] = mem[i*2048 : (i+1)*2048]
			}
		}
		q.post(1 << 6)
		e.direct(q)
		r := rand.New(rand.NewPCG(75, 76))
		for step := range 12 {
			small := step%3 == 2
			var frames [][]byte
			for range 1 + r.IntN(4) {
				n := streamMin + r.IntN(1400)
				if small {
					n = 20 + r.IntN(streamMin-20-42)
				}
				f := udpFrame([4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 5, 6, n-42, byte(r.Uint32()))
				frames = append(frames, f)
				e.nic.Receive(f)
			}
			before := e.nic.dmaw.fences
			e.nic.Step(16)
			got := c.poll()
			if len(got) != len(frames) {
				t.Fatalf("striding %v, step %d: %d CQEs for %d frames", striding, step, len(got), len(frames))
			}
			wantFences := uint64(btoi(canStream && !small))
			if d := e.nic.dmaw.fences - before; d != wantFences || e.nic.dmaw.streamed {
				t.Fatalf("striding %v, step %d (%d frames, small %v): %d fences, streamed write left %v; want %d, none",
					striding, step, len(frames), small, d, e.nic.dmaw.streamed, wantFences)
			}
			found := 0
			for _, f := range frames {
				for _, m := range q.mem {
					if bytes.Contains(m, f) {
						found++
						break
					}
				}
			}
			if found != len(frames) {
				t.Fatalf("striding %v, step %d: %d of %d frames in the RX buffers", striding, step, found, len(frames))
			}
		}
	}
}
