package config_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/daqiri-go/daqiri/config"
)

// rawBase is a valid raw configuration that touches most of the schema; the bad-input cases
// are small edits of it.
const rawBase = `%YAML 1.2
---
daqiri:
  cfg:
    version: 1
    stream_type: raw
    master_core: 0
    log_level: info
    memory_regions:
    - name: rx_mr
      kind: huge
      affinity: 0
      num_bufs: 1024
      buf_size: 2048
    - name: tx_mr
      kind: host
      affinity: 0
      num_bufs: 1024
      buf_size: 2048
    - name: out_mr
      kind: host
      affinity: 0
      num_bufs: 4
      buf_size: 2097152
    interfaces:
    - name: port0
      address: veth0
      rx:
        flow_isolation: true
        queues:
        - name: rxq0
          id: 0
          cpu_core: 1
          batch_size: 1024
          timeout_us: 100
          memory_regions: [rx_mr]
        - name: rxq1
          id: 1
          cpu_core: 1
          batch_size: 64
          memory_regions: [rx_mr]
        flows:
        - name: f0
          id: 10
          action:
            type: queue
            id: 0
          match:
            udp_src: 4096
            udp_dst: 4096
        - name: f1
          id: 11
          actions:
          - type: vlan_pop
          - type: queue
            ids: [0, 1]
          match:
            udp_dst: "5000-5010"
            ipv4_src: 10.0.0.1
        reorder_configs:
        - name: r0
          reorder_type: cpu
          memory_region: out_mr
          payload_byte_offset: 64
          flow_ids: [10]
          method:
            seq_packets_per_batch:
              sequence_number:
                bit_offset: 512
                bit_width: 32
              packets_per_batch: 1024
      tx:
        queues:
        - name: txq0
          id: 0
          cpu_core: 2
          batch_size: 64
          memory_regions: [tx_mr]
          offloads: [tx_eth_src]
        flows:
        - name: push
          id: 20
          actions:
          - type: vlan_push
            vlan_id: 100
          - type: tunnel_encap
            tunnel:
              type: vxlan
              outer_eth_src: 02:00:00:00:00:01
              outer_eth_dst: 02:00:00:00:00:02
              outer_ipv4_src: 192.0.2.1
              outer_ipv4_dst: 192.0.2.2
              vni: 100
          match:
            udp_src: 4096
bench_rx:
  interface_name: port0
`

// sockBase is a valid UDP socket configuration: a server and a client.
const sockBase = `daqiri:
  cfg:
    version: 1
    stream_type: socket
    master_core: 0
    memory_regions:
    - name: srv
      kind: host
      affinity: 0
      num_bufs: 64
      buf_size: 9000
    - name: cli
      kind: host
      affinity: 0
      num_bufs: 64
      buf_size: 9000
    interfaces:
    - name: server
      address: 127.0.0.1
      socket_config:
        mode: server
        local_addr: udp://127.0.0.1:5001
      rx:
        queues:
        - name: srx
          id: 0
          cpu_core: 0
          batch_size: 32
          memory_regions: [srv]
    - name: client
      address: 127.0.0.1
      socket_config:
        mode: client
        remote_addr: udp://127.0.0.1:5001
      tx:
        queues:
        - name: ctx
          id: 0
          cpu_core: 1
          batch_size: 32
          memory_regions: [cli]
socket_bench_server:
  port: 5001
`

// roceBase is a valid RoCE configuration (upstream's rdma example, trimmed).
const roceBase = `daqiri:
  cfg:
    version: 1
    stream_type: socket
    master_core: 0
    interfaces:
    - name: client
      address: 10.0.0.1
      socket_config:
        mode: client
        local_addr: roce://10.0.0.1
      roce_config:
        transport_mode: RC
      tx:
        queues:
        - name: ctx
          id: 0
          cpu_core: 1
          batch_size: 1
    - name: server
      address: 10.0.0.2
      socket_config:
        mode: server
        local_addr: roce://10.0.0.2:4096
      roce_config:
        transport_mode: RC
      rx:
        queues:
        - name: srx
          id: 0
          cpu_core: 2
          batch_size: 1
`

