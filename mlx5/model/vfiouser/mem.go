package vfiouser

import "unsafe"

// Contiguous reports whether b starts in memory right where a ends, so that a device can
// treat two DMA windows that follow each other in I/O address space as one buffer: behind
// a virtual IOMMU QEMU maps a guest buffer page by page, and the windows of pages that are
// adjacent in guest RAM are adjacent slices of the server's one mapping of that RAM.
func Contiguous(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	return uintptr(unsafe.Pointer(unsafe.SliceData(a)))+uintptr(len(a)) == uintptr(unsafe.Pointer(unsafe.SliceData(b)))
}

// Join returns one slice covering a and then b, which must be Contiguous windows that Server
// handed out (memory the server keeps mapped for the whole session); nil otherwise.
func Join(a, b []byte) []byte {
	if !Contiguous(a, b) {
		return nil
	}
	return unsafe.Slice(unsafe.SliceData(a), len(a)+len(b))
}
