// Package vfiousertest is a small vfio-user client for tests: what QEMU's vfio-user-pci
// sends (hw/vfio-user/device.c, container.c, proxy.c), as typed calls, plus raw access for
// malformed messages. Guest memory is a memfd the client maps and passes with DMA_MAP, as
// QEMU passes a shared memory backend; interrupts are eventfds the client reads.
package vfiousertest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/daqiri-go/daqiri/mlx5/model/vfiouser"
	"golang.org/x/sys/unix"
)

var le = binary.NativeEndian

// Client is one vfio-user connection. Not safe for concurrent use.
type Client struct {
	c      *net.UnixConn
	nextID uint16
	mems   []*Mem
	efds   []*Eventfd
}

// New wraps a connected socket.
func New(c *net.UnixConn) *Client { return &Client{c: c} }

// Close closes the socket and every memfd and eventfd the client made.
func (c *Client) Close() error {
	err := c.c.Close()
	for _, m := range c.mems {
		m.close()
	}
	for _, e := range c.efds {
		e.Close()
	}
	c.mems, c.efds = nil, nil
	return err
}

// ReplyError is an error reply: the errno the server sent.
type ReplyError struct {
	Cmd   vfiouser.Command
	Errno syscall.Errno
}

func (e *ReplyError) Error() string { return fmt.Sprintf("%v: error reply: %v", e.Cmd, e.Errno) }

// Unwrap lets errors.Is match the errno.
func (e *ReplyError) Unwrap() error { return e.Errno }

// Send writes a message with the next id: command, flags, payload and descriptors.
func (c *Client) Send(cmd vfiouser.Command, flags uint32, payload []byte, fds ...int) (uint16, error) {
	id := c.nextID
	c.nextID++
	h := vfiouser.Header{ID: id, Command: cmd, Size: uint32(vfiouser.HeaderSize + len(payload)), Flags: flags}
	return id, c.SendRaw(append(h.Append(nil), payload...), fds...)
}

// SendRaw writes bytes as they are (one sendmsg carrying the descriptors).
func (c *Client) SendRaw(b []byte, fds ...int) error {
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	n, _, err := c.c.WriteMsgUnix(b, oob, nil)
	if err != nil {
		return err
	}
	if n != len(b) {
		_, err = c.c.Write(b[n:])
	}
	return err
}

// Recv reads one reply (bounded by a 10 s deadline, so a server that never answers fails
// the test instead of hanging it).
func (c *Client) Recv() (vfiouser.Header, []byte, error) {
	c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	defer c.c.SetReadDeadline(time.Time{})
	var hb [vfiouser.HeaderSize]byte
	if _, err := io.ReadFull(c.c, hb[:]); err != nil {
		return vfiouser.Header{}, nil, err
	}
	h, err := vfiouser.ParseHeader(hb[:])
	if err != nil {
		return h, nil, err
	}
	p := make([]byte, h.Size-vfiouser.HeaderSize)
	if _, err := io.ReadFull(c.c, p); err != nil {
		return h, nil, err
	}
	return h, p, nil
}

// Call sends a command and waits for its reply; an error reply is a *ReplyError.
func (c *Client) Call(cmd vfiouser.Command, payload []byte, fds ...int) ([]byte, error) {
	id, err := c.Send(cmd, 0, payload, fds...)
	if err != nil {
		return nil, err
	}
	h, p, err := c.Recv()
	if err != nil {
		return nil, fmt.Errorf("%v: %w", cmd, err)
	}
	if h.ID != id || h.Command != cmd || h.Flags&vfiouser.FlagTypeMask != vfiouser.TypeReply {
		return nil, fmt.Errorf("%v: reply id %d command %v flags %#x, want id %d", cmd, h.ID, h.Command, h.Flags, id)
	}
	if h.Flags&vfiouser.FlagError != 0 {
		return nil, &ReplyError{Cmd: cmd, Errno: syscall.Errno(h.Error)}
	}
	return p, nil
}

// Version negotiates as QEMU's vfio_user_validate_version does (version 0.0, its
// capabilities JSON) and returns the server's JSON (without the NUL).
func (c *Client) Version() (string, error) {
	caps := `{"capabilities":{"max_msg_fds":16,"max_data_xfer_size":1048576,"pgsizes":4096,"max_dma_maps":65535,"migration":{"pgsize":4096,"max_bitmap_size":268435456},"write_multiple":true}}`
	p := make([]byte, 4, 4+len(caps)+1)
	p = append(append(p, caps...), 0)
	r, err := c.Call(vfiouser.CmdVersion, p)
	if err != nil {
		return "", err
	}
	if len(r) < 5 || r[len(r)-1] != 0 {
		return "", fmt.Errorf("VERSION: reply of %d bytes without NUL-terminated data", len(r))
	}
	if maj, min := le.Uint16(r), le.Uint16(r[2:]); maj != 0 || min != 0 {
		return "", fmt.Errorf("VERSION: server version %d.%d", maj, min)
	}
	return string(r[4 : len(r)-1]), nil
}

