package datapath

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/daqiri-go/daqiri/mlx5/model/internal/dma"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// TestStridingRQ checks stride accounting: a packet takes ceil(len/stride) strides of the
// current WQE; one that does not fit in the strides left gets a filler CQE for them and
// goes to the next WQE; a WQE filled exactly moves on without a filler; CQEs carry the WQE
// index (wqe_id), first stride (wqe_counter) and stride count (byte_cnt bits 29:16) (DPDK
// mlx5_rx.c mlx5_rx_burst_mprq, kernel en_rx.c mlx5e_handle_rx_cqe_mpwrq).
func TestStridingRQ(t *testing.T) {
	e := newEnv(t)
	c := e.newCQ(6, nil)
	r := e.newRQ(c, 2, 0, 64, 16)
	r.post(3)
	e.direct(r)
	type want struct {
		filler           bool
		wqe, stride, cnt int
		length           int
	}
	frame := func(n int) []byte {
		return udpFrame([4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 5, 6, n-42, byte(n))
	}
	sizes := []int{100, 300, 500, 200}
	exp := []want{{false, 0, 0, 2, 100}, {false, 0, 2, 5, 300}, {false, 0, 7, 8, 500}, {true, 0, 15, 1, 0}, {false, 1, 0, 4, 200}}
	for i := 0; i < 12; i++ { // fill WQE 1 exactly: no filler, the next frame starts WQE 2
		sizes = append(sizes, 64)
		exp = append(exp, want{false, 1, 4 + i, 1, 64})
	}
	sizes = append(sizes, 1000)
	exp = append(exp, want{false, 2, 0, 16, 1000})
	var frames [][]byte
	for _, n := range sizes {
		f := frame(n)
		frames = append(frames, f)
		e.nic.Receive(f)
	}
	e.nic.Step(100)
	got := c.poll()
	if len(got) != len(exp) {
		t.Fatalf("%d CQEs, want %d", len(got), len(exp))
	}
	fi := 0
	for i, g := range got {
		bc := uint32(prm.CQE64.ByteCnt.Get(g[:]))
		w := exp[i]
		if filler := bc&prm.MPRQByteCntFiller != 0; filler != w.filler ||
			int(prm.CQE64.WQEID.Get(g[:])) != w.wqe || int(prm.CQE64.WQECounter.Get(g[:])) != w.stride ||
			int(bc&prm.MPRQByteCntStridesMask>>prm.MPRQByteCntStrideShift) != w.cnt ||
			(!w.filler && int(bc&prm.MPRQByteCntLenMask) != w.length) {
			t.Fatalf("CQE %d: filler %v wqe %d stride %d strides %d len %d; want %+v", i, bc&prm.MPRQByteCntFiller != 0,
				prm.CQE64.WQEID.Get(g[:]), prm.CQE64.WQECounter.Get(g[:]), bc&prm.MPRQByteCntStridesMask>>16, bc&0xffff, w)
		}
		if w.filler {
			continue
		}
		at := r.mem[w.wqe][w.stride*64:]
		if !bytes.Equal(at[:w.length], frames[fi]) {
			t.Fatalf("frame %d not at WQE %d stride %d", fi, w.wqe, w.stride)
		}
		fi++
	}
	// WQE 2 is full, and no fourth WQE is posted: the next frame is out of buffer.
	e.nic.Receive(frame(100))
	e.nic.Step(10)
	if got := c.poll(); len(got) != 0 {
		t.Fatalf("%d CQEs without a posted WQE", len(got))
	}
	st := e.nic.Counters(false)
	if st.RXOutOfBuffer != 1 || st.RXPackets != uint64(len(frames)) {
		t.Fatalf("counters %+v, want 1 out-of-buffer and %d packets", st, len(frames))
	}
	q, err := e.nic.QueryRQ(r.rqn)
	must(t, err)
	if q.Counter != 3 {
		t.Fatalf("RQ WQE counter %d, want 3", q.Counter)
	}
	// Posting one more WQE lets the next frame in.
	r.post(1)
	e.nic.Receive(frame(100))
	e.nic.Step(10)
	if got := c.poll(); len(got) != 1 || prm.CQE64.WQEID.Get(got[0][:]) != 3 {
		t.Fatalf("after posting: %d CQEs", len(got))
	}
}

// TestCyclicScatter checks header-data split: a WQE of two data segments (128 bytes, then
// the rest) gets the frame's head in the first buffer and the remainder in the second; a
// frame larger than both is a local length error CQE (DPDK mlx5_rx_err_handle). With
// padding, the entries' byte counts carry bit 31 as the kernel's mlx5e writes them
// (MLX5_HW_START_PADDING): the counts are the same.
func TestCyclicScatter(t *testing.T) {
	for _, pad := range []uint64{0, prm.HWStartPadding} {
		t.Run(fmt.Sprintf("padding=%#x", pad), func(t *testing.T) { testCyclicScatter(t, pad) })
	}
}

func testCyclicScatter(t *testing.T, pad uint64) {
	e := newEnv(t)
	c := e.newCQ(4, nil)
	iova, ring := e.alloc(32 << 2)
	diova, dbr := e.alloc(8)
	hdr, hmem := e.alloc(128)
	pay, pmem := e.alloc(1024)
	for i := 0; i < 4; i++ {
		w := ring[i*32:]
		prm.WQEData.ByteCount.Set(w, 128|pad)
		prm.WQEData.LKey.Set(w, testLKey)
		prm.WQEData.Addr.Set(w, hdr)
		prm.WQEData.ByteCount.Set(w[16:], 1024|pad)
		prm.WQEData.LKey.Set(w[16:], testLKey)
		prm.WQEData.Addr.Set(w[16:], pay)
	}
	rqn := e.id()
	must(t, e.nic.CreateRQ(RQParams{RQN: rqn, CQN: c.cqn, WQ: WQParams{Type: WQCyclic, LogStride: 5, LogSize: 2, Buf: Contig{e.space, iova}, DBR: Contig{e.space, diova}}}))
	must(t, e.nic.ModifyRQ(rqn, RQModify{CurrState: StateReset, NextState: StateReady}))
	dbr[3] = 4
	tirn := e.id()
	must(t, e.nic.CreateTIR(TIRParams{TIRN: tirn, InlineRQ: rqn}))
	e.catchAll(Dest{Type: DestTIR, ID: tirn}, 77)
	f := udpFrame([4]byte{1, 2, 3, 4}, [4]byte{5, 6, 7, 8}, 9, 10, 400, 3)
	e.nic.Receive(f)
	e.nic.Step(10)
	if !bytes.Equal(hmem[:128], f[:128]) || !bytes.Equal(pmem[:len(f)-128], f[128:]) {
		t.Fatal("frame not split 128 / rest over the two segments")
	}
	e.nic.Receive(udpFrame([4]byte{1, 2, 3, 4}, [4]byte{5, 6, 7, 8}, 9, 10, 1200, 3))
	e.nic.Step(10)
	got := c.poll()
	if len(got) != 2 {
		t.Fatalf("%d CQEs", len(got))
	}
	g := got[0][:]
	if prm.CQE64.ByteCnt.Get(g) != uint64(len(f)) || prm.CQE64.SopDropQPN.Get(g)&0xffffff != 77 ||
		prm.CQE64.HdsIPExt.Get(g) != prm.CQEL2OK|prm.CQEL3OK|prm.CQEL4OK || g[29]>>2&3 != prm.CQEL3IPv4 || g[29]>>4&7 != prm.CQEL4UDP {
		t.Fatalf("CQE %x", g)
	}
	if op := prm.CQEOpcode(got[1][63]); op != prm.CQEOpRespErr || prm.ErrCQE.Syndrome.Get(got[1][:]) != prm.CQESyndLocalLength {
		t.Fatalf("oversized frame: opcode %d syndrome %d", op, prm.ErrCQE.Syndrome.Get(got[1][:]))
	}
}

// TestLinkedListOrder: a linked-list striding RQ is consumed along next_wqe_index, which a
// driver may relink out of order (kernel wq.c mlx5_wq_ll), and CQEs name WQEs by index.
func TestLinkedListOrder(t *testing.T) {
	e := newEnv(t)
	c := e.newCQ(5, nil)
	r := e.newRQ(c, 2, 0, 64, 16)
	next := []uint16{2, 3, 1, 0} // 0 → 2 → 1 → 3 → 0
	for i, n := range next {
		prm.WQESrqNext.NextWQEIndex.Set(r.ring[i*32:], uint64(n))
	}
	r.post(4)
	e.direct(r)
	for i := 0; i < 4; i++ { // one full-WQE frame each
		e.nic.Receive(udpFrame([4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1, 2, 1024-42, byte(i)))
	}
	e.nic.Step(10)
	var ids []uint64
	for _, g := range c.poll() {
		ids = append(ids, prm.CQE64.WQEID.Get(g[:]))
	}
	if want := []uint64{0, 2, 1, 3}; fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Fatalf("WQEs used in order %v, want %v", ids, want)
	}
}

// TestQCounterOutOfBuffer: drops for want of a WQE count in the Q counter set the RQ names
// (rqc counter_set_id) and in the port's total; reading with clear zeroes the set.
func TestQCounterOutOfBuffer(t *testing.T) {
	e := newEnv(t)
	c := e.newCQ(3, nil)
	e.rqMod = func(p *RQParams) { p.Counter = 5 }
	r := e.newRQ(c, 3, 256, 0, 0)
	r.post(1)
	e.direct(r)
	for i := 0; i < 3; i++ {
		e.nic.Receive(udpFrame([4]byte{1, 1, 1, 1}, [4]byte{2, 2, 2, 2}, 1, 2, 10, 0))
	}
	e.nic.Step(10)
	if v := e.nic.QCounterOutOfBuffer(5, true); v != 2 {
		t.Fatalf("set 5 out_of_buffer %d, want 2", v)
	}
	if v := e.nic.QCounterOutOfBuffer(5, false); v != 0 {
		t.Fatalf("after clear: %d", v)
	}
	if c := e.nic.Counters(false); c.RXOutOfBuffer != 2 || c.RXPackets != 1 {
		t.Fatalf("counters %+v", c)
	}
}

// TestChecksumBits: a frame with a bad UDP checksum gets CQE_L3_OK without CQE_L4_OK, one
// with a bad IPv4 header checksum neither (kernel en_rx.c mlx5e_handle_csum reads them).
func TestChecksumBits(t *testing.T) {
	e := newEnv(t)
	c := e.newCQ(3, nil)
	r := e.newRQ(c, 3, 256, 0, 0)
	r.post(8)
	e.direct(r)
	badL4 := udpFrame([4]byte{1, 1, 1, 1}, [4]byte{2, 2, 2, 2}, 1, 2, 10, 0)
	badL4[40] ^= 0xff
	badL3 := udpFrame([4]byte{1, 1, 1, 1}, [4]byte{2, 2, 2, 2}, 1, 2, 10, 0)
	badL3[24] ^= 0xff
	e.nic.Receive(badL4)
	e.nic.Receive(badL3)
	e.nic.Step(4)
	got := c.poll()
	if len(got) != 2 {
		t.Fatalf("%d CQEs", len(got))
	}
	if ok := prm.CQE64.HdsIPExt.Get(got[0][:]); ok != prm.CQEL2OK|prm.CQEL3OK {
		t.Fatalf("bad UDP checksum: bits %#x", ok)
	}
	if ok := prm.CQE64.HdsIPExt.Get(got[1][:]); ok != prm.CQEL2OK {
		t.Fatalf("bad IP checksum: bits %#x", ok)
	}
}

// directKeys is the test keys as a DirectTranslator: the striding RQ then keeps its WQE
// buffers translated (rqBuf).
type directKeys struct{ keys }

func (k directKeys) Gen() uint64 { return k.s.Gen() }

func (k directKeys) Direct(lkey uint32, addr uint64, n int, perm dma.Perm) ([]byte, error) {
	return k.Translate(lkey, addr, n, perm)
}

// TestStridingBufCache runs the same random frames into a striding RQ (with and without the
// two-byte shift) through keys that translate per scatter and through a DirectTranslator
// (the WQE buffers kept translated): the CQEs and every byte of the buffers come out the
// same. With the cache, a buffer remapped to other memory at the same address (a DMA space
// change) and a WQE reposted with another buffer take the next frames where they now are,
// and a WQE whose buffer does not translate as a whole (it runs into unmapped space) still
// takes the frames that fit its mapped part, as the per-scatter path does.
func TestStridingBufCache(t *testing.T) {
	for _, shift := range []bool{false, true} {
		r := rand.New(rand.NewPCG(31, 11))
		var frames [][]byte
		for range 300 {
			frames = append(frames, udpFrame([4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 5, 6, 20+r.IntN(900), byte(r.Uint32())))
		}
		type run struct {
			cqes [][64]byte
			mem  [][]byte
		}
		do := func(direct bool) run {
			e := newEnv(t)
			if direct {
				e.nic = New(Config{Space: e.space, Keys: directKeys{keys{e.space}}, Events: e.ev, Clock: e.clock})
			}
			e.rqMod = func(p *RQParams) { p.WQ.TwoByteShift = shift }
			c := e.newCQ(10, nil)
			q := e.newRQ(c, 3, 0, 64, 32)
			e.direct(q)
			// WQE 5's buffer runs 4 KiB past its 4 KiB mapping: not translatable whole.
			prm.WQEData.ByteCount.Set(q.ring[5*32+16:], uint64(64*32+4096))
			var out run
			for i, f := range frames {
				if i%40 == 0 {
					q.post(8)
				}
				if direct && i == 100 {
					// Remap WQE 2's buffer: new memory at the same address.
					must(t, e.space.Unmap(q.bufs[2]))
					fresh := make([]byte, 4096)
					must(t, e.space.Map(q.bufs[2], fresh, dma.Read|dma.Write))
					q.mem[2] = fresh[:len(q.mem[2])]
				}
				e.nic.Receive(f)
				e.nic.Step(8)
				out.cqes = append(out.cqes, c.poll()...)
			}
			for _, m := range q.mem {
				out.mem = append(out.mem, append([]byte(nil), m...))
			}
			return out
		}
		plain, cached := do(false), do(true)
		if len(plain.cqes) != len(cached.cqes) || len(plain.cqes) < len(frames)/2 {
			t.Fatalf("shift %v: %d CQEs per scatter, %d with the cache (%d frames)", shift, len(plain.cqes), len(cached.cqes), len(frames))
		}
		for i := range plain.cqes {
			if plain.cqes[i] != cached.cqes[i] {
				t.Fatalf("shift %v: CQE %d differs:\n%x\n%x", shift, i, plain.cqes[i], cached.cqes[i])
			}
		}
		for i := range plain.mem {
			if i == 2 {
				continue // remapped in the cached run only: checked below
			}
			if !bytes.Equal(plain.mem[i], cached.mem[i]) {
				t.Fatalf("shift %v: WQE %d's buffer differs", shift, i)
			}
		}
		// The remapped buffer holds the frames after the remap, like the plain run's
		// buffer, from the first stride written after it on.
		if bytes.Equal(cached.mem[2], make([]byte, len(cached.mem[2]))) {
			t.Fatalf("shift %v: nothing reached WQE 2's buffer after the remap", shift)
		}
	}

	// A WQE reposted with another buffer: the next frames land in the new one.
	e := newEnv(t)
	e.nic = New(Config{Space: e.space, Keys: directKeys{keys{e.space}}, Events: e.ev, Clock: e.clock})
	c := e.newCQ(6, nil)
	q := e.newRQ(c, 1, 0, 64, 32)
	e.direct(q)
	// The buffer the WQE is reposted with is mapped before any frame: no DMA space change
	// between, so only the data segment's new address can tell the cache.
	iova, mem := e.alloc(64 * 32)
	q.post(1)
	f := udpFrame([4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 5, 6, 100, 9)
	e.nic.Receive(f)
	e.nic.Step(8)
	if !bytes.Equal(q.mem[0][:len(f)], f) {
		t.Fatal("first frame not in WQE 0's buffer")
	}
	// Fill WQE 0 so the RQ moves on, then repost it (index 2 = slot 0) with a new buffer.
	prm.WQEData.Addr.Set(q.ring[16:], iova)
	for range 31 {
		e.nic.Receive(udpFrame([4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 5, 6, 10, 1))
	}
	q.post(2)
	e.nic.Step(64)
	g := udpFrame([4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 5, 6, 200, 3)
	for range 33 { // WQE 1's 32 strides, then the reposted slot 0
		e.nic.Receive(g)
	}
	e.nic.Step(64)
	if !bytes.Equal(mem[:len(g)], g) {
		t.Fatal("after the repost, the frame did not land in the WQE's new buffer")
	}
	if bytes.Equal(q.mem[0][:len(g)], g) {
		t.Fatal("after the repost, the frame landed in the WQE's old buffer")
	}
}
