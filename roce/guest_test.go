package roce_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/internal/testutil"
	"github.com/daqiri-go/daqiri/roce"
)

const (
	kib = 1 << 10
	mib = 1 << 20
)

// sendRecvConfigs is a server and a client whose queues hold messages up
// to maxMsg bytes.
func sendRecvConfigs(transport string, port int, maxMsg, bufs int) (*config.Config, *config.Config) {
	srv := roceConfig(config.ModeServer, transport, netip.AddrPortFrom(guestAddr, uint16(port)), []string{"srv_rx"}, []string{"srv_tx"},
		region("srv_rx", bufs, maxMsg, config.AccessLocal), region("srv_tx", bufs, maxMsg, config.AccessLocal))
	cli := roceConfig(config.ModeClient, transport, netip.AddrPortFrom(guestAddr, 0), []string{"cli_rx"}, []string{"cli_tx"},
		region("cli_rx", bufs, maxMsg, config.AccessLocal), region("cli_tx", bufs, maxMsg, config.AccessLocal))
	return srv, cli
}

// exchangeMessages streams count messages of 1 KB to maxMsg each way at
// once and checks every byte and the order on both ends.
func exchangeMessages(t *testing.T, p *pair, count, maxMsg int, bound time.Duration) (cs, sc int64, took time.Duration) {
	t.Helper()
	data := newPool(2 * maxMsg)
	deadline := time.Now().Add(bound)
	size := func() int { return logSize(kib, maxMsg) }
	t0 := time.Now()
	atSrv := receive(p.srv, 0, p.srvConn, data, 1, count, deadline)
	atCli := receive(p.cli, 0, p.cliConn, data, 1<<40, count, deadline)
	done := make(chan error, 1)
	go func() {
		var err error
		sc, err = sendMessages(p.srv, p.srvConn, data, 1<<40, count, 4, size, deadline)
		done <- err
	}()
	cs = mustSend(t, p.cli, p.cliConn, data, 1, count, 4, size, deadline)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	atSrv.wait(t)
	atCli.wait(t)
	took = time.Since(t0)
	if atSrv.bytes != cs || atCli.bytes != sc {
		t.Fatalf("bytes sent %d/%d, received %d/%d", cs, sc, atSrv.bytes, atCli.bytes)
	}
	return cs, sc, took
}

func TestGuestSendRecv(t *testing.T) {
	requireGuest(t)
	srvCfg, cliCfg := sendRecvConfigs("RC", testutil.RandPort(), mib, 16)
	p := connect(t, srvCfg, cliCfg)
	if p.srvConn == 0 || p.cliConn == 0 {
		t.Fatal("zero connection id")
	}
	if port, rx, tx, err := p.cli.ConnPortQueue(p.cliConn); err != nil || port != 0 || rx != 0 || tx != 0 {
		t.Errorf("ConnPortQueue(client) = %d %d %d %v", port, rx, tx, err)
	}
	if ids := p.srv.Conns(0); len(ids) != 1 || ids[0] != p.srvConn {
		t.Errorf("server Conns = %v, want [%d]", ids, p.srvConn)
	}
	if _, err := p.srv.RDMAServerConn(0); !errors.Is(err, daqiri.ErrNoSpaceAvailable) {
		t.Errorf("claiming past the server's one slot: %v, want ErrNoSpaceAvailable", err)
	}
	count := 150 + rand.IntN(100)
	cs, sc, took := exchangeMessages(t, p, count, mib, 60*time.Second)
	t.Logf("%d messages of 1 KiB–1 MiB each way: %d + %d bytes in %v", count, cs, sc, took.Round(time.Millisecond))
	// Per-queue statistics saw every message, and nothing was dropped. A
	// send counts once its completion is in: wait for the buffers.
	waitFree(t, p.cli, "cli_tx")
	waitFree(t, p.srv, "srv_tx")
	st := p.srv.Stats().Ports[0]
	if st.Rx[0].Packets != uint64(count) || st.Rx[0].Bytes != uint64(cs) || st.Tx[0].Packets != uint64(count) || st.Rx[0].Dropped != 0 || st.Tx[0].Dropped != 0 {
		t.Errorf("server stats %+v, want %d packets / %d bytes in, %d packets out, no drops", st, count, cs, count)
	}
	rx, tx, err := p.srv.RDMADrops(0)
	if err != nil || len(rx) != 1 || len(tx) != 1 || len(rx[0])+len(tx[0]) != 0 {
		t.Errorf("RDMA drop reasons rx %v tx %v (%v)", rx, tx, err)
	}
}

