package mlx5conf

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/mlx5/channel"
	"github.com/daqiri-go/daqiri/mlx5/channel/devx"
	"github.com/daqiri-go/daqiri/mlx5/channel/trace"
	"github.com/daqiri-go/daqiri/mlx5/model/modelch"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// Part (c): this project's DevX transport (mlx5/channel/devx over verbs/mlx5dv) against
// the kernel's mlx5_ib in the guest. First the transport's own calls one by one, then the
// mlx5 engine opening a port through it, every command of which the channel trace
// (DAQIRI_MLX5_TRACE) records.

// devxStages are the transport's calls made one by one (runDevXCalls).
var devxStages = []string{
	"RDMA device found",   // /sys/class/infiniband/*/device is the model's function
	"DevX context opened", // alloc_ucontext with MLX5_IB_ALLOC_UCTX_DEVX (the kernel's CREATE_UCTX)
	"QUERY_HCA_CAP",       // DEVX_OTHER
	"UAR allocated",       // UAR_OBJ_ALLOC and mmap of the page
	"EQN queried",         // DEVX_QUERY_EQN
	"UMEM registered",     // DEVX_UMEM_REG
	"PD allocated",        // DEVX_OBJ_CREATE ALLOC_PD
	"transport domain allocated",
	"objects destroyed",
	"context closed",
}

// engineStages are what the mlx5 engine asks of the channel while it opens one port with a
// TX and an RX queue (engineConfig), in order: each command by name, each other channel
// call by its trace call name. TestEngineStagesOnModel checks the list against the same
// configuration on the in-process model, so that it follows the engine.
var engineStages = []string{
	"engine uar_alloc", "engine eqn",
	"engine ALLOC_PD", "engine ALLOC_TRANSPORT_DOMAIN", "engine CREATE_TIS", "engine ALLOC_Q_COUNTER",
	"engine QUERY_NIC_VPORT_CONTEXT", "engine MODIFY_NIC_VPORT_CONTEXT", "engine QUERY_HCA_CAP",
	"engine umem_reg", "engine CREATE_MKEY",
	"engine CREATE_CQ", "engine CREATE_RQ", "engine MODIFY_RQ", "engine CREATE_SQ", "engine MODIFY_SQ",
	"engine CREATE_TIR", "engine CREATE_FLOW_TABLE", "engine ALLOC_FLOW_COUNTER", "engine CREATE_FLOW_GROUP",
	"engine SET_FLOW_TABLE_ENTRY", "engine attach_root",
	stageEngineOpened,
	stageTrafficSent, stageTrafficReceived, // traffic_test.go: the port's wire looped back
	// The NIC's counters, read by the workers and while Close waits for the port to go
	// quiet: out of buffer, the vport's traffic and errors, the drop rules' flow counter,
	// the physical port's discards (PPCNT through ACCESS_REG, which DevX refuses: the
	// kernel owns the port registers).
	"engine QUERY_Q_COUNTER", "engine QUERY_VPORT_COUNTER", "engine QUERY_FLOW_COUNTER", "engine ACCESS_REG",
	"engine QUERY_CQ", // the overflow check of the RX CQ while the engine drains at Close
	stageEngineClosed,
}

const (
	stageEngineOpened = "engine port opened"
	stageEngineClosed = "engine closed"
)

// allDevXStages is part (c)'s ratchet order.
func allDevXStages() []string { return append(append([]string{}, devxStages...), engineStages...) }

// findRDMADevice returns the RDMA device whose parent is a Mellanox PCI function.
func findRDMADevice() (string, error) {
	ents, _ := filepath.Glob("/sys/class/infiniband/*")
	var seen []string
	for _, e := range ents {
		v, _ := os.ReadFile(e + "/device/vendor")
		seen = append(seen, filepath.Base(e)+"="+strings.TrimSpace(string(v)))
		if strings.TrimSpace(string(v)) == vendorMellanox {
			return filepath.Base(e), nil
		}
	}
	return "", fmt.Errorf("no RDMA device of vendor %s under /sys/class/infiniband (have: %q)", vendorMellanox, seen)
}

// runDevX runs part (c) against the RDMA device mlx5_ib registered for the function bdf.
func runDevX(t *testing.T, bdf string) *stageSet {
	s := newStageSet(allDevXStages())
	ibdev, err := findRDMADevice()
	if err != nil {
		s.fail("RDMA device found", err.Error())
		return s
	}
	s.ok("RDMA device found", ibdev)
	runDevXCalls(t, s, ibdev)
	runEngine(t, s, bdf)
	return s
}

