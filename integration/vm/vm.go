package vm

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

//go:embed scripts/init.sh
var initScript []byte

//go:embed scripts/guest.sh
var guestScript []byte

// DefaultPackages are the package patterns (relative to the module root)
// whose tests run in the guest. Patterns that match nothing yet (a package
// still to be written) are left out silently; add new ones here.
var DefaultPackages = []string{"./integration/vm/internal/selftest", "./vfio/...", "./verbs/...", "./rdmacm/...", "./roce/...", "./mlx5/channel/devx"}

// GuestModules are loaded (modprobe, with their dependencies) in the guest
// before any test runs: VFIO for the edu device, Soft-RoCE and the rdma_cm
// user interface for verbs, dummy for the netdev under rxe0. crc32_generic:
// rdma_rxe needs the crc32 hash when a device is created
// (shared/spec/VM-HARNESS.md).
var GuestModules = []string{
	"vfio", "vfio_iommu_type1", "vfio-pci",
	"crc32_generic", "rdma_rxe", "ib_uverbs", "rdma_ucm", "dummy",
}

// GuestWork is where the guest sees Options.WorkDir: a file the host puts at
// WorkDir/bin/x is /tmp/daqiri-vm/bin/x to the guest tests.
const GuestWork = "/tmp/daqiri-vm"

// bootModules are insmod'ed from the initramfs, before the host root is
// mounted: just what virtio-9p needs.
var bootModules = []string{"virtio_pci", "9pnet_virtio", "9p"}

// Options configure one VM run. Zero values mean the defaults.
type Options struct {
	ModuleRoot  string        // module root (the folder of go.mod); required
	WorkDir     string        // empty folder for binaries, initramfs and results; required
	Packages    []string      // package patterns; DefaultPackages if nil
	Timeout     time.Duration // whole VM run, boot to power-off; default 360 s
	TestTimeout time.Duration // -test.timeout of each guest binary; default 200 s
	Run         string        // -test.run for the guest binaries; all tests if empty
	MemoryMiB   int           // guest RAM; default 1024
	CPUs        int           // guest vCPUs; default 1
	HugePages   int           // 2 MiB pages reserved in the guest; default 32
	// QEMU is the qemu-system-x86_64 to boot with instead of the Host's; CachedQEMU
	// finds the one built with the vfio-user client.
	QEMU string
	// VFIOUser are the sockets of vfio-user device servers, each attached as a
	// vfio-user-pci device (QEMU 10.1 or later). With any, guest RAM is a shared
	// memfd backend, so the servers can map it and their DMA lands in guest memory.
	VFIOUser []string
	Logf     func(format string, args ...any)
}

// GuestPackage is one package whose test binary runs in the guest.
type GuestPackage struct {
	ImportPath string
	Rel        string // path relative to the module root: "vfio", "verbs/rxe"
	Dir        string // source folder; the binary runs there, like go test
	Name       string // file-name-safe form of Rel: "vfio", "verbs_rxe"
	Binary     string // built test binary on the host
}

// PackageResult is the outcome of one guest package.
type PackageResult struct {
	Package  GuestPackage
	Finished bool // the guest recorded the binary's exit
	Exit     int
	Elapsed  time.Duration // guest time the binary ran
	Result   Result        // package result reported by the test binary
	Tests    []*TestResult
	Output   string // package-level output (panics, FAIL lines, stray prints)
	Err      error  // building the binary, or reading its results, failed
	// BuildFailed: the test binary did not build; Err says why.
	BuildFailed bool
}

// Report is the outcome of one VM run.
type Report struct {
	Packages  []*PackageResult
	Build     time.Duration // building the guest test binaries
	Boot      time.Duration // qemu start → guest script running (host clock)
	Setup     time.Duration // guest script start → setup done (guest clock)
	Wall      time.Duration // qemu start → qemu exit (host clock)
	Done      bool          // the guest script ran to its end
	SetupLog  string
	SetupErrs string // setup steps that failed, as the guest reported them
	Console   []byte // serial console
}

