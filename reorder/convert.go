package reorder

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"sync"

	"github.com/daqiri-go/daqiri/config"
)

// Conversion is a plan's sample conversion: signed integers of In bits, in Endian byte order,
// widened and written as Out in the host's (little-endian) byte order. The zero Conversion
// (In 0) copies bytes unchanged.
//
// Floating-point outputs round to nearest, ties to even, directly from the integer: int32 →
// bf16 is not done through float32, because rounding twice (first to float32's 24 significant
// bits, then to bf16's 8) can land on the wrong neighbour when the first rounding produces an
// exact tie. Integers have no fractions, so no result is subnormal; magnitudes past a format's
// largest finite value become infinity, as IEEE 754 round-to-nearest prescribes.
type Conversion struct {
	In     config.DataType // int4, int8, int16, int32 (empty: no conversion)
	Out    config.DataType // fp16, bf16, fp32, fp64, int32
	Big    bool            // input samples are big-endian (network order); ignored for int4/int8
	inBits int
	outB   int // output bytes per sample
}

// NewConversion checks and compiles a plan's data_types (nil: byte copy).
func NewConversion(dt *config.DataTypes) (Conversion, error) {
	if dt == nil {
		return Conversion{}, nil
	}
	c := Conversion{In: dt.Input, Out: dt.Output, Big: dt.Endianness == config.EndianNetwork}
	switch dt.Input {
	case config.TypeInt4, config.TypeInt8, config.TypeInt16, config.TypeInt32:
	default:
		return Conversion{}, fmt.Errorf("reorder: input type %q: want int4, int8, int16 or int32", dt.Input)
	}
	switch dt.Output {
	case config.TypeFP16, config.TypeBF16, config.TypeFP32, config.TypeFP64, config.TypeInt32:
	default:
		return Conversion{}, fmt.Errorf("reorder: output type %q: want fp16, bf16, fp32, fp64 or int32", dt.Output)
	}
	switch dt.Endianness {
	case "", config.EndianHost, config.EndianNetwork:
	default:
		return Conversion{}, fmt.Errorf("reorder: endianness %q: want host or network", dt.Endianness)
	}
	c.inBits = dt.Input.Bits()
	c.outB = dt.Output.Bits() / 8
	// int32 → int32 in host order is a byte copy; keep it one so the fast path applies.
	if c.In == config.TypeInt32 && c.Out == config.TypeInt32 && !c.Big {
		return Conversion{}, nil
	}
	return c, nil
}

// Active reports whether samples are converted (false: bytes are copied).
func (c Conversion) Active() bool { return c.inBits != 0 }

// InBits is the width of an input sample (0 without conversion).
func (c Conversion) InBits() int { return c.inBits }

// OutBytes is the width of an output sample in bytes (0 without conversion).
func (c Conversion) OutBytes() int { return c.outB }

// Elements is how many whole samples n input bytes hold (n without conversion).
func (c Conversion) Elements(n int) int {
	if !c.Active() {
		return n
	}
	return n * 8 / c.inBits
}

// InputBytes is the number of input bytes that hold the whole samples of n bytes.
func (c Conversion) InputBytes(n int) int {
	if !c.Active() {
		return n
	}
	return c.Elements(n) * c.inBits / 8
}

// OutputLen is the converted size of n input bytes (whole samples only).
func (c Conversion) OutputLen(n int) int {
	if !c.Active() {
		return n
	}
	return c.Elements(n) * c.outB
}

// Whole reports whether n input bytes are a whole number of samples.
func (c Conversion) Whole(n int) bool { return !c.Active() || n*8%c.inBits == 0 }

