package vm

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/integration/vm/guest"
	"github.com/daqiri-go/daqiri/internal/testutil"
)

// Environment variables that steer TestGuest (see doc.go).
const (
	envPackages = "DAQIRI_VM_PKGS"    // package patterns, space or comma separated
	envRun      = "DAQIRI_VM_RUN"     // -test.run for the guest binaries
	envTimeout  = "DAQIRI_VM_TIMEOUT" // whole VM run, a Go duration
	envKeep     = "DAQIRI_VM_KEEP"    // 1: keep the work folder and log its path
	envCPUs     = "DAQIRI_VM_CPUS"    // guest vCPUs
)

// TestGuest boots the VM once, runs every guest package's tests inside it and
// reports each guest test as a subtest: TestGuest/<package>/<Test>/<subtest>.
func TestGuest(t *testing.T) {
	if guest.Active() {
		t.Skip("already inside the VM")
	}
	h, err := FindHost()
	if err != nil {
		testutil.Missing(t, "%v", err)
	}
	root := testutil.ModuleRoot(t)
	o := Options{ModuleRoot: root, Logf: t.Logf, Run: os.Getenv(envRun)}
	if s := os.Getenv(envPackages); s != "" {
		o.Packages = strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
	}
	if s := os.Getenv(envTimeout); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("%s=%q: want a positive Go duration such as 150s", envTimeout, s)
		}
		o.Timeout = d
	}
	if s := os.Getenv(envCPUs); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 8 {
			t.Fatalf("%s=%q: want 1 to 8", envCPUs, s)
		}
		o.CPUs = n
	}
	o.defaults()
	// Leave the test binary time to report after a killed VM.
	if dl, ok := t.Deadline(); ok {
		if left := time.Until(dl) - 30*time.Second; left < o.Timeout {
			if left < 20*time.Second {
				testutil.Missing(t, "only %v left before the go test deadline; the VM needs more", time.Until(dl).Round(time.Second))
			}
			o.Timeout = left
		}
	}
	if os.Getenv(envKeep) == "1" {
		o.WorkDir, err = os.MkdirTemp("", "daqiri-vm-")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("work folder kept: %s", o.WorkDir)
	} else {
		o.WorkDir = t.TempDir()
	}
	// The guest runs as root over 9p with security_model=none: files it
	// creates in the work folder belong to whoever runs qemu.
	if err := os.Chmod(o.WorkDir, 0o777); err != nil {
		t.Fatal(err)
	}

	pkgs, err := ListPackages(t.Context(), h, root, o.Packages)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) == 0 {
		t.Skipf("no package with tests matches %v", o.Packages)
	}
	recordInputs(t, h, root, pkgs)

	rep, err := Run(t.Context(), h, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("VM run: build %.1fs, boot %.1fs (qemu start → guest script), setup %.1fs, qemu total %.1fs, kernel %s",
		rep.Build.Seconds(), rep.Boot.Seconds(), rep.Setup.Seconds(), rep.Wall.Seconds(), h.KernelRelease)
	if rep.Wall == 0 {
		t.Log("no guest package built; the VM was not booted")
	} else {
		t.Run("setup", func(t *testing.T) {
			t.Log("guest setup:\n" + rep.SetupLog)
			if rep.SetupLog == "" {
				t.Errorf("the guest script never ran; console:\n%s", tailLines(rep.Console, 60))
			} else if rep.SetupErrs != "" {
				t.Errorf("guest setup steps failed: %s", rep.SetupErrs)
			}
		})
	}
	for _, pr := range rep.Packages {
		t.Run(pr.Package.Rel, func(t *testing.T) { reportPackage(t, rep, pr) })
	}
	if !rep.Done && rep.Wall > 0 {
		t.Errorf("the guest did not finish (timeout %v, or a crash); console tail:\n%s", o.Timeout, tailLines(rep.Console, 60))
	}
}

func reportPackage(t *testing.T, rep *Report, pr *PackageResult) {
	if pr.BuildFailed {
		t.Fatalf("the guest test binary did not build: %v", pr.Err)
	}
	t.Logf("%s: guest run %.1fs, exit status %d", pr.Package.ImportPath, pr.Elapsed.Seconds(), pr.Exit)
	if pr.Err != nil {
		t.Errorf("reading the guest results: %v", pr.Err)
	}
	for _, tr := range pr.Tests {
		t.Run(tr.Leaf(), func(t *testing.T) { reportTest(t, tr) })
	}
	if out := strings.TrimSpace(pr.Output); out != "" && out != "PASS" && out != "FAIL" {
		t.Logf("package output:\n%s", out)
	}
	switch {
	case !pr.Finished && len(pr.Tests) == 0:
		t.Errorf("no result: the guest never ran or finished %s; console tail:\n%s", pr.Package.Name, tailLines(rep.Console, 40))
	case !pr.Finished:
		t.Errorf("the test binary did not finish (VM timeout or crash); console tail:\n%s", tailLines(rep.Console, 40))
	case pr.Exit != 0 && countResults(pr.Tests)[Fail] == 0:
		// A panic, -test.timeout or a failing TestMain: no test says so.
		t.Errorf("the test binary exited with status %d", pr.Exit)
	}
}

func reportTest(t *testing.T, tr *TestResult) {
	if out := strings.TrimRight(tr.Output, "\n"); out != "" {
		t.Log("guest output:\n" + out)
	}
	for _, c := range tr.Children {
		t.Run(c.Leaf(), func(t *testing.T) { reportTest(t, c) })
	}
	switch tr.Result {
	case Pass:
		t.Logf("PASS in the guest (%.2fs)", tr.Elapsed.Seconds())
	case Fail:
		t.Errorf("FAIL in the guest (%.2fs)", tr.Elapsed.Seconds())
	case Skip:
		t.Skipf("SKIP in the guest (%.2fs)", tr.Elapsed.Seconds())
	case NoResult:
		t.Errorf("no result: the test started in the guest but never ended (crash or timeout)")
	}
}

// recordInputs stats every Go file of the module that the guest packages'
// tests depend on. go test caches a passing result keyed on the files a test
// opened or stat'ed, so without this `go test ./...` would replay an old
// TestGuest result after vfio/ or verbs/ changed.
func recordInputs(t *testing.T, h *Host, root string, pkgs []GuestPackage) {
	args := []string{"list", "-deps", "-test", "-f", "{{if .Module}}{{if .Module.Main}}{{.Dir}}{{end}}{{end}}"}
	for _, p := range pkgs {
		args = append(args, p.ImportPath)
	}
	cmd := exec.CommandContext(t.Context(), h.Go, args...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Logf("go list -deps (for the test cache): %v", err)
		return
	}
	seen := map[string]bool{}
	for _, dir := range strings.Fields(string(bytes.TrimSpace(out))) {
		if seen[dir] {
			continue
		}
		seen[dir] = true
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".go") || e.Name() == "testdata" {
				os.Stat(filepath.Join(dir, e.Name()))
			}
		}
	}
	os.Stat(h.Kernel)
	os.Stat(h.QEMU)
}
