package datapath

import (
	"bytes"
	"encoding/binary"
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

// TestWriteSum holds dmaWriter.writeSum to copy and csum16 on random bytes of random lengths
// up to 9000 at every destination alignment within a cache line (the summing streamed copy
// takes destinations on a 32-byte boundary; the others are copied, then summed), with guard
// bytes around the destination.
func TestWriteSum(t *testing.T) {
	r := rand.New(rand.NewPCG(77, 78))
	const guard = 80
	mem := make([]byte, guard+64+9000+guard)
	want := make([]byte, len(mem))
	fused := 0
	for i := range 6000 {
		n := r.IntN(9001)
		if i < 600 {
			n = r.IntN(600)
		}
		src := make([]byte, n)
		for j := range src {
			src[j] = byte(r.Uint32())
		}
		switch i % 10 {
		case 0:
			clear(src)
		case 1:
			for j := range src {
				src[j] = 0xff
			}
		}
		for j := range mem {
			mem[j] = byte(r.Uint32())
		}
		copy(want, mem)
		at := guard + r.IntN(64)
		if i%2 == 0 {
			at = guard + 32*r.IntN(2) // aligned: the summing copy
		}
		copy(want[at:], src)
		var w dmaWriter
		k, sum := w.writeSum(mem[at:at+n], src)
		if k != n || sum != csum16(0, src) || !bytes.Equal(mem, want) {
			t.Fatalf("%d bytes to offset %d: %d written, sum %#x (want %#x), memory as copy would leave it %v",
				n, at-guard, k, sum, csum16(0, src), bytes.Equal(mem, want))
		}
		if w.streamed {
			fused++
		}
		w.publish()
	}
	if canStream && fused < 2000 {
		t.Fatalf("only %d streamed writes", fused)
	}
}

// TestRXSumFromWrite: the same random frames into two ports — one whose RX writes sum the
// frame as they copy it (buffers kept translated or reached through key spans: the CQE's
// checks take that sum), one whose writes go through Keys.Store (no sum: the checks sum the
// frame themselves) — give the same CQEs (checksum-ok flags, CQE checksum, every field) and
// the same buffer bytes. Frames: TCP, UDP, IPv4 with options, IPv6, VLAN-tagged, tunnelled,
// fragments and other protocols, with valid checksums or not, then corrupted (1-3 bytes),
// padded, cut short, or with datagram bytes summing to 0xffff or all zero; a striding RQ
// with and without the two-byte shift (the shifted frame's destination is not aligned for
// the summing copy), and a cyclic RQ whose WQEs scatter each frame over four segments of
// random lengths, odd ones too (pieces at odd offsets count byte-swapped).
func TestRXSumFromWrite(t *testing.T) {
	r := rand.New(rand.NewPCG(79, 80))
	var frames [][]byte
	var ambiguous int
	for range 1500 {
		s := randomSpec(r)
		s.payload = r.IntN(1400)
		f := mkFrame(s)
		for i := len(f) - s.payload; i < len(f); i++ {
			f[i] = byte(r.Uint32())
		}
		if r.IntN(5) != 0 {
			p := parse(f)
			fillChecksums(f, &p.outer, true, true)
		}
		switch r.IntN(7) {
		case 0:
			for k := 1 + r.IntN(3); k > 0; k-- {
				f[r.IntN(len(f))] ^= byte(1 + r.IntN(255))
			}
		case 1:
			for k := r.IntN(9); k > 0; k-- {
				f = append(f, byte(r.Uint32()))
			}
		case 2:
			f = f[:14+r.IntN(len(f)-14)]
		case 3:
			if h := parseL2(f, 0); h.l4 >= 0 && h.proto == protoUDP {
				end := ipPayloadEnd(f, &h)
				if d := f[h.l4:end]; len(d) >= 10 && len(d)%2 == 0 {
					if r.IntN(2) == 0 {
						clear(d)
					} else {
						d[8], d[9] = 0, 0
						binary.BigEndian.PutUint16(d[8:], uint16(0xffff-csum16(0, d)))
					}
					ambiguous++
				}
			}
		}
		frames = append(frames, f)
	}
	if ambiguous < 50 {
		t.Fatalf("%d datagrams summing to a zero: too few", ambiguous)
	}
	type result struct {
		cqes  [][64]byte
		mem   []byte
		fence uint64
	}
	for _, layout := range []string{"striding", "striding shifted", "cyclic"} {
		run := func(summing bool) result {
			e := newEnv(t)
			c := e.newCQ(12, nil)
			var res result
			var mems [][]byte
			var q *testRQ
			switch layout {
			case "cyclic":
				// 64-byte WQEs of four data segments over one region and key.
				const lkey, wqes = 0x99, 64
				iova, ring := e.alloc(64 * wqes)
				diova, dbr := e.alloc(8)
				biova, mem := e.alloc(wqes * 2048)
				rr := rand.New(rand.NewPCG(81, 82))
				for i := range wqes {
					a := uint64(i * 2048)
					left := 2048
					for sgi := range 4 {
						n := 1 + rr.IntN(left/2)
						if sgi == 3 {
							n = left
						}
						seg := ring[i*64+sgi*16:]
						prm.WQEData.ByteCount.Set(seg, uint64(n))
						prm.WQEData.LKey.Set(seg, lkey)
						prm.WQEData.Addr.Set(seg, biova+a)
						a += uint64(n)
						left -= n
					}
				}
				k := &spanKeys{s: e.space, keys: map[uint32][2]uint64{lkey: {biova, wqes * 2048}},
					ro: map[uint32]bool{}, noSpan: map[uint32]bool{lkey: !summing}}
				e.nic.cfg.Keys = k
				rqn := e.id()
				must(t, e.nic.CreateRQ(RQParams{RQN: rqn, CQN: c.cqn, WQ: WQParams{Type: WQCyclic, LogStride: 6, LogSize: 6,
					Buf: Contig{e.space, iova}, DBR: Contig{e.space, diova}}}))
				must(t, e.nic.ModifyRQ(rqn, RQModify{CurrState: StateReset, NextState: StateReady}))
				q = &testRQ{e: e, rqn: rqn, cq: c, dbr: dbr[:8]}
				mems = [][]byte{mem}
			default:
				if summing {
					e.nic.cfg.Keys = directKeys{keys{e.space}}
				}
				e.rqMod = func(p *RQParams) { p.WQ.TwoByteShift = layout == "striding shifted" }
				q = e.newRQ(c, 6, 0, 256, 16)
				mems = q.mem
			}
			e.direct(q)
			for i := 0; i < len(frames); i += 8 {
				q.post(8)
				for _, f := range frames[i:min(i+8, len(frames))] {
					e.nic.Receive(f)
				}
				e.nic.Step(64)
				res.cqes = append(res.cqes, c.poll()...)
			}
			for _, m := range mems {
				res.mem = append(res.mem, m...)
			}
			res.fence = e.nic.dmaw.fences
			return res
		}
		with, without := run(true), run(false)
		if len(with.cqes) != len(without.cqes) || len(with.cqes) < len(frames) {
			t.Fatalf("%s: %d CQEs with the write's sums, %d without (%d frames)", layout, len(with.cqes), len(without.cqes), len(frames))
		}
		for i := range with.cqes {
			if with.cqes[i] != without.cqes[i] {
				t.Fatalf("%s: CQE %d differs:\nwith the write's sum %x\nwithout             %x", layout, i, with.cqes[i], without.cqes[i])
			}
		}
		if !bytes.Equal(with.mem, without.mem) {
			t.Fatalf("%s: the RX buffers differ", layout)
		}
		if canStream && (with.fence == 0 || without.fence != 0) {
			t.Fatalf("%s: %d fences with streamed writes, %d through Store", layout, with.fence, without.fence)
		}
	}
}

// TestDMAWriterLine: a whole 64-byte line streams (and asks for a fence), fewer bytes are
// copied; the bytes after the first k stay as they were.
func TestDMAWriterLine(t *testing.T) {
	r := rand.New(rand.NewPCG(83, 84))
	for k := 0; k <= 64; k += 8 {
		var src [64]byte
		for i := range src {
			src[i] = byte(r.Uint32())
		}
		dst := make([]byte, 80)
		for i := range dst {
			dst[i] = byte(r.Uint32())
		}
		want := append([]byte(nil), dst...)
		copy(want[:k], src[:k])
		var w dmaWriter
		w.line(dst, &src, k)
		if !bytes.Equal(dst, want) || w.streamed != (canStream && k == 64) {
			t.Fatalf("line of %d bytes: bytes as copy leaves them %v, streamed %v", k, bytes.Equal(dst, want), w.streamed)
		}
	}
}