// TestGuestFullSendRecv is the full run: 100,000 messages of
// 1 KB–1 MB from client to server, every byte checked. It runs only when
// named (make test-roce-full).
func TestGuestFullSendRecv(t *testing.T) {
	requireGuest(t)
	if !explicit(t, "Full") {
		t.Skip("full-size run: make test-roce-full (or -test.run TestGuestFullSendRecv)")
	}
	count := 100_000
	if s := os.Getenv("DAQIRI_ROCE_FULL_MESSAGES"); s != "" {
		count, _ = strconv.Atoi(s)
	}
	srvCfg, cliCfg := sendRecvConfigs("RC", testutil.RandPort(), mib, 32)
	p := connect(t, srvCfg, cliCfg)
	data := newPool(2 * mib)
	deadline := time.Now().Add(2 * time.Hour)
	t0 := time.Now()
	r := receive(p.srv, 0, p.srvConn, data, 1, count, deadline)
	sent := mustSend(t, p.cli, p.cliConn, data, 1, count, 4, func() int { return logSize(kib, mib) }, deadline)
	r.wait(t)
	took := time.Since(t0)
	t.Logf("FULL SEND/RECV: %d messages of 1 KiB–1 MiB (log-uniform), %d bytes, every byte checked, in %v: %.1f MB/s, %.0f messages/s",
		count, sent, took.Round(time.Millisecond), float64(sent)/took.Seconds()/1e6, float64(count)/took.Seconds())
	if r.bytes != sent {
		t.Fatalf("sent %d bytes, received %d", sent, r.bytes)
	}
}

// writeReadConfigs: each side has a window region peers may write and read
// (a TX queue's region, which the application never takes buffers from
// unless it says so), a small message region for notifications, and an RX
// region. The server's window is hugepage memory (kind huge).
func writeReadConfigs(transport string, port, window int, access config.Access) (*config.Config, *config.Config) {
	mk := func(mode config.SocketMode, local netip.AddrPort, pre string, kind config.MemoryKind) *config.Config {
		w := region(pre+"_window", window/mib, mib, access)
		w.Kind = kind
		return roceConfig(mode, transport, local, []string{pre + "_rx"}, []string{pre + "_msg", pre + "_window"},
			region(pre+"_rx", 16, 4*kib, config.AccessLocal), region(pre+"_msg", 16, 4*kib, config.AccessLocal), w)
	}
	// The server's window is hugepage memory, the client's ordinary host
	// memory: both kinds are registered the same way.
	return mk(config.ModeServer, netip.AddrPortFrom(guestAddr, uint16(port)), "srv", config.KindHuge),
		mk(config.ModeClient, netip.AddrPortFrom(guestAddr, 0), "cli", config.KindHost)
}

// nextBurst waits (bounded) for a burst on RX queue 0.
func nextBurst(t testing.TB, s *daqiri.Session, bound time.Duration) *daqiri.Burst {
	t.Helper()
	for deadline := time.Now().Add(bound); time.Now().Before(deadline); {
		b, err := s.RxBurst(0, 0)
		if err == nil {
			return b
		}
		if !errors.Is(err, daqiri.ErrNotReady) {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Microsecond)
	}
	t.Fatalf("no burst within %v", bound)
	return nil
}

// sendRetry sends, retrying while the send queue is full.
func sendRetry(t testing.TB, s *daqiri.Session, b *daqiri.Burst) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Microsecond) {
		err := s.Send(b)
		if err == nil {
			return
		}
		if !errors.Is(err, daqiri.ErrNotReady) || time.Now().After(deadline) {
			b.Free()
			t.Fatal(err)
		}
	}
}

