package roce

import (
	"fmt"
	"sync"

	"github.com/daqiri-go/daqiri/engine"
)

// Opcode is what a burst does on a connection (upstream RDMAOpCode, same
// order): set on a TX burst with SetHeader, reported for a burst handed to the
// application with OpOf.
type Opcode uint8

// Opcodes.
const (
	// OpConnect is upstream's connection-setup opcode; bursts never carry it.
	OpConnect Opcode = iota
	// OpSend: each packet is one message the peer receives into a buffer it
	// posted (TX); the default of a burst with no header.
	OpSend
	// OpReceive: a received burst; each packet is one message the peer sent.
	OpReceive
	// OpWrite: each packet is written into the peer's memory (TX), packets
	// back to back from Header.RemoteOffset.
	OpWrite
	// OpWriteImm: like OpWrite, and the last packet carries Header.Imm, which
	// the peer receives as a burst of this opcode (one packet of length 0:
	// the data is in its memory region already).
	OpWriteImm
	// OpRead: each packet's buffer is filled from the peer's memory (TX,
	// RC only); when done the burst comes back on the connection's RX queue.
	OpRead
	// OpReadImm exists upstream; RDMA has no READ with immediate, so Send
	// refuses it.
	OpReadImm
	// OpInvalid marks a burst that is not an RDMA burst.
	OpInvalid
)

var opNames = [...]string{"CONNECT", "SEND", "RECEIVE", "RDMA_WRITE", "RDMA_WRITE_IMM", "RDMA_READ", "RDMA_READ_IMM", "INVALID"}

// String is upstream's name of the opcode.
func (o Opcode) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("Opcode(%d)", uint8(o))
}

// Header is what a TX burst asks the connection to do (upstream
// rdma_set_header's arguments). Set it with SetHeader before Send; a burst
// without one is sent with OpSend on its ConnID.
type Header struct {
	// Op is OpSend, OpWrite, OpWriteImm or OpRead.
	Op Opcode
	// Conn is the connection; 0 keeps the burst's ConnID.
	Conn uint64
	// RemoteMR names a memory region the peer advertised at connect (see
	// Engine.RemoteMRs) for OpWrite, OpWriteImm and OpRead; RemoteOffset is
	// where in it packet 0 goes, the others follow back to back.
	RemoteMR     string
	RemoteOffset uint64
	// RemoteAddr and RKey name the peer's memory directly when RemoteMR is
	// empty: for peers that advertise their buffers in their own protocol
	// (rping sends address, rkey and length in a SEND).
	RemoteAddr uint64
	RKey       uint32
	// Imm is the immediate value of OpWriteImm.
	Imm uint32
	// Complete hands the burst back on the connection's RX queue when the
	// device is done with it, instead of freeing it (OpRead always does).
	Complete bool
	// Tag is the application's identifier (upstream wr_id), reported back
	// with the completion.
	Tag uint64
}

// Completion describes a burst the engine handed to the application.
type Completion struct {
	// Op is OpReceive for received messages, OpWriteImm for a peer's write
	// notification, OpRead for a finished READ, and OpSend/OpWrite/
	// OpWriteImm for a TX burst sent with Header.Complete.
	Op Opcode
	// Conn is the connection.
	Conn uint64
	// Tag is the TX header's Tag (TX completions).
	Tag uint64
	// imm[i] and hasImm[i]: packet i's immediate value; wlen[i]: bytes a
	// peer's WRITE_WITH_IMM placed in this side's memory.
	imm    []uint32
	hasImm []bool
	wlen   []uint32
}

// Imm is packet i's immediate value, if it carried one.
func (c *Completion) Imm(i int) (uint32, bool) {
	if c == nil || i < 0 || i >= len(c.hasImm) || !c.hasImm[i] {
		return 0, false
	}
	return c.imm[i], true
}

// WriteLen is, for an OpWriteImm completion, how many bytes the peer's
// write placed in this side's memory.
func (c *Completion) WriteLen(i int) int {
	if c == nil || i < 0 || i >= len(c.wlen) {
		return 0
	}
	return int(c.wlen[i])
}

func (c *Completion) reset(op Opcode, conn uint64) {
	c.Op, c.Conn, c.Tag = op, conn, 0
	c.imm, c.hasImm, c.wlen = c.imm[:0], c.hasImm[:0], c.wlen[:0]
}

func (c *Completion) add(imm uint32, has bool, wlen uint32) {
	c.imm = append(c.imm, imm)
	c.hasImm = append(c.hasImm, has)
	c.wlen = append(c.wlen, wlen)
}

