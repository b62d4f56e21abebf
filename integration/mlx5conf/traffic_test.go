package mlx5conf

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/integration/vm/guest"
	"github.com/daqiri-go/daqiri/mlx5/model/modelch"
)

// Part (c)'s traffic: with the model's port cabled to itself (the host starts the server
// with -loopback), the engine sends frames on its TX queue over the DevX transport and
// receives them on its RX queue, through the kernel's steering root (mlx5_ib's bypass
// table) into the engine's own table.
const (
	stageTrafficSent     = "engine traffic sent"
	stageTrafficReceived = "engine traffic received"
)

// Bounds of the traffic run. The guest runs on TCG with one CPU: a few hundred frames,
// each way bounded in time.
const (
	trafficFrames  = 256
	trafficBurst   = 32
	trafficTimeout = 60 * time.Second
	trafficMinLen  = 60
	trafficMaxLen  = 1500
	// stampBound is how far a received frame's RxTimestamp may lie outside the guest's
	// CLOCK_REALTIME read before the first send and after its receive. The device's clocks
	// run on the host (the model's server), set and scaled by the guest's mlx5_core: MTUTC
	// from CLOCK_REALTIME for real-time stamps, the clock information page for free-running
	// ones; the bound leaves room for the TCG guest's clock against the host's. At 38f58a0
	// the engine put DevX real-time stamps ~56 years late.
	stampBound = 500 * time.Millisecond
)

// trafficMagic marks the engine's test frames (after the UDP header) so that frames the
// guest's own stack sends on the looped wire (the mlx5e netdev's IPv6 neighbour discovery,
// which the engine's match-all rule also takes) are told apart and only counted.
var trafficMagic = [4]byte{'D', 'Q', 'R', 'T'}

