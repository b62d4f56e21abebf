package reorder

import (
	"encoding/binary"

	"github.com/daqiri-go/daqiri/config"
)

// readField reads a big-endian bit field of f.Width (1..32) bits that starts f.Offset bits
// into p, bit 0 being the most significant bit of p[0] (upstream's extract_bits_be_host and
// its kernel twin read the same way). ok is false when p is too short to hold the field.
func readField(p []byte, f config.BitField) (v uint32, ok bool) {
	end := f.Offset + f.Width
	if f.Offset < 0 || f.Width < 1 || f.Width > 32 || end > len(p)*8 {
		return 0, false
	}
	first, last := f.Offset>>3, (end-1)>>3
	// At most five bytes: a 32-bit field that does not start on a byte boundary.
	var x uint64
	for _, c := range p[first : last+1] {
		x = x<<8 | uint64(c)
	}
	x >>= uint((last+1)*8 - end)
	return uint32(x & (1<<uint(f.Width) - 1)), true
}

// fieldReader reads one configured bit field with a single 8-byte load where the packet is
// long enough, the same value readField gives.
type fieldReader struct {
	f     config.BitField
	first int    // byte holding the field's first bit
	need  int    // bytes a packet needs to hold the field
	shift uint   // right shift of the big-endian 8 bytes at first that brings the field down
	mask  uint32 // the field's width
}

// newFieldReader compiles a field of 1..32 bits at a bit offset ≥ 0.
func newFieldReader(f config.BitField) fieldReader {
	end := f.Offset + f.Width
	first := f.Offset >> 3
	return fieldReader{f: f, first: first, need: (end + 7) >> 3, shift: uint(64 - (end - 8*first)),
		mask: uint32(uint64(1)<<uint(f.Width) - 1)}
}

// read is the field's value; p must hold at least r.need bytes.
func (r *fieldReader) read(p []byte) uint32 {
	if r.first+8 <= len(p) {
		return uint32(binary.BigEndian.Uint64(p[r.first:])>>r.shift) & r.mask
	}
	v, _ := readField(p, r.f)
	return v
}