// burstState is what the engine keeps for a burst in Burst.Engine: the
// header a TX burst was given and the completion of a burst handed over.
// One is made per Burst object (bursts come from fixed pools), so steady
// traffic allocates none.
type burstState struct {
	hdr    Header
	hasHdr bool
	comp   Completion
	done   bool
}

// states maps pooled bursts to their state.
type states struct {
	mu sync.Mutex
	m  map[*engine.Burst]*burstState
}

func (s *states) of(b *engine.Burst) *burstState {
	if st, ok := b.Engine.(*burstState); ok {
		return st
	}
	s.mu.Lock()
	st := s.m[b]
	if st == nil {
		st = &burstState{}
		s.m[b] = st
	}
	s.mu.Unlock()
	st.hasHdr, st.done = false, false
	b.Engine = st
	return st
}

// OpOf is the opcode of a burst: its completion's for bursts the engine
// handed over, its header's for TX bursts, OpInvalid for bursts that are not
// RDMA bursts (upstream rdma_get_opcode).
func OpOf(b *engine.Burst) Opcode {
	st, ok := b.Engine.(*burstState)
	switch {
	case !ok:
		if b.IsTx() {
			return OpSend
		}
		return OpInvalid
	case st.done:
		return st.comp.Op
	case st.hasHdr:
		return st.hdr.Op
	}
	return OpSend
}

// CompletionOf returns the completion of a burst the engine handed to the
// application (nil otherwise).
func CompletionOf(b *engine.Burst) *Completion {
	if st, ok := b.Engine.(*burstState); ok && st.done {
		return &st.comp
	}
	return nil
}

// HeaderOf returns the header set on a TX burst, if any.
func HeaderOf(b *engine.Burst) (Header, bool) {
	if st, ok := b.Engine.(*burstState); ok && st.hasHdr && !st.done {
		return st.hdr, true
	}
	return Header{}, false
}

// LocalMR is a memory region as registered on this side: what a peer that
// does not speak this engine's connect protocol needs to read or write it.
type LocalMR struct {
	Name   string
	Addr   uint64 // I/O virtual address of byte 0 (the region's address)
	Length uint64
	LKey   uint32
	RKey   uint32
	// RemoteWrite and RemoteRead: what peers may do (the region's access).
	RemoteWrite, RemoteRead bool
}

// RemoteMR is a memory region a peer advertised at connect.
type RemoteMR struct {
	Name                    string
	Addr                    uint64
	Length                  uint64
	RKey                    uint32
	RemoteWrite, RemoteRead bool
}

// Reason is a drop reason with upstream's RDMA metric label
// (upstream-daqiri.md §6).
type Reason uint8

// Drop reasons.
const (
	ReasonTxEnqueueFailure Reason = iota
	ReasonRxCompletionError
	ReasonRxUnknownWRID
	ReasonRxCompletionEnqueueFailure
	ReasonTxUnknownWRID
	ReasonTxCompletionEnqueueFailure
	ReasonTxCompletionError
	ReasonMissingMemoryRegion
	ReasonMissingProtectionDomain
	ReasonMissingMemoryKey
	ReasonTxPostFailure
	ReasonRxPostFailure
	NumReasons
)

var reasonNames = [NumReasons]string{
	"tx_enqueue_failure", "rx_completion_error", "rx_unknown_wr_id", "rx_completion_enqueue_failure",
	"tx_unknown_wr_id", "tx_completion_enqueue_failure", "tx_completion_error", "missing_memory_region",
	"missing_protection_domain", "missing_memory_key", "tx_post_failure", "rx_post_failure",
}

// String is the reason's metric label.
func (r Reason) String() string {
	if r < NumReasons {
		return reasonNames[r]
	}
	return "unknown"
}

// Errors.
var (
	// ErrDisconnected: the connection is gone (the peer disconnected or
	// died, or the session is closing). It matches engine.ErrConnectFailure.
	ErrDisconnected = fmt.Errorf("roce: connection lost: %w", engine.ErrConnectFailure)
	// ErrNoDMABuf: device memory cannot be registered because the RDMA
	// device's driver cannot register DMA-BUF memory. It matches
	// engine.ErrNotSupported.
	ErrNoDMABuf = fmt.Errorf("roce: the RDMA driver cannot register GPU memory (no DMA-BUF MR support): %w", engine.ErrNotSupported)
)
