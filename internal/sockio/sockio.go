// Package sockio is the socket substrate of the socket engine: IPv4 and IPv6 UDP and TCP
// sockets on raw file descriptors with batched receive and send (recvmmsg/sendmmsg), UDP GRO and GSO,
// kernel drop counters (SO_RXQ_OVFL), receive timestamps (SO_TIMESTAMPNS) and buffer sizing.
// Buffers passed in may live anywhere the CPU can address (packet regions outside the Go heap
// included); nothing here allocates per packet.
package sockio

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Options are socket settings applied at creation.
type Options struct {
	RecvBuf    int  // SO_RCVBUF(FORCE) bytes; 0 = kernel default
	SendBuf    int  // SO_SNDBUF(FORCE) bytes; 0 = kernel default
	ReusePort  bool // SO_REUSEPORT (several sockets share a port; the kernel spreads flows)
	Timestamps bool // SO_TIMESTAMPNS: receive time of each datagram
	GRO        bool // UDP_GRO: receive coalesced datagrams (needs 64 KiB receive buffers)
	// PollTimeout bounds blocking receive and accept calls so that callers can check for
	// shutdown; 0 = 100 ms.
	PollTimeout time.Duration
}

func (o *Options) pollTimeout() time.Duration {
	if o.PollTimeout <= 0 {
		return 100 * time.Millisecond
	}
	return o.PollTimeout
}

// family is the address family of a socket for the given endpoints (invalid ones ignored):
// AF_INET6 when one is an IPv6 address, AF_INET otherwise. An IPv4 address with an IPv6 one
// is an error (the socket would need v4-mapped addresses, which the engine does not use).
func family(aps ...netip.AddrPort) (int, error) {
	f := 0
	for _, ap := range aps {
		if !ap.IsValid() {
			continue
		}
		g := unix.AF_INET
		if a := ap.Addr().Unmap(); a.Is6() {
			g = unix.AF_INET6
		}
		if f != 0 && g != f {
			return 0, fmt.Errorf("sockio: %v and the other endpoint are of different IP versions", ap)
		}
		f = g
	}
	if f == 0 {
		f = unix.AF_INET
	}
	return f, nil
}

// sockaddr is ap for a socket of family fam.
func sockaddr(fam int, ap netip.AddrPort) (unix.Sockaddr, error) {
	a := ap.Addr().Unmap()
	switch {
	case fam == unix.AF_INET && a.Is4():
		return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: a.As4()}, nil
	case fam == unix.AF_INET6 && a.Is6():
		var zone uint32
		if z := ap.Addr().Zone(); z != "" {
			if ifi, err := net.InterfaceByName(z); err == nil {
				zone = uint32(ifi.Index)
			}
		}
		return &unix.SockaddrInet6{Port: int(ap.Port()), Addr: a.As16(), ZoneId: zone}, nil
	}
	return nil, fmt.Errorf("sockio: %v does not fit an %s socket", ap, famName(fam))
}

func famName(fam int) string {
	if fam == unix.AF_INET6 {
		return "IPv6"
	}
	return "IPv4"
}

func addrPort(sa unix.Sockaddr) netip.AddrPort {
	switch s := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(s.Addr), uint16(s.Port))
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(s.Addr), uint16(s.Port))
	}
	return netip.AddrPort{}
}

func setBuffers(fd int, o *Options) error {
	// The FORCE variants pass the sysctl caps (net.core.rmem_max) when we have CAP_NET_ADMIN;
	// otherwise fall back to the capped ones.
	if o.RecvBuf > 0 {
		if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, o.RecvBuf) != nil {
			if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, o.RecvBuf); err != nil {
				return fmt.Errorf("SO_RCVBUF %d: %w", o.RecvBuf, err)
			}
		}
	}
	if o.SendBuf > 0 {
		if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, o.SendBuf) != nil {
			if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, o.SendBuf); err != nil {
				return fmt.Errorf("SO_SNDBUF %d: %w", o.SendBuf, err)
			}
		}
	}
	return nil
}

func setTimeout(fd int, d time.Duration) error {
	tv := unix.NsecToTimeval(d.Nanoseconds())
	return unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
}

// sock is what UDP and TCP sockets share.
type sock struct {
	fd int
}

// FD is the file descriptor.
func (s *sock) FD() int { return s.fd }

// Close closes the socket.
func (s *sock) Close() error {
	if s.fd < 0 {
		return nil
	}
	err := unix.Close(s.fd)
	s.fd = -1
	return err
}

// LocalAddr is the bound address.
func (s *sock) LocalAddr() netip.AddrPort {
	sa, err := unix.Getsockname(s.fd)
	if err != nil {
		return netip.AddrPort{}
	}
	return addrPort(sa)
}

// Setsockopt sets a raw socket option (the application passes the option's bytes).
func (s *sock) Setsockopt(level, opt int, val []byte) error {
	return unix.SetsockoptString(s.fd, level, opt, string(val))
}

// SockoptInt reads an integer socket option.
func (s *sock) SockoptInt(level, opt int) (int, error) {
	return unix.GetsockoptInt(s.fd, level, opt)
}

// Drops is the kernel's count of packets dropped on this socket (sk_drops, reported by
// SO_MEMINFO at index SK_MEMINFO_DROPS: linux include/uapi/linux/sock_diag.h).
func (s *sock) Drops() (uint32, error) {
	const skMeminfoDrops = 8
	var mi [16]uint32
	l := uint32(unsafe.Sizeof(mi))
	_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(s.fd), unix.SOL_SOCKET, unix.SO_MEMINFO,
		uintptr(unsafe.Pointer(&mi[0])), uintptr(unsafe.Pointer(&l)), 0)
	if errno != 0 {
		return 0, fmt.Errorf("SO_MEMINFO: %w", errno)
	}
	if l < (skMeminfoDrops+1)*4 {
		return 0, fmt.Errorf("SO_MEMINFO: short answer of %d bytes", l)
	}
	return mi[skMeminfoDrops], nil
}

// Wait blocks until the socket is readable or d passes, and reports whether it is readable.
func (s *sock) Wait(d time.Duration) (bool, error) {
	ts := unix.NsecToTimespec(max(d.Nanoseconds(), 0))
	fds := []unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Ppoll(fds, &ts, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return n > 0, err
	}
}

// temporary reports whether err only means "try again".
func temporary(err error) bool {
	return errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR)
}
