package mlx5conf

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/integration/vm"
	"github.com/daqiri-go/daqiri/mlx5/model/modelch"
)

// Part (c) with two ports: the engine opens the two bridged functions (MACs macPortA and
// macPortB, whose servers' wires are the two ends of a veth pair on the host) in one
// session over the DevX transport and moves frames from A to B, then from B to A.
var twoPortStages = []string{
	"two ports found", // the functions with macPortA and macPortB
	"two-port engine opened",
	"traffic A to B",
	"traffic B to A",
	"two-port engine closed",
	"daqiri-bench A to B", // tools/daqiri-bench, built by the host, on the same two functions
}

// benchBinary is where the host test puts tools/daqiri-bench (WorkDir/bin).
const benchBinary = vm.GuestWork + "/bin/daqiri-bench"

// Bounds of the daqiri-bench run: a short send at a capped rate (the guest has one TCG
// CPU), at most benchWindow frames in flight, the whole process bounded.
const (
	benchDuration = "2s"
	benchRateGbps = "0.002" // 250 frames/s of 1000-byte payload: about 500 in the run
	benchWindow   = "64"
	benchTimeout  = 90 * time.Second
)

// runTwoPorts runs the two-port stages on the functions of devs.
func runTwoPorts(t *testing.T, s *stageSet, devs []string) {
	a, b := deviceWithMAC(devs, macPortA), deviceWithMAC(devs, macPortB)
	if a == "" || b == "" {
		var macs []string
		for _, d := range devs {
			n := netdevOf(d)
			addr, _ := readTrim("/sys/class/net/" + n + "/address")
			macs = append(macs, fmt.Sprintf("%s=%s(%s)", d, n, addr))
		}
		s.fail("two ports found", fmt.Sprintf("want functions with MACs %s and %s; have %s", macPortA, macPortB, strings.Join(macs, " ")))
		return
	}
	s.ok("two ports found", fmt.Sprintf("A %s, B %s", a, b))
	cfg, err := config.Parse([]byte(twoPortConfig(a, b)), "devx-two-ports.yaml")
	if err != nil {
		s.fail("two-port engine opened", fmt.Sprintf("engine configuration: %v", err))
		return
	}
	sess, err := daqiri.Open(context.Background(), cfg, daqiri.WithMLX5Fabric(&modelch.Fabric{}))
	if err != nil {
		s.fail("two-port engine opened", describe(err))
		return
	}
	s.ok("two-port engine opened", "")
	for _, d := range []struct {
		stage    string
		from, to int
		dst      string
	}{{"traffic A to B", 0, 1, macPortB}, {"traffic B to A", 1, 0, macPortA}} {
		res, err := moveTraffic(sess, d.from, d.to, mustMAC(d.dst), uint64(time.Now().UnixNano()))
		t.Logf("%s: sent %d, received %d intact, %d other frames, rx dropped %d, tx dropped %d, %v", d.stage, res.sent, res.received, res.foreign, res.rxDropped, res.txDropped, res.elapsed.Round(time.Millisecond))
		if err != nil {
			s.fail(d.stage, err.Error())
			break
		}
		s.ok(d.stage, fmt.Sprintf("%d frames of %d..%d bytes intact in %v (%d other frames), RX timestamps within the guest clock's window (closest %v)", res.received, trafficMinLen, trafficMaxLen, res.elapsed.Round(time.Millisecond), res.foreign, res.stampSlack.Round(time.Microsecond)))
	}
	if err := sess.Close(); err != nil {
		s.fail("two-port engine closed", describe(err))
		return
	}
	s.ok("two-port engine closed", "")
	runBench(t, s, a, b)
}

// benchConfig is daqiri-bench's configuration for the functions a (TX) and b (RX): one
// queue each, no flows (the engine's match-all rule), UDP frames to b's MAC.
func benchConfig(a, b string) string {
	return configHead(`
    - {name: "tx", kind: "host", affinity: 0, num_bufs: 512, buf_size: 2048}
    - {name: "rx", kind: "host", affinity: 0, num_bufs: 512, buf_size: 2048}
`) + fmt.Sprintf(`    interfaces:
    - name: "port_a"
      address: %q
      tx:
        queues:
        - {name: "tx_q", id: 0, batch_size: 32, cpu_core: 0, memory_regions: ["tx"]}
    - name: "port_b"
      address: %q
      rx:
        queues:
        - {name: "rx_q", id: 0, batch_size: 32, cpu_core: 0, memory_regions: ["rx"]}
bench_rx:
- {interface_name: "port_b", queue_id: 0, cpu_core: 0}
bench_tx:
- interface_name: "port_a"
  queue_id: 0
  cpu_core: 0
  batch_size: 32
  payload_size: 1000
  header_size: 64
  eth_dst_addr: %s
  ip_src_addr: 10.0.0.1
  ip_dst_addr: 10.0.0.2
  udp_src_port: 4000
  udp_dst_port: 5000
`, a, b, macPortB)
}

