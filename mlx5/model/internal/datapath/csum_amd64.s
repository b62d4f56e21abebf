//go:build amd64 && !purego

#include "textflag.h"

// SUM_INIT clears the sums (DX, the lane accumulators Y4-Y7) and puts 0xffff in every lane
// of Y15.
#define SUM_INIT \
	XORL     DX, DX \
	VPCMPEQD Y15, Y15, Y15 \
	VPSRLD   $16, Y15, Y15 \
	VPXOR    Y4, Y4, Y4 \
	VPXOR    Y5, Y5, Y5 \
	VPXOR    Y6, Y6, Y6 \
	VPXOR    Y7, Y7, Y7

// SUM64 adds the low and the high 16-bit halves of the eight 32-bit lanes of Y0 and Y1 (64
// bytes just loaded) into the lane accumulators Y4-Y7; Y15 holds 0xffff in every lane.
#define SUM64 \
	VPAND  Y15, Y0, Y2 \
	VPSRLD $16, Y0, Y0 \
	VPAND  Y15, Y1, Y3 \
	VPSRLD $16, Y1, Y1 \
	VPADDD Y2, Y4, Y4 \
	VPADDD Y0, Y5, Y5 \
	VPADDD Y3, Y6, Y6 \
	VPADDD Y1, Y7, Y7

// FOLD_LANES adds the four lane accumulators Y4-Y7 and their eight lanes into AX, plus the
// general-register part in DX (both functions end with it).
#define FOLD_LANES \
	VPADDD       Y5, Y4, Y4 \
	VPADDD       Y7, Y6, Y6 \
	VPADDD       Y6, Y4, Y4 \
	VEXTRACTI128 $1, Y4, X5 \
	VPADDD       X5, X4, X4 \
	VPSHUFD      $0x4e, X4, X5 \
	VPADDD       X5, X4, X4 \
	VPSHUFD      $0xb1, X4, X5 \
	VPADDD       X5, X4, X4 \
	VMOVD        X4, AX \
	VZEROUPPER \
	ADDL         DX, AX

// func sumWordsAVX2(b *byte, n int) uint32
//
// Each 32-byte load is split into the low and the high 16-bit halves of its eight 32-bit
// lanes (AND with 0xffff, shift right by 16), each added into a lane accumulator of its own:
// four accumulators, 64 bytes a round; then one 32-byte round, and 16, 8 and 4 bytes
// zero-extended word by word into lanes (VPMOVZXWD); the last 2 and 1 bytes in a general
// register (an odd last byte is the low byte of its little-endian word). A lane takes at most
// one 16-bit value per round, at most 1024 rounds of 64 bytes for vecSumMax bytes and one
// each after: no lane passes 2^26, and their total stays under 2^31. Loads never pass b+n.
TEXT ·sumWordsAVX2(SB), NOSPLIT|NOFRAME, $0-20
	MOVQ b+0(FP), SI
	MOVQ n+8(FP), CX
	SUM_INIT
	CMPQ     CX, $64
	JB       last32

loop64:
	VMOVDQU (SI), Y0
	VMOVDQU 32(SI), Y1
	SUM64
	ADDQ    $64, SI
	SUBQ    $64, CX
	CMPQ    CX, $64
	JAE     loop64

last32:
	CMPQ    CX, $32
	JB      last16
	VMOVDQU (SI), Y0
	VPAND   Y15, Y0, Y2
	VPSRLD  $16, Y0, Y0
	VPADDD  Y2, Y4, Y4
	VPADDD  Y0, Y5, Y5
	ADDQ    $32, SI
	SUBQ    $32, CX

last16:
	CMPQ      CX, $16
	JB        last8
	VPMOVZXWD (SI), Y0
	VPADDD    Y0, Y6, Y6
	ADDQ      $16, SI
	SUBQ      $16, CX

last8:
	CMPQ      CX, $8
	JB        last4
	VMOVQ     (SI), X0
	VPMOVZXWD X0, Y0
	VPADDD    Y0, Y7, Y7
	ADDQ      $8, SI
	SUBQ      $8, CX

