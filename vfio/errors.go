package vfio

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Sentinel errors. Errors from this package are *Error values; errors.Is
// matches them against these sentinels and against the underlying errno
// (errors.Is(err, unix.EBUSY) works too).
var (
	// ErrInUse: the group (or device) is already open, in this process or
	// another (EBUSY).
	ErrInUse = errors.New("vfio: in use")
	// ErrNotFound: no such group, or no such device in the group (ENOENT,
	// ENODEV).
	ErrNotFound = errors.New("vfio: not found")
	// ErrPermission: the caller may not open the group or device.
	ErrPermission = errors.New("vfio: permission denied")
	// ErrNotViable: a device of the group is bound to a host driver; every
	// device of a group must be bound to vfio (or to no driver) before use.
	ErrNotViable = errors.New("vfio: group not viable")
	// ErrUnsupported: the kernel, IOMMU or device lacks the feature.
	ErrUnsupported = errors.New("vfio: not supported")
	// ErrInvalid: an argument was rejected, by this package before any
	// system call or by the kernel (EINVAL).
	ErrInvalid = errors.New("vfio: invalid argument")
	// ErrNotMapped: an IOVA range is not covered by the container's DMA
	// mappings.
	ErrNotMapped = errors.New("vfio: IOVA not mapped")
	// ErrExists: an IOVA range overlaps an existing mapping (EEXIST).
	ErrExists = errors.New("vfio: IOVA already mapped")
	// ErrClosed: the object was closed.
	ErrClosed = errors.New("vfio: closed")
	// ErrTimeout: a bounded wait (interrupt, device completion) ran out.
	ErrTimeout = errors.New("vfio: timed out")
)

// Error is an error from one VFIO operation.
type Error struct {
	Op     string // what was attempted: "open group", "VFIO_IOMMU_MAP_DMA" …
	Object string // what it was attempted on: "/dev/vfio/3", "0000:00:01.0" …
	Err    error  // the cause: a unix.Errno, a sentinel above, or another error
}

func (e *Error) Error() string {
	if e.Object == "" {
		return "vfio: " + e.Op + ": " + e.Err.Error()
	}
	return "vfio: " + e.Op + " " + e.Object + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is maps errnos onto the package's sentinels.
func (e *Error) Is(target error) bool {
	var errno unix.Errno
	if !errors.As(e.Err, &errno) {
		return false
	}
	switch target {
	case ErrInUse:
		return errno == unix.EBUSY
	case ErrNotFound:
		return errno == unix.ENOENT || errno == unix.ENODEV || errno == unix.ENXIO
	case ErrPermission:
		return errno == unix.EACCES || errno == unix.EPERM
	case ErrUnsupported:
		return errno == unix.ENOTTY || errno == unix.EOPNOTSUPP || errno == unix.ENOSYS
	case ErrInvalid:
		return errno == unix.EINVAL
	case ErrExists:
		return errno == unix.EEXIST
	}
	return false
}

func opErr(op, obj string, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Op: op, Object: obj, Err: err}
}

// invalid reports a bad argument caught before any system call.
func invalid(op, obj, format string, args ...any) error {
	return &Error{Op: op, Object: obj, Err: fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)}
}
