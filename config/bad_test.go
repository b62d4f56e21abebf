package config_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/config"
)

// The raw base configuration in parts, so that cases can swap whole blocks.
const (
	rawHead = `%YAML 1.2
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
`
	rawRxFlows = `        flows:
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
`
	rawReorder = `        reorder_configs:
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
`
	rawTxQueues = `      tx:
        queues:
        - name: txq0
          id: 0
          cpu_core: 2
          batch_size: 64
          memory_regions: [tx_mr]
          offloads: [tx_eth_src]
`
	rawTxFlows = `        flows:
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
`
	rawTail = `bench_rx:
  interface_name: port0
`
)

// rawBase is a valid raw configuration that touches most of the schema; the bad-input cases
// are small edits of it.
const rawBase = rawHead + rawRxFlows + rawReorder + rawTxQueues + rawTxFlows + rawTail

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
		// The roce base keeps upstream's shape (queues without memory_regions), which warns.
		if len(c.Warnings) != 0 && name != "roce" {
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
		{"legacy socket_config.protocol", sockBase, []string{"mode: server", "mode: server\n        protocol: udp #!"},
			[]string{"interfaces[0].socket_config.protocol: socket_config.protocol was removed"}},
		{"top-level merge key", sockBase, []string{"socket_bench_server:", "x: &x {a: 1}\n<<: *x #!\nsocket_bench_server:"},
			[]string{": a << merge key at the top level is not supported"}},
		{"legacy rdma_config", roceBase, []string{"      roce_config:\n        transport_mode: RC\n      tx:", "      rdma_config: {} #!\n      roce_config:\n        transport_mode: RC\n      tx:"},
			[]string{"interfaces[0].rdma_config: legacy key rdma_config was removed"}},
		{"loopback hw with engine xdp", rawBase, []string{"master_core: 0", "master_core: 0\n    loopback: hw #!\n    engine: xdp"},
			[]string{"loopback: loopback: hw loops a ConnectX port"}},
		{"loopback bogus", rawBase, []string{"master_core: 0", "master_core: 0\n    loopback: on #!"},
			[]string{"loopback: invalid loopback \"on\""}},
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
		{"missing name", rawBase, []string{"    - name: out_mr\n      kind: host\n", "    - kind: host #!\n"},
			[]string{"memory_regions[2].name: needs name"}},
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
		{"too big", rawBase, []string{"    - name: out_mr\n      kind: host\n      affinity: 0\n      num_bufs: 4\n      buf_size: 2097152\n", "    - name: out_mr #!\n      kind: host\n      affinity: 0\n      num_bufs: 16777216\n      buf_size: 8388609\n"},
			[]string{"memory_regions[2]: num_bufs × buf_size = 16777216 × 8388609 exceeds"}},
		// Issue 30 item 2: 2^31−1 buffers fit the YAML integer but not the pool's link array.
		{"num_bufs beyond the pool", rawBase, []string{"      num_bufs: 4\n", "      num_bufs: 2147483647 #!\n"},
			[]string{"memory_regions[2].num_bufs: must be ≤ 16777216 (2^24"}},
		// Issue 19 item 6: the value written, not a clamped one, and the bound crossed.
		{"num_bufs beyond int32", rawBase, []string{"      num_bufs: 4\n", "      num_bufs: 100000000000 #!\n"},
			[]string{"memory_regions[2].num_bufs: must be ≤ 2147483647, got 100000000000"}},
		{"num_bufs beyond int64", rawBase, []string{"      num_bufs: 4\n", "      num_bufs: 99999999999999999999999 #!\n"},
			[]string{"memory_regions[2].num_bufs: must be ≤ 2147483647, got 99999999999999999999999"}},
		{"buf_size a string", rawBase, []string{"buf_size: 2097152", "buf_size: 2MiB #!"},
			[]string{"memory_regions[2].buf_size: must be an integer, got \"2MiB\""}},
		{"owned not bool", rawBase, []string{"buf_size: 2097152", "buf_size: 2097152\n      owned: 1 #!"},
			[]string{"memory_regions[2].owned: must be true or false, got integer 1"}},
		{"not a map", rawBase, []string{"    - name: out_mr\n      kind: host\n      affinity: 0\n      num_bufs: 4\n      buf_size: 2097152\n", "    - out_mr #!\n"},
			[]string{"memory_regions[2]: a memory region must be a map, got \"out_mr\""}},
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
		{"tcp server with remote_addr", sockBase, []string{"local_addr: udp://127.0.0.1:5001", "local_addr: tcp://127.0.0.1:5001\n        remote_addr: tcp://127.0.0.1:6000 #!", "remote_addr: udp://127.0.0.1:5001", "remote_addr: tcp://127.0.0.1:5001"},
			[]string{"interfaces[0].socket_config.remote_addr: a tcp server has no remote_addr: it accepts peers (only a udp server takes one, the peer it accepts)"}},
		{"udp server remote_addr not an address", sockBase, []string{"local_addr: udp://127.0.0.1:5001", "local_addr: udp://127.0.0.1:5001\n        remote_addr: udp://[::1 #!"},
			[]string{"interfaces[0].socket_config.remote_addr: \"udp://[::1\": an IPv6 host needs its closing ']'"}},
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
		{"flow_isolation not a bool", rawBase, []string{"flow_isolation: true", "flow_isolation: 3 #!"},
			[]string{"interfaces[0].rx.flow_isolation: must be true or false, got integer 3"}},
		{"flow_isolation on socket", sockBase, []string{"      rx:\n", "      rx:\n        flow_isolation: true #!\n"},
			[]string{"interfaces[0].rx.flow_isolation: needs a raw stream"}},
	})
}

// rxq1 is the second RX queue of rawBase.
const rxq1 = "        - name: rxq1\n          id: 1\n          cpu_core: 1\n          batch_size: 64\n          memory_regions: [rx_mr]\n"

