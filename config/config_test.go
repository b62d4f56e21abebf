package config_test

import (
	"errors"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/daqiri-go/daqiri/config"
	"go.yaml.in/yaml/v3"
)

func mustParse(t *testing.T, doc string) *config.Config {
	t.Helper()
	c, err := config.Parse([]byte(doc), "t.yaml")
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, numbered(doc))
	}
	return c
}

// TestDefaults: a minimal bare config gets every documented default.
func TestDefaults(t *testing.T) {
	c := mustParse(t, `
version: 1
stream_type: raw
memory_regions:
- {name: m, kind: host_pinned, affinity: 0, num_bufs: 64, buf_size: 2048}
- {name: o, kind: host_pinned, affinity: 0, num_bufs: 1, buf_size: 131072}
interfaces:
- name: p
  address: eth0
  rx:
    queues: [{name: q, id: 0, cpu_core: 0, batch_size: 64, memory_regions: [m]}]
    flows:
    - name: f
      id: 1
      actions:
      - {type: tunnel_decap, tunnel: {type: vxlan, outer_eth_src: "02:00:00:00:00:01", outer_eth_dst: "02:00:00:00:00:02", outer_ipv4_src: 10.0.0.1, outer_ipv4_dst: 10.0.0.2}}
      - {type: queue, id: 0}
    reorder_configs:
    - name: r
      reorder_type: gpu
      memory_region: o
      payload_byte_offset: 0
      flow_ids: [1]
      data_types: {input: int16, output: int32}
      method: {seq_batch_number: {sequence_number: {bit_offset: 0, bit_width: 8}, batch_number: {bit_offset: 8, bit_width: 3}}}
  tx:
    queues: [{name: t, id: 0, cpu_core: "1", batch_size: 8, memory_regions: [m]}]
    flows:
    - name: g
      id: 2
      actions:
      - {type: tunnel_encap, tunnel_type: gre, outer_eth_src: "02:00:00:00:00:01", outer_eth_dst: "02:00:00:00:00:02", outer_ipv4_src: 10.0.0.1, outer_ipv4_dst: 10.0.0.2}
      - {type: vlan_push, vlan_id: 7}
`)
	if c.LogLevel != "warn" || c.TxMetaBuffers != 256 || c.RxMetaBuffers != 256 || c.MasterCore != 0 || c.Engine != "" || c.Loopback != "" {
		t.Errorf("top-level defaults: %+v", c)
	}
	if c.MemoryRegions[0].Access != config.AccessLocal || c.MemoryRegions[0].Unowned {
		t.Errorf("region defaults: %+v", c.MemoryRegions[0])
	}
	rx, tx := c.Interfaces[0].RX, c.Interfaces[0].TX
	if rx.Queues[0].PollMode != config.PollIndirect || tx.Queues[0].PollMode != config.PollIndirect {
		t.Errorf("poll_mode default: %q %q", rx.Queues[0].PollMode, tx.Queues[0].PollMode)
	}
	if n, ok := tx.Queues[0].Core(); !ok || n != 1 {
		t.Errorf("cpu_core \"1\": %d %v", n, ok)
	}
	vx := rx.Flows[0].Actions[0].Tunnel
	if vx.OuterTTL != 64 || vx.OuterUDPDst != 4789 || vx.GREProtocol != 0 || vx.Type != config.TunnelVXLAN {
		t.Errorf("vxlan defaults: %+v", vx)
	}
	if v := tx.Flows[0].Actions[1].VLAN; v.EtherType != 0x8100 || v.ID != 7 {
		t.Errorf("vlan defaults: %+v", v)
	}
	if g := tx.Flows[0].Actions[0].Tunnel; g.GREProtocol != 0x0800 || g.OuterUDPDst != 0 || g.OuterTTL != 64 {
		t.Errorf("gre defaults: %+v", g)
	}
	r := rx.Reorders[0]
	if r.DataTypes.Endianness != config.EndianHost || r.DataTypes.Input != config.TypeInt16 || r.DataTypes.Output != config.TypeInt32 {
		t.Errorf("data_types: %+v", r.DataTypes)
	}
	if r.Method.PacketsPerBatch != 32 {
		t.Errorf("seq_batch_number packets_per_batch = %d, want 2^8/2^3 = 32", r.Method.PacketsPerBatch)
	}
	if e, err := c.ResolveEngine(0); e != config.EngineXDP || err != nil {
		t.Errorf("engine %q %v", e, err)
	}
	if len(c.Warnings) != 0 || len(c.Placeholders) != 0 || len(c.AppNames()) != 0 {
		t.Errorf("warnings %v placeholders %v apps %v", c.Warnings, c.Placeholders, c.AppNames())
	}
}

