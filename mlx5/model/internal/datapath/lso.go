package datapath

import (
	"encoding/binary"

	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// LSO: a WQE with opcode MLX5_OPCODE_LSO (prm.WQEOpTSO) carries one large TCP or UDP packet
// and the Ethernet segment's mss; the device sends it as segments of at most mss payload
// bytes, each with the headers replicated and fixed. Linux's mlx5e sends these for TSO and
// UDP GSO (en_tx.c mlx5e_sq_xmit_prepare: opcode LSO, eseg mss = gso_size, the headers
// inline; mlx5e_udp_gso_handle_tx_skb), and it will not drive a device whose max_lso_cap
// is 0 (dev.c mlx5_eth_supported). The fixes per segment are what Linux's own segmentation
// (net/ipv4/tcp_offload.c, udp_offload.c) produces: IPv4 total length and identification
// (incremented per segment), IPv6 payload length, TCP sequence number advanced by the
// payload sent before, FIN and PSH only on the last segment, CWR only on the first, UDP
// length; checksums as the WQE's cs_flags ask. Tunnelled packets (inner headers behind
// VXLAN or GRE) are not segmented: the WQE fails with a local QP operation error
// (inferred: the model does not implement tunnel LSO).

// MaxLSOLog is the log2 of the largest packet an LSO WQE may carry (the model's
// max_lso_cap): 64 KiB, Linux's default GSO size limit.
const MaxLSOLog = 16

// buildLSO returns the segments of an LSO WQE.
func (n *NIC) buildLSO(s *sq, w []byte) ([][]byte, *wqeError) {
	cs, inline, vlan, off, werr := ethSeg(w)
	if werr != nil {
		return nil, werr
	}
	mss := int(prm.WQEEth.MSS.Get(w[16:]))
	if mss == 0 {
		return nil, &wqeError{prm.CQESyndLocalLength}
	}
	f := append([]byte(nil), inline...)
	for off < len(w) {
		var d []byte
		d, off, werr = n.dataSeg(w, off)
		if werr != nil {
			return nil, werr
		}
		f = append(f, d...)
		if len(f) > 1<<MaxLSOLog+256 {
			return nil, &wqeError{prm.CQESyndLocalLength}
		}
	}
	if vlan != 0 && len(f) >= 12 {
		g := make([]byte, 0, len(f)+4)
		g = append(g, f[:12]...)
		g = binary.BigEndian.AppendUint16(g, etherCVLAN)
		g = binary.BigEndian.AppendUint16(g, uint16(vlan))
		f = append(g, f[12:]...)
	}
	return segment(f, mss, cs)
}

// segment cuts the TCP or UDP packet f into segments of at most mss payload bytes, each with
// f's headers fixed as Linux's own segmentation fixes them, and fills the checksums cs asks
// for (prm.WQEEth* flags).
func segment(f []byte, mss int, cs uint8) ([][]byte, *wqeError) {
	p := parse(f)
	h := &p.outer
	if p.tunneled || h.l3 < 0 || h.l4 < 0 || (h.proto != protoTCP && h.proto != protoUDP) {
		return nil, &wqeError{prm.CQESyndLocalQPOp}
	}
	hl := h.l4 + h.l4Len
	if hl > len(f) || hl+mss > maxFrame {
		return nil, &wqeError{prm.CQESyndLocalLength}
	}
	payload := f[hl:]
	if len(payload) == 0 {
		// Nothing to segment: send the packet as it is.
		offload(f, cs)
		return [][]byte{f}, nil
	}
	var segs [][]byte
	var seq uint32
	var id uint16
	if h.proto == protoTCP {
		seq = binary.BigEndian.Uint32(f[h.l4+4:])
	}
	if h.ipVersion == 4 {
		id = binary.BigEndian.Uint16(f[h.l3+4:])
	}
	for i, sent := 0, 0; sent < len(payload); i++ {
		k := min(mss, len(payload)-sent)
		seg := make([]byte, 0, hl+k)
		seg = append(seg, f[:hl]...)
		seg = append(seg, payload[sent:sent+k]...)
		last := sent+k == len(payload)
		if h.ipVersion == 4 {
			binary.BigEndian.PutUint16(seg[h.l3+2:], uint16(len(seg)-h.l3))
			binary.BigEndian.PutUint16(seg[h.l3+4:], id+uint16(i))
		} else {
			binary.BigEndian.PutUint16(seg[h.l3+4:], uint16(len(seg)-h.l3-40))
		}
		switch h.proto {
		case protoTCP:
			binary.BigEndian.PutUint32(seg[h.l4+4:], seq+uint32(sent))
			flags := seg[h.l4+13]
			if !last {
				flags &^= 0x01 | 0x08 // FIN, PSH
			}
			if i > 0 {
				flags &^= 0x80 // CWR
			}
			seg[h.l4+13] = flags
		case protoUDP:
			binary.BigEndian.PutUint16(seg[h.l4+4:], uint16(len(seg)-h.l4))
		}
		offload(seg, cs)
		segs = append(segs, seg)
		sent += k
	}
	return segs, nil
}
