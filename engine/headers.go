package engine

// The raw header helpers: Ethernet, IPv4/IPv6 and UDP headers and payloads written into a
// burst's packets (upstream's set_eth_header, set_ipv4_header, set_udp_header, ...), and the
// fused template forms (SetUDPv4Header, SetAllUDPv4Headers) that write all three at once.

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
)

// buf0 is SegmentBuffer(0, i) for the header helpers, which run for every packet: small
// enough to be inlined for CPU-addressable regions of power-of-two buffers (no division, no
// call, no load through the region); ok is false for the others, which take SegmentBuffer.
func (b *Burst) buf0(i int) (buf []byte, ok bool) {
	if uint(i) >= uint(b.n) || b.view0 == nil {
		return nil, false
	}
	o := b.segs[0].off[i]
	end := (o | b.mask0) + 1 // the end of o's buffer
	return b.view0[o:end:end], true
}

// headerRoomErr says why a header helper cannot write a header ending at byte end into
// packet i.
// headerBuf is packet i's buffer for a header helper's full path: the region's view when the
// CPU addresses it, else SegmentBuffer; the helper's error when the stream is not raw or the
// buffer holds fewer than end bytes.
func (b *Burst) headerBuf(i, end int) ([]byte, error) {
	buf, ok := b.buf0(i)
	if !ok {
		buf = b.SegmentBuffer(0, i)
	}
	if !b.raw || len(buf) < end {
		return nil, b.headerRoomErr(i, end)
	}
	return buf, nil
}

func (b *Burst) headerRoomErr(i, end int) error {
	if !b.raw {
		return fmt.Errorf("header helpers need a raw stream: %w", ErrNotSupported)
	}
	buf := b.SegmentBuffer(0, i)
	if buf == nil {
		return fmt.Errorf("packet %d: no CPU-addressable segment 0: %w", i, ErrInvalidParameter)
	}
	return fmt.Errorf("packet %d: header ends at byte %d, buffer holds %d: %w", i, end, len(buf), ErrInvalidParameter)
}

func (b *Burst) grow(i, end int) {
	if int(b.segs[0].len[i]) < end {
		b.segs[0].len[i] = uint32(end)
	}
}

// The header helpers' common case — a raw stream, a CPU-addressable region of power-of-two
// buffers (view0), packet i in range, room for the header to its buffer's end, arguments in
// range — is written out in each helper before its full form (setEthHeader, setIPv4Header,
// setUDPHeader: the helpers' earlier bodies), which takes every other case, errors included,
// so a fast path that declines changes nothing. The first two conditions need no test of
// their own: Reset leaves mask0 0 for every other burst, and the room to the buffer's end,
// (o|mask0)+1-o, is then 1 byte, too few for any header. The test sits in each helper rather
// than in a shared function returning the buffer: the merge after such a call costs a
// re-test and a length check per header. TestHeaderFastPaths pins each helper to its full
// form.

// SetEthHeader writes packet i's Ethernet header: dst, src (zero when nil) and EtherType
// IPv4, and extends segment 0 to cover it. A sender writing Ethernet, IPv4 and UDP headers
// into packet after packet gets the same bytes at about half the cost from a header prepared
// once (NewUDPv4Header, SetUDPv4Header, SetAllUDPv4Headers).
func (b *Burst) SetEthHeader(i int, dst, src net.HardwareAddr) error {
	if uint(i) < uint(b.n) && len(dst) == 6 && (src == nil || len(src) == 6) {
		s := &b.segs[0]
		if o := s.off[i]; (o|b.mask0)+1-o >= EthHeaderLen {
			e := (*[EthHeaderLen]byte)(b.view0[o : o+EthHeaderLen])
			*(*[6]byte)(e[0:6]) = [6]byte(dst)
			if src != nil {
				*(*[6]byte)(e[6:12]) = [6]byte(src)
				binary.BigEndian.PutUint16(e[12:], 0x0800)
			} else {
				// A zero source and EtherType IPv4 in one 8-byte store.
				binary.BigEndian.PutUint64(e[6:], 0x0800)
			}
			if l := &s.len[i]; *l < EthHeaderLen {
				*l = EthHeaderLen
			}
			return nil
		}
	}
	return b.setEthHeader(i, dst, src)
}

