package main

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
	"time"
)

// TestMLX5ModelRuns runs daqiri-bench on the mlx5 engine's device-model configurations (issue
// 15's done-when run, shortened: DAQIRI_BENCH_MLX5_DURATION sets the length, e.g. 10s): two
// ports cabled back to back, and one port in NIC loopback (`loopback: hw`). Every packet sent
// is received or counted as dropped with a reason (0 unaccounted); the header-data split queue
// and at least one RSS queue receive; queues no flow feeds stay empty.
func TestMLX5ModelRuns(t *testing.T) {
	d := "1s"
	if v := os.Getenv("DAQIRI_BENCH_MLX5_DURATION"); v != "" {
		d = v
	}
	if _, err := time.ParseDuration(d); err != nil {
		t.Fatalf("DAQIRI_BENCH_MLX5_DURATION=%q: %v", d, err)
	}
	for _, c := range []struct{ name, file string }{
		{"two ports", "../../mlx5/testdata/two_port.yaml"},
		{"loopback hw", "../../mlx5/testdata/loopback_hw.yaml"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if rc := run([]string{"--config", c.file, "--duration", d, "--json", "--quiet"}, &out, &errb); rc != 0 {
				t.Fatalf("rc %d: %s", rc, errb.String())
			}
			var res result
			if err := json.Unmarshal(out.Bytes(), &res); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: tx %d rx %d dropped %d %v unaccounted %d (%.3f Mpps rx)", c.name, res.TxPackets, res.RxPackets, res.DroppedPackets, res.Drops, res.Unaccounted, res.RxMpps)
			if res.TxPackets == 0 || res.RxPackets == 0 || res.Unaccounted != 0 || res.TxPackets != res.RxPackets+res.DroppedPackets {
				t.Fatalf("tx %d, rx %d, dropped %d, unaccounted %d: want tx = rx + dropped", res.TxPackets, res.RxPackets, res.DroppedPackets, res.Unaccounted)
			}
			rx := res.Stats.Ports[len(res.Stats.Ports)-1].Rx
			if len(rx) != 5 || rx[4].Packets == 0 {
				t.Fatalf("RX queues %+v: want five, the HDS queue (4) receiving", rx)
			}
			rss := 0
			for _, q := range rx[:4] {
				rss += int(q.Packets)
			}
			if rss == 0 {
				t.Fatal("no RSS queue received")
			}
		})
	}
}
