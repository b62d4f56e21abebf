//go:build amd64 && !race

#include "textflag.h"

// func StoreUint32(p *uint32, v uint32)
TEXT ·StoreUint32(SB), NOSPLIT, $0-12
	MOVQ p+0(FP), AX
	MOVL v+8(FP), BX
	MOVL BX, 0(AX)
	RET

// func StoreUint64(p *uint64, v uint64)
TEXT ·StoreUint64(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ v+8(FP), BX
	MOVQ BX, 0(AX)
	RET
