package iomem_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
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
	// mlx5 hardware reorder's slot RQs and CQ (as the engine's RX above).
	{"mlx5", `(*hwPlan).arm`, "ToDevice", `WQEData\.Addr\.Set`, `PutUint32\(d,`},
	{"mlx5", `(*hwPlan).readCQ`, "FromDevice", `CQESoftwareOwned\(op`, `hp\.ci\+\+`},
	{"mlx5", `(*hwPlan).readCQ`, "ToDevice", `if n > 0`, `PutUint32\(hp\.cqDBR,`},
	// mlx5/gpunetio's doorbell relay: the BlueFlame store the GPU asked for.
	{"mlx5/gpunetio", `(*Queue).relay`, "WCStart", `le\.PutUint64\(`, `uar\.Write64\(`},
	{"mlx5/gpunetio", `(*Queue).relay`, "FlushWrites", `uar\.Write64\(`, `q\.relayMu\.Lock`},
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
	{"verbs/mlx5dv", `(*UARPage).Write64`, "Store64", `binary\.BigEndian\.PutUint64`, `^}`},
	{"verbs/mlx5dv", `(*UARPage).Write32`, "Store32", `binary\.BigEndian\.PutUint32`, `^}`},
}

const module = "github.com/daqiri-go/daqiri"

// TestBarrierCode: each barrier and accessor is the instruction rdma-core's macro is on the
// architecture, and each call site calls it where rdma-core places it.
func TestBarrierCode(t *testing.T) {
	root := testutil.ModuleRoot(t)
	pkgs := []string{"./internal/iomem"}
	seen := map[string]bool{}
	for _, s := range sites {
		if !seen[s.pkg] {
			seen[s.pkg] = true
			pkgs = append(pkgs, "./"+s.pkg)
		}
	}
	for _, arch := range []string{"amd64", "arm64"} {
		t.Run(arch, func(t *testing.T) {
			archives := testutil.ExportArchives(t, arch, pkgs...)
			checkBodies(t, archives[module+"/internal/iomem"], bodies[arch])
			// One disassembly per package, of all its sites' functions.
			syms := map[string][]string{}
			for _, s := range sites {
				syms[s.pkg] = append(syms[s.pkg], regexp.QuoteMeta(module+"/"+s.pkg+"."+s.fn))
			}
			fns := map[string][]testutil.Insn{}
			for pkg, res := range syms {
				maps.Copy(fns, testutil.Disassemble(t, archives[module+"/"+pkg], "^("+strings.Join(res, "|")+")$"))
			}
			for _, s := range sites {
				if err := s.check(fns[module+"/"+s.pkg+"."+s.fn], root); err != nil {
					t.Errorf("%s %s.%s: %v", arch, s.pkg, s.fn, err)
				}
			}
		})
	}
}

// checkBodies checks each of the package's assembly functions.
func checkBodies(t *testing.T, archive string, want []body) {
	t.Helper()
	fns := map[string][]testutil.Insn{}
	for k, v := range testutil.Disassemble(t, archive, `iomem\.`) {
		if !strings.HasSuffix(k, ".abi0") && v[0].File != "<autogenerated>" {
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
			got = append(got, in.Hex+" "+in.Text)
			if b.forbidden != nil && b.forbidden.MatchString(in.Text) {
				t.Errorf("%s: %s %s: an atomic or a fence where a plain access belongs", b.fn, in.Hex, in.Text)
			}
			if i < len(b.want) && (k == 0 || !b.first || i > 0) && hexMatch(b.want[i], in.Hex) {
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
func (s site) check(code []testutil.Insn, root string) error {
	if len(code) == 0 {
		return fmt.Errorf("function not found in the archive")
	}
	callRe := regexp.MustCompile(`internal/iomem\.` + s.call + `(\.abi0)?(\(SB\))?(\s|$)`)
	var call *testutil.Insn
	for i := range code {
		if strings.Contains(code[i].Text, "CALL") && callRe.MatchString(code[i].Text) {
			if call != nil {
				return fmt.Errorf("iomem.%s called twice (lines %d and %d)", s.call, call.Line, code[i].Line)
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
	src, err := os.ReadFile(filepath.Join(root, s.pkg, call.File))
	if err != nil {
		return err
	}
	lines := strings.Split(string(src), "\n")
	lo, hi := call.Line, call.Line
	for _, in := range code {
		if in.File == call.File {
			lo, hi = min(lo, in.Line), max(hi, in.Line)
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
		return 0, fmt.Errorf("no line matching %q in %s:%d-%d", pat, call.File, from, to)
	}
	after, err := find(s.after, lo, call.Line)
	if err != nil {
		return fmt.Errorf("nothing before the call: %w", err)
	}
	before, err := find(s.before, call.Line+1, hi)
	if err != nil {
		return fmt.Errorf("nothing after the call: %w", err)
	}
	// In the code: an instruction of the after line below the call's address and one of the
	// before line above it (a function's func and closing-brace lines are its prologue and
	// epilogue).
	var pre, post bool
	for _, in := range code {
		if in.File != call.File {
			continue
		}
		pre = pre || in.Line == after && in.Addr < call.Addr
		post = post || in.Line == before && in.Addr > call.Addr
	}
	if !pre || !post {
		return fmt.Errorf("the call at %s:%d (%#x) is not between line %d (%s) and line %d (%s) in the code", call.File, call.Line, call.Addr, after, strings.TrimSpace(lines[after-1]), before, strings.TrimSpace(lines[before-1]))
	}
	return nil
}
