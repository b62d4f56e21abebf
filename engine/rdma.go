package engine

import (
	"fmt"
	"net/netip"
	"time"
)

// RDMA is implemented by engines that carry RDMA connections (roce, later mlx5 with verbs):
// the capability behind the session's RDMA* calls, as FlowEngine is behind its flow calls
// and Connector behind its connection calls. The vocabulary (opcodes, headers, completions,
// memory regions) lives here so that the session and every RDMA engine share it without the
// session naming an engine.
type RDMA interface {
	// Connect connects a client port to a server and returns the connection once it
	// carries traffic, waiting at most timeout.
	Connect(port int, server netip.AddrPort, timeout time.Duration) (uint64, error)
	// ClaimServerConn claims the next connection a server port accepted (ErrNotReady while
	// none is waiting).
	ClaimServerConn(port int) (uint64, error)
	// SetHeader sets what Send does with a TX burst.
	SetHeader(b *Burst, h RDMAHeader) error
	// ConnErr is nil while a connection lives and the reason it ended afterwards.
	ConnErr(conn uint64) error
	// LocalMRs lists the memory regions a port registered.
	LocalMRs(port int) ([]RDMALocalMR, error)
	// RemoteMRs lists the regions a connection's peer advertised.
	RemoteMRs(conn uint64) ([]RDMARemoteMR, error)
	// RemoteKey is the I/O address and rkey of packet i's segment seg.
	RemoteKey(b *Burst, seg, i int) (addr uint64, rkey uint32, err error)
	// Drops are a port's drop counters under the RDMA reason labels, per RX and TX queue.
	Drops(port int) (rx, tx []map[string]uint64)
}

// RDMABurst is implemented by the state an RDMA engine keeps in Burst.Engine, so the opcode
// and completion of a burst can be read without knowing the engine.
type RDMABurst interface {
	// RDMAOp is the burst's opcode (see RDMAOpOf).
	RDMAOp() RDMAOpcode
	// RDMACompletion is the burst's completion, nil unless the engine handed it over.
	RDMACompletion() *RDMACompletion
}

// RDMAOpOf is the opcode of a burst: what its RDMA engine says, RDMASend for any other TX
// burst and RDMAInvalid for any other received burst (upstream rdma_get_opcode).
func RDMAOpOf(b *Burst) RDMAOpcode {
	if st, ok := b.Engine.(RDMABurst); ok {
		return st.RDMAOp()
	}
	if b.IsTx() {
		return RDMASend
	}
	return RDMAInvalid
}

// RDMACompletionOf is the completion of a burst an RDMA engine handed over (nil otherwise).
func RDMACompletionOf(b *Burst) *RDMACompletion {
	if st, ok := b.Engine.(RDMABurst); ok {
		return st.RDMACompletion()
	}
	return nil
}

// RDMAOpcode is what a burst does on a connection (upstream RDMAOpCode, same order): set on a
// TX burst with a header, reported for a burst handed to the application.
type RDMAOpcode uint8

// RDMA opcodes.
const (
	// RDMAConnect is upstream's connection-setup opcode; bursts never carry it.
	RDMAConnect RDMAOpcode = iota
	// RDMASend: each packet is one message the peer receives into a buffer it posted (TX);
	// the default of a burst with no header.
	RDMASend
	// RDMAReceive: a received burst; each packet is one message the peer sent.
	RDMAReceive
	// RDMAWrite: each packet is written into the peer's memory (TX), packets back to back
	// from RDMAHeader.RemoteOffset.
	RDMAWrite
	// RDMAWriteImm: like RDMAWrite, and the last packet carries RDMAHeader.Imm, which the
	// peer receives as a burst of this opcode (one packet of length 0: the data is in its
	// memory region already).
	RDMAWriteImm
	// RDMARead: each packet's buffer is filled from the peer's memory (TX, RC only); when
	// done the burst comes back on the connection's RX queue.
	RDMARead
	// RDMAReadImm exists upstream; RDMA has no READ with immediate, so Send refuses it.
	RDMAReadImm
	// RDMAInvalid marks a burst that is not an RDMA burst.
	RDMAInvalid
)

var rdmaOpNames = [...]string{"CONNECT", "SEND", "RECEIVE", "RDMA_WRITE", "RDMA_WRITE_IMM", "RDMA_READ", "RDMA_READ_IMM", "INVALID"}

// String is upstream's name of the opcode.
func (o RDMAOpcode) String() string {
	if int(o) < len(rdmaOpNames) {
		return rdmaOpNames[o]
	}
	return fmt.Sprintf("Opcode(%d)", uint8(o))
}