// setEthHeader is SetEthHeader for every case, errors included.
func (b *Burst) setEthHeader(i int, dst, src net.HardwareAddr) error {
	buf, err := b.headerBuf(i, EthHeaderLen)
	if err != nil {
		return err
	}
	if len(dst) != 6 || (src != nil && len(src) != 6) {
		return fmt.Errorf("packet %d: MAC addresses must be 6 bytes: %w", i, ErrInvalidParameter)
	}
	// Array copies: fixed-size moves instead of calls to memmove.
	*(*[6]byte)(buf[0:6]) = [6]byte(dst)
	if src != nil {
		*(*[6]byte)(buf[6:12]) = [6]byte(src)
	} else {
		*(*[6]byte)(buf[6:12]) = [6]byte{}
	}
	binary.BigEndian.PutUint16(buf[12:14], 0x0800)
	b.grow(i, EthHeaderLen)
	return nil
}

// SetIPv4Header writes packet i's IPv4 header after the Ethernet header: version 4, IHL 5,
// total length 20+payloadLen (payloadLen excludes the IPv4 header, as upstream documents),
// TTL 64, don't-fragment, the protocol, addresses in network order and the header checksum.
// The burst keeps the last header written (a repeated call copies it), so calls on one burst
// must not run concurrently, even for different packets.
func (b *Burst) SetIPv4Header(i, payloadLen int, proto uint8, src, dst netip.Addr) error {
	if uint(i) < uint(b.n) && uint(payloadLen) <= 65535-IPv4HeaderLen {
		// A sender writes the same header into packet after packet: it is kept in b.ip4,
		// and a call that asks for it again costs compares and a 20-byte copy (no address
		// checks, no checksum).
		c := &b.ip4
		if k := ipv4Key(payloadLen, proto); k != c.key || src != c.src || dst != c.dst {
			if !src.Is4() || !dst.Is4() {
				return b.setIPv4Header(i, payloadLen, proto, src, dst)
			}
			c.set(k, payloadLen, proto, src, dst)
		}
		s := &b.segs[0]
		if o := s.off[i]; (o|b.mask0)+1-o >= EthHeaderLen+IPv4HeaderLen {
			*(*[IPv4HeaderLen]byte)(b.view0[o+EthHeaderLen : o+EthHeaderLen+IPv4HeaderLen]) = c.h
			if l := &s.len[i]; *l < EthHeaderLen+IPv4HeaderLen {
				*l = EthHeaderLen + IPv4HeaderLen
			}
			return nil
		}
	}
	return b.setIPv4Header(i, payloadLen, proto, src, dst)
}

// ipv4Cache is the IPv4 header SetIPv4Header wrote last, for the arguments in key, src and
// dst. It depends on nothing but those, so it stays valid when the burst is reset or reused.
type ipv4Cache struct {
	src, dst netip.Addr
	// key is ipv4Key(payloadLen, proto) of h; zero (no header yet) is no call's key.
	key uint64
	sum uint32 // the one's-complement sum of h's fields but the total length
	h   [IPv4HeaderLen]byte
}

// ipv4Key is ipv4Cache's key for a payload length in range (0 to 65515): distinct for
// distinct arguments, never zero.
func ipv4Key(payloadLen int, proto uint8) uint64 {
	return 1<<32 | uint64(payloadLen)<<8 | uint64(proto)
}

// set makes c the header for payloadLen (in range) and proto, IPv4 addresses src and dst
// under key k: what setIPv4Header writes. A new length for the same addresses and protocol
// (a sender of packets of several sizes) changes only the total length and the checksum.
func (c *ipv4Cache) set(k uint64, payloadLen int, proto uint8, src, dst netip.Addr) {
	if src != c.src || dst != c.dst || uint8(c.key) != proto || c.key == 0 {
		s4, d4 := src.As4(), dst.As4()
		sa, da := binary.BigEndian.Uint32(s4[:]), binary.BigEndian.Uint32(d4[:])
		// setIPv4Header's sum (RFC 1071) less the total length.
		c.sum = 0x4500 + 0x4000 + (64<<8 | uint32(proto)) + sa>>16 + sa&0xffff + da>>16 + da&0xffff
		binary.BigEndian.PutUint32(c.h[4:], 0x4000)
		binary.BigEndian.PutUint32(c.h[8:], 64<<24|uint32(proto)<<16)
		binary.BigEndian.PutUint32(c.h[12:], sa)
		binary.BigEndian.PutUint32(c.h[16:], da)
		c.src, c.dst = src, dst
	}
	total := uint32(IPv4HeaderLen + payloadLen)
	// The sum is below 2^20, so two folds leave 16 bits, as setIPv4Header's loop does.
	sum := c.sum + total
	sum = sum&0xffff + sum>>16
	sum += sum >> 16
	binary.BigEndian.PutUint32(c.h[0:], 0x45<<24|total)
	binary.BigEndian.PutUint16(c.h[10:], ^uint16(sum))
	c.key = k
}

