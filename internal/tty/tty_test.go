package tty

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestProgressNotATerminal (issue 19 item 17): written to a file or pipe, progress comes as
// whole lines, with no carriage returns.
func TestProgressNotATerminal(t *testing.T) {
	var b bytes.Buffer
	p := NewProgress(&b)
	p.Update("1.0s one")
	p.Update("2.0s two")
	p.Done()
	if got := b.String(); got != "1.0s one\n2.0s two\n" {
		t.Fatalf("got %q", got)
	}
	f, err := os.CreateTemp(t.TempDir(), "log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) {
		t.Fatal("a regular file is not a terminal")
	}
	p = NewProgress(f)
	p.Update("x")
	p.Done()
	data, _ := os.ReadFile(f.Name())
	if strings.Contains(string(data), "\r") {
		t.Fatalf("carriage return in a log file: %q", data)
	}
}
