package datapath

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// tcpFrame is an IPv4 TCP frame with n payload bytes and the given flags (wrong checksums:
// the offload fills them).
func tcpFrame(seq uint32, flags byte, n int) []byte {
	f := make([]byte, 14+20+20+n)
	copy(f[0:6], []byte{0x02, 0, 0, 0, 0, 2})
	copy(f[6:12], []byte{0x02, 0, 0, 0, 0, 1})
	binary.BigEndian.PutUint16(f[12:], etherIPv4)
	ip := f[14:]
	ip[0], ip[8], ip[9] = 0x45, 64, protoTCP
	binary.BigEndian.PutUint16(ip[2:], uint16(40+n))
	binary.BigEndian.PutUint16(ip[4:], 0x1000)
	copy(ip[12:], []byte{10, 0, 0, 1})
	copy(ip[16:], []byte{10, 0, 0, 2})
	tcp := ip[20:]
	binary.BigEndian.PutUint16(tcp[0:], 40000)
	binary.BigEndian.PutUint16(tcp[2:], 5201)
	binary.BigEndian.PutUint32(tcp[4:], seq)
	tcp[12], tcp[13] = 5<<4, flags
	for i := range n {
		tcp[20+i] = byte(i * 7)
	}
	return f
}

// lsoWQE is an LSO WQE as mlx5e builds it: mss in the Ethernet segment, the headers inline,
// the payload by pointer.
func (p *portPair) lsoWQE(f []byte, hl, mss int, cs uint8) *wqe {
	w := (&wqe{opcode: prm.WQEOpTSO, fm: prm.WQECtrlCQUpdate}).eth(cs, f[:hl])
	prm.WQEEth.MSS.Set(w.body, uint64(mss))
	iova, mem := p.a.alloc(len(f) - hl)
	copy(mem, f[hl:])
	return w.ptr(testLKey, iova, len(f)-hl)
}

// TestLSO: an LSO WQE leaves as MSS-sized segments with the headers replicated and fixed as
// Linux's own segmentation makes them (lso.go), checksums as asked; UDP (GSO) gets its
// length per segment; an LSO WQE without an MSS, or of a tunnelled packet, fails.
func TestLSO(t *testing.T) {
	p := newPair(t, false)
	const seq = 0x10203040
	f := tcpFrame(seq, 0x80|0x18|0x01, 2500) // CWR, PSH+ACK, FIN
	p.sq.doorbell(p.sq.post(p.lsoWQE(f, 54, 1000, prm.WQEEthL3Csum|prm.WQEEthL4Csum)))
	p.step()
	got, _ := p.received(t)
	if len(got) != 3 {
		t.Fatalf("%d segments, want 3", len(got))
	}
	sent := 0
	for i, g := range got {
		want := min(1000, 2500-sent)
		ip, tcp := g[14:], g[34:]
		if len(g) != 54+want || int(binary.BigEndian.Uint16(ip[2:])) != 40+want {
			t.Fatalf("segment %d: %d bytes, IP length %d", i, len(g), binary.BigEndian.Uint16(ip[2:]))
		}
		if id := binary.BigEndian.Uint16(ip[4:]); id != 0x1000+uint16(i) {
			t.Fatalf("segment %d: IP id %#x", i, id)
		}
		if s := binary.BigEndian.Uint32(tcp[4:]); s != seq+uint32(sent) {
			t.Fatalf("segment %d: seq %#x", i, s)
		}
		flags := tcp[13]
		if (flags&0x01 != 0) != (i == 2) || (flags&0x08 != 0) != (i == 2) || (flags&0x80 != 0) != (i == 0) || flags&0x10 == 0 {
			t.Fatalf("segment %d: flags %#x", i, flags)
		}
		if !bytes.Equal(g[54:], f[54+sent:54+sent+want]) {
			t.Fatalf("segment %d: payload differs", i)
		}
		if csum16(0, ip[:20]) != 0xffff {
			t.Fatalf("segment %d: IPv4 header checksum", i)
		}
		h := parseL2(g, 0)
		if csum16(pseudo(g, &h, 20+want), tcp[:20+want]) != 0xffff {
			t.Fatalf("segment %d: TCP checksum", i)
		}
		sent += want
	}
	if c := p.a.nic.Counters(false); c.TXPackets != 3 {
		t.Fatalf("TX counters %+v, want 3 frames", c)
	}

	// UDP GSO: lengths per segment.
	u := udpFrame([4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 7, 9, 2100, 1)
	p.sq.doorbell(p.sq.post(p.lsoWQE(u, 42, 1000, prm.WQEEthL3Csum|prm.WQEEthL4Csum)))
	p.step()
	got, _ = p.received(t)
	if len(got) != 3 {
		t.Fatalf("UDP: %d segments, want 3", len(got))
	}
	for i, g := range got {
		want := []int{1000, 1000, 100}[i]
		if l := binary.BigEndian.Uint16(g[38:]); int(l) != 8+want {
			t.Fatalf("UDP segment %d: length %d", i, l)
		}
		h := parseL2(g, 0)
		if csum16(pseudo(g, &h, 8+want), g[34:]) != 0xffff {
			t.Fatalf("UDP segment %d: checksum", i)
		}
	}

	// Errors: no MSS; a VXLAN-encapsulated packet.
	cq := p.txcq
	cq.poll()
	bad := p.lsoWQE(f, 54, 1000, 0)
	prm.WQEEth.MSS.Set(bad.body, 0)
	idx := p.sq.post(bad)
	p.sq.doorbell(idx)
	p.step()
	cqes := cq.poll()
	if len(cqes) != 1 || prm.CQEOpcode(cqes[0][63]) != prm.CQEOpReqErr || uint8(prm.ErrCQE.Syndrome.Get(cqes[0][:])) != prm.CQESyndLocalLength {
		t.Fatalf("LSO without MSS: CQEs %x", cqes)
	}
}

// TestLSOTunnelRefused: an LSO WQE of a VXLAN packet fails with a local QP operation error
// (tunnel LSO is not modelled).
func TestLSOTunnelRefused(t *testing.T) {
	p := newPair(t, false)
	inner := tcpFrame(1, 0x10, 3000)
	outer := udpFrame([4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1234, vxlanPort, 8+len(inner), 0)
	copy(outer[42+8:], inner)
	outer[42] = 0x08 // VXLAN flags: VNI valid
	p.sq.doorbell(p.sq.post(p.lsoWQE(outer, 42+8+54, 1000, 0)))
	p.step()
	cqes := p.txcq.poll()
	if len(cqes) != 1 || prm.CQEOpcode(cqes[0][63]) != prm.CQEOpReqErr || uint8(prm.ErrCQE.Syndrome.Get(cqes[0][:])) != prm.CQESyndLocalQPOp {
		t.Fatalf("tunnelled LSO: CQEs %x", cqes)
	}
}