// §2.12 items 17-19 and the other queue rules.
func TestBadQueues(t *testing.T) {
	q1 := func(body string) []string { return []string{rxq1, body} }
	var many strings.Builder
	for i := 2; i <= 32; i++ {
		fmt.Fprintf(&many, "        - {name: q%d, id: %d, cpu_core: 1, batch_size: 8, memory_regions: [rx_mr]}\n", i, i)
	}
	runBad(t, []badCase{
		{"no memory_regions", rawBase, q1("        - name: rxq1 #!\n          id: 1\n          cpu_core: 1\n          batch_size: 64\n"),
			[]string{"interfaces[0].rx.queues[1].memory_regions: a queue needs memory_regions"}},
		{"undefined memory region", rawBase, q1("        - name: rxq1\n          id: 1\n          cpu_core: 1\n          batch_size: 64\n          memory_regions: [nope] #!\n"),
			[]string{"interfaces[0].rx.queues[1].memory_regions[0]: memory region \"nope\" is not defined"}},
		{"five memory regions", rawBase, append(q1("        - name: rxq1\n          id: 1\n          cpu_core: 1\n          batch_size: 64\n          memory_regions: [rx_mr, rx_mr, rx_mr, rx_mr, rx_mr] #!\n"),
			"          actions:\n          - type: vlan_pop", "          actions: #!1\n          - type: vlan_pop"),
			[]string{"interfaces[0].rx.queues[1].memory_regions: at most 4 memory regions", "interfaces[0].rx.flows[1].actions: wire frame of up to 10244 bytes"}},
		{"indirect without cpu_core", rawBase, q1("        - name: rxq1 #!\n          id: 1\n          batch_size: 64\n          memory_regions: [rx_mr]\n"),
			[]string{"interfaces[0].rx.queues[1].cpu_core: poll_mode indirect needs cpu_core"}},
		{"indirect without batch_size", rawBase, q1("        - name: rxq1 #!\n          id: 1\n          cpu_core: 1\n          memory_regions: [rx_mr]\n"),
			[]string{"interfaces[0].rx.queues[1].batch_size: poll_mode indirect needs batch_size"}},
		{"batch_size 0", rawBase, []string{"batch_size: 64\n          memory_regions: [rx_mr]", "batch_size: 0 #!\n          memory_regions: [rx_mr]"},
			[]string{"interfaces[0].rx.queues[1].batch_size: must be > 0, got 0"}},
		// Issue 19 items 2, 6, 11: batch_size and timeout_us bounds, messages naming the bound
		// crossed and the value written.
		{"batch_size 3e9", rawBase, []string{"batch_size: 64\n          memory_regions: [rx_mr]", "batch_size: 3000000000 #!\n          memory_regions: [rx_mr]"},
			[]string{"interfaces[0].rx.queues[1].batch_size: must be ≤ 65536, got 3000000000"}},
		{"batch_size int32 max", rawBase, []string{"batch_size: 64\n          memory_regions: [rx_mr]", "batch_size: 2147483647 #!\n          memory_regions: [rx_mr]"},
			[]string{"interfaces[0].rx.queues[1].batch_size: must be ≤ 65536, got 2147483647"}},
		{"batch_size negative", rawBase, []string{"batch_size: 64\n          memory_regions: [rx_mr]", "batch_size: -5 #!\n          memory_regions: [rx_mr]"},
			[]string{"interfaces[0].rx.queues[1].batch_size: must be > 0, got -5"}},
		{"timeout_us overflow", rawBase, []string{"timeout_us: 100", "timeout_us: 9300000000000000 #!"},
			[]string{"interfaces[0].rx.queues[0].timeout_us: must be between 0 and 3600000000, got 9300000000000000"}},
		{"timeout_us beyond int64", rawBase, []string{"timeout_us: 100", "timeout_us: 18446744073709551616 #!"},
			[]string{"interfaces[0].rx.queues[0].timeout_us: must be between 0 and 3600000000, got 18446744073709551616"}},
		{"cpu_core not a number", rawBase, q1("        - name: rxq1\n          id: 1\n          cpu_core: fast #!\n          batch_size: 64\n          memory_regions: [rx_mr]\n"),
			[]string{"interfaces[0].rx.queues[1].cpu_core: must be a CPU core number, got \"fast\""}},
		{"cpu_core a list", rawBase, q1("        - name: rxq1\n          id: 1\n          cpu_core: [1, 2] #!\n          batch_size: 64\n          memory_regions: [rx_mr]\n"),
			[]string{"interfaces[0].rx.queues[1].cpu_core: must be a CPU core number, got a list"}},
		{"poll_mode fast", rawBase, q1("        - name: rxq1\n          id: 1\n          poll_mode: fast #!\n          cpu_core: 1\n          batch_size: 64\n          memory_regions: [rx_mr]\n"),
			[]string{"interfaces[0].rx.queues[1].poll_mode: invalid poll_mode \"fast\""}},
		{"direct on dpdk", rawBase, append(q1("        - name: rxq1\n          id: 1\n          poll_mode: direct #!\n          memory_regions: [rx_mr]\n"), "master_core: 0", "master_core: 0\n    engine: dpdk"),
			[]string{"interfaces[0].rx.queues[1].poll_mode: poll_mode direct needs engine xdp or mlx5; this interface resolves to engine dpdk"}},
		{"direct on loopback", rawBase, append(q1("        - name: rxq1\n          id: 1\n          poll_mode: direct #!\n          memory_regions: [rx_mr]\n"), "master_core: 0", "master_core: 0\n    loopback: sw"),
			[]string{"interfaces[0].rx.queues[1].poll_mode: resolves to engine loopback"}},
		{"direct on socket", sockBase, []string{"        - name: srx\n          id: 0\n          cpu_core: 0\n          batch_size: 32\n", "        - name: srx\n          id: 0\n          poll_mode: direct #!\n"},
			[]string{"interfaces[0].rx.queues[0].poll_mode: resolves to engine socket"}},
		{"direct with cpu_core", rawBase, q1("        - name: rxq1\n          id: 1\n          poll_mode: direct\n          cpu_core: 1 #!\n          memory_regions: [rx_mr]\n"),
			[]string{"interfaces[0].rx.queues[1].cpu_core: poll_mode direct has no cpu_core"}},
		{"direct with batch_size", rawBase, q1("        - name: rxq1\n          id: 1\n          poll_mode: direct\n          batch_size: 64 #!\n          memory_regions: [rx_mr]\n"),
			[]string{"interfaces[0].rx.queues[1].batch_size: poll_mode direct has no batch_size"}},
		{"direct with timeout_us", rawBase, q1("        - name: rxq1\n          id: 1\n          poll_mode: direct\n          timeout_us: 0 #!\n          memory_regions: [rx_mr]\n"),
			[]string{"interfaces[0].rx.queues[1].timeout_us: poll_mode direct has no timeout_us"}},
		{"duplicate queue id", rawBase, append(q1("        - name: rxq1\n          id: 0 #!\n          cpu_core: 1\n          batch_size: 64\n          memory_regions: [rx_mr]\n"), "ids: [0, 1]", "ids: [0, 1] #!1"),
			[]string{"interfaces[0].rx.queues[1].id: duplicate queue id 0", "interfaces[0].rx.flows[1].actions[1].ids[1]: queue id 1 is not a queue of this interface"}},
		{"duplicate queue name", rawBase, q1("        - name: rxq0 #!\n          id: 1\n          cpu_core: 1\n          batch_size: 64\n          memory_regions: [rx_mr]\n"),
			[]string{"interfaces[0].rx.queues[1].name: duplicate queue name \"rxq0\""}},
		{"33 queues", rawBase, []string{"        queues:\n        - name: rxq0", "        queues: #!\n" + many.String() + "        - name: rxq0"},
			[]string{"interfaces[0].rx.queues: at most 32 RX queues"}},
		{"queue id missing", rawBase, q1("        - name: rxq1 #!\n          cpu_core: 1\n          batch_size: 64\n          memory_regions: [rx_mr]\n"),
			[]string{"interfaces[0].rx.queues[1].id: a queue needs id"}},
		// (queue ids are unknown while a queue's id is broken: no follow-on errors about ids)
		{"queue id negative", rawBase, q1("        - name: rxq1\n          id: -1 #!\n          cpu_core: 1\n          batch_size: 64\n          memory_regions: [rx_mr]\n"),
			[]string{"interfaces[0].rx.queues[1].id: must be between 0 and 65535, got -1"}},
		{"offloads on rx", rawBase, q1("        - name: rxq1\n          id: 1\n          cpu_core: 1\n          batch_size: 64\n          memory_regions: [rx_mr]\n          offloads: [tx_eth_src] #!\n"),
			[]string{"interfaces[0].rx.queues[1].offloads: unknown key \"offloads\" in a queue"}},
		{"unknown offload", rawBase, []string{"offloads: [tx_eth_src]", "offloads: [tx_eth_src, tso] #!"},
			[]string{"interfaces[0].tx.queues[0].offloads[1]: unknown offload \"tso\""}},
		{"pacing negative", rawBase, []string{"offloads: [tx_eth_src]", "offloads: [tx_eth_src]\n          pacing_mbps: -1 #!"},
			[]string{"interfaces[0].tx.queues[0].pacing_mbps: must be ≥ 0, got -1"}},
		{"memory_regions a string", rawBase, q1("        - name: rxq1\n          id: 1\n          cpu_core: 1\n          batch_size: 64\n          memory_regions: rx_mr #!\n"),
			[]string{"interfaces[0].rx.queues[1].memory_regions: memory_regions must be a list, got \"rx_mr\""}},
		{"queues a map", sockBase, []string{"      tx:\n        queues:\n        - name: ctx\n          id: 0\n          cpu_core: 1\n          batch_size: 32\n          memory_regions: [cli]\n", "      tx:\n        queues: {name: ctx} #!\n"},
			[]string{"interfaces[1].tx.queues: queues must be a list, got a map"}},
		{"rx a list", sockBase, []string{"      rx:\n        queues:\n        - name: srx\n          id: 0\n          cpu_core: 0\n          batch_size: 32\n          memory_regions: [srv]\n", "      rx: [] #!\n"},
			[]string{"interfaces[0].rx: rx must be a map, got a list"}},
	})
}

