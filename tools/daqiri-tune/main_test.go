package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

const (
	igx   = "../../tune/testdata/igx"
	spark = "../../tune/testdata/spark"
	x86   = "../../tune/testdata/x86"
	cfgs  = "../../tune/testdata/configs/"
)

func runCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	rc := run(args, &out, &errb)
	return rc, out.String(), errb.String()
}

func TestCheckAllOnFixtures(t *testing.T) {
	for _, root := range []string{igx, spark, x86} {
		rc, out, errs := runCLI("check", "all", "--root", root)
		if rc != 0 || errs != "" {
			t.Errorf("%s: rc %d stderr %q", root, rc, errs)
		}
		if !strings.HasPrefix(out, "CHECK  ") || !strings.Contains(out, " OK, ") {
			t.Errorf("%s: table output:\n%s", root, out)
		}
	}
	// Flags may come first, and the default check is all.
	rc, out, _ := runCLI("--json", "--root", spark, "check")
	var doc struct {
		Findings []struct {
			Check  string `json:"check"`
			Status string `json:"status"`
		} `json:"findings"`
		Worst string `json:"worst"`
	}
	if rc != 0 || json.Unmarshal([]byte(out), &doc) != nil || len(doc.Findings) < 12 || doc.Worst != "WARN" {
		t.Errorf("json: rc %d worst %q %d findings\n%s", rc, doc.Worst, len(doc.Findings), out)
	}
}

func TestCheckConfigExitStatus(t *testing.T) {
	if rc, out, _ := runCLI("check", "config", cfgs+"igx-good.yaml", "--root", igx); rc != 0 || strings.Contains(out, "FAIL ") {
		t.Errorf("good config: rc %d\n%s", rc, out)
	}
	for _, bad := range []string{"bad-core-missing.yaml", "bad-hugepages.yaml", "bad-interface-missing.yaml", "bad-netdev-missing.yaml", "bad-mtu.yaml", "bad-gpu-ordinal.yaml"} {
		if rc, out, _ := runCLI("check", "config", cfgs+bad, "--root", igx); rc != 1 || !strings.Contains(out, "FAIL") {
			t.Errorf("%s: rc %d, want 1 with a FAIL\n%s", bad, rc, out)
		}
	}
	// A non-isolated core is a warning: exit 0 but flagged.
	if rc, out, _ := runCLI("check", "config", cfgs+"bad-core-not-isolated.yaml", "--root", igx); rc != 0 || !strings.Contains(out, "WARN") {
		t.Errorf("not isolated: rc %d\n%s", rc, out)
	}
	if rc, _, errs := runCLI("check", "config", cfgs+"missing.yaml", "--root", igx); rc != 2 || !strings.Contains(errs, "does not exist") {
		t.Errorf("missing file: rc %d %q", rc, errs)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"frobnicate"},
		{"check", "nosuch", "--root", x86},
		{"check", "config"},
		{"check", "mtu", "extra", "--root", x86},
		{"set"},
		{"set", "mtu"},
		{"check", "--bogus-flag"},
	} {
		if rc, _, errs := runCLI(args...); rc != 2 || errs == "" {
			t.Errorf("%q: rc %d stderr %q, want 2 with a message", args, rc, errs)
		}
	}
	if rc, out, _ := runCLI("help"); rc != 0 || !strings.Contains(out, "set mrrs") {
		t.Errorf("help: rc %d\n%s", rc, out)
	}
}

// set mrrs on a non-NVIDIA NIC is refused whoever runs the test: as non-root for the uid,
// as root for the vendor. Either way nothing is written and the exit status is 2.
func TestSetMRRSRefusal(t *testing.T) {
	rc, out, errs := runCLI("set", "mrrs", "eno1", "--root", x86)
	if rc != 2 || out != "" || !(strings.Contains(errs, "must run as root") || strings.Contains(errs, "not an NVIDIA NIC")) {
		t.Errorf("rc %d stdout %q stderr %q", rc, out, errs)
	}
}
