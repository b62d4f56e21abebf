#include "textflag.h"

// One MOV of the access's width: no lock prefix, no XCHG (which would read the register).

// func Load32(p *[4]byte) uint32
TEXT ·Load32(SB), NOSPLIT|NOFRAME, $0-12
	MOVQ p+0(FP), AX
	MOVL (AX), BX
	MOVL BX, ret+8(FP)
	RET

// func Load64(p *[8]byte) uint64
TEXT ·Load64(SB), NOSPLIT|NOFRAME, $0-16
	MOVQ p+0(FP), AX
	MOVQ (AX), BX
	MOVQ BX, ret+8(FP)
	RET

// func Store32(p *[4]byte, v uint32)
TEXT ·Store32(SB), NOSPLIT|NOFRAME, $0-12
	MOVQ p+0(FP), AX
	MOVL v+8(FP), BX
	MOVL BX, (AX)
	RET

// func Store64(p *[8]byte, v uint64)
TEXT ·Store64(SB), NOSPLIT|NOFRAME, $0-16
	MOVQ p+0(FP), AX
	MOVQ v+8(FP), BX
	MOVQ BX, (AX)
	RET