func (o *Options) defaults() {
	if o.Packages == nil {
		o.Packages = DefaultPackages
	}
	// The bounds catch a hung guest, not a slow one: the one-CPU TCG guest's run of every
	// package took 130–155 s on a 2-core host (2026-11-28), its roce binary alone ~90 s.
	if o.Timeout <= 0 {
		o.Timeout = 360 * time.Second
	}
	if o.TestTimeout <= 0 {
		o.TestTimeout = 200 * time.Second
	}
	if o.MemoryMiB <= 0 {
		o.MemoryMiB = 1024
	}
	if o.CPUs <= 0 {
		o.CPUs = 1
	}
	if o.HugePages <= 0 {
		o.HugePages = 32
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
}

// ListPackages expands the patterns into the packages that exist and have
// test files. Patterns whose folder does not exist are skipped.
func ListPackages(ctx context.Context, h *Host, moduleRoot string, patterns []string) ([]GuestPackage, error) {
	var args []string
	for _, p := range patterns {
		dir := strings.TrimSuffix(strings.TrimSuffix(p, "..."), "/")
		if st, err := os.Stat(filepath.Join(moduleRoot, dir)); err != nil || !st.IsDir() {
			continue
		}
		args = append(args, p)
	}
	if len(args) == 0 {
		return nil, nil
	}
	cmd := exec.CommandContext(ctx, h.Go, append([]string{"list", "-e", "-json=ImportPath,Dir,TestGoFiles,XTestGoFiles,Error"}, args...)...)
	cmd.Dir = moduleRoot
	cmd.Env = buildEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %v: %s", strings.Join(args, " "), err, stderr.Bytes())
	}
	var pkgs []GuestPackage
	seen := map[string]bool{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			ImportPath, Dir           string
			TestGoFiles, XTestGoFiles []string
			Error                     *struct{ Err string }
		}
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		if p.Error != nil && p.Dir == "" {
			continue
		}
		if len(p.TestGoFiles)+len(p.XTestGoFiles) == 0 {
			continue
		}
		rel, err := filepath.Rel(moduleRoot, p.Dir)
		if err != nil || strings.HasPrefix(rel, "..") {
			return nil, fmt.Errorf("package %s lies outside the module root %s", p.ImportPath, moduleRoot)
		}
		if strings.ContainsAny(p.Dir, " \t\n'\"\\") {
			// tests.list is read by the guest's shell, field by field.
			return nil, fmt.Errorf("package folder %q has white space or quotes; the guest cannot run it", p.Dir)
		}
		name := strings.ReplaceAll(filepath.ToSlash(rel), "/", "_")
		if seen[name] {
			continue
		}
		seen[name] = true
		pkgs = append(pkgs, GuestPackage{ImportPath: p.ImportPath, Rel: filepath.ToSlash(rel), Dir: p.Dir, Name: name})
	}
	return pkgs, nil
}

// buildEnv is the environment for go commands: static binaries for the
// x86-64 guest.
func buildEnv() []string {
	return append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
}

// BuildTests builds a static test binary for each package into binDir, two
// at a time (the machine has few cores and go parallelises each build). It
// returns one error per package (nil where the build succeeded).
func BuildTests(ctx context.Context, h *Host, moduleRoot, binDir string, pkgs []GuestPackage) []error {
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		errs := make([]error, len(pkgs))
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	errs := make([]error, len(pkgs))
	sem := make(chan struct{}, 2)
	var wg sync.WaitGroup
	for i := range pkgs {
		pkgs[i].Binary = filepath.Join(binDir, pkgs[i].Name+".test")
		wg.Add(1)
		go func(p *GuestPackage, errp *error) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			cmd := exec.CommandContext(ctx, h.Go, "test", "-c", "-o", p.Binary, p.ImportPath)
			cmd.Dir = moduleRoot
			cmd.Env = buildEnv()
			if out, err := cmd.CombinedOutput(); err != nil {
				*errp = fmt.Errorf("go test -c %s: %v\n%s", p.ImportPath, err, out)
			}
		}(&pkgs[i], &errs[i])
	}
	wg.Wait()
	return errs
}

