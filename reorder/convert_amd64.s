//go:build amd64 && !purego

#include "textflag.h"

// AVX2 conversion loops (convert_amd64.go picks them; the scalar loops of convert_loops.go
// convert what is left after the last whole block). Every one has the Go signature
//
//	func(dst, src *byte, blocks int, aux *[32]byte)
//
// and converts blocks ≥ 1 whole blocks: 16 samples for int8, int16 and int32 input, 16 input
// bytes (32 samples) for int4. aux is a byte-swap mask for int16 and int32 (the identity for
// little-endian input), the int4 → 16-bit table for int4To16, unused otherwise.
//
// Why the results equal the scalar loops bit for bit:
//   - int4, int8, int16 and int32 ≤ 2^24 in magnitude are exact in float32, so VCVTDQ2PS is
//     exact and the one rounding that follows (VCVTPS2PH with imm 0: round to nearest even,
//     whatever MXCSR says; or BF16 below) is the rounding of the integer itself.
//   - int32 → fp32 rounds once, in VCVTDQ2PS under MXCSR's default round to nearest even,
//     the mode Go's float32(int32) runs under too. → fp64 and → int32 are exact.
//   - int32 → fp16: every magnitude from 65520 up rounds to infinity, so clamping to
//     [-65536, 65535] first changes no result and leaves values float32 holds exactly.
//   - int32 → bf16: STICKY makes the value exact in float32 without changing its bf16
//     rounding (see there).
//
// Registers: DI dst, SI src, CX blocks left, AX aux, Y15 the byte-swap mask, Y8–Y14
// constants, Y0–Y7 the data.

// ARGS loads the arguments.
#define ARGS \
	MOVQ dst+0(FP), DI; \
	MOVQ src+8(FP), SI; \
	MOVQ blocks+16(FP), CX; \
	MOVQ aux+24(FP), AX

// BCAST(imm, x, y) puts the 32-bit constant imm in every dword of y.
#define BCAST(imm, x, y) \
	MOVL $imm, DX; \
	VMOVD DX, x; \
	VPBROADCASTD x, y

// NEXT(in, out) advances to the next block and loops while blocks are left.
#define NEXT(in, out) \
	ADDQ $in, SI; \
	ADDQ $out, DI; \
	DECQ CX; \
	JNZ loop; \
	VZEROUPPER; \
	RET

// I16(off, x, y): the 8 int16 samples at off(SI), put in host order by the mask in X15,
// sign-extended to int32 in y (x is y's low half).
#define I16(off, x, y) \
	VMOVDQU off(SI), x; \
	VPSHUFB X15, x, x; \
	VPMOVSXWD x, y

// I32(off, y): the 8 int32 samples at off(SI), in host order, in y.
#define I32(off, y) \
	VMOVDQU off(SI), y; \
	VPSHUFB Y15, y, y

// BF16CONST sets the constants BF16 needs: Y13 = 0x7fff, Y12 = 1 in every dword.
#define BF16CONST \
	BCAST(0x7fff, X13, Y13); \
	BCAST(1, X12, Y12)

// BF16(y) rounds the 8 float32 in y to bfloat16, ties to even, each result in the low half
// of its dword: y = (y + 0x7fff + bit 16 of y) >> 16. Below half an ulp of bf16 the sum does
// not carry into bit 16, at half it carries only when bit 16 (the lsb kept) is 1, above half
// it always does. A carry out of the fraction steps the exponent, which is right; none of
// these values comes near infinity. Uses Y11.
#define BF16(y) \
	VPSRLD $16, y, Y11; \
	VPAND Y12, Y11, Y11; \
	VPADDD Y13, y, y; \
	VPADDD Y11, y, y; \
	VPSRLD $16, y, y

// PACK16(a, b) packs the 16-bit results in the dwords of a (samples 0–7) and b (8–15) into a,
// in order. VPACKUSDW works per 128-bit lane (a0–3 b0–3 | a4–7 b4–7); VPERMQ 0b11011000
// swaps the middle quarters back. Every dword is ≤ 0xffff, so nothing saturates.
#define PACK16(a, b) \
	VPACKUSDW b, a, a; \
	VPERMQ $0xd8, a, a

// F64(y, x, off) converts the 8 int32 in y (x its low half) to float64 and stores them at
// off(DI). Clobbers y. Uses Y7.
#define F64(y, x, off) \
	VCVTDQ2PD x, Y7; \
	VMOVDQU Y7, off(DI); \
	VEXTRACTI128 $1, y, x; \
	VCVTDQ2PD x, Y7; \
	VMOVDQU Y7, off+32(DI)

// ---- int16 input: 16 samples (32 bytes) a block.

