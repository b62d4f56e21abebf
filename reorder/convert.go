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
func (c Conversion) Convert(dst, src []byte) int { return c.convert(dst, src) }

// convert is Convert without copying the Conversion (the plans' per-packet path).
func (c *Conversion) convert(dst, src []byte) int {
	if !c.Active() {
		return copy(dst, src)
	}
	n := c.Elements(len(src))
	out := dst[:n*c.outB]
	switch c.In {
	case config.TypeInt4:
		c.fromInt4(out, src[:n/2])
	case config.TypeInt8:
		c.fromInt8(out, src[:n])
	case config.TypeInt16:
		c.fromInt16(out, src[:2*n])
	case config.TypeInt32:
		c.fromInt32(out, src[:4*n])
	}
	return n * c.outB
}

// The loops below read several samples per load and write eight bytes per store; narrow
// inputs go through lookup tables of whole results (per byte for int4 and int8, per sample
// for int16 to 16-bit outputs).

func (c Conversion) fromInt4(out, src []byte) {
	le := binary.LittleEndian
	switch c.outB {
	case 2:
		t := tables.pairs16(c.Out) // both samples of a byte, already in output order
		out = out[:4*len(src)]
		for j, x := range src {
			le.PutUint32(out[4*j:], t[x])
		}
	case 4:
		t := tables.pairs32(c.Out)
		out = out[:8*len(src)]
		for j, x := range src {
			le.PutUint64(out[8*j:], t[x])
		}
	default:
		out = out[:16*len(src)]
		for j, x := range src {
			le.PutUint64(out[16*j:], math.Float64bits(float64(int8(x)>>4)))
			le.PutUint64(out[16*j+8:], math.Float64bits(float64(int8(x<<4)>>4)))
		}
	}
}

func (c Conversion) fromInt8(out, src []byte) {
	le := binary.LittleEndian
	j := 0
	switch c.outB {
	case 2:
		t := tables.bytes16(c.Out)
		for ; j+4 <= len(src); j += 4 {
			x := le.Uint32(src[j:])
			le.PutUint64(out[2*j:], uint64(t[uint8(x)])|uint64(t[uint8(x>>8)])<<16|uint64(t[uint8(x>>16)])<<32|uint64(t[uint8(x>>24)])<<48)
		}
		for ; j < len(src); j++ {
			le.PutUint16(out[2*j:], t[src[j]])
		}
	case 4:
		t := tables.bytes32(c.Out)
		for ; j+2 <= len(src); j += 2 {
			le.PutUint64(out[4*j:], uint64(t[src[j]])|uint64(t[src[j+1]])<<32)
		}
		for ; j < len(src); j++ {
			le.PutUint32(out[4*j:], t[src[j]])
		}
	default:
		out = out[:8*len(src)]
		for j, x := range src {
			le.PutUint64(out[8*j:], math.Float64bits(float64(int8(x))))
		}
	}
}

// swap16 reverses the bytes of each 16-bit lane of x (network → host order for int16).
func swap16(x uint64) uint64 {
	return (x>>8)&0x00ff00ff00ff00ff | (x&0x00ff00ff00ff00ff)<<8
}

func (c Conversion) fromInt16(out, src []byte) {
	le := binary.LittleEndian
	n := len(src) / 2
	j := 0 // sample index
	// Four samples per 8-byte load, in host order.
	for ; j+4 <= n; j += 4 {
		x := le.Uint64(src[2*j:])
		if c.Big {
			x = swap16(x)
		}
		a, b, d, e := int16(x), int16(x>>16), int16(x>>32), int16(x>>48)
		switch c.Out {
		case config.TypeFP16, config.TypeBF16:
			t := tables.samples16(c.Out)
			le.PutUint64(out[2*j:], uint64(t[uint16(a)])|uint64(t[uint16(b)])<<16|uint64(t[uint16(d)])<<32|uint64(t[uint16(e)])<<48)
		case config.TypeFP32:
			le.PutUint64(out[4*j:], uint64(math.Float32bits(float32(a)))|uint64(math.Float32bits(float32(b)))<<32)
			le.PutUint64(out[4*j+8:], uint64(math.Float32bits(float32(d)))|uint64(math.Float32bits(float32(e)))<<32)
		case config.TypeInt32:
			le.PutUint64(out[4*j:], uint64(uint32(int32(a)))|uint64(uint32(int32(b)))<<32)
			le.PutUint64(out[4*j+8:], uint64(uint32(int32(d)))|uint64(uint32(int32(e)))<<32)
		default:
			le.PutUint64(out[8*j:], math.Float64bits(float64(a)))
			le.PutUint64(out[8*j+8:], math.Float64bits(float64(b)))
			le.PutUint64(out[8*j+16:], math.Float64bits(float64(d)))
			le.PutUint64(out[8*j+24:], math.Float64bits(float64(e)))
		}
	}
	for ; j < n; j++ {
		u := le.Uint16(src[2*j:])
		if c.Big {
			u = u>>8 | u<<8
		}
		c.put(out, j, int32(int16(u)))
	}
}

func (c Conversion) fromInt32(out, src []byte) {
	le := binary.LittleEndian
	n := len(src) / 4
	load := func(j int) int32 {
		u := le.Uint32(src[4*j:])
		if c.Big {
			u = bits.ReverseBytes32(u)
		}
		return int32(u)
	}
	switch c.Out {
	case config.TypeFP16:
		for j := 0; j < n; j++ {
			le.PutUint16(out[2*j:], f16FromF32(float32(load(j))))
		}
	case config.TypeBF16:
		for j := 0; j < n; j++ {
			le.PutUint16(out[2*j:], bf16FromF64(float64(load(j))))
		}
	case config.TypeFP32:
		for j := 0; j < n; j++ {
			le.PutUint32(out[4*j:], math.Float32bits(float32(load(j))))
		}
	case config.TypeInt32:
		for j := 0; j < n; j++ {
			le.PutUint32(out[4*j:], uint32(load(j)))
		}
	default:
		for j := 0; j < n; j++ {
			le.PutUint64(out[8*j:], math.Float64bits(float64(load(j))))
		}
	}
}

