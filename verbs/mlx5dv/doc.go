// Package mlx5dv is the mlx5 driver's own part of the RDMA user-space ABI in pure Go, named
// after rdma-core's mlx5 direct-verbs library: what Linux keeps under
// drivers/infiniband/hw/mlx5 (devx.c, fs.c, qos.c, main.c) and rdma-core under
// providers/mlx5, beside the generic verbs of package verbs.
//
// Open opens an mlx5 device with a DevX user context (the ucontext request and response of
// rdma/mlx5-abi.h) and offers the driver's ioctl methods as typed calls: PRM commands
// (General, CreateObj and the object's Modify/Query/Destroy), UMEM registration (host
// memory or a DMA-BUF), dynamic UAR pages mapped for doorbells, QUERY_EQN/QUERY_UAR, PD
// query, the kernel flow matcher and CREATE_FLOW, packet reformat actions, pacing indexes
// and the clock info page. The generic verbs context stays usable through DevX.Context.
//
// On a device of another driver (rxe) Open still opens the generic context, and every mlx5
// method is asked of the kernel, which refuses it: the error wraps ErrNotMLX5, names the
// method and keeps the kernel's errno (a *verbs.Error).
//
// The calls travel through the context package verbs opened (verbs/internal/dv: its ioctl
// framing, errors and lifetime), so closing the context releases every object made here.
// The ioctl ids and driver structures are in internal/mlx5abi, compared with the installed
// uapi headers by a gcc probe at test time; each method's encoding is checked against the
// kernel's method definitions the same way (devx_test.go).
package mlx5dv
