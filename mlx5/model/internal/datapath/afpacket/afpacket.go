// Package afpacket is the model's raw link to a Linux netdev: an AF_PACKET socket bound to
// one interface, sending whole Ethernet frames and receiving the frames the interface
// receives (not the ones it sends), so that a model port can be bridged to a veth and talk
// to real peers. The syscalls stay here, behind Open, Send, Recv and Close.
//
// A frame a peer's stack sent with checksum offload (a veth offers it by default) reaches
// the socket as the kernel holds it: CHECKSUM_PARTIAL, its TCP or UDP checksum field only
// the pseudo-header's sum, to be finished by a NIC that never comes. A cable carries
// finished frames, so Recv finishes such checksums (Complete), told which frames and where
// by the virtio-net header that PACKET_VNET_HDR puts before each frame (packet(7);
// include/uapi/linux/virtio_net.h: flags VIRTIO_NET_HDR_F_NEEDS_CSUM, csum_start from the
// frame's first byte, csum_offset from csum_start; net/packet/af_packet.c packet_rcv_vnet).
package afpacket

import (
	"encoding/binary"
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
	// The virtio-net header before each received frame says which frames need their
	// checksum finished; with it on, each sent frame must start with one too (Send's is
	// all zeros: a finished frame, no segmentation).
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VNET_HDR, 1); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("afpacket: PACKET_VNET_HDR on %s: %w", ifname, err)
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
	var hdr [vnetHdrLen]byte
	for try := 0; ; try++ {
		_, err := unix.Writev(fd, [][]byte{hdr[:], frame})
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
// (PACKET_OUTGOING) are skipped, so a bridged port does not hear itself. A frame whose
// checksum the sender left to offload comes with it finished (Complete).
func (s *Socket) Recv(buf []byte, timeout time.Duration) (int, error) {
	n, _, err := s.RecvGSO(buf, timeout)
	return n, err
}

// RecvGSO is Recv for a caller that segments: mss is the segment size of a frame the peer's
// stack handed over whole for the NIC to cut (a TCP or UDP GSO frame: virtio-net gso_type
// TCPV4, TCPV6 or UDP_L4, gso_size), 0 for an ordinary frame. A veth passes such frames on
// as they are when its TSO or GSO is on, its default; a cable carries only the segments.
func (s *Socket) RecvGSO(buf []byte, timeout time.Duration) (n, mss int, err error) {
	deadline := time.Now().Add(timeout)
	var hdr [vnetHdrLen]byte
	for {
		fd, err := s.get()
		if err != nil {
			return 0, 0, err
		}
		wait := min(time.Until(deadline), 100*time.Millisecond)
		if wait <= 0 {
			return 0, 0, nil
		}
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		ready, err := unix.Poll(pfd, int(wait/time.Millisecond)+1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, 0, fmt.Errorf("afpacket: poll %s: %w", s.ifname, err)
		}
		if ready == 0 {
			continue
		}
		k, _, _, from, err := unix.RecvmsgBuffers(fd, [][]byte{hdr[:], buf}, nil, unix.MSG_DONTWAIT)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, 0, fmt.Errorf("afpacket: receive on %s: %w", s.ifname, err)
		}
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
			continue
		}
		if k < vnetHdrLen {
			continue // no frame behind the header: nothing a cable could carry
		}
		k -= vnetHdrLen
		k = min(k, len(buf))
		if hdr[0]&vnetNeedsCsum != 0 {
			Complete(buf[:k], int(binary.NativeEndian.Uint16(hdr[6:])), int(binary.NativeEndian.Uint16(hdr[8:])))
		}
		switch hdr[1] &^ vnetGSOECN {
		case vnetGSOTCPv4, vnetGSOTCPv6, vnetGSOUDPL4:
			mss = int(binary.NativeEndian.Uint16(hdr[4:]))
		}
		return k, mss, nil
	}
}

// The virtio-net header without the buffer count (include/uapi/linux/virtio_net.h struct
// virtio_net_hdr, what PACKET_VNET_HDR uses): flags, gso_type, hdr_len, gso_size,
// csum_start, csum_offset; the 16-bit fields in the host's byte order for a packet socket
// (af_packet.c vio_le: legacy virtio, native endian).
const (
	vnetHdrLen    = 10
	vnetNeedsCsum = 1    // VIRTIO_NET_HDR_F_NEEDS_CSUM
	vnetGSOTCPv4  = 1    // VIRTIO_NET_HDR_GSO_TCPV4
	vnetGSOTCPv6  = 4    // VIRTIO_NET_HDR_GSO_TCPV6
	vnetGSOUDPL4  = 5    // VIRTIO_NET_HDR_GSO_UDP_L4
	vnetGSOECN    = 0x80 // VIRTIO_NET_HDR_GSO_ECN
)

// Complete finishes a checksum the sender left to offload, as a NIC does before the frame
// goes on the wire (Linux's software fallback skb_checksum_help, net/core/dev.c, does the
// same): the Internet checksum of frame[start:] (whose field at start+offset holds the
// pseudo-header's sum) is folded, complemented and stored at start+offset, with 0 sent as
// 0xffff (CSUM_MANGLED_0, since 0 means "no checksum" to UDP). A start or offset outside
// the frame leaves it as it is.
func Complete(frame []byte, start, offset int) {
	at := start + offset
	if start < 0 || offset < 0 || at+2 > len(frame) {
		return
	}
	var sum uint32
	b := frame[start:]
	for len(b) >= 2 {
		sum += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		sum += uint32(b[0]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	c := ^uint16(sum)
	if c == 0 {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(frame[at:], c)
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