// f16FromF32 rounds float32(v) of an int32 v to binary16, ties to even: add half an ulp
// minus one plus the lowest kept bit, drop the 13 extra fraction bits (a carry rolls into the
// exponent), rebias. float32(v) is exact below 2^24, and every larger magnitude overflows
// binary16 to infinity whichever way float32 rounded it, so the result equals
// IntToFloatBits(v, 5, 10) for every int32 (the kernels' float_to_f16_bits does the same).
func f16FromF32(f float32) uint16 {
	u := math.Float32bits(f)
	sign := (u >> 16) & 0x8000
	a := u & 0x7fffffff
	if a == 0 {
		return uint16(sign)
	}
	a = (a + 0xfff + (a>>13)&1) >> 13
	e := int32(a>>10) - 127 + 15
	if e >= 31 {
		return uint16(sign | 0x7c00)
	}
	return uint16(sign | uint32(e)<<10 | a&0x3ff)
}

// bf16FromF64 rounds float64(v) of an int32 v (exact) to bfloat16, ties to even, the same
// way on the float64 bits: one rounding of the exact value, so it equals
// IntToFloatBits(v, 8, 7). Through float32 it could round twice.
func bf16FromF64(f float64) uint16 {
	b := math.Float64bits(f)
	sign := uint16(b>>48) & 0x8000
	a := b &^ (1 << 63)
	if a == 0 {
		return sign
	}
	a = (a + (1<<44 - 1) + (a>>45)&1) >> 45 // float64 exponent (bias 1023) << 7 | 7-bit fraction
	e := int(a>>7) - 1023 + 127             // at most 127+31: no int32 overflows bfloat16
	return sign | uint16(e)<<7 | uint16(a&0x7f)
}

// put writes sample j (the slow path for leftovers).
func (c Conversion) put(out []byte, j int, v int32) {
	le := binary.LittleEndian
	switch c.Out {
	case config.TypeFP16, config.TypeBF16:
		e, f := formatBits(c.Out)
		le.PutUint16(out[2*j:], uint16(IntToFloatBits(v, e, f)))
	case config.TypeFP32:
		le.PutUint32(out[4*j:], math.Float32bits(float32(v)))
	case config.TypeInt32:
		le.PutUint32(out[4*j:], uint32(v))
	default:
		le.PutUint64(out[8*j:], math.Float64bits(float64(v)))
	}
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

// convTables hold whole results for the narrow inputs, built on first use and read-only
// afterwards.
type convTables struct {
	once       [5]sync.Once
	pairs16Tab [5]*[256]uint32   // int4: the two 16-bit results of a byte, high nibble first
	pairs32Tab [5]*[256]uint64   // int4: the two 32-bit results of a byte
	bytes16Tab [5]*[256]uint16   // int8 → 16-bit
	bytes32Tab [5]*[256]uint32   // int8 → 32-bit
	once16     [5]sync.Once      //
	samp16Tab  [5]*[65536]uint16 // int16 → fp16/bf16
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

// result is one sample's output bits (16, 32 or 64 wide) for the narrow tables.
func result(v int32, out config.DataType) uint64 {
	switch out {
	case config.TypeFP16, config.TypeBF16:
		e, f := formatBits(out)
		return uint64(IntToFloatBits(v, e, f))
	case config.TypeFP32:
		return uint64(math.Float32bits(float32(v)))
	case config.TypeFP64:
		return math.Float64bits(float64(v))
	}
	return uint64(uint32(v))
}

func (t *convTables) build(out config.DataType) {
	k := outIndex(out)
	t.once[k].Do(func() {
		p16, p32 := new([256]uint32), new([256]uint64)
		b16, b32 := new([256]uint16), new([256]uint32)
		for x := 0; x < 256; x++ {
			hi, lo := result(int32(int8(x)>>4), out), result(int32(int8(x<<4)>>4), out)
			p16[x] = uint32(hi&0xffff) | uint32(lo&0xffff)<<16
			p32[x] = hi&0xffffffff | (lo&0xffffffff)<<32
			r := result(int32(int8(x)), out)
			b16[x], b32[x] = uint16(r), uint32(r)
		}
		t.pairs16Tab[k], t.pairs32Tab[k], t.bytes16Tab[k], t.bytes32Tab[k] = p16, p32, b16, b32
	})
}

func (t *convTables) pairs16(out config.DataType) *[256]uint32 {
	t.build(out)
	return t.pairs16Tab[outIndex(out)]
}

func (t *convTables) pairs32(out config.DataType) *[256]uint64 {
	t.build(out)
	return t.pairs32Tab[outIndex(out)]
}

func (t *convTables) bytes16(out config.DataType) *[256]uint16 {
	t.build(out)
	return t.bytes16Tab[outIndex(out)]
}

func (t *convTables) bytes32(out config.DataType) *[256]uint32 {
	t.build(out)
	return t.bytes32Tab[outIndex(out)]
}

func (t *convTables) samples16(out config.DataType) *[65536]uint16 {
	k := outIndex(out)
	t.once16[k].Do(func() {
		tb := new([65536]uint16)
		for x := range tb {
			tb[x] = uint16(result(int32(int16(uint16(x))), out))
		}
		t.samp16Tab[k] = tb
	})
	return t.samp16Tab[k]
}