// §2.12 items 20-27: flows and their actions.
func TestBadFlows(t *testing.T) {
	const f1Actions = "          actions:\n          - type: vlan_pop\n          - type: queue\n            ids: [0, 1]\n"
	const txPush = "          - type: vlan_push\n            vlan_id: 100\n"
	const txTunnel = "            tunnel:\n              type: vxlan\n              outer_eth_src: 02:00:00:00:00:01\n              outer_eth_dst: 02:00:00:00:00:02\n              outer_ipv4_src: 192.0.2.1\n              outer_ipv4_dst: 192.0.2.2\n              vni: 100\n"
	runBad(t, []badCase{
		{"rx.flows not a sequence", rawBase, []string{rawRxFlows, "        flows: {name: f0} #!\n"},
			[]string{"interfaces[0].rx.flows: rx.flows must be a list, got a map"}},
		{"action and actions", rawBase, []string{"          action:\n            type: queue\n            id: 0\n", "          action:\n            type: queue\n            id: 0\n          actions: [{type: queue, id: 0}] #!\n"},
			[]string{"interfaces[0].rx.flows[0].actions: either action or actions, not both"}},
		{"no action", rawBase, []string{"        - name: f0\n          id: 10\n          action:\n            type: queue\n            id: 0\n", "        - name: f0 #!\n          id: 10\n"},
			[]string{"interfaces[0].rx.flows[0].actions: a flow needs actions"}},
		{"empty actions", rawBase, []string{f1Actions, "          actions: [] #!\n"},
			[]string{"interfaces[0].rx.flows[1].actions: actions must not be empty"}},
		{"eight actions", rawBase, []string{f1Actions, "          actions: #!\n" + strings.Repeat("          - type: vlan_pop\n", 7) + "          - type: queue\n            id: 0\n"},
			[]string{"interfaces[0].rx.flows[1].actions: at most 7 actions, got 8"}},
		{"id and ids", rawBase, []string{"            type: queue\n            id: 0\n", "            type: queue\n            id: 0\n            ids: [0] #!\n"},
			[]string{"interfaces[0].rx.flows[0].action.ids: either id or ids, not both"}},
		{"neither id nor ids", rawBase, []string{"          action:\n            type: queue\n            id: 0\n", "          action: #!\n            type: queue\n"},
			[]string{"interfaces[0].rx.flows[0].action.id: a queue action needs id"}},
		{"ids empty", rawBase, []string{"ids: [0, 1]", "ids: [] #!"},
			[]string{"interfaces[0].rx.flows[1].actions[1].ids: ids must list at least one queue id"}},
		{"ids duplicated", rawBase, []string{"ids: [0, 1]", "ids: [0, 0] #!"},
			[]string{"interfaces[0].rx.flows[1].actions[1].ids[1]: queue id 0 is listed twice"}},
		{"unknown queue id", rawBase, []string{"            type: queue\n            id: 0\n", "            type: queue\n            id: 99 #!\n"},
			[]string{"interfaces[0].rx.flows[0].action.id: queue id 99 is not a queue of this interface"}},
		{"queue id hex string", rawBase, []string{"            type: queue\n            id: 0\n", "            type: queue\n            id: \"0x63\" #!\n"},
			[]string{"interfaces[0].rx.flows[0].action.id: queue id 99 is not a queue"}},
		{"queue id junk", rawBase, []string{"            type: queue\n            id: 0\n", "            type: queue\n            id: zero #!\n"},
			[]string{"interfaces[0].rx.flows[0].action.id: must be an integer, got \"zero\""}},
		{"bad ipv4_src", rawBase, []string{"ipv4_src: 10.0.0.1", "ipv4_src: 1.2.3 #!"},
			[]string{"interfaces[0].rx.flows[1].match.ipv4_src: \"1.2.3\" is not an IPv4 address"}},
		{"ipv6 ipv4_dst", rawBase, []string{"ipv4_src: 10.0.0.1", "ipv4_dst: ::1 #!"},
			[]string{"interfaces[0].rx.flows[1].match.ipv4_dst: \"::1\" is not an IPv4 address"}},
		{"type nat", rawBase, []string{"          - type: vlan_pop\n", "          - type: nat #!\n"},
			[]string{"interfaces[0].rx.flows[1].actions[0].type: unknown action type \"nat\""}},
		{"action without type", rawBase, []string{"          - type: vlan_pop\n", "          - {} #!\n"},
			[]string{"interfaces[0].rx.flows[1].actions[0].type: a flow action needs type"}},
		{"vlan_push without vlan_id", rawBase, []string{txPush, "          - type: vlan_push #!\n"},
			[]string{"interfaces[0].tx.flows[0].actions[0].vlan_id: vlan_push needs vlan_id"}},
		{"vlan_id 5000", rawBase, []string{"vlan_id: 100", "vlan_id: 5000 #!"},
			[]string{"interfaces[0].tx.flows[0].actions[0].vlan_id: must be between 0 and 4095, got 5000"}},
		{"pcp 9", rawBase, []string{"vlan_id: 100", "vlan_id: 100\n            pcp: 9 #!"},
			[]string{"interfaces[0].tx.flows[0].actions[0].pcp: must be between 0 and 7, got 9"}},
		{"dei 2", rawBase, []string{"vlan_id: 100", "vlan_id: 100\n            dei: 2 #!"},
			[]string{"interfaces[0].tx.flows[0].actions[0].dei: must be 0 or 1, got 2"}},
		{"ethertype 0", rawBase, []string{"vlan_id: 100", "vlan_id: 100\n            ethertype: 0 #!"},
			[]string{"interfaces[0].tx.flows[0].actions[0].ethertype: must be between 1 and 65535, got 0"}},
		{"nested vlan_id 5000", rawBase, []string{txPush, "          - type: vlan_push\n            vlan: {vlan_id: 5000} #!\n"},
			[]string{"interfaces[0].tx.flows[0].actions[0].vlan.vlan_id: must be between 0 and 4095, got 5000"}},
		{"vlan flat and nested", rawBase, []string{txPush, "          - type: vlan_push\n            vlan: {vlan_id: 5}\n            pcp: 1 #!\n"},
			[]string{"interfaces[0].tx.flows[0].actions[0].pcp: given both flat and under vlan:"}},
		{"vlan key on queue action", rawBase, []string{"            type: queue\n            id: 0\n", "            type: queue\n            id: 0\n            vlan_id: 3 #!\n"},
			[]string{"interfaces[0].rx.flows[0].action.vlan_id: unknown key \"vlan_id\" in a queue action"}},
		{"tunnel without type", rawBase, []string{"            tunnel:\n              type: vxlan\n", "            tunnel: #!\n"},
			[]string{"interfaces[0].tx.flows[0].actions[1].tunnel.type: needs the tunnel type"}},
		{"tunnel type foo", rawBase, []string{"type: vxlan", "type: ipip #!"},
			[]string{"interfaces[0].tx.flows[0].actions[1].tunnel.type: unknown tunnel type \"ipip\""}},
		{"bad outer mac", rawBase, []string{"outer_eth_src: 02:00:00:00:00:01", "outer_eth_src: 02:00:00 #!"},
			[]string{"interfaces[0].tx.flows[0].actions[1].tunnel.outer_eth_src: \"02:00:00\" is not a MAC address"}},
		{"bad outer ip", rawBase, []string{"outer_ipv4_dst: 192.0.2.2", "outer_ipv4_dst: 300.0.2.2 #!"},
			[]string{"interfaces[0].tx.flows[0].actions[1].tunnel.outer_ipv4_dst: \"300.0.2.2\" is not an IPv4 address"}},
		{"missing outer mac", rawBase, []string{"            tunnel:\n              type: vxlan\n              outer_eth_src: 02:00:00:00:00:01\n", "            tunnel: #!\n              type: vxlan\n"},
			[]string{"interfaces[0].tx.flows[0].actions[1].tunnel.outer_eth_src: needs outer_eth_src"}},
		{"vni too big", rawBase, []string{"vni: 100", "vni: 0x1000000 #!"},
			[]string{"interfaces[0].tx.flows[0].actions[1].tunnel.vni: must be ≤ 0xFFFFFF"}},
		{"outer_udp_dst 0", rawBase, []string{"vni: 100", "vni: 100\n              outer_udp_dst: 0 #!"},
			[]string{"interfaces[0].tx.flows[0].actions[1].tunnel.outer_udp_dst: must be between 1 and 65535, got 0"}},
		{"gre_protocol 0", rawBase, []string{"type: vxlan", "type: gre", "vni: 100", "gre_protocol: 0 #!"},
			[]string{"interfaces[0].tx.flows[0].actions[1].tunnel.gre_protocol: must be between 1 and 65535, got 0"}},
		{"vni on gre", rawBase, []string{"type: vxlan", "type: gre", "vni: 100", "vni: 100 #!"},
			[]string{"interfaces[0].tx.flows[0].actions[1].tunnel.vni: vni is a vxlan field; this tunnel is gre"}},
		{"tni too big", rawBase, []string{"type: vxlan", "type: nvgre", "vni: 100", "tni: 0x1000000 #!"},
			[]string{"interfaces[0].tx.flows[0].actions[1].tunnel.tni: must be ≤ 0xFFFFFF"}},
		// Issue 19 item 15: GRE carries the L3 packet; a VLAN tag pushed before it would
		// start the GRE payload.
		{"vlan_push then gre", rawBase, []string{"          - type: tunnel_encap\n            tunnel:\n              type: vxlan\n", "          - type: tunnel_encap #!\n            tunnel:\n              type: gre\n", "              vni: 100\n          match:\n            udp_src: 4096\n", "          match:\n            udp_src: 4096\n"},
			[]string{"interfaces[0].tx.flows[0].actions[1]: tunnel_encap gre after vlan_push (interfaces[0].tx.flows[0].actions[0])"}},
		{"tunnel flat and nested", rawBase, []string{txTunnel, txTunnel + "            vni: 3 #!\n"},
			[]string{"interfaces[0].tx.flows[0].actions[1].vni: given both flat and under tunnel:"}},
		{"tunnel type and tunnel_type", rawBase, []string{"              type: vxlan\n", "              type: vxlan\n              tunnel_type: vxlan #!\n"},
			[]string{"interfaces[0].tx.flows[0].actions[1].tunnel.tunnel_type: type or tunnel_type, not both"}},
		{"rx flow ending with vlan_pop", rawBase, []string{f1Actions, "          actions: #!1\n          - type: queue #!\n            ids: [0, 1]\n          - type: vlan_pop\n"},
			[]string{"interfaces[0].rx.flows[1].actions[0]: queue action must be the last", "interfaces[0].rx.flows[1].actions: must end with a queue action"}},
		{"rx flow with vlan_push", rawBase, []string{"          - type: vlan_pop\n", "          - type: vlan_push #!\n            vlan_id: 5\n"},
			[]string{"interfaces[0].rx.flows[1].actions[0].type: an RX flow cannot use vlan_push"}},
		{"rx flow with encap", rawBase, []string{"          - type: vlan_pop\n", "          - type: tunnel_encap #!\n            tunnel_type: gre\n            outer_eth_src: 02:00:00:00:00:01\n            outer_eth_dst: 02:00:00:00:00:02\n            outer_ipv4_src: 192.0.2.1\n            outer_ipv4_dst: 192.0.2.2\n"},
			[]string{"interfaces[0].rx.flows[1].actions[0].type: an RX flow cannot use tunnel_encap"}},
		{"tx flow with queue", rawBase, []string{txPush, txPush + "          - type: queue #!\n            id: 0\n"},
			[]string{"interfaces[0].tx.flows[0].actions[1]: a TX flow cannot have a queue action"}},
		{"tx flow without transform", rawBase, []string{rawTxFlows, "        flows:\n        - name: pop\n          id: 20\n          actions: #!1\n          - type: vlan_pop #!\n"},
			[]string{"interfaces[0].tx.flows[0].actions[0].type: a TX flow cannot use vlan_pop", "interfaces[0].tx.flows[0].actions: needs at least one vlan_push or tunnel_encap"}},
		{"tx flow with flex match", rawBase, []string{"          match:\n            udp_src: 4096\nbench_rx", "          match:\n            flex_item_id: 1 #! #!1\n            val: 1\n            mask: 0xff\nbench_rx"},
			[]string{"interfaces[0].tx.flows[0].match.flex_item_id: TX flows cannot match on a flex item", "interfaces[0].tx.flows[0].match.flex_item_id: cannot be combined with VLAN or tunnel actions"}},
		{"wire frame too big", rawBase, []string{"    - name: tx_mr\n      kind: host\n      affinity: 0\n      num_bufs: 1024\n      buf_size: 2048\n", "    - name: tx_mr\n      kind: host\n      affinity: 0\n      num_bufs: 1024\n      buf_size: 9100\n", "          id: 20\n          actions:\n", "          id: 20\n          actions: #!\n"},
			[]string{"interfaces[0].tx.flows[0].actions: wire frame of up to 9154 bytes (largest queue frame 9100 + transform overhead 54) exceeds 9100"}},
		{"duplicate flow id", rawBase, []string{"          id: 11\n", "          id: 10 #!\n"},
			[]string{"interfaces[0].rx.flows[1].id: duplicate flow id 10 (also used by interfaces[0].rx.flows[0])"}},
		{"flow id negative", rawBase, []string{"          id: 11\n", "          id: -3 #!\n"},
			[]string{"interfaces[0].rx.flows[1].id: must be between 0 and 16777215, got -3"}},
		{"flow without name", rawBase, []string{"        - name: f1\n          id: 11\n", "        - id: 11 #!\n"},
			[]string{"interfaces[0].rx.flows[1].name: a flow needs name"}},
		{"udp range reversed", rawBase, []string{"udp_dst: \"5000-5010\"", "udp_dst: \"5010-5000\" #!"},
			[]string{"interfaces[0].rx.flows[1].match.udp_dst: port range \"5010-5000\" is empty"}},
		{"udp port junk", rawBase, []string{"udp_dst: \"5000-5010\"", "udp_dst: http #!"},
			[]string{"interfaces[0].rx.flows[1].match.udp_dst: must be a UDP port or a range"}},
		{"udp port too big", rawBase, []string{"udp_src: 4096\n            udp_dst: 4096", "udp_src: 70000 #!\n            udp_dst: 4096"},
			[]string{"interfaces[0].rx.flows[0].match.udp_src: must be between 0 and 65535, got 70000"}},
		{"match unknown key", rawBase, []string{"udp_src: 4096\n            udp_dst: 4096", "udp_sport: 4096 #!\n            udp_dst: 4096"},
			[]string{"interfaces[0].rx.flows[0].match.udp_sport: unknown key \"udp_sport\" in match (valid keys: ecpri, ethernet, flex_item_id,"}},
		{"match typo", rawBase, []string{"udp_src: 4096\n            udp_dst: 4096", "udp_scr: 4096 #!\n            udp_dst: 4096"},
			[]string{"interfaces[0].rx.flows[0].match.udp_scr: did you mean \"udp_src\"?"}},
		{"ethernet mac junk", rawBase, []string{"udp_src: 4096\n            udp_dst: 4096", "udp_src: 4096\n            udp_dst: 4096\n            ethernet:\n              dst: 02:00:00:00:00:zz #!"},
			[]string{"interfaces[0].rx.flows[0].match.ethernet.dst: \"02:00:00:00:00:zz\" is not a MAC address"}},
		{"ethernet mac too long", rawBase, []string{"udp_src: 4096\n            udp_dst: 4096", "udp_src: 4096\n            udp_dst: 4096\n            ethernet: {src: \"00:00:00:00:fe:80:00:00:00:00:00:00:02:00:5e:10:00:00:00:01\"} #!"},
			[]string{"interfaces[0].rx.flows[0].match.ethernet.src: \"00:00:00:00:fe:80:00:00:00:00:00:00:02:00:5e:10:00:00:00:01\" is not a MAC address"}},
		{"ethernet empty", rawBase, []string{"udp_src: 4096\n            udp_dst: 4096", "udp_src: 4096\n            udp_dst: 4096\n            ethernet: {} #!"},
			[]string{"interfaces[0].rx.flows[0].match.ethernet: an ethernet match needs src, dst or both"}},
		{"ethernet unknown key", rawBase, []string{"udp_src: 4096\n            udp_dst: 4096", "udp_src: 4096\n            udp_dst: 4096\n            ethernet: {type: 0x0800} #!"},
			[]string{"interfaces[0].rx.flows[0].match.ethernet.type: unknown key \"type\" in ethernet (valid keys: dst, src)"}},
		{"ipv6 junk", rawBase, []string{"udp_src: 4096\n            udp_dst: 4096", "udp_src: 4096\n            udp_dst: 4096\n            ipv6_src: \"::ffff:10.0.0.1\" #!"},
			[]string{"interfaces[0].rx.flows[0].match.ipv6_src: \"::ffff:10.0.0.1\" is not an IPv6 address"}},
		{"ipv4 and ipv6", rawBase, []string{"udp_dst: \"5000-5010\"\n            ipv4_src: 10.0.0.1\n", "udp_dst: \"5000-5010\"\n            ipv4_src: 10.0.0.1\n            ipv6_dst: fd00::9 #!\n"},
			[]string{"interfaces[0].rx.flows[1].match.ipv6_dst: a match has IPv4 or IPv6 fields, not both"}},
		{"duplicate flow id across interfaces", rawBase, []string{"bench_rx:", "    - name: port1\n      address: veth1\n      rx:\n        queues: [{name: q, id: 0, cpu_core: 1, batch_size: 8, memory_regions: [rx_mr]}]\n        flows:\n        - name: g\n          id: 10 #!\n          action: {type: queue, id: 0}\nbench_rx:"},
			[]string{"interfaces[1].rx.flows[0].id: duplicate flow id 10 (also used by interfaces[0].rx.flows[0])"}},
	})
}

