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
