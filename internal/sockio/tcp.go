package sockio

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrTimeout is returned by Accept and Read when the poll timeout passed with nothing to do.
var ErrTimeout = errors.New("sockio: timeout")

// TCPListener is a listening IPv4 or IPv6 TCP socket.
type TCPListener struct {
	sock
	opt Options
}

// ListenTCP binds and listens on local with the given backlog.
func ListenTCP(local netip.AddrPort, backlog int, o Options) (*TCPListener, error) {
	fam, err := family(local)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Socket(fam, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("tcp socket: %w", err)
	}
	fail := func(what string, err error) (*TCPListener, error) {
		unix.Close(fd)
		return nil, fmt.Errorf("tcp %s: %w", what, err)
	}
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	// Buffer sizes must be set before listen to apply to accepted sockets' window scaling.
	if err := setBuffers(fd, &o); err != nil {
		return fail("buffers", err)
	}
	if err := setTimeout(fd, o.pollTimeout()); err != nil {
		return fail("SO_RCVTIMEO", err)
	}
	sa, err := sockaddr(fam, local)
	if err != nil {
		return fail("bind", err)
	}
	if err := unix.Bind(fd, sa); err != nil {
		return fail(fmt.Sprintf("bind %v", local), err)
	}
	if err := unix.Listen(fd, backlog); err != nil {
		return fail("listen", err)
	}
	return &TCPListener{sock: sock{fd: fd}, opt: o}, nil
}

// Accept waits up to the poll timeout for a connection; ErrTimeout when none came.
func (l *TCPListener) Accept() (*TCPConn, netip.AddrPort, error) {
	for {
		nfd, sa, err := unix.Accept4(l.fd, unix.SOCK_CLOEXEC)
		if err == nil {
			c, err := newConn(nfd, &l.opt)
			return c, addrPort(sa), err
		}
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.ECONNABORTED) {
			continue
		}
		if errors.Is(err, unix.EAGAIN) {
			return nil, netip.AddrPort{}, ErrTimeout
		}
		return nil, netip.AddrPort{}, fmt.Errorf("accept: %w", err)
	}
}

// TCPConn is a connected IPv4 or IPv6 TCP socket.
type TCPConn struct {
	sock
	iovs  []unix.Iovec // Writev's
	riovs []unix.Iovec // ReadNow's (the receive worker's: writes run in other threads)
}

func newConn(fd int, o *Options) (*TCPConn, error) {
	c := &TCPConn{sock: sock{fd: fd}}
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
		c.Close()
		return nil, fmt.Errorf("TCP_NODELAY: %w", err)
	}
	if err := setBuffers(fd, o); err != nil {
		c.Close()
		return nil, err
	}
	if err := setTimeout(fd, o.pollTimeout()); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// DialTCP connects to remote (from local when valid) within timeout.
func DialTCP(local, remote netip.AddrPort, timeout time.Duration, o Options) (*TCPConn, error) {
	fam, err := family(local, remote)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Socket(fam, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("tcp socket: %w", err)
	}
	fail := func(err error) (*TCPConn, error) {
		unix.Close(fd)
		return nil, fmt.Errorf("tcp connect %v: %w", remote, err)
	}
	if err := setBuffers(fd, &o); err != nil {
		return fail(err)
	}
	if local.IsValid() {
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
		sa, err := sockaddr(fam, local)
		if err != nil {
			return fail(err)
		}
		if err := unix.Bind(fd, sa); err != nil {
			return fail(err)
		}
	}
	sa, err := sockaddr(fam, remote)
	if err != nil {
		return fail(err)
	}
	err = unix.Connect(fd, sa)
	if err != nil && !errors.Is(err, unix.EINPROGRESS) {
		return fail(err)
	}
	if err != nil {
		ts := unix.NsecToTimespec(timeout.Nanoseconds())
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
		n, perr := unix.Ppoll(fds, &ts, nil)
		if perr != nil {
			return fail(perr)
		}
		if n == 0 {
			return fail(ErrTimeout)
		}
		soerr, gerr := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
		if gerr != nil {
			return fail(gerr)
		}
		if soerr != 0 {
			return fail(unix.Errno(soerr))
		}
	}
	// Back to blocking: reads are bounded by SO_RCVTIMEO, writes block for flow control.
	if err := unix.SetNonblock(fd, false); err != nil {
		return fail(err)
	}
	return newConn(fd, &o)
}

