package datapath

import (
	"encoding/binary"

	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// fieldPos is a PRM field's position only: what the datapath needs to write a CQE or a match
// parameter field per frame, without passing the field's names along (prm.Field carries its
// layout and field names, which cost a copy on every call).
type fieldPos struct{ off, width uint32 }

// pos is f's position.
func pos(f prm.Field) fieldPos { return fieldPos{f.Off, f.Width} }

// set writes v into the field of b with prm.Field.Set's semantics (MLX5_SET: bits of v
// above the width dropped, the bits around the field kept; a field beyond b not written).
func (x fieldPos) set(b []byte, v uint64) {
	if x.width == 0 || uint64(x.off)+uint64(x.width) > uint64(len(b))*8 {
		return // beyond b: not written, as prm.Field.Set
	}
	if x.width > 64 {
		// The last 64 bits, as prm.Field.Set writes wider fields.
		x.off += x.width - 64
		x.width = 64
	}
	first, last := x.off/8, (x.off+x.width-1)/8
	if last-first >= 8 {
		// A 58- to 64-bit field that does not start on a byte: bit by bit.
		for i := x.width; i > 0; i-- {
			bit := x.off + i - 1
			mask := byte(1) << (7 - bit%8)
			if v&1 != 0 {
				b[bit/8] |= mask
			} else {
				b[bit/8] &^= mask
			}
			v >>= 1
		}
		return
	}
	switch {
	case x.off%8 == 0 && x.width == 8:
		b[first] = byte(v)
		return
	case x.off%8 == 0 && x.width == 16:
		binary.BigEndian.PutUint16(b[first:], uint16(v))
		return
	case x.off%8 == 0 && x.width == 32:
		binary.BigEndian.PutUint32(b[first:], uint32(v))
		return
	case x.off%8 == 0 && x.width == 64:
		binary.BigEndian.PutUint64(b[first:], v)
		return
	}
	shift := (8 - (x.off+x.width)%8) % 8
	mask := (uint64(1)<<x.width - 1) << shift
	var cur uint64
	for _, c := range b[first : last+1] {
		cur = cur<<8 | uint64(c)
	}
	cur = cur&^mask | v<<shift&mask
	for i := last + 1; i > first; i-- {
		b[i-1] = byte(cur)
		cur >>= 8
	}
}
