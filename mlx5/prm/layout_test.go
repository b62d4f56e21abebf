package prm

// TestLayout is the independent check of this package against NVIDIA's headers as Debian
// installs them: linux-headers-amd64 (include/linux/mlx5/mlx5_ifc.h, device.h, driver.h),
// libibverbs-dev (infiniband/mlx5dv.h) and linux-libc-dev (rdma/mlx5_user_ioctl_cmds.h,
// rdma/mlx5-abi.h). It reads this package's source, finds every ifcField/dvField call and every
// constant marked `// C: NAME`, writes C probes that print what gcc makes of the same names
// (offsetof/sizeof on the mlx5_ifc_*_bits structs give bit offsets and widths; offsetof/sizeof
// on the mlx5dv.h structs give byte offsets and sizes; enumerators and macros give values), and
// compares. A Field made any other way fails the test, so no field escapes the check.

import (
	"bytes"
	"fmt"
	"github.com/daqiri-go/daqiri/internal/testutil"
	"go/ast"
	"go/constant"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// checkItem is one fact the Go code states and the headers must agree with.
type checkItem struct {
	pos    string // file:line in this package
	kind   string // "ifc", "dv", "const"; "newer" (newerIfcField), which becomes "ifc" or "rsv"
	layout string // ifc/dv: the layout; const: the Go name
	name   string // ifc/dv: the member designator; const: the C name
	a, b   uint64 // ifc: bit offset, width; dv: byte offset, size; const: value
}

func (c checkItem) String() string {
	switch c.kind {
	case "ifc":
		return fmt.Sprintf("%s: ifcField(%q, %q, %#x, %d)", c.pos, c.layout, c.name, c.a, c.b)
	case "dv":
		return fmt.Sprintf("%s: dvField(%q, %q, %d, %d)", c.pos, c.layout, c.name, c.a, c.b)
	case "newer", "rsv":
		return fmt.Sprintf("%s: newerIfcField(%q, %q, %#x, %d)", c.pos, c.layout, c.name, c.a, c.b)
	}
	return fmt.Sprintf("%s: %s = %#x (C: %s)", c.pos, c.layout, c.a, c.name)
}

// fieldBuilders may construct or move a Field: the two checked constructors and At, which
// only adds a base offset to a checked field.
var fieldBuilders = map[string]bool{"ifcField": true, "dvField": true, "newerIfcField": true, "dpdkIfcField": true, "At": true}

// isConstructor names the checked Field constructors.
func isConstructor(n string) bool {
	return n == "ifcField" || n == "dvField" || n == "newerIfcField" || n == "dpdkIfcField"
}

// cComment marks a checked constant: `// C: NAME` for an enumerator or macro of the installed
// headers (mlx5dv.h and the rdma/ headers first, then the kernel's), `// C: linux:NAME` for one
// that must be read from the kernel's headers.
var cComment = regexp.MustCompile(`\bC:\s*((?:linux:)?[A-Za-z_][A-Za-z0-9_]*)`)

// collect parses the package's non-test files and returns every checked fact, and every way
// the source makes a Field that the check cannot see.
func collect(t *testing.T, dir string) (items []checkItem, problems []string) {
	t.Helper()
	fset := token.NewFileSet()
	var files []*ast.File
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	// Type-check to read the constants' values as the compiler sees them.
	info := &types.Info{Defs: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	if _, err := conf.Check("prm", fset, files, info); err != nil {
		t.Fatalf("type-checking the package: %v", err)
	}
	pos := func(p token.Pos) string {
		q := fset.Position(p)
		return fmt.Sprintf("%s:%d", filepath.Base(q.Filename), q.Line)
	}
	for _, f := range files {
		// Calls and uses of the constructors.
		calls := map[*ast.Ident]bool{}
		for _, decl := range f.Decls {
			var inFunc string
			if fd, ok := decl.(*ast.FuncDecl); ok {
				inFunc = fd.Name.Name
				calls[fd.Name] = true // the declaration itself
			}
			ast.Inspect(decl, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CallExpr:
					id, ok := n.Fun.(*ast.Ident)
					if !ok || !isConstructor(id.Name) {
						return true
					}
					calls[id] = true
					it, err := literalCall(id.Name, n.Args)
					if err != nil {
						problems = append(problems, fmt.Sprintf("%s: %v", pos(n.Pos()), err))
						return true
					}
					it.pos = pos(n.Pos())
					items = append(items, it)
				case *ast.CompositeLit:
					if id, ok := n.Type.(*ast.Ident); ok && id.Name == "Field" && !fieldBuilders[inFunc] {
						problems = append(problems, fmt.Sprintf("%s: Field literal outside ifcField/dvField: the layout test cannot check it", pos(n.Pos())))
					}
				case *ast.AssignStmt:
					for _, l := range n.Lhs {
						if s, ok := l.(*ast.SelectorExpr); ok && isFieldMember(s.Sel.Name) && !fieldBuilders[inFunc] {
							problems = append(problems, fmt.Sprintf("%s: assignment to .%s outside ifcField/dvField/At: the layout test cannot check it", pos(n.Pos()), s.Sel.Name))
						}
					}
				case *ast.IncDecStmt:
					if s, ok := n.X.(*ast.SelectorExpr); ok && isFieldMember(s.Sel.Name) && !fieldBuilders[inFunc] {
						problems = append(problems, fmt.Sprintf("%s: change of .%s outside ifcField/dvField/At", pos(n.Pos()), s.Sel.Name))
					}
				}
				return true
			})
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && isConstructor(id.Name) && !calls[id] {
				problems = append(problems, fmt.Sprintf("%s: %s used other than in a direct call with literal arguments", pos(id.Pos()), id.Name))
			}
			return true
		})
		// Constants marked with the C name they stand for.
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				var text string
				if vs.Comment != nil {
					text = vs.Comment.Text()
				}
				if vs.Doc != nil {
					text += " " + vs.Doc.Text()
				}
				m := cComment.FindStringSubmatch(text)
				if m == nil {
					continue
				}
				if len(vs.Names) != 1 {
					problems = append(problems, fmt.Sprintf("%s: a C: comment must mark a single constant", pos(vs.Pos())))
					continue
				}
				c, ok := info.Defs[vs.Names[0]].(*types.Const)
				if !ok {
					problems = append(problems, fmt.Sprintf("%s: %s is not a constant", pos(vs.Pos()), vs.Names[0].Name))
					continue
				}
				v := constant.ToInt(c.Val())
				u, exact := constant.Uint64Val(v)
				if !exact {
					problems = append(problems, fmt.Sprintf("%s: %s is not a non-negative integer constant", pos(vs.Pos()), c.Name()))
					continue
				}
				items = append(items, checkItem{pos: pos(vs.Pos()), kind: "const", layout: c.Name(), name: m[1], a: u})
			}
		}
	}
	return items, problems
}