// TestAcceptedForms: every alternative spelling the schema allows decodes to the same values.
func TestAcceptedForms(t *testing.T) {
	c := mustParse(t, `%YAML 1.2
---
# anchors, merge keys, yes/no booleans, hex strings in actions, ranges, aliases of keys
daqiri:
  cfg:
    version: 1
    stream_type: raw
    engine: ibverbs
    debug: yes
    log_level: DEBUG
    rx_meta_buffers: 0x400
    memory_regions:
    - &mr {name: m, kind: huge, affinity: 0, num_bufs: 8, buf_size: 1024, access: [local, rdma_read, rdma_write], owned: false}
    - <<: *mr
      name: n
      kind: device
    interfaces:
    - name: p
      address: mlx5_0
      rx:
        flow_isolation: on
        hardware_timestamps: true
        dynamic_flow_capacity: 16
        queues:
        - {name: q0, id: 0, poll_mode: direct, memory_regions: [m]}
        - {name: q1, id: 1, cpu_core: "3", batch_size: 4, timeout_us: 5, memory_regions: [m, n]}
        flex_items:
        - {name: fx, id: 2, udp_dst_port: 4791, offset: 28}
        flows:
        - name: a
          id: 0xff
          actions:
          - {type: queue, ids: ["0x1", 0]}
          match: {flex_item_id: "2", val: 0xdeadbeef, mask: "0xffff0000"}
      tx:
        accurate_send: true
        queues:
        - {name: t, id: 0, cpu_core: 2, batch_size: 1, memory_regions: [m], pacing_mbps: 10000, offloads: [tx_eth_src]}
        flows:
        - name: v
          id: 1
          actions:
          - type: vlan_push
            vlan: {vlan_id: "0x10", pcp: 7, dei: 1, ethertype: "0x88a8"}
          - type: tunnel_encap
            tunnel_type: nvgre
            outer_eth_src: 02:00:00:00:00:01
            outer_eth_dst: 02:00:00:00:00:02
            outer_ipv4_src: 10.0.0.1
            outer_ipv4_dst: 10.0.0.2
            outer_ipv4_ttl: 9
            outer_ipv4_tos: 0x10
            tni: 0xffffff
            flow_id: 3
          match: {udp_src: "1000-1010", udp_dst: " 7 ", ipv4_len: 100, ipv4_dst: 192.0.2.9}
my_app:
  anything: [goes, here]
`)
	if !c.Debug || c.LogLevel != "DEBUG" || c.RxMetaBuffers != 1024 {
		t.Errorf("top: %+v", c)
	}
	m, n := c.MemoryRegions[0], c.MemoryRegions[1]
	if m.Access != config.AccessLocal|config.AccessRDMARead|config.AccessRDMAWrite || !m.Unowned {
		t.Errorf("region m: %+v", m)
	}
	if n.Name != "n" || n.Kind != config.KindDevice || n.BufSize != 1024 || !n.Unowned {
		t.Errorf("merged region n: %+v", n)
	}
	if e, err := c.ResolveEngine(0); e != config.EngineMLX5 || err != nil {
		t.Errorf("engine %q %v", e, err)
	}
	rx := c.Interfaces[0].RX
	if !rx.FlowIsolation || !rx.HardwareTimestamps || rx.DynamicFlowCapacity != 16 {
		t.Errorf("rx: %+v", rx)
	}
	if q := rx.Queues[0]; q.PollMode != config.PollDirect || q.CPUCore != "" || q.BatchSize != 0 {
		t.Errorf("direct queue: %+v", q)
	}
	f := rx.Flows[0]
	if f.ID != 255 || !reflect.DeepEqual(f.Actions[0].Queues, []int{1, 0}) {
		t.Errorf("flow a: %+v", f)
	}
	if fm := f.Match.Flex; fm == nil || fm.ItemID != 2 || fm.Value != 0xdeadbeef || fm.Mask != 0xffff0000 {
		t.Errorf("flex match: %+v", fm)
	}
	tx := c.Interfaces[0].TX
	if !tx.AccurateSend || tx.Queues[0].PacingMbps != 10000 {
		t.Errorf("tx: %+v", tx)
	}
	v := tx.Flows[0].Actions[0].VLAN
	if v != (config.VLAN{ID: 16, PCP: 7, DEI: 1, EtherType: 0x88a8}) {
		t.Errorf("vlan: %+v", v)
	}
	nv := tx.Flows[0].Actions[1].Tunnel
	mac, _ := net.ParseMAC("02:00:00:00:00:02")
	if nv.Type != config.TunnelNVGRE || nv.TNI != 0xffffff || nv.FlowID != 3 || nv.OuterTTL != 9 || nv.OuterTOS != 16 ||
		!reflect.DeepEqual(nv.OuterEthDst, mac) || nv.OuterIPv4Src != netip.MustParseAddr("10.0.0.1") {
		t.Errorf("nvgre: %+v", nv)
	}
	mt := tx.Flows[0].Match
	if mt.UDPSrc != (config.PortRange{Lo: 1000, Hi: 1010}) || mt.UDPDst != (config.PortRange{Lo: 7, Hi: 7}) || mt.IPv4Len != 100 ||
		mt.IPv4Dst != netip.MustParseAddr("192.0.2.9") || !mt.UDPSrc.Contains(1005) || mt.UDPSrc.Contains(999) {
		t.Errorf("match: %+v", mt)
	}
	if got := c.AppNames(); !reflect.DeepEqual(got, []string{"my_app"}) {
		t.Errorf("apps %v", got)
	}
}