// Convert converts the whole samples of src into dst, which must hold OutputLen(len(src))
// bytes, and returns the bytes written. Without conversion it copies.
func (c Conversion) Convert(dst, src []byte) int {
	if !c.Active() {
		return copy(dst, src)
	}
	n := c.Elements(len(src))
	out := dst[:n*c.outB]
	switch c.In {
	case config.TypeInt4:
		src = src[:n/2]
		switch c.outB {
		case 2:
			t := tables.int4x16(c.Out)
			for j, x := range src {
				o := out[4*j : 4*j+4]
				binary.LittleEndian.PutUint16(o[0:], t[x>>4])
				binary.LittleEndian.PutUint16(o[2:], t[x&15])
			}
		case 4:
			t := tables.int4x32(c.Out)
			for j, x := range src {
				o := out[8*j : 8*j+8]
				binary.LittleEndian.PutUint32(o[0:], t[x>>4])
				binary.LittleEndian.PutUint32(o[4:], t[x&15])
			}
		case 8:
			for j, x := range src {
				o := out[16*j : 16*j+16]
				binary.LittleEndian.PutUint64(o[0:], math.Float64bits(float64(int32(int8(x)>>4))))
				binary.LittleEndian.PutUint64(o[8:], math.Float64bits(float64(int32(int8(x<<4)>>4))))
			}
		}
	case config.TypeInt8:
		src = src[:n]
		switch c.outB {
		case 2:
			t := tables.int8x16(c.Out)
			out = out[:2*len(src)]
			for j, x := range src {
				binary.LittleEndian.PutUint16(out[2*j:], t[x])
			}
		case 4:
			t := tables.int8x32(c.Out)
			out = out[:4*len(src)]
			for j, x := range src {
				binary.LittleEndian.PutUint32(out[4*j:], t[x])
			}
		case 8:
			out = out[:8*len(src)]
			for j, x := range src {
				binary.LittleEndian.PutUint64(out[8*j:], math.Float64bits(float64(int8(x))))
			}
		}
	case config.TypeInt16:
		src = src[:2*n]
		var order binary.ByteOrder = binary.LittleEndian
		if c.Big {
			order = binary.BigEndian
		}
		switch c.outB {
		case 2:
			t := tables.int16x16(c.Out)
			out = out[:n*2]
			if c.Big {
				for j := 0; j < n; j++ {
					binary.LittleEndian.PutUint16(out[2*j:], t[binary.BigEndian.Uint16(src[2*j:])])
				}
			} else {
				for j := 0; j < n; j++ {
					binary.LittleEndian.PutUint16(out[2*j:], t[binary.LittleEndian.Uint16(src[2*j:])])
				}
			}
		case 4:
			out = out[:n*4]
			if c.Out == config.TypeFP32 {
				for j := 0; j < n; j++ {
					v := int16(order.Uint16(src[2*j:]))
					binary.LittleEndian.PutUint32(out[4*j:], math.Float32bits(float32(v)))
				}
			} else {
				for j := 0; j < n; j++ {
					binary.LittleEndian.PutUint32(out[4*j:], uint32(int32(int16(order.Uint16(src[2*j:])))))
				}
			}
		case 8:
			out = out[:n*8]
			for j := 0; j < n; j++ {
				binary.LittleEndian.PutUint64(out[8*j:], math.Float64bits(float64(int16(order.Uint16(src[2*j:])))))
			}
		}
	case config.TypeInt32:
		src = src[:4*n]
		var order binary.ByteOrder = binary.LittleEndian
		if c.Big {
			order = binary.BigEndian
		}
		switch c.Out {
		case config.TypeFP16, config.TypeBF16:
			e, m := formatBits(c.Out)
			out = out[:n*2]
			for j := 0; j < n; j++ {
				binary.LittleEndian.PutUint16(out[2*j:], uint16(IntToFloatBits(int32(order.Uint32(src[4*j:])), e, m)))
			}
		case config.TypeFP32:
			out = out[:n*4]
			for j := 0; j < n; j++ {
				binary.LittleEndian.PutUint32(out[4*j:], math.Float32bits(float32(int32(order.Uint32(src[4*j:])))))
			}
		case config.TypeInt32:
			out = out[:n*4]
			for j := 0; j < n; j++ {
				binary.LittleEndian.PutUint32(out[4*j:], order.Uint32(src[4*j:]))
			}
		case config.TypeFP64:
			out = out[:n*8]
			for j := 0; j < n; j++ {
				binary.LittleEndian.PutUint64(out[8*j:], math.Float64bits(float64(int32(order.Uint32(src[4*j:])))))
			}
		}
	}
	return n * c.outB
}

// formatBits gives the exponent and fraction widths of a 16-bit output: IEEE 754 binary16
// has 5 and 10 (bias 15, largest finite 65504); bfloat16 keeps binary32's 8-bit exponent with
// a 7-bit fraction.
func formatBits(t config.DataType) (exp, frac int) {
	if t == config.TypeBF16 {
		return 8, 7
	}
	return 5, 10
}