// setIPv4Header is SetIPv4Header for every case, errors included.
func (b *Burst) setIPv4Header(i, payloadLen int, proto uint8, src, dst netip.Addr) error {
	buf, err := b.headerBuf(i, EthHeaderLen+IPv4HeaderLen)
	if err != nil {
		return err
	}
	if !src.Is4() || !dst.Is4() || payloadLen < 0 || payloadLen > 65535-IPv4HeaderLen {
		return fmt.Errorf("packet %d: IPv4 header needs IPv4 addresses and a payload ≤ 65515 bytes: %w", i, ErrInvalidParameter)
	}
	s4, d4 := src.As4(), dst.As4()
	sa, da := binary.BigEndian.Uint32(s4[:]), binary.BigEndian.Uint32(d4[:])
	total := uint32(IPv4HeaderLen + payloadLen)
	// The header is five 32-bit words, and its checksum is computed from the values that go
	// into them instead of reading the written bytes back: the same 16-bit one's-complement
	// sum IPv4Checksum takes over the header (RFC 1071), of 0x4500, the total length, the
	// zero identification, 0x4000 (don't fragment), TTL<<8|protocol and the address halves.
	sum := 0x4500 + total + 0x4000 + (64<<8 | uint32(proto)) + sa>>16 + sa&0xffff + da>>16 + da&0xffff
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	h := buf[EthHeaderLen : EthHeaderLen+IPv4HeaderLen]
	binary.BigEndian.PutUint32(h[0:], 0x45<<24|total)
	binary.BigEndian.PutUint32(h[4:], 0x4000)
	binary.BigEndian.PutUint32(h[8:], 64<<24|uint32(proto)<<16|uint32(^uint16(sum)))
	binary.BigEndian.PutUint32(h[12:], sa)
	binary.BigEndian.PutUint32(h[16:], da)
	b.grow(i, EthHeaderLen+IPv4HeaderLen)
	return nil
}

// UDPv4Header is an Ethernet + IPv4 + UDP header prepared once (NewUDPv4Header) for a
// sender whose packets differ only in length: SetUDPv4Header writes it with one 42-byte copy
// and three stores, where SetEthHeader, SetIPv4Header and SetUDPHeader each find the buffer,
// check their arguments and sum the IPv4 header again for every packet.
type UDPv4Header struct {
	h   [UDPPayloadOffset]byte // the header, total length, checksum and UDP length zero
	sum uint32                 // the IPv4 header's one's-complement sum without the total length
}

// NewUDPv4Header prepares the header SetEthHeader(i, dst, src), SetIPv4Header(i, …, 17,
// srcIP, dstIP) and SetUDPHeader(i, …, srcPort, dstPort) write (src nil: zero; TTL 64,
// don't fragment, UDP checksum 0).
func NewUDPv4Header(dst, src net.HardwareAddr, srcIP, dstIP netip.Addr, srcPort, dstPort uint16) (*UDPv4Header, error) {
	if len(dst) != 6 || (src != nil && len(src) != 6) {
		return nil, fmt.Errorf("MAC addresses must be 6 bytes: %w", ErrInvalidParameter)
	}
	if !srcIP.Is4() || !dstIP.Is4() {
		return nil, fmt.Errorf("UDP/IPv4 header needs IPv4 addresses, got %v and %v: %w", srcIP, dstIP, ErrInvalidParameter)
	}
	u := &UDPv4Header{}
	h := u.h[:]
	copy(h[0:6], dst)
	copy(h[6:12], src)
	binary.BigEndian.PutUint16(h[12:14], 0x0800)
	s4, d4 := srcIP.As4(), dstIP.As4()
	sa, da := binary.BigEndian.Uint32(s4[:]), binary.BigEndian.Uint32(d4[:])
	ip := h[EthHeaderLen:]
	binary.BigEndian.PutUint32(ip[0:], 0x45<<24)
	binary.BigEndian.PutUint32(ip[4:], 0x4000)
	binary.BigEndian.PutUint32(ip[8:], 64<<24|17<<16)
	binary.BigEndian.PutUint32(ip[12:], sa)
	binary.BigEndian.PutUint32(ip[16:], da)
	// As SetIPv4Header sums it (RFC 1071), less the total length, added per packet.
	u.sum = 0x4500 + 0x4000 + (64<<8 | 17) + sa>>16 + sa&0xffff + da>>16 + da&0xffff
	binary.BigEndian.PutUint32(h[EthHeaderLen+IPv4HeaderLen:], uint32(srcPort)<<16|uint32(dstPort))
	return u, nil
}

