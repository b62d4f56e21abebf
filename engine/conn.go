package engine

import (
	"net/netip"
	"time"
)

// Connector is implemented by connection-oriented engines (socket, RoCE): connection ids name
// peers, and bursts carry the id of the connection they came from or go to.
type Connector interface {
	// ConnID is the port's default connection (ErrNotReady while there is none).
	ConnID(port int) (uint64, error)
	// Conns lists a port's live connections.
	Conns(port int) []uint64
	// Connect points a client port at a server and returns the connection id.
	Connect(port int, remote netip.AddrPort, timeout time.Duration) (uint64, error)
	// PortQueue maps a connection to its port and RX/TX queue ids (-1 when absent).
	PortQueue(conn uint64) (port, rxQueue, txQueue int, err error)
	// SetSockopt sets a raw option on the connection's socket (ErrNotSupported when the
	// connection has none).
	SetSockopt(conn uint64, level, opt int, val []byte) error
}
