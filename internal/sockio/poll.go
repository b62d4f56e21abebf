package sockio

import (
	"errors"
	"fmt"
	"io"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Poller is an epoll instance: one thread waits on many sockets, so serving a connection
// costs a file descriptor and a table entry, not a thread. Readiness is level-triggered: a
// socket with bytes left stays ready, so a reader may stop early (for fairness, or for want
// of buffers) without losing a wakeup.
type Poller struct {
	fd       int
	evs      []unix.EpollEvent
	noPwait2 bool // epoll_pwait2 was refused (ENOSYS, EPERM): epoll_wait from then on
}

// PollEvent is one ready socket, by the token it was added with.
type PollEvent struct {
	Token uint64
	// Hangup: the peer closed or the socket failed; reading tells which (EOF or an error).
	Hangup bool
}

// NewPoller creates an epoll instance reporting up to batch events per Wait.
func NewPoller(batch int) (*Poller, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	return &Poller{fd: fd, evs: make([]unix.EpollEvent, max(batch, 1))}, nil
}

// Add watches fd for input, reporting it with token.
func (p *Poller) Add(fd int, token uint64) error {
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP}
	// The 64-bit epoll_data is Fd and Pad in x/sys's layout; keep the token there whole.
	*(*uint64)(unsafe.Pointer(&ev.Fd)) = token
	if err := unix.EpollCtl(p.fd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return fmt.Errorf("epoll_ctl add: %w", err)
	}
	return nil
}

// Remove stops watching fd.
func (p *Poller) Remove(fd int) error {
	if err := unix.EpollCtl(p.fd, unix.EPOLL_CTL_DEL, fd, nil); err != nil {
		return fmt.Errorf("epoll_ctl del: %w", err)
	}
	return nil
}

// Wait blocks until a watched socket is ready or d passes, and fills out with the ready ones.
// d is kept to the microsecond where the kernel has epoll_pwait2 (Linux 5.11) and lets the
// process call it; otherwise it is rounded up to the millisecond.
func (p *Poller) Wait(out []PollEvent, d time.Duration) (int, error) {
	k := min(len(out), len(p.evs))
	for {
		n, err := p.wait(k, d)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, err
		}
		for i := 0; i < n; i++ {
			e := &p.evs[i]
			out[i] = PollEvent{Token: *(*uint64)(unsafe.Pointer(&e.Fd)), Hangup: e.Events&(unix.EPOLLHUP|unix.EPOLLERR|unix.EPOLLRDHUP) != 0}
		}
		return n, nil
	}
}

// wait is one epoll_pwait2, or epoll_wait once the kernel has refused epoll_pwait2.
func (p *Poller) wait(k int, d time.Duration) (int, error) {
	if !p.noPwait2 {
		ts := unix.NsecToTimespec(int64(max(d, 0)))
		n, _, errno := unix.Syscall6(unix.SYS_EPOLL_PWAIT2, uintptr(p.fd), uintptr(unsafe.Pointer(&p.evs[0])), uintptr(k), uintptr(unsafe.Pointer(&ts)), 0, 0)
		switch errno {
		case 0:
			return int(n), nil
		case unix.ENOSYS, unix.EPERM:
			// Too old a kernel, or a seccomp filter that does not know the call (container
			// runtimes' default profiles answer EPERM to system calls they do not list).
			p.noPwait2 = true
		default:
			return 0, fmt.Errorf("epoll_pwait2: %w", errno)
		}
	}
	ms := int(d / time.Millisecond)
	if d > 0 && time.Duration(ms)*time.Millisecond < d {
		ms++
	}
	n, err := unix.EpollWait(p.fd, p.evs[:k], ms)
	if err != nil {
		return 0, fmt.Errorf("epoll_wait: %w", err)
	}
	return n, nil
}

// Close releases the epoll instance.
func (p *Poller) Close() error {
	if p.fd < 0 {
		return nil
	}
	err := unix.Close(p.fd)
	p.fd = -1
	return err
}

// SetRecvLowat sets SO_RCVLOWAT: the socket reports readable only once n bytes are queued,
// or the peer closed, or the receive window has all but closed (linux net/ipv4/tcp.c,
// tcp_set_rcvlowat; include/net/tcp.h, tcp_epollin_ready), so the kernel wakes the reader
// once per n bytes instead of once per segment. A read without waiting still returns whatever
// is queued. The kernel caps n at half the largest receive buffer.
func (c *TCPConn) SetRecvLowat(n int) error {
	if err := unix.SetsockoptInt(c.fd, unix.SOL_SOCKET, unix.SO_RCVLOWAT, max(n, 1)); err != nil {
		return fmt.Errorf("SO_RCVLOWAT %d: %w", n, err)
	}
	return nil
}

// SetNonblock makes calls on the socket return at once instead of waiting (for listeners
// served from a Poller: Accept then reports ErrTimeout when no connection is pending).
func (s *sock) SetNonblock() error { return unix.SetNonblock(s.fd, true) }

// ReadNow reads into the slices of iov in order (a scatter read) without waiting
// (MSG_DONTWAIT): ErrTimeout when nothing is there, io.EOF when the peer closed. The socket
// itself stays blocking, so writes on it still block for flow control. It lets a framed
// reader put the rest of a frame straight into its packet buffer, the frames expected after
// it into theirs, and whatever follows into a staging buffer, with one call. Calls must not
// overlap (the iovec array is the connection's own, reused); writes may run beside them.
func (c *TCPConn) ReadNow(iov [][]byte) (int, error) {
	if len(iov) > maxReadIov {
		return 0, fmt.Errorf("tcp recvmsg: %d slices, at most %d", len(iov), maxReadIov)
	}
	vs := c.riovs[:0]
	for _, p := range iov {
		if len(p) > 0 {
			var v unix.Iovec
			v.Base = unsafe.SliceData(p)
			v.SetLen(len(p))
			vs = append(vs, v)
		}
	}
	c.riovs = vs
	if len(vs) == 0 {
		return 0, nil
	}
	msg := unix.Msghdr{Iov: &vs[0]}
	msg.SetIovlen(len(vs))
	for {
		n, _, errno := unix.Syscall(unix.SYS_RECVMSG, uintptr(c.fd), uintptr(unsafe.Pointer(&msg)), unix.MSG_DONTWAIT)
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
		return 0, fmt.Errorf("tcp recvmsg: %w", errno)
	}
}

// maxReadIov is the most slices one ReadNow passes (UIO_MAXIOV is 1024: linux
// include/uapi/linux/uio.h).
const maxReadIov = 1024