last4:
	CMPQ      CX, $4
	JB        last2
	VMOVD     (SI), X0
	VPMOVZXWD X0, Y0
	VPADDD    Y0, Y4, Y4
	ADDQ      $4, SI
	SUBQ      $4, CX

last2:
	CMPQ    CX, $2
	JB      last1
	MOVWLZX (SI), DX
	ADDQ    $2, SI
	SUBQ    $2, CX

last1:
	TESTQ   CX, CX
	JZ      fold
	MOVBLZX (SI), AX
	ADDL    AX, DX

fold:
	FOLD_LANES
	MOVL         AX, ret+16(FP)
	RET

// func copyStreamSumAVX2(dst, src []byte) (sum uint32, ok bool)
//
// copyStream and sumWordsAVX2 in one pass for a dst that starts on a 32-byte boundary (ok
// false, nothing written, otherwise): each 32-byte load is stored with VMOVNTDQ and split
// into lanes as in sumWordsAVX2; 16 bytes with a 128-bit VMOVNTDQ, 8 and 4 with MOVNTI, the
// last 2 and 1 bytes with ordinary stores. The lanes' bound is sumWordsAVX2's: n at most
// vecSumMax. n = len(dst) = len(src).
TEXT ·copyStreamSumAVX2(SB), NOSPLIT|NOFRAME, $0-53
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI
	TESTQ $31, DI
	JZ    aligned
	MOVL  $0, sum+48(FP)
	MOVB  $0, ok+52(FP)
	RET

aligned:
	SUM_INIT
	CMPQ     CX, $64
	JB       clast32

cloop64:
	VMOVDQU  (SI), Y0
	VMOVDQU  32(SI), Y1
	VMOVNTDQ Y0, (DI)
	VMOVNTDQ Y1, 32(DI)
	SUM64
	ADDQ     $64, SI
	ADDQ     $64, DI
	SUBQ     $64, CX
	CMPQ     CX, $64
	JAE      cloop64

clast32:
	CMPQ     CX, $32
	JB       clast16
	VMOVDQU  (SI), Y0
	VMOVNTDQ Y0, (DI)
	VPAND    Y15, Y0, Y2
	VPSRLD   $16, Y0, Y0
	VPADDD   Y2, Y4, Y4
	VPADDD   Y0, Y5, Y5
	ADDQ     $32, SI
	ADDQ     $32, DI
	SUBQ     $32, CX

clast16:
	CMPQ      CX, $16
	JB        clast8
	VMOVDQU   (SI), X0
	VMOVNTDQ  X0, (DI)
	VPMOVZXWD X0, Y0
	VPADDD    Y0, Y6, Y6
	ADDQ      $16, SI
	ADDQ      $16, DI
	SUBQ      $16, CX

clast8:
	CMPQ      CX, $8
	JB        clast4
	MOVQ      (SI), AX
	MOVNTIQ   AX, (DI)
	VMOVQ     AX, X0
	VPMOVZXWD X0, Y0
	VPADDD    Y0, Y7, Y7
	ADDQ      $8, SI
	ADDQ      $8, DI
	SUBQ      $8, CX

clast4:
	CMPQ      CX, $4
	JB        clast2
	MOVL      (SI), AX
	MOVNTIL   AX, (DI)
	VMOVD     AX, X0
	VPMOVZXWD X0, Y0
	VPADDD    Y0, Y4, Y4
	ADDQ      $4, SI
	ADDQ      $4, DI
	SUBQ      $4, CX

clast2:
	CMPQ    CX, $2
	JB      clast1
	MOVWLZX (SI), DX
	MOVW    DX, (DI)
	ADDQ    $2, SI
	ADDQ    $2, DI
	SUBQ    $2, CX

clast1:
	TESTQ   CX, CX
	JZ      cfold
	MOVBLZX (SI), AX
	MOVB    AX, (DI)
	ADDL    AX, DX

cfold:
	FOLD_LANES
	MOVL         AX, sum+48(FP)
	MOVB         $1, ok+52(FP)
	RET