// Read reads into p, waiting up to the poll timeout; ErrTimeout when nothing came, io.EOF when
// the peer closed.
func (c *TCPConn) Read(p []byte) (int, error) {
	for {
		n, err := unix.Read(c.fd, p)
		switch {
		case err == nil && n == 0 && len(p) > 0:
			return 0, io.EOF
		case err == nil:
			return n, nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EAGAIN):
			return 0, ErrTimeout
		}
		return 0, fmt.Errorf("tcp read: %w", err)
	}
}

// Readv reads into a then b (scatter), waiting up to the poll timeout: ErrTimeout when
// nothing came, io.EOF when the peer closed. It lets a framed reader put the rest of a frame
// straight into its packet buffer and whatever follows into a staging buffer, with one call.
func (c *TCPConn) Readv(a, b []byte) (int, error) {
	var iov [2]unix.Iovec
	k := 0
	for _, p := range [2][]byte{a, b} {
		if len(p) > 0 {
			iov[k].Base = unsafe.SliceData(p)
			iov[k].SetLen(len(p))
			k++
		}
	}
	if k == 0 {
		return 0, nil
	}
	for {
		n, _, errno := unix.Syscall(unix.SYS_READV, uintptr(c.fd), uintptr(unsafe.Pointer(&iov[0])), uintptr(k))
		switch {
		case errno == 0 && n == 0:
			return 0, io.EOF
		case errno == 0:
			return int(n), nil
		case errno == unix.EINTR:
			continue
		case errno == unix.EAGAIN:
			return 0, ErrTimeout
		}
		return 0, fmt.Errorf("tcp readv: %w", errno)
	}
}

// ReadFull reads exactly len(p) bytes, retrying timeouts while keep() is true.
func (c *TCPConn) ReadFull(p []byte, keep func() bool) error {
	for len(p) > 0 {
		n, err := c.Read(p)
		if err == ErrTimeout {
			if !keep() {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

// Writev writes every byte of bufs, handling partial writes; it returns the bytes written.
func (c *TCPConn) Writev(bufs [][]byte) (int, error) {
	if cap(c.iovs) < len(bufs) {
		c.iovs = make([]unix.Iovec, len(bufs))
	}
	iovs := c.iovs[:0]
	for _, b := range bufs {
		if len(b) == 0 {
			continue
		}
		var v unix.Iovec
		v.Base = unsafe.SliceData(b)
		v.SetLen(len(b))
		iovs = append(iovs, v)
	}
	total := 0
	const maxIov = 1024 // IOV_MAX
	for len(iovs) > 0 {
		k := min(len(iovs), maxIov)
		n, _, errno := unix.Syscall(unix.SYS_WRITEV, uintptr(c.fd), uintptr(unsafe.Pointer(&iovs[0])), uintptr(k))
		if errno != 0 {
			if errno == unix.EINTR || errno == unix.EAGAIN {
				continue
			}
			return total, fmt.Errorf("tcp writev: %w", errno)
		}
		total += int(n)
		// Skip fully written iovecs and trim a partially written one.
		left := int(n)
		for left > 0 {
			l := int(iovs[0].Len)
			if left >= l {
				left -= l
				iovs = iovs[1:]
				continue
			}
			iovs[0].Base = (*byte)(unsafe.Add(unsafe.Pointer(iovs[0].Base), left))
			iovs[0].SetLen(l - left)
			left = 0
		}
	}
	return total, nil
}

// Shutdown closes both directions (wakes a reader blocked on the socket).
func (c *TCPConn) Shutdown() error { return unix.Shutdown(c.fd, unix.SHUT_RDWR) }

// RemoteAddr is the peer's address.
func (c *TCPConn) RemoteAddr() netip.AddrPort {
	sa, err := unix.Getpeername(c.fd)
	if err != nil {
		return netip.AddrPort{}
	}
	return addrPort(sa)
}
