package mlx5conf

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/mlx5/channel/devx"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// Part (d): DPDK's mlx5 driver (Debian 12's dpdk-testpmd 22.11 with librte-net-mlx5, over
// rdma-core's libmlx5 and the kernel's mlx5_core and mlx5_ib, as DPDK runs on a ConnectX)
// against the model's functions in the guest, as a new user would run it: --in-memory on
// the guest's hugepages, one forwarding lcore. Each run is one testpmd process whose output
// says how far it got; the model's own count of the frames comes from QUERY_VPORT_COUNTER,
// asked through DevX before and after.

// testpmdBinary is Debian's testpmd (package dpdk).
const testpmdBinary = "/usr/bin/dpdk-testpmd"

// Bounds of a testpmd run: its start (EAL on the hugepages, the mlx5 probe: hundreds of
// commands to the model through vfio-user on a TCG guest), the forwarding, and its exit.
const (
	testpmdStart   = 90 * time.Second
	testpmdForward = 3 * time.Second
	testpmdExit    = 30 * time.Second
)

// dpdkStages are what one testpmd run reaches, in order.
var dpdkStages = []string{
	"probe",           // mlx5_pci spawned an ethdev port per function ("port N MAC address is")
	"port configured", // "Configuring Port N": rte_eth_dev_configure and the queues set up
	"port started",    // "Port N: <MAC>", printed once rte_eth_dev_start succeeded
	"flow rules",      // runs with flows: testpmd printed "Flow rule #N created" for each
	"forwarding",      // "start packet forwarding" and the forwarding configuration
	"testpmd RX",      // testpmd's forward statistics count received frames on every port
	"model RX",        // the model's vport counters count at least as many frames received
	"veth peer saw",   // bridged runs: the veth's far end saw testpmd's frames both ways
	"testpmd exited",  // the process ended on its own after the newline, status 0
}

// dpdkRun is one testpmd run: which functions, which devargs, which forwarding.
type dpdkRun struct {
	name    string   // subtest and ratchet name
	macs    []string // the functions, by their mlx5_core netdev's MAC
	devargs string   // appended to each -a (",dv_flow_en=0")
	args    []string // testpmd's own arguments (after --)
	// flows are testpmd commands run from a --cmdline-file once the ports are started,
	// before forwarding; stage "flow rules" is reached when testpmd created each.
	flows []string
}

// ecpriFlow makes DPDK's mlx5 driver create its eCPRI flex parser node on the model
// (mlx5.c mlx5_flex_parser_ecpri_alloc: CREATE_GENERAL_OBJECT FLEX_PARSE_GRAPH, then
// QUERY_GENERAL_OBJECT for the sample ids) and a rule matching misc_parameters_4 (issue 32).
const ecpriFlow = "flow create 0 ingress pattern eth / ecpri common type iq_data pc_id is 1 / end actions queue index 0 / end"

// dpdkRuns are part (d)'s runs. dv_flow_en=0 is DPDK's Verbs mode (raw-packet QPs and flows
// through verbs); default mode creates its queues as DevX objects and its flows through
// rdma-core's DR API, which without software steering (sw_owner 0: the model cannot let
// software write its steering memory) keeps to root tables the firmware programs.
var dpdkRuns = []dpdkRun{
	{name: "loop default", macs: []string{macLoop},
		args: []string{"--forward-mode=io", "--port-topology=loop", "--tx-first"}, flows: []string{ecpriFlow}},
	{name: "loop verbs", macs: []string{macLoop}, devargs: ",dv_flow_en=0",
		args: []string{"--forward-mode=io", "--port-topology=loop", "--tx-first"}},
	{name: "bridged default", macs: []string{macPortA, macPortB},
		args: []string{"--forward-mode=io", "--tx-first"}},
	{name: "bridged verbs", macs: []string{macPortA, macPortB}, devargs: ",dv_flow_en=0",
		args: []string{"--forward-mode=io", "--tx-first"}},
}