// §2.12 items 28-30: flex items, flow classes, eCPRI.
func TestBadFlexAndECPRI(t *testing.T) {
	const flexItems = "        flex_items:\n        - name: fx\n          id: 1\n          udp_dst_port: 4791\n          offset: 8\n"
	const f0Match = "          match:\n            udp_src: 4096\n            udp_dst: 4096\n"
	withFlex := func(more ...string) []string {
		return append([]string{"        flows:\n        - name: f0", flexItems + "        flows:\n        - name: f0"}, more...)
	}
	runBad(t, []badCase{
		{"flex offset 3", rawBase, withFlex("offset: 8", "offset: 3 #!"),
			[]string{"interfaces[0].rx.flex_items[0].offset: must be a multiple of 4 between 0 and 28, got 3"}},
		{"flex offset 32", rawBase, withFlex("offset: 8", "offset: 32 #!"),
			[]string{"interfaces[0].rx.flex_items[0].offset: got 32"}},
		{"flex duplicate id", rawBase, withFlex("          offset: 8\n", "          offset: 8\n        - {name: fy, id: 1, udp_dst_port: 1, offset: 0} #!\n"),
			[]string{"interfaces[0].rx.flex_items[1].id: duplicate flex item id 1"}},
		{"flex missing port", rawBase, withFlex("        - name: fx\n          id: 1\n          udp_dst_port: 4791\n", "        - name: fx #!\n          id: 1\n"),
			[]string{"interfaces[0].rx.flex_items[0].udp_dst_port: a flex item needs udp_dst_port"}},
		{"unknown flex id", rawBase, withFlex(f0Match, "          match:\n            flex_item_id: 7 #!\n            val: 1\n            mask: 0xffffffff\n", "        - name: f1\n", "        - name: f1 #!1\n"),
			[]string{"interfaces[0].rx.flows[0].match.flex_item_id: flex item 7 is not defined", "interfaces[0].rx.flows[1]: mixes flex-item and standard (UDP/IPv4) RX flows"}},
		{"flex with udp fields", rawBase, withFlex(f0Match, "          match:\n            udp_src: 4096\n            flex_item_id: 1 #!\n            val: 1\n            mask: 0xffffffff\n", "        - name: f1\n", "        - name: f1 #!1\n"),
			[]string{"interfaces[0].rx.flows[0].match.flex_item_id: cannot be combined with UDP/IPv4 match fields", "interfaces[0].rx.flows[1]: mixes flex-item and standard"}},
		{"flex without mask", rawBase, withFlex(f0Match, "          match: #!\n            flex_item_id: 1\n            val: 1\n", "        - name: f1\n", "        - name: f1 #!1\n"),
			[]string{"interfaces[0].rx.flows[0].match.mask: a flex item match needs mask", "interfaces[0].rx.flows[1]: mixes flex-item and standard"}},
		{"val without flex_item_id", rawBase, []string{f0Match, "          match:\n            val: 1 #!\n"},
			[]string{"interfaces[0].rx.flows[0].match.val: belongs to a flex item match"}},
		{"flex with transform", rawBase, withFlex("          match:\n            udp_dst: \"5000-5010\"\n            ipv4_src: 10.0.0.1\n", "          match:\n            flex_item_id: 1 #!\n            val: 1\n            mask: 1\n", "        - name: f1\n", "        - name: f1 #!1\n"),
			[]string{"interfaces[0].rx.flows[1].match.flex_item_id: cannot be combined with VLAN or tunnel actions", "interfaces[0].rx.flows[1]: mixes standard (UDP/IPv4) and flex-item RX flows"}},
		{"mixing udp and ecpri", rawBase, []string{f0Match, "          match:\n            ecpri: {msg_type: 0}\n", "        - name: f1\n", "        - name: f1 #!\n"},
			[]string{"interfaces[0].rx.flows[1]: mixes eCPRI and standard (UDP/IPv4) RX flows (interfaces[0].rx.flows[0])"}},
		{"ecpri pc_id without msg_type", rawBase, []string{f0Match, "          match:\n            ecpri: {pc_id: 3} #!\n", "        - name: f1\n", "        - name: f1 #!1\n"},
			[]string{"interfaces[0].rx.flows[0].match.ecpri.pc_id: matching pc_id/rtc_id needs msg_type", "interfaces[0].rx.flows[1]: mixes eCPRI and standard"}},
		{"ecpri rtc_id without msg_type", rawBase, []string{f0Match, "          match:\n            ecpri:\n              rtc_id: 3 #!\n", "        - name: f1\n", "        - name: f1 #!1\n"},
			[]string{"interfaces[0].rx.flows[0].match.ecpri.rtc_id: matching pc_id/rtc_id needs msg_type", "interfaces[0].rx.flows[1]: mixes eCPRI and standard"}},
		{"ecpri pc_id and rtc_id", rawBase, []string{f0Match, "          match:\n            ecpri:\n              msg_type: 2\n              pc_id: 3\n              rtc_id: 3 #!\n", "        - name: f1\n", "        - name: f1 #!1\n"},
			[]string{"interfaces[0].rx.flows[0].match.ecpri.rtc_id: name the same field", "interfaces[0].rx.flows[1]: mixes eCPRI and standard"}},
		{"ecpri rss", rawBase, []string{"          match:\n            udp_dst: \"5000-5010\"\n            ipv4_src: 10.0.0.1\n", "          match:\n            ecpri: {} #!\n", "        - name: f1\n", "        - name: f1 #!1\n"},
			[]string{"interfaces[0].rx.flows[1].match.ecpri: eCPRI flows cannot spread over several queues", "interfaces[0].rx.flows[1]: mixes standard (UDP/IPv4) and eCPRI RX flows"}},
		{"ecpri msg_type too big", rawBase, []string{f0Match, "          match:\n            ecpri: {msg_type: 300} #!\n", "        - name: f1\n", "        - name: f1 #!1\n"},
			[]string{"interfaces[0].rx.flows[0].match.ecpri.msg_type: must be between 0 and 255, got 300", "interfaces[0].rx.flows[1]: mixes eCPRI and standard"}},
	})
}