// SetUDPv4Header writes h into packet i for payloadLen bytes of UDP payload — the bytes
// SetEthHeader, SetIPv4Header(i, UDPHeaderLen+payloadLen, 17, …) and SetUDPHeader(i,
// payloadLen, …) write — and extends segment 0 to cover the headers.
func (b *Burst) SetUDPv4Header(i int, h *UDPv4Header, payloadLen int) error {
	// The common case in one test and straight-line stores: a raw stream, a CPU-addressable
	// region of power-of-two buffers (view0), packet i in range with 42 bytes of room to its
	// buffer's end (the room test covers the first two, as in the helpers above). Anything
	// else, errors included, takes setUDPv4Header.
	if uint(i) < uint(b.n) && uint(payloadLen) <= 65535-IPv4HeaderLen-UDPHeaderLen {
		s := &b.segs[0]
		o := s.off[i]
		if (o|b.mask0)+1-o >= UDPPayloadOffset {
			h.put((*[UDPPayloadOffset]byte)(b.view0[o:o+UDPPayloadOffset]), payloadLen)
			if l := &s.len[i]; *l < UDPPayloadOffset {
				*l = UDPPayloadOffset
			}
			return nil
		}
	}
	return b.setUDPv4Header(i, h, payloadLen)
}

// put writes the prepared header into d with the lengths and the IPv4 checksum for
// payloadLen bytes of UDP payload (payloadLen checked by the callers). Small enough to be
// inlined into both of SetUDPv4Header's paths.
func (h *UDPv4Header) put(d *[UDPPayloadOffset]byte, payloadLen int) {
	*d = h.h
	h.lengths(d, payloadLen)
}

// lengths writes into d (a copy of h's header) the IPv4 total length and checksum and the
// UDP length for payloadLen bytes of UDP payload.
func (h *UDPv4Header) lengths(d *[UDPPayloadOffset]byte, payloadLen int) {
	total := uint32(IPv4HeaderLen + UDPHeaderLen + payloadLen)
	sum := h.sum + total
	sum = sum&0xffff + sum>>16
	sum += sum >> 16
	binary.BigEndian.PutUint16(d[EthHeaderLen+2:], uint16(total))
	binary.BigEndian.PutUint16(d[EthHeaderLen+10:], ^uint16(sum))
	binary.BigEndian.PutUint16(d[EthHeaderLen+IPv4HeaderLen+4:], uint16(UDPHeaderLen+payloadLen))
}

// setUDPv4Header is SetUDPv4Header for buffers found through SegmentBuffer, and its errors.
func (b *Burst) setUDPv4Header(i int, h *UDPv4Header, payloadLen int) error {
	buf, err := b.headerBuf(i, UDPPayloadOffset)
	if err != nil {
		return err
	}
	if uint(payloadLen) > 65535-IPv4HeaderLen-UDPHeaderLen {
		return fmt.Errorf("packet %d: UDP payload %d out of range (0 to %d): %w", i, payloadLen, 65535-IPv4HeaderLen-UDPHeaderLen, ErrInvalidParameter)
	}
	h.put((*[UDPPayloadOffset]byte)(buf), payloadLen)
	b.grow(i, UDPPayloadOffset)
	return nil
}

