package vm

import (
	"bytes"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// cpioEntry is one entry read back by readCPIO.
type cpioEntry struct {
	name       string
	mode       uint32
	rmaj, rmin uint32
	data       []byte
}

// readCPIO parses a newc archive independently of the writer, checking the
// alignment rules of linux Documentation/driver-api/early-userspace/
// buffer-format.rst as it goes.
func readCPIO(t *testing.T, b []byte) []cpioEntry {
	t.Helper()
	var out []cpioEntry
	off := 0
	field := func(i int) uint32 {
		v, err := strconv.ParseUint(string(b[off+6+8*i:off+14+8*i]), 16, 32)
		if err != nil {
			t.Fatalf("offset %d field %d: %v", off, i, err)
		}
		return uint32(v)
	}
	for {
		if off%4 != 0 {
			t.Fatalf("header at offset %d is not 4-byte aligned", off)
		}
		if len(b) < off+110 || string(b[off:off+6]) != "070701" {
			t.Fatalf("no newc header at offset %d", off)
		}
		mode, size, nsz := field(1), field(6), field(11)
		e := cpioEntry{mode: mode, rmaj: field(9), rmin: field(10)}
		nameEnd := off + 110 + int(nsz)
		if b[nameEnd-1] != 0 {
			t.Fatalf("name at offset %d is not NUL-terminated", off)
		}
		e.name = string(b[off+110 : nameEnd-1])
		data := (nameEnd + 3) &^ 3
		e.data = b[data : data+int(size)]
		off = (data + int(size) + 3) &^ 3
		if e.name == "TRAILER!!!" {
			if off != len(b) {
				t.Fatalf("%d bytes after the trailer", len(b)-off)
			}
			return out
		}
		out = append(out, e)
	}
}

func TestCPIORoundTrip(t *testing.T) {
	var buf bytes.Buffer
	c := newCPIO(&buf)
	// Names of every length mod 4 and data of random sizes exercise padding.
	files := map[string][]byte{}
	for i := range 9 {
		name := "d/" + strings.Repeat("x", i+1)
		data := make([]byte, rand.IntN(300))
		for j := range data {
			data[j] = byte(rand.Uint32())
		}
		files[name] = data
		if err := c.File(name, 0o644, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.File("/bin/busybox", 0o755, []byte("elf")); err != nil {
		t.Fatal(err)
	}
	if err := c.Symlink("bin/sh", "busybox"); err != nil {
		t.Fatal(err)
	}
	if err := c.CharDev("dev/console", 0o600, 5, 1); err != nil {
		t.Fatal(err)
	}
	if err := c.Dir("d", 0o755); err != nil { // already written implicitly
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	got := map[string]cpioEntry{}
	var order []string
	for _, e := range readCPIO(t, buf.Bytes()) {
		if _, dup := got[e.name]; dup {
			t.Errorf("entry %s written twice", e.name)
		}
		got[e.name] = e
		order = append(order, e.name)
	}
	for name, data := range files {
		e, ok := got[name]
		if !ok || e.mode != modeRegular|0o644 || !bytes.Equal(e.data, data) {
			t.Errorf("%s: got mode %o, %d bytes; want %o, %d bytes", name, e.mode, len(e.data), modeRegular|0o644, len(data))
		}
	}
	if e := got["bin/sh"]; e.mode != modeSymlink|0o777 || string(e.data) != "busybox" {
		t.Errorf("bin/sh: mode %o target %q", e.mode, e.data)
	}
	if e := got["dev/console"]; e.mode != modeCharDev|0o600 || e.rmaj != 5 || e.rmin != 1 {
		t.Errorf("dev/console: mode %o rdev %d:%d", e.mode, e.rmaj, e.rmin)
	}
	// Parents come before their children, as the kernel needs.
	pos := map[string]int{}
	for i, n := range order {
		pos[n] = i
	}
	for _, n := range order {
		if i := strings.LastIndexByte(n, '/'); i > 0 {
			p, ok := pos[n[:i]]
			if !ok || got[n[:i]].mode&0o170000 != modeDir || p > pos[n] {
				t.Errorf("%s: parent folder missing or after it", n)
			}
		}
	}
	// Cross-check with GNU cpio where installed.
	if _, err := exec.LookPath("cpio"); err == nil {
		cmd := exec.Command("cpio", "-it", "--quiet")
		cmd.Stdin = bytes.NewReader(buf.Bytes())
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("cpio -it: %v: %s", err, out)
		}
		if n := len(strings.Fields(string(out))); n != len(order) {
			t.Errorf("cpio -it lists %d entries, want %d:\n%s", n, len(order), out)
		}
	}
}

func TestCPIOBadNames(t *testing.T) {
	c := newCPIO(&bytes.Buffer{})
	for _, n := range []string{"", "/", "a\x00b"} {
		if err := c.File(n, 0o644, nil); err == nil {
			t.Errorf("File(%q) accepted", n)
		}
	}
	if err := c.Symlink("x", ""); err == nil {
		t.Error("Symlink with an empty target accepted")
	}
	// Paths are cleaned, so ../ cannot escape the archive root.
	var buf bytes.Buffer
	c = newCPIO(&buf)
	if err := c.File("../../etc/x", 0o644, []byte("y")); err != nil {
		t.Fatal(err)
	}
	c.Close()
	for _, e := range readCPIO(t, buf.Bytes()) {
		if strings.Contains(e.name, "..") {
			t.Errorf("entry %q escapes the root", e.name)
		}
	}
}
