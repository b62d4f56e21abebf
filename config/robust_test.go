package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/config"
)

// TestLoadFileRefusesNonRegular (issue 19 item 8): a device, a FIFO and a directory are
// refused at once with a message naming what they are; nothing is read from them and
// nothing waits on them.
func TestLoadFileRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "cfg.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	for _, c := range []struct{ path, want string }{
		{"/dev/zero", "not a regular file (a character device)"},
		{fifo, "not a regular file (a FIFO)"},
		{dir, "not a regular file (a directory)"},
	} {
		done := make(chan error, 2)
		go func() {
			_, err := config.LoadFile(c.path)
			done <- err
		}()
		go func() {
			_, err := config.Load(c.path)
			done <- err
		}()
		for range 2 {
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.path) {
					t.Errorf("%s: got %v, want %q", c.path, err, c.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: LoadFile still running after 10 s", c.path)
			}
		}
	}
}

// TestLoadFileSizeCap (issue 19 item 8): a file over MaxConfigBytes is refused with its size
// and the limit; in-memory input over the limit too.
func TestLoadFileSizeCap(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.yaml")
	data := []byte("version: 1\n# " + strings.Repeat("x", config.MaxConfigBytes) + "\n")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := config.LoadFile(p)
	if err == nil || !strings.Contains(err.Error(), "at most 4194304") {
		t.Fatalf("got %v", err)
	}
	if _, err := config.Parse(data, "mem"); err == nil || !strings.Contains(err.Error(), "at most 4194304") {
		t.Fatalf("Parse: got %v", err)
	}
}

// TestBinaryAndTabInput (issue 19 item 13): non-UTF-8 bytes, control characters and tab
// indentation are reported in plain words with their line.
func TestBinaryAndTabInput(t *testing.T) {
	for _, c := range []struct {
		name, doc string
		line      int
		want      string
	}{
		{"latin-1", "version: 1\nstream_type: raw\nname: caf\xe9\n", 3, "byte 0xe9 is not UTF-8 text"},
		{"binary", "\x7fELF\x02\x01\x01\x00\x00\x00", 1, "control character 0x7f"},
		{"nul", "version: 1\n\x00\x00\n", 2, "control character 0x00"},
		{"tab indent", "version: 1\nstream_type: raw\ninterfaces:\n- name: a\n\taddress: eth0\n", 5, "indentation uses a tab character"},
		{"tab indent under map", "version: 1\nstream_type: raw\ninterfaces:\n  - name: a\n  \t  address: eth0\n", 5, "indentation uses a tab character"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := config.Parse([]byte(c.doc), "b.yaml")
			es := config.AsErrors(err)
			if len(es) != 1 {
				t.Fatalf("want one error, got %v", err)
			}
			if e := es[0]; e.Line != c.line || !strings.Contains(e.Msg, c.want) || e.File != "b.yaml" {
				t.Fatalf("got %v, want line %d %q", e, c.line, c.want)
			}
		})
	}
}