// SetAllUDPv4Headers writes h for payloadLen bytes of UDP payload into every packet of the
// burst — what SetUDPv4Header(i, h, payloadLen) writes for each i — and extends each
// packet's segment 0 to cover the headers: for a sender whose packets of a burst go to one
// flow with one length, the lengths and checksum are computed once per burst and each packet
// costs a 42-byte copy. A packet that cannot take the headers stops it with
// SetUDPv4Header's error (the packets before it are written).
func (b *Burst) SetAllUDPv4Headers(h *UDPv4Header, payloadLen int) error {
	if uint(payloadLen) > 65535-IPv4HeaderLen-UDPHeaderLen {
		return fmt.Errorf("UDP payload %d out of range (0 to %d): %w", payloadLen, 65535-IPv4HeaderLen-UDPHeaderLen, ErrInvalidParameter)
	}
	if !b.raw || b.view0 == nil {
		// Not a raw stream, device memory or buffers not a power of two: packet by packet.
		for i := 0; i < b.n; i++ {
			if err := b.SetUDPv4Header(i, h, payloadLen); err != nil {
				return err
			}
		}
		return nil
	}
	hdr := h.h
	h.lengths(&hdr, payloadLen)
	s := &b.segs[0]
	offs, lens := s.off[:b.n], s.len[:b.n]
	lens = lens[:len(offs)]
	view, mask := b.view0, b.mask0
	for k, o := range offs {
		if (o|mask)+1-o < UDPPayloadOffset { // the room to the end of o's buffer
			return b.SetUDPv4Header(k, h, payloadLen) // its error
		}
		*(*[UDPPayloadOffset]byte)(view[o : o+UDPPayloadOffset]) = hdr
		if lens[k] < UDPPayloadOffset {
			lens[k] = UDPPayloadOffset
		}
	}
	return nil
}

// SetIPv6Header writes packet i's fixed IPv6 header after the Ethernet header (and sets the
// EtherType to IPv6): version 6, traffic class and flow label 0, payload length payloadLen,
// next header proto, hop limit 64, the addresses. Call it after SetEthHeader.
func (b *Burst) SetIPv6Header(i, payloadLen int, proto uint8, src, dst netip.Addr) error {
	buf, err := b.headerBuf(i, EthHeaderLen+IPv6HeaderLen)
	if err != nil {
		return err
	}
	if !src.Is6() || src.Is4In6() || !dst.Is6() || dst.Is4In6() || payloadLen < 0 || payloadLen > 65535 {
		return fmt.Errorf("packet %d: IPv6 header needs IPv6 addresses and a payload ≤ 65535 bytes: %w", i, ErrInvalidParameter)
	}
	binary.BigEndian.PutUint16(buf[12:14], 0x86DD)
	h := buf[EthHeaderLen : EthHeaderLen+IPv6HeaderLen]
	binary.BigEndian.PutUint32(h[0:], 6<<28)
	binary.BigEndian.PutUint16(h[4:], uint16(payloadLen))
	h[6], h[7] = proto, 64
	s16, d16 := src.As16(), dst.As16()
	copy(h[8:24], s16[:])
	copy(h[24:40], d16[:])
	b.grow(i, EthHeaderLen+IPv6HeaderLen)
	return nil
}

// isIPv6 reports whether packet i's Ethernet header says IPv6 (SetIPv6Header ran).
func isIPv6(buf []byte) bool {
	return len(buf) >= EthHeaderLen && binary.BigEndian.Uint16(buf[12:14]) == 0x86DD
}

// SetUDPHeader writes packet i's UDP header after the IPv4 header (or the IPv6 header, when
// SetIPv6Header was called): ports and length 8+payloadLen (payloadLen excludes the UDP
// header). Over IPv4 the checksum is 0 (none), which IPv4 permits; over IPv6, where it is
// mandatory, SetUDPPayload computes it.
func (b *Burst) SetUDPHeader(i, payloadLen int, srcPort, dstPort uint16) error {
	// Here the EtherType is read: IPv6's moves the header (the full form's case).
	if uint(i) < uint(b.n) && uint(payloadLen) <= 65535-UDPHeaderLen {
		s := &b.segs[0]
		if o := s.off[i]; (o|b.mask0)+1-o >= UDPPayloadOffset {
			u := (*[UDPPayloadOffset]byte)(b.view0[o : o+UDPPayloadOffset])
			if binary.BigEndian.Uint16(u[12:]) != 0x86DD {
				binary.BigEndian.PutUint64(u[UDPPayloadOffset-UDPHeaderLen:], uint64(srcPort)<<48|uint64(dstPort)<<32|uint64(UDPHeaderLen+payloadLen)<<16)
				if l := &s.len[i]; *l < UDPPayloadOffset {
					*l = UDPPayloadOffset
				}
				return nil
			}
		}
	}
	return b.setUDPHeader(i, payloadLen, srcPort, dstPort)
}