// TestDirective: a byte-order mark before a %YAML 1.2 directive, and %YAML 1.1, work too.
func TestDirective(t *testing.T) {
	for _, pre := range []string{"\xef\xbb\xbf%YAML 1.2\n---\n", "%YAML 1.1\n---\n", "# c\n%YAML   1.2 # x\n%TAG ! tag:example.com,2000:\n---\n"} {
		if _, err := config.Parse([]byte(pre+sockBase), "d.yaml"); err != nil {
			t.Errorf("%q: %v", pre, err)
		}
	}
	if _, err := config.Parse([]byte("%YAML 1.3\n---\n"+sockBase), "d.yaml"); err == nil {
		t.Errorf("%%YAML 1.3 accepted")
	}
}

// TestSocketForms: legacy endpoint keys, RoCE query, extensions, TCP payloads above 64 KiB.
func TestSocketForms(t *testing.T) {
	c := mustParse(t, `
version: 1
stream_type: socket
memory_regions: [{name: m, kind: host_pinned, affinity: 0, num_bufs: 2, buf_size: 1048576}]
interfaces:
- name: s
  address: 10.0.0.1
  socket_config:
    mode: server
    local_ip: 10.0.0.1
    local_port: 6000
    max_payload_size: 1048576
    recv_buffer_size: 8388608
    send_buffer_size: 4194304
    retry_connect_s: 3
  rx: {queues: [{name: q, id: 0, cpu_core: 0, batch_size: 1, memory_regions: [m]}]}
- name: c
  address: 10.0.0.2
  socket_config: {mode: client, remote_addr: "tcp://10.0.0.1:6000", local_addr: "tcp://host-a.example:6001"}
  tx: {queues: [{name: q, id: 0, cpu_core: 0, batch_size: 1, memory_regions: [m]}]}
`)
	s := c.Interfaces[0].Socket
	want := config.Endpoint{Proto: config.ProtoTCP, Host: "10.0.0.1", Port: 6000}
	if s.Local != want || s.MaxPayload != 1<<20 || s.RecvBufferBytes != 8<<20 || s.SendBufferBytes != 4<<20 || s.RetryConnectS != 3 {
		t.Errorf("server socket: %+v", s)
	}
	if got := c.Interfaces[1].Socket.Local; got.Host != "host-a.example" || got.HostPort() != "host-a.example:6001" {
		t.Errorf("client local: %+v", got)
	}
	for i := range 2 {
		if e, err := c.ResolveEngine(i); e != config.EngineSocket || err != nil {
			t.Errorf("interface %d: %q %v", i, e, err)
		}
	}

	c = mustParse(t, roceBase)
	if ep := c.Interfaces[0].Socket.Local; ep.Port != 0 || ep.Proto != config.ProtoRoCE || ep.String() != "roce://10.0.0.1" {
		t.Errorf("roce client endpoint %+v", ep)
	}
	c = mustParse(t, strings.Replace(strings.Replace(roceBase, "roce://10.0.0.2:4096", "rdma://10.0.0.2:4096?engine=ibverbs", 1), "master_core: 0", "master_core: 0\n    engine: socket", 1))
	if ep := c.Interfaces[1].Socket.Local; ep.Proto != config.ProtoRoCE || ep.Query != "engine=ibverbs" || ep.String() != "roce://10.0.0.2:4096?engine=ibverbs" {
		t.Errorf("rdma alias: %+v", ep)
	}
	if e, err := c.ResolveEngine(1); e != config.EngineRoCE || err != nil {
		t.Errorf("engine socket with roce URI: %q %v", e, err)
	}
}