// RDMAHeader is what a TX burst asks the connection to do (upstream rdma_set_header's
// arguments). Set it before Send; a burst without one is sent with RDMASend on its ConnID.
type RDMAHeader struct {
	// Op is RDMASend, RDMAWrite, RDMAWriteImm or RDMARead.
	Op RDMAOpcode
	// Conn is the connection; 0 keeps the burst's ConnID.
	Conn uint64
	// RemoteMR names a memory region the peer advertised at connect (see RDMA.RemoteMRs)
	// for RDMAWrite, RDMAWriteImm and RDMARead; RemoteOffset is where in it packet 0 goes,
	// the others follow back to back.
	RemoteMR     string
	RemoteOffset uint64
	// RemoteAddr and RKey name the peer's memory directly when RemoteMR is empty: for peers
	// that advertise their buffers in their own protocol (rping sends address, rkey and
	// length in a SEND).
	RemoteAddr uint64
	RKey       uint32
	// Imm is the immediate value of RDMAWriteImm.
	Imm uint32
	// Complete hands the burst back on the connection's RX queue when the device is done
	// with it, instead of freeing it (RDMARead always does).
	Complete bool
	// Tag is the application's identifier (upstream wr_id), reported back with the
	// completion.
	Tag uint64
}

// RDMACompletion describes a burst an RDMA engine handed to the application.
type RDMACompletion struct {
	// Op is RDMAReceive for received messages, RDMAWriteImm for a peer's write notification,
	// RDMARead for a finished READ, and RDMASend/RDMAWrite/RDMAWriteImm for a TX burst sent
	// with RDMAHeader.Complete.
	Op RDMAOpcode
	// Conn is the connection.
	Conn uint64
	// Tag is the TX header's Tag (TX completions).
	Tag uint64
	// imm[i] and hasImm[i]: packet i's immediate value; wlen[i]: bytes a peer's
	// WRITE_WITH_IMM placed in this side's memory.
	imm    []uint32
	hasImm []bool
	wlen   []uint32
}

// Imm is packet i's immediate value, if it carried one.
func (c *RDMACompletion) Imm(i int) (uint32, bool) {
	if c == nil || i < 0 || i >= len(c.hasImm) || !c.hasImm[i] {
		return 0, false
	}
	return c.imm[i], true
}

// WriteLen is, for an RDMAWriteImm completion, how many bytes the peer's write placed in
// this side's memory.
func (c *RDMACompletion) WriteLen(i int) int {
	if c == nil || i < 0 || i >= len(c.wlen) {
		return 0
	}
	return int(c.wlen[i])
}

// Reset starts a completion over for a burst the engine is about to hand over (engines only;
// the per-packet slices keep their capacity, so steady traffic allocates nothing).
func (c *RDMACompletion) Reset(op RDMAOpcode, conn uint64) {
	c.Op, c.Conn, c.Tag = op, conn, 0
	c.imm, c.hasImm, c.wlen = c.imm[:0], c.hasImm[:0], c.wlen[:0]
}

// Append records the next packet's immediate value and written length (engines only).
func (c *RDMACompletion) Append(imm uint32, has bool, wlen uint32) {
	c.imm = append(c.imm, imm)
	c.hasImm = append(c.hasImm, has)
	c.wlen = append(c.wlen, wlen)
}

// RDMALocalMR is a memory region as registered on this side: what a peer that does not speak
// the engine's connect protocol needs to read or write it.
type RDMALocalMR struct {
	Name   string
	Addr   uint64 // I/O virtual address of byte 0 (the region's address)
	Length uint64
	LKey   uint32
	RKey   uint32
	// RemoteWrite and RemoteRead: what peers may do (the region's access).
	RemoteWrite, RemoteRead bool
}

// RDMARemoteMR is a memory region a peer advertised at connect.
type RDMARemoteMR struct {
	Name                    string
	Addr                    uint64
	Length                  uint64
	RKey                    uint32
	RemoteWrite, RemoteRead bool
}

// RDMA errors.
var (
	// ErrDisconnected: the connection is gone (the peer disconnected or died, or the
	// session is closing). It matches ErrConnectFailure.
	ErrDisconnected = fmt.Errorf("roce: connection lost: %w", ErrConnectFailure)
	// ErrNoDMABuf: device memory cannot be registered because the RDMA device's driver
	// cannot register DMA-BUF memory. It matches ErrNotSupported.
	ErrNoDMABuf = fmt.Errorf("roce: the RDMA driver cannot register GPU memory (no DMA-BUF MR support): %w", ErrNotSupported)
)
