#include "textflag.h"

// rdma-core util/udma_barrier.h, __x86_64__: udma_to_device_barrier and
// udma_from_device_barrier are compiler barriers (asm volatile("" ::: "memory")), which the
// call to a function the compiler cannot see into already is.

// func ToDevice()
TEXT ·ToDevice(SB), NOSPLIT|NOFRAME, $0-0
	RET

// func FromDevice()
TEXT ·FromDevice(SB), NOSPLIT|NOFRAME, $0-0
	RET

// mmio_wc_start and mmio_flush_writes: sfence.

// func WCStart()
TEXT ·WCStart(SB), NOSPLIT|NOFRAME, $0-0
	SFENCE
	RET

// func FlushWrites()
TEXT ·FlushWrites(SB), NOSPLIT|NOFRAME, $0-0
	SFENCE
	RET