// BuildInitramfs writes an uncompressed initramfs: busybox with the applets
// init.sh uses, the virtio-9p modules, the module load order and /init.
func BuildInitramfs(h *Host, path string) error {
	mt, err := loadModuleTree(h.ModulesDir)
	if err != nil {
		return err
	}
	order, err := mt.loadOrder(bootModules...)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	c := newCPIO(f)
	for _, d := range []string{"dev", "proc", "sys", "host", "bin"} {
		c.Dir(d, 0o755)
	}
	if err := c.CharDev("dev/console", 0o600, 5, 1); err != nil {
		return err
	}
	bb, err := os.ReadFile(h.Busybox)
	if err != nil {
		return err
	}
	c.File("bin/busybox", 0o755, bb)
	for _, a := range []string{"sh", "mount", "mkdir", "insmod", "chroot", "poweroff", "sync", "sleep", "cat", "cut", "echo"} {
		c.Symlink("bin/"+a, "busybox")
	}
	var list []string
	for _, m := range order {
		if strings.HasSuffix(m, ".xz") || strings.HasSuffix(m, ".zst") || strings.HasSuffix(m, ".gz") {
			return fmt.Errorf("module %s is compressed; the initramfs's busybox insmod loads only plain .ko files", m)
		}
		b, err := os.ReadFile(filepath.Join(h.ModulesDir, m))
		if err != nil {
			return err
		}
		name := "modules/" + filepath.Base(m)
		c.File(name, 0o644, b)
		list = append(list, name)
	}
	c.File("modules.list", 0o644, []byte(strings.Join(list, "\n")+"\n"))
	c.File("init", 0o755, initScript)
	if err := c.Close(); err != nil {
		return fmt.Errorf("write initramfs %s: %w", path, err)
	}
	return f.Close()
}

// qemuOptEscape escapes a value inside a qemu -opt list, where ',' separates
// options and ",," stands for a literal comma.
func qemuOptEscape(s string) string { return strings.ReplaceAll(s, ",", ",,") }

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Run builds the guest test binaries, boots the VM, runs them and collects
// the results. It returns an error only when no VM result can be had (no
// packages, build failure, qemu failing to start); a guest that crashes or
// times out yields a Report with Done false and packages not Finished.
func Run(ctx context.Context, h *Host, o Options) (*Report, error) {
	o.defaults()
	if o.ModuleRoot == "" || o.WorkDir == "" {
		return nil, errors.New("vm.Run: ModuleRoot and WorkDir are required")
	}
	rep := &Report{}
	pkgs, err := ListPackages(ctx, h, o.ModuleRoot, o.Packages)
	if err != nil {
		return nil, err
	}
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("no package with tests matches %v", o.Packages)
	}
	t0 := time.Now()
	// A package that does not build fails on its own; the others still run.
	buildErrs := BuildTests(ctx, h, o.ModuleRoot, filepath.Join(o.WorkDir, "bin"), pkgs)
	rep.Build = time.Since(t0)
	var built []GuestPackage
	for i, p := range pkgs {
		if buildErrs[i] != nil {
			rep.Packages = append(rep.Packages, &PackageResult{Package: p, Err: buildErrs[i], BuildFailed: true})
			continue
		}
		built = append(built, p)
	}
	o.Logf("built %d of %d guest test binaries in %.1fs", len(built), len(pkgs), rep.Build.Seconds())
	if len(built) == 0 {
		return rep, nil
	}
	pkgs = built

	var list strings.Builder
	for _, p := range pkgs {
		fmt.Fprintf(&list, "%s %s/bin/%s %s\n", p.Name, GuestWork, filepath.Base(p.Binary), p.Dir)
	}
	// CI passes through, so a guest test whose requirement is missing fails under CI as it
	// would on the host (internal/testutil).
	conf := fmt.Sprintf("MODULES=%s\nTEST_TIMEOUT=%d\nRUN=%s\nHUGEPAGES=%d\nCI=%s\n",
		shellQuote(strings.Join(GuestModules, " ")), int(o.TestTimeout.Seconds()), shellQuote(o.Run), o.HugePages, shellQuote(os.Getenv("CI")))
	for name, data := range map[string]string{"tests.list": list.String(), "guest.conf": conf, "guest.sh": string(guestScript)} {
		if err := os.WriteFile(filepath.Join(o.WorkDir, name), []byte(data), 0o644); err != nil {
			return nil, err
		}
	}
	outDir := filepath.Join(o.WorkDir, "out")
	if err := os.MkdirAll(outDir, 0o777); err != nil {
		return nil, err
	}
	initrd := filepath.Join(o.WorkDir, "initramfs.cpio")
	if err := BuildInitramfs(h, initrd); err != nil {
		return nil, err
	}

	if err := boot(ctx, h, o, initrd, rep); err != nil {
		return nil, err
	}
	rep.collect(h, outDir, pkgs)
	return rep, nil
}

