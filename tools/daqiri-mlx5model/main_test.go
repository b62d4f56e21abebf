package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/internal/testutil"
	"github.com/daqiri-go/daqiri/mlx5/model"
	"github.com/daqiri-go/daqiri/mlx5/model/vfiouser"
	"github.com/daqiri-go/daqiri/mlx5/model/vfiouser/vfiousertest"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

func TestUsage(t *testing.T) {
	for _, args := range [][]string{{}, {"-socket"}, {"-socket", "/tmp/x", "extra"}, {"-socket", "/tmp/x", "-mac", "zz"}, {"-socket", "/tmp/x", "-log", "/nonexistent/dir/f"}, {"-socket", "/tmp/x", "-loopback", "-bridge", "lo"}, {"-socket", "/tmp/x", "-bridge", "nosuchnetdev0"}} {
		var out, errb strings.Builder
		if code := run(context.Background(), args, &out, &errb); code != 2 {
			t.Errorf("%q: exit %d, want 2 (stderr %q)", args, code, errb.String())
		}
	}
	// Issue 30 item 7: a multicast, broadcast or zero MAC and a socket path too long for
	// sun_path are usage errors, said before anything is served or printed.
	long := "/tmp/" + strings.Repeat("s", 195)
	sock := t.TempDir() + "/m.sock"
	// Cancelled: a tool that took these would serve nothing and end at once (exit 0).
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-socket", sock, "-mac", "01:00:5e:00:00:01"}, "must be unicast"},
		{[]string{"-socket", sock, "-mac", "ff:ff:ff:ff:ff:ff"}, "must be unicast"},
		{[]string{"-socket", sock, "-mac", "00:00:00:00:00:00"}, "not all zeros"},
		{[]string{"-socket", long}, "the path is 200 bytes; a unix socket path holds at most 107"},
	} {
		var out, errb strings.Builder
		if code := run(ctx, c.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), c.want) || out.Len() != 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2, nothing on stdout, and %q", c.args, code, out.String(), errb.String(), c.want)
		}
	}
}

// The tool serves a client through a real socket path: "listening on" first, a command log
// line per command, the summary at the end.
func TestServe(t *testing.T) {
	testutil.NoGoroutineLeak(t)
	dir := t.TempDir()
	sock, logf := dir+"/mlx5.sock", dir+"/cmd.log"
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	var errb testutil.SyncBuffer
	go func() {
		done <- run(context.Background(), []string{"-socket", sock, "-log", logf, "-mac", "02:11:22:33:44:55", "-v", "-loopback"}, pw, &errb)
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	if !sc.Scan() || sc.Text() != "listening on "+sock {
		t.Fatalf("first line %q, want %q", sc.Text(), "listening on "+sock)
	}
	rest := make(chan string, 1)
	go func() {
		var b strings.Builder
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
		}
		rest <- b.String()
	}()
	conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	c := vfiousertest.New(conn)
	if _, err := c.Version(); err != nil {
		t.Fatal(err)
	}
	if err := c.Write(vfiouser.RegionConfig, 4, []byte{6, 0}); err != nil { // memory + bus master
		t.Fatal(err)
	}
	m, err := c.NewMem(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	const iova = 0x100000
	if err := c.Map(m, 0, iova, 1<<16); err != nil {
		t.Fatal(err)
	}
	be := func(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
	c.Write(0, 0x10, be(0))
	c.Write(0, 0x14, be(iova))
	for i := 0; ; i++ {
		b, err := c.Read(0, 0x1fc, 4)
		if err != nil {
			t.Fatal(err)
		}
		if b[0]&0x80 == 0 {
			break
		}
		if i == 100 {
			t.Fatal("initializing bit stays set")
		}
	}
	for _, op := range []prm.CmdOp{prm.CmdOpEnableHCA, 0x7fe} {
		q := prm.CmdQueueEntry
		ent := m.B[:64]
		clear(ent)
		q.Type.Set(ent, prm.CmdQueueEntryTypePCIe)
		q.InputLength.Set(ent, 16)
		q.OutputLength.Set(ent, 16)
		copy(ent[q.CommandInputInlineData.ByteOff():], prm.NewCmdIn(op, 0, 16))
		q.Ownership.Set(ent, prm.CmdOwnerHW)
		if err := c.Write(0, 0x18, be(1)); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d, stderr %q", code, errb.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the tool did not exit after the client disconnected")
	}
	summary := <-rest
	for _, w := range []string{"ENABLE_HCA", "0x0104", "OK 1", "BAD_OP_ERR 1", "interrupts that reached no eventfd: 0", "port counters: {RXPackets:0"} {
		if !strings.Contains(summary, w) {
			t.Errorf("summary without %q:\n%s", w, summary)
		}
	}
	log, err := os.ReadFile(logf)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"cmd ENABLE_HCA(0x104) op_mod 0x0 status 0x0 OK syndrome 0x0\n", "cmd unknown(0x7fe) op_mod 0x0 status 0x2 BAD_OP_ERR", "vfio-user: client speaks 0.0", "vfio-user: client disconnected", "vfio-user: session: ", "1 DMA windows mapped (1 with a descriptor)"} {
		if !strings.Contains(string(log), w) {
			t.Errorf("log without %q:\n%s", w, log)
		}
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("socket left behind: %v", err)
	}
}

// SIGTERM (here: the context's end) before any client stops the tool cleanly.
func TestStopWithoutClient(t *testing.T) {
	testutil.NoGoroutineLeak(t)
	sock := t.TempDir() + "/s"
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"-socket", sock}, pw, io.Discard)
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), "listening on") {
		t.Fatalf("first line %q", sc.Text())
	}
	cancel()
	go io.Copy(io.Discard, pr)
	if code := <-done; code != 0 {
		t.Errorf("exit %d after cancel", code)
	}
}

// TestCounterLog: a line only when the counters changed since the last line, the power-on
// zeros not logged, a return to zero (a teardown) logged.
func TestCounterLog(t *testing.T) {
	var l counterLog
	if _, ok := l.changed(model.Counters{}); ok {
		t.Error("zeros at power-on logged")
	}
	line, ok := l.changed(model.Counters{RXPackets: 3, TXPackets: 4, RXSteeringMiss: 1})
	if !ok || !strings.Contains(line, "port counters: {RXPackets:3") || !strings.Contains(line, "RXSteeringMiss:1") {
		t.Errorf("first change: %q %v", line, ok)
	}
	if _, ok := l.changed(model.Counters{RXPackets: 3, TXPackets: 4, RXSteeringMiss: 1}); ok {
		t.Error("the same counters logged twice")
	}
	if line, ok := l.changed(model.Counters{}); !ok || !strings.Contains(line, "RXPackets:0") {
		t.Errorf("back to zero: %q %v", line, ok)
	}
}