// runDPDK runs one testpmd configuration and records its stages in s.
func runDPDK(t *testing.T, s *stageSet, devs []string, r dpdkRun) {
	if _, err := os.Stat(testpmdBinary); err != nil {
		s.fail("probe", fmt.Sprintf("%s: %v (package dpdk)", testpmdBinary, err))
		return
	}
	var bdfs []string
	for _, m := range r.macs {
		d := deviceWithMAC(devs, m)
		if d == "" {
			s.fail("probe", "no function with MAC "+m)
			return
		}
		bdfs = append(bdfs, d)
	}
	before := make([]vportCounts, len(bdfs))
	for i, d := range bdfs {
		c, err := queryVport(d)
		if err != nil {
			t.Logf("QUERY_VPORT_COUNTER of %s before testpmd: %v", d, err)
		}
		before[i] = c
	}
	// Two lcores on the guest's one CPU: testpmd's main lcore waits on stdin, the other
	// forwards (testpmd refuses to run without a forwarding lcore).
	args := []string{"--lcores=0@0,1@0", "--in-memory", "--no-telemetry", "--log-level=pmd.net.mlx5:info"}
	for _, d := range bdfs {
		args = append(args, "-a", d+r.devargs)
	}
	args = append(args, "--", "--total-num-mbufs=2048", "--rxd=256", "--txd=256", "--nb-cores=1")
	args = append(args, r.args...)
	if len(r.flows) > 0 {
		f := filepath.Join(t.TempDir(), "flows.txt")
		if err := os.WriteFile(f, []byte(strings.Join(r.flows, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--cmdline-file="+f)
	}
	t.Logf("%s %s", testpmdBinary, strings.Join(args, " "))
	out, exitErr, exited := runTestpmd(t, args)
	if len(r.flows) > 0 {
		var created, other []string
		for _, l := range strings.Split(out, "\n") {
			switch {
			case strings.Contains(l, "Flow rule #") && strings.Contains(l, "created"):
				created = append(created, strings.TrimSpace(l))
			case strings.Contains(strings.ToLower(l), "flow") && strings.Contains(strings.ToLower(l), "error"):
				other = append(other, strings.TrimSpace(l))
			}
		}
		if len(created) == len(r.flows) {
			s.ok("flow rules", strings.Join(created, "; "))
		} else {
			s.fail("flow rules", fmt.Sprintf("%d of %d created: %s", len(created), len(r.flows), strings.Join(append(created, other...), "; ")))
		}
	}
	after := make([]vportCounts, len(bdfs))
	for i, d := range bdfs {
		c, err := queryVport(d)
		if err != nil {
			t.Logf("QUERY_VPORT_COUNTER of %s after testpmd: %v", d, err)
		}
		after[i] = c
	}
	st := parseTestpmd(out, len(bdfs))
	applyTestpmd(s, st, len(bdfs))
	if s.has("testpmd RX") {
		var why []string
		ok := true
		for i := range bdfs {
			rx, tx := after[i].rx-before[i].rx, after[i].tx-before[i].tx
			why = append(why, fmt.Sprintf("port %d (%s): model RX %d TX %d, testpmd RX %d TX %d", i, bdfs[i], rx, tx, st.rx[i], st.tx[i]))
			if after[i].err != "" || before[i].err != "" || rx < st.rx[i] || rx == 0 {
				ok = false
			}
		}
		if ok {
			s.ok("model RX", strings.Join(why, "; "))
		} else {
			s.fail("model RX", strings.Join(why, "; "))
		}
	}
	if len(bdfs) == 2 && s.has("testpmd RX") {
		peerSaw(s)
	}
	switch {
	case !exited:
		s.fail("testpmd exited", "killed: it did not end within the bounds")
	case exitErr != nil:
		s.fail("testpmd exited", exitErr.Error())
	default:
		s.ok("testpmd exited", "")
	}
}

// testpmdState is what testpmd's output shows.
type testpmdState struct {
	probed, configured, started int // ports
	forwarding                  bool
	rx, tx                      []uint64 // per port, from the forward statistics at exit
	haveStats                   bool
	firstError                  string
}

var (
	reProbe      = regexp.MustCompile(`(?m)^mlx5_net: port \d+ MAC address is `) // mlx5_os.c, at the end of a port's spawn
	reConfigure  = regexp.MustCompile(`(?m)^Configuring Port (\d+)`)
	reStarted    = regexp.MustCompile(`(?m)^Port (\d+): ([0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5})`)
	reForwarding = regexp.MustCompile(`(?m)^\S+ packet forwarding - ports=\d+`)
	rePortStats  = regexp.MustCompile(`-+ Forward statistics for port\s+(\d+)\s+-+\s*\n\s*RX-packets:\s*(\d+)\s+RX-dropped:\s*(\d+)\s+RX-total:\s*(\d+)\s*\n\s*TX-packets:\s*(\d+)`)
	reError      = regexp.MustCompile(`(?mi)^.*(fail|error|cannot|unable|no such|not supported).*$`)
)

// parseTestpmd reads a testpmd run's output for ports ports.
func parseTestpmd(out string, ports int) testpmdState {
	st := testpmdState{rx: make([]uint64, ports), tx: make([]uint64, ports)}
	st.configured = len(reConfigure.FindAllString(out, -1))
	st.probed = max(len(reProbe.FindAllString(out, -1)), st.configured)
	for _, m := range reStarted.FindAllStringSubmatch(out, -1) {
		if n, _ := strconv.Atoi(m[1]); n < ports {
			st.started++
		}
	}
	st.forwarding = reForwarding.MatchString(out)
	for _, m := range rePortStats.FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(m[1])
		if n >= ports {
			continue
		}
		st.rx[n], _ = strconv.ParseUint(m[2], 10, 64)
		st.tx[n], _ = strconv.ParseUint(m[5], 10, 64)
		st.haveStats = true
	}
	if m := reError.FindString(out); m != "" {
		st.firstError = strings.TrimSpace(m)
	}
	return st
}

// applyTestpmd turns what testpmd showed into stages.
func applyTestpmd(s *stageSet, st testpmdState, ports int) {
	why := func(what string) string {
		if st.firstError != "" {
			return what + "; first error line: " + st.firstError
		}
		return what
	}
	if st.probed < ports {
		s.fail("probe", why(fmt.Sprintf("mlx5_pci spawned %d of %d ports", st.probed, ports)))
		return
	}
	s.ok("probe", fmt.Sprintf("%d port(s)", ports))
	if st.configured < ports {
		s.fail("port configured", why(fmt.Sprintf("%d of %d ports configured", st.configured, ports)))
		return
	}
	s.ok("port configured", "")
	if st.started < ports {
		s.fail("port started", why(fmt.Sprintf("%d of %d ports started", st.started, ports)))
		return
	}
	s.ok("port started", "")
	if !st.forwarding {
		s.fail("forwarding", why("no \"… packet forwarding - ports=…\" line"))
		return
	}
	s.ok("forwarding", "")
	if !st.haveStats {
		s.fail("testpmd RX", why("no forward statistics"))
		return
	}
	var counts []string
	all := true
	for i := range ports {
		counts = append(counts, fmt.Sprintf("port %d RX %d TX %d", i, st.rx[i], st.tx[i]))
		if st.rx[i] == 0 {
			all = false
		}
	}
	if all {
		s.ok("testpmd RX", strings.Join(counts, ", "))
	} else {
		s.fail("testpmd RX", strings.Join(counts, ", "))
	}
}

// runTestpmd starts testpmd, lets it forward for testpmdForward once it says it started
// forwarding (bounded by testpmdStart), then sends the newline that ends it (its
// non-interactive mode waits for one) and waits (bounded) for its exit.
func runTestpmd(t *testing.T, args []string) (out string, err error, exited bool) {
	// testpmd writes its own messages with stdio, block-buffered into a pipe: its
	// forwarding line would come only at exit. stdbuf (coreutils) makes them line-buffered.
	cmd := exec.Command("stdbuf", append([]string{"-oL", testpmdBinary}, args...)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", err, true
	}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return "", err, true
	}
	var mu sync.Mutex
	var b strings.Builder       // what testpmd wrote, for the parser
	var stamped strings.Builder // the same with the time since the start on each line, for the log
	start := time.Now()
	forwarding := make(chan struct{})
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		once := false
		for sc.Scan() {
			mu.Lock()
			b.WriteString(sc.Text() + "\n")
			fmt.Fprintf(&stamped, "%6.1fs %s\n", time.Since(start).Seconds(), sc.Text())
			mu.Unlock()
			if !once && reForwarding.MatchString(sc.Text()) {
				once = true
				close(forwarding)
			}
		}
		io.Copy(io.Discard, pr)
	}()
	waitc := make(chan error, 1)
	go func() { waitc <- cmd.Wait(); pw.Close() }()
	text := func() string { mu.Lock(); defer mu.Unlock(); return b.String() }
	defer func() {
		mu.Lock()
		t.Logf("testpmd output (seconds since its start):\n%s%6.1fs (end of the run)", stamped.String(), time.Since(start).Seconds())
		mu.Unlock()
	}()
	select {
	case <-forwarding:
		time.Sleep(testpmdForward)
	case err := <-waitc:
		<-readDone
		return text(), fmt.Errorf("testpmd ended before forwarding: %v", err), true
	case <-time.After(testpmdStart):
		t.Logf("testpmd did not start forwarding within %v", testpmdStart)
	}
	stdin.Write([]byte("\n"))
	stdin.Close()
	select {
	case err := <-waitc:
		<-readDone
		return text(), err, true
	case <-time.After(testpmdExit):
		cmd.Process.Kill()
		select {
		case <-waitc:
		case <-time.After(10 * time.Second):
		}
		return text(), fmt.Errorf("killed after %v", testpmdExit), false
	}
}

