package mlx5conf

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
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
}

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
	sess, err := daqiri.Open(context.Background(), cfg)
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
		s.ok(d.stage, fmt.Sprintf("%d frames of %d..%d bytes intact in %v (%d other frames)", res.received, trafficMinLen, trafficMaxLen, res.elapsed.Round(time.Millisecond), res.foreign))
	}
	if err := sess.Close(); err != nil {
		s.fail("two-port engine closed", describe(err))
	} else {
		s.ok("two-port engine closed", "")
	}
}

func readTrim(path string) (string, error) {
	b, err := os.ReadFile(path)
	return strings.TrimSpace(string(b)), err
}
