package daqiri

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
)

// blockingEngine's Send holds the burst until release is closed; Close records whether a
// Send was still inside.
type blockingEngine struct {
	entered     chan struct{}
	release     chan struct{}
	inside      atomic.Int32
	closedInUse atomic.Bool
}

func (e *blockingEngine) Send(b *engine.Burst) error {
	e.inside.Add(1)
	defer e.inside.Add(-1)
	e.entered <- struct{}{}
	<-e.release
	b.Free()
	return nil
}

func (e *blockingEngine) Close() error {
	if e.inside.Load() != 0 {
		e.closedInUse.Store(true)
	}
	return nil
}

// TestCloseWaitsForSend: TxBurst, Send and RxBurst take the session's and the queue's gate
// in one step; Close must still wait for a Send inside the engine before it closes the
// engine, and from the moment Close begins every new call is refused with ErrNotReady
// (session closed), not with a deleted-queue error.
func TestCloseWaitsForSend(t *testing.T) {
	fe := &blockingEngine{entered: make(chan struct{}, 1), release: make(chan struct{})}
	s, err := Open(context.Background(), loopbackConfig(1, false), withEngine(config.EngineLoopback, func(context.Context, *engine.Env) (engine.Engine, error) {
		return fe, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.TxBurst(0, 0, 4)
	if err != nil {
		t.Fatal(err)
	}
	sent := make(chan error, 1)
	go func() { sent <- s.Send(b) }()
	<-fe.entered
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	// Wait (bounded) until Close has begun: new calls are refused as the session's.
	refused := false
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if _, err := s.TxBurst(0, 0, 1); err != nil {
			if !errors.Is(err, ErrNotReady) || errors.Is(err, ErrQueueDeleted) {
				t.Fatalf("TxBurst while closing: %v, want session closed (ErrNotReady)", err)
			}
			refused = true
			break
		}
		time.Sleep(100 * time.Microsecond) // the burst came before Close: its buffers stay out until Close
	}
	if !refused {
		t.Fatal("TxBurst still admitted 10 s after Close began")
	}
	if _, err := s.RxBurst(0, 10); !errors.Is(err, ErrNotReady) || errors.Is(err, ErrQueueDeleted) {
		t.Fatalf("RxBurst while closing: %v", err)
	}
	if err := s.Send(b); !errors.Is(err, ErrNotReady) {
		t.Fatalf("Send while closing: %v", err)
	}
	close(fe.release)
	if err := <-sent; err != nil {
		t.Fatalf("Send admitted before Close: %v", err)
	}
	<-closed
	if fe.closedInUse.Load() {
		t.Fatal("Close closed the engine while a Send was inside it")
	}
}

// TestCloseUnderBurstTraffic closes a loopback session while goroutines run the burst loop
// (TxBurst, Send, RxBurst, Free) on two queues, two senders per TX queue and one poller per
// RX queue: every call returns nil or a typed error of the burst contract, and once the
// goroutines have freed what they held and the session has drained its rings every region's
// memory is released (nothing lost, nothing freed twice: a double free would overfill a
// pool and a lost burst keep it short).
func TestCloseUnderBurstTraffic(t *testing.T) {
	for round := 0; round < 5; round++ {
		s, err := Open(context.Background(), loopbackConfig(2, round%2 == 1))
		if err != nil {
			t.Fatal(err)
		}
		regions := []*engine.Region{}
		for _, n := range []string{"tx", "rx", "txd", "rxd"} {
			if r := s.Region(n); r != nil {
				regions = append(regions, r)
			}
		}
		var wg sync.WaitGroup
		var bad atomic.Value
		var loops atomic.Int64
		ok := func(err error) bool {
			return err == nil || errors.Is(err, ErrNotReady) || errors.Is(err, ErrNoFreePacketBuffers) || errors.Is(err, ErrNoFreeBurstBuffers)
		}
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				q := g % 2
				for i := 0; i < 200000; i++ {
					loops.Add(1)
					b, err := s.TxBurst(0, q, 1+i%16)
					if err == nil {
						if err := s.Send(b); err != nil {
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
						continue // a sender only: each RX queue has one poller (its ring has one consumer)
					}
					r, err := s.RxBurst(0, 10+q)
					if err == nil {
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
		// Let the loops run a little (bounded: a goroutine that failed early stops counting).
		for deadline := time.Now().Add(10 * time.Second); loops.Load() < 2000 && time.Now().Before(deadline); {
			time.Sleep(50 * time.Microsecond)
		}
		s.Close() // may report buffers still held by the goroutines
		wg.Wait()
		if err := bad.Load(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		for _, r := range regions {
			if !r.Unmapped() {
				t.Fatalf("round %d: region %s still mapped after every burst was freed (%d of %d buffers free)", round, r.Name, r.Available(), r.NumBufs)
			}
		}
	}
}
