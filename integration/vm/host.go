package vm

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
)

// Host holds the host tools the harness uses; FindHost fills it in.
type Host struct {
	QEMU          string // qemu-system-x86_64
	Kernel        string // /boot/vmlinuz-<release>
	KernelRelease string // e.g. 6.1.0-56-amd64
	ModulesDir    string // /lib/modules/<release>
	Busybox       string // a statically linked busybox, the initramfs's only program
	Go            string // the go command, to build the guest test binaries
}

// MissingError lists what the host lacks to run the VM tests; its message is
// meant for a t.Skip.
type MissingError struct {
	Missing []string
}

func (e *MissingError) Error() string {
	return "VM tests need " + strings.Join(e.Missing, "; ") +
		" (Debian: apt-get install -y --no-install-recommends " + strings.Join(AptPackages, " ") + ")"
}

// AptPackages are the Debian 12 packages that provide everything FindHost
// looks for; .ci/apt.d/vm.txt lists the same.
var AptPackages = []string{"qemu-system-x86", "linux-image-amd64", "busybox-static", "cpio", "kmod", "iproute2"}

// Environment variables that steer FindHost.
const (
	// EnvKernel names the guest kernel image; its release is taken from the
	// file name (vmlinuz-<release>) to find /lib/modules/<release>.
	EnvKernel = "DAQIRI_VM_KERNEL"
	// EnvQEMU names the qemu-system-x86_64 binary.
	EnvQEMU = "DAQIRI_VM_QEMU"
)

// FindHost looks for qemu, a Debian kernel with its modules, busybox and the
// go command. It returns a *MissingError naming everything absent.
func FindHost() (*Host, error) {
	var h Host
	var missing []string
	if runtime.GOARCH != "amd64" {
		// The guest runs the host's own binaries (dash, modprobe, rdma) from
		// the shared root file system, so they must be x86-64 too.
		missing = append(missing, "an x86-64 host (this is "+runtime.GOARCH+")")
	}
	if q := os.Getenv(EnvQEMU); q != "" {
		if isExecutable(q) {
			h.QEMU = q
		} else {
			missing = append(missing, EnvQEMU+"="+q+" (not an executable file)")
		}
	} else if h.QEMU, _ = exec.LookPath("qemu-system-x86_64"); h.QEMU == "" {
		missing = append(missing, "qemu-system-x86_64 (package qemu-system-x86)")
	}
	if err := h.findKernel(); err != nil {
		missing = append(missing, err.Error())
	}
	for _, p := range []string{"/bin/busybox", "/usr/bin/busybox"} {
		if isStaticELF(p) {
			h.Busybox = p
			break
		}
	}
	if h.Busybox == "" {
		missing = append(missing, "a statically linked /bin/busybox (package busybox-static)")
	}
	for _, tool := range []struct{ path, pkg string }{
		{"/sbin/modprobe", "kmod"}, {"/sbin/ip", "iproute2"}, {"/usr/bin/rdma", "iproute2"}, {"/bin/sh", "dash"},
	} {
		if _, err := os.Stat(tool.path); err != nil {
			// The host's root file system is the guest's: these run in the VM.
			missing = append(missing, tool.path+" (package "+tool.pkg+")")
		}
	}
	h.Go = goCommand()
	if h.Go == "" {
		missing = append(missing, "the go command (not in PATH nor $GOROOT/bin)")
	}
	if len(missing) > 0 {
		return nil, &MissingError{Missing: missing}
	}
	return &h, nil
}

// findKernel picks the guest kernel: $DAQIRI_VM_KERNEL, or else the highest
// /boot/vmlinuz-<release> that has a readable /lib/modules/<release>.
func (h *Host) findKernel() error {
	var cands []string
	if k := os.Getenv(EnvKernel); k != "" {
		cands = []string{k}
	} else {
		cands, _ = filepath.Glob("/boot/vmlinuz-*")
		sort.Sort(sort.Reverse(sort.StringSlice(cands)))
	}
	var why []string
	for _, k := range cands {
		rel := strings.TrimPrefix(filepath.Base(k), "vmlinuz-")
		mods := filepath.Join("/lib/modules", rel)
		f, err := os.Open(k)
		if err != nil {
			why = append(why, fmt.Sprintf("%s unreadable: %v", k, err))
			continue
		}
		f.Close()
		if _, err := os.Stat(filepath.Join(mods, "modules.dep")); err != nil {
			why = append(why, fmt.Sprintf("%s has no %s/modules.dep", k, mods))
			continue
		}
		h.Kernel, h.KernelRelease, h.ModulesDir = k, rel, mods
		return nil
	}
	if len(why) == 0 {
		return errors.New("a kernel /boot/vmlinuz-<release> with /lib/modules/<release> (package linux-image-amd64)")
	}
	return errors.New("a usable guest kernel (package linux-image-amd64): " + strings.Join(why, ", "))
}

// isStaticELF reports whether p is an ELF executable without a program
// interpreter, i.e. one that runs in an initramfs with no shared libraries.
func isStaticELF(p string) bool {
	f, err := elf.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return false
		}
	}
	return f.Type == elf.ET_EXEC || f.Type == elf.ET_DYN
}

func goCommand() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	if root := os.Getenv("GOROOT"); root != "" {
		if p := filepath.Join(root, "bin", "go"); isExecutable(p) {
			return p
		}
	}
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); isExecutable(p) {
		return p
	}
	return ""
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// QEMUCacheVersion is the Debian source version of the qemu that
// scripts/build-qemu.sh (make qemu) builds with the vfio-user client; it keys
// the cache folder. The script spells the same version (TestBuildScriptVersion).
const QEMUCacheVersion = "10.2.2+ds-1"

// EnvQEMUCache moves the cache of built qemus from DefaultQEMUCache.
const EnvQEMUCache = "DAQIRI_QEMU_CACHE"

// DefaultQEMUCache is where scripts/build-qemu.sh installs its builds, one
// folder per source version, outside the tree so that clones share them.
const DefaultQEMUCache = "/var/cache/daqiri/qemu"

// CachedQEMU returns the qemu-system-x86_64 that scripts/build-qemu.sh built
// and cached (it has the vfio-user client, which Debian 12's qemu 7.2 lacks).
// The error names the path looked at and the command that builds it.
func CachedQEMU() (string, error) {
	root := os.Getenv(EnvQEMUCache)
	if root == "" {
		root = DefaultQEMUCache
	}
	p := filepath.Join(root, QEMUCacheVersion, "bin", "qemu-system-x86_64")
	if !isExecutable(p) {
		return "", fmt.Errorf("qemu %s with the vfio-user client, cached at %s (build it with `make qemu`, 3 to 10 minutes on 2 cores, once)", QEMUCacheVersion, p)
	}
	return p, nil
}
