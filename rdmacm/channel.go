package rdmacm

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// DevicePath is the ucma character device, created by the rdma_ucm module.
const DevicePath = "/dev/infiniband/rdma_cm"

// abiPaths are where the kernel publishes the ucma ABI version (librdmacm
// reads the same files: class/misc/rdma_cm/abi_version, then the older
// class/infiniband_ucma/abi_version).
var abiPaths = []string{"/sys/class/misc/rdma_cm/abi_version", "/sys/class/infiniband_ucma/abi_version"}

// Channel is an open rdma_cm event channel: one file descriptor on
// /dev/infiniband/rdma_cm. Every ID is made through a channel, commands are
// write()s to it and the events of all its IDs are read from it. Closing it
// makes the kernel destroy every ID still open on it (and disconnect their
// connections).
type Channel struct {
	fd     int
	closed atomic.Bool
	// evMu serialises event reads; mu guards ids.
	evMu    sync.Mutex
	mu      sync.Mutex
	ids     map[uint64]*ID // by the uid the kernel echoes in events
	nextUID uint64
}

// Open opens a new event channel. It fails with ErrNoDevice when the
// rdma_ucm module is not loaded, and checks the kernel's ABI version.
func Open() (*Channel, error) {
	if err := checkABI(); err != nil {
		return nil, err
	}
	// Non-blocking: GET_EVENT then fails with EAGAIN instead of sleeping in
	// the kernel, and waits are bounded by poll() in NextEvent.
	fd, err := unix.Open(DevicePath, unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENODEV) || errors.Is(err, unix.ENXIO) {
			return nil, fmt.Errorf("%w: open %s: %v (is the rdma_ucm module loaded?)", ErrNoDevice, DevicePath, err)
		}
		return nil, &Error{Op: "open " + DevicePath, Errno: errnoOf(err)}
	}
	return &Channel{fd: fd, ids: map[uint64]*ID{}}, nil
}

func checkABI() error {
	for _, p := range abiPaths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		v, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return fmt.Errorf("rdmacm: %s holds %q, not an ABI version", p, strings.TrimSpace(string(b)))
		}
		if v != abiVersion {
			return fmt.Errorf("%w: the kernel's rdma_cm ABI is version %d (%s), this package speaks %d", ErrNotSupported, v, p, abiVersion)
		}
		return nil
	}
	// No sysfs file: either rdma_ucm is not loaded (Open then fails on the
	// device node) or sysfs is not mounted; the commands will tell.
	return nil
}

// FD is the channel's file descriptor: readable when an event is pending
// (for epoll); read events with NextEvent. Do not close it.
func (ch *Channel) FD() int { return ch.fd }

// Close closes the channel; the kernel destroys every ID still on it.
func (ch *Channel) Close() error {
	if ch.closed.Swap(true) {
		return nil
	}
	ch.mu.Lock()
	for _, id := range ch.ids {
		id.destroyed.Store(true)
	}
	ch.ids = map[uint64]*ID{}
	ch.mu.Unlock()
	if err := unix.Close(ch.fd); err != nil {
		return &Error{Op: "close " + DevicePath, Errno: errnoOf(err)}
	}
	return nil
}

func (ch *Channel) begin() error {
	if ch.closed.Load() {
		return fmt.Errorf("%w: rdma_cm channel", ErrClosed)
	}
	return nil
}

// register gives id a fresh non-zero uid (the kernel drops events of
// contexts whose uid is 0) and records it for event demultiplexing.
func (ch *Channel) register(id *ID) {
	ch.mu.Lock()
	ch.nextUID++
	id.uid = ch.nextUID
	ch.ids[id.uid] = id
	ch.mu.Unlock()
}

func (ch *Channel) unregister(id *ID) {
	ch.mu.Lock()
	delete(ch.ids, id.uid)
	ch.mu.Unlock()
}

func (ch *Channel) lookup(uid uint64) *ID {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.ids[uid]
}

// command is one ucma write(): a command struct and, when out > 0, a reply
// buffer whose address the caller placed at respAt (always offset 0 or 8 of
// the struct, see the ABI header).
type command struct {
	op   string
	cmd  uint32
	req  []byte
	out  int
	resp []byte
	// respInit, when set, is copied into the reply buffer before the call,
	// for fields an older kernel may leave untouched.
	respInit []byte
}

