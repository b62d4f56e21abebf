//go:build amd64 && !purego

package reorder

import (
	"golang.org/x/sys/cpu"

	"github.com/daqiri-go/daqiri/config"
)

// The AVX2 loops of convert_amd64.s. Each converts blocks ≥ 1 whole blocks (16 samples of
// int8, int16 or int32, or 16 bytes of int4) from src to dst; aux is the byte-swap mask of
// int16 and int32 input or int4To16AVX2's table.

//go:noescape
func int16ToF32AVX2(dst, src *byte, blocks int, aux *[32]byte)

//go:noescape
func int16ToF16AVX2(dst, src *byte, blocks int, aux *[32]byte)

//go:noescape
func int16ToBF16AVX2(dst, src *byte, blocks int, aux *[32]byte)

//go:noescape
func int16ToI32AVX2(dst, src *byte, blocks int, aux *[32]byte)

//go:noescape
func int16ToF64AVX2(dst, src *byte, blocks int, aux *[32]byte)

//go:noescape
func int32ToF32AVX2(dst, src *byte, blocks int, aux *[32]byte)

//go:noescape
func int32ToF16AVX2(dst, src *byte, blocks int, aux *[32]byte)

//go:noescape
func int32ToBF16AVX2(dst, src *byte, blocks int, aux *[32]byte)

//go:noescape
func int32ToI32AVX2(dst, src *byte, blocks int, aux *[32]byte)

//go:noescape
func int32ToF64AVX2(dst, src *byte, blocks int, aux *[32]byte)

//go:noescape
func int8ToF16AVX2(dst, src *byte, blocks int, aux *[32]byte)

//go:noescape
func int8ToBF16AVX2(dst, src *byte, blocks int, aux *[32]byte)

//go:noescape
func int8ToF32AVX2(dst, src *byte, blocks int, aux *[32]byte)

//go:noescape
func int8ToI32AVX2(dst, src *byte, blocks int, aux *[32]byte)

//go:noescape
func int8ToF64AVX2(dst, src *byte, blocks int, aux *[32]byte)

//go:noescape
func int4To16AVX2(dst, src *byte, blocks int, aux *[32]byte)

//go:noescape
func int4ToF32AVX2(dst, src *byte, blocks int, aux *[32]byte)

//go:noescape
func int4ToI32AVX2(dst, src *byte, blocks int, aux *[32]byte)

//go:noescape
func int4ToF64AVX2(dst, src *byte, blocks int, aux *[32]byte)

// hasAVX2 gates the vector loops: VCVTPS2PH is F16C, the rest AVX2 (x/sys/cpu reports AVX2
// only when the OS saves the YMM registers).
var hasAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasF16C

// Byte-swap masks for VPSHUFB, one 128-bit lane repeated: identity (host order) or every
// 2- or 4-byte sample reversed (network order).
var (
	swapNone = lanes(func(i int) int { return i })
	swap16   = lanes(func(i int) int { return i ^ 1 })
	swap32   = lanes(func(i int) int { return i ^ 3 })
)

func lanes(f func(int) int) *[32]byte {
	var m [32]byte
	for i := range m {
		m[i] = byte(f(i % 16))
	}
	return &m
}

// int4To16Aux holds int4To16AVX2's tables: byte 0–15 the low bytes, 16–31 the high bytes of
// the fp16 or bf16 result of each nibble value (as stored, 0–15; 8–15 are -8…-1).
var int4To16Aux = [2]*[32]byte{int4Table(config.TypeFP16), int4Table(config.TypeBF16)}

func int4Table(out config.DataType) *[32]byte {
	var t [32]byte
	for n := range 16 {
		r := uint16(result(int32(n^8)-8, out))
		t[n], t[16+n] = byte(r), byte(r>>8)
	}
	return &t
}

// vectorize picks the AVX2 loop for c's conversion when the CPU has one.
func (c *Conversion) vectorize() {
	if !hasAVX2 {
		return
	}
	swap := swapNone
	var v vecLoop
	switch c.In {
	case config.TypeInt4:
		v.in = 16
		switch c.Out {
		case config.TypeFP16:
			v.fn, swap = int4To16AVX2, int4To16Aux[0]
		case config.TypeBF16:
			v.fn, swap = int4To16AVX2, int4To16Aux[1]
		case config.TypeFP32:
			v.fn = int4ToF32AVX2
		case config.TypeFP64:
			v.fn = int4ToF64AVX2
		case config.TypeInt32:
			v.fn = int4ToI32AVX2
		}
	case config.TypeInt8:
		v.in = 16
		v.fn = [...]vecFunc{int8ToF16AVX2, int8ToBF16AVX2, int8ToF32AVX2, int8ToF64AVX2, int8ToI32AVX2}[outIndex(c.Out)]
	case config.TypeInt16:
		v.in = 32
		if c.Big {
			swap = swap16
		}
		v.fn = [...]vecFunc{int16ToF16AVX2, int16ToBF16AVX2, int16ToF32AVX2, int16ToF64AVX2, int16ToI32AVX2}[outIndex(c.Out)]
	case config.TypeInt32:
		v.in = 64
		if c.Big {
			swap = swap32
		}
		v.fn = [...]vecFunc{int32ToF16AVX2, int32ToBF16AVX2, int32ToF32AVX2, int32ToF64AVX2, int32ToI32AVX2}[outIndex(c.Out)]
	}
	if v.fn == nil {
		return
	}
	v.out = c.OutputLen(v.in)
	v.aux = swap
	c.vec = &v
}