// vportCounts is what QUERY_VPORT_COUNTER says the function's port received and sent.
type vportCounts struct {
	rx, tx uint64
	err    string
}

// queryVport asks the function bdf's vport counters through DevX on its RDMA device
// (QUERY_VPORT_COUNTER is one of the kernel's general DevX commands, devx.c
// devx_is_general_cmd): the model's own count, whatever driver moved the frames.
func queryVport(bdf string) (vportCounts, error) {
	ents, _ := filepath.Glob("/sys/bus/pci/devices/" + bdf + "/infiniband/*")
	if len(ents) == 0 {
		return vportCounts{err: "no RDMA device"}, fmt.Errorf("no RDMA device under %s", bdf)
	}
	c, err := devx.Open(filepath.Base(ents[0]))
	if err != nil {
		return vportCounts{err: err.Error()}, err
	}
	defer c.Close()
	o := prm.QueryVportCounterOut
	out := make([]byte, (o.TransmittedEthUnicast.End()+7)/8)
	// query_vport_counter_in is 0x100 bits: the clear bit lies at 0xc0.
	if err := c.Exec(prm.NewCmdIn(prm.CmdOpQueryVportCounter, 0, 32), out); err != nil {
		return vportCounts{err: describe(err)}, err
	}
	tc := prm.TrafficCounter
	return vportCounts{
		rx: tc.Packets.At(o.ReceivedEthUnicast.Off).Get(out),
		tx: tc.Packets.At(o.TransmittedEthUnicast.Off).Get(out),
	}, nil
}

