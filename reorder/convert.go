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
	op     convOp
	// The lookup table op needs (built on first use, shared, read-only).
	int4x16 *[2][256]uint64  // int4 → fp16, bf16: both results of a byte, at bit 0 and at bit 32
	int4x32 *[256]uint64     // int4 → fp32, int32: both results of a byte
	int4x64 *[256][2]uint64  // int4 → fp64
	int8x16 *[4][256]uint64  // int8 → fp16, bf16: the result at bit 0, 16, 32 and 48
	int8x32 *[2][256]uint64  // int8 → fp32, int32: the result at bit 0 and 32
	int8x64 *[256]uint64     // int8 → fp64
	int16x  *[65536]uint16   // int16 → fp16, bf16
	int32x  *[1 << 17]uint16 // int32 → fp16, by f16Index
	vec     *vecLoop         // the vector loop for whole blocks, if the CPU has one
}

// vecFunc converts blocks ≥ 1 whole blocks from src to dst; aux is its byte-swap mask or
// table.
type vecFunc func(dst, src *byte, blocks int, aux *[32]byte)

// vecLoop is a vector conversion loop (convert_amd64.s) with its block size: it converts
// whole blocks of in input bytes into out output bytes, and the scalar loop the rest.
type vecLoop struct {
	fn      vecFunc
	in, out int
	aux     *[32]byte
}

// convOp is the loop that converts one input type to one output type.
type convOp uint8

const (
	opNone convOp = iota
	opInt4To16
	opInt4To32
	opInt4To64
	opInt8To16
	opInt8To32
	opInt8To64
	opInt16ToF16
	opInt16ToBF16
	opInt16ToF32
	opInt16ToF64
	opInt16ToI32
	opInt32ToF16
	opInt32ToBF16
	opInt32ToF32
	opInt32ToF64
	opInt32ToI32
)

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
	c.compile()
	return c, nil
}

// compile picks the conversion loop and its table.
func (c *Conversion) compile() {
	switch c.In {
	case config.TypeInt4:
		switch c.outB {
		case 2:
			c.op, c.int4x16 = opInt4To16, tables.int4x16(c.Out)
		case 4:
			c.op, c.int4x32 = opInt4To32, tables.int4x32(c.Out)
		default:
			c.op, c.int4x64 = opInt4To64, tables.int4x64()
		}
	case config.TypeInt8:
		switch c.outB {
		case 2:
			c.op, c.int8x16 = opInt8To16, tables.int8x16(c.Out)
		case 4:
			c.op, c.int8x32 = opInt8To32, tables.int8x32(c.Out)
		default:
			c.op, c.int8x64 = opInt8To64, tables.int8x64()
		}
	case config.TypeInt16:
		c.op = [...]convOp{opInt16ToF16, opInt16ToBF16, opInt16ToF32, opInt16ToF64, opInt16ToI32}[outIndex(c.Out)]
		if c.outB == 2 {
			c.int16x = tables.int16x(c.Out)
		}
	case config.TypeInt32:
		c.op = [...]convOp{opInt32ToF16, opInt32ToBF16, opInt32ToF32, opInt32ToF64, opInt32ToI32}[outIndex(c.Out)]
		if c.op == opInt32ToF16 {
			c.int32x = tables.int32f16()
		}
	}
	c.vectorize()
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
	in := src[:n*c.inBits/8]
	written := len(out)
	if v := c.vec; v != nil && len(in) >= v.in {
		// Whole blocks in vector registers, the samples after them in the scalar loop.
		blocks := len(in) / v.in
		v.fn(&out[0], &in[0], blocks, v.aux)
		if len(in) == blocks*v.in {
			return written
		}
		in, out = in[blocks*v.in:], out[blocks*v.out:]
	}
	big := c.Big
	switch c.op {
	case opInt4To16:
		int4To16(out, in, c.int4x16)
	case opInt4To32:
		int4To32(out, in, c.int4x32)
	case opInt4To64:
		int4To64(out, in, c.int4x64)
	case opInt8To16:
		int8To16(out, in, c.int8x16)
	case opInt8To32:
		int8To32(out, in, c.int8x32)
	case opInt8To64:
		int8To64(out, in, c.int8x64)
	case opInt16ToF16:
		int16ToF16(out, in, c.int16x, big)
	case opInt16ToBF16:
		int16ToBF16(out, in, c.int16x, big)
	case opInt16ToF32:
		int16ToF32(out, in, big)
	case opInt16ToF64:
		int16ToF64(out, in, big)
	case opInt16ToI32:
		int16ToI32(out, in, big)
	case opInt32ToF16:
		int32ToF16(out, in, c.int32x, big)
	case opInt32ToBF16:
		int32ToBF16(out, in, big)
	case opInt32ToF32:
		int32ToF32(out, in, big)
	case opInt32ToF64:
		int32ToF64(out, in, big)
	case opInt32ToI32:
		int32ToI32(out, in) // network order only: host order is a copy
	}
	return written
}