// DeviceInfo is the GET_INFO reply.
type DeviceInfo struct{ Flags, NumRegions, NumIRQs uint32 }

// DeviceInfo asks for it.
func (c *Client) DeviceInfo() (DeviceInfo, error) {
	p := make([]byte, 16)
	le.PutUint32(p, 16)
	r, err := c.Call(vfiouser.CmdDeviceGetInfo, p)
	if err != nil {
		return DeviceInfo{}, err
	}
	if len(r) != 16 {
		return DeviceInfo{}, fmt.Errorf("GET_INFO: reply of %d bytes", len(r))
	}
	return DeviceInfo{le.Uint32(r[4:]), le.Uint32(r[8:]), le.Uint32(r[12:])}, nil
}

// RegionInfo is the GET_REGION_INFO reply.
type RegionInfo struct {
	Flags uint32
	Size  uint64
}

// RegionInfo asks for region index.
func (c *Client) RegionInfo(index uint32) (RegionInfo, error) {
	p := make([]byte, 32)
	le.PutUint32(p, 32)
	le.PutUint32(p[8:], index)
	r, err := c.Call(vfiouser.CmdDeviceGetRegionInfo, p)
	if err != nil {
		return RegionInfo{}, err
	}
	if len(r) != 32 || le.Uint32(r[8:]) != index {
		return RegionInfo{}, fmt.Errorf("GET_REGION_INFO: reply of %d bytes for index %d", len(r), le.Uint32(r[8:]))
	}
	return RegionInfo{Flags: le.Uint32(r[4:]), Size: le.Uint64(r[16:])}, nil
}

// IRQInfo asks for interrupt index: flags and count.
func (c *Client) IRQInfo(index uint32) (flags, count uint32, err error) {
	p := make([]byte, 16)
	le.PutUint32(p, 16)
	le.PutUint32(p[8:], index)
	r, err := c.Call(vfiouser.CmdDeviceGetIRQInfo, p)
	if err != nil {
		return 0, 0, err
	}
	if len(r) != 16 {
		return 0, 0, fmt.Errorf("GET_IRQ_INFO: reply of %d bytes", len(r))
	}
	return le.Uint32(r[4:]), le.Uint32(r[12:]), nil
}

// Read reads n bytes of region index at off.
func (c *Client) Read(index uint32, off uint64, n int) ([]byte, error) {
	p := make([]byte, 16)
	le.PutUint64(p, off)
	le.PutUint32(p[8:], index)
	le.PutUint32(p[12:], uint32(n))
	r, err := c.Call(vfiouser.CmdRegionRead, p)
	if err != nil {
		return nil, err
	}
	if len(r) != 16+n || le.Uint32(r[12:]) != uint32(n) {
		return nil, fmt.Errorf("REGION_READ: reply of %d bytes for %d", len(r), n)
	}
	return r[16:], nil
}

// Write writes data to region index at off and waits for the reply.
func (c *Client) Write(index uint32, off uint64, data []byte) error {
	_, err := c.Call(vfiouser.CmdRegionWrite, WritePayload(index, off, data))
	return err
}

// WritePosted writes without asking for a reply (QEMU's posted writes).
func (c *Client) WritePosted(index uint32, off uint64, data []byte) error {
	_, err := c.Send(vfiouser.CmdRegionWrite, vfiouser.FlagNoReply, WritePayload(index, off, data))
	return err
}

// WritePayload is a REGION_WRITE payload.
func WritePayload(index uint32, off uint64, data []byte) []byte {
	p := make([]byte, 16, 16+len(data))
	le.PutUint64(p, off)
	le.PutUint32(p[8:], index)
	le.PutUint32(p[12:], uint32(len(data)))
	return append(p, data...)
}

// Read32 and Write32 access a 32-bit register in the region's byte order as stored.
func (c *Client) Read32(index uint32, off uint64) (uint32, error) {
	b, err := c.Read(index, off, 4)
	if err != nil {
		return 0, err
	}
	return le.Uint32(b), nil
}

// Write32 is a 4-byte write of v in host order.
func (c *Client) Write32(index uint32, off uint64, v uint32) error {
	return c.Write(index, off, le.AppendUint32(nil, v))
}

