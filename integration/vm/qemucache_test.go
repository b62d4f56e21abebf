package vm

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The build script and CachedQEMU must agree on the cache key, or the harness
// looks for a build the script never makes.
func TestBuildScriptVersion(t *testing.T) {
	b, err := os.ReadFile("scripts/build-qemu.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^VERSION=(\S+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("scripts/build-qemu.sh has no VERSION= line")
	}
	v := string(m[1])
	if _, key, _ := strings.Cut(v, ":"); key != QEMUCacheVersion {
		t.Errorf("build-qemu.sh builds %s (cache key %q), CachedQEMU looks for %q", v, key, QEMUCacheVersion)
	}
}

func TestCachedQEMU(t *testing.T) {
	root := t.TempDir()
	t.Setenv(EnvQEMUCache, root)
	p, err := CachedQEMU()
	if err == nil {
		t.Fatalf("empty cache: got %s, want an error", p)
	}
	want := filepath.Join(root, QEMUCacheVersion, "bin", "qemu-system-x86_64")
	if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "make qemu") {
		t.Errorf("error %q should name %s and `make qemu`", err, want)
	}
	// A file that is not executable is no build either.
	if err := os.MkdirAll(filepath.Dir(want), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(want, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if p, err := CachedQEMU(); err == nil {
		t.Errorf("non-executable file: got %s, want an error", p)
	}
	if err := os.Chmod(want, 0o755); err != nil {
		t.Fatal(err)
	}
	if p, err := CachedQEMU(); err != nil || p != want {
		t.Errorf("CachedQEMU() = %q, %v; want %s", p, err, want)
	}
}

func TestQEMUCommand(t *testing.T) {
	h := &Host{QEMU: "/usr/bin/qemu-system-x86_64", Kernel: "/boot/vmlinuz-x"}
	o := Options{ModuleRoot: "/src", WorkDir: "/w,1"}
	o.defaults()
	q, args := qemuCommand(h, o, "/w/initrd", "/w/console.log")
	if q != h.QEMU {
		t.Errorf("qemu %s, want the host's %s", q, h.QEMU)
	}
	joined := strings.Join(args, " ")
	for _, bad := range []string{"memfd", "vfio-user", "memory-backend"} {
		if strings.Contains(joined, bad) {
			t.Errorf("without VFIOUser the command has %q: %s", bad, joined)
		}
	}
	if !strings.Contains(joined, "-machine q35,kernel-irqchip=split -device intel-iommu") || !strings.Contains(joined, "path=/w,,1,") {
		t.Errorf("machine, IOMMU or escaped work path missing: %s", joined)
	}

	o.QEMU = "/cache/qemu"
	o.VFIOUser = []string{"/tmp/a.sock", `/tmp/b "c".sock`}
	q, args = qemuCommand(h, o, "/w/initrd", "/w/console.log")
	if q != "/cache/qemu" {
		t.Errorf("qemu %s, want the override", q)
	}
	joined = strings.Join(args, " ")
	for _, want := range []string{
		"-machine q35,kernel-irqchip=split,memory-backend=mem ",
		"-object memory-backend-memfd,id=mem,size=1024M,share=on",
		`-device pcie-root-port,id=vfio_user_port0,chassis=1 -device {"bus":"vfio_user_port0","driver":"vfio-user-pci","socket":{"path":"/tmp/a.sock","type":"unix"},"x-msg-timeout":30000}`,
		`-device pcie-root-port,id=vfio_user_port1,chassis=2 -device {"bus":"vfio_user_port1",`,
		`"path":"/tmp/b \"c\".sock"`,
		"-device intel-iommu,intremap=on,caching-mode=on",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("command lacks %q: %s", want, joined)
		}
	}
}
