package vfiouser

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// IRQs are one session's interrupt vectors: per index, per vector, the eventfd the client
// gave with SET_IRQS (DATA_EVENTFD, ACTION_TRIGGER), the mask bit and the pending bit. The
// device raises a vector with Trigger; a masked vector only becomes pending and fires when
// unmasked (the MSI-X rule, PCI Local Bus 3.0 §6.8.3.4, which vfio-user's MASK/UNMASK
// actions mirror). Safe for concurrent use.
type IRQs struct {
	mu     sync.Mutex
	closed bool
	idx    [NumIRQs][]vector
}

type vector struct {
	fd      int // -1: none
	masked  bool
	pending bool
}

func newIRQs(dev Device) *IRQs {
	q := &IRQs{}
	for i := range q.idx {
		n := dev.IRQInfo(uint32(i)).Count
		q.idx[i] = make([]vector, n)
		for v := range q.idx[i] {
			q.idx[i][v].fd = -1
		}
	}
	return q
}

// Trigger raises vector of index: it writes 1 to the vector's eventfd (what the kernel's
// eventfd_signal does for a VFIO device), or marks it pending while it is masked. It
// reports whether the eventfd was written; false for a masked vector, one without an
// eventfd, an index or vector the device does not have, or after the session ended.
func (q *IRQs) Trigger(index, vec uint32) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	v := q.vec(index, vec)
	if v == nil {
		return false
	}
	if v.masked {
		v.pending = true
		return false
	}
	return signal(v.fd)
}

// Pending reports the pending bit of a vector (what an MSI-X PBA shows).
func (q *IRQs) Pending(index, vec uint32) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	v := q.vec(index, vec)
	return v != nil && v.pending
}

// Assigned reports whether the vector has an eventfd.
func (q *IRQs) Assigned(index, vec uint32) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	v := q.vec(index, vec)
	return v != nil && v.fd >= 0
}

func (q *IRQs) vec(index, vec uint32) *vector {
	if q.closed || index >= NumIRQs || vec >= uint32(len(q.idx[index])) {
		return nil
	}
	return &q.idx[index][vec]
}

func signal(fd int) bool {
	if fd < 0 {
		return false
	}
	var one [8]byte
	le.PutUint64(one[:], 1)
	n, err := unix.Write(fd, one[:])
	return err == nil && n == 8
}

