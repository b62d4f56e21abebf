package engine

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/hugepage"
	"github.com/daqiri-go/daqiri/internal/testutil"
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

func testRegion(t *testing.T, name string, n, size int) *Region {
	t.Helper()
	m, err := hugepage.Map(n*size, false)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRegion(&config.MemoryRegion{Name: name, Kind: config.KindHost, NumBufs: n, BufSize: size}, m)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("leak: %v", err)
		}
	})
	return r
}

func testTxQueue(t *testing.T, raw bool, regions ...*Region) *TxQueue {
	t.Helper()
	meta, err := NewMetaPool("tx", 4, 8, true)
	if err != nil {
		t.Fatal(err)
	}
	p := &Port{ID: 0, Name: "p0", Raw: raw}
	names := []string{}
	for _, r := range regions {
		names = append(names, r.Name)
	}
	q := NewTxQueue(p, 0, &config.Queue{Name: "q", ID: 3, BatchSize: 8, MemoryRegions: names}, regions, meta)
	p.Tx = []*TxQueue{q}
	return q
}

func TestTxBurstExhaustionAndFree(t *testing.T) {
	hdr := testRegion(t, "hdr", 16, 128)
	data := testRegion(t, "data", 10, 2048)
	q := testTxQueue(t, true, hdr, data)

	b, err := q.NewBurst(0) // batch size 8
	if err != nil {
		t.Fatal(err)
	}
	if b.Len() != 8 || b.NumSegments() != 2 || b.Queue() != 3 {
		t.Fatalf("len %d segs %d queue %d", b.Len(), b.NumSegments(), b.Queue())
	}
	// 2 data buffers left: a burst of 3 must fail and take nothing from either region.
	_, err = q.NewBurst(3)
	if !errors.Is(err, ErrNoFreePacketBuffers) {
		t.Fatalf("want ErrNoFreePacketBuffers, got %v", err)
	}
	if hdr.Available() != 8 || data.Available() != 2 {
		t.Fatalf("failed allocation leaked: hdr %d data %d", hdr.Available(), data.Available())
	}
	if q.Available(3) || !q.Available(2) {
		t.Fatal("Available disagrees with the pools")
	}
	// Free one segment of one packet, then everything; double frees are harmless.
	b.FreeSegment(0, 2)
	b.FreeSegment(0, 2)
	if hdr.Available() != 9 {
		t.Fatalf("hdr available %d after one segment free", hdr.Available())
	}
	b.FreePacket(2)
	b.Free()
	if hdr.Available() != 16 || data.Available() != 10 {
		t.Fatalf("after Free: hdr %d data %d", hdr.Available(), data.Available())
	}
	// Metadata exhaustion: 4 bursts in the pool.
	var held []*Burst
	for i := 0; i < 4; i++ {
		b, err := q.NewBurst(1)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, b)
	}
	if _, err := q.NewBurst(1); !errors.Is(err, ErrNoFreeBurstBuffers) {
		t.Fatalf("want ErrNoFreeBurstBuffers, got %v", err)
	}
	for _, b := range held {
		b.Free()
	}
}

