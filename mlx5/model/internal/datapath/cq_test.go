package datapath

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// TestOwnerBitWrap runs a 4-entry CQ over six laps: each CQE becomes visible only with the
// owner bit of its lap (rdma-core cq.c get_sw_cqe: owner == (ci >> log_size) & 1), frames
// arrive in order, and nothing is visible before the device writes it.
func TestOwnerBitWrap(t *testing.T) {
	e := newEnv(t)
	c := e.newCQ(2, nil)
	r := e.newRQ(c, 2, 256, 0, 0)
	e.direct(r)
	if c.valid() {
		t.Fatal("fresh CQ shows a software-owned CQE")
	}
	seq := 0
	for lap := 0; lap < 6; lap++ {
		for k := 0; k < 4; k++ {
			r.post(1)
			e.nic.Receive(udpFrame([4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1000, 2000, 20+seq, byte(seq)))
			e.nic.Step(1)
			s := c.slot(c.ci)
			if owner, want := prm.CQEOwner(s[63]), uint8(c.ci>>2&1); owner != want {
				t.Fatalf("lap %d CQE %d: owner bit %d, want %d", lap, k, owner, want)
			}
			got := c.poll()
			if len(got) != 1 {
				t.Fatalf("lap %d CQE %d: %d CQEs", lap, k, len(got))
			}
			if n := prm.CQE64.ByteCnt.Get(got[0][:]); n != uint64(14+20+8+20+seq) {
				t.Fatalf("lap %d CQE %d: byte count %d", lap, k, n)
			}
			// The CQE reports the RQ's 16-bit WQE counter; the driver masks it to an index
			// (kernel en_rx.c mlx5_wq_cyc_ctr2ix).
			if wc := prm.CQE64.WQECounter.Get(got[0][:]); wc != uint64(seq) {
				t.Fatalf("lap %d CQE %d: wqe_counter %d, want %d", lap, k, wc, seq)
			}
			if c.valid() {
				t.Fatalf("lap %d: stale CQE looks valid after polling", lap)
			}
			seq++
		}
	}
	if st := e.nic.Counters(false); st.RXPackets != 24 || st.RXOutOfBuffer != 0 {
		t.Fatalf("counters %+v", st)
	}
}

// TestCQOverrun fills a CQ the driver does not poll: the CQE after the last free slot is an
// overrun, a CQ error event with syndrome 1 (kernel eq.c MLX5_EVENT_TYPE_CQ_ERROR), and the
// CQ writes nothing more.
func TestCQOverrun(t *testing.T) {
	e := newEnv(t)
	c := e.newCQ(2, nil)
	r := e.newRQ(c, 4, 256, 0, 0)
	r.post(16)
	e.direct(r)
	for i := 0; i < 6; i++ {
		e.nic.Receive(udpFrame([4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1, 2, 10, 0))
	}
	e.nic.Step(10)
	if len(e.ev.cqErr) != 1 || e.ev.cqErr[0] != c.cqn || e.ev.cqSynd[0] != 1 {
		t.Fatalf("CQ error events %v syndromes %v, want one for cq %#x with syndrome 1", e.ev.cqErr, e.ev.cqSynd, c.cqn)
	}
	if got := c.poll(); len(got) != 4 {
		t.Fatalf("%d CQEs, want the 4 that fit", len(got))
	}
	st, err := e.nic.QueryCQ(c.cqn)
	must(t, err)
	if !st.Overrun || st.Status != 9 {
		t.Fatalf("QUERY_CQ reports overrun %v status %#x, want the overflow status 9 (MLX5_CQC_STATUS_CQ_OVERFLOW)", st.Overrun, st.Status)
	}
}

// TestCQArm: an armed CQ raises one completion event for the next CQE and then needs
// re-arming (kernel cq.h mlx5_cq_arm).
func TestCQArm(t *testing.T) {
	e := newEnv(t)
	c := e.newCQ(4, nil)
	r := e.newRQ(c, 4, 256, 0, 0)
	r.post(16)
	e.direct(r)
	arm := func() {
		var db [8]byte
		db[0], db[1], db[2], db[3] = 0, byte(c.ci>>16), byte(c.ci>>8), byte(c.ci)
		db[4], db[5], db[6], db[7] = 0, byte(c.cqn>>16), byte(c.cqn>>8), byte(c.cqn)
		e.nic.UARWrite(0, prm.UARCQDoorbell, db[:])
	}
	arm()
	for i := 0; i < 3; i++ {
		e.nic.Receive(udpFrame([4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1, 2, 10, 0))
	}
	e.nic.Step(10)
	if len(e.ev.comp) != 1 {
		t.Fatalf("%d completion events, want 1", len(e.ev.comp))
	}
	c.poll()
	arm()
	e.nic.Receive(udpFrame([4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1, 2, 10, 0))
	e.nic.Step(10)
	if len(e.ev.comp) != 2 {
		t.Fatalf("%d completion events after re-arming, want 2", len(e.ev.comp))
	}
	e.nic.UARWrite(0, prm.UAREQDoorbellArm, []byte{5, 0, 0, 9})
	if len(e.ev.eqDoors) != 1 || e.ev.eqDoors[0] != 5 {
		t.Fatalf("EQ doorbell not forwarded: %v", e.ev.eqDoors)
	}
}

// compressionCase runs the same frames through two identical ports, one CQ compressing,
// and checks that decompressing gives back exactly the uncompressed CQEs (bytes 0–61 and
// the opcode), and that the compressing CQ used compressed CQEs at all.
func compressionCase(t *testing.T, layout CompLayout, f MiniFormat, striding bool, frames [][]byte, flowTag uint32, wantCompressed bool) {
	run := func(compress bool) ([][64]byte, int) {
		e := newEnv(t)
		e.clock.Set(123456789)
		c := e.newCQ(6, func(p *CQParams) {
			p.Compress, p.Layout, p.MiniFormat = compress, layout, f
		})
		var r *testRQ
		if striding {
			r = e.newRQ(c, 4, 0, 64, 16)
			c.strideSize = 64
		} else {
			r = e.newRQ(c, 6, 2048, 0, 0)
		}
		r.post(1 << r.p.WQ.LogSize)
		tirn := e.id()
		must(t, e.nic.CreateTIR(TIRParams{TIRN: tirn, InlineRQ: r.rqn}))
		e.catchAll(Dest{Type: DestTIR, ID: tirn}, flowTag)
		for _, fr := range frames {
			e.nic.Receive(fr)
		}
		e.nic.Step(len(frames))
		compressed := 0
		for i := uint32(0); i < 64; i++ {
			s := c.slot(i)
			if prm.CQEOpcode(s[63]) != prm.CQEOpInvalid && prm.CQEFormat(s[63]) == prm.CQEFormatCompressed {
				compressed++
			}
		}
		return c.poll(), compressed
	}
	plain, _ := run(false)
	zipped, sessions := run(true)
	if (sessions > 0) != wantCompressed {
		t.Fatalf("%d compressed CQEs written, want some: %v", sessions, wantCompressed)
	}
	if len(plain) != len(zipped) {
		t.Fatalf("%d CQEs uncompressed, %d decompressed", len(plain), len(zipped))
	}
	for i := range plain {
		a, b := plain[i], zipped[i]
		if !bytes.Equal(a[:62], b[:62]) || a[63]>>4 != b[63]>>4 {
			t.Fatalf("CQE %d differs:\n plain %x\n unzip %x", i, a[:], b[:])
		}
	}
}

// TestCompressionSessions covers both layouts with every mini-CQE format, on cyclic and
// striding RQs, with runs longer than one mini-CQE array, runs broken by a frame of another
// flow, and (striding) filler CQEs between runs. The model compresses only CQEs whose fields
// outside the mini-CQE are equal, so the frames of a run keep the L3 checksum sum constant
// (source port up, destination port down by the same amount) where the format does not
// carry the checksum.
func TestCompressionSessions(t *testing.T) {
	varied := func(n, base int) [][]byte {
		var fr [][]byte
		for i := 0; i < n; i++ {
			sport := uint16(1000 + i)
			if i%13 == 12 {
				sport = 7 // another flow: a different checksum breaks the run
			}
			fr = append(fr, udpFrame([4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, sport, uint16(3000-i), base, 0x55))
		}
		return fr
	}
	for _, layout := range []CompLayout{LayoutBasic, LayoutEnhanced} {
		for _, c := range []struct {
			f        MiniFormat
			striding bool
		}{{MiniHash, false}, {MiniCsum, false}, {MiniHash, true}, {MiniCsumStride, true}, {MiniFlowTag, true}, {MiniCsum, true}} {
			t.Run(fmt.Sprintf("layout%d/format%d/striding=%v", layout, c.f, c.striding), func(t *testing.T) {
				// 150-byte frames take 3 strides of 64 bytes: five per 16-stride WQE and a
				// filler for the last stride.
				fr := varied(40, 150-42)
				if c.striding {
					fr = varied(45, 150-42) // 45 frames and 8 fillers fit the 64-entry CQ
				}
				// In the enhanced layout a mini-CQE without a stride index stands for the
				// next WQE counter (DPDK widx = wqe_idx + ai), which a striding RQ's
				// multi-stride packets never are: such CQEs stay uncompressed.
				want := !(layout == LayoutEnhanced && c.striding && (c.f == MiniHash || c.f == MiniCsum))
				compressionCase(t, layout, c.f, c.striding, fr, 0xabcdef, want)
			})
		}
	}
}

// TestCompressionStopsAtRingEnd: a run of compressible CQEs that reaches the CQ ring's last
// slot ends its session there; the rest starts a new session at the ring's first slot. The
// second batch of six CQEs starts at slot 6 of an 8-slot CQ, so its first session holds at
// most two; the driver still gets all six, in order, with their byte counts.
func TestCompressionStopsAtRingEnd(t *testing.T) {
	e := newEnv(t)
	c := e.newCQ(3, func(p *CQParams) { p.Compress, p.MiniFormat = true, MiniHash })
	r := e.newRQ(c, 4, 2048, 0, 0)
	r.post(16)
	e.direct(r)
	f := udpFrame([4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1, 2, 100, 7)
	for round := 0; round < 2; round++ {
		for i := 0; i < 6; i++ {
			e.nic.Receive(f)
		}
		for e.nic.Step(64) > 0 {
		}
		if round == 1 {
			title := c.slot(6)
			if prm.CQEFormat(title[63]) == prm.CQEFormatCompressed {
				if n := prm.CQE64.ByteCnt.Get(title); n > 2 {
					t.Fatalf("the session at slot 6 of 8 holds %d CQEs: it wraps the ring", n)
				}
			}
		}
		got := c.poll()
		if len(got) != 6 {
			t.Fatalf("round %d: %d CQEs, want 6", round, len(got))
		}
		for i, q := range got {
			if n := prm.CQE64.ByteCnt.Get(q[:]); n != uint64(len(f)) {
				t.Fatalf("round %d CQE %d: byte count %d, want %d", round, i, n, len(f))
			}
		}
	}
}