// func int16ToF32AVX2(dst, src *byte, blocks int, aux *[32]byte)
TEXT ·int16ToF32AVX2(SB), NOSPLIT, $0-32
	ARGS
	VBROADCASTI128 (AX), Y15

loop:
	I16(0, X0, Y0)
	I16(16, X1, Y1)
	VCVTDQ2PS Y0, Y0
	VCVTDQ2PS Y1, Y1
	VMOVDQU Y0, (DI)
	VMOVDQU Y1, 32(DI)
	NEXT(32, 64)

// func int16ToF16AVX2(dst, src *byte, blocks int, aux *[32]byte)
TEXT ·int16ToF16AVX2(SB), NOSPLIT, $0-32
	ARGS
	VBROADCASTI128 (AX), Y15

loop:
	I16(0, X0, Y0)
	I16(16, X1, Y1)
	VCVTDQ2PS Y0, Y0
	VCVTDQ2PS Y1, Y1
	VCVTPS2PH $0, Y0, (DI)
	VCVTPS2PH $0, Y1, 16(DI)
	NEXT(32, 32)

// func int16ToBF16AVX2(dst, src *byte, blocks int, aux *[32]byte)
TEXT ·int16ToBF16AVX2(SB), NOSPLIT, $0-32
	ARGS
	VBROADCASTI128 (AX), Y15
	BF16CONST

loop:
	I16(0, X0, Y0)
	I16(16, X1, Y1)
	VCVTDQ2PS Y0, Y0
	VCVTDQ2PS Y1, Y1
	BF16(Y0)
	BF16(Y1)
	PACK16(Y0, Y1)
	VMOVDQU Y0, (DI)
	NEXT(32, 32)

// func int16ToI32AVX2(dst, src *byte, blocks int, aux *[32]byte)
TEXT ·int16ToI32AVX2(SB), NOSPLIT, $0-32
	ARGS
	VBROADCASTI128 (AX), Y15

loop:
	I16(0, X0, Y0)
	I16(16, X1, Y1)
	VMOVDQU Y0, (DI)
	VMOVDQU Y1, 32(DI)
	NEXT(32, 64)

// func int16ToF64AVX2(dst, src *byte, blocks int, aux *[32]byte)
TEXT ·int16ToF64AVX2(SB), NOSPLIT, $0-32
	ARGS
	VBROADCASTI128 (AX), Y15

loop:
	I16(0, X0, Y0)
	I16(16, X1, Y1)
	F64(Y0, X0, 0)
	F64(Y1, X1, 64)
	NEXT(32, 128)

// ---- int32 input: 16 samples (64 bytes) a block.

// func int32ToF32AVX2(dst, src *byte, blocks int, aux *[32]byte)
TEXT ·int32ToF32AVX2(SB), NOSPLIT, $0-32
	ARGS
	VBROADCASTI128 (AX), Y15

loop:
	I32(0, Y0)
	I32(32, Y1)
	VCVTDQ2PS Y0, Y0
	VCVTDQ2PS Y1, Y1
	VMOVDQU Y0, (DI)
	VMOVDQU Y1, 32(DI)
	NEXT(64, 64)

// int32 → fp16: clamped to [-65536, 65535] (Y13, Y14), where float32 is exact and every
// result outside is already ±infinity, as in the scalar loop's table (f16Index).
//
// func int32ToF16AVX2(dst, src *byte, blocks int, aux *[32]byte)
TEXT ·int32ToF16AVX2(SB), NOSPLIT, $0-32
	ARGS
	VBROADCASTI128 (AX), Y15
	BCAST(65535, X14, Y14)
	BCAST(-65536, X13, Y13)

loop:
	I32(0, Y0)
	I32(32, Y1)
	VPMINSD Y14, Y0, Y0
	VPMINSD Y14, Y1, Y1
	VPMAXSD Y13, Y0, Y0
	VPMAXSD Y13, Y1, Y1
	VCVTDQ2PS Y0, Y0
	VCVTDQ2PS Y1, Y1
	VCVTPS2PH $0, Y0, (DI)
	VCVTPS2PH $0, Y1, 16(DI)
	NEXT(64, 32)