// badCase is a base configuration, edits that break it, and the errors expected. Each edit's
// replacement marks the line an error must point at with "#!" (want[0]) or "#!N" (want[N]).
type badCase struct {
	name  string
	base  string
	edits []string // old, new, old, new, ...
	want  []string // "path: message fragment"
}

// apply performs the edits, failing the test when an old text is missing or ambiguous.
func apply(t *testing.T, base string, edits []string) string {
	t.Helper()
	if len(edits)%2 != 0 {
		t.Fatalf("odd number of edit strings")
	}
	s := base
	for i := 0; i < len(edits); i += 2 {
		if n := strings.Count(s, edits[i]); n != 1 {
			t.Fatalf("edit %q matches %d times", edits[i], n)
		}
		s = strings.Replace(s, edits[i], edits[i+1], 1)
	}
	return s
}

// markers maps want index → line of its marker: "#!" is want[0], "#!N" is want[N]; one line
// may carry several markers.
func markers(s string) map[int]int {
	out := map[int]int{}
	for i, l := range strings.Split(s, "\n") {
		for _, part := range strings.Split(l, "#!")[1:] {
			n := 0
			fmt.Sscanf(part, "%d", &n)
			out[n] = i + 1
		}
	}
	return out
}

// checkErrors asserts that err holds exactly the wanted errors at the marked lines.
func checkErrors(t *testing.T, doc string, err error, want []string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want %q\n%s", want, doc)
	}
	es := config.AsErrors(err)
	if es == nil {
		t.Fatalf("error is not a config error: %T %v", err, err)
	}
	lines := markers(doc)
	matched := make([]bool, len(es))
	for i, w := range want {
		path, frag, _ := strings.Cut(w, ": ")
		line, ok := lines[i]
		if !ok {
			t.Fatalf("want[%d] %q has no #!%d marker in the document", i, w, i)
		}
		found := false
		for k, e := range es {
			if !matched[k] && e.Path == path && strings.Contains(e.Msg, frag) && e.Line == line {
				matched[k], found = true, true
				break
			}
		}
		if !found {
			t.Errorf("missing error at line %d: %s\ngot:\n%v", line, w, err)
		}
	}
	for k, e := range es {
		if !matched[k] {
			t.Errorf("unexpected error: %v", e)
		}
	}
	if t.Failed() {
		t.Logf("document:\n%s", numbered(doc))
	}
}

func numbered(s string) string {
	var b strings.Builder
	for i, l := range strings.Split(s, "\n") {
		fmt.Fprintf(&b, "%3d %s\n", i+1, l)
	}
	return b.String()
}

func runBad(t *testing.T, cases []badCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := apply(t, tc.base, tc.edits)
			c, err := config.Parse([]byte(doc), "bad.yaml")
			if c != nil {
				t.Errorf("Parse returned a config along with the error")
			}
			checkErrors(t, doc, err, tc.want)
			if es := config.AsErrors(err); es != nil {
				for _, e := range es {
					if e.File != "bad.yaml" {
						t.Errorf("error without the file name: %v", e)
					}
				}
			}
		})
	}
}

// TestBasesValid makes sure the bases themselves load, so every failure below is the edit's.
func TestBasesValid(t *testing.T) {
	for name, base := range map[string]string{"raw": rawBase, "socket": sockBase, "roce": roceBase} {
		c, err := config.Parse([]byte(base), name)
		if err != nil {
			t.Fatalf("%s base: %v", name, err)
		}
		if len(c.Warnings) != 0 {
			t.Errorf("%s base: warnings %v", name, c.Warnings)
		}
	}
}

