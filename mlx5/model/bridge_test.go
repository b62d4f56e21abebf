package model_test

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
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// txQueue is an SQ the test posts raw WQEs to: a 64-entry ring of 64-byte basic blocks, its
// doorbell record, and the UAR whose BlueFlame register rings it (rdma-core qp.c).
type txQueue struct {
	p        *port
	sq       uint32
	ring     uint64
	dbr      uint64
	pc       uint32
	cq       *cqRing
	inlineHd int
}

func (p *port) newTX() *txQueue {
	p.t.Helper()
	cq := p.newCQ(6)
	in := p.sqIn(cq.n, p.createTIS(), nil, nil)
	wb := prm.CreateSQIn.Ctx.Off + prm.SQC.WQ.Off
	q := &txQueue{p: p, cq: cq, ring: prm.WQ.PAS.At(wb).Get(in), dbr: prm.WQ.DbrAddr.At(wb).Get(in), inlineHd: 18}
	q.sq = uint32(get(p.mustCmd(in, 16), prm.CreateSQOut.SQN))
	if err := p.modifyQueue(prm.CmdOpModifySQ, q.sq, prm.SQStateRST, prm.SQStateRDY); err != nil {
		p.t.Fatal(err)
	}
	return q
}

// send posts one SEND WQE (18 header bytes inline, the rest by pointer), asks for a CQE and
// the given checksum offloads, updates the doorbell record and rings the BlueFlame register.
func (q *txQueue) send(f []byte, cs uint8) {
	p := q.p
	payload := p.alloc(len(f)-q.inlineHd, 64)
	copy(p.at(payload, len(f)-q.inlineHd), f[q.inlineHd:])
	w := p.at(q.ring+uint64(q.pc%64)*64, 64)
	clear(w)
	prm.WQECtrl.OpModIdxOpcode.Set(w, uint64(q.pc&0xffff)<<8|prm.WQEOpSend)
	prm.WQECtrl.QPNDS.Set(w, uint64(q.sq)<<8|4)
	prm.WQECtrl.FmCeSe.Set(w, prm.WQECtrlCQUpdate)
	eth := w[16:]
	prm.WQEEth.CSFlags.Set(eth, uint64(cs))
	prm.WQEEth.InlineHdrSz.Set(eth, uint64(q.inlineHd))
	copy(eth[14:], f[:q.inlineHd])
	data := w[48:]
	prm.WQEData.ByteCount.Set(data, uint64(len(f)-q.inlineHd))
	prm.WQEData.LKey.Set(data, uint64(p.lkey))
	prm.WQEData.Addr.Set(data, payload)
	q.pc++
	binary.BigEndian.PutUint32(p.at(q.dbr+4*prm.SndDBR, 4), q.pc&0xffff)
	if _, err := p.d.BAR0().WriteAt(w[:8], int64(p.uar)<<12+prm.UARBlueFlame); err != nil {
		p.t.Fatal(err)
	}
}

// rxQueue is an RQ of 64 one-segment WQEs with 2 KiB buffers, all posted.
type rxQueue struct {
	rq   uint32
	cq   *cqRing
	bufs []uint64
}

func (p *port) newRX() *rxQueue {
	p.t.Helper()
	r := &rxQueue{cq: p.newCQ(7)}
	in := p.rqIn(r.cq.n, nil, nil)
	wb := prm.CreateRQIn.Ctx.Off + prm.RQC.WQ.Off
	ring, dbr := prm.WQ.PAS.At(wb).Get(in), prm.WQ.DbrAddr.At(wb).Get(in)
	r.rq = uint32(get(p.mustCmd(in, 16), prm.CreateRQOut.RQN))
	for i := 0; i < 64; i++ {
		b := p.alloc(2048, 64)
		seg := p.at(ring+uint64(i)*16, 16)
		prm.WQEData.ByteCount.Set(seg, 2048)
		prm.WQEData.LKey.Set(seg, uint64(p.lkey))
		prm.WQEData.Addr.Set(seg, b)
		r.bufs = append(r.bufs, b)
	}
	binary.BigEndian.PutUint32(p.at(dbr+4*prm.RcvDBR, 4), 64)
	if err := p.modifyQueue(prm.CmdOpModifyRQ, r.rq, prm.RQStateRST, prm.RQStateRDY); err != nil {
		p.t.Fatal(err)
	}
	return r
}

