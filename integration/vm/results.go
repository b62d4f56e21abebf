package vm

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// Result is the outcome of one guest test or package.
type Result string

// Results of guest tests. NoResult means the guest started the test but its
// end never reached the host (crash, timeout, lost output): a failure.
const (
	Pass     Result = "pass"
	Fail     Result = "fail"
	Skip     Result = "skip"
	NoResult Result = ""
)

// TestResult is one guest test or subtest.
type TestResult struct {
	Name     string // full name, as go test prints it: TestX/sub
	Result   Result
	Output   string // what the test printed (t.Log, failures), in order
	Elapsed  time.Duration
	Children []*TestResult // subtests, in the order they started
	parent   *TestResult
}

// Leaf returns the last element of the name (the subtest's own name).
func (r *TestResult) Leaf() string {
	if r.parent != nil {
		return strings.TrimPrefix(r.Name, r.parent.Name+"/")
	}
	return r.Name
}

// event is one line of `go tool test2json` output (cmd/test2json docs).
type event struct {
	Action  string
	Test    string
	Output  string
	Elapsed float64
}

// parseEvents builds the test tree from test2json events. Package-level
// output (no test name) and the package result are returned separately.
func parseEvents(r io.Reader) (tests []*TestResult, pkgOutput string, pkgResult Result, err error) {
	byName := map[string]*TestResult{}
	var out strings.Builder
	dec := json.NewDecoder(r)
	for {
		var ev event
		if err := dec.Decode(&ev); err == io.EOF {
			break
		} else if err != nil {
			return nil, "", NoResult, fmt.Errorf("test2json output: %w", err)
		}
		if ev.Test == "" {
			switch ev.Action {
			case "output":
				out.WriteString(ev.Output)
			case "pass", "fail", "skip":
				pkgResult = Result(ev.Action)
			}
			continue
		}
		tr := byName[ev.Test]
		if tr == nil {
			tr = &TestResult{Name: ev.Test}
			byName[ev.Test] = tr
			parent := findParent(byName, ev.Test)
			if parent == nil {
				tests = append(tests, tr)
			} else {
				tr.parent = parent
				parent.Children = append(parent.Children, tr)
			}
		}
		switch ev.Action {
		case "output":
			// The framing lines (=== RUN, --- PASS …) repeat what the tree
			// already says; keep only what the test itself printed.
			if !isFraming(ev.Output) {
				tr.Output += ev.Output
			}
		case "pass", "fail", "skip":
			tr.Result = Result(ev.Action)
			tr.Elapsed = time.Duration(ev.Elapsed * float64(time.Second))
		}
	}
	return tests, out.String(), pkgResult, nil
}

// findParent returns the nearest started test whose name is a prefix
// (up to a '/') of name.
func findParent(byName map[string]*TestResult, name string) *TestResult {
	for i := strings.LastIndexByte(name, '/'); i > 0; i = strings.LastIndexByte(name[:i], '/') {
		if p := byName[name[:i]]; p != nil {
			return p
		}
	}
	return nil
}

func isFraming(line string) bool {
	t := strings.TrimLeft(line, " ")
	for _, p := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME", "--- PASS", "--- FAIL", "--- SKIP"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// countResults walks the tree and counts results.
func countResults(tests []*TestResult) map[Result]int {
	n := map[Result]int{}
	var walk func([]*TestResult)
	walk = func(ts []*TestResult) {
		for _, t := range ts {
			n[t.Result]++
			walk(t.Children)
		}
	}
	walk(tests)
	return n
}

// tailLines returns the last n lines of b.
func tailLines(b []byte, n int) string {
	b = bytes.TrimRight(b, "\n")
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// ConsoleTail returns the last n lines of the guest's serial console (with
// qemu's stderr after it), for a failure message.
func (rep *Report) ConsoleTail(n int) string { return tailLines(rep.Console, n) }
