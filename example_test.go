package daqiri_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"time"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/metrics"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// loopbackConfig is a raw configuration on the software loopback: one interface whose TX
// queue comes back as its RX queue, 64 host buffers of 2 KiB each way. Everything the
// examples below build in code could equally come from YAML (config.LoadFile).
func loopbackConfig() *config.Config {
	region := func(name string) config.MemoryRegion {
		return config.MemoryRegion{Name: name, Kind: config.KindHost, NumBufs: 64, BufSize: 2048}
	}
	return &config.Config{
		Version: 1, StreamType: config.StreamRaw, Loopback: "sw", LogLevel: "error",
		RxMetaBuffers: 16, TxMetaBuffers: 16,
		MemoryRegions: []config.MemoryRegion{region("tx"), region("rx")},
		Interfaces: []config.Interface{{
			Name: "lb", Address: "loopback",
			TX: &config.TxConfig{Queues: []config.Queue{{Name: "txq", ID: 0, CPUCore: "0", BatchSize: 8, MemoryRegions: []string{"tx"}}}},
			RX: &config.RxConfig{Queues: []config.Queue{{Name: "rxq", ID: 0, CPUCore: "0", BatchSize: 8, MemoryRegions: []string{"rx"}}}},
		}},
	}
}

// fillUDP writes an Ethernet/IPv4/UDP frame around payload into packet i of a TX burst.
func fillUDP(b *daqiri.Burst, i int, payload []byte) error {
	dst := net.HardwareAddr{0x02, 0, 0, 0, 0, 0x02}
	src := net.HardwareAddr{0x02, 0, 0, 0, 0, 0x01}
	return errors.Join(
		b.SetEthHeader(i, dst, src),
		b.SetIPv4Header(i, 8+len(payload), 17, netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")),
		b.SetUDPHeader(i, len(payload), 4000, 5000),
		b.SetUDPPayload(i, payload),
	)
}

// A raw configuration on the software loopback runs anywhere, without root or a NIC: a
// burst sent on the TX queue comes back, zero copy, as a burst on the RX queue. The burst
// contract is the one every engine keeps: take a TX burst, fill it, Send it (the engine
// owns it now); take RX bursts (RxBurst never blocks) and Free each when done.
func Example() {
	s, err := daqiri.Open(context.Background(), loopbackConfig())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	port, _ := s.Port("lb")

	tx, err := s.TxBurst(port, 0, 3)
	if err != nil {
		fmt.Println(err)
		return
	}
	for i := range tx.Len() {
		if err := fillUDP(tx, i, []byte(fmt.Sprintf("sample %d", i))); err != nil {
			fmt.Println(err)
		}
	}
	if err := s.Send(tx); err != nil {
		tx.Free() // a failed Send leaves the burst with the caller
		fmt.Println(err)
		return
	}

	rx, err := s.RxBurst(port, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	for i := range rx.Len() {
		p := rx.Packet(i) // Ethernet frame: 14 + 20 + 8 bytes of headers, then the payload
		fmt.Printf("%d bytes, UDP to port %d: %q\n", len(p), binary.BigEndian.Uint16(p[36:]), p[42:])
	}
	rx.Free()
	_, err = s.RxBurst(port, 0)
	fmt.Println("then:", err)
	// Output:
	// 50 bytes, UDP to port 5000: "sample 0"
	// 50 bytes, UDP to port 5000: "sample 1"
	// 50 bytes, UDP to port 5000: "sample 2"
	// then: not ready
}

// UDP over the loopback interface with the socket engine: a server interface receives what
// a client interface sends. Socket packets are datagram payloads, without headers. This
// runs as any user.
func ExampleOpen_socket() {
	// A free UDP port for the server (a real configuration names a fixed one).
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	port := pc.LocalAddr().(*net.UDPAddr).Port
	pc.Close()

	ep := config.Endpoint{Proto: config.ProtoUDP, Host: "127.0.0.1", Port: port}
	cfg := &config.Config{
		Version: 1, StreamType: config.StreamSocket, LogLevel: "error",
		MemoryRegions: []config.MemoryRegion{
			{Name: "rx", Kind: config.KindHost, NumBufs: 64, BufSize: 2048},
			{Name: "tx", Kind: config.KindHost, NumBufs: 64, BufSize: 2048},
		},
		Interfaces: []config.Interface{
			{Name: "server", Address: "127.0.0.1", Socket: &config.SocketConfig{Mode: config.ModeServer, Local: ep},
				RX: &config.RxConfig{Queues: []config.Queue{{Name: "srx", ID: 0, CPUCore: "0", BatchSize: 16, MemoryRegions: []string{"rx"}}}}},
			{Name: "client", Address: "127.0.0.1", Socket: &config.SocketConfig{Mode: config.ModeClient, Remote: ep},
				TX: &config.TxConfig{Queues: []config.Queue{{Name: "ctx", ID: 0, CPUCore: "0", BatchSize: 16, MemoryRegions: []string{"tx"}}}}},
		},
	}
	s, err := daqiri.Open(context.Background(), cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	server, _ := s.Port("server")
	client, _ := s.Port("client")

	b, err := s.TxBurst(client, 0, 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	b.SetUDPPayload(0, []byte("hello"))
	b.SetUDPPayload(1, []byte("world"))
	if err := s.Send(b); err != nil {
		b.Free()
		fmt.Println(err)
		return
	}
	var got []string
	for deadline := time.Now().Add(10 * time.Second); len(got) < 2 && time.Now().Before(deadline); {
		rb, err := s.RxBurst(server, 0)
		if errors.Is(err, daqiri.ErrNotReady) {
			time.Sleep(time.Millisecond)
			continue
		}
		for i := range rb.Len() {
			got = append(got, string(rb.Packet(i)))
		}
		rb.Free()
	}
	fmt.Println(got)
	// Output:
	// [hello world]
}

// A configuration built in code is checked by Open as a loaded one is; every problem is
// reported at once, each with the key path it concerns.
func ExampleOpen_invalid() {
	cfg := loopbackConfig()
	cfg.Interfaces[0].RX.Queues[0].BatchSize = 0
	cfg.Interfaces[0].TX.Queues[0].MemoryRegions = []string{"nosuch"}
	_, err := daqiri.Open(context.Background(), cfg)
	for _, e := range config.AsErrors(err) {
		fmt.Println(e.Path+":", e.Msg)
	}
	// Output:
	// interfaces[0].rx.queues[0].batch_size: a queue with poll_mode indirect needs batch_size
	// interfaces[0].tx.queues[0].memory_regions[0]: memory region "nosuch" is not defined in memory_regions
}

// A CPU reorder plan gathers the packets of a batch by the sequence number they carry and
// hands the application one aggregate burst per batch, in sequence order, whatever order
// the packets came in.
func Example_reorder() {
	cfg := loopbackConfig()
	cfg.MemoryRegions = append(cfg.MemoryRegions, config.MemoryRegion{Name: "batches", Kind: config.KindHost, NumBufs: 4,
		BufSize: 4 * (2048 - 44)}) // room for 4 slots of the largest payload an RX buffer holds
	// A plan takes the packets of the flows it names. The software loopback does no
	// steering and delivers every packet with flow id 0, so flow 0 is the one to name;
	// on a NIC the flow's match selects the traffic.
	cfg.Interfaces[0].RX.Flows = []config.Flow{{Name: "samples", ID: 0,
		Actions: []config.Action{{Type: config.ActionQueue, Queues: []int{0}}},
		Match:   config.Match{UDPDst: config.PortRange{Lo: 5000, Hi: 5000}}}}
	cfg.Interfaces[0].RX.Reorders = []config.Reorder{{
		Name: "by_seq", Type: config.ReorderCPU, MemoryRegion: "batches", FlowIDs: []int{0},
		// The payload (after the 42 bytes of headers) starts with a 16-bit sequence number;
		// each slot gets the 8 bytes after it.
		PayloadByteOffset: 44,
		Method: config.ReorderMethod{Kind: config.MethodSeqPacketsPerBatch,
			Seq: config.BitField{Offset: 42 * 8, Width: 16}, PacketsPerBatch: 4},
	}}
	s, err := daqiri.Open(context.Background(), cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	tx, _ := s.TxBurst(0, 0, 4)
	for i, seq := range []uint16{2, 0, 3, 1} { // out of order
		p := binary.BigEndian.AppendUint16(nil, seq)
		p = fmt.Appendf(p, "slot %d..", seq)
		fillUDP(tx, i, p)
	}
	if err := s.Send(tx); err != nil {
		tx.Free()
		fmt.Println(err)
		return
	}
	for range 1000 { // the plan runs in the engine's worker: poll until the batch is out
		b, err := s.RxBurst(0, 0)
		if err != nil {
			time.Sleep(time.Millisecond)
			continue
		}
		info, _ := b.ReorderInfo()
		fmt.Printf("batch %d: %d packets, %d missing\n%q\n", info.BatchID, info.SourcePackets, info.Missing, b.Packet(0))
		b.Free()
		break
	}
	// Output:
	// batch 0: 4 packets, 0 missing
	// "slot 0..slot 1..slot 2..slot 3.."
}

// WithMeterProvider reports a session's queue counters as OpenTelemetry metrics (upstream
// DAQIRI's names). Here a manual reader collects them; metrics/promexport serves them to
// Prometheus instead.
func ExampleWithMeterProvider() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())

	s, err := daqiri.Open(context.Background(), loopbackConfig(), daqiri.WithMeterProvider(mp))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	tx, _ := s.TxBurst(0, 0, 5)
	for i := range tx.Len() {
		fillUDP(tx, i, make([]byte, 58)) // 100-byte frames
	}
	s.Send(tx)
	rx, _ := s.RxBurst(0, 0)
	rx.Free()

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		fmt.Println(err)
		return
	}
	var lines []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok {
				continue
			}
			for _, dp := range sum.DataPoints {
				iface, _ := dp.Attributes.Value(metrics.AttrInterface)
				lines = append(lines, fmt.Sprintf("%s{%s} %d %s", m.Name, iface.AsString(), dp.Value, m.Unit))
			}
		}
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// daqiri.rx.bytes{lb} 500 By
	// daqiri.rx.packets{lb} 5 {packet}
	// daqiri.tx.bytes{lb} 500 By
	// daqiri.tx.packets{lb} 5 {packet}
}

// Sending at given times: each packet of the burst leaves no earlier than the time set on
// it. The software loopback and the xdp engine hold packets in software; the mlx5 engine
// has the NIC wait for the time.
func ExampleSession_SetPacketTxTime() {
	s, err := daqiri.Open(context.Background(), loopbackConfig())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	tx, _ := s.TxBurst(0, 0, 3)
	start := time.Now()
	for i := range tx.Len() {
		fillUDP(tx, i, []byte{byte(i)})
		if err := s.SetPacketTxTime(tx, i, start.Add(time.Duration(i)*2*time.Millisecond)); err != nil {
			fmt.Println(err)
		}
	}
	if err := s.Send(tx); err != nil {
		tx.Free()
		fmt.Println(err)
		return
	}
	rx, _ := s.RxBurst(0, 0)
	fmt.Println(rx.Len(), "packets; not before their time:", time.Since(start) >= 4*time.Millisecond)
	rx.Free()
	// Output:
	// 3 packets; not before their time: true
}
