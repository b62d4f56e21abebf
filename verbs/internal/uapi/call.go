package uapi

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Bytes views a value of a plain-data struct type as its bytes. It is how the
// mirrors above are handed to the kernel and filled by it.
func Bytes[T any](v *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v))
}

// addr is the user-space address of a buffer's first byte, or 0 for an empty
// one.
func addr(b []byte) uint64 {
	if len(b) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
}

// MaxAttrs bounds one call; the largest method used here (QP create) has 17.
const MaxAttrs = 32

// Call builds one RDMA_VERBS_IOCTL invocation: a header and its attribute
// array. Buffers named by pointer attributes are pinned for the duration of
// Do so the kernel writes into memory the Go runtime will neither move nor
// free.
type Call struct {
	Object, Method uint16
	// DriverID must equal the device's enum rdma_driver_id: the kernel
	// rejects a call naming another driver with EINVAL.
	DriverID uint32
	attrs    []Attr
	bufs     [][]byte
	outs     []outRef
}

type outRef struct {
	idx int
	buf []byte
}

// NewCall starts a call of method on object for the driver with id
// driverID.
func NewCall(driverID uint32, object, method uint16) *Call {
	return &Call{Object: object, Method: method, DriverID: driverID}
}

func (c *Call) add(a Attr) int {
	c.attrs = append(c.attrs, a)
	return len(c.attrs) - 1
}

// IDR names an existing object by handle (for read, write or destroy access).
func (c *Call) IDR(id uint16, handle uint32) {
	c.add(Attr{AttrID: id, Flags: AttrFMandatory, Data: uint64(handle)})
}

// NewIDR reserves an attribute the kernel fills with the new object's handle;
// read it back with Handle after Do.
func (c *Call) NewIDR(id uint16) int {
	return c.add(Attr{AttrID: id, Flags: AttrFMandatory})
}

// FD names an existing fd-backed object (completion channel, async event fd).
func (c *Call) FD(id uint16, fd int) {
	c.add(Attr{AttrID: id, Flags: AttrFMandatory, Data: uint64(int64(fd))})
}

// NewFD reserves an attribute the kernel fills with a new fd; read it back
// with FDOut after Do.
func (c *Call) NewFD(id uint16) int {
	return c.add(Attr{AttrID: id, Flags: AttrFMandatory})
}

// In passes b as a PTR_IN attribute: inline in the data word when it fits in
// 8 bytes (the kernel's uverbs_attr_ptr_is_inline rule), else by pointer.
func (c *Call) In(id uint16, b []byte) {
	c.in(id, b, AttrFMandatory)
}

// OptionalIn is In without the mandatory flag: a kernel that does not know
// the attribute ignores it instead of failing.
func (c *Call) OptionalIn(id uint16, b []byte) {
	c.in(id, b, 0)
}

func (c *Call) in(id uint16, b []byte, flags uint16) {
	if len(b) > 0xffff {
		panic(fmt.Sprintf("uapi: attribute %#x of %d bytes exceeds the 16-bit length", id, len(b)))
	}
	a := Attr{AttrID: id, Len: uint16(len(b)), Flags: flags}
	if len(b) <= 8 {
		var w [8]byte
		copy(w[:], b)
		a.Data = binary.NativeEndian.Uint64(w[:])
	} else {
		a.Data = addr(b)
		c.bufs = append(c.bufs, b)
	}
	c.add(a)
}

// U32 passes a 4-byte input inline.
func (c *Call) U32(id uint16, v uint32) {
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], v)
	c.In(id, b[:])
}

// U64 passes an 8-byte input inline: also the form of CONST_IN and FLAGS_IN
// attributes, which the kernel reads as a u64 regardless of the C type.
func (c *Call) U64(id uint16, v uint64) {
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], v)
	c.In(id, b[:])
}

// Out passes b as a PTR_OUT attribute the kernel writes into.
func (c *Call) Out(id uint16, b []byte) int {
	if len(b) > 0xffff {
		panic(fmt.Sprintf("uapi: attribute %#x of %d bytes exceeds the 16-bit length", id, len(b)))
	}
	i := c.add(Attr{AttrID: id, Len: uint16(len(b)), Flags: AttrFMandatory, Data: addr(b)})
	c.bufs = append(c.bufs, b)
	c.outs = append(c.outs, outRef{i, b})
	return i
}

// Attrs returns the attributes as they stand (after Do: as the kernel left
// them).
func (c *Call) Attrs() []Attr { return c.attrs }

// Handle returns the object handle the kernel wrote into attribute i.
func (c *Call) Handle(i int) uint32 { return uint32(c.attrs[i].Data) }

// FDOut returns the fd the kernel wrote into attribute i.
func (c *Call) FDOut(i int) int { return int(int64(c.attrs[i].Data)) }

