package main

import (
	"reflect"
	"testing"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/internal/osthread"
)

// TestGroupByCore checks which queues share a bench goroutine: those pinned to one allowed
// core, in their order; a queue without a core, or with a core this process may not run
// on, alone; and every queue alone on a socket stream.
func TestGroupByCore(t *testing.T) {
	if !osthread.Allowed(0) {
		t.Skip("needs core 0 in the process's CPU affinity mask")
	}
	zero, far := 0, 1<<20
	cores := map[string]*int{"a": &zero, "b": nil, "c": &zero, "d": &far, "e": &far}
	qs := []string{"a", "b", "c", "d", "e"}
	core := func(q string) *int { return cores[q] }
	type g struct {
		core *int
		qs   []string
	}
	flat := func(gs []coreGroup[string]) []g {
		var out []g
		for _, x := range gs {
			out = append(out, g{x.core, x.qs})
		}
		return out
	}
	got := flat(groupByCore(&config.Config{StreamType: config.StreamRaw}, qs, core))
	want := []g{{&zero, []string{"a", "c"}}, {nil, []string{"b"}}, {&far, []string{"d"}}, {&far, []string{"e"}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("raw stream: %+v, want %+v", got, want)
	}
	got = flat(groupByCore(&config.Config{StreamType: config.StreamSocket}, qs, core))
	want = []g{{&zero, []string{"a"}}, {nil, []string{"b"}}, {&zero, []string{"c"}}, {&far, []string{"d"}}, {&far, []string{"e"}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("socket stream: %+v, want %+v", got, want)
	}
	if got := groupByCore(&config.Config{}, []string(nil), core); len(got) != 0 {
		t.Fatalf("no queues: %+v, want no groups", got)
	}
}

// TestRunProcs: a run raises GOMAXPROCS by two per configured queue (an engine worker and a
// bench loop each at most), capped at 256 but never below what it was; it leaves GOMAXPROCS
// alone when the user set it or the configuration has no queues.
func TestRunProcs(t *testing.T) {
	cfgWith := func(rx, tx int) *config.Config {
		return &config.Config{Interfaces: []config.Interface{
			{Name: "a", RX: &config.RxConfig{Queues: make([]config.Queue, rx)}},
			{Name: "b", TX: &config.TxConfig{Queues: make([]config.Queue, tx)}},
			{Name: "c"},
		}}
	}
	for _, c := range []struct {
		rx, tx, cur int
		user        bool
		want        int
	}{
		{5, 4, 2, false, 20}, // the two-port model run
		{1, 0, 8, false, 10},
		{0, 0, 2, false, 0},
		{5, 4, 2, true, 0},
		{200, 0, 16, false, 256},
		{10, 10, 300, false, 300},
	} {
		if got := runProcs(cfgWith(c.rx, c.tx), c.cur, c.user); got != c.want {
			t.Errorf("%d RX + %d TX queues, GOMAXPROCS %d, user set %v: runProcs %d, want %d", c.rx, c.tx, c.cur, c.user, got, c.want)
		}
	}
}