// TestCPUConversionAllowed: upstream rejects data_types on a cpu plan; daqiri-go converts on
// the CPU too.
func TestCPUConversionAllowed(t *testing.T) {
	doc := strings.Replace(rawBase, "              packets_per_batch: 1024\n", "              packets_per_batch: 1024\n          data_types: {input_type: int16, output_type: fp16, endianness: network}\n", 1)
	c := mustParse(t, doc)
	if dt := c.Interfaces[0].RX.Reorders[0].DataTypes; dt == nil || dt.Endianness != config.EndianNetwork {
		t.Errorf("data_types %+v", dt)
	}
}

func TestWarnings(t *testing.T) {
	doc := strings.Replace(rawBase, "          offloads: [tx_eth_src]\n", "          offloads: [tx_eth_src]\n          timeout_us: 10\n", 1)
	doc = strings.Replace(doc, "    - name: out_mr\n", "    - {name: spare, kind: host, affinity: 0, num_bufs: 1, buf_size: 64}\n    - name: out_mr\n", 1)
	c := mustParse(t, doc)
	want := []string{
		"t.yaml:20:7: memory_regions[2]: memory region spare is not used",
		"t.yaml:81:11: interfaces[0].tx.queues[0].timeout_us: timeout_us applies to RX queues only",
	}
	if len(c.Warnings) != len(want) {
		t.Fatalf("warnings %q", c.Warnings)
	}
	for i, w := range want {
		if !strings.HasPrefix(c.Warnings[i], w) {
			t.Errorf("warning %q, want prefix %q", c.Warnings[i], w)
		}
	}
	c = mustParse(t, roceBase)
	if len(c.Warnings) != 2 || !strings.Contains(c.Warnings[0], "interfaces[0].tx.queues[0].memory_regions: the roce engine receives into and sends from") {
		t.Errorf("roce warnings %q", c.Warnings)
	}
	// Validate recomputes warnings rather than appending.
	if err := c.Validate(); err != nil || len(c.Warnings) != 2 {
		t.Errorf("revalidate: %v %q", err, c.Warnings)
	}
}

