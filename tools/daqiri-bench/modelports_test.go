package main

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/daqiri-go/daqiri/config"
)

const twoPortsYAML = `daqiri:
  cfg:
    version: 1
    stream_type: "raw"
    memory_regions:
    - {name: "tx", kind: "device", affinity: 0, num_bufs: 64, buf_size: 2048}
    - {name: "rx", kind: "host_pinned", affinity: 0, num_bufs: 64, buf_size: 2048}
    interfaces:
    - name: "tx_port"
      address: <0000:00:00.0>
      tx:
        queues:
        - {name: "q", id: 0, batch_size: 8, cpu_core: 0, memory_regions: ["tx"]}
        flows:
        - name: "encap"
          id: 1
          actions:
          - type: tunnel_encap
            tunnel: {type: vxlan, vni: 5, outer_eth_src: <aa>, outer_eth_dst: <bb>, outer_ipv4_src: <1.2.3.4>, outer_ipv4_dst: <5.6.7.8>}
          match: {udp_dst: 4096}
    - name: "rx_port"
      address: "0000:3b:00.1"
      rx:
        flow_isolation: true
        queues:
        - {name: "q", id: 0, batch_size: 8, cpu_core: 0, memory_regions: ["rx"]}
        flows:
        - name: "decap"
          id: 2
          actions:
          - {type: tunnel_decap, tunnel: {type: vxlan, vni: 5, outer_eth_src: <aa>, outer_eth_dst: <bb>, outer_ipv4_src: <1.2.3.4>, outer_ipv4_dst: <5.6.7.8>}}
          - {type: queue, id: 0}
          match: {udp_dst: 4096}
`

