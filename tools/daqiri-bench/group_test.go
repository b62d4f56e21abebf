package main

import (
	"fmt"
	"reflect"
	"runtime"
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

// TestRaiseProcs: the two-port model config has two engine worker threads (the RX port's
// queues share core 1, the TX-only port has one), raiseProcs adds them and the loops to
// GOMAXPROCS and restores it, and leaves a GOMAXPROCS the environment sets alone.
func TestRaiseProcs(t *testing.T) {
	cfg, err := config.LoadFile("../../mlx5/testdata/two_port.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if n := engineThreads(cfg); n != 2 {
		t.Fatalf("engineThreads(two_port.yaml) = %d, want 2", n)
	}
	if n := engineThreads(&config.Config{}); n != 0 {
		t.Fatalf("engineThreads(no interfaces) = %d, want 0", n)
	}
	old := runtime.GOMAXPROCS(0)
	t.Setenv("GOMAXPROCS", "")
	restore := raiseProcs(cfg, 5)
	if got := runtime.GOMAXPROCS(0); got != old+5+2 {
		restore()
		t.Fatalf("raised GOMAXPROCS %d, want %d", got, old+5+2)
	}
	restore()
	if got := runtime.GOMAXPROCS(0); got != old {
		t.Fatalf("restored GOMAXPROCS %d, want %d", got, old)
	}
	t.Setenv("GOMAXPROCS", fmt.Sprint(old))
	restore = raiseProcs(cfg, 5)
	got := runtime.GOMAXPROCS(0)
	restore()
	if got != old {
		t.Fatalf("GOMAXPROCS %d with the environment's set, want %d", got, old)
	}
}
