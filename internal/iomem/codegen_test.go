package iomem_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/daqiri-go/daqiri/internal/testutil"
)

// Emulation keeps the host's memory order, so no run under qemu can catch a missing barrier:
// these tests pin the generated code instead. For amd64 and arm64 they compile the packages
// (go list -export: the archives the build cache holds) and read them with go tool objdump.

// body is what a function of this package must contain on one architecture: the encodings
// (objdump's hex column; ? is any hex digit) in this order, the first of them as the
// function's first instruction where first is set, and none of the forbidden mnemonics.
type body struct {
	fn        string
	first     bool
	want      []string
	forbidden *regexp.Regexp
}

// Arm ARM (DDI 0487) DMB/DSB with the CRm option: see barrier_arm64.s.
const (
	dmbOSHST = "d50332bf"
	dmbOSHLD = "d50331bf"
	dsbST    = "d5033e9f"
	sfence   = "0faef8"
)

// atomics: instructions an MMIO accessor must not be. amd64: LOCK prefix (f0), XCHG (87 with
// a memory operand). arm64 mnemonics as objdump prints them: exclusives, acquire/release, LSE.
var (
	amd64Atomic = regexp.MustCompile(`(?i)\b(LOCK|XCHG[LQ]?|CMPXCHG|XADD)\b|MFENCE|SFENCE|LFENCE`)
	arm64Atomic = regexp.MustCompile(`\b(LDAXR|STLXR|LDXR|STXR|LDAR|STLR|LDADD|SWP|CAS)\w*\b|\bDMB\b|\bDSB\b`)
)

var bodies = map[string][]body{
	"amd64": {
		// udma_to_device_barrier and udma_from_device_barrier are compiler order only: the
		// call, and a bare RET.
		{fn: "ToDevice", first: true, want: []string{"c3"}},
		{fn: "FromDevice", first: true, want: []string{"c3"}},
		{fn: "WCStart", first: true, want: []string{sfence, "c3"}},
		{fn: "FlushWrites", first: true, want: []string{sfence, "c3"}},
		{fn: "Store64", want: []string{"48891?", "c3"}, forbidden: amd64Atomic},
		{fn: "Store32", want: []string{"891?", "c3"}, forbidden: amd64Atomic},
		{fn: "Load64", want: []string{"488b1?", "c3"}, forbidden: amd64Atomic},
		{fn: "Load32", want: []string{"8b1?", "c3"}, forbidden: amd64Atomic},
	},
	"arm64": {
		{fn: "ToDevice", first: true, want: []string{dmbOSHST, "d65f03c0"}},
		{fn: "FromDevice", first: true, want: []string{dmbOSHLD, "d65f03c0"}},
		{fn: "WCStart", first: true, want: []string{dsbST, "d65f03c0"}},
		{fn: "FlushWrites", first: true, want: []string{dsbST, "d65f03c0"}},
		// STR X1, [X0] / STR W1, [X0] / LDR X1, [X0] / LDR W1, [X0]: plain, any alignment.
		{fn: "Store64", want: []string{"f9000001", "d65f03c0"}, forbidden: arm64Atomic},
		{fn: "Store32", want: []string{"b9000001", "d65f03c0"}, forbidden: arm64Atomic},
		{fn: "Load64", want: []string{"f9400001", "d65f03c0"}, forbidden: arm64Atomic},
		{fn: "Load32", want: []string{"b9400001", "d65f03c0"}, forbidden: arm64Atomic},
	},
}

// site is one barrier at the place rdma-core puts it: in function fn of package pkg (below
// the module), a call to iomem.call whose instruction comes after some instruction of the
// source line matching after and before some instruction of the line matching before, and
// whose own source line lies between those two lines. The patterns match in fn's lines only;
// without them the call need only be there, once.
type site struct {
	pkg, fn, call string
	after, before string
}

