package datapath

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"github.com/daqiri-go/daqiri/internal/testutil"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/integration/netns"
	"github.com/daqiri-go/daqiri/mlx5/model/internal/datapath/afpacket"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// TestBridgeVeth bridges a model port to one end of a veth pair whose other end is in
// another network namespace: UDP datagrams the peer's kernel sends arrive in the model's RQ
// through its steering, and frames the model's SQ sends as raw WQEs (checksums left to the
// offload) are decoded by tshark on the peer, with valid checksums, and delivered to a UDP
// socket there. Run privileged tests under `flock /tmp/daqiri-priv.lock`.
func TestBridgeVeth(t *testing.T) {
	netns.Require(t)
	tshark := testutil.RequireTool(t, "tshark", "Debian: apt-get install tshark; CI installs it from .ci/apt.d/mlx5.txt")
	pair := netns.NewPairWith(t, netns.PairOptions{MTU: 1500})
	var sock *afpacket.Socket
	must(t, pair.A.Do(func() error {
		s, err := afpacket.Open(pair.VethA)
		sock = s
		return err
	}))
	t.Cleanup(func() { sock.Close() })

	e := newEnv(t)
	rxcq := e.newCQ(6, nil)
	rq := e.newRQ(rxcq, 6, 2048, 0, 0)
	rq.post(64)
	tirn := e.id()
	must(t, e.nic.CreateTIR(TIRParams{TIRN: tirn, InlineRQ: rq.rqn}))
	// Steering: UDP to port 7000 goes to the RQ; everything else (ARP, IPv6, ICMP) misses.
	ft, g := e.id(), e.id()
	must(t, e.nic.CreateFlowTable(FlowTableParams{Type: TableNICRX, ID: ft, LogSize: 2}))
	crit := make([]byte, matchParamBytes)
	prm.FTEMatchSetLyr24.IPProtocol.Set(crit, 0xff)
	prm.FTEMatchSetLyr24.UDPDport.Set(crit, 0xffff)
	must(t, e.nic.CreateFlowGroup(FlowGroupParams{Type: TableNICRX, Table: ft, ID: g, Start: 0, End: 0, CriteriaEnable: 1, Criteria: crit}))
	val := make([]byte, matchParamBytes)
	prm.FTEMatchSetLyr24.IPProtocol.Set(val, protoUDP)
	prm.FTEMatchSetLyr24.UDPDport.Set(val, 7000)
	must(t, e.nic.SetFTE(FTEParams{Type: TableNICRX, Table: ft, Group: g, Action: ActionFwdDest, FlowTag: 0x70, Dests: []Dest{{DestTIR, tirn}}, Value: val}))
	must(t, e.nic.SetRoot(TableNICRX, ft))
	txcq := e.newCQ(6, nil)
	sq := e.newSQ(txcq, 6, nil)

	ctx, cancel := context.WithCancel(context.Background())
	bridged := make(chan error, 1)
	go func() { bridged <- Bridge(ctx, e.nic, sock) }()
	defer func() {
		cancel()
		if err := <-bridged; err != context.Canceled {
			t.Errorf("bridge: %v", err)
		}
	}()

	// Peer → model: the peer's kernel sends five datagrams to the veth end's address.
	const n = 5
	must(t, pair.B.Do(func() error {
		// Unconnected: the veth end's own kernel answers port unreachable, which must not
		// fail the later sends.
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: pair.AddrB.AsSlice()})
		if err != nil {
			return err
		}
		defer c.Close()
		to := &net.UDPAddr{IP: pair.AddrA.AsSlice(), Port: 7000}
		for i := 0; i < n; i++ {
			if _, err := c.WriteToUDP([]byte(fmt.Sprintf("peer-to-model-%d", i)), to); err != nil {
				return err
			}
		}
		return nil
	}))
	var got []string
	deadline := time.Now().Add(10 * time.Second)
	for len(got) < n && time.Now().Before(deadline) {
		e.nic.Step(64)
		for _, c := range rxcq.poll() {
			idx := prm.CQE64.WQECounter.Get(c[:]) & 63
			f := rq.mem[idx][:prm.CQE64.ByteCnt.Get(c[:])]
			if tag := prm.CQE64.SopDropQPN.Get(c[:]) & 0xffffff; tag != 0x70 {
				t.Fatalf("flow tag %#x", tag)
			}
			got = append(got, string(f[42:]))
		}
		time.Sleep(time.Millisecond)
	}
	for i := 0; i < n; i++ {
		if i >= len(got) || got[i] != fmt.Sprintf("peer-to-model-%d", i) {
			t.Fatalf("model received %q, want %d datagrams from the peer", got, n)
		}
	}

	// Model → peer: tshark captures on the peer's end, a UDP socket there receives.
	var lis *net.UDPConn
	must(t, pair.B.Do(func() error {
		var err error
		lis, err = net.ListenUDP("udp4", &net.UDPAddr{IP: pair.AddrB.AsSlice(), Port: 7001})
		return err
	}))
	defer lis.Close()
	ts := netns.StartTshark(t, tshark, pair.B, pair.VethB, "udp dst port 7001", "-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE",
		"-T", "fields", "-E", "separator=|", "-e", "eth.src", "-e", "ip.src", "-e", "ip.dst",
		"-e", "udp.dstport", "-e", "data.data", "-e", "ip.checksum.status", "-e", "udp.checksum.status")
	lines := ts.Lines
	send := func(payload string) {
		f := udpFrame(pair.AddrA.As4(), pair.AddrB.As4(), 7000, 7001, 0, 0)
		f = append(f, payload...)
		copy(f[0:6], pair.MACB)
		copy(f[6:12], pair.MACA)
		binary.BigEndian.PutUint16(f[16:], uint16(len(f)-14)) // IPv4 total length
		binary.BigEndian.PutUint16(f[38:], uint16(len(f)-34)) // UDP length
		// Checksums zeroed: the WQE asks the device for them.
		f[24], f[25], f[40], f[41] = 0, 0, 0, 0
		sq.send(f, prm.WQEEthL3Csum|prm.WQEEthL4Csum, prm.WQECtrlCQUpdate)
		e.nic.Step(64)
	}
	probes := ts.WaitLive(t, send) // no counted frame before tshark captures
	for i := 0; i < n; i++ {
		send(fmt.Sprintf("model-to-peer-%d", i))
	}
	if c := e.nic.Counters(false); c.TXPackets != uint64(n+probes) || c.TXErrors != 0 {
		t.Fatalf("model sent %d frames, %d errors; want %d", c.TXPackets, c.TXErrors, n+probes)
	}
	if cq := txcq.poll(); len(cq) != n+probes {
		t.Fatalf("%d requester CQEs, want %d", len(cq), n+probes)
	}
	buf := make([]byte, 2048)
	for i := 0; i < n; {
		lis.SetReadDeadline(time.Now().Add(10 * time.Second))
		k, from, err := lis.ReadFromUDP(buf)
		if err != nil {
			t.Fatalf("peer socket: %v after %d datagrams", err, i)
		}
		if bytes.HasPrefix(buf[:k], []byte("probe-")) {
			continue
		}
		i++
		if want := fmt.Sprintf("model-to-peer-%d", i-1); string(buf[:k]) != want || from.Port != 7000 {
			t.Fatalf("peer socket got %q from %v, want %q", buf[:k], from, want)
		}
	}
	var decoded []string
	for len(decoded) < n {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("tshark ended after %d frames: %s", len(decoded), ts.Stderr())
			}
			if !strings.Contains(l, fmt.Sprintf("%x", "probe-")) {
				decoded = append(decoded, l)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("tshark decoded %d frames, want %d", len(decoded), n)
		}
	}
	for i, l := range decoded {
		fs := strings.Split(l, "|")
		payload := fmt.Sprintf("%x", fmt.Sprintf("model-to-peer-%d", i))
		good := func(s string) bool { return s == "1" || s == "Good" }
		if len(fs) != 7 || fs[0] != pair.MACA.String() || fs[1] != pair.AddrA.String() || fs[2] != pair.AddrB.String() ||
			fs[3] != "7001" || strings.ReplaceAll(fs[4], ":", "") != payload || !good(fs[5]) || !good(fs[6]) {
			t.Fatalf("tshark line %d: %q", i, l)
		}
	}
}

