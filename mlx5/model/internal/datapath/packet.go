package datapath

import (
	"encoding/binary"
	"math/bits"

	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// Ethertypes and IP protocols the parser knows.
const (
	etherIPv4  = 0x0800
	etherIPv6  = 0x86dd
	etherCVLAN = 0x8100
	etherSVLAN = 0x88a8
	protoTCP   = 6
	protoUDP   = 17
	protoGRE   = 47
	vxlanPort  = 4789
)

// headers is what the device's parser finds in one layer of a frame (outer, or inner
// behind a tunnel).
type headers struct {
	dmac, smac [6]byte
	ethertype  uint16 // after VLAN tags
	vlans      []vlanTag
	l3         int // offset of the IP header, -1 if none
	ipVersion  uint8
	ihl        uint8
	proto      uint8
	dscp, ecn  uint8
	ttl        uint8
	frag       bool
	src, dst   [16]byte // IPv4 in the last 4 bytes, as fte_match_set_lyr_2_4 keeps it
	l4         int      // offset of the L4 header, -1 if none
	sport      uint16
	dport      uint16
	tcpFlags   uint16
	l4Len      int
}

type vlanTag struct {
	tpid uint16
	tci  uint16
}

// packet is a parsed frame: outer headers, tunnel fields and inner headers.
type packet struct {
	frame    []byte
	outer    headers
	tunneled bool
	vni      uint32
	greKey   uint32
	greProto uint16
	greK     bool
	inner    headers
	// innerOff is where the tunnel's payload starts (the inner Ethernet header of VXLAN
	// and NVGRE, the inner IP header of a GRE L3 tunnel, innerL3); 0 when not tunneled.
	innerOff int
	innerL3  bool
}

// parseL2 parses Ethernet, up to two VLAN tags, IPv4/IPv6 and TCP/UDP starting at off.
// A truncated header stops the parse where it is; nothing beyond the frame is read.
func parseL2(f []byte, off int) headers {
	h := headers{l3: -1, l4: -1}
	if len(f) < off+14 {
		return h
	}
	copy(h.dmac[:], f[off:])
	copy(h.smac[:], f[off+6:])
	et := binary.BigEndian.Uint16(f[off+12:])
	p := off + 14
	for (et == etherCVLAN || et == etherSVLAN) && len(f) >= p+4 && len(h.vlans) < 2 {
		h.vlans = append(h.vlans, vlanTag{tpid: et, tci: binary.BigEndian.Uint16(f[p:])})
		et = binary.BigEndian.Uint16(f[p+2:])
		p += 4
	}
	h.ethertype = et
	parseIP(f, p, &h)
	return h
}

// parseL3 parses an IP packet of EtherType et at off (an L3 tunnel's payload): no L2.
func parseL3(f []byte, off int, et uint16) headers {
	h := headers{l3: -1, l4: -1, ethertype: et}
	parseIP(f, off, &h)
	return h
}

// parseIP parses the IPv4/IPv6 and TCP/UDP headers at p for h.ethertype.
func parseIP(f []byte, p int, h *headers) {
	switch h.ethertype {
	case etherIPv4:
		if len(f) < p+20 || f[p]>>4 != 4 {
			return
		}
		ihl := int(f[p]&0xf) * 4
		if ihl < 20 || len(f) < p+ihl {
			return
		}
		h.l3, h.ipVersion, h.ihl = p, 4, f[p]&0xf
		h.dscp, h.ecn = f[p+1]>>2, f[p+1]&3
		h.ttl, h.proto = f[p+8], f[p+9]
		fo := binary.BigEndian.Uint16(f[p+6:])
		h.frag = fo&0x3fff != 0
		copy(h.src[12:], f[p+12:p+16])
		copy(h.dst[12:], f[p+16:p+20])
		p += ihl
	case etherIPv6:
		if len(f) < p+40 || f[p]>>4 != 6 {
			return
		}
		h.l3, h.ipVersion = p, 6
		tc := binary.BigEndian.Uint16(f[p:]) >> 4 & 0xff
		h.dscp, h.ecn = uint8(tc>>2), uint8(tc&3)
		h.proto, h.ttl = f[p+6], f[p+7]
		copy(h.src[:], f[p+8:p+24])
		copy(h.dst[:], f[p+24:p+40])
		p += 40
	default:
		return
	}
	if h.frag {
		return
	}
	switch h.proto {
	case protoTCP:
		if len(f) >= p+20 {
			h.l4 = p
			h.sport, h.dport = binary.BigEndian.Uint16(f[p:]), binary.BigEndian.Uint16(f[p+2:])
			h.tcpFlags = binary.BigEndian.Uint16(f[p+12:]) & 0x1ff
			h.l4Len = int(f[p+12]>>4) * 4
		}
	case protoUDP:
		if len(f) >= p+8 {
			h.l4, h.l4Len = p, 8
			h.sport, h.dport = binary.BigEndian.Uint16(f[p:]), binary.BigEndian.Uint16(f[p+2:])
		}
	}
}

// parse parses a frame, and behind a VXLAN (UDP 4789) or GRE header the inner frame
// (transparent Ethernet bridging 0x6558) or the inner IP packet (GRE protocol IPv4/IPv6).
func parse(f []byte) *packet {
	p := &packet{}
	parseInto(p, f)
	return p
}

// parseInto is parse into a caller's packet (the NIC's, reused frame after frame).
func parseInto(p *packet, f []byte) {
	*p = packet{frame: f, outer: parseL2(f, 0)}
	o := &p.outer
	switch {
	case o.proto == protoUDP && o.l4 >= 0 && o.dport == vxlanPort && len(f) >= o.l4+16:
		v := f[o.l4+8:]
		if v[0]&0x08 != 0 { // the I flag: the VNI is valid (RFC 7348)
			p.tunneled = true
			p.vni = binary.BigEndian.Uint32(v[4:]) >> 8
			p.inner = parseL2(f, o.l4+16)
			p.innerOff = o.l4 + 16
		}
	case o.proto == protoGRE && o.l3 >= 0:
		g := o.l3 + int(o.ihl)*4
		if o.ipVersion == 6 {
			g = o.l3 + 40
		}
		if len(f) < g+4 {
			return
		}
		flags := binary.BigEndian.Uint16(f[g:])
		p.tunneled = true
		p.greProto = binary.BigEndian.Uint16(f[g+2:])
		q := g + 4
		if flags&0x8000 != 0 { // checksum present
			q += 4
		}
		if flags&0x2000 != 0 && len(f) >= q+4 {
			p.greK, p.greKey = true, binary.BigEndian.Uint32(f[q:])
			q += 4
		}
		if flags&0x1000 != 0 {
			q += 4
		}
		p.innerOff = q
		switch p.greProto {
		case 0x6558:
			p.inner = parseL2(f, q)
		case etherIPv4, etherIPv6:
			// An L3 tunnel: the inner IP header right after the GRE header.
			p.innerL3 = true
			p.inner = parseL3(f, q, p.greProto)
		}
	}
}

// matchParam lays a parsed frame out as an fte_match_param, so that a flow entry matches
// when (param & criteria) == (value & criteria) (mlx5_ifc.h fte_match_param: outer L2-L4,
// misc, inner L2-L4).
func (p *packet) matchParam() []byte {
	return p.matchParamInto(make([]byte, prm.FTEMatchParam.MiscParameters5.End()/8))
}

// matchParamInto is matchParam into b (a whole fte_match_param, cleared first: the NIC's,
// reused frame after frame).
func (p *packet) matchParamInto(b []byte) []byte {
	clear(b)
	setLyr24(b[prm.FTEMatchParam.OuterHeaders.ByteOff():], &p.outer)
	misc := b[prm.FTEMatchParam.MiscParameters.ByteOff():]
	m := &prm.FTEMatchSetMisc
	if len(p.outer.vlans) > 1 {
		v := p.outer.vlans[1]
		pos(m.OuterSecondPrio).set(misc, uint64(v.tci>>13))
		pos(m.OuterSecondCFI).set(misc, uint64(v.tci>>12&1))
		pos(m.OuterSecondVid).set(misc, uint64(v.tci&0xfff))
		if v.tpid == etherSVLAN {
			pos(m.OuterSecondSVLANTag).set(misc, 1)
		} else {
			pos(m.OuterSecondCVLANTag).set(misc, 1)
		}
	}
	if p.tunneled {
		pos(m.VXLANVNI).set(misc, uint64(p.vni))
		if p.greProto != 0 {
			pos(m.GREProtocol).set(misc, uint64(p.greProto))
			if p.greK {
				pos(m.GREKPresent).set(misc, 1)
				pos(m.GREKey).set(misc, uint64(p.greKey))
			}
		}
		setLyr24(b[prm.FTEMatchParam.InnerHeaders.ByteOff():], &p.inner)
	}
	return b
}

// setLyr24 writes h's fields into an fte_match_set_lyr_2_4 at b, which must be zero (the
// match parameter is cleared per frame). It writes the layout's bytes directly (byte
// offsets of prm.FTEMatchSetLyr24, mlx5_ifc.h): about twenty field writes through
// prm.SetBits per frame were a tenth of the model's receive steering. TestSetLyr24 holds it
// to the field-by-field definition.
func setLyr24(b []byte, h *headers) {
	b = b[:64:64] // fte_match_set_lyr_2_4 is 512 bits
	copy(b[0:4], h.smac[:4])
	copy(b[4:6], h.smac[4:])
	binary.BigEndian.PutUint16(b[6:], h.ethertype)
	copy(b[8:12], h.dmac[:4])
	copy(b[12:14], h.dmac[4:])
	var tags byte // byte 18: cvlan_tag, svlan_tag, frag, ip_version, tcp_flags bit 8
	if len(h.vlans) > 0 {
		v := h.vlans[0]
		if v.tpid == etherSVLAN {
			tags |= 1 << 6
		} else {
			tags |= 1 << 7
		}
		binary.BigEndian.PutUint16(b[14:], v.tci) // first_prio, first_cfi, first_vid
	}
	if h.l3 < 0 {
		b[18] = tags
		return
	}
	b[16] = h.proto
	b[17] = h.dscp<<2 | h.ecn&3
	if h.frag {
		tags |= 1 << 5
	}
	tags |= (h.ipVersion & 0xf) << 1
	if h.ipVersion == 4 {
		b[26] = h.ihl << 4
	}
	b[27] = h.ttl
	copy(b[32:48], h.src[:])
	copy(b[48:64], h.dst[:])
	if h.l4 >= 0 {
		switch h.proto {
		case protoTCP:
			binary.BigEndian.PutUint16(b[20:], h.sport)
			binary.BigEndian.PutUint16(b[22:], h.dport)
			tags |= byte(h.tcpFlags>>8) & 1
			b[19] = byte(h.tcpFlags)
		case protoUDP:
			binary.BigEndian.PutUint16(b[28:], h.sport)
			binary.BigEndian.PutUint16(b[30:], h.dport)
		}
	}
	b[18] = tags
}

// csum16 is the 16-bit ones' complement sum of b, folded, not inverted (RFC 1071).
//
// Eight bytes are added at a time, as one 64-bit big-endian number: 2^16 ≡ 1 modulo 0xffff,
// so folding the sum gives the 16-bit words' ones' complement sum (RFC 1071 section 2(B),
// deferred carries), and it is never 0 unless every word was.
//
// The bulk goes 64 bits at a time with the carries counted apart (each one is 2^64, which is
// ≡ 1 as well).
//
// From 64 bytes on, the bulk is summed as native little-endian words, without a byte swap per
// word: the ones' complement sum does not depend on byte order (RFC 1071 section 2(B)), so
// that sum, folded to 16 bits and byte-swapped, is the big-endian one; a fold of a non-zero
// sum is never 0, so the result is 0 exactly as before. On amd64 with AVX2 all of b's 16-bit
// words are added in vector lanes (sumWordsAVX2: the sum as an integer; an odd last byte is
// the low byte of its little-endian word); otherwise the 64-byte blocks are added in one
// add-with-carry chain of 64-bit words (sumLE64) and the rest as below. Both fold to the same
// 16 bits: the integer sum and the chain's are congruent modulo 0xffff, and each is 0 only
// for all-zero words.
func csum16(sum uint32, b []byte) uint32 { return csum16With(sum, b, hasVecSum) }

// vecSumMax bounds the bytes one sumWordsAVX2 call adds (its lanes' limit).
const vecSumMax = 65536

// csum16With is csum16 with the bulk summed by sumWordsAVX2 (vec) or sumLE64; tests run
// both.
func csum16With(sum uint32, b []byte, vec bool) uint32 {
	s := uint64(sum)
	if len(b) >= 64 {
		var le uint64
		if vec {
			for len(b) > 0 {
				k := min(len(b), vecSumMax)
				le += uint64(sumWordsAVX2(&b[0], k))
				b = b[k:]
			}
		} else {
			le, b = sumLE64(b)
		}
		s += uint64(foldLE(le))
	}
	var carries uint64
	for len(b) >= 32 {
		var c0, c1, c2, c3 uint64
		s, c0 = bits.Add64(s, binary.BigEndian.Uint64(b), 0)
		s, c1 = bits.Add64(s, binary.BigEndian.Uint64(b[8:]), 0)
		s, c2 = bits.Add64(s, binary.BigEndian.Uint64(b[16:]), 0)
		s, c3 = bits.Add64(s, binary.BigEndian.Uint64(b[24:]), 0)
		carries += c0 + c1 + c2 + c3
		b = b[32:]
	}
	for len(b) >= 8 {
		var c uint64
		s, c = bits.Add64(s, binary.BigEndian.Uint64(b), 0)
		carries += c
		b = b[8:]
	}
	// Fold to 32 bits before the word loop so that it cannot overflow.
	s = s>>32 + s&0xffffffff + carries
	for len(b) >= 2 {
		s += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint64(b[0]) << 8
	}
	return fold16(s)
}

// foldLE is csum16 of bytes whose little-endian 16-bit words sum (or add with end-around
// carry) to le: folded to 16 bits, byte-swapped.
func foldLE(le uint64) uint32 {
	return uint32(bits.ReverseBytes16(uint16(fold16(le))))
}

// sumLE64 adds the 64-byte blocks of b as little-endian 64-bit words in one add-with-carry
// chain (each carry is 2^64 ≡ 1 modulo 0xffff) and returns the sum reduced to at most 33
// bits, and what is left of b.
func sumLE64(b []byte) (uint64, []byte) {
	var le, c uint64
	for len(b) >= 64 {
		le, c = bits.Add64(le, binary.LittleEndian.Uint64(b), c)
		le, c = bits.Add64(le, binary.LittleEndian.Uint64(b[8:]), c)
		le, c = bits.Add64(le, binary.LittleEndian.Uint64(b[16:]), c)
		le, c = bits.Add64(le, binary.LittleEndian.Uint64(b[24:]), c)
		le, c = bits.Add64(le, binary.LittleEndian.Uint64(b[32:]), c)
		le, c = bits.Add64(le, binary.LittleEndian.Uint64(b[40:]), c)
		le, c = bits.Add64(le, binary.LittleEndian.Uint64(b[48:]), c)
		le, c = bits.Add64(le, binary.LittleEndian.Uint64(b[56:]), c)
		b = b[64:]
	}
	return le>>32 + le&0xffffffff + c, b
}

// csumShort is csum16(0, b) for the short ranges the RX checks sum per frame (the L2 and IP
// headers, padding): 32-bit big-endian words added into 64 bits, then the last 2 and 1
// bytes, folded (each word is ≡ the sum of its two 16-bit words modulo 0xffff, and the sum is
// 0 only for all-zero bytes, so the fold is csum16's): for a few words csum16's block loops
// cost more than the words.
func csumShort(b []byte) uint32 {
	if len(b) > 64 {
		return csum16(0, b)
	}
	var s uint64
	for len(b) >= 4 {
		s += uint64(binary.BigEndian.Uint32(b))
		b = b[4:]
	}
	if len(b) >= 2 {
		s += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint64(b[0]) << 8
	}
	return fold16(s)
}

// fold16 is csum16(uint32(s), nil) for any s: s folded to 16 bits with end-around carries.
func fold16(s uint64) uint32 {
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return uint32(s)
}

// pseudo is the TCP/UDP pseudo-header sum of an IP header at h.l3 for an L4 length. The
// IPv4 addresses are added as two 32-bit words (2^16 ≡ 1 modulo 0xffff: their fold is
// csum16 of the eight bytes).
func pseudo(f []byte, h *headers, l4len int) uint32 {
	var s uint32
	if h.ipVersion == 4 {
		a := f[h.l3+12 : h.l3+20]
		s = fold16(uint64(binary.BigEndian.Uint32(a)) + uint64(binary.BigEndian.Uint32(a[4:])))
	} else {
		s = csum16(0, f[h.l3+8:h.l3+40])
	}
	s += uint32(h.proto) + uint32(l4len)
	return s
}

// ipPayloadEnd is where the IP datagram ends (frames may carry Ethernet padding).
func ipPayloadEnd(f []byte, h *headers) int {
	if h.ipVersion == 4 {
		if e := h.l3 + int(binary.BigEndian.Uint16(f[h.l3+2:])); e <= len(f) && e >= h.l3+int(h.ihl)*4 {
			return e
		}
	} else if e := h.l3 + 40 + int(binary.BigEndian.Uint16(f[h.l3+4:])); e <= len(f) {
		return e
	}
	return len(f)
}

// l3OK and l4OK are the checks whose results the RX CQE's CQE_L3_OK/CQE_L4_OK bits report.
func l3OK(f []byte, h *headers) bool {
	if h.l3 < 0 {
		return false
	}
	if h.ipVersion == 6 {
		return true
	}
	return csum16(0, f[h.l3:h.l3+int(h.ihl)*4]) == 0xffff
}

func l4OK(f []byte, h *headers) bool {
	if h.l4 < 0 || (h.proto != protoTCP && h.proto != protoUDP) {
		return false
	}
	end := ipPayloadEnd(f, h)
	if end < h.l4+h.l4Len {
		return false
	}
	if h.proto == protoUDP && h.ipVersion == 4 && binary.BigEndian.Uint16(f[h.l4+6:]) == 0 {
		return true // UDP over IPv4 without checksum
	}
	return csum16(pseudo(f, h, end-h.l4), f[h.l4:end]) == 0xffff
}

// rxChecks computes in one pass over the frame what an RX CQE reports: l3OK, l4OK (when
// the L3 check passes; false otherwise) and the ones' complement sum of the bytes from the
// IP header on (the CQE checksum; 0 without an IP header). The IP header's sum and the L4
// bytes' sum serve both the checks and the CQE sum (the IP header has an even length, so the
// words line up); only Ethernet padding after an odd-length datagram takes a second pass.
func rxChecks(f []byte, h *headers) (l3ok, l4ok bool, sum uint32) {
	return rxChecksWith(f, h, 0)
}

// wholeSum marks a frame sum (csum16 over the whole frame from its first byte) as known;
// 0 means not known. The RX write computes it as it writes the frame into the RX buffer
// (dmaWriter.writeSum), so the checks need not read the datagram again (issue 31: until the
// sixth round the sending port of a cable summed each frame for the receiving port).
const wholeSum = 1 << 31

// l4Sum is csum16(0, f[l4:end]). With the whole frame's sum known (whole, marked wholeSum) and
// both bounds at even offsets it is that sum less the head's (head: csum16(0, f[:l4]), which
// the caller has from the headers' sums) and the tail's, in ones' complement arithmetic,
// which reads only the padding; a result of 0 or 0xffff is computed again, since the
// difference cannot tell ones' complement's two zeros apart (csum16 gives 0 only for
// all-zero data).
func l4Sum(f []byte, l4, end int, whole, head uint32) uint32 {
	if whole&wholeSum == 0 || l4&1 != 0 || end&1 != 0 {
		return csum16(0, f[l4:end])
	}
	x := fold16(uint64(whole&0xffff) + uint64(0xffff-head) + uint64(0xffff-csumShort(f[end:])))
	if x == 0 || x == 0xffff {
		return csum16(0, f[l4:end])
	}
	return x
}

// rxChecksWith is rxChecks with the frame's sum (csum16(0, f) | wholeSum, or 0 when not
// known).
func rxChecksWith(f []byte, h *headers, whole uint32) (l3ok, l4ok bool, sum uint32) {
	if h.l3 < 0 {
		return false, false, 0
	}
	if h.l4 < 0 || (h.proto != protoTCP && h.proto != protoUDP) {
		l3ok = l3OK(f, h)
		return l3ok, l3ok && l4OK(f, h), csum16(0, f[h.l3:])
	}
	hdr := csumShort(f[h.l3:h.l4])
	l3ok = h.ipVersion == 6 || hdr == 0xffff
	end := ipPayloadEnd(f, h)
	var l4 uint32
	if whole&wholeSum != 0 && h.l3&1 == 0 {
		// csum16(0, f[:l4]) from the L2 header's sum and the IP header's (the IP header
		// starts at an even offset: the words line up).
		l4 = l4Sum(f, h.l4, end, whole, fold16(uint64(csumShort(f[:h.l3]))+uint64(hdr)))
	} else {
		l4 = csum16(0, f[h.l4:end])
	}
	switch {
	case end == len(f):
		sum = fold16(uint64(hdr) + uint64(l4))
	case (end-h.l4)%2 == 0:
		sum = csum16(hdr+l4, f[end:])
	default:
		sum = csum16(0, f[h.l3:])
	}
	switch {
	case !l3ok || end < h.l4+h.l4Len:
	case h.proto == protoUDP && h.ipVersion == 4 && binary.BigEndian.Uint16(f[h.l4+6:]) == 0:
		l4ok = true // UDP over IPv4 without checksum
	default:
		l4ok = fold16(uint64(pseudo(f, h, end-h.l4))+uint64(l4)) == 0xffff
	}
	return l3ok, l4ok, sum
}

// fillChecksums computes the IPv4 header and TCP/UDP checksums of a frame in place, as
// the SQ's checksum offload does (WQEEthL3Csum, WQEEthL4Csum).
func fillChecksums(f []byte, h *headers, l3, l4 bool) {
	if l3 && h.l3 >= 0 && h.ipVersion == 4 {
		f[h.l3+10], f[h.l3+11] = 0, 0
		s := ^csum16(0, f[h.l3:h.l3+int(h.ihl)*4])
		binary.BigEndian.PutUint16(f[h.l3+10:], uint16(s))
	}
	if !l4 || h.l4 < 0 {
		return
	}
	end := ipPayloadEnd(f, h)
	var at int
	switch h.proto {
	case protoTCP:
		at = h.l4 + 16
	case protoUDP:
		at = h.l4 + 6
	default:
		return
	}
	if at+2 > end {
		return
	}
	f[at], f[at+1] = 0, 0
	s := uint16(^csum16(pseudo(f, h, end-h.l4), f[h.l4:end]))
	if s == 0 && h.proto == protoUDP {
		s = 0xffff
	}
	binary.BigEndian.PutUint16(f[at:], s)
}
