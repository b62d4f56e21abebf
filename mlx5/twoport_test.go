package mlx5

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/flow"
)

func loadTwoPort(t *testing.T, hwLoop bool) *config.Config {
	t.Helper()
	b, err := os.ReadFile("testdata/two_port.yaml")
	if err != nil {
		t.Fatal(err)
	}
	y := string(b)
	if hwLoop {
		// One port that loops its transmit into its own receive through the NIC.
		y = strings.Replace(y, `address: "model:1"`, `address: "model:0"`, 1)
		y = strings.Replace(y, `log_level: "warn"`, "log_level: \"warn\"\n    loopback: hw", 1)
		y = strings.Replace(y, "    - name: \"rx_port\"\n      address: \"model:0\"\n      rx:", "      rx:", 1)
	}
	cfg, err := config.Parse([]byte(y), "two_port.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// flowFrame is a UDP frame from 10.0.src.1:sport to 10.1.0.x:dport with a sequence number.
func flowFrame(r *rand.Rand, seq int, sport, dport uint16, n int) []byte {
	f := udpFrame(r, seq, n)
	ip := f[14:]
	ip[10], ip[11] = 0, 0
	copy(ip[12:], []byte{10, 0, byte(sport), 1, 10, 1, 0, byte(dport)})
	binary.BigEndian.PutUint16(ip[10:], engine.IPv4Checksum(ip[:20]))
	binary.BigEndian.PutUint16(ip[20:], sport)
	binary.BigEndian.PutUint16(ip[22:], dport)
	return f
}

// TestTwoPortFlows is issue 15's two-port run against the model, in short: TX on model:0,
// RX on model:1 with four RSS queues behind flow 10 (UDP destination 5000), a header-data
// split queue behind flow 20 (UDP destination 6000), flow isolation, and a third kind of
// frame no flow takes. Each frame arrives on the queue and with the flow id that flow's
// reference classifier (flow.Table.Classify: Toeplitz over the 4-tuple) gives, split at 64
// bytes on the HDS queue, byte for byte; every frame sent is received, counted dropped with
// a reason, or counted as passed to the kernel. The same with `loopback: hw` on one port.
func TestTwoPortFlows(t *testing.T) {
	for _, hw := range []bool{false, true} {
		t.Run(fmt.Sprintf("loopback_hw=%v", hw), func(t *testing.T) {
			cfg := loadTwoPort(t, hw)
			e, ports := openTest(t, cfg, options{striding: -1, compression: true})
			txp, rxp := ports[0], ports[len(ports)-1]
			rxPort := e.ports[len(e.ports)-1]
			fs, ok := rxPort.steer.(*flowSteer)
			if !ok {
				t.Fatalf("steering is %T, not flow/mlx5's", rxPort.steer)
			}
			ref := fs.Table()
			r := rand.New(rand.NewPCG(3, 4))
			const n = 6000
			frames := make([][]byte, n)
			for i := range frames {
				dport := uint16(5000)
				switch i % 10 {
				case 7, 8:
					dport = 6000
				case 9:
					dport = 7000 // no flow: the kernel's
				}
				frames[i] = flowFrame(r, i, uint16(1000+r.IntN(64)), dport, 60+r.IntN(1000))
			}
			var count atomic.Int64
			got := make([][]int, len(rxp.Rx)) // sequence numbers per queue
			flowIDs := map[uint32]int{}
			done := make(chan struct{})
			go func() {
				defer close(done)
				end := time.Now().Add(30 * time.Second)
				for count.Load() < int64(n-n/10) && time.Now().Before(end) {
					idle := true
					for qi, q := range rxp.Rx {
						b, ok := q.Next()
						if !ok {
							continue
						}
						idle = false
						for i := 0; i < b.Len(); i++ {
							var p []byte
							for s := 0; s < b.NumSegments(); s++ {
								p = append(p, b.Segment(s, i)...)
							}
							seq := int(binary.BigEndian.Uint32(p[42:]))
							if seq >= n || string(p) != string(frames[seq]) {
								t.Errorf("queue %d: packet seq %d differs from what was sent", qi, seq)
								continue
							}
							v := ref.Classify(frames[seq])
							if v.Queue != qi || b.FlowID(i) != v.FlowID {
								t.Errorf("seq %d on queue %d with flow id %d; the reference says queue %d, flow id %d", seq, qi, b.FlowID(i), v.Queue, v.FlowID)
							}
							if h := min(64, len(p)); b.NumSegments() == 2 && (b.SegmentLen(0, i) != h || b.SegmentLen(1, i) != len(p)-h) {
								t.Errorf("HDS queue: segments of %d and %d bytes for a %d-byte frame", b.SegmentLen(0, i), b.SegmentLen(1, i), len(p))
							}
							flowIDs[b.FlowID(i)]++
							got[qi] = append(got[qi], seq)
						}
						count.Add(int64(b.Len()))
						b.Free()
					}
					if idle {
						time.Sleep(100 * time.Microsecond)
					}
				}
			}()
			// Every TX queue sends its share (frames i ≡ q mod 4), 256 in flight at most.
			var sent atomic.Int64
			tdone := make(chan struct{}, len(txp.Tx))
			for qi, q := range txp.Tx {
				var mine [][]byte
				for i := qi; i < n; i += len(txp.Tx) {
					mine = append(mine, frames[i])
				}
				go func() {
					defer func() { tdone <- struct{}{} }()
					sendWindow(t, e, q, mine, &sent, &count, n/10)
				}()
			}
			for range txp.Tx {
				<-tdone
			}
			<-done
			rxPort.countOutOfBuffer()
			var rx, drops uint64
			for _, q := range rxp.Rx {
				s := q.Stats.Snapshot()
				rx += s.Packets
				drops += s.Dropped
			}
			// A packet counts as sent when its completion is polled (by the port's worker,
			// asynchronously): wait, bounded, for the last completions.
			var tx uint64
			for end := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
				tx = 0
				for _, q := range txp.Tx {
					tx += q.Stats.Snapshot().Packets
				}
				if tx >= n || time.Now().After(end) {
					break
				}
			}
			kernel := rxp.Events.KernelPassed()
			t.Logf("tx %d rx %d dropped %d kernel %d; per queue %d %d %d %d %d; flow ids %v", tx, rx, drops, kernel, len(got[0]), len(got[1]), len(got[2]), len(got[3]), len(got[4]), flowIDs)
			if tx != n || rx+drops+kernel != tx || kernel != n/10 || drops != 0 {
				t.Fatalf("tx %d, rx %d + dropped %d + kernel %d: want tx %d = rx + %d to the kernel, no drops", tx, rx, drops, kernel, n, n/10)
			}
			if flowIDs[10] != n*7/10 || flowIDs[20] != n*2/10 {
				t.Fatalf("flow ids %v: want 10 ×%d, 20 ×%d", flowIDs, n*7/10, n*2/10)
			}
			for q := 0; q < 4; q++ {
				if len(got[q]) == 0 {
					t.Errorf("RSS queue %d got nothing", q)
				}
			}
		})
	}
}

// sendWindow sends frames through q in bursts of 32, keeping sent - received below window.
func sendWindow(t *testing.T, e engine.Engine, q *engine.TxQueue, frames [][]byte, sent, received *atomic.Int64, kernelShare int) {
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; i < len(frames); {
		// Frames for the kernel never come back to the receiver: allow for them.
		if sent.Load()-received.Load() >= int64(256+kernelShare) {
			if time.Now().After(deadline) {
				t.Errorf("receiver stuck: %d sent, %d received", sent.Load(), received.Load())
				return
			}
			time.Sleep(20 * time.Microsecond)
			continue
		}
		k := min(32, len(frames)-i)
		b, err := q.NewBurst(k)
		if err != nil {
			time.Sleep(20 * time.Microsecond)
			continue
		}
		for j := 0; j < k; j++ {
			copy(b.SegmentBuffer(0, j), frames[i+j])
			b.SetPacketLengths(j, len(frames[i+j]))
		}
		for {
			err := e.Send(b)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("Send: %v", err)
				b.Free()
				return
			}
			time.Sleep(20 * time.Microsecond)
		}
		sent.Add(int64(k))
		i += k
	}
}

var _ = flow.DefaultRSSKey
