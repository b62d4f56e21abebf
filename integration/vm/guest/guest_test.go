package guest

import (
	"os"
	"strings"
	"testing"
)

// fakeTB records what a helper does to its test without stopping the real one.
type fakeTB struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Skip(args ...any) {
	f.skipped = true
	f.msg = args[0].(string)
	panic(f)
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = true
	f.msg = format
	panic(f)
}

func run(f *fakeTB, fn func()) {
	defer func() {
		if r := recover(); r != nil && r != f {
			panic(r)
		}
	}()
	fn()
}

func TestRequireOutsideGuest(t *testing.T) {
	t.Setenv(EnvGuest, "")
	os.Unsetenv(EnvGuest)
	f := &fakeTB{}
	run(f, func() { Require(f) })
	if !f.skipped || !strings.Contains(f.msg, "go test ./integration/vm") {
		t.Errorf("Require outside the guest: skipped=%v msg=%q", f.skipped, f.msg)
	}
	if Active() {
		t.Error("Active() outside the guest")
	}
}

func TestGetenvInGuest(t *testing.T) {
	t.Setenv(EnvGuest, "1")
	t.Setenv(EnvEduBDF, "0000:00:01.0")
	t.Setenv(EnvEduGroup, "7")
	f := &fakeTB{}
	var bdf string
	var group int
	run(f, func() { bdf, group = Edu(f) })
	if f.failed || f.skipped || bdf != "0000:00:01.0" || group != 7 {
		t.Errorf("Edu = %q %d (failed %v skipped %v)", bdf, group, f.failed, f.skipped)
	}
	// Missing or malformed: a failure, not a skip, inside the guest.
	t.Setenv(EnvEduGroup, "x")
	f = &fakeTB{}
	run(f, func() { Edu(f) })
	if !f.failed {
		t.Error("Edu with a bad group did not fail")
	}
	t.Setenv(EnvRxe, "")
	f = &fakeTB{}
	run(f, func() { Rxe(f) })
	if !f.failed || f.skipped {
		t.Errorf("Rxe without setup: failed=%v skipped=%v", f.failed, f.skipped)
	}
}