func TestHeaderHelpersParse(t *testing.T) {
	r := testRegion(t, "d", 4, 2048)
	q := testTxQueue(t, true, r)
	b, err := q.NewBurst(2)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	payload := make([]byte, 100+rand.IntN(1800))
	for i := range payload {
		payload[i] = byte(rand.Uint32())
	}
	dst, _ := net.ParseMAC("02:00:00:00:00:02")
	src, _ := net.ParseMAC("02:00:00:00:00:01")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(b.SetEthHeader(1, dst, src))
	must(b.SetIPv4Header(1, UDPHeaderLen+len(payload), 17, netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")))
	must(b.SetUDPHeader(1, len(payload), 4096, 5000))
	must(b.SetUDPPayload(1, payload))
	if b.PacketLen(1) != UDPPayloadOffset+len(payload) {
		t.Fatalf("packet length %d", b.PacketLen(1))
	}
	pkt := gopacket.NewPacket(b.Packet(1), layers.LayerTypeEthernet, gopacket.Default)
	if el := pkt.ErrorLayer(); el != nil {
		t.Fatalf("parse: %v", el.Error())
	}
	ip := pkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	udp := pkt.Layer(layers.LayerTypeUDP).(*layers.UDP)
	if ip.TTL != 64 || ip.Length != uint16(28+len(payload)) || ip.SrcIP.String() != "10.0.0.1" || ip.DstIP.String() != "10.0.0.2" {
		t.Fatalf("ipv4 %+v", ip)
	}
	if IPv4Checksum(b.Packet(1)[EthHeaderLen:EthHeaderLen+IPv4HeaderLen]) != 0 {
		t.Fatal("IPv4 checksum does not verify")
	}
	if udp.SrcPort != 4096 || udp.DstPort != 5000 || udp.Length != uint16(8+len(payload)) || !bytes.Equal(udp.Payload, payload) {
		t.Fatalf("udp %v %v %v", udp.SrcPort, udp.DstPort, udp.Length)
	}
	// Bad input: an oversized payload and bad addresses are refused, nothing panics.
	if err := b.SetUDPPayload(0, make([]byte, 4000)); !errors.Is(err, ErrInvalidParameter) {
		t.Fatalf("oversized payload: %v", err)
	}
	if err := b.SetIPv4Header(0, 10, 17, netip.MustParseAddr("::1"), netip.MustParseAddr("10.0.0.2")); !errors.Is(err, ErrInvalidParameter) {
		t.Fatalf("IPv6 address: %v", err)
	}
	if err := b.SetPacketLengths(0, 5000); !errors.Is(err, ErrInvalidParameter) {
		t.Fatalf("length beyond buffer: %v", err)
	}
	if err := b.SetPacketLengths(9, 10); !errors.Is(err, ErrInvalidParameter) {
		t.Fatalf("bad index: %v", err)
	}
	if b.Packet(7) != nil || b.PacketLen(-1) != 0 || b.FlowID(99) != 0 {
		t.Fatal("bad index accessors must return zero values")
	}
	if _, err := b.RxTimestamp(0); !errors.Is(err, ErrNotSupported) {
		t.Fatalf("timestamp: %v", err)
	}
}

func TestSocketStreamPayloadAtZero(t *testing.T) {
	r := testRegion(t, "d", 2, 256)
	q := testTxQueue(t, false, r)
	b, _ := q.NewBurst(1)
	defer b.Free()
	if err := b.SetEthHeader(0, make(net.HardwareAddr, 6), nil); !errors.Is(err, ErrNotSupported) {
		t.Fatalf("eth header on a socket stream: %v", err)
	}
	if err := b.SetUDPPayload(0, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if string(b.Packet(0)) != "hello" {
		t.Fatalf("packet %q", b.Packet(0))
	}
}

func TestRxQueueDeliverAndShare(t *testing.T) {
	r := testRegion(t, "rx", 4, 1024)
	r.EnableSharing()
	meta, _ := NewMetaPool("rx", 3, 4, false)
	p := &Port{Name: "p"}
	q, err := NewRxQueue(p, 0, &config.Queue{ID: 0, BatchSize: 4}, []*Region{r}, meta, 1)
	if err != nil {
		t.Fatal(err)
	}
	idx, _ := r.Get()
	r.Share(idx, 3) // one buffer holding three packets (GRO)
	b, _ := q.NewBurst()
	for k := 0; k < 3; k++ {
		b.Append(uint64(idx)*1024+uint64(k*100), 100, 7, int64(k+1))
	}
	if !q.Deliver(b) {
		t.Fatal("deliver failed")
	}
	// Fill the ring (it holds two bursts); the next delivery is dropped and counted, buffers
	// returned.
	bf, _ := q.NewBurst()
	i1, _ := r.Get()
	r.Share(i1, 1)
	bf.Append(uint64(i1)*1024, 10, 0, 0)
	if !q.Deliver(bf) {
		t.Fatal("second delivery failed")
	}
	b2, _ := q.NewBurst()
	i2, _ := r.Get()
	r.Share(i2, 1)
	b2.Append(uint64(i2)*1024, 10, 0, 0)
	if q.Deliver(b2) {
		t.Fatal("delivery into a full ring succeeded")
	}
	if q.Stats.Drops(DropRingFull) != 1 || r.Available() != 2 {
		t.Fatalf("drops %d available %d", q.Stats.Drops(DropRingFull), r.Available())
	}
	got, ok := q.Next()
	if !ok || got.Len() != 3 || got.FlowID(2) != 7 {
		t.Fatal("wrong burst")
	}
	if ts, _ := got.RxTimestamp(2); ts != 3 {
		t.Fatalf("ts %d", ts)
	}
	got.FreePacket(0)
	got.FreePacket(1)
	if r.Available() != 2 {
		t.Fatal("shared buffer returned before its last packet was freed")
	}
	got.Free()
	if r.Available() != 3 {
		t.Fatalf("available %d after all packets freed", r.Available())
	}
	q.Drain()
	st := q.Stats.Snapshot()
	if st.Packets != 4 || st.Dropped != 1 || st.Drops["rx_ring_full"] != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestStatus(t *testing.T) {
	err := errors.Join(errors.New("x"), ErrNotReady)
	if !errors.Is(err, ErrNotReady) || StatusOf(ErrNoSpaceAvailable) != StatusNoSpaceAvailable || StatusOf(nil) != StatusSuccess {
		t.Fatal("status mapping")
	}
	if StatusOf(errors.New("other")) != StatusGenericFailure {
		t.Fatal("plain errors are generic failures")
	}
}

// TestFreePacketsBulk frees a burst larger than one bulk chunk with some packets and segments
// already freed: every buffer must be back exactly once.
func TestFreePacketsBulk(t *testing.T) {
	hdr := testRegion(t, "hdr", 300, 128)
	data := testRegion(t, "data", 300, 2048)
	q := testTxQueue(t, true, hdr, data)
	b, err := q.NewBurst(200)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i += 7 {
		b.FreePacket(i)
	}
	for i := 3; i < 200; i += 11 {
		b.FreeSegment(1, i)
	}
	b.Free()
	for _, r := range []*Region{hdr, data} {
		if r.Available() != 300 {
			t.Fatalf("region %s: %d of 300 buffers free", r.Name, r.Available())
		}
		seen := map[uint32]bool{}
		for range 300 {
			i, ok := r.Get()
			if !ok || seen[i] {
				t.Fatalf("region %s: buffer %d (ok %v) handed out twice", r.Name, i, ok)
			}
			seen[i] = true
		}
		for i := range seen {
			r.Put(i)
		}
	}
}

// TestRxQueueConcurrentPollers: bursts delivered by one thread and taken by several goroutines
// polling the same queue reach exactly one of them each, and none is lost.
func TestRxQueueConcurrentPollers(t *testing.T) {
	bursts := int64(testutil.Rounds(20000, 2000)) // three spinning pollers on an emulator's shared cores
	r := testRegion(t, "rx", 64, 64)
	meta, _ := NewMetaPool("rx", 32, 1, false)
	q, err := NewRxQueue(&Port{Name: "p"}, 0, &config.Queue{ID: 0, BatchSize: 1}, []*Region{r}, meta, 8)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	var seen sync.Map
	var taken, dup atomic.Int64
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			for taken.Load() < bursts && time.Now().Before(deadline) {
				b, ok := q.Next()
				if !ok {
					continue
				}
				ts, _ := b.RxTimestamp(0)
				if _, loaded := seen.LoadOrStore(ts, true); loaded {
					dup.Add(1)
				}
				taken.Add(1)
				b.Free()
			}
		})
	}
	for i := int64(1); i <= bursts && time.Now().Before(deadline); {
		b, err := q.NewBurst()
		if err != nil {
			continue // every burst is out with a poller: wait for one to come back
		}
		idx, ok := r.Get()
		if !ok {
			b.Free()
			continue
		}
		b.Append(uint64(idx)*64, 60, 0, i)
		if q.Deliver(b) {
			i++
		}
	}
	wg.Wait()
	if dup.Load() != 0 || taken.Load() != bursts {
		t.Fatalf("%d bursts taken of %d, %d taken twice", taken.Load(), bursts, dup.Load())
	}
	if r.Available() != 64 {
		t.Fatalf("%d of 64 buffers back", r.Available())
	}
}

// TestFreeAfterPartialFrees: Free returns each buffer exactly once whatever went back before
// it — nothing (Free's path that skips the per-packet flags), one packet, every packet
// (FreePackets) — for power-of-two buffers and others; a burst taken again from the pool
// after a partial free starts clean.
func TestFreeAfterPartialFrees(t *testing.T) {
	for _, size := range []int{64, 100} {
		r := testRegion(t, "r"+strconv.Itoa(size), 16, size)
		q := testTxQueue(t, true, r)
		for _, before := range []string{"nothing", "one packet", "FreePackets", "FreePackets twice"} {
			b, err := q.NewBurst(6)
			if err != nil {
				t.Fatal(err)
			}
			if r.Available() != 10 {
				t.Fatalf("size %d, %s: %d available after taking 6", size, before, r.Available())
			}
			switch before {
			case "one packet":
				b.FreePacket(3)
			case "FreePackets":
				b.FreePackets()
			case "FreePackets twice":
				b.FreePackets()
				b.FreePackets()
			}
			b.Free()
			if r.Available() != 16 {
				t.Fatalf("size %d, %s then Free: %d of 16 buffers back", size, before, r.Available())
			}
		}
	}
}
