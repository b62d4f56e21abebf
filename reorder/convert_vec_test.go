package reorder

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/internal/testutil"
)

// TestVectorLoopsMatchScalar runs every conversion through its vector loop and through the
// scalar loops alone on the same input, and wants the same bytes: every int16 value in both
// byte orders, every int8 and int4 byte, and int32 values at each rounding boundary of fp16
// and bf16 plus random ones, at lengths that leave a scalar tail after the whole blocks.
func TestVectorLoopsMatchScalar(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no vector loops on this CPU or build (need amd64 with AVX2 and F16C, no purego tag)")
	}
	r := newRand()
	int32s := []int32{0, 1, -1, 65504, 65519, 65520, 65535, 65536, -65536, -65537, 1<<24 - 1, 1 << 24, 1<<24 + 1,
		math.MaxInt32, math.MinInt32, math.MinInt32 + 1, math.MaxInt32 - 127, math.MaxInt32 - 128}
	for p := 8; p < 31; p++ {
		// Around bf16's rounding point for a top bit at p: exactly half, just below, just above,
		// with and without the kept lsb set, both signs.
		for _, base := range []int64{1 << p, 1<<p | 1<<(p-7)} {
			for _, d := range []int64{-1, 0, 1} {
				v := base + int64(1)<<(p-8) + d
				if v <= math.MaxInt32 {
					int32s = append(int32s, int32(v), int32(-v))
				}
			}
		}
	}
	for i := 0; i < 1<<18; i++ {
		int32s = append(int32s, int32(r.Uint32())>>r.IntN(32))
	}
	inputs := map[config.DataType][]byte{
		config.TypeInt4: make([]byte, 256*3+7),
		config.TypeInt8: make([]byte, 256*3+7),
	}
	for _, in := range []config.DataType{config.TypeInt4, config.TypeInt8} {
		for i := range inputs[in] {
			inputs[in][i] = byte(i)
		}
	}
	i16 := make([]byte, 2*(65536+13))
	for v := range 65536 + 13 {
		binary.LittleEndian.PutUint16(i16[2*v:], uint16(v))
	}
	inputs[config.TypeInt16] = i16
	i32 := make([]byte, 4*len(int32s))
	for j, v := range int32s {
		binary.LittleEndian.PutUint32(i32[4*j:], uint32(v))
	}
	inputs[config.TypeInt32] = i32

	for _, in := range inTypes {
		for _, out := range outTypes {
			for _, end := range []config.Endianness{config.EndianHost, config.EndianNetwork} {
				c, err := NewConversion(&config.DataTypes{Input: in, Output: out, Endianness: end})
				if err != nil {
					t.Fatal(err)
				}
				if !c.Active() {
					continue // int32 → int32 host order is a copy
				}
				name := fmt.Sprintf("%s-%s-%s", in, out, end)
				if c.vec == nil {
					t.Errorf("%s: no vector loop although the CPU has AVX2", name)
					continue
				}
				scalar := c
				scalar.vec = nil
				src := inputs[in]
				want := make([]byte, c.OutputLen(len(src)))
				got := make([]byte, len(want)+16)
				scalar.Convert(want, src)
				for k := range got {
					got[k] = 0x5a
				}
				if n := c.Convert(got, src); n != len(want) {
					t.Fatalf("%s: wrote %d bytes, want %d", name, n, len(want))
				}
				if k := testutil.FirstDiff(got[:len(want)], want); k >= 0 {
					t.Fatalf("%s: output byte %d (sample %d) = %#x, scalar %#x", name, k, k/c.OutBytes(), got[k], want[k])
				}
				if !bytes.Equal(got[len(want):], bytes.Repeat([]byte{0x5a}, 16)) {
					t.Fatalf("%s: wrote past its output", name)
				}
			}
		}
	}
}
