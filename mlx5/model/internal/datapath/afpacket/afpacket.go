// Package afpacket is the model's raw link to a Linux netdev: an AF_PACKET socket bound to
// one interface, sending whole Ethernet frames and receiving the frames the interface
// receives (not the ones it sends), so that a model port can be bridged to a veth and talk
// to real peers. The syscalls stay here, behind Open, Send, Recv and Close.
package afpacket

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Socket is an AF_PACKET socket bound to one interface in the namespace it was opened in.
// Send and Recv may run concurrently with each other; Close ends a Recv in progress within
// one poll interval.
type Socket struct {
	mu     sync.Mutex
	fd     int
	ifname string
	closed bool
}

// htons is ETH_P_ALL in network byte order, as packet(7) wants the protocol.
func htons(v uint16) uint16 { return v<<8 | v>>8 }

// Open binds a raw packet socket to ifname, in promiscuous mode so that frames addressed to
// the model's MAC (which the netdev does not own) arrive too. It needs CAP_NET_RAW.
func Open(ifname string) (*Socket, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("afpacket: interface %q: %w", ifname, err)
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
	if err != nil {
		return nil, fmt.Errorf("afpacket: socket for %s: %w", ifname, err)
	}
	sa := &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("afpacket: bind to %s: %w", ifname, err)
	}
	mreq := unix.PacketMreq{Ifindex: int32(ifi.Index), Type: unix.PACKET_MR_PROMISC}
	if err := unix.SetsockoptPacketMreq(fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, &mreq); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("afpacket: promiscuous mode on %s: %w", ifname, err)
	}
	return &Socket{fd: fd, ifname: ifname}, nil
}

// ErrClosed is returned by a Socket used after Close.
var ErrClosed = errors.New("afpacket: socket closed")

func (s *Socket) get() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return -1, ErrClosed
	}
	return s.fd, nil
}

// Send transmits one Ethernet frame on the interface.
func (s *Socket) Send(frame []byte) error {
	fd, err := s.get()
	if err != nil {
		return err
	}
	if _, err := unix.Write(fd, frame); err != nil {
		return fmt.Errorf("afpacket: send %d bytes on %s: %w", len(frame), s.ifname, err)
	}
	return nil
}

// Recv waits up to timeout for a frame the interface received and copies it into buf;
// it returns 0 and no error when the time passes first. Frames the interface sent
// (PACKET_OUTGOING) are skipped, so a bridged port does not hear itself.
func (s *Socket) Recv(buf []byte, timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	for {
		fd, err := s.get()
		if err != nil {
			return 0, err
		}
		wait := min(time.Until(deadline), 100*time.Millisecond)
		if wait <= 0 {
			return 0, nil
		}
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(pfd, int(wait/time.Millisecond)+1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("afpacket: poll %s: %w", s.ifname, err)
		}
		if n == 0 {
			continue
		}
		k, from, err := unix.Recvfrom(fd, buf, unix.MSG_DONTWAIT)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("afpacket: receive on %s: %w", s.ifname, err)
		}
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
			continue
		}
		return k, nil
	}
}

// Close closes the socket.
func (s *Socket) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return unix.Close(s.fd)
}