// peerSaw asks the veth's far end (peer_test.go, through mlx5e on function A, part (b2)'s
// address) how many of testpmd's frames it saw on the wire since it was last asked: frames
// A sent arrive at its end, frames B sent leave from it.
func peerSaw(s *stageSet) {
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(guestAddr)})
	if err != nil {
		s.fail("veth peer saw", "no way to ask the peer: "+err.Error())
		return
	}
	defer conn.Close()
	// mlx5e takes the function's traffic again once testpmd's flows are gone; the first
	// datagram may wait on ARP.
	var reply []byte
	for range 3 {
		if reply, err = askPeer(conn, &net.UDPAddr{IP: net.ParseIP(peerAddr), Port: peerPort}, []byte("frames"), peerWait); err == nil {
			break
		}
	}
	var in, out uint64
	if err != nil {
		s.fail("veth peer saw", fmt.Sprintf("the peer did not answer (%v)", err))
		return
	}
	if _, e := fmt.Sscanf(string(reply), "frames %d %d", &in, &out); e != nil {
		s.fail("veth peer saw", fmt.Sprintf("peer answered %q", reply))
		return
	}
	d := fmt.Sprintf("%d frames from A, %d from B", in, out)
	if in == 0 || out == 0 {
		s.fail("veth peer saw", d)
		return
	}
	s.ok("veth peer saw", d)
}