var sites = []site{
	// mlx5 engine, RX (rdma-core qp.c mlx5_post_wq_recv, cq.c mlx5_get_next_cqe; DPDK mlx5_rx.c).
	{"mlx5", `(*rxq).doorbell`, "ToDevice", `r\.dirty = false`, `PutUint32\(r\.dbr,`},
	{"mlx5", `(*rxq).readCQ`, "FromDevice", `op := e\[63\]`, `CQEFormat\(op\)`},
	{"mlx5", `(*rxq).readCQ`, "ToDevice", `if n > 0`, `PutUint32\(r\.cqDBR,`},
	// mlx5 engine, TX (rdma-core qp.c post_send_db, cq.c mlx5_get_next_cqe).
	{"mlx5", `(*txq).ring_`, "ToDevice", `^func`, `PutUint32\(t\.dbr,`},
	{"mlx5", `(*txq).ring_`, "WCStart", `PutUint32\(t\.dbr,`, `uar\.Write64\(`},
	{"mlx5", `(*txq).ring_`, "FlushWrites", `uar\.Write64\(`, `t\.bf \^=`},
	{"mlx5", `(*txq).pollCQ`, "FromDevice", `CQESoftwareOwned\(e\[63\]`, `t\.ci\+\+`},
	{"mlx5", `(*txq).pollCQ`, "ToDevice", `if n > 0`, `PutUint32\(t\.cqDBR,`},
	// VFIO command queue and EQ (rdma-core mlx5_vfio.c).
	{"mlx5/channel/vfioch", `(*Channel).initCmdq`, "ToDevice", `c\.wr\(regCmdqAddrLSz`, `EnableBusMaster`},
	{"mlx5/channel/vfioch", `(*Channel).run`, "ToDevice", `Ownership\.Set\(ent, prm\.CmdOwnerHW\)`, `c\.wr\(regCmdDbell`},
	{"mlx5/channel/vfioch", `(*Channel).waitSlot`, "FromDevice", `c\.waitOwner\(`, `return err`},
	{"mlx5/channel/vfioch", `(*Channel).drainEQ`, "FromDevice", `EQE\.Owner\.Get\(eqe\)`, `EQE\.EventData`},
	{"mlx5/channel/vfioch", `(*Channel).armEQ`, "ToDevice", `c\.wr\(`, `^}`},
	// Register accesses through the typed accessors, never an atomic.
	{"vfio", `(*MMIO).Write64`, "Store64", "", ""},
	{"vfio", `(*MMIO).Write32`, "Store32", "", ""},
	{"vfio", `(*MMIO).Read64`, "Load64", "", ""},
	{"vfio", `(*MMIO).Read32`, "Load32", "", ""},
	{"verbs", `(*UARPage).Write64`, "Store64", `binary\.BigEndian\.PutUint64`, `^}`},
	{"verbs", `(*UARPage).Write32`, "Store32", `binary\.BigEndian\.PutUint32`, `^}`},
}

const module = "github.com/daqiri-go/daqiri"

// TestBarrierCode: each barrier and accessor is the instruction rdma-core's macro is on the
// architecture, and each call site calls it where rdma-core places it.
func TestBarrierCode(t *testing.T) {
	gobin := testutil.RequireTool(t, "go", "the Go toolchain, to compile the packages and run go tool objdump")
	root := testutil.ModuleRoot(t)
	for _, arch := range []string{"amd64", "arm64"} {
		t.Run(arch, func(t *testing.T) {
			archives := exportArchives(t, gobin, root, arch)
			checkBodies(t, gobin, archives[module+"/internal/iomem"], bodies[arch])
			for _, s := range sites {
				fns := objdump(t, gobin, archives[module+"/"+s.pkg], regexp.QuoteMeta(module+"/"+s.pkg+"."+s.fn)+"$")
				if err := s.check(fns[module+"/"+s.pkg+"."+s.fn], root); err != nil {
					t.Errorf("%s %s.%s: %v", arch, s.pkg, s.fn, err)
				}
			}
		})
	}
}

// exportArchives compiles the packages the sites and bodies name for arch and returns their
// archives in the build cache, by import path.
func exportArchives(t *testing.T, gobin, root, arch string) map[string]string {
	t.Helper()
	pkgs := []string{"./internal/iomem"}
	seen := map[string]bool{}
	for _, s := range sites {
		if !seen[s.pkg] {
			seen[s.pkg] = true
			pkgs = append(pkgs, "./"+s.pkg)
		}
	}
	cmd := exec.Command(gobin, append([]string{"list", "-export", "-f", "{{.ImportPath}} {{.Export}}"}, pkgs...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+arch, "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export for %s: %v\n%s", arch, err, stderrOf(err))
	}
	m := map[string]string{}
	for line := range strings.Lines(string(out)) {
		path, file, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok || file == "" {
			t.Fatalf("go list -export for %s: no archive in %q", arch, line)
		}
		m[path] = file
	}
	return m
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

// insn is one instruction of objdump's listing.
type insn struct {
	file string
	line int
	addr uint64
	hex  string
	text string // the mnemonic and operands, then the relocation if any
}

// objdump disassembles the functions of file whose symbol matches sym, by symbol.
func objdump(t *testing.T, gobin, file, sym string) map[string][]insn {
	t.Helper()
	out, err := exec.Command(gobin, "tool", "objdump", "-s", sym, file).Output()
	if err != nil {
		t.Fatalf("go tool objdump -s %s %s: %v\n%s", sym, file, err, stderrOf(err))
	}
	fns := map[string][]insn{}
	var cur string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if rest, ok := strings.CutPrefix(l, "TEXT "); ok {
			cur, _, _ = strings.Cut(rest, "(SB)")
			continue
		}
		var f []string
		for _, s := range strings.Split(strings.TrimSpace(l), "\t") {
			if s != "" {
				f = append(f, s)
			}
		}
		if cur == "" || len(f) < 4 {
			continue
		}
		pos, lineNo, _ := strings.Cut(f[0], ":")
		n, _ := strconv.Atoi(lineNo)
		a, err := strconv.ParseUint(strings.TrimPrefix(f[1], "0x"), 16, 64)
		if err != nil {
			continue
		}
		fns[cur] = append(fns[cur], insn{file: pos, line: n, addr: a, hex: f[2], text: strings.Join(f[3:], " ")})
	}
	return fns
}

