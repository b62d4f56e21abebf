package roce_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/internal/testutil"
)

// rping's protocol (rdma-core librdmacm/examples/rping.c): after the
// connection is up the client advertises a buffer in a 16-byte SEND
// {addr be64, rkey be32, size be32}; the server RDMA READs it and answers
// with a 16-byte SEND; the client advertises a second buffer, which the
// server RDMA WRITEs with what it read (strlen+1 bytes), and answers again.
// The client then compares the two buffers. Each round is one "ping".

// lookTool finds an rdma-core tool, skipping the test with the package to
// install when it is absent (the guest runs the host's binaries).
func lookTool(t *testing.T, name, pkg string) string {
	t.Helper()
	return testutil.RequireTool(t, name, "install Debian package "+pkg+" on the host (.ci/apt.d/roce.txt)")
}

// TestGuestRpingServer: the Go client pings rdma-core's rping server (which
// uses librdmacm and libibverbs with the rxe provider), validating every
// ping's data after the server's READ and WRITE.
func TestGuestRpingServer(t *testing.T) {
	requireGuest(t)
	rping := lookTool(t, "rping", "rdmacm-utils")
	port := testutil.RandPort()
	size := 64 + rand.IntN(8000)
	count := 10 + rand.IntN(10)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := exec.CommandContext(ctx, rping, "-s", "-a", guestAddr.String(), "-p", strconv.Itoa(port), "-S", strconv.Itoa(size), "-C", strconv.Itoa(count), "-d")
	var srvOut bytes.Buffer
	srv.Stdout, srv.Stderr = &srvOut, &srvOut
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Wait() }()

	// TX queue 0: 16-byte advertisements; TX queue 1: the ping buffers the
	// server reads and writes; RX: the server's 16-byte answers.
	cfg := roceConfig(config.ModeClient, "RC", netip.AddrPortFrom(guestAddr, 0), []string{"rx"}, []string{"msg", "ping"},
		region("rx", 8, 256, config.AccessLocal), region("msg", 8, 256, config.AccessLocal),
		region("ping", 2, 64*kib, config.AccessLocal|config.AccessRDMARead|config.AccessRDMAWrite))
	cli := open(t, cfg)
	var conn uint64
	var err error
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		// rping needs a moment to listen; a refused connect is retried.
		if conn, err = cli.RDMAConnect(0, netip.AddrPortFrom(guestAddr, uint16(port)), 5*time.Second); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("connecting to rping -s: %v\nrping:\n%s", err, srvOut.String())
	}
	if mrs, _ := cli.RDMARemoteMRs(conn); len(mrs) != 0 {
		t.Errorf("rping advertised regions %+v", mrs)
	}
	bufs := txBurst(t, cli, 1, 2) // [0]: start (read by rping), [1]: sink (written by rping)
	start, sink := bufs.SegmentBuffer(0, 0)[:size], bufs.SegmentBuffer(0, 1)[:size]
	advertise := func(i int) {
		t.Helper()
		addr, rkey, err := cli.RDMARemoteKey(bufs, 0, i)
		if err != nil {
			t.Fatal(err)
		}
		m := txBurst(t, cli, 0, 1)
		adv := m.SegmentBuffer(0, 0)[:16]
		binary.BigEndian.PutUint64(adv[0:], addr)
		binary.BigEndian.PutUint32(adv[8:], rkey)
		binary.BigEndian.PutUint32(adv[12:], uint32(size))
		m.SetPacketLengths(0, 16)
		m.SetConnID(conn)
		sendRetry(t, cli, m)
	}
	answer := func() {
		t.Helper()
		var b *daqiri.Burst
		for deadline := time.Now().Add(20 * time.Second); b == nil; time.Sleep(100 * time.Microsecond) {
			if b, _ = cli.RxBurst(0, 0); b == nil && time.Now().After(deadline) {
				t.Fatalf("rping sent no answer within 20 s (connection error: %v); rping:\n%s", cli.RDMAConnErr(conn), srvOut.String())
			}
		}
		if daqiri.RDMAOp(b) != daqiri.RDMAReceive || b.Len() != 1 || len(b.Packet(0)) != 16 {
			t.Fatalf("rping answered with a %v burst of %d packets (%d bytes)", daqiri.RDMAOp(b), b.Len(), len(b.Packet(0)))
		}
		b.Free()
	}
	for ping := range count {
		// Printable text, NUL-terminated: rping writes back strlen+1 bytes.
		n := copy(start, fmt.Sprintf("rdma-ping-%d: ", ping))
		for i := n; i < size-1; i++ {
			start[i] = byte(33 + rand.IntN(94))
		}
		start[size-1] = 0
		clear(sink)
		advertise(0)
		answer() // rping READ our start buffer
		advertise(1)
		answer() // rping WROTE our sink buffer
		if !bytes.Equal(start, sink) {
			t.Fatalf("ping %d: the buffer rping wrote differs from the one it read", ping)
		}
	}
	bufs.Free()
	cli.Close()
	select {
	case err := <-srvDone:
		if err != nil {
			t.Errorf("rping -s exited with %v:\n%s", err, srvOut.String())
		}
	case <-time.After(20 * time.Second):
		t.Errorf("rping -s did not exit after the client disconnected:\n%s", srvOut.String())
	}
	t.Logf("%d pings of %d bytes with rping -s (READ and WRITE by rping, SEND/RECV both ways), data validated", count, size)
}
