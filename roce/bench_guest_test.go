package roce_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/internal/testutil"
)

// TestGuestBenchRoCE measures the engine next to perftest on the same
// Soft-RoCE device in the same VM, message size by message size: SEND/RECV
// against ib_send_bw and RDMA WRITE against ib_write_bw, one RC QP each.
// Benchmarks are not timed tests: it fails only when something does not
// work, and prints a table of medians over three runs (make bench-roce).
func TestGuestBenchRoCE(t *testing.T) {
	requireGuest(t)
	if !explicit(t, "Bench") {
		t.Skip("benchmark: make bench-roce (or -test.run TestGuestBenchRoCE)")
	}
	sendBW := lookTool(t, "ib_send_bw", "perftest")
	writeBW := lookTool(t, "ib_write_bw", "perftest")
	type row struct {
		op        string
		size, n   int
		perf, go_ float64 // Gb/s
		goMsgs    float64
	}
	// Each case runs benchRepeats times, perftest and daqiri-go taking
	// turns; the table shows medians (TCG timings wander).
	const benchRepeats = 3
	var rows []row
	for _, c := range []struct{ size, n int }{{4 * kib, 8000}, {64 * kib, 1000}, {mib, 100}} {
		for _, op := range []string{"SEND", "WRITE"} {
			var pv, gv, gmv []float64
			for range benchRepeats {
				if op == "SEND" {
					pv = append(pv, perftest(t, sendBW, c.size, c.n))
					g, m := goSend(t, c.size, c.n)
					gv, gmv = append(gv, g), append(gmv, m)
				} else {
					pv = append(pv, perftest(t, writeBW, c.size, c.n))
					g, m := goWrite(t, c.size, c.n)
					gv, gmv = append(gv, g), append(gmv, m)
				}
			}
			rows = append(rows, row{op, c.size, c.n, median(pv), median(gv), median(gmv)})
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n| op | size | messages | perftest Gb/s | daqiri-go Gb/s | daqiri-go msg/s | ratio |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		ratio := "n/a"
		if r.perf > 0 {
			ratio = fmt.Sprintf("%.2f", r.go_/r.perf)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %.3f | %.3f | %.0f | %s |\n", r.op, sizeName(r.size), r.n, r.perf, r.go_, r.goMsgs, ratio)
	}
	t.Log("BENCH-ROCE" + b.String())
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func sizeName(n int) string {
	switch {
	case n >= mib:
		return strconv.Itoa(n/mib) + " MiB"
	case n >= kib:
		return strconv.Itoa(n/kib) + " KiB"
	}
	return strconv.Itoa(n) + " B"
}

// perftest runs a perftest bandwidth tool's server and client on the guest
// device and returns the client's average bandwidth in Gb/s (10^9 bit/s).
func perftest(t *testing.T, tool string, size, n int) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	port := strconv.Itoa(testutil.RandPort())
	// Bandwidth in MB/s, which perftest prints with more digits than Gb/s;
	// its MB is 2^20 bytes (perftest_parameters.c, format_factor 0x100000).
	args := []string{"-d", guestDev, "-s", strconv.Itoa(size), "-n", strconv.Itoa(n), "-F", "-p", port}
	srv := exec.CommandContext(ctx, tool, args...)
	var srvOut bytes.Buffer
	srv.Stdout, srv.Stderr = &srvOut, &srvOut
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Wait()
	var out []byte
	var err error
	// The server needs a moment to listen on its TCP port.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		out, err = exec.CommandContext(ctx, tool, append(args, guestAddr.String())...).CombinedOutput()
		if err == nil || time.Now().After(deadline) || !bytes.Contains(out, []byte("Couldn't connect")) {
			break
		}
	}
	if err != nil {
		t.Fatalf("%s client: %v\n%s\nserver:\n%s", tool, err, out, srvOut.String())
	}
	// The result line: #bytes #iterations BW-peak BW-average MsgRate.
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 5 && f[0] == strconv.Itoa(size) && f[1] == strconv.Itoa(n) {
			v, err := strconv.ParseFloat(f[3], 64)
			if err == nil {
				return v * (1 << 20) * 8 / 1e9
			}
		}
	}
	t.Fatalf("%s: no result line in:\n%s", tool, out)
	return 0
}

