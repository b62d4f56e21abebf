package mlx5conf

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The stages each driver can reach, in the order it reaches them.
var (
	// probeStages are mlx5probe's steps (testdata/mlx5probe.c), rdma-core's VFIO provider.
	probeStages = []string{
		"device listed", "context opened", "events fd", "QUERY_HCA_CAP", "QUERY_NIC_VPORT_CONTEXT",
		"PD allocated", "MR registered", "UAR allocated", "UMEM registered", "EQN queried",
		"CQ created", "transport domain allocated", "transport domain freed", "CQ destroyed",
		"context closed",
	}
	// coreStages: the kernel's mlx5_core. "firmware version read" is its first log line
	// about the device (mlx5_function_setup, after the init segment is read); "probe
	// finished" means the driver stayed bound with no "mlx5_init_one failed" line;
	// "netdev present" is the Ethernet netdev under the device in `ip link`.
	coreStages = []string{
		stageModprobe, "firmware version read", "probe finished", "netdev present", "netdev up",
		"netdev received", // broadcast frames sent out of the looped-back port come back to mlx5e
	}
	// ibStages: mlx5_ib on top of mlx5_core; part (c), the DevX transport on the RDMA
	// device it registers, has its stages in devx_test.go.
	ibStages = []string{stageModprobe, "RDMA device present"}
)

const stageModprobe = "modprobe returned"

// The ratchet: the stages reached when this list was last updated. A stage missing from a
// run fails the test; a stage reached beyond these is logged, to be added here.
var (
	reachedProbe = probeStages
	reachedCore  = coreStages
	reachedIB    = ibStages
	// reachedDevX: part (c), devxStages then engineStages (devx_test.go).
	reachedDevX = []string{"RDMA device found", "DevX context opened", "QUERY_HCA_CAP", "UAR allocated",
		"EQN queried", "UMEM registered", "PD allocated", "transport domain allocated",
		"objects destroyed", "context closed",
		"engine uar_alloc", "engine eqn", "engine ALLOC_PD", "engine ALLOC_TRANSPORT_DOMAIN",
		"engine CREATE_TIS", "engine ALLOC_Q_COUNTER", "engine QUERY_NIC_VPORT_CONTEXT",
		"engine QUERY_HCA_CAP", "engine umem_reg", "engine CREATE_MKEY", "engine CREATE_CQ",
		"engine CREATE_RQ", "engine MODIFY_RQ", "engine CREATE_SQ", "engine MODIFY_SQ",
		"engine CREATE_TIR", "engine CREATE_FLOW_TABLE", "engine ALLOC_FLOW_COUNTER",
		"engine CREATE_FLOW_GROUP", "engine SET_FLOW_TABLE_ENTRY", "engine attach_root",
		"engine port opened", "engine traffic sent", "engine traffic received",
		"engine QUERY_Q_COUNTER", "engine QUERY_VPORT_COUNTER", "engine QUERY_FLOW_COUNTER",
		"engine QUERY_CQ", "engine closed"}
	// reachedTwoPorts: part (c)'s two cabled ports (twoport_test.go).
	reachedTwoPorts = []string{"two ports found", "two-port engine opened", "traffic A to B",
		"traffic B to A", "two-port engine closed", "daqiri-bench A to B"}
	// reachedBridged: part (b2), mlx5e talking to the veth's far end (bridged_test.go).
	reachedBridged = bridgedStages
	// reachedDPDK: part (d), each testpmd run of dpdkRuns by name (dpdk_test.go).
	reachedDPDK = map[string][]string{
		"loop default": {"probe", "port configured", "port started", "flow rules", "forwarding", "testpmd RX", "model RX", "testpmd exited"},
		"loop verbs":   {"probe", "port configured", "port started", "forwarding", "testpmd RX", "model RX", "testpmd exited"},
		"bridged default": {"probe", "port configured", "port started", "forwarding", "testpmd RX", "model RX",
			"veth peer saw", "testpmd exited"},
		"bridged verbs": {"probe", "port configured", "port started", "forwarding", "testpmd RX", "model RX",
			"veth peer saw", "testpmd exited"},
	}
)

