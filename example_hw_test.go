package daqiri_test

import (
	"context"
	"fmt"
	"log"
	"net/netip"
	"time"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/mlx5/model/modelch"
)

// The ConnectX device model stands in for a NIC: interfaces at model:0 and model:1 are two
// ports of a model ConnectX in this process, cabled back to back, driven by the same mlx5
// engine (PRM commands, queues, doorbells, completions) that drives a real one. It needs no
// root and no hardware, so an application can test its datapath in CI against it.
func ExampleOpen_deviceModel() {
	region := func(name string) config.MemoryRegion {
		return config.MemoryRegion{Name: name, Kind: config.KindHost, NumBufs: 512, BufSize: 2048}
	}
	queue := func(name, region string) []config.Queue {
		return []config.Queue{{Name: name, ID: 0, CPUCore: "0", BatchSize: 32, MemoryRegions: []string{region}}}
	}
	cfg := &config.Config{
		Version: 1, StreamType: config.StreamRaw, LogLevel: "error",
		MemoryRegions: []config.MemoryRegion{region("tx"), region("rx")},
		Interfaces: []config.Interface{
			{Name: "a", Address: "model:0", TX: &config.TxConfig{Queues: queue("a_tx", "tx")}},
			{Name: "b", Address: "model:1", RX: &config.RxConfig{Queues: queue("b_rx", "rx")}},
		},
	}
	s, err := daqiri.Open(context.Background(), cfg, daqiri.WithMLX5Fabric(&modelch.Fabric{}))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	a, _ := s.Port("a")
	b, _ := s.Port("b")
	engine, _ := cfg.ResolveEngine(a)
	fmt.Println("engine:", engine)

	tx, err := s.TxBurst(a, 0, 4)
	if err != nil {
		fmt.Println(err)
		return
	}
	for i := range tx.Len() {
		fillUDP(tx, i, []byte(fmt.Sprintf("frame %d", i)))
	}
	if err := s.Send(tx); err != nil {
		tx.Free()
		fmt.Println(err)
		return
	}
	got := 0
	for deadline := time.Now().Add(10 * time.Second); got < 4 && time.Now().Before(deadline); {
		rx, err := s.RxBurst(b, 0)
		if err != nil {
			time.Sleep(time.Millisecond)
			continue
		}
		for i := range rx.Len() {
			fmt.Printf("b received %q\n", rx.Packet(i)[42:])
		}
		got += rx.Len()
		rx.Free()
	}
	// Output:
	// engine: mlx5
	// b received "frame 0"
	// b received "frame 1"
	// b received "frame 2"
	// b received "frame 3"
}

// GPU memory with header-data split: the NIC writes each packet's first 64 bytes (the
// headers) to host memory and the payload straight into GPU memory (GPUDirect RDMA), as
// upstream's daqiri_bench_raw_tx_rx_hds.yaml does. This needs a ConnectX NIC at the PCI
// address, the mlx5_ib kernel driver (the DevX transport), an NVIDIA GPU with its driver
// (libcuda.so.1) and GPUDirect RDMA (nvidia-peermem or DMA-BUF). examples/gpu-hds is the
// whole program.
func ExampleOpen_gpuHeaderDataSplit() {
	cfg, err := config.Parse([]byte(`
version: 1
stream_type: raw
memory_regions:
- {name: hdr, kind: huge, affinity: 0, num_bufs: 51200, buf_size: 64}
- {name: payload, kind: device, affinity: 0, num_bufs: 51200, buf_size: 1000}
interfaces:
- name: rx_port
  address: "0000:3b:00.0"
  rx:
    flow_isolation: true
    queues:
    - {name: q0, id: 0, cpu_core: 9, batch_size: 10240, memory_regions: [hdr, payload]}
    flows:
    - {name: data, id: 1, action: {type: queue, id: 0}, match: {udp_dst: 4096}}
`), "hds.yaml")
	if err != nil {
		log.Fatal(err)
	}
	s, err := daqiri.Open(context.Background(), cfg, daqiri.WithMLX5Fabric(&modelch.Fabric{}))
	if err != nil {
		log.Fatal(err) // e.g. no GPU, no such PCI device, or mlx5_ib not loaded
	}
	defer s.Close()
	for {
		b, err := s.RxBurst(0, 0)
		if err != nil {
			continue // ErrNotReady: nothing yet
		}
		for i := range b.Len() {
			hdr := b.Segment(0, i)         // host memory: the CPU reads the headers
			gpuAddr := b.SegmentAddr(1, i) // device memory: hand the address to a kernel
			_, _ = hdr, gpuAddr
		}
		b.Free()
	}
}

// A ConnectX by PCI address (or RDMA device name, mlx5_0) runs on the mlx5 engine over the
// kernel's mlx5_ib driver (DevX): the engine creates its own queues and steering through
// PRM commands, no libibverbs or DPDK. This path has run against the device model served to
// a VM's mlx5_ib, not yet on a ConnectX.
func ExampleOpen_mlx5DevX() {
	cfg := &config.Config{
		Version: 1, StreamType: config.StreamRaw,
		MemoryRegions: []config.MemoryRegion{{Name: "rx", Kind: config.KindHuge, NumBufs: 8192, BufSize: 2048}},
		Interfaces: []config.Interface{{
			Name: "nic", Address: "0000:3b:00.0", // or "mlx5_0"
			RX: &config.RxConfig{Queues: []config.Queue{{Name: "q0", ID: 0, CPUCore: "2", BatchSize: 256, MemoryRegions: []string{"rx"}}}},
		}},
	}
	s, err := daqiri.Open(context.Background(), cfg, daqiri.WithMLX5Fabric(&modelch.Fabric{}))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	for {
		if b, err := s.RxBurst(0, 0); err == nil { // no flows: every frame comes to queue 0
			b.Free()
		}
	}
}

// RoCE: a client interface connects to a RoCE server (RC queue pair through rdma_cm) and
// sends messages; the server side receives them as bursts. It needs an RDMA device with a
// RoCE GID on the address (a ConnectX, or Soft-RoCE: rdma link add rxe0 type rxe netdev
// eth0) and, for Soft-RoCE, root to create it.
func ExampleSession_RDMAConnect() {
	cfg, err := config.LoadFile("rdma_client.yaml") // stream_type socket, roce:// endpoints
	if err != nil {
		log.Fatal(err)
	}
	s, err := daqiri.Open(context.Background(), cfg, daqiri.WithMLX5Fabric(&modelch.Fabric{}))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	port, _ := s.Port("my_client")
	conn, err := s.RDMAConnect(port, netip.MustParseAddrPort("10.100.3.1:4096"), 5*time.Second)
	if err != nil {
		log.Fatal(err) // ErrConnectFailure with the reason
	}
	b, err := s.TxBurst(port, 0, 1)
	if err != nil {
		log.Fatal(err)
	}
	b.SetPacketLengths(0, 8000)
	// A SEND on the new connection; RDMAWrite/RDMARead name a region the server advertised.
	if err := s.RDMASetHeader(b, daqiri.RDMAHeader{Op: daqiri.RDMASend, Conn: conn}); err != nil {
		log.Fatal(err)
	}
	if err := s.Send(b); err != nil {
		b.Free()
		log.Fatal(err)
	}
}
