package mlx5conf

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/integration/vm"
	"github.com/daqiri-go/daqiri/integration/vm/guest"
	"github.com/daqiri-go/daqiri/internal/testutil"
)

// Bounds of the host side.
const (
	vmTimeout     = 720 * time.Second // boot to power-off: the guest's bounded waits plus boot
	guestTimeout  = 660 * time.Second // -test.timeout of the guest binary
	listenTimeout = 30 * time.Second  // the server's "listening on" line
	serverExit    = 10 * time.Second  // the server ending after qemu disconnects
)

// TestMLX5Conformance boots the VM with the model attached over vfio-user and reports what
// NVIDIA's drivers reached against it (package doc).
func TestMLX5Conformance(t *testing.T) {
	if guest.Active() {
		t.Skip("the host side; inside the VM TestGuestMLX5 runs")
	}
	qemu, err := vm.CachedQEMU()
	if err != nil {
		testutil.Missing(t, "%v", err)
	}
	h, err := vm.FindHost()
	if err != nil {
		testutil.Missing(t, "%v", err)
	}
	gcc := testutil.RequireTool(t, "gcc", "package gcc")
	testutil.RequireTool(t, "ip", "package iproute2") // the veth pair between two servers' ports
	if _, err := os.Stat("/usr/include/infiniband/mlx5dv.h"); err != nil {
		testutil.Missing(t, "rdma-core's headers /usr/include/infiniband/mlx5dv.h (package libibverbs-dev)")
	}
	// Part (d) runs the host's DPDK in the guest (which runs the host's root file system).
	testutil.RequireTool(t, "dpdk-testpmd", "package dpdk")
	if m, _ := filepath.Glob("/usr/lib/x86_64-linux-gnu/dpdk/pmds-*/librte_net_mlx5.so*"); len(m) == 0 {
		testutil.Missing(t, "DPDK's mlx5 driver /usr/lib/x86_64-linux-gnu/dpdk/pmds-*/librte_net_mlx5.so (package librte-net-mlx5-23)")
	}
	root := testutil.ModuleRoot(t)

	keep := os.Getenv("DAQIRI_VM_KEEP") == "1"
	work := t.TempDir()
	if keep {
		if work, err = os.MkdirTemp("", "daqiri-mlx5conf-"); err != nil {
			t.Fatal(err)
		}
		t.Logf("work folder kept: %s", work)
	}
	vmWork := filepath.Join(work, "vm")
	if err := os.MkdirAll(filepath.Join(vmWork, "bin"), 0o777); err != nil {
		t.Fatal(err)
	}
	// The guest runs as root over 9p with security_model=none: files it creates in the
	// work folder belong to whoever runs qemu.
	if err := os.Chmod(vmWork, 0o777); err != nil {
		t.Fatal(err)
	}

	// The probe, compiled here against the host's rdma-core: the guest runs the host's
	// root file system, so it finds the same libmlx5 there.
	cc := exec.CommandContext(t.Context(), gcc, "-O2", "-Wall", "-Wno-format-zero-length",
		"-o", filepath.Join(vmWork, "bin", "mlx5probe"), filepath.Join("testdata", "mlx5probe.c"), "-libverbs", "-lmlx5")
	if out, err := cc.CombinedOutput(); err != nil {
		t.Fatalf("gcc testdata/mlx5probe.c: %v\n%s", err, out)
	}

	// Three functions (the guest finds them by MAC, in this order on its PCI bus): the
	// first cabled to itself for parts (a) to (c); the other two bridged to the two ends
	// of a veth pair, so that part (c) also moves traffic from one port to another.
	bin := buildServer(t, h.Go, root, work)
	// daqiri-bench for part (c)'s two ports, next to the probe (the guest runs the host's
	// binaries from the work folder).
	bb := exec.CommandContext(t.Context(), h.Go, "build", "-o", filepath.Join(vmWork, "bin", "daqiri-bench"), "./tools/daqiri-bench")
	bb.Dir = root
	bb.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := bb.CombinedOutput(); err != nil {
		t.Fatalf("go build ./tools/daqiri-bench: %v\n%s", err, out)
	}
	netns, va, vb := veth(t)
	wirePeer := startPeer(t, netns, vb)
	servers := []*server{
		startServer(t, bin, work, "mlx5", macLoop, "", "-loopback"),
		startServer(t, bin, work, "mlx5a", macPortA, netns, "-bridge", va),
		// B has no real-time clock: the engine stamps B's receives with its free-running
		// timer through the kernel's clock information page, A's in real time.
		startServer(t, bin, work, "mlx5b", macPortB, netns, "-bridge", vb, "-timer-only"),
	}
	var sockets []string
	for _, s := range servers {
		sockets = append(sockets, s.socket)
	}

	o := vm.Options{
		ModuleRoot: root, WorkDir: vmWork,
		Packages: []string{"./integration/mlx5conf"}, Run: "^TestGuestMLX5$",
		QEMU: qemu, VFIOUser: sockets,
		// DPDK (part (d)) as a new user runs it: 256 hugepages of 2 MiB in a 2-GiB guest.
		MemoryMiB: 2048, HugePages: 256,
		Timeout: vmTimeout, TestTimeout: guestTimeout,
		Logf: t.Logf,
	}
	if dl, ok := t.Deadline(); ok && time.Until(dl)-30*time.Second < o.Timeout {
		testutil.Missing(t, "only %v left before the go test deadline; the VM needs %v (run with -timeout 15m, as make does)", time.Until(dl).Round(time.Second), o.Timeout)
	}
	rep, err := vm.Run(t.Context(), h, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("VM run: build %.1fs, boot %.1fs, setup %.1fs, qemu total %.1fs", rep.Build.Seconds(), rep.Boot.Seconds(), rep.Setup.Seconds(), rep.Wall.Seconds())
	// The veth pair's counters: what the two bridged servers put on the wire and took from
	// it (the servers' own counters start over at mlx5_core's TEARDOWN_HCA).
	if out, err := exec.Command("ip", "-n", netns, "-s", "link", "show").CombinedOutput(); err != nil {
		t.Logf("ip -n %s -s link show: %v\n%s", netns, err, out)
	} else {
		t.Logf("the wire between the bridged ports (%s, %s in %s):\n%s", va, vb, netns, out)
	}
	peerIn, peerOut := wirePeer.totals()
	t.Logf("the veth peer saw %d testpmd frames arrive from A's side and %d leave from B's", peerIn, peerOut)
	// The servers' accounts come first: they are what the failures below are about.
	for _, srv := range servers {
		srv.stop(t)
		t.Logf("model server %s log: %s", srv.name, summarizeServerLog(srv.log()))
		t.Logf("model server %s output:\n%s", srv.name, srv.stdout.String())
	}

	if len(rep.Packages) != 1 {
		t.Fatalf("VM ran %d packages, want the one", len(rep.Packages))
	}
	pr := rep.Packages[0]
	if pr.BuildFailed {
		t.Fatalf("the guest test binary did not build: %v", pr.Err)
	}
	if pr.Err != nil {
		t.Errorf("reading the guest results: %v", pr.Err)
	}
	var guestTest *vm.TestResult
	for _, tr := range pr.Tests {
		reportGuest(t, tr)
		if tr.Name == "TestGuestMLX5" {
			guestTest = tr
		}
	}
	switch {
	case guestTest == nil:
		t.Errorf("TestGuestMLX5 did not run in the guest (exit %d, finished %v); console tail:\n%s", pr.Exit, pr.Finished, rep.ConsoleTail(60))
	case !pr.Finished:
		t.Errorf("the guest test binary did not finish (VM timeout %v or crash); console tail:\n%s", o.Timeout, rep.ConsoleTail(60))
	}
	if out := strings.TrimSpace(pr.Output); out != "" && out != "PASS" && out != "FAIL" {
		t.Logf("guest package output:\n%s", out)
	}
}

// reportGuest mirrors one guest test (and its subtests) as a subtest here.
func reportGuest(t *testing.T, tr *vm.TestResult) {
	t.Run(tr.Leaf(), func(t *testing.T) {
		if out := strings.TrimRight(tr.Output, "\n"); out != "" {
			t.Log("guest output:\n" + out)
		}
		for _, c := range tr.Children {
			reportGuest(t, c)
		}
		switch tr.Result {
		case vm.Fail:
			t.Errorf("FAIL in the guest (%.1fs)", tr.Elapsed.Seconds())
		case vm.Skip:
			// Under CI a skip in the guest already failed there (guest.Require is
			// satisfied in the VM; only missing tools skip).
			t.Skipf("SKIP in the guest")
		case vm.NoResult:
			t.Errorf("the test started in the guest but never ended (crash or timeout)")
		}
	})
}

// server is the model's vfio-user server process.
type server struct {
	name    string
	cmd     *exec.Cmd
	socket  string
	logPath string
	stdout  *testutil.SyncBuffer // "listening on", and the summary by opcode at exit
	stderr  *testutil.SyncBuffer
	done    chan error
	stopped bool
}

// buildServer builds tools/daqiri-mlx5model into work.
func buildServer(t *testing.T, goCmd, root, work string) string {
	t.Helper()
	bin := filepath.Join(work, "daqiri-mlx5model")
	build := exec.CommandContext(t.Context(), goCmd, "build", "-o", bin, "./tools/daqiri-mlx5model")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./tools/daqiri-mlx5model (the model's vfio-user server): %v\n%s", err, out)
	}
	return bin
}

// startServer starts the server bin as name (its socket, log and messages are named for it)
// with the MAC mac and the wire arguments wire (-loopback, -bridge IFNAME); with netns
// it runs in that network namespace (ip netns exec), where its bridged netdev is. It
// waits (bounded) for the "listening on" line. Cleanup kills it if it still runs.
func startServer(t *testing.T, bin, work, name, mac, netns string, wire ...string) *server {
	t.Helper()
	// Unix socket paths are limited to 107 bytes; a folder of its own under /tmp keeps
	// it short whatever TMPDIR is.
	sockDir, err := os.MkdirTemp("/tmp", "mlx5conf-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	s := &server{
		name:    name,
		socket:  filepath.Join(sockDir, name+".sock"),
		logPath: filepath.Join(work, name+".log"),
		stdout:  &testutil.SyncBuffer{},
		stderr:  &testutil.SyncBuffer{},
		done:    make(chan error, 1),
	}
	args := append([]string{"-v", "-mac", mac, "-socket", s.socket, "-log", s.logPath}, wire...)
	if netns != "" {
		// ip netns exec enters the namespace and execs the server: the process is it.
		s.cmd = exec.Command("ip", append([]string{"netns", "exec", netns, bin}, args...)...)
	} else {
		s.cmd = exec.Command(bin, args...)
	}
	s.cmd.Dir = work
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	s.cmd.Stderr = s.stderr
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	t.Cleanup(func() { s.kill() })
	ready := make(chan string, 1)
	out := s.stdout
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if strings.HasPrefix(sc.Text(), "listening on") {
				ready <- sc.Text()
			}
		}
		io.Copy(io.Discard, stdout)
		s.done <- s.cmd.Wait()
	}()
	select {
	case line := <-ready:
		t.Logf("model server %s (%s %s): %s", name, mac, strings.Join(wire, " "), line)
	case err := <-s.done:
		s.stopped = true
		t.Fatalf("the model server %s exited before listening: %v\nstdout:\n%s\nstderr:\n%s", name, err, out.String(), s.stderr.String())
	case <-time.After(listenTimeout):
		t.Fatalf("the model server %s printed no \"listening on\" line within %v\nstdout:\n%s\nstderr:\n%s", name, listenTimeout, out.String(), s.stderr.String())
	}
	return s
}