// trafficFrame is frame i of the run: an IPv4/UDP frame to dst with the magic, the
// sequence number i, and random bytes up to length n.
func trafficFrame(r *rand.Rand, dst net.HardwareAddr, i, n int) []byte {
	f := make([]byte, n)
	copy(f, dst)
	copy(f[6:], []byte{0x02, 0xda, 0x51, 0, 0, 0x02, 0x08, 0x00})
	ip := f[14:]
	ip[0], ip[8], ip[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(ip[2:], uint16(n-14))
	copy(ip[12:], []byte{10, 0, 0, 1, 10, 0, 0, 2})
	binary.BigEndian.PutUint16(ip[10:], ipv4Checksum(ip[:20]))
	u := ip[20:]
	binary.BigEndian.PutUint16(u[0:], 4000)
	binary.BigEndian.PutUint16(u[2:], 4001)
	binary.BigEndian.PutUint16(u[4:], uint16(n-34))
	copy(u[8:], trafficMagic[:])
	binary.BigEndian.PutUint32(u[12:], uint32(i))
	for j := 50; j < n; j++ {
		f[j] = byte(r.Uint32())
	}
	return f
}

// mustMAC parses one of the constant addresses.
func mustMAC(s string) net.HardwareAddr {
	a, err := net.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return a
}

func ipv4Checksum(h []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(h); i += 2 {
		s += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

// trafficSeq returns the sequence number of one of the run's frames, false for any other.
func trafficSeq(p []byte) (int, bool) {
	if len(p) < 50 || !bytes.Equal(p[42:46], trafficMagic[:]) {
		return 0, false
	}
	return int(binary.BigEndian.Uint32(p[46:])), true
}

// trafficResult is what one run moved.
type trafficResult struct {
	sent, received, foreign int
	txDropped, rxDropped    uint64
	elapsed                 time.Duration
	// stampSlack is the smallest distance of an RxTimestamp inside its window (negative:
	// outside it by that much).
	stampSlack time.Duration
}

// moveTraffic sends frames to dst (random lengths and payloads from seed) on port txPort
// queue 0 and takes them from port rxPort queue 0, checking each received frame against the one
// its sequence number names. It returns what moved, or an error naming the first frame
// that arrived wrong, twice, or the bound that ran out.
func moveTraffic(sess *daqiri.Session, txPort, rxPort int, dst net.HardwareAddr, seed uint64) (trafficResult, error) {
	var res trafficResult
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	frames := make([][]byte, trafficFrames)
	for i := range frames {
		frames[i] = trafficFrame(r, dst, i, trafficMinLen+r.IntN(trafficMaxLen-trafficMinLen+1))
	}
	seen := make([]bool, len(frames))
	start := time.Now()
	deadline := start.Add(trafficTimeout)
	// receive takes what is ready; false with an error for a frame that is wrong.
	receive := func() error {
		for k := 0; k < 64; k++ {
			b, err := sess.RxBurst(rxPort, 0)
			if errors.Is(err, daqiri.ErrNotReady) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("RxBurst: %w", err)
			}
			for i := 0; i < b.Len(); i++ {
				var p []byte
				for s := 0; s < b.NumSegments(); s++ {
					p = append(p, b.Segment(s, i)...)
				}
				seq, ok := trafficSeq(p)
				switch {
				case !ok:
					res.foreign++
					continue
				case seq >= len(frames):
					b.Free()
					return fmt.Errorf("received a frame with sequence number %d; %d were sent", seq, len(frames))
				case seen[seq]:
					b.Free()
					return fmt.Errorf("frame %d received twice", seq)
				case !bytes.Equal(p, frames[seq]):
					b.Free()
					return fmt.Errorf("frame %d: received %d bytes that differ from the %d sent (first difference at byte %d)", seq, len(p), len(frames[seq]), firstDiff(p, frames[seq]))
				}
				ts, err := b.RxTimestamp(i)
				if err != nil {
					b.Free()
					return fmt.Errorf("frame %d: no RX timestamp: %w", seq, err)
				}
				lo, hi := start.UnixNano(), time.Now().UnixNano()
				slack := time.Duration(min(ts-lo, hi-ts))
				if res.received == 0 || slack < res.stampSlack {
					res.stampSlack = slack
				}
				if ts < lo-int64(stampBound) || ts > hi+int64(stampBound) {
					b.Free()
					return fmt.Errorf("frame %d stamped %s, outside the guest's clock window [%s, %s] ± %v (%v off)", seq,
						time.Unix(0, ts).UTC().Format(time.RFC3339Nano), time.Unix(0, lo).UTC().Format(time.RFC3339Nano),
						time.Unix(0, hi).UTC().Format(time.RFC3339Nano), stampBound, time.Duration(max(lo-ts, ts-hi)))
				}
				seen[seq] = true
				res.received++
			}
			b.Free()
		}
		return nil
	}
	for res.sent < len(frames) {
		if time.Now().After(deadline) {
			return res, fmt.Errorf("sent %d of %d frames within %v (TX buffers or queue never freed)", res.sent, len(frames), trafficTimeout)
		}
		n := min(trafficBurst, len(frames)-res.sent)
		b, err := sess.TxBurst(txPort, 0, n)
		if err != nil {
			if err := receive(); err != nil {
				return res, err
			}
			time.Sleep(time.Millisecond)
			continue
		}
		for j := 0; j < n; j++ {
			f := frames[res.sent+j]
			copy(b.SegmentBuffer(0, j), f)
			if err := b.SetPacketLengths(j, len(f)); err != nil {
				b.Free()
				return res, fmt.Errorf("frame %d: SetPacketLengths(%d): %w", res.sent+j, len(f), err)
			}
		}
		for {
			err := sess.Send(b)
			if err == nil {
				break
			}
			if !errors.Is(err, daqiri.ErrNotReady) {
				return res, fmt.Errorf("Send of frames %d..%d: %w", res.sent, res.sent+n-1, err)
			}
			if time.Now().After(deadline) {
				b.Free()
				return res, fmt.Errorf("Send not ready for %v", trafficTimeout)
			}
			time.Sleep(time.Millisecond)
		}
		res.sent += n
		if err := receive(); err != nil {
			return res, err
		}
	}
	for res.received < len(frames) && time.Now().Before(deadline) {
		if err := receive(); err != nil {
			return res, err
		}
		time.Sleep(time.Millisecond)
	}
	res.elapsed = time.Since(start)
	rx, tx := sess.Stats().Totals()
	res.rxDropped, res.txDropped = rx.Dropped, tx.Dropped
	if res.received < len(frames) {
		var missing []int
		for i, ok := range seen {
			if !ok && len(missing) < 8 {
				missing = append(missing, i)
			}
		}
		return res, fmt.Errorf("received %d of %d frames within %v (first missing %v); rx %+v, tx %+v", res.received, len(frames), trafficTimeout, missing, rx, tx)
	}
	if res.rxDropped != 0 || res.txDropped != 0 {
		return res, fmt.Errorf("all %d frames arrived, but the queues counted drops: rx %+v, tx %+v", len(frames), rx, tx)
	}
	return res, nil
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// runTraffic moves one run of frames through the open session's port (port 0 to itself)
// and records the two traffic stages: sent when every frame was handed to the engine,
// received when every one came back intact with no drops counted.
func runTraffic(t *testing.T, s *stageSet, sess *daqiri.Session) {
	res, err := moveTraffic(sess, 0, 0, mustMAC(macLoop), uint64(time.Now().UnixNano()))
	t.Logf("engine traffic: sent %d, received %d intact, %d other frames, rx dropped %d, tx dropped %d, %v", res.sent, res.received, res.foreign, res.rxDropped, res.txDropped, res.elapsed.Round(time.Millisecond))
	if res.sent == trafficFrames {
		s.ok(stageTrafficSent, fmt.Sprintf("%d frames of %d..%d bytes", res.sent, trafficMinLen, trafficMaxLen))
	} else {
		s.fail(stageTrafficSent, err.Error())
		return
	}
	if err != nil {
		s.fail(stageTrafficReceived, err.Error())
		return
	}
	s.ok(stageTrafficReceived, fmt.Sprintf("%d frames intact in %v (%d other frames on the wire)", res.received, res.elapsed.Round(time.Millisecond), res.foreign))
}

// TestMoveTrafficOnModel runs moveTraffic on the in-process model (model:0 cabled to
// model:1, the same engine over the model's channel), so that the guest's check is known
// to pass where the wire works, both ways.
func TestMoveTrafficOnModel(t *testing.T) {
	if guest.Active() {
		t.Skip("a host test")
	}
	cfg, err := config.Parse([]byte(twoPortConfig("model:0", "model:1")), "two.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sess, err := daqiri.Open(context.Background(), cfg, daqiri.WithMLX5Fabric(&modelch.Fabric{}))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	res, err := moveTraffic(sess, 0, 1, mustMAC(macPortB), 7)
	if err != nil || res.sent != trafficFrames || res.received != trafficFrames || res.foreign != 0 {
		t.Fatalf("model:0 → model:1: %+v, %v", res, err)
	}
	if res, err := moveTraffic(sess, 1, 0, mustMAC(macPortA), 8); err != nil || res.received != trafficFrames {
		t.Fatalf("model:1 → model:0: %+v, %v", res, err)
	}
}

// twoPortConfig is two mlx5 ports, each with a TX and an RX queue (engineConfig's queues).
func twoPortConfig(a, b string) string {
	return configHead(`
    - {name: "tx", kind: "host", affinity: 0, num_bufs: 1024, buf_size: 2048}
    - {name: "rx0", kind: "host", affinity: 0, num_bufs: 512, buf_size: 2048}
    - {name: "rx1", kind: "host", affinity: 0, num_bufs: 512, buf_size: 2048}
`) + fmt.Sprintf(`    interfaces:
    - name: "a"
      address: %q
      tx:
        queues:
        - {name: "a_tx", id: 0, batch_size: 32, cpu_core: 0, memory_regions: ["tx"]}
      rx:
        queues:
        - {name: "a_rx", id: 0, batch_size: 32, cpu_core: 0, memory_regions: ["rx0"]}
    - name: "b"
      address: %q
      tx:
        queues:
        - {name: "b_tx", id: 0, batch_size: 32, cpu_core: 0, memory_regions: ["tx"]}
      rx:
        queues:
        - {name: "b_rx", id: 0, batch_size: 32, cpu_core: 0, memory_regions: ["rx1"]}
`, a, b)
}

// TestTrafficFrame: the frames carry the magic and their sequence number; other frames
// (too short, another payload) are not taken for the run's.
func TestTrafficFrame(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{trafficMinLen, 61, trafficMaxLen} {
		f := trafficFrame(r, mustMAC(macLoop), 77, n)
		if len(f) != n {
			t.Fatalf("length %d, want %d", len(f), n)
		}
		if seq, ok := trafficSeq(f); !ok || seq != 77 {
			t.Errorf("%d-byte frame: seq %d %v", n, seq, ok)
		}
		if !bytes.Equal(f[:6], mustMAC(macLoop)) {
			t.Errorf("%d-byte frame to % x", n, f[:6])
		}
		if ipv4Checksum(f[14:34]) != 0 {
			t.Errorf("%d-byte frame: IPv4 header checksum does not verify", n)
		}
	}
	if _, ok := trafficSeq(make([]byte, 49)); ok {
		t.Error("a 49-byte frame was taken for the run's")
	}
	if _, ok := trafficSeq(make([]byte, 100)); ok {
		t.Error("a frame without the magic was taken for the run's")
	}
}
