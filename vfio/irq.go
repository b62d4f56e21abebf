package vfio

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// IRQ is one interrupt index of a device (INTx, MSI or MSI-X) delivered
// through eventfds: the kernel adds 1 to vector i's eventfd each time the
// device raises it.
type IRQ struct {
	mu    sync.Mutex
	dev   *Device
	index int
	fds   []int
	info  IRQInfo
}

// EnableIRQ enables count vectors of interrupt index (IRQIndexINTx,
// IRQIndexMSI, IRQIndexMSIX) with one eventfd each (VFIO_DEVICE_SET_IRQS,
// DATA_EVENTFD|ACTION_TRIGGER). Only one of INTx, MSI and MSI-X can be
// enabled at a time.
func (d *Device) EnableIRQ(index, count int) (*IRQ, error) {
	const op = "VFIO_DEVICE_SET_IRQS"
	d.mu.Lock()
	defer d.mu.Unlock()
	info, err := d.irqInfo(index)
	if err != nil {
		return nil, err
	}
	obj := fmt.Sprintf("%s index %d", d.name, index)
	switch {
	case info.Count == 0:
		return nil, opErr(op, obj, fmt.Errorf("%w: the device has no interrupts of this kind", ErrUnsupported))
	case !info.EventFD():
		return nil, opErr(op, obj, fmt.Errorf("%w: the index does not signal through eventfds", ErrUnsupported))
	case count < 1 || count > info.Count:
		return nil, invalid(op, obj, "%d vectors: the index has 1 to %d", count, info.Count)
	}
	q := &IRQ{dev: d, index: index, info: info}
	for range count {
		fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
		if err != nil {
			q.closeFDs()
			return nil, opErr("eventfd", obj, err)
		}
		q.fds = append(q.fds, fd)
	}
	arg := encodeIRQSet(irqSetDataEventFD|irqSetActionTrigger, uint32(index), 0, uint32(count), eventfdData(q.fds))
	if _, err := ioctl(d.fd, ioctlDeviceSetIRQs, arg, 0); err != nil {
		q.closeFDs()
		return nil, opErr(op, obj, err)
	}
	d.irqs = append(d.irqs, q)
	return q, nil
}

// Info is the index's description.
func (q *IRQ) Info() IRQInfo { return q.info }

// Count is the number of enabled vectors.
func (q *IRQ) Count() int { return len(q.fds) }

// FD is vector i's eventfd, for callers that poll many sources at once; it
// is valid until Close.
func (q *IRQ) FD(i int) int { return q.fds[i] }

func (q *IRQ) fd(op string, vector int) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.fds == nil {
		return -1, opErr(op, q.dev.name, ErrClosed)
	}
	if vector < 0 || vector >= len(q.fds) {
		return -1, invalid(op, q.dev.name, "vector %d: %d enabled", vector, len(q.fds))
	}
	return q.fds[vector], nil
}

// Wait blocks until vector has fired at least once or timeout passes, and
// returns how many times it fired since the last Wait (ErrTimeout if none).
func (q *IRQ) Wait(vector int, timeout time.Duration) (uint64, error) {
	fd, err := q.fd("wait for interrupt", vector)
	if err != nil {
		return 0, err
	}
	deadline := time.Now().Add(timeout)
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for range 10000 { // EINTR retries; each pass waits out the remaining time
		if n, ok, err := readEventfd(fd); err != nil || ok {
			return n, opErr("read eventfd", q.dev.name, err)
		}
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		ms := int((left + time.Millisecond - 1) / time.Millisecond)
		if _, err := unix.Poll(pfd, ms); err != nil && !errors.Is(err, unix.EINTR) {
			return 0, opErr("poll eventfd", q.dev.name, err)
		}
	}
	return 0, opErr("wait for interrupt", fmt.Sprintf("%s index %d vector %d", q.dev.name, q.index, vector), fmt.Errorf("%w: no interrupt within %v", ErrTimeout, timeout))
}

// Poll returns, without blocking, how many times vector fired since the
// last Wait or Poll.
func (q *IRQ) Poll(vector int) (uint64, error) {
	fd, err := q.fd("poll interrupt", vector)
	if err != nil {
		return 0, err
	}
	n, _, err := readEventfd(fd)
	return n, opErr("read eventfd", q.dev.name, err)
}

// readEventfd reads and resets an eventfd's counter; ok is false when it
// was zero.
func readEventfd(fd int) (n uint64, ok bool, err error) {
	var b [8]byte
	for range 100 {
		_, err = unix.Read(fd, b[:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		break
	}
	if errors.Is(err, unix.EAGAIN) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return ne.Uint64(b[:]), true, nil
}

func (q *IRQ) action(op string, flags uint32) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.fds == nil {
		return opErr(op, q.dev.name, ErrClosed)
	}
	arg := encodeIRQSet(irqSetDataNone|flags, uint32(q.index), 0, uint32(len(q.fds)), nil)
	if _, err := ioctl(q.dev.fd, ioctlDeviceSetIRQs, arg, 0); err != nil {
		return opErr(op, fmt.Sprintf("%s index %d", q.dev.name, q.index), err)
	}
	return nil
}

// Unmask re-enables an automasked (INTx) line after its interrupt was
// handled — after the device was told to lower it.
func (q *IRQ) Unmask() error { return q.action("VFIO_DEVICE_SET_IRQS(UNMASK)", irqSetActionUnmask) }

// Mask masks the index's vectors (where the index is maskable).
func (q *IRQ) Mask() error { return q.action("VFIO_DEVICE_SET_IRQS(MASK)", irqSetActionMask) }

// Trigger makes the kernel signal every vector's eventfd as if the device
// had raised it (a loopback test of the eventfd path).
func (q *IRQ) Trigger() error {
	return q.action("VFIO_DEVICE_SET_IRQS(TRIGGER)", irqSetActionTrigger)
}

// Close disables the index (DATA_NONE|ACTION_TRIGGER with count 0) and
// closes the eventfds.
func (q *IRQ) Close() error {
	q.mu.Lock()
	if q.fds == nil {
		q.mu.Unlock()
		return nil
	}
	var err error
	d := q.dev
	if d.fd >= 0 {
		arg := encodeIRQSet(irqSetDataNone|irqSetActionTrigger, uint32(q.index), 0, 0, nil)
		if _, e := ioctl(d.fd, ioctlDeviceSetIRQs, arg, 0); e != nil {
			err = opErr("VFIO_DEVICE_SET_IRQS(disable)", fmt.Sprintf("%s index %d", d.name, q.index), e)
		}
	}
	q.closeFDs()
	q.mu.Unlock()
	d.mu.Lock()
	d.irqs = slices.DeleteFunc(d.irqs, func(x *IRQ) bool { return x == q })
	d.mu.Unlock()
	return err
}

func (q *IRQ) closeFDs() {
	for _, fd := range q.fds {
		unix.Close(fd)
	}
	q.fds = nil
}
