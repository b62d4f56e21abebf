package flow

import (
	"encoding/binary"
	"net/netip"
)

// DefaultRSSKey is the 40-byte Toeplitz key of Microsoft's RSS verification suite ("Verifying
// the RSS Hash Calculation", Windows driver documentation), also the default key of many
// NICs. Its published test vectors are checked in the package tests.
var DefaultRSSKey = [40]byte{
	0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2,
	0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
	0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4,
	0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
	0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
}

// Toeplitz is the RSS Toeplitz hash of input under key: for every set bit of the input,
// most significant bit of the first byte first, the 32-bit window of the key starting at that
// bit position is XORed into the result. The key must be at least len(input)+4 bytes.
func Toeplitz(key []byte, input []byte) uint32 {
	var h uint32
	// window holds key bits [i, i+64) left-aligned; refilled a byte at a time.
	window := uint64(0)
	for j := 0; j < 8; j++ {
		window <<= 8
		if j < len(key) {
			window |= uint64(key[j])
		}
	}
	next := 8
	for _, b := range input {
		for bit := 7; bit >= 0; bit-- {
			if b&(1<<bit) != 0 {
				h ^= uint32(window >> 32)
			}
			window <<= 1
		}
		if next < len(key) {
			window |= uint64(key[next])
		}
		next++
	}
	return h
}

// Tuple is the IPv4/UDP or IPv6/UDP 4-tuple RSS hashes, in the order Microsoft's RSS specification
// feeds it to the hash: source address, destination address, source port, destination port.
type Tuple struct {
	Src, Dst         netip.Addr
	SrcPort, DstPort uint16
}

// Bytes is the 12-byte hash input of the tuple (network byte order).
func (t Tuple) Bytes() [12]byte {
	var b [12]byte
	s, d := t.Src.As4(), t.Dst.As4()
	copy(b[0:4], s[:])
	copy(b[4:8], d[:])
	binary.BigEndian.PutUint16(b[8:], t.SrcPort)
	binary.BigEndian.PutUint16(b[10:], t.DstPort)
	return b
}

// Hash is the Toeplitz hash of the tuple under key.
func (t Tuple) Hash(key []byte) uint32 {
	if t.Src.Is6() && !t.Src.Is4In6() {
		b := t.Bytes6()
		return Toeplitz(key, b[:])
	}
	b := t.Bytes()
	return Toeplitz(key, b[:])
}

// Bytes6 is the 36-byte hash input of an IPv6 tuple: source and destination address, source
// and destination port, in network byte order (Microsoft's "IPv6 with TCP" input; UDP ports
// take the TCP ports' place).
func (t Tuple) Bytes6() [36]byte {
	var b [36]byte
	s, d := t.Src.As16(), t.Dst.As16()
	copy(b[0:16], s[:])
	copy(b[16:32], d[:])
	binary.BigEndian.PutUint16(b[32:], t.SrcPort)
	binary.BigEndian.PutUint16(b[34:], t.DstPort)
	return b
}

// ToeplitzPositions is how many input byte positions ToeplitzTable covers: the IPv6 input.
const ToeplitzPositions = 36

// RETASize is the size of the RSS indirection table the hash indexes: its low 7 bits select
// one of 128 entries, filled round-robin with the flow's queues — the default table Linux
// drivers install (ethtool_rxfh_indir_default: entry i → queue i mod n).
const RETASize = 128

// RSSIndex picks the position in a queue list of n entries for a hash, through the default
// indirection table.
func RSSIndex(hash uint32, n int) int {
	if n <= 1 {
		return 0
	}
	return int(hash&(RETASize-1)) % n
}

// ToeplitzTable returns, for each of the 36 input byte positions (IPv6; an IPv4 tuple uses
// the first 12) and each byte value, the XOR contribution of that byte to the hash: the hash
// of the tuple is the XOR of the entries its bytes select. The XDP program looks this table up instead of looping over bits.
func ToeplitzTable(key []byte) []uint32 {
	t := make([]uint32, ToeplitzPositions*256)
	var in [ToeplitzPositions]byte
	for p := 0; p < ToeplitzPositions; p++ {
		for v := 0; v < 256; v++ {
			in[p] = byte(v)
			t[p*256+v] = Toeplitz(key, in[:])
		}
		in[p] = 0
	}
	return t
}
