package guest

import (
	"github.com/daqiri-go/daqiri/internal/testutil"
	"os"
	"strings"
	"testing"
)

func TestRequireOutsideGuest(t *testing.T) {
	t.Setenv(EnvGuest, "")
	os.Unsetenv(EnvGuest)
	f := testutil.RunFake(func(tb testing.TB) { Require(tb) })
	if !f.SkipCalled || !strings.Contains(f.Msg, "go test ./integration/vm") {
		t.Errorf("Require outside the guest: skipped=%v msg=%q", f.SkipCalled, f.Msg)
	}
	if Active() {
		t.Error("Active() outside the guest")
	}
}

func TestGetenvInGuest(t *testing.T) {
	t.Setenv(EnvGuest, "1")
	t.Setenv(EnvEduBDF, "0000:00:01.0")
	t.Setenv(EnvEduGroup, "7")
	var bdf string
	var group int
	f := testutil.RunFake(func(tb testing.TB) { bdf, group = Edu(tb) })
	if f.FailCalled || f.SkipCalled || bdf != "0000:00:01.0" || group != 7 {
		t.Errorf("Edu = %q %d (failed %v skipped %v)", bdf, group, f.FailCalled, f.SkipCalled)
	}
	// Missing or malformed: a failure, not a skip, inside the guest.
	t.Setenv(EnvEduGroup, "x")
	f = testutil.RunFake(func(tb testing.TB) { Edu(tb) })
	if !f.FailCalled {
		t.Error("Edu with a bad group did not fail")
	}
	t.Setenv(EnvRxe, "")
	f = testutil.RunFake(func(tb testing.TB) { Rxe(tb) })
	if !f.FailCalled || f.SkipCalled {
		t.Errorf("Rxe without setup: failed=%v skipped=%v", f.FailCalled, f.SkipCalled)
	}
}
