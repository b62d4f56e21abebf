// Package channel is how the mlx5 engine talks to one ConnectX function: PRM commands in and
// out as bytes, plus the few things a command cannot do from user space (register memory,
// map a doorbell page, learn an event queue number, attach a flow table at the root of the
// NIC's receive steering). Three transports implement it: DevX over the uverbs ioctl ABI
// (a kernel mlx5_ib driver in between), the command queue over a VFIO BAR (no kernel driver),
// and the device model in process. The engine is written once against this interface; the
// trace wrapper records every command on any transport.
//
// Objects follow DevX's rules, because they are the strictest of the three: an object is
// created by a command that the transport remembers, and destroyed through the handle the
// create returned (DevX builds the destroy command in the kernel from the create; the other
// transports build the same command here), so nothing the engine created outlives Close.
package channel

import (
	"errors"
	"fmt"

	"github.com/daqiri-go/daqiri/verbs/mlx5dv"
)

// Channel is one open ConnectX function. Methods are safe for concurrent use unless a method
// says otherwise.
type Channel interface {
	// Name says which transport and device this is, for messages ("devx:mlx5_0",
	// "vfio:0000:3b:00.0", "model:1").
	Name() string

	// Exec runs one command that creates nothing (a query, a modify of device state): in is
	// the command's input layout, out receives the output (its length is the output size
	// the caller expects). A command the device completes with a bad status returns a
	// *CommandError.
	Exec(in, out []byte) error

	// Create runs a command that creates an object and returns its handle: DevX's
	// DEVX_OBJ_CREATE. The object id is in out, where the PRM puts it.
	Create(in, out []byte) (Object, error)

	// RegisterMemory makes mem reachable by the device and returns a UMEM (DevX: the
	// UMEM_REG method; VFIO and the model: a DMA mapping and CREATE_UMEM). mem must stay
	// mapped until the UMEM is released.
	RegisterMemory(mem []byte, access Access) (UMEM, error)

	// AllocUAR allocates a doorbell page (DevX: a dynamic UAR and its mmap; VFIO: ALLOC_UAR
	// and the page in the BAR mapping; the model: the same through its BAR).
	AllocUAR() (UAR, error)

	// EQN is the event queue number for completion vector v (DevX QUERY_EQN).
	EQN(vector int) (uint32, error)

	// AttachRoot makes flow table the first table of the port's NIC receive steering
	// (VFIO and the model: SET_FLOW_TABLE_ROOT; DevX: a kernel flow rule, created through the
	// flow matcher, that forwards every frame to the table). The returned function detaches.
	AttachRoot(table uint32) (detach func() error, err error)

	// Close releases every object, UMEM and UAR still open, in reverse order of creation,
	// and the channel itself.
	Close() error
}

// Object is a device object the channel created.
type Object interface {
	// ID is the object's number (CQN, RQN, TIR number, flow table id, ...).
	ID() uint32
	// Modify and Query run a modify or query command on the object (DEVX_OBJ_MODIFY/QUERY).
	Modify(in, out []byte) error
	Query(in, out []byte) error
	// Destroy destroys the object; destroying it again returns ErrClosed.
	Destroy() error
}

// UMEM is registered memory.
type UMEM interface {
	// ID is the UMEM id that queue and key contexts name.
	ID() uint32
	// Release deregisters the memory; the device no longer reaches it.
	Release() error
}

// UAR is a doorbell page.
type UAR interface {
	// Index is the page number that SQ, CQ and EQ contexts name (uar_page).
	Index() uint32
	// Write64 stores v at byte offset off of the page as one 64-bit write, big-endian as
	// the device reads it (the doorbell register and the BlueFlame buffers; PRM: the
	// control segment's first 8 bytes). Callers order it after the doorbell record update.
	Write64(off uint32, v uint64)
	// Write32 stores v at off as one 32-bit write (CQ arm doorbell halves, EQ doorbells).
	Write32(off uint32, v uint32)
	// Release frees the page.
	Release() error
}

// Access is what the device may do with registered memory (IB access flags, uverbs ABI).
type Access uint32

// Access flags (enum ib_uverbs_access_flags, rdma/ib_user_ioctl_verbs.h).
const (
	AccessLocalWrite  Access = 1 << 0
	AccessRemoteWrite Access = 1 << 1
	AccessRemoteRead  Access = 1 << 2
)

// CommandError is a command that the device completed with a status other than OK.
type CommandError struct {
	Opcode   uint16 // the command (PRM opcode)
	OpMod    uint16
	Status   uint8  // PRM status (MLX5_CMD_STAT_*)
	Syndrome uint32 // firmware's syndrome: opaque, for people and support, not for branching
	Name     string // the opcode's name, when known ("CREATE_CQ")
	Detail   string // the transport's explanation, if any
}

// Error implements error.
func (e *CommandError) Error() string {
	name := e.Name
	if name == "" {
		name = fmt.Sprintf("opcode %#x", e.Opcode)
	}
	s := fmt.Sprintf("mlx5 %s (op_mod %#x): status %#x, syndrome %#x", name, e.OpMod, e.Status, e.Syndrome)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Errors a transport returns besides *CommandError.
var (
	// ErrClosed: the channel or object was closed or destroyed.
	ErrClosed = errors.New("mlx5 channel: closed")
	// ErrUnsupported: the transport cannot do this (for example DMA-BUF UMEMs on the model).
	ErrUnsupported = errors.New("mlx5 channel: not supported by this transport")
	// ErrNotMLX5: the device behind the transport is not a ConnectX (DevX on another
	// provider, such as rxe). It is mlx5dv.ErrNotMLX5, so an error from the typed DevX calls
	// in package verbs/mlx5dv matches it without translation.
	ErrNotMLX5 = mlx5dv.ErrNotMLX5
)

// Pacer is a channel that hands out packet pacing indexes itself. DevX does: user space
// may not run SET_PP_RATE_LIMIT, the kernel allocates the index from a rate-limit context
// (MLX5_IB_OBJECT_PP). On a channel without it (or when AllocPacing returns
// ErrUnsupported) the engine picks an index and runs SET_PP_RATE_LIMIT through Exec, as
// on the model and VFIO.
type Pacer interface {
	// AllocPacing returns an index for ctx, a PRM set_pp_rate_limit_context (rate_limit,
	// burst_upper_bound, typical_packet_size); dedicated asks for an index of its own even
	// where another user has the same rate.
	AllocPacing(ctx []byte, dedicated bool) (Pacing, error)
}

// Pacing is an allocated pacing index.
type Pacing interface {
	// Index is what an SQ context names in packet_pacing_rate_limit_index.
	Index() uint16
	// Release frees the index.
	Release() error
}

// DMABufRegistrar is a channel that registers memory exported as a DMA-BUF (GPU memory from
// its driver: the `device` memory regions), which has no address in this process. DevX
// does (DEVX_UMEM_REG with a DMA-BUF fd); the model does not.
type DMABufRegistrar interface {
	// RegisterDMABuf registers length bytes at offset of the DMA-BUF fd.
	RegisterDMABuf(fd int, offset, length uint64, access Access) (UMEM, error)
}
