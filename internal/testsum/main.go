// Command testsum condenses `go test -json` for `make test`: one line per package (ok, FAIL
// or no tests), every skipped test with the reason it gave, and the whole output of every
// failed test. It exits 1 when anything failed, so a pipeline keeps go test's verdict.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

func main() {
	os.Exit(summarize(os.Stdin, os.Stdout))
}

type key struct{ pkg, test string }

func summarize(in io.Reader, out io.Writer) int {
	output := map[key]*strings.Builder{}
	var skips []string
	failed := false
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if json.Unmarshal(line, &e) != nil {
			fmt.Fprintln(out, string(line)) // build errors and the like come as plain text
			if strings.HasPrefix(string(line), "FAIL") {
				failed = true
			}
			continue
		}
		k := key{e.Package, e.Test}
		switch e.Action {
		case "output":
			b := output[k]
			if b == nil {
				b = &strings.Builder{}
				output[k] = b
			}
			b.WriteString(e.Output)
		case "skip":
			if e.Test != "" {
				skips = append(skips, fmt.Sprintf("SKIP %s %s: %s", e.Package, e.Test, reason(output[k])))
			}
			delete(output, k)
		case "pass":
			delete(output, k)
		case "fail":
			failed = true
			if b := output[k]; b != nil {
				if e.Test == "" {
					// The package's own output (panics, build failures).
					fmt.Fprint(out, b.String())
				} else {
					fmt.Fprintf(out, "--- FAIL %s %s\n%s", e.Package, e.Test, b.String())
				}
			}
			delete(output, k)
		}
		if e.Test == "" {
			switch e.Action {
			case "pass":
				fmt.Fprintf(out, "ok   %s %.1fs\n", e.Package, e.Elapsed)
			case "fail":
				fmt.Fprintf(out, "FAIL %s %.1fs\n", e.Package, e.Elapsed)
			case "skip":
				fmt.Fprintf(out, "--   %s (no tests)\n", e.Package)
			}
		}
	}
	if len(skips) > 0 {
		sort.Strings(skips)
		fmt.Fprintf(out, "\n%d tests skipped:\n", len(skips))
		for _, s := range skips {
			fmt.Fprintln(out, s)
		}
	}
	if failed || sc.Err() != nil {
		return 1
	}
	return 0
}

// reason is the message a skipped test gave: its last output line that is not the
// "--- SKIP" line or a run marker.
func reason(b *strings.Builder) string {
	if b == nil {
		return "(no reason given)"
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	var msg []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		// "file_test.go:12: message": keep the message.
		if i := strings.Index(t, ": "); i > 0 && strings.Contains(t[:i], "_test.go:") {
			t = t[i+2:]
		}
		msg = append(msg, t)
	}
	if len(msg) == 0 {
		return "(no reason given)"
	}
	return strings.Join(msg, " / ")
}
