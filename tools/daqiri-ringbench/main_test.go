package main

import "testing"

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
