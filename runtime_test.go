package daqiri_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/daqiri-go/daqiri/internal/testutil"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
)

// rtLoopback is a loopback port with RX queue 0 and TX queue 0 on regions rx and tx.
func rtLoopback() *config.Config {
	return &config.Config{Version: 1, StreamType: config.StreamRaw, Loopback: "sw", LogLevel: "error", RxMetaBuffers: 64, TxMetaBuffers: 64,
		MemoryRegions: []config.MemoryRegion{
			{Name: "tx", Kind: config.KindHost, Access: config.AccessLocal, NumBufs: 512, BufSize: 256},
			{Name: "rx", Kind: config.KindHost, Access: config.AccessLocal, NumBufs: 64, BufSize: 256}},
		Interfaces: []config.Interface{{Name: "lb", Address: "loopback",
			RX: &config.RxConfig{Queues: []config.Queue{{Name: "r0", ID: 0, CPUCore: "0", BatchSize: 16, MemoryRegions: []string{"rx"}}}},
			TX: &config.TxConfig{Queues: []config.Queue{{Name: "t0", ID: 0, CPUCore: "0", BatchSize: 16, MemoryRegions: []string{"tx"}}}}}}}
}

func sendN(t *testing.T, s *daqiri.Session, q, n int, tag byte) error {
	t.Helper()
	b, err := s.TxBurst(0, q, n)
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		b.SetPacketLengths(i, 64)
		b.Packet(i)[0] = tag
	}
	if err := s.Send(b); err != nil {
		b.Free()
		return err
	}
	return nil
}

