// Package testutil holds the helpers the module's tests share: requirements (root, network
// namespaces, hugepages, tools) that skip a test where they are missing and fail it under
// CI, and leak checks run at cleanup.
//
// A green CI run must mean the privileged tests ran. So under CI (the environment variable
// CI set to "true" or "1", as .ci/run and most CI systems set it) a missing requirement is a
// test failure naming what is missing, never a skip. GPU tests are the exception: CI has no
// GPU, so they skip everywhere (package testutil/gputest).
//
// It imports only the standard library, so the tests of every package, substrate included,
// can use it; helpers that need the library's own packages are in subpackages (regiontest
// for memory regions, gputest for a GPU).
package testutil

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// CIEnv is the environment variable that marks a CI run.
const CIEnv = "CI"

// CI reports whether the tests run under CI (CI=true or CI=1).
func CI() bool {
	v := strings.ToLower(os.Getenv(CIEnv))
	return v == "true" || v == "1"
}

// Missing reports a requirement the test cannot do without: it skips the test with the
// message, or under CI fails it, since a CI run must not pass without running the test.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if CI() {
		t.Fatalf("%s (%s=%s: a test that needs this must run in CI, not skip; install or enable what is missing)", msg, CIEnv, os.Getenv(CIEnv))
	}
	t.Skip(msg)
}

// RequireRoot needs an effective user id of 0; why says what root is for (for example
// "CAP_BPF and CAP_NET_ADMIN to load XDP programs").
func RequireRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		Missing(t, "needs root (%s)", why)
	}
}

// RequireNetns needs root and a kernel with network namespaces, to create namespaces and
// veth pairs.
func RequireNetns(t testing.TB) {
	t.Helper()
	RequireRoot(t, "CAP_NET_ADMIN to create network namespaces and veth pairs")
	if _, err := os.Stat("/proc/self/ns/net"); err != nil {
		Missing(t, "kernel without network namespaces: %v", err)
	}
}

// RequireTool finds a program on PATH; hint says how to install it (for example "Debian:
// apt-get install tshark; CI installs it from .ci/apt.d/capture.txt").
func RequireTool(t testing.TB, name, hint string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Missing(t, "%s is not installed (%s)", name, hint)
	}
	return p
}

// NrHugepages is the kernel's knob for the number of reserved default-size hugepages.
const NrHugepages = "/proc/sys/vm/nr_hugepages"

// ReserveHugepages raises the reservation of default-size hugepages by n (root) and restores
// the previous value at cleanup. The kernel may grant fewer than asked (fragmented memory):
// callers check what is free (hugepage.ReadInfo) and call Missing when it is not enough.
func ReserveHugepages(t testing.TB, n int) {
	t.Helper()
	old, err := os.ReadFile(NrHugepages)
	if err != nil {
		Missing(t, "no %s: kernel without hugepages (%v)", NrHugepages, err)
	}
	RequireRoot(t, "to reserve hugepages through "+NrHugepages)
	cur, err := strconv.Atoi(strings.TrimSpace(string(old)))
	if err != nil {
		t.Fatalf("%s holds %q", NrHugepages, old)
	}
	t.Cleanup(func() {
		if err := os.WriteFile(NrHugepages, old, 0o644); err != nil {
			t.Errorf("restoring %s to %s: %v", NrHugepages, strings.TrimSpace(string(old)), err)
		}
	})
	if err := os.WriteFile(NrHugepages, []byte(strconv.Itoa(cur+n)), 0o644); err != nil {
		Missing(t, "cannot reserve %d more hugepages: %v", n, err)
	}
	if err := probeHugeMap(); err != nil {
		Lacks(t, "MAP_HUGETLB mappings", err)
	}
}