// STICKY(y) replaces each int32 in y that float32 cannot hold exactly by one that it can
// and that rounds to the same bf16. For a magnitude a ≥ 2^24 with its top bit at p ≥ 24, bf16
// keeps bits p…p-7 and rounds on bit p-8 and on whether any of bits p-9…0 (p-9 ≥ 15) is
// set; OR-ing bits 7…0 into bit 8 keeps all of that and leaves at most 24 significant bits
// (31…8). Smaller magnitudes are exact as they are. VPABSD leaves -2^31 as 0x80000000,
// negative as a signed dword, so it is kept (its low bits are 0 anyway); VPSIGND puts the
// sign back (-(-2^31) wraps to itself). Y14 = 0xff, Y10 = 2^24-1, Y9 = 0, Y8 = 0x100; uses
// Y4–Y6.
#define STICKY(y) \
	VPABSD y, Y4; \
	VPAND Y14, Y4, Y5; \
	VPCMPEQD Y9, Y5, Y5; \
	VPANDN Y8, Y5, Y5; \
	VPANDN Y4, Y14, Y6; \
	VPOR Y5, Y6, Y6; \
	VPCMPGTD Y10, Y4, Y5; \
	VPBLENDVB Y5, Y6, Y4, Y4; \
	VPSIGND y, Y4, y

// func int32ToBF16AVX2(dst, src *byte, blocks int, aux *[32]byte)
TEXT ·int32ToBF16AVX2(SB), NOSPLIT, $0-32
	ARGS
	VBROADCASTI128 (AX), Y15
	BF16CONST
	BCAST(0xff, X14, Y14)
	BCAST(0xffffff, X10, Y10)
	VPXOR Y9, Y9, Y9
	BCAST(0x100, X8, Y8)

loop:
	I32(0, Y0)
	I32(32, Y1)
	STICKY(Y0)
	STICKY(Y1)
	VCVTDQ2PS Y0, Y0
	VCVTDQ2PS Y1, Y1
	BF16(Y0)
	BF16(Y1)
	PACK16(Y0, Y1)
	VMOVDQU Y0, (DI)
	NEXT(64, 32)

// int32 → int32 swaps network-order samples (host order is a copy, not converted).
//
// func int32ToI32AVX2(dst, src *byte, blocks int, aux *[32]byte)
TEXT ·int32ToI32AVX2(SB), NOSPLIT, $0-32
	ARGS
	VBROADCASTI128 (AX), Y15

loop:
	I32(0, Y0)
	I32(32, Y1)
	VMOVDQU Y0, (DI)
	VMOVDQU Y1, 32(DI)
	NEXT(64, 64)

// func int32ToF64AVX2(dst, src *byte, blocks int, aux *[32]byte)
TEXT ·int32ToF64AVX2(SB), NOSPLIT, $0-32
	ARGS
	VBROADCASTI128 (AX), Y15

loop:
	I32(0, Y0)
	I32(32, Y1)
	F64(Y0, X0, 0)
	F64(Y1, X1, 64)
	NEXT(64, 128)

// ---- int8 input: 16 samples (16 bytes) a block. VPMOVSXBD sign-extends 8 of them to int32.

// func int8ToF16AVX2(dst, src *byte, blocks int, aux *[32]byte)
TEXT ·int8ToF16AVX2(SB), NOSPLIT, $0-32
	ARGS

loop:
	VPMOVSXBD (SI), Y0
	VPMOVSXBD 8(SI), Y1
	VCVTDQ2PS Y0, Y0
	VCVTDQ2PS Y1, Y1
	VCVTPS2PH $0, Y0, (DI)
	VCVTPS2PH $0, Y1, 16(DI)
	NEXT(16, 32)

// func int8ToBF16AVX2(dst, src *byte, blocks int, aux *[32]byte)
TEXT ·int8ToBF16AVX2(SB), NOSPLIT, $0-32
	ARGS
	BF16CONST

loop:
	VPMOVSXBD (SI), Y0
	VPMOVSXBD 8(SI), Y1
	VCVTDQ2PS Y0, Y0
	VCVTDQ2PS Y1, Y1
	BF16(Y0) // exact already (at most 8 significant bits); rounding changes nothing
	BF16(Y1)
	PACK16(Y0, Y1)
	VMOVDQU Y0, (DI)
	NEXT(16, 32)

// func int8ToF32AVX2(dst, src *byte, blocks int, aux *[32]byte)
TEXT ·int8ToF32AVX2(SB), NOSPLIT, $0-32
	ARGS

loop:
	VPMOVSXBD (SI), Y0
	VPMOVSXBD 8(SI), Y1
	VCVTDQ2PS Y0, Y0
	VCVTDQ2PS Y1, Y1
	VMOVDQU Y0, (DI)
	VMOVDQU Y1, 32(DI)
	NEXT(16, 64)

// func int8ToI32AVX2(dst, src *byte, blocks int, aux *[32]byte)
TEXT ·int8ToI32AVX2(SB), NOSPLIT, $0-32
	ARGS

loop:
	VPMOVSXBD (SI), Y0
	VPMOVSXBD 8(SI), Y1
	VMOVDQU Y0, (DI)
	VMOVDQU Y1, 32(DI)
	NEXT(16, 64)