// TestPlaceholders: template values are accepted where strings, MACs and IPs go, recorded,
// and the checks that depend on them are deferred to Open.
func TestPlaceholders(t *testing.T) {
	doc := strings.NewReplacer(
		"address: veth0", "address: <PCI>",
		"cpu_core: 2", "cpu_core: <CORE>",
		"outer_ipv4_src: 192.0.2.1", "outer_ipv4_src: <SRC>",
		"outer_eth_dst: 02:00:00:00:00:02", "outer_eth_dst: \"<MAC>\"",
		"ipv4_src: 10.0.0.1", "ipv4_src: <IP>",
	).Replace(rawBase)
	c := mustParse(t, doc)
	want := []string{
		"interfaces[0].address",
		"interfaces[0].rx.flows[1].match.ipv4_src",
		"interfaces[0].tx.queues[0].cpu_core",
		"interfaces[0].tx.flows[0].actions[1].tunnel.outer_eth_dst",
		"interfaces[0].tx.flows[0].actions[1].tunnel.outer_ipv4_src",
	}
	if !reflect.DeepEqual(c.Placeholders, want) {
		t.Errorf("placeholders %q", c.Placeholders)
	}
	if e, err := c.ResolveEngine(0); e != "" || err != nil {
		t.Errorf("engine of a placeholder address: %q %v", e, err)
	}
	if q := c.Interfaces[0].TX.Queues[0]; q.CPUCore != "" || c.Interfaces[0].Address != "" {
		t.Errorf("placeholder fields not zero: %+v", q)
	}
	e := c.Errorf(c.Placeholders[0], "fill in the placeholder")
	if e.Error() != "t.yaml:27:7: interfaces[0].address: fill in the placeholder" {
		t.Errorf("Errorf: %q", e.Error())
	}
	// A legacy endpoint IP may be a placeholder too.
	c = mustParse(t, strings.Replace(sockBase, "local_addr: udp://127.0.0.1:5001", "local_ip: <SERVER_IP>\n        local_port: 5001", 1))
	if !reflect.DeepEqual(c.Placeholders, []string{"interfaces[0].socket_config.local_ip"}) || !c.Interfaces[0].Socket.Local.IsZero() {
		t.Errorf("legacy placeholder: %q %+v", c.Placeholders, c.Interfaces[0].Socket.Local)
	}
	if out, _ := yaml.Marshal(c); !strings.Contains(string(out), "local_addr: <placeholder>") {
		t.Errorf("encoded legacy placeholder:\n%s", out)
	}
	// Placeholders are only accepted where free-form values go.
	_, err := config.Parse([]byte(strings.Replace(rawBase, "kind: huge", "kind: <KIND>", 1)), "t.yaml")
	if err == nil || !strings.Contains(err.Error(), `memory_regions[0].kind: unknown memory kind "<KIND>"`) {
		t.Errorf("placeholder kind: %v", err)
	}
	_, err = config.Parse([]byte(strings.Replace(rawBase, "batch_size: 64\n          memory_regions: [tx_mr]", "batch_size: <N>\n          memory_regions: [tx_mr]", 1)), "t.yaml")
	if err == nil || !strings.Contains(err.Error(), `batch_size: must be an integer, got "<N>"`) {
		t.Errorf("placeholder batch_size: %v", err)
	}
}

// TestErrorFormat pins the error text and Errorf's fallback to the nearest parent.
func TestErrorFormat(t *testing.T) {
	_, err := config.Parse([]byte(strings.Replace(rawBase, "batch_size: 64\n          memory_regions: [tx_mr]", "batch_size: 0\n          memory_regions: [tx_mr]", 1)), "rx.yaml")
	if err == nil || err.Error() != "rx.yaml:77:11: interfaces[0].tx.queues[0].batch_size: must be > 0, got 0" {
		t.Fatalf("got %q", err)
	}
	var e *config.Error
	if !errors.As(err, &e) || e.Line != 77 || e.Column != 11 || e.Path != "interfaces[0].tx.queues[0].batch_size" || e.File != "rx.yaml" {
		t.Errorf("errors.As: %+v", e)
	}

	c := mustParse(t, rawBase)
	for _, tc := range []struct {
		path string
		line int
	}{
		{"interfaces[0].rx.queues[1].batch_size", 40},
		{"interfaces[0].rx.queues[1].no_such_key", 37}, // the queue's line
		{"interfaces[0].rx.queues[7]", 30},             // the queues: key
		{"interfaces[0].tx.flows[0].actions[1].tunnel.vni", 93},
		{"memory_regions[2]", 20},
		{"bogus", 4}, // the cfg: map
		{"", 4},
	} {
		if got := c.Errorf(tc.path, "m"); got.Line != tc.line || got.Path != tc.path || got.File != "t.yaml" {
			t.Errorf("Errorf(%q) = %+v, want line %d", tc.path, got, tc.line)
		}
	}
	var code config.Config
	if got := code.Errorf("interfaces[0]", "no %s", "line"); got.Error() != "interfaces[0]: no line" || got.Line != 0 {
		t.Errorf("code config Errorf: %q", got.Error())
	}
	es := config.Errors{{Path: "a", Msg: "x"}, {File: "f", Line: 2, Msg: "y"}}
	if es.Error() != "2 configuration errors:\n\ta: x\n\tf:2: y" || len(es.Unwrap()) != 2 {
		t.Errorf("Errors.Error: %q", es.Error())
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	_, err := config.LoadFile(filepath.Join(dir, "missing.yaml"))
	if err == nil || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "missing.yaml: configuration file does not exist") {
		t.Errorf("missing file: %v", err)
	}
	// Load dispatches like upstream's daqiri_init(string).
	_, err = config.Load(filepath.Join(dir, "missing.yml"))
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load of a missing .yml: %v", err)
	}
	p := filepath.Join(dir, "sock.conf")
	if err := os.WriteFile(p, []byte(sockBase), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(p)
	if err != nil || len(c.Interfaces) != 2 {
		t.Errorf("Load of an existing file: %v", err)
	}
	if e := c.Errorf("interfaces[1]", "x"); e.File != p || e.Line != 30 {
		t.Errorf("file name in positions: %+v", e)
	}
	c, err = config.Load(sockBase)
	if err != nil || len(c.Interfaces) != 2 || c.Errorf("version", "x").File != "<input>" {
		t.Errorf("Load of YAML text: %v", err)
	}
	if _, err := config.LoadFile(dir); err == nil {
		t.Errorf("LoadFile of a directory succeeded")
	}
}

