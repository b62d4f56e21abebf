package prm

import (
	"encoding/binary"
	"fmt"
)

// Field is one PRM field: where it is in its layout, in bits, and what the headers call it.
type Field struct {
	// Layout is the header's name of the structure: for mlx5_ifc.h layouts the part of
	// `struct mlx5_ifc_<layout>_bits` between the prefix and the suffix ("cqc",
	// "create_cq_in"); for mlx5dv.h structures the whole struct name ("mlx5_cqe64").
	Layout string
	// Name is the C member designator inside Layout ("log_cq_size",
	// "cq_context.log_cq_size", "pas[0]").
	Name string
	// Off is the bit offset from the start of the layout, Width the width in bits.
	Off, Width uint32
}

// ifcField names a field of an mlx5_ifc.h layout. The layout test finds every call of it in
// this package's source and checks off and width against offsetof/sizeof of
// struct mlx5_ifc_<layout>_bits, so the arguments must be literals.
func ifcField(layout, name string, off, width uint32) Field {
	return Field{Layout: layout, Name: name, Off: off, Width: width}
}

// newerIfcField names a field of an mlx5_ifc layout that newer NVIDIA headers define —
// rdma-core's providers/mlx5/mlx5_ifc.h or DPDK's drivers/common/mlx5/mlx5_prm.h — where the
// installed kernel's mlx5_ifc.h still has reserved bits (Linux 6.1 has the UMEM valid bits but
// not the UMEM ids and offsets they validate). The layout test checks such a field against the
// installed header in the strongest way that header allows: when the header names the member,
// exactly as ifcField; otherwise the field must lie wholly inside one reserved_at_* member of
// the layout, overlapping no named member. The arguments must be literals, and the comment at
// each call names the newer header it comes from.
func newerIfcField(layout, name string, off, width uint32) Field {
	return Field{Layout: layout, Name: name, Off: off, Width: width}
}

// dpdkIfcField names a field of a layout that only DPDK's drivers/common/mlx5/mlx5_prm.h
// defines: the flex parser's parse-graph structures, which neither the installed kernel's
// mlx5_ifc.h nor rdma-core's installed headers have. No installed header can check its
// offset, so the layout test checks what it can: the layout is absent from the installed
// mlx5_ifc.h (once a header has it, the field must become an ifcField), the fields of one
// layout overlap no other, and each lies inside the layout's size that dpdkLayoutBits in the
// test states. The arguments must be literals; the comment at each layout cites the source.
func dpdkIfcField(layout, name string, off, width uint32) Field {
	return Field{Layout: layout, Name: name, Off: off, Width: width}
}

// dvField names a byte-aligned field of a C structure in mlx5dv.h (the datapath: CQEs, WQE
// segments), given as byte offset and byte size; checked like ifcField with offsetof/sizeof.
// A layout written "linux:<struct>" is the kernel's include/linux/mlx5/device.h struct of
// that name (the init segment, mini-CQEs, EQE data), checked in the kernel-header probe.
func dvField(layout, name string, byteOff, byteSize uint32) Field {
	return Field{Layout: layout, Name: name, Off: byteOff * 8, Width: byteSize * 8}
}

// Bytes is the field's size in bytes, rounded up.
func (f Field) Bytes() int { return int(f.Width+7) / 8 }

// ByteOff is the byte that holds the field's first bit.
func (f Field) ByteOff() int { return int(f.Off / 8) }

// End is the bit just past the field.
func (f Field) End() uint32 { return f.Off + f.Width }

// At returns the field moved by base bits: a field of a layout embedded at bit base of
// another (a context inside a command, a capability page inside query_hca_cap_out).
func (f Field) At(base uint32) Field {
	f.Off += base
	return f
}

func (f Field) String() string {
	return fmt.Sprintf("%s.%s[bit %d, %d bits]", f.Layout, f.Name, f.Off, f.Width)
}

// fits reports whether a buffer of n bytes holds the whole field.
func (f Field) fits(n int) bool { return uint64(f.End()) <= uint64(n)*8 }