// func int8ToF64AVX2(dst, src *byte, blocks int, aux *[32]byte)
TEXT ·int8ToF64AVX2(SB), NOSPLIT, $0-32
	ARGS

loop:
	VPMOVSXBD (SI), Y0
	VPMOVSXBD 8(SI), Y1
	F64(Y0, X0, 0)
	F64(Y1, X1, 64)
	NEXT(16, 128)

// ---- int4 input: 16 bytes (32 samples, the high nibble of each byte first) a block.

// NIBBLES puts the block's 32 nibbles, in sample order, one per byte of Y0 (lane 0 samples
// 0–15, lane 1 16–31): each input byte zero-extended to a word w, then (w>>4 | w<<8) & 0x0f0f
// has the high nibble in its low byte and the low nibble in its high byte. Y14 = 0x0f bytes;
// uses Y1.
#define NIBBLES \
	VPMOVZXBW (SI), Y0; \
	VPSRLW $4, Y0, Y1; \
	VPSLLW $8, Y0, Y0; \
	VPOR Y1, Y0, Y0; \
	VPAND Y14, Y0, Y0

// int4 → fp16 or bf16: the 16 possible results are looked up with VPSHUFB, low bytes in one
// table (Y12) and high bytes in another (Y13), then interleaved: VPUNPCKLBW gives samples
// 0–7 | 16–23, VPUNPCKHBW 8–15 | 24–31, VPERM2I128 puts the lanes in order.
//
// func int4To16AVX2(dst, src *byte, blocks int, aux *[32]byte)
TEXT ·int4To16AVX2(SB), NOSPLIT, $0-32
	ARGS
	VBROADCASTI128 (AX), Y12
	VBROADCASTI128 16(AX), Y13
	BCAST(0x0f0f0f0f, X14, Y14)

loop:
	NIBBLES
	VPSHUFB Y0, Y12, Y2
	VPSHUFB Y0, Y13, Y3
	VPUNPCKLBW Y3, Y2, Y4
	VPUNPCKHBW Y3, Y2, Y5
	VPERM2I128 $0x20, Y5, Y4, Y6
	VPERM2I128 $0x31, Y5, Y4, Y7
	VMOVDQU Y6, (DI)
	VMOVDQU Y7, 32(DI)
	NEXT(16, 64)

// INT4S: NIBBLES made signed, (n ^ 8) - 8 per byte, then sign-extended to int32: samples 0–7
// in Y2, 8–15 in Y3, 16–23 in Y4, 24–31 in Y5. Y13 = 0x08 bytes.
#define INT4S \
	NIBBLES; \
	VPXOR Y13, Y0, Y0; \
	VPSUBB Y13, Y0, Y0; \
	VEXTRACTI128 $1, Y0, X1; \
	VPMOVSXBD X0, Y2; \
	VPSRLDQ $8, X0, X0; \
	VPMOVSXBD X0, Y3; \
	VPMOVSXBD X1, Y4; \
	VPSRLDQ $8, X1, X1; \
	VPMOVSXBD X1, Y5

#define INT4CONST \
	BCAST(0x0f0f0f0f, X14, Y14); \
	BCAST(0x08080808, X13, Y13)

// func int4ToF32AVX2(dst, src *byte, blocks int, aux *[32]byte)
TEXT ·int4ToF32AVX2(SB), NOSPLIT, $0-32
	ARGS
	INT4CONST

loop:
	INT4S
	VCVTDQ2PS Y2, Y2
	VCVTDQ2PS Y3, Y3
	VCVTDQ2PS Y4, Y4
	VCVTDQ2PS Y5, Y5
	VMOVDQU Y2, (DI)
	VMOVDQU Y3, 32(DI)
	VMOVDQU Y4, 64(DI)
	VMOVDQU Y5, 96(DI)
	NEXT(16, 128)

// func int4ToI32AVX2(dst, src *byte, blocks int, aux *[32]byte)
TEXT ·int4ToI32AVX2(SB), NOSPLIT, $0-32
	ARGS
	INT4CONST

loop:
	INT4S
	VMOVDQU Y2, (DI)
	VMOVDQU Y3, 32(DI)
	VMOVDQU Y4, 64(DI)
	VMOVDQU Y5, 96(DI)
	NEXT(16, 128)

// func int4ToF64AVX2(dst, src *byte, blocks int, aux *[32]byte)
TEXT ·int4ToF64AVX2(SB), NOSPLIT, $0-32
	ARGS
	INT4CONST

loop:
	INT4S
	F64(Y2, X2, 0)
	F64(Y3, X3, 64)
	F64(Y4, X4, 128)
	F64(Y5, X5, 192)
	NEXT(16, 256)
