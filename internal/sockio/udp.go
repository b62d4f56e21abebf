package sockio

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// MaxGSOSegments is the kernel's limit on segments per UDP GSO send (UDP_MAX_SEGMENTS in
// linux include/linux/udp.h).
const MaxGSOSegments = 64

// MaxUDPPayload is the largest IPv4 UDP payload.
const MaxUDPPayload = 65507

// UDP is an IPv4 or IPv6 UDP socket.
type UDP struct {
	sock
	opt Options
	gro bool
	fam int // AF_INET or AF_INET6
}

// ListenUDP opens a UDP socket bound to local (port 0 = any) and, when remote is valid,
// connected to it. The socket is blocking; Recv calls are bounded by Options.PollTimeout.
func ListenUDP(local, remote netip.AddrPort, o Options) (*UDP, error) {
	fam, err := family(local, remote)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Socket(fam, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("udp socket: %w", err)
	}
	u := &UDP{sock: sock{fd: fd}, opt: o, fam: fam}
	fail := func(what string, err error) (*UDP, error) {
		unix.Close(fd)
		return nil, fmt.Errorf("udp %s: %w", what, err)
	}
	// No SO_REUSEADDR: on UDP it lets a second socket bind the same port and silently take
	// part of the traffic; a port already in use must fail loudly instead.
	if o.ReusePort {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
			return fail("SO_REUSEPORT", err)
		}
	}
	if err := setBuffers(fd, &o); err != nil {
		return fail("buffers", err)
	}
	// Kernel drops for a full receive buffer are reported with every datagram, so the engine
	// can account for every packet.
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RXQ_OVFL, 1); err != nil {
		return fail("SO_RXQ_OVFL", err)
	}
	if o.Timestamps {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
			return fail("SO_TIMESTAMPNS", err)
		}
	}
	if o.GRO {
		// Older kernels lack UDP_GRO: run without it.
		u.gro = unix.SetsockoptInt(fd, unix.SOL_UDP, unix.UDP_GRO, 1) == nil
	}
	if err := setTimeout(fd, o.pollTimeout()); err != nil {
		return fail("SO_RCVTIMEO", err)
	}
	if local.IsValid() {
		sa, err := sockaddr(fam, local)
		if err != nil {
			return fail("bind", err)
		}
		if err := unix.Bind(fd, sa); err != nil {
			return fail(fmt.Sprintf("bind %v", local), err)
		}
	}
	if remote.IsValid() {
		if err := u.Connect(remote); err != nil {
			unix.Close(fd)
			return nil, err
		}
	}
	return u, nil
}

// GRO reports whether receive coalescing is on.
func (u *UDP) GRO() bool { return u.gro }

// Connect sets the default destination (and the only accepted source).
func (u *UDP) Connect(remote netip.AddrPort) error {
	sa, err := sockaddr(u.fam, remote)
	if err != nil {
		return err
	}
	if err := unix.Connect(u.fd, sa); err != nil {
		return fmt.Errorf("udp connect %v: %w", remote, err)
	}
	return nil
}

// ctrlSpace holds the control messages one datagram can carry: a timestamp, the GRO segment
// size and the drop counter.
const ctrlSpace = 128

// RecvMsg is one datagram slot of a receive batch.
type RecvMsg struct {
	Buf   []byte         // where to receive (set by the caller before Recv)
	N     int            // bytes received
	GSO   int            // with GRO: size of each coalesced datagram (0 = one datagram)
	From  netip.AddrPort // sender
	Stamp int64          // receive time, ns since the Unix epoch (0 = none)
	Trunc bool           // the datagram was larger than Buf and was cut
}

// RecvBatch is reusable receive state for up to Cap datagrams per call.
type RecvBatch struct {
	Msgs  []RecvMsg
	hdrs  []unix.Mmsghdr
	iovs  []unix.Iovec
	names []unix.RawSockaddrInet6 // room for either family's address
	ctrl  []byte
	// Overflow is the latest value of the kernel's cumulative drop counter for the socket.
	Overflow    uint32
	HasOverflow bool
}