func isFieldMember(n string) bool { return n == "Off" || n == "Width" || n == "Layout" }

// literalCall reads ifcField(layout, name, off, width) or dvField(...) whose arguments are
// all literals; anything else cannot be checked without running the code.
func literalCall(fn string, args []ast.Expr) (checkItem, error) {
	it := checkItem{kind: "ifc"}
	switch fn {
	case "dvField":
		it.kind = "dv"
	case "newerIfcField":
		it.kind = "newer"
	case "dpdkIfcField":
		it.kind = "dpdk"
	}
	if len(args) != 4 {
		return it, fmt.Errorf("%s with %d arguments", fn, len(args))
	}
	var strs [2]string
	var nums [2]uint64
	for i, a := range args {
		lit, ok := a.(*ast.BasicLit)
		if !ok {
			return it, fmt.Errorf("%s argument %d is not a literal", fn, i+1)
		}
		switch i {
		case 0, 1:
			if lit.Kind != token.STRING {
				return it, fmt.Errorf("%s argument %d is not a string literal", fn, i+1)
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return it, err
			}
			strs[i] = s
		default:
			if lit.Kind != token.INT {
				return it, fmt.Errorf("%s argument %d is not an integer literal", fn, i+1)
			}
			v, err := strconv.ParseUint(strings.ReplaceAll(lit.Value, "_", ""), 0, 32)
			if err != nil {
				return it, err
			}
			nums[i-2] = v
		}
	}
	if !regexp.MustCompile(`^(linux:)?[A-Za-z0-9_]+$`).MatchString(strs[0]) ||
		!regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\[[0-9]+\])?(\.[A-Za-z_][A-Za-z0-9_]*(\[[0-9]+\])?)*$`).MatchString(strs[1]) {
		return it, fmt.Errorf("%s(%q, %q): not a C layout and member designator", fn, strs[0], strs[1])
	}
	it.layout, it.name, it.a, it.b = strs[0], strs[1], nums[0], nums[1]
	return it, nil
}

// headers locates the installed headers and gcc; missing names what is missing and which
// Debian package provides it.
type headers struct {
	kernelInc string   // .../include holding linux/mlx5/mlx5_ifc.h
	userText  []byte   // the user-space headers' text, to tell which probe has a name
	kernText  []byte   // mlx5_ifc.h + device.h text
	otherText [][]byte // other linux/mlx5/*.h that do not compile outside the kernel
	gcc       string
	missing   []string
}

func findHeaders() headers {
	var h headers
	if cc := os.Getenv("CC"); cc != "" {
		h.gcc, _ = exec.LookPath(cc)
	} else {
		h.gcc, _ = exec.LookPath("gcc")
	}
	if h.gcc == "" {
		h.missing = append(h.missing, "gcc (Debian package gcc)")
	}
	ifc, _ := filepath.Glob("/usr/src/linux-headers-*/include/linux/mlx5/mlx5_ifc.h")
	if len(ifc) == 0 {
		h.missing = append(h.missing, "include/linux/mlx5/mlx5_ifc.h (Debian package linux-headers-amd64)")
	} else {
		sort.Strings(ifc)
		h.kernelInc = filepath.Dir(filepath.Dir(filepath.Dir(ifc[len(ifc)-1])))
		for _, n := range []string{"mlx5_ifc.h", "device.h"} {
			b, _ := os.ReadFile(filepath.Join(h.kernelInc, "linux/mlx5", n))
			h.kernText = append(h.kernText, b...)
		}
		others, _ := filepath.Glob(filepath.Join(h.kernelInc, "linux/mlx5/*.h"))
		for _, o := range others {
			if b := filepath.Base(o); b != "mlx5_ifc.h" && b != "device.h" {
				t, _ := os.ReadFile(o)
				h.otherText = append(h.otherText, t)
			}
		}
	}
	for _, u := range []struct{ path, pkg string }{
		{"/usr/include/infiniband/mlx5dv.h", "libibverbs-dev"},
		{"/usr/include/rdma/mlx5_user_ioctl_cmds.h", "linux-libc-dev"},
		{"/usr/include/rdma/mlx5-abi.h", "linux-libc-dev"},
		{"/usr/include/rdma/mlx5_user_ioctl_verbs.h", "linux-libc-dev"},
	} {
		b, err := os.ReadFile(u.path)
		if err != nil {
			h.missing = append(h.missing, fmt.Sprintf("%s (Debian package %s)", u.path, u.pkg))
			continue
		}
		h.userText = append(h.userText, b...)
	}
	return h
}

// The kernel headers compile outside the kernel with a few definitions the kernel would give:
// the u8..u64 types the _bits structs use, BIT/BIT_ULL, the host byte order device.h insists
// on, PAGE_SIZE, and stand-ins for the kernel-only annotations and for rdma/ib_verbs.h (device.h
// needs only struct ib_grh from it, for a union's size).
const kernelPrelude = `typedef unsigned char u8; typedef unsigned short u16; typedef unsigned int u32; typedef unsigned long long u64;
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>
#define BIT(n) (1UL << (n))
#define BIT_ULL(n) (1ULL << (n))
#define __LITTLE_ENDIAN 1234
#define PAGE_SIZE 4096
#define __iomem
#define __packed __attribute__((packed))
#include <linux/mlx5/device.h>
`

const userPrelude = `#include <stddef.h>
#include <stdio.h>
#include <infiniband/mlx5dv.h>
#include <rdma/mlx5_user_ioctl_cmds.h>
#include <rdma/mlx5_user_ioctl_verbs.h>
#include <rdma/mlx5-abi.h>
`

// probe compiles and runs one C program that prints, for each line, two numbers.
func probe(t *testing.T, h headers, tmp, name, prelude string, lines []string) [][2]uint64 {
	t.Helper()
	if len(lines) == 0 {
		return nil
	}
	var src bytes.Buffer
	src.WriteString(prelude)
	src.WriteString("int main(void) {\n")
	for _, l := range lines {
		fmt.Fprintf(&src, "\t%s\n", l)
	}
	src.WriteString("\treturn 0;\n}\n")
	c := filepath.Join(tmp, name+".c")
	bin := filepath.Join(tmp, name)
	if err := os.WriteFile(c, src.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"-w", "-std=gnu11", "-o", bin, c}
	if strings.HasPrefix(name, "kernel") {
		args = append([]string{"-I", filepath.Join(tmp, "shim"), "-I", h.kernelInc}, args...)
	}
	if out, err := exec.Command(h.gcc, args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc on the %s probe (%s): %v\n%s", name, c, err, firstLines(out, 40))
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatalf("running the %s probe: %v", name, err)
	}
	var res [][2]uint64
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var a, b uint64
		if _, err := fmt.Sscan(l, &a, &b); err != nil {
			t.Fatalf("%s probe printed %q: %v", name, l, err)
		}
		res = append(res, [2]uint64{a, b})
	}
	if len(res) != len(lines) {
		t.Fatalf("%s probe printed %d lines for %d checks", name, len(res), len(lines))
	}
	return res
}

func firstLines(b []byte, n int) string {
	l := strings.SplitN(string(b), "\n", n+1)
	if len(l) > n {
		l = l[:n]
	}
	return strings.Join(l, "\n")
}

func hasWord(text []byte, w string) bool {
	return regexp.MustCompile(`\b` + regexp.QuoteMeta(w) + `\b`).Match(text)
}

// headerValues asks the headers for every item and returns what they say, in item order.
func headerValues(t *testing.T, h headers, items []checkItem) [][2]uint64 {
	t.Helper()
	tmp := t.TempDir()
	if err := os.MkdirAll(filepath.Join(tmp, "shim/rdma"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "shim/rdma/ib_verbs.h"), []byte("struct ib_grh { unsigned char raw[40]; };\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var kLines, uLines []string
	var kIdx, uIdx []int
	got := make([][2]uint64, len(items))
	rsvMembers := map[string][]member{} // layout → members, for "rsv" items
	for i := range items {
		if items[i].kind != "newer" {
			continue
		}
		ms := structMembers(h.kernText, items[i].layout)
		if ms == nil {
			t.Errorf("%v: struct mlx5_ifc_%s_bits is not in the installed mlx5_ifc.h", items[i], items[i].layout)
		}
		items[i].kind = "rsv"
		for _, m := range ms {
			if m.name == items[i].name {
				items[i].kind = "ifc" // the header has it now: checked exactly
			}
		}
		if items[i].kind == "rsv" {
			rsvMembers[items[i].layout] = ms
		}
	}
	for i, it := range items {
		switch it.kind {
		case "ifc":
			s := "struct mlx5_ifc_" + it.layout + "_bits"
			kLines = append(kLines, fmt.Sprintf(`printf("%%zu %%zu\n", offsetof(%s, %s), sizeof(((%s *)0)->%s));`, s, it.name, s, it.name))
			kIdx = append(kIdx, i)
		case "dv":
			// A "linux:" layout is the kernel's device.h struct of that name; the others
			// are mlx5dv.h's. The two headers define some structs alike, so they cannot
			// share one translation unit.
			s, kernel := strings.CutPrefix(it.layout, "linux:")
			s = "struct " + s
			l := fmt.Sprintf(`printf("%%zu %%zu\n", offsetof(%s, %s), sizeof(((%s *)0)->%s));`, s, it.name, s, it.name)
			if kernel {
				kLines, kIdx = append(kLines, l), append(kIdx, i)
			} else {
				uLines, uIdx = append(uLines, l), append(uIdx, i)
			}
		case "const":
			name, kernel := strings.CutPrefix(it.name, "linux:")
			l := fmt.Sprintf(`printf("%%llu 0\n", (unsigned long long)(%s));`, name)
			switch {
			case kernel:
				kLines, kIdx = append(kLines, l), append(kIdx, i)
			case hasWord(h.userText, it.name):
				uLines, uIdx = append(uLines, l), append(uIdx, i)
			case hasWord(h.kernText, it.name):
				kLines, kIdx = append(kLines, l), append(kIdx, i)
			default:
				// Headers that need the kernel tree to compile (driver.h): read the
				// enumerator's literal value from the text.
				v, ok := textEnumValue(h.otherText, name)
				if !ok {
					t.Errorf("%v: %s is in none of the installed headers", it, name)
					v = it.a // reported once, not again as a mismatch
				}
				got[i] = [2]uint64{v, 0}
			}
		}
	}
	for j, r := range probe(t, h, tmp, "kernel", kernelPrelude, kLines) {
		got[kIdx[j]] = r
	}
	for j, r := range probe(t, h, tmp, "user", userPrelude, uLines) {
		got[uIdx[j]] = r
	}
	// Members of the layouts that hold "rsv" fields: their offsets and sizes as gcc sees
	// them, then for each field the reserved member that contains it.
	var mLines []string
	var mRef []*member
	layouts := make([]string, 0, len(rsvMembers))
	for l := range rsvMembers {
		layouts = append(layouts, l)
	}
	sort.Strings(layouts)
	for _, l := range layouts {
		ms := rsvMembers[l]
		s := "struct mlx5_ifc_" + l + "_bits"
		for k := range ms {
			mLines = append(mLines, fmt.Sprintf(`printf("%%zu %%zu\n", offsetof(%s, %s), sizeof(((%s *)0)->%s));`, s, ms[k].name, s, ms[k].name))
			mRef = append(mRef, &ms[k])
		}
	}
	for j, r := range probe(t, h, tmp, "kernel-members", kernelPrelude, mLines) {
		mRef[j].off, mRef[j].width = r[0], r[1]
	}
	for i, it := range items {
		if it.kind == "rsv" {
			got[i] = reservedRange(rsvMembers[it.layout], it.a, it.b)
		}
	}
	return got
}

// member is one top-level member of an mlx5_ifc_*_bits struct: name, bit offset and width.
type member struct {
	name       string
	off, width uint64
}

// structMembers lists the top-level members of struct mlx5_ifc_<layout>_bits in the header
// text, leaving out flexible arrays (no size to compare); nil when the struct is not there.
func structMembers(text []byte, layout string) []member {
	body := regexp.MustCompile(`struct mlx5_ifc_` + regexp.QuoteMeta(layout) + `_bits\s*\{([^}]*)\};`).FindSubmatch(text)
	if body == nil {
		return nil
	}
	var ms []member
	re := regexp.MustCompile(`(?m)^\s*(?:u8|struct\s+\w+|union\s+\w+)\s+(\w+)\s*((?:\[[^\]]*\])*)\s*;`)
	for _, m := range re.FindAllSubmatch(body[1], -1) {
		if bytes.Contains(m[2], []byte("[]")) {
			continue
		}
		ms = append(ms, member{name: string(m[1])})
	}
	return ms
}

// reservedRange is the bit range [lo, hi) of the reserved_at_* member that wholly contains
// the field at off, width bits, or [0, 0) when the field lies in no reserved member or
// overlaps a named one.
func reservedRange(ms []member, off, width uint64) [2]uint64 {
	var in [2]uint64
	for _, m := range ms {
		if off < m.off+m.width && m.off < off+width { // overlap
			if !strings.HasPrefix(m.name, "reserved_at_") || off < m.off || off+width > m.off+m.width {
				return [2]uint64{}
			}
			in = [2]uint64{m.off, m.off + m.width}
		}
	}
	return in
}

func textEnumValue(texts [][]byte, name string) (uint64, bool) {
	// The enumerator forms these headers use: a literal, or a literal shifted left.
	re := regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\s*=\s*(0[xX][0-9a-fA-F]+|[0-9]+)(?:U?L{0,2})?(?:\s*<<\s*([0-9]+))?\s*[,}\n]`)
	for _, t := range texts {
		if m := re.FindSubmatch(t); m != nil {
			v, err := strconv.ParseUint(string(m[1]), 0, 64)
			if err != nil {
				return 0, false
			}
			if len(m[2]) > 0 {
				sh, err := strconv.ParseUint(string(m[2]), 10, 6)
				if err != nil {
					return 0, false
				}
				v <<= sh
			}
			return v, true
		}
	}
	return 0, false
}