// do issues the command. The reply buffer is heap memory pinned for the
// duration of the write, so the kernel copies into memory the Go runtime
// neither moves nor frees.
func (ch *Channel) do(c *command, respAt int) error {
	if err := ch.begin(); err != nil {
		return err
	}
	buf := make([]byte, sizeofHdr+len(c.req))
	ne.PutUint32(buf[0:], c.cmd)
	ne.PutUint16(buf[4:], uint16(len(c.req)))
	ne.PutUint16(buf[6:], uint16(c.out))
	copy(buf[sizeofHdr:], c.req)
	var pin runtime.Pinner
	defer pin.Unpin()
	if c.out > 0 {
		c.resp = make([]byte, c.out)
		copy(c.resp, c.respInit)
		pin.Pin(&c.resp[0])
		ne.PutUint64(buf[sizeofHdr+respAt:], uint64(uintptr(unsafe.Pointer(&c.resp[0]))))
	}
	for {
		n, _, e := unix.Syscall(unix.SYS_WRITE, uintptr(ch.fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
		runtime.KeepAlive(buf)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return &Error{Op: c.op, Errno: e}
		}
		if int(n) != len(buf) {
			return fmt.Errorf("rdmacm: %s: short write %d of %d bytes", c.op, n, len(buf))
		}
		return nil
	}
}

// NextEvent waits up to timeout (negative: indefinitely) for the next event
// of any ID on the channel and returns it; ErrTimeout when none came. Only
// one goroutine at a time reads events (others wait their turn).
//
// A connection request creates a new ID (Event.ID) that the caller must
// Accept, Reject or Destroy. Events the kernel reports for IDs this channel
// no longer knows (destroyed meanwhile) are skipped.
func (ch *Channel) NextEvent(timeout time.Duration) (Event, error) {
	ch.evMu.Lock()
	defer ch.evMu.Unlock()
	deadline := time.Now().Add(timeout)
	for range 1 << 16 { // each pass consumes one event or waits; bounded anyway
		if err := ch.begin(); err != nil {
			return Event{}, err
		}
		req := make([]byte, sizeofGetEvent)
		c := &command{op: "write GET_EVENT", cmd: cmdGetEvent, req: req, out: sizeofEventResp}
		err := ch.do(c, 0)
		if errors.Is(err, unix.EAGAIN) {
			left := time.Duration(-1)
			if timeout >= 0 {
				if left = time.Until(deadline); left <= 0 {
					return Event{}, ErrTimeout
				}
			}
			if err := ch.wait(left); err != nil {
				return Event{}, err
			}
			continue
		}
		if err != nil {
			return Event{}, err
		}
		ev, ok, err := ch.decodeEvent(c.resp)
		if err != nil {
			return Event{}, err
		}
		if ok {
			return ev, nil
		}
	}
	return Event{}, fmt.Errorf("rdmacm: event channel yielded only events for unknown IDs")
}

// wait polls the fd for readability for up to d (negative: indefinitely).
func (ch *Channel) wait(d time.Duration) error {
	ms := -1
	if d >= 0 {
		ms = int((d + time.Millisecond - 1) / time.Millisecond)
	}
	pfd := []unix.PollFd{{Fd: int32(ch.fd), Events: unix.POLLIN}}
	_, err := unix.Poll(pfd, ms)
	if err != nil && err != unix.EINTR {
		return &Error{Op: "poll " + DevicePath, Errno: errnoOf(err)}
	}
	return nil
}

func (ch *Channel) decodeEvent(r []byte) (Event, bool, error) {
	uid := ne.Uint64(r[0:])
	handle := ne.Uint32(r[8:])
	ev := Event{Type: EventType(ne.Uint32(r[12:])), Status: int32(ne.Uint32(r[16:]))}
	ev.ECE = ECE{VendorID: ne.Uint32(r[offsetEventECE:]), AttrMod: ne.Uint32(r[offsetEventECE+4:])}
	owner := ch.lookup(uid)
	if ev.Type == EventConnectRequest {
		// The kernel made a new context for the request; its handle is in
		// the id field and uid is the listener's.
		nid := &ID{ch: ch, handle: handle}
		if owner == nil {
			// The listener is gone: release the request's context.
			_ = nid.destroyKernel()
			return Event{}, false, nil
		}
		nid.ps, nid.qpType = owner.ps, owner.qpType
		ch.register(nid)
		ev.ID, ev.Listen = nid, owner
		ev.Conn = decodeConnParam(r[offsetEventParam:])
		return ev, true, nil
	}
	if owner == nil {
		return Event{}, false, nil
	}
	ev.ID = owner
	if ev.Type != EventMulticastJoin && ev.Type != EventMulticastError {
		ev.Conn = decodeConnParam(r[offsetEventParam:])
	}
	return ev, true, nil
}

// errnoOf extracts the errno of a syscall error (EIO when there is none).
func errnoOf(err error) syscall.Errno {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return syscall.EIO
}