// IntToFloatBits is the bit pattern of the binary floating-point number with expBits
// exponent bits (bias 2^(expBits-1)-1) and fracBits stored fraction bits nearest to v, ties
// to even; magnitudes that round past the largest finite value give infinity. The GPU kernels
// (kernels/reorder.cu, int_to_float_bits) do the same steps, so both sides agree bit for bit.
func IntToFloatBits(v int32, expBits, fracBits int) uint32 {
	if v == 0 {
		return 0
	}
	var sign uint32
	a := uint32(v)
	if v < 0 {
		sign, a = 1, -a // two's complement negation; -MinInt32 wraps to 2^31, the magnitude
	}
	p := 31 - bits.LeadingZeros32(a) // a is in [2^p, 2^(p+1))
	var q uint32
	if p <= fracBits {
		q = a << uint(fracBits-p)
	} else {
		sh := uint(p - fracBits)
		q = a >> sh
		rem := a & (1<<sh - 1)
		half := uint32(1) << (sh - 1)
		if rem > half || (rem == half && q&1 == 1) {
			q++
			if q>>uint(fracBits+1) != 0 { // rounded up to the next power of two
				q >>= 1
				p++
			}
		}
	}
	bias := 1<<(expBits-1) - 1
	e := uint32(p + bias)
	maxE := uint32(1)<<expBits - 1
	if e >= maxE {
		return sign<<uint(expBits+fracBits) | maxE<<uint(fracBits)
	}
	return sign<<uint(expBits+fracBits) | e<<uint(fracBits) | q&(1<<uint(fracBits)-1)
}

// convTables are the per-sample results for the narrow inputs, built on first use: a table
// lookup per sample is what lets the CPU path keep up with a copy.
type convTables struct {
	once16, once8, once4 [5]sync.Once
	i16to16              [5][]uint16
	i8to16               [5][]uint16
	i8to32               [5][]uint32
	i4to16               [5][]uint16
	i4to32               [5][]uint32
}

var tables convTables

func outIndex(t config.DataType) int {
	switch t {
	case config.TypeFP16:
		return 0
	case config.TypeBF16:
		return 1
	case config.TypeFP32:
		return 2
	case config.TypeFP64:
		return 3
	}
	return 4 // int32
}

// sample16 and sample32 convert one integer to a 16- or 32-bit output.
func sample16(v int32, out config.DataType) uint16 {
	e, m := formatBits(out)
	return uint16(IntToFloatBits(v, e, m))
}

func sample32(v int32, out config.DataType) uint32 {
	if out == config.TypeFP32 {
		return math.Float32bits(float32(v))
	}
	return uint32(v)
}

func (t *convTables) int16x16(out config.DataType) []uint16 {
	k := outIndex(out)
	t.once16[k].Do(func() {
		tb := make([]uint16, 1<<16)
		for x := range tb {
			tb[x] = sample16(int32(int16(uint16(x))), out)
		}
		t.i16to16[k] = tb
	})
	return t.i16to16[k]
}

func (t *convTables) int8x16(out config.DataType) []uint16 {
	t.build8(out)
	return t.i8to16[outIndex(out)]
}

func (t *convTables) int8x32(out config.DataType) []uint32 {
	t.build8(out)
	return t.i8to32[outIndex(out)]
}

func (t *convTables) build8(out config.DataType) {
	k := outIndex(out)
	t.once8[k].Do(func() {
		if out == config.TypeFP16 || out == config.TypeBF16 {
			tb := make([]uint16, 256)
			for x := range tb {
				tb[x] = sample16(int32(int8(uint8(x))), out)
			}
			t.i8to16[k] = tb
		} else {
			tb := make([]uint32, 256)
			for x := range tb {
				tb[x] = sample32(int32(int8(uint8(x))), out)
			}
			t.i8to32[k] = tb
		}
	})
}

// int4x16 and int4x32 are indexed by a nibble (0..15), read as a 4-bit two's-complement value.
func (t *convTables) int4x16(out config.DataType) []uint16 {
	t.build4(out)
	return t.i4to16[outIndex(out)]
}

func (t *convTables) int4x32(out config.DataType) []uint32 {
	t.build4(out)
	return t.i4to32[outIndex(out)]
}

func (t *convTables) build4(out config.DataType) {
	k := outIndex(out)
	t.once4[k].Do(func() {
		if out == config.TypeFP16 || out == config.TypeBF16 {
			tb := make([]uint16, 16)
			for x := range tb {
				tb[x] = sample16(int32(int8(uint8(x)<<4)>>4), out)
			}
			t.i4to16[k] = tb
		} else {
			tb := make([]uint32, 16)
			for x := range tb {
				tb[x] = sample32(int32(int8(uint8(x)<<4)>>4), out)
			}
			t.i4to32[k] = tb
		}
	})
}