// goSend streams n messages of size bytes from a client to a server session
// (bursts of 4, no content checks: the content tests do that) and returns
// Gb/s and messages/s as the receiver saw them.
func goSend(t *testing.T, size, n int) (float64, float64) {
	t.Helper()
	srvCfg, cliCfg := sendRecvConfigs("RC", testutil.RandPort(), size, 64)
	p := connect(t, srvCfg, cliCfg)
	done := make(chan error, 1)
	t0 := time.Now()
	go func() {
		got := 0
		for deadline := time.Now().Add(5 * time.Minute); got < n; {
			b, err := p.srv.RxBurst(0, 0)
			if errors.Is(err, daqiri.ErrNotReady) {
				if time.Now().After(deadline) {
					done <- fmt.Errorf("received %d of %d", got, n)
					return
				}
				time.Sleep(20 * time.Microsecond)
				continue
			}
			if err != nil {
				done <- err
				return
			}
			got += b.Len()
			b.Free()
		}
		done <- nil
	}()
	data := newPool(2 * size)
	if _, err := sendMessages(p.cli, p.cliConn, data, 1, n, 4, func() int { return size }, time.Now().Add(5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	s := time.Since(t0).Seconds()
	closePair(t, p)
	return float64(size) * float64(n) * 8 / s / 1e9, float64(n) / s
}

// goWrite writes n messages of size bytes into the server's window (bursts
// of 4, the last with an immediate) and returns Gb/s and messages/s up to
// the server's notification.
func goWrite(t *testing.T, size, n int) (float64, float64) {
	t.Helper()
	window := 64 * size
	mk := func(mode config.SocketMode, local netip.AddrPort, pre string) *config.Config {
		return roceConfig(mode, "RC", local, []string{pre + "_rx"}, []string{pre + "_src", pre + "_window"},
			region(pre+"_rx", 16, 256, config.AccessLocal), region(pre+"_src", 64, size, config.AccessLocal),
			region(pre+"_window", 64, size, config.AccessLocal|config.AccessRDMAWrite))
	}
	port := testutil.RandPort()
	p := connect(t, mk(config.ModeServer, netip.AddrPortFrom(guestAddr, uint16(port)), "srv"), mk(config.ModeClient, netip.AddrPortFrom(guestAddr, 0), "cli"))
	t0 := time.Now()
	off := 0
	for sent := 0; sent < n; {
		k := min(4, n-sent)
		b := txBurst(t, p.cli, 0, k)
		for i := range k {
			b.SetPacketLengths(i, size)
		}
		if off+k*size > window {
			off = 0
		}
		h := daqiri.RDMAHeader{Op: daqiri.RDMAWrite, Conn: p.cliConn, RemoteMR: "srv_window", RemoteOffset: uint64(off)}
		if sent+k == n {
			h.Op, h.Imm = daqiri.RDMAWriteImm, 1
		}
		if err := p.cli.RDMASetHeader(b, h); err != nil {
			t.Fatal(err)
		}
		sendRetry(t, p.cli, b)
		sent += k
		off += k * size
	}
	b := nextBurst(t, p.srv, 5*time.Minute)
	if daqiri.RDMAOp(b) != daqiri.RDMAWriteImm {
		t.Fatalf("server got %v, want the write notification", daqiri.RDMAOp(b))
	}
	b.Free()
	s := time.Since(t0).Seconds()
	closePair(t, p)
	return float64(size) * float64(n) * 8 / s / 1e9, float64(n) / s
}

// closePair closes both sessions now (their cleanups then do nothing), so
// that one benchmark's connections do not share the CPU with the next.
func closePair(t *testing.T, p *pair) {
	t.Helper()
	if err := p.cli.Close(); err != nil {
		t.Error(err)
	}
	if err := p.srv.Close(); err != nil {
		t.Error(err)
	}
}
