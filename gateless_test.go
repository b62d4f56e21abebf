package daqiri

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestBurstCountersExactUnderStatsAndClose runs the burst loop (TxBurst, Send, RxBurst,
// Free) on two loopback queues, two senders per TX queue and one poller per RX queue, with
// two goroutines reading Stats all along, and closes the session in the middle of it.
// TxBurst and RxBurst take no gate (they check the session's and the queue's flags after
// the take), so this checks what the gates stood for: every Stats snapshot only grows, and
// after Close the counters are exact — the TX queues counted every packet the senders had
// accepted by Send, every one of them is on the RX side as received or dropped for a
// reason, and the RX queues' received packets are those the pollers got plus those Close
// (or a poll that met the closed session after its take) dropped as closed; every region is
// released once everything is freed.
func TestBurstCountersExactUnderStatsAndClose(t *testing.T) {
	for round := 0; round < 4; round++ {
		s, err := Open(context.Background(), loopbackConfig(2, round%2 == 1))
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var bad atomic.Value
		var sent, got atomic.Int64
		ok := func(err error) bool {
			return err == nil || errors.Is(err, ErrNotReady) || errors.Is(err, ErrNoFreePacketBuffers) || errors.Is(err, ErrNoFreeBurstBuffers)
		}
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				q := g % 2
				for i := 0; i < 200000; i++ {
					b, err := s.TxBurst(0, q, 1+i%16)
					if err == nil {
						for k := range b.Len() {
							var err error
							if b.NumSegments() == 2 { // header-data split: 60 bytes as 20 + 40
								err = b.SetPacketLengths(k, 20, 40)
							} else {
								err = b.SetPacketLen(k, 60)
							}
							if err != nil {
								bad.Store(err)
								return
							}
						}
						n := b.Len()
						if err := s.Send(b); err == nil {
							sent.Add(int64(n))
						} else {
							b.Free() // refused: still ours
							if !ok(err) {
								bad.Store(err)
								return
							}
						}
					} else if !ok(err) {
						bad.Store(err)
						return
					}
					if g >= 2 {
						if s.closed.Load() && i%64 == 0 {
							break
						}
						continue // a sender only
					}
					r, err := s.RxBurst(0, 10+q)
					if err == nil {
						got.Add(int64(r.Len()))
						r.Free()
					} else if !ok(err) {
						bad.Store(err)
						return
					}
					if s.closed.Load() && errors.Is(err, ErrNotReady) && i%64 == 0 {
						break // closed and refused: done
					}
				}
			}()
		}
		stop := make(chan struct{})
		var readers sync.WaitGroup
		for g := 0; g < 2; g++ {
			readers.Add(1)
			go func() {
				defer readers.Done()
				var lastRx, lastTx QueueStats
				for i := 0; i < 1_000_000; i++ {
					select {
					case <-stop:
						return
					default:
					}
					rx, tx := s.Stats().Totals()
					if rx.Packets < lastRx.Packets || rx.Bytes < lastRx.Bytes || rx.Bursts < lastRx.Bursts || rx.Dropped < lastRx.Dropped ||
						tx.Packets < lastTx.Packets || tx.Bytes < lastTx.Bytes || tx.Bursts < lastTx.Bursts {
						bad.Store(errors.New("a Stats snapshot went backwards"))
						return
					}
					lastRx, lastTx = rx, tx
				}
			}()
		}
		for deadline := time.Now().Add(10 * time.Second); got.Load() < 20000 && time.Now().Before(deadline); {
			time.Sleep(50 * time.Microsecond)
		}
		s.Close() // may report buffers still held by the goroutines
		wg.Wait()
		close(stop)
		readers.Wait()
		if err := bad.Load(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		var rx, tx QueueStats
		rxDrops := map[string]uint64{}
		for _, p := range s.Stats().Ports {
			for _, q := range p.Rx {
				rx.Packets += q.Packets
				rx.Dropped += q.Dropped
				for k, v := range q.Drops {
					rxDrops[k] += v
				}
			}
			for _, q := range p.Tx {
				tx.Packets += q.Packets
				tx.Bytes += q.Bytes
				tx.Dropped += q.Dropped
			}
		}
		if tx.Packets != uint64(sent.Load()) || tx.Bytes != 60*tx.Packets || tx.Dropped != 0 {
			t.Fatalf("round %d: TX counted %d packets, %d bytes, %d dropped; the senders had %d accepted", round, tx.Packets, tx.Bytes, tx.Dropped, sent.Load())
		}
		// Closed drops are of packets already counted as received (drained from the ring).
		if rx.Packets+rx.Dropped-rxDrops["closed"] != tx.Packets {
			t.Fatalf("round %d: RX received %d + dropped %d (%v, closed ones among the received) != %d sent", round, rx.Packets, rx.Dropped, rxDrops, tx.Packets)
		}
		if rx.Packets != uint64(got.Load())+rxDrops["closed"] {
			t.Fatalf("round %d: RX counted %d received, pollers got %d, %d dropped as closed", round, rx.Packets, got.Load(), rxDrops["closed"])
		}
		for _, n := range []string{"tx", "rx", "txd", "rxd"} {
			if r := s.Region(n); r != nil && !r.Unmapped() {
				t.Fatalf("round %d: region %s still mapped after every burst was freed (%d of %d buffers free)", round, r.Name, r.Available(), r.NumBufs)
			}
		}
	}
}