// TestApplyModelPorts: auto puts the interfaces on model:0 and model:1 in order; KEY=N maps
// by interface name or address (with @IFNAME); tunnel placeholders get the same test values
// on both sides and leave the placeholder list; GPU regions become host memory; bad specs,
// unknown keys, socket streams and software-loopback files are errors that say so.
func TestApplyModelPorts(t *testing.T) {
	load := func() *config.Config {
		c, err := config.Parse([]byte(twoPortsYAML), "two.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := load()
	notes, err := applyModelPorts(c, "auto")
	if err != nil {
		t.Fatal(err)
	}
	if c.Interfaces[0].Address != "model:0" || c.Interfaces[1].Address != "model:1" {
		t.Errorf("auto: addresses %q %q", c.Interfaces[0].Address, c.Interfaces[1].Address)
	}
	if len(c.Placeholders) != 0 {
		t.Errorf("placeholders left: %v", c.Placeholders)
	}
	enc, dec := c.Interfaces[0].TX.Flows[0].Actions[0].Tunnel, c.Interfaces[1].RX.Flows[0].Actions[0].Tunnel
	if enc.OuterIPv4Src != netip.MustParseAddr("192.0.2.1") || dec.OuterIPv4Src != enc.OuterIPv4Src || enc.OuterEthSrc.String() != "02:00:00:00:00:0a" {
		t.Errorf("tunnel values: encap %+v decap %+v", enc, dec)
	}
	for _, mr := range c.MemoryRegions {
		if mr.Kind != config.KindHost {
			t.Errorf("region %s stays %s", mr.Name, mr.Kind)
		}
	}
	if err := c.Validate(); err != nil {
		t.Errorf("the mapped configuration does not validate: %v", err)
	}
	t.Logf("notes: %s", strings.Join(notes, "; "))

	c = load()
	if _, err := applyModelPorts(c, "rx_port=3@veth0, tx_port=2"); err != nil {
		t.Fatal(err)
	}
	if c.Interfaces[0].Address != "model:2" || c.Interfaces[1].Address != "model:3@veth0" {
		t.Errorf("by name: %q %q", c.Interfaces[0].Address, c.Interfaces[1].Address)
	}
	c = load()
	if _, err := applyModelPorts(c, "0000:3b:00.1=1"); err != nil {
		t.Fatal(err)
	}
	if c.Interfaces[1].Address != "model:1" || len(c.Placeholders) == 0 {
		t.Errorf("by address: %q, placeholders %v (tx_port's must stay)", c.Interfaces[1].Address, c.Placeholders)
	}
	for spec, want := range map[string]string{
		"tx_port":        "not KEY=N",
		"tx_port=x":      "not KEY=N",
		"nosuch=1":       `no interface is named or addressed "nosuch"`,
		"tx_port=-1":     "not KEY=N",
		"tx_port=100000": "not KEY=N",
	} {
		if _, err := applyModelPorts(load(), spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", spec, err, want)
		}
	}
	pcap, err := config.LoadFile("../../config/testdata/upstream/daqiri_example_pcap_writer_tx_rx.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := applyModelPorts(pcap, "auto"); err != nil {
		t.Fatal(err)
	}
	if len(pcap.Placeholders) != 0 || pcap.Interfaces[0].TX.Queues[0].CPUCore != "0" || pcap.Validate() != nil {
		t.Errorf("cpu_core placeholders: %v, core %q, validate %v", pcap.Placeholders, pcap.Interfaces[0].TX.Queues[0].CPUCore, pcap.Validate())
	}
	sw, err := config.LoadFile("../../config/testdata/upstream/daqiri_bench_raw_sw_loopback.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Issue 32: the software loopback becomes the model port's own loopback.
	notes, err = applyModelPorts(sw, "auto")
	if err != nil || sw.Loopback != "hw" || sw.Interfaces[0].Address != "model:0" || !strings.Contains(strings.Join(notes, "\n"), "loopback: sw becomes hw") || sw.Validate() != nil {
		t.Errorf("software-loopback file: %v, loopback %q, address %q, notes %q, validate %v", err, sw.Loopback, sw.Interfaces[0].Address, notes, sw.Validate())
	}
	sock, err := config.LoadFile("../../config/testdata/upstream/daqiri_bench_socket_udp_tx_rx.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := applyModelPorts(sock, "auto"); err == nil || !strings.Contains(err.Error(), "raw streams") {
		t.Errorf("socket stream: %v", err)
	}
}

// TestApplyModelPortsGPUHost (issue 27): on a host with GPUs, RX regions keep their GPU kind
// (the model writes them), a TX-only device region becomes host_pinned (the sender writes
// with the CPU), a device region feeding a gpu reorder plan becomes host_pinned (the plan
// reads sequence numbers with the CPU) while the plan's output stays device memory, a region
// on a GPU the host lacks becomes host memory, and gpu plans are accepted; each change is a
// note.
func TestApplyModelPortsGPUHost(t *testing.T) {
	c, err := config.Parse([]byte(twoPortsYAML), "two.yaml")
	if err != nil {
		t.Fatal(err)
	}
	notes, err := applyModelPortsGPU(c, "auto", 1)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]config.MemoryKind{}
	for _, mr := range c.MemoryRegions {
		kinds[mr.Name] = mr.Kind
	}
	if kinds["tx"] != config.KindHostPinned || kinds["rx"] != config.KindHostPinned {
		t.Fatalf("kinds %v, want tx host_pinned (TX only), rx host_pinned (kept)", kinds)
	}
	if !strings.Contains(strings.Join(notes, "\n"), "TX only") {
		t.Fatalf("notes %q do not explain the TX region", notes)
	}
	up, err := config.LoadFile("../../config/testdata/upstream/daqiri_bench_raw_tx_rx_reorder_seq_1024.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Issue 32: without a GPU a gpu plan becomes a cpu plan on host memory.
	notes, err = applyModelPorts(up, "auto")
	if err != nil || up.Interfaces[1].RX.Reorders[0].Type != config.ReorderCPU || !strings.Contains(strings.Join(notes, "\n"), "reorder_type gpu becomes cpu") || up.Validate() != nil {
		t.Fatalf("a gpu plan without a GPU: %v, type %q, notes %q, validate %v", err, up.Interfaces[1].RX.Reorders[0].Type, notes, up.Validate())
	}
	up, _ = config.LoadFile("../../config/testdata/upstream/daqiri_bench_raw_tx_rx_reorder_seq_1024.yaml")
	notes, err = applyModelPortsGPU(up, "auto", 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, mr := range up.MemoryRegions {
		kinds[mr.Name] = mr.Kind
	}
	if kinds["Data_RX_GPU"] != config.KindHostPinned || kinds["Reorder_RX_GPU"] != config.KindDevice {
		t.Fatalf("kinds %v: want the plan's source host_pinned and its output device", kinds)
	}
	if !strings.Contains(strings.Join(notes, "\n"), "reads sequence numbers with the CPU") {
		t.Fatalf("notes %q", notes)
	}
	up, _ = config.LoadFile("../../config/testdata/upstream/daqiri_bench_raw_tx_rx.yaml")
	for i := range up.MemoryRegions {
		up.MemoryRegions[i].Affinity = 1
	}
	if _, err := applyModelPortsGPU(up, "auto", 1); err != nil {
		t.Fatal(err)
	}
	for _, mr := range up.MemoryRegions {
		if mr.Kind != config.KindHost {
			t.Fatalf("region %s on GPU 1 of a one-GPU host: kind %s, want host", mr.Name, mr.Kind)
		}
	}
}