// txBurst takes a TX burst from queue q, retrying while buffers are busy.
func txBurst(t testing.TB, s *daqiri.Session, q, n int) *daqiri.Burst {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Microsecond) {
		b, err := s.TxBurst(0, q, n)
		if err == nil {
			return b
		}
		if !errors.Is(err, daqiri.ErrNoFreePacketBuffers) && !errors.Is(err, daqiri.ErrNoFreeBurstBuffers) || time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
}

// moveWindow WRITEs window bytes of fresh random data from the client into
// the server's window region (WRITE_IMM on the last burst), checks them on
// the server, then fills the server's window with other data and READs it
// back into the client's buffers, checking it there.
func moveWindow(t *testing.T, p *pair, window int) (wrote, read time.Duration) {
	t.Helper()
	rmrs, err := p.cli.RDMARemoteMRs(p.cliConn)
	if err != nil || len(rmrs) != 1 || rmrs[0].Name != "srv_window" || rmrs[0].Length != uint64(window) || !rmrs[0].RemoteWrite || !rmrs[0].RemoteRead {
		t.Fatalf("the client sees the server's regions %+v (%v), want srv_window of %d bytes, read+write", rmrs, err, window)
	}
	up, down := newPool(window+mib), newPool(window+mib)
	const per = 4 // 1 MiB packets per burst
	imm := rand.Uint32()
	t0 := time.Now()
	for off := 0; off < window; off += per * mib {
		n := min(per, (window-off)/mib)
		b := txBurst(t, p.cli, 1, n)
		for i := range n {
			copy(b.SegmentBuffer(0, i)[:mib], up[off+i*mib:])
			b.SetPacketLengths(i, mib)
		}
		h := daqiri.RDMAHeader{Op: daqiri.RDMAWrite, Conn: p.cliConn, RemoteMR: "srv_window", RemoteOffset: uint64(off)}
		if off+n*mib == window {
			h.Op, h.Imm = daqiri.RDMAWriteImm, imm
		}
		if err := p.cli.RDMASetHeader(b, h); err != nil {
			t.Fatal(err)
		}
		sendRetry(t, p.cli, b)
	}
	b := nextBurst(t, p.srv, 60*time.Second)
	c := daqiri.RDMACompletionOf(b)
	if daqiri.RDMAOp(b) != daqiri.RDMAWriteImm || b.Len() != 1 || c == nil || b.ConnID() != p.srvConn {
		t.Fatalf("server got a %v burst of %d (conn %d), want one WRITE_IMM on %d", daqiri.RDMAOp(b), b.Len(), b.ConnID(), p.srvConn)
	}
	// Only the last packet carries the immediate: its completion reports
	// that packet's length.
	if v, ok := c.Imm(0); !ok || v != imm || c.WriteLen(0) != mib {
		t.Errorf("write notification imm %#x %v length %d, want %#x", v, ok, c.WriteLen(0), imm)
	}
	b.Free()
	wrote = time.Since(t0)
	win := p.srv.Region("srv_window").Bytes()
	if !bytes.Equal(win[:window], up[:window]) {
		t.Fatalf("the server's window differs from what the client wrote")
	}
	waitFree(t, p.cli, "cli_window")

	// The server refills its window; the client READs it.
	copy(win[:window], down[:window])
	t0 = time.Now()
	got := 0
	for off := 0; off < window; off += per * mib {
		n := min(per, (window-off)/mib)
		b := txBurst(t, p.cli, 1, n)
		for i := range n {
			clear(b.SegmentBuffer(0, i)[:mib])
			b.SetPacketLengths(i, mib)
		}
		tag := uint64(off)
		if err := p.cli.RDMASetHeader(b, daqiri.RDMAHeader{Op: daqiri.RDMARead, Conn: p.cliConn, RemoteMR: "srv_window", RemoteOffset: uint64(off), Tag: tag}); err != nil {
			t.Fatal(err)
		}
		sendRetry(t, p.cli, b)
		// READ bursts come back on the RX queue when their data is in.
		for got < off {
			got += checkRead(t, p, down)
		}
	}
	for got < window {
		got += checkRead(t, p, down)
	}
	read = time.Since(t0)
	return wrote, read
}