// The loops (convert_loops.go, written by convert_loops_gen.go) take exactly the input and
// output of whole samples.
//
//go:generate go run convert_loops_gen.go

var (
	le = binary.LittleEndian
	be = binary.BigEndian
)

// f16Index is where an int32's binary16 lies in the int32 → fp16 table: its entries are the
// results for -65536 … 65535, and every magnitude from 65520 up rounds to infinity, so larger
// ones share the entries at the ends.
func f16Index(v int32) uint32 {
	return uint32(min(max(v, -1<<16), 1<<16-1)+1<<16) & (1<<17 - 1)
}

// bf16FromI32 rounds an int32 to bfloat16, ties to even, the same way on the bits of
// float64(v), which is exact: one rounding of the exact value, so it equals
// IntToFloatBits(v, 8, 7). Through float32 it could round twice. No int32 comes near
// bfloat16's largest exponent; zero is picked without a branch on the data.
func bf16FromI32(v int32) uint16 {
	b := math.Float64bits(float64(v))
	a := b &^ (1 << 63)
	a = (a + (1<<44 - 1) + (a>>45)&1) >> 45 // float64 exponent (bias 1023) << 7 | 7-bit fraction
	r := uint16(a - (1023-127)<<7)
	if a == 0 {
		r = 0
	}
	return uint16(b>>48)&0x8000 | r
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

// convTables hold whole results for the narrow inputs, each already shifted to its place in
// an output word, built on first use (from IntToFloatBits) and read-only afterwards.
type convTables struct {
	once   [5]sync.Once
	i4x16  [5]*[2][256]uint64
	i4x32  [5]*[256]uint64
	i8x16  [5]*[4][256]uint64
	i8x32  [5]*[2][256]uint64
	once64 sync.Once
	i4x64  *[256][2]uint64
	i8x64  *[256]uint64
	once16 [2]sync.Once
	i16    [2]*[65536]uint16 // int16 → fp16, bf16: 128 KiB each, faster than rounding (BenchmarkConvert)
	once32 sync.Once
	i32f16 *[1 << 17]uint16 // int32 → fp16 (f16Index): 256 KiB, faster than rounding
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
		i4x16, i4x32 := new([2][256]uint64), new([256]uint64)
		i8x16, i8x32 := new([4][256]uint64), new([2][256]uint64)
		for x := 0; x < 256; x++ {
			hi, lo := result(int32(int8(x)>>4), out), result(int32(int8(x<<4)>>4), out) // high nibble first
			p16 := hi&0xffff | (lo&0xffff)<<16
			i4x16[0][x], i4x16[1][x] = p16, p16<<32
			i4x32[x] = hi&0xffffffff | (lo&0xffffffff)<<32
			r := result(int32(int8(x)), out)
			for j := range i8x16 {
				i8x16[j][x] = (r & 0xffff) << (16 * j)
			}
			i8x32[0][x], i8x32[1][x] = r&0xffffffff, (r&0xffffffff)<<32
		}
		t.i4x16[k], t.i4x32[k], t.i8x16[k], t.i8x32[k] = i4x16, i4x32, i8x16, i8x32
	})
}

func (t *convTables) int4x16(out config.DataType) *[2][256]uint64 {
	t.build(out)
	return t.i4x16[outIndex(out)]
}

func (t *convTables) int4x32(out config.DataType) *[256]uint64 {
	t.build(out)
	return t.i4x32[outIndex(out)]
}

func (t *convTables) int8x16(out config.DataType) *[4][256]uint64 {
	t.build(out)
	return t.i8x16[outIndex(out)]
}

func (t *convTables) int8x32(out config.DataType) *[2][256]uint64 {
	t.build(out)
	return t.i8x32[outIndex(out)]
}

func (t *convTables) build64() {
	t.once64.Do(func() {
		i4, i8 := new([256][2]uint64), new([256]uint64)
		for x := range 256 {
			i4[x] = [2]uint64{result(int32(int8(x)>>4), config.TypeFP64), result(int32(int8(x<<4)>>4), config.TypeFP64)}
			i8[x] = result(int32(int8(x)), config.TypeFP64)
		}
		t.i4x64, t.i8x64 = i4, i8
	})
}

func (t *convTables) int4x64() *[256][2]uint64 {
	t.build64()
	return t.i4x64
}

func (t *convTables) int8x64() *[256]uint64 {
	t.build64()
	return t.i8x64
}

func (t *convTables) int16x(out config.DataType) *[65536]uint16 {
	k := outIndex(out) // fp16 or bf16: 0 or 1
	t.once16[k].Do(func() {
		tb := new([65536]uint16)
		for x := range tb {
			tb[x] = uint16(result(int32(int16(uint16(x))), out))
		}
		t.i16[k] = tb
	})
	return t.i16[k]
}

func (t *convTables) int32f16() *[1 << 17]uint16 {
	t.once32.Do(func() {
		tb := new([1 << 17]uint16)
		for x := range tb {
			tb[x] = uint16(result(int32(x)-1<<16, config.TypeFP16))
		}
		t.i32f16 = tb
	})
	return t.i32f16
}
