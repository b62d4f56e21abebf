package daqiri

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/daqiri-go/daqiri/engine"
)

func (s *Session) connector(port int) (engine.Connector, error) {
	if _, err := s.port(port); err != nil {
		return nil, err
	}
	c, ok := s.byPort[port].(engine.Connector)
	if !ok {
		return nil, fmt.Errorf("port %d (%s): engine %s has no connections: %w", port, s.ports[port].Name, s.ports[port].Engine, ErrNotSupported)
	}
	return c, nil
}

// ConnID is a port's default connection id: a UDP endpoint's own id, a TCP client's
// connection, or a TCP server's first accepted connection (upstream socket_get_server_conn_id).
// ErrNotReady while there is none yet.
func (s *Session) ConnID(port int) (uint64, error) {
	c, err := s.connector(port)
	if err != nil {
		return 0, err
	}
	return c.ConnID(port)
}

// Conns lists the live connection ids of a port.
func (s *Session) Conns(port int) []uint64 {
	c, err := s.connector(port)
	if err != nil {
		return nil
	}
	return c.Conns(port)
}

// Connect points a client port at a server (upstream socket_connect_to_server): UDP
// re-targets the endpoint's socket; TCP reuses a live connection to that server or dials one,
// waiting at most timeout.
func (s *Session) Connect(port int, server netip.AddrPort, timeout time.Duration) (uint64, error) {
	c, err := s.connector(port)
	if err != nil {
		return 0, err
	}
	return c.Connect(port, server, timeout)
}

// ConnPortQueue maps a connection id to its port and RX/TX queue ids (-1 when the port has no
// queue in that direction) (upstream socket_get_port_queue).
func (s *Session) ConnPortQueue(conn uint64) (port, rxQueue, txQueue int, err error) {
	for p := range s.ports {
		if c, ok := s.byPort[p].(engine.Connector); ok {
			if port, rx, tx, err := c.PortQueue(conn); err == nil {
				return port, rx, tx, nil
			}
		}
	}
	return -1, -1, -1, fmt.Errorf("connection %d: %w", conn, ErrInvalidParameter)
}

// SetSockopt sets a raw socket option on a connection's socket (upstream socket_setsockopt).
func (s *Session) SetSockopt(conn uint64, level, opt int, val []byte) error {
	port, _, _, err := s.ConnPortQueue(conn)
	if err != nil {
		return err
	}
	c, err := s.connector(port)
	if err != nil {
		return err
	}
	return c.SetSockopt(conn, level, opt, val)
}