// Get reads the field from b with MLX5_GET semantics. A field beyond b reads as zero, so a
// short output (a device that returns fewer bytes than the layout) never panics; use In to
// tell the two apart. Widths above 64 bits read their last 64 bits; use Slice for them.
func (f Field) Get(b []byte) uint64 { return GetBits(b, f.Off, f.Width) }

// GetBits is Field.Get for a field known by its position only (bit offset and width), as
// SetBits is Field.Set: the model's datapath reads WQE and CQE fields per frame without
// carrying a Field's layout and names.
func GetBits(b []byte, off, width uint32) uint64 {
	if width == 0 || uint64(off)+uint64(width) > uint64(len(b))*8 {
		return 0
	}
	if width > 64 {
		off += width - 64
		width = 64
	}
	// Whole bytes, 16-, 32- and 64-bit words: one load (MLX5_GET on a dword, MLX5_GET64 on
	// two; the PRM puts multi-byte values big-endian, high word first).
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
	// The bytes that hold the field, read as one big-endian number (at most eight of them
	// for any field of up to 57 bits, and for wider ones that start on a byte), then
	// shifted and masked.
	first, last := off/8, (off+width-1)/8
	if last-first < 8 {
		var v uint64
		for _, c := range b[first : last+1] {
			v = v<<8 | uint64(c)
		}
		v >>= (8 - (off+width)%8) % 8
		return v & (1<<width - 1)
	}
	// Nine bytes (an unaligned field of 57 bits or more): bit by bit.
	var v uint64
	for i := off; i < off+width; i++ {
		v = v<<1 | uint64(b[i/8]>>(7-i%8)&1)
	}
	return v
}

// Set writes v into the field with MLX5_SET semantics: bits of v above the width are
// dropped, as the C macro masks them. A field beyond b is not written and Set returns false.
func (f Field) Set(b []byte, v uint64) bool { return SetBits(b, f.Off, f.Width, v) }

// SetBits is Field.Set for a field known by its position only (bit offset and width): the
// model's datapath writes CQE and match-parameter fields per frame without carrying a
// Field's layout and names.
func SetBits(b []byte, off, width uint32, v uint64) bool {
	if width == 0 || uint64(off)+uint64(width) > uint64(len(b))*8 {
		return false
	}
	if width > 64 {
		off += width - 64
		width = 64
	}
	if off%8 == 0 {
		switch width {
		case 8:
			b[off/8] = byte(v)
			return true
		case 16:
			binary.BigEndian.PutUint16(b[off/8:], uint16(v))
			return true
		case 32:
			binary.BigEndian.PutUint32(b[off/8:], uint32(v))
			return true
		case 64:
			binary.BigEndian.PutUint64(b[off/8:], v)
			return true
		}
	}
	// As Get: the bytes that hold the field changed as one number, the bits around it kept.
	first, last := off/8, (off+width-1)/8
	if last-first < 8 {
		shift := (8 - (off+width)%8) % 8
		mask := (uint64(1)<<width - 1) << shift
		var cur uint64
		for _, c := range b[first : last+1] {
			cur = cur<<8 | uint64(c)
		}
		cur = cur&^mask | v<<shift&mask
		for i := last + 1; i > first; i-- {
			b[i-1] = byte(cur)
			cur >>= 8
		}
		return true
	}
	for i := width; i > 0; i-- {
		bit := off + i - 1
		mask := byte(1) << (7 - bit%8)
		if v&1 != 0 {
			b[bit/8] |= mask
		} else {
			b[bit/8] &^= mask
		}
		v >>= 1
	}
	return true
}

// In reports whether b is long enough to hold the whole field.
func (f Field) In(b []byte) bool { return f.fits(len(b)) }

// Slice returns the bytes of a byte-aligned field (a MAC address, a Toeplitz key, an array of
// physical addresses), aliasing b, or nil when the field is not byte-aligned or beyond b.
func (f Field) Slice(b []byte) []byte {
	if f.Off%8 != 0 || f.Width%8 != 0 || !f.fits(len(b)) {
		return nil
	}
	return b[f.Off/8 : f.End()/8]
}
