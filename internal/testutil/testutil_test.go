package testutil

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
)

// fakeTB records what a helper did to a test; Skip and Fatal end the calling goroutine as
// the real ones do.
type fakeTB struct {
	testing.TB
	skipped, failed bool
	msg             string
	cleanups        []func()
}

func (f *fakeTB) Helper()           {}
func (f *fakeTB) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *fakeTB) Skip(args ...any) {
	f.skipped, f.msg = true, fmt.Sprint(args...)
	runtime.Goexit()
}
func (f *fakeTB) Skipf(format string, args ...any) { f.Skip(fmt.Sprintf(format, args...)) }
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed, f.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (f *fakeTB) Fatal(args ...any) { f.Fatalf("%s", fmt.Sprint(args...)) }
func (f *fakeTB) Errorf(format string, args ...any) {
	f.failed, f.msg = true, fmt.Sprintf(format, args...)
}

// run calls fn with a fake test on its own goroutine, as the testing package runs a test.
func run(fn func(testing.TB)) *fakeTB {
	f := &fakeTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	return f
}

// TestMissingFailsUnderCI: a missing requirement skips a test, except under CI, where it
// fails the test with the same message.
func TestMissingFailsUnderCI(t *testing.T) {
	for _, c := range []struct {
		env          string
		skip, failed bool
	}{{"", true, false}, {"false", true, false}, {"true", false, true}, {"1", false, true}, {"TRUE", false, true}} {
		t.Setenv(CIEnv, c.env)
		f := run(func(tb testing.TB) { Missing(tb, "needs %s", "a thing") })
		if f.skipped != c.skip || f.failed != c.failed || !strings.Contains(f.msg, "needs a thing") {
			t.Errorf("CI=%q: skipped %v failed %v (%q), want skipped %v failed %v", c.env, f.skipped, f.failed, f.msg, c.skip, c.failed)
		}
		if c.failed && !strings.Contains(f.msg, "must run in CI") {
			t.Errorf("CI=%q: failure %q does not say why", c.env, f.msg)
		}
	}
}

// TestRequirements runs the requirement helpers here: as root they pass, otherwise they skip
// (or fail under CI) naming root; a tool that does not exist is always missing.
func TestRequirements(t *testing.T) {
	t.Setenv(CIEnv, "true")
	f := run(func(tb testing.TB) { RequireRoot(tb, "testing") })
	if root := os.Geteuid() == 0; root == f.failed || (!root && !strings.Contains(f.msg, "needs root (testing)")) {
		t.Errorf("RequireRoot as uid %d under CI: failed %v %q", os.Geteuid(), f.failed, f.msg)
	}
	f = run(func(tb testing.TB) { RequireTool(tb, "no-such-tool-daqiri", "apt-get install nothing") })
	if !f.failed || !strings.Contains(f.msg, "no-such-tool-daqiri is not installed (apt-get install nothing)") {
		t.Errorf("missing tool under CI: failed %v %q", f.failed, f.msg)
	}
	t.Setenv(CIEnv, "")
	f = run(func(tb testing.TB) { RequireTool(tb, "no-such-tool-daqiri", "x") })
	if !f.skipped || f.failed {
		t.Errorf("missing tool outside CI: skipped %v failed %v", f.skipped, f.failed)
	}
	if p := RequireTool(t, "sh", "x"); p == "" {
		t.Error("sh not found")
	}
}

// TestLeakChecks: the checks pass when nothing changed and fail naming what did.
func TestLeakChecks(t *testing.T) {
	n := map[string]uint64{"qp": 1, "mr": 2}
	f := run(func(tb testing.TB) {
		CountsUnchanged(tb, "kernel", func(testing.TB) map[string]uint64 { return map[string]uint64{"qp": n["qp"], "mr": n["mr"]} })
	})
	n["mr"] = 3
	for _, c := range f.cleanups {
		c()
	}
	if !f.failed || !strings.Contains(f.msg, "kernel mr count 3 after the test, 2 before") {
		t.Errorf("changed count: failed %v %q", f.failed, f.msg)
	}
	stop := make(chan struct{})
	f = run(func(tb testing.TB) {
		NoGoroutineLeak(tb)
		// Two: the goroutine running this function is gone by cleanup time.
		go func() { <-stop }()
		go func() { <-stop }()
	})
	for _, c := range f.cleanups {
		c()
	}
	close(stop)
	if !f.failed || !strings.Contains(f.msg, "goroutine leak") {
		t.Errorf("leaked goroutine: failed %v %q", f.failed, f.msg[:min(len(f.msg), 80)])
	}
	f = run(func(tb testing.TB) { NoGoroutineLeak(tb) })
	for _, c := range f.cleanups {
		c()
	}
	if f.failed {
		t.Errorf("no leak reported as %q", f.msg)
	}
}
