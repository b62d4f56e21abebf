package roce_test

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/internal/testutil"
)

// envChildServer tells a re-executed test binary to act as the peer that
// TestGuestPeerLoss kills.
const envChildServer = "DAQIRI_ROCE_TEST_CHILD_SERVER"

// TestGuestPeerLossChild is the peer process of TestGuestPeerLoss: it
// connects to the server and streams messages until it is killed (at most
// a minute). It skips unless started by that test.
func TestGuestPeerLossChild(t *testing.T) {
	srv := os.Getenv(envChildServer)
	if srv == "" {
		t.Skip("helper process of TestGuestPeerLoss")
	}
	requireGuest(t)
	_, cliCfg := sendRecvConfigs("RC", 0, 16*kib, 16)
	cli := open(t, cliCfg)
	conn, err := cli.RDMAConnect(0, netip.MustParseAddrPort(srv), 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("READY %d\n", conn)
	data := newPool(32 * kib)
	// Runs until the parent kills this process; bounded in case it never
	// does.
	_, err = sendMessages(cli, conn, data, 1, 1<<30, 2, func() int { return 64 + rand.IntN(16*kib-64) }, time.Now().Add(time.Minute))
	t.Fatalf("the parent did not kill this process: %v", err)
}

// TestGuestPeerLoss: the peer process is killed mid-transfer. The server
// sees the connection fail within 2 s (DISCONNECTED from the kernel, which
// disconnects a dead process's connections), releases its QP, CQ, MR and
// rdma_cm ID, and its other connection keeps carrying traffic.
func TestGuestPeerLoss(t *testing.T) {
	requireGuest(t)
	port := testutil.RandPort()
	addr := netip.AddrPortFrom(guestAddr, uint16(port))
	// Two slots: two RX queues (and two TX queues).
	srvCfg := roceConfig(config.ModeServer, "RC", addr, []string{"srv_rx", "srv_rx"}, []string{"srv_tx", "srv_tx"},
		region("srv_rx", 64, 16*kib, config.AccessLocal), region("srv_tx", 32, 16*kib, config.AccessLocal))
	srv := open(t, srvCfg)
	_, cliCfg := sendRecvConfigs("RC", 0, 16*kib, 16)
	cli := open(t, cliCfg)

	// The surviving connection, B, in slot 0.
	connB, err := cli.RDMAConnect(0, addr, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	srvB := claim(t, srv, 0)
	if _, rx, _, _ := srv.ConnPortQueue(srvB); rx != 0 {
		t.Fatalf("first connection on rx queue %d", rx)
	}
	base := resources(t)

	// The doomed one, A, from a child process.
	child := exec.Command(os.Args[0], "-test.run=^TestGuestPeerLossChild$", "-test.v")
	child.Env = append(os.Environ(), envChildServer+"="+addr.String())
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	child.Stderr = child.Stdout
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			child.Process.Kill()
			child.Wait()
		}
	}()
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var log []string
	for ready := false; !ready; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the peer process ended before connecting:\n%s", strings.Join(log, "\n"))
			}
			log = append(log, l)
			ready = strings.HasPrefix(l, "READY ")
		case <-time.After(30 * time.Second):
			t.Fatalf("the peer process did not connect within 30 s:\n%s", strings.Join(log, "\n"))
		}
	}
	srvA := claim(t, srv, 0)
	if _, rx, _, _ := srv.ConnPortQueue(srvA); rx != 1 {
		t.Fatalf("second connection on rx queue %d", rx)
	}

	// Let A's traffic flow, then kill the peer mid-transfer.
	drain := func(q int, conn uint64) (n int) {
		for {
			b, err := srv.RxBurst(0, q)
			if err != nil {
				return n
			}
			if b.ConnID() != conn || daqiri.RDMAOp(b) != daqiri.RDMAReceive {
				t.Errorf("rx queue %d: %v burst of connection %d, want RECEIVE of %d", q, daqiri.RDMAOp(b), b.ConnID(), conn)
			}
			n += b.Len()
			b.Free()
		}
	}
	got := 0
	for deadline := time.Now().Add(30 * time.Second); got < 50; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("only %d messages from the peer process in 30 s", got)
		}
		got += drain(1, srvA)
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed = true
	t0 := time.Now()
	var lost error
	for lost == nil && time.Since(t0) < 10*time.Second {
		got += drain(1, srvA)
		lost = srv.RDMAConnErr(srvA)
		time.Sleep(time.Millisecond)
	}
	noticed := time.Since(t0)
	child.Wait()
	if !errors.Is(lost, daqiri.ErrDisconnected) || !errors.Is(lost, daqiri.ErrConnectFailure) {
		t.Fatalf("connection %d after its peer died: %v, want ErrDisconnected", srvA, lost)
	}
	// The bound is 2 s; the kernel's disconnect arrives far sooner.
	if noticed > 2*time.Second {
		t.Errorf("the peer's death was noticed after %v, more than 2 s", noticed)
	}
	t.Logf("peer killed after %d messages; connection %d failed %v later: %v", got, srvA, noticed.Round(time.Millisecond), lost)

	// Sending on the dead connection fails and consumes the burst.
	b := txBurst(t, srv, 1, 1)
	b.SetPacketLengths(0, 10)
	b.SetConnID(srvA)
	if err := srv.Send(b); !errors.Is(err, daqiri.ErrDisconnected) {
		t.Errorf("Send on the dead connection: %v", err)
	}

	// Everything A held is released: the kernel's counts return to what
	// they were with only B.
	var now map[string]uint64
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		drain(1, srvA)
		now = resources(t)
		if now["qp"] == base["qp"] && now["cq"] == base["cq"] && now["mr"] == base["mr"] && now["cm_id"] == base["cm_id"] && now["pd"] == base["pd"] {
			break
		}
	}
	for _, k := range []string{"qp", "cq", "mr", "cm_id", "pd", "ctx"} {
		if now[k] != base[k] {
			t.Errorf("kernel %s count %d after the peer died, %d with only the other connection", k, now[k], base[k])
		}
	}
	if ids := srv.Conns(0); len(ids) != 1 || ids[0] != srvB {
		t.Errorf("server connections %v after the loss, want [%d]", ids, srvB)
	}

	// B is unaffected: messages still flow both ways.
	p := &pair{srv: srv, cli: cli, srvConn: srvB, cliConn: connB, addr: addr}
	count := 20 + rand.IntN(20)
	exchangeMessages(t, p, count, 16*kib, 30*time.Second)
	if err := cli.RDMAConnErr(connB); err != nil {
		t.Errorf("the surviving connection reports %v", err)
	}
	waitFree(t, srv, "srv_tx")
}