// boot runs qemu until the guest powers off or the timeout passes.
func boot(ctx context.Context, h *Host, o Options, initrd string, rep *Report) error {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	console := filepath.Join(o.WorkDir, "console.log")
	qemu, args := qemuCommand(h, o, initrd, console)
	cmd := exec.CommandContext(ctx, qemu, args...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", qemu, err)
	}
	o.Logf("qemu started: %s %s", qemu, strings.Join(args, " "))

	// Watch for the guest script's first file to time the boot.
	bootc := make(chan time.Duration, 1)
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if _, err := os.Stat(filepath.Join(o.WorkDir, "out", "times")); err == nil {
					bootc <- time.Since(start)
					return
				}
			}
		}
	}()
	werr := cmd.Wait()
	close(stop)
	rep.Wall = time.Since(start)
	select {
	case rep.Boot = <-bootc:
	default:
	}
	rep.Console, _ = os.ReadFile(console)
	if ctx.Err() != nil {
		o.Logf("qemu killed after %.1fs: the VM run exceeded its %v timeout", rep.Wall.Seconds(), o.Timeout)
	} else if werr != nil {
		o.Logf("qemu: %v: %s", werr, bytes.TrimSpace(stderr.Bytes()))
	}
	if s := bytes.TrimSpace(stderr.Bytes()); len(s) > 0 {
		rep.Console = append(rep.Console, "\n--- qemu stderr ---\n"...)
		rep.Console = append(rep.Console, s...)
	}
	return nil
}

// qemuCommand returns the qemu binary and its arguments for one VM run.
func qemuCommand(h *Host, o Options, initrd, console string) (string, []string) {
	qemu := h.QEMU
	if o.QEMU != "" {
		qemu = o.QEMU
	}
	machine := "q35,kernel-irqchip=split"
	var extra []string
	if len(o.VFIOUser) > 0 {
		// share=on: the vfio-user client passes the backend's fd to the server
		// (QEMU docs/interop/vfio-user.rst, DMA map with a file descriptor).
		machine += ",memory-backend=mem"
		extra = append(extra, "-object", fmt.Sprintf("memory-backend-memfd,id=mem,size=%dM,share=on", o.MemoryMiB))
		// Each behind a PCIe root port of its own, as a NIC sits in a server: an
		// endpoint on the root bus has no link for the driver to read (mlx5_core
		// logs "Unknown x255 link").
		for i, s := range o.VFIOUser {
			port := fmt.Sprintf("vfio_user_port%d", i)
			extra = append(extra, "-device", fmt.Sprintf("pcie-root-port,id=%s,chassis=%d", port, i+1),
				"-device", vfioUserDevice(s, port))
		}
	}
	args := []string{
		"-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
		// TCG: KVM inside this nested setup never gets past the boot loader
		// (shared/spec/VM-HARNESS.md).
		"-accel", "tcg", "-cpu", "max",
		"-smp", strconv.Itoa(o.CPUs), "-m", strconv.Itoa(o.MemoryMiB),
		// Interrupt remapping needs the split irqchip; caching-mode lets
		// VFIO in the guest map DMA through the virtual IOMMU.
		"-machine", machine,
		"-device", "intel-iommu,intremap=on,caching-mode=on",
		"-device", "edu",
		"-kernel", h.Kernel, "-initrd", initrd,
		// daqiri_src tells init.sh where the module lives, so that it stays visible when
		// the scratch tmpfs mounts cover its parent (a clone under /tmp or /root).
		"-append", "console=ttyS0 intel_iommu=on no_timer_check panic=-1 quiet daqiri_src=" + o.ModuleRoot,
		"-serial", "file:" + console,
		"-fsdev", "local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap",
		"-device", "virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot",
		"-fsdev", "local,id=work,path=" + qemuOptEscape(o.WorkDir) + ",security_model=none,multidevs=remap",
		"-device", "virtio-9p-pci,fsdev=work,mount_tag=work",
	}
	args = append(args, extra...)
	return qemu, args
}

