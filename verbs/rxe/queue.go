package rxe

import (
	"fmt"
	"sync/atomic"
	"unsafe"
)

// Layout of struct rxe_queue_buf (include/uapi/rdma/rdma_user_rxe.h): a
// 384-byte header shared by user space and the kernel, then the slots. The
// producer and consumer indices sit in separate 128-byte lines; both always
// lie in [0, index_mask].
const (
	offLog2ElemSize = 0
	offIndexMask    = 4
	offProducer     = 128
	offConsumer     = 256
	queueHdrSize    = 384
)

// queue is one rxe ring mapped from the kernel (drivers/infiniband/sw/rxe/
// rxe_queue.h). For send and receive queues user space owns the producer
// index and the kernel the consumer; for completion queues the reverse.
type queue struct {
	buf      []byte
	log2Elem uint32
	mask     uint32
	prod     *atomic.Uint32
	cons     *atomic.Uint32
}

// newQueue validates the header of a freshly mapped rxe ring.
func newQueue(buf []byte) (*queue, error) {
	if len(buf) < queueHdrSize {
		return nil, fmt.Errorf("rxe: queue mapping of %d bytes is smaller than its %d-byte header", len(buf), queueHdrSize)
	}
	q := &queue{buf: buf}
	q.log2Elem = le32(buf[offLog2ElemSize:])
	q.mask = le32(buf[offIndexMask:])
	if q.log2Elem < 4 || q.log2Elem > 16 || q.mask == 0 || q.mask&(q.mask+1) != 0 {
		return nil, fmt.Errorf("rxe: queue header is implausible (log2_elem_size %d, index_mask %#x)", q.log2Elem, q.mask)
	}
	need := uint64(queueHdrSize) + (uint64(q.mask)+1)<<q.log2Elem
	if need > uint64(len(buf)) {
		return nil, fmt.Errorf("rxe: queue of %d slots of %d bytes needs %d bytes, mapping has %d", q.mask+1, 1<<q.log2Elem, need, len(buf))
	}
	// The indices are 4-byte aligned words of a page-aligned mapping; the
	// kernel updates them with acquire/release atomics, and Go's atomics
	// are at least that strong.
	q.prod = (*atomic.Uint32)(unsafe.Pointer(&buf[offProducer]))
	q.cons = (*atomic.Uint32)(unsafe.Pointer(&buf[offConsumer]))
	return q, nil
}

// elemSize is the slot size in bytes.
func (q *queue) elemSize() int { return 1 << q.log2Elem }

// slots is the number of usable entries (one slot stays empty).
func (q *queue) slots() int { return int(q.mask) }

// slot returns the bytes of slot index (masked).
func (q *queue) slot(index uint32) []byte {
	off := queueHdrSize + int(index&q.mask)<<q.log2Elem
	return q.buf[off : off+q.elemSize() : off+q.elemSize()]
}

func (q *queue) next(i uint32) uint32 { return (i + 1) & q.mask }

func le32(b []byte) uint32 {
	_ = b[3]
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}
