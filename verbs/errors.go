package verbs

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/daqiri-go/daqiri/verbs/internal/dv"
	"github.com/daqiri-go/daqiri/verbs/provider"
)

// Error is a command the kernel refused. It unwraps to the kernel's errno,
// so errors.Is(err, unix.EINVAL) (or syscall.EINVAL) works, and it matches
// ErrNotSupported when the errno says the kernel or driver lacks the verb.
type Error struct {
	// Op names the command, e.g. "ioctl QP_CREATE" or "write MODIFY_QP".
	Op string
	// Device is the RDMA device name.
	Device string
	// Errno is the kernel's error.
	Errno syscall.Errno
}

func (e *Error) Error() string {
	return fmt.Sprintf("verbs: %s on %s: %v (%s)", e.Op, e.Device, e.Errno.Error(), dv.ErrnoName(e.Errno))
}

// Unwrap returns the errno.
func (e *Error) Unwrap() error { return e.Errno }

// Is reports ErrNotSupported for EOPNOTSUPP (the driver lacks the operation)
// and EPROTONOSUPPORT (the kernel has no such method or attribute), and
// ErrBusy for EBUSY.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrNotSupported:
		return e.Errno == syscall.EOPNOTSUPP || e.Errno == syscall.EPROTONOSUPPORT
	case ErrBusy:
		return e.Errno == syscall.EBUSY
	}
	return false
}

// Errors of the Go side.
var (
	// ErrNotSupported matches commands the kernel or driver does not
	// implement (for example a DMA-BUF MR on a provider without it).
	ErrNotSupported = errors.New("verbs: not supported by this kernel or driver")
	// ErrClosed: the object (or its context) was already closed.
	ErrClosed = errors.New("verbs: object is closed")
	// ErrNoDevice: no RDMA device of that name (or none at all).
	ErrNoDevice = errors.New("verbs: no such RDMA device")
	// ErrNoProvider: the device's driver has no user-space provider here.
	ErrNoProvider = errors.New("verbs: no user-space provider for this driver")
	// ErrTimeout: a bounded wait for an event ended without one.
	ErrTimeout = errors.New("verbs: timed out waiting for an event")
	// ErrQueueFull: a work queue has no free slot.
	ErrQueueFull = provider.ErrQueueFull
	// ErrInvalidWR: a work request does not fit its QP.
	ErrInvalidWR = provider.ErrInvalidWR
	// ErrBusy: the object still has dependants (for example a PD with MRs
	// or QPs, a CQ used by a QP); close those first.
	ErrBusy = errors.New("verbs: object still in use")
)

// wrap turns a command failure into an *Error (errno) or annotates it.
func (c *Context) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return &Error{Op: op, Device: c.dev.Name, Errno: errno}
	}
	return fmt.Errorf("verbs: %s on %s: %w", op, c.dev.Name, err)
}
