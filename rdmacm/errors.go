package rdmacm

import (
	"errors"
	"fmt"
	"syscall"
)

// Error is a command the kernel refused. It unwraps to the errno, so
// errors.Is(err, unix.EADDRNOTAVAIL) works.
type Error struct {
	// Op names the command, e.g. "write BIND(10.7.0.9:4791)".
	Op    string
	Errno syscall.Errno
}

// Error describes the refused command and its errno.
func (e *Error) Error() string {
	return fmt.Sprintf("rdmacm: %s: %v%s", e.Op, e.Errno.Error(), errnoHint(e.Errno))
}

// Unwrap returns the errno.
func (e *Error) Unwrap() error { return e.Errno }

// Is matches ErrNotSupported for ENOSYS/EOPNOTSUPP (the kernel lacks the
// command or option).
func (e *Error) Is(target error) bool {
	return target == ErrNotSupported && (e.Errno == syscall.ENOSYS || e.Errno == syscall.EOPNOTSUPP)
}

// errnoHint explains the errnos a user of this package meets most.
func errnoHint(e syscall.Errno) string {
	switch e {
	case syscall.EADDRNOTAVAIL:
		return " (no local interface has that address, or it has no RDMA device)"
	case syscall.EADDRINUSE:
		return " (another ID is bound to that address and port)"
	case syscall.ENODEV:
		return " (no RDMA device serves that address)"
	}
	return ""
}

// Errors of the Go side.
var (
	// ErrNoDevice: /dev/infiniband/rdma_cm is missing (rdma_ucm not loaded).
	ErrNoDevice = errors.New("rdmacm: no rdma_cm device")
	// ErrNotSupported: the kernel lacks a command, option or ABI version.
	ErrNotSupported = errors.New("rdmacm: not supported by this kernel")
	// ErrClosed: the channel or ID was already closed.
	ErrClosed = errors.New("rdmacm: closed")
	// ErrTimeout: a bounded wait for an event ended without one.
	ErrTimeout = errors.New("rdmacm: timed out waiting for an event")
)