// §2.12 item 31 and §4.1: reorder plans.
func TestBadReorder(t *testing.T) {
	const ppbMethod = "          method:\n            seq_packets_per_batch:\n              sequence_number:\n                bit_offset: 512\n                bit_width: 32\n              packets_per_batch: 1024\n"
	const sbnMethod = "          method:\n            seq_batch_number:\n              sequence_number: {bit_offset: 128, bit_width: 10}\n              batch_number: {bit_offset: 144, bit_width: 2}\n"
	drop := func(line string) []string {
		return []string{"        - name: r0\n", "        - name: r0 #!\n", line, ""}
	}
	const secondPlan = "        - {name: r0, reorder_type: cpu, memory_region: out_mr, payload_byte_offset: 0, flow_ids: [10], method: {seq_packets_per_batch: {sequence_number: {bit_offset: 0, bit_width: 8}, packets_per_batch: 4}}} #!\n      tx:\n"
	runBad(t, []badCase{
		{"missing name", rawBase, []string{"        - name: r0\n          reorder_type: cpu\n", "        - reorder_type: cpu #!\n"},
			[]string{"interfaces[0].rx.reorder_configs[0].name: a reorder config needs name"}},
		{"missing reorder_type", rawBase, drop("          reorder_type: cpu\n"),
			[]string{"interfaces[0].rx.reorder_configs[0].reorder_type: needs reorder_type"}},
		{"missing memory_region", rawBase, drop("          memory_region: out_mr\n"),
			[]string{"interfaces[0].rx.reorder_configs[0].memory_region: needs memory_region"}},
		{"missing payload_byte_offset", rawBase, drop("          payload_byte_offset: 64\n"),
			[]string{"interfaces[0].rx.reorder_configs[0].payload_byte_offset: needs payload_byte_offset"}},
		{"missing flow_ids", rawBase, drop("          flow_ids: [10]\n"),
			[]string{"interfaces[0].rx.reorder_configs[0].flow_ids: a reorder config needs at least one flow id"}},
		{"missing method", rawBase, drop(ppbMethod),
			[]string{"interfaces[0].rx.reorder_configs[0].method: needs method"}},
		{"reorder_type fpga", rawBase, []string{"reorder_type: cpu", "reorder_type: fpga #!"},
			[]string{"interfaces[0].rx.reorder_configs[0].reorder_type: invalid reorder_type \"fpga\""}},
		{"flow_ids empty", rawBase, []string{"flow_ids: [10]", "flow_ids: [] #!"},
			[]string{"interfaces[0].rx.reorder_configs[0].flow_ids: at least one flow id"}},
		{"duplicate name", rawBase, []string{"      tx:\n", strings.Replace(secondPlan, "#!", "#! #!1", 1)},
			[]string{"interfaces[0].rx.reorder_configs[1].name: duplicate reorder config name \"r0\"", "interfaces[0].rx.reorder_configs[1].flow_ids[0]: already reordered"}},
		{"flow in two plans", rawBase, []string{"      tx:\n", strings.Replace(secondPlan, "name: r0", "name: r1", 1)},
			[]string{"interfaces[0].rx.reorder_configs[1].flow_ids[0]: flow id 10 is already reordered by interfaces[0].rx.reorder_configs[0]"}},
		{"both methods", rawBase, []string{ppbMethod, strings.Replace(ppbMethod, "method:", "method: #!", 1) + "            seq_batch_number:\n              sequence_number: {bit_offset: 0, bit_width: 10}\n              batch_number: {bit_offset: 16, bit_width: 2}\n"},
			[]string{"interfaces[0].rx.reorder_configs[0].method: method has either seq_batch_number or seq_packets_per_batch, not both"}},
		{"neither method", rawBase, []string{ppbMethod, "          method: {} #!\n"},
			[]string{"interfaces[0].rx.reorder_configs[0].method: method needs seq_batch_number or seq_packets_per_batch"}},
		{"bit_width 0", rawBase, []string{"bit_width: 32", "bit_width: 0 #!"},
			[]string{"interfaces[0].rx.reorder_configs[0].method.seq_packets_per_batch.sequence_number.bit_width: must be between 1 and 32, got 0"}},
		{"bit_width 33", rawBase, []string{"bit_width: 32", "bit_width: 33 #!"},
			[]string{"interfaces[0].rx.reorder_configs[0].method.seq_packets_per_batch.sequence_number.bit_width: must be between 1 and 32, got 33"}},
		{"batch wider than seq", rawBase, []string{ppbMethod, strings.Replace(sbnMethod, "bit_offset: 144, bit_width: 2}", "bit_offset: 144, bit_width: 12} #!", 1)},
			[]string{"interfaces[0].rx.reorder_configs[0].method.seq_batch_number.batch_number.bit_width: wider than sequence_number"}},
		{"ppb 0", rawBase, []string{"packets_per_batch: 1024", "packets_per_batch: 0 #!"},
			[]string{"interfaces[0].rx.reorder_configs[0].method.seq_packets_per_batch.packets_per_batch: must be between 1 and 4294967295, got 0"}},
		{"missing_action junk", rawBase, []string{ppbMethod, ppbMethod + "          missing_action: keep #!\n"},
			[]string{"interfaces[0].rx.reorder_configs[0].missing_action: invalid missing_action \"keep\" (valid: drop, passthrough)"}},
		{"cyclic_sequence without epoch", rawBase, []string{ppbMethod, ppbMethod + "          cyclic_sequence: {} #!\n"},
			[]string{"interfaces[0].rx.reorder_configs[0].cyclic_sequence.epoch: cyclic_sequence needs epoch"}},
		{"epoch width 0", rawBase, []string{ppbMethod, ppbMethod + "          cyclic_sequence:\n            epoch: {bit_offset: 544, bit_width: 0} #!\n"},
			[]string{"interfaces[0].rx.reorder_configs[0].cyclic_sequence.epoch.bit_width: must be between 1 and 32, got 0"}},
		// Issue 30 item 6: an epoch sharing bits with the sequence (or batch) number.
		{"epoch overlaps sequence_number", rawBase, []string{ppbMethod, ppbMethod + "          cyclic_sequence:\n            epoch: {bit_offset: 540, bit_width: 8} #!\n"},
			[]string{"interfaces[0].rx.reorder_configs[0].cyclic_sequence.epoch.bit_offset: epoch bits 540..547 overlap the sequence_number bits 512..543; the epoch must be a field of its own"}},
		{"epoch overlaps batch_number", rawBase, []string{ppbMethod, sbnMethod + "          cyclic_sequence:\n            epoch: {bit_offset: 140, bit_width: 6} #!\n"},
			[]string{"interfaces[0].rx.reorder_configs[0].cyclic_sequence.epoch.bit_offset: epoch bits 140..145 overlap the batch_number bits 144..145"}},
		{"epoch inside sequence_number", rawBase, []string{ppbMethod, ppbMethod + "          cyclic_sequence:\n            epoch: {bit_offset: 520, bit_width: 4} #!\n"},
			[]string{"interfaces[0].rx.reorder_configs[0].cyclic_sequence.epoch.bit_offset: epoch bits 520..523 overlap the sequence_number bits 512..543"}},
		{"epoch too wide", rawBase, []string{ppbMethod, ppbMethod + "          cyclic_sequence:\n            epoch: {bit_offset: 544, bit_width: 12} #!\n"},
			[]string{"interfaces[0].rx.reorder_configs[0].cyclic_sequence.epoch.bit_width: 12 epoch bits and 22 batch-number bits make a 34-bit batch key; at most 32"}},
		{"ppb does not divide", rawBase, []string{"packets_per_batch: 1024", "packets_per_batch: 1000 #!"},
			[]string{"interfaces[0].rx.reorder_configs[0].method.seq_packets_per_batch.packets_per_batch: must divide 2^32"}},
		{"ppb above 2^seq", rawBase, []string{"bit_width: 32", "bit_width: 8", "packets_per_batch: 1024", "packets_per_batch: 512 #!"},
			[]string{"interfaces[0].rx.reorder_configs[0].method.seq_packets_per_batch.packets_per_batch: must divide 2^8"}},
		{"bad input_type", rawBase, []string{ppbMethod, ppbMethod + "          data_types: {input_type: int3, output_type: fp16} #!\n"},
			[]string{"interfaces[0].rx.reorder_configs[0].data_types.input_type: invalid input_type \"int3\""}},
		{"bad output_type", rawBase, []string{ppbMethod, ppbMethod + "          data_types:\n            input: int16\n            output: fp8 #!\n"},
			[]string{"interfaces[0].rx.reorder_configs[0].data_types.output: invalid output_type \"fp8\""}},
		{"bad endianness", rawBase, []string{ppbMethod, ppbMethod + "          data_types:\n            input_type: int16\n            output_type: fp16\n            endianness: little #!\n"},
			[]string{"interfaces[0].rx.reorder_configs[0].data_types.endianness: invalid endianness \"little\""}},
		{"data_types not a map", rawBase, []string{ppbMethod, ppbMethod + "          data_types: [int16, fp16] #!\n"},
			[]string{"interfaces[0].rx.reorder_configs[0].data_types: data_types must be a map, got a list"}},
		{"data_types without output", rawBase, []string{ppbMethod, ppbMethod + "          data_types: {input_type: int16} #!\n"},
			[]string{"interfaces[0].rx.reorder_configs[0].data_types.output_type: data_types needs output_type"}},
		{"data_types without input", rawBase, []string{ppbMethod, ppbMethod + "          data_types: {output: fp16} #!\n"},
			[]string{"interfaces[0].rx.reorder_configs[0].data_types.input_type: data_types needs input_type"}},
		{"input and input_type", rawBase, []string{ppbMethod, ppbMethod + "          data_types: {input_type: int16, input: int16, output: fp16} #!\n"},
			[]string{"interfaces[0].rx.reorder_configs[0].data_types.input: name the same field"}},
		{"unknown flow id", rawBase, []string{"flow_ids: [10]", "flow_ids: [10, 99] #!"},
			[]string{"interfaces[0].rx.reorder_configs[0].flow_ids[1]: flow id 99 is not an RX flow of this interface"}},
		{"flows on different queues", rawBase, []string{"ids: [0, 1]", "id: 1", "flow_ids: [10]", "flow_ids: [10, 11] #!"},
			[]string{"interfaces[0].rx.reorder_configs[0].flow_ids[1]: flow 11 steers to queue 1 but the plan's other flows steer to queue 0"}},
		{"rss flow", rawBase, []string{"flow_ids: [10]", "flow_ids: [11] #!"},
			[]string{"interfaces[0].rx.reorder_configs[0].flow_ids[0]: flow 11 spreads over several queues (RSS)"}},
		{"direct queue", rawBase, []string{"          cpu_core: 1\n          batch_size: 1024\n          timeout_us: 100\n", "          poll_mode: direct\n", "flow_ids: [10]", "flow_ids: [10] #!"},
			[]string{"interfaces[0].rx.reorder_configs[0].flow_ids: poll_mode direct; reordering needs an indirect queue"}},
		{"hds queue", rawBase, []string{"          timeout_us: 100\n          memory_regions: [rx_mr]", "          timeout_us: 100\n          memory_regions: [rx_mr, tx_mr]", "flow_ids: [10]", "flow_ids: [10] #!"},
			[]string{"interfaces[0].rx.reorder_configs[0].flow_ids: has 2 memory regions; reordering needs a queue with exactly one"}},
		{"gpu plan from host memory", rawBase, []string{"reorder_type: cpu", "reorder_type: gpu", "flow_ids: [10]", "flow_ids: [10] #!", "memory_region: out_mr", "memory_region: out_mr #!1"},
			[]string{"interfaces[0].rx.reorder_configs[0].flow_ids: a gpu plan reads packets from huge memory", "interfaces[0].rx.reorder_configs[0].memory_region: a gpu plan writes to device or host_pinned memory"}},
		{"cpu plan into device memory", rawBase, []string{"    - name: out_mr\n      kind: host", "    - name: out_mr\n      kind: device", "memory_region: out_mr", "memory_region: out_mr #!"},
			[]string{"interfaces[0].rx.reorder_configs[0].memory_region: a cpu plan writes with the CPU; region out_mr is device memory"}},
		{"gpu plan across GPUs", rawBase, []string{"    - name: rx_mr\n      kind: huge\n", "    - name: rx_mr\n      kind: device\n", "    - name: out_mr\n      kind: host\n      affinity: 0", "    - name: out_mr\n      kind: device\n      affinity: 1", "reorder_type: cpu", "reorder_type: gpu", "memory_region: out_mr", "memory_region: out_mr #!"},
			[]string{"interfaces[0].rx.reorder_configs[0].memory_region: source region rx_mr is on GPU 0 but output region out_mr is on GPU 1"}},
		{"output too small", rawBase, []string{"buf_size: 2097152", "buf_size: 1000000", "memory_region: out_mr", "memory_region: out_mr #!"},
			[]string{"interfaces[0].rx.reorder_configs[0].memory_region: output region out_mr has buf_size 1000000; one batch needs 2031616 (1024 packets × 1984 bytes)"}},
		{"output too small after conversion", rawBase, []string{ppbMethod, ppbMethod + "          data_types: {input_type: int8, output_type: fp32}\n", "memory_region: out_mr", "memory_region: out_mr #!"},
			[]string{"interfaces[0].rx.reorder_configs[0].memory_region: one batch needs 8126464 (1024 packets × 7936 bytes)"}},
		{"payload offset beyond buffer", rawBase, []string{"payload_byte_offset: 64", "payload_byte_offset: 2048 #!"},
			[]string{"interfaces[0].rx.reorder_configs[0].payload_byte_offset: must be smaller than the source region's buf_size (rx_mr: 2048), got 2048"}},
		{"ppb above batch_size", rawBase, []string{"batch_size: 1024", "batch_size: 512", ppbMethod, strings.Replace(ppbMethod, "          method:", "          method: #!", 1)},
			[]string{"interfaces[0].rx.reorder_configs[0].method: packets_per_batch 1024 exceeds the batch_size 512 of queue rxq0"}},
	})
}

