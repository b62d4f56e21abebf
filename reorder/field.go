package reorder

import "github.com/daqiri-go/daqiri/config"

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