// checkRead takes one finished READ burst and checks its data against the
// server's window contents; it returns the bytes checked.
func checkRead(t *testing.T, p *pair, want pool) int {
	t.Helper()
	b := nextBurst(t, p.cli, 60*time.Second)
	defer b.Free()
	c := daqiri.RDMACompletionOf(b)
	if daqiri.RDMAOp(b) != daqiri.RDMARead || c == nil || b.ConnID() != p.cliConn {
		t.Fatalf("client got a %v burst (conn %d), want a finished READ on %d", daqiri.RDMAOp(b), b.ConnID(), p.cliConn)
	}
	off := int(c.Tag)
	n := 0
	for i := range b.Len() {
		pkt := b.Packet(i)
		if !bytes.Equal(pkt, want[off+n:off+n+len(pkt)]) {
			t.Fatalf("READ at offset %d: packet %d differs from the server's data", off, i)
		}
		n += len(pkt)
	}
	return n
}

func TestGuestWriteRead(t *testing.T) {
	requireGuest(t)
	const window = 16 * mib
	srvCfg, cliCfg := writeReadConfigs("RC", testutil.RandPort(), window, config.AccessLocal|config.AccessRDMAWrite|config.AccessRDMARead)
	p := connect(t, srvCfg, cliCfg)
	wrote, read := moveWindow(t, p, window)
	t.Logf("RDMA WRITE %d MiB in %v, READ %d MiB in %v (content checked on both ends)", window/mib, wrote.Round(time.Millisecond), window/mib, read.Round(time.Millisecond))

	// The server advertises its window; the client its own, and local MRs
	// carry real keys.
	lm, err := p.srv.RDMALocalMRs(0)
	if err != nil || len(lm) != 3 {
		t.Fatalf("server local MRs %+v %v", lm, err)
	}
	for _, m := range lm {
		if m.LKey == 0 || m.Addr == 0 || (m.Name == "srv_window") != (m.RemoteRead && m.RemoteWrite) {
			t.Errorf("local MR %+v", m)
		}
	}
	// Bad requests are refused before anything is posted.
	b := txBurst(t, p.cli, 0, 1)
	b.SetPacketLengths(0, 100)
	for _, c := range []struct {
		h    daqiri.RDMAHeader
		want string
	}{
		{daqiri.RDMAHeader{Op: daqiri.RDMAWrite, Conn: p.cliConn, RemoteMR: "nope"}, `advertised no region "nope"`},
		{daqiri.RDMAHeader{Op: daqiri.RDMAWrite, Conn: p.cliConn, RemoteMR: "srv_window", RemoteOffset: window - 50}, "exceeds"},
		{daqiri.RDMAHeader{Op: daqiri.RDMARead, Conn: p.cliConn}, "RemoteMR"},
	} {
		if err := p.cli.RDMASetHeader(b, c.h); err != nil {
			t.Fatal(err)
		}
		if err := p.cli.Send(b); !errors.Is(err, daqiri.ErrInvalidParameter) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Send with %+v = %v, want ErrInvalidParameter mentioning %q", c.h, err, c.want)
		}
	}
	if err := p.cli.RDMASetHeader(b, daqiri.RDMAHeader{Op: daqiri.RDMAReadImm}); !errors.Is(err, daqiri.ErrNotSupported) {
		t.Errorf("READ_IMM header: %v", err)
	}
	if err := p.cli.RDMASetHeader(b, daqiri.RDMAHeader{Op: daqiri.RDMAReceive}); !errors.Is(err, daqiri.ErrNotSupported) {
		t.Errorf("RECEIVE header: %v", err)
	}
	b.Free()
}

// TestGuestFullWriteRead moves the 64 MB each way; only when named.
func TestGuestFullWriteRead(t *testing.T) {
	requireGuest(t)
	if !explicit(t, "Full") {
		t.Skip("full-size run: make test-roce-full (or -test.run TestGuestFullWriteRead)")
	}
	const window = 64 * mib
	srvCfg, cliCfg := writeReadConfigs("RC", testutil.RandPort(), window, config.AccessLocal|config.AccessRDMAWrite|config.AccessRDMARead)
	p := connect(t, srvCfg, cliCfg)
	wrote, read := moveWindow(t, p, window)
	t.Logf("FULL WRITE/READ: RDMA WRITE 64 MiB in %v (%.1f MB/s), READ 64 MiB in %v (%.1f MB/s), content checked on both ends",
		wrote.Round(time.Millisecond), float64(window)/wrote.Seconds()/1e6, read.Round(time.Millisecond), float64(window)/read.Seconds()/1e6)
}