// Malformed YAML and the document-level rules.
func TestBadDocuments(t *testing.T) {
	runBad(t, []badCase{
		{"duplicate key", rawBase, []string{"    master_core: 0\n", "    master_core: 0\n    master_core: 1 #!\n"},
			[]string{"master_core: duplicate key \"master_core\""}},
		{"two documents", rawBase, []string{"bench_rx:\n  interface_name: port0\n", "bench_rx:\n  interface_name: port0\n--- #!\nfoo: 1\n"},
			[]string{": only one YAML document is supported"}},
		{"empty", "# nothing here #!\n", nil,
			[]string{": the document is empty"}},
		{"list root", "- version: 1 #!\n", nil,
			[]string{": the configuration must be a map"}},
		{"scalar root", "hello #!\n", nil,
			[]string{": the configuration must be a map"}},
		{"bare root unknown key", "version: 1\nstream_type: socket\nbench_rx: {} #!\ninterfaces: [{name: a, address: 1.1.1.1, socket_config: {mode: client, remote_addr: \"udp://1.1.1.1:9\"}}]\n", nil,
			[]string{"bench_rx: unknown key \"bench_rx\" in the configuration"}},
		{"non-string key", "version: 1\nstream_type: raw\ninterfaces: []\n? [a, b] #!\n: 3\n", nil,
			[]string{": map keys must be plain strings"}},
		{"null value", rawBase, []string{"log_level: info", "log_level: #!"},
			[]string{"log_level: must be a string, got no value"}},
	})
}

