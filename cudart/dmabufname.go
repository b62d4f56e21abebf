package cudart

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// dmaBufSetName is DMA_BUF_SET_NAME_B, _IOW('b', 1, __u64) (linux/dma-buf.h): the argument is
// a pointer to a NUL-terminated name of at most DMA_BUF_NAME_LEN (32) bytes.
const dmaBufSetName = 0x40086201

// setDMABufName names the DMA-BUF fd; failures are ignored (see ExportDMABuf).
func setDMABufName(fd int, name string) {
	b := append([]byte(name), 0)
	unix.Syscall(unix.SYS_IOCTL, uintptr(fd), dmaBufSetName, uintptr(unsafe.Pointer(&b[0])))
}
