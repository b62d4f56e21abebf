package roce

import (
	"sync"

	"github.com/daqiri-go/daqiri/engine"
)

// Opcode is what a burst does on a connection (engine.RDMAOpcode: the vocabulary is shared
// with the session through package engine).
type Opcode = engine.RDMAOpcode

// Opcodes.
const (
	OpConnect  = engine.RDMAConnect
	OpSend     = engine.RDMASend
	OpReceive  = engine.RDMAReceive
	OpWrite    = engine.RDMAWrite
	OpWriteImm = engine.RDMAWriteImm
	OpRead     = engine.RDMARead
	OpReadImm  = engine.RDMAReadImm
	OpInvalid  = engine.RDMAInvalid
)

// Header is what a TX burst asks the connection to do (engine.RDMAHeader). Set it with
// SetHeader before Send; a burst without one is sent with OpSend on its ConnID.
type Header = engine.RDMAHeader

// Completion describes a burst the engine handed to the application (engine.RDMACompletion).
type Completion = engine.RDMACompletion

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

// RDMAOp is the burst's opcode (engine.RDMABurst): its completion's once handed over, else
// its header's, else OpSend.
func (st *burstState) RDMAOp() Opcode {
	switch {
	case st.done:
		return st.comp.Op
	case st.hasHdr:
		return st.hdr.Op
	}
	return OpSend
}

// RDMACompletion is the burst's completion once handed over (engine.RDMABurst).
func (st *burstState) RDMACompletion() *Completion {
	if st.done {
		return &st.comp
	}
	return nil
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

// LocalMR is a memory region as registered on this side (engine.RDMALocalMR).
type LocalMR = engine.RDMALocalMR

// RemoteMR is a memory region a peer advertised at connect (engine.RDMARemoteMR).
type RemoteMR = engine.RDMARemoteMR

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

// Errors (the values are package engine's, so the session names them without this package).
var (
	// ErrDisconnected: the connection is gone (the peer disconnected or
	// died, or the session is closing). It matches engine.ErrConnectFailure.
	ErrDisconnected = engine.ErrDisconnected
	// ErrNoDMABuf: device memory cannot be registered because the RDMA
	// device's driver cannot register DMA-BUF memory. It matches
	// engine.ErrNotSupported.
	ErrNoDMABuf = engine.ErrNoDMABuf
)

var (
	_ engine.RDMA      = (*Engine)(nil)
	_ engine.RDMABurst = (*burstState)(nil)
	_ engine.Connector = (*Engine)(nil)
)
