#include "textflag.h"

// One plain LDR/STR of the access's width: not STLR/LDAR (which fault on an address that is
// not naturally aligned, even in normal memory), not an exclusive or LSE atomic.

// func Load32(p *[4]byte) uint32
TEXT ·Load32(SB), NOSPLIT|NOFRAME, $0-12
	MOVD p+0(FP), R0
	MOVWU (R0), R1
	MOVW R1, ret+8(FP)
	RET

// func Load64(p *[8]byte) uint64
TEXT ·Load64(SB), NOSPLIT|NOFRAME, $0-16
	MOVD p+0(FP), R0
	MOVD (R0), R1
	MOVD R1, ret+8(FP)
	RET

// func Store32(p *[4]byte, v uint32)
TEXT ·Store32(SB), NOSPLIT|NOFRAME, $0-12
	MOVD p+0(FP), R0
	MOVWU v+8(FP), R1
	MOVW R1, (R0)
	RET

// func Store64(p *[8]byte, v uint64)
TEXT ·Store64(SB), NOSPLIT|NOFRAME, $0-16
	MOVD p+0(FP), R0
	MOVD v+8(FP), R1
	MOVD R1, (R0)
	RET