// §2.12 items 1-6: top level and engine selection.
func TestBadTopLevel(t *testing.T) {
	runBad(t, []badCase{
		{"missing stream_type", rawBase, []string{"  cfg:\n", "  cfg: #!\n", "    stream_type: raw\n", ""},
			[]string{"stream_type: the configuration needs stream_type"}},
		{"stream_type tcp", rawBase, []string{"stream_type: raw", "stream_type: tcp #!"},
			[]string{"stream_type: invalid stream_type \"tcp\""}},
		{"engine rdma", rawBase, []string{"master_core: 0", "master_core: 0\n    engine: rdma #!"},
			[]string{"engine: use engine: ibverbs"}},
		{"engine foo", rawBase, []string{"master_core: 0", "master_core: 0\n    engine: foo #!"},
			[]string{"engine: unknown engine \"foo\" (valid: default, dpdk, socket, ibverbs, roce, xdp, mlx5, loopback)"}},
		{"engine dpdk on socket", sockBase, []string{"master_core: 0", "master_core: 0\n    engine: dpdk #!"},
			[]string{"engine: not valid for stream_type socket"}},
		{"engine socket on raw", rawBase, []string{"master_core: 0", "master_core: 0\n    engine: socket #!"},
			[]string{"engine: not valid for stream_type raw"}},
		{"engine ibverbs with udp", sockBase, []string{"master_core: 0", "master_core: 0\n    engine: ibverbs #!"},
			[]string{"engine: udp:// endpoints need engine socket"}},
		{"legacy manager", rawBase, []string{"master_core: 0", "master_core: 0\n    manager: dpdk #!"},
			[]string{"manager: legacy key manager was removed"}},
		{"legacy protocol", sockBase, []string{"master_core: 0", "master_core: 0\n    protocol: udp #!"},
			[]string{"protocol: legacy key protocol was removed"}},
		{"legacy rdma_config", roceBase, []string{"      roce_config:\n        transport_mode: RC\n      tx:", "      rdma_config: {} #!\n      roce_config:\n        transport_mode: RC\n      tx:"},
			[]string{"interfaces[0].rdma_config: legacy key rdma_config was removed"}},
		{"loopback hw", rawBase, []string{"master_core: 0", "master_core: 0\n    loopback: hw #!"},
			[]string{"loopback: invalid loopback \"hw\""}},
		{"loopback sw on socket", sockBase, []string{"master_core: 0", "master_core: 0\n    loopback: sw #!"},
			[]string{"loopback: software loopback of raw streams"}},
		{"loopback sw with engine xdp", rawBase, []string{"master_core: 0", "master_core: 0\n    loopback: sw #!\n    engine: xdp"},
			[]string{"loopback: cannot be combined with engine: xdp"}},
		{"version 2", rawBase, []string{"version: 1", "version: 2 #!"},
			[]string{"version: must be 1"}},
		{"version missing", rawBase, []string{"  cfg:\n", "  cfg: #!\n", "    version: 1\n", ""},
			[]string{"version: the configuration needs version"}},
		{"version a string", rawBase, []string{"version: 1", "version: one #!"},
			[]string{"version: must be an integer, got \"one\""}},
		{"log_level", rawBase, []string{"log_level: info", "log_level: loud #!"},
			[]string{"log_level: invalid log_level \"loud\""}},
		{"tx_meta_buffers 0", rawBase, []string{"master_core: 0", "master_core: 0\n    tx_meta_buffers: 0 #!"},
			[]string{"tx_meta_buffers: must be ≥ 1, got 0"}},
		{"rx_meta_buffers absurd", rawBase, []string{"master_core: 0", "master_core: 0\n    rx_meta_buffers: 2000000 #!"},
			[]string{"rx_meta_buffers: must be between 1 and 1048576"}},
		{"master_core negative", rawBase, []string{"master_core: 0", "master_core: -1 #!"},
			[]string{"master_core: must be ≥ 0, got -1"}},
		{"debug not bool", rawBase, []string{"master_core: 0", "master_core: 0\n    debug: maybe #!"},
			[]string{"debug: must be true or false"}},
		{"unknown key", rawBase, []string{"master_core: 0", "master_core: 0\n    mastercore: 1 #!"},
			[]string{"mastercore: unknown key \"mastercore\" in the configuration (did you mean \"master_core\"?)"}},
		{"interfaces not a list", rawBase, []string{"    interfaces:\n    - name: port0", "    interfaces: #!\n      name: port0"},
			[]string{"interfaces: interfaces must be a list, got a map"}},
		{"config key beside daqiri", rawBase, []string{"bench_rx:", "version: 1 #!\nbench_rx:"},
			[]string{"version: belongs under daqiri: cfg:"}},
		{"daqiri without cfg", "daqiri: #!1\n  config: {} #!\n", nil,
			[]string{"daqiri.config: unknown key \"config\" in the daqiri section", "daqiri.cfg: needs cfg:"}},
	})
}