// NoGoroutineLeak fails the test if goroutines started during it are still running once it
// is done (polling for up to 3 s, since exiting goroutines take a moment to go away). It
// compares goroutine ids, not counts: a count would let a leak hide behind goroutines of the
// process that end meanwhile. Call it first, so its cleanup runs after the test's others.
func NoGoroutineLeak(t testing.TB) {
	t.Helper()
	before := goroutines()
	t.Cleanup(func() {
		var leaked []string
		for i := 0; i < 300; i++ {
			leaked = leaked[:0]
			for id, stack := range goroutines() {
				if _, old := before[id]; !old {
					leaked = append(leaked, stack)
				}
			}
			if len(leaked) == 0 {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		sort.Strings(leaked)
		t.Errorf("goroutine leak: %d goroutines started during the test still run\n%s", len(leaked), strings.Join(leaked, "\n\n"))
	})
}

// goroutines returns every goroutine's stack by goroutine id.
func goroutines() map[uint64]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[uint64]string{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		var id uint64
		if _, err := fmt.Sscanf(g, "goroutine %d ", &id); err == nil {
			out[id] = g
		}
	}
	return out
}

// CountsUnchanged snapshots counts (kernel objects, open files, ...) now and checks at
// cleanup that those named in keys (all of the first snapshot's when keys is empty) are
// back to their values. Call it first, so its cleanup runs after the test's others.
func CountsUnchanged(t testing.TB, what string, snapshot func(testing.TB) map[string]uint64, keys ...string) {
	t.Helper()
	before := snapshot(t)
	if len(keys) == 0 {
		for k := range before {
			keys = append(keys, k)
		}
	}
	t.Cleanup(func() {
		after := snapshot(t)
		for _, k := range keys {
			if after[k] != before[k] {
				t.Errorf("%s %s count %d after the test, %d before", what, k, after[k], before[k])
			}
		}
	})
}

// SyncBuffer is a bytes.Buffer that a test reads while another goroutine (a tool's output,
// a logger) writes to it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// WriteString appends str.
func (s *SyncBuffer) WriteString(str string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.WriteString(str)
}

// String is everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// CloseOK closes c and reports an error from Close as a test error naming c's type.
func CloseOK(t testing.TB, c interface{ Close() error }) {
	t.Helper()
	if err := c.Close(); err != nil {
		t.Errorf("%T.Close: %v", c, err)
	}
}

// RandBytes is n random bytes.
func RandBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rand.Uint32())
	}
	return b
}

// FreePort is a loopback port (network "udp" or "tcp") nobody listens on at the moment of
// the call.
func FreePort(t testing.TB, network string) int {
	t.Helper()
	if network == "udp" {
		c, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.LocalAddr().(*net.UDPAddr).Port
	}
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// RandPort is a random port in 20000..39999, for listeners in a VM or namespace where no
// other program takes ports.
func RandPort() int { return 20000 + rand.IntN(20000) }

// FirstDiff is the index of the first byte where a and b differ (the shorter length when one
// is a prefix of the other), or -1 when they are equal.
func FirstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

// FakeTB stands in for a test when testing a helper: it records a skip or failure and, like
// the real ones, Skip and Fatal end the goroutine that called them. Use it through RunFake.
type FakeTB struct {
	testing.TB
	SkipCalled, FailCalled bool
	Msg                    string
	cleanups               []func()
}

// Helper does nothing.
func (f *FakeTB) Helper() {}

// Cleanup records fn for RunCleanups.
func (f *FakeTB) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }

// Skip records a skip and ends the goroutine.
func (f *FakeTB) Skip(args ...any) {
	f.SkipCalled, f.Msg = true, fmt.Sprint(args...)
	runtime.Goexit()
}

// Skipf records a skip and ends the goroutine.
func (f *FakeTB) Skipf(format string, args ...any) { f.Skip(fmt.Sprintf(format, args...)) }

// Fatalf records a failure and ends the goroutine.
func (f *FakeTB) Fatalf(format string, args ...any) {
	f.FailCalled, f.Msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// Fatal records a failure and ends the goroutine.
func (f *FakeTB) Fatal(args ...any) { f.Fatalf("%s", fmt.Sprint(args...)) }

// Errorf records a failure.
func (f *FakeTB) Errorf(format string, args ...any) {
	f.FailCalled, f.Msg = true, fmt.Sprintf(format, args...)
}

// RunCleanups runs the recorded cleanups, last first.
func (f *FakeTB) RunCleanups() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

// RunFake calls fn with a FakeTB on a goroutine of its own, as the testing package runs a
// test, and returns the record once fn returned, skipped or failed.
func RunFake(fn func(testing.TB)) *FakeTB {
	f := &FakeTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	return f
}

// ModuleRoot returns the folder holding go.mod above the test's working folder: where a test
// that builds the module's tools or guest binaries runs go from.
func ModuleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			t.Fatalf("no go.mod above %s", dir)
		}
	}
}