// describe is a failure as the report shows it: a firmware refusal with its command, status
// and syndrome (model.SyndromeName decodes the model's), a kernel refusal with its errno.
func describe(err error) string {
	var ce *channel.CommandError
	if errors.As(err, &ce) {
		return fmt.Sprintf("%v (command %s op_mod %#x status %#x syndrome %#x)", err, ce.Name, ce.OpMod, ce.Status, ce.Syndrome)
	}
	var en unix.Errno
	if errors.As(err, &en) {
		return fmt.Sprintf("%v (errno %d)", err, int(en))
	}
	return err.Error()
}

// runDevXCalls opens the transport on ibdev and makes each of its calls once.
func runDevXCalls(t *testing.T, s *stageSet, ibdev string) {
	c, err := devx.Open(ibdev)
	if err != nil {
		s.fail("DevX context opened", describe(err))
		return
	}
	info := c.DevX().Info()
	s.ok("DevX context opened", fmt.Sprintf("%s: %d BlueFlame registers of %d bytes, CQE version %d, %d ports", c.Name(), info.TotalBFRegs, info.BFRegSize, info.CQEVersion, info.NumPorts))
	closed := false
	defer func() {
		if !closed {
			c.Close()
		}
	}()
	// step runs one stage; a failed stage ends the sequence (each needs the ones before).
	step := func(stage string, f func() (string, error)) bool {
		d, err := f()
		if err != nil {
			s.fail(stage, describe(err))
			return false
		}
		s.ok(stage, d)
		return true
	}
	var objs []channel.Object
	var rel []func() error
	ok := step("QUERY_HCA_CAP", func() (string, error) {
		out := make([]byte, 16+4096)
		if err := c.Exec(prm.NewCmdIn(prm.CmdOpQueryHCACap, uint16(prm.CapTypeGeneral)<<1|prm.CapOpModCur, 16), out); err != nil {
			return "", err
		}
		return fmt.Sprintf("port_type %d", prm.CmdHCACap.PortType.At(prm.QueryHCACapOut.Capability.Off).Get(out)), nil
	}) && step("UAR allocated", func() (string, error) {
		u, err := c.AllocUAR()
		if err != nil {
			return "", err
		}
		rel = append(rel, u.Release)
		return fmt.Sprintf("page %d", u.Index()), nil
	}) && step("EQN queried", func() (string, error) {
		n, err := c.EQN(0)
		return fmt.Sprintf("vector 0 → EQ %d", n), err
	}) && step("UMEM registered", func() (string, error) {
		mem, err := unix.Mmap(-1, 0, 1<<16, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
		if err != nil {
			return "", err
		}
		u, err := c.RegisterMemory(mem, channel.AccessLocalWrite)
		if err != nil {
			unix.Munmap(mem)
			return "", err
		}
		rel = append(rel, u.Release, func() error { return unix.Munmap(mem) })
		return fmt.Sprintf("id %d", u.ID()), nil
	}) && step("PD allocated", func() (string, error) {
		o, err := c.Create(prm.NewCmdIn(prm.CmdOpAllocPD, 0, 16), make([]byte, 16))
		if err != nil {
			return "", err
		}
		objs = append(objs, o)
		return fmt.Sprintf("pd %d", o.ID()), nil
	}) && step("transport domain allocated", func() (string, error) {
		o, err := c.Create(prm.NewCmdIn(prm.CmdOpAllocTransportDomain, 0, 16), make([]byte, 16))
		if err != nil {
			return "", err
		}
		objs = append(objs, o)
		return fmt.Sprintf("td %d", o.ID()), nil
	})
	if ok {
		step("objects destroyed", func() (string, error) {
			var errs []error
			for i := len(objs) - 1; i >= 0; i-- {
				errs = append(errs, objs[i].Destroy())
			}
			for i := len(rel) - 1; i >= 0; i-- {
				errs = append(errs, rel[i]())
			}
			return fmt.Sprintf("%d objects, %d other handles", len(objs), len(rel)), errors.Join(errs...)
		})
	}
	closed = true
	if err := c.Close(); err != nil {
		s.fail("context closed", describe(err))
	} else {
		s.ok("context closed", "")
	}
}

// configHead is the start of every daqiri configuration these tests open: the cfg keys, then
// the memory regions given (YAML list items, one per line), up to the interfaces.
func configHead(regions string) string {
	return `daqiri:
  cfg:
    version: 1
    stream_type: "raw"
    master_core: 0
    log_level: "warn"
    rx_meta_buffers: 256
    tx_meta_buffers: 256
    memory_regions:` + regions
}

// engineConfig is one mlx5 port at address with one TX and one RX queue (a striding RQ:
// 512 buffers of 2048 bytes) and no flows, so that the engine hangs its table under the
// kernel's steering with a match-all root rule.
func engineConfig(address string) string {
	return configHead(`
    - {name: "tx", kind: "host", affinity: 0, num_bufs: 512, buf_size: 2048}
    - {name: "rx", kind: "host", affinity: 0, num_bufs: 512, buf_size: 2048}
`) + fmt.Sprintf(`    interfaces:
    - name: "port"
      address: %q
      tx:
        queues:
        - {name: "tx_q", id: 0, batch_size: 32, cpu_core: 0, memory_regions: ["tx"]}
      rx:
        queues:
        - {name: "rx_q", id: 0, batch_size: 32, cpu_core: 0, memory_regions: ["rx"]}
`, address)
}

// openTraced opens the engine on address with the channel trace in a file of dir and
// returns the session (nil on failure), the error, and the trace's records.
func openTraced(t *testing.T, address, dir string) (*daqiri.Session, error, func() ([]trace.Record, error)) {
	path := filepath.Join(dir, "mlx5.trace")
	t.Setenv(trace.EnvVar, path)
	records := func() ([]trace.Record, error) {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return trace.Decode(f)
	}
	cfg, err := config.Parse([]byte(engineConfig(address)), "devx-engine.yaml")
	if err != nil {
		return nil, fmt.Errorf("engine configuration: %w", err), records
	}
	sess, err := daqiri.Open(context.Background(), cfg, daqiri.WithMLX5Fabric(&modelch.Fabric{}))
	return sess, err, records
}

// engineStageOf names the stage a trace record is, "" for none.
func engineStageOf(r trace.Record) string {
	switch {
	case r.Op != "" && r.Call != "destroy" && r.Call != "close":
		return "engine " + r.Op
	case r.Call == "uar_alloc", r.Call == "eqn", r.Call == "umem_reg", r.Call == "attach_root":
		return "engine " + r.Call
	}
	return ""
}

// applyEngineTrace marks each engine stage of the records: reached when one of its calls
// succeeded, failed with the status and syndrome or the error when none did.
func applyEngineTrace(s *stageSet, recs []trace.Record) {
	for _, r := range recs {
		st := engineStageOf(r)
		if st == "" {
			continue
		}
		if r.Err == "" && (r.Status == "" || r.Status == "OK" || strings.HasPrefix(r.Status, "0x0")) {
			if !s.has(st) {
				s.ok(st, "")
			}
			continue
		}
		if !s.has(st) {
			s.fail(st, fmt.Sprintf("status %s syndrome %#x: %s", r.Status, r.Syndrome, r.Err))
		}
	}
}

// runEngine opens the mlx5 engine on the function (its PCI address: the engine finds the
// RDMA device through it, verbs.LookupAddress), moves frames through its looped-back port
// and closes it.
func runEngine(t *testing.T, s *stageSet, bdf string) {
	sess, err, records := openTraced(t, bdf, t.TempDir())
	if err != nil {
		s.fail(stageEngineOpened, describe(err))
	} else {
		s.ok(stageEngineOpened, "")
		runTraffic(t, s, sess)
		if err := sess.Close(); err != nil {
			s.fail(stageEngineClosed, describe(err))
		} else {
			s.ok(stageEngineClosed, "")
		}
	}
	// The trace is read once the engine closed: its port workers query the RX CQ and the
	// Q counter while it runs, and Close queries the CQ once more.
	recs, rerr := records()
	if rerr != nil {
		t.Logf("channel trace: %v", rerr)
	}
	applyEngineTrace(s, recs)
	var cmds []string
	for _, r := range recs {
		cmds = append(cmds, fmt.Sprintf("%s %s %s %s", r.Call, r.Op, r.Status, r.Err))
	}
	t.Logf("engine channel trace (%d records):\n  %s", len(recs), strings.Join(cmds, "\n  "))
}