// TestParseTestpmd reads a real run's output (testdata/testpmd-bridged.txt: DPDK 22.11's
// testpmd in the conformance guest, io forwarding between the two bridged functions) and
// cut-off versions of it: every stage testpmd's output can show is found, with the counts,
// and a run cut short stops at the right stage with the first error line as the reason.
func TestParseTestpmd(t *testing.T) {
	b, err := os.ReadFile("testdata/testpmd-bridged.txt")
	if err != nil {
		t.Fatal(err)
	}
	out := string(b)
	st := parseTestpmd(out, 2)
	if st.probed != 2 || st.configured != 2 || st.started != 2 || !st.forwarding || !st.haveStats ||
		st.rx[0] != 2280484 || st.tx[0] != 2178196 || st.rx[1] != 2178164 || st.tx[1] != 2280516 {
		t.Fatalf("parsed %+v", st)
	}
	s := newStageSet(dpdkStages)
	applyTestpmd(s, st, 2)
	for _, want := range []string{"probe", "port configured", "port started", "forwarding", "testpmd RX"} {
		if !s.has(want) {
			t.Errorf("stage %q not reached: %s", want, s.failed[want])
		}
	}
	// Cut after the first port started: the second was not configured.
	cut := out[:strings.Index(out, "Configuring Port 1")] + "Fail to configure port 1 rx queues\n"
	s = newStageSet(dpdkStages)
	applyTestpmd(s, parseTestpmd(cut, 2), 2)
	if f := s.failed["port configured"]; s.has("port configured") || !strings.Contains(f, "1 of 2 ports configured") || !strings.Contains(f, "Fail to configure port 1 rx queues") {
		t.Errorf("cut run: configured %v, failure %q", s.has("port configured"), f)
	}
	if !s.has("probe") || s.has("port started") {
		t.Errorf("cut run: probe %v, port started %v", s.has("probe"), s.has("port started"))
	}
	// No port at all: the probe failed (issue 26's first run, before the model took a TIR
	// in transport domain 0).
	s = newStageSet(dpdkStages)
	applyTestpmd(s, parseTestpmd("EAL: Probe PCI driver: mlx5_pci (15b3:1017) device: 0000:01:00.0\nmlx5_net: Cannot create drop hash RX queue\nEAL: Requested device 0000:01:00.0 cannot be used\n", 1), 1)
	if s.has("probe") || !strings.Contains(s.failed["probe"], "Cannot create drop hash RX queue") || !strings.Contains(s.failed["probe"], "0 of 1 ports") {
		t.Errorf("failed probe: reached %v, failure %q", s.has("probe"), s.failed["probe"])
	}
	// A port that received nothing fails testpmd RX with the counts.
	zero := strings.Replace(out, "RX-packets: 2178164 ", "RX-packets: 0       ", 1)
	s = newStageSet(dpdkStages)
	applyTestpmd(s, parseTestpmd(zero, 2), 2)
	if s.has("testpmd RX") || !strings.Contains(s.failed["testpmd RX"], "port 1 RX 0") {
		t.Errorf("a port without RX: reached %v, failure %q", s.has("testpmd RX"), s.failed["testpmd RX"])
	}
}
