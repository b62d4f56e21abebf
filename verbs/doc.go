// Package verbs is the RDMA verbs user-space ABI in pure Go: it opens a
// device's uverbs character device (/dev/infiniband/uverbsN) and talks to the
// kernel directly, without libibverbs and without cgo.
//
// # Layers
//
//   - Devices and LookupDevice enumerate RDMA devices from sysfs
//     (/sys/class/infiniband, /sys/class/infiniband_verbs).
//   - Open creates a Context: the uverbs file, the kernel's user context
//     (GET_CONTEXT) and an async event file. From it: QueryDevice, QueryPort,
//     QueryGID/GIDTable/FindGID, AllocPD, CreateCompChannel, CreateCQ,
//     NextAsyncEvent. From a PD: RegMR, RegDMABufMR, CreateQP, CreateAH.
//   - Commands travel as RDMA_VERBS_IOCTL calls (a header plus typed
//     attributes) where Linux 6.1 has an ioctl method (GET_CONTEXT,
//     QUERY_PORT, QUERY_GID_*, CQ/QP create and destroy, PD/MR/AH destroy,
//     REG_DMABUF_MR, ASYNC_EVENT_ALLOC) and as legacy write() commands where
//     it has none (QUERY_DEVICE, ALLOC_PD, REG_MR, CREATE_AH,
//     CREATE_COMP_CHANNEL, MODIFY_QP, QUERY_QP, REQ_NOTIFY_CQ, POST_SEND).
//     The byte layouts live in verbs/internal/uapi, checked against the
//     kernel headers by its tests.
//   - Driver-specific methods live beside this package, as rdma-core keeps
//     them in its providers: verbs/mlx5dv offers mlx5's DevX (PRM commands,
//     UMEMs, UARs, the kernel flow matcher, the clock page). Such packages
//     issue their calls through the context opened here, by the internal
//     surface in verbs/internal/dv (the provider.Kernel a provider receives
//     also implements dv.Kernel), so the public API stays the generic one.
//   - The datapath (posting work requests, polling completions, doorbells)
//     belongs to a provider (package verbs/provider), chosen by the device's
//     kernel driver: verbs/rxe drives Soft-RoCE's user-mapped rings. Other
//     providers (mlx5) plug in through Options.Provider.
//
// # Errors
//
// A command the kernel refuses returns an *Error that unwraps to the
// kernel's errno (errors.Is(err, unix.EINVAL)); it also matches
// ErrNotSupported (EOPNOTSUPP, EPROTONOSUPPORT) and ErrBusy (EBUSY). Use of a
// closed object returns ErrClosed. The datapath reports ErrQueueFull and
// ErrInvalidWR; a failed work request surfaces as a WorkCompletion whose
// Err() is a *CompletionError.
//
// # Memory
//
// Memory registered with RegMR is read and written by the device (the
// kernel, for rxe) while the MR lives, so it must not be Go heap memory that
// the collector could free: use mmap'd anonymous or hugepage memory. Inline
// sends (SendWR.Inline) copy their bytes into the work request and need no MR.
//
// # Concurrency
//
// Objects may be used from several goroutines; a QP's send and receive
// queues and a CQ's ring are each serialised by the provider. Closing an
// object (or its Context) while another goroutine still uses it is an error
// of the caller. Context.Close releases everything the context made, also
// objects whose own Close was never called.
//
// Tests that need a kernel with rdma_rxe run inside the project's VM
// harness (go test ./integration/vm); elsewhere they skip.
package verbs