// §2.12 items 7-8 and the other memory region rules.
func TestBadMemoryRegions(t *testing.T) {
	runBad(t, []badCase{
		{"duplicate name", rawBase, []string{"      buf_size: 2097152\n", "      buf_size: 2097152\n    - name: rx_mr #!\n      kind: host\n      affinity: 0\n      num_bufs: 1\n      buf_size: 64\n"},
			[]string{"memory_regions[3].name: duplicate memory region name \"rx_mr\""}},
		{"missing buf_size", rawBase, []string{"    - name: tx_mr\n      kind: host\n      affinity: 0\n      num_bufs: 1024\n      buf_size: 2048\n", "    - name: tx_mr #!\n      kind: host\n      affinity: 0\n      num_bufs: 1024\n"},
			[]string{"memory_regions[1].buf_size: a memory region needs buf_size"}},
		{"missing num_bufs", rawBase, []string{"    - name: out_mr\n      kind: host\n      affinity: 0\n      num_bufs: 4\n", "    - name: out_mr #!\n      kind: host\n      affinity: 0\n"},
			[]string{"memory_regions[2].num_bufs: a memory region needs num_bufs"}},
		{"missing affinity and kind", rawBase, []string{"    - name: out_mr\n      kind: host\n      affinity: 0\n", "    - name: out_mr #! #!1\n"},
			[]string{"memory_regions[2].kind: needs kind", "memory_regions[2].affinity: needs affinity"}},
		{"missing name", rawBase, []string{"    - name: out_mr\n      kind: host\n", "    - kind: host #!\n", "memory_region: out_mr", "memory_region: out_mr #!1"},
			[]string{"memory_regions[2].name: needs name", "interfaces[0].rx.reorder_configs[0].memory_region: \"out_mr\" is not defined"}},
		{"kind foo", rawBase, []string{"kind: huge", "kind: foo #!"},
			[]string{"memory_regions[0].kind: unknown memory kind \"foo\""}},
		{"access foo", rawBase, []string{"      kind: huge\n", "      kind: huge\n      access: [local, foo] #!\n"},
			[]string{"memory_regions[0].access[1]: unknown access \"foo\""}},
		{"access empty", rawBase, []string{"      kind: huge\n", "      kind: huge\n      access: [] #!\n"},
			[]string{"memory_regions[0].access: at least one of local"}},
		{"num_bufs 0", rawBase, []string{"num_bufs: 4", "num_bufs: 0 #!"},
			[]string{"memory_regions[2].num_bufs: must be > 0, got 0"}},
		{"buf_size negative", rawBase, []string{"buf_size: 2097152", "buf_size: -5 #!"},
			[]string{"memory_regions[2].buf_size: must be > 0, got -5"}},
		{"too big", rawBase, []string{"    - name: out_mr\n      kind: host\n      affinity: 0\n      num_bufs: 4\n", "    - name: out_mr #!\n      kind: host\n      affinity: 0\n      num_bufs: 100000000000\n"},
			[]string{"memory_regions[2]: exceeds"}},
		{"buf_size a string", rawBase, []string{"buf_size: 2097152", "buf_size: 2MiB #!"},
			[]string{"memory_regions[2].buf_size: must be an integer, got \"2MiB\""}},
		{"owned not bool", rawBase, []string{"buf_size: 2097152", "buf_size: 2097152\n      owned: 1 #!"},
			[]string{"memory_regions[2].owned: must be true or false, got integer 1"}},
		{"not a map", rawBase, []string{"    - name: out_mr\n      kind: host\n      affinity: 0\n      num_bufs: 4\n      buf_size: 2097152\n", "    - out_mr #!\n", "memory_region: out_mr", "memory_region: out_mr #!1"},
			[]string{"memory_regions[2]: a memory region must be a map, got \"out_mr\"", "interfaces[0].rx.reorder_configs[0].memory_region: \"out_mr\" is not defined"}},
	})
}