// veth creates a fresh network namespace holding a veth pair (a, b) with both ends up,
// for the two bridged ports' wire, and removes it (and so the pair) at cleanup. IPv6 is off
// in it, so that the wire carries only what the guest sends.
func veth(t *testing.T) (netns, a, b string) {
	t.Helper()
	netns = fmt.Sprintf("daqiri-mlx5c-%d", os.Getpid())
	a, b = "mlx5ca", "mlx5cb"
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.CommandContext(t.Context(), "ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("netns", "add", netns)
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", netns).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v\n%s", netns, err, out)
		}
	})
	run("-n", netns, "link", "add", a, "type", "veth", "peer", "name", b)
	for _, k := range []string{"all", "default"} {
		if out, err := exec.Command("ip", "netns", "exec", netns, "sysctl", "-qw", "net.ipv6.conf."+k+".disable_ipv6=1").CombinedOutput(); err != nil {
			t.Logf("disabling IPv6 in %s: %v %s (the wire may carry neighbour discovery; the guest counts it apart)", netns, err, out)
		}
	}
	run("-n", netns, "link", "set", a, "up")
	run("-n", netns, "link", "set", b, "up")
	return netns, a, b
}

// stop waits (bounded) for the server to end on its own once qemu is gone, then kills it.
func (s *server) stop(t *testing.T) {
	if s.stopped {
		return
	}
	select {
	case err := <-s.done:
		s.stopped = true
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Logf("model server %s: %v", s.name, err)
		} else if err != nil {
			t.Logf("model server %s exited with %v; stderr:\n%s", s.name, err, s.stderr.String())
		}
	case <-time.After(serverExit):
		t.Logf("the model server %s still ran %v after qemu exited; killed", s.name, serverExit)
		s.kill()
	}
}