// NewRecvBatch prepares a batch of n slots.
func NewRecvBatch(n int) *RecvBatch {
	return &RecvBatch{
		Msgs:  make([]RecvMsg, n),
		hdrs:  make([]unix.Mmsghdr, n),
		iovs:  make([]unix.Iovec, n),
		names: make([]unix.RawSockaddrInet6, n),
		ctrl:  make([]byte, n*ctrlSpace),
	}
}

// Recv receives up to k datagrams into b.Msgs[:k] (each slot's Buf set by the caller). With
// wait it blocks until at least one arrives or the poll timeout passes; without it returns at
// once. It returns the number received (0 on timeout or when nothing is queued).
func (u *UDP) Recv(b *RecvBatch, k int, wait bool) (int, error) {
	k = min(k, len(b.Msgs))
	if k <= 0 {
		return 0, nil
	}
	for i := 0; i < k; i++ {
		m := &b.Msgs[i]
		iov := &b.iovs[i]
		iov.Base = unsafe.SliceData(m.Buf)
		iov.SetLen(len(m.Buf))
		h := &b.hdrs[i].Hdr
		h.Name = (*byte)(unsafe.Pointer(&b.names[i]))
		h.Namelen = unix.SizeofSockaddrInet6
		h.Iov = iov
		h.SetIovlen(1)
		h.Control = &b.ctrl[i*ctrlSpace]
		h.SetControllen(ctrlSpace)
		h.Flags = 0
		b.hdrs[i].Len = 0
	}
	flags := uintptr(unix.MSG_WAITFORONE)
	if !wait {
		flags = unix.MSG_DONTWAIT
	}
	var n uintptr
	var errno unix.Errno
	for {
		n, _, errno = unix.Syscall6(unix.SYS_RECVMMSG, uintptr(u.fd), uintptr(unsafe.Pointer(&b.hdrs[0])), uintptr(k), flags, 0, 0)
		if errno != unix.EINTR {
			break
		}
	}
	if errno != 0 {
		if temporary(errno) {
			return 0, nil
		}
		return 0, fmt.Errorf("recvmmsg: %w", errno)
	}
	for i := 0; i < int(n); i++ {
		m := &b.Msgs[i]
		h := &b.hdrs[i]
		m.N = int(h.Len)
		m.Trunc = h.Hdr.Flags&unix.MSG_TRUNC != 0
		m.GSO, m.Stamp = 0, 0
		rs := &b.names[i]
		port := binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&rs.Port))[:])
		if rs.Family == unix.AF_INET6 {
			m.From = netip.AddrPortFrom(netip.AddrFrom16(rs.Addr), port)
		} else {
			r4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(rs))
			m.From = netip.AddrPortFrom(netip.AddrFrom4(r4.Addr), port)
		}
		b.parseCtrl(m, b.ctrl[i*ctrlSpace:i*ctrlSpace+int(h.Hdr.Controllen)])
	}
	return int(n), nil
}

// parseCtrl walks the control messages without allocating (cmsg layout: linux
// include/linux/socket.h, CMSG_ALIGN to the size of a long).
func (b *RecvBatch) parseCtrl(m *RecvMsg, c []byte) {
	const hdr = unix.SizeofCmsghdr
	for len(c) >= hdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&c[0]))
		l := int(h.Len)
		if l < hdr || l > len(c) {
			return
		}
		data := c[hdr:l]
		switch {
		case h.Level == unix.SOL_SOCKET && h.Type == unix.SO_RXQ_OVFL && len(data) >= 4:
			b.Overflow = *(*uint32)(unsafe.Pointer(&data[0]))
			b.HasOverflow = true
		case h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS && len(data) >= 16:
			ts := (*unix.Timespec)(unsafe.Pointer(&data[0]))
			m.Stamp = ts.Nano()
		case h.Level == unix.SOL_UDP && h.Type == unix.UDP_GRO && len(data) >= 2:
			// The kernel writes the segment size as an int (udp_cmsg_recv).
			m.GSO = int(*(*int32)(unsafe.Pointer(&data[0])))
		}
		next := (l + unix.SizeofPtr - 1) &^ (unix.SizeofPtr - 1)
		if next > len(c) {
			return
		}
		c = c[next:]
	}
}

