package reorder

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/daqiri-go/daqiri/config"
)

// The formats (IEEE 754 binary16: 1 sign, 5 exponent bits with bias 15, 10 fraction bits,
// largest finite 65504; bfloat16: 1 sign, 8 exponent bits, 7 fraction bits; binary32: 8 and
// 23) are taken from public descriptions: https://thecharlieblake.co.uk/fp16 and Google's
// TfLiteBFloat16 documentation (https://developers.google.cn/edge/api/tflite/c/struct/tf-lite-b-float16).

// refFloatBits is an independent reference for IntToFloatBits: math/big rounds v to
// frac+1 significant bits, ties to even, and the result is encoded by hand.
func refFloatBits(v int64, exp, frac int) uint32 {
	if v == 0 {
		return 0
	}
	f := new(big.Float).SetMode(big.ToNearestEven).SetPrec(uint(frac + 1)).SetInt64(v)
	var sign uint32
	if f.Sign() < 0 {
		sign = 1
		f.Neg(f)
	}
	mant := new(big.Float)
	e := f.MantExp(mant) // f = mant × 2^e, 0.5 ≤ mant < 1
	p := e - 1           // f = 1.xxx × 2^p
	bias := 1<<(exp-1) - 1
	if p+bias >= 1<<exp-1 {
		return sign<<(exp+frac) | uint32(1<<exp-1)<<frac // infinity
	}
	// mant × 2^(frac+1) is the significand as an integer with the leading 1 at bit frac.
	sig, acc := new(big.Float).SetMantExp(mant, frac+1).Int64()
	if acc != big.Exact {
		panic("reference significand not exact")
	}
	return sign<<(exp+frac) | uint32(p+bias)<<frac | uint32(sig)&(1<<frac-1)
}

func TestIntToFloatBitsKnownValues(t *testing.T) {
	type tc struct {
		v    int32
		fmt  string
		want uint32
	}
	for _, c := range []tc{
		{0, "fp16", 0x0000}, {1, "fp16", 0x3c00}, {-1, "fp16", 0xbc00}, {2048, "fp16", 0x6800},
		{2049, "fp16", 0x6800},  // tie between 2048 and 2050: even fraction (2048) wins
		{2051, "fp16", 0x6802},  // tie between 2050 and 2052: 2052 has the even fraction
		{4098, "fp16", 0x6c00},  // tie at ulp 4: 4096
		{4102, "fp16", 0x6c02},  // tie at ulp 4: 4104
		{65504, "fp16", 0x7bff}, // largest finite
		{65519, "fp16", 0x7bff}, // just below the halfway point to 65536
		{65520, "fp16", 0x7c00}, // halfway rounds to even = 2^16, past the range: +inf
		{-65520, "fp16", 0xfc00},
		{math.MaxInt32, "fp16", 0x7c00}, {math.MinInt32, "fp16", 0xfc00},
		{1, "bf16", 0x3f80}, {256, "bf16", 0x4380},
		{257, "bf16", 0x4380}, // tie between 256 and 258: 256
		{259, "bf16", 0x4382}, // tie between 258 and 260: 260
		{math.MinInt32, "bf16", 0xcf00},
		// 2^25 + 2^17 + 1 is just above the halfway point between two bf16 neighbours, so it
		// rounds up to 2^25 + 2^18. Converting through float32 first would round it to the
		// exact tie 2^25 + 2^17 and then down to 2^25: double rounding.
		{1<<25 + 1<<17 + 1, "bf16", 0x4c01},
		{1<<24 + 1, "fp32", 0x4b800000}, // tie: 2^24
		{1<<24 + 3, "fp32", 0x4b800002}, // tie: 2^24 + 4
	} {
		e, m := 5, 10
		switch c.fmt {
		case "bf16":
			e, m = 8, 7
		case "fp32":
			e, m = 8, 23
		}
		if got := IntToFloatBits(c.v, e, m); got != c.want {
			t.Errorf("%s(%d) = %#x, want %#x", c.fmt, c.v, got, c.want)
		}
		if ref := refFloatBits(int64(c.v), e, m); ref != c.want {
			t.Errorf("reference %s(%d) = %#x, want %#x (the table is wrong)", c.fmt, c.v, ref, c.want)
		}
	}
	// The double-rounding case really differs from going through float32.
	v := int32(1<<25 + 1<<17 + 1)
	if via := math.Float32bits(float32(v)) >> 16; via == 0x4c01 {
		t.Fatalf("expected float32 double rounding to differ; got %#x", via)
	}
}

func TestIntToFloatBitsRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	formats := []struct{ e, m int }{{5, 10}, {8, 7}, {8, 23}}
	for i := 0; i < 200000; i++ {
		var v int32
		switch i % 4 {
		case 0:
			v = int32(r.Uint32())
		case 1:
			v = int32(r.Uint32()) >> r.IntN(32) // every magnitude
		case 2:
			// Halfway points and their neighbours for each format.
			f := formats[r.IntN(len(formats))]
			p := r.IntN(31-f.m) + f.m + 1
			base := int64(1)<<p | r.Int64N(int64(1)<<p)
			half := int64(1) << (p - f.m - 1)
			x := base&^(2*half-1) + half + int64(r.IntN(3)-1)
			if x > math.MaxInt32 {
				x = math.MaxInt32
			}
			v = int32(x)
			if r.IntN(2) == 0 {
				v = -v
			}
		default:
			v = int32(r.IntN(1<<17)) - 1<<16 // around fp16's range
		}
		for _, f := range formats {
			if got, want := IntToFloatBits(v, f.e, f.m), refFloatBits(int64(v), f.e, f.m); got != want {
				t.Fatalf("IntToFloatBits(%d, %d, %d) = %#x, reference %#x", v, f.e, f.m, got, want)
			}
		}
		// float32 conversion in Go rounds to nearest even as well: a second, independent check.
		if got, want := IntToFloatBits(v, 8, 23), math.Float32bits(float32(v)); got != want {
			t.Fatalf("IntToFloatBits(%d) fp32 = %#x, Go float32 = %#x", v, got, want)
		}
	}
}

// refSamples decodes src as signed samples the long way (independently of Convert).
func refSamples(src []byte, in config.DataType, big bool) []int64 {
	var out []int64
	switch in {
	case config.TypeInt4:
		for _, c := range src {
			for _, nib := range []int64{int64(c >> 4), int64(c & 15)} {
				if nib >= 8 {
					nib -= 16
				}
				out = append(out, nib)
			}
		}
	case config.TypeInt8, config.TypeInt16, config.TypeInt32:
		w := in.Bits() / 8
		for j := 0; j+w <= len(src); j += w {
			var u uint64
			for k := 0; k < w; k++ {
				b := src[j+k]
				if big || w == 1 {
					u = u<<8 | uint64(b)
				} else {
					u |= uint64(b) << (8 * k)
				}
			}
			v := int64(u)
			if u>>(8*w-1) == 1 {
				v -= 1 << (8 * w)
			}
			out = append(out, v)
		}
	}
	return out
}

// refEncode writes samples in an output format, little-endian, with math/big and float64.
func refEncode(vals []int64, out config.DataType) []byte {
	var b []byte
	for _, v := range vals {
		switch out {
		case config.TypeFP16:
			b = binary.LittleEndian.AppendUint16(b, uint16(refFloatBits(v, 5, 10)))
		case config.TypeBF16:
			b = binary.LittleEndian.AppendUint16(b, uint16(refFloatBits(v, 8, 7)))
		case config.TypeFP32:
			b = binary.LittleEndian.AppendUint32(b, refFloatBits(v, 8, 23))
		case config.TypeFP64:
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(float64(v))) // exact
		case config.TypeInt32:
			b = binary.LittleEndian.AppendUint32(b, uint32(int32(v)))
		}
	}
	return b
}

var (
	inTypes  = []config.DataType{config.TypeInt4, config.TypeInt8, config.TypeInt16, config.TypeInt32}
	outTypes = []config.DataType{config.TypeFP16, config.TypeBF16, config.TypeFP32, config.TypeFP64, config.TypeInt32}
)

func TestConvertAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	for _, in := range inTypes {
		for _, out := range outTypes {
			for _, end := range []config.Endianness{config.EndianHost, config.EndianNetwork} {
				t.Run(fmt.Sprintf("%s-%s-%s", in, out, end), func(t *testing.T) {
					c, err := NewConversion(&config.DataTypes{Input: in, Output: out, Endianness: end})
					if err != nil {
						t.Fatal(err)
					}
					for trial := 0; trial < 20; trial++ {
						n := r.IntN(600) + 1
						src := make([]byte, n)
						for j := range src {
							src[j] = byte(r.Uint32())
						}
						if trial == 0 { // every extreme value
							for j := range src {
								src[j] = []byte{0x80, 0x7f, 0xff, 0x00}[j%4]
							}
						}
						want := refEncode(refSamples(src[:c.InputBytes(n)], in, end == config.EndianNetwork), out)
						if !c.Active() {
							// int32 → int32 in host order: upstream copies bytes, whole samples or not.
							want = src
						}
						if c.OutputLen(n) != len(want) {
							t.Fatalf("OutputLen(%d) = %d, reference %d", n, c.OutputLen(n), len(want))
						}
						dst := make([]byte, len(want)+8)
						for j := range dst {
							dst[j] = 0xa5
						}
						if k := c.Convert(dst, src); k != len(want) {
							t.Fatalf("Convert wrote %d bytes, want %d", k, len(want))
						}
						if !bytes.Equal(dst[:len(want)], want) {
							t.Fatalf("Convert(%x) = %x, reference %x", src, dst[:len(want)], want)
						}
						if !bytes.Equal(dst[len(want):], bytes.Repeat([]byte{0xa5}, 8)) {
							t.Fatal("Convert wrote past its output")
						}
					}
				})
			}
		}
	}
}

func TestNewConversionBadInput(t *testing.T) {
	for _, dt := range []config.DataTypes{
		{Input: "int3", Output: config.TypeFP32},
		{Input: config.TypeFP16, Output: config.TypeFP32},
		{Input: config.TypeInt8, Output: "fp8"},
		{Input: config.TypeInt8, Output: config.TypeInt8},
		{Input: config.TypeInt8, Output: config.TypeFP32, Endianness: "little"},
		{Output: config.TypeFP32},
	} {
		if _, err := NewConversion(&dt); err == nil {
			t.Errorf("NewConversion(%+v) accepted", dt)
		}
	}
	c, err := NewConversion(nil)
	if err != nil || c.Active() {
		t.Fatalf("nil data_types: %+v, %v", c, err)
	}
	// int32 → int32 in host order is a plain copy.
	c, err = NewConversion(&config.DataTypes{Input: config.TypeInt32, Output: config.TypeInt32, Endianness: config.EndianHost})
	if err != nil || c.Active() {
		t.Fatalf("int32 → int32 host: %+v, %v", c, err)
	}
	c, _ = NewConversion(&config.DataTypes{Input: config.TypeInt16, Output: config.TypeFP32})
	if c.Whole(3) || !c.Whole(4) || c.Elements(5) != 2 || c.OutputLen(5) != 8 {
		t.Fatalf("int16 sizes wrong: whole(3)=%v elements(5)=%d out(5)=%d", c.Whole(3), c.Elements(5), c.OutputLen(5))
	}
}

// TestFastRoundingsMatchReference checks int32 → fp16 (a table lookup after clamping) and
// int32 → bf16 (rounding on float64 bits) against IntToFloatBits at the edges, on every value
// around fp16's range and on random values.
func TestFastRoundingsMatchReference(t *testing.T) {
	r := newRand()
	vals := []int32{0, 1, -1, 2047, 2049, 2051, 65504, 65519, 65520, -65520, 1 << 24, 1<<24 + 1, 1<<25 + 1<<17 + 1,
		math.MaxInt32, math.MinInt32, math.MaxInt32 - 64, 1 << 16, -1 << 16, 1<<16 - 1, -1<<16 - 1}
	for v := int32(-70000); v <= 70000; v++ {
		vals = append(vals, v)
	}
	for i := 0; i < 1<<20; i++ {
		vals = append(vals, int32(r.Uint32())>>r.IntN(32))
	}
	src := make([]byte, 4*len(vals))
	for j, v := range vals {
		binary.LittleEndian.PutUint32(src[4*j:], uint32(v))
	}
	for _, out := range []config.DataType{config.TypeFP16, config.TypeBF16} {
		c, _ := NewConversion(&config.DataTypes{Input: config.TypeInt32, Output: out})
		e, f := formatBits(out)
		dst := make([]byte, 2*len(vals))
		c.Convert(dst, src)
		for j, v := range vals {
			if got, want := uint32(binary.LittleEndian.Uint16(dst[2*j:])), IntToFloatBits(v, e, f); got != want {
				t.Fatalf("int32 %d → %s = %#x, want %#x", v, out, got, want)
			}
		}
	}
}