// TestGuestUC: an unreliable connection carries SEND and WRITE; READ is
// refused, before the wire and at configuration time.
func TestGuestUC(t *testing.T) {
	requireGuest(t)
	const window = 2 * mib
	srvCfg, cliCfg := writeReadConfigs("UC", testutil.RandPort(), window, config.AccessLocal|config.AccessRDMAWrite)
	p := connect(t, srvCfg, cliCfg)
	// SEND, one message at a time: UC drops a message that finds no
	// receive buffer posted (it has no RNR retry), so the test waits for
	// each before sending the next.
	data := newPool(64 * kib)
	count := 20 + rand.IntN(20)
	for seq := uint64(1); seq <= uint64(count); seq++ {
		r := receive(p.srv, 0, p.srvConn, data, seq, 1, time.Now().Add(30*time.Second))
		mustSend(t, p.cli, p.cliConn, data, seq, 1, 1, func() int { return logSize(64, 4*kib) }, time.Now().Add(30*time.Second))
		r.wait(t)
	}
	// WRITE with immediate into the server's window.
	b := txBurst(t, p.cli, 1, 2)
	up := newPool(2 * mib)
	for i := range 2 {
		copy(b.SegmentBuffer(0, i), up[i*mib:(i+1)*mib])
		b.SetPacketLengths(i, mib)
	}
	imm := rand.Uint32()
	if err := p.cli.RDMASetHeader(b, daqiri.RDMAHeader{Op: daqiri.RDMAWriteImm, Conn: p.cliConn, RemoteMR: "srv_window", Imm: imm}); err != nil {
		t.Fatal(err)
	}
	sendRetry(t, p.cli, b)
	nb := nextBurst(t, p.srv, 30*time.Second)
	if v, ok := daqiri.RDMACompletionOf(nb).Imm(0); daqiri.RDMAOp(nb) != daqiri.RDMAWriteImm || !ok || v != imm {
		t.Fatalf("server got %v imm %#x %v", daqiri.RDMAOp(nb), v, ok)
	}
	nb.Free()
	if !bytes.Equal(p.srv.Region("srv_window").Bytes()[:window], up[:window]) {
		t.Fatal("UC WRITE: the server's window differs")
	}
	// READ on UC.
	b = txBurst(t, p.cli, 1, 1)
	b.SetPacketLengths(0, 10)
	p.cli.RDMASetHeader(b, daqiri.RDMAHeader{Op: daqiri.RDMARead, Conn: p.cliConn, RemoteAddr: 1, RKey: 1})
	if err := p.cli.Send(b); !errors.Is(err, daqiri.ErrInvalidParameter) || !strings.Contains(err.Error(), "RDMA READ needs transport_mode RC") {
		t.Errorf("READ on UC: %v", err)
	}
	b.Free()
}

