#include "textflag.h"

// rdma-core util/udma_barrier.h, __aarch64__. The options are the CRm field of DMB and DSB
// (Arm ARM, DDI 0487, C6.2 "DMB" and "DSB": OSHLD 0b0001, OSHST 0b0010, ST 0b1110); Go's
// assembler takes the option as that immediate and encodes
// DMB: 0xd50330bf | CRm<<8 (DMB OSHLD 0xd50331bf, DMB OSHST 0xd50332bf),
// DSB: 0xd503309f | CRm<<8 (DSB ST 0xd5033e9f). barrier_test checks the encodings in the
// built code.

// func ToDevice(): udma_to_device_barrier, dmb oshst.
TEXT ·ToDevice(SB), NOSPLIT|NOFRAME, $0-0
	DMB $0x2
	RET

// func FromDevice(): udma_from_device_barrier, dmb oshld.
TEXT ·FromDevice(SB), NOSPLIT|NOFRAME, $0-0
	DMB $0x1
	RET

// func WCStart(): mmio_wc_start (= mmio_flush_writes), dsb st.
TEXT ·WCStart(SB), NOSPLIT|NOFRAME, $0-0
	DSB $0xe
	RET

// func FlushWrites(): mmio_flush_writes, dsb st.
TEXT ·FlushWrites(SB), NOSPLIT|NOFRAME, $0-0
	DSB $0xe
	RET
