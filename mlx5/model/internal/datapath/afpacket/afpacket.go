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
	// A bridged port is a cable: the frames a peer sends in a burst must not be dropped
	// because this process was descheduled for a moment. The default receive buffer (about
	// 200 KiB of skb truesize, some 60 full frames) overflowed on a loaded 2-core CI machine
	// and lost the tail of a 256-frame burst; 8 MiB holds thousands. SO_RCVBUFFORCE needs
	// CAP_NET_ADMIN, which a bridge run as root has; without it SO_RCVBUF takes what
	// net.core.rmem_max allows.
	const bufBytes = 8 << 20
	for _, opt := range [][2]int{{unix.SO_RCVBUFFORCE, unix.SO_RCVBUF}, {unix.SO_SNDBUFFORCE, unix.SO_SNDBUF}} {
		if unix.SetsockoptInt(fd, unix.SOL_SOCKET, opt[0], bufBytes) != nil {
			_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, opt[1], bufBytes)
		}
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
	// ENOBUFS means the device's queue is full for now: wait for it a little (bounded), as a
	// NIC's transmit queue would, instead of dropping the frame.
	for try := 0; ; try++ {
		_, err := unix.Write(fd, frame)
		if err == nil {
			return nil
		}
		if (errors.Is(err, unix.ENOBUFS) || errors.Is(err, unix.EAGAIN)) && try < 100 {
			time.Sleep(100 * time.Microsecond)
			continue
		}
		return fmt.Errorf("afpacket: send %d bytes on %s: %w", len(frame), s.ifname, err)
	}
}

// Drops is the number of frames the kernel dropped for this socket because its receive
// buffer was full, since the last call (PACKET_STATISTICS resets on read).
func (s *Socket) Drops() (uint32, error) {
	fd, err := s.get()
	if err != nil {
		return 0, err
	}
	st, err := unix.GetsockoptTpacketStats(fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
	if err != nil {
		return 0, fmt.Errorf("afpacket: statistics of %s: %w", s.ifname, err)
	}
	return st.Drops, nil
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