// TestGuestBadConfig: configurations that cannot work fail at Open (or at
// connect) with an error naming the key and the reason.
func TestGuestBadConfig(t *testing.T) {
	requireGuest(t)
	absent := netip.AddrFrom4([4]byte{10, 7, 0, byte(100 + rand.IntN(100))}) // in d0's subnet, on no interface
	cases := []struct {
		name string
		cfg  *config.Config
		want []string
	}{
		{"server on an address no interface has",
			roceConfig(config.ModeServer, "RC", netip.AddrPortFrom(absent, uint16(testutil.RandPort())), []string{"rx"}, []string{"tx"},
				region("rx", 4, 4*kib, config.AccessLocal), region("tx", 4, 4*kib, config.AccessLocal)),
			[]string{"interfaces[0].socket_config.local_addr", absent.String(), "cannot assign requested address"}},
		{"client on an address no interface has",
			roceConfig(config.ModeClient, "RC", netip.AddrPortFrom(absent, 0), []string{"rx"}, []string{"tx"},
				region("rx", 4, 4*kib, config.AccessLocal), region("tx", 4, 4*kib, config.AccessLocal)),
			[]string{"interfaces[0].socket_config.local_addr", absent.String()}},
		{"UC with a READ-able region",
			roceConfig(config.ModeServer, "UC", netip.AddrPortFrom(guestAddr, uint16(testutil.RandPort())), []string{"rx"}, []string{"tx"},
				region("rx", 4, 4*kib, config.AccessLocal), region("tx", 4, 4*kib, config.AccessLocal|config.AccessRDMARead)),
			[]string{"interfaces[0].roce_config.transport_mode", "UC cannot serve RDMA READ", "region tx"}},
		{"UD",
			roceConfig(config.ModeServer, "UD", netip.AddrPortFrom(guestAddr, uint16(testutil.RandPort())), []string{"rx"}, nil,
				region("rx", 4, 4*kib, config.AccessLocal)),
			[]string{"transport_mode UD is not supported"}},
	}
	before := resources(t)
	for _, c := range cases {
		_, err := daqiri.Open(t.Context(), c.cfg)
		if err == nil {
			t.Errorf("%s: Open succeeded", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not mention %q", c.name, err, w)
			}
		}
		t.Logf("%s: %v", c.name, err)
	}
	// Connecting to an address with no route, and to a port nobody
	// listens on, fails with the reason.
	_, cliCfg := sendRecvConfigs("RC", 0, 4*kib, 4)
	cli := open(t, cliCfg)
	for _, c := range []struct {
		to      netip.AddrPort
		timeout time.Duration
		want    string
	}{
		// TEST-NET-1: no peer ever answers (the guest may even lack a
		// route); the connect timeout bounds the wait.
		{netip.MustParseAddrPort("192.0.2.1:4791"), 2 * time.Second, "connecting to 192.0.2.1:4791"},
		// The reject comes back within milliseconds, but rxe can drop
		// the first REQ on a loaded host and the kernel's CM sends it
		// again only after its response timeout (about 4 s for
		// rdma_cm's default of 2^20 × 4.096 µs, cma.c): the timeout
		// leaves room for two retransmissions, so a lost REQ shows the
		// reject rather than a timeout (seen on a CI run).
		{netip.AddrPortFrom(guestAddr, uint16(testutil.RandPort())), 15 * time.Second, "nothing listens"},
	} {
		start := time.Now()
		_, err := cli.RDMAConnect(0, c.to, c.timeout)
		if !errors.Is(err, daqiri.ErrConnectFailure) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("RDMAConnect(%v) = %v, want ErrConnectFailure mentioning %q", c.to, err, c.want)
		}
		t.Logf("RDMAConnect(%v) after %v: %v", c.to, time.Since(start).Round(time.Millisecond), err)
	}
	if _, err := cli.RDMAConnect(0, netip.AddrPortFrom(guestAddr, 0), time.Second); !errors.Is(err, daqiri.ErrInvalidParameter) {
		t.Errorf("RDMAConnect to port 0: %v", err)
	}
	if _, err := cli.RDMAServerConn(0); !errors.Is(err, daqiri.ErrInvalidParameter) {
		t.Errorf("RDMAServerConn on a client: %v", err)
	}
	if err := cli.SetSockopt(12345, 1, 1, nil); err == nil {
		t.Error("SetSockopt on an unknown RDMA connection succeeded")
	}
	cli.Close()
	// Failed opens and connects leave nothing behind in the kernel.
	after := resources(t)
	for _, k := range []string{"qp", "cq", "mr", "pd", "cm_id", "ctx"} {
		if after[k] != before[k] {
			t.Errorf("kernel %s count %d, %d before the failed opens", k, after[k], before[k])
		}
	}
}

