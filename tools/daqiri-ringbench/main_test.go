package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestParseUpstream(t *testing.T) {
	out := []byte(`daqiri::Ring / ObjectPool throughput (build with DPDK for rte comparison)
case                       |      Mops    ns/op
------------------------------------------------------------------------------------
SPSC single 1p1c           |      60.3     16.6
MPMC bulk32 4p4c           |      58.3     17.2
ObjectPool get/put 4t      |       3.5    285.7
garbage | x
`)
	got := parseUpstream(out)
	want := map[string]float64{"spsc single 1p1c": 60.3, "mpmc bulk32 4p4c": 58.3, "pool get/put 4t": 3.5}
	if len(got) != len(want) {
		t.Fatalf("parsed %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%q = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
	if len(parseUpstream([]byte("no table here\n"))) != 0 {
		t.Fatal("parsed rows out of text without a table")
	}
}

// TestMedianKeepsRuns: the median is the middle result, every result comes back in the order
// run (for -each), and a count below one still runs once.
func TestMedianKeepsRuns(t *testing.T) {
	vals := []float64{5, 1, 9, 3, 7}
	i := 0
	m, runs := median(len(vals), func() float64 { i++; return vals[i-1] })
	if m != 5 || len(runs) != 5 {
		t.Fatalf("median %v of %v", m, runs)
	}
	for k := range vals {
		if runs[k] != vals[k] {
			t.Fatalf("runs %v, want %v in order", runs, vals)
		}
	}
	if got := eachLine(runs); got != "    runs: 5.0 1.0 9.0 3.0 7.0" {
		t.Fatalf("eachLine = %q", got)
	}
	calls := 0
	if m, runs := median(0, func() float64 { calls++; return 2 }); m != 2 || len(runs) != 1 || calls != 1 {
		t.Fatalf("median of 0 runs: %v %v after %d calls", m, runs, calls)
	}
}

// TestRoundsTakeUpstreamsMedian: with -rounds 3 the tool runs upstream's binary three times,
// once before each round of its own runs, and the upstream column is the median of the three
// figures (a stand-in prints 10, 30 and 20 Mops in turn); -rounds without -upstream is refused.
func TestRoundsTakeUpstreamsMedian(t *testing.T) {
	if os.Getenv("RINGBENCH_RUN_MAIN") == "1" {
		os.Args = append([]string{"daqiri-ringbench"}, strings.Fields(os.Getenv("RINGBENCH_ARGS"))...)
		main()
		os.Exit(0)
	}
	dir := t.TempDir()
	up := filepath.Join(dir, "upstream")
	script := `#!/bin/sh
n=$(cat "$0.n" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$0.n"
case $n in 1) v=10;; 2) v=30;; *) v=20;; esac
echo "case | Mops ns/op"
echo "ObjectPool get/put 1t | $v.0 1.0"
`
	if err := os.WriteFile(up, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	runMain := func(args string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestRoundsTakeUpstreamsMedian$")
		cmd.Env = append(os.Environ(), "RINGBENCH_RUN_MAIN=1", "RINGBENCH_ARGS="+args)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := runMain("-rounds 3 -upstream " + up + " -run ^pool.get/put.1t$ -items 2000 -repeats 1 -chan=false -each")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "    upstream: 10.0 30.0 20.0") || !regexp.MustCompile(`pool get/put 1t .* 20\.0 `).MatchString(out) {
		t.Fatalf("want upstream's three figures and their median 20.0 in:\n%s", out)
	}
	if n, _ := os.ReadFile(up + ".n"); strings.TrimSpace(string(n)) != "3" {
		t.Fatalf("upstream ran %q times, want 3", n)
	}
	if out, err := runMain("-rounds 2 -run ^pool.get/put.1t$"); err == nil || !strings.Contains(out, "-rounds 2: want 1, or more with -upstream") {
		t.Fatalf("-rounds without -upstream: err %v\n%s", err, out)
	}
}
