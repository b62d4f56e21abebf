package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// CProbe asks the C compiler what the installed headers say: it compiles a program that
// includes headers (paths as in #include <…>, looked up under /usr/include) and prints each
// of exprs (integer constant expressions such as an enumerator, sizeof(struct x) or
// offsetof(struct x, f)) as an unsigned 64-bit number, runs it and returns the values in
// order. A missing gcc or header is reported with Missing (a failure under CI), naming the
// Debian package in hint. It is how layout tests check Go mirrors of C ABIs without cgo in
// the library.
func CProbe(t testing.TB, hint string, headers, exprs []string) []uint64 {
	t.Helper()
	gcc := RequireTool(t, "gcc", "Debian: apt-get install gcc")
	for _, h := range headers {
		if _, err := os.Stat(filepath.Join("/usr/include", h)); err != nil {
			Missing(t, "header <%s> is not installed (%s)", h, hint)
		}
	}
	var src strings.Builder
	src.WriteString("#include <stdio.h>\n#include <stddef.h>\n")
	for _, h := range headers {
		fmt.Fprintf(&src, "#include <%s>\n", h)
	}
	src.WriteString("int main(void) {\n")
	for _, e := range exprs {
		fmt.Fprintf(&src, "\tprintf(\"%%llu\\n\", (unsigned long long)(%s));\n", e)
	}
	src.WriteString("\treturn 0;\n}\n")
	dir := t.TempDir()
	c := filepath.Join(dir, "probe.c")
	bin := filepath.Join(dir, "probe")
	if err := os.WriteFile(c, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(gcc, "-w", "-o", bin, c).CombinedOutput(); err != nil {
		t.Fatalf("compiling the C probe: %v\n%s\nprobe source:\n%s", err, out, src.String())
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatalf("running the C probe: %v", err)
	}
	lines := strings.Fields(string(out))
	if len(lines) != len(exprs) {
		t.Fatalf("the C probe printed %d values for %d expressions", len(lines), len(exprs))
	}
	vals := make([]uint64, len(lines))
	for i, l := range lines {
		v, err := strconv.ParseUint(l, 10, 64)
		if err != nil {
			t.Fatalf("the C probe printed %q for %s", l, exprs[i])
		}
		vals[i] = v
	}
	return vals
}