// gsoConn is a GSOConn that hands out queued frames, each with its segment size.
type gsoConn struct {
	frames [][]byte
	mss    []int
}

func (c *gsoConn) Send([]byte) error { return nil }
func (c *gsoConn) Recv(buf []byte, timeout time.Duration) (int, error) {
	n, _, err := c.RecvGSO(buf, timeout)
	return n, err
}
func (c *gsoConn) RecvGSO(buf []byte, timeout time.Duration) (int, int, error) {
	if len(c.frames) == 0 {
		time.Sleep(time.Millisecond)
		return 0, 0, nil
	}
	f, m := c.frames[0], c.mss[0]
	c.frames, c.mss = c.frames[1:], c.mss[1:]
	return copy(buf, f), m, nil
}

// TestBridgeSegmentsGSO: a frame the bridge's socket reports as unsegmented (a veth with
// GSO on hands the peer stack's whole UDP or TCP packet over) reaches the port as the
// segments a NIC would have sent, each with valid IPv4 and UDP checksums and the payload in
// order; a frame that cannot be segmented (not TCP or UDP) is dropped; an ordinary frame
// passes as it is.
func TestBridgeSegmentsGSO(t *testing.T) {
	e := newEnv(t)
	cq := e.newCQ(6, nil)
	rq := e.newRQ(cq, 6, 2048, 0, 0)
	rq.post(64)
	e.direct(rq)
	big := udpFrame([4]byte{10, 0, 0, 2}, [4]byte{10, 0, 0, 1}, 5000, 7000, 2500, 1)
	// The peer's stack leaves a GSO frame's L4 checksum to the device; scramble it.
	big[40], big[41] = 0x12, 0x34
	arp := make([]byte, 60)
	binary.BigEndian.PutUint16(arp[12:], 0x0806)
	small := udpFrame([4]byte{10, 0, 0, 2}, [4]byte{10, 0, 0, 1}, 5000, 7001, 10, 9)
	c := &gsoConn{frames: [][]byte{big, arp, small}, mss: []int{1000, 1000, 0}}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Bridge(ctx, e.nic, c) }()
	var got [][]byte
	for deadline := time.Now().Add(10 * time.Second); len(got) < 4 && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		e.nic.Step(64)
		for _, q := range cq.poll() {
			idx := prm.CQE64.WQECounter.Get(q[:]) & 63
			got = append(got, bytes.Clone(rq.mem[idx][:prm.CQE64.ByteCnt.Get(q[:])]))
		}
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Errorf("bridge: %v", err)
	}
	if len(got) != 4 {
		t.Fatalf("the port received %d frames, want 3 segments and the small frame", len(got))
	}
	var payload []byte
	for i, f := range got[:3] {
		p := parse(f)
		if !l3OK(f, &p.outer) || !l4OK(f, &p.outer) {
			t.Errorf("segment %d: bad checksum", i)
		}
		if want := min(1000, 2500-1000*i); len(f) != 42+want || int(binary.BigEndian.Uint16(f[38:])) != 8+want {
			t.Errorf("segment %d: %d bytes, UDP length %d; want a payload of %d", i, len(f), binary.BigEndian.Uint16(f[38:]), want)
		}
		payload = append(payload, f[42:]...)
	}
	if !bytes.Equal(payload, big[42:]) {
		t.Error("the segments' payloads are not the frame's, in order")
	}
	if !bytes.Equal(got[3], small) {
		t.Error("the ordinary frame changed on its way")
	}
}