// benchResult is the part of daqiri-bench's --json output the stage checks.
type benchResult struct {
	TxPackets      uint64            `json:"tx_packets"`
	RxPackets      uint64            `json:"rx_packets"`
	DroppedPackets uint64            `json:"dropped_packets"`
	Drops          map[string]uint64 `json:"drops"`
	Unaccounted    int64             `json:"unaccounted_packets"`
	SendErrors     uint64            `json:"send_errors"`
	Seconds        float64           `json:"seconds"`
}

// runBench runs daqiri-bench from a to b over DevX: the stage is reached when it sent
// frames and every one was received (none dropped, none unaccounted).
func runBench(t *testing.T, s *stageSet, a, b string) {
	const stage = "daqiri-bench A to B"
	if _, err := os.Stat(benchBinary); err != nil {
		s.fail(stage, fmt.Sprintf("no %s (the host test builds it): %v", benchBinary, err))
		return
	}
	// The bench's RX queue takes every frame on B's wire (no flows), and the kernel's own
	// netdevs of the two functions stay up from part (b): an IPv6 router solicitation (70
	// bytes) or MLD report from either stack during the run is one frame more received than
	// sent (two conformance runs failed "tx 480, rx 481"). IPv6 off on both for this stage.
	for _, d := range []string{a, b} {
		if n := netdevOf(d); n != "" {
			if err := os.WriteFile("/proc/sys/net/ipv6/conf/"+n+"/disable_ipv6", []byte("1\n"), 0o644); err != nil {
				t.Logf("disable IPv6 on %s: %v", n, err)
			}
		}
	}
	cfgPath := filepath.Join(t.TempDir(), "bench.yaml")
	if err := os.WriteFile(cfgPath, []byte(benchConfig(a, b)), 0o644); err != nil {
		s.fail(stage, err.Error())
		return
	}
	out, err, done := runBounded(benchTimeout, benchBinary, "--config", cfgPath, "--duration", benchDuration,
		"--rate", benchRateGbps, "--window", benchWindow, "--json", "--quiet")
	t.Logf("daqiri-bench output:\n%s", out)
	if !done || err != nil {
		s.fail(stage, fmt.Sprintf("daqiri-bench: %v (ended: %v)", err, done))
		return
	}
	// The JSON object is the output's last part; notes to standard error come before it.
	i := strings.Index(out, "{")
	var res benchResult
	if i < 0 {
		s.fail(stage, "no JSON result in daqiri-bench's output")
		return
	}
	if err := json.Unmarshal([]byte(out[i:]), &res); err != nil {
		s.fail(stage, fmt.Sprintf("daqiri-bench's JSON result: %v", err))
		return
	}
	if res.TxPackets == 0 || res.RxPackets != res.TxPackets || res.DroppedPackets != 0 || res.Unaccounted != 0 || res.SendErrors != 0 {
		s.fail(stage, fmt.Sprintf("tx %d, rx %d, dropped %d %v, unaccounted %d, send errors %d: want every frame sent received", res.TxPackets, res.RxPackets, res.DroppedPackets, res.Drops, res.Unaccounted, res.SendErrors))
		return
	}
	s.ok(stage, fmt.Sprintf("%d frames of 1000-byte payload sent and received in %.1f s, none dropped", res.TxPackets, res.Seconds))
}

func readTrim(path string) (string, error) {
	b, err := os.ReadFile(path)
	return strings.TrimSpace(string(b)), err
}

// TestBenchConfig: the configuration the guest hands daqiri-bench loads, with the two
// functions' addresses where they belong.
func TestBenchConfig(t *testing.T) {
	cfg, err := config.Parse([]byte(benchConfig("0000:02:00.0", "0000:03:00.0")), "bench.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(cfg.Interfaces); n != 2 || cfg.Interfaces[0].Address != "0000:02:00.0" || cfg.Interfaces[1].Address != "0000:03:00.0" || cfg.Interfaces[0].TX == nil || cfg.Interfaces[1].RX == nil {
		t.Fatalf("interfaces %+v: want TX on 0000:02:00.0, RX on 0000:03:00.0", cfg.Interfaces)
	}
}
