package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
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

// check schematic writes a well-formed SVG where told, or pcie_schematic.svg in the working
// directory; check all writes nothing unless --schematic-output is given.
func TestCheckSchematic(t *testing.T) {
	root, err := filepath.Abs(igx)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "igx.svg")
	rc, stdout, errs := runCLI("check", "schematic", "--root", root, "--schematic-output", out)
	if rc != 0 || errs != "" || !strings.Contains(stdout, "wrote "+out+" (9 devices)") ||
		!strings.Contains(stdout, "PIX to enP5p4s0f0np0 mlx5_0 0005:04:00.0") {
		t.Fatalf("rc %d stderr %q\n%s", rc, errs, stdout)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		XMLName xml.Name
		Texts   []string `xml:",any"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil || doc.XMLName.Local != "svg" {
		t.Fatalf("not an SVG document (%v, root %q)", err, doc.XMLName.Local)
	}
	for _, bdf := range []string{"0005:03:00.0", "0005:04:00.0", "0005:04:00.1", "0001:01:00.0"} {
		if !bytes.Contains(b, []byte(bdf)) {
			t.Errorf("SVG does not mention %s", bdf)
		}
	}

	// The --flag=value form and JSON output.
	rc, stdout, _ = runCLI("--json", "check", "schematic", "--root="+root, "--schematic-output="+out)
	var js struct {
		Findings []struct{ Check, Subject, Status, Measured string } `json:"findings"`
	}
	if rc != 0 || json.Unmarshal([]byte(stdout), &js) != nil || len(js.Findings) != 2 ||
		js.Findings[0].Check != "schematic" || js.Findings[1].Measured != "PIX to enP5p4s0f0np0 mlx5_0 0005:04:00.0" {
		t.Errorf("json: rc %d\n%s", rc, stdout)
	}

	// Default file name in the working directory for check schematic; nothing for check all.
	dir := t.TempDir()
	t.Chdir(dir)
	if rc, stdout, _ := runCLI("check", "all", "--root", root); rc != 0 || !strings.Contains(stdout, "no picture written") {
		t.Errorf("check all: rc %d\n%s", rc, stdout)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("check all left files in the working directory: %v", ents)
	}
	if rc, stdout, _ := runCLI("check", "schematic", "--root", root); rc != 0 || !strings.Contains(stdout, "wrote pcie_schematic.svg (9 devices)") {
		t.Errorf("check schematic: rc %d\n%s", rc, stdout)
	}
	if _, err := os.Stat(filepath.Join(dir, "pcie_schematic.svg")); err != nil {
		t.Error(err)
	}
	all := filepath.Join(dir, "all.svg")
	if rc, stdout, _ := runCLI("check", "all", "--root", root, "--schematic-output", all); rc != 0 || !strings.Contains(stdout, "wrote "+all) {
		t.Errorf("check all with an output: rc %d\n%s", rc, stdout)
	}

	// The flag means nothing to other commands; an unwritable file is a FAIL (exit 1).
	for _, args := range [][]string{
		{"check", "mtu", "--root", root, "--schematic-output", all},
		{"check", "config", cfgs + "igx-good.yaml", "--root", root, "--schematic-output", all},
		{"set", "mrrs", "--root", root, "--schematic-output", all},
	} {
		if rc, _, errs := runCLI(args...); rc != 2 || !strings.Contains(errs, "--schematic-output applies to") {
			t.Errorf("%q: rc %d stderr %q", args, rc, errs)
		}
	}
	if rc, stdout, _ := runCLI("check", "schematic", "--root", root, "--schematic-output", filepath.Join(dir, "no", "dir", "x.svg")); rc != 1 || !strings.Contains(stdout, "cannot write the schematic") {
		t.Errorf("unwritable output: rc %d\n%s", rc, stdout)
	}
	// A tree without sysfs: SKIP, exit 0.
	if rc, stdout, _ := runCLI("check", "schematic", "--root", dir, "--schematic-output", all); rc != 0 || !strings.Contains(stdout, "/sys/bus/pci/devices does not exist") {
		t.Errorf("no sysfs: rc %d\n%s", rc, stdout)
	}
}

// TestSchematicSymlink (issue 19 item 7): the default pcie_schematic.svg used to be written
// through a symbolic link planted in the working directory, overwriting the link's target.
// The default name is never followed; a path the user names explicitly is.
func TestSchematicSymlink(t *testing.T) {
	root, err := filepath.Abs(igx)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	victim := filepath.Join(dir, "victim.txt")
	if err := os.WriteFile(victim, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, "pcie_schematic.svg")); err != nil {
		t.Fatal(err)
	}
	rc, stdout, _ := runCLI("check", "schematic", "--root", root)
	if rc != 1 || !strings.Contains(stdout, "is a symbolic link; not writing through it") {
		t.Errorf("default name on a symlink: rc %d\n%s", rc, stdout)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep me" {
		t.Fatalf("the link's target was overwritten: %q", b)
	}
	// Named explicitly: followed.
	link := filepath.Join(dir, "named.svg")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	if rc, stdout, _ := runCLI("check", "schematic", "--root", root, "--schematic-output", link); rc != 0 {
		t.Errorf("named link: rc %d\n%s", rc, stdout)
	}
	if b, _ := os.ReadFile(victim); !bytes.Contains(b, []byte("<svg")) {
		t.Fatalf("named link not written through: %.40q", b)
	}
}
