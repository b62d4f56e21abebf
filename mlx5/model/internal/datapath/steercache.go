package datapath

import (
	"encoding/binary"
)

// The RX steering cache (issue 31): what receive decides for a frame — the parse the RX CQE
// and the RSS hash read, the flow counters the entries it hits count into, and where it goes
// (an RQ with the hash and flow tag, or a drop counter) — is a function of the bytes of the
// frame that the parser reads and of the port's objects (flow tables, groups, entries,
// roots, TIRs, RQTs, RQs, counters). So a frame whose key (those bytes, frameKey) equals a
// cached one's, while no object changed (gen), takes the cached decision; its counters are
// still counted, and everything per frame (the checksums, the copy, the CQE) is done as
// before. Steering, RSS and the table walk cost about a fifth of the two-port run's
// receiving thread before.

// frameKey is the bytes of a frame that parseInto reads, for the frame shapes the cache
// takes, packed in 64-bit words (unused words zero).
type frameKey [8]uint64

// keyOf returns a frame's key when the frame has a shape whose parse reads only the key's
// bytes and whose length checks all pass at any length of at least the key's extent:
// Ethernet II (no VLAN tag), IPv4 (any header length, not a fragment) or IPv6, then a whole
// TCP header or a whole UDP header not to the VXLAN port (a tunnel's inner headers are
// outside the key). Any other frame: ok false, and steering runs in full.
//
// The key words hold (little-endian loads): bytes 0-15 (MAC addresses, EtherType, the IP
// version and header length or traffic class byte, IPv4 DSCP/ECN); for IPv4 bytes 20-23
// (fragment field, TTL, protocol) and 26-33 (addresses); for IPv6 bytes 20-21 (next header,
// hop limit) and 22-53 (addresses); then the L4 ports and, for TCP, the data offset and
// flags (bytes 12-13 of its header). The IPv4 total length, identification and header
// checksum, the flow label's low 16 bits and the L4 length and checksum are not read by the
// parser and not in the key. Equal keys have equal EtherType, IP version, header length and
// protocol, so the same byte positions were packed, and the parses agree (TestFrameKey).
func keyOf(f []byte) (k frameKey, ok bool) {
	if len(f) < 14+20+8 {
		return k, false // shorter than Ethernet, IPv4 and UDP headers
	}
	k[0] = binary.LittleEndian.Uint64(f[0:])
	k[1] = binary.LittleEndian.Uint64(f[8:])
	var l4 int
	var proto byte
	switch binary.BigEndian.Uint16(f[12:]) {
	case etherIPv4:
		vi := f[14]
		ihl := int(vi&0xf) * 4
		if vi>>4 != 4 || ihl < 20 || len(f) < 14+ihl || binary.BigEndian.Uint16(f[20:])&0x3fff != 0 {
			return k, false
		}
		l4, proto = 14+ihl, f[23]
		k[2] = uint64(binary.LittleEndian.Uint32(f[20:]))
		k[3] = binary.LittleEndian.Uint64(f[26:])
	case etherIPv6:
		if len(f) < 14+40 || f[14]>>4 != 6 {
			return k, false
		}
		l4, proto = 14+40, f[20]
		k[2] = uint64(binary.LittleEndian.Uint16(f[20:]))
		k[3] = binary.LittleEndian.Uint64(f[22:])
		k[4] = binary.LittleEndian.Uint64(f[30:])
		k[5] = binary.LittleEndian.Uint64(f[38:])
		k[6] = binary.LittleEndian.Uint64(f[46:])
	default:
		return k, false
	}
	switch proto {
	case protoUDP:
		if len(f) < l4+8 || binary.BigEndian.Uint16(f[l4+2:]) == vxlanPort {
			return k, false
		}
	case protoTCP:
		if len(f) < l4+20 {
			return k, false
		}
		k[7] = uint64(binary.LittleEndian.Uint16(f[l4+12:]))
	default:
		return k, false
	}
	k[2] |= uint64(binary.LittleEndian.Uint32(f[l4:])) << 32
	return k, true
}

// rxRoute is where receive sends a frame: an RQ with the CQE's hash and flow tag, or a drop
// counter of the port (stat; r nil).
type rxRoute struct {
	r    *rq
	meta rxMeta
	stat *uint64
}

// steerCacheSize is the number of cached decisions per port (direct-mapped by the key's
// hash): a port's traffic in a benchmark is a handful of flows.
const steerCacheSize = 64

// maxCachedCounters bounds the flow counters one cached decision counts into; a walk that
// counts into more is not cached.
const maxCachedCounters = 8

type steerEntry struct {
	key   frameKey
	gen   uint64
	valid bool
	route rxRoute
	// pkt is the frame's parse (frame nil: the flex parser, which reads the frame through
	// it, is never met on a cached walk); a route to an RQ always has it.
	pkt      packet
	nc       int
	counters [maxCachedCounters]*FlowCounter
}

// steerCache is a port's cached RX decisions (under the port's lock).
type steerCache struct {
	e *[steerCacheSize]steerEntry // made at the first decision cached
}

func (k *frameKey) slot() int {
	h := (k[0] ^ k[1]*0x9e3779b97f4a7c15) + k[2]*0xff51afd7ed558ccd + (k[3]^k[4]^k[5]^k[6]^k[7])*0xc4ceb9fe1a85ec53
	return int(h>>58) & (steerCacheSize - 1)
}

// get returns the decision cached for k while the objects are at generation gen, or nil.
func (c *steerCache) get(k *frameKey, gen uint64) *steerEntry {
	if c.e == nil {
		return nil
	}
	e := &c.e[k.slot()]
	if !e.valid || e.gen != gen || e.key != *k {
		return nil
	}
	return e
}

// put caches a decision for k at generation gen.
func (c *steerCache) put(k *frameKey, gen uint64, pkt *packet, rt rxRoute, counters []*FlowCounter) {
	if len(counters) > maxCachedCounters {
		return
	}
	if c.e == nil {
		c.e = new([steerCacheSize]steerEntry)
	}
	e := &c.e[k.slot()]
	e.key, e.gen, e.valid, e.route = *k, gen, true, rt
	e.pkt = packet{} // a frame that is not delivered (no root: not parsed) has no parse
	if pkt != nil {
		e.pkt = *pkt
		e.pkt.frame = nil
	}
	e.nc = copy(e.counters[:], counters)
	clear(e.counters[e.nc:])
}

// countFlows counts a frame of size octets into flow counters (under fcMu, as steer does).
func (n *NIC) countFlows(fcs []*FlowCounter, size int) {
	if len(fcs) == 0 {
		return
	}
	n.fcMu.Lock()
	for _, fc := range fcs {
		fc.Packets++
		fc.Octets += uint64(size)
	}
	n.fcMu.Unlock()
}
