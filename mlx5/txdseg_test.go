package mlx5

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// TestPutDSegs checks putDSegs against the data segments written field by field (sendMPW's
// loop before it, still its loop for a WQE at the ring's end) on random packets, fresh each
// run (the seed is logged): the same 16 bytes per packet, the same byte sum, and on a length
// outside 14 to maxFrame the index of the first such packet with the segments before it
// written.
func TestPutDSegs(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 17))
	bad := 0
	for iter := range 20000 {
		k := 1 + r.IntN(mpwMax)
		offs := make([]uint64, k)
		lens := make([]uint32, k)
		for i := range offs {
			offs[i] = r.Uint64N(1 << 40)
			lens[i] = 14 + r.Uint32N(maxFrame-13)
			if r.IntN(64) == 0 {
				lens[i] = []uint32{0, 13, maxFrame + 1, 1 << 31, ^uint32(0)}[r.IntN(5)]
			}
		}
		base, lkey := r.Uint64N(1<<46), r.Uint32()
		want := make([]byte, mpwMax*16)
		wantBad, wantBytes := -1, 0
		for i := range offs {
			if lens[i] < 14 || lens[i] > maxFrame {
				wantBad = i
				break
			}
			wantBytes += int(lens[i])
			d := want[16*i:]
			binary.BigEndian.PutUint32(d[dsegByteCount:], lens[i])
			binary.BigEndian.PutUint32(d[dsegLKey:], lkey)
			binary.BigEndian.PutUint64(d[dsegAddr:], base+offs[i])
		}
		var got [mpwMax * 16]byte
		gotBytes, gotBad := putDSegs(&got, offs, lens, base, uint64(lkey>>24|lkey>>8&0xff00|lkey<<8&0xff0000|lkey<<24)<<32)
		n := k
		if wantBad >= 0 {
			n = wantBad
			bad++
		}
		if gotBad != wantBad || gotBytes != wantBytes || !bytes.Equal(got[:16*n], want[:16*n]) {
			t.Fatalf("iteration %d (%d packets, lengths %v): putDSegs %d bytes, bad %d, segments % x; field by field %d bytes, bad %d, % x",
				iter, k, lens, gotBytes, gotBad, got[:16*n], wantBytes, wantBad, want[:16*n])
		}
	}
	if bad < 100 {
		t.Fatalf("only %d bursts with a bad length", bad)
	}
}

// TestTXStandIn runs BenchmarkTX's loop with its stand-in device (sqWriter) over enough
// bursts of random lengths to wrap the SQ several times (so WQEs at the ring's end take the
// field-by-field loop and the others putDSegs): every data segment the stand-in reads names
// the packet's buffer and length in order, the stand-in's CQEs complete every burst with the
// queue's packet and byte counts, and a WQE with a wrong key is refused by the stand-in.
func TestTXStandIn(t *testing.T) {
	_, tq, tx, held := openTXBench(t)
	sw := newSQWriter(tx)
	sw.seen = [][2]uint64{}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 3))
	var want [][2]uint64
	total, bytes := uint64(0), uint64(0)
	for round := range 120 {
		bursts := 1 + r.IntN(60)
		for range bursts {
			n := 1 + r.IntN(64)
			bu, err := tq.NewBurst(n)
			if err != nil {
				t.Fatal(err)
			}
			for j := range n {
				l := 14 + r.IntN(2048-13)
				if err := bu.SetPacketLengths(j, l); err != nil {
					t.Fatal(err)
				}
				want = append(want, [2]uint64{uint64(bu.SegmentAddr(0, j)), uint64(l)})
				bytes += uint64(l)
			}
			if err := tx.send(bu); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			total += uint64(n)
		}
		held.n = 0
		if err := sw.run(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		for tries := 0; tq.Stats.Packets.Load() < total && tries < 1000; tries++ {
			tx.complete()
		}
		if s := tq.Stats.Snapshot(); s.Packets != total || s.Bytes != bytes {
			t.Fatalf("round %d: %d packets, %d bytes completed; sent %d, %d", round, s.Packets, s.Bytes, total, bytes)
		}
	}
	if tx.pc < 3<<tx.sqLog {
		t.Fatalf("the SQ did not wrap three times (%d basic blocks of %d posted)", tx.pc, 1<<tx.sqLog)
	}
	if !slices.Equal(sw.seen, want) {
		t.Fatalf("the stand-in read %d data segments, %d packets sent; first difference at %d", len(sw.seen), len(want), firstDiff(sw.seen, want))
	}
	// A wrong key is refused.
	bu, err := tq.NewBurst(1)
	if err != nil {
		t.Fatal(err)
	}
	bu.SetPacketLengths(0, 60)
	if err := tx.send(bu); err != nil {
		t.Fatal(err)
	}
	units := uint32(prm.SendWQEBB/16) << tx.sqLog
	d := tx.ring[((sw.pc*4+2)&(units-1))*16:]
	d[dsegLKey] ^= 0xff
	if err := sw.run(); err == nil || !strings.Contains(err.Error(), "key") {
		t.Fatalf("a data segment with a wrong key: %v", err)
	}
}

func firstDiff(a, b [][2]uint64) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestSendReapsCompletions: a send first takes the completions the device has written, so the
// bursts they complete go back to their region and into the queue's counters at the next send,
// not only when the SQ runs out of room or a worker polls: a sender's buffers then cycle through
// a few bursts' worth of memory that is still in cache instead of the whole region (the
// two-port model run's TX gather and header writes missed on every packet before). Random
// burst sizes, the stand-in device completing every WQE between sends.
func TestSendReapsCompletions(t *testing.T) {
	_, tq, tx, held := openTXBench(t)
	sw := newSQWriter(tx)
	reg := tq.Regions[0]
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 31))
	initial := reg.Available()
	sent := uint64(0)
	for round := range 200 {
		n := 1 + r.IntN(64)
		bu, err := tq.NewBurst(n)
		if err != nil {
			t.Fatal(err)
		}
		for j := range n {
			if err := bu.SetPacketLengths(j, 60+r.IntN(1400)); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.send(bu); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if got := tq.Stats.Packets.Load(); got != sent {
			t.Fatalf("round %d: %d packets counted after the send, want the %d completed before it", round, got, sent)
		}
		if got := reg.Available(); got != initial-n {
			t.Fatalf("round %d: %d buffers available after the send, want %d (only this burst's %d out)", round, got, initial-n, n)
		}
		sent += uint64(n)
		held.n = 0
		if err := sw.run(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
}