// vfioUserDevice is the -device argument for a vfio-user server at socket, on
// the PCI bus named bus.
// The socket property is a SocketAddress, which only the JSON form of -device
// spells (QEMU docs/system/devices/vfio-user.rst). x-msg-timeout: QEMU waits 5 s
// for each reply by default; a loaded 2-core machine running the guest under
// TCG next to the server can exceed that without anything being wrong.
func vfioUserDevice(socket, bus string) string {
	b, _ := json.Marshal(map[string]any{
		"driver":        "vfio-user-pci",
		"bus":           bus,
		"socket":        map[string]string{"type": "unix", "path": socket},
		"x-msg-timeout": 30000,
	})
	return string(b)
}

// collect reads the guest's result files.
func (rep *Report) collect(h *Host, outDir string, pkgs []GuestPackage) {
	if _, err := os.Stat(filepath.Join(outDir, "done")); err == nil {
		rep.Done = true
	}
	b, _ := os.ReadFile(filepath.Join(outDir, "setup.log"))
	rep.SetupLog = string(b)
	if env, err := os.ReadFile(filepath.Join(outDir, "guest-env")); err == nil {
		for _, l := range strings.Split(string(env), "\n") {
			if v, ok := strings.CutPrefix(l, "export DAQIRI_VM_SETUP_ERRORS="); ok {
				rep.SetupErrs = strings.Trim(v, "'")
			}
		}
	}
	if times, err := os.ReadFile(filepath.Join(outDir, "times")); err == nil {
		var script, setup float64
		for _, l := range strings.Split(string(times), "\n") {
			if k, v, ok := strings.Cut(l, " "); ok {
				f, _ := strconv.ParseFloat(v, 64)
				switch k {
				case "script":
					script = f
				case "setup":
					setup = f
				}
			}
		}
		if setup > script {
			rep.Setup = time.Duration((setup - script) * float64(time.Second))
		}
	}
	for _, p := range pkgs {
		pr := &PackageResult{Package: p}
		rep.Packages = append(rep.Packages, pr)
		if rc, err := os.ReadFile(filepath.Join(outDir, p.Name+".rc")); err == nil {
			f := strings.Fields(string(rc))
			if len(f) == 3 {
				pr.Finished = true
				pr.Exit, _ = strconv.Atoi(f[0])
				a, _ := strconv.ParseFloat(f[1], 64)
				z, _ := strconv.ParseFloat(f[2], 64)
				pr.Elapsed = time.Duration((z - a) * float64(time.Second))
			}
		}
		out, err := os.Open(filepath.Join(outDir, p.Name+".out"))
		if err != nil {
			continue // never started
		}
		cmd := exec.Command(h.Go, "tool", "test2json", "-t", "-p", p.ImportPath)
		cmd.Stdin = out
		js, err := cmd.Output()
		out.Close()
		if err != nil {
			pr.Err = fmt.Errorf("go tool test2json: %w", err)
			continue
		}
		pr.Tests, pr.Output, pr.Result, pr.Err = parseEvents(bytes.NewReader(js))
	}
}