// mismatches compares the Go facts with the headers' and describes each difference.
func mismatches(items []checkItem, got [][2]uint64) []string {
	var bad []string
	for i, it := range items {
		g := got[i]
		switch it.kind {
		case "ifc":
			if it.a != g[0] || it.b != g[1] {
				bad = append(bad, fmt.Sprintf("%v: the header has bit offset %#x, width %d", it, g[0], g[1]))
			}
		case "dv":
			if it.a != g[0] || it.b != g[1] {
				bad = append(bad, fmt.Sprintf("%v: the header has byte offset %d, size %d", it, g[0], g[1]))
			}
		case "const":
			if it.a != g[0] {
				bad = append(bad, fmt.Sprintf("%v: the header has %#x", it, g[0]))
			}
		case "rsv":
			if g[1] == 0 || it.a < g[0] || it.a+it.b > g[1] {
				bad = append(bad, fmt.Sprintf("%v: the installed header does not name it, and it does not lie wholly inside one reserved_at_* member (overlapping no named member) there", it))
			}
		}
	}
	return bad
}

func TestLayout(t *testing.T) {
	items, problems := collect(t, ".")
	for _, p := range problems {
		t.Error(p)
	}
	// Fields made outside this package, in the rest of mlx5/, escape the check as well.
	for _, p := range foreignFieldLiterals(t, "..") {
		t.Error(p)
	}
	h := findHeaders()
	if len(h.missing) > 0 {
		testutil.Missing(t, "layout check needs %s (Debian: .ci/apt.d/mlx5.txt installs them)", strings.Join(h.missing, ", "))
	}
	counts := map[string]int{}
	for _, it := range items {
		counts[it.kind]++
	}
	t.Logf("checking %d mlx5_ifc.h fields, %d mlx5dv.h fields, %d constants against %s and /usr/include",
		counts["ifc"], counts["dv"], counts["const"], h.kernelInc)
	got := headerValues(t, h, items)
	for _, b := range mismatches(items, got) {
		t.Error(b)
	}
	for _, b := range dpdkProblems(items, h.kernText) {
		t.Error(b)
	}
	if t.Failed() {
		return
	}
	for _, it := range items {
		if it.kind == "rsv" {
			t.Logf("newer than the installed header, inside its reserved bits: %v", it)
		}
	}
	// The comparison sees a change of any single fact: move each one by one and count. A
	// field inside reserved bits is moved instead to straddle the end of its reserved member.
	for i := range items {
		if items[i].kind == "dpdk" {
			continue // checked for overlap and size only (dpdkProblems; TestDPDKProblems)
		}
		mut := append([]checkItem(nil), items...)
		mut[i].a++
		if mut[i].kind == "rsv" {
			mut[i].a = got[i][1] - mut[i].b + 1
		}
		if n := len(mismatches(mut, got)); n != 1 {
			t.Fatalf("moving %v by one gives %d mismatches, want 1", items[i], n)
		}
	}
}