// steerUDP makes the root RX table send IPv4 UDP to dport to a direct TIR on rq with a flow
// tag; everything else misses (mlx5_ifc.h fte_match_set_lyr_2_4 ip_protocol, udp_dport).
func (p *port) steerUDP(rq uint32, dport int, tag int) {
	p.t.Helper()
	tir := get(p.mustCmd(in(prm.CmdOpCreateTIR, 0, int(prm.CreateTIRIn.Ctx.End()/8),
		prm.TIRC.TransportDomain.At(prm.CreateTIRIn.Ctx.Off), p.td, prm.TIRC.InlineRQN.At(prm.CreateTIRIn.Ctx.Off), rq), 16), prm.CreateTIROut.TIRN)
	fb := prm.CreateFlowTableIn.FlowTableContext.Off
	ft := get(p.mustCmd(in(prm.CmdOpCreateFlowTable, 0, int(prm.CreateFlowTableIn.FlowTableContext.End()/8), prm.FlowTableContext.LogSize.At(fb), 2), 16), prm.CreateFlowTableOut.TableID)
	crit := prm.CreateFlowGroupIn.MatchCriteria.Off
	fg := get(p.mustCmd(in(prm.CmdOpCreateFlowGroup, 0, int(prm.CreateFlowGroupIn.MatchCriteria.End()/8), prm.CreateFlowGroupIn.TableID, ft,
		prm.CreateFlowGroupIn.MatchCriteriaEnable, prm.MatchOuterHeaders,
		prm.FTEMatchSetLyr24.IPProtocol.At(crit), 0xff, prm.FTEMatchSetLyr24.UDPDport.At(crit), 0xffff), 16), prm.CreateFlowGroupOut.GroupID)
	cb := prm.SetFTEIn.FlowContext.Off
	fc := prm.FlowContext
	mv := cb + fc.MatchValue.Off
	p.mustCmd(in(prm.CmdOpSetFlowTableEntry, 0, int(fc.Destination.At(cb).End()/8), prm.SetFTEIn.TableID, ft,
		fc.GroupID.At(cb), fg, fc.Action.At(cb), prm.FlowActionFwdDest, fc.FlowTag.At(cb), tag, fc.DestinationListSize.At(cb), 1,
		prm.FTEMatchSetLyr24.IPProtocol.At(mv), 17, prm.FTEMatchSetLyr24.UDPDport.At(mv), dport,
		prm.DestFormatStruct.DestinationType.At(cb+fc.Destination.Off), prm.FlowDestTIR,
		prm.DestFormatStruct.DestinationID.At(cb+fc.Destination.Off), tir), 16)
	p.mustCmd(in(prm.CmdOpSetFlowTableRoot, 0, 0x40, prm.SetFlowTableRootIn.TableID, ft), 16)
}

// udp4 builds an Ethernet/IPv4/UDP frame with zero checksums (the WQE asks the device).
func udp4(dmac, smac net.HardwareAddr, src, dst [4]byte, sport, dport uint16, payload []byte) []byte {
	f := make([]byte, 42, 42+len(payload))
	copy(f[0:], dmac)
	copy(f[6:], smac)
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:]
	ip[0], ip[8], ip[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(ip[2:], uint16(28+len(payload)))
	copy(ip[12:], src[:])
	copy(ip[16:], dst[:])
	binary.BigEndian.PutUint16(ip[20:], sport)
	binary.BigEndian.PutUint16(ip[22:], dport)
	binary.BigEndian.PutUint16(ip[24:], uint16(8+len(payload)))
	return append(f, payload...)
}

