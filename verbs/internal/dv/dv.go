// Package dv is what the generic verbs layer (package verbs) lends the driver-specific
// direct-verbs packages beside it (verbs/mlx5dv): the opened context's ioctl calls, its
// error convention and its lifetime. It is internal so that the library's public API does
// not grow by what only a driver package needs.
//
// The split follows rdma-core's: libibverbs owns the device file, the user context and the
// ioctl ABI's framing; a provider's direct-verbs library (mlx5dv) issues its driver's own
// methods through the same context (rdma-core's execute_ioctl on a verbs_context). Here the
// way in is the provider seam every driver already has: verbs hands a provider's NewContext
// a provider.Kernel, and that value also implements Kernel below. A driver package that
// needs the generic context of a device of another driver wraps that driver's built-in
// provider (BuiltinProvider) to receive the same Kernel.
package dv

import (
	"fmt"
	"syscall"

	"github.com/daqiri-go/daqiri/verbs/internal/uapi"
	"github.com/daqiri-go/daqiri/verbs/provider"
	"github.com/daqiri-go/daqiri/verbs/rxe"
)

// Kernel is an opened verbs context as a driver package uses it. verbs' provider.Kernel
// implements it; a driver package type-asserts the provider.Kernel its provider receives.
type Kernel interface {
	provider.Kernel
	// Device names the device and its kernel driver, for errors.
	Device() (name, driver string)
	// Begin fails, wrapping verbs.ErrClosed, once the context is closed: every call checks
	// it first, as verbs' own methods do.
	Begin() error
	// NewCall starts an ioctl call whose header names the context's driver id.
	NewCall(object, method uint16) *uapi.Call
	// Do issues call on the context's file and returns the kernel's errno unwrapped.
	Do(call *uapi.Call) error
	// Wrap turns a failure of op into what verbs returns: a *verbs.Error carrying the
	// errno and the device's name, or err annotated with both.
	Wrap(op string, err error) error
	// MmapProt maps length bytes of the device file at offset, shared, with protection
	// prot; the error is the kernel's errno unwrapped.
	MmapProt(offset int64, length, prot int) ([]byte, error)
	// Track has the context call release when it closes while the object still lives (the
	// kernel destroys it with the file); the returned function forgets it again.
	Track(release func()) (untrack func())
	// PD returns the kernel handle of pd, a *verbs.PD of this context, failing as verbs
	// does once the PD is closed (or when pd is something else).
	PD(pd any) (uint32, error)
}

// BuiltinProvider returns the provider verbs ships for a kernel driver name, or nil.
func BuiltinProvider(driver string) provider.Provider {
	switch driver {
	case "rxe":
		return rxe.Provider{}
	}
	return nil
}

// ErrnoName is the errno's C name where verbs' errors spell it out.
func ErrnoName(e syscall.Errno) string {
	switch e {
	case syscall.EINVAL:
		return "EINVAL"
	case syscall.ENOENT:
		return "ENOENT"
	case syscall.EBUSY:
		return "EBUSY"
	case syscall.ENOMEM:
		return "ENOMEM"
	case syscall.EFAULT:
		return "EFAULT"
	case syscall.EPERM:
		return "EPERM"
	case syscall.EACCES:
		return "EACCES"
	case syscall.EOPNOTSUPP:
		return "EOPNOTSUPP"
	case syscall.EPROTONOSUPPORT:
		return "EPROTONOSUPPORT"
	case syscall.ENOSPC:
		return "ENOSPC"
	case syscall.EBADF:
		return "EBADF"
	case syscall.ENODEV:
		return "ENODEV"
	case syscall.EIO:
		return "EIO"
	}
	return fmt.Sprintf("errno %d", int(e))
}
