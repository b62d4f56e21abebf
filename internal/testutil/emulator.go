package testutil

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// EmulatorEnv names the user-mode emulator that runs the test binaries: make test-arm64 sets
// it to qemu-aarch64-static when it runs the arm64 tests on an x86 host. qemu-user passes
// most of the kernel's interface through but not all of it (no bpf(), no mbind, no
// MAP_HUGETLB, some socket options), runs tens of times slower, and keeps the host's memory
// order, so what only a weaker order breaks cannot show there.
const EmulatorEnv = "DAQIRI_EMULATOR"

// Emulator is the emulator the tests run under ($DAQIRI_EMULATOR), "" when they run natively.
func Emulator() string { return os.Getenv(EmulatorEnv) }

// Lacks reports that a probe of feature failed with err, so the test cannot run. Under an
// emulator it skips, also under CI, since the same CI run runs the test natively: the
// message names the emulator, the feature and the probe's error, and make test lists it.
// Natively it is Missing: the kernel or machine lacks the feature.
func Lacks(t testing.TB, feature string, err error) {
	t.Helper()
	if e := Emulator(); e != "" {
		t.Skipf("%s lacks %s: %v (the native run covers this test)", e, feature, err)
	}
	Missing(t, "this kernel lacks %s: %v", feature, err)
}

// ProbeSyscall calls system call nr with arguments every kernel refuses (a first argument of
// all ones: an invalid command for bpf, an unaligned address for mbind) and returns ENOSYS
// when it is not implemented (by the kernel or the emulator), nil when it is.
func ProbeSyscall(nr uintptr) error {
	_, _, e := syscall.Syscall6(nr, ^uintptr(0), 0, 0, 0, 0, 0)
	if errors.Is(e, syscall.ENOSYS) {
		return e
	}
	return nil
}

// Rounds is how many rounds a stress test runs: native natively, emulated under an emulator,
// where a round costs tens of times more on a shared host and the order tested is the host's.
func Rounds(native, emulated int) int {
	if Emulator() != "" {
		return emulated
	}
	return native
}

// RequireBPF needs root (why says for what) and the bpf() system call, which qemu-user does
// not implement.
func RequireBPF(t testing.TB, why string) {
	t.Helper()
	RequireRoot(t, why)
	if sysBPF == 0 {
		return
	}
	if err := ProbeSyscall(sysBPF); err != nil {
		Lacks(t, "the bpf() system call", err)
	}
}

// RequireUDPSocketOption needs the SOL_SOCKET option opt (name: its name, such as
// "SO_RXQ_OVFL") on a UDP socket; qemu-user refuses the options it does not translate with
// ENOPROTOOPT.
func RequireUDPSocketOption(t testing.TB, name string, opt int) {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("UDP socket for probing %s: %v", name, err)
	}
	defer syscall.Close(fd)
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, opt, 1); err != nil {
		Lacks(t, "the "+name+" socket option", err)
	}
}

// probeHugeMap maps and unmaps one default-size hugepage: qemu-user refuses MAP_HUGETLB with
// EINVAL. Other errors (ENOMEM: none free) are not the probe's business.
func probeHugeMap() error {
	mi, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return nil
	}
	var kb int
	for _, l := range strings.Split(string(mi), "\n") {
		if v, ok := strings.CutPrefix(l, "Hugepagesize:"); ok {
			kb, _ = strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
		}
	}
	if kb <= 0 {
		return nil
	}
	b, err := syscall.Mmap(-1, 0, kb<<10, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS|syscall.MAP_HUGETLB)
	if errors.Is(err, syscall.EINVAL) {
		return err
	}
	if err == nil {
		syscall.Munmap(b)
	}
	return nil
}