// benchTx mirrors upstream's bench_tx section.
type benchTx struct {
	InterfaceName string `yaml:"interface_name"`
	CPUCore       int    `yaml:"cpu_core"`
	BatchSize     int    `yaml:"batch_size"`
	PayloadSize   int    `yaml:"payload_size"`
	HeaderSize    int    `yaml:"header_size"`
	EthDstAddr    string `yaml:"eth_dst_addr"`
	IPSrcAddr     string `yaml:"ip_src_addr"`
	IPDstAddr     string `yaml:"ip_dst_addr"`
	UDPSrcPort    int    `yaml:"udp_src_port"`
	UDPDstPort    int    `yaml:"udp_dst_port"`
}

func TestApp(t *testing.T) {
	c, err := config.LoadFile("testdata/upstream/daqiri_bench_raw_tx_rx.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var tx []benchTx
	if err := c.App("bench_tx", &tx); err != nil {
		t.Fatal(err)
	}
	if len(tx) != 1 || tx[0].InterfaceName != "tx_port" || tx[0].PayloadSize != 8000 || tx[0].EthDstAddr != "<00:00:00:00:00:00>" {
		t.Errorf("bench_tx: %+v", tx)
	}
	// Strict: a key the struct lacks is an error with its line.
	type narrow struct {
		InterfaceName string `yaml:"interface_name"`
	}
	var rx []narrow
	err = c.App("bench_tx", &rx)
	es := config.AsErrors(err)
	if len(es) == 0 || es[0].Line != 64 || es[0].Path != "bench_tx" || !strings.Contains(es[0].Msg, "field cpu_core not found") {
		t.Errorf("strict App: %v", err)
	}
	// A wrong type is an error too.
	var wrong map[string]int
	if err := c.App("bench_rx", &wrong); err == nil {
		t.Errorf("decoding a list into a map succeeded")
	}
	if err := c.App("nope", &rx); err == nil || !strings.Contains(err.Error(), `no application section "nope" in the configuration (sections: bench_rx, bench_tx)`) {
		t.Errorf("missing section: %v", err)
	}
	if err := c.App("bench_tx", rx); err == nil {
		t.Errorf("non-pointer accepted")
	}
	// A section whose name cannot be a struct tag is decoded without the unknown-key check.
	c = mustParse(t, sockBase+"\"odd,name\": {port: 7}\n")
	var odd struct{ Port int }
	if err := c.App("odd,name", &odd); err != nil || odd.Port != 7 {
		t.Errorf("odd section name: %+v %v", odd, err)
	}
	var code config.Config
	if code.AppNames() != nil || code.App("x", &rx) == nil {
		t.Errorf("code config has application sections")
	}
}

func TestHelpers(t *testing.T) {
	c := mustParse(t, rawBase)
	if r := c.Region("out_mr"); r == nil || r.BufSize != 2097152 || c.Region("nope") != nil {
		t.Errorf("Region: %+v", r)
	}
	if i, ifc := c.Interface("port0"); i != 0 || ifc == nil || ifc.Address != "veth0" {
		t.Errorf("Interface: %d %+v", i, ifc)
	}
	if i, ifc := c.Interface("nope"); i != -1 || ifc != nil {
		t.Errorf("Interface(nope): %d %+v", i, ifc)
	}
	if _, err := c.ResolveEngine(3); err == nil {
		t.Errorf("ResolveEngine out of range succeeded")
	}
	if !config.IsPCIAddress("0000:3b:00.1") || !config.IsPCIAddress("3b:00.1") || config.IsPCIAddress("0000:3b:00.8") {
		t.Errorf("IsPCIAddress")
	}
	if !config.IsNetdevName("enp59s0f1np1") || config.IsNetdevName("a/b") || config.IsNetdevName("sixteen-chars-xx") || config.IsNetdevName("") {
		t.Errorf("IsNetdevName")
	}
	// The encoder writes a bare config map that parses back.
	out, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	c2 := mustParse(t, string(out))
	if !sameConfig(c, c2) {
		t.Errorf("round trip:\n%s", out)
	}
}

// TestEthernetMatch parses upstream's match.ethernet block alone and beside IPv4/UDP fields,
// and writes it back unchanged.
func TestEthernetMatch(t *testing.T) {
	doc := strings.Replace(rawBase, "udp_src: 4096\n            udp_dst: 4096",
		"udp_src: 4096\n            udp_dst: 4096\n            ethernet:\n              src: 02:00:00:00:00:01\n              dst: AA:BB:CC:DD:EE:FF", 1)
	doc = strings.Replace(doc, "udp_dst: \"5000-5010\"\n            ipv4_src: 10.0.0.1\n", "ethernet: {dst: \"aa:bb:cc:00:00:01\"}\n            ipv6_src: \"2001:db8::7\"\n            ipv6_dst: fd00::1\n", 1)
	c := mustParse(t, doc)
	fs := c.Interfaces[0].RX.Flows
	e0, e1 := fs[0].Match.Ethernet, fs[1].Match.Ethernet
	if e0 == nil || e0.Src.String() != "02:00:00:00:00:01" || e0.Dst.String() != "aa:bb:cc:dd:ee:ff" || fs[0].Match.UDPSrc.Lo != 4096 {
		t.Fatalf("flow 0 match %+v %+v", fs[0].Match, e0)
	}
	if e1 == nil || e1.Src != nil || e1.Dst.String() != "aa:bb:cc:00:00:01" {
		t.Fatalf("flow 1 ethernet %+v", e1)
	}
	if m := fs[1].Match; m.IPv6Src.String() != "2001:db8::7" || m.IPv6Dst.String() != "fd00::1" {
		t.Fatalf("flow 1 IPv6 addresses %v %v", m.IPv6Src, m.IPv6Dst)
	}
	out, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	c2 := mustParse(t, string(out))
	if !reflect.DeepEqual(c2.Interfaces[0].RX.Flows[0].Match, fs[0].Match) || !reflect.DeepEqual(c2.Interfaces[0].RX.Flows[1].Match, fs[1].Match) {
		t.Fatalf("round trip changed the matches:\n%s", out)
	}
	// A configuration built in code with a short address is refused with its path.
	c.Interfaces[0].RX.Flows[1].Match.Ethernet.Dst = net.HardwareAddr{1, 2, 3}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "interfaces[0].rx.flows[1].match.ethernet.dst: must be a 6-octet MAC address, got 3 octets") {
		t.Fatalf("short MAC: %v", err)
	}
}

// TestReorderPolicyKeys parses missing_action and cyclic_sequence and writes them back.
func TestReorderPolicyKeys(t *testing.T) {
	doc := strings.Replace(rawBase, "              packets_per_batch: 1024\n",
		"              packets_per_batch: 1024\n          missing_action: drop\n          cyclic_sequence:\n            epoch: {bit_offset: 544, bit_width: 10}\n", 1)
	c := mustParse(t, doc)
	r := c.Interfaces[0].RX.Reorders[0]
	if r.MissingAction != config.MissingDrop || r.Cyclic == nil || r.Cyclic.Epoch != (config.BitField{Offset: 544, Width: 10}) {
		t.Fatalf("parsed %+v %+v", r, r.Cyclic)
	}
	out, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	r2 := mustParse(t, string(out)).Interfaces[0].RX.Reorders[0]
	if !reflect.DeepEqual(r, r2) {
		t.Fatalf("round trip: %+v\n%s", r2, out)
	}
	if p := mustParse(t, rawBase).Interfaces[0].RX.Reorders[0]; p.MissingAction != "" || p.Cyclic != nil {
		t.Fatalf("defaults: %+v", p)
	}
}
