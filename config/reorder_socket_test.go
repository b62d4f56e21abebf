package config

import (
	"strings"
	"testing"
)

// A socket stream has no flows: a reorder plan there reads the interface's only RX queue.
func TestReorderOnSocketStream(t *testing.T) {
	doc := `
version: 1
stream_type: socket
memory_regions:
- {name: rx, kind: host, affinity: 0, num_bufs: 1024, buf_size: 2048}
- {name: out, kind: host, affinity: 0, num_bufs: 8, buf_size: 262144}
interfaces:
- name: srv
  address: 127.0.0.1
  socket_config: {mode: server, local_addr: "udp://127.0.0.1:5001"}
  rx:
    queues:
    - {name: q0, id: 0, cpu_core: 0, batch_size: 128, memory_regions: [rx]}
    reorder_configs:
    - name: plan
      reorder_type: cpu
      memory_region: out
      payload_byte_offset: 0
      method:
        seq_packets_per_batch:
          sequence_number: {bit_offset: 0, bit_width: 32}
          packets_per_batch: 128
`
	if _, err := Parse([]byte(doc), "sock.yaml"); err != nil {
		t.Fatalf("a socket reorder plan without flow ids: %v", err)
	}
	two := strings.Replace(doc, "    reorder_configs:", "    - {name: q1, id: 1, cpu_core: 0, batch_size: 128, memory_regions: [rx]}\n    reorder_configs:", 1)
	_, err := Parse([]byte(two), "sock.yaml")
	if err == nil || !strings.Contains(err.Error(), "interfaces[0].rx.reorder_configs[0].flow_ids: without flows a reorder plan reads the interface's only RX queue") {
		t.Fatalf("two queues: %v", err)
	}
	withIDs := strings.Replace(doc, "      payload_byte_offset: 0", "      payload_byte_offset: 0\n      flow_ids: [5]", 1)
	if _, err := Parse([]byte(withIDs), "sock.yaml"); err == nil || !strings.Contains(err.Error(), "flow id 5 is not an RX flow") {
		t.Fatalf("flow ids on a socket stream: %v", err)
	}
}