// checkBodies extracts the package's assembly objects from its archive (objdump reads only
// the Go object of an archive) and checks each function's instructions.
func checkBodies(t *testing.T, gobin, archive string, want []body) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(gobin, "tool", "pack", "x", archive)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go tool pack x %s: %v\n%s", archive, err, out)
	}
	objs, _ := filepath.Glob(filepath.Join(dir, "*.o"))
	fns := map[string][]insn{}
	for _, o := range objs {
		if filepath.Base(o) == "_go_.o" {
			continue
		}
		for k, v := range objdump(t, gobin, o, `iomem\.`) {
			fns[strings.TrimPrefix(k, module+"/internal/iomem.")] = v
		}
	}
	for _, b := range want {
		code := fns[b.fn]
		if len(code) == 0 {
			t.Errorf("%s: not in the assembly objects of %s", b.fn, archive)
			continue
		}
		var got []string
		i := 0
		for k, in := range code {
			got = append(got, in.hex+" "+in.text)
			if b.forbidden != nil && b.forbidden.MatchString(in.text) {
				t.Errorf("%s: %s %s: an atomic or a fence where a plain access belongs", b.fn, in.hex, in.text)
			}
			if i < len(b.want) && (k == 0 || !b.first || i > 0) && hexMatch(b.want[i], in.hex) {
				i++
			}
		}
		if i < len(b.want) {
			t.Errorf("%s: want %v in order%s, got\n\t%s", b.fn, b.want, map[bool]string{true: " from the first instruction"}[b.first], strings.Join(got, "\n\t"))
		}
	}
}

func hexMatch(pat, hex string) bool {
	return regexp.MustCompile("^" + strings.ReplaceAll(pat, "?", "[0-9a-f]")).MatchString(hex)
}

// check finds the call in code and the anchors around it.
func (s site) check(code []insn, root string) error {
	if len(code) == 0 {
		return fmt.Errorf("function not found in the archive")
	}
	callRe := regexp.MustCompile(`internal/iomem\.` + s.call + `(\.abi0)?(\(SB\))?(\s|$)`)
	var call *insn
	for i := range code {
		if strings.Contains(code[i].text, "CALL") && callRe.MatchString(code[i].text) {
			if call != nil {
				return fmt.Errorf("iomem.%s called twice (lines %d and %d)", s.call, call.line, code[i].line)
			}
			call = &code[i]
		}
	}
	if call == nil {
		return fmt.Errorf("no call to iomem.%s (rdma-core's barrier is missing)", s.call)
	}
	if s.after == "" && s.before == "" {
		return nil
	}
	src, err := os.ReadFile(filepath.Join(root, s.pkg, call.file))
	if err != nil {
		return err
	}
	lines := strings.Split(string(src), "\n")
	lo, hi := call.line, call.line
	for _, in := range code {
		if in.file == call.file {
			lo, hi = min(lo, in.line), max(hi, in.line)
		}
	}
	// The function's own lines: from its func line to its closing brace.
	for lo > 1 && !strings.HasPrefix(lines[lo-1], "func") {
		lo--
	}
	for hi < len(lines) && lines[hi-1] != "}" {
		hi++
	}
	find := func(pat string, from, to int) (int, error) {
		re := regexp.MustCompile(pat)
		for n := from; n <= to; n++ {
			if re.MatchString(lines[n-1]) {
				return n, nil
			}
		}
		return 0, fmt.Errorf("no line matching %q in %s:%d-%d", pat, call.file, from, to)
	}
	after, err := find(s.after, lo, call.line)
	if err != nil {
		return fmt.Errorf("nothing before the call: %w", err)
	}
	before, err := find(s.before, call.line+1, hi)
	if err != nil {
		return fmt.Errorf("nothing after the call: %w", err)
	}
	// In the code: an instruction of the after line below the call's address and one of the
	// before line above it (a function's func and closing-brace lines are its prologue and
	// epilogue).
	var pre, post bool
	for _, in := range code {
		if in.file != call.file {
			continue
		}
		pre = pre || in.line == after && in.addr < call.addr
		post = post || in.line == before && in.addr > call.addr
	}
	if !pre || !post {
		return fmt.Errorf("the call at %s:%d (%#x) is not between line %d (%s) and line %d (%s) in the code", call.file, call.line, call.addr, after, strings.TrimSpace(lines[after-1]), before, strings.TrimSpace(lines[before-1]))
	}
	return nil
}
