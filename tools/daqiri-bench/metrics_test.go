package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/internal/testutil"
	"github.com/daqiri-go/daqiri/metrics/promexport"
)

// helperEnv makes this test binary run daqiri-bench's main instead of the tests (the
// arguments come JSON-encoded in the variable), so the metrics test can drive a real
// daqiri-bench process and send it Ctrl-C.
const helperEnv = "DAQIRI_BENCH_HELPER_ARGS"

func TestHelperBenchProcess(t *testing.T) {
	raw := os.Getenv(helperEnv)
	if raw == "" {
		t.Skip("helper process for TestMetricsScrapeMatchesTable; runs only when started by it")
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		os.Exit(3)
	}
	os.Exit(run(args, os.Stdout, os.Stderr))
}

// splitCRLF splits on \n and on the \r that the live progress line uses.
func splitCRLF(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

type tableRow struct{ packets, bytes, dropped uint64 }

// TestMetricsScrapeMatchesTable runs daqiri-bench with --metrics-addr over a loopback UDP
// pair: scrapes taken while it runs show growing counters, and a scrape once the final
// table is printed shows exactly the table's packets, bytes and drops for every queue.
func TestMetricsScrapeMatchesTable(t *testing.T) {
	l, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.LocalAddr().(*net.UDPAddr).Port)
	l.Close()
	cfgPath := filepath.Join(t.TempDir(), "bench.yaml")
	os.WriteFile(cfgPath, bytes.ReplaceAll(defaultConfig, []byte("127.0.0.1:5001"), []byte("127.0.0.1:"+port)), 0o644)
	args, _ := json.Marshal([]string{"--config", cfgPath, "--duration", "1500ms", "--payload", "1000", "--rate", "0.05",
		"--metrics-addr", "127.0.0.1:0", "--metrics-linger", "10m"})
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperBenchProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"="+string(args))
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	defer cmd.Process.Kill()

	urlc := make(chan string, 1)
	var errLog testutil.SyncBuffer
	errDone := make(chan struct{})
	go func() {
		defer close(errDone)
		sc := bufio.NewScanner(stderr)
		sc.Split(splitCRLF)
		re := regexp.MustCompile(`serving metrics at (\S+)`)
		for sc.Scan() {
			line := sc.Text()
			errLog.WriteString(line + "\n")
			if m := re.FindStringSubmatch(line); m != nil {
				urlc <- m[1]
			}
		}
	}()
	rows := map[string]tableRow{}
	var outLog testutil.SyncBuffer
	tableDone := make(chan struct{})
	outDone := make(chan struct{})
	go func() {
		defer close(outDone)
		sc := bufio.NewScanner(stdout)
		done := false
		for sc.Scan() {
			line := sc.Text()
			outLog.WriteString(line + "\n")
			f := strings.Fields(line)
			if len(f) >= 7 && (f[2] == "rx" || f[2] == "tx") {
				p, _ := strconv.ParseUint(f[4], 10, 64)
				b, _ := strconv.ParseUint(f[5], 10, 64)
				d, _ := strconv.ParseUint(f[6], 10, 64)
				rows[f[0]+"/"+f[2]+"/"+f[3]] = tableRow{p, b, d}
			}
			if strings.HasPrefix(strings.TrimSpace(line), "unaccounted") && !done {
				done = true
				close(tableDone)
			}
		}
	}()
	go func() {
		// Wait only once both pipes have been read to the end.
		<-errDone
		<-outDone
		exited <- cmd.Wait()
	}()

	var url string
	select {
	case url = <-urlc:
	case err := <-exited:
		t.Fatalf("daqiri-bench exited before serving metrics: %v\n%s", err, errLog.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("no metrics address announced:\n%s", errLog.String())
	}
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	scrape := func() string {
		resp, err := client.Get(url)
		if err != nil {
			t.Fatalf("scrape: %v", err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("scrape: %s", resp.Status)
		}
		return string(b)
	}
	value := func(text, name, ifc string) uint64 {
		v, _ := promexport.ScrapeValue(text, name, map[string]string{"daqiri_interface_name": ifc, "daqiri_queue_id": "0", "daqiri_engine": "socket"})
		return uint64(v)
	}
	// Scrape while it runs: the server's received count only grows.
	var midRun []uint64
	for i := 0; ; i++ {
		select {
		case <-tableDone:
		case err := <-exited:
			t.Fatalf("daqiri-bench exited: %v\n%s%s", err, errLog.String(), outLog.String())
		default:
			v := value(scrape(), "daqiri_rx_packets_total", "server")
			if n := len(midRun); n > 0 && v < midRun[n-1] {
				t.Fatalf("rx packets went down between scrapes: %d → %d", midRun[n-1], v)
			}
			midRun = append(midRun, v)
			if i > 2000 {
				t.Fatal("the run did not finish")
			}
			time.Sleep(50 * time.Millisecond)
			continue
		}
		break
	}
	final := scrape()
	last := midRun[len(midRun)-1]
	t.Logf("%d scrapes during the run, rx packets %d … %d; table:\n%s", len(midRun), midRun[0], last, outLog.String())
	seen := false
	for _, v := range midRun {
		seen = seen || v > 0
	}
	if !seen {
		t.Fatal("no scrape during the run showed received packets")
	}
	if len(rows) != 2 {
		t.Fatalf("table rows %v", rows)
	}
	for key, r := range rows {
		parts := strings.Split(key, "/")
		ifc, dir := parts[0], parts[1]
		p := value(final, "daqiri_"+dir+"_packets_total", ifc)
		b := value(final, "daqiri_"+dir+"_bytes_total", ifc)
		if p != r.packets || b != r.bytes {
			t.Errorf("%s: scrape %d packets %d bytes, table %d packets %d bytes", key, p, b, r.packets, r.bytes)
		}
		var dropped uint64
		re := regexp.MustCompile(`daqiri_dropped_packets_total\{([^}]*)\} (\S+)`)
		for _, m := range re.FindAllStringSubmatch(final, -1) {
			if strings.Contains(m[1], `daqiri_interface_name="`+ifc+`"`) {
				f, _ := strconv.ParseFloat(m[2], 64)
				dropped += uint64(f)
			}
		}
		if dropped != r.dropped {
			t.Errorf("%s: scrape %d dropped, table %d", key, dropped, r.dropped)
		}
		if r.packets == 0 {
			t.Errorf("%s: nothing moved", key)
		}
	}
	if r := rows["server/rx/0"]; r.packets < last {
		t.Errorf("final rx %d below a mid-run scrape %d", r.packets, last)
	}
	// Ctrl-C ends the linger; the process exits cleanly.
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit after Ctrl-C: %v\n%s", err, errLog.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("daqiri-bench did not exit after Ctrl-C")
	}
}