// foreignFieldLiterals finds prm.Field composite literals in the other mlx5 packages.
func foreignFieldLiterals(t *testing.T, root string) []string {
	t.Helper()
	var bad []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || p == ".") {
			if p == "." {
				return nil
			}
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		if filepath.Dir(p) == "." || filepath.Clean(filepath.Dir(p)) == filepath.Clean("../prm") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if cl, ok := n.(*ast.CompositeLit); ok {
				if s, ok := cl.Type.(*ast.SelectorExpr); ok && s.Sel.Name == "Field" {
					if x, ok := s.X.(*ast.Ident); ok && x.Name == "prm" {
						bad = append(bad, fmt.Sprintf("%s: prm.Field literal: the layout test cannot check it; add the field to package prm", fset.Position(cl.Pos())))
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return bad
}

// TestReservedRange: a newer field passes only wholly inside one reserved member.
func TestReservedRange(t *testing.T) {
	ms := []member{{"status", 0, 4}, {"reserved_at_4", 4, 28}, {"reserved_at_20", 32, 32}, {"uar_page", 64, 24}}
	for _, c := range []struct {
		off, width uint64
		want       [2]uint64
	}{
		{32, 32, [2]uint64{32, 64}}, // the whole reserved member
		{40, 8, [2]uint64{32, 64}},  // inside it
		{0, 8, [2]uint64{}},         // overlaps status
		{56, 16, [2]uint64{}},       // runs into uar_page
		{24, 16, [2]uint64{}},       // spans two reserved members
		{100, 4, [2]uint64{}},       // past every member
	} {
		if got := reservedRange(ms, c.off, c.width); got != c.want {
			t.Errorf("field at %d width %d: got %v, want %v", c.off, c.width, got, c.want)
		}
	}
	text := []byte("struct mlx5_ifc_x_bits {\n\tu8         a[0x4];\n\tstruct mlx5_ifc_y_bits y;\n\tu8 pas[][0x40];\n};\n")
	if got := structMembers(text, "x"); len(got) != 2 || got[0].name != "a" || got[1].name != "y" {
		t.Errorf("structMembers: %+v", got)
	}
}

// dpdkLayoutBits is the size in bits of each layout only DPDK's drivers/common/mlx5/mlx5_prm.h
// defines (its struct mlx5_ifc_<layout>_bits), for dpdkIfcField's check.
var dpdkLayoutBits = map[string]uint64{
	"parse_graph_flow_match_sample": 0x80,
	"parse_graph_arc":               0x80,
	"parse_graph_flex":              0xd00,
	"create_flex_parser_in":         0xd80,
	"parse_graph_node_cap":          0xc0,
}

// dpdkProblems checks the dpdkIfcField items: each layout is absent from the installed
// kernel header (kernText) and listed in dpdkLayoutBits, every field lies inside that size,
// and no two fields of one layout overlap.
func dpdkProblems(items []checkItem, kernText []byte) []string {
	var bad []string
	by := map[string][]checkItem{}
	for _, it := range items {
		if it.kind != "dpdk" {
			continue
		}
		by[it.layout] = append(by[it.layout], it)
	}
	layouts := make([]string, 0, len(by))
	for l := range by {
		layouts = append(layouts, l)
	}
	sort.Strings(layouts)
	for _, l := range layouts {
		its := by[l]
		if kernText != nil && structMembers(kernText, l) != nil {
			bad = append(bad, fmt.Sprintf("%v: the installed mlx5_ifc.h defines struct mlx5_ifc_%s_bits now: use ifcField", its[0], l))
		}
		size, ok := dpdkLayoutBits[l]
		if !ok {
			bad = append(bad, fmt.Sprintf("%v: layout %s has no size in dpdkLayoutBits", its[0], l))
		}
		sort.Slice(its, func(i, j int) bool { return its[i].a < its[j].a })
		for i, it := range its {
			if it.b == 0 || (ok && it.a+it.b > size) {
				bad = append(bad, fmt.Sprintf("%v: outside the layout's %#x bits", it, size))
			}
			if i > 0 && its[i-1].a+its[i-1].b > it.a {
				bad = append(bad, fmt.Sprintf("%v overlaps %v", it, its[i-1]))
			}
		}
	}
	return bad
}

// TestDPDKProblems: the DPDK-only check sees an overlap, a field past the layout's end, an
// unknown layout and a layout the installed header has.
func TestDPDKProblems(t *testing.T) {
	ok := []checkItem{
		{kind: "dpdk", layout: "parse_graph_arc", name: "a", a: 0, b: 8},
		{kind: "dpdk", layout: "parse_graph_arc", name: "b", a: 8, b: 8},
	}
	if p := dpdkProblems(ok, nil); len(p) != 0 {
		t.Fatalf("clean items: %v", p)
	}
	for name, c := range map[string]struct {
		items []checkItem
		kern  string
	}{
		"overlap":   {items: []checkItem{ok[0], {kind: "dpdk", layout: "parse_graph_arc", name: "b", a: 7, b: 8}}},
		"past end":  {items: []checkItem{{kind: "dpdk", layout: "parse_graph_arc", name: "a", a: 0x78, b: 16}}},
		"unknown":   {items: []checkItem{{kind: "dpdk", layout: "nope", name: "a", a: 0, b: 8}}},
		"in header": {items: ok[:1], kern: "struct mlx5_ifc_parse_graph_arc_bits {\n\tu8 a[0x8];\n};"},
	} {
		if p := dpdkProblems(c.items, []byte(c.kern)); len(p) != 1 {
			t.Errorf("%s: got %d problems %v, want 1", name, len(p), p)
		}
	}
}
