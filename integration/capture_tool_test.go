package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/capture"
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/integration/netns"
	"github.com/daqiri-go/daqiri/internal/testutil"
)

// TestCaptureToolCtrlCInNetns builds daqiri-capture, runs it inside a namespace as the UDP
// server, sends it frames from the other namespace with the socket engine, interrupts it
// with SIGINT and checks it exits 0 with a summary and a complete pcap that tshark and
// capinfos read with exactly the packets it reports.
func TestCaptureToolCtrlCInNetns(t *testing.T) {
	p := netns.NewPair(t)
	tshark, capinfos := needTool(t, "tshark"), needTool(t, "capinfos")
	ipCmd := needTool(t, "ip")
	goCmd := testutil.RequireTool(t, "go", "the go command builds daqiri-capture")
	dir := t.TempDir()
	bin := filepath.Join(dir, "daqiri-capture")
	build := exec.Command(goCmd, "build", "-o", bin, "github.com/daqiri-go/daqiri/tools/daqiri-capture")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building daqiri-capture: %v\n%s", err, out)
	}
	server := netip.AddrPortFrom(p.AddrB, uint16(20000+rand.IntN(20000)))
	cfgPath := filepath.Join(dir, "rx.yaml")
	cfg := fmt.Sprintf(`daqiri:
  cfg:
    version: 1
    stream_type: socket
    log_level: error
    memory_regions:
    - {name: rx_mem, kind: host, affinity: 0, num_bufs: 2048, buf_size: 9216}
    interfaces:
    - name: sensor
      address: %s
      socket_config: {mode: server, local_addr: "udp://%s", recv_buffer_size: 8388608}
      rx:
        queues:
        - {name: rxq, id: 0, cpu_core: 0, batch_size: 64, timeout_us: 500, memory_regions: [rx_mem]}
`, p.AddrB, server)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	pcapPath := filepath.Join(dir, "tool.pcap")
	// ip netns exec enters the namespace and then execs the tool: the process it starts is
	// daqiri-capture itself, so the signal below reaches it.
	cmd := exec.Command(ipCmd, "netns", "exec", p.B.Name, bin, "--config", cfgPath, "--pcap", pcapPath, "--linktype", "ethernet", "--json")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	errPipe, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var mu sync.Mutex
	var stderr strings.Builder
	ready := make(chan struct{})
	exited := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(errPipe)
		var once sync.Once
		for sc.Scan() {
			mu.Lock()
			stderr.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if strings.Contains(sc.Text(), "capturing sensor") {
				once.Do(func() { close(ready) })
			}
		}
		exited <- cmd.Wait()
	}()
	logs := func() string { mu.Lock(); defer mu.Unlock(); return stderr.String() }
	select {
	case <-ready:
	case err := <-exited:
		t.Fatalf("daqiri-capture exited: %v\n%s", err, logs())
	case <-time.After(60 * time.Second):
		t.Fatalf("daqiri-capture did not start\n%s", logs())
	}

	txs := openIn(t, p.A, oneSided(udpEndpoint("tx", config.ModeClient, netip.AddrPort{}, server, "txmem", false, 0), "txmem", 512, 9216))
	defer txs.Close()
	n := 400 + rand.IntN(400)
	frames := make([][]byte, n)
	for i := range frames {
		frames[i] = captureFrame(t, i, 4+rand.IntN(6000))
	}
	start := time.Now()
	sendFrames(t, txs, frames)
	// Let the tool take in what arrived, then interrupt it mid-stream of nothing: the
	// point is a clean stop, not a race with the sender.
	for i, last, quiet := 0, -1, 0; quiet < 30 && i < 3000; i++ {
		c := countRecords(pcapPath)
		if c == n {
			break
		}
		if c == last {
			quiet++
		} else {
			last, quiet = c, 0
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit after SIGINT: %v\n%s\n%s", err, stdout.String(), logs())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("daqiri-capture did not stop on SIGINT")
	}
	end := time.Now()
	var sum struct {
		Packets, Dropped uint64
		Stopped          string
		Pcap             struct{ Written int }
	}
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("summary: %v\n%s", err, stdout.String())
	}
	if sum.Stopped != "interrupted" || sum.Packets == 0 || sum.Packets+sum.Dropped != uint64(n) || sum.Pcap.Written != int(sum.Packets) {
		t.Fatalf("summary %+v for %d sent\n%s", sum, n, stdout.String())
	}
	out, err := exec.Command(capinfos, "-M", "-c", "-o", "-a", "-e", "-S", pcapPath).Output()
	if err != nil {
		t.Fatalf("capinfos on the interrupted capture: %v\n%s", err, out)
	}
	info := string(out)
	if !strings.Contains(info, "Number of packets:   "+strconv.FormatUint(sum.Packets, 10)+"\n") || !strings.Contains(info, "Strict time order:   True") {
		t.Fatalf("capinfos:\n%s", info)
	}
	for _, line := range strings.Split(info, "\n") {
		for _, k := range []string{"First packet time:", "Last packet time:"} {
			if v, ok := strings.CutPrefix(line, k); ok {
				if ts := parseEpoch(t, strings.TrimSpace(v)); ts.Before(start) || ts.After(end) {
					t.Fatalf("%s %v outside the capture window [%v, %v]", k, ts, start, end)
				}
			}
		}
	}
	tsOut, err := exec.Command(tshark, "-r", pcapPath, "-T", "fields", "-e", "frame.len").Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	lens := strings.Fields(string(tsOut))
	if len(lens) != int(sum.Packets) {
		t.Fatalf("tshark read %d packets, the tool reported %d", len(lens), sum.Packets)
	}
	t.Logf("%d frames sent, daqiri-capture in netns %s captured %d (dropped %d) and stopped cleanly on SIGINT", n, p.B.Name, sum.Packets, sum.Dropped)
}

// countRecords counts whole records in a pcap being written.
func countRecords(path string) int {
	b, err := os.ReadFile(path)
	if err != nil || len(b) < capture.FileHeaderLen {
		return 0
	}
	c := 0
	for at := capture.FileHeaderLen; at+capture.RecordHeaderLen <= len(b); c++ {
		at += capture.RecordHeaderLen + int(uint32(b[at+8])|uint32(b[at+9])<<8|uint32(b[at+10])<<16|uint32(b[at+11])<<24)
		if at > len(b) {
			break
		}
	}
	return c
}
