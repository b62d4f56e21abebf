package ring

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/internal/testutil"
)

// TestStoreUint32 stores the value.
func TestStoreUint32(t *testing.T) {
	var w uint32
	for _, v := range []uint32{1, 0xffffffff, 0, 0x80000001} {
		StoreRelease32(&w, v)
		if got := atomic.LoadUint32(&w); got != v {
			t.Fatalf("stored %#x, loaded %#x", v, got)
		}
	}
	var d uint64
	for _, v := range []uint64{1, 0xffffffff_00000001, 0, 1 << 63} {
		StoreRelease64(&d, v)
		if got := atomic.LoadUint64(&d); got != v {
			t.Fatalf("stored %#x, loaded %#x", v, got)
		}
	}
}

// TestPublishes passes messages the way a ring does: a writer fills a buffer with plain
// stores and publishes its sequence with StoreUint32; a reader that loads the sequence
// atomically must see the whole buffer it guards, never an older fill. Under -race the
// detector checks the same exchange for unsynchronised accesses.
func TestPublishes(t *testing.T) {
	rounds := uint32(testutil.Rounds(200000, 20000))
	var seq, ack uint32
	var buf [8]uint64
	deadline := time.Now().Add(60 * time.Second)
	var wg sync.WaitGroup
	var bad atomic.Value
	wg.Go(func() {
		for r := uint32(1); r <= rounds; r++ {
			for idle := 0; atomic.LoadUint32(&ack) != r-1; idle = yieldSometimes(idle) {
				if time.Now().After(deadline) {
					bad.Store("writer timed out")
					return
				}
			}
			for i := range buf {
				buf[i] = uint64(r)<<8 | uint64(i)
			}
			StoreRelease32(&seq, r)
		}
	})
	wg.Go(func() {
		for r := uint32(1); r <= rounds; r++ {
			for idle := 0; atomic.LoadUint32(&seq) != r; idle = yieldSometimes(idle) {
				if time.Now().After(deadline) || bad.Load() != nil {
					bad.CompareAndSwap(nil, "reader timed out")
					return
				}
			}
			for i, v := range buf {
				if v != uint64(r)<<8|uint64(i) {
					bad.Store("reader saw a word of an older fill")
					return
				}
			}
			StoreRelease32(&ack, r)
		}
	})
	wg.Wait()
	if msg := bad.Load(); msg != nil {
		t.Fatal(msg)
	}
}
