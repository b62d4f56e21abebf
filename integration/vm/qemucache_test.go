package vm

import (
	"os"
	"os/exec"
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

// TestBuildScriptMirror (issue 30 item 8): build-qemu.sh takes the Debian archive from the
// machine's own apt sources (a fake apt-get answers indextargets here), skips the security
// archive, lets DAQIRI_QEMU_MIRROR override it, and says so when there is none. The cache
// holds a finished build, so a script that ignored --print-mirror would print that instead.
func TestBuildScriptMirror(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "bin")
	cache := filepath.Join(dir, "cache")
	qemu := filepath.Join(cache, QEMUCacheVersion, "bin", "qemu-system-x86_64")
	for _, f := range []struct{ path, body string }{
		// apt-get indextargets as apt answers it: with lists (Origin and Label known) or
		// without (LISTS unset: only the sources' own fields).
		{filepath.Join(fake, "apt-get"), `#!/bin/sh
[ "$1" = indextargets ] || exit 100
[ -n "$SOURCES" ] || exit 0
case "$*" in
*"Origin: Debian"*) [ -n "$LISTS" ] && echo "http://archive.invalid/debian/" ;;
*'$(RELEASE)'*) printf 'bookworm-security http://security.invalid/debian-security/\nbookworm-updates http://updates.invalid/debian/\nbookworm http://archive.invalid/debian/\n' ;;
esac
exit 0
`},
		{qemu, "#!/bin/sh\necho '\"vfio-user-pci\"'\n"},
	} {
		if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f.path, []byte(f.body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		env  []string
		want string
		ok   bool
	}{
		{"lists", []string{"SOURCES=1", "LISTS=1"}, "http://archive.invalid/debian\n", true},
		{"no lists", []string{"SOURCES=1"}, "http://archive.invalid/debian\n", true},
		{"override", []string{"SOURCES=1", "LISTS=1", "DAQIRI_QEMU_MIRROR=http://override.invalid/debian"}, "http://override.invalid/debian\n", true},
		{"no sources", nil, "name no Debian archive; set DAQIRI_QEMU_MIRROR", false},
	} {
		cmd := exec.Command("bash", "scripts/build-qemu.sh", "--print-mirror")
		cmd.Env = append([]string{"PATH=" + fake + ":" + os.Getenv("PATH"), "DAQIRI_QEMU_CACHE=" + cache}, c.env...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		got := stdout.String()
		if !c.ok {
			got = stderr.String()
		}
		if (err == nil) != c.ok || (c.ok && got != c.want) || (!c.ok && !strings.Contains(got, c.want)) {
			t.Errorf("%s: err %v, stdout %q, stderr %q; want %q", c.name, err, stdout.String(), stderr.String(), c.want)
		}
	}
}

// TestScriptsNameNoHost (issue 30 item 8): the build and CI scripts name no download host
// but the upstream source's (github.com): package archives and proxies are whatever the
// machine is configured with, never a host written into the tree.
func TestScriptsNameNoHost(t *testing.T) {
	root := filepath.Join("..", "..")
	url := regexp.MustCompile(`[a-z+]+://([A-Za-z0-9.-]+)`)
	var files []string
	for _, g := range []string{"*.sh", "*/*.sh", "*/*/*.sh", "*/*/*/*.sh", "mk/*.mk", "Makefile", ".ci/*", ".ci/*/*"} {
		m, _ := filepath.Glob(filepath.Join(root, g))
		files = append(files, m...)
	}
	if len(files) < 3 {
		t.Fatalf("found only %v: run from integration/vm", files)
	}
	for _, f := range files {
		if st, err := os.Stat(f); err != nil || !st.Mode().IsRegular() {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range url.FindAllSubmatch(b, -1) {
			switch h := string(m[1]); {
			case h == "github.com", strings.HasSuffix(h, ".invalid"), h == "localhost", h == "127.0.0.1":
			default:
				t.Errorf("%s names the host %s; take it from the machine's configuration instead", f, h)
			}
		}
	}
}
