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

// set writes v into the field of b with prm.Field.Set's semantics (prm.SetBits: MLX5_SET,
// bits of v above the width dropped, the bits around the field kept, a field beyond b not
// written).
func (x fieldPos) set(b []byte, v uint64) { prm.SetBits(b, x.off, x.width, v) }

// get reads the field from b with prm.Field.Get's semantics (MLX5_GET: a field beyond b reads
// as zero, a field wider than 64 bits gives its last 64 bits): the WQE and CQE fields the
// datapath reads per frame, without copying the prm.Field (its layout and names) per call.
func (x fieldPos) get(b []byte) uint64 {
	off, width := x.off, x.width
	if width == 0 || uint64(off)+uint64(width) > uint64(len(b))*8 {
		return 0
	}
	if width > 64 {
		off += width - 64
		width = 64
	}
	if off%8 == 0 {
		switch width {
		case 8:
			return uint64(b[off/8])
		case 16:
			return uint64(binary.BigEndian.Uint16(b[off/8:]))
		case 32:
			return uint64(binary.BigEndian.Uint32(b[off/8:]))
		case 64:
			return binary.BigEndian.Uint64(b[off/8:])
		}
	}
	first, last := off/8, (off+width-1)/8
	if last-first < 8 {
		// The bytes that hold the field as one big-endian number, shifted and masked.
		var v uint64
		for _, c := range b[first : last+1] {
			v = v<<8 | uint64(c)
		}
		v >>= (last+1)*8 - (off + width)
		if width < 64 {
			v &= 1<<width - 1
		}
		return v
	}
	// Nine bytes (an unaligned field of 57 bits or more): bit by bit.
	var v uint64
	for i := off; i < off+width; i++ {
		v = v<<1 | uint64(b[i/8]>>(7-i%8)&1)
	}
	return v
}