// SendMsg is one datagram — or, with GSO > 0, several datagrams of GSO bytes each (the last
// may be shorter) built from the concatenation of Bufs.
type SendMsg struct {
	Bufs [][]byte
	GSO  int
	To   netip.AddrPort // zero for a connected socket
}

// SendBatch is reusable send state.
type SendBatch struct {
	hdrs  []unix.Mmsghdr
	iovs  []unix.Iovec
	names []unix.RawSockaddrInet6
	ctrl  []byte
}

// NewSendBatch prepares room for up to msgs messages with up to iovs buffers in all.
func NewSendBatch(msgs, iovs int) *SendBatch {
	return &SendBatch{
		hdrs:  make([]unix.Mmsghdr, msgs),
		iovs:  make([]unix.Iovec, iovs),
		names: make([]unix.RawSockaddrInet6, msgs),
		ctrl:  make([]byte, msgs*unix.CmsgSpace(2)),
	}
}

// Send transmits msgs with as few sendmmsg calls as the batch allows and returns how many
// messages the kernel accepted. It stops at the first error.
func (u *UDP) Send(b *SendBatch, msgs []SendMsg) (int, error) {
	sent := 0
	for sent < len(msgs) {
		nm, ni := 0, 0
		for sent+nm < len(msgs) && nm < len(b.hdrs) {
			m := &msgs[sent+nm]
			if ni+len(m.Bufs) > len(b.iovs) {
				break
			}
			h := &b.hdrs[nm].Hdr
			*h = unix.Msghdr{}
			for j, buf := range m.Bufs {
				iov := &b.iovs[ni+j]
				iov.Base = unsafe.SliceData(buf)
				iov.SetLen(len(buf))
			}
			h.Iov = &b.iovs[ni]
			h.SetIovlen(len(m.Bufs))
			ni += len(m.Bufs)
			if m.To.IsValid() {
				rs := &b.names[nm]
				*rs = unix.RawSockaddrInet6{}
				binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&rs.Port))[:], m.To.Port())
				if a := m.To.Addr().Unmap(); a.Is6() {
					rs.Family = unix.AF_INET6
					rs.Addr = a.As16()
					h.Namelen = unix.SizeofSockaddrInet6
				} else {
					r4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(rs))
					r4.Family = unix.AF_INET
					r4.Addr = a.As4()
					h.Namelen = unix.SizeofSockaddrInet4
				}
				h.Name = (*byte)(unsafe.Pointer(rs))
			}
			if m.GSO > 0 {
				// UDP_SEGMENT: the kernel splits the buffer into GSO-sized datagrams
				// (linux net/ipv4/udp.c, udp_send_skb); payload per cmsg is a u16.
				space := unix.CmsgSpace(2)
				c := b.ctrl[nm*space : (nm+1)*space]
				ch := (*unix.Cmsghdr)(unsafe.Pointer(&c[0]))
				ch.Level = unix.SOL_UDP
				ch.Type = unix.UDP_SEGMENT
				ch.SetLen(unix.CmsgLen(2))
				*(*uint16)(unsafe.Pointer(&c[unix.SizeofCmsghdr])) = uint16(m.GSO)
				h.Control = &c[0]
				h.SetControllen(space)
			}
			nm++
		}
		if nm == 0 {
			return sent, fmt.Errorf("sendmmsg: message %d has %d buffers, more than the batch's %d", sent, len(msgs[sent].Bufs), len(b.iovs))
		}
		n, _, errno := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(u.fd), uintptr(unsafe.Pointer(&b.hdrs[0])), uintptr(nm), 0, 0, 0)
		if errno != 0 {
			if errno == unix.EINTR {
				continue
			}
			return sent, fmt.Errorf("sendmmsg: %w", errno)
		}
		sent += int(n)
	}
	return sent, nil
}