// §2.12 items 9-16: interfaces, socket_config, URIs, roce_config.
func TestBadInterfacesAndSockets(t *testing.T) {
	const srvSock = "      socket_config:\n        mode: server\n        local_addr: udp://127.0.0.1:5001\n"
	runBad(t, []badCase{
		{"socket without socket_config", sockBase, []string{"    - name: server\n", "    - name: server #!\n", srvSock, ""},
			[]string{"interfaces[0].socket_config: need socket_config"}},
		{"raw with socket_config", rawBase, []string{"      address: veth0\n", "      address: veth0\n      socket_config: {mode: server} #!\n"},
			[]string{"interfaces[0].socket_config: only for stream_type socket"}},
		{"mode peer", sockBase, []string{"mode: server", "mode: peer #!"},
			[]string{"interfaces[0].socket_config.mode: invalid socket mode \"peer\""}},
		{"mode missing", sockBase, []string{srvSock, "      socket_config: #!\n        local_addr: udp://127.0.0.1:5001\n"},
			[]string{"interfaces[0].socket_config.mode: socket_config needs mode"}},
		{"uri without scheme", sockBase, []string{"local_addr: udp://127.0.0.1:5001", "local_addr: 127.0.0.1:5001 #!"},
			[]string{"interfaces[0].socket_config.local_addr: must have the form scheme://ipv4[:port]"}},
		{"uri sctp", sockBase, []string{"local_addr: udp://127.0.0.1:5001", "local_addr: sctp://127.0.0.1:5001 #!"},
			[]string{"interfaces[0].socket_config.local_addr: unknown scheme \"sctp\""}},
		{"uri missing port", sockBase, []string{"local_addr: udp://127.0.0.1:5001", "local_addr: udp://127.0.0.1 #!"},
			[]string{"interfaces[0].socket_config.local_addr: needs a port"}},
		{"uri port 0", sockBase, []string{"remote_addr: udp://127.0.0.1:5001", "remote_addr: udp://127.0.0.1:0 #!"},
			[]string{"interfaces[1].socket_config.remote_addr: needs a port"}},
		{"uri port 70000", sockBase, []string{"local_addr: udp://127.0.0.1:5001", "local_addr: udp://127.0.0.1:70000 #!"},
			[]string{"interfaces[0].socket_config.local_addr: port 70000 in \"udp://127.0.0.1:70000\" is out of range"}},
		{"uri port not numeric", sockBase, []string{"local_addr: udp://127.0.0.1:5001", "local_addr: udp://127.0.0.1:http #!"},
			[]string{"interfaces[0].socket_config.local_addr: port \"http\" in \"udp://127.0.0.1:http\" is not a number"}},
		{"uri bad host", sockBase, []string{"local_addr: udp://127.0.0.1:5001", "local_addr: udp://1.2.3:5001 #!"},
			[]string{"interfaces[0].socket_config.local_addr: not a valid IPv4 address"}},
		{"uri query on udp", sockBase, []string{"local_addr: udp://127.0.0.1:5001", "local_addr: udp://127.0.0.1:5001?engine=ibverbs #!"},
			[]string{"interfaces[0].socket_config.local_addr: query parameters are only allowed on roce://"}},
		{"uri query foo", roceBase, []string{"local_addr: roce://10.0.0.1", "local_addr: roce://10.0.0.1?foo=bar #!"},
			[]string{"interfaces[0].socket_config.local_addr: query parameter \"foo=bar\" is not supported"}},
		{"uri query engine dpdk", roceBase, []string{"local_addr: roce://10.0.0.1", "local_addr: roce://10.0.0.1?engine=dpdk #!"},
			[]string{"interfaces[0].socket_config.local_addr: query parameter \"engine=dpdk\" is not supported"}},
		{"mixed schemes", sockBase, []string{"remote_addr: udp://127.0.0.1:5001", "remote_addr: tcp://127.0.0.1:5001 #!"},
			[]string{"interfaces[1].socket_config.remote_addr: scheme tcp conflicts with the protocol udp inferred from interfaces[0].socket_config.local_addr"}},
		{"local_addr and local_ip", sockBase, []string{"local_addr: udp://127.0.0.1:5001", "local_addr: udp://127.0.0.1:5001\n        local_ip: 127.0.0.1 #!"},
			[]string{"interfaces[0].socket_config.local_ip: local_addr cannot be combined with local_ip/local_port"}},
		{"server without port", sockBase, []string{"local_addr: udp://127.0.0.1:5001", "local_ip: 127.0.0.1 #!"},
			[]string{"interfaces[0].socket_config.local_ip: a server's local_addr needs a port"}},
		{"server without local_addr", sockBase, []string{srvSock, "      socket_config: #!\n        mode: server\n        max_payload_size: 9000\n"},
			[]string{"interfaces[0].socket_config.local_addr: server mode needs local_addr"}},
		{"server with remote_addr", sockBase, []string{"local_addr: udp://127.0.0.1:5001", "local_addr: udp://127.0.0.1:5001\n        remote_addr: udp://127.0.0.1:6000 #!"},
			[]string{"interfaces[0].socket_config.remote_addr: a server has no remote_addr"}},
		{"udp client without remote_addr", sockBase, []string{"      socket_config:\n        mode: client\n        remote_addr: udp://127.0.0.1:5001", "      socket_config: #!\n        mode: client\n        local_addr: udp://127.0.0.1:5002"},
			[]string{"interfaces[1].socket_config.remote_addr: a udp client needs remote_addr"}},
		{"roce client with remote_addr", roceBase, []string{"local_addr: roce://10.0.0.1", "local_addr: roce://10.0.0.1\n        remote_addr: roce://10.0.0.2:4096 #!"},
			[]string{"interfaces[0].socket_config.remote_addr: a RoCE client has no remote_addr"}},
		{"roce client without local_addr", roceBase, []string{"      socket_config:\n        mode: client\n        local_addr: roce://10.0.0.1\n", "      socket_config: #!\n        mode: client\n"},
			[]string{"interfaces[0].socket_config.local_addr: a RoCE client needs local_addr"}},
		{"roce without roce_config", roceBase, []string{"    - name: client\n", "    - name: client #!\n", "      roce_config:\n        transport_mode: RC\n      tx:", "      tx:"},
			[]string{"interfaces[0].roce_config: roce:// endpoints need roce_config"}},
		{"udp with roce_config", sockBase, []string{"        local_addr: udp://127.0.0.1:5001\n", "        local_addr: udp://127.0.0.1:5001\n      roce_config: #!\n        transport_mode: RC\n"},
			[]string{"interfaces[0].roce_config: only for roce:// endpoints"}},
		{"transport_mode XX", roceBase, []string{"transport_mode: RC\n      tx:", "transport_mode: XX #!\n      tx:"},
			[]string{"interfaces[0].roce_config.transport_mode: invalid transport_mode \"XX\""}},
		{"transport_mode missing", roceBase, []string{"      roce_config:\n        transport_mode: RC\n      tx:", "      roce_config: {} #!\n      tx:"},
			[]string{"interfaces[0].roce_config.transport_mode: roce_config needs transport_mode"}},
		{"device MR on udp", sockBase, []string{"    - name: cli\n      kind: host", "    - name: cli\n      kind: device", "memory_regions: [cli]", "memory_regions: [cli] #!"},
			[]string{"interfaces[1].tx.queues[0].memory_regions[0]: device (GPU) memory"}},
		{"legacy local_ip without protocol", strings.Replace(sockBase, "udp://127.0.0.1:5001", "x", 2), []string{"local_addr: x", "local_ip: 127.0.0.1 #!\n        local_port: 5001", "remote_addr: x", "remote_ip: 127.0.0.1 #!1\n        remote_port: 5001"},
			[]string{"interfaces[0].socket_config.local_ip: missing socket protocol", "interfaces[1].socket_config.remote_ip: missing socket protocol"}},
		{"local_port without local_ip", sockBase, []string{"local_addr: udp://127.0.0.1:5001", "local_port: 5001 #!"},
			[]string{"interfaces[0].socket_config.local_port: local_port needs local_ip"}},
		{"udp max_payload_size", sockBase, []string{"local_addr: udp://127.0.0.1:5001", "local_addr: udp://127.0.0.1:5001\n        max_payload_size: 70000 #!"},
			[]string{"interfaces[0].socket_config.max_payload_size: a UDP payload is at most 65535 bytes"}},
		{"retry_connect_s 0", sockBase, []string{"local_addr: udp://127.0.0.1:5001", "local_addr: udp://127.0.0.1:5001\n        retry_connect_s: 0 #!"},
			[]string{"interfaces[0].socket_config.retry_connect_s: must be ≥ 1, got 0"}},
		{"socket_config unknown key", sockBase, []string{"mode: server", "mode: server\n        local_adr: udp://127.0.0.1:5001 #!"},
			[]string{"interfaces[0].socket_config.local_adr: did you mean \"local_addr\"?"}},
		{"duplicate interface name", sockBase, []string{"- name: client", "- name: server #!"},
			[]string{"interfaces[1].name: duplicate interface name \"server\""}},
		{"interface without address", sockBase, []string{"    - name: client\n      address: 127.0.0.1\n", "    - name: client #!\n"},
			[]string{"interfaces[1].address: an interface needs address"}},
		{"raw address is an IP", rawBase, []string{"address: veth0", "address: 10.0.0.1 #!"},
			[]string{"interfaces[0].address: is an IP address; raw interfaces need a Linux netdev name"}},
		{"raw address is a MAC", rawBase, []string{"address: veth0", "address: 02:00:00:00:00:01 #!"},
			[]string{"interfaces[0].address: neither a PCI address (dddd:bb:dd.f) nor a Linux netdev name"}},
		{"five interfaces", sockBase, []string{"    interfaces:\n", "    interfaces: #!\n    - {name: a, address: 1.1.1.1, socket_config: {mode: client, remote_addr: \"udp://1.1.1.1:1\"}}\n    - {name: b, address: 1.1.1.1, socket_config: {mode: client, remote_addr: \"udp://1.1.1.1:1\"}}\n    - {name: c, address: 1.1.1.1, socket_config: {mode: client, remote_addr: \"udp://1.1.1.1:1\"}}\n"},
			[]string{"interfaces: at most 4 interfaces"}},
		{"no interfaces", "version: 1\nstream_type: socket\ninterfaces: [] #!\n", nil,
			[]string{"interfaces: at least one interface is required"}},
		{"rx flows on socket", sockBase, []string{"      rx:\n", "      rx:\n        flows: [{name: f, id: 1, action: {type: queue, id: 0}}] #!\n"},
			[]string{"interfaces[0].rx.flows: need a raw stream"}},
		{"tx flows on socket", sockBase, []string{"      tx:\n", "      tx:\n        flows: [{name: f, id: 1, actions: [{type: vlan_pop}]}] #!\n"},
			[]string{"interfaces[1].tx.flows: need a raw stream"}},
		{"flow_isolation on socket", sockBase, []string{"      rx:\n", "      rx:\n        flow_isolation: true #!\n"},
			[]string{"interfaces[0].rx.flow_isolation: needs a raw stream"}},
	})
}
