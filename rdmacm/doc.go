// Package rdmacm is the RDMA connection manager's user-space ABI in pure Go:
// it opens /dev/infiniband/rdma_cm (the rdma_ucm module) and issues the ucma
// write() commands directly, without librdmacm and without cgo.
//
// # What it offers
//
// A Channel is one open rdma_cm file; every ID (an rdma_cm_id) is made
// through a channel and the events of all its IDs are read from it with
// NextEvent. An ID binds to a local address (Bind), resolves a remote
// address and route (ResolveAddr, ResolveRoute: the kernel picks the RDMA
// device and GID from the IP routing tables), listens (Listen), connects and
// accepts with private data (Connect, Accept, EstablishActive, Reject),
// disconnects (Disconnect) and is destroyed (Destroy). InitQPAttr and
// ModifyQP walk a verbs QP through INIT, RTR and RTS with the attributes the
// connection manager negotiated, so a QP made with package verbs can carry
// the connection: the user-space half of what librdmacm does for
// rdma_create_qp, rdma_connect and rdma_accept.
//
// # Sequences (as librdmacm runs them, librdmacm/cma.c)
//
// Active side: CreateID, ResolveAddr → EventAddrResolved, ResolveRoute →
// EventRouteResolved, Device (open that verbs device), create the QP and
// ModifyQP(INIT), Connect → EventConnectResponse, ModifyQP(RTR),
// ModifyQP(RTS), EstablishActive: connected.
//
// Passive side: CreateID, Bind, Listen → EventConnectRequest carrying a new
// ID; create its QP, ModifyQP(INIT, RTR, RTS), Accept → EventEstablished.
//
// Either side: Disconnect (QP to ERR first) → EventDisconnected on both; a
// peer that dies has its IDs destroyed by the kernel, which disconnects its
// connections, so the survivor sees EventDisconnected too.
//
// # Sources
//
// Command numbers, struct layouts, port spaces and option names are those
// of Linux's include/uapi/rdma/rdma_user_cm.h (ABI version 4, with the ECE
// fields of Linux 5.8 and later); event numbers are enum rdma_cm_event_type
// (include/rdma/rdma_cm.h, librdmacm's rdma_cma.h); the checks the kernel
// makes are in drivers/infiniband/core/ucma.c (a conn_param must have its
// valid byte set; unaccepted connection contexts report no events; closing
// the file destroys every ID). abi_test.go pins every size.
//
// Tests that need a kernel with rdma_ucm and Soft-RoCE run in the project's
// VM harness (go test ./integration/vm); elsewhere they skip.
package rdmacm
