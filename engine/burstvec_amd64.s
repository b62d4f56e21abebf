//go:build amd64 && !purego

#include "textflag.h"

// AVX2 forms of the burst's per-packet loops (burstvec_amd64.go gates them; the Go loops in
// burst.go do what is left after the last whole block of 8 packets, and everything on CPUs
// without AVX2). Each takes blocks ≥ 1 whole blocks of 8 packets. Shift counts are masked
// to 0..63 by the Go caller, as the Go loops mask them, so VPSLLQ/VPSRLQ (which give 0 for a
// count ≥ 64) never see a larger one. TestBurstVectorLoops pins each to its plain loop.

// func idxToOffClearAVX2(off *uint64, idx *uint32, blocks int, sh uint)
// off[j] = uint64(idx[j]) << sh, then idx[j] = 0, for 8*blocks packets.
TEXT ·idxToOffClearAVX2(SB), NOSPLIT, $0-32
	MOVQ  off+0(FP), DI
	MOVQ  idx+8(FP), SI
	MOVQ  blocks+16(FP), CX
	MOVQ  sh+24(FP), X2
	VPXOR Y3, Y3, Y3

i2oloop:
	VPMOVZXDQ (SI), Y0
	VPMOVZXDQ 16(SI), Y1
	VPSLLQ    X2, Y0, Y0
	VPSLLQ    X2, Y1, Y1
	VMOVDQU   Y3, (SI)
	VMOVDQU   Y0, (DI)
	VMOVDQU   Y1, 32(DI)
	ADDQ      $32, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       i2oloop
	VZEROUPPER
	RET

// func offToIdxAVX2(dst *uint32, offs *uint64, blocks int, sh uint)
// dst[j] = uint32(offs[j] >> sh) for 8*blocks packets: the shifted quadwords' low
// doublewords, gathered in order (VSHUFPS takes doublewords 0 and 2 of each 128-bit lane of
// both registers, giving offsets 0 1 4 5 | 2 3 6 7; VPERMQ puts the quadword pairs in order).
TEXT ·offToIdxAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ offs+8(FP), SI
	MOVQ blocks+16(FP), CX
	MOVQ sh+24(FP), X2

o2iloop:
	VMOVDQU (SI), Y0
	VMOVDQU 32(SI), Y1
	VPSRLQ  X2, Y0, Y0
	VPSRLQ  X2, Y1, Y1
	VSHUFPS $0x88, Y1, Y0, Y0
	VPERMQ  $0xD8, Y0, Y0
	VMOVDQU Y0, (DI)
	ADDQ    $64, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     o2iloop
	VZEROUPPER
	RET

// func sumLensAVX2(lens *uint32, blocks int) int
// The sum of 8*blocks lengths, each widened to 64 bits (no 32-bit lane can overflow).
TEXT ·sumLensAVX2(SB), NOSPLIT, $0-24
	MOVQ  lens+0(FP), SI
	MOVQ  blocks+8(FP), CX
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1

sumloop:
	VPMOVZXDQ (SI), Y2
	VPMOVZXDQ 16(SI), Y3
	VPADDQ    Y2, Y0, Y0
	VPADDQ    Y3, Y1, Y1
	ADDQ      $32, SI
	DECQ      CX
	JNZ       sumloop
	VPADDQ       Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDQ       X1, X0, X0
	VPSHUFD      $0x4E, X0, X1
	VPADDQ       X1, X0, X0
	VMOVQ        X0, AX
	MOVQ         AX, ret+16(FP)
	VZEROUPPER
	RET

// func fillLensAVX2(ls *uint32, offs *uint64, blocks int, mask, thr uint64, l uint32) int
// For whole blocks of 8 packets that all fit (offs[j]&mask < thr, a signed compare: both
// are below a buffer size + 2, far under 2^63), ls[j] = l; it stops before the first block
// with a packet that does not fit and returns the blocks done.
TEXT ·fillLensAVX2(SB), NOSPLIT, $0-56
	MOVQ         ls+0(FP), DI
	MOVQ         offs+8(FP), SI
	MOVQ         blocks+16(FP), CX
	VPBROADCASTQ mask+24(FP), Y4
	VPBROADCASTQ thr+32(FP), Y5
	MOVL         l+40(FP), DX
	VMOVD        DX, X6
	VPBROADCASTD X6, Y6
	XORQ         AX, AX

fillloop:
	VPAND     (SI), Y4, Y0
	VPAND     32(SI), Y4, Y1
	VPCMPGTQ  Y0, Y5, Y0
	VPCMPGTQ  Y1, Y5, Y1
	VPAND     Y1, Y0, Y0
	VPMOVMSKB Y0, DX
	CMPL      DX, $-1
	JNE       filldone
	VMOVDQU   Y6, (DI)
	ADDQ      $64, SI
	ADDQ      $32, DI
	INCQ      AX
	CMPQ      AX, CX
	JNE       fillloop

filldone:
	MOVQ AX, ret+48(FP)
	VZEROUPPER
	RET