func (s *server) kill() {
	if s.stopped {
		return
	}
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-s.done:
	case <-time.After(serverExit):
	}
	s.stopped = true
}

func (s *server) log() string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v; stderr: %s)", err, s.stderr.String())
	}
	return string(b)
}

// The server's log (tools/daqiri-mlx5model): "cmd NAME op_mod 0x.. status STATUS syndrome
// 0x..[ delivery 0x..]", one line per command (the delivery status when the queue entry
// could not be carried); NAME is CmdOp(0x..) for an opcode the model does not know,
// answered with BAD_OP_ERR. With -v also "vfio-user: …" and "pcidev: …" lines for what the
// server or the device refused.
var (
	cmdStatus   = regexp.MustCompile(`\bstatus (\S+)`)
	cmdDelivery = regexp.MustCompile(`\bdelivery (\S+)`)
	refusedLine = regexp.MustCompile(`(?i)^(vfio-user|pcidev):.*(refus|unknown|unsupported|not implemented|fail|error|invalid|bad)`)
	// The server's closing count line ("vfio-user: session: 7065 messages, 0 refused; …") is
	// a problem only when it counts refusals.
	sessionLine = regexp.MustCompile(`^vfio-user: session: .*\b(\d+) refused`)
)

// isProblem reports whether a log line is about a command or access the model did not
// carry out: a command status other than OK, a delivery status other than 0, or a refusal.
func isProblem(l string) bool {
	if m := cmdStatus.FindStringSubmatch(l); m != nil {
		if d := cmdDelivery.FindStringSubmatch(l); d != nil && d[1] != "0x0" {
			return true
		}
		return m[1] != "OK" && m[1] != "0x0"
	}
	if m := sessionLine.FindStringSubmatch(l); m != nil {
		return m[1] != "0"
	}
	return refusedLine.MatchString(l)
}

