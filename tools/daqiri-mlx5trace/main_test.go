package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/daqiri-go/daqiri/mlx5/channel/trace"
	"github.com/daqiri-go/daqiri/mlx5/model"
	"github.com/daqiri-go/daqiri/mlx5/model/modelch"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// modelTrace writes the trace of a small session on two model ports (PD, transport
// domain, one destroyed, a refused command, close) through DAQIRI_MLX5_TRACE.
func modelTrace(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "run.trace")
	t.Setenv(trace.EnvVar, path)
	for _, name := range []string{"model:0", "model:1"} {
		mc, err := modelch.Open(model.New(model.Config{}), name)
		if err != nil {
			t.Fatal(err)
		}
		c, err := trace.WrapEnv(mc)
		if err != nil {
			t.Fatal(err)
		}
		in, out := make([]byte, 16), make([]byte, 16)
		prm.CmdIn.Opcode.Set(in, uint64(prm.CmdOpAllocPD))
		if _, err := c.Create(in, out); err != nil {
			t.Fatal(err)
		}
		prm.CmdIn.Opcode.Set(in, uint64(prm.CmdOpAllocTransportDomain))
		td, err := c.Create(in, out)
		if err != nil {
			t.Fatal(err)
		}
		if err := td.Destroy(); err != nil {
			t.Fatal(err)
		}
		prm.CmdIn.Opcode.Set(in, 0x7fff) // unknown to the device
		if err := c.Exec(in, out); err == nil {
			t.Fatal("an unknown opcode was accepted")
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func runTool(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	rc := run(args, strings.NewReader(""), &out, &errb)
	return rc, out.String(), errb.String()
}

func TestCheckObjectsAndPrint(t *testing.T) {
	path := modelTrace(t)
	rc, out, errs := runTool("-check", path)
	if rc != 0 || !strings.Contains(out, "10 records valid: 2 channels, 6 commands, 4 objects created, 2 destroyed, 2 open at close, 2 calls failed") {
		t.Fatalf("-check: rc %d\n%s%s", rc, out, errs)
	}
	rc, out, _ = runTool("-objects", path)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if rc != 0 || len(lines) != 8 ||
		!strings.Contains(lines[0], "create  ALLOC_PD") || !strings.Contains(lines[1], "create  ALLOC_TRANSPORT_DOMAIN") ||
		!strings.Contains(lines[2], "destroy DEALLOC_TRANSPORT_DOMAIN") || !strings.Contains(lines[3], "open at close: ALLOC_PD") {
		t.Fatalf("-objects: rc %d\n%s", rc, out)
	}
	rc, out, _ = runTool("-hex", path)
	if rc != 0 || !strings.Contains(out, "ALLOC_PD") || !strings.Contains(out, "    in  0000: 08000000") || !strings.Contains(out, "BAD_OP_ERR") {
		t.Fatalf("-hex: rc %d\n%s", rc, out)
	}
}

func TestBadTraceAndUsage(t *testing.T) {
	path := modelTrace(t)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.trace")
	lines := strings.Split(string(b), "\n")
	lines[1] = strings.Replace(lines[1], "status=OK", "status=BAD_PARAM_ERR", 1)
	if err := os.WriteFile(bad, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	if rc, _, errs := runTool("-check", bad); rc != 1 || !strings.Contains(errs, "line 2") {
		t.Errorf("damaged trace: rc %d, %q", rc, errs)
	}
	if rc, _, errs := runTool(filepath.Join(t.TempDir(), "missing")); rc != 1 || !strings.Contains(errs, "no such file") {
		t.Errorf("missing file: rc %d, %q", rc, errs)
	}
	if rc, _, _ := runTool("-check", "-hex", path); rc != 2 {
		t.Errorf("-check -hex: rc %d, want 2", rc)
	}
	if rc, _, _ := runTool("-nope"); rc != 2 {
		t.Errorf("unknown flag: rc %d, want 2", rc)
	}
	var out, errb bytes.Buffer
	if rc := run(nil, bytes.NewReader(b), &out, &errb); rc != 0 || !strings.Contains(out.String(), "ALLOC_PD") {
		t.Errorf("standard input: rc %d %s", rc, errb.String())
	}
}