// TestRuntimeQueues adds an RX and a TX queue and a region to an open loopback session,
// moves traffic through them, deletes them with a burst held by the application and bursts
// still queued, and checks the typed errors: polling, taking a burst from, sending on and
// deleting again a deleted queue; deleting a region in use; bad queue configurations.
func TestRuntimeQueues(t *testing.T) {
	s := mustOpen(t, rtLoopback())
	if err := s.AddMemoryRegion(config.MemoryRegion{Name: "rx2", Kind: config.KindHost, NumBufs: 64, BufSize: 256}, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		qc   config.Queue
		want string
	}{
		{config.Queue{Name: "dup", ID: 0, BatchSize: 8, MemoryRegions: []string{"rx2"}}, "interfaces[0].rx.queues[1].id: duplicate queue id 0: a live queue"},
		{config.Queue{Name: "nobatch", ID: 5, MemoryRegions: []string{"rx2"}}, "interfaces[0].rx.queues[1].batch_size: a queue with poll_mode indirect needs batch_size"},
		{config.Queue{Name: "noregion", ID: 5, BatchSize: 8, MemoryRegions: []string{"nope"}}, `memory_regions[0]: memory region "nope" is not defined`},
		{config.Queue{Name: "direct", ID: 5, BatchSize: 8, MemoryRegions: []string{"rx2"}, PollMode: config.PollDirect}, "run-time queues are indirect"},
	} {
		if err := s.AddRxQueue(0, c.qc); err == nil || !errors.Is(err, daqiri.ErrInvalidParameter) || !contains(err, c.want) {
			t.Errorf("AddRxQueue %+v: %v, want %q", c.qc, err, c.want)
		}
	}
	if err := s.AddRxQueue(0, config.Queue{Name: "r5", ID: 5, CPUCore: "0", BatchSize: 8, MemoryRegions: []string{"rx2"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddTxQueue(0, config.Queue{Name: "t6", ID: 6, BatchSize: 8, MemoryRegions: []string{"tx"}}); err != nil {
		t.Fatal(err)
	}
	if ids := s.RxQueueIDs(0); len(ids) != 2 || ids[1] != 5 || s.NumTxQueues(0) != 2 {
		t.Fatalf("rx ids %v, %d tx queues", ids, s.NumTxQueues(0))
	}
	var sampled []string
	for _, m := range s.MetricSamples() {
		sampled = append(sampled, fmt.Sprintf("%v%s", m.Dir, m.Queue))
	}
	if fmt.Sprint(sampled) != "[00 05 10 16]" { // direction (rx 0, tx 1), queue id
		t.Fatalf("metric samples for queues %v", sampled)
	}
	// TX 6 is the second live TX queue: it loops to the second live RX queue, 5.
	for k := 0; k < 3; k++ {
		if err := sendN(t, s, 6, 4, 0x66); err != nil {
			t.Fatal(err)
		}
	}
	held := waitBurst5(t, s)
	if held.Len() != 4 || held.Packet(0)[0] != 0x66 || held.Queue() != 5 {
		t.Fatalf("burst on queue 5: %d packets, tag %x, queue %d", held.Len(), held.Packet(0)[0], held.Queue())
	}
	early, err := s.TxBurst(0, 6, 2) // taken before the delete
	if err != nil {
		t.Fatal(err)
	}

	if err := s.DeleteTxQueue(0, 6); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTxQueue(0, 6); !errors.Is(err, daqiri.ErrQueueDeleted) {
		t.Fatalf("second delete of tx queue 6: %v", err)
	}
	if _, err := s.TxBurst(0, 6, 1); !errors.Is(err, daqiri.ErrQueueDeleted) {
		t.Fatalf("TxBurst on a deleted queue: %v", err)
	}
	if err := s.Send(early); !errors.Is(err, daqiri.ErrQueueDeleted) || !errors.Is(err, daqiri.ErrInvalidParameter) {
		t.Fatalf("Send on a deleted queue: %v", err)
	}
	early.Free() // still the caller's

	if err := s.DeleteMemoryRegion("rx2"); !errors.Is(err, daqiri.ErrRegionInUse) {
		t.Fatalf("delete of a region a live queue uses: %v", err)
	}
	if err := s.DeleteRxQueue(0, 5); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRxQueue(0, 5); !errors.Is(err, daqiri.ErrQueueDeleted) {
		t.Fatalf("second delete of rx queue 5: %v", err)
	}
	if _, err := s.RxBurst(0, 5); !errors.Is(err, daqiri.ErrQueueDeleted) {
		t.Fatalf("RxBurst on a deleted queue: %v", err)
	}
	if err := s.DeleteRxQueue(0, 99); err == nil || errors.Is(err, daqiri.ErrQueueDeleted) || !errors.Is(err, daqiri.ErrInvalidParameter) {
		t.Fatalf("delete of a queue that never existed: %v", err)
	}
	// The held burst is still valid; the region cannot go while the application holds it.
	if held.Packet(3)[0] != 0x66 {
		t.Fatal("held burst changed after its queue was deleted")
	}
	if err := s.DeleteMemoryRegion("rx2"); err != nil {
		// rx2 is not the looped buffers' region (loopback hands TX buffers over), so it is free.
		t.Fatalf("delete of rx2: %v", err)
	}
	if err := s.DeleteMemoryRegion("tx"); !errors.Is(err, daqiri.ErrRegionInUse) {
		t.Fatalf("delete of tx while TX queue 0 uses it: %v", err)
	}
	held.Free()
	st := s.Stats().Ports[0]
	if len(st.Rx) != 2 || len(st.Tx) != 2 || st.Rx[0].Queue != 0 || !st.Rx[1].Deleted || st.Rx[1].Queue != 5 || st.Rx[1].Packets != 12 ||
		st.Rx[1].Drops["closed"] != 8 || !st.Tx[1].Deleted || st.Tx[1].Packets != 12 {
		t.Fatalf("stats after deletes (queue 5 got 12 packets, 8 of them still queued at the delete): %+v", st)
	}
	// The id of a deleted queue can be used again.
	if err := s.AddRxQueue(0, config.Queue{Name: "r5b", ID: 5, BatchSize: 8, MemoryRegions: []string{"rx"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RxBurst(0, 5); !errors.Is(err, daqiri.ErrNotReady) {
		t.Fatalf("poll of the re-added queue 5: %v", err)
	}
	if err := s.DeleteMemoryRegion("nope"); !errors.Is(err, daqiri.ErrInvalidParameter) {
		t.Fatalf("delete of an unknown region: %v", err)
	}
}

func contains(err error, s string) bool {
	return err != nil && len(s) > 0 && errorsContains(err.Error(), s)
}

func errorsContains(a, b string) bool {
	for i := 0; i+len(b) <= len(a); i++ {
		if a[i:i+len(b)] == b {
			return true
		}
	}
	return false
}

func waitBurst5(t *testing.T, s *daqiri.Session) *daqiri.Burst {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		b, err := s.RxBurst(0, 5)
		if err == nil {
			return b
		}
		if !errors.Is(err, daqiri.ErrNotReady) {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Microsecond)
	}
	t.Fatal("no burst on queue 5")
	return nil
}

// TestRuntimeQueuesRace adds and deletes an RX and a TX queue (a new id each cycle) over and
// over while other goroutines send on TX queue 0 and on the current run-time TX queue and
// poll RX queue 0 and the current run-time RX queue. Every error is one of the typed ones,
// every packet sent is received or counted as dropped on some queue (deleted ones included),
// and Close finds every buffer back (a lost burst fails it).
func TestRuntimeQueuesRace(t *testing.T) {
	s, err := daqiri.Open(context.Background(), rtLoopback())
	if err != nil {
		t.Fatal(err)
	}
	var sent, recv atomic.Int64
	var cur atomic.Int64 // id of the run-time queues (-1: none yet)
	cur.Store(-1)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var bad atomic.Value
	expected := func(err error) bool {
		return err == nil || errors.Is(err, daqiri.ErrQueueDeleted) || errors.Is(err, daqiri.ErrNotReady) ||
			errors.Is(err, daqiri.ErrNoFreePacketBuffers) || errors.Is(err, daqiri.ErrNoFreeBurstBuffers) ||
			errors.Is(err, daqiri.ErrInvalidParameter) // an id between delete and add
	}
	for _, fixed := range []bool{true, false} {
		id := func() int {
			if fixed {
				return 0
			}
			return int(cur.Load())
		}
		wg.Add(2)
		go func() { // sender
			defer wg.Done()
			for i := 0; i < 1e6; i++ {
				select {
				case <-stop:
					return
				default:
				}
				q := id()
				if q < 0 {
					time.Sleep(100 * time.Microsecond)
					continue
				}
				if err := sendN(t, s, q, 4, byte(q)); err == nil {
					sent.Add(4)
				} else if !expected(err) {
					bad.Store(err)
					return
				} else {
					time.Sleep(20 * time.Microsecond)
				}
			}
		}()
		go func() { // receiver
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				q := id()
				if q < 0 {
					time.Sleep(100 * time.Microsecond)
					continue
				}
				b, err := s.RxBurst(0, q)
				if err != nil {
					if !expected(err) {
						bad.Store(err)
						return
					}
					time.Sleep(20 * time.Microsecond) // nothing there: leave the CPU to the others
					continue
				}
				recv.Add(int64(b.Len()))
				b.Free()
			}
		}()
	}
	cycles := 0
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline) && cycles < 200; cycles++ {
		id := 100 + cycles
		if err := s.AddRxQueue(0, config.Queue{Name: "rt", ID: id, BatchSize: 8, MemoryRegions: []string{"rx"}}); err != nil {
			t.Fatal(err)
		}
		if err := s.AddTxQueue(0, config.Queue{Name: "tt", ID: id, BatchSize: 8, MemoryRegions: []string{"tx"}}); err != nil {
			t.Fatal(err)
		}
		cur.Store(int64(id))
		time.Sleep(time.Duration(cycles%5) * 200 * time.Microsecond)
		if cycles%2 == 0 { // both orders
			err = errors.Join(s.DeleteTxQueue(0, id), s.DeleteRxQueue(0, id))
		} else {
			err = errors.Join(s.DeleteRxQueue(0, id), s.DeleteTxQueue(0, id))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if e := bad.Load(); e != nil {
		t.Fatalf("unexpected error under churn: %v", e)
	}
	for {
		b, err := s.RxBurst(0, 0)
		if err != nil {
			break
		}
		recv.Add(int64(b.Len()))
		b.Free()
	}
	var dropped uint64
	reasons := map[string]uint64{}
	st := s.Stats().Ports[0]
	for _, qs := range [][]daqiri.QueueStats{st.Rx, st.Tx} {
		for _, q := range qs {
			dropped += q.Dropped
			for r, n := range q.Drops {
				reasons[r] += n
			}
		}
	}
	t.Logf("%d add/delete cycles; sent %d, received %d, dropped %d %v", cycles, sent.Load(), recv.Load(), dropped, reasons)
	if recv.Load()+int64(dropped) != sent.Load() {
		t.Fatalf("received %d + dropped %d != sent %d", recv.Load(), dropped, sent.Load())
	}
	for r := range reasons {
		switch r {
		case "closed", "no_burst_buffers", "rx_ring_full", "not_connected":
		default:
			t.Fatalf("unexpected drop reason %q: %v", r, reasons)
		}
	}
	if sent.Load() == 0 || recv.Load() == 0 || cycles < 10 {
		t.Fatalf("churn did not run traffic: %d cycles, %d sent, %d received", cycles, sent.Load(), recv.Load())
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close after churn (lost buffers?): %v", err)
	}
}

// TestRuntimeQueuesSocket deletes and replaces a UDP server's RX queue and a client's TX
// queue: while the RX queue is deleted what the socket receives is counted as dropped
// (closed) on it; its replacement (same region, new id) receives again; a replacement over
// another region, a second live queue, and sends on the deleted TX queue are refused.
func TestRuntimeQueuesSocket(t *testing.T) {
	cfg := pairConfig(config.ProtoUDP, testutil.FreePort(t, "udp"), 2048, 8, 100)
	s := mustOpen(t, cfg)
	sendAll(t, s, 1, randomPayloads(8, 10, 100), 8)
	if got := recvAll(t, s, 0, 8, 10*time.Second); len(got) != 8 {
		t.Fatalf("before: %d of 8", len(got))
	}
	if err := s.DeleteRxQueue(0, 0); err != nil {
		t.Fatal(err)
	}
	sendAll(t, s, 1, randomPayloads(5, 10, 100), 8)
	var closed uint64
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end) && closed < 5; time.Sleep(time.Millisecond) {
		closed = s.Stats().Ports[0].Rx[0].Drops["closed"]
	}
	if closed != 5 {
		t.Fatalf("%d datagrams counted closed on the deleted queue, want 5: %+v", closed, s.Stats().Ports[0].Rx)
	}
	if err := s.AddRxQueue(0, config.Queue{Name: "r5", ID: 5, CPUCore: "0", BatchSize: 8, TimeoutUs: 100, MemoryRegions: []string{"cli_rx"}}); !errors.Is(err, daqiri.ErrNotSupported) {
		t.Fatalf("replacement over another region: %v", err)
	}
	if err := s.AddRxQueue(0, config.Queue{Name: "r5", ID: 5, CPUCore: "0", BatchSize: 8, TimeoutUs: 100, MemoryRegions: []string{"srv_rx"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddRxQueue(0, config.Queue{Name: "r6", ID: 6, CPUCore: "0", BatchSize: 8, MemoryRegions: []string{"srv_rx"}}); !errors.Is(err, daqiri.ErrInvalidParameter) {
		t.Fatalf("a second live rx queue: %v", err)
	}
	payloads := randomPayloads(6, 10, 100)
	sendAll(t, s, 1, payloads, 8)
	got := 0
	for end := time.Now().Add(10 * time.Second); got < 6 && time.Now().Before(end); {
		b, err := s.RxBurst(0, 5)
		if err != nil {
			time.Sleep(100 * time.Microsecond)
			continue
		}
		if b.Queue() != 5 {
			t.Fatalf("burst says queue %d", b.Queue())
		}
		got += b.Len()
		b.Free()
	}
	if got != 6 {
		t.Fatalf("replacement queue received %d of 6", got)
	}
	// TX.
	if err := s.DeleteTxQueue(1, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TxBurst(1, 0, 1); !errors.Is(err, daqiri.ErrQueueDeleted) {
		t.Fatalf("TxBurst on the deleted queue: %v", err)
	}
	if err := s.AddTxQueue(1, config.Queue{Name: "t3", ID: 3, BatchSize: 8, MemoryRegions: []string{"cli_tx"}}); err != nil {
		t.Fatal(err)
	}
	b, err := s.TxBurst(1, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	b.SetUDPPayload(0, []byte("again-0"))
	b.SetUDPPayload(1, []byte("again-1"))
	if err := s.Send(b); err != nil {
		t.Fatal(err)
	}
	if g := recvAllQ(t, s, 5, 2); len(g) != 2 || string(g[1]) != "again-1" {
		t.Fatalf("after the TX replacement: %q", g)
	}
}

func recvAllQ(t *testing.T, s *daqiri.Session, q, n int) [][]byte {
	var got [][]byte
	for end := time.Now().Add(10 * time.Second); len(got) < n && time.Now().Before(end); {
		b, err := s.RxBurst(0, q)
		if err != nil {
			time.Sleep(100 * time.Microsecond)
			continue
		}
		for i := 0; i < b.Len(); i++ {
			got = append(got, append([]byte(nil), b.Packet(i)...))
		}
		b.Free()
	}
	return got
}

// TestRuntimeRefusesWhatOpenRefuses (issue 30 items 1–3): AddMemoryRegion, AddRxQueue and
// AddTxQueue check what they are given by the rules Open applies (config.CheckMemoryRegion,
// Config.CheckQueue), with the key path in the error: sizes that overflowed int64 or the
// pool, a negative affinity, batch sizes and timeouts out of range, empty and duplicate names.
func TestRuntimeRefusesWhatOpenRefuses(t *testing.T) {
	s := mustOpen(t, rtLoopback())
	for _, c := range []struct {
		rc   config.MemoryRegion
		want string
	}{
		{config.MemoryRegion{Name: "wrap", Kind: config.KindHost, NumBufs: 4, BufSize: 1<<62 + 16}, "memory_regions[2].buf_size: must be ≤ 2147483647"},
		{config.MemoryRegion{Name: "wrap0", Kind: config.KindHost, NumBufs: 1 << 33, BufSize: 1 << 31}, "memory_regions[2].num_bufs: must be ≤ 16777216"},
		{config.MemoryRegion{Name: "tib", Kind: config.KindHost, NumBufs: 1 << 40, BufSize: 1}, "memory_regions[2].num_bufs: must be ≤ 16777216"},
		{config.MemoryRegion{Name: "links", Kind: config.KindHost, NumBufs: 1<<32 - 2, BufSize: 1}, "memory_regions[2].num_bufs: must be ≤ 16777216"},
		{config.MemoryRegion{Name: "big", Kind: config.KindHost, NumBufs: 1 << 24, BufSize: 1<<22 + 1}, "memory_regions[2]: num_bufs × buf_size = 16777216 × 4194305 exceeds"},
		{config.MemoryRegion{Name: "aff", Kind: config.KindHost, Affinity: -5, NumBufs: 4, BufSize: 64}, "memory_regions[2].affinity: must be ≥ 0, got -5"},
		{config.MemoryRegion{Name: "rx", Kind: config.KindHost, NumBufs: 4, BufSize: 64}, `memory_regions[2].name: duplicate memory region name "rx"`},
		{config.MemoryRegion{Kind: config.KindHost, NumBufs: 4, BufSize: 64}, "memory_regions[2].name: a memory region needs a name"},
		{config.MemoryRegion{Name: "nokind", NumBufs: 4, BufSize: 64}, "memory_regions[2].kind: a memory region needs kind"},
	} {
		if err := s.AddMemoryRegion(c.rc, nil); !errors.Is(err, daqiri.ErrInvalidParameter) || !contains(err, c.want) {
			t.Errorf("AddMemoryRegion %s (%d × %d): %v, want %q", c.rc.Name, c.rc.NumBufs, c.rc.BufSize, err, c.want)
		}
	}
	// Within the bounds but beyond the machine: an error naming the region, not a kill.
	err := s.AddMemoryRegion(config.MemoryRegion{Name: "huge64t", Kind: config.KindHost, NumBufs: 1 << 24, BufSize: 1 << 22}, nil)
	if err == nil || !contains(err, "memory_regions[2]: memory region huge64t (host, 16777216 × 4194304 bytes)") {
		t.Errorf("a 64 TiB host region: %v, want an error naming memory_regions[2] and the region", err)
	}
	for _, dir := range []string{"rx", "tx"} {
		add := s.AddRxQueue
		if dir == "tx" {
			add = s.AddTxQueue
		}
		p := "interfaces[0]." + dir + ".queues[1]"
		for _, c := range []struct {
			qc   config.Queue
			want string
		}{
			{config.Queue{Name: "b", ID: 7, BatchSize: 70000}, p + ".batch_size: must be ≤ 65536, got 70000"},
			{config.Queue{Name: "b", ID: 7, BatchSize: 3e9}, p + ".batch_size: must be ≤ 65536, got 3000000000"},
			{config.Queue{Name: "t", ID: 7, BatchSize: 8, TimeoutUs: -1}, p + ".timeout_us: must be between 0 and 3600000000 (one hour), got -1"},
			{config.Queue{Name: "t", ID: 7, BatchSize: 8, TimeoutUs: 1 << 62}, p + ".timeout_us: must be between 0 and 3600000000 (one hour), got 4611686018427387904"},
			{config.Queue{ID: 7, BatchSize: 8}, p + ".name: a queue needs a name"},
			{config.Queue{Name: dir[:1] + "0", ID: 7, BatchSize: 8}, p + `.name: duplicate queue name "` + dir[:1] + `0"`},
			{config.Queue{Name: "c", ID: 7, BatchSize: 8, CPUCore: "x"}, p + `.cpu_core: must be a CPU core number, got "x"`},
			{config.Queue{Name: "n", ID: 70000, BatchSize: 8}, p + ".id: must be between 0 and 65535, got 70000"},
		} {
			c.qc.MemoryRegions = []string{dir} // rtLoopback's regions are named rx and tx
			if err := add(0, c.qc); !errors.Is(err, daqiri.ErrInvalidParameter) || !contains(err, c.want) {
				t.Errorf("Add%sQueue %+v: %v, want %q", dir, c.qc, err, c.want)
			}
		}
	}
	if n := s.NumTxQueues(0); n != 1 || len(s.RxQueueIDs(0)) != 1 {
		t.Fatalf("refused queues were added: %d tx, rx ids %v", n, s.RxQueueIDs(0))
	}
}

// TestOpenRefusesPoolBeyondMemory (issue 30 item 2): 2^31−1 buffers in a configuration built
// in code is refused by Open with the key path, before any memory is touched (the pool's
// link array alone would be 16 GiB).
func TestOpenRefusesPoolBeyondMemory(t *testing.T) {
	cfg := rtLoopback()
	cfg.MemoryRegions[1].NumBufs, cfg.MemoryRegions[1].BufSize = 1<<31-1, 1
	_, err := daqiri.Open(context.Background(), cfg)
	if err == nil || !contains(err, "memory_regions[1].num_bufs: must be ≤ 16777216") {
		t.Fatalf("Open with 2^31−1 buffers: %v", err)
	}
}