// TestBridgeVethDevice bridges a model Device (set up entirely through commands) to one end
// of a veth pair whose other end is in another network namespace: datagrams the peer's
// kernel sends arrive in the RQ through the flow table the commands built, and frames the
// model sends as raw WQEs rung through BAR0, with checksums left to the offload, are decoded
// by tshark on the peer with valid checksums and delivered to a UDP socket there. Run it under
// `flock /tmp/daqiri-priv.lock`.
func TestBridgeVethDevice(t *testing.T) {
	netns.Require(t)
	tshark := testutil.RequireTool(t, "tshark", "Debian: apt-get install tshark; CI installs it from .ci/apt.d/mlx5.txt")
	pair := netns.NewPairWith(t, netns.PairOptions{MTU: 1500})
	p := newPort(t)
	rx := p.newRX()
	p.steerUDP(rx.rq, 7000, 0x70)
	tx := p.newTX()

	ctx, cancel := context.WithCancel(context.Background())
	bridged := make(chan error, 1)
	go func() { bridged <- pair.A.Do(func() error { return p.d.Bridge(ctx, pair.VethA) }) }()
	defer func() {
		cancel()
		if err := <-bridged; err != context.Canceled {
			t.Errorf("bridge: %v", err)
		}
	}()

	// Peer → model. The bridge's socket opens in its goroutine, so the peer first sends
	// probes (at most 100, 100 ms apart) until one arrives, then the counted datagrams.
	peerSend := func(payloads ...string) {
		t.Helper()
		if err := pair.B.Do(func() error {
			c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: pair.AddrB.AsSlice()})
			if err != nil {
				return err
			}
			defer c.Close()
			for _, m := range payloads {
				if _, err := c.WriteToUDP([]byte(m), &net.UDPAddr{IP: pair.AddrA.AsSlice(), Port: 7000}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	receive := func() []string {
		p.d.Step(64)
		var got []string
		for e := rx.cq.poll(); e != nil; e = rx.cq.poll() {
			if tag := prm.CQE64.SopDropQPN.Get(e) & 0xffffff; tag != 0x70 {
				t.Fatalf("flow tag %#x", tag)
			}
			f := p.at(rx.bufs[prm.CQE64.WQECounter.Get(e)%64], int(prm.CQE64.ByteCnt.Get(e)))
			got = append(got, string(f[42:]))
		}
		return got
	}
	up := false
	for i := 0; i < 100 && !up; i++ {
		peerSend("probe")
		time.Sleep(100 * time.Millisecond)
		up = len(receive()) > 0
	}
	if !up {
		t.Fatalf("no probe from the peer reached the device (counters %+v)", p.d.Counters())
	}
	const n = 5
	var want []string
	for i := 0; i < n; i++ {
		want = append(want, fmt.Sprintf("peer-to-device-%d", i))
	}
	peerSend(want...)
	var got []string
	for deadline := time.Now().Add(10 * time.Second); len(got) < n && time.Now().Before(deadline); {
		for _, m := range receive() {
			if m != "probe" {
				got = append(got, m)
			}
		}
		time.Sleep(time.Millisecond)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("device received %q, want %q (counters %+v)", got, want, p.d.Counters())
	}

	// Device → peer, with tshark on the peer's end and a UDP socket there.
	var lis *net.UDPConn
	if err := pair.B.Do(func() error {
		var err error
		lis, err = net.ListenUDP("udp4", &net.UDPAddr{IP: pair.AddrB.AsSlice(), Port: 7001})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	ts := netns.StartTshark(t, tshark, pair.B, pair.VethB, "udp dst port 7001", "-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE",
		"-T", "fields", "-E", "separator=|", "-e", "eth.src", "-e", "ip.src", "-e", "ip.dst", "-e", "udp.dstport",
		"-e", "data.data", "-e", "ip.checksum.status", "-e", "udp.checksum.status")
	lines := ts.Lines
	send := func(payload string) {
		tx.send(udp4(pair.MACB, pair.MACA, pair.AddrA.As4(), pair.AddrB.As4(), 7000, 7001, []byte(payload)), prm.WQEEthL3Csum|prm.WQEEthL4Csum)
		p.d.Step(64)
	}
	probes := ts.WaitLive(t, send) // no counted frame before tshark captures
	for i := 0; i < n; i++ {
		send(fmt.Sprintf("device-to-peer-%d", i))
	}
	if c := p.d.Counters(); c.TXPackets != uint64(n+probes) || c.TXErrors != 0 {
		t.Fatalf("device sent %d frames with %d errors, want %d", c.TXPackets, c.TXErrors, n+probes)
	}
	cqes := 0
	for e := tx.cq.poll(); e != nil; e = tx.cq.poll() {
		cqes++
	}
	if cqes != n+probes {
		t.Fatalf("%d requester CQEs, want %d", cqes, n+probes)
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
		if want := fmt.Sprintf("device-to-peer-%d", i); string(buf[:k]) != want || from.Port != 7000 {
			t.Fatalf("peer socket got %q from %v, want %q", buf[:k], from, want)
		}
		i++
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
	good := func(s string) bool { return s == "1" || s == "Good" }
	for i, l := range decoded {
		fs := strings.Split(l, "|")
		if len(fs) != 7 || fs[0] != pair.MACA.String() || fs[1] != pair.AddrA.String() || fs[2] != pair.AddrB.String() ||
			fs[3] != "7001" || strings.ReplaceAll(fs[4], ":", "") != fmt.Sprintf("%x", fmt.Sprintf("device-to-peer-%d", i)) ||
			!good(fs[5]) || !good(fs[6]) {
			t.Fatalf("tshark line %d: %q", i, l)
		}
	}
}