// Syntax errors carry the line the YAML library reports, which for some errors is the line
// before the offending one (the library reports where its parsing context began).
func TestSyntaxErrors(t *testing.T) {
	for _, tc := range []struct{ name, doc, msg string }{
		{"unclosed flow list", "version: 1\nstream_type: raw\ninterfaces: [ #!\nx: 1\n", "did not find expected ',' or ']'"},
		{"tab", "version: 1\nstream_type: raw\n\tinterfaces: [] #!\n", "tab character"},
		{"bad token", "version: 1\nstream_type: @raw #!\n", "cannot start any token"},
		{"mapping in scalar", "version: 1\nstream_type: raw: x #!\n", "mapping values are not allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse([]byte(tc.doc), "s.yaml")
			es := config.AsErrors(err)
			if len(es) != 1 {
				t.Fatalf("want one error, got %v", err)
			}
			want := markers(tc.doc)[0]
			if e := es[0]; !strings.Contains(e.Msg, tc.msg) || e.Line < want-1 || e.Line > want || e.File != "s.yaml" {
				t.Errorf("got %v, want %q near line %d", e, tc.msg, want)
			}
		})
	}
}

// TestAliasBomb: a small document that expands to billions of nodes through aliases is
// rejected quickly instead of exhausting time or memory.
func TestAliasBomb(t *testing.T) {
	const n = 200
	var b strings.Builder
	b.WriteString("x:\n  m: &m [" + strings.TrimSuffix(strings.Repeat("r, ", n), ", ") + "]\n")
	b.WriteString("  q: &q {name: q, id: 0, cpu_core: 0, batch_size: 1, memory_regions: *m}\n")
	b.WriteString("  qs: &qs [" + strings.TrimSuffix(strings.Repeat("*q, ", n), ", ") + "]\n")
	b.WriteString("  i: &i {name: i, address: eth0, rx: {queues: *qs}}\n")
	b.WriteString("daqiri:\n  cfg:\n    version: 1\n    stream_type: raw\n")
	b.WriteString("    interfaces: [" + strings.TrimSuffix(strings.Repeat("*i, ", n), ", ") + "]\n")
	start := time.Now()
	_, err := config.Parse([]byte(b.String()), "bomb.yaml")
	if err == nil || !strings.Contains(err.Error(), "expands to more than") && !strings.Contains(err.Error(), "too many errors") {
		t.Fatalf("want an expansion error, got %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}
