package netns

import (
	"bufio"
	"context"
	"fmt"
	"github.com/daqiri-go/daqiri/internal/testutil"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Tshark is tshark capturing on an interface of a namespace, its decoded lines (one per
// frame, the fields the caller asked for) arriving on Lines.
type Tshark struct {
	Lines  <-chan string
	stderr *testutil.SyncBuffer
}

// StartTshark runs tshark (the path found by the caller's tool check) on iface in n with the
// capture filter and extra arguments (field selections, preferences), for at most 55 s;
// cleanup kills it and its capture child (the whole process group: dumpcap would otherwise
// outlive a kill of tshark alone and keep the namespace, and with it the veth, alive).
func StartTshark(t testing.TB, tshark string, n *NS, iface, filter string, args ...string) *Tshark {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	argv := append([]string{"netns", "exec", n.Name, tshark, "-i", iface, "-l", "-n", "-a", "duration:55", "-f", filter}, args...)
	cmd := exec.CommandContext(ctx, "ip", argv...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	ts := &Tshark{stderr: &testutil.SyncBuffer{}}
	cmd.Stderr = ts.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	lines := make(chan string, 1024)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	ts.Lines = lines
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
	})
	return ts
}

// Stderr is what tshark wrote to its standard error so far, for failure messages.
func (ts *Tshark) Stderr() string { return ts.stderr.String() }

// WaitLive sends probes with send (probe i carries the payload "probe-i") until tshark
// decodes one (at most 100 probes, 100 ms apart): tshark announces itself before its capture
// sees packets, and a counted frame sent earlier would be missed. It returns how many probes
// went out.
func (ts *Tshark) WaitLive(t testing.TB, send func(payload string)) int {
	t.Helper()
	for probes := 0; probes < 100; {
		send(fmt.Sprintf("probe-%d", probes))
		probes++
		select {
		case l, ok := <-ts.Lines:
			if !ok {
				t.Fatalf("tshark ended: %s", ts.Stderr())
			}
			if strings.Contains(l, fmt.Sprintf("%x", "probe-")) {
				return probes
			}
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatalf("tshark decoded none of 100 probes: %s", ts.Stderr())
	return 0
}