// summarizeServerLog returns the number of log lines, then each line about a command the
// model did not know or failed, once, with how often it came (first seen order).
func summarizeServerLog(log string) string {
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	if log == "" {
		lines = nil
	}
	count := map[string]int{}
	var order []string
	for _, l := range lines {
		if !isProblem(l) {
			continue
		}
		key := normalizeLogLine(l)
		if count[key] == 0 {
			order = append(order, key)
		}
		count[key]++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d log lines; %d distinct unknown or failed commands", len(lines), len(order))
	for _, k := range order {
		fmt.Fprintf(&b, "\n  %4d× %s", count[k], k)
	}
	if len(lines) > 0 {
		tail := lines[max(0, len(lines)-40):]
		fmt.Fprintf(&b, "\nlast %d log lines:\n  %s", len(tail), strings.Join(tail, "\n  "))
	}
	return b.String()
}

// normalizeLogLine drops what differs between two reports of the same problem: a leading
// timestamp; in a command line, syndromes and other hexadecimal values longer than 4
// digits (opcode and op_mod stay); in a server or device line, every number (message
// sequence numbers, addresses, sizes) and byte dumps.
var (
	leadingTime = regexp.MustCompile(`^\S*\d\d:\d\d:\d\d\S*\s+`)
	longHex     = regexp.MustCompile(`0x[0-9a-fA-F]{5,}`)
	anyNumber   = regexp.MustCompile(`0x[0-9a-fA-F]+|\b\d+\b`)
	byteDump    = regexp.MustCompile(`\b[0-9a-fA-F]{2}( [0-9a-fA-F]{2}){7,}\b`)
)

func normalizeLogLine(l string) string {
	l = leadingTime.ReplaceAllString(l, "")
	if strings.HasPrefix(l, "cmd ") {
		return longHex.ReplaceAllString(l, "0x…")
	}
	l = byteDump.ReplaceAllString(l, "<bytes>")
	return anyNumber.ReplaceAllStringFunc(l, func(n string) string {
		if strings.HasPrefix(n, "0x") {
			return "0x…"
		}
		return "N"
	})
}

func TestSummarizeServerLog(t *testing.T) {
	log := strings.Join([]string{
		"cmd ENABLE_HCA op_mod 0x0 status OK syndrome 0x0",
		"cmd CmdOp(0x7fe) op_mod 0x3 status BAD_OP_ERR syndrome 0x0",
		"cmd CREATE_MKEY op_mod 0x0 status BAD_PARAM_ERR syndrome 0x1234567",
		"vfio-user: session started",
		"cmd CmdOp(0x7fe) op_mod 0x3 status BAD_OP_ERR syndrome 0x0",
		"pcidev: refused a write of 8 bytes at BAR0 0x1000",
		"cmd CREATE_MKEY op_mod 0x0 status BAD_PARAM_ERR syndrome 0x7654321",
		"vfio-user: message 238 (DMA_UNMAP) refused: DMA_UNMAP: no window in 0xfe000000+0x800000: no such file or directory",
		"vfio-user: message 239 (DMA_UNMAP) refused: DMA_UNMAP: no window in 0x0+0x80000000: no such file or directory",
		"cmd ENABLE_HCA(0x104) op_mod 0x0 status 0x0 OK syndrome 0x0 delivery 0x8",
		"cmd ENABLE_HCA(0x104) op_mod 0x0 status 0x0 OK syndrome 0x0",
		"vfio-user: session: 7065 messages, 0 refused; 3088 DMA windows mapped (3082 with a descriptor), 3082 unmapped, at most 2974 at once",
		"vfio-user: session: 7065 messages, 142 refused; 3088 DMA windows mapped (3082 with a descriptor), 3082 unmapped, at most 2974 at once",
		"pcidev: command queue entry 0 at 0xfffff000 not carried (delivery status 0x8): 07 00 00 00 00 00 00 10 01 04 00 00 00 00 00 0c",
		"pcidev: command queue entry 1 at 0xfffff040 not carried (delivery status 0x8): 07 00 00 00 00 00 00 10 01 04 e1 00 00 00 00 0c",
	}, "\n") + "\n"
	got := summarizeServerLog(log)
	for _, want := range []string{
		"15 log lines; 7 distinct",
		"1× vfio-user: session: N messages, N refused; N DMA windows mapped (N with a descriptor), N unmapped, at most N at once",
		"2× pcidev: command queue entry N at 0x… not carried (delivery status 0x…): <bytes>",
		"2× vfio-user: message N (DMA_UNMAP) refused: DMA_UNMAP: no window in 0x…+0x…: no such file or directory",
		"2× cmd CmdOp(0x7fe) op_mod 0x3 status BAD_OP_ERR syndrome 0x0",
		"2× cmd CREATE_MKEY op_mod 0x0 status BAD_PARAM_ERR syndrome 0x…",
		"1× pcidev: refused a write of N bytes at BAR0 0x…",
		"1× cmd ENABLE_HCA(0x104) op_mod 0x0 status 0x0 OK syndrome 0x0 delivery 0x8",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	head, _, _ := strings.Cut(got, "\nlast ")
	for _, l := range strings.Split(head, "\n")[1:] {
		_, entry, _ := strings.Cut(l, "× ")
		if entry == "cmd ENABLE_HCA op_mod 0x0 status OK syndrome 0x0" || entry == "cmd ENABLE_HCA(0x104) op_mod 0x0 status 0x0 OK syndrome 0x0" || strings.Contains(entry, "session started") || strings.Contains(entry, ", 0 refused") {
			t.Errorf("a line without a problem is listed: %q", entry)
		}
	}

	if s := summarizeServerLog(""); !strings.HasPrefix(s, "0 log lines; 0 distinct") {
		t.Errorf("empty log: %q", s)
	}
}