// Encode lays the call out as the kernel reads it: header, then attributes.
// The backing array is 8-byte aligned (the header holds a u64).
func (c *Call) Encode() []byte {
	n := len(c.attrs)
	size := int(unsafe.Sizeof(IoctlHdr{})) + n*int(unsafe.Sizeof(Attr{}))
	words := make([]uint64, (size+7)/8)
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), size)
	h := (*IoctlHdr)(unsafe.Pointer(&buf[0]))
	*h = IoctlHdr{Length: uint16(size), ObjectID: c.Object, MethodID: c.Method, NumAttrs: uint16(n), DriverID: c.DriverID}
	if n > 0 {
		dst := unsafe.Slice((*Attr)(unsafe.Pointer(&buf[unsafe.Sizeof(IoctlHdr{})])), n)
		copy(dst, c.attrs)
	}
	return buf
}

// Do issues the call on fd. On success the attribute array is refreshed from
// the kernel's copy (new handles and fds, output flags).
func (c *Call) Do(fd int) error {
	if len(c.attrs) > MaxAttrs {
		return fmt.Errorf("uapi: %d attributes exceed the limit of %d", len(c.attrs), MaxAttrs)
	}
	buf := c.Encode()
	var pin runtime.Pinner
	defer pin.Unpin()
	for _, b := range c.bufs {
		if len(b) > 0 {
			pin.Pin(unsafe.SliceData(b))
		}
	}
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), RDMAVerbsIoctl, uintptr(unsafe.Pointer(&buf[0])))
	runtime.KeepAlive(buf)
	if e != 0 {
		return e
	}
	copy(c.attrs, unsafe.Slice((*Attr)(unsafe.Pointer(&buf[unsafe.Sizeof(IoctlHdr{})])), len(c.attrs)))
	return nil
}

// Write is one legacy write() command: the header, req (whose first 8 bytes
// receive the response pointer when resp is non-empty), then driverIn. The
// kernel writes the core response into resp and the provider response right
// after it, so both share one pinned buffer.
type Write struct {
	Command   uint32
	Req       []byte
	DriverIn  []byte
	RespLen   int
	DriverOut int
}

// Encode lays out the command and allocates the response buffer it points at.
func (w *Write) Encode() (cmd, resp []byte) {
	hdrLen := int(unsafe.Sizeof(CmdHdr{}))
	total := hdrLen + len(w.Req) + len(w.DriverIn)
	words := make([]uint64, (total+7)/8)
	cmd = unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), total)
	out := w.RespLen + w.DriverOut
	binary.NativeEndian.PutUint32(cmd[0:], w.Command)
	binary.NativeEndian.PutUint16(cmd[4:], uint16(total/4))
	binary.NativeEndian.PutUint16(cmd[6:], uint16(out/4))
	copy(cmd[hdrLen:], w.Req)
	copy(cmd[hdrLen+len(w.Req):], w.DriverIn)
	if out > 0 {
		rw := make([]uint64, (out+7)/8)
		resp = unsafe.Slice((*byte)(unsafe.Pointer(&rw[0])), out)
		binary.NativeEndian.PutUint64(cmd[hdrLen:], addr(resp))
	}
	return cmd, resp
}

// Do issues the command on fd and returns the response bytes (core response
// first, provider response after RespLen).
func (w *Write) Do(fd int) ([]byte, error) {
	if (len(w.Req)+len(w.DriverIn))%4 != 0 || (w.RespLen+w.DriverOut)%4 != 0 {
		return nil, fmt.Errorf("uapi: write command %d sizes are not multiples of 4 bytes", w.Command)
	}
	cmd, resp := w.Encode()
	var pin runtime.Pinner
	defer pin.Unpin()
	if len(resp) > 0 {
		pin.Pin(&resp[0])
	}
	n, _, e := unix.Syscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&cmd[0])), uintptr(len(cmd)))
	runtime.KeepAlive(cmd)
	if e != 0 {
		return nil, e
	}
	if int(n) != len(cmd) {
		return nil, fmt.Errorf("uapi: write command %d: short write %d of %d bytes", w.Command, n, len(cmd))
	}
	return resp, nil
}

// Enum passes an ENUM_IN attribute: elem selects the enumerator (attr_data.enum_data.elem_id)
// and b is that element's PTR_IN data, inline when it fits in 8 bytes.
func (c *Call) Enum(id uint16, elem uint8, b []byte) {
	c.in(id, b, AttrFMandatory)
	// elem_id is the first byte of attr_data in memory (struct ib_uverbs_attr).
	c.attrs[len(c.attrs)-1].AttrData = binary.NativeEndian.Uint16([]byte{elem, 0})
}

// Handles passes an IDRS_ARRAY attribute: the object handles as an array of u32, inline
// when it fits in 8 bytes (the kernel's uverbs_process_idrs_array).
func (c *Call) Handles(id uint16, handles []uint32) {
	b := make([]byte, 4*len(handles))
	for i, h := range handles {
		binary.NativeEndian.PutUint32(b[4*i:], h)
	}
	c.In(id, b)
}
