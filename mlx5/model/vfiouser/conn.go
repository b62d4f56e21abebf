package vfiouser

import (
	"errors"
	"fmt"
	"io"
	"net"

	"golang.org/x/sys/unix"
)

// conn is the session's socket: whole messages in, whole messages out, file descriptors
// taken from SCM_RIGHTS ancillary data.
type conn struct {
	c *net.UnixConn
}

// errFatal marks an error after which the stream cannot be trusted (a short header, a read
// error, the peer gone): the session ends.
type fatalError struct{ err error }

func (e *fatalError) Error() string { return e.err.Error() }
func (e *fatalError) Unwrap() error { return e.err }

// readHeader reads exactly one header and the descriptors that came with it. The
// descriptors travel with the first byte of the sender's sendmsg, so they arrive with the
// header (QEMU's vfio_user_recv_one reads them the same way); a stream socket never merges
// two messages' descriptors into one read.
func (c *conn) readHeader(buf []byte) (Header, []int, error) {
	var fds []int
	oob := make([]byte, unix.CmsgSpace(maxMsgFDs*4))
	n := 0
	for n < HeaderSize {
		m, oobn, flags, _, err := c.c.ReadMsgUnix(buf[n:HeaderSize], oob)
		if oobn > 0 {
			got, perr := parseRights(oob[:oobn])
			fds = append(fds, got...)
			if perr != nil {
				closeFDs(fds)
				return Header{}, nil, &fatalError{perr}
			}
		}
		if flags&unix.MSG_CTRUNC != 0 {
			closeFDs(fds)
			return Header{}, nil, &fatalError{fmt.Errorf("message came with more than %d file descriptors (ancillary data truncated)", maxMsgFDs)}
		}
		n += m
		if err != nil {
			closeFDs(fds)
			if n == 0 && errors.Is(err, io.EOF) {
				return Header{}, nil, &fatalError{io.EOF}
			}
			if errors.Is(err, io.EOF) {
				return Header{}, nil, &fatalError{fmt.Errorf("truncated header: the client closed the socket after %d of %d bytes", n, HeaderSize)}
			}
			return Header{}, nil, &fatalError{err}
		}
		if m == 0 {
			closeFDs(fds)
			return Header{}, nil, &fatalError{fmt.Errorf("truncated header: %d of %d bytes", n, HeaderSize)}
		}
	}
	h, err := ParseHeader(buf[:HeaderSize])
	if err != nil && h.Size < HeaderSize {
		closeFDs(fds)
		return h, nil, &fatalError{err} // no way to find the next message
	}
	return h, fds, err
}

func parseRights(oob []byte) ([]int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("ancillary data: %w", err)
	}
	var fds []int
	for _, m := range msgs {
		if m.Header.Level != unix.SOL_SOCKET || m.Header.Type != unix.SCM_RIGHTS {
			continue
		}
		got, err := unix.ParseUnixRights(&m)
		if err != nil {
			closeFDs(fds)
			return nil, fmt.Errorf("SCM_RIGHTS: %w", err)
		}
		fds = append(fds, got...)
	}
	return fds, nil
}

// readFull reads the payload.
func (c *conn) readFull(p []byte) error {
	if _, err := io.ReadFull(c.c, p); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return &fatalError{fmt.Errorf("truncated message: the client closed the socket inside a %d-byte payload", len(p))}
		}
		return &fatalError{err}
	}
	return nil
}

// discard skips n payload bytes of a message the server refused to take in.
func (c *conn) discard(n int64) error {
	if got, err := io.CopyN(io.Discard, c.c, n); err != nil {
		if errors.Is(err, io.EOF) {
			// Not a clean disconnect: the stream ended inside a message (io.EOF is kept
			// for the end of stream at a message boundary).
			return &fatalError{fmt.Errorf("truncated message: the client closed the socket after %d bytes of a refused %d-byte payload", got, n)}
		}
		return &fatalError{fmt.Errorf("skipping a %d-byte payload: %w", n, err)}
	}
	return nil
}

func (c *conn) write(b []byte) error {
	if _, err := c.c.Write(b); err != nil {
		return &fatalError{err}
	}
	return nil
}

// socketpair returns two connected stream sockets as *net.UnixConn (tests, in-process
// clients).
func socketpair() (*net.UnixConn, *net.UnixConn, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	a, err := fdConn(fds[0])
	if err != nil {
		unix.Close(fds[1])
		return nil, nil, err
	}
	b, err := fdConn(fds[1])
	if err != nil {
		a.Close()
		return nil, nil, err
	}
	return a, b, nil
}

func fdConn(fd int) (*net.UnixConn, error) {
	f := newFile(fd, "vfio-user socket")
	defer f.Close() // FileConn dups it
	c, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, fmt.Errorf("socket: not a unix socket")
	}
	return uc, nil
}

// Pair returns the two ends of a connected unix stream socket: one for ServeConn, one for an
// in-process client (tests, vfiousertest).
func Pair() (server, client *net.UnixConn, err error) { return socketpair() }
