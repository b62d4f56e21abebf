package testutil

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Tests that pin generated code (barriers, spin hints: what no run under an emulator can
// check) compile packages for an architecture and read the machine code with go tool objdump.

// Insn is one instruction of go tool objdump's listing.
type Insn struct {
	File string // source file name, without its folder
	Line int
	Addr uint64
	Hex  string // the encoding as objdump prints it
	Text string // mnemonic and operands, then the relocation if any
}

// ExportArchives compiles pkgs (patterns relative to the module root) for linux/arch without
// cgo and returns their archives in the build cache, by import path (go list -export). It
// needs the go command (RequireTool).
func ExportArchives(t testing.TB, arch string, pkgs ...string) map[string]string {
	t.Helper()
	gobin := RequireTool(t, "go", "the Go toolchain, to compile the packages and run go tool objdump")
	cmd := exec.Command(gobin, append([]string{"list", "-export", "-f", "{{.ImportPath}} {{.Export}}"}, pkgs...)...)
	cmd.Dir = ModuleRoot(t)
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

// Disassemble returns the functions whose symbol matches the regular expression sym in a
// package archive, by symbol: its Go code and its assembly objects (objdump reads only an
// archive's Go object, so the others are extracted with go tool pack first).
func Disassemble(t testing.TB, archive, sym string) map[string][]Insn {
	t.Helper()
	gobin := RequireTool(t, "go", "the Go toolchain, to run go tool objdump")
	fns := objdump(t, gobin, archive, sym)
	dir := t.TempDir()
	cmd := exec.Command(gobin, "tool", "pack", "x", archive)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go tool pack x %s: %v\n%s", archive, err, out)
	}
	objs, _ := filepath.Glob(filepath.Join(dir, "*.o"))
	for _, o := range objs {
		if filepath.Base(o) == "_go_.o" {
			continue
		}
		for k, v := range objdump(t, gobin, o, sym) {
			fns[k] = v
		}
	}
	return fns
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

// objdump parses go tool objdump -s sym file: "TEXT symbol(SB) path" starts a function,
// then one tab-separated line per instruction (file:line, address, encoding, text).
func objdump(t testing.TB, gobin, file, sym string) map[string][]Insn {
	t.Helper()
	out, err := exec.Command(gobin, "tool", "objdump", "-s", sym, file).Output()
	if err != nil {
		t.Fatalf("go tool objdump -s %s %s: %v\n%s", sym, file, err, stderrOf(err))
	}
	fns := map[string][]Insn{}
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
		fns[cur] = append(fns[cur], Insn{File: pos, Line: n, Addr: a, Hex: f[2], Text: strings.Join(f[3:], " ")})
	}
	return fns
}