// stageSet records what one driver reached, with a line of detail per stage.
type stageSet struct {
	order   []string
	reached map[string]string // stage → detail
	failed  map[string]string // stage → why
}

func newStageSet(order []string) *stageSet {
	return &stageSet{order: order, reached: map[string]string{}, failed: map[string]string{}}
}

func (s *stageSet) ok(stage, detail string) { s.reached[stage] = detail }

func (s *stageSet) fail(stage, why string) { s.failed[stage] = why }

// report lists every stage with its outcome, one per line.
func (s *stageSet) report() string {
	var b strings.Builder
	for _, st := range s.order {
		switch {
		case s.has(st):
			fmt.Fprintf(&b, "  reached  %s %s\n", st, s.reached[st])
		case s.failed[st] != "":
			fmt.Fprintf(&b, "  FAILED   %s: %s\n", st, s.failed[st])
		default:
			fmt.Fprintf(&b, "  not run  %s\n", st)
		}
	}
	return b.String()
}

func (s *stageSet) has(stage string) bool {
	_, ok := s.reached[stage]
	return ok
}

// ratchet fails t for every stage in want that s did not reach, and logs the stages
// reached beyond want.
func (s *stageSet) ratchet(t testing.TB, driver string, want []string) {
	t.Helper()
	t.Logf("%s stages:\n%s", driver, s.report())
	for _, st := range want {
		if !s.has(st) {
			t.Errorf("%s: regression: stage %q was reached before and is not now (%s)", driver, st, s.failed[st])
		}
	}
	var more []string
	for _, st := range s.order {
		if s.has(st) && !slices.Contains(want, st) {
			more = append(more, st)
		}
	}
	if len(more) > 0 {
		t.Logf("%s: progress: also reached %q; add them to the ratchet in conformance_test.go", driver, more)
	}
}

func TestStageSetRatchet(t *testing.T) {
	for _, list := range [][]string{reachedProbe, reachedCore, reachedIB, reachedDevX, reachedTwoPorts, reachedBridged} {
		for _, st := range list {
			if !slices.Contains(probeStages, st) && !slices.Contains(coreStages, st) && !slices.Contains(ibStages, st) && !slices.Contains(allDevXStages(), st) && !slices.Contains(twoPortStages, st) && !slices.Contains(bridgedStages, st) {
				t.Errorf("ratchet stage %q is no known stage", st)
			}
		}
	}
	for _, r := range dpdkRuns {
		list, ok := reachedDPDK[r.name]
		if !ok {
			t.Errorf("DPDK run %q has no ratchet in reachedDPDK", r.name)
		}
		for _, st := range list {
			if !slices.Contains(dpdkStages, st) {
				t.Errorf("DPDK %s: ratchet stage %q is no known stage", r.name, st)
			}
		}
	}
	if len(reachedDPDK) != len(dpdkRuns) {
		t.Errorf("reachedDPDK has %d runs, dpdkRuns %d", len(reachedDPDK), len(dpdkRuns))
	}
	s := newStageSet([]string{"a", "b", "c"})
	s.ok("a", "fine")
	s.fail("b", "status 0x2")
	ft := &recorder{TB: t}
	s.ratchet(ft, "drv", []string{"a", "b"})
	if len(ft.errors) != 1 || !strings.Contains(ft.errors[0], `"b"`) || !strings.Contains(ft.errors[0], "status 0x2") {
		t.Errorf("ratchet errors %q, want one naming stage b and its failure", ft.errors)
	}
	rep := s.report()
	for _, want := range []string{"reached  a fine", "FAILED   b: status 0x2", "not run  c"} {
		if !strings.Contains(rep, want) {
			t.Errorf("report lacks %q:\n%s", want, rep)
		}
	}
	ft = &recorder{TB: t}
	s.ok("c", "")
	s.ratchet(ft, "drv", []string{"a"})
	if len(ft.errors) != 0 || !strings.Contains(strings.Join(ft.logs, "\n"), `progress: also reached ["c"]`) {
		t.Errorf("errors %q logs %q: want none, and progress naming c", ft.errors, ft.logs)
	}
}

// recorder keeps what a check reports instead of failing the test.
type recorder struct {
	testing.TB
	errors, logs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorder) Logf(format string, args ...any) {
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}