// set applies one SET_IRQS request (vfio-user.rst VFIO_USER_DEVICE_SET_IRQS; semantics of
// linux/vfio.h struct vfio_irq_set). It takes ownership of fds: they are kept as eventfds or
// closed.
func (q *IRQs) set(flags, index, start, count uint32, data []byte, fds []int) (err error) {
	defer func() {
		if err != nil {
			closeFDs(fds)
		}
	}()
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return errf(syscall.ENODEV, "SET_IRQS: session ended")
	}
	if flags&^(irqSetDataMask|irqSetActionMaskAll) != 0 {
		return errf(syscall.EINVAL, "SET_IRQS: unknown flag bits %#x", flags&^(irqSetDataMask|irqSetActionMaskAll))
	}
	dataT, action := flags&irqSetDataMask, flags&irqSetActionMaskAll
	if bitsSet(dataT) != 1 || bitsSet(action) != 1 {
		return errf(syscall.EINVAL, "SET_IRQS: flags %#x must have exactly one data type and one action", flags)
	}
	if index >= NumIRQs {
		return errf(syscall.EINVAL, "SET_IRQS: interrupt index %d, the device has %d", index, NumIRQs)
	}
	vecs := q.idx[index]
	// count 0 with DATA_NONE and TRIGGER disables the whole index (vfio-user.rst; the
	// kernel's vfio_pci_set_irqs_ioctl does the same).
	if count == 0 {
		if dataT == irqSetDataNone && action == irqSetActionTrigger {
			if start != 0 {
				return errf(syscall.EINVAL, "SET_IRQS: disable of index %d with start %d, want 0", index, start)
			}
			if len(fds) != 0 {
				return errf(syscall.EINVAL, "SET_IRQS: disable of index %d came with %d file descriptors", index, len(fds))
			}
			for i := range vecs {
				closeFD(vecs[i].fd)
				vecs[i] = vector{fd: -1}
			}
			return nil
		}
		return errf(syscall.EINVAL, "SET_IRQS: count 0 is only a disable (DATA_NONE|ACTION_TRIGGER), flags %#x", flags)
	}
	if uint64(start)+uint64(count) > uint64(len(vecs)) {
		return errf(syscall.EINVAL, "SET_IRQS: vectors %d..%d of index %d, which has %d", start, uint64(start)+uint64(count)-1, index, len(vecs))
	}
	switch dataT {
	case irqSetDataNone:
		if len(data) != 0 || len(fds) != 0 {
			return errf(syscall.EINVAL, "SET_IRQS: DATA_NONE with %d data bytes and %d file descriptors", len(data), len(fds))
		}
	case irqSetDataBool:
		if uint64(len(data)) != uint64(count) || len(fds) != 0 {
			return errf(syscall.EINVAL, "SET_IRQS: DATA_BOOL with %d data bytes for %d vectors and %d file descriptors", len(data), count, len(fds))
		}
	case irqSetDataEventfd:
		if len(data) != 0 {
			return errf(syscall.EINVAL, "SET_IRQS: DATA_EVENTFD with %d data bytes (the descriptors travel as SCM_RIGHTS)", len(data))
		}
		if len(fds) != 0 && uint64(len(fds)) != uint64(count) {
			return errf(syscall.EINVAL, "SET_IRQS: %d file descriptors for %d vectors (want all or none)", len(fds), count)
		}
		if action != irqSetActionTrigger {
			return errf(syscall.ENOTSUP, "SET_IRQS: eventfds for the mask/unmask actions are not supported")
		}
		for i, fd := range fds {
			if !isEventfd(fd) {
				return errf(syscall.EINVAL, "SET_IRQS: file descriptor %d (for vector %d) is not an eventfd", i, start+uint32(i))
			}
		}
	}
	for i := range count {
		v := &vecs[start+i]
		on := dataT != irqSetDataBool || data[i] != 0
		switch {
		case dataT == irqSetDataEventfd:
			closeFD(v.fd)
			v.fd = -1
			if len(fds) != 0 {
				v.fd = fds[i]
			}
		case !on:
		case action == irqSetActionTrigger:
			// A client-raised interrupt (loopback), subject to the mask like a device one.
			if v.masked {
				v.pending = true
			} else {
				signal(v.fd)
			}
		case action == irqSetActionMask:
			v.masked = true
		case action == irqSetActionUnmask:
			v.masked = false
			if v.pending {
				v.pending = false
				signal(v.fd)
			}
		}
	}
	return nil
}

// close ends the session's interrupts: every eventfd is closed and Trigger does nothing
// from now on.
func (q *IRQs) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	for i := range q.idx {
		for v := range q.idx[i] {
			closeFD(q.idx[i][v].fd)
			q.idx[i][v].fd = -1
		}
	}
}

func bitsSet(v uint32) int {
	n := 0
	for ; v != 0; v &= v - 1 {
		n++
	}
	return n
}

// isEventfd checks what the descriptor is through /proc/self/fd, where the kernel names an
// eventfd "anon_inode:[eventfd]" (fs/eventfd.c anon_inode_getfile("[eventfd]", …)).
func isEventfd(fd int) bool {
	l, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	return err == nil && l == "anon_inode:[eventfd]"
}

func closeFD(fd int) {
	if fd >= 0 {
		unix.Close(fd)
	}
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		closeFD(fd)
	}
}

func (q *IRQs) String() string {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for i := range q.idx {
		for _, v := range q.idx[i] {
			if v.fd >= 0 {
				n++
			}
		}
	}
	return fmt.Sprintf("%d eventfds", n)
}
