package testutil

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
)

// TestMissingFailsUnderCI: a missing requirement skips a test, except under CI, where it
// fails the test with the same message.
func TestMissingFailsUnderCI(t *testing.T) {
	for _, c := range []struct {
		env          string
		skip, failed bool
	}{{"", true, false}, {"false", true, false}, {"true", false, true}, {"1", false, true}, {"TRUE", false, true}} {
		t.Setenv(CIEnv, c.env)
		f := RunFake(func(tb testing.TB) { Missing(tb, "needs %s", "a thing") })
		if f.SkipCalled != c.skip || f.FailCalled != c.failed || !strings.Contains(f.Msg, "needs a thing") {
			t.Errorf("CI=%q: skipped %v failed %v (%q), want skipped %v failed %v", c.env, f.SkipCalled, f.FailCalled, f.Msg, c.skip, c.failed)
		}
		if c.failed && !strings.Contains(f.Msg, "must run in CI") {
			t.Errorf("CI=%q: failure %q does not say why", c.env, f.Msg)
		}
	}
}

// TestRequirements runs the requirement helpers here: as root they pass, otherwise they skip
// (or fail under CI) naming root; a tool that does not exist is always missing.
func TestRequirements(t *testing.T) {
	t.Setenv(CIEnv, "true")
	f := RunFake(func(tb testing.TB) { RequireRoot(tb, "testing") })
	if root := os.Geteuid() == 0; root == f.FailCalled || (!root && !strings.Contains(f.Msg, "needs root (testing)")) {
		t.Errorf("RequireRoot as uid %d under CI: failed %v %q", os.Geteuid(), f.FailCalled, f.Msg)
	}
	f = RunFake(func(tb testing.TB) { RequireTool(tb, "no-such-tool-daqiri", "apt-get install nothing") })
	if !f.FailCalled || !strings.Contains(f.Msg, "no-such-tool-daqiri is not installed (apt-get install nothing)") {
		t.Errorf("missing tool under CI: failed %v %q", f.FailCalled, f.Msg)
	}
	t.Setenv(CIEnv, "")
	f = RunFake(func(tb testing.TB) { RequireTool(tb, "no-such-tool-daqiri", "x") })
	if !f.SkipCalled || f.FailCalled {
		t.Errorf("missing tool outside CI: skipped %v failed %v", f.SkipCalled, f.FailCalled)
	}
	if p := RequireTool(t, "sh", "x"); p == "" {
		t.Error("sh not found")
	}
}

// TestLeakChecks: the checks pass when nothing changed and fail naming what did.
func TestLeakChecks(t *testing.T) {
	n := map[string]uint64{"qp": 1, "mr": 2}
	f := RunFake(func(tb testing.TB) {
		CountsUnchanged(tb, "kernel", func(testing.TB) map[string]uint64 { return map[string]uint64{"qp": n["qp"], "mr": n["mr"]} })
	})
	n["mr"] = 3
	f.RunCleanups()
	if !f.FailCalled || !strings.Contains(f.Msg, "kernel mr count 3 after the test, 2 before") {
		t.Errorf("changed count: failed %v %q", f.FailCalled, f.Msg)
	}
	stop := make(chan struct{})
	f = RunFake(func(tb testing.TB) {
		NoGoroutineLeak(tb)
		// Eight: the check compares counts, and the goroutine running this function, like
		// other goroutines of the process that end meanwhile, is gone by cleanup time.
		for range 8 {
			go func() { <-stop }()
		}
	})
	f.RunCleanups()
	close(stop)
	if !f.FailCalled || !strings.Contains(f.Msg, "goroutine leak") {
		t.Errorf("leaked goroutine: failed %v %q", f.FailCalled, f.Msg[:min(len(f.Msg), 80)])
	}
	f = RunFake(func(tb testing.TB) { NoGoroutineLeak(tb) })
	f.RunCleanups()
	if f.FailCalled {
		t.Errorf("no leak reported as %q", f.Msg)
	}
}

// TestLacks: under an emulator a missing feature skips, CI or not, naming the emulator and
// the feature; natively it is Missing (a failure under CI).
func TestLacks(t *testing.T) {
	errProbe := errors.New("function not implemented")
	for _, c := range []struct {
		emulator, ci string
		skip, failed bool
	}{{"qemu-aarch64-static", "true", true, false}, {"qemu-aarch64-static", "", true, false}, {"", "true", false, true}, {"", "", true, false}} {
		t.Setenv(EmulatorEnv, c.emulator)
		t.Setenv(CIEnv, c.ci)
		f := RunFake(func(tb testing.TB) { Lacks(tb, "bpf()", errProbe) })
		if f.SkipCalled != c.skip || f.FailCalled != c.failed || !strings.Contains(f.Msg, "bpf()") || !strings.Contains(f.Msg, "function not implemented") {
			t.Errorf("emulator %q CI %q: skipped %v failed %v (%q), want skipped %v failed %v", c.emulator, c.ci, f.SkipCalled, f.FailCalled, f.Msg, c.skip, c.failed)
		}
		if c.emulator != "" && !strings.Contains(f.Msg, c.emulator) {
			t.Errorf("skip %q does not name the emulator", f.Msg)
		}
	}
	t.Setenv(EmulatorEnv, "qemu-aarch64-static")
	if Rounds(1000, 10) != 10 {
		t.Errorf("Rounds under an emulator = %d, want 10", Rounds(1000, 10))
	}
	t.Setenv(EmulatorEnv, "")
	if Rounds(1000, 10) != 1000 {
		t.Errorf("Rounds natively = %d, want 1000", Rounds(1000, 10))
	}
	if err := ProbeSyscall(syscall.SYS_GETPID); err != nil {
		t.Errorf("ProbeSyscall(getpid) = %v", err)
	}
	if err := ProbeSyscall(1 << 20); !errors.Is(err, syscall.ENOSYS) {
		t.Errorf("ProbeSyscall(no such call) = %v, want ENOSYS", err)
	}
}
