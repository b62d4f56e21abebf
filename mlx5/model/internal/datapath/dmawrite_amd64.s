//go:build amd64 && !purego && !race

#include "textflag.h"

// func copyStream(dst, src []byte)
//
// n = len(dst) = len(src).
// The head up to dst's next 16-byte boundary is one ordinary unaligned 16-byte store (it
// overlaps the first aligned block, which writes the same bytes again); then 64 bytes per
// round with MOVNTDQ (MOVNTO here), 16-byte blocks, 8 and 4 bytes with MOVNTI; the last 0-3
// bytes (or all of a copy under 16 bytes) with ordinary byte stores. Loads are ordinary.
TEXT ·copyStream(SB), NOSPLIT|NOFRAME, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI
	CMPQ CX, $16
	JB   bytes
	MOVQ DI, AX
	NEGQ AX
	ANDQ $15, AX
	JZ   blocks
	MOVOU (SI), X0
	MOVOU X0, (DI)
	ADDQ AX, SI
	ADDQ AX, DI
	SUBQ AX, CX

blocks:
	CMPQ CX, $64
	JB   block16

loop64:
	MOVOU  (SI), X0
	MOVOU  16(SI), X1
	MOVOU  32(SI), X2
	MOVOU  48(SI), X3
	MOVNTO X0, (DI)
	MOVNTO X1, 16(DI)
	MOVNTO X2, 32(DI)
	MOVNTO X3, 48(DI)
	ADDQ   $64, SI
	ADDQ   $64, DI
	SUBQ   $64, CX
	CMPQ   CX, $64
	JAE    loop64

block16:
	CMPQ   CX, $16
	JB     tail8
	MOVOU  (SI), X0
	MOVNTO X0, (DI)
	ADDQ   $16, SI
	ADDQ   $16, DI
	SUBQ   $16, CX
	JMP    block16

tail8:
	CMPQ    CX, $8
	JB      tail4
	MOVQ    (SI), AX
	MOVNTIQ AX, (DI)
	ADDQ    $8, SI
	ADDQ    $8, DI
	SUBQ    $8, CX

tail4:
	CMPQ    CX, $4
	JB      bytes
	MOVL    (SI), AX
	MOVNTIL AX, (DI)
	ADDQ    $4, SI
	ADDQ    $4, DI
	SUBQ    $4, CX

bytes:
	TESTQ CX, CX
	JZ    done
	MOVB  (SI), AX
	MOVB  AX, (DI)
	INCQ  SI
	INCQ  DI
	DECQ  CX
	JMP   bytes

done:
	RET

// func storeFence()
TEXT ·storeFence(SB), NOSPLIT|NOFRAME, $0-0
	SFENCE
	RET