// TestGuestSignalEvery: with one completion per 8 sends, buffers of the
// unsignalled tail are still released (the engine asks for a completion).
func TestGuestSignalEvery(t *testing.T) {
	requireGuest(t)
	t.Setenv(roce.EnvSignalEvery, "8")
	srvCfg, cliCfg := sendRecvConfigs("RC", testutil.RandPort(), 4*kib, 64)
	p := connect(t, srvCfg, cliCfg)
	data := newPool(8 * kib)
	count := 8*rand.IntN(5) + 1 + rand.IntN(7) // never a multiple of 8
	r := receive(p.srv, 0, p.srvConn, data, 1, count, time.Now().Add(30*time.Second))
	mustSend(t, p.cli, p.cliConn, data, 1, count, 1, func() int { return 64 + rand.IntN(4000) }, time.Now().Add(30*time.Second))
	r.wait(t)
	waitFree(t, p.cli, "cli_tx")
	if st := p.cli.Stats().Ports[0].Tx[0]; st.Packets != uint64(count) {
		t.Errorf("client sent %d packets by its stats, want %d", st.Packets, count)
	}
	t.Setenv(roce.EnvSignalEvery, "0")
	if _, err := daqiri.Open(t.Context(), cliCfg); err == nil || !strings.Contains(err.Error(), roce.EnvSignalEvery) {
		t.Errorf("Open with %s=0: %v", roce.EnvSignalEvery, err)
	}
}

// TestGuestRNRBackpressure: a receiver that holds all its buffers for a
// while makes the sender's messages wait (RNR) and resume, losing nothing.
func TestGuestRNRBackpressure(t *testing.T) {
	requireGuest(t)
	srvCfg, cliCfg := sendRecvConfigs("RC", testutil.RandPort(), 4*kib, 8)
	p := connect(t, srvCfg, cliCfg)
	data := newPool(8 * kib)
	count := 40
	sendErr := make(chan error, 1)
	go func() {
		_, err := sendMessages(p.cli, p.cliConn, data, 1, count, 1, func() int { return 100 + rand.IntN(3000) }, time.Now().Add(30*time.Second))
		sendErr <- err
	}()
	// Hold every burst until the server's 8 buffers are all taken.
	var held []*daqiri.Burst
	n := 0
	for n < 8 {
		b := nextBurst(t, p.srv, 30*time.Second)
		held = append(held, b)
		n += b.Len()
	}
	time.Sleep(100 * time.Millisecond) // the sender hits RNR meanwhile
	seq := uint64(1)
	for _, b := range held {
		for i := range b.Len() {
			if err := data.check(b.Packet(i), seq); err != nil {
				t.Fatal(err)
			}
			seq++
		}
		b.Free()
	}
	r := receive(p.srv, 0, p.srvConn, data, seq, count-n, time.Now().Add(30*time.Second))
	r.wait(t)
	if err := <-sendErr; err != nil {
		t.Fatal(err)
	}
}

// TestGuestCloseUnderTraffic: closing sessions while messages are in
// flight (the receiver not reading, the sender's buffers all out) returns
// every buffer and kernel object.
func TestGuestCloseUnderTraffic(t *testing.T) {
	requireGuest(t)
	before := resources(t)
	srvCfg, cliCfg := sendRecvConfigs("RC", testutil.RandPort(), 64*kib, 16)
	srv, err := daqiri.Open(t.Context(), srvCfg)
	if err != nil {
		t.Fatal(err)
	}
	cli, err := daqiri.Open(t.Context(), cliCfg)
	if err != nil {
		t.Fatal(err)
	}
	addr := netip.AddrPortFrom(guestAddr, uint16(srvCfg.Interfaces[0].Socket.Local.Port))
	conn, err := cli.RDMAConnect(0, addr, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Send until the client's buffers are all out: the server holds its
	// 16 receive buffers in bursts nobody reads, so the rest waits (RNR).
	sent := 0
	for {
		b, err := cli.TxBurst(0, 0, 1)
		if err != nil {
			break
		}
		b.SetPacketLengths(0, 1+rand.IntN(60*kib))
		b.SetConnID(conn)
		if err := cli.Send(b); err != nil {
			b.Free()
			break
		}
		sent++
	}
	if sent < 16 {
		t.Fatalf("only %d sends went out", sent)
	}
	if err := cli.Close(); err != nil {
		t.Errorf("client close: %v", err)
	}
	// The server learns of it and still closes cleanly.
	for deadline := time.Now().Add(10 * time.Second); len(srv.Conns(0)) > 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("server close: %v", err)
	}
	after := resources(t)
	for _, k := range []string{"qp", "cq", "mr", "pd", "cm_id", "ctx"} {
		if after[k] != before[k] {
			t.Errorf("kernel %s count %d after both sessions closed, %d before", k, after[k], before[k])
		}
	}
}