// Reset sends DEVICE_RESET.
func (c *Client) Reset() error {
	_, err := c.Call(vfiouser.CmdDeviceReset, nil)
	return err
}

// Mem is client memory shared with the server: a memfd mapped here.
type Mem struct {
	FD  int
	B   []byte
	off uint64
}

func (m *Mem) close() {
	if m.B != nil {
		unix.Munmap(m.B)
		m.B = nil
	}
	if m.FD >= 0 {
		unix.Close(m.FD)
		m.FD = -1
	}
}

// NewMem makes size bytes of shared memory (closed with the client).
func (c *Client) NewMem(size int) (*Mem, error) {
	fd, err := unix.MemfdCreate("vfiousertest", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("ftruncate: %w", err)
	}
	b, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("mmap: %w", err)
	}
	m := &Mem{FD: fd, B: b}
	c.mems = append(c.mems, m)
	return m, nil
}

// DMAMapPayload is a DMA_MAP payload.
func DMAMapPayload(flags uint32, off, iova, size uint64) []byte {
	p := make([]byte, 32)
	le.PutUint32(p, 32)
	le.PutUint32(p[4:], flags)
	le.PutUint64(p[8:], off)
	le.PutUint64(p[16:], iova)
	le.PutUint64(p[24:], size)
	return p
}

// Map shares size bytes of m from offset off at iova, readable and writable.
func (c *Client) Map(m *Mem, off, iova, size uint64) error {
	_, err := c.Call(vfiouser.CmdDMAMap, DMAMapPayload(3, off, iova, size), m.FD)
	return err
}

// Unmap removes the window at iova.
func (c *Client) Unmap(iova, size uint64) error {
	p := make([]byte, 24)
	le.PutUint32(p, 24)
	le.PutUint64(p[8:], iova)
	le.PutUint64(p[16:], size)
	r, err := c.Call(vfiouser.CmdDMAUnmap, p)
	if err == nil && string(r) != string(p) {
		err = errors.New("DMA_UNMAP: the reply does not repeat the request")
	}
	return err
}

// Eventfd is an interrupt the client listens on.
type Eventfd struct {
	FD   int
	once sync.Once
}

// NewEventfd makes one (non-blocking; closed with the client).
func (c *Client) NewEventfd() (*Eventfd, error) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	e := &Eventfd{FD: fd}
	c.efds = append(c.efds, e)
	return e, nil
}

// Count reads and clears the counter: how many times the server signalled since.
func (e *Eventfd) Count() uint64 {
	var b [8]byte
	n, err := unix.Read(e.FD, b[:])
	if err != nil || n != 8 {
		return 0
	}
	return le.Uint64(b[:])
}

// Close closes it.
func (e *Eventfd) Close() { e.once.Do(func() { unix.Close(e.FD) }) }

// SetIRQsPayload is a SET_IRQS payload with optional data.
func SetIRQsPayload(flags, index, start, count uint32, data []byte) []byte {
	p := make([]byte, 20, 20+len(data))
	le.PutUint32(p, 20+uint32(len(data)))
	le.PutUint32(p[4:], flags)
	le.PutUint32(p[8:], index)
	le.PutUint32(p[12:], start)
	le.PutUint32(p[16:], count)
	return append(p, data...)
}

// SetIRQs flags (linux/vfio.h VFIO_IRQ_SET_*).
const (
	DataNone      = 1 << 0
	DataBool      = 1 << 1
	DataEventfd   = 1 << 2
	ActionMask    = 1 << 3
	ActionUnmask  = 1 << 4
	ActionTrigger = 1 << 5
)

// SetEventfds assigns eventfds to vectors start… of index (QEMU's vfio_user_set_irqs for
// DATA_EVENTFD|ACTION_TRIGGER: argsz is the fixed part, the descriptors go as SCM_RIGHTS).
func (c *Client) SetEventfds(index, start uint32, efds ...*Eventfd) error {
	fds := make([]int, len(efds))
	for i, e := range efds {
		fds[i] = e.FD
	}
	_, err := c.Call(vfiouser.CmdDeviceSetIRQs, SetIRQsPayload(DataEventfd|ActionTrigger, index, start, uint32(len(fds)), nil), fds...)
	return err
}

// SetIRQs sends a SET_IRQS without descriptors.
func (c *Client) SetIRQs(flags, index, start, count uint32, data []byte) error {
	_, err := c.Call(vfiouser.CmdDeviceSetIRQs, SetIRQsPayload(flags, index, start, count, data))
	return err
}