// setUDPHeader is SetUDPHeader for every case, errors included.
func (b *Burst) setUDPHeader(i, payloadLen int, srcPort, dstPort uint16) error {
	buf, ok := b.buf0(i)
	if !ok {
		buf = b.SegmentBuffer(0, i)
	}
	l3 := IPv4HeaderLen
	if isIPv6(buf) {
		l3 = IPv6HeaderLen
	}
	end := EthHeaderLen + l3 + UDPHeaderLen
	if !b.raw || len(buf) < end {
		return b.headerRoomErr(i, end)
	}
	if payloadLen < 0 || payloadLen > 65535-UDPHeaderLen {
		return fmt.Errorf("packet %d: UDP payload %d out of range: %w", i, payloadLen, ErrInvalidParameter)
	}
	// Ports, length and a zero checksum in one 8-byte store.
	binary.BigEndian.PutUint64(buf[end-UDPHeaderLen:end], uint64(srcPort)<<48|uint64(dstPort)<<32|uint64(UDPHeaderLen+payloadLen)<<16)
	b.grow(i, end)
	return nil
}

// SetUDPPayload copies p into packet i after the Ethernet/IPv4/UDP headers on raw streams, or
// at offset 0 (the whole message) on socket streams, and extends the packet to cover it.
func (b *Burst) SetUDPPayload(i int, p []byte) error {
	at := 0
	buf := b.SegmentBuffer(0, i)
	v6 := b.raw && isIPv6(buf)
	switch {
	case v6:
		at = UDPPayloadOffset6
	case b.raw:
		at = UDPPayloadOffset
	}
	if buf == nil {
		return fmt.Errorf("packet %d: no CPU-addressable segment 0: %w", i, ErrInvalidParameter)
	}
	if at+len(p) > len(buf) {
		return fmt.Errorf("packet %d: payload of %d bytes at offset %d exceeds the %d-byte buffer: %w", i, len(p), at, len(buf), ErrInvalidParameter)
	}
	copy(buf[at:], p)
	if v6 {
		// The UDP checksum over IPv6 (RFC 8200 §8.1): pseudo-header of source, destination,
		// UDP length and next header 17, then the UDP header and payload; 0 is sent as
		// 0xffff.
		u := buf[EthHeaderLen+IPv6HeaderLen : at+len(p)]
		ulen := int(binary.BigEndian.Uint16(u[4:6]))
		if ulen > len(u) {
			ulen = len(u)
		}
		u = u[:ulen]
		u[6], u[7] = 0, 0
		var sum uint32
		add := func(x []byte) {
			for j := 0; j+1 < len(x); j += 2 {
				sum += uint32(binary.BigEndian.Uint16(x[j:]))
			}
			if len(x)%2 == 1 {
				sum += uint32(x[len(x)-1]) << 8
			}
		}
		add(buf[EthHeaderLen+8 : EthHeaderLen+40])
		sum += uint32(len(u)) + 17
		add(u)
		for sum>>16 != 0 {
			sum = sum&0xffff + sum>>16
		}
		c := ^uint16(sum)
		if c == 0 {
			c = 0xffff
		}
		binary.BigEndian.PutUint16(u[6:], c)
	}
	if b.raw {
		b.grow(i, at+len(p))
	} else {
		b.segs[0].len[i] = uint32(len(p))
	}
	return nil
}

// IPv4Checksum is the Internet checksum of an IPv4 header whose checksum field is zero.
func IPv4Checksum(h []byte) uint16 {
	var sum uint32
	for j := 0; j+1 < len(h); j += 2 {
		sum += uint32(h[j])<<8 | uint32(h[j+1])
	}
	if len(h)%2 == 1 {
		sum += uint32(h[len(h)-1]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}
