// Command vmrun runs selected guest tests in the project's VM (package
// integration/vm) with time limits long enough for full-size runs and
// benchmarks, which `go test ./integration/vm` bounds to 90 s per test
// binary. It prints every selected guest test's output and result and exits
// non-zero when one fails.
//
//	go run ./bench/roce/vmrun -pkgs ./roce -run '^TestGuestBenchRoCE$' -test-timeout 20m
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/daqiri-go/daqiri/integration/vm"
)

func main() {
	pkgs := flag.String("pkgs", "./roce", "package patterns whose tests run in the guest (comma separated)")
	run := flag.String("run", "", "-test.run for the guest test binaries (required: full runs are selected by name)")
	testTimeout := flag.Duration("test-timeout", 20*time.Minute, "-test.timeout of each guest test binary")
	timeout := flag.Duration("timeout", 0, "the whole VM run, boot to power-off (default: test-timeout + 2m)")
	cpus := flag.Int("cpus", 1, "guest vCPUs")
	mem := flag.Int("mem", 2048, "guest memory in MiB")
	huge := flag.Int("hugepages", 64, "2 MiB hugepages reserved in the guest")
	keep := flag.Bool("keep", false, "keep the work folder (console.log, raw results)")
	flag.Parse()
	if *run == "" {
		fmt.Fprintln(os.Stderr, "vmrun: -run is required (for example '^TestGuestFullSendRecv$')")
		os.Exit(2)
	}
	if *timeout == 0 {
		*timeout = *testTimeout + 2*time.Minute
	}
	h, err := vm.FindHost()
	if err != nil {
		fmt.Fprintln(os.Stderr, "vmrun: no VM here:", err)
		os.Exit(2)
	}
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "vmrun:", err)
		os.Exit(2)
	}
	work, err := os.MkdirTemp("", "daqiri-vmrun-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "vmrun:", err)
		os.Exit(2)
	}
	if !*keep {
		defer os.RemoveAll(work)
	} else {
		fmt.Println("vmrun: work folder", work)
	}
	// The guest writes results as root over 9p with security_model=none.
	if err := os.Chmod(work, 0o777); err != nil {
		fmt.Fprintln(os.Stderr, "vmrun:", err)
		os.Exit(2)
	}
	o := vm.Options{ModuleRoot: root, WorkDir: work, Packages: strings.Split(*pkgs, ","), Run: *run,
		Timeout: *timeout, TestTimeout: *testTimeout, CPUs: *cpus, MemoryMiB: *mem, HugePages: *huge,
		Logf: func(f string, a ...any) { fmt.Printf("vmrun: "+f+"\n", a...) }}
	rep, err := vm.Run(context.Background(), h, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "vmrun:", err)
		os.Exit(1)
	}
	fmt.Printf("vmrun: boot %.1fs, setup %.1fs, qemu total %.1fs, kernel %s\n", rep.Boot.Seconds(), rep.Setup.Seconds(), rep.Wall.Seconds(), h.KernelRelease)
	failed := !rep.Done || rep.SetupErrs != ""
	if rep.SetupErrs != "" {
		fmt.Println("vmrun: guest setup failed:", rep.SetupErrs)
	}
	for _, pr := range rep.Packages {
		fmt.Printf("== %s: exit %d after %.1fs\n", pr.Package.ImportPath, pr.Exit, pr.Elapsed.Seconds())
		if !pr.Finished || pr.Exit != 0 || pr.Err != nil {
			failed = true
		}
		var show func(tr *vm.TestResult, depth int)
		show = func(tr *vm.TestResult, depth int) {
			fmt.Printf("%s--- %v %s (%.1fs)\n", strings.Repeat("  ", depth), tr.Result, tr.Leaf(), tr.Elapsed.Seconds())
			if out := strings.TrimRight(tr.Output, "\n"); out != "" {
				fmt.Println(out)
			}
			if tr.Result == vm.Fail || tr.Result == vm.NoResult {
				failed = true
			}
			for _, c := range tr.Children {
				show(c, depth+1)
			}
		}
		for _, tr := range pr.Tests {
			show(tr, 0)
		}
		if out := strings.TrimSpace(pr.Output); out != "" && out != "PASS" {
			fmt.Println(out)
		}
	}
	if !rep.Done {
		fmt.Println("vmrun: the guest did not finish; console tail:")
		lines := strings.Split(string(rep.Console), "\n")
		fmt.Println(strings.Join(lines[max(0, len(lines)-40):], "\n"))
	}
	if failed {
		os.Exit(1)
	}
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
	}
}
