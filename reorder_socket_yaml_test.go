package daqiri_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/internal/testutil"
)

// TestReorderFromYAMLOverUDP opens a UDP server with a CPU reorder plan straight from YAML
// (upstream accepts reorder only on raw streams) and checks that shuffled datagrams come out
// as one ordered aggregate per batch.
func TestReorderFromYAMLOverUDP(t *testing.T) {
	port := testutil.FreePort(t, "udp")
	doc := fmt.Sprintf(`
daqiri:
  cfg:
    version: 1
    stream_type: socket
    log_level: error
    memory_regions:
    - {name: rx, kind: host, affinity: 0, num_bufs: 1024, buf_size: 2048}
    - {name: tx, kind: host, affinity: 0, num_bufs: 1024, buf_size: 2048}
    - {name: agg, kind: host, affinity: 0, num_bufs: 8, buf_size: 131072}
    interfaces:
    - name: srv
      address: 127.0.0.1
      socket_config: {mode: server, local_addr: "udp://127.0.0.1:%d"}
      rx:
        queues:
        - {name: q, id: 0, cpu_core: 0, batch_size: 64, timeout_us: 0, memory_regions: [rx]}
        reorder_configs:
        - name: plan
          reorder_type: cpu
          memory_region: agg
          payload_byte_offset: 4
          method:
            seq_packets_per_batch:
              sequence_number: {bit_offset: 0, bit_width: 32}
              packets_per_batch: 64
    - name: cli
      address: 127.0.0.1
      socket_config: {mode: client, remote_addr: "udp://127.0.0.1:%d"}
      tx:
        queues:
        - {name: t, id: 0, cpu_core: 1, batch_size: 64, memory_regions: [tx]}
`, port, port)
	cfg, err := config.Parse([]byte(doc), "reorder.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := daqiri.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	const ppb, batches, body = 64, 4, 100
	first := rand.Uint32() &^ (ppb - 1)
	var payloads [][]byte
	for b := 0; b < batches; b++ {
		var group [][]byte
		for k := 0; k < ppb; k++ {
			p := make([]byte, 4+body)
			seq := first + uint32(b*ppb+k)
			binary.BigEndian.PutUint32(p, seq)
			for j := 4; j < len(p); j++ {
				p[j] = byte(seq) ^ byte(j)
			}
			group = append(group, p)
		}
		rand.Shuffle(len(group), func(i, j int) { group[i], group[j] = group[j], group[i] })
		payloads = append(payloads, group...)
	}
	cli, _ := s.Port("cli")
	sendAll(t, s, cli, payloads, 16)
	seen := 0
	for deadline := time.Now().Add(10 * time.Second); seen < batches && time.Now().Before(deadline); {
		b, err := s.RxBurst(0, 0)
		if errors.Is(err, daqiri.ErrNotReady) {
			time.Sleep(200 * time.Microsecond)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		info, err := b.ReorderInfo()
		if err != nil || b.Flags()&daqiri.FlagReordered == 0 {
			t.Fatalf("burst is not an aggregate: %v", err)
		}
		if info.Missing != 0 || info.SourcePackets != ppb {
			t.Fatalf("batch %d: %+v", info.BatchID, info)
		}
		agg := b.Packet(0)
		for k := 0; k < ppb; k++ {
			seq := uint32(info.BatchID)*ppb + uint32(k)
			for j := 0; j < body; j++ {
				if agg[k*body+j] != byte(seq)^byte(j+4) {
					t.Fatalf("batch %d slot %d byte %d out of order", info.BatchID, k, j)
				}
			}
		}
		b.Free()
		seen++
	}
	if seen != batches {
		t.Fatalf("%d of %d aggregates", seen, batches)
	}
}
