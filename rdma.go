package daqiri

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
)

// RDMA connections (roce:// interfaces): the Go form of upstream's rdma_*
// functions. Connections are made with RDMAConnect (clients) and claimed
// with RDMAServerConn (servers); ConnPortQueue maps one to its queues. A TX
// burst goes out as a SEND unless RDMASetHeader gives it another opcode
// (WRITE, WRITE with immediate, READ) and remote memory; received bursts and
// finished READs come back through RxBurst, and RDMAOp / RDMACompletionOf
// say what they are. Every call reaches its engine through engine.RDMA, the RDMA
// capability, so the session names no engine.

// RDMAOpcode is what an RDMA burst does (upstream RDMAOpCode).
type RDMAOpcode = engine.RDMAOpcode

// RDMA opcodes.
const (
	RDMAConnect  = engine.RDMAConnect
	RDMASend     = engine.RDMASend
	RDMAReceive  = engine.RDMAReceive
	RDMAWrite    = engine.RDMAWrite
	RDMAWriteImm = engine.RDMAWriteImm
	RDMARead     = engine.RDMARead
	RDMAReadImm  = engine.RDMAReadImm
	RDMAInvalid  = engine.RDMAInvalid
)

// RDMAHeader is what a TX burst asks its connection to do: opcode, remote
// memory (a region the peer advertised, or an address and rkey), immediate
// value, application tag.
type RDMAHeader = engine.RDMAHeader

// RDMACompletion describes a burst the RoCE engine handed to the
// application: its opcode, connection and per-packet immediate values.
type RDMACompletion = engine.RDMACompletion

// RDMALocalMR is a memory region as this side registered it (address, keys,
// remote access).
type RDMALocalMR = engine.RDMALocalMR

// RDMARemoteMR is a memory region a connection's peer advertised.
type RDMARemoteMR = engine.RDMARemoteMR

// RDMA errors.
var (
	// ErrDisconnected: the RDMA connection is gone (peer disconnected or
	// died, or the session is closing). It matches ErrConnectFailure.
	ErrDisconnected = engine.ErrDisconnected
	// ErrNoDMABuf: a device memory region cannot be registered because the
	// RDMA driver lacks DMA-BUF MRs. It matches ErrNotSupported.
	ErrNoDMABuf = engine.ErrNoDMABuf
)

// rdma returns the RDMA engine of a port.
func (s *Session) rdma(port int) (engine.RDMA, error) {
	p, err := s.port(port)
	if err != nil {
		return nil, err
	}
	e, ok := s.byPort[port].(engine.RDMA)
	if !ok {
		return nil, fmt.Errorf("port %d (%s) is served by engine %s, not %s: %w", port, p.Name, p.Engine, config.EngineRoCE, ErrInvalidParameter)
	}
	return e, nil
}

// rdmaEngine is the session's RoCE engine (nil when no port uses one).
func (s *Session) rdmaEngine() engine.RDMA {
	e, _ := s.engines[config.EngineRoCE].(engine.RDMA)
	return e
}

// RDMAConnect connects a client port to a RoCE server and returns the new
// connection's id once it carries traffic, waiting at most timeout (0: 10 s)
// (upstream rdma_connect_to_server). Each call makes a new connection in a
// free slot of the port; ErrNoSpaceAvailable when all are taken,
// ErrConnectFailure (with the reason) when the server cannot be reached.
func (s *Session) RDMAConnect(port int, server netip.AddrPort, timeout time.Duration) (uint64, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.leave()
	e, err := s.rdma(port)
	if err != nil {
		return 0, err
	}
	return e.Connect(port, server, timeout)
}

// RDMAServerConn claims the next connection a server port accepted that no
// earlier call returned (upstream rdma_get_server_conn_id): ErrNotReady while
// none is waiting, ErrNoSpaceAvailable once every slot (one per RX queue) is
// claimed.
func (s *Session) RDMAServerConn(port int) (uint64, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.leave()
	e, err := s.rdma(port)
	if err != nil {
		return 0, err
	}
	return e.ClaimServerConn(port)
}

// RDMASetHeader sets what Send does with a TX burst of a RoCE port
// (upstream rdma_set_header). h.Conn, when set, becomes the burst's
// connection.
func (s *Session) RDMASetHeader(b *Burst, h RDMAHeader) error {
	if b == nil {
		return ErrNullPtr
	}
	e, err := s.rdma(b.Port())
	if err != nil {
		return err
	}
	return e.SetHeader(b, h)
}

// RDMAOp is the opcode of an RDMA burst: what a received burst is
// (RDMAReceive, RDMAWriteImm, RDMARead, ...) or what a TX burst will do
// (upstream rdma_get_opcode): RDMASend for a TX burst without a header.
// Received bursts of other engines report RDMAInvalid.
func RDMAOp(b *Burst) RDMAOpcode {
	if b == nil {
		return RDMAInvalid
	}
	return engine.RDMAOpOf(b)
}

// RDMACompletionOf describes a burst the RoCE engine handed over (nil for
// any other burst).
func RDMACompletionOf(b *Burst) *RDMACompletion {
	if b == nil {
		return nil
	}
	return engine.RDMACompletionOf(b)
}

// RDMAConnErr is nil while an RDMA connection lives and the reason it ended
// afterwards (matching ErrDisconnected).
func (s *Session) RDMAConnErr(conn uint64) error {
	e := s.rdmaEngine()
	if e == nil {
		return fmt.Errorf("connection %d: this session has no RoCE interface: %w", conn, ErrInvalidParameter)
	}
	return e.ConnErr(conn)
}

// RDMALocalMRs lists the memory regions a RoCE port registered: what to
// tell a peer that reads or writes them by address and rkey.
func (s *Session) RDMALocalMRs(port int) ([]RDMALocalMR, error) {
	e, err := s.rdma(port)
	if err != nil {
		return nil, err
	}
	return e.LocalMRs(port)
}

// RDMARemoteMRs lists the regions a connection's peer advertised (empty
// for peers that are not daqiri).
func (s *Session) RDMARemoteMRs(conn uint64) ([]RDMARemoteMR, error) {
	e := s.rdmaEngine()
	if e == nil {
		return nil, fmt.Errorf("connection %d: this session has no RoCE interface: %w", conn, ErrInvalidParameter)
	}
	return e.RemoteMRs(conn)
}

// RDMARemoteKey is the I/O address and rkey of packet i's segment seg: what
// a peer needs to read or write that buffer directly.
func (s *Session) RDMARemoteKey(b *Burst, seg, i int) (addr uint64, rkey uint32, err error) {
	if b == nil {
		return 0, 0, ErrNullPtr
	}
	e, err := s.rdma(b.Port())
	if err != nil {
		return 0, 0, err
	}
	return e.RemoteKey(b, seg, i)
}

// RDMADrops is a RoCE port's drop counters under upstream's RDMA reason
// labels (tx_post_failure, rx_completion_error, ...), per RX and TX queue in
// configuration order.
func (s *Session) RDMADrops(port int) (rx, tx []map[string]uint64, err error) {
	e, err := s.rdma(port)
	if err != nil {
		return nil, nil, err
	}
	rx, tx = e.Drops(port)
	return rx, tx, nil
}
